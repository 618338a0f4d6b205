/* watch.c -- `eventring watch`: the flight recorder's trigger.
 *
 *   eventring watch --when COND [--when COND]... [OPTION]... --pid PID
 *   eventring watch --when COND [--when COND]... [OPTION]... --dir DIR
 *   eventring watch --when COND [--when COND]... [OPTION]... -- CMD ARGS...
 *   eventring watch --when COND [--when COND]... [OPTION]... FILE...
 *
 * follows one process, every traced process whose ring file appears in a
 * directory (dirscan.c, as `metrics --dir` does), or a command it runs
 * with every process of its tree (their files appear in the command's
 * private directory, followed as --dir follows one, until the tree ends),
 * and when a condition holds (a GC pause, a phase or a user span longer
 * than a duration, a user int above a value, a named user event, lost
 * events, a rule over windows of them -- analysis/rules.c parses and
 * evaluates every --when, fed here -- or SIGUSR1 to the watcher) writes
 * the window around it -- every domain's events from --before ahead of
 * the trigger to --after past it -- as a compact ring file
 * (runtime/snapshot.h, the writer of `eventring snapshot`), or as a trace
 * made from that file by `eventring trace`.  With FILE operands (a
 * directory: its *.events files, as for dump) it reads recorded events
 * to their end instead (read_files): the rules are in trace time, so the
 * triggers are the live run's.
 *
 * Memory.  The rings of a busy process turn over in a fraction of a
 * second, so the watcher keeps the recent past itself: each domain has a
 * buffer of the re-encoded events (the words a compact file holds, from
 * the library's own encoder), in order, from which the oldest are dropped
 * once they are more than --before (plus KEEP_SLACK_NS) older than the
 * newest event, or when all buffers together exceed --max-memory (the
 * oldest event of any domain first).  Events dropped for room while a
 * window is open are counted as lost in its snapshot.  A window's start
 * is protected from the age rule while it is open.
 *
 * Windows.  A trigger at time T (an event's timestamp: the end of the
 * pause or span, the int or unit event; the moment of the signal) opens a
 * window from T - before (or the anomaly's start, when that is earlier
 * and still held) to T + after.  Triggers within an open window extend
 * it (to at most EXTEND_AFTERS times --after past its first trigger) and
 * are marked in it too; a trigger past every open window's end opens
 * another at once, so that what is marked and what ignored depends on the
 * triggers' timestamps alone, not on how far behind the watcher reads.
 * A window is written once every event up to its end has been read
 * (read_through): when a poll that started EVENT_SETTLE_NS after the end
 * (CLOCK_MONOTONIC, the clock of the events) has been done and every
 * domain that wrote in the window has been read past its end (or has
 * been quiet until QUIET_SETTLE_NS past it), or when events more than a
 * second past the end have been seen (a clock that is not ours); and at
 * once, with what was read, when the process ends or the watcher is
 * interrupted.  A trigger that comes less than --every after the previous
 * window's first trigger, or once --max windows were opened, is ignored
 * and counted.
 *
 * The mark.  Each trigger is written into the snapshot as a custom user
 * event named "eventring.trigger" (in the highest user event id the
 * process does not use) in the domain where the condition held, at the
 * trigger's time, whose payload says the condition and what was measured
 * ("pause>20ms: 51.20 ms (domain 0)"): `dump` prints it as a user_custom
 * line, and a trace shows it as an instant with the payload as argument.
 *
 * Actions.  --exec runs a command for each snapshot written, once the
 * file is complete (runcmd.c: no shell, the path as one word, a process
 * group of its own, --exec-timeout), while the rings are read on: the
 * commands are reaped after each poll (tick), at most --exec-max at
 * once, the others skipped and counted.  A failure is logged and counted,
 * never an end; watch waits for the commands still running before it
 * ends.  The log (eventlog.c) is text, as it always was, or with
 * --log-format json one object per trigger, snapshot, action and the end
 * summary, with the --label pairs, on standard error or in --log FILE.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "internal.h"
#include "snapshot.h"

#define HELP_REF "eventring watch --help"

#define MAX_CONDS 32
#define MAX_MARKS 64
/* Defaults: a window that shows the cause, a pace and a count that a
 * storm of triggers cannot turn into a full disk. */
#define DEFAULT_BEFORE_NS 2000000000ULL
#define DEFAULT_AFTER_NS 200000000ULL
#define DEFAULT_EVERY_NS 10000000000ULL
#define DEFAULT_MAX 100
#define DEFAULT_MAX_MEMORY (64ULL << 20)
/* Kept beyond --before, so that a trigger a little behind the newest
 * event (another domain read later in the same poll) still has its
 * whole --before. */
#define KEEP_SLACK_NS 250000000ULL
/* How long after a window's end a poll must start before every event up
 * to the end is taken to have been read: a probe takes its timestamp
 * a moment before its event is in the ring. */
#define EVENT_SETTLE_NS 20000000ULL
/* Events this far past a window's end close it whatever our clock
 * says. */
#define EVENT_CLOCK_SLACK_NS 1000000000ULL
/* How long past a window's end a domain that wrote in it, and nothing
 * past it yet, is waited for before it is taken to be idle (read_through). */
#define QUIET_SETTLE_NS 1000000000ULL
#define EXTEND_AFTERS 10
/* How often --dir is scanned, and the idle sleep between polls there. */
#define SCAN_NS 250000000ULL
/* With inotify: how soon a file that could not be opened (one being
 * created) is looked at again. */
#define RESCAN_NS 20000000ULL
#define IDLE_NS 10000000L
/* The name of the mark's user event. */
#define MARK_NAME "eventring.trigger"
/* --exec's defaults. */
#define DEFAULT_EXEC_TIMEOUT_NS 60000000000ULL
#define DEFAULT_EXEC_MAX 4

static void help(void) {
  printf(
      "Usage: eventring watch --when COND [--when COND]... [OPTION]... "
      "--pid PID\n"
      "   or: eventring watch --when COND... [OPTION]... --dir DIR\n"
      "   or: eventring watch --when COND... [OPTION]... -- COMMAND "
      "[ARG]...\n"
      "   or: eventring watch --when COND... [OPTION]... FILE...\n"
      "Follow a traced process (every one whose ring file appears in DIR, or\n"
      "COMMAND, run traced, with every process of its tree) and, each time\n"
      "a condition holds, write the events of every domain around that\n"
      "moment to a snapshot file.  FILEs (recorded files; a directory: its\n"
      "*.events files) are read to their end, one process's files as one\n"
      "stream.\n"
      "\n"
      "Conditions (DUR: a number and ns, us, ms or s, e.g. 10ms, 1.5s):\n"
      "  pause>DUR        a GC pause (an outermost runtime phase) longer "
      "than DUR\n"
      "  phase:NAME>DUR   one runtime phase NAME (e.g. major_slice) longer\n"
      "  span:NAME>DUR    a user span NAME longer than DUR\n"
      "  int:NAME>VALUE   a user int NAME above VALUE\n"
      "  event:NAME       any user event NAME (a program triggers its own)\n"
      "  lost             events lost (the rings turned over unread)\n"
      "Rules: aggregates over a sliding window of trace time,\n"
      "  FN(SOURCE, WINDOW) CMP LIMIT   FN p50 p90 p99 p999 max min avg count "
      "rate,\n"
      "                   SOURCE pause phase:NAME span:NAME int:NAME "
      "event:NAME lost,\n"
      "                   CMP > >= < <=, e.g. 'p99(pause, 10s) > 5ms'\n"
      "  gc_share(WINDOW) > PCT%%  one domain's share of time in GC pauses\n"
      "  COND for DUR     an aggregate that held throughout DUR\n"
      "  and, or, not, ( )  e.g. 'count(event:app.retry, 1s) > 100 and not "
      "lost'\n"
      "SIGUSR1 to the watcher triggers a snapshot by hand.\n"
      "\n"
      "Options:\n"
      "  --when COND      a condition (at least one; several: any of them)\n"
      "  --before DUR     events kept ahead of a trigger (default 2s)\n"
      "  --after DUR      events kept past it (default 200ms); triggers in a\n"
      "                   window extend it\n"
      "  --every DUR      least time between two snapshots (default 10s)\n"
      "  --max N          at most N snapshots (default 100)\n"
      "  -o DIR, --output DIR\n"
      "                   where snapshots go (made if missing; default: "
      "the\n                   current directory),\n"
      "                   named TIME-PROGRAM-PID-REASON.EXT, TIME in UTC\n"
      "  --format FMT     events (a compact ring file, the default), fxt\n"
      "                   (Fuchsia trace for Perfetto) or json (Chrome JSON)\n"
      "  --max-memory SIZE  events kept in all, e.g. 64M (the default), 512K\n"
      "  --pid PID        follow process PID until it exits\n"
      "  --dir DIR        with --pid: where its ring file is; alone: follow\n"
      "                   every PID.events file that appears in DIR\n"
      "  --ocaml50        number phases as OCaml 5.0-5.2 did\n"
      "  --ocaml53        number phases as OCaml 5.3+ does (default: "
      "inferred)\n"
      "  --exec CMD       run CMD for each snapshot written, {} replaced by "
      "its\n"
      "                   path (no shell: CMD is split into words, quotes "
      "group)\n"
      "  --exec-timeout DUR  SIGTERM (then SIGKILL) to a command still "
      "running\n"
      "                   after DUR (default 60s)\n"
      "  --exec-max N     at most N commands at once (default 4); the "
      "others are\n"
      "                   skipped\n"
      "  --log-format FMT text (the default) or json: one object a line "
      "per\n"
      "                   trigger, snapshot, command and the summary\n"
      "  --log FILE       the log into FILE (appended) instead of standard "
      "error\n"
      "  --label NAME=VALUE  recorded in every snapshot and added to every\n"
      "                   JSON log line (repeatable)\n"
      "  -h, --help       print this help and exit\n"
      "\n"
      "One line on standard error per snapshot.  Runs until the process (or\n"
      "COMMAND) exits, the FILEs are read, or with --dir alone until\n"
      "interrupted.  Exit status: 0 (COMMAND's status when one is run),\n"
      "1 unreadable input or unwritable output, 2 bad usage.  See\n"
      "eventring(1).\n");
}

