/* record.c -- `eventring record`: every event, kept, in rotated files.
 *
 *   eventring record -o DIR [--rotate SIZE|DUR] [--keep N] [--max-size SIZE]
 *                    (--pid PID | --dir DIR | -- CMD ARGS...)
 *
 * follows one process, every ring file of a directory (and those that
 * appear there, until a signal), or a command it runs with every
 * process of its tree -- the multi-process source of input/ (procs.c),
 * as `dump --follow` reads them -- and writes everything each process
 * writes into a series of compact ring files (runtime/snapshot.h, the
 * writer of `eventring snapshot` and `watch`), each readable alone by
 * every subcommand and by OCaml 5's reader.
 *
 * Segments.  Each process has one segment open at a time: the events
 * the library's encoder re-encodes from its cursor, in memory, as a
 * snapshot being built.  A segment is closed, written and a new one
 * opened before the event that would make it break the rotation rule:
 *   SIZE  the file er_snap_bytes() predicts would exceed SIZE bytes (its
 *         apparent size, as ls -l shows it; the rings are powers of two,
 *         so a file holds between a quarter and a half of SIZE of
 *         events per domain's ring, the rest of the rings being holes);
 *   DUR   the events of the file would span more than DUR of trace time
 *         (the greatest timestamp less the least, every domain): trace
 *         time rather than the wall clock, so that what a file holds
 *         depends on the events alone, not on how late the recorder read
 *         them.  A segment is also closed once the events' clock
 *         (CLOCK_MONOTONIC) is SETTLE_NS past its first event plus DUR,
 *         so that an idle program's files still appear.
 * A file always holds at least one event.  The cursor goes on reading
 * across a rotation, so no event falls between two files.
 *
 * Losses.  What the ring overwrote before the recorder read it is
 * reported by the cursor as lost, and counted as lost in the segment
 * open then; the compact format reports a domain's losses ahead of its
 * first event, so their count is exact across the files (the sum over
 * the files is the cursor's) and their place is the file's start.  What
 * a ring had overwritten before the recorder first looked is the
 * window's start in the first file, no loss (as for a snapshot).
 *
 * Files.  PROGRAM-PID-SEQ-TIME.events, SEQ the file's number in the run
 * (from 000001, every process counting together, so that the images of
 * one pid never take one another's names) and TIME when its first event
 * was read, UTC to the millisecond: a process's files sort in the order
 * of their events.
 * Each is written under a hidden temporary name (.PROGRAM-PID-SEQ.tmp)
 * and then linked to its name, which is never overwritten: a reader never
 * sees half a file.  Past --keep N files or --max-size bytes (every file
 * this run wrote, oldest first; the newest is always kept) the oldest go.
 * Files this run did not write are never removed.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "internal.h"
#include "snapshot.h"

#define HELP_REF "eventring record --help"

/* The rotation without --rotate. */
#define DEFAULT_ROTATE_BYTES (64ULL << 20)
/* The least --rotate SIZE: a file's fixed part (the user event name
 * slots, 1 MiB, mostly a hole) and room for events. */
#define MIN_ROTATE_BYTES (2ULL << 20)
/* How long past a segment's time an idle segment is kept open for a
 * late event: a probe takes its timestamp a moment before its event is
 * in the ring. */
#define SETTLE_NS 20000000ULL
/* Events this far ahead of our clock are not of our clock: the idle
 * rule does not apply to them. */
#define CLOCK_SLACK_NS 1000000000ULL
/* The width of SEQ in the names, so that they sort as numbers. */
#define SEQ_DIGITS 6

