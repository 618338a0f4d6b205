# layers_lib.sh -- what test_layers.sh (tools/) and test_runtime_layers.sh
# (runtime/) share: the references between objects, read with nm, and the
# check that they form no cycle, with tsort.  Sourced by them; uses their
# ok() and bad(), and $NM.

# layers_refs OUT DIR FILE...: writes to OUT one line "user definer symbol
# type" for each symbol that DIR/FILE.o (FILE with or without .c) uses and
# another of the FILEs defines (type: nm's letter for the definition).
layers_refs() {
  local out=$1 dir=$2 f
  shift 2
  for f in "$@"; do
    "$NM" -g --defined-only "$dir/${f%.c}.o" |
      awk -v f="$f" 'NF == 3 { print $3, f, $2 }'
  done | sort -k1,1 > "$out.defs"
  for f in "$@"; do
    "$NM" -u "$dir/${f%.c}.o" | awk -v f="$f" '{ print $NF, f }'
  done | sort -k1,1 > "$out.uses"
  join "$out.uses" "$out.defs" | awk '$2 != $3 { print $2, $3, $1, $4 }' |
    sort > "$out"
}

# layers_no_cycle EDGES: EDGES has one line "user definer" per reference;
# one ok, or one failure naming the files of a cycle and their references.
layers_no_cycle() {
  local edges=$1
  sort -u "$edges" -o "$edges"
  if tsort "$edges" > /dev/null 2> "$edges.loop"; then
    ok "the files' references form no cycle"
    return
  fi
  grep -v 'input contains' "$edges.loop" | sed 's/^tsort: //' | sort -u \
    > "$edges.inloop"
  bad "the files' references form a cycle through: $(tr '\n' ' ' \
    < "$edges.inloop")"
  awk 'NR == FNR { in_loop[$1] = 1; next }
       ($1 in in_loop) && ($2 in in_loop) { print "    " $1 " -> " $2 }' \
    "$edges.inloop" "$edges"
}