/* ------------------------------------------------------------------ */
/* Conditions.                                                          */

/* A rule (analysis/rules.c) as the windows know it: its text, and the
 * word that names its snapshots. */
struct cond {
  const char *text;
  const char *reason;
};

enum format { FMT_EVENTS, FMT_FXT, FMT_JSON };
static const char *const format_names[] = {"events", "fxt", "json"};

static struct {
  struct rules *rules;
  struct cond conds[MAX_CONDS];
  int nconds;
  uint64_t before, after, every;
  long max;
  const char *out;
  enum format format;
  uint64_t max_words;
  int numbering;
} O;

static const struct cond by_hand = {"SIGUSR1", "signal"};

/* Parses --when's argument into the next rule.  Returns 0, or a usage
 * error. */
static int parse_cond(const char *arg) {
  char why[512];
  if (O.nconds == MAX_CONDS)
    return tool_usage_error(HELP_REF, "too many --when (%d at most)",
                            MAX_CONDS);
  if (rules_add(O.rules, arg, why, sizeof why) < 0)
    return tool_usage_error(HELP_REF, "--when '%s': %s", arg, why);
  O.conds[O.nconds].text = rules_text(O.rules, O.nconds);
  O.conds[O.nconds].reason = rules_reason(O.rules, O.nconds);
  O.nconds++;
  return 0;
}

/* ------------------------------------------------------------------ */
/* State.                                                               */

/* One domain's recent events: their words, in order, in a buffer of
 * 2^k words addressed by ever-growing positions. */
struct dbuf {
  uint64_t *w;
  uint64_t mask; /* words - 1; 0 before the first allocation */
  uint64_t head, tail;
  uint64_t last_ts;
};

/* A lost-events count kept in a buffer: a header of type
 * ER_EV_INTERNAL (which no event of a ring has), the timestamp of the
 * domain's last event before the gap, and the count.  Never written out
 * as an event: a snapshot's losses are counts (er_snap_lost). */
#define LOST_HDR ER_HDR(3, 0, ER_EV_INTERNAL, 0)

struct mark {
  int domain;
  uint64_t ts;
  char text[160];
};

/* An open window.  A target keeps its open windows in a list, oldest
 * first: a trigger past the end of every open one opens the next at once
 * (when --every and --max allow it), so which triggers are marked, and
 * which are ignored, depends on their timestamps only, never on how far
 * behind the writer the watcher reads.  Their ends increase along the
 * list: a new window's trigger is past every open end, and an extension
 * comes from a trigger before the newer window's. */
struct window {
  struct window *next;
  uint64_t start, end, limit;
  const struct cond *cond; /* the first trigger's */
  char measured[128];      /* the first trigger's, for the message */
  int domain;              /* the first trigger's domain, */
  uint64_t at, from;       /* trace time, and its anomaly's start */
  time_t wall;             /* when it fired, for the file name */
  struct mark marks[MAX_MARKS];
  int nmarks;
  uint64_t triggers;
  uint64_t *lost; /* per domain: dropped for room while open */
  int nlost;
};

struct target {
  struct target *next;
  eventring_cursor *cursor;
  int own_cursor; /* --dir: ours to free; else source.c's */
  char path[PATH_MAX];
  dev_t dev;
  ino_t ino;
  pid_t pid;
  char program[64];
  struct dbuf *d;
  int nd;   /* buffers allocated */
  int maxd; /* the file's domain slots: what the trackers cover */
  uint64_t max_ts; /* the newest event read */
  struct pauses pauses;
  int have_pauses;
  uint64_t cur_ts; /* the end event being handled, for on_pause */
  struct rules_eval *rules; /* the conditions' state */
  const char *uname; /* the name of the user event being handled */
  struct window *wins; /* open, oldest first */
  uint64_t last_first; /* the previous window's first trigger */
  int has_last;
  int started;  /* a poll has been done: later losses are news */
  int retired;  /* --dir: read to its end, kept so as not to reopen */
  int seen;     /* --dir: found by the current scan */
  struct tool_source *src; /* --pid: for the lost summary */
  /* A process of a command's tree: its own lost summary, on finishing. */
  int summarise;
  uint64_t lost_total;
  uint64_t *lost; /* per domain, nlost_d entries */
  int nlost_d;
  struct er_snap_encoder *enc;
  struct er_snap_sink sink;
  /* Recorded files: the file's CLOCK_REALTIME less its timestamps, for
   * the snapshots' names (has_wall 0: unknown, the watcher's clock). */
  int64_t wall_off;
  int has_wall;
};

static struct {
  struct target *targets;
  uint64_t words;  /* in every buffer */
  long opened;     /* windows opened */
  long written;
  uint64_t ignored;
  uint64_t prev_tick;
  int failed;      /* a snapshot could not be written */
  int tree;        /* following a command's tree (follow_dir) */
  int files;       /* reading recorded files (read_files) */
  volatile sig_atomic_t usr1;
} W;

static void on_usr1(int sig) {
  (void)sig;
  W.usr1 = 1;
}

/* Makes SIGUSR1 take a snapshot by hand (on_usr1), keeping the former
 * action in `old` for the caller to restore. */
static void catch_usr1(struct sigaction *old) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, old);
}

/* ------------------------------------------------------------------ */
/* The log and the actions.                                             */

static struct eventlog L;

static struct {
  int on;                  /* --exec given */
  struct tool_cmdline cmd; /* its template */
  uint64_t timeout;
  int max;
  uint64_t started, ok, failed, timed_out, skipped;
} A;

/* What a running command is for: its snapshot. */
struct action {
  char path[PATH_MAX];
  char program[64];
  pid_t target;
};

/* The fields of a JSON line about the process of target `t`: with the
 * OCaml version its file records, when it does. */
static void log_process(const struct target *t) {
  eventlog_int(&L, "pid", t->pid);
  eventlog_str(&L, "program", t->program);
  const char *v = t->cursor ? eventring_cursor_ocaml_version(t->cursor) : NULL;
  if (v) eventlog_str(&L, "ocaml_version", v);
}

/* A trigger of condition `c`: opened a window, extended one, or was
 * ignored (--every, --max). */
/* The wall time of trace time `at` in `t` (wall_time_ns), when its file
 * records the wall clock: a log read from a backlog tells its triggers
 * apart by it, not by the time the line was written. */
static void log_wall(const struct target *t, uint64_t at) {
  eventring_wallclock wc;
  if (t->cursor &&
      eventring_cursor_wallclock(t->cursor, EVENTRING_WALLCLOCK_LATEST,
                                 &wc) == 0) {
    int64_t wall = wc.wall + (int64_t)(at - wc.ts);
    if (wall > 0) eventlog_int(&L, "wall_time_ns", wall);
  }
}

static void log_trigger(const struct target *t, const struct cond *c,
                        int domain, uint64_t at, const char *measured,
                        const char *outcome) {
  eventlog_begin(&L, "trigger");
  eventlog_str(&L, "rule", c->text);
  eventlog_str(&L, "reason", c->reason);
  eventlog_str(&L, "measured", measured);
  eventlog_int(&L, "domain", domain);
  eventlog_int(&L, "ts", (int64_t)at);
  log_wall(t, at);
  eventlog_str(&L, "outcome", outcome);
  log_process(t);
  eventlog_end(&L);
}

