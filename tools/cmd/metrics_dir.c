/* metrics_dir.c -- `eventring metrics --dir DIR` alone: following every
 * ring file of a directory (dirscan.c finds them) into the exporter's
 * series (metrics.c's state, analysis/'s metricset.c).
 *
 * The directory is scanned every SCAN_NS for files named <pid>.events,
 * each gets a cursor and a target (a set of series labelled with its pid
 * and program), and each poll reads at most POLL_BATCH events under the
 * state's mutex so that a scrape never waits long.  A file that
 * disappears (its process exited and removed it) is drained one last
 * time and keeps its final values for --keep seconds, so that at least
 * one scrape can see how the process ended.  A process that stops
 * tracing and starts again writes a new file for the same pid: the same
 * process (pid, start time and program) keeps its target, which reads
 * the new file after the rest of the old one, so that its counters and
 * histograms are sums over its sessions and never go back (rebind());
 * another process given the pid is a new target.  Files that cannot be
 * read (another user's, a half-written one that stays malformed) are
 * reported once each, and cost next to nothing afterwards (dirscan.c).
 * A file whose process is dead is read to its end and closed at once,
 * its series kept while the file stays: only the files of live processes
 * hold a descriptor, so a directory of more stale files than descriptors
 * does not keep a live process's file from being read.
 */
#include "cmd/cmd.h"

#ifdef EVENTRING_HAVE_MICROHTTPD

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "starttime.h"

/* How often the directory is scanned for files that appeared or
 * vanished. */
#define SCAN_NS 250000000ULL
/* How long the reader sleeps when no ring had anything new. */
#define IDLE_NS 10000000L
/* Events read per poll under the mutex. */
#define POLL_BATCH 65536

/* What a scan needs besides the callbacks' own. */
struct dir_follow {
  struct metrics_state *m;
  const eventring_callbacks *cb;
  struct tool_dirscan scan;
};

/* Reads `t`'s file to its current end, a batch at a time under the lock
 * so that scrapes go on between batches.  Needs the lock not held. */
static void drain(struct metrics_state *m, struct metrics_target *t,
                  const eventring_callbacks *cb) {
  int r;
  do {
    pthread_mutex_lock(&m->lock);
    r = eventring_cursor_poll(t->cursor, cb, t, POLL_BATCH);
    pthread_mutex_unlock(&m->lock);
  } while (r > 0);
}

/* Reads what is left in `t`'s file and closes it: its process is dead,
 * so nothing more will come.  Its series stay (until the file goes and
 * --keep has passed); it no longer holds a descriptor. */
static void end_target(struct metrics_state *m, struct metrics_target *t,
                       const eventring_callbacks *cb) {
  drain(m, t, cb);
  pthread_mutex_lock(&m->lock);
  metrics_target_close(t);
  t->ended = 1;
  pthread_mutex_unlock(&m->lock);
}

/* Makes cursor `c` on `path` the file of `t`, whose process started
 * tracing again: what the earlier file holds is read first and joins
 * the totals.  Returns 0, or -1 when out of memory (`t` is then
 * unchanged but for its earlier file, closed). */
static int rebind(struct metrics_state *m, struct metrics_target *t,
                  eventring_cursor *c, const char *path,
                  const struct stat *st, const eventring_callbacks *cb) {
  if (t->cursor && !t->failed) drain(m, t, cb);
  pthread_mutex_lock(&m->lock);
  metrics_target_close(t);
  int r = metrics_target_rebind(t, c, path, m->numbering);
  if (r == 0) {
    t->dev = st->st_dev;
    t->ino = st->st_ino;
  }
  pthread_mutex_unlock(&m->lock);
  return r;
}

/* Whether the file `t` read is still at its path (not removed, not
 * replaced by another). */
static int file_still_there(const struct metrics_target *t) {
  struct stat st;
  return lstat(t->path, &st) == 0 && st.st_dev == t->dev &&
         st.st_ino == t->ino;
}

/* The target is the file's handle for dirscan.c: it is freed only after
 * a scan that no longer sees the file (scan() marks it gone). */
static void scan_still(void *arg, void *handle) {
  (void)arg;
  struct metrics_target *t = handle;
  t->seen = 1;
}

