#!/bin/bash
# test_ocaml_install.sh -- where `make install` puts the OCaml package's
# plain-bytecode DLL, and whether bytecode programs find it there: one
# linked by ocamlfind (through the META's -dllpath) and one built by dune
# (which passes no -dllpath: only the compiler's ld.conf can help it).
# With the patched runtime built (make ocaml-runtime), also that it is
# installed with the package and links as -runtime-variant _er.
#
# Runs from a configured build directory (`make check` does).  The first
# part installs into a temporary prefix.  The second installs into
# findlib's own destination, which the compiler's ld.conf lists, as a user
# with the default prefix gets it; it needs to write there (root, on a
# test machine), refuses to replace a runtime_events package already
# installed there, and uninstalls afterwards.  Each part it cannot run is
# an explicit skip.
set -u
MAKE=${MAKE:-make}

skip_all() { echo "SKIP: $*"; exit 77; }
command -v ocamlfind >/dev/null 2>&1 || skip_all "no ocamlfind"
case ${EVENTRING_SANITIZER:-none} in
none) ;;
*) skip_all "sanitizer build: ocamlrun cannot load a sanitized DLL" ;;
esac
[ "${EVENTRING_TRACING:-yes}" = yes ] || skip_all "tracing disabled"
[ -f Makefile ] || { echo "run me from a configured build directory" >&2; exit 2; }

pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); echo "  ok: $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL: $*"; }
check() { local w=$1; shift; if "$@"; then ok "$w"; else bad "$w"; fi; }

