#!/bin/bash
# test_demo_report.sh -- `make demo` ends with a report, says where it is,
# and Debian's chromium, headless, renders that report: every chart has
# data points in the DOM it built, no console message, a screenshot.
# (test_report compares a page's numbers with `stats --json`; this is the
# demo's own page, as a user first sees it.)  With OCaml, the demo's
# table of the OCaml runtimes side by side: each column's minor
# collections as its program counted them, and the patched normal
# runtime's column when it is built (else the demo says it is not).
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

# The OCaml runtimes side by side (demo/run.sh, compare_runtimes): each
# column's minor collections, counted from its events, are the ones its
# program counted itself (Gc.quick_stat); the patched normal runtime
# (when built: `make check` builds it) reports phases that the hooks-only
# runtime cannot.
if command -v ocamlfind >/dev/null 2>&1; then
  awk '
    /^phase \(begins\)/ { table = 1; next }
    table && /^what each program counted itself/ { table = 0; said = 1; next }
    table && /^  [a-z_]+ / { for (i = 2; i <= NF; i++) cnt[$1, i - 1] = $i; nc = NF - 1 }
    said && /minor collections/ {
      col++
      for (i = 1; i < NF; i++) if ($(i + 1) ~ /^minor/) own[col] = $i
    }
    said && /^$/ { said = 0 }
    END {
      if (nc == 0) { print "no table of the runtimes side by side"; exit 1 }
      for (c = 1; c <= nc; c++)
        if (cnt["minor", c] == "" || cnt["minor", c] != own[c]) {
          printf "column %d: %s minor collections in the events, %s by the program\n",
            c, cnt["minor", c], own[c]; exit 1
        }
      printf "%d columns; minor collections as the programs counted them\n", nc
      if (nc == 3 && !(cnt["major_mark_roots", 1] == "-" &&
                       cnt["major_mark_roots", 2] > 0)) {
        print "the patched runtime shows no major_mark_roots, or the hooks do"
        exit 1
      }
    }' "$tmp/demo.log" >"$tmp/side.txt"
  rc=$?
  if [ -f "${EVENTRING_TEST_OCAML_RT:-ocaml-runtime}/libasmrun_er.a" ]; then
    want=3
  else
    want=2
  fi
  if [ $rc -eq 0 ] && grep -q "^$want columns" "$tmp/side.txt"; then
    ok "runtimes side by side: $(cat "$tmp/side.txt")"
  else
    bad "runtimes side by side (want $want columns): $(cat "$tmp/side.txt")"
  fi
  if [ $want -eq 2 ] &&
    ! grep -q "the patched OCaml runtime is not built" "$tmp/demo.log"; then
    bad "the demo does not say that the patched runtime is not built"
  fi
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
