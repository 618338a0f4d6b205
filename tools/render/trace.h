/* trace.h -- what `eventring trace` shares with its two output formats.
 *
 * trace.c reads the events and turns them into a format-neutral stream
 * of trace events: one track per domain, slices (begin/end, or complete
 * when a slice's begin was lost), instants and counters, each with a few
 * typed arguments.  It owns every decision about spans cut by lost
 * events, so that both formats show the same thing.  A writer turns that
 * stream into a file:
 *   fuchsia.c  the Fuchsia trace format (FXT), binary, Perfetto's native
 *              input for traces made outside Android;
 *   json.c     the Chrome JSON trace event format.
 *
 * Strings handed to a writer are printable ASCII (trace.c escapes every
 * other byte of a name or payload as \DDD), so a writer only has to deal
 * with its own format's quoting.
 */
#ifndef EVENTRING_TRACE_H
#define EVENTRING_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum trace_ph {
  TRACE_BEGIN,    /* a slice opens on the track */
  TRACE_END,      /* the innermost open slice closes */
  TRACE_COMPLETE, /* a whole slice, [ts, end_ts] */
  TRACE_INSTANT,
  TRACE_COUNTER, /* every argument is one series of the counter */
};

enum trace_arg_type { TRACE_ARG_STR, TRACE_ARG_INT, TRACE_ARG_UINT,
                      TRACE_ARG_BOOL };

struct trace_arg {
  const char *key;
  enum trace_arg_type type;
  const char *s; /* TRACE_ARG_STR: s[0 .. len) */
  size_t len;
  int64_t i;  /* TRACE_ARG_INT, TRACE_ARG_BOOL (0 or 1) */
  uint64_t u; /* TRACE_ARG_UINT */
};

/* At most this many arguments per event (an alloc event's 20 buckets). */
#define TRACE_MAX_ARGS 24

struct trace_event {
  enum trace_ph ph;
  int track;          /* the domain */
  uint64_t tid;       /* its thread id in the output */
  uint64_t ts;        /* nanoseconds */
  uint64_t end_ts;    /* TRACE_COMPLETE only */
  const char *cat;    /* category */
  const char *name;
  int nargs;
  struct trace_arg args[TRACE_MAX_ARGS];
};

/* A writer.  Each function writes to `out` and returns nothing: write
 * errors show in ferror(out), which trace.c checks. */
struct trace_writer {
  /* The file's header, with the process that every track belongs to. */
  void (*begin)(void *self, FILE *out, uint64_t pid, const char *process);
  /* With several processes: makes `pid` the process of the tracks and
   * events that follow, declaring it with its display name first when
   * `process` is not NULL (begin() declared the first one). */
  void (*process)(void *self, FILE *out, uint64_t pid, const char *process);
  /* Declares a track before its first event: `tid` is its thread id in
   * the output (unique in the trace), `name` its display name. */
  void (*track)(void *self, FILE *out, int track, uint64_t tid,
                const char *name);
  void (*event)(void *self, FILE *out, const struct trace_event *ev);
  /* Completes the file's structure; no call follows. */
  void (*end)(void *self, FILE *out);
  void (*free)(void *self);
};

/* The wall clock of the trace, set by trace.c before begin() from the
 * first file's start pair (walltime.c): the time of day of timestamp t
 * is t + offset nanoseconds since the Unix epoch, `start` that of the
 * moment tracing started.  known is 0 when the source has none (OCaml
 * 5's files): the writers then say nothing of it. */
struct trace_wallclock {
  int known;
  int64_t offset;
  int64_t start;
};
extern struct trace_wallclock trace_wall;

/* Each returns a writer's state for `w`, or NULL when out of memory. */
void *trace_fuchsia_new(struct trace_writer *w);
void *trace_json_new(struct trace_writer *w);

#endif /* EVENTRING_TRACE_H */
