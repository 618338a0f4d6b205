#!/bin/sh
# run.sh -- builds and runs the OCaml test programs of testsuite/ocaml/
# against the ocamlfind package staged in the build directory
# (stdlib-bindings/stage, made by `make check-programs`).
#
# For each NAME.ml (a test when NAME.expected or NAME.check exists):
#   NAME.flags     extra ocamlfind flags (-package threads.posix, ...)
#   NAME.env       VAR=VALUE lines added to the program's environment
#   NAME.expected  what stdout must be, exactly
#   NAME.check     a shell script run afterwards with the test's temporary
#                  directory as $1 and the program's stdout file as $2;
#                  non-zero fails the test
#   NAME.timeout   the program runs for that many seconds and is then
#                  stopped, which is not a failure (for programs that loop
#                  forever, as the manual's first example does)
#   NAME.byte      (empty) also build and run it as bytecode, with -custom
#                  and plain (loading dllruntime_events_stubs.so)
#   NAME.needs     what the test needs beyond the package, one word a line:
#                  `patched-runtime` -- OCaml's runtime with eventring's
#                  probes (-runtime-variant _er, `make ocaml-runtime`),
#                  staged as libasmrun_er.a in the package; without it the
#                  test is skipped, saying so, and not counted
# Every run gets a fresh OCAML_RUNTIME_EVENTS_DIR, also exported as
# EVENTRING_TEST_TMP, and EVENTRING_TOOL (the built `eventring` command).
# OCAML_TESTS="a b" runs only those.  Prints `ocaml: N passed, N failed,
# N skipped`; exits 1 on a failure, 77 when nothing can run.

srcdir=${EVENTRING_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${EVENTRING_TEST_BUILDDIR:-$(pwd)}
tests=$srcdir/testsuite/ocaml

if ! command -v ocamlfind >/dev/null 2>&1; then
  echo "SKIP: no ocamlfind"
  exit 77
fi
# An OCaml program linking eventring built with -fsanitize would need the
# sanitizer's runtime first in the process: ocamlrun is not built with it
# (plain bytecode cannot load the DLL), and LeakSanitizer reports the
# OCaml runtime's own memory, which it never frees at exit.
case ${EVENTRING_SANITIZER:-none} in
none) ;;
*)
  echo "SKIP: OCaml tests in a sanitizer build ($EVENTRING_SANITIZER): the" \
    "OCaml runtime is not built with the sanitizer"
  exit 77;;
esac
if [ "${EVENTRING_TRACING:-yes}" = no ]; then
  echo "SKIP: OCaml tests in a build with tracing disabled"
  exit 77
fi

OCAMLPATH=$builddir/stdlib-bindings/stage
export OCAMLPATH
if [ ! -f "$OCAMLPATH/runtime_events/META" ]; then
  echo "ocaml: the package is not staged in $OCAMLPATH (make check-programs)"
  exit 1
fi
EVENTRING_TOOL=${EVENTRING_TEST_TOOL:-$builddir/tools/eventring}
export EVENTRING_TOOL
unset OCAML_RUNTIME_EVENTS_START OCAML_RUNTIME_EVENTS_DIR \
  OCAML_RUNTIME_EVENTS_PRESERVE OCAMLRUNPARAM CAMLRUNPARAM

limit=
if command -v timeout >/dev/null 2>&1; then limit="timeout -k 5"; fi
work=$(mktemp -d /tmp/eventring-ocaml.XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT INT TERM

pass=0
fail=0
skipped=0
failed=

# build NAME VARIANT DIR: compiles NAME.ml into DIR/prog.
build() {
  cp "$tests/$1.ml" "$3/$1.ml" || return 1
  flags=
  if [ -f "$tests/$1.flags" ]; then flags=$(cat "$tests/$1.flags"); fi
  case $2 in
  native) set -- ocamlopt "$3/$1.ml" "$3";;
  custom) set -- ocamlc "$3/$1.ml" "$3" -custom;;
  byte) set -- ocamlc "$3/$1.ml" "$3";;
  esac
  comp=$1 src=$2 dir=$3
  shift 3
  # shellcheck disable=SC2086 # flags are words
  ocamlfind "$comp" -package runtime_events -linkpkg $flags "$@" \
    -o "$dir/prog" "$src" >"$dir/build.log" 2>&1
}

