#!/usr/bin/env bash
# scripts/fuzz.sh [seconds] [target...]: fuzzes the checkpoint readers with libFuzzer under ASan
# and UBSan, each target for `seconds` (default 60), and fails on any crash, leak, sanitizer
# report or broken invariant. Targets: safetensors npy checkpoint (default: all three).
#   scripts/fuzz.sh 300 safetensors
# It configures a separate build folder, build-fuzz/, with clang (Debian: clang, libclang-rt-dev),
# and runs each target from a copy of tests/fuzz/corpus/<target>/ so the committed seeds stay
# small; fuzz_checkpoint starts from the safetensors seeds plus valid training, optimizer and
# model checkpoints it writes itself in the current layout (TAPEGRAD_FUZZ_WRITE_SEEDS).
# A crashing input is kept in build-fuzz/crashes-<target>/; replay it with
#   build-fuzz/fuzz_<target> build-fuzz/crashes-<target>/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
targets=("$@")
if (( ${#targets[@]} == 0 )); then targets=(safetensors npy checkpoint); fi
build=build-fuzz
cxx=$(command -v clang++ || command -v clang++-14 || true)
if [[ -z "$cxx" ]]; then
  echo "fuzz.sh: clang++ not found; install it with: apt-get install clang libclang-rt-dev" >&2
  exit 1
fi

cmake -S . -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTAPEGRAD_FUZZ=ON \
  -DTAPEGRAD_NATIVE=OFF -DTAPEGRAD_BUILD_TESTS=OFF -DTAPEGRAD_BUILD_EXAMPLES=OFF -DTAPEGRAD_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j2 --target "${targets[@]/#/fuzz_}"

for t in "${targets[@]}"; do
  work="$build/corpus-$t"
  crashes="$build/crashes-$t"
  rm -rf "$work"
  mkdir -p "$work" "$crashes"
  max_len=4096
  if [[ $t == checkpoint ]]; then
    cp tests/fuzz/corpus/safetensors/* "$work"/          # hostile headers, then valid checkpoints
    TAPEGRAD_FUZZ_WRITE_SEEDS="$work" "$build/fuzz_$t"
    max_len=32768                                        # a generator's state is ~6 KB of text
  else
    cp tests/fuzz/corpus/"$t"/* "$work"/
  fi
  echo "fuzz.sh: fuzz_$t for ${seconds}s from $(ls "$work" | wc -l) seeds"
  status=0
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/fuzz_$t" "$work" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
      -dict="tests/fuzz/$t.dict" -artifact_prefix="$crashes/" -print_final_stats=1 \
      2> >(tee "$build/fuzz-$t.log" | grep -E '^(#[0-9]+[[:space:]]+(DONE|INITED)|stat::|==[0-9]+==|SUMMARY)' >&2) || status=$?
  wait
  if (( status != 0 )); then
    echo "fuzz.sh: fuzz_$t FAILED (exit $status); input kept in $crashes/, log in $build/fuzz-$t.log" >&2
    exit 1
  fi
  echo "fuzz.sh: fuzz_$t passed; corpus grew to $(ls "$work" | wc -l) inputs"
done
