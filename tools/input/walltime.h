/* walltime.h -- the wall clock of a source, for the subcommands that
 * print or export times of day (walltime.c). */
#ifndef EVENTRING_TOOLS_WALLTIME_H
#define EVENTRING_TOOLS_WALLTIME_H

#include <stddef.h>
#include <stdint.h>

#include "eventring.h"

/* Room for the longest ISO 8601 time tool_wall_format() writes. */
#define TOOL_WALL_BYTES 48

/* The wall-clock offset of the file `c` reads: the wall time of an event
 * stamped t is t + *offset nanoseconds since the Unix epoch.  The start
 * pair's offset, so that every event of the file, and of its forked
 * children's files (which keep it), is placed with one offset and keeps
 * its order.  Returns 0, or the cursor's error
 * (EVENTRING_E_NOWALLCLOCK for OCaml 5's files). */
int tool_wall_offset(const eventring_cursor *c, int64_t *offset);

/* The message for a source without a wall clock, naming `path`. */
void tool_wall_unknown(const char *path, int err);

/* `ns` nanoseconds since the Unix epoch as ISO 8601 UTC with
 * nanoseconds, 2026-11-24T05:50:42.123456789Z, into buf (at least
 * TOOL_WALL_BYTES). */
void tool_wall_format(char *buf, size_t size, int64_t ns);

#endif /* EVENTRING_TOOLS_WALLTIME_H */
