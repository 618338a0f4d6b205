#!/bin/sh
# install-check.sh -- checks that an installed eventring works for a user.
#
# Run from a configured build directory (`make check` does so); installs
# into a temporary prefix, then builds and runs small programs the way a
# user would, through pkg-config, against both modules.  Also checks the
# installed file list, the sonames, the exported symbols, DESTDIR staging
# and uninstall.
#
# Environment (all optional): MAKE, CC, PKG_CONFIG, OBJDUMP;
# EVENTRING_SAN_FLAGS, the sanitizer flags the build used, which every
# program compiled here needs as well, because the installed library then
# depends on the sanitizer runtime; EVENTRING_TRACING=no for a --disable-tracing build,
# whose library writes no ring file, so only building is checked there.
#
# $CC, $MAKE and the flags are split into words on purpose, and the check
# functions are called through check(), which shellcheck cannot follow.
# shellcheck disable=SC2046,SC2086,SC2317

MAKE=${MAKE:-make}
CC=${CC:-cc}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
SAN_FLAGS=${EVENTRING_SAN_FLAGS:-}
TRACING=${EVENTRING_TRACING:-yes}

pass=0
fail=0
failed=""

ok() {
  pass=$((pass + 1))
  echo "  ok: $1"
}

not_ok() {
  fail=$((fail + 1))
  failed="$failed
  - $1"
  echo "  FAIL: $1"
}

# check DESCRIPTION COMMAND...: one counted check.
check() {
  what=$1
  shift
  if "$@"; then ok "$what"; else not_ok "$what"; fi
}

finish() {
  echo "install-check: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
  exit
}

if [ ! -f Makefile ] || [ ! -f config.status ]; then
  echo "install-check: run me from a configured build directory" >&2
  exit 2
fi

tmp=$(mktemp -d /tmp/eventring-install.XXXXXX) || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
prefix=$tmp/prefix
libdir=$prefix/lib

# --- install ----------------------------------------------------------

if $MAKE install prefix="$prefix" >"$tmp/install.log" 2>&1; then
  ok "make install prefix=$prefix"
else
  cat "$tmp/install.log"
  not_ok "make install prefix=$prefix"
  finish
fi

export PKG_CONFIG_PATH="$libdir/pkgconfig"

version=$($PKG_CONFIG --modversion eventring 2>/dev/null)
major=${version%%.*}
check "pkg-config finds eventring and eventring-i (version $version)" \
  $PKG_CONFIG --exists eventring eventring-i

files_present() {
  for f in include/eventring.h lib/pkgconfig/eventring.pc \
           lib/pkgconfig/eventring-i.pc \
           lib/libeventring.a lib/libeventring_i.a \
           "lib/libeventring.so.$version" "lib/libeventring_i.so.$version"; do
    if [ ! -f "$prefix/$f" ]; then echo "    missing: $f"; return 1; fi
  done
  for l in libeventring libeventring_i; do
    [ "$(readlink "$libdir/$l.so.$major")" = "$l.so.$version" ] || {
      echo "    $l.so.$major does not point to $l.so.$version"; return 1; }
    [ "$(readlink "$libdir/$l.so")" = "$l.so.$major" ] || {
      echo "    $l.so does not point to $l.so.$major"; return 1; }
  done
  # The public API is one header; internal headers must not leak out.
  for h in "$prefix"/include/*; do
    [ "$h" = "$prefix/include/eventring.h" ] ||
      { echo "    not a public header: $h"; return 1; }
  done
}
check "installed files and links" files_present

soname_is() {
  got=$(LC_ALL=C readelf -d "$1" 2>/dev/null |
        sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
  [ "$got" = "$2" ] || { echo "    $1: soname '$got', expected '$2'"; return 1; }
}
# Where configure found packed relative relocations, both libraries use
# them (DT_RELR): the segment every program's loader reads stays small.
packed_relocs() {
  for so in "$libdir/libeventring.so.$major" "$libdir/libeventring_i.so.$major"; do
    LC_ALL=C readelf -d "$so" 2>/dev/null | grep -q '(RELR)' ||
      { echo "    $so: no DT_RELR: relative relocations are not packed"; return 1; }
  done
}
if grep -q '^SO_RELR_LDFLAGS = .' Makefile; then
  check "libeventring.so and libeventring_i.so pack relative relocations" \
    packed_relocs
fi

check "soname libeventring.so.$major" \
  soname_is "$libdir/libeventring.so.$version" "libeventring.so.$major"
check "soname libeventring_i.so.$major" \
  soname_is "$libdir/libeventring_i.so.$version" "libeventring_i.so.$major"

# The exports are exactly what the headers declare, each in a version
# node (runtime/libeventring.map): a name the header does not declare is
# an internal symbol let out, a declared function that is not exported a
# link error in a user's program, and a symbol without a node breaks the
# library's evolution.  The names declared EVENTRING_API or
# EVENTRING__EXPORT are read from the installed eventring.h; the OCaml
# 4.13 entry points that libeventring_i.so adds, from the caml_* ones of
# runtime-instrumented/ocaml_bridge.h (not installed: its eventring__*
# helpers stay inside the OCaml package).  The allocation probes' two
# entry points are declared for both variants but defined only in the
# instrumented one.
OBJDUMP=${OBJDUMP:-objdump}
srcdir=$(cd "$(dirname "$0")/.." && pwd)
I_ONLY_SYMS='eventring__alloc
eventring__alloc_flush'

# header_syms HEADER...: the names declared EVENTRING_API or
# EVENTRING__EXPORT, one a line, sorted: a declaration runs from that
# word at the start of a line to its ';' or '{'; its name is the word
# before the first '(' (a function), inside '(*' ')' (a pointer to a
# function) or the last word (a variable).
header_syms() {
  awk '
    /^(extern[ \t]+)?EVENTRING(_API|__EXPORT)[ \t]/ { decl = ""; on = 1 }
    on {
      decl = decl " " $0
      if (decl ~ /[;{]/) {
        on = 0
        sub(/[;{].*/, "", decl)
        if (decl ~ /\(\*/) { sub(/.*\(\*[ \t]*/, "", decl); sub(/\).*/, "", decl) }
        else if (decl ~ /\(/) sub(/[ \t]*\(.*/, "", decl)
        n = split(decl, w, /[^A-Za-z0-9_]+/)
        while (n > 0 && w[n] == "") n--
        if (n > 0) print w[n]
      }
    }' "$@" | LC_ALL=C sort -u
}