static void log_action(const char *event, const struct action *a, pid_t pid) {
  eventlog_begin(&L, event);
  eventlog_str(&L, "snapshot", a->path);
  eventlog_str(&L, "command", A.cmd.words[0]);
  if (pid > 0) eventlog_int(&L, "action_pid", pid);
  eventlog_int(&L, "pid", a->target);
  eventlog_str(&L, "program", a->program);
}

/* tool_run_poll()'s report of a command's end. */
static void action_done(void *arg, const struct tool_run_end *e) {
  (void)arg;
  struct action *a = e->tag;
  int st = e->status;
  char why[96], dur[32];
  const char *reason;
  if (e->timed_out) {
    reason = "timeout";
    snprintf(why, sizeof why, "timed out after %s (--exec-timeout), ended "
             "by %s", analysis_duration(dur, A.timeout),
             st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL
                 ? "SIGKILL" : "SIGTERM");
  } else if (st == -1) {
    reason = "lost";
    snprintf(why, sizeof why, "its exit status was lost");
  } else if (WIFSIGNALED(st)) {
    reason = "signal";
    snprintf(why, sizeof why, "killed by signal %d (%s)", WTERMSIG(st),
             strsignal(WTERMSIG(st)));
  } else if (WEXITSTATUS(st) != 0) {
    reason = "exit";
    snprintf(why, sizeof why, "exited with status %d", WEXITSTATUS(st));
  } else {
    reason = NULL;
  }
  if (reason) {
    A.failed++;
    A.timed_out += e->timed_out;
    eventlog_text(&L, "watch: --exec for %s: %s", a->path, why);
    log_action("action_failed", a, e->pid);
    eventlog_str(&L, "reason", reason);
    eventlog_str(&L, "error", why);
  } else {
    A.ok++;
    log_action("action_finished", a, e->pid);
  }
  if (st != -1 && WIFEXITED(st))
    eventlog_int(&L, "exit_status", WEXITSTATUS(st));
  if (st != -1 && WIFSIGNALED(st)) eventlog_int(&L, "signal", WTERMSIG(st));
  eventlog_seconds(&L, "duration_s", e->duration_ns);
  eventlog_end(&L);
  free(a);
}

/* Runs --exec for the snapshot at `path`, written for target `t`. */
static void run_action(const struct target *t, const char *path) {
  struct action *a = calloc(1, sizeof *a);
  char **argv = a ? tool_cmdline_argv(&A.cmd, path) : NULL;
  pid_t pid = 0;
  int e = argv ? tool_run_start(argv, a, &pid) : -ENOMEM;
  tool_cmdline_argv_free(argv);
  struct action none;
  if (!a) {
    memset(&none, 0, sizeof none);
    a = &none;
  }
  snprintf(a->path, sizeof a->path, "%s", path);
  snprintf(a->program, sizeof a->program, "%s", t->program);
  a->target = t->pid;
  if (!e) {
    A.started++;
    log_action("action_started", a, pid);
    eventlog_end(&L);
    return;
  }
  if (e == -EAGAIN) {
    A.skipped++;
    eventlog_text(&L, "watch: --exec for %s: skipped, --exec-max %d "
                  "command%s still running", path, A.max,
                  A.max == 1 ? "" : "s");
    log_action("action_skipped", a, 0);
    eventlog_int(&L, "running", A.max);
  } else {
    A.failed++;
    eventlog_text(&L, "watch: --exec for %s: cannot run '%s': %s", path,
                  A.cmd.words[0], strerror(-e));
    log_action("action_failed", a, 0);
    eventlog_str(&L, "reason", "start");
    eventlog_str(&L, "error", strerror(-e));
  }
  eventlog_end(&L);
  if (a != &none) free(a);
}

/* The end: what was written, ignored, run. */
static void log_summary(int rc) {
  /* Over recorded files a run that fires nothing is silent otherwise:
   * say that the rules were read through and what came of them. */
  if (W.files && !W.ignored && rc == TOOL_EXIT_OK)
    eventlog_text(&L, "watch: %ld snapshot%s written%s", W.written,
                  W.written == 1 ? "" : "s",
                  W.written ? "" : " (no rule held)");
  if (W.ignored)
    eventlog_text(&L, "watch: %" PRIu64 " trigger%s ignored (--every and "
                  "--max: %ld snapshot%s written)", W.ignored,
                  W.ignored > 1 ? "s" : "", W.written,
                  W.written == 1 ? "" : "s");
  if (A.on && (A.started || A.failed || A.skipped))
    eventlog_text(&L, "watch: --exec: %" PRIu64 " run, %" PRIu64
                  " failed (%" PRIu64 " timed out), %" PRIu64 " skipped",
                  A.started, A.failed, A.timed_out, A.skipped);
  eventlog_begin(&L, "summary");
  eventlog_int(&L, "snapshots", W.written);
  eventlog_int(&L, "triggers_ignored", (int64_t)W.ignored);
  eventlog_int(&L, "snapshot_errors", W.failed);
  if (A.on) {
    eventlog_int(&L, "actions_started", (int64_t)A.started);
    eventlog_int(&L, "actions_succeeded", (int64_t)A.ok);
    eventlog_int(&L, "actions_failed", (int64_t)A.failed);
    eventlog_int(&L, "actions_timed_out", (int64_t)A.timed_out);
    eventlog_int(&L, "actions_skipped", (int64_t)A.skipped);
  }
  eventlog_int(&L, "exit_status", rc);
  eventlog_end(&L);
}

/* ------------------------------------------------------------------ */
/* The buffers.                                                         */

static struct dbuf *dbuf_of(struct target *t, int domain) {
  if (domain < 0 || domain >= 65536) return NULL;
  if (domain >= t->nd) {
    int n = t->nd ? t->nd : 4;
    while (n <= domain) n *= 2;
    struct dbuf *d = realloc(t->d, (size_t)n * sizeof *d);
    if (!d) return NULL;
    memset(d + t->nd, 0, (size_t)(n - t->nd) * sizeof *d);
    t->d = d;
    t->nd = n;
  }
  return &t->d[domain];
}

static uint64_t word_at(const struct dbuf *b, uint64_t pos) {
  return b->w[pos & b->mask];
}

static int append(struct dbuf *b, const uint64_t *ev, unsigned len) {
  uint64_t used = b->tail - b->head;
  if (!b->w || used + len > b->mask + 1) {
    uint64_t words = b->w ? (b->mask + 1) * 2 : 1024;
    while (used + len > words) words *= 2;
    uint64_t *w = malloc(words * sizeof *w);
    if (!w) return -ENOMEM;
    for (uint64_t p = b->head; p < b->tail; p++)
      w[p & (words - 1)] = word_at(b, p);
    free(b->w);
    b->w = w;
    b->mask = words - 1;
  }
  for (unsigned i = 0; i < len; i++) b->w[(b->tail + i) & b->mask] = ev[i];
  b->tail += len;
  W.words += len;
  return 0;
}

/* Drops domain `d`'s oldest event; one an open window holds is counted
 * as lost in it. */
static void drop_oldest(struct target *t, int d) {
  struct dbuf *b = &t->d[d];
  uint64_t h = word_at(b, b->head);
  unsigned len = ER_HDR_LEN(h);
  if (len < 2 || b->tail - b->head < len) len = (unsigned)(b->tail - b->head);
  uint64_t ts = len >= 2 ? word_at(b, b->head + 1) : 0;
  for (struct window *w = t->wins; w; w = w->next) {
    if (ts < w->start || ts > w->end) continue;
    uint64_t n = h == LOST_HDR ? word_at(b, b->head + 2) : 1;
    if (d >= w->nlost) {
      uint64_t *l = realloc(w->lost, (size_t)t->nd * sizeof *l);
      if (l) {
        memset(l + w->nlost, 0, (size_t)(t->nd - w->nlost) * sizeof *l);
        w->lost = l;
        w->nlost = t->nd;
      }
    }
    if (d < w->nlost) w->lost[d] += n;
  }
  b->head += len;
  W.words -= len;
}

/* Drops what is older than --before (plus the slack) behind the newest
 * event, but not what an open window holds. */
static void trim_age(struct target *t, int d) {
  struct dbuf *b = &t->d[d];
  uint64_t span = O.before + KEEP_SLACK_NS;
  /* A file's domains are read one after another: there, the age is the
   * domain's own. */
  uint64_t newest = W.files ? b->last_ts : t->max_ts;
  uint64_t keep = newest > span ? newest - span : 0;
  for (const struct window *w = t->wins; w; w = w->next)
    if (w->start < keep) keep = w->start;
  while (b->head < b->tail && word_at(b, b->head + 1) < keep)
    drop_oldest(t, d);
}

/* Keeps every buffer together under --max-memory: the oldest event of
 * any domain of any process goes first, in runs, so that a domain at
 * full speed does not pay a search per event. */