static void help(void) {
  printf(
      "Usage: eventring record -o DIR [OPTION]... --pid PID\n"
      "   or: eventring record -o DIR [OPTION]... --dir RINGDIR\n"
      "   or: eventring record -o DIR [OPTION]... -- COMMAND [ARG]...\n"
      "Record every event of a traced process (every process whose ring\n"
      "file is in RINGDIR, or COMMAND, run traced, with every process of\n"
      "its tree) into compact ring files in DIR, a new file each SIZE bytes\n"
      "or DUR of trace time, each one readable alone by every subcommand\n"
      "and by OCaml 5's Runtime_events.\n"
      "\n"
      "Options:\n"
      "  -o DIR, --output DIR\n"
      "                   where the files go (made if missing); each is\n"
      "                   PROGRAM-PID-SEQ-TIME.events, TIME in UTC, so\n"
      "                   that a process's files sort in time order\n"
      "  --rotate SIZE|DUR  a new file before one would exceed SIZE bytes\n"
      "                   (e.g. 64M, the default; at least 2M) or span more\n"
      "                   than DUR of trace time (e.g. 10s, 500ms)\n"
      "  --keep N         keep the newest N files, remove older ones\n"
      "  --max-size SIZE  keep the newest files that fit in SIZE (e.g. 1G),\n"
      "                   remove older ones (the newest is always kept)\n"
      "  --pid PID        record process PID until it exits\n"
      "  --dir RINGDIR    with --pid: where its ring file is; alone: every\n"
      "                   ring file there, and each that appears later,\n"
      "                   until SIGINT or SIGTERM\n"
      "  --drain-timeout DUR  how long processes of COMMAND's tree may\n"
      "                   outlive it (default 5s)\n"
      "  --ocaml50        number phases as OCaml 5.0-5.2 did\n"
      "  --ocaml53        number phases as OCaml 5.3+ does (default: "
      "inferred)\n"
      "  -h, --help       print this help and exit\n"
      "\n"
      "SIGINT or SIGTERM ends the recording: the open files are written\n"
      "whole, then record exits (COMMAND gets the signal first).  One line\n"
      "on standard error at the end says what was written.  Read the files\n"
      "one at a time (eventring dump FILE) or together (eventring stats\n"
      "DIR: each process's files as one run of it).  Exit status:\n"
      "COMMAND's when one is run, else 0; 1 unreadable input or\n"
      "unwritable output, 2 bad usage.  See eventring(1).\n");
}

static struct {
  const char *out;
  uint64_t rotate_bytes; /* 0: by time */
  uint64_t rotate_ns;    /* 0: by size */
  long keep;             /* 0: no limit */
  uint64_t max_size;     /* 0: no limit */
} O;

/* One process's open segment. */
struct rec {
  const struct tool_proc *proc; /* whose; NULL before its first event */
  struct er_snap *snap;         /* NULL: none open */
  uint64_t events;              /* in the open segment */
  uint64_t lost;
  uint64_t lo, hi;              /* its least and greatest timestamps */
  struct timespec began;        /* when its first event was read */
};

/* A file this run wrote and has not removed, oldest first. */
struct written {
  char *path;
  uint64_t bytes;
};

static struct {
  struct tool_source *src;
  struct rec *recs; /* by the index of the process in src->procs */
  int nrecs;
  struct written *files;
  size_t nfiles, cap, first; /* files[first .. nfiles) are kept */
  uint64_t total_bytes;      /* of those kept */
  unsigned seq; /* the last file's, for every process: a pid's programs
                   (an exec) never take one another's names */
  uint64_t written, removed, events, lost;
  /* The name the encoder gave for the event it delivers next (id -1:
   * none): a rotation before that event gives it to the new file too. */
  int name_id;
  char name[EVENTRING_MAX_NAME + 1];
  int failed; /* a file could not be written (reported) */
  int err;    /* an error that ends the reading (-ENOMEM) */
} R;

/* ------------------------------------------------------------------ */
/* The files.                                                           */

/* Removes the oldest files past --keep and --max-size, the newest one
 * excepted. */
