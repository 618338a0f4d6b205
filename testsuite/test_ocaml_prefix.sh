#!/bin/bash
# test_ocaml_prefix.sh -- which directory `make install` chooses for the
# OCaml package, after `configure --prefix=P`, for P = /usr, /usr/local,
# /opt/x and /usr/localfoo, against findlib destinations of three kinds
# (Debian's /usr/local/lib/ocaml/VERSION, a system /usr/lib/ocaml, one in
# /opt/x).  findlib's destination is chosen only when it lies in P's own
# lib directory: /usr/local/lib/... is below /usr but is not /usr's.
#
# configure runs in a temporary directory; a stand-in ocamlfind (OCAMLFIND
# on make's command line) prints the destination, so the answers do not
# depend on the machine's findlib; make prints OCAML_INSTALL_DIR.
set -u

srcdir=${EVENTRING_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
MAKE=${MAKE:-make}
tmp=$(mktemp -d /tmp/eventring-ocaml-prefix.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

[ -x "$srcdir/configure" ] || {
  echo "FAIL: no $srcdir/configure (run ./bootstrap or autoconf)"
  exit 1
}

# The stand-in: `ocamlfind printconf destdir` prints $FINDLIB_DESTDIR;
# anything else (ocamlc -where, for the stublibs rule) prints nothing.
cat >"$tmp/ocamlfind" <<'SH'
#!/bin/sh
[ "$1 $2" = "printconf destdir" ] && echo "$FINDLIB_DESTDIR"
exit 0
SH
chmod +x "$tmp/ocamlfind"

# chosen PREFIX DESTDIR: OCAML_INSTALL_DIR of a build configured with
# --prefix=PREFIX when findlib's destination is DESTDIR.
chosen() {
  local build="$tmp/build${1//\//_}"
  if [ ! -f "$build/Makefile" ]; then
    mkdir -p "$build"
    (cd "$build" && "$srcdir/configure" -q --prefix="$1" >/dev/null 2>&1) ||
      { echo "configure --prefix=$1 failed"; return; }
  fi
  FINDLIB_DESTDIR=$2 $MAKE -s --no-print-directory -C "$build" \
    OCAMLFIND="$tmp/ocamlfind" \
    --eval 'print-ocaml-dir: ; @echo $(OCAML_INSTALL_DIR)' print-ocaml-dir
}

expect() { # expect PREFIX DESTDIR WANT
  local got
  got=$(chosen "$1" "$2")
  if [ "$got" = "$3" ]; then
    ok "prefix $1, findlib $2: $got"
  else
    bad "prefix $1, findlib $2: $got (want $3)"
  fi
}

debian=/usr/local/lib/ocaml/4.13.1
system=/usr/lib/ocaml
opt=/opt/x/lib/ocaml

expect /usr "$debian" /usr/lib/ocaml
expect /usr "$system" /usr/lib/ocaml
expect /usr "$opt" /usr/lib/ocaml
expect /usr/local "$debian" "$debian"
expect /usr/local "$system" /usr/local/lib/ocaml
expect /opt/x "$debian" /opt/x/lib/ocaml
expect /opt/x "$opt" "$opt"
expect /usr/localfoo "$debian" /usr/localfoo/lib/ocaml
expect /usr/localfoo /usr/localfoo/lib/ocaml/5.1 /usr/localfoo/lib/ocaml/5.1
# No findlib at all: the prefix's own directory.
expect /usr "" /usr/lib/ocaml

echo "ocaml prefix: $pass checks passed, $fail failed"
[ "$fail" -eq 0 ]
