/* procs.c -- several processes in one report.
 *
 * A subcommand that reports on several processes (trace, dump, stats,
 * latency: src->multi) reads, instead of one ring file:
 *   - a list of files (`eventring trace -o out.fxt a.events b.events`);
 *   - every ring file in a directory (--dir DIR without --pid), as
 *     metrics --dir does; with --follow, the files that appear later too;
 *   - every process of a command's tree (`-- CMD`): the command runs with
 *     OCAML_RUNTIME_EVENTS_DIR pointing at a private directory (spawn.c),
 *     and every process that inherits the environment -- children,
 *     grandchildren, forked copies, programs they exec -- writes its file
 *     there;
 *   - or one file, --pid PID, as a single-process source does.
 * Each file is a process of the report (struct tool_proc), read through
 * its own cursor.  A program that execs another keeps its pid: the new
 * image's file takes the name <pid>.events, and the old image's file is
 * kept as <pid>.<N>.events (runtime/leftovers.c), so every image's file
 * is found whenever the scan (every poll round, POLL_IDLE_NS) comes.  A
 * file under such a name, or whose name now leads to another file, was
 * replaced: its writer is gone, so it is read to its end before any
 * later file of the same pid (a higher N; <pid>.events last), which is a
 * process of its own, is read at all.
 *
 * The common clock.  Every file's timestamps are CLOCK_MONOTONIC
 * nanoseconds, so events of several files need no conversion: a report
 * puts them on one time axis.  A cursor delivers a file's events in
 * order per domain; this loop keeps that order per process and, for the
 * files of one pid (an exec), reads the older file to its end before the
 * newer, so a track never goes back in time at a file boundary.  Within
 * a round the processes are read one after another: a report that needs
 * one order across processes sorts by timestamp itself.
 *
 * Joined files.  Read once through (FILEs, a directory named as a FILE),
 * the files of one writer (tool_same_writer: its pid, program, start
 * time and the instant its ring file was made, where the files record
 * them) are one process, however many files hold it: `eventring
 * record`'s rotated files.  They are read one after another in the
 * order of record's SEQ when every one has record's name
 * (PROGRAM-PID-SEQ-TIME.events), else of the command line (a
 * directory's: of the names), through one process, so that the
 * subcommands' spans, pauses and counts carry from one file to the
 * next, and their losses add up (record loses nothing between two
 * files: a boundary adds none).  Between two of them:
 *   - files are missing (SEQs between theirs, or below the first's,
 *     that no file given has: a file removed by hand, the oldest ones
 *     --keep removed): what they held is unknown.  Every domain of the
 *     process gets a loss of unknown size (count 0) before the next
 *     file's events, so spans and pauses open there count as cut, never
 *     matched across the gap; the summary says where files are missing.
 *     SEQ counts every process of a run together, so another process's
 *     missing file may pass for one of this one's: its spans are then
 *     cut for nothing, never invented.
 *   - the same events twice (a file copied twice, snapshots that
 *     overlap): a file with the bytes of an earlier one is not read;
 *     otherwise, unless every file has record's name (then none repeats
 *     another), the events of a domain earlier than the last one
 *     delivered in that domain, at the start of a file, are skipped
 *     (counted, and said in the summary).
 *
 * Descriptors.  Read once through (files, --dir without --follow), a
 * file read to its end is released (eventring__cursor_release: the
 * cursor keeps what the reports ask it later, the descriptor and the
 * mapping go), so a directory of more files than descriptors is read
 * whole: the files past the limit wait without a cursor and are opened,
 * in pid order, as earlier ones are released.  Followed, a file stays
 * open while its writer may write, and one that cannot be opened is an
 * error (report_nofile), never a silent gap in the report.
 *
 * When reading ends.  Without --follow (files, --dir): once a poll of
 * every file finds nothing new.  With --follow: once every file's writer
 * is gone (tool_writer_gone) and its file drained; a file that names no
 * pid is followed until its ring_stop.  For a command: the tool is the
 * tree's subreaper (spawn.c), so the tree has ended once the command and
 * every orphan adopted from it are reaped; then the files are drained
 * and reading ends.  Processes of the tree may outlive the command (`sh
 * -c 'prog &'`): they are waited for, but at most --drain-timeout after
 * the command ended (TOOL_DRAIN_DEFAULT_NS), after which one line names
 * the processes still running and the report ends with what they wrote
 * so far.  They are left running.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "input/input.h"

/* As source.c: the period of the reading loop when nothing is new. */
#define POLL_IDLE_NS 10000000L
/* As source.c: how long an interrupted command may go on. */
#define KILL_GRACE_NS 3000000000ULL

enum { P_LIVE, P_GONE, P_DONE };

/* What scanning a directory needs beyond dirscan.c's state. */
struct tool_dirscan_state {
  struct tool_dirscan d;
  char dir[4096];
  int swept;  /* sweep() has run */
  int nofile; /* files it could not open for want of descriptors */
  unsigned long scans; /* scans begun */
};

static int no_descriptor(int err) { return err == -EMFILE || err == -ENFILE; }

/* The line for `n` ring files of `dir` that could not be opened for
 * want of descriptors (of `total`, when known). */
static void report_nofile(const char *dir, int n, int total) {
  struct rlimit rl;
  char limit[64] = "";
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    snprintf(limit, sizeof limit, " (the limit on open files is %llu)",
             (unsigned long long)rl.rlim_cur);
  if (total)
    tool_error("--dir: %d of the %d ring files in %s cannot be opened at "
               "once: no file descriptor left%s; nothing was reported: "
               "raise the limit (ulimit -n) or read fewer files at once",
               n, total, dir, limit);
  else
    tool_error("%d ring file%s in %s could not be read: no file "
               "descriptor left%s; raise the limit (ulimit -n)",
               n, n == 1 ? "" : "s", dir, limit);
}

const char *tool_proc_label(const struct tool_proc *p, char *buf, size_t n) {
  char name[TOOL_TEXT_BUF(sizeof p->name)];
  if (p->pid && p->name[0])
    snprintf(buf, n, "pid %ld (%s)", (long)p->pid,
             tool_text(name, sizeof name, p->name, TOOL_TEXT_UTF8));
  else if (p->pid)
    snprintf(buf, n, "pid %ld", (long)p->pid);
  else
    snprintf(buf, n, "%s", p->path);
  return buf;
}

/* Makes cursor `c` the one process `p` is read through, and takes from
 * it what the file says about its writer. */
static void attach(struct tool_source *src, struct tool_proc *p,
                   eventring_cursor *c) {
  p->cursor = c;
  p->pid = eventring_cursor_writer_pid(c);
  if (!p->pid) p->pid = tool_pid_of_path(p->path);
  const char *prog = eventring_cursor_program(c);
  if (prog && *prog)
    snprintf(p->name, sizeof p->name, "%s", prog);
  else if (p->pid && !tool_process_gone(p->pid))
    tool_process_name(p->pid, p->name, sizeof p->name);
  eventring_wallclock born;
  if (eventring_cursor_wallclock(c, EVENTRING_WALLCLOCK_START, &born) == 0)
    p->born = born.ts;
  tool_writer_note(&p->w, p->path, p->pid);
  eventring_cursor_set_numbering(c, tool_source_numbering(src));
}

