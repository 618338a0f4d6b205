#!/bin/bash
# test_ci_skips.sh -- .ci/check-skips, which fails a CI stage on a skip
# that its allow-list does not name: fake `make check` logs and a fake
# allow-list, each verdict checked (allowed passes, unlisted fails and is
# named, a listed skip in another stage fails, a test that exited 77 with
# no reason is counted, an entry with no comment is refused), and the real
# .ci/skips-allowed parsed.
set -u

srcdir=${EVENTRING_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
checker=$srcdir/.ci/check-skips
[ -x "$checker" ] || { echo "FAIL: $checker is missing"; exit 1; }

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "  ok: $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL: $*"; }

tmp=$(mktemp -d /tmp/eventring-ci-skips.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/allow" <<'EOF'
# A header comment.

# Why: the sanitizer builds cannot run these.
asan  test_watch   test_memory_bound: *
asan  ocaml-tests  *
EOF

# A log as `make check` prints it: a C test with one skipped case, a
# runner that skipped everything (its reason, then make's own line).
cat >"$tmp/allowed.log" <<'EOF'
==> test_dump
Running suite(s): dump
100%: Checks: 5, Failures: 0, Errors: 0
==> test_watch
SKIP: test_memory_bound: a sanitizer's shadow memory and quarantine hide the bound
watch: 9 test(s) run, 0 failed, 1 skipped
==> ocaml-tests
SKIP: OCaml tests in a sanitizer build (address): the OCaml runtime is not built with the sanitizer
SKIP: ocaml-tests

40 passed, 0 failed, 1 skipped
EOF

# expect CODE NAME ARGS...: runs the checker, wants exit CODE; its output
# goes to $tmp/out.
expect() {
  local code=$1 name=$2 rc
  shift 2
  "$checker" "$@" >"$tmp/out" 2>&1
  rc=$?
  if [ "$rc" = "$code" ]; then ok "$name"; else
    bad "$name: exit $rc, wanted $code"; sed 's/^/    /' "$tmp/out"
  fi
}
# says TEXT NAME: the last run printed TEXT.
says() {
  if grep -qF -- "$1" "$tmp/out"; then ok "$2"; else
    bad "$2: no '$1' in:"; sed 's/^/    /' "$tmp/out"
  fi
}

expect 0 "allowed skips pass" asan "$tmp/allowed.log" "$tmp/allow"
says "stage asan: 2 skip(s), all on the allow-list" \
  "the runner's own reason counts, not make's repeat of its name"

expect 1 "the same skips fail in a stage that does not allow them" \
  tsan "$tmp/allowed.log" "$tmp/allow"
says "UNEXPECTED SKIP (tsan): test_watch: test_memory_bound:" \
  "the unexpected skip is named with its test and case"

# An allowed test skipping another case is not allowed.
sed 's/^SKIP: test_memory_bound:/SKIP: test_lost:/' "$tmp/allowed.log" \
  >"$tmp/other-case.log"
expect 1 "another case of an allowed test fails" \
  asan "$tmp/other-case.log" "$tmp/allow"
says "1 of 2 skip(s) are not on the allow-list" "only that one is listed"
says "  test_watch: test_lost:" "the final list names it"

# A skip after a test with no allow-list entry at all.
cat "$tmp/allowed.log" >"$tmp/unlisted.log"
printf '%s\n' '==> test_postmortem' \
  'SKIP: test_stuck_thread_at_teardown: no signal landed inside a probe' \
  >>"$tmp/unlisted.log"
expect 1 "an unlisted skip fails" asan "$tmp/unlisted.log" "$tmp/allow"
says "UNEXPECTED SKIP (asan): test_postmortem: test_stuck_thread_at_teardown:" \
  "the unlisted skip is named"

# A test that exited 77 without printing why is still a skip.
printf '%s\n' '==> test_mute' 'SKIP: test_mute' >"$tmp/mute.log"
expect 1 "a silent exit 77 fails" asan "$tmp/mute.log" "$tmp/allow"
says "test_mute: test_mute (exited 77, no reason given)" "and is named"

# A log with no skip passes, whatever the stage.
printf '%s\n' '==> test_dump' '5 passed, 0 failed' >"$tmp/none.log"
expect 0 "a log without skips passes" inplace "$tmp/none.log" "$tmp/allow"

# An allow-list entry must say why.
printf '%s\n' '# why' 'asan test_a *' '' 'asan test_b *' >"$tmp/bare"
expect 2 "an entry with no comment above it is refused" \
  asan "$tmp/none.log" "$tmp/bare"
says "bare:4: an entry with no comment" "the refusal names the line"

expect 2 "a missing log is an error, not a pass" \
  asan "$tmp/no-such.log" "$tmp/allow"

# The real allow-list parses, and allows nothing in the in-place build.
expect 0 "CI's own allow-list parses" inplace "$tmp/none.log"
expect 1 "CI's allow-list refuses the OCaml tests' skip in place" \
  inplace "$tmp/allowed.log"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