static void trim_room(void) {
  uint64_t goal = O.max_words - O.max_words / 64;
  while (W.words > goal) {
    struct target *ot = NULL;
    int od = -1;
    uint64_t oldest = UINT64_MAX, second = UINT64_MAX;
    for (struct target *t = W.targets; t; t = t->next)
      for (int d = 0; d < t->nd; d++) {
        struct dbuf *b = &t->d[d];
        if (b->head >= b->tail) continue;
        uint64_t ts = word_at(b, b->head + 1);
        if (ts < oldest) {
          second = oldest;
          oldest = ts, ot = t, od = d;
        } else if (ts < second) {
          second = ts;
        }
      }
    if (!ot) return;
    struct dbuf *b = &ot->d[od];
    do drop_oldest(ot, od);
    while (W.words > goal && b->head < b->tail &&
           word_at(b, b->head + 1) <= second);
  }
}

/* ------------------------------------------------------------------ */
/* Triggers and windows.                                                */

static int free_mark_id(const struct target *t) {
  for (int id = ER_NAME_SLOTS - 1; id > 0; id--) {
    const char *n = eventring_cursor_user_name(t->cursor, id);
    if (!n || !*n) return id;
  }
  return 0;
}

static void add_mark(struct window *w, const struct cond *c, int domain,
                     uint64_t at, const char *measured) {
  w->triggers++;
  if (w->nmarks == MAX_MARKS) return;
  struct mark *m = &w->marks[w->nmarks++];
  m->domain = domain;
  m->ts = at;
  snprintf(m->text, sizeof m->text, "%s%s%s",
           c->text, *measured ? ": " : "",
           measured);
}

static void open_window(struct target *t, const struct cond *c, int domain,
                        uint64_t at, uint64_t start, const char *measured) {
  if (W.opened >= O.max || (t->has_last && at < t->last_first + O.every)) {
    W.ignored++;
    log_trigger(t, c, domain, at, measured, "ignored");
    return;
  }
  struct window *w = calloc(1, sizeof *w);
  if (!w) {
    tool_error("watch: %s (pid %ld): out of memory for the window of %s at "
               "%" PRIu64 " ns", t->program, (long)t->pid, c->text, at);
    W.failed = 1;
    return;
  }
  uint64_t from = at > O.before ? at - O.before : 0;
  w->start = start < from ? start : from;
  w->end = at + O.after;
  w->limit = at + (O.after ? O.after : 1) * EXTEND_AFTERS;
  w->cond = c;
  w->domain = domain;
  w->at = at;
  w->from = start;
  snprintf(w->measured, sizeof w->measured, "%s", measured);
  /* From a file, when it fired by the file's wall clock. */
  w->wall = t->has_wall ? (time_t)(((int64_t)at + t->wall_off) / 1000000000)
                        : time(NULL);
  add_mark(w, c, domain, at, measured);
  struct window **tail = &t->wins;
  while (*tail) tail = &(*tail)->next;
  *tail = w;
  t->last_first = at;
  t->has_last = 1;
  W.opened++;
  log_trigger(t, c, domain, at, measured, "opened");
}

/* Condition `c` held in `domain` at `at`, for an anomaly that began at
 * `start`, with `measured` to say what was seen.  The oldest open window
 * whose end is not before `at` takes it (a trigger of another domain,
 * read later, may be older than the newest window's); past them all, it
 * opens a window of its own. */
static void trigger(struct target *t, const struct cond *c, int domain,
                    uint64_t at, uint64_t start, const char *measured) {
  for (struct window *w = t->wins; w; w = w->next)
    if (at <= w->end) {
      uint64_t end = at + O.after;
      if (end > w->limit) end = w->limit;
      if (end > w->end) w->end = end;
      add_mark(w, c, domain, at, measured);
      log_trigger(t, c, domain, at, measured, "extended");
      return;
    }
  open_window(t, c, domain, at, start, measured);
}


/* Adds the mark `m` to `s` as a custom user event `id` of its domain. */
static int put_mark(struct er_snap *s, const struct mark *m, int id) {
  uint64_t ev[2 + 32] = {0};
  size_t len = strlen(m->text);
  unsigned words = (unsigned)ER_CUSTOM_WORDS(len);
  ev[0] = ER_HDR(2 + words, 1, ER_UEV_CUSTOM, (unsigned)id);
  ev[1] = m->ts;
  memcpy(ev + 2, m->text, len);
  /* The last byte counts the padding bytes before it (FORMAT.md). */
  ((unsigned char *)(ev + 2))[words * 8 - 1] =
      (unsigned char)(words * 8 - 1 - len);
  return er_snap_event(s, m->domain, ev, 2 + words);
}

/* The events (and marks) of every domain in window `w` into `s`.
 * Returns 0 or a negative error. */
static int fill(struct target *t, const struct window *w, struct er_snap *s) {
  int id = free_mark_id(t);
  int e = er_snap_names_from_cursor(s, t->cursor);
  if (!e) e = er_snap_set_writer(s, t->pid, t->program);
  for (int i = 0; !e && i < L.labels.n; i++)
    e = er_snap_label(s, L.labels.name[i], L.labels.value[i]);
  if (!e) e = er_snap_user_name(s, id, MARK_NAME);
  unsigned char named[ER_NAME_SLOTS / 8] = {0};
  int nd = t->nd;
  for (int i = 0; i < w->nmarks; i++)
    if (w->marks[i].domain >= nd) nd = w->marks[i].domain + 1;
  for (int d = 0; !e && d < nd; d++) {
    /* This domain's marks, by time. */
    const struct mark *mk[MAX_MARKS];
    int nm = 0, mi = 0;
    for (int i = 0; i < w->nmarks; i++)
      if (w->marks[i].domain == d) {
        int j = nm++;
        while (j > 0 && mk[j - 1]->ts > w->marks[i].ts) mk[j] = mk[j - 1], j--;
        mk[j] = &w->marks[i];
      }
    uint64_t lost = d < w->nlost ? w->lost[d] : 0;
    struct dbuf *b = d < t->nd ? &t->d[d] : NULL;
    uint64_t ev[ER_MAX_EVENT_WORDS];
    for (uint64_t p = b ? b->head : 0; b && !e && p < b->tail;) {
      unsigned len = ER_HDR_LEN(word_at(b, p));
      if (len < 2 || len > ER_MAX_EVENT_WORDS || b->tail - p < len) break;
      for (unsigned i = 0; i < len; i++) ev[i] = word_at(b, p + i);
      p += len;
      uint64_t ts = ev[1];
      /* Not a break past the end: the threads of an OCaml 4 program
       * share domain 0, and their timestamps need not be in order. */
      if (ts < w->start || ts > w->end) continue;
      if (ev[0] == LOST_HDR) {
        lost += ev[2];
        continue;
      }
      while (!e && mi < nm && mk[mi]->ts < ts) e = put_mark(s, mk[mi++], id);
      if (ER_HDR_IS_USER(ev[0])) {
        unsigned uid = ER_HDR_ID(ev[0]);
        if (uid < ER_NAME_SLOTS && !(named[uid / 8] & (1u << (uid % 8)))) {
          named[uid / 8] |= (unsigned char)(1u << (uid % 8));
          const char *n = eventring_cursor_user_name(t->cursor, (int)uid);
          if (!e && n && *n && (int)uid != id)
            e = er_snap_user_name(s, (int)uid, n);
        }
      }
      if (!e) e = er_snap_event(s, d, ev, len);
    }
    while (!e && mi < nm) e = put_mark(s, mk[mi++], id);
    if (!e && lost) e = er_snap_lost(s, d, lost);
  }
  return e;
}

/* `eventring trace` run on the compact file `events` to write `out`, as
 * a user would run it: a process of its own, so that the trace writer's
 * source (and its signal handlers) never meet ours.  Returns its exit
 * status, or -1 when it could not be run. */