int tool_same_writer(const eventring_cursor *a, const char *path_a,
                     const eventring_cursor *b, const char *path_b) {
  pid_t pid = eventring_cursor_writer_pid(a);
  if (!pid || pid != eventring_cursor_writer_pid(b)) return 0;
  const char *pa = eventring_cursor_program(a);
  const char *pb = eventring_cursor_program(b);
  if (strcmp(pa ? pa : "", pb ? pb : "")) return 0;
  uint64_t sa = 0, sb = 0;
  int ka = tool_recorded_start(path_a, pid, &sa);
  int kb = tool_recorded_start(path_b, pid, &sb);
  if (ka != kb || sa != sb) return 0;
  eventring_wallclock wa, wb;
  ka = eventring_cursor_wallclock(a, EVENTRING_WALLCLOCK_START, &wa) == 0;
  kb = eventring_cursor_wallclock(b, EVENTRING_WALLCLOCK_START, &wb) == 0;
  if (ka != kb) return 0;
  return !ka || (wa.ts == wb.ts && wa.wall == wb.wall);
}

/* The SEQ of a name `eventring record` gives its files,
 * [DIR/]PROGRAM-PID-SEQ-YYYYmmddTHHMMSS.mmmZ.events, else 0. */
static unsigned long record_seq(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t len = strlen(base);
  if (len < 7 || strcmp(base + len - 7, ".events")) return 0;
  len -= 7;
  /* Back over -TIME, then -SEQ, then -PID. */
  size_t end[3], i = len;
  for (int k = 0; k < 3; k++) {
    while (i > 0 && base[i - 1] != '-') i--;
    if (i == 0) return 0;
    end[k] = i; /* the part is base[i .. previous end) */
    i--;
  }
  size_t seq_at = end[1], seq_end = end[0] - 1;
  size_t pid_at = end[2], pid_end = end[1] - 1;
  if (seq_end <= seq_at || pid_end <= pid_at || base[len - 1] != 'Z' ||
      !tool_parse_pid(base + pid_at, pid_end - pid_at))
    return 0;
  unsigned long seq = 0;
  for (size_t j = seq_at; j < seq_end; j++) {
    if (base[j] < '0' || base[j] > '9' || seq > (unsigned long)-1 / 10 - 1)
      return 0;
    seq = seq * 10 + (unsigned long)(base[j] - '0');
  }
  return seq;
}

/* The cursor the events of `p` are read through now. */
static eventring_cursor *reading(const struct tool_proc *p) {
  return p->nsegs ? p->segs[p->seg].cursor : p->cursor;
}

/* Adds a process for cursor `c` on `path`, or for `path` alone when `c`
 * is NULL: a file of a directory read after others have been released
 * (open_pending).  Returns it, or NULL when out of memory (the cursor is
 * then freed). */
static struct tool_proc *add_proc(struct tool_source *src, eventring_cursor *c,
                                  const char *path) {
  struct tool_proc *p = calloc(1, sizeof *p);
  struct tool_proc **v =
      p ? realloc(src->procs, (size_t)(src->nprocs + 1) * sizeof *v) : NULL;
  if (!v) {
    free(p);
    eventring_cursor_free(c);
    tool_error("out of memory");
    return NULL;
  }
  src->procs = v;
  snprintf(p->path, sizeof p->path, "%s", path);
  if (c)
    attach(src, p, c);
  else
    p->pid = tool_pid_of_path(path);
  p->index = src->nprocs;
  p->state = P_LIVE;
  /* An earlier image's file: its writer is gone. */
  if (tool_ring_name(path, &p->image) && p->image) p->replaced = 1;
  src->procs[src->nprocs++] = p;
  return p;
}

/* dirscan.c's report of a file it opened: a new process, unless the file
 * is one we read already (known_proc()) (the command's first file, opened by spawn.c;
 * a file of the first listing).  A new file under the name of one we read
 * replaced it: that one's writer is gone. */
/* The process that reads the file cursor `c` reads (looked at as *st),
 * or NULL.  eventring's files say which they are, by their writer's pid
 * and the instant they were made: that holds when a name passed to
 * another file between a look and an open (an exec'd image takes
 * <pid>.events).  Other files are told by their inode. */
static struct tool_proc *known_proc(const struct tool_source *src,
                                    const eventring_cursor *c,
                                    const struct stat *st) {
  eventring_wallclock born;
  uint64_t ts = eventring_cursor_wallclock(c, EVENTRING_WALLCLOCK_START,
                                           &born) == 0
                    ? born.ts
                    : 0;
  pid_t pid = eventring_cursor_writer_pid(c);
  for (int i = 0; i < src->nprocs; i++) {
    struct tool_proc *p = src->procs[i];
    if (ts && p->born) {
      if (p->born == ts && eventring_cursor_writer_pid(p->cursor) == pid)
        return p;
    } else if (p->w.file_known && p->w.file_dev == st->st_dev &&
               p->w.file_ino == st->st_ino) {
      return p;
    }
  }
  return NULL;
}

static void *scan_found(void *arg, eventring_cursor *c, const char *path,
                        pid_t pid, const struct stat *st) {
  (void)pid;
  struct tool_source *src = arg;
  struct tool_proc *p = known_proc(src, c, st);
  if (p) {
    eventring_cursor_free(c);
    /* Under an earlier image's name now: a later image has the pid. */
    unsigned long image = 0;
    if (tool_ring_name(path, &image) && image) {
      p->image = image;
      p->replaced = 1;
      snprintf(p->path, sizeof p->path, "%s", path);
    }
    return p;
  }
  for (int i = 0; i < src->nprocs; i++)
    if (!strcmp(src->procs[i]->path, path)) src->procs[i]->replaced = 1;
  p = add_proc(src, c, path);
  if (p) p->found_scan = src->scan->scans;
  return p;
}

static void scan_still(void *arg, void *handle) { (void)arg, (void)handle; }

static void scan(struct tool_source *src) {
  static const struct tool_dirscan_ops ops = {scan_still, scan_found};
  if (!src->scan) return;
  src->scan->scans++;
  tool_dirscan(&src->scan->d, &ops, src);
}

static int start_scan(struct tool_source *src, const char *dir) {
  src->scan = calloc(1, sizeof *src->scan);
  if (!src->scan) {
    tool_error("out of memory");
    return TOOL_EXIT_INPUT;
  }
  snprintf(src->scan->dir, sizeof src->scan->dir, "%s", dir);
  src->scan->d.dir = src->scan->dir;
  src->scan->d.who = "eventring";
  /* A file refused for a second (its writer still filling its header
   * under load) is worth more looks at this scan's pace. */
  src->scan->d.tries = (int)(1000000000L / POLL_IDLE_NS);
  src->scan->d.images = 1;
  return TOOL_EXIT_OK;
}

/* Where a file whose name has N `image` comes among its pid's: by N,
 * <pid>.events (N 0) last. */
static unsigned long image_order(unsigned long image) {
  return image ? image : (unsigned long)-1;
}

static unsigned long image_rank(const struct tool_proc *p) {
  return image_order(p->image);
}

static int by_pid(const void *a, const void *b) {
  const struct tool_proc *x = *(struct tool_proc *const *)a;
  const struct tool_proc *y = *(struct tool_proc *const *)b;
  if (x->pid != y->pid) return (x->pid > y->pid) - (x->pid < y->pid);
  return (image_rank(x) > image_rank(y)) - (image_rank(x) < image_rank(y));
}

/* Whether p must wait for the next round: a file of p's pid written
 * before p's (a lower N, or found first under the same name) has a
 * writer that is gone and is not read to its end yet (it is, in this
 * round), or one may exist that no scan has listed yet. */
