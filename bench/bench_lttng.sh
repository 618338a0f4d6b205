#!/bin/sh
# bench_lttng.sh BENCH -- runs BENCH (bench/bench_lttng) inside an LTTng
# session: a user-space channel in overwrite mode with the tracepoints
# eventring_bench:on_* enabled.  Starts a session daemon when none runs
# (and stops it afterwards); when one cannot run here, says why and exits
# 0: LTTng is an optional comparison, never a failure of `make bench-lttng`.
bench=$1
skip() { echo "bench-lttng: skipped: $*"; exit 0; }

started=
if ! timeout 10 lttng list -u >/dev/null 2>&1; then
	timeout 30 lttng-sessiond --daemonize >/dev/null 2>&1 ||
		skip "lttng-sessiond --daemonize failed (try as root)"
	started=yes
	timeout 10 lttng list -u >/dev/null 2>&1 ||
		skip "the session daemon does not answer"
fi
session=eventring-bench-$$
out=$(mktemp -d /tmp/eventring-lttng.XXXXXX) || exit 1
cleanup() {
	timeout 20 lttng destroy "$session" >/dev/null 2>&1
	rm -rf "$out"
	if test -n "$started"; then
		for f in /var/run/lttng/lttng-sessiond.pid \
			"$HOME/.lttng/lttng-sessiond.pid"; do
			test -s "$f" && kill "$(cat "$f")" 2>/dev/null && break
		done
	fi
}
trap cleanup EXIT
timeout 20 lttng create "$session" --output="$out" >/dev/null &&
timeout 20 lttng enable-channel -u -s "$session" --overwrite ch >/dev/null &&
timeout 20 lttng enable-event -u -s "$session" -c ch \
	'eventring_bench:on_*' >/dev/null &&
timeout 20 lttng start "$session" >/dev/null ||
	skip "could not set up an LTTng session"
EVENTRING_BENCH_OUT=bench/results-bench_lttng.json "$bench"