# exports_match SO EXPECTED: SO's defined dynamic symbols, as objdump -T
# shows them with their version, are the names of EXPECTED (one a line),
# each in a node EVENTRING_<major>.<minor>, and SO defines EVENTRING_0.1.
exports_match() {
  table=$(LC_ALL=C $OBJDUMP -T "$1") || { echo "    $OBJDUMP -T $1 failed"; return 1; }
  # Defined symbols: "ADDR FLAGS TYPE SECTION SIZE VERSION NAME"; the
  # node's own symbol (*ABS*, named after the node) is not an export.
  defs=$(echo "$table" | awk '/^[0-9a-f]+ / && !/\*UND\*/ && NF >= 6 {
           v = $(NF - 1); if (!($0 ~ /\*ABS\*/ && v == $NF)) print v, $NF }')
  rc=0
  if ! echo "$table" | grep -Eq '[*]ABS[*].*[[:space:]]EVENTRING_0[.]1[[:space:]]+EVENTRING_0[.]1$'; then
    echo "    $1 defines no version node EVENTRING_0.1"
    rc=1
  fi
  unversioned=$(echo "$defs" | awk '$1 !~ /^EVENTRING_[0-9]+[.][0-9]+$/ {
                  print "      " $2 " (version: " $1 ")" }' | LC_ALL=C sort)
  if [ -n "$unversioned" ]; then
    echo "    $1 exports symbols outside an EVENTRING_* version node:"
    echo "$unversioned"
    rc=1
  fi
  echo "$defs" | awk '{ print $2 }' | LC_ALL=C sort -u >"$tmp/exported"
  printf '%s\n' "$2" | LC_ALL=C sort -u >"$tmp/expected"
  extra=$(LC_ALL=C comm -23 "$tmp/exported" "$tmp/expected")
  missing=$(LC_ALL=C comm -13 "$tmp/exported" "$tmp/expected")
  if [ -n "$extra" ]; then
    echo "    $1 exports symbols the header does not declare:"
    echo "$extra" | sed 's/^/      /'
    rc=1
  fi
  if [ -n "$missing" ]; then
    echo "    $1 does not export symbols the header declares:"
    echo "$missing" | sed 's/^/      /'
    rc=1
  fi
  return $rc
}

api_syms=$(header_syms "$prefix/include/eventring.h")
bridge_syms=$(header_syms "$srcdir/runtime-instrumented/ocaml_bridge.h" |
              grep -E '^caml_(ev|eventlog)_')
plain_syms=$(printf '%s\n' "$api_syms" | grep -vxF "$I_ONLY_SYMS")
# Both lists are sanity-checked, so that a header the awk above can no
# longer read fails here rather than letting every symbol through.
check "eventring.h declares the two entry points of eventring_alloc()" \
  test "$(printf '%s\n' "$api_syms" | grep -cxF "$I_ONLY_SYMS")" -eq 2