static int earlier_pending(const struct tool_source *src,
                           const struct tool_proc *p) {
  if (!p->pid) return 0;
  /* A listing may miss a name made while it runs: the link that keeps
   * an earlier image's file is made before the later image's file takes
   * <pid>.events, so a scan begun after p was found lists it. */
  if (src->scan && p->found_scan >= src->scan->scans) return 1;
  for (int i = 0; i < src->nprocs; i++) {
    const struct tool_proc *q = src->procs[i];
    if (q == p || q->pid != p->pid || q->state == P_DONE ||
        !(q->replaced || q->state == P_GONE))
      continue;
    if (image_rank(q) < image_rank(p) ||
        (image_rank(q) == image_rank(p) && q->index < p->index))
      return 1;
  }
  return 0;
}

/* File names of a directory in the order by_pid() puts their processes
 * in, as their names say: by pid, then an earlier image's first. */
static int by_pid_of_name(const void *a, const void *b) {
  const char *x = *(char *const *)a, *y = *(char *const *)b;
  unsigned long ix = 0, iy = 0;
  pid_t px = tool_ring_name(x, &ix), py = tool_ring_name(y, &iy);
  if (px != py) return (px > py) - (px < py);
  ix = image_order(ix);
  iy = image_order(iy);
  return (ix > iy) - (ix < iy);
}

/* The names of the entries of directory `dir` that `keep` takes, into
 * *out (*n of them, each to free with the array), unsorted.  Returns
 * TOOL_EXIT_OK, or TOOL_EXIT_INPUT after one line (`who`: DIR: why). */
static int read_names(const char *dir, const char *who,
                      int (*keep)(const char *name), char ***out, int *n) {
  *out = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) {
    tool_error("%s%s: %s", who, dir, strerror(errno));
    return TOOL_EXIT_INPUT;
  }
  struct dirent *e;
  int cap = 0;
  while ((e = readdir(d)) != NULL) {
    if (!keep(e->d_name)) continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 64;
      char **v = realloc(*out, (size_t)cap * sizeof *v);
      if (!v) goto oom;
      *out = v;
    }
    if (!((*out)[*n] = strdup(e->d_name))) goto oom;
    (*n)++;
  }
  closedir(d);
  return TOOL_EXIT_OK;
oom:
  closedir(d);
  tool_error("out of memory");
  return TOOL_EXIT_INPUT;
}

static int is_ring_name(const char *name) {
  return tool_pid_of_path(name) != 0;
}

/* The ring file names of directory `dir`, sorted, into *out (*n of them,
 * each to free with the array).  Returns TOOL_EXIT_OK, or
 * TOOL_EXIT_INPUT after one line. */
static int list_dir(const char *dir, char ***out, int *n) {
  int rc = read_names(dir, "--dir: ", is_ring_name, out, n);
  if (rc == TOOL_EXIT_OK && *n)
    qsort(*out, (size_t)*n, sizeof **out, by_pid_of_name);
  return rc;
}

/* Descriptors left free, once the files of a directory have taken all
 * the others, for what the subcommand opens besides (its output). */
#define SPARE_FDS 8

/* Whether the processes are read once through, not followed: then a
 * file read to its end is released (eventring__cursor_release), and the
 * files of a directory that found no descriptor at first are opened as
 * others are released (open_pending). */
static int read_once(const struct tool_source *src) {
  return !src->follow && !src->cmd;
}

/* Opens every ring file of DIR, in pid order.  A file that is not one is
 * said so and skipped; a directory with none is an error.  Read once
 * through, the files past the descriptors left wait without a cursor,
 * after all the others, for those to be read and released (and SPARE_FDS
 * of those opened give theirs back); followed, every file keeps its
 * descriptor, so more ring files than descriptors is an error: a report
 * on some of the processes must not pass for one on all of them. */
static int open_dir(struct tool_source *src) {
  int rc = tool_dirscan_check(src->dir, "--dir");
  if (rc != TOOL_EXIT_OK) return rc;
  char **names;
  int nnames;
  rc = list_dir(src->dir, &names, &nnames);
  int nofile = 0, held = 0;
  for (int i = 0; rc == TOOL_EXIT_OK && i < nnames; i++) {
    char path[4096], why[256];
    if (snprintf(path, sizeof path, "%s/%s", src->dir, names[i]) >=
        (int)sizeof path)
      continue;
    eventring_cursor *c = NULL;
    int r = nofile && read_once(src) ? -EMFILE
                                     : eventring_cursor_open_file(&c, path);
    if (no_descriptor(r)) {
      nofile++;
      if (read_once(src) && !add_proc(src, NULL, path)) rc = TOOL_EXIT_INPUT;
      continue;
    }
    if (r < 0) {
      tool_error("%s: %s (skipped)", path,
                 tool_ring_error(path, r, why, sizeof why));
      continue;
    }
    if (!add_proc(src, c, path)) rc = TOOL_EXIT_INPUT;
    held++;
  }
  for (int i = 0; i < nnames; i++) free(names[i]);
  free(names);
  if (rc != TOOL_EXIT_OK) return rc;
  if (nofile && (!read_once(src) || held == 0)) {
    report_nofile(src->dir, nofile, nofile + held);
    return TOOL_EXIT_INPUT;
  }
  if (src->nprocs == 0 && !(src->follow && src->until_signal)) {
    tool_error("--dir: no ring file (PID.events) in %s", src->dir);
    return TOOL_EXIT_INPUT;
  }
  if (!nofile && src->nprocs > 0) {
    /* Every file is open: their order is what they record (the names
     * say the same of eventring's files). */
    qsort(src->procs, (size_t)src->nprocs, sizeof *src->procs, by_pid);
    for (int i = 0; i < src->nprocs; i++) src->procs[i]->index = i;
  }
  /* The last files opened give their descriptors back, the first one
   * excepted: it is the source's until reading starts.  The files
   * without a cursor stay after those with one (open_pending). */
  for (int i = src->nprocs - 1, spare = nofile ? SPARE_FDS : 0;
       i > 0 && spare > 0; i--) {
    struct tool_proc *p = src->procs[i];
    if (!p->cursor) continue;
    eventring_cursor_free(p->cursor);
    p->cursor = NULL;
    spare--;
  }
  return src->follow ? start_scan(src, src->dir) : TOOL_EXIT_OK;
}

/* Makes the one file of `p` the first of its files.  Returns 0, or -1
 * when out of memory. */
static int first_seg(struct tool_proc *p) {
  if (p->nsegs) return 0;
  struct tool_seg *v = calloc(1, sizeof *v);
  if (!v || !(v[0].path = strdup(p->path))) {
    free(v);
    return -1;
  }
  v[0].id = v[0].cursor = p->cursor;
  v[0].seq = record_seq(p->path);
  p->segs = v;
  p->nsegs = 1;
  return 0;
}

/* Adds the file at `path`, read by cursor `c` (released: its turn comes
 * later), to the files of process `p`.  Returns 0, or -1 when out of
 * memory (the cursor is then freed). */
static int add_seg(struct tool_proc *p, eventring_cursor *c,
                   const char *path) {
  int n = p->nsegs ? p->nsegs : 1;
  struct tool_seg *v = first_seg(p) < 0 ? NULL : p->segs;
  if (v && !(v = realloc(p->segs, (size_t)(n + 1) * sizeof *v))) v = NULL;
  char *copy = strdup(path);
  if (v) p->segs = v;
  if (!v || !copy) {
    free(copy);
    eventring_cursor_free(c);
    tool_error("out of memory");
    return -1;
  }
  eventring__cursor_release(c);
  memset(&v[n], 0, sizeof v[n]);
  v[n].path = copy;
  v[n].id = c;
  v[n].seq = record_seq(path);
  p->nsegs = n + 1;
  return 0;
}

