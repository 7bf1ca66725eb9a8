#!/usr/bin/env bash
# scripts/setup.sh: installs the Debian packages tapegrad needs, only those that are missing.
#   scripts/setup.sh          build, test and plot: compilers, xtensor, OpenBLAS, doctest, CLI11, gnuplot,
#                             and Debian's fortunes (about 2.4 MB of text: the GPT example's data)
#   scripts/setup.sh --mpi    also Open MPI, for tapegrad::distributed (training on several processes)
#   scripts/setup.sh --ci     everything CI uses: the above, Open MPI, clang + libFuzzer runtime, NumPy
#   scripts/setup.sh --cross-arm64
#                             also GCC's cross compiler for 64-bit Arm, qemu-user and OpenBLAS for arm64
#                             (adding arm64 to dpkg's architectures), for scripts/cross_test.sh
# Run as root (or with sudo) on Debian 12 or later. Nothing is downloaded from anywhere else.
set -euo pipefail

packages=(cmake g++ make libxtensor-dev libxtensor-blas-dev libopenblas-dev doctest-dev
          nlohmann-json3-dev libcli11-dev gnuplot-nox fortunes fortunes-min)
mpi=(libopenmpi-dev openmpi-bin)
# libc6-dev-arm64-cross is only a recommendation of the cross compiler, which --no-install-recommends
# below would leave out.
cross_arm64=(crossbuild-essential-arm64 libc6-dev-arm64-cross qemu-user libopenblas-dev:arm64)
arm64=false
for flag in "$@"; do
  case "$flag" in
    --mpi) packages+=("${mpi[@]}") ;;
    --ci) packages+=("${mpi[@]}" clang libclang-rt-dev python3-numpy) ;;
    --cross-arm64) packages+=("${cross_arm64[@]}"); arm64=true ;;
    *) echo "setup: unknown option $flag (expected --mpi, --ci or --cross-arm64)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} == 0 )); then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo=""
if (( EUID != 0 )); then sudo="sudo"; fi
if $arm64 && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "setup: adding arm64 to dpkg's architectures (Debian installs arm64's OpenBLAS only then)"
  $sudo dpkg --add-architecture arm64
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
