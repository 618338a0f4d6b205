#!/bin/bash
# test_layers.sh -- the eventring command's files call only down: in the
# objects of tools/, no file of a layer uses a symbol defined in a higher
# layer (base < input < analysis < render < cmd < main.c), the files'
# calls form no cycle (within a layer either: the input layer reads from
# source.c down to rings.c), and each file includes only its own layer's
# header, which includes only the header of the layer below.

set -u

srcdir=${EVENTRING_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
builddir=${EVENTRING_TEST_BUILDDIR:-.}
NM=${NM:-nm}
layers=(base input analysis render cmd)

. "$(dirname "$0")/layers_lib.sh"

# The rank of a file's layer, from its path below tools/ (main.c: top).
rank() {
  local i
  case $1 in */*) ;; *) echo ${#layers[@]}; return ;; esac
  for i in "${!layers[@]}"; do
    if [ "${1%%/*}" = "${layers[$i]}" ]; then echo "$i"; return; fi
  done
  echo -1
}

# Every source file is in a layer's folder (or is main.c).
srcs=()
for f in "$srcdir"/tools/*.c "$srcdir"/tools/*/*.c; do
  f=${f#"$srcdir"/tools/}
  if [ "$(rank "$f")" -lt 0 ]; then
    bad "tools/$f is in no layer (${layers[*]})"
  fi
  srcs+=("$f")
done
# tools/libtool.a keeps one member per basename: two files of one name in
# different layers would silently lose one of them.
dups=$(for f in "${srcs[@]}"; do basename "$f"; done | sort | uniq -d)
[ -z "$dups" ] && ok "file names unique across layers" ||
  bad "file names in two layers (libtool.a keeps one): $(echo $dups)"
[ "${#srcs[@]}" -gt 20 ] && ok "${#srcs[@]} files in layers ${layers[*]}" ||
  bad "only ${#srcs[@]} source files under $srcdir/tools"

# Headers: a .c file includes its own layer's header (main.c: cmd's), a
# layer's header only the one below; no other header of tools/ exists.
hdrs=$(cd "$srcdir/tools" && ls ./*.h ./*/*.h 2>/dev/null | sed 's|^\./||')
want=$(for l in "${layers[@]}"; do echo "$l/$l.h"; done | sort)
if [ "$hdrs" = "$want" ]; then ok "one header per layer"
else bad "headers of tools/: $(echo $hdrs), expected $(echo $want)"; fi
incs_bad=0
for f in "${srcs[@]}" $hdrs; do
  r=$(rank "$f")
  case $f in
    *.h) allowed=${layers[$((r - 1))]:-}; [ "$r" -eq 0 ] && allowed= ;;
    main.c) allowed=cmd ;;
    *) allowed=${layers[$r]} ;;
  esac
  for inc in $(sed -n 's|^#include "\([a-z]*\)/[a-z_]*\.h".*|\1|p' \
                 "$srcdir/tools/$f"); do
    if [ "$inc" != "$allowed" ]; then
      bad "tools/$f includes $inc/$inc.h (may include: ${allowed:-none})"
      incs_bad=1
    fi
  done
  # Headers of tools/ are named by their path from tools/.
  if grep -q '^#include "[a-z_]*\.h"' "$srcdir/tools/$f" &&
     grep '^#include "[a-z_]*\.h"' "$srcdir/tools/$f" |
       grep -qE '"(base|input|analysis|render|cmd)\.h"'; then
    bad "tools/$f includes a layer header without its folder"
    incs_bad=1
  fi
done
[ $incs_bad -eq 0 ] && ok "each file includes only its layer's header"

# "user definer symbol type", one line per cross-file reference.
layers_refs "$builddir/tools" "${srcs[@]}"

up=0
while read -r user definer sym _; do
  if [ "$(rank "$definer")" -gt "$(rank "$user")" ]; then
    bad "tools/$user uses $sym of tools/$definer, a higher layer"
    up=1
  fi
done < "$tmp/refs"
[ $up -eq 0 ] && ok "no file uses a symbol of a higher layer"

# No cycle among the files: tsort names the files of a loop.
awk '{ print $1, $2 }' "$tmp/refs" > "$tmp/edges"
layers_no_cycle "$tmp/edges"

echo "layers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