/* Whether the files at `a` and `b` hold the same bytes. */
static int same_bytes(const char *a, const char *b) {
  struct stat sa, sb;
  if (stat(a, &sa) != 0 || stat(b, &sb) != 0 || sa.st_size != sb.st_size)
    return 0;
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  int same = fa && fb;
  char ba[65536], bb[65536];
  while (same) {
    size_t na = fread(ba, 1, sizeof ba, fa), nb = fread(bb, 1, sizeof bb, fb);
    if (na != nb || memcmp(ba, bb, na)) same = 0;
    if (na < sizeof ba) break;
  }
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  return same;
}

/* A file's size and a hash of its first bytes (the headers and the
 * first events): files that differ in them are not the same. */
static uint64_t fingerprint(const char *path) {
  uint64_t h = 1469598103934665603ULL;
  struct stat st;
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  if (fstat(fileno(f), &st) == 0) h ^= (uint64_t)st.st_size;
  unsigned char buf[65536];
  for (int k = 0; k < 2; k++) {
    size_t n = fread(buf, 1, sizeof buf, f);
    for (size_t i = 0; i < n; i++) h = (h ^ buf[i]) * 1099511628211ULL;
    if (n < sizeof buf) break;
  }
  fclose(f);
  return h;
}

/* Copies last, the others by SEQ. */
static int by_seq(const void *a, const void *b) {
  const struct tool_seg *x = a, *y = b;
  if (x->copy != y->copy) return x->copy - y->copy;
  return (x->seq > y->seq) - (x->seq < y->seq);
}

static int by_ulong(const void *a, const void *b) {
  unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
  return (x > y) - (x < y);
}

/* How many of `v` (n, sorted, distinct) lie strictly between lo and hi. */
static size_t seqs_between(const unsigned long *v, size_t n, unsigned long lo,
                           unsigned long hi) {
  size_t count = 0;
  for (size_t a = 0, b = n; a < b;) { /* the first above lo */
    size_t m = a + (b - a) / 2;
    if (v[m] <= lo) a = m + 1;
    else b = m;
    count = a;
  }
  size_t first = count;
  size_t a = 0, b = n;
  while (a < b) { /* the first at or above hi */
    size_t m = a + (b - a) / 2;
    if (v[m] < hi) a = m + 1;
    else b = m;
  }
  return a > first ? a - first : 0;
}

/* Puts the files of joined process `p` in their order, marks copies and
 * the places where files are missing (the SEQs of record's names that
 * none of the `n` files given has: `seqs`, sorted, distinct), and makes
 * the widest of them (the latest of those) the process's cursor. */
static void finish_join(struct tool_proc *p, const unsigned long *seqs,
                        size_t n) {
  /* Copies: of two files with the same bytes, the one without record's
   * name, else the later, is not read. */
  uint64_t *fp = malloc((size_t)p->nsegs * sizeof *fp);
  for (int k = 0; fp && k < p->nsegs; k++) {
    struct tool_seg *g = &p->segs[k];
    fp[k] = fingerprint(g->path);
    for (int j = 0; j < k && !g->copy; j++) {
      struct tool_seg *o = &p->segs[j];
      if (o->copy || fp[j] != fp[k] || !same_bytes(o->path, g->path))
        continue;
      if (!o->seq && g->seq) o->copy = 1;
      else g->copy = 1;
    }
  }
  free(fp);
  int named = 1;
  for (int k = 0; k < p->nsegs; k++)
    named &= p->segs[k].copy || p->segs[k].seq != 0;
  if (named) {
    qsort(p->segs, (size_t)p->nsegs, sizeof *p->segs, by_seq);
  } else {
    /* The order given, copies last. */
    struct tool_seg tmp;
    for (int k = 1; k < p->nsegs; k++)
      for (int j = k; j > 0 && p->segs[j - 1].copy && !p->segs[j].copy; j--) {
        tmp = p->segs[j - 1];
        p->segs[j - 1] = p->segs[j];
        p->segs[j] = tmp;
      }
  }
  /* Only the first file read keeps the cursor opened on it: a file
   * opened first that is not first in order waits, and the first is
   * opened when reading starts (open_seg). */
  for (int k = 1; k < p->nsegs; k++) {
    struct tool_seg *g = &p->segs[k];
    if (!g->cursor) continue;
    eventring__cursor_release(g->cursor);
    g->cursor = NULL;
  }
  int prev = -1;
  for (int k = 0; k < p->nsegs; k++) {
    struct tool_seg *g = &p->segs[k];
    if (g->copy) continue;
    /* Before the first, files of the recording are missing when SEQs
     * below its are (--keep, --max-size: the process may have begun
     * before it). */
    unsigned long lo = prev >= 0 ? p->segs[prev].seq : 0;
    if (named && g->seq > lo + 1 &&
        seqs_between(seqs, n, lo, g->seq) < g->seq - lo - 1)
      g->gap = 1;
    prev = k;
  }
  /* record's files follow one another: none repeats another's events
   * (a domain's timestamps that go back at a boundary, as a slot's
   * threads may write them, are read as they are). */
  p->in_order = named;
  int best = 0;
  for (int k = 1; k < p->nsegs; k++)
    if (eventring_cursor_max_domains(p->segs[k].id) >=
        eventring_cursor_max_domains(p->segs[best].id))
      best = k;
  p->cursor = p->segs[best].id;
  p->seg = 0;
  snprintf(p->path, sizeof p->path, "%s", p->segs[0].path);
}

/* Marks the gaps of `p` (finish_join) that another process's files span
 * too (gap 2): SEQ counts every process of a run together, so what is
 * missing there may be the other one's, and the message says so. */
static void shared_gaps(const struct tool_source *src, struct tool_proc *p) {
  for (int k = 0; k < p->nsegs; k++) {
    struct tool_seg *g = &p->segs[k];
    if (!g->gap) continue;
    unsigned long lo = 0;
    for (int j = k - 1; j >= 0 && !lo; j--)
      if (!p->segs[j].copy) lo = p->segs[j].seq;
    for (int i = 0; i < src->nprocs && g->gap == 1; i++) {
      const struct tool_proc *q = src->procs[i];
      if (q == p || !q->nsegs) continue;
      unsigned long min = (unsigned long)-1, max = 0;
      for (int j = 0; j < q->nsegs; j++) {
        if (q->segs[j].seq && q->segs[j].seq < min) min = q->segs[j].seq;
        if (q->segs[j].seq > max) max = q->segs[j].seq;
      }
      /* q's files run on both sides of some SEQ missing here (below
       * the first: q began before it). */
      if (max > lo && (lo ? min < g->seq : min < g->seq && max > 0))
        g->gap = 2;
    }
  }
}

/* Opens each of the files named on the command line.  Read once through,
 * the files of one writer are one process (the comment at the top). */
