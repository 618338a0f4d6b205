/* bench_lttng_tp.h -- the LTTng-UST tracepoint provider of bench_lttng.c.
 *
 * LTTng's tracepoint macros read this header twice (once to declare the
 * tracepoints, once to generate their probes), hence the unusual guard.
 * "on_*" are enabled in the benchmark's session; "off_*" never are, and
 * measure a disabled tracepoint with the same loop shape.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER eventring_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "bench_lttng_tp.h"

#if !defined(EVENTRING_BENCH_LTTNG_TP_H) || \
    defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define EVENTRING_BENCH_LTTNG_TP_H

#include <lttng/tracepoint.h>

#define BENCH_TP(name)                                           \
  LTTNG_UST_TRACEPOINT_EVENT(eventring_bench, name,              \
                             LTTNG_UST_TP_ARGS(int, phase),      \
                             LTTNG_UST_TP_FIELDS(                \
                                 lttng_ust_field_integer(int, phase, phase)))

BENCH_TP(on_begin)
BENCH_TP(on_end)
BENCH_TP(off_begin)
BENCH_TP(off_end)

#endif /* EVENTRING_BENCH_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
