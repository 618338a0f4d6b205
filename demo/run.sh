#!/bin/sh
# run.sh -- what `make demo` runs once the programs are built:
#
#   sh demo/run.sh TOOL OUTDIR THREADS [GC_HEAVY [GC_HOOKS [GC_ER]]]
#
# TOOL is the eventring command, OUTDIR where the traces go, THREADS the
# C program (demo/threads.c), GC_HEAVY the OCaml program
# (demo/gc_heavy.ml; empty or absent when there is no OCaml) linked with
# the instrumented runtime, GC_HOOKS the same linked with the stock
# normal runtime and GC_ER with the patched normal runtime (`make
# ocaml-runtime`; empty when it is not built).  Each
# program is run by the tool itself (`eventring SUBCOMMAND -- PROGRAM`),
# which traces it through a private directory and reads its events as it
# runs, so nothing is left behind but the traces.  Stops at the first
# step that fails, with its status.

tool=$1
out=$2
threads=$3
gc=${4:-}
gc_hooks=${5:-}
gc_er=${6:-}

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

# The same OCaml program on each runtime it can link: what each sees,
# counted from `eventring dump` by kind and name, side by side.
compare_runtimes() {
  if [ -n "$gc_er" ]; then
    cols="stock normal (hooks only)|patched normal (_er)|instrumented (i)"
    progs="$gc_hooks $gc_er $gc"
    shown="demo/gc_heavy_hooks, demo/gc_heavy_er, demo/gc_heavy"
  else
    cols="stock normal (hooks only)|instrumented (i)"
    progs="$gc_hooks $gc"
    shown="demo/gc_heavy_hooks, demo/gc_heavy"
  fi
  step "One program on each OCaml 4.13 runtime: what each reports (the \
stock normal runtime through the package's GC hooks only; the patched \
normal one, -runtime-variant _er, through its own probes; the \
instrumented one, -runtime-variant i)" \
    "dump -- PROGRAM, for $shown, counted by name"
  if [ -z "$gc_er" ]; then
    echo "demo: the patched OCaml runtime is not built (run 'make \
ocaml-runtime', which needs Debian's ocaml-source): its column is left out"
    echo
  fi
  dumps=
  for p in $progs; do
    d=$out/$(basename "$p").dump
    # The listing to the file, the program's own line (its Gc counts)
    # after it.
    said=$("$tool" dump -o "$d" -- "$p") || {
      rc=$?
      echo "demo: 'eventring dump -o $d -- $p' failed with status $rc" >&2
      # shellcheck disable=SC2086 # a list of our own paths
      rm -f $dumps "$d"
      exit $rc
    }
    printf '%s\n' "$said" >> "$d"
    dumps="$dumps $d"
  done
  # shellcheck disable=SC2086
  awk -v cols="$cols" '
    FNR == 1 { col++ }
    /^domain=/ {
      kind = ""; name = ""
      for (i = 1; i <= NF; i++) {
        if ($i ~ /^kind=/) kind = substr($i, 6)
        else if ($i ~ /^name=/) name = substr($i, 6)
      }
      if (kind == "runtime_begin") g = 1
      else if (kind == "runtime_counter") g = 2
      else if (kind == "lifecycle") g = 3
      else if (kind == "alloc") { g = 4; name = "(allocation buckets)" }
      else next
      key = g SUBSEP name
      if (!(key in seen)) { seen[key] = 1; order[g, ++n[g]] = name }
      count[key, col]++
      next
    }
    /^gc_heavy: / { said[col] = $0; next }
    END {
      nc = split(cols, head, "|")
      split("phase (begins)|counter (samples)|lifecycle|allocations", gname, "|")
      printf "%-32s", ""
      for (c = 1; c <= nc; c++) printf " %26s", head[c]
      printf "\n"
      for (g = 1; g <= 4; g++) {
        if (n[g] == 0) continue
        printf "%s\n", gname[g]
        for (i = 1; i <= n[g]; i++) {
          name = order[g, i]
          printf "  %-30s", name
          for (c = 1; c <= nc; c++) {
            v = count[g SUBSEP name, c]
            printf " %26s", v ? v : "-"
          }
          printf "\n"
        }
      }
      printf "\nwhat each program counted itself (Gc.quick_stat):\n"
      for (c = 1; c <= nc; c++)
        printf "  %-26s %s\n", head[c] ":", said[c]
    }' $dumps
  # shellcheck disable=SC2086
  rm -f $dumps
  echo
  if [ -n "$gc_er" ]; then
    echo "The patched normal runtime reports the instrumented runtime's phases,"
    echo "counters and lifecycle events, with the same names, less the"
    echo "allocation buckets, a hot path kept for i.  The stock runtime, through"
    echo "the GC hooks alone, sees minor collections and major slices (named"
    echo "major_slice, with the cycle and phase markers derived from them) and"
    echo "the counters the hooks can read."
  else
    echo "The stock runtime, through the GC hooks alone, sees minor collections"
    echo "and major slices; the instrumented one every phase and counter."
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

  if [ -n "$gc_hooks" ]; then
    compare_runtimes
  fi
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