static void enforce_caps(void) {
  while (R.nfiles - R.first > 1 &&
         ((O.keep && R.nfiles - R.first > (size_t)O.keep) ||
          (O.max_size && R.total_bytes > O.max_size))) {
    struct written *w = &R.files[R.first++];
    if (unlink(w->path) != 0 && errno != ENOENT)
      tool_error("record: %s: %s (not removed)", w->path, strerror(errno));
    else
      R.removed++;
    R.total_bytes -= w->bytes;
    free(w->path);
    w->path = NULL;
  }
  /* The list keeps only what it holds. */
  if (R.first > 64 && R.first * 2 > R.nfiles) {
    memmove(R.files, R.files + R.first,
            (R.nfiles - R.first) * sizeof *R.files);
    R.nfiles -= R.first;
    R.first = 0;
  }
}

static int remember(const char *path, uint64_t bytes) {
  if (R.nfiles == R.cap) {
    size_t cap = R.cap ? 2 * R.cap : 64;
    struct written *v = realloc(R.files, cap * sizeof *v);
    if (!v) return -ENOMEM;
    R.files = v;
    R.cap = cap;
  }
  char *p = strdup(path);
  if (!p) return -ENOMEM;
  R.files[R.nfiles].path = p;
  R.files[R.nfiles].bytes = bytes;
  R.nfiles++;
  R.total_bytes += bytes;
  return 0;
}

/* Writes `s` as the file `final`, through the temporary name `tmp`:
 * the name appears only once the file is whole, and never over another
 * file.  Returns 0 or a negated errno value (reported by the caller,
 * nothing left behind). */
static int write_atomically(struct er_snap *s, const char *tmp,
                            const char *final, struct er_snap_stats *st) {
  int fd = er_file_open_new(tmp);
  if (fd == -EEXIST) {
    /* A temporary file a killed recorder left: never a whole file. */
    unlink(tmp);
    fd = er_file_open_new(tmp);
  }
  if (fd < 0) return fd;
  int r = er_snap_write(s, fd, st);
  if (close(fd) < 0 && !r) r = -errno;
  if (!r && link(tmp, final) != 0) r = -errno;
  unlink(tmp);
  return r;
}

/* Closes the open segment of `rc` into its file.  Returns 0, or -ENOMEM
 * (a file that cannot be written is reported and counted, and
 * recording goes on). */
static int close_segment(struct rec *rc) {
  struct er_snap *s = rc->snap;
  if (!s) return 0;
  rc->snap = NULL;
  const struct tool_proc *p = rc->proc;
  if (!rc->events && !rc->lost) {
    er_snap_free(s);
    return 0;
  }
  int e = er_snap_names_from_cursor(s, p->cursor);
  if (!e) e = er_snap_set_writer(s, p->pid, p->name);
  if (e) {
    er_snap_free(s);
    return e;
  }
  unsigned seq = ++R.seq;
  char prog[64], stamp[32], tmp[PATH_MAX], final[PATH_MAX];
  er_snap_file_part(p->name, prog, sizeof prog);
  struct tm tm;
  gmtime_r(&rc->began.tv_sec, &tm);
  size_t n = strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
  snprintf(stamp + n, sizeof stamp - n, ".%03ldZ",
           rc->began.tv_nsec / 1000000);
  int l1 = snprintf(final, sizeof final, "%s/%s-%ld-%0*u-%s.events", O.out,
                    prog, (long)p->pid, SEQ_DIGITS, seq, stamp);
  int l2 = snprintf(tmp, sizeof tmp, "%s/.%s-%ld-%0*u.tmp", O.out, prog,
                    (long)p->pid, SEQ_DIGITS, seq);
  struct er_snap_stats st;
  memset(&st, 0, sizeof st);
  int r = l1 >= (int)sizeof final || l2 >= (int)sizeof tmp
              ? -ENAMETOOLONG
              : write_atomically(s, tmp, final, &st);
  er_snap_free(s);
  if (r) {
    tool_error("record: %s: %s (%" PRIu64 " events and %" PRIu64
               " lost not recorded)",
               final, tool_strerror(-r), rc->events, rc->lost);
    R.failed = 1;
    return 0;
  }
  R.written++;
  R.events += st.events;
  R.lost += st.lost;
  if (remember(final, st.bytes) < 0) return -ENOMEM;
  enforce_caps();
  return 0;
}

