#!/bin/bash
# test_ocaml_patches.sh -- the OCaml runtime patch series (patches/) and
# build-aux/ocaml-runtime, which applies them:
#   - patches/ocaml-4.13.1 applies to Debian's 4.13.1 source, Debian's own
#     patches first, each patch with no fuzz and no offset;
#   - the libraries `make check` built from it (in ./ocaml-runtime) are
#     the right variants: libasmrun_er.a (and libcamlrun_er.a) refer to
#     eventring__on and caml_ev_begin and define them weakly only, the
#     _eri ones define caml_ev_begin strongly in eventlog.o;
#   - patches/ocaml-4.14.2 applies to OCaml 4.14.2 the same way, and its
#     runtime builds (OCAML_RUNTIME_ANY_VERSION=1, about 90 s) into the
#     same variants;
#   - build-aux/ocaml-runtime fails naming a patch that does not apply,
#     and refuses a source of another version than the installed
#     compiler's unless OCAML_RUNTIME_ANY_VERSION is set.
#
# The 4.14.2 source is not packaged by Debian: the test takes it from
# EVENTRING_OCAML414_SRC (a directory or a tarball: a git checkout of the
# 4.14.2 tag, or ocaml-4.14.2.tar.gz), else /usr/src/ocaml-4.14.2 or
# /usr/src/ocaml-4.14.2.tar.gz, and skips that part, saying so, when
# there is none.  Debian's is /usr/src/ocaml-source-4.13.1.tar (package
# ocaml-source), or EVENTRING_OCAML413_SRC.
#
# Runs from a configured build directory (`make check` does).  Skipped in
# sanitizer builds, which build no OCaml runtime: the plain builds check.
set -u

srcdir=${EVENTRING_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
builddir=${EVENTRING_TEST_BUILDDIR:-$PWD}
NM=${NM:-nm}
OCAMLFIND=${OCAMLFIND:-ocamlfind}
export OCAMLFIND

skip_all() { echo "SKIP: $*"; exit 77; }
case ${EVENTRING_SANITIZER:-none} in
none) ;;
*) skip_all "sanitizer build: no OCaml runtime is built here; the plain builds check the patches" ;;
esac
command -v patch >/dev/null 2>&1 || skip_all "patch is not installed"

pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); echo "  ok: $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL: $*"; }
skip() { skip=$((skip + 1)); echo "SKIP: $*"; }

