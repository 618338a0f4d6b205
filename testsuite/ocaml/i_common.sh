# i_common.sh -- shell helpers of the instrumented-runtime tests (i_*.check),
# sourced by them; not a test itself.  $1 of a .check script is the test's
# temporary directory (OCAML_RUNTIME_EVENTS_DIR), EVENTRING_TOOL the built
# `eventring` command.

fail() { echo "FAIL: $*" >&2; exit 1; }

# The single ring file in $1 (fails when there is none or several).
ring_file() {
  set -- "$1"/*.events
  [ $# -eq 1 ] && [ -f "$1" ] || fail "expected one ring file, found: $*"
  echo "$1"
}

# dump FILE: the events of FILE, one per line, into $DUMP.
dump() {
  if [ -z "$DUMP" ]; then
    DUMP=$(mktemp "${TMPDIR:-/tmp}/i_dump.XXXXXX") || fail "mktemp"
    trap 'rm -f "$DUMP"' EXIT
  fi
  "$EVENTRING_TOOL" dump --time=raw "$1" > "$DUMP" || fail "eventring dump $1 failed"
}

# count KIND NAME: how many events of that kind and name $DUMP holds.
count() {
  grep -c " kind=$1 name=$2 " "$DUMP"
}

# Every begin of phase NAME has its end, and there is at least one.
spans() {
  b=$(count runtime_begin "$1"); e=$(count runtime_end "$1")
  [ "$b" -gt 0 ] || fail "no $1 phase"
  [ "$b" -eq "$e" ] || fail "$1: $b begins, $e ends"
}

# absent KIND NAME
absent() {
  n=$(count "$1" "$2")
  [ "$n" -eq 0 ] || fail "$n unexpected $1 $2 events"
}

# The extension block's flags word (byte 96) of FILE, in decimal.
ext_flags() {
  od -An -t u8 -j 96 -N 8 "$1" | tr -d ' '
}

# An alloc event with a non-zero bucket.
alloc_nonzero() {
  grep ' kind=alloc ' "$DUMP" | grep -q 'value=.*[1-9]' \
    || fail "no alloc event with a non-zero bucket"
}

# The executable recorded by the program does not contain OCaml 4.13's
# eventlog.o (the CTF writer): its local functions and its file name
# format are absent, and the bridge is there instead.
no_ctf_writer() {
  exe=$(cat "$1/exe") || fail "the program did not record its executable"
  syms=$(nm "$exe") || fail "nm $exe"
  echo "$syms" | grep -qE ' t (flush_events|teardown_eventlog|post_event)$' \
    && fail "$exe contains OCaml's eventlog.o"
  grep -q 'caml-%ld-%d.eventlog' "$exe" && fail "$exe contains eventlog's CTF writer"
  echo "$syms" | grep -q ' T eventring__ocaml_bridge_init$' \
    || fail "$exe lacks the bridge"
  return 0
}

# ocaml_bridge.h mirrors caml/eventlog.h value for value: compile a file
# that includes both and compares every enumerator (when a C compiler and
# OCaml's headers are there).
abi_matches() {
  where=$(ocamlfind ocamlc -where 2>/dev/null) || return 0
  [ -f "$where/caml/eventlog.h" ] || return 0
  cc=${CC:-cc}
  command -v "$cc" >/dev/null 2>&1 || return 0
  top=$(cd "$(dirname "$0")/../.." && pwd)
  c=$(mktemp "${TMPDIR:-/tmp}/i_abi.XXXXXX") || fail "mktemp"
  {
    echo '#include <stdint.h>'
    echo '#define CAML_INSTR 1'
    echo '#include <caml/eventlog.h>'
    echo '#include "ocaml_bridge.h"'
    for n in $(sed -n '/^typedef enum {/,/^}/p' "$where/caml/eventlog.h" \
               | grep -oE '^ *EV_[A-Z_]+' | tr -d ' '); do
      case $n in EV_ENTRY|EV_EXIT|EV_COUNTER|EV_ALLOC|EV_FLUSH) continue;; esac
      echo "_Static_assert((int)$n == (int)EVENTRING_OCAML4_${n#EV_}, \"$n\");"
    done
    echo '_Static_assert((int)EV_EXPLICIT_GC_MAJOR_SLICE + 1 == EVENTRING_OCAML4_PHASE_COUNT, "phases");'
    echo '_Static_assert((int)EV_C_REQUEST_MINOR_REALLOC_CUSTOM_TABLE + 1 == EVENTRING_OCAML4_COUNTER_COUNT, "counters");'
  } > "$c"
  "$cc" -std=gnu11 -fsyntax-only -x c -I"$where" -I"$top/runtime" \
    -I"$top/runtime-instrumented" "$c" \
    || { rm -f "$c"; fail "ocaml_bridge.h disagrees with caml/eventlog.h"; }
  rm -f "$c"
}
