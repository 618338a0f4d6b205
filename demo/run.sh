#!/bin/sh
# run.sh -- what `make demo` runs once the programs are built:
#
#   sh demo/run.sh TOOL OUTDIR THREADS [GC_HEAVY]
#
# TOOL is the eventring command, OUTDIR where the traces go, THREADS the
# C program (demo/threads.c), GC_HEAVY the OCaml program
# (demo/gc_heavy.ml; empty or absent when there is no OCaml).  Each
# program is run by the tool itself (`eventring SUBCOMMAND -- PROGRAM`),
# which traces it through a private directory and reads its events as it
# runs, so nothing is left behind but the traces.  Stops at the first
# step that fails, with its status.

tool=$1
out=$2
threads=$3
gc=${4:-}

# The tool sets the tracing variables for the programs it runs; a user's
# own settings would only get in the way (a ring file for the tool's
# helpers, a preserved file elsewhere).
unset OCAML_RUNTIME_EVENTS_START OCAML_RUNTIME_EVENTS_DIR \
  OCAML_RUNTIME_EVENTS_PRESERVE

step() {
  printf '\n\033[1m==> %s\033[0m\n' "$1"
  printf '    $ eventring %s\n\n' "$2"
}
# On something other than a terminal, no escape sequences.
if [ ! -t 1 ]; then
  step() {
    printf '\n==> %s\n' "$1"
    printf '    $ eventring %s\n\n' "$2"
  }
fi

run() {
  "$tool" "$@"
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "demo: 'eventring $*' failed with status $rc" >&2
    exit $rc
  fi
}

mkdir -p "$out" || exit 1
trace=$out/demo-trace.fxt
gctrace=$out/demo-gc-trace.fxt
report=$out/demo-report.html
rm -f "$trace" "$gctrace" "$report" "$out"/*-pause.fxt

if [ -n "$gc" ]; then
  step "GC pause times of an OCaml program (demo/gc_heavy.ml, OCaml 4.13 \
with the runtime_events package and the instrumented runtime)" \
    "latency -- demo/gc_heavy"
  run latency -- "$gc"

  step "Where its time goes: phases, allocations, counters, events" \
    "stats -- demo/gc_heavy"
  run stats -- "$gc"
else
  echo "demo: no OCaml (ocamlfind): the OCaml program is left out"
fi

step "A multi-threaded C program (demo/threads.c, the C API): its \
simulated GC pauses" "latency -- demo/threads"
run latency -- "$threads"

step "The same program, summarised" "stats -- demo/threads"
run stats -- "$threads"

# The flight recorder: only the moments around an anomaly are kept.
watched=${gc:-$threads}
step "A flight recorder: the 2 s before the first GC pause over 1 ms of \
$(basename "$watched"), and 200 ms after it, as a Perfetto trace" \
  "watch --when 'pause>1ms' --max 1 --format fxt -o demo -- demo/$(basename "$watched")"
run watch --when 'pause>1ms' --max 1 --format fxt -o "$out" -- "$watched" \
  >/dev/null

step "Perfetto traces" "trace -o demo-trace.fxt -- demo/threads"
run trace -o "$trace" -- "$threads"
if [ -n "$gc" ]; then
  run trace -o "$gctrace" -- "$gc"
fi

# The last step: a page of charts of the GC-heavy program (or the C one).
step "A report to look at: charts of GC pauses, GC time, counters and \
spans over time, one self-contained HTML file" \
  "report -o demo-report.html -- demo/$(basename "$watched")"
run report -o "$report" -- "$watched"

echo
echo "Traces for Perfetto, one track per thread (domain):"
echo "  $trace   (demo/threads: 4 threads, requests and GC phases)"
if [ -n "$gc" ]; then
  echo "  $gctrace   (demo/gc_heavy: the OCaml GC's phases, one track per"
  echo "      OCaml thread, named by the program)"
fi
echo "  $out/*-pause.fxt   (eventring watch: the window around one pause, the"
echo "      trigger marked by an instant named eventring.trigger)"
echo "Open one at https://ui.perfetto.dev with \"Open trace file\" (the file"
echo "stays on your machine: the UI runs in the browser)."
echo
echo "The report, for any browser (no network needed): $report"