# run NAME VARIANT: one build and one run.  Returns 0 on success.
run() {
  name=$1 variant=$2
  dir=$work/$name.$variant
  mkdir -p "$dir/tmp" || return 1
  if ! build "$name" "$variant" "$dir"; then
    echo "build failed:"; cat "$dir/build.log"; return 1
  fi
  secs=30
  if [ -f "$tests/$name.timeout" ]; then secs=$(cat "$tests/$name.timeout"); fi
  (
    cd "$dir/tmp" || exit 1
    OCAML_RUNTIME_EVENTS_DIR=$dir/tmp
    EVENTRING_TEST_TMP=$dir/tmp
    export OCAML_RUNTIME_EVENTS_DIR EVENTRING_TEST_TMP
    if [ -f "$tests/$name.env" ]; then
      while IFS= read -r line; do
        case $line in ''|'#'*) continue;; esac
        export "${line%%=*}=${line#*=}"
      done <"$tests/$name.env"
    fi
    if [ -n "$limit" ]; then
      exec $limit "$secs" "$dir/prog"
    else
      exec "$dir/prog"
    fi
  ) >"$dir/stdout" 2>"$dir/stderr"
  rc=$?
  if [ $rc -eq 124 ] && [ -f "$tests/$name.timeout" ]; then rc=0; fi
  if [ $rc -ne 0 ]; then
    echo "exit status $rc; stderr:"; cat "$dir/stderr"; return 1
  fi
  if [ -f "$tests/$name.expected" ] &&
    ! diff -u "$tests/$name.expected" "$dir/stdout"; then
    return 1
  fi
  if [ -f "$tests/$name.check" ] &&
    ! sh "$tests/$name.check" "$dir/tmp" "$dir/stdout"; then
    echo "$name.check failed; stdout was:"; head -20 "$dir/stdout"
    return 1
  fi
  return 0
}

for ml in "$tests"/*.ml; do
  name=$(basename "$ml" .ml)
  [ -f "$tests/$name.expected" ] || [ -f "$tests/$name.check" ] || continue
  if [ -n "${OCAML_TESTS:-}" ]; then
    case " $OCAML_TESTS " in *" $name "*) ;; *) continue;; esac
  fi
  if [ -f "$tests/$name.needs" ] && grep -qx 'patched-runtime' "$tests/$name.needs" &&
     [ ! -f "$OCAMLPATH/runtime_events/libasmrun_er.a" ]; then
    echo "SKIP: $name: the patched OCaml runtime is not built (make ocaml-runtime; Debian's ocaml-source)"
    skipped=$((skipped + 1))
    continue
  fi
  variants=native
  if [ -f "$tests/$name.byte" ]; then variants="native custom byte"; fi
  for v in $variants; do
    if run "$name" "$v"; then
      echo "PASS: $name ($v)"; pass=$((pass + 1))
    else
      echo "FAIL: $name ($v)"; fail=$((fail + 1)); failed="$failed $name($v)"
    fi
  done
done

# dune: a project whose executable names the package in (libraries ...)
# builds through the same staged package and starts tracing (skipped,
# and not counted, where dune is not installed).
dune_project() {
  d=$work/dune-project-test
  mkdir -p "$d" || return 1
  printf '(lang dune 2.9)\n' >"$d/dune-project"
  printf '(executable (name p) (libraries runtime_events))\n' >"$d/dune"
  printf '%s\n' 'let () =' '  Runtime_events.start ();' \
    '  match Runtime_events.path () with' \
    '  | Some _ -> print_endline "started"' \
    '  | None -> print_endline "no path"' >"$d/p.ml"
  (cd "$d" && dune build --root . ./p.exe) >"$d/build.log" 2>&1 || {
    echo "dune build failed:"; cat "$d/build.log"; return 1; }
  mkdir -p "$d/rings"
  out=$(OCAML_RUNTIME_EVENTS_DIR=$d/rings OCAML_RUNTIME_EVENTS_PRESERVE=1 \
        "$d/_build/default/p.exe") || { echo "p.exe failed"; return 1; }
  [ "$out" = started ] || { echo "p.exe printed: $out"; return 1; }
  set -- "$d"/rings/*.events
  [ -f "$1" ] || { echo "no ring file"; return 1; }
}
if [ -z "${OCAML_TESTS:-}" ] && command -v dune >/dev/null 2>&1; then
  if dune_project; then
    echo "PASS: dune (libraries runtime_events)"; pass=$((pass + 1))
  else
    echo "FAIL: dune (libraries runtime_events)"; fail=$((fail + 1))
    failed="$failed dune"
  fi
fi

if [ -n "$failed" ]; then echo "ocaml failed:$failed"; fi
echo "ocaml: $pass passed, $fail failed, $skipped skipped"
if [ $fail -ne 0 ]; then exit 1; fi
if [ $pass -eq 0 ]; then exit 77; fi
exit 0