/* ------------------------------------------------------------------ */
/* Segments.                                                            */

/* The segment state of the process whose event is being delivered, or
 * NULL when out of memory. */
static struct rec *current(void) {
  struct tool_source *src = R.src;
  int i = src->proc;
  if (i >= R.nrecs) {
    int n = src->nprocs > i ? src->nprocs : i + 1;
    struct rec *v = realloc(R.recs, (size_t)n * sizeof *v);
    if (!v) return NULL;
    memset(v + R.nrecs, 0, (size_t)(n - R.nrecs) * sizeof *v);
    R.recs = v;
    R.nrecs = n;
  }
  struct rec *rc = &R.recs[i];
  rc->proc = src->procs[i];
  return rc;
}

/* The open segment of `rc`, opened when there is none.  NULL when out
 * of memory. */
static struct er_snap *segment(struct rec *rc) {
  if (rc->snap) return rc->snap;
  struct er_snap *s = er_snap_new();
  /* The names now, so that the size predicted counts their room. */
  if (!s || er_snap_names_from_cursor(s, rc->proc->cursor) < 0 ||
      er_snap_set_writer(s, rc->proc->pid, rc->proc->name) < 0) {
    er_snap_free(s);
    return NULL;
  }
  rc->snap = s;
  rc->events = rc->lost = 0;
  rc->lo = rc->hi = 0;
  clock_gettime(CLOCK_REALTIME, &rc->began);
  return s;
}

/* Whether adding `len` words at time `ts` to domain `domain` of the open
 * segment would break the rotation rule. */
static int full(const struct rec *rc, int domain, uint64_t ts,
                unsigned len) {
  if (!rc->snap || !rc->events) return 0;
  if (O.rotate_ns) {
    uint64_t lo = ts < rc->lo ? ts : rc->lo, hi = ts > rc->hi ? ts : rc->hi;
    return hi - lo > O.rotate_ns;
  }
  return er_snap_bytes(rc->snap, domain, len) > O.rotate_bytes;
}

static int sink_event(void *arg, int domain, const uint64_t *ev,
                      unsigned len) {
  (void)arg;
  struct rec *rc = current();
  if (!rc) return -ENOMEM;
  uint64_t ts = ev[1];
  int rotate = full(rc, domain, ts, len);
  int e = rotate ? close_segment(rc) : 0;
  struct er_snap *s = e ? NULL : segment(rc);
  if (!s) return e ? e : -ENOMEM;
  if (rotate && R.name_id >= 0 &&
      (e = er_snap_user_name(s, R.name_id, R.name)) != 0)
    return e;
  R.name_id = -1;
  if ((e = er_snap_event(s, domain, ev, len)) != 0) return e;
  if (!rc->events || ts < rc->lo) rc->lo = ts;
  if (!rc->events || ts > rc->hi) rc->hi = ts;
  rc->events++;
  return 0;
}

static int sink_user_name(void *arg, int id, const char *name) {
  (void)arg;
  struct rec *rc = current();
  struct er_snap *s = rc ? segment(rc) : NULL;
  if (!s) return -ENOMEM;
  R.name_id = id;
  snprintf(R.name, sizeof R.name, "%s", name ? name : "");
  return er_snap_user_name(s, id, name);
}

static int sink_lost(void *arg, int domain, uint64_t count) {
  (void)arg;
  tool_source_lost(R.src, domain, count);
  struct rec *rc = current();
  struct er_snap *s = rc ? segment(rc) : NULL;
  if (!s) return -ENOMEM;
  rc->lost += count;
  return er_snap_lost(s, domain, count);
}