static int open_files(struct tool_source *src, int nargs, char **args,
                      const char *help) {
  int join = read_once(src);
  unsigned long *seqs = join ? calloc((size_t)nargs + 1, sizeof *seqs) : NULL;
  size_t nseqs = 0;
  if (join && !seqs) {
    tool_error("out of memory");
    return TOOL_EXIT_INPUT;
  }
  int rc = TOOL_EXIT_OK;
  for (int i = 0; i < nargs && rc == TOOL_EXIT_OK; i++) {
    if (!*args[i]) {
      rc = tool_usage_error(help, "empty file name");
      break;
    }
    for (int j = 0; j < i && rc == TOOL_EXIT_OK; j++)
      if (!strcmp(args[i], args[j]))
        rc = tool_usage_error(help, "%s is named twice", args[i]);
    if (rc != TOOL_EXIT_OK) break;
    eventring_cursor *c;
    char why[256];
    int r = eventring_cursor_open_file(&c, args[i]);
    if (r < 0) {
      tool_error("%s: %s", args[i],
                 tool_ring_error(args[i], r, why, sizeof why));
      rc = TOOL_EXIT_INPUT;
      break;
    }
    struct tool_proc *q = NULL;
    for (int j = 0; join && j < src->nprocs && !q; j++) {
      struct tool_proc *o = src->procs[j];
      const char *first = o->nsegs ? o->segs[0].path : o->path;
      eventring_cursor *fc = o->nsegs ? o->segs[0].id : o->cursor;
      if (tool_same_writer(fc, first, c, args[i])) q = o;
    }
    if (join && (seqs[nseqs] = record_seq(args[i])) != 0) nseqs++;
    if (q ? add_seg(q, c, args[i]) < 0 : !add_proc(src, c, args[i]))
      rc = TOOL_EXIT_INPUT;
  }
  if (rc == TOOL_EXIT_OK && nseqs) {
    qsort(seqs, nseqs, sizeof *seqs, by_ulong);
    size_t u = 0;
    for (size_t i = 0; i < nseqs; i++)
      if (!u || seqs[u - 1] != seqs[i]) seqs[u++] = seqs[i];
    nseqs = u;
  }
  /* A file of record's alone may still follow files that are missing. */
  for (int j = 0; rc == TOOL_EXIT_OK && j < src->nprocs; j++)
    if (join && record_seq(src->procs[j]->path) &&
        first_seg(src->procs[j]) < 0) {
      tool_error("out of memory");
      rc = TOOL_EXIT_INPUT;
    }
  for (int j = 0; rc == TOOL_EXIT_OK && j < src->nprocs; j++)
    if (src->procs[j]->nsegs) finish_join(src->procs[j], seqs, nseqs);
  for (int j = 0; rc == TOOL_EXIT_OK && j < src->nprocs; j++)
    shared_gaps(src, src->procs[j]);
  free(seqs);
  return rc;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_events_name(const char *name) {
  size_t len = strlen(name);
  return name[0] != '.' && len > 7 && !strcmp(name + len - 7, ".events");
}

int tool_procs_dir_files(const char *dir, char ***out, int *n) {
  int rc = read_names(dir, "", is_events_name, out, n);
  if (rc != TOOL_EXIT_OK) return rc;
  if (*n) qsort(*out, (size_t)*n, sizeof **out, by_name);
  for (int i = 0; i < *n; i++) {
    char *path = malloc(strlen(dir) + strlen((*out)[i]) + 2);
    if (!path) {
      tool_error("out of memory");
      return TOOL_EXIT_INPUT;
    }
    sprintf(path, "%s/%s", dir, (*out)[i]);
    free((*out)[i]);
    (*out)[i] = path;
  }
  return TOOL_EXIT_OK;
}

int tool_procs_open(struct tool_source *src, int nargs, char **args,
                    const char *help) {
  int rc;
  if (nargs > 1) {
    rc = open_files(src, nargs, args, help);
  } else if (src->dir && !src->pid_arg) {
    rc = open_dir(src);
  } else {
    /* source.c opened the one file: it is the first process. */
    struct tool_proc *p = add_proc(src, src->cursor, src->path);
    src->cursor = NULL;
    if (!p) return TOOL_EXIT_INPUT;
    if (src->pid) p->pid = src->pid;
    if (src->w.file_known) p->w = src->w;
    rc = src->cmd ? start_scan(src, tool_spawn_dir()) : TOOL_EXIT_OK;
  }
  if (rc == TOOL_EXIT_OK && src->nprocs > 0) {
    src->cursor = src->procs[0]->cursor;
    if (!src->pid && src->nprocs == 1) src->pid = src->procs[0]->pid;
    if (!src->path[0])
      snprintf(src->path, sizeof src->path, "%s", src->procs[0]->path);
  }
  return rc;
}

void tool_procs_lost(struct tool_source *src, int domain, uint64_t count) {
  if (src->proc >= src->nprocs) return;
  struct tool_proc *p = src->procs[src->proc];
  tool_count_lost(p->cursor, &p->lost_total, &p->lost, &p->lost_n, domain,
                  count);
}

/* The lines of the summary on joined files: where files are missing,
 * which were copies, and the events read twice. */
static void join_lines(FILE *out, const struct tool_proc *p,
                       const char *label) {
  int prev = -1;
  for (int k = 0; k < p->nsegs; k++) {
    const struct tool_seg *g = &p->segs[k];
    if (g->copy) {
      fprintf(out, "eventring: %s%s holds the same events as another file "
                   "of it (read once)\n", label, g->path);
      continue;
    }
    const char *whose = g->gap == 2 ? " (its own or another process's)"
                                      : "";
    if (g->gap && k <= p->seg && prev < 0)
      fprintf(out, "eventring: %sfiles of its recording%s are missing before "
                   "%s (removed by --keep or --max-size, or by hand): it may "
                   "have begun earlier (counted as a loss of unknown size in "
                   "every domain: spans ending after it are cut)\n",
              label, whose, g->path);
    else if (g->gap && k <= p->seg)
      fprintf(out, "eventring: %sfiles of its recording%s are missing "
                   "between %s and %s: what they held is unknown (counted as "
                   "a loss of unknown size in every domain; spans open there "
                   "are cut)\n", label, whose, p->segs[prev].path, g->path);
    prev = k;
  }
  if (p->overlapped)
    fprintf(out, "eventring: %s%llu event%s held by two of its files "
                 "(overlapping files), read once\n", label,
            (unsigned long long)p->overlapped,
            p->overlapped == 1 ? " was" : "s were");
}

void tool_procs_join_summary(const struct tool_source *src, FILE *out) {
  for (int i = 0; src->multi && i < src->nprocs; i++) {
    const struct tool_proc *p = src->procs[i];
    char label[160], buf[128];
    snprintf(label, sizeof label, "%s: ",
             tool_proc_label(p, buf, sizeof buf));
    join_lines(out, p, label);
  }
}

void tool_procs_lost_summary(const struct tool_source *src, FILE *out) {
  for (int i = 0; i < src->nprocs; i++) {
    const struct tool_proc *p = src->procs[i];
    char label[160], buf[128];
    snprintf(label, sizeof label, "%s: ",
             tool_proc_label(p, buf, sizeof buf));
    tool_window_line(out, p->cursor, p->path,
                     src->nprocs > 1 ? label : "", p->before_total);
    tool_lost_lines(out, p->cursor, p->path, src->nprocs > 1 ? label : "",
                    p->lost_total, p->lost, p->lost_n);
    join_lines(out, p, label);
  }
}

/* Whether process `p`'s writer is gone, so that what its file holds is
 * all there will be. */
static int proc_gone(const struct tool_source *src, struct tool_proc *p) {
  if (p->replaced) return 1;
  if (!p->pid) return p->saw_ring_stop || !src->follow;
  return tool_writer_gone(&p->w, p->pid);
}

/* Makes `p` the process whose events the callbacks get: src->cursor is
 * the one its events are read through (of the file being read, for
 * joined files). */
static void select_proc(struct tool_source *src, struct tool_proc *p) {
  src->proc = p->index;
  src->cursor = reading(p) ? reading(p) : p->cursor;
}

/* ---- Joined files: what the callbacks of the subcommand see. ---- */

/* Per domain of a joined process (tool_jdom.st): a timestamp was delivered
 * (kept across files); the file being read has had an event of it; its
 * events are skipped as read already (until one is later than the last
 * delivered). */
enum { D_KNOWN = 1, D_SEEN = 2, D_SKIP = 4 };

struct join {
  const struct tool_handlers *h; /* the subcommand's */
  void *data;                    /* and its data */
  struct tool_proc *p;
};

/* Room for domain `domain` in p's table; 0 when out of memory. */
static int join_room(struct tool_proc *p, int domain) {
  if (domain < p->ndom) return 1;
  int n = domain + 8;
  struct tool_jdom *v = realloc(p->dom, (size_t)n * sizeof *v);
  if (!v) return 0;
  memset(v + p->ndom, 0, (size_t)(n - p->ndom) * sizeof *v);
  p->dom = v;
  p->ndom = n;
  return 1;
}

/* What a later file said was gone before its first event of `domain`
 * (its window's start and its losses), held back until that event
 * shows whether the file repeats events read already: then they were
 * read, and it is dropped; else what was not read is a loss of the
 * process, delivered now (also when the file ends without an event of
 * the domain).  A window's start is the number of the domain's events
 * before the file's first (a snapshot of a wrapped ring), so with it
 * the loss is what lies between the events read and that first one;
 * without one (`eventring record`'s later files), a loss is the file's
 * own. */
static void pending_out(struct join *j, int domain, int repeats) {
  struct tool_jdom *d = &j->p->dom[domain];
  uint64_t win = d->held_win, lost = d->held_lost, n = lost;
  d->held_win = d->held_lost = 0;
  if (win) {
    uint64_t first = tool_add_sat(win, lost);
    n = first > d->pos ? first - d->pos : 0;
  }
  if (!n || repeats) return;
  d->pos = tool_add_sat(d->pos, n);
  if (j->h->lost_events) j->h->lost_events(j->data, domain, n);
}

/* Whether the event of `domain` at `ts` is to be delivered: not when a
 * file repeats what an earlier one held (see the top): a file whose
 * first event of the domain is earlier than the last one delivered
 * repeats, up to that one (the events at its timestamp counted). */
static int fresh(struct join *j, int domain, uint64_t ts) {
  struct tool_proc *p = j->p;
  if (domain < 0 || !join_room(p, domain)) return 1;
  struct tool_jdom *d = &p->dom[domain];
  if (!(d->st & D_SEEN)) {
    d->st |= D_SEEN;
    int repeats = !p->in_order && d->st & D_KNOWN && ts < d->last_ts;
    if (repeats) {
      d->st |= D_SKIP;
      d->skip_eq = d->last_cnt;
    }
    pending_out(j, domain, repeats);
  }
  if (d->st & D_SKIP) {
    if (ts < d->last_ts || (ts == d->last_ts && d->skip_eq)) {
      if (ts == d->last_ts) d->skip_eq--;
      p->overlapped++;
      return 0;
    }
    d->st &= (unsigned char)~D_SKIP;
  }
  if (!(d->st & D_KNOWN) || ts > d->last_ts) {
    d->last_ts = ts;
    d->last_cnt = 0;
  }
  if (ts == d->last_ts) d->last_cnt++;
  d->st |= D_KNOWN;
  d->pos++;
  return 1;
}

static int j_begin(void *d, int dom, uint64_t ts, int ph) {
  struct join *j = d;
  return !fresh(j, dom, ts) || j->h->runtime_begin(j->data, dom, ts, ph);
}
static int j_end(void *d, int dom, uint64_t ts, int ph) {
  struct join *j = d;
  return !fresh(j, dom, ts) || j->h->runtime_end(j->data, dom, ts, ph);
}
static int j_counter(void *d, int dom, uint64_t ts, int c, uint64_t v) {
  struct join *j = d;
  return !fresh(j, dom, ts) || j->h->runtime_counter(j->data, dom, ts, c, v);
}
static int j_alloc(void *d, int dom, uint64_t ts, const uint64_t *b) {
  struct join *j = d;
  return !fresh(j, dom, ts) || j->h->alloc(j->data, dom, ts, b);
}
static int j_life(void *d, int dom, uint64_t ts, int k, int64_t v, int h) {
  struct join *j = d;
  return !fresh(j, dom, ts) || j->h->lifecycle(j->data, dom, ts, k, v, h);
}
static int j_unit(void *d, int dom, uint64_t ts, int id, const char *n) {
  struct join *j = d;
  return !fresh(j, dom, ts) || j->h->user_unit(j->data, dom, ts, id, n);
}
static int j_int(void *d, int dom, uint64_t ts, int id, const char *n,
                 int64_t v) {
  struct join *j = d;
  return !fresh(j, dom, ts) || j->h->user_int(j->data, dom, ts, id, n, v);
}
static int j_span(void *d, int dom, uint64_t ts, int id, const char *n,
                  int e) {
  struct join *j = d;
  return !fresh(j, dom, ts) || j->h->user_span(j->data, dom, ts, id, n, e);
}
static int j_custom(void *d, int dom, uint64_t ts, int id, const char *n,
                    const void *b, size_t l) {
  struct join *j = d;
  return !fresh(j, dom, ts) ||
         j->h->user_custom(j->data, dom, ts, id, n, b, l);
}
/* A loss (`win` 0) or a window's start, in a later file, of a domain
 * that earlier files had events of: held back (pending_out); 1 when it
 * is.  Otherwise counted in the domain's position, 0. */
static int hold(struct join *j, int dom, uint64_t count, int win) {
  struct tool_proc *p = j->p;
  if (dom < 0 || !join_room(p, dom)) return 0;
  struct tool_jdom *d = &p->dom[dom];
  if (!(d->st & D_KNOWN) || d->st & D_SEEN) {
    d->pos = tool_add_sat(d->pos, count);
    return 0;
  }
  if (win) d->held_win = tool_add_sat(d->held_win, count);
  else d->held_lost = tool_add_sat(d->held_lost, count);
  return 1;
}
static int j_lost(void *d, int dom, uint64_t count) {
  struct join *j = d;
  return hold(j, dom, count, 0) || j->h->lost_events(j->data, dom, count);
}
static int j_thread(void *d, int dom, uint64_t ts, int64_t t, uint64_t tid,
                    const char *n, size_t l) {
  struct join *j = d;
  return !fresh(j, dom, ts) || j->h->thread(j->data, dom, ts, t, tid, n, l);
}
static int j_window(void *d, int dom, uint64_t before) {
  struct join *j = d;
  if (hold(j, dom, before, 1)) return 1;
  /* Without a window callback, the cursor's way: a loss. */
  return j->h->window ? j->h->window(j->data, dom, before)
         : j->h->lost_events ? j->h->lost_events(j->data, dom, before)
                             : 1;
}

/* The callbacks of joined processes: those of `h` behind fresh(), for
 * the kinds `h` handles, and windows (a later file's tells what is
 * missing before it).  NULL when out of memory. */
static eventring_callbacks *join_callbacks(const struct tool_handlers *h) {
  struct tool_handlers w = {
      h->runtime_begin ? j_begin : NULL, h->runtime_end ? j_end : NULL,
      h->runtime_counter ? j_counter : NULL, h->alloc ? j_alloc : NULL,
      h->lifecycle ? j_life : NULL,     h->user_unit ? j_unit : NULL,
      h->user_int ? j_int : NULL,       h->user_span ? j_span : NULL,
      h->user_custom ? j_custom : NULL, h->lost_events ? j_lost : NULL,
      h->thread ? j_thread : NULL,      j_window};
  return tool_callbacks_new(&w);
}

/* Opens the file of `p` whose turn it is.  Returns 0, or -1 after one
 * line. */
static int open_seg(struct tool_source *src, struct tool_proc *p) {
  struct tool_seg *g = &p->segs[p->seg];
  if (g->cursor) return 0;
  char why[256];
  int r = eventring_cursor_open_file(&g->cursor, g->path);
  if (r < 0) {
    g->cursor = NULL;
    tool_error("%s: %s", g->path,
               tool_ring_error(g->path, r, why, sizeof why));
    return -1;
  }
  eventring_cursor_set_numbering(g->cursor, tool_source_numbering(src));
  return 0;
}

/* Before the events of the file of `p` being read, when files are
 * missing before it: a loss of unknown size (0) in every domain. */
static void gap_out(struct tool_proc *p, const struct tool_handlers *h,
                    void *data) {
  if (!p->segs[p->seg].gap) return;
  p->gaps++;
  int nd = eventring_cursor_max_domains(p->cursor);
  int nd2 = eventring_cursor_max_domains(p->segs[p->seg].cursor);
  if (nd2 > nd) nd = nd2;
  for (int d = 0; h && h->lost_events && d < nd; d++)
    h->lost_events(data, d, 0);
}

/* Moves `p` on to its next file (copies passed over), after a loss of
 * unknown size in every domain when files are missing before it (the
 * subcommand's `h` with `data`).  Returns 1, 0 when there is none, or -1
 * after one line when it cannot be opened. */
static int next_seg(struct tool_source *src, struct tool_proc *p,
                    const struct tool_handlers *h, void *data) {
  struct join j = {h, data, p};
  for (int d = 0; h && d < p->ndom; d++) pending_out(&j, d, 0);
  int k = p->seg + 1;
  while (k < p->nsegs && p->segs[k].copy) k++;
  if (k >= p->nsegs) return 0;
  if (p->segs[p->seg].cursor) eventring__cursor_release(p->segs[p->seg].cursor);
  p->seg = k;
  if (open_seg(src, p) < 0) return -1;
  select_proc(src, p);
  for (int d = 0; d < p->ndom; d++)
    p->dom[d].st &= (unsigned char)~(D_SEEN | D_SKIP);
  gap_out(p, h, data);
  return 1;
}

/* One poll of `p`; a negative error is reported and ends reading.  For
 * joined files, `jcb` (join_callbacks, NULL: none) is polled with a
 * struct join, and a file read to its end gives way to the next. */
static int poll_one(struct tool_source *src, struct tool_proc *p,
                    const eventring_callbacks *cb, void *data,
                    const eventring_callbacks *jcb) {
  select_proc(src, p);
  const struct tool_handlers *h = tool_callbacks_handlers(cb);
  struct join j = {h, data, p};
  int r;
  for (;;) {
    if (p->nsegs && open_seg(src, p) < 0) return -1;
    if (p->nsegs && !p->began) {
      p->began = 1;
      gap_out(p, h, data);
    }
    uint64_t skipped = p->overlapped;
    r = p->nsegs && jcb ? eventring_cursor_poll(reading(p), jcb, &j, 0)
                        : eventring_cursor_poll(reading(p), cb, data, 0);
    if (r > 0) {
      uint64_t n = (uint64_t)r - (p->overlapped - skipped);
      p->events_read += n;
      src->events_read += n;
    }
    if (r != 0 || !p->nsegs) break;
    int m = next_seg(src, p, h, data);
    if (m < 0) return -1;
    if (m == 0) break;
  }
  if (r < 0) tool_poll_error(p->nsegs ? p->segs[p->seg].path : p->path, r);
  return r;
}

/* Opens the file of process `p` of a directory read once through, which
 * waited for a descriptor.  Returns 1 when it has its cursor now, 0 when
 * no descriptor is free yet, or -1 when the file cannot be read: then it
 * is said so and `p` leaves the list (nothing was read from it, nor from
 * the processes after it, which wait too). */
static int open_pending(struct tool_source *src, struct tool_proc *p) {
  eventring_cursor *c;
  char why[256];
  int r = eventring_cursor_open_file(&c, p->path);
  if (no_descriptor(r)) return 0;
  if (r == 0) {
    attach(src, p, c);
    return 1;
  }
  tool_error("%s: %s (skipped)", p->path,
             tool_ring_error(p->path, r, why, sizeof why));
  for (int i = p->index; i + 1 < src->nprocs; i++) {
    src->procs[i] = src->procs[i + 1];
    src->procs[i]->index = i;
  }
  src->nprocs--;
  free(p);
  return -1;
}

/* The processes whose file holds a descriptor now. */
static int held(const struct tool_source *src) {
  int n = 0;
  for (int i = 0; i < src->nprocs; i++)
    n += src->procs[i]->cursor && src->procs[i]->state != P_DONE;
  return n;
}

/* Opens every ring file of the scanned directory that no process reads
 * yet, once their writers have all ended (a file the scans refused while
 * its writer filled it in is complete now, or never will be: then it is
 * named). */
static void sweep(struct tool_source *src) {
  if (!src->scan) return;
  DIR *d = opendir(src->scan->dir);
  if (!d) return;
  src->scan->swept = 1;
  src->scan->nofile = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!tool_pid_of_path(e->d_name)) continue;
    char path[4096 + 256], why[256];
    snprintf(path, sizeof path, "%s/%s", src->scan->dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0) continue;
    eventring_cursor *c;
    int r = eventring_cursor_open_file(&c, path);
    if (r == 0 && known_proc(src, c, &st)) {
      eventring_cursor_free(c);
      continue;
    }
    if (no_descriptor(r)) {
      src->scan->nofile++;
      continue;
    }
    if (r < 0) {
      tool_error("%s: %s (skipped)", path,
                 tool_ring_error(path, r, why, sizeof why));
      continue;
    }
    for (int i = 0; i < src->nprocs; i++)
      if (!strcmp(src->procs[i]->path, path)) src->procs[i]->replaced = 1;
    add_proc(src, c, path);
  }
  closedir(d);
}

