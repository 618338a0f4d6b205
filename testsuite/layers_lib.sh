# layers_lib.sh -- what test_layers.sh (tools/) and test_runtime_layers.sh
# (runtime/) share: the references between objects, read with nm, and the
# check that they form no cycle, with tsort.  Sourced by them, after $NM
# is set: counts their checks (ok, bad) and skips when nm is missing.

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "  ok: $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL: $*"; }

if ! command -v "$NM" >/dev/null 2>&1; then
  echo "SKIP: no $NM to read the objects' symbols"
  exit 77
fi

# layers_refs DIR FILE...: skips unless every DIR/FILE.o (FILE with or
# without .c) is built; makes $tmp (removed at exit) and writes to
# $tmp/refs one line "user definer symbol type" for each symbol that a
# FILE uses and another defines (type: nm's letter for the definition).
layers_refs() {
  local dir=$1 f
  shift
  for f in "$@"; do
    if [ ! -f "$dir/${f%.c}.o" ]; then
      echo "SKIP: $dir/${f%.c}.o is not built (make first)"
      exit 77
    fi
  done
  tmp=$(mktemp -d) || exit 1
  trap 'rm -rf "$tmp"' EXIT
  for f in "$@"; do
    "$NM" -g --defined-only "$dir/${f%.c}.o" |
      awk -v f="$f" 'NF == 3 { print $3, f, $2 }'
  done | sort -k1,1 > "$tmp/defs"
  for f in "$@"; do
    "$NM" -u "$dir/${f%.c}.o" | awk -v f="$f" '{ print $NF, f }'
  done | sort -k1,1 > "$tmp/uses"
  join "$tmp/uses" "$tmp/defs" | awk '$2 != $3 { print $2, $3, $1, $4 }' |
    sort > "$tmp/refs"
  if [ -s "$tmp/refs" ]; then
    ok "$(wc -l < "$tmp/refs") references between files"
  else
    bad "no reference between the files of $dir (nm found nothing?)"
  fi
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