static int sink_window(void *arg, int domain, uint64_t before) {
  (void)arg;
  tool_source_window(R.src, domain, before);
  struct rec *rc = current();
  struct er_snap *s = rc ? segment(rc) : NULL;
  return s ? er_snap_window(s, domain, before) : -ENOMEM;
}

/* After each round of polls: the segments of processes read to their
 * end, and those whose time has passed on our clock, are closed, so
 * that a program that ended or went idle has its files. */
static void between_polls(struct tool_source *src, void *data) {
  (void)src, (void)data;
  if (R.err) return;
  /* A process read to its end: its last file is written now, not when
   * the recorder ends (which, following a directory, may be days on). */
  for (int i = 0; i < R.nrecs; i++) {
    struct rec *rc = &R.recs[i];
    if (rc->snap && rc->proc && tool_proc_done(rc->proc)) {
      int e = close_segment(rc);
      if (e && !R.err) R.err = e;
    }
  }
  if (!O.rotate_ns || R.err) return;
  uint64_t now = tool_now_ns();
  for (int i = 0; i < R.nrecs; i++) {
    struct rec *rc = &R.recs[i];
    if (rc->snap && rc->events && rc->hi <= now + CLOCK_SLACK_NS &&
        now > rc->lo + O.rotate_ns + SETTLE_NS) {
      int e = close_segment(rc);
      if (e && !R.err) R.err = e;
    }
  }
}

/* ------------------------------------------------------------------ */

/* Parses --rotate's argument: a size or a duration. */
static int parse_rotate(const char *arg) {
  uint64_t v;
  char why[128];
  if (tool_parse_size(arg, &v) == 0) {
    if (v < MIN_ROTATE_BYTES)
      return tool_usage_error(HELP_REF, "--rotate %s: a file takes at "
                              "least 2M (give 2M or more, or a duration)",
                              arg);
    O.rotate_bytes = v;
    O.rotate_ns = 0;
    return TOOL_EXIT_OK;
  }
  if (tool_parse_duration(arg, &v, why, sizeof why) == 0 && v > 0) {
    O.rotate_ns = v;
    O.rotate_bytes = 0;
    return TOOL_EXIT_OK;
  }
  return tool_usage_error(HELP_REF, "invalid --rotate '%s' (a size such as "
                          "64M or a duration such as 10s)", arg);
}

