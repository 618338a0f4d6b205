#!/bin/sh
# whole_compiler.sh -- builds a whole OCaml compiler from the patch series
# (patches/ocaml-VERSION/), the path for people who keep their own switch,
# and checks that a program it compiles links and runs without eventring:
# the weak inert caml_ev_* definitions of the patched runtime stand in for
# eventring's probes.  Says how long each step took.
#
#   sh bench/whole_compiler.sh SRC PATCHDIR [WORKDIR]
#
# SRC is Debian's ocaml-source tarball (/usr/src/ocaml-source-4.13.1.tar:
# the upstream tarball and debian-patches/, applied first), an upstream
# tarball or a source directory; PATCHDIR is the tree's patches/ folder.
# WORKDIR (default: a new temporary directory, removed at the end) holds
# the tree and the installed compiler; a WORKDIR given is kept.  Run by
# `make bench-compiler` (never by `make check`: it takes many minutes).
# Exits 0 when the compiler was built and its program ran, 1 on an error,
# 2 on a usage error.
set -eu

die() { echo "whole_compiler: $*" >&2; exit 1; }
[ $# -ge 2 ] && [ $# -le 3 ] ||
  { echo "usage: sh bench/whole_compiler.sh SRC PATCHDIR [WORKDIR]" >&2; exit 2; }
src=$1 patchdir=$2
[ -e "$src" ] || die "$src: no such file or directory (install Debian's ocaml-source, or give OCAML_SRC=DIR)"
[ -d "$patchdir" ] || die "$patchdir: no such directory (give the tree's patches/)"
patchdir=$(cd "$patchdir" && pwd)
case $src in /*) ;; *) src=$(pwd)/$src ;; esac

if [ $# -eq 3 ]; then
  work=$3 keep=yes
  mkdir -p "$work"
  work=$(cd "$work" && pwd)
else
  work=$(mktemp -d /tmp/eventring-whole-compiler.XXXXXX) keep=
fi
cleanup() { [ -n "$keep" ] || rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

now() { date +%s; }
t0=$(now)
step_t=$t0
took() { # STEP: says how long STEP took since the previous one
  t=$(now)
  echo "whole_compiler: $1: $((t - step_t)) s"
  step_t=$t
}

# Unpacking as build-aux/ocaml-runtime does (build-aux/ocaml-unpack):
# Debian's patches first.
rm -rf "$work/tree" "$work/prefix"
sh "$(dirname "$patchdir")/build-aux/ocaml-unpack" "$src" "$work/tree" ||
  die "cannot unpack $src"
tree=$work/tree
version=$(head -n 1 "$tree/VERSION" | sed 's/[+~].*//')
series=$patchdir/ocaml-$version
[ -d "$series" ] || die "no patch series for OCaml $version in $patchdir"
for p in "$series"/*.patch; do
  patch -d "$tree" -p1 -s < "$p" || die "$(basename "$p") does not apply to $src"
  echo "whole_compiler: applied $(basename "$p")"
done
took "unpacking and patching OCaml $version"

prefix=$work/prefix
log=$work/build.log
echo "whole_compiler: ./configure --prefix=$prefix && make -j2 && make install (log: $log)"
(cd "$tree" && ./configure --prefix="$prefix") > "$log" 2>&1 ||
  { tail -20 "$log" >&2; die "configure failed (log above)"; }
took "configure"
(cd "$tree" && make -j2) >> "$log" 2>&1 ||
  { tail -30 "$log" >&2; die "make failed (log above)"; }
took "make -j2"
(cd "$tree" && make install) >> "$log" 2>&1 ||
  { tail -20 "$log" >&2; die "make install failed (log above)"; }
took "make install"

# A small program that works the GC, compiled by the new compiler with no
# eventring anywhere: it links against the patched runtime alone, whose
# weak caml_ev_* definitions do nothing.
mkdir -p "$work/prog"
cat > "$work/prog/hello.ml" <<'EOF'
let () =
  let keep = ref [] in
  for i = 1 to 200_000 do
    let l = List.init 10 (fun j -> i + j) in
    if i mod 100 = 0 then keep := l :: !keep
  done;
  Gc.compact ();
  let st = Gc.quick_stat () in
  Printf.printf "hello from the patched OCaml %s: %d lists kept, %d minor \
                 collections, %d compactions\n"
    Sys.ocaml_version (List.length !keep) st.Gc.minor_collections
    st.Gc.compactions
EOF
for c in ocamlopt ocamlc; do
  exe=$work/prog/hello.$c
  (cd "$work/prog" && "$prefix/bin/$c" -o "$exe" hello.ml) ||
    die "$prefix/bin/$c could not compile a program"
  case $c in
  ocamlc) out=$("$prefix/bin/ocamlrun" "$exe") ;;
  *) out=$("$exe") ;;
  esac || die "the program compiled by $c failed"
  echo "whole_compiler: $c: $out"
  case $out in "hello from the patched OCaml $version"*) ;;
  *) die "the program compiled by $c said '$out'" ;; esac
done
# The program's runtime is the patched one: its probes are there.
nm "$prefix/lib/ocaml/libasmrun.a" 2>/dev/null | grep -q ' W caml_ev_begin$' ||
  die "$prefix/lib/ocaml/libasmrun.a has no weak caml_ev_begin: the series is not in it"
echo "whole_compiler: libasmrun.a holds the series' weak caml_ev_* definitions"
took "compiling and running a program"
echo "whole_compiler: OCaml $version with $(ls "$series" | wc -l) patches built, installed and used in $(( $(now) - t0 )) s"
