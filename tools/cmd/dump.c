/* dump.c -- `eventring dump`: every event of a ring file, one per line.
 *
 * The line format is the one OCaml 5's own consumer prints in the test
 * vectors (the .expected files of testsuite/data, printed by OCaml 5
 * through read_events.ml), so that a dump of an OCaml 5 file can be
 * compared with OCaml's reading of it line for line (with --time=raw):
 *
 *   domain=D ts=TIME kind=KIND name=NAME value=VALUE
 *   domain=D kind=lost_events value=N
 *
 * TIME, how ts is printed, is chosen by --time: raw gives the timestamp
 * itself (nanoseconds of CLOCK_MONOTONIC: what the vectors hold, and
 * what scripts should ask for), relative (the default) seconds since the
 * first event printed, with nanoseconds (negative for an event older
 * than it in another domain, since domains are listed one after the
 * other), wall the time of day in UTC, ISO 8601 with nanoseconds
 * (walltime.c), which a file without a wall clock (OCaml 5's) cannot
 * give: an error before any line.
 *
 * KIND is runtime_begin, runtime_end, runtime_counter, alloc, lifecycle,
 * user_unit, user_int, user_span or user_custom, or thread for a
 * thread-switch marker of a shared slot (eventring's files only; OCaml's
 * reader skips them): its name is the thread's ("thread_" and its id
 * when it has none), its value the host's id for it (-1: none), and a
 * last field, tid=N, its kernel thread id.  VALUE is "-" for phases
 * and for a lifecycle event without data (ring_stop always: OCaml 5.2
 * writes none, though its reader prints a stale word, which is the one
 * place where our lines differ from the vectors), a decimal number for
 * counters (unsigned), user ints and lifecycle data (signed), the 20
 * buckets "a,b,...,t" for alloc, begin or end for spans, () for unit, and
 * the payload as an OCaml string literal for custom events.  Lost-event
 * counts are in the unit the cursor reports: events for eventring's
 * files, ring words for OCaml 5's (as OCaml's reader counts them); the
 * summary line says which.
 *
 * The summary line is ours, not OCaml's (whose counts conflate kinds and
 * whose poll count skips unit events):
 *
 *   SUMMARY total=N runtime_begin=N runtime_end=N runtime_counter=N
 *     alloc=N lifecycle=N user_int=N user_span=N user_unit=N
 *     user_custom=N thread=N dropped_events=N malformed_events=N
 *     lost_events_calls=N lost_events_total=N lost_unit=events|words
 *
 * on one line, where total is the number of event lines.  It is printed
 * only after a complete read: after a read error the events read so far
 * are printed, then the error line on stderr, and no summary, so that a
 * truncated listing never looks whole.
 *
 * Every callback stops the poll as soon as standard output fails, so
 * `eventring dump big.events | head` ends at once.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"

#define HELP_REF "eventring dump --help"

enum kind {
  K_BEGIN,
  K_END,
  K_COUNTER,
  K_ALLOC,
  K_LIFECYCLE,
  K_USER_INT,
  K_USER_SPAN,
  K_USER_UNIT,
  K_USER_CUSTOM,
  K_THREAD,
  K_COUNT
};

/* The order of the summary line, which differs from the enum's. */
static const char *const kind_names[K_COUNT] = {
    [K_BEGIN] = "runtime_begin",     [K_END] = "runtime_end",
    [K_COUNTER] = "runtime_counter", [K_ALLOC] = "alloc",
    [K_LIFECYCLE] = "lifecycle",     [K_USER_INT] = "user_int",
    [K_USER_SPAN] = "user_span",     [K_USER_UNIT] = "user_unit",
    [K_USER_CUSTOM] = "user_custom", [K_THREAD] = "thread",
};

/* --time. */
enum time_mode { TIME_RELATIVE, TIME_RAW, TIME_WALL };

struct counts {
  uint64_t count[K_COUNT];
  uint64_t lost_calls, lost_total;
};