int tool_record(int argc, char **argv) {
  enum { OPT_ROTATE = TOOL_OPT_OWN, OPT_KEEP, OPT_MAX_SIZE };
  /* The source options but --follow, which is always on. */
  static const struct option longopts[] = {
      TOOL_OUTPUT_OPTION,
      {"rotate", required_argument, NULL, OPT_ROTATE},
      {"keep", required_argument, NULL, OPT_KEEP},
      {"max-size", required_argument, NULL, OPT_MAX_SIZE},
      {"dir", required_argument, NULL, TOOL_OPT_DIR},
      {"pid", required_argument, NULL, TOOL_OPT_PID},
      {"drain-timeout", required_argument, NULL, TOOL_OPT_DRAIN},
      {"ocaml50", no_argument, NULL, TOOL_OPT_OCAML50},
      {"ocaml53", no_argument, NULL, TOOL_OPT_OCAML53},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  struct tool_source src;
  memset(&src, 0, sizeof src);
  memset(&O, 0, sizeof O);
  memset(&R, 0, sizeof R);
  R.name_id = -1;
  O.rotate_bytes = DEFAULT_ROTATE_BYTES;
  int c, rc;
  while ((c = tool_getopt(argc, argv, ":ho:", longopts)) != -1) {
    if (c == 'o') {
      O.out = optarg;
    } else if (c == OPT_ROTATE) {
      if ((rc = parse_rotate(optarg)) != TOOL_EXIT_OK) return rc;
    } else if (c == OPT_KEEP) {
      char *end;
      errno = 0;
      long v = strtol(optarg, &end, 10);
      if (end == optarg || *end || errno || v < 1)
        return tool_usage_error(HELP_REF, "invalid --keep '%s' (a number of "
                                "files, at least 1)", optarg);
      O.keep = v;
    } else if (c == OPT_MAX_SIZE) {
      if (tool_parse_size(optarg, &O.max_size) || !O.max_size)
        return tool_usage_error(HELP_REF, "invalid --max-size '%s' (a size "
                                "such as 1G or 512M)", optarg);
    } else if ((rc = tool_source_other(&src, c, argv, HELP_REF, help)) >= 0) {
      return rc;
    }
  }
  if (optind < argc)
    return tool_usage_error(HELP_REF, "unexpected argument '%s' (processes "
                            "are recorded with --pid, --dir or -- COMMAND)",
                            argv[optind]);
  if (!O.out)
    return tool_usage_error(HELP_REF, "no output directory (-o DIR)");
  if (!*O.out) return tool_usage_error(HELP_REF, "empty output directory");
  if (!src.pid_arg && !src.dir && !tool_source_command_given())
    return tool_usage_error(HELP_REF, "nothing to record (--pid PID, --dir "
                            "DIR or -- COMMAND)");
  /* The directory first: a wrong one is reported before a command runs. */
  if ((rc = tool_output_dir(O.out, "record: -o")) != TOOL_EXIT_OK) return rc;

  src.multi = 1;
  src.follow = 1;
  /* --dir alone: a service's recorder, which outlives its programs. */
  src.until_signal = src.dir && !src.pid_arg && !tool_source_command_given();
  src.progress = -1;
  rc = tool_source_open(&src, 0, argv + optind, HELP_REF);
  if (rc != TOOL_EXIT_OK) return rc;
  R.src = &src;
  char shown[TOOL_TEXT_BUF(sizeof src.name)];
  const char *name = src.name[0] ? tool_text(shown, sizeof shown, src.name,
                                              TOOL_TEXT_UTF8)
                                 : "the command";
  if (src.cmd)
    tool_error("record: recording %s and every process it starts into %s",
               name, O.out);
  else if (src.pid_arg)
    tool_error("record: recording pid %ld into %s", (long)src.pid, O.out);
  else
    tool_error("record: recording every process of %s, and each that starts "
               "there, into %s until stopped (SIGINT or SIGTERM)", src.dir,
               O.out);
  struct er_snap_sink sink = {sink_event, sink_user_name, sink_lost, NULL,
                              sink_window};
  struct er_snap_encoder *enc = er_snap_encoder_new(&sink);
  if (!enc) {
    tool_error("out of memory");
    tool_source_close(&src);
    return TOOL_EXIT_INPUT;
  }
  src.between_polls = between_polls;
  rc = tool_source_read(&src, er_snap_encoder_callbacks(enc),
                        er_snap_encoder_data(enc));
  int e = er_snap_encoder_error(enc);
  if (!e) e = R.err;
  /* What the segments hold is all there is: each is written whole. */
  for (int i = 0; i < R.nrecs; i++) {
    int ce = close_segment(&R.recs[i]);
    if (ce && !e) e = ce;
  }
  if (e) {
    tool_error("record: %s", tool_strerror(-e));
    rc = TOOL_EXIT_INPUT;
  }
  tool_source_lost_summary(&src, stderr);
  fprintf(stderr,
          "eventring: record: %" PRIu64 " file%s written in %s (%" PRIu64
          " removed, %zu kept, %" PRIu64 " bytes): %" PRIu64
          " events, %" PRIu64 " lost\n",
          R.written, R.written == 1 ? "" : "s", O.out, R.removed,
          R.nfiles - R.first, R.total_bytes, R.events, R.lost);
  er_snap_encoder_free(enc);
  tool_source_close(&src);
  for (size_t i = R.first; i < R.nfiles; i++) free(R.files[i].path);
  free(R.files);
  free(R.recs);
  if (rc == TOOL_EXIT_OK && R.failed) rc = TOOL_EXIT_INPUT;
  return rc;
}
