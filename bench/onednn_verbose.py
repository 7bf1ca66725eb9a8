"""bench/onednn_verbose.py: which oneDNN kernels a program's bf16 products ran, from its own report.

oneDNN prints a line for every primitive it executes when ONEDNN_VERBOSE=1 is set:

    onednn_verbose,exec,cpu,matmul,brg:avx512_core_bf16,undef,src_bf16::blocked:ab:f0 ...,384x128:128x128:384x128,0.15

The fifth field names the implementation: "brg:avx512_core_amx_bf16" is the AMX tile kernel,
"brg:avx512_core_bf16" AVX512-BF16's brgemm, "gemm:jit" oneDNN's GEMM driver (oneDNN 2.6 sends a
product whose first operand is read transposed there; the driver has AMX kernels of its own on
CPUs with AMX, and runs at brgemm's speed on AVX512-BF16, measured). Debian's python3-torch links
the same libdnnl.so.2 as tapegrad (a pip wheel would carry its own), so the two sides' lines can
be read side by side: bench/gpt_compare and bench/gpt2_compare print `kernels(...)` for
tapegrad's --bf16 run and for PyTorch's autocast.
"""
import collections
import subprocess


def kernels(cmd, env):
    """A one-line summary of the oneDNN matmul and inner-product kernels `cmd` ran, each with its
    count of executions and its share of oneDNN's reported time, e.g.
    "brg:avx512_core_bf16 matmul x137 (71 % of the time), gemm:jit matmul x68 (29 %)"; or why there is none."""
    env = dict(env, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        return "unknown: %s failed (exit %d): %s" % (" ".join(cmd), proc.returncode,
                                                      (proc.stdout.strip().splitlines() or [""])[-1])
    out = proc.stdout
    count, time_ms, isa = collections.Counter(), collections.Counter(), None
    for line in out.splitlines():
        fields = line.split(",")
        if len(fields) < 2 or fields[0] not in ("onednn_verbose", "dnnl_verbose"):
            continue
        if fields[1] == "primitive":  # oneDNN 3.x: onednn_verbose,primitive,exec,cpu,matmul,...
            fields = fields[:1] + fields[2:]
        if fields[1] == "info" and "isa:" in line:
            isa = line.split("isa:", 1)[1].strip()
        if fields[1] != "exec" or len(fields) < 6 or fields[3] not in ("matmul", "inner_product"):
            continue
        key = "%s %s" % (fields[4], fields[3])
        count[key] += 1
        try:
            time_ms[key] += float(fields[-1])
        except ValueError:
            pass
    if not count:
        return "no oneDNN product ran (ONEDNN_VERBOSE printed none)"
    total = sum(time_ms.values()) or 1.0
    parts = ["%s x%d (%.0f %% of the time)" % (k, n, 100.0 * time_ms[k] / total) for k, n in count.most_common()]
    return ", ".join(parts) + ("; oneDNN's ISA: %s" % isa if isa else "")

