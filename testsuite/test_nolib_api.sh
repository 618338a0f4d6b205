#!/bin/bash
# test_nolib_api.sh -- with -DEVENTRING_DISABLED every function that
# eventring.h declares has a stub: the list of functions and probes is
# read from the header, each must be called by test_nolib_disabled.c, a
# program taking the address of each links without libeventring, and the
# helper programs and the demo build with -Werror and no library, and run.
set -u

srcdir=${EVENTRING_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
builddir=${EVENTRING_TEST_BUILDDIR:-$srcdir}
cc=${CC:-cc}   # make check does not pass its CC to shell tests
hdr=$srcdir/runtime/eventring.h
unit=$srcdir/testsuite/test_nolib_disabled.c

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "  ok: $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL: $*"; }

tmp=$(mktemp -d /tmp/eventring-nolib-api.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# The public functions (declared EVENTRING_API; internal ones have two
# underscores) and the probes (the macros they become when disabled).
funcs=$(sed -n 's/^EVENTRING_API .*[^a-z0-9_]\(eventring_[a-z0-9_]*\)(.*/\1/p' \
  "$hdr" | sort -u)
probes=$(sed -n 's/^#define \(eventring_[a-z0-9_]*\)(.*/\1/p' "$hdr" | sort -u)
nfuncs=$(echo "$funcs" | wc -w)
nprobes=$(echo "$probes" | wc -w)
if [ "$nfuncs" -ge 50 ] && [ "$nprobes" -ge 10 ]; then
  ok "eventring.h declares $nfuncs functions and $nprobes probes"
else
  bad "read only $nfuncs functions and $nprobes probes from $hdr"
fi

missing=
for name in $funcs $probes; do
  grep -qw "$name" "$unit" || missing="$missing $name"
done
if [ -z "$missing" ]; then
  ok "test_nolib_disabled.c calls every one"
else
  bad "test_nolib_disabled.c does not call:$missing"
fi

# Every function by its address: one without a stub is an undefined
# reference, since nothing here links libeventring.
{
  echo '#include <stdio.h>'
  echo '#include "eventring.h"'
  echo 'typedef void (*fn)(void);'
  echo 'static const fn all[] = {'
  for name in $funcs; do echo "  (fn)$name,"; done
  echo '};'
  echo 'int main(void) {'
  echo '  size_t n = 0;'
  echo '  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) n += all[i] != 0;'
  printf '  printf("%%zu\\n", n);\n'
  echo '  return 0;'
  echo '}'
} >"$tmp/all.c"
if $cc -std=c11 -pedantic -Wall -Wextra -Werror -DEVENTRING_DISABLED \
    -I"$srcdir/runtime" -o "$tmp/all" "$tmp/all.c" 2>"$tmp/all.err"; then
  got=$("$tmp/all")
  if [ "$got" = "$nfuncs" ]; then
    ok "all $nfuncs functions link without libeventring (C11, -pedantic)"
  else
    bad "the program saw $got functions of $nfuncs"
  fi
else
  bad "functions without a stub: $(grep -o "undefined reference to \`[a-z0-9_]*'" \
    "$tmp/all.err" | sort -u | tr '\n' ' ')$(grep -m3 'error' "$tmp/all.err")"
fi

# The programs that use the API, as written: the helper programs the
# tests run and the demo.
for src in "$srcdir"/testsuite/progs/*.c "$srcdir"/demo/threads.c; do
  name=$(basename "$src" .c)
  # shellcheck disable=SC2086 # the sanitizer flags are words
  if $cc -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -pthread \
      ${EVENTRING_SAN_FLAGS:-} -DEVENTRING_DISABLED -I"$srcdir/runtime" -I"$srcdir/testsuite" \
      -o "$tmp/$name" "$src" "$builddir/testsuite/libtesthelp.a" \
      2>"$tmp/$name.err"; then
    ok "$name builds without libeventring"
  else
    bad "$name does not build without libeventring: $(head -5 "$tmp/$name.err")"
  fi
done

# The demo runs to its end, untraced even when the environment asks.
if [ -x "$tmp/threads" ]; then
  mkdir "$tmp/dir"
  if (cd "$tmp/dir" && OCAML_RUNTIME_EVENTS_START=1 "$tmp/threads" \
        >"$tmp/threads.out" 2>&1); then
    if [ -z "$(ls -A "$tmp/dir")" ]; then
      ok "the demo runs, and writes no ring file"
    else
      bad "the demo left $(ls "$tmp/dir")"
    fi
  else
    bad "the demo failed: $(tail -3 "$tmp/threads.out")"
  fi
fi

echo "nolib_api: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