tmp=$(mktemp -d /tmp/eventring-ocaml-install.XXXXXX)
findlib_dest=$(ocamlfind printconf destdir)
system_installed=
cleanup() {
  if [ -n "$system_installed" ]; then
    $MAKE ocaml-uninstall OCAML_INSTALL_DIR="$findlib_dest" >/dev/null 2>&1
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# A program that starts tracing and says whether it got a ring file.
mkprog() {
  mkdir -p "$1"
  printf '%s\n' 'let () =' '  Runtime_events.start ();' \
    '  match Runtime_events.path () with' \
    '  | Some _ -> print_endline "started"' \
    '  | None -> print_endline "no path"' >"$1/p.ml"
}
# runs PROGRAM: runs it with no CAML_LD_LIBRARY_PATH, in a ring directory
# of its own; succeeds when it started tracing.
runs() {
  mkdir -p "$tmp/rings"
  local out
  out=$(env -u CAML_LD_LIBRARY_PATH OCAML_RUNTIME_EVENTS_DIR="$tmp/rings" \
        "$@" 2>"$tmp/run.err")
  [ "$out" = started ] || { echo "    $*: '$out'"; cat "$tmp/run.err"; return 1; }
}

# ---- Into a prefix: the DLL in the destination's stublibs. ------------
prefix=$tmp/prefix
dest=$prefix/lib/ocaml
if $MAKE ocaml-install prefix="$prefix" >"$tmp/install.log" 2>&1; then
  ok "make ocaml-install prefix=$prefix"
else
  cat "$tmp/install.log"; bad "make ocaml-install"
fi
# $dest/stublibs is not in ld.conf: the DLL stays in the package directory.
check "the DLL is in the package directory" \
  test -f "$dest/runtime_events/dllruntime_events_stubs.so"
check "no copy in a stublibs directory nobody searches" \
  test ! -e "$dest/stublibs/dllruntime_events_stubs.so"
check "META's -dllpath names the package directory" \
  grep -q "^linkopts(byte) = \"-dllpath $dest/runtime_events\"\$" "$dest/runtime_events/META"
check "install says what dune's bytecode needs" \
  grep -q "CAML_LD_LIBRARY_PATH=$dest/runtime_events" "$tmp/install.log"
mkprog "$tmp/fl"
if (cd "$tmp/fl" && OCAMLPATH=$dest ocamlfind ocamlc -package runtime_events \
      -linkpkg p.ml -o p.byte) >"$tmp/fl.log" 2>&1; then
  check "ocamlfind plain bytecode runs without CAML_LD_LIBRARY_PATH" \
    runs ocamlrun "$tmp/fl/p.byte"
else
  cat "$tmp/fl.log"; bad "ocamlfind ocamlc"
fi
# The patched runtime (make ocaml-runtime, which make check runs when
# Debian's ocaml-source is there) is installed with the package, and a
# native program linked with -runtime-variant _er records the phases only
# the runtime's probes give (the GC hooks give minor and major_slice).
if [ -f "$dest/runtime_events/libasmrun_er.a" ]; then
  ok "the patched runtime is installed with the package"
  mkdir -p "$tmp/er"
  printf '%s\n' 'let () =' '  Runtime_events.start ();' \
    '  ignore (Sys.opaque_identity (Array.make 100_000 0));' \
    '  Gc.compact ();' '  print_endline "started"' >"$tmp/er/p.ml"
  if (cd "$tmp/er" && OCAMLPATH=$dest ocamlfind ocamlopt -package runtime_events \
        -linkpkg -runtime-variant _er p.ml -o p) >"$tmp/er.log" 2>&1; then
    rm -rf "$tmp/rings"
    check "a program on the installed _er variant runs" \
      runs env OCAML_RUNTIME_EVENTS_PRESERVE=1 "$tmp/er/p"
    check "its file holds the runtime's compaction phase" \
      grep -q "name=compaction" <(tools/eventring dump --time=raw "$tmp"/rings/*.events 2>&1)
  else
    cat "$tmp/er.log"; bad "ocamlfind ocamlopt -runtime-variant _er"
  fi
elif [ -f "${EVENTRING_TEST_OCAML_RT:-ocaml-runtime}/libasmrun_er.a" ]; then
  bad "the patched runtime was built but not installed with the package"
else
  echo "SKIP: patched runtime part: not built (make ocaml-runtime; Debian's ocaml-source)"
  skip=$((skip + 1))
fi
$MAKE ocaml-uninstall prefix="$prefix" >/dev/null 2>&1
check "uninstall removes the package and its DLL" test ! -e "$dest/runtime_events"

# ---- Into findlib's destination: dune's bytecode finds the DLL. -------
ldconf="$(ocamlfind ocamlc -where)/ld.conf"
if ! command -v dune >/dev/null 2>&1; then
  echo "SKIP: dune part: no dune"; skip=$((skip + 1))
elif [ -e "$findlib_dest/runtime_events" ]; then
  echo "SKIP: dune part: a runtime_events package is installed in" \
    "$findlib_dest already; not replacing it"; skip=$((skip + 1))
elif ! grep -qx "$findlib_dest/stublibs" "$ldconf"; then
  echo "SKIP: dune part: $ldconf does not list $findlib_dest/stublibs"
  skip=$((skip + 1))
elif ! [ -w "$findlib_dest/stublibs" ] || ! [ -w "$findlib_dest" ]; then
  echo "SKIP: dune part: $findlib_dest is not writable (not root)"
  skip=$((skip + 1))
else
  system_installed=1
  if $MAKE ocaml-install OCAML_INSTALL_DIR="$findlib_dest" \
       >"$tmp/sys.log" 2>&1; then
    ok "make ocaml-install into $findlib_dest"
  else
    cat "$tmp/sys.log"; bad "make ocaml-install into $findlib_dest"
  fi
  check "the DLL is in $findlib_dest/stublibs" \
    test -f "$findlib_dest/stublibs/dllruntime_events_stubs.so"
  check "findlib records the DLL's owner" grep -qx runtime_events \
    "$findlib_dest/stublibs/dllruntime_events_stubs.so.owner"
  check "no second copy in the package directory" \
    test ! -e "$findlib_dest/runtime_events/dllruntime_events_stubs.so"
  d=$tmp/dune
  mkprog "$d"
  printf '(lang dune 2.9)\n' >"$d/dune-project"
  printf '(executable (name p) (modes byte exe) (libraries runtime_events))\n' \
    >"$d/dune"
  # Debian's dune searches only /usr/lib/ocaml unless OCAMLPATH says
  # more; the point here is the DLL at run time.
  if (cd "$d" && OCAMLPATH=$findlib_dest dune build --root . ./p.bc ./p.exe) \
       >"$tmp/dune.log" 2>&1; then
    check "dune bytecode runs without CAML_LD_LIBRARY_PATH" \
      runs "$d/_build/default/p.bc"
    check "dune native runs" runs "$d/_build/default/p.exe"
  else
    cat "$tmp/dune.log"; bad "dune build"
  fi
  $MAKE ocaml-uninstall OCAML_INSTALL_DIR="$findlib_dest" >/dev/null 2>&1
  system_installed=
  check "uninstall leaves no DLL in $findlib_dest/stublibs" \
    test ! -e "$findlib_dest/stublibs/dllruntime_events_stubs.so"
fi

echo "ocaml install: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