check "ocaml_bridge.h declares the ten OCaml 4.13 eventlog entry points" \
  test "$(printf '%s\n' "$bridge_syms" | grep -c .)" -eq 10
check "libeventring.so exports what eventring.h declares, in EVENTRING_0.1" \
  exports_match "$libdir/libeventring.so.$version" "$plain_syms"
check "libeventring_i.so exports eventring.h's and the bridge's, in EVENTRING_0.1" \
  exports_match "$libdir/libeventring_i.so.$version" \
  "$(printf '%s\n%s\n' "$api_syms" "$bridge_syms")"

# --- programs built through pkg-config ---------------------------------

cat >"$tmp/prog.c" <<'EOF'
/* A user of the default variant: probes, a user event, and the pid on
 * stdout so that the caller can find the ring file. */
#include <eventring.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
  int id = eventring_register("install_check", EVENTRING_TYPE_INT);
  if (id < 0) {
    fprintf(stderr, "eventring_register: %s\n", eventring_strerror(id));
    return 1;
  }
  if (!eventring_is_active()) {
    fprintf(stderr, "tracing was not started from the environment\n");
    return 1;
  }
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, 42);
  eventring_write_int(id, 7);
  eventring_end(EVENTRING_PHASE_MINOR);
  printf("%ld\n", (long)getpid());
  return 0;
}
EOF

cat >"$tmp/prog_i.c" <<'EOF'
/* A user of the instrumented variant: the allocation probes must compile
 * to calls and link against libeventring_i. */
#include <eventring.h>
#include <stdio.h>
#include <unistd.h>

#ifndef EVENTRING_INSTRUMENTED
#error "eventring-i.pc did not define EVENTRING_INSTRUMENTED"
#endif

int main(void) {
  if (!eventring_is_active()) {
    fprintf(stderr, "tracing was not started from the environment\n");
    return 1;
  }
  eventring_alloc(1);
  eventring_alloc(15);
  eventring_alloc(1000);
  eventring_alloc_flush();
  printf("%ld\n", (long)getpid());
  return 0;
}
EOF

# Programs built with the sanitizer flags need the sanitizer runtime; when
# even an empty program cannot run, running ours would prove nothing.
can_run=yes
if [ -n "$SAN_FLAGS" ]; then
  echo 'int main(void) { return 0; }' >"$tmp/empty.c"
  if ! $CC $SAN_FLAGS -o "$tmp/empty" "$tmp/empty.c" >/dev/null 2>&1 ||
     ! "$tmp/empty" >/dev/null 2>&1; then
    can_run=no
    echo "SKIP: running programs (cannot run a program built with $SAN_FLAGS)"
  fi
fi
if [ "$TRACING" = no ]; then
  can_run=no
  echo "SKIP: running programs (tracing is compiled out of this build)"
fi

# traced_run EXE FLAG: runs EXE with tracing started from the environment
# and checks the ring file it leaves: present, mode 0600, and the
# extension block's instrumented flag equal to FLAG.
traced_run() {
  exe=$1 want_flag=$2
  [ "$can_run" = yes ] || return 0
  dir=$tmp/events-$(basename "$exe")
  mkdir -p "$dir"
  pid=$(env -u OCAMLRUNPARAM -u CAMLRUNPARAM \
        OCAML_RUNTIME_EVENTS_START=1 OCAML_RUNTIME_EVENTS_PRESERVE=1 \
        OCAML_RUNTIME_EVENTS_DIR="$dir" LD_LIBRARY_PATH="$libdir" \
        "$exe") || { echo "    $exe failed"; return 1; }
  file=$dir/$pid.events
  if [ ! -f "$file" ]; then
    echo "    no ring file $file; the directory holds: $(ls "$dir")"
    return 1
  fi
  mode=$(stat -c %a "$file")
  [ "$mode" = 600 ] || { echo "    $file has mode $mode, not 600"; return 1; }
  # Word 4 of the extension block at byte 64 holds the flags.
  flags=$(od -An -t u8 -j 96 -N 8 "$file" | tr -d ' ')
  if [ $((flags & 1)) -ne "$want_flag" ]; then
    echo "    $file: extension flags $flags, instrumented bit should be $want_flag"
    return 1
  fi
}

# with_module MODULE SOURCE EXE FLAG: builds SOURCE as a user would, with
# the module's pkg-config flags, then checks a traced run of it.
with_module() {
  module=$1 src=$2 exe=$3
  if ! $CC $SAN_FLAGS -o "$exe" "$src" \
       $($PKG_CONFIG --cflags --libs "$module"); then
    echo "    cannot build $src against $module"
    return 1
  fi
  traced_run "$exe" "$4"
}
check "cc prog.c \$(pkg-config --cflags --libs eventring), traced run" \
  with_module eventring "$tmp/prog.c" "$tmp/prog" 0