struct dump {
  struct tool_source *src;
  struct counts all;
  /* With several processes each has its counts, and event lines start
   * with pid=P: every line for a list of files or --dir (tag_all); for a
   * command, the lines of every process but the first, so that a
   * command's one process is listed as before. */
  int tag_all;
  struct counts *per;
  int nper;
  enum time_mode time;
  int have_first;     /* first is known */
  int origin_known;   /* first is the source's earliest event */
  uint64_t first;     /* TIME_RELATIVE: the first event's timestamp */
  int64_t offset;     /* TIME_WALL: the wall-clock offset of the first
                         file, for every process (walltime.c) */
  /* --merge: the lines' ends (from " kind=") go to a memory stream, and
   * each line's place in time to `lines`; merge_print() sorts them. */
  int merge;
  char *mbuf;
  size_t msize;
  struct mline *lines;
  size_t nlines, caplines;
  size_t *pending; /* lost lines waiting for their domain's next event */
  size_t npending, cappending;
  int failed;
};

/* Where event lines are written: standard output, or with --merge the
 * memory stream. */
static FILE *dout;

/* One line of --merge: its timestamp (a loss takes the timestamp of
 * the next event of its domain, before which it is printed), the order
 * it was read in, its process and domain, where its end starts in the
 * memory stream. */
struct mline {
  uint64_t ts, seq;
  int proc, domain, has_ts, ts_known;
  size_t off;
};

/* The counts of the process being read, or NULL (out of memory, or one
 * process only). */
static struct counts *per(struct dump *d) {
  if (!d->src->multi) return NULL;
  int i = d->src->proc;
  if (i >= d->nper) {
    int n = i + 16;
    struct counts *p = realloc(d->per, (size_t)n * sizeof *p);
    if (!p) return NULL;
    memset(p + d->nper, 0, (size_t)(n - d->nper) * sizeof *p);
    d->per = p;
    d->nper = n;
  }
  return &d->per[i];
}

static void put_pid(struct dump *d) {
  if (d->tag_all || (d->src->cmd && d->src->proc > 0))
    fprintf(stdout, "pid=%ld ", (long)d->src->procs[d->src->proc]->pid);
}

static void put_pid(struct dump *d);
static void put_time(struct dump *d, uint64_t ts);

static void merge_note(struct dump *d, int domain, uint64_t ts, int has_ts) {
  if (d->nlines == d->caplines) {
    size_t cap = d->caplines ? 2 * d->caplines : 4096;
    struct mline *v = realloc(d->lines, cap * sizeof *v);
    if (!v) {
      d->failed = 1;
      return;
    }
    d->lines = v;
    d->caplines = cap;
  }
  int proc = d->src->proc;
  if (has_ts) {
    /* The losses before this event of the same domain take its time. */
    size_t k = 0;
    for (size_t j = 0; j < d->npending; j++) {
      struct mline *l = &d->lines[d->pending[j]];
      if (l->proc == proc && l->domain == domain) {
        l->ts = ts;
        l->ts_known = 1;
      } else {
        d->pending[k++] = d->pending[j];
      }
    }
    d->npending = k;
  } else {
    if (d->npending == d->cappending) {
      size_t cap = d->cappending ? 2 * d->cappending : 16;
      size_t *v = realloc(d->pending, cap * sizeof *v);
      if (!v) {
        d->failed = 1;
        return;
      }
      d->pending = v;
      d->cappending = cap;
    }
    d->pending[d->npending++] = d->nlines;
  }
  struct mline *l = &d->lines[d->nlines];
  l->ts = ts;
  l->ts_known = has_ts;
  l->has_ts = has_ts;
  l->seq = d->nlines;
  l->proc = proc;
  l->domain = domain;
  fflush(dout);
  l->off = d->msize;
  d->nlines++;
}

