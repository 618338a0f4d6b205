#!/bin/sh
# test_ocaml_stage.sh -- staging the OCaml package again (`make
# ocaml-stage`, which `make demo` and `make bench` run) keeps the patched
# runtime variants built by `make ocaml-runtime` (ocaml-runtime/*.a) in
# the staged package, where -runtime-variant _er finds them and the
# testsuite/ocaml er_* tests look for them.  Runs from a configured build
# directory (`make check` does); skipped when the variants are not built.
MAKE=${MAKE:-make}
rt=${EVENTRING_TEST_OCAML_RT:-ocaml-runtime}
pkg=stdlib-bindings/stage/runtime_events
case ${EVENTRING_SANITIZER:-none} in
none) ;;
*) echo "SKIP: sanitizer build: its OCaml tests do not run, so it stages no runtime variant"
   exit 77 ;;
esac
if [ ! -f "$rt/libasmrun_er.a" ]; then
  echo "SKIP: the patched OCaml runtime is not built (make ocaml-runtime; Debian's ocaml-source)"
  exit 77
fi
$MAKE --no-print-directory ocaml-stage >/dev/null 2>&1 || { echo "FAIL: make ocaml-stage"; exit 1; }
fail=0
for lib in libasmrun_er.a libasmrun_eri.a libcamlrun_er.a libcamlrun_eri.a; do
  if [ ! -f "$rt/$lib" ]; then
    echo "FAIL: $rt/$lib is not built"; fail=1
  elif cmp -s "$rt/$lib" "$pkg/$lib"; then
    echo "ok: $lib staged"
  else
    echo "FAIL: $lib missing from $pkg after make ocaml-stage"; fail=1
  fi
done
[ -f "$pkg/META" ] || { echo "FAIL: no META staged"; fail=1; }
exit $fail