tmp=$(mktemp -d /tmp/eventring-ocaml-patches.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

have_ocamlfind=
if "$OCAMLFIND" ocamlopt -version >/dev/null 2>&1; then
  have_ocamlfind=yes
  have_version=$("$OCAMLFIND" ocamlopt -version)
fi

# unpack SRC DIR: the OCaml tree of SRC (a directory, a tarball, or
# Debian's ocaml-source tarball, whose own patches are applied) into
# DIR/tree, by build-aux/ocaml-unpack.  Fails, saying why, when SRC holds
# no OCaml tree.
unpack() {
  local msg
  mkdir -p "$2" && msg=$(sh "$srcdir/build-aux/ocaml-unpack" "$1" "$2/tree" 2>&1) ||
    { echo "    $msg"; return 1; }
}

# series_applies TREE SERIES LABEL: each patch of SERIES, in order, with
# `patch --dry-run` saying nothing but the files it checks (no fuzz, no
# offset, no failed hunk), then applied.
series_applies() {
  local tree=$1 series=$2 label=$3 p out noise rc
  for p in "$series"/*.patch; do
    [ -f "$p" ] || { bad "$label: no patches in $series"; return; }
    out=$(patch -d "$tree" -p1 --dry-run <"$p" 2>&1)
    rc=$?
    noise=$(printf '%s\n' "$out" | grep -Ev '^(checking|patching) file ')
    if [ $rc -eq 0 ] && [ -z "$noise" ]; then
      ok "$label: $(basename "$p") applies with no fuzz or offset"
    else
      bad "$label: $(basename "$p") (patch --dry-run exit $rc):"
      printf '    %s\n' "$out"
    fi
    patch -d "$tree" -p1 -s --no-backup-if-mismatch <"$p" >/dev/null 2>&1
  done
}

# syms LIB SYMBOL: "OBJECT TYPE" for each line of nm on LIB naming SYMBOL.
syms() {
  "$NM" -A "$1" 2>/dev/null |
    awk -v s="$2" '$NF == s { split($1, a, ":"); print a[2], $(NF - 1) }'
}

# weak_only LIB SYMBOL: LIB refers to SYMBOL and defines it, weakly only.
weak_only() {
  local l
  l=$(syms "$1" "$2")
  printf '%s\n' "$l" | awk '$2 == "U" { u = 1 } $2 ~ /^[VW]$/ { w = 1 }
    $2 != "U" && $2 !~ /^[VW]$/ { s = 1 } END { exit !(u && w && !s) }' ||
    { echo "    nm $2:"; printf '%s\n' "$l" | sed 's/^/      /'; return 1; }
}

# instrumented LIB: LIB defines caml_ev_begin strongly in its eventlog
# object and knows nothing of eventring__on: a CAML_INSTR build.
instrumented() {
  local l
  l=$(syms "$1" caml_ev_begin)
  printf '%s\n' "$l" | awk '$2 == "T" && $1 ~ /^eventlog\./ { t = 1 }
    $2 ~ /^[VW]$/ { w = 1 } END { exit !(t && !w) }' ||
    { echo "    nm caml_ev_begin:"; printf '%s\n' "$l" | sed 's/^/      /'; return 1; }
  l=$(syms "$1" eventring__on)
  [ -z "$l" ] ||
    { echo "    nm eventring__on:"; printf '%s\n' "$l" | sed 's/^/      /'; return 1; }
}

# variants DIR LABEL: the four libraries in DIR are the right variants.
variants() {
  local d=$1 label=$2 lib
  for lib in asmrun camlrun; do
    if [ ! -f "$d/lib${lib}_er.a" ] || [ ! -f "$d/lib${lib}_eri.a" ]; then
      bad "$label: lib${lib}_er.a or lib${lib}_eri.a is missing from $d"
      continue
    fi
    if weak_only "$d/lib${lib}_er.a" eventring__on &&
       weak_only "$d/lib${lib}_er.a" caml_ev_begin; then
      ok "$label: lib${lib}_er.a refers to eventring__on and caml_ev_begin, defines them weakly"
    else
      bad "$label: lib${lib}_er.a is not the normal runtime with weak probes"
    fi
    if instrumented "$d/lib${lib}_eri.a"; then
      ok "$label: lib${lib}_eri.a is the instrumented runtime (caml_ev_begin from eventlog.o)"
    else
      bad "$label: lib${lib}_eri.a is not the instrumented runtime"
    fi
  done
}

# ---- 4.13.1: Debian's source and what `make check` built from it. -----
src413=${EVENTRING_OCAML413_SRC:-/usr/src/ocaml-source-4.13.1.tar}
if [ ! -e "$src413" ]; then
  skip "Debian's OCaml 4.13.1 source is not at hand ($src413, package ocaml-source; build-aux/install-deps installs it)"
  src413=
elif unpack "$src413" "$tmp/413"; then
  version=$(head -n 1 "$tmp/413/tree/VERSION" | sed 's/[+~].*//')
  if [ "$version" = 4.13.1 ]; then
    series_applies "$tmp/413/tree" "$srcdir/patches/ocaml-4.13.1" 4.13.1
  else
    bad "$src413 is OCaml $version, not 4.13.1"
  fi
  rm -rf "$tmp/413"
else
  bad "could not unpack $src413"
fi
# `make check` builds them into ocaml-runtime/ (or OCAML_RT=, another
# build directory's) and copies them into the staged package.
rt413=${EVENTRING_TEST_OCAML_RT:-$builddir/ocaml-runtime}
if [ -z "$src413" ]; then
  :
elif [ -z "$have_ocamlfind" ]; then
  skip "the 4.13.1 runtime variants: no ocamlfind, so make check builds none"
elif [ "$have_version" != 4.13.1 ]; then
  skip "the 4.13.1 runtime variants: the installed compiler is $have_version, make check builds none from 4.13.1"
elif [ "$(cat "$rt413/VERSION" 2>/dev/null)" != 4.13.1 ]; then
  bad "make check built no 4.13.1 runtime in $rt413 (make ocaml-runtime builds it)"
else
  variants "$rt413" "4.13.1 (built by make check)"
fi

# ---- 4.14.2: applies, and its runtime builds. ------------------------
src414=${EVENTRING_OCAML414_SRC:-}
if [ -z "$src414" ]; then
  for c in /usr/src/ocaml-4.14.2 /usr/src/ocaml-4.14.2.tar.gz \
           /usr/src/ocaml-4.14.2.tar.xz; do
    if [ -e "$c" ]; then src414=$c; break; fi
  done
fi
if [ -z "$src414" ]; then
  skip "the OCaml 4.14.2 source is not at hand (set EVENTRING_OCAML414_SRC=DIR or TARBALL, or put it at /usr/src/ocaml-4.14.2 or /usr/src/ocaml-4.14.2.tar.gz): its patches are not checked"
elif [ ! -e "$src414" ]; then
  bad "EVENTRING_OCAML414_SRC=$src414: no such file or directory"
  src414=
elif unpack "$src414" "$tmp/414"; then
  version=$(head -n 1 "$tmp/414/tree/VERSION" | sed 's/[+~].*//')
  if [ "$version" = 4.14.2 ]; then
    series_applies "$tmp/414/tree" "$srcdir/patches/ocaml-4.14.2" 4.14.2
  else
    bad "$src414 is OCaml $version, not 4.14.2"
    src414=
  fi
  rm -rf "$tmp/414"
else
  bad "could not unpack $src414"
  src414=
fi
if [ -n "$src414" ] && [ -z "$have_ocamlfind" ]; then
  skip "building the 4.14.2 runtime: no ocamlfind"
elif [ -n "$src414" ]; then
  start=$(date +%s)
  if OCAML_RUNTIME_ANY_VERSION=1 sh "$srcdir/build-aux/ocaml-runtime" \
       "$src414" "$tmp/rt414" "$srcdir/patches" >"$tmp/rt414.log" 2>&1; then
    ok "4.14.2: build-aux/ocaml-runtime built the runtime ($(($(date +%s) - start)) s)"
    variants "$tmp/rt414" 4.14.2
  else
    bad "4.14.2: build-aux/ocaml-runtime failed:"
    sed 's/^/    /' "$tmp/rt414.log"
    [ -f "$tmp/rt414/build.log" ] && tail -n 30 "$tmp/rt414/build.log"
  fi
  rm -rf "$tmp/rt414"
fi

# ---- build-aux/ocaml-runtime's refusals. ------------------------------
if [ -z "$have_ocamlfind" ]; then
  skip "build-aux/ocaml-runtime's refusals: no ocamlfind"
else
  # A patch that does not apply: a removed line that is not in the source.
  if [ -n "$src413" ] && [ "$have_version" = 4.13.1 ]; then
    bsrc=$src413 bver=4.13.1 bany=
  elif [ -n "$src414" ]; then
    bsrc=$src414 bver=4.14.2 bany=1
  else
    bsrc=
  fi
  if [ -z "$bsrc" ]; then
    skip "a patch that does not apply: no OCaml source at hand"
  else
    cp -R "$srcdir/patches" "$tmp/patches"
    victim=$(ls "$tmp/patches/ocaml-$bver/"0002-*.patch)
    sed -i 's/^-CAMLprim value caml_eventlog_resume(value v)$/-CAMLprim value caml_eventlog_resume_broken(value v)/' "$victim"
    if cmp -s "$victim" "$srcdir/patches/ocaml-$bver/$(basename "$victim")"; then
      bad "could not corrupt $(basename "$victim") (its removed line changed?)"
    else
      OCAML_RUNTIME_ANY_VERSION=$bany sh "$srcdir/build-aux/ocaml-runtime" \
        "$bsrc" "$tmp/rtbad" "$tmp/patches" >"$tmp/bad.log" 2>&1
      rc=$?
      if [ $rc -eq 1 ] &&
         grep -q "$(basename "$victim") does not apply to $bsrc" "$tmp/bad.log" &&
         [ ! -e "$tmp/rtbad/libasmrun_er.a" ]; then
        ok "a corrupted $(basename "$victim") fails the build, named: $(tail -n 1 "$tmp/bad.log")"
      else
        bad "a corrupted $(basename "$victim"): exit $rc, said:"
        sed 's/^/    /' "$tmp/bad.log"
      fi
    fi
    rm -rf "$tmp/rtbad" "$tmp/patches"
  fi

  # A source of another version than the compiler's: a tree that has
  # nothing but its VERSION, which is all the check reads.
  other=4.99.0
  [ "$have_version" != $other ] || other=4.98.0
  mkdir -p "$tmp/other"
  echo "$other" >"$tmp/other/VERSION"
  env -u OCAML_RUNTIME_ANY_VERSION sh "$srcdir/build-aux/ocaml-runtime" \
    "$tmp/other" "$tmp/rtother" "$srcdir/patches" >"$tmp/other.log" 2>&1
  rc=$?
  if [ $rc -eq 1 ] &&
     grep -q "is OCaml $other, but the installed compiler is $have_version" "$tmp/other.log"; then
    ok "OCaml $other is refused: $(tail -n 1 "$tmp/other.log")"
  else
    bad "OCaml $other against compiler $have_version: exit $rc, said:"
    sed 's/^/    /' "$tmp/other.log"
  fi
  # OCAML_RUNTIME_ANY_VERSION lets it past, to the missing series.
  OCAML_RUNTIME_ANY_VERSION=1 sh "$srcdir/build-aux/ocaml-runtime" \
    "$tmp/other" "$tmp/rtother" "$srcdir/patches" >"$tmp/other.log" 2>&1
  rc=$?
  if [ $rc -eq 1 ] &&
     grep -q "no patch series for OCaml $other" "$tmp/other.log"; then
    ok "OCAML_RUNTIME_ANY_VERSION=1 takes OCaml $other, which has no series: $(tail -n 1 "$tmp/other.log")"
  else
    bad "OCaml $other with OCAML_RUNTIME_ANY_VERSION=1: exit $rc, said:"
    sed 's/^/    /' "$tmp/other.log"
  fi
fi

echo "ocaml patches: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
