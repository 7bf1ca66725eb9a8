#!/usr/bin/env bash
# tests/layers/check_calls.sh NM DEPENDS -- OBJECT...
#
# The symbols' side of tests/layers/check_includes.cmake: no object file of a layer uses a symbol
# that only a layer it does not link defines, and inside the core layer no object of one floor
# uses a symbol defined on a floor above it. An include check cannot see a function declared in a
# low header and defined in a higher file (a declaration on the core floor, its body in src/ops,
# called from src/autograd): the call runs up although every include runs down. The linker does
# not see it either, since the four floors are one library. The compiled objects do: each object's
# undefined symbols are matched to the object that defines them, and each object's layer and floor
# is the folder of its source (src/<layer>/..., as in check_includes.cmake; src/kernels/optim/ is
# optim). Only strong definitions count: an inline function or template that several objects
# define (a weak symbol) belongs to the header it came from, which the include check covers.
# DEPENDS is check_includes.cmake's, "core=|nn=core|io=nn,optim,core|..." (every layer each links;
# ";" may stand for "|").
# Two uses run up by design, and are the only ones allowed (docs/layers.md describes both):
# - an op's call of its fast kernels, tapegrad::kernels::Fast<&reference>::<set>: the op names its
#   reference and the kernel sets are linked in under that name (src/core/dispatch.hpp);
# - the tensor's two hooks into the tape entry that produced it (grad_fn), TensorImpl::producer and
#   TensorImpl::EntryDeleter, declared with the tensor and defined by the tape (src/autograd).
set -euo pipefail
export LC_ALL=C
nm=$1
depends=$2
shift 2
[[ ${1-} == -- ]] && shift
[[ $# -gt 0 ]] || { echo "no object files were given"; exit 1; }
for file in "$@"; do
  [[ -f $file ]] || { echo "$file is not built: build the libraries first (cmake --build)"; exit 1; }
done

# Each object's symbols as "D|U <tab> symbol <tab> source", demangled: its source is the path
# below the target's folder (.../tapegrad_core.dir/src/ops/matmul.cpp.o -> src/ops/matmul.cpp).
table=$(mktemp)
trap 'rm -f "$table"' EXIT
for file in "$@"; do
  source=$(sed -E 's|.*/(src/[^ ]*)\.o$|\1|' <<<"$file")
  [[ $source == src/* ]] || { echo "$file: not the object of a file in src/"; exit 1; }
  "$nm" -P "$file" 2>/dev/null | awk -v src="$source" '
    $2 ~ /^[TDBRGS]$/ { printf "D\t%s\t%s\n", $1, src }   # a strong global definition
    $2 == "U"         { printf "U\t%s\t%s\n", $1, src }'
done | sort -u | c++filt >"$table"

report=$(awk -F '\t' -v depends="$depends" '
  function layer_of(path,    parts) {   # sets floor_ (0-3 inside the core, else -1)
    split(path, parts, "/")
    floor_ = -1
    if (parts[2] == "kernels" && parts[3] == "optim") return "optim"
    if (parts[2] in floor_index) { floor_ = floor_index[parts[2]]; return "core" }
    return parts[2]
  }
  function by_design(symbol, definer) {
    if (index(symbol, "tapegrad::kernels::Fast<") == 1) return 1
    return definer ~ /^src\/autograd\// &&
           (index(symbol, "tapegrad::TensorImpl::producer(") == 1 ||
            index(symbol, "tapegrad::TensorImpl::EntryDeleter::") == 1)
  }
  BEGIN {
    n = split("core autograd ops kernels", floors, " ")
    for (i = 1; i <= n; ++i) floor_index[floors[i]] = i - 1
    n = split(depends, entries, /[;|]/)
    for (i = 1; i <= n; ++i) {
      split(entries[i], pair, "=")
      allowed[pair[1] "," pair[1]] = 1
      m = split(pair[2], below, ",")
      for (j = 1; j <= m; ++j) allowed[pair[1] "," below[j]] = 1
    }
  }
  $1 == "D" { definer[$2] = $3; next }
  { use_symbol[++n_uses] = $2; use_source[n_uses] = $3 }
  END {
    checked = 0
    for (i = 1; i <= n_uses; ++i) {
      symbol = use_symbol[i]
      if (!(symbol in definer)) continue   # the standard library, OpenBLAS, ...
      ++checked
      theirs = layer_of(definer[symbol]); their_floor = floor_
      own = layer_of(use_source[i]); own_floor = floor_
      if (by_design(symbol, definer[symbol])) continue
      if (!((own "," theirs) in allowed))
        printf "  %s (%s) uses %s, defined in %s (%s), which %s does not link\n", use_source[i], own, symbol, definer[symbol], theirs, own
      else if (own_floor >= 0 && their_floor > own_floor)
        printf "  %s (core floor %s) uses %s, defined in %s (floor %s, above it)\n", use_source[i], floors[own_floor + 1], symbol, definer[symbol], floors[their_floor + 1]
    }
    printf "checked %d\n", checked
  }' "$table")
checked=$(sed -n 's/^checked //p' <<<"$report")
violations=$(grep -v '^checked ' <<<"$report" || true)
if [[ -n $violations ]]; then
  echo "a call runs up or across the layers (docs/layers.md):"
  echo "$violations"
  exit 1
fi
echo "layers: ${checked:-0} uses of the library's own symbols in $# objects, none runs up a layer or a core floor"
