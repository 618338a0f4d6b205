/* wallclock.h -- the wall clock against the timestamps, in the ring file
 * (wallclock.c; the words are ring_format.h's ER_WALL_*).
 *
 * Timestamps are CLOCK_MONOTONIC nanoseconds, which say nothing of the
 * time of day.  The extension block holds pairs (ts, wall) taken at one
 * instant, wall being CLOCK_REALTIME in nanoseconds since the Unix epoch,
 * so that a reader turns a timestamp t into wall + (t - ts).
 */
#ifndef EVENTRING_WALLCLOCK_H
#define EVENTRING_WALLCLOCK_H

#include <stdint.h>

#include "internal.h"

/* The pairs of a new file into `pairs` (start ts, start wall, latest ts,
 * latest wall; the latest is the start); under er_st.lock. */
ER_HIDDEN void er_wall_start(uint64_t pairs[4]);

/* Remembers where the wall words lie in the blocks of this process: at
 * byte `wall_off` of the file (layout.h; 0: none), as planned for the
 * file just made (ring.c). */
ER_HIDDEN void er_wall_file(uint64_t wall_off);

/* Publishes a new latest pair in the file of the probe the caller is in,
 * if it is in one (clock.c, at each recalibration).  Async-signal-safe:
 * a probe of a signal handler may recalibrate. */
ER_HIDDEN void er_wall_recalibrated(void);

#endif /* EVENTRING_WALLCLOCK_H */
