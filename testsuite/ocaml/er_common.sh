# er_common.sh -- shell helpers of the patched-runtime tests (er_*.check,
# which need -runtime-variant _er: their NAME.needs says patched-runtime),
# sourced by them on top of i_common.sh; not a test itself.

. "$(dirname "$0")/i_common.sh"

# clean FILE: FILE decodes (eventring dump) with no malformed event and no
# lost event, into $DUMP.
clean() {
  dump "$1"
  s=$(grep '^SUMMARY' "$DUMP" | tail -n 1)
  case $s in *" malformed_events=0 "*) ;; *) fail "$1: malformed events: $s";; esac
  case $s in *" lost_events_total=0 "*) ;; *) fail "$1: lost events: $s";; esac
}

# nested: in $DUMP, every runtime_end closes the innermost open phase of its
# domain, of the same name, and no phase is left open at the end.
nested() {
  awk '
    / kind=runtime_begin / || / kind=runtime_end / {
      d = $1; n = ""
      for (i = 2; i <= NF; i++) if ($i ~ /^name=/) n = substr($i, 6)
      if ($0 ~ / kind=runtime_begin /) { st[d, ++top[d]] = n; next }
      if (top[d] == 0) { print "end of " n " with no phase open (" d ")"; bad = 1; exit }
      if (st[d, top[d]] != n) {
        print "end of " n " closes " st[d, top[d]] " (" d ")"; bad = 1; exit
      }
      top[d]--
    }
    END {
      if (bad) exit 1
      for (d in top) if (top[d] != 0) { print top[d] " phases left open in " d; exit 1 }
    }' "$DUMP" || fail "phases not properly nested"
}

# names KIND: the names of the events of that kind in $DUMP, sorted, once.
names() {
  grep " kind=$1 " "$DUMP" | sed 's/.* name=\([^ ]*\).*/\1/' | sort -u
}

# before MARKER KIND NAME: how many events of that kind and name $DUMP holds
# before the first event named MARKER.
before() {
  awk -v m="name=$1" -v k="kind=$2" -v n="name=$3" '
    { for (i = 1; i <= NF; i++) if ($i == m) exit
      f = 0; g = 0
      for (i = 1; i <= NF; i++) { if ($i == k) f = 1; if ($i == n) g = 1 }
      if (f && g) c++ }
    END { print c + 0 }' "$DUMP"
}

# rerun NAME DIR [FLAGS...]: builds testsuite/ocaml/NAME.ml again with the
# test's flags, less its -runtime-variant, and FLAGS (say -runtime-variant
# i; none: the hooks-only runtime), and runs it in DIR with the test's
# environment and DIR as OCAML_RUNTIME_EVENTS_DIR and EVENTRING_TEST_TMP;
# its stdout goes to DIR/stdout.
rerun() {
  n=$1 d=$2; shift 2
  src=$(dirname "$0")
  mkdir -p "$d/build" || fail "mkdir $d"
  fl=
  if [ -f "$src/$n.flags" ]; then
    fl=$(sed 's/-runtime-variant[ 	]*[^ 	]*//g' "$src/$n.flags")
  fi
  cp "$src/$n.ml" "$d/build/" || fail "copy $n.ml"
  # shellcheck disable=SC2086 # flags are words
  ocamlfind ocamlopt -package runtime_events -linkpkg $fl "$@" \
    -o "$d/build/prog" "$d/build/$n.ml" >"$d/build/log" 2>&1 \
    || { cat "$d/build/log" >&2; fail "building $n with $*"; }
  (
    cd "$d" || exit 1
    OCAML_RUNTIME_EVENTS_DIR=$d EVENTRING_TEST_TMP=$d
    export OCAML_RUNTIME_EVENTS_DIR EVENTRING_TEST_TMP
    if [ -f "$src/$n.env" ]; then
      while IFS= read -r line; do
        case $line in ''|'#'*) continue;; esac
        export "${line%%=*}=${line#*=}"
      done <"$src/$n.env"
    fi
    if command -v timeout >/dev/null 2>&1; then
      exec timeout -k 5 60 "$d/build/prog"
    fi
    exec "$d/build/prog"
  ) >"$d/stdout" 2>"$d/stderr" || { cat "$d/stderr" >&2; fail "$n ($*) failed"; }
}