static int by_time(const void *a, const void *b) {
  const struct mline *x = a, *y = b;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Prints the lines of --merge in time order. */
static void merge_print(struct dump *d) {
  fflush(dout);
  /* A loss with no event of its domain after it goes last. */
  for (size_t i = 0; i < d->nlines; i++)
    if (!d->lines[i].ts_known) d->lines[i].ts = UINT64_MAX;
  /* No line at all (a file refused at its first poll): d->lines is
   * NULL, which qsort() must not be given even for no element. */
  if (d->nlines) qsort(d->lines, d->nlines, sizeof *d->lines, by_time);
  uint64_t first = 0;
  int any = 0;
  for (size_t i = 0; i < d->nlines; i++)
    if (d->lines[i].has_ts && (!any || d->lines[i].ts < first)) {
      first = d->lines[i].ts;
      any = 1;
    }
  uint64_t t0;
  if (d->origin_known) {
    /* find_origin()'s. */
  } else if (tool_filter_first_ts(d->src, &t0)) {
    d->first = t0;
    d->have_first = 1;
  } else {
    d->first = first;
    d->have_first = any;
  }
  int saved = d->src->proc;
  for (size_t i = 0; i < d->nlines && tool_output_ok(); i++) {
    const struct mline *l = &d->lines[i];
    d->src->proc = l->proc;
    put_pid(d);
    fprintf(stdout, "domain=%d", l->domain);
    if (l->has_ts) {
      fputs_unlocked(" ts=", stdout);
      put_time(d, l->ts);
    }
    const char *p = d->mbuf + l->off;
    const char *nl = memchr(p, '\n', d->msize - l->off);
    size_t n = nl ? (size_t)(nl - p) + 1 : d->msize - l->off;
    fwrite_unlocked(p, 1, n, stdout);
  }
  d->src->proc = saved;
}

/* Sets d->first to the source's earliest event as its files hold it now;
 * a source with none yet (a process not started, an empty live file)
 * counts from the first event printed. */
static void find_origin(struct dump *d) {
  uint64_t last;
  if (!tool_source_time_span(d->src, &d->first, &last)) return;
  d->have_first = 1;
  d->origin_known = 1;
}

/* Prints `ts` as --time says. */
static void put_time(struct dump *d, uint64_t ts) {
  if (d->time == TIME_RAW) {
    fprintf(stdout, "%" PRIu64, ts);
  } else if (d->time == TIME_RELATIVE) {
    if (!d->have_first) {
      /* With a time filter, from the source's first event, from which
       * --since and --until count too; else the first printed. */
      if (!tool_filter_first_ts(d->src, &d->first)) d->first = ts;
      d->have_first = 1;
    }
    uint64_t mag = ts >= d->first ? ts - d->first : d->first - ts;
    fprintf(stdout, "%s%" PRIu64 ".%09" PRIu64, ts >= d->first ? "" : "-",
            mag / 1000000000u, mag % 1000000000u);
  } else {
    char buf[TOOL_WALL_BYTES];
    tool_wall_format(buf, sizeof buf, (int64_t)ts + d->offset);
    fputs_unlocked(buf, stdout);
  }
}

/* Starts an event line, up to and including "name=". */
static void start(struct dump *d, enum kind k, int domain, uint64_t ts) {
  d->all.count[k]++;
  struct counts *c = per(d);
  if (c) c->count[k]++;
  if (d->merge) {
    merge_note(d, domain, ts, 1);
  } else {
    put_pid(d);
    fprintf(dout, "domain=%d ts=", domain);
    put_time(d, ts);
  }
  fprintf(dout, " kind=%s name=", kind_names[k]);
}

/* Ends a line; returns the callback's answer: go on while output works. */
static int end(void) {
  putc_unlocked('\n', dout);
  return tool_output_ok();
}

/* Starts a user event's line, up to and including its name. */
static void user_start(struct dump *d, enum kind k, int domain, uint64_t ts,
                       int id, const char *name) {
  start(d, k, domain, ts);
  tool_put_name(dout, name, tool_name_fallback[TOOL_NAME_USER], id);
}

static int on_phase(struct dump *d, enum kind k, int domain, uint64_t ts,
                    int phase) {
  start(d, k, domain, ts);
  tool_put_event_name(dout, d->src->cursor, TOOL_NAME_PHASE, phase);
  fputs_unlocked(" value=-", dout);
  return end();
}

static int on_begin(void *data, int domain, uint64_t ts, int phase) {
  return on_phase(data, K_BEGIN, domain, ts, phase);
}

static int on_end(void *data, int domain, uint64_t ts, int phase) {
  return on_phase(data, K_END, domain, ts, phase);
}

static int on_counter(void *data, int domain, uint64_t ts, int counter,
                      uint64_t value) {
  struct dump *d = data;
  start(d, K_COUNTER, domain, ts);
  tool_put_event_name(dout, d->src->cursor, TOOL_NAME_COUNTER, counter);
  fprintf(dout, " value=%" PRIu64, value);
  return end();
}

static int on_alloc(void *data, int domain, uint64_t ts,
                    const uint64_t *buckets) {
  start(data, K_ALLOC, domain, ts);
  fputs_unlocked("alloc_buckets value=", dout);
  for (int i = 0; i < EVENTRING_ALLOC_BUCKETS; i++)
    fprintf(dout, i ? ",%" PRIu64 : "%" PRIu64, buckets[i]);
  return end();
}

static int on_lifecycle(void *data, int domain, uint64_t ts, int kind,
                        int64_t value, int has_data) {
  struct dump *d = data;
  tool_source_lifecycle(d->src, kind);
  start(d, K_LIFECYCLE, domain, ts);
  tool_put_event_name(dout, d->src->cursor, TOOL_NAME_LIFECYCLE, kind);
  if (has_data)
    fprintf(dout, " value=%" PRId64, value);
  else
    fputs_unlocked(" value=-", dout);
  return end();
}

static int on_user_unit(void *data, int domain, uint64_t ts, int id,
                        const char *name) {
  user_start(data, K_USER_UNIT, domain, ts, id, name);
  fputs_unlocked(" value=()", dout);
  return end();
}

static int on_user_int(void *data, int domain, uint64_t ts, int id,
                       const char *name, int64_t value) {
  user_start(data, K_USER_INT, domain, ts, id, name);
  fprintf(dout, " value=%" PRId64, value);
  return end();
}

static int on_user_span(void *data, int domain, uint64_t ts, int id,
                        const char *name, int is_end) {
  user_start(data, K_USER_SPAN, domain, ts, id, name);
  fputs_unlocked(is_end ? " value=end" : " value=begin", dout);
  return end();
}

static int on_user_custom(void *data, int domain, uint64_t ts, int id,
                          const char *name, const void *bytes, size_t len) {
  user_start(data, K_USER_CUSTOM, domain, ts, id, name);
  fputs_unlocked(" value=", dout);
  tool_put_ocaml_string(dout, bytes, len);
  return end();
}

static int on_thread(void *data, int domain, uint64_t ts, int64_t thread,
                     uint64_t tid, const char *name, size_t len) {
  char buf[128];
  if (len >= sizeof buf) len = sizeof buf - 1;
  memcpy(buf, name, len);
  buf[len] = '\0';
  start(data, K_THREAD, domain, ts);
  tool_put_name(dout, buf, "thread_", (int)thread);
  fprintf(dout, " value=%" PRId64 " tid=%" PRIu64, thread, tid);
  return end();
}

static int on_lost(void *data, int domain, uint64_t count) {
  struct dump *d = data;
  tool_source_lost(d->src, domain, count);
  d->all.lost_calls++;
  d->all.lost_total += count;
  struct counts *c = per(d);
  if (c) {
    c->lost_calls++;
    c->lost_total += count;
  }
  if (d->merge) {
    merge_note(d, domain, 0, 0);
  } else {
    put_pid(d);
    fprintf(dout, "domain=%d", domain);
  }
  fprintf(dout, " kind=lost_events value=%" PRIu64 "\n", count);
  return tool_output_ok();
}

/* A SUMMARY line: `c` counted over the files of `cursors` (n of them),
 * after `pid` ("pid=P ", or "") and with `nprocs` (when not 0). */
static void summary_line(const struct counts *c, const char *pid,
                         int nprocs, eventring_cursor *const *cursors,
                         int n) {
  uint64_t total = 0;
  for (int k = 0; k < K_COUNT; k++) total += c->count[k];
  fprintf(stdout, "SUMMARY %stotal=%" PRIu64, pid, total);
  if (nprocs) fprintf(stdout, " processes=%d", nprocs);
  for (int k = 0; k < K_COUNT; k++)
    fprintf(stdout, " %s=%" PRIu64, kind_names[k], c->count[k]);
  /* What the writer never recorded and what the reader skipped (a file
   * that no longer tells the first shows "?"), before lost_unit, which
   * stays last. */
  struct tool_unrecorded u, sum = {0, 0, 0};
  int known = 1;
  for (int i = 0; i < n; i++) {
    if (tool_unrecorded(cursors[i], &u) != 0) {
      known = 0;
      continue;
    }
    sum.dropped += u.dropped;
    sum.malformed += u.malformed;
  }
  if (known)
    fprintf(stdout, " dropped_events=%" PRIu64, sum.dropped);
  else
    fprintf(stdout, " dropped_events=?");
  fprintf(stdout,
          " malformed_events=%" PRIu64 " lost_events_calls=%" PRIu64
          " lost_events_total=%" PRIu64 " lost_unit=%s\n",
          sum.malformed, c->lost_calls, c->lost_total,
          tool_lost_unit(cursors[0]));
}

static void summary(struct dump *d) {
  const struct tool_source *src = d->src;
  if (src->nprocs <= 1 && !d->tag_all) {
    summary_line(&d->all, "", 0, &src->cursor, 1);
    return;
  }
  /* One line per process, then the total, last as before. */
  eventring_cursor **all = calloc((size_t)src->nprocs, sizeof *all);
  for (int i = 0; i < src->nprocs; i++) {
    const struct tool_proc *p = src->procs[i];
    struct counts none;
    memset(&none, 0, sizeof none);
    char pid[32];
    snprintf(pid, sizeof pid, "pid=%ld ", (long)p->pid);
    summary_line(i < d->nper ? &d->per[i] : &none, pid, 0, &p->cursor, 1);
    if (all) all[i] = p->cursor;
  }
  if (all) summary_line(&d->all, "", src->nprocs, all, src->nprocs);
  free(all);
}

static void help(void) {
  printf(
      "Usage: eventring dump [OPTION]... FILE.events...\n"
      "   or: eventring dump [OPTION]... --pid PID [--dir DIR]\n"
      "   or: eventring dump [OPTION]... --dir DIR\n"
      "   or: eventring dump [OPTION]... -- COMMAND [ARG]...\n"
      "Print every event of a ring file, one line per event:\n"
      "  domain=D ts=TIME kind=KIND name=NAME value=VALUE\n"
      "a line 'domain=D kind=lost_events value=N' per loss, and a SUMMARY "
      "line.\n"
      "With several processes (files, --dir DIR, a command's tree) lines "
      "start\n"
      "with pid=P (a command's first process excepted) and each process "
      "has a\n"
      "SUMMARY pid=P line before the total's.\n"
      "\n"
      "Options:\n"
      "  --time=MODE    how ts is printed: relative (default) seconds since "
      "the\n"
      "                 first event, raw timestamps (CLOCK_MONOTONIC "
      "nanoseconds,\n"
      "                 for scripts), wall the time of day (UTC, ISO 8601)\n"
      "  --merge        every domain's and process's events in one list in "
      "time\n"
      "                 order (read whole into memory first)\n"
      "  --domain N|NAME, --event GLOB, --kind KIND, --since T, --until T, "
      "--last DUR\n"
      "                 only the events of those domains, names, kinds, "
      "times\n"
      "                 (see eventring(1), FILTERS)\n"
      "  -o FILE, --output FILE\n"
      "                 write the listing to FILE ('-': standard output)\n"
      TOOL_HELP_PID_DIR "\n"
      "  -f, --follow   keep reading until the writing process has exited\n"
      "                 (or, for a file not named PID.events, until "
      "ring_stop)\n"
      TOOL_HELP_WAIT
      TOOL_HELP_DRAIN
      TOOL_HELP_OCAML5X_FILES
      "  -h, --help     print this help and exit\n"
      "\n"
      "The listing goes to standard output, or with a COMMAND to standard "
      "error\n"
      "(the command keeps standard output and error), unless -o FILE is "
      "given.\n"
      "Exit status: 0 success, 1 unreadable or malformed input, 2 bad "
      "usage;\n"
      "with a COMMAND, the command's status once the listing is complete.\n"
      "See eventring(1) for the output format.\n");
}

int tool_dump(int argc, char **argv) {
  static const struct option longopts[] = {
      TOOL_SOURCE_OPTIONS,
      TOOL_FILTER_OPTIONS,
      TOOL_OUTPUT_OPTION,
      {"time", required_argument, NULL, TOOL_OPT_OWN},
      {"merge", no_argument, NULL, TOOL_OPT_OWN + 1},
      {NULL, 0, NULL, 0},
  };
  struct tool_source src;
  memset(&src, 0, sizeof src);
  const char *output = NULL;
  enum time_mode time = TIME_RELATIVE;
  int merge = 0;
  int c;
  int rc;
  while ((c = tool_getopt(argc, argv, ":fho:", longopts)) != -1) {
    if (c == 'o') {
      output = optarg;
    } else if (c == TOOL_OPT_OWN + 1) {
      merge = 1;
    } else if (c == TOOL_OPT_OWN) {
      if (!strcmp(optarg, "relative"))
        time = TIME_RELATIVE;
      else if (!strcmp(optarg, "raw"))
        time = TIME_RAW;
      else if (!strcmp(optarg, "wall"))
        time = TIME_WALL;
      else
        return tool_usage_error(HELP_REF,
                                "--time takes relative, raw or wall, not "
                                "'%s'", optarg);
    } else if ((rc = tool_source_other(&src, c, argv, HELP_REF, help)) >= 0)
      return rc;
  }

  /* A listing of events as they come is read as it grows (tail -f). */
  if (src.follow || tool_source_command_given()) tool_output_in_place();
  rc = tool_output_open_reading(output, HELP_REF, argv + optind,
                                argc - optind);
  if (rc != TOOL_EXIT_OK) return rc;
  src.multi = 1;
  rc = tool_source_open(&src, argc - optind, argv + optind, HELP_REF);
  if (rc != TOOL_EXIT_OK) return rc;

  static const struct tool_handlers handlers = {
      on_begin,     on_end,      on_counter,   on_alloc,       on_lifecycle,
      on_user_unit, on_user_int, on_user_span, on_user_custom, on_lost,
      on_thread, NULL /* the events before a window: lost, as OCaml's */};
  eventring_callbacks *cb = tool_callbacks_new(&handlers);
  if (!cb) {
    tool_error("out of memory");
    tool_source_close(&src);
    return TOOL_EXIT_INPUT;
  }

  struct dump d = {.src = &src, .time = time, .merge = merge};
  dout = stdout;
  if (merge && !(dout = open_memstream(&d.mbuf, &d.msize))) {
    tool_error("out of memory");
    eventring_callbacks_free(cb);
    tool_source_close(&src);
    return TOOL_EXIT_INPUT;
  }
  d.tag_all = argc - optind > 1 || (src.dir && !src.pid_arg);
  if (time == TIME_WALL) {
    int e = tool_wall_offset(src.cursor, &d.offset);
    if (e) {
      tool_wall_unknown(src.path, e);
      eventring_callbacks_free(cb);
      tool_source_close(&src);
      tool_output_finish();
      return TOOL_EXIT_INPUT;
    }
  }
  if (time == TIME_RELATIVE) find_origin(&d);
  rc = tool_source_read(&src, cb, &d);
  if (merge) {
    if (d.failed || ferror(dout)) {
      tool_error("out of memory for --merge");
      if (rc == TOOL_EXIT_OK) rc = TOOL_EXIT_INPUT;
    }
    /* Events read before an error are printed, as without --merge. */
    if (!d.failed) merge_print(&d);
    fclose(dout);
    free(d.mbuf);
    free(d.lines);
    free(d.pending);
    dout = stdout;
  }
  if (rc == TOOL_EXIT_OK && tool_output_ok()) summary(&d);
  tool_procs_join_summary(&src, stderr);
  free(d.per);
  eventring_callbacks_free(cb);
  tool_source_close(&src);
  int out = tool_output_finish();
  return rc != TOOL_EXIT_OK ? rc : out;
}
