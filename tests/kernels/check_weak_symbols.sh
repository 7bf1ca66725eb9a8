#!/usr/bin/env bash
# tests/kernels/check_weak_symbols.sh NM SET=OBJ[:OBJ...]... -- ARCHIVE...
#
# Fails when a weak symbol defined in one kernel set's objects (an inline function or template the
# compiler did not inline) is defined anywhere else in tapegrad's libraries: in another set's
# objects or in the rest of the library. The linker keeps one copy of a weak symbol for every
# caller, so an avx512 copy could be the one a baseline kernel or the generic code calls, and the
# program would die of an illegal instruction on a CPU without AVX-512. The fix: put the helper in
# the per-set inline namespace (src/core/set_namespace.hpp), or keep std containers and
# algorithms out of the src/kernels/ file (allocate in the op, pass pointers).
# DW.ref.__gxx_personality_v0, a pointer to the C++ runtime's unwinder, is the same data in every
# object and is allowed.
set -euo pipefail
export LC_ALL=C
nm=$1
shift
declare -A set_objects=()
while [[ $# -gt 0 && $1 != -- ]]; do
  set_objects[${1%%=*}]=${1#*=}
  shift
done
shift  # --
archives=("$@")
for file in "${archives[@]}"; do
  [[ -f $file ]] || { echo "$file is not built: build every library first (cmake --build)"; exit 1; }
done

weak_symbols() {  # the weak symbols the files define, one per line per definition
  "$nm" -P --defined-only "$@" 2>/dev/null | awk '$2 ~ /^[WVu]$/ && $1 != "DW.ref.__gxx_personality_v0" { print $1 }'
}

all=$(weak_symbols "${archives[@]}" | sort)
status=0
checked=0
for set in "${!set_objects[@]}"; do
  IFS=: read -r -a objects <<<"${set_objects[$set]}"
  checked=$((checked + ${#objects[@]}))
  mine=$(weak_symbols "${objects[@]}" | sort)
  [[ -z $mine ]] && continue
  # a symbol defined more often in the libraries than in this set's objects is shared
  shared=$(join <(uniq -c <<<"$mine" | awk '{ print $2, $1 }') <(uniq -c <<<"$all" | awk '{ print $2, $1 }') |
    awk '$3 > $2 { print $1 }')
  if [[ -n $shared ]]; then
    echo "kernel set $set: weak symbols also defined outside the set (the linker may call another set's copy):"
    c++filt <<<"$shared" | sed 's/^/  /'
    status=1
  fi
done
if [[ $checked -eq 0 ]]; then
  echo "no kernel set objects were given"
  exit 1
fi
[[ $status -eq 0 ]] && echo "no weak symbol of the ${#set_objects[@]} kernel sets' $checked objects is defined twice"
exit $status
