#!/bin/sh
# callgrind_probes.sh -- instructions per active probe, counted by
# valgrind's callgrind (doc/BENCHMARKS.md, "Instructions per probe").
#
# Usage: bench/callgrind_probes.sh [BENCH_PROBES [N]], from the build
# directory; BENCH_PROBES defaults to bench/bench_probes, N to 1000000.
# Each operation runs N times in `bench_probes --count OP N` (tracing
# active, the flight recorder wrapping) with collection switched on only
# inside that operation's loop, so the count is the loop's whole cost
# divided by N: the probe, its inlined flag test and two or three
# instructions of loop.  The rdtsc loop is the reference: what reading
# the clock alone takes.  Counts are instructions, not time: they do not
# see a cache miss or the latency of rdtsc, but they are exact and the
# same on a noisy machine.
set -e
bin=${1:-bench/bench_probes}
n=${2:-1000000}
tmp=$(mktemp -d /tmp/eventring-callgrind.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
printf '%-10s %12s\n' operation 'Ir/op'
for op in rdtsc begin counter user_int pair; do
  out="$tmp/$op.out"
  if [ "$op" = rdtsc ]; then
    # The reference loop needs no tracing, but runs the same way.
    valgrind --tool=callgrind --callgrind-out-file="$out" \
      --toggle-collect=loop_rdtsc "$bin" --count rdtsc "$n" >/dev/null 2>&1
  else
    valgrind --tool=callgrind --callgrind-out-file="$out" \
      --toggle-collect="loop_$op" "$bin" --count "$op" "$n" >/dev/null 2>&1
  fi
  ir=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$out")
  [ -n "$ir" ] || ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out")
  awk -v op="$op" -v ir="$ir" -v n="$n" \
    'BEGIN { printf "%-10s %12.1f\n", op, ir / n }'
done