static int run_trace(const char *events, const char *out) {
  char *argv[] = {"eventring", "trace", "--format",
                  O.format == FMT_FXT ? "fuchsia" : "json", "-o", (char *)out,
                  (char *)events, NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY,
                                   0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY,
                                   0);
  pid_t pid;
  extern char **environ;
  int r = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (r != 0) return -1;
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Creates the snapshot's file in -o DIR: TIME-PROGRAM-PID-REASON.EXT, with
 * -2, -3... when that name is taken (a snapshot never replaces a file).
 * Returns the descriptor of `events` (the compact file: the snapshot
 * itself, or the trace's input beside it) with `path` the snapshot's
 * name, or a negated errno. */
static int create_file(const struct target *t, const struct window *w,
                       char *path, size_t size, char *events, size_t esize) {
  char when[32], prog[64], base[PATH_MAX];
  struct tm tm;
  gmtime_r(&w->wall, &tm);
  strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &tm);
  er_snap_file_part(t->program, prog, sizeof prog);
  snprintf(base, sizeof base, "%s/%s-%s-%ld-%s", O.out, when, prog,
           (long)t->pid, w->cond->reason);
  for (int n = 1; n < 1000; n++) {
    char suffix[16] = "";
    if (n > 1) snprintf(suffix, sizeof suffix, "-%d", n);
    if (snprintf(path, size, "%s%s.%s", base, suffix,
                 format_names[O.format]) >= (int)size)
      return -ENAMETOOLONG;
    if (O.format == FMT_EVENTS) {
      snprintf(events, esize, "%s", path);
    } else {
      struct stat st;
      if (lstat(path, &st) == 0) continue;
      if (snprintf(events, esize, "%s%s.events.part", base, suffix) >=
          (int)esize)
        return -ENAMETOOLONG;
    }
    int fd = er_file_open_new(events);
    if (fd != -EEXIST) return fd;
  }
  return -EEXIST;
}

/* The fields of a snapshot's JSON line about the trigger that opened
 * window `w`: its domain and trace time (ts, ns), its wall time
 * (wall_time_ns, when the file records the wall clock) and, for a rule on
 * one event with a duration (pause>, phase:NAME>, span:NAME>), the
 * histogram it belongs to (source: pause, phase:NAME or span:NAME) and
 * the event's duration (value_ns): what `eventring metrics --exemplars`
 * attaches to that histogram's bucket. */
static void log_first_trigger(const struct target *t, const struct window *w) {
  eventlog_int(&L, "domain", w->domain);
  eventlog_int(&L, "ts", (int64_t)w->at);
  log_wall(t, w->at);
  const char *r = w->cond->reason, *text = w->cond->text;
  if (strcmp(r, "pause") && strcmp(r, "phase") && strcmp(r, "span")) return;
  /* A simple rule: "KIND:NAME > DURATION", spaces allowed around words. */
  char source[EVENTRING_MAX_NAME + 16];
  text += strspn(text, " ");
  size_t n = strcspn(text, " >");
  snprintf(source, sizeof source, "%.*s", (int)n, text);
  eventlog_str(&L, "source", source);
  eventlog_int(&L, "value_ns", (int64_t)(w->at - w->from));
}

/* Writes the oldest open window of `t` and frees it. */
static void close_window(struct target *t) {
  struct window *w = t->wins;
  struct er_snap *s = er_snap_new();
  char path[PATH_MAX], events[PATH_MAX];
  int e = s ? fill(t, w, s) : -ENOMEM;
  struct er_snap_stats st;
  memset(&st, 0, sizeof st);
  int fd = -1;
  if (!e && (fd = create_file(t, w, path, sizeof path, events,
                              sizeof events)) < 0)
    e = fd;
  if (!e) e = er_snap_write(s, fd, &st);
  if (fd >= 0 && close(fd) < 0 && !e) e = -errno;
  er_snap_free(s);
  int traced = 1; /* the trace, when one is asked for, was made */
  if (!e && O.format != FMT_EVENTS) {
    int rc = run_trace(events, path);
    unlink(events);
    if (rc != 0) {
      eventlog_text(&L, "watch: %s: the trace could not be written "
                    "(eventring trace exited with %d)", path, rc);
      traced = 0;
      W.failed = 1;
    }
  } else if (e && fd >= 0) {
    unlink(events);
  }
  const char *rule = w->cond->text;
  if (e) {
    const char *why =
        e == -EFBIG ? tool_strerror(EFBIG) : eventring_strerror(e);
    eventlog_text(&L, "watch: snapshot of %s (pid %ld) for %s: %s%s%s",
                  t->program, (long)t->pid, w->cond->text,
                  fd >= 0 ? path : "", fd >= 0 ? ": " : "", why);
    W.failed = 1;
    eventlog_begin(&L, "snapshot_failed");
    if (fd >= 0) eventlog_str(&L, "snapshot", path);
    eventlog_str(&L, "rule", rule);
    eventlog_str(&L, "error", why);
    log_process(t);
    eventlog_end(&L);
  } else {
    W.written++;
    char extra[48] = "";
    if (w->triggers > 1)
      snprintf(extra, sizeof extra, ", %" PRIu64 " triggers", w->triggers);
    /* The log escapes what the file and --when supply. */
    eventlog_text(&L, "watch: %s: %s%s%s in %s (pid %ld); %" PRIu64
                  " events, %u domains, %" PRIu64 " lost%s",
                  path, rule, *w->measured ? ": " : "", w->measured,
                  t->program[0] ? t->program : "unknown", (long)t->pid,
                  st.events, st.domains, st.lost, extra);
    /* A trace that could not be made is no file for a log or an
     * action. */
    eventlog_begin(&L, traced ? "snapshot" : "snapshot_failed");
    eventlog_str(&L, "snapshot", path);
    eventlog_str(&L, "format", format_names[O.format]);
    eventlog_str(&L, "rule", rule);
    eventlog_str(&L, "reason", w->cond->reason);
    eventlog_str(&L, "measured", w->measured);
    if (!traced) eventlog_str(&L, "error", "eventring trace failed");
    eventlog_int(&L, "triggers", (int64_t)w->triggers);
    eventlog_int(&L, "events", (int64_t)st.events);
    eventlog_int(&L, "domains", st.domains);
    eventlog_int(&L, "lost", (int64_t)st.lost);
    log_first_trigger(t, w);
    log_process(t);
    eventlog_end(&L);
    if (A.on && traced) run_action(t, path);
  }
  t->wins = w->next;
  free(w->lost);
  free(w);
}

/* ------------------------------------------------------------------ */
/* Events: the encoder's sink.                                          */

/* Rule `rule` fired (rules_eval_new's callback). */
static void on_rule(void *arg, int rule, int domain, uint64_t at,
                    uint64_t start, const char *measured) {
  trigger(arg, &O.conds[rule], domain, at, start, measured);
}

static void on_pause(void *arg, int domain, uint64_t duration) {
  struct target *t = arg;
  rules_pause(t->rules, domain, t->cur_ts, duration);
}

static void check_phase(struct target *t, int d, int phase, uint64_t start,
                        uint64_t ts) {
  const char *name = rules_on_phases(O.rules)
                         ? eventring_cursor_phase_name(t->cursor, phase)
                         : NULL;
  if (name) rules_phase(t->rules, d, name, ts, start);
}

static void user_event(struct target *t, int d, unsigned type,
                       const uint64_t *ev, unsigned len) {
  static const enum rules_user_kind kind[] = {
      [ER_UEV_UNIT] = RULES_UNIT, [ER_UEV_INT] = RULES_INT,
      [ER_UEV_SPAN_BEGIN] = RULES_SPAN_BEGIN,
      [ER_UEV_SPAN_END] = RULES_SPAN_END, [ER_UEV_CUSTOM] = RULES_CUSTOM};
  if (type >= sizeof kind / sizeof kind[0]) return;
  if (type == ER_UEV_INT && len < 3) type = ER_UEV_UNIT;
  rules_user(t->rules, d, ev[1], kind[type], t->uname ? t->uname : "",
             type == ER_UEV_INT ? (int64_t)ev[2] : 0);
}

static int sink_user_name(void *arg, int id, const char *name) {
  (void)id;
  ((struct target *)arg)->uname = name;
  return 0;
}

static int sink_event(void *arg, int domain, const uint64_t *ev,
                      unsigned len) {
  struct target *t = arg;
  struct dbuf *b = domain < t->maxd ? dbuf_of(t, domain) : NULL;
  if (!b) return EVENTRING_E_CORRUPT; /* the cursor checks domains */
  if (append(b, ev, len) < 0) return -ENOMEM;
  uint64_t h = ev[0], ts = ev[1];
  unsigned type = ER_HDR_TYPE(h), id = ER_HDR_ID(h);
  if (ts > t->max_ts) t->max_ts = ts;
  b->last_ts = ts;
  rules_time(t->rules, domain, ts);
  if (ER_HDR_IS_USER(h)) {
    user_event(t, domain, type, ev, len);
  } else if (type == ER_EV_BEGIN) {
    pauses_begin(&t->pauses, domain, ts, (int)id);
  } else if (type == ER_EV_END) {
    uint64_t start;
    t->cur_ts = ts;
    if (pauses_end(&t->pauses, domain, ts, (int)id, &start))
      check_phase(t, domain, (int)id, start, ts);
  } else if (type == ER_EV_LIFECYCLE) {
    pauses_lifecycle(&t->pauses, domain, (int)id);
    if (id == EVENTRING_LIFECYCLE_RING_PAUSE ||
        id == EVENTRING_LIFECYCLE_DOMAIN_SPAWN ||
        id == EVENTRING_LIFECYCLE_DOMAIN_TERMINATE)
      rules_cut(t->rules, domain);
  }
  t->uname = NULL;
  trim_age(t, domain);
  /* Before the next event could take the buffers past the bound, so that
   * a bound that is a power of two is also the buffers' size. */
  if (W.words + ER_MAX_EVENT_WORDS > O.max_words) trim_room();
  return 0;
}

static int sink_lost(void *arg, int domain, uint64_t count) {
  struct target *t = arg;
  if (t->src) tool_source_lost(t->src, domain, count);
  if (t->summarise)
    tool_count_lost(t->cursor, &t->lost_total, &t->lost, &t->nlost_d, domain,
                    count);
  struct dbuf *b = domain < t->maxd ? dbuf_of(t, domain) : NULL;
  if (!b) return 0;
  pauses_cut(&t->pauses, domain);
  rules_cut(t->rules, domain);
  uint64_t at = b->last_ts ? b->last_ts : t->max_ts;
  uint64_t ev[3] = {LOST_HDR, at, count};
  if (append(b, ev, 3) < 0) return -ENOMEM;
  /* Losses in the first poll are the history that the ring had turned
   * over before we came: no news. */
  if (!t->started)
    return 0;
  rules_lost(t->rules, domain, at, count);
  return 0;
}

static struct target *target_new(eventring_cursor *c, int own,
                                 const char *path, pid_t pid,
                                 const char *program) {
  struct target *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->cursor = c;
  t->own_cursor = own;
  snprintf(t->path, sizeof t->path, "%s", path);
  t->pid = pid;
  snprintf(t->program, sizeof t->program, "%s", program ? program : "");
  t->sink.event = sink_event;
  t->sink.user_name = sink_user_name;
  t->sink.lost = sink_lost;
  t->sink.arg = t;
  t->maxd = eventring_cursor_max_domains(c);
  if (t->maxd < 1) t->maxd = 1;
  if (pauses_init(&t->pauses, c, t->maxd, on_pause, t) < 0) {
    pauses_free(&t->pauses);
    free(t);
    return NULL;
  }
  t->pauses.live = 1;
  t->have_pauses = 1;
  t->rules = rules_eval_new(O.rules, t->maxd, tool_lost_unit(c), on_rule, t);
  if (!t->rules || !(t->enc = er_snap_encoder_new(&t->sink))) {
    rules_eval_free(t->rules);
    pauses_free(&t->pauses);
    free(t);
    return NULL;
  }
  eventring_cursor_set_numbering(c, O.numbering);
  t->next = W.targets;
  W.targets = t;
  return t;
}

/* Frees what `t` holds but its place in the list (a retired target of
 * --dir stays, so that its file is not read again). */
static void target_release(struct target *t) {
  for (int d = 0; d < t->nd; d++) {
    W.words -= t->d[d].tail - t->d[d].head;
    free(t->d[d].w);
  }
  free(t->d);
  t->d = NULL;
  t->nd = 0;
  rules_eval_free(t->rules);
  t->rules = NULL;
  if (t->have_pauses) pauses_free(&t->pauses);
  t->have_pauses = 0;
  while (t->wins) {
    struct window *w = t->wins;
    t->wins = w->next;
    free(w->lost);
    free(w);
  }
  er_snap_encoder_free(t->enc);
  t->enc = NULL;
  if (t->own_cursor) eventring_cursor_free(t->cursor);
  t->cursor = NULL;
  t->retired = 1;
}

static void target_unlink(struct target *t) {
  for (struct target **tp = &W.targets; *tp; tp = &(*tp)->next)
    if (*tp == t) {
      *tp = t->next;
      break;
    }
  if (!t->retired) target_release(t);
  free(t->lost);
  free(t);
}

/* Polls `t` once.  Returns the poll's result. */
static int poll_target(struct target *t) {
  int r = eventring_cursor_poll(t->cursor, er_snap_encoder_callbacks(t->enc),
                                er_snap_encoder_data(t->enc), 0);
  int e = er_snap_encoder_error(t->enc);
  return e ? e : r;
}

/* The reading is over for `t`: what its windows hold is all there
 * will be. */
static void finish_target(struct target *t) {
  /* The rules see the process's last slices; what they fire opens
   * windows that the events read already complete. */
  if (t->rules) rules_finish(t->rules);
  /* Complete up to the last event read. */
  while (t->wins) close_window(t);
  if (t->summarise) {
    char label[TOOL_TEXT_BUF(sizeof t->program) + 32];
    char shown[TOOL_TEXT_BUF(sizeof t->program)];
    snprintf(label, sizeof label, "pid %ld (%s): ", (long)t->pid,
             tool_text(shown, sizeof shown, t->program, TOOL_TEXT_UTF8));
    tool_lost_lines(stderr, t->cursor, t->path, label, t->lost_total,
                    t->lost, t->nlost_d);
    t->summarise = 0;
  }
}

/* Whether every event of window `w` has been read, so that it can be
 * written.  A domain's events are read in the order of their timestamps,
 * so a domain read past the end has given the window all it will.  One
 * that wrote in the window and nothing past it yet may have gone idle, or
 * its thread may have been stopped (a loaded machine) between taking an
 * event's timestamp and storing the event: it is waited for until
 * QUIET_SETTLE_NS past the end, and then taken to be idle.  A domain with
 * nothing in the window has nothing for it.  Either way a poll must have
 * started EVENT_SETTLE_NS past the end; events far past it on any domain
 * (a clock that is not ours) end the wait at once. */
static int read_through(const struct target *t, const struct window *w) {
  if (t->max_ts > w->end + EVENT_CLOCK_SLACK_NS) return 1;
  if (!W.prev_tick || W.prev_tick <= w->end + EVENT_SETTLE_NS) return 0;
  if (W.prev_tick > w->end + QUIET_SETTLE_NS) return 1;
  for (int d = 0; d < t->nd; d++) {
    uint64_t last = t->d[d].last_ts;
    if (last && last >= w->start && last <= w->end) return 0;
  }
  return 1;
}

/* After each poll: SIGUSR1, windows whose events have all been read, the
 * age of idle domains. */
static void tick(void) {
  uint64_t now = tool_now_ns();
  int usr1 = W.usr1;
  if (usr1) W.usr1 = 0;
  for (struct target *t = W.targets; t; t = t->next) {
    if (t->retired) continue;
    if (usr1) trigger(t, &by_hand, 0, now, now, "");
    t->started = 1;
    while (t->wins && read_through(t, t->wins)) close_window(t);
    for (int d = 0; d < t->nd; d++) trim_age(t, d);
  }
  if (A.on) tool_run_poll();
  W.prev_tick = now;
}

static void between_polls(struct tool_source *src, void *data) {
  (void)src, (void)data;
  tick();
}

/* ------------------------------------------------------------------ */
/* --dir alone.                                                         */

static int first_scan;

static void scan_still(void *arg, void *handle) {
  (void)arg;
  struct target *t = handle;
  t->seen = 1;
}

/* The target is the file's handle for dirscan.c: a target stays in the
 * list (retired or not) until a scan no longer sees its file. */
static void *scan_found(void *arg, eventring_cursor *c, const char *path,
                        pid_t pid, const struct stat *st) {
  (void)arg;
  char prog[64];
  tool_process_name(pid, prog, sizeof prog);
  if (!prog[0]) {
    const char *p = eventring_cursor_program(c);
    snprintf(prog, sizeof prog, "%s", p ? p : "");
  }
  struct target *t = target_new(c, 1, path, pid, prog);
  if (!t) return NULL;
  t->dev = st->st_dev;
  t->ino = st->st_ino;
  t->seen = 1;
  t->summarise = W.tree;
  /* Files that dead processes left before we started are history, not
   * news; one that appears while we watch is read even if its writer
   * has already gone. */
  if (first_scan && tool_process_gone(pid)) target_release(t);
  return t;
}

/* Whether the directory changed (inotify: a file created or moved in)
 * while we waited at most `ns` for it; a plain sleep without inotify. */
static int dir_changed(int ifd, long ns) {
  if (ifd < 0) {
    struct timespec ts = {0, ns};
    if (ns) nanosleep(&ts, NULL);
    return 0;
  }
  struct pollfd pfd = {ifd, POLLIN, 0};
  if (ns && poll(&pfd, 1, (int)(ns / 1000000)) <= 0) return 0;
  char buf[4096];
  int changed = 0;
  while (read(ifd, buf, sizeof buf) > 0) changed = 1;
  return changed;
}

/* Follows every ring file that appears in `dir` until interrupted, or,
 * with `cmd` (the source of a command, whose tree writes into `dir`),
 * until the whole tree has ended and its files are read to the end.
 * Returns the exit status (128 + the signal when interrupted). */
static int follow_dir(const char *dir, struct tool_source *cmd) {
  int rc = tool_dirscan_check(dir, "watch");
  if (rc != TOOL_EXIT_OK) return rc;
  /* A new file is scanned for at once rather than at the next period, so
   * that a process that lives a tenth of a second is seen. */
  int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (ifd >= 0 && inotify_add_watch(ifd, dir, IN_CREATE | IN_MOVED_TO) < 0) {
    close(ifd);
    ifd = -1;
  }
  struct tool_dirscan ds = {dir, "watch", NULL, 0, 0};
  static const struct tool_dirscan_ops ops = {scan_still, scan_found};
  tool_signals_install();
  struct sigaction old;
  catch_usr1(&old);
  if (!cmd)
    tool_error("watch: watching %s for new ring files; snapshots go to %s",
               dir, O.out);
  uint64_t next_scan = 0;
  /* Every file of a command's tree is news, even one whose writer
   * ended before the first scan. */
  first_scan = !cmd;
  W.tree = cmd != NULL;
  int tree_done = 0;
  while (!tool_signal_pending()) {
    uint64_t now = tool_now_ns();
    /* Once the tree has ended, one more scan finds its last files, and
     * the loop below reads every file to its end. */
    if (cmd && !tree_done && tool_spawn_tree_done(cmd)) {
      tree_done = 1;
      next_scan = 0;
    }
    if (now >= next_scan || tree_done) {
      for (struct target *t = W.targets; t; t = t->next) t->seen = 0;
      int refused = tool_dirscan(&ds, &ops, NULL);
      first_scan = 0;
      next_scan = now + (refused && ifd >= 0 ? RESCAN_NS : SCAN_NS);
      for (struct target *t = W.targets, *n; t; t = n) {
        n = t->next;
        if (!t->seen) {
          /* The file is gone: read what it had, write what is open. */
          if (!t->retired) {
            while (poll_target(t) > 0) {
            }
            finish_target(t);
          }
          target_unlink(t);
        } else if (!t->retired && tool_process_gone(t->pid)) {
          while (poll_target(t) > 0) {
          }
          finish_target(t);
          target_release(t);
        }
      }
    }
    int any = 0;
    for (struct target *t = W.targets; t; t = t->next) {
      if (t->retired) continue;
      int r = poll_target(t);
      if (r > 0) any = 1;
      if (r < 0) {
        tool_error("watch: %s: %s (no longer read)", t->path,
                   eventring_strerror(r));
        finish_target(t);
        target_release(t);
      }
    }
    tick();
    if (tree_done) {
      /* Every writer has ended: what the files hold is all there is. */
      for (struct target *t = W.targets; t; t = t->next)
        if (!t->retired)
          while (poll_target(t) > 0) {
          }
      break;
    }
    if (dir_changed(ifd, any ? 0 : IDLE_NS)) next_scan = 0;
  }
  if (ifd >= 0) close(ifd);
  for (struct target *t = W.targets; t; t = t->next)
    if (!t->retired) finish_target(t);
  int sig = tool_signal_pending();
  sigaction(SIGUSR1, &old, NULL);
  if (!cmd) tool_signals_restore();
  tool_dirscan_free(&ds);
  return sig ? 128 + sig : TOOL_EXIT_OK;
}

/* ------------------------------------------------------------------ */
/* Recorded files.                                                      */

/* Makes the file of cursor `c` the one target `t` reads now: its names,
 * its wall clock. */
static void target_file(struct target *t, eventring_cursor *c,
                        const char *path) {
  t->cursor = c;
  snprintf(t->path, sizeof t->path, "%s", path);
  t->has_wall = tool_wall_offset(c, &t->wall_off) == 0;
}

/* The stream of `t` has been read through: its windows are written. */
static void end_stream(struct target *t) {
  finish_target(t);
  target_unlink(t);
}

/* Reads the files of `src` (a multi source, in the order of the command
 * line or of the names in a directory) to their end: the files of one
 * process (input/'s tool_same_writer: `eventring record`'s rotated
 * files, in record's order, copies left out) are one stream, its
 * windows and rules carried from one file to the next, cut where files
 * of it are missing.  Windows are
 * written once events more than EVENT_CLOCK_SLACK_NS past their end
 * have been read (the live rule for a clock that is not ours: here, no
 * clock is), checked after each file, and at the end of the stream.
 * Returns the exit status. */
static int read_files(struct tool_source *src) {
  int rc = TOOL_EXIT_OK;
  W.files = 1;
  for (int i = 0; i < src->nprocs && rc == TOOL_EXIT_OK; i++) {
    struct tool_proc *p = src->procs[i];
    struct target *t = NULL;
    int nfiles = p->nsegs ? p->nsegs : 1;
    for (int k = 0; k < nfiles && rc == TOOL_EXIT_OK; k++) {
      if (p->nsegs && p->segs[k].copy) continue;
      const char *path = p->nsegs ? p->segs[k].path : p->path;
      eventring_cursor **slot = p->nsegs ? &p->segs[k].cursor : &p->cursor;
      int r = *slot ? 0 : eventring_cursor_open_file(slot, path);
      if (r < 0) {
        char why[256];
        *slot = NULL;
        tool_error("watch: %s: %s", path,
                   tool_ring_error(path, r, why, sizeof why));
        rc = TOOL_EXIT_INPUT;
        break;
      }
      eventring_cursor *c = *slot;
      eventring_cursor_set_numbering(c, O.numbering);
      if (!t) {
        const char *prog = eventring_cursor_program(c);
        if (!prog || !*prog) prog = p->name;
        pid_t pid = eventring_cursor_writer_pid(c);
        if (!(t = target_new(c, 0, path, pid ? pid : p->pid, prog))) {
          tool_error("out of memory");
          rc = TOOL_EXIT_INPUT;
          break;
        }
        /* A file's losses are its own, not a ring's past. */
        t->started = 1;
      }
      target_file(t, c, path);
      /* Files of it are missing before this one: what they held is
       * unknown, a loss in every domain (input/procs.c's rule), so no
       * span or pause is matched across. */
      for (int d = 0; p->nsegs && p->segs[k].gap && d < t->maxd; d++)
        if (sink_lost(t, d, 0) < 0) rc = TOOL_EXIT_INPUT;
      if (p->nsegs) p->seg = k; /* for the summary's lines on gaps */
      while ((r = poll_target(t)) > 0 && !tool_signal_pending()) {
      }
      if (r < 0) {
        tool_poll_error(path, r);
        rc = TOOL_EXIT_INPUT;
      }
      if (tool_signal_pending()) rc = 128 + tool_signal_pending();
      while (t->wins && t->max_ts > t->wins->end + EVENT_CLOCK_SLACK_NS)
        close_window(t);
      for (int d = 0; d < t->nd; d++) trim_age(t, d);
      /* Read through: its descriptor for the next (the cursor still
       * names what it read). */
      eventring__cursor_release(c);
    }
    if (t) end_stream(t);
  }
  /* Where files were missing or read twice. */
  tool_procs_join_summary(src, stderr);
  return rc;
}

/* ------------------------------------------------------------------ */

/* What the options set up for the log and the actions, undone. */
static void actions_free(void) {
  tool_cmdline_free(&A.cmd);
  eventlog_close(&L);
}

static int watch(int argc, char **argv) {
  enum {
    OPT_WHEN = TOOL_OPT_OWN,
    OPT_BEFORE,
    OPT_AFTER,
    OPT_EVERY,
    OPT_MAX,
    OPT_FORMAT,
    OPT_MAX_MEMORY,
    OPT_EXEC,
    OPT_EXEC_TIMEOUT,
    OPT_EXEC_MAX,
    OPT_LOG_FORMAT,
    OPT_LOG,
    OPT_LABEL
  };
  /* The source options but --follow, which is always on. */
  static const struct option longopts[] = {
      {"when", required_argument, NULL, OPT_WHEN},
      {"before", required_argument, NULL, OPT_BEFORE},
      {"after", required_argument, NULL, OPT_AFTER},
      {"every", required_argument, NULL, OPT_EVERY},
      {"max", required_argument, NULL, OPT_MAX},
      {"output", required_argument, NULL, 'o'},
      /* The name it had before -o, every other output's option. */
      {"out", required_argument, NULL, 'o'},
      {"format", required_argument, NULL, OPT_FORMAT},
      {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
      {"dir", required_argument, NULL, TOOL_OPT_DIR},
      {"pid", required_argument, NULL, TOOL_OPT_PID},
      {"ocaml50", no_argument, NULL, TOOL_OPT_OCAML50},
      {"ocaml53", no_argument, NULL, TOOL_OPT_OCAML53},
      {"help", no_argument, NULL, 'h'},
      {"exec", required_argument, NULL, OPT_EXEC},
      {"exec-timeout", required_argument, NULL, OPT_EXEC_TIMEOUT},
      {"exec-max", required_argument, NULL, OPT_EXEC_MAX},
      {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
      {"log", required_argument, NULL, OPT_LOG},
      {"label", required_argument, NULL, OPT_LABEL},
      {NULL, 0, NULL, 0},
  };
  struct tool_source src;
  memset(&src, 0, sizeof src);
  memset(&O, 0, sizeof O);
  if (!(O.rules = rules_new())) {
    tool_error("out of memory");
    return TOOL_EXIT_INPUT;
  }
  memset(&W, 0, sizeof W);
  memset(&A, 0, sizeof A);
  eventlog_init(&L);
  A.timeout = DEFAULT_EXEC_TIMEOUT_NS;
  A.max = DEFAULT_EXEC_MAX;
  const char *log_path = NULL;
  O.before = DEFAULT_BEFORE_NS;
  O.after = DEFAULT_AFTER_NS;
  O.every = DEFAULT_EVERY_NS;
  O.max = DEFAULT_MAX;
  O.out = ".";
  uint64_t max_memory = DEFAULT_MAX_MEMORY;
  char why[256];
  int c, rc;
  while ((c = tool_getopt(argc, argv, ":ho:", longopts)) != -1) {
    uint64_t *dur = c == OPT_BEFORE  ? &O.before
                    : c == OPT_AFTER ? &O.after
                    : c == OPT_EVERY ? &O.every
                                     : NULL;
    if (c == OPT_WHEN) {
      if ((rc = parse_cond(optarg)) != 0) return rc;
    } else if (dur) {
      if (tool_parse_duration(optarg, dur, why, sizeof why))
        return tool_usage_error(HELP_REF, "--%s: %s",
                                c == OPT_BEFORE  ? "before"
                                : c == OPT_AFTER ? "after"
                                                 : "every",
                                why);
    } else if (c == OPT_MAX) {
      char *end;
      errno = 0;
      long v = strtol(optarg, &end, 10);
      if (end == optarg || *end || errno || v < 1)
        return tool_usage_error(HELP_REF, "invalid --max '%s' (a number of "
                                "snapshots, at least 1)", optarg);
      O.max = v;
    } else if (c == 'o') {
      O.out = optarg;
    } else if (c == OPT_FORMAT) {
      size_t i = 0;
      while (i < 3 && strcmp(optarg, format_names[i])) i++;
      if (i == 3)
        return tool_usage_error(HELP_REF, "unknown format '%s' (events, fxt "
                                "or json)", optarg);
      O.format = (enum format)i;
    } else if (c == OPT_MAX_MEMORY) {
      if (tool_parse_size(optarg, &max_memory) || max_memory < (1u << 20))
        return tool_usage_error(HELP_REF, "invalid --max-memory '%s' (a size "
                                "of at least 1M, e.g. 64M)", optarg);
    } else if (c == OPT_EXEC) {
      tool_cmdline_free(&A.cmd);
      if (tool_cmdline_parse(optarg, &A.cmd, why, sizeof why))
        return tool_usage_error(HELP_REF, "--exec '%s': %s", optarg, why);
      A.on = 1;
    } else if (c == OPT_EXEC_TIMEOUT) {
      if (tool_parse_duration(optarg, &A.timeout, why, sizeof why))
        return tool_usage_error(HELP_REF, "--exec-timeout: %s", why);
      if (!A.timeout)
        return tool_usage_error(HELP_REF, "--exec-timeout: a timeout above "
                                "0, e.g. 60s");
    } else if (c == OPT_EXEC_MAX) {
      char *end;
      errno = 0;
      long v = strtol(optarg, &end, 10);
      if (end == optarg || *end || errno || v < 1 || v > TOOL_RUN_MAX)
        return tool_usage_error(HELP_REF, "invalid --exec-max '%s' (a "
                                "number of commands, 1 to %d)", optarg,
                                TOOL_RUN_MAX);
      A.max = (int)v;
    } else if (c == OPT_LOG_FORMAT) {
      if (strcmp(optarg, "text") && strcmp(optarg, "json"))
        return tool_usage_error(HELP_REF, "unknown --log-format '%s' (text "
                                "or json)", optarg);
      L.json = !strcmp(optarg, "json");
    } else if (c == OPT_LOG) {
      log_path = optarg;
    } else if (c == OPT_LABEL) {
      if (tool_labels_add(&L.labels, optarg, NULL, why, sizeof why))
        return tool_usage_error(HELP_REF, "--label: %s", why);
    } else if ((rc = tool_source_other(&src, c, argv, HELP_REF, help)) >= 0) {
      return rc;
    }
  }
  if (!O.nconds)
    return tool_usage_error(HELP_REF, "no condition given (--when COND, e.g. "
                            "--when 'pause>10ms')");
  if (!*O.out) return tool_usage_error(HELP_REF, "empty output directory");
  /* The labels go into every snapshot too: what its metadata takes. */
  struct er_snap *probe = L.labels.n ? er_snap_new() : NULL;
  for (int i = 0; probe && i < L.labels.n; i++) {
    int e = er_snap_label(probe, L.labels.name[i], L.labels.value[i]);
    if (e) {
      er_snap_free(probe);
      if (e == -ENOSPC)
        return tool_usage_error(HELP_REF, "--label: %s=%s: the labels "
                                "exceed the %d bytes or %d labels a "
                                "snapshot holds", L.labels.name[i],
                                L.labels.value[i], ER_MD_LABEL_BYTES,
                                ER_EXT_MAX_LABELS);
      return tool_usage_error(HELP_REF, "--label: %s=%s: a value is not "
                              "empty and holds no control character",
                              L.labels.name[i], L.labels.value[i]);
    }
  }
  er_snap_free(probe);
  O.max_words = max_memory / 8;
  O.numbering = tool_source_numbering(&src);
  /* The directory first: a wrong one is reported before a command runs. */
  rc = tool_output_dir(O.out, "watch: -o");
  if (rc != TOOL_EXIT_OK) return rc;
  if (log_path && (rc = eventlog_open(&L, log_path)) < 0) {
    tool_error("watch: --log %s: %s", log_path, strerror(-rc));
    return TOOL_EXIT_INPUT;
  }
  if (A.on) tool_run_setup(A.max, A.timeout, action_done, NULL);

  if (optind < argc) {
    /* Recorded files (a directory: its *.events files), read through. */
    src.multi = 1;
    src.progress = -1;
    rc = tool_source_open(&src, argc - optind, argv + optind, HELP_REF);
    if (rc != TOOL_EXIT_OK) return rc;
    rc = read_files(&src);
    tool_source_close(&src);
  } else if (src.dir && !src.pid_arg) {
    rc = follow_dir(src.dir, NULL);
  } else if (tool_source_command_given()) {
    /* Every process of the command's tree writes its file into the
     * private directory (spawn.c): each is followed as --dir follows a
     * directory, named after the program it runs. */
    src.multi = 1;
    src.follow = 1;
    src.progress = -1;
    rc = tool_source_open(&src, 0, argv + optind, HELP_REF);
    if (rc != TOOL_EXIT_OK) return rc;
    tool_error("watch: watching %s and every process it starts; snapshots "
               "go to %s", src.name[0] ? src.name : "the command", O.out);
    rc = follow_dir(tool_spawn_dir(), &src);
    while (W.targets) target_unlink(W.targets);
    tool_source_close(&src);
  } else {
    src.follow = 1;
    src.progress = -1;
    rc = tool_source_open(&src, 0, argv + optind, HELP_REF);
    if (rc != TOOL_EXIT_OK) return rc;
    const char *prog =
        src.name[0] ? src.name : eventring_cursor_program(src.cursor);
    struct target *t = target_new(src.cursor, 0, src.path, src.pid, prog);
    if (!t) {
      tool_error("out of memory");
      tool_source_close(&src);
      return TOOL_EXIT_INPUT;
    }
    t->src = &src;
    struct sigaction old;
    catch_usr1(&old);
    tool_error("watch: watching %s (pid %ld); snapshots go to %s",
               t->program[0] ? t->program : "unknown", (long)t->pid, O.out);
    src.between_polls = between_polls;
    rc = tool_source_read(&src, er_snap_encoder_callbacks(t->enc),
                          er_snap_encoder_data(t->enc));
    finish_target(t);
    tool_source_lost_summary(&src, stderr);
    sigaction(SIGUSR1, &old, NULL);
    target_unlink(t);
    tool_source_close(&src);
  }
  while (W.targets) target_unlink(W.targets);
  /* The commands of the last snapshots end (or time out) first. */
  if (A.on) tool_run_wait();
  /* A rule that could never hold: its event never came. */
  for (int i = 0; i < O.nconds; i++) {
    char unseen[256];
    if (!rules_unseen(O.rules, i, unseen, sizeof unseen)) continue;
    eventlog_text(&L, "watch: --when '%s' was never evaluated: no %s in "
                  "the events read", O.conds[i].text, unseen);
    eventlog_begin(&L, "rule_never_evaluated");
    eventlog_str(&L, "rule", O.conds[i].text);
    eventlog_str(&L, "missing", unseen);
    eventlog_end(&L);
  }
  rules_free(O.rules);
  if (rc == TOOL_EXIT_OK && W.failed) rc = TOOL_EXIT_INPUT;
  log_summary(rc);
  return rc;
}

int tool_watch(int argc, char **argv) {
  int rc = watch(argc, argv);
  actions_free();
  return rc;
}
