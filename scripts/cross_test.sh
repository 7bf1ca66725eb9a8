#!/usr/bin/env bash
# scripts/cross_test.sh: tapegrad built for 64-bit Arm (AArch64) on an x86-64 Debian machine, and
# its test suite run under qemu-user. That is the build a user on another architecture gets: the
# `reference` and `baseline` kernel sets only (docs/kernels.md), no CPUID, `char` unsigned, and
# OpenBLAS's Arm kernels.
#
#     scripts/cross_test.sh                 install what is missing, build build-aarch64/, run the suite
#     scripts/cross_test.sh -R '^ops'       arguments after the script's name go to ctest
#
# Run as root on Debian 12 or later. It installs what is missing (`scripts/setup.sh --cross-arm64`):
# the cross compiler, qemu-user, and OpenBLAS for arm64, which Debian installs only after
# `dpkg --add-architecture arm64` (setup.sh does that). The tests start the example programs
# themselves, so the kernel must know how to run an AArch64 program: when nothing handles them yet,
# the script registers qemu-aarch64 with binfmt_misc (until the next boot). Open MPI is left out,
# so tapegrad::distributed is not built, nor are the benchmarks. Not part of .ci/run: the build
# takes about 13 minutes on 2 cores, and the suite runs about 7 times slower than natively.
#
# Threads and processes under emulation: qemu-user runs each guest thread on a host thread and
# each guest process in a host process. On some hosts (a Firecracker VM with Linux 6.18, qemu 7.2
# and 10.0 alike) it never returns from the guest's first pthread_create or fork: four lines of C
# that start one thread hang the same. The script tries such a program first and, if it hangs,
# says so: the tests that start a thread or fork a process then run out of time (--timeout, 300 s
# a test unless you pass another). ctest counts them as failed; read them as not run on that host.
# binfmt_misc needs a machine or VM of your own: an unprivileged container cannot mount it.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $(uname -m) != x86_64 ]]; then
  echo "cross_test: this script cross-builds from x86-64; on $(uname -m), build and test natively" >&2
  exit 2
fi
sudo=""
if (( EUID != 0 )); then sudo="sudo"; fi

# 1. Packages: the native ones, the cross compiler, qemu and arm64's OpenBLAS.
scripts/setup.sh --cross-arm64

# 2. The kernel runs AArch64 programs through qemu (the tests start the examples as programs).
binfmt=/proc/sys/fs/binfmt_misc
[[ -e $binfmt/register ]] || $sudo mount -t binfmt_misc binfmt_misc "$binfmt"
if [[ -e $binfmt/qemu-aarch64 ]]; then  # registered (Debian's qemu-user-binfmt does it at boot)
  grep -qx enabled "$binfmt/qemu-aarch64" || echo 1 | $sudo tee "$binfmt/qemu-aarch64" > /dev/null
else
  echo "cross_test: registering qemu-aarch64 with binfmt_misc"
  # The ELF header of an AArch64 executable (machine 0xb7), as Debian's qemu-user-binfmt has it.
  printf '%s' ':qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:/usr/bin/qemu-aarch64:' \
    | $sudo tee "$binfmt/register" > /dev/null
fi
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu  # where qemu finds the arm64 C library

# 3. Configure and build. xtensor, xtl, xtensor-blas, nlohmann_json, doctest and CLI11 are headers
# only, so the x86-64 packages' CMake files serve the arm64 build too; OpenBLAS is arm64's own.
build=build-aarch64
mkdir -p "$build"
cat > "$build/toolchain.cmake" <<'EOF'
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Runs the test binary at build time (doctest lists its cases) and under ctest. OpenBLAS's own
# threads are kept at one: with more, its start-up is where qemu's thread problem shows first.
set(CMAKE_CROSSCOMPILING_EMULATOR env;OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1;qemu-aarch64;-L;/usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
EOF
cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE="$PWD/$build/toolchain.cmake" \
  -DCMAKE_BUILD_TYPE=Release -DTAPEGRAD_BUILD_BENCH=OFF -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON \
  -DCMAKE_PREFIX_PATH=/usr/lib/x86_64-linux-gnu/cmake
cmake --build "$build" -j"$(nproc)"

# 4. Does a guest thread start here (see the top)?
probe="$build/thread_probe"
printf '#include <pthread.h>\nstatic void* f(void* a) { return a; }\nint main(void) { pthread_t t;\n  return pthread_create(&t, 0, f, 0) || pthread_join(t, 0); }\n' > "$probe.c"
aarch64-linux-gnu-gcc -pthread "$probe.c" -o "$probe"
probe_status=0
timeout -k 5 20 "$probe" || probe_status=$?
if (( probe_status == 124 || probe_status == 137 )); then
  echo "cross_test: warning: qemu-aarch64 on this host does not start a guest thread (a 4-line" \
       "pthread_create probe did not finish in 20 s): the tests that start a thread or a process" \
       "will run out of time; ctest's closing list marks them \"(Timeout)\"" >&2
elif (( probe_status != 0 )); then
  echo "cross_test: an AArch64 program does not run here (the probe exited with $probe_status):" \
       "check qemu-aarch64's entry in $binfmt" >&2
  exit 1
fi

# 5. The suite, as the README's test command runs it, with a timeout per test (the copy task's
# decoding test takes about three minutes under emulation).
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" --timeout 300 "$@"