/* The line for the processes still running at the drain timeout. */
static void report_timeout(const struct tool_source *src, uint64_t drain) {
  char list[1024] = "", buf[128];
  size_t n = 0;
  int count = 0;
  pid_t kids[64];
  int nkids = tool_spawn_children(kids, 64);
  for (int i = 0; i < src->nprocs; i++) {
    const struct tool_proc *p = src->procs[i];
    if (p->state == P_DONE || p->replaced ||
        (p->pid && tool_process_gone(p->pid)))
      continue;
    for (int k = 0; k < nkids; k++)
      if (kids[k] == p->pid) kids[k] = 0; /* named once */
    count++;
    if (n < sizeof list - 1)
      n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
                            n ? ", " : "", tool_proc_label(p, buf, sizeof buf));
  }
  for (int k = 0; k < nkids; k++) {
    if (!kids[k]) continue;
    char name[64], shown[TOOL_TEXT_BUF(sizeof name)];
    tool_process_name(kids[k], name, sizeof name);
    count++;
    if (n < sizeof list - 1)
      n += (size_t)snprintf(
          list + n, sizeof list - n, "%spid %ld (%s, untraced)",
          n ? ", " : "", (long)kids[k],
          name[0] ? tool_text(shown, sizeof shown, name, TOOL_TEXT_UTF8)
                  : "?");
  }
  if (n >= sizeof list) snprintf(list + sizeof list - 5, 5, "...");
  tool_error("%d process%s of the command still running %.3g s after it "
             "ended (--drain-timeout): %s; the report has their events up "
             "to now, and they were left running",
             count, count == 1 ? "" : "es", (double)drain / 1e9,
             count ? list : "none traced");
}

