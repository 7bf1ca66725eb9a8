#!/usr/bin/env bash
# scripts/bf16_loss_curves.sh: draws docs/images/bf16_loss.png, the picture in docs/bf16.md.
# The baby GPT is trained twice from the same seed on the same batches, once in float32 and once
# with --bf16, and gnuplot draws both loss curves and their validation losses' difference.
#
#     scripts/bf16_loss_curves.sh [STEPS]      # 2000 by default: about 3 minutes on one core
#
# Needs the build (cmake --build build) and gnuplot. The curves depend on the kernels OpenBLAS and
# oneDNN pick for the CPU, so another machine draws a picture that agrees in shape, not in digits.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-2000}
[[ $steps =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [STEPS] (a positive whole number)" >&2; exit 2; }
[[ -x build/examples/gpt ]] || { echo "$0: build/examples/gpt is missing: build first (cmake --build build)" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "$0: gnuplot is missing (apt-get install gnuplot-nox)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
for mode in fp32 bf16; do
  flags=(--steps "$steps" --eval-every $((steps / 20 > 0 ? steps / 20 : 1)) --sample-tokens 0 --quiet
         --out "$work/$mode")
  [[ $mode == bf16 ]] && flags+=(--bf16)
  echo "$mode: $(build/examples/gpt "${flags[@]}" | grep '^gpt result')"
done
# bf16's validation loss minus float32's, at each validation step
paste "$work/fp32/val.dat" "$work/bf16/val.dat" | awk '{ print $1, $4 - $2 }' > "$work/diff.dat"
gnuplot <<GNUPLOT
set terminal pngcairo size 1200,480 font 'sans,11'
set output 'docs/images/bf16_loss.png'
set multiplot layout 1,2 title "The baby GPT on the fortunes, same seed and batches: float32 and --bf16 ($steps steps)"
set grid
set key top right
set xlabel 'step'
set ylabel 'cross-entropy (nats per character)'
set title 'loss'
plot '$work/fp32/loss.dat' using 1:2 with lines lc rgb '#9ecae1' title 'training batch, float32', \
     '$work/bf16/loss.dat' using 1:2 with lines lc rgb '#fdae6b' title 'training batch, bf16', \
     '$work/fp32/val.dat' using 1:2 with linespoints pt 7 ps 0.7 lw 2 lc rgb '#08519c' title 'validation, float32', \
     '$work/bf16/val.dat' using 1:2 with linespoints pt 6 ps 1.0 lw 2 lc rgb '#d94801' title 'validation, bf16'
set title 'validation loss, bf16 minus float32'
set ylabel 'nats per character'
set yrange [-0.03:0.03]
unset key
plot '$work/diff.dat' using 1:2 with linespoints pt 7 ps 0.7 lw 2 lc rgb '#d94801', 0 lc rgb '#555555' dt 2
unset multiplot
GNUPLOT
echo "wrote docs/images/bf16_loss.png"