check "cc prog_i.c \$(pkg-config --cflags --libs eventring-i), traced run" \
  with_module eventring-i "$tmp/prog_i.c" "$tmp/prog_i" 1

# A program that never traces: its probes and the library's constructors
# leave the library's read-only data segment and the pages of its bss
# (but the one the loader clears beside .data) without a page in memory
# (issue 22: the constructor's string used to map the whole segment, the
# exit key a page of bss).  Present pages are read from /proc/self/pagemap.
cat >"$tmp/untraced.c" <<'EOF'
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <eventring.h>

static int fd, bad;

static int present(uintptr_t lo, uintptr_t hi, const char *what) {
  int n = 0;
  for (uintptr_t a = lo; a < hi; a += 4096) {
    uint64_t e = 0;
    if (pread(fd, &e, 8, (off_t)(a / 4096 * 8)) != 8) return -1;
    if (e >> 63) n++;
  }
  printf("%s: %d of %lu pages present\n", what, n,
         (unsigned long)((hi - lo) / 4096));
  return n;
}

static int each(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size, (void)data;
  if (!strstr(info->dlpi_name, "libeventring.so")) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type != PT_LOAD) continue;
    uintptr_t start = info->dlpi_addr + p->p_vaddr;
    uintptr_t file_end = (start + p->p_filesz + 4095) / 4096 * 4096;
    uintptr_t end = (start + p->p_memsz + 4095) / 4096 * 4096;
    if (p->p_flags == PF_R && p->p_offset != 0 &&
        present(start / 4096 * 4096, end, "read-only data") != 0)
      bad = 1;
    if ((p->p_flags & PF_W) && end > file_end &&
        present(file_end, end, "bss") != 0)
      bad = 1;
  }
  return 1;
}

int main(void) {
  for (int i = 0; i < 1000; i++) {
    eventring_begin(EVENTRING_PHASE_MINOR);
    eventring_end(EVENTRING_PHASE_MINOR);
  }
  fd = open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0 || dl_iterate_phdr(each, NULL) != 1) return 2;
  return bad;
}
EOF
untraced_pages() {
  if ! $CC -o "$tmp/untraced" "$tmp/untraced.c" \
       $($PKG_CONFIG --cflags --libs eventring); then
    echo "    cannot build untraced.c against eventring"
    return 1
  fi
  env -u OCAML_RUNTIME_EVENTS_START LD_LIBRARY_PATH="$libdir" \
    "$tmp/untraced" >"$tmp/untraced.out"
  rc=$?
  sed 's/^/    /' "$tmp/untraced.out"
  return $rc
}
# Sanitizers register and poison globals from a constructor of their own.
if [ -z "$SAN_FLAGS" ] && [ "$TRACING" = yes ]; then
  check "an untraced dynamic program maps no page of rodata or bss" \
    untraced_pages
fi

# Static linking goes through Libs.private (-pthread, -latomic_ops).
static_link() {
  if ! $CC $SAN_FLAGS -o "$tmp/prog_static" "$tmp/prog.c" \
       $($PKG_CONFIG --cflags eventring) "$libdir/libeventring.a" \
       $($PKG_CONFIG --static --libs eventring | sed 's/-leventring//'); then
    echo "    cannot link prog.c with libeventring.a"
    return 1
  fi
  traced_run "$tmp/prog_static" 0
}
check "static link with pkg-config --static" static_link

# --- DESTDIR staging and uninstall --------------------------------------

staged() {
  $MAKE install DESTDIR="$tmp/dest" >"$tmp/dest.log" 2>&1 ||
    { cat "$tmp/dest.log"; return 1; }
  so=$(find "$tmp/dest" -name "libeventring.so.$version")
  [ -n "$so" ] || { echo "    nothing staged under $tmp/dest"; return 1; }
  pc=$(find "$tmp/dest" -name eventring.pc)
  # The staged .pc must describe the final location, not the staging one.
  if grep -q "$tmp/dest" "$pc"; then
    echo "    $pc mentions the staging directory"
    return 1
  fi
}
check "make install DESTDIR=..." staged

uninstalled() {
  $MAKE uninstall prefix="$prefix" >"$tmp/uninstall.log" 2>&1 ||
    { cat "$tmp/uninstall.log"; return 1; }
  left=$(find "$prefix" ! -type d)
  [ -z "$left" ] || { echo "    left behind:"; echo "$left"; return 1; }
}
check "make uninstall removes every installed file" uninstalled

if [ "$fail" -ne 0 ]; then echo "install-check: failed:$failed"; fi
finish
