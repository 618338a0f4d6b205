#!/bin/bash
# test_runtime_layers.sh -- the runtime's files call only down: in the
# objects of runtime/, no file uses a symbol defined in a higher layer of
# the table below, and the files' references form no cycle (within a
# layer either).  Every runtime/*.c must be in the table.

set -u

srcdir=${EVENTRING_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
builddir=${EVENTRING_TEST_BUILDDIR:-.}
NM=${NM:-nm}

# The layers, from the bottom up: "name: files", a file named without
# its .c, shell patterns allowed (consumer_*).  A file may use what its
# own layer and the layers below it define.  A new file goes in the
# layer of what it calls, or, if it is called from below, lower.
layers=(
  "base:    state warn errors names numbering fsize starttime layout"
  "clock:   clock wallclock"
  "ring:    leftovers sigbus cmdline evict ring"
  "stw:     stw"
  "domain:  domain"
  "control: params users lifecycle fork"
  "probes:  enter probes slots"
  "reader:  consumer consumer_* snapshot snapshot_*"
  "remote:  remote_client remote_watcher"
  "api:     control atfork init"
)
# References that only bring an object out of the static library along
# with the one that refers to it (state.c's of init.c): allowed upwards,
# provided the symbol is data, never code.
anchors=(er_init_anchor)

. "$(dirname "$0")/layers_lib.sh"

# The layer's rank and name of file $1 (no .c), or nothing.
layer_of() {
  local i entry name pat
  for i in "${!layers[@]}"; do
    entry=${layers[$i]}
    name=${entry%%:*}
    for pat in ${entry#*:}; do
      # shellcheck disable=SC2053
      if [[ $1 == $pat ]]; then echo "$i $name"; return; fi
    done
  done
}

files=()
unknown=0
for f in "$srcdir"/runtime/*.c; do
  b=$(basename "$f" .c)
  files+=("$b")
  n=0
  for i in "${!layers[@]}"; do
    for pat in ${layers[$i]#*:}; do
      # shellcheck disable=SC2053
      [[ $b == $pat ]] && n=$((n + 1))
    done
  done
  if [ "$n" -eq 0 ]; then
    bad "runtime/$b.c is in no layer: add it to the table \`layers' of" \
      "testsuite/test_runtime_layers.sh (bottom up: the layer of what it" \
      "calls)"
    unknown=1
  elif [ "$n" -gt 1 ]; then
    bad "runtime/$b.c is in $n layers of the table \`layers'"
    unknown=1
  fi
done
[ "${#files[@]}" -gt 20 ] || bad "only ${#files[@]} files in $srcdir/runtime"
[ $unknown -eq 0 ] && ok "${#files[@]} files of runtime/ in ${#layers[@]} layers"

# "user definer symbol type", one line per reference between two files.
layers_refs "$builddir/runtime" "${files[@]}"

is_anchor() {
  local a
  for a in "${anchors[@]}"; do [ "$a" = "$1" ] && return 0; done
  return 1
}

up=0
: > "$tmp/edges"
while read -r user definer sym type; do
  if is_anchor "$sym"; then
    case $type in
      [DdRrBbGgSsV]) continue ;;
      *) bad "runtime/$definer.c defines the anchor $sym as code ($type)"
         up=1; continue ;;
    esac
  fi
  echo "$user $definer" >> "$tmp/edges"
  read -r ru lu < <(layer_of "$user")
  read -r rd ld < <(layer_of "$definer")
  [ -n "${ru:-}" ] && [ -n "${rd:-}" ] || continue
  if [ "$rd" -gt "$ru" ]; then
    bad "runtime/$user.c ($lu) uses $sym of runtime/$definer.c ($ld)," \
      "a higher layer"
    up=1
  fi
done < "$tmp/refs"
[ $up -eq 0 ] && ok "no file uses a symbol of a higher layer"

# No cycle among the files (anchors aside): tsort names those of a loop.
layers_no_cycle "$tmp/edges"

echo "runtime layers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
