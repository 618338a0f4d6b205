#!/bin/bash
# test_demo_report.sh -- `make demo` ends with a report, says where it is,
# and Debian's chromium, headless, renders that report: every chart has
# data points in the DOM it built, no console message, a screenshot.
# (test_report compares a page's numbers with `stats --json`; this is the
# demo's own page, as a user first sees it.)
#
# Runs from a configured build directory (`make check` does).  Skipped,
# explicitly, without chromium, in sanitizer builds (the demo is the
# plain build's) and where tracing is compiled out.
set -u
MAKE=${MAKE:-make}

skip_all() { echo "SKIP: $*"; exit 77; }
[ "${EVENTRING_TRACING:-yes}" = yes ] || skip_all "tracing disabled"
case ${EVENTRING_SANITIZER:-none} in
none) ;;
*) skip_all "sanitizer build: the demo is checked in the plain build" ;;
esac
command -v chromium >/dev/null 2>&1 ||
  skip_all "chromium is not installed (build-aux/install-deps installs it)"
[ -f Makefile ] || { echo "run me from a configured build directory" >&2; exit 2; }

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "  ok: $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL: $*"; }

tmp=$(mktemp -d /tmp/eventring-demo-report.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# The demo, bounded in time whatever happens inside it.
if timeout -k 10 300 $MAKE --no-print-directory demo >"$tmp/demo.log" 2>&1; then
  ok "make demo"
else
  bad "make demo failed:"; tail -20 "$tmp/demo.log"
fi
report=$(sed -n 's/^The report, for any browser (no network needed): //p' \
  "$tmp/demo.log")
if [ -n "$report" ] && [ -s "$report" ]; then
  ok "make demo says where its report is: $report"
else
  bad "make demo names no report file (got '$report')"
  echo "$pass passed, $fail failed"; exit 1
fi

browse() { # MODE: chromium on the report, its DOM on stdout, its log on stderr
  timeout -k 5 90 chromium --headless --disable-gpu --no-sandbox \
    --no-first-run --disable-extensions --window-size=960,1600 \
    --enable-logging=stderr --v=0 --user-data-dir="$tmp/profile" \
    "$1" "file://$report"
}

if browse --dump-dom >"$tmp/dom.html" 2>"$tmp/dom.err"; then
  ok "chromium rendered the page"
else
  bad "chromium --dump-dom failed: $(tail -5 "$tmp/dom.err")"
fi
# One chart per line, then each must carry data points and draw them.
charts=0 empty=0
while IFS= read -r chart; do
  charts=$((charts + 1))
  points=$(printf '%s' "$chart" | sed -n 's/.*data-points="\([0-9]*\) *".*/\1/p')
  if [ -z "$points" ] || [ "$points" -eq 0 ] ||
    ! printf '%s' "$chart" | grep -qE 'class="(bar|line|dot)"'; then
    empty=$((empty + 1))
    echo "    a chart without data: $(printf '%s' "$chart" | head -c 200)"
  fi
done < <(tr '\n' ' ' <"$tmp/dom.html" | sed 's|<svg class="chart"|\n&|g; s|</svg>|&\n|g' |
  grep '^<svg class="chart"')
if [ "$charts" -ge 4 ] && [ "$empty" -eq 0 ]; then
  ok "$charts charts in the DOM, each with data points"
else
  bad "$charts charts in the DOM, $empty without data points (want >= 4, 0)"
fi
if grep -q CONSOLE "$tmp/dom.err"; then
  bad "console messages: $(grep CONSOLE "$tmp/dom.err" | head -3)"
else
  ok "no console message"
fi

if browse --screenshot="$tmp/report.png" >/dev/null 2>"$tmp/shot.err" &&
  [ "$(head -c 4 "$tmp/report.png" | od -An -c | tr -d ' ')" = '211PNG' ] &&
  [ "$(stat -c %s "$tmp/report.png")" -gt 1000 ]; then
  ok "a screenshot ($(stat -c %s "$tmp/report.png") bytes of PNG)"
else
  bad "no screenshot: $(tail -3 "$tmp/shot.err")"
fi

echo "demo report: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
