#!/bin/bash
# test_manual_names.sh -- every API name the manual names exists: the C
# functions (name followed by "(") and EVENTRING_* constants of
# README.md, doc/*.md, man/eventring.1 and .3 and the bindings' .mli
# against eventring.h (constants: or the sources, for the environment
# variables), the OCaml values and modules (Runtime_events*.X.y, and
# User./Type./Timestamp./Callbacks. of Runtime_events) against the .mli
# files of stdlib-bindings/, and the ocamlfind packages against META.in.

# The names are words: no name holds a space.
# shellcheck disable=SC2013
set -u

srcdir=${EVENTRING_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
hdr=$srcdir/runtime/eventring.h
bind=$srcdir/stdlib-bindings
docs=("$srcdir"/README.md "$srcdir"/doc/*.md "$srcdir"/man/eventring.1
  "$srcdir"/man/eventring.3 "$bind"/*.mli)

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "  ok: $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL: $*"; }

# Where a name is mentioned, for the failure message.
where() {
  grep -nF -- "$1" "${docs[@]}" | head -3 | sed "s|^$srcdir/||" |
    cut -c1-100 | tr '\n' ' '
}

# C functions: "eventring_start()", troff's ".BR eventring_start ()".
n=0
for name in $(grep -ohE '\beventring_[a-z0-9_]+ ?(\\&)?\(' "${docs[@]}" |
    sed 's/[ (\\&]//g' | sort -u); do
  n=$((n + 1))
  grep -qE "([^a-z0-9_]|^#define )$name\(" "$hdr" ||
    bad "C function $name is not in eventring.h: $(where "$name")"
done
if [ "$n" -ge 40 ]; then ok "$n C functions named"
else bad "found only $n C function names: is the pattern still right?"; fi

# Constants, environment variables and the linker maps' version nodes
# (EVENTRING_0.1 reads as EVENTRING_0; a name ending in "_" is a prefix).
n=0
for name in $(grep -ohE '\bEVENTRING_[A-Z0-9_]*[A-Z0-9]\b' "${docs[@]}" |
    sort -u); do
  n=$((n + 1))
  grep -qw "$name" "$hdr" ||
    grep -rqw --include='*.c' --include='*.h' --include='*.sh' \
      --include='*.map' "$name" \
      "$srcdir/runtime" "$srcdir/tools" "$srcdir/bench" \
      "$srcdir/runtime-instrumented" ||
    bad "$name is neither in eventring.h nor in the sources: $(where "$name")"
done
if [ "$n" -ge 20 ]; then ok "$n EVENTRING_* names"
else bad "found only $n EVENTRING_* names"; fi

# The signature of submodule $2 of .mli file $1 (or the whole file).
sig_of() {
  if [ -z "$2" ]; then cat "$1"; return; fi
  awk -v m="$2" '
    !on && $0 ~ "^ *module " m " *: *sig" {
      on = 1; match($0, /^ */); ind = RLENGTH; next
    }
    on && $0 ~ "^ {" ind "}end" { exit }
    on { print }' "$1"
}

# Does OCaml path $1 (Runtime_events[_x].A.b) exist?
ocaml_exists() {
  local top rest file sub last
  top=${1%%.*}
  rest=${1#"$top"}
  rest=${rest#.}
  file=$bind/$(echo "$top" | tr '[:upper:]' '[:lower:]').mli
  [ -f "$file" ] || return 1
  [ -n "$rest" ] || return 0
  sub=
  last=$rest
  if [[ $rest == *.* ]]; then
    sub=${rest%.*}
    last=${rest##*.}
    # One level of submodule is all the bindings have.
    [[ $sub == *.* ]] && return 1
  fi
  if [[ $last == [A-Z]* ]]; then
    sig_of "$file" "$sub" | grep -qE "^ *(module|exception) $last\b"
  else
    sig_of "$file" "$sub" |
      grep -qE "^ *((val|external) $last *:|type( \S+| \([^)]*\))? $last\b)"
  fi
}

n=0
for path in $( (grep -ohE "\bRuntime_events(_[a-z]+)?(\.[A-Za-z_][A-Za-z0-9_']*)+" \
      "${docs[@]}"
    grep -ohE "\b(User|Type|Timestamp|Callbacks)\.[a-z_][A-Za-z0-9_']*" \
      "${docs[@]}" | sed 's/^/Runtime_events./') |
    sed 's/\.$//' | sort -u); do
  n=$((n + 1))
  ocaml_exists "$path" ||
    bad "OCaml $path is not in stdlib-bindings/*.mli: $(where "${path#Runtime_events.}")"
done
if [ "$n" -ge 10 ]; then ok "$n OCaml names"
else bad "found only $n OCaml names"; fi

# ocamlfind packages.
n=0
for pkg in $(grep -ohE '\bruntime_events\.[a-z_]+\b' "${docs[@]}" |
    grep -vE '\.(mli?|cm[aioxt]|cmxa|a|so|o|c|h)$' | sort -u); do
  n=$((n + 1))
  grep -q "^package \"${pkg#runtime_events.}\"" "$bind/META.in" ||
    bad "ocamlfind package $pkg is not in META.in: $(where "$pkg")"
done
ok "$n ocamlfind sub-packages named"

# The checker itself finds a name that does not exist.
if ocaml_exists Runtime_events.Thread_name.set ||
    ocaml_exists Runtime_events.User.no_such_value ||
    ! ocaml_exists Runtime_events_thread.set_name ||
    ! ocaml_exists Runtime_events.User.write ||
    ! ocaml_exists Runtime_events.Timestamp.t; then
  bad "the OCaml name check does not tell names that exist from others"
else
  ok "the OCaml name check tells a missing name"
fi

echo "manual_names: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