int tool_proc_done(const struct tool_proc *p) { return p->state == P_DONE; }

int tool_procs_read(struct tool_source *src, const eventring_callbacks *cb,
                    void *data) {
  int following = src->follow || src->cmd;
  uint64_t drain = src->drain_ns ? src->drain_ns : TOOL_DRAIN_DEFAULT_NS;
  uint64_t deadline = 0, kill_at = 0;
  int tree_done = 0, killed = 0, rc = TOOL_EXIT_OK;
  /* The callbacks of joined files, when there are some. */
  eventring_callbacks *jcb = NULL;
  const struct tool_handlers *h = tool_callbacks_handlers(cb);
  for (int i = 0; h && !jcb && i < src->nprocs; i++)
    if (src->procs[i]->nsegs && !(jcb = join_callbacks(h))) {
      tool_error("out of memory");
      return TOOL_EXIT_INPUT;
    }
  for (;;) {
    int before = src->nprocs;
    scan(src);
    int any = src->nprocs != before, all_done = 1, blocked = 0;
    for (int i = 0; i < src->nprocs && rc == TOOL_EXIT_OK; i++) {
      struct tool_proc *p = src->procs[i];
      if (p->state == P_DONE) continue;
      if (!p->cursor) {
        int o = blocked ? 0 : open_pending(src, p);
        if (o < 0) {
          i--;
          continue;
        }
        if (o == 0 && held(src) == 0) {
          /* No file to release: the rest can never be opened. */
          int waiting = 0;
          for (int j = 0; j < src->nprocs; j++)
            waiting += !src->procs[j]->cursor;
          report_nofile(src->dir, waiting, 0);
          rc = TOOL_EXIT_INPUT;
          break;
        }
        if (o == 0) {
          /* Files read to their end, later in the round, free some. */
          blocked = 1;
          all_done = 0;
          continue;
        }
      }
      if (p->replaced) p->state = P_GONE;
      if (earlier_pending(src, p)) {
        any = 1;
        all_done = 0;
        continue;
      }
      int r;
      if (p->state == P_GONE) {
        /* Its writer is gone: read it to the end now, before any later
         * file of the same pid. */
        while ((r = poll_one(src, p, cb, data, jcb)) > 0 && tool_output_ok())
          any = 1;
        if (r == 0) p->state = P_DONE;
      } else {
        r = poll_one(src, p, cb, data, jcb);
        if (r > 0) any = 1;
        else if (r == 0 && (!following || proc_gone(src, p)))
          p->state = following ? P_GONE : P_DONE;
      }
      if (p->state == P_DONE && read_once(src) &&
          eventring__cursor_release(reading(p)) == 0)
        any = 1; /* a descriptor for a file still waiting */
      if (r < 0) rc = TOOL_EXIT_INPUT;
      if (!tool_output_ok()) break;
      if (p->state != P_DONE) all_done = 0;
    }
    if (src->between_polls) src->between_polls(src, data);
    tool_progress_tick(src);
    if (rc != TOOL_EXIT_OK || !tool_output_ok()) break;

    int sig = tool_signal_pending();
    if (sig && !src->interrupted) {
      src->interrupted = sig;
      kill_at = tool_now_ns() + KILL_GRACE_NS;
    }
    if (src->interrupted && !src->cmd) break;
    if (any) continue;
    if (all_done && (!src->cmd || tree_done) &&
        !(src->follow && src->until_signal))
      break;
    if (src->cmd && !tree_done) {
      tree_done = tool_spawn_tree_done(src);
      if (src->child_reaped && !deadline) {
        src->end_ns = tool_now_ns();
        deadline = src->end_ns + drain;
      }
      if (tree_done || (src->interrupted && src->child_reaped)) {
        /* Every process of the tree has ended (or we were told to stop):
         * every file not read yet (one refused while its writer filled
         * it in) and a last read of every file. */
        tree_done = 1;
        sweep(src);
        for (int i = 0; i < src->nprocs; i++)
          if (src->procs[i]->state == P_LIVE) src->procs[i]->state = P_GONE;
        continue;
      }
      if (deadline && tool_now_ns() >= deadline) {
        report_timeout(src, drain);
        break;
      }
    }
    if (src->interrupted && !killed && !src->child_reaped &&
        (tool_signal_count() > 1 || tool_now_ns() >= kill_at)) {
      tool_spawn_kill(src);
      killed = 1;
    }
    if (fflush(stdout) != 0 && !tool_output_ok()) break;
    struct timespec ts = {0, POLL_IDLE_NS};
    nanosleep(&ts, NULL);
  }
  if (!src->end_ns && src->cmd) src->end_ns = tool_now_ns();
  tool_progress_end();
  /* Files that appeared while following and never got a descriptor:
   * the report would pass over them in silence. */
  int nofile = !src->scan ? 0
               : src->scan->swept ? src->scan->nofile
                                  : tool_dirscan_nofile(&src->scan->d);
  if (rc == TOOL_EXIT_OK && nofile) {
    report_nofile(src->scan->dir, nofile, 0);
    rc = TOOL_EXIT_INPUT;
  }
  for (int i = 0; rc == TOOL_EXIT_OK && i < src->nprocs; i++)
    if (src->procs[i]->events_read)
      tool_warn_numbering(src->procs[i]->cursor, src->procs[i]->path);
  eventring_callbacks_free(jcb);
  if (src->nprocs) {
    /* For the reports: what the process's files name. */
    src->proc = 0;
    src->cursor = src->procs[0]->cursor;
  }
  return rc;
}

void tool_procs_close(struct tool_source *src) {
  /* src->cursor is one of the processes', or, when opening failed before
   * the first process was made, the file source.c opened. */
  if (src->nprocs == 0) eventring_cursor_free(src->cursor);
  for (int i = 0; i < src->nprocs; i++) {
    struct tool_proc *p = src->procs[i];
    if (p->nsegs) {
      for (int k = 0; k < p->nsegs; k++) {
        if (p->segs[k].cursor != p->segs[k].id)
          eventring_cursor_free(p->segs[k].cursor);
        eventring_cursor_free(p->segs[k].id);
        free(p->segs[k].path);
      }
      free(p->segs);
      free(p->dom);
    } else {
      eventring_cursor_free(p->cursor);
    }
    free(p->lost);
    free(p);
  }
  free(src->procs);
  src->procs = NULL;
  src->nprocs = 0;
  if (src->scan) {
    tool_dirscan_free(&src->scan->d);
    free(src->scan);
    src->scan = NULL;
  }
}