static void *scan_found(void *arg, eventring_cursor *c, const char *path,
                        pid_t pid, const struct stat *st) {
  struct dir_follow *f = arg;
  struct metrics_state *m = f->m;
  uint64_t start = 0;
  int start_known = er_proc_start_time(pid, &start) == 0;
  char prog[64];
  tool_process_name(pid, prog, sizeof prog);
  /* A file of a process we already follow is its next tracing session
   * (stop, then start again, makes a new file): it goes on feeding the
   * same series, so that their counters stay monotonic.  While the
   * earlier file is still there and its session not over, the new one
   * is another name for the same writer (a leading 0): declined. */
  for (struct metrics_target *t = m->set.targets; t; t = t->next) {
    if (t->pid != pid || t->ended || t->start_known != start_known ||
        (start_known && t->start_time != start) ||
        strcmp(t->program, prog) != 0)
      continue;
    if (!t->gone && !t->stopped && file_still_there(t)) return NULL;
    if (rebind(m, t, c, path, st, f->cb) < 0) return NULL;
    t->seen = 1;
    if (tool_process_gone(pid)) end_target(m, t, f->cb);
    return t;
  }
  /* Another process's file under this pid must not give a second series
   * with the same labels either: while a file of the earlier one is
   * there under another name, the new one waits. */
  for (struct metrics_target *t = m->set.targets; t; t = t->next)
    if (t->pid == pid && !t->gone && strcmp(t->path, path) != 0)
      return NULL;
  struct metrics_target *t =
      metrics_target_new(c, 1, path, pid, prog, m->numbering);
  if (!t) return NULL;
  t->dev = st->st_dev;
  t->ino = st->st_ino;
  t->start_time = start;
  t->start_known = start_known;
  t->seen = 1;
  pthread_mutex_lock(&m->lock);
  for (struct metrics_target **tp = &m->set.targets; *tp;) {
    struct metrics_target *old = *tp;
    if (old->pid == pid) {
      *tp = old->next;
      metrics_target_free(old);
    } else {
      tp = &old->next;
    }
  }
  t->next = m->set.targets;
  m->set.targets = t;
  pthread_mutex_unlock(&m->lock);
  /* A dead process's file is read now and closed, so that a directory
   * of them never holds more than one descriptor at a time. */
  if (tool_process_gone(pid)) end_target(m, t, f->cb);
  return t;
}

static void scan(struct dir_follow *f, uint64_t now, uint64_t keep_ns) {
  static const struct tool_dirscan_ops ops = {scan_still, scan_found};
  struct metrics_state *m = f->m;
  struct metrics_target *t;
  for (t = m->set.targets; t; t = t->next) t->seen = 0;
  tool_dirscan(&f->scan, &ops, f);
  /* Processes that died since the last scan: their files are complete. */
  for (t = m->set.targets; t; t = t->next)
    if (t->seen && t->cursor && !t->failed && tool_process_gone(t->pid))
      end_target(m, t, f->cb);
  /* Files that vanished keep their last values for keep_ns. */
  pthread_mutex_lock(&m->lock);
  for (struct metrics_target **tp = &m->set.targets; *tp;) {
    t = *tp;
    if (!t->gone && !t->seen) {
      t->gone = 1;
      t->gone_ns = now;
    }
    if (t->gone && now - t->gone_ns >= keep_ns) {
      *tp = t->next;
      metrics_target_free(t);
    } else {
      tp = &t->next;
    }
  }
  pthread_mutex_unlock(&m->lock);
}

int metrics_follow_dir(struct metrics_state *m, const char *dir,
                       uint64_t keep_ns, const eventring_callbacks *cb) {
  int rc = tool_dirscan_check(dir, "metrics");
  if (rc != TOOL_EXIT_OK) return rc;
  struct dir_follow f = {m, cb, {0}};
  f.scan.dir = dir;
  f.scan.who = "metrics";
  tool_signals_install();
  uint64_t next_scan = 0;
  while (!tool_signal_pending()) {
    uint64_t now = tool_now_ns();
    if (now >= next_scan) {
      /* Read what is there before a vanished file is marked gone, so
       * that its final events count. */
      for (struct metrics_target *t = m->set.targets; t; t = t->next) {
        if (t->gone || t->failed || !t->cursor) continue;
        drain(m, t, cb);
      }
      scan(&f, now, keep_ns);
      next_scan = now + SCAN_NS;
    }
    int any = 0;
    for (struct metrics_target *t = m->set.targets; t; t = t->next) {
      if (t->gone || t->failed || !t->cursor) continue;
      pthread_mutex_lock(&m->lock);
      int r = eventring_cursor_poll(t->cursor, cb, t, POLL_BATCH);
      pthread_mutex_unlock(&m->lock);
      if (r > 0) any = 1;
      if (r < 0) {
        t->failed = 1;
        tool_error("metrics: %s: %s (no longer read)", t->path,
                   eventring_strerror(r));
        /* Nothing more will be read from it: its descriptor goes. */
        pthread_mutex_lock(&m->lock);
        metrics_target_close(t);
        pthread_mutex_unlock(&m->lock);
      }
    }
    if (!any) {
      struct timespec ts = {0, IDLE_NS};
      nanosleep(&ts, NULL);
    }
  }
  tool_dirscan_free(&f.scan);
  /* Interrupted, as the other subcommands report it. */
  int sig = tool_signal_pending();
  tool_signals_restore();
  return 128 + sig;
}

#endif /* EVENTRING_HAVE_MICROHTTPD */
