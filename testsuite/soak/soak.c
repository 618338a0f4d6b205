/* soak -- the bounded adversarial soak of issue 13: traced writers with
 * thread churn and probes in signal handlers, hostile and truncated files,
 * and every reader of the eventring command, all at once for SOAK_SECONDS
 * (default 60); then nothing may have hung or died, every reader must
 * have ended as documented, every undamaged file's accounting must hold
 * and the exporter must have answered every scrape.
 *
 * Run by `make soak SOAK_SECONDS=N`, which sets what `make check` sets
 * (EVENTRING_TEST_TOOL, the sanitizers' options).  What runs, in one
 * directory EV that every reader watches:
 *
 *   writers    two "checked" soak_writer processes and one "victim"
 *              (soak_writer.c says what each does); OCAMLRUNPARAM=d=4,
 *              so that their threads outnumber the domain slots
 *   vandal     a thread making hostile files in EV, named as ring files of
 *              dead processes (pids above pid_max) and of this live,
 *              untraced process: text, ELF, zeros, valid and corrupted
 *              crafted ring files, copies of live ring files with words
 *              flipped, files cut short and grown back, a FIFO, a
 *              directory, a symbolic link to /dev/zero
 *   truncator  a thread cutting the victim's live file under it, to 0 or
 *              part of its size, sometimes growing it back
 *   exporter   `eventring metrics --dir EV`, scraped every 100 ms by a
 *              thread that also keeps 8 idle connections open
 *   watcher    `eventring watch --dir EV` with conditions that fire
 *   followers  `eventring dump --follow --pid W` on each writer, started
 *              again whenever one ends (the writer's file comes and goes)
 *   snapshots  a thread running `eventring snapshot --pid W` in turn on
 *              each writer and `eventring dump` on each checked one's copy
 *   remote     a thread running `eventring pause W` and `resume W`
 *
 * Every process runs with a bound: a short command is killed after 30 s,
 * and at the end each long-lived one gets SOAK_GRACE seconds (default 30)
 * after being told to stop (its standard input closed, its writer gone,
 * SIGTERM).  Each that hangs, dies of a signal nobody sent it, or exits
 * with a status its documentation does not give for the case is reported
 * by name with the end of its output, and the soak exits 1; else 0.
 * SOAK_KEEP=1 keeps the directory (logs, files) for a post-mortem;
 * SOAK_VICTIM=0 runs no victim (all three writers checked, no live file
 * cut).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define NWRITERS 3 /* the last one is the victim */
#define NIDLE 8    /* idle connections held to the exporter */
#define SHORT_LIMIT 30.0

static const char *tool;
/* Paths are short (below /tmp): bounded so that the names made from
 * them always fit in PATH_MAX. */
static char writer_prog[PATH_MAX + 16], base[64], ev[96], outdir[96],
    logdir[96];
/* Whole ring files to copy and damage: an OCaml 5 vector, and the last
 * snapshot of a checked writer (a compact file eventring wrote). */
static char vector[128], pristine[128];
static pthread_mutex_t pristine_lock = PTHREAD_MUTEX_INITIALIZER;
static double seconds, grace;
/* SOAK_VICTIM=0 leaves out the cutting of a live writer's file (the
 * third writer is then checked like the others). */
static int with_victim = 1;
static atomic_int stopping;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static int failures;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Each thread's own numbers: a fixed seed per thread, so that what a run
 * chooses is repeatable (not how the threads interleave). */
static unsigned rnd(uint64_t *state, unsigned n) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *state = x;
  return (unsigned)(x % n);
}

/* The last `max` bytes of the file at `path`, for a failure's report. */
static void tail_of(const char *path, char *buf, size_t max) {
  buf[0] = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  off_t size = lseek(fd, 0, SEEK_END);
  off_t from = size > (off_t)max - 1 ? size - (off_t)max + 1 : 0;
  ssize_t n = pread(fd, buf, max - 1, from);
  buf[n > 0 ? n : 0] = 0;
  close(fd);
}

static __attribute__((format(printf, 2, 3))) void
failure(const char *log, const char *fmt, ...) {
  char tail[1500];
  if (log) tail_of(log, tail, sizeof tail);
  pthread_mutex_lock(&report_lock);
  failures++;
  va_list ap;
  va_start(ap, fmt);
  printf("soak: FAIL: ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  if (log && tail[0]) printf("soak: --- end of %s ---\n%s\nsoak: ---\n", log,
                             tail);
  fflush(stdout);
  pthread_mutex_unlock(&report_lock);
}

static void describe(int status, char *buf, size_t size) {
  if (status == -1)
    snprintf(buf, size, "hung");
  else if (WIFSIGNALED(status))
    snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(status),
             strsignal(WTERMSIG(status)));
  else
    snprintf(buf, size, "exit status %d", WEXITSTATUS(status));
}

/* ------------------------------------------------------------------ */
/* Processes.                                                           */

/* Starts argv[0] with stdin from `in_fd` (or /dev/null when -1), stdout
 * and stderr appended to `log`; returns its pid, or -1 (reported). */
static pid_t start(char *const argv[], int in_fd, const char *log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (in_fd >= 0)
    posix_spawn_file_actions_adddup2(&fa, in_fd, STDIN_FILENO);
  else
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null",
                                     O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log,
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    failure(NULL, "cannot run %s: %s", argv[0], strerror(rc));
    return -1;
  }
  return pid;
}

/* Waits for `pid` at most `limit` seconds; on timeout kills it (SIGKILL)
 * and returns -1, else its wait status. */
static int wait_bounded(pid_t pid, double limit) {
  double end = now() + limit;
  for (;;) {
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return st;
    if (r < 0 && errno != EINTR) return -2;
    if (now() > end) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    sleep_ms(5);
  }
}

/* Nonzero when `status` is an exit with one of the codes of `ok`
 * (terminated by -1). */
static int exited_with(int status, const int *ok) {
  if (status < 0 || !WIFEXITED(status)) return 0;
  for (; *ok >= 0; ok++)
    if (WEXITSTATUS(status) == *ok) return 1;
  return 0;
}

/* Holds a finished (or hung) process's status to the codes `ok`;
 * reports it otherwise.  Returns 1 when it passed. */
static int judge(const char *what, int status, const int *ok,
                 const char *log) {
  if (exited_with(status, ok)) return 1;
  char how[96];
  describe(status, how, sizeof how);
  if (status == -1)
    failure(log, "%s hung: still running after its bound; killed", what);
  else
    failure(log, "%s: %s", what, how);
  return 0;
}

/* Runs a short command to its end (at most SHORT_LIMIT s) with its output
 * in `log` (emptied first); returns its wait status or -1. */
static int run_short(char *const argv[], const char *log) {
  int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) close(fd);
  pid_t pid = start(argv, -1, log);
  if (pid < 0) return -2;
  return wait_bounded(pid, SHORT_LIMIT);
}

static const int OK_0[] = {0, -1};
static const int OK_01[] = {0, 1, -1};

/* ------------------------------------------------------------------ */
/* The writers.                                                         */

struct writer {
  pid_t pid;
  int ended; /* reaped before the end */
  int in; /* its standard input: closing it ends the writer */
  int victim;
  char log[256];
};
static struct writer writers[NWRITERS];

static void start_writers(void) {
  for (int i = 0; i < NWRITERS; i++) {
    struct writer *w = &writers[i];
    w->victim = with_victim && i == NWRITERS - 1;
    snprintf(w->log, sizeof w->log, "%s/writer%d.log", logdir, i);
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
      failure(NULL, "pipe: %s", strerror(errno));
      exit(1);
    }
    char *argv[] = {writer_prog, ev, w->victim ? "victim" : "checked", NULL};
    w->pid = start(argv, p[0], w->log);
    close(p[0]);
    w->in = p[1];
    if (w->pid < 0) exit(1);
  }
}

/* ------------------------------------------------------------------ */
/* Hostile files.                                                       */

#define NNAMES 10
static atomic_ulong vandal_acts, truncations;

static void hostile_name(char *path, size_t size, unsigned k) {
  /* Pids above pid_max (at most 2^22) belong to no process, ever; the
   * last name is this live process's, which traces nothing. */
  long pid = k + 1 < NNAMES ? 4200000 + (long)k : (long)getpid();
  snprintf(path, size, "%s/%ld.events", ev, pid);
}

static void write_file(const char *path, const void *bytes, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                0600);
  if (fd < 0) return;
  if (n && write(fd, bytes, n) < 0) {
    /* A full disk leaves a shorter hostile file: as good as any. */
  }
  close(fd);
}

/* Overwrites `count` random 8-byte words of the file at `path`. */
static void flip_words(const char *path, unsigned count, uint64_t *rs) {
  int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_size >= 8)
    for (unsigned i = 0; i < count; i++) {
      uint64_t w = ((uint64_t)rnd(rs, 1u << 31) << 33) ^ rnd(rs, 1u << 31);
      if (rnd(rs, 4) == 0) w = UINT64_MAX >> rnd(rs, 64);
      off_t at = (off_t)(rnd(rs, (unsigned)(st.st_size / 8)) * 8);
      if (pwrite(fd, &w, 8, at) < 0) break;
    }
  close(fd);
}

static void copy_prefix(const char *from, const char *to, size_t max) {
  int fd = open(from, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char *buf = malloc(max);
  ssize_t n = buf ? read(fd, buf, max) : -1;
  close(fd);
  if (n > 0) write_file(to, buf, (size_t)n);
  free(buf);
}

static void *vandal(void *arg) {
  (void)arg;
  uint64_t rs = 0x9e3779b97f4a7c15u;
  char path[256], other[256];
  /* Things that are not regular files, made once. */
  snprintf(path, sizeof path, "%s/4200100.events", ev);
  mkfifo(path, 0600);
  snprintf(path, sizeof path, "%s/4200101.events", ev);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/4200102.events", ev);
  if (symlink("/dev/zero", path) != 0) {
    /* Already there: fine. */
  }
  snprintf(path, sizeof path, "%s/notes.txt", ev);
  write_file(path, "not a ring file\n", 16);
  static char text[8192];
  for (size_t i = 0; i < sizeof text; i++) text[i] = "ring file?\n"[i % 11];
  while (!atomic_load(&stopping)) {
    hostile_name(path, sizeof path, rnd(&rs, NNAMES));
    switch (rnd(&rs, 9)) {
    case 0:
      write_file(path, text, 1 + rnd(&rs, sizeof text));
      break;
    case 1:
      copy_prefix("/proc/self/exe", path, 64 * 1024);
      break;
    case 2: { /* zeros, sparse */
      write_file(path, NULL, 0);
      if (truncate(path, 1 + rnd(&rs, 4 << 20)) != 0) {
      }
      break;
    }
    case 3: /* a whole ring file of a dead process, intact or damaged */
    case 4: {
      const char *from = vector;
      pthread_mutex_lock(&pristine_lock);
      if (rnd(&rs, 2)) from = pristine;
      if (from[0]) copy_prefix(from, path, 4 << 20);
      pthread_mutex_unlock(&pristine_lock);
      if (rnd(&rs, 3)) flip_words(path, 1 + rnd(&rs, 4), &rs);
      break;
    }
    case 5: { /* a live writer's file, copied and damaged */
      const struct writer *w = &writers[rnd(&rs, NWRITERS)];
      snprintf(other, sizeof other, "%s/%ld.events", ev, (long)w->pid);
      copy_prefix(other, path, 256 * 1024);
      flip_words(path, rnd(&rs, 3), &rs);
      break;
    }
    case 6: { /* cut short, then grown back */
      struct stat st;
      if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        if (truncate(path, (off_t)rnd(&rs, (unsigned)st.st_size)) != 0) {
        }
        sleep_ms(rnd(&rs, 30));
        if (truncate(path, st.st_size) != 0) {
        }
      }
      break;
    }
    case 7:
      unlink(path);
      break;
    default: /* empty */
      write_file(path, NULL, 0);
    }
    atomic_fetch_add(&vandal_acts, 1);
    sleep_ms(5 + rnd(&rs, 30));
  }
  return NULL;
}

/* The victim's live file, cut under it: to nothing, to part of its size,
 * or to a page and then back to its size. */
static void *truncator(void *arg) {
  (void)arg;
  uint64_t rs = 0x5851f42d4c957f2du;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%ld.events", ev,
           (long)writers[NWRITERS - 1].pid);
  while (!atomic_load(&stopping)) {
    sleep_ms(30 + rnd(&rs, 120));
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size == 0) continue;
    int rc;
    switch (rnd(&rs, 3)) {
    case 0:
      rc = truncate(path, 0);
      break;
    case 1:
      rc = truncate(path, (off_t)rnd(&rs, (unsigned)st.st_size));
      break;
    default:
      rc = truncate(path, 4096);
      sleep_ms(rnd(&rs, 10));
      if (rc == 0) rc = truncate(path, st.st_size);
    }
    if (rc == 0) atomic_fetch_add(&truncations, 1);
  }
  return NULL;
}

/* ------------------------------------------------------------------ */
/* The exporter and its scraper.                                        */

static pid_t exporter_pid;
static char exporter_log[256];
static int exporter_port;
static atomic_ulong scrapes_ok, scrapes_failed, idle_reopened;

static int connect_port(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* One GET /metrics; returns NULL when answered with 200 and a body, else
 * what went wrong. */
static const char *scrape(int port, char *why, size_t size) {
  int fd = connect_port(port);
  if (fd < 0) {
    snprintf(why, size, "connect: %s", strerror(errno));
    return why;
  }
  static const char req[] = "GET /metrics HTTP/1.0\r\nHost: soak\r\n\r\n";
  if (write(fd, req, sizeof req - 1) != (ssize_t)sizeof req - 1) {
    snprintf(why, size, "send: %s", strerror(errno));
    close(fd);
    return why;
  }
  char head[64] = "";
  size_t got = 0, total = 0;
  char buf[16384];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      snprintf(why, size, "receive after %zu bytes: %s", total,
               strerror(errno));
      close(fd);
      return why;
    }
    if (n == 0) break;
    if (got < sizeof head - 1) {
      size_t m = (size_t)n < sizeof head - 1 - got ? (size_t)n
                                                   : sizeof head - 1 - got;
      memcpy(head + got, buf, m);
      got += m;
      head[got] = 0;
    }
    total += (size_t)n;
  }
  close(fd);
  if (strncmp(head, "HTTP/1.", 7) != 0 || strncmp(head + 8, " 200", 4) != 0) {
    head[strcspn(head, "\r\n")] = 0;
    snprintf(why, size, "answer \"%s\" (%zu bytes)", head, total);
    return why;
  }
  return NULL;
}

static void *scraper(void *arg) {
  (void)arg;
  int idle[NIDLE];
  for (int i = 0; i < NIDLE; i++) idle[i] = connect_port(exporter_port);
  while (!atomic_load(&stopping)) {
    char why[256];
    const char *bad = scrape(exporter_port, why, sizeof why);
    if (bad) {
      atomic_fetch_add(&scrapes_failed, 1);
      failure(NULL, "a scrape of the exporter failed: %s", bad);
    } else {
      atomic_fetch_add(&scrapes_ok, 1);
    }
    /* Idle connections the exporter closed (after 5 s) are opened again,
     * so that some are always there. */
    for (int i = 0; i < NIDLE; i++) {
      struct pollfd p = {idle[i], POLLIN, 0};
      if (idle[i] >= 0 && poll(&p, 1, 0) == 0) continue;
      if (idle[i] >= 0) close(idle[i]);
      idle[i] = connect_port(exporter_port);
      atomic_fetch_add(&idle_reopened, 1);
    }
    sleep_ms(100);
  }
  for (int i = 0; i < NIDLE; i++)
    if (idle[i] >= 0) close(idle[i]);
  return NULL;
}

static void start_exporter(void) {
  snprintf(exporter_log, sizeof exporter_log, "%s/metrics.log", logdir);
  char *argv[] = {(char *)tool, "metrics", "--listen", "127.0.0.1:0",
                  "--dir", ev, "--keep", "5", NULL};
  exporter_pid = start(argv, -1, exporter_log);
  if (exporter_pid < 0) exit(1);
  static const char marker[] = "http://127.0.0.1:";
  double end = now() + SHORT_LIMIT;
  while (now() < end) {
    char text[4096];
    tail_of(exporter_log, text, sizeof text);
    const char *s = strstr(text, marker);
    if (s) {
      exporter_port = atoi(s + strlen(marker));
      return;
    }
    int st;
    if (waitpid(exporter_pid, &st, WNOHANG) == exporter_pid) {
      judge("eventring metrics --dir (at its start)", st, (const int[]){-1},
            exporter_log);
      exit(1);
    }
    sleep_ms(20);
  }
  failure(exporter_log, "eventring metrics --dir never said where it serves");
  kill(exporter_pid, SIGKILL);
  exit(1);
}

/* ------------------------------------------------------------------ */
/* Short commands, in turn on each writer.                              */

static atomic_ulong snapshots_ok, snapshots_refused, snapshot_dumps,
    remote_ok, remote_refused;

static void *snapshotter(void *arg) {
  (void)arg;
  char log[256], dlog[256], out[256], pid[32];
  snprintf(log, sizeof log, "%s/snapshot.log", logdir);
  snprintf(dlog, sizeof dlog, "%s/snapshot-dump.log", logdir);
  for (unsigned n = 0; !atomic_load(&stopping); n++) {
    const struct writer *w = &writers[n % NWRITERS];
    snprintf(pid, sizeof pid, "%ld", (long)w->pid);
    snprintf(out, sizeof out, "%s/snap-%u.events", outdir, n);
    char *argv[] = {(char *)tool, "snapshot", "--pid", pid, "--dir", ev,
                    "-o", out, NULL};
    int st = run_short(argv, log);
    /* 1: the writer had no file at that moment (between a stop and a
     * start), or it was cut under the copy. */
    if (!judge("eventring snapshot --pid (a writer)", st, OK_01, log)) {
    } else if (WEXITSTATUS(st) == 0) {
      atomic_fetch_add(&snapshots_ok, 1);
      if (!w->victim) {
        char *dargv[] = {(char *)tool, "dump", out, "-o", "/dev/null", NULL};
        if (judge("eventring dump of a checked writer's snapshot",
                  run_short(dargv, dlog), OK_0, dlog)) {
          pthread_mutex_lock(&pristine_lock);
          snprintf(pristine, sizeof pristine, "%s/pristine.events", outdir);
          rename(out, pristine);
          pthread_mutex_unlock(&pristine_lock);
        }
        atomic_fetch_add(&snapshot_dumps, 1);
      }
    } else {
      atomic_fetch_add(&snapshots_refused, 1);
    }
    unlink(out);
    sleep_ms(150);
  }
  return NULL;
}

static void *remote(void *arg) {
  (void)arg;
  char log[256], pid[32];
  snprintf(log, sizeof log, "%s/remote.log", logdir);
  for (unsigned n = 0; !atomic_load(&stopping); n++) {
    snprintf(pid, sizeof pid, "%ld", (long)writers[n % NWRITERS].pid);
    for (int k = 0; k < 2; k++) {
      char *argv[] = {(char *)tool, k ? "resume" : "pause", "--dir", ev, pid,
                      NULL};
      int st = run_short(argv, log);
      /* 1: no file at that moment, or the writer stopped tracing before
       * it answered. */
      if (judge(k ? "eventring resume (a writer)" : "eventring pause (a writer)",
                st, OK_01, log))
        atomic_fetch_add(WEXITSTATUS(st) ? &remote_refused : &remote_ok, 1);
      sleep_ms(10 + 20 * k);
    }
    sleep_ms(100);
  }
  return NULL;
}

/* ------------------------------------------------------------------ */
/* Long-lived readers.                                                  */

struct follower {
  pid_t pid; /* 0 when none runs */
  char log[256];
  unsigned runs, ended_0, ended_1;
};
static struct follower followers[NWRITERS];

static void follower_start(int i) {
  struct follower *f = &followers[i];
  char pid[32];
  snprintf(pid, sizeof pid, "%ld", (long)writers[i].pid);
  char *argv[] = {(char *)tool, "dump", "--follow", "--pid", pid, "--dir", ev,
                  "-o", "/dev/null", NULL};
  f->pid = start(argv, -1, f->log);
  f->runs++;
}

/* Reaps a follower that ended and holds it to its documented status: 0
 * (its writer gone), 1 (no file at that moment, or, the victim's, a
 * truncated one). */
static void follower_reap(int i, int status) {
  struct follower *f = &followers[i];
  f->pid = 0;
  if (judge("eventring dump --follow --pid (a writer)", status, OK_01, f->log))
    (WEXITSTATUS(status) ? &f->ended_1 : &f->ended_0)[0]++;
}

static pid_t watcher_pid;
static char watcher_log[256];

static void start_watcher(void) {
  snprintf(watcher_log, sizeof watcher_log, "%s/watch.log", logdir);
  char out[256];
  snprintf(out, sizeof out, "%s/watch", outdir);
  mkdir(out, 0700);
  char *argv[] = {(char *)tool, "watch", "--when", "lost", "--when",
                  "span:stress.span>1ms", "--when", "event:soak.never",
                  "--every", "2s", "--max", "40", "--max-memory", "8M",
                  "--dir", ev, "--out", out, NULL};
  watcher_pid = start(argv, -1, watcher_log);
  if (watcher_pid < 0) exit(1);
}

/* ------------------------------------------------------------------ */

static void rm_tree(const char *path) {
  char cmd[PATH_MAX + 32];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
  if (system(cmd) != 0) fprintf(stderr, "soak: could not remove %s\n", path);
}

static double env_seconds(const char *name, double dflt) {
  const char *s = getenv(name);
  char *end;
  double v = s && *s ? strtod(s, &end) : dflt;
  if (s && *s && (*end || v <= 0)) {
    fprintf(stderr, "soak: %s=%s: not a positive number of seconds\n", name,
            s);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  (void)argv;
  if (argc != 1) {
    fprintf(stderr, "usage: SOAK_SECONDS=N [SOAK_GRACE=N] [SOAK_KEEP=1] "
                    "[SOAK_VICTIM=0] soak (run by `make soak`)\n");
    return 2;
  }
  tool = getenv("EVENTRING_TEST_TOOL");
  if (!tool || access(tool, X_OK) != 0) {
    fprintf(stderr, "soak: EVENTRING_TEST_TOOL names no eventring command "
                    "(run it with `make soak`)\n");
    return 2;
  }
  seconds = env_seconds("SOAK_SECONDS", 60);
  grace = env_seconds("SOAK_GRACE", 30);
  const char *v = getenv("SOAK_VICTIM");
  with_victim = !v || strcmp(v, "0") != 0;
  /* The writer is built beside this program. */
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  self[n] = 0;
  *strrchr(self, '/') = 0;
  snprintf(writer_prog, sizeof writer_prog, "%s/soak_writer", self);
  snprintf(base, sizeof base, "/tmp/eventring-soak.XXXXXX");
  if (!mkdtemp(base)) {
    fprintf(stderr, "soak: cannot make a directory in /tmp: %s\n",
            strerror(errno));
    return 1;
  }
  snprintf(ev, sizeof ev, "%s/events", base);
  snprintf(outdir, sizeof outdir, "%s/out", base);
  snprintf(logdir, sizeof logdir, "%s/logs", base);
  mkdir(ev, 0700);
  mkdir(outdir, 0700);
  mkdir(logdir, 0700);
  const char *data = getenv("EVENTRING_TEST_DATA");
  if (data) {
    char cmd[PATH_MAX + 256];
    snprintf(vector, sizeof vector, "%s/vector.events", outdir);
    snprintf(cmd, sizeof cmd, "gzip -dc '%s/ocaml5-multidomain.events.gz' > '%s'",
             data, vector);
    if (system(cmd) != 0) vector[0] = 0;
  }
  /* What every writer gets: few domain slots, small rings; readers and
   * the writers ignore a closed pipe's SIGPIPE in their own way. */
  setenv("OCAMLRUNPARAM", "d=4,e=11", 1);
  unsetenv("OCAML_RUNTIME_EVENTS_START");
  signal(SIGPIPE, SIG_IGN);
  printf("soak: %.0f s in %s (SOAK_KEEP=1 keeps it)\n", seconds, base);
  fflush(stdout);

  start_writers();
  start_exporter();
  start_watcher();
  for (int i = 0; i < NWRITERS; i++) {
    snprintf(followers[i].log, sizeof followers[i].log, "%s/follow%d.log",
             logdir, i);
    follower_start(i);
  }
  pthread_t th[5];
  void *(*fn[5])(void *) = {vandal, truncator, scraper, snapshotter, remote};
  for (int i = 0; i < 5; i++)
    if (fn[i] != truncator || with_victim)
      pthread_create(&th[i], NULL, fn[i], NULL);

  /* The run: followers that end are started again; a writer, the
   * exporter or the watcher that ends before its time is a failure. */
  double end = now() + seconds;
  int early = 0;
  while (now() < end && !early) {
    for (int i = 0; i < NWRITERS; i++) {
      int st;
      if (followers[i].pid > 0 &&
          waitpid(followers[i].pid, &st, WNOHANG) == followers[i].pid) {
        follower_reap(i, st);
        follower_start(i);
      }
      if (!writers[i].ended &&
          waitpid(writers[i].pid, &st, WNOHANG) == writers[i].pid) {
        judge(writers[i].victim ? "soak_writer (victim), before its end"
                                : "soak_writer (checked), before its end",
              st, (const int[]){-1}, writers[i].log);
        writers[i].ended = 1;
        early = 1;
      }
    }
    int st;
    if (waitpid(exporter_pid, &st, WNOHANG) == exporter_pid) {
      judge("eventring metrics --dir, before its end", st, (const int[]){-1},
            exporter_log);
      exporter_pid = 0;
      early = 1;
    }
    if (waitpid(watcher_pid, &st, WNOHANG) == watcher_pid) {
      judge("eventring watch --dir, before its end", st, (const int[]){-1},
            watcher_log);
      watcher_pid = 0;
      early = 1;
    }
    sleep_ms(50);
  }

  /* The end, each step bounded. */
  atomic_store(&stopping, 1);
  for (int i = 0; i < 5; i++)
    if (fn[i] != truncator || with_victim) pthread_join(th[i], NULL);
  for (int i = 0; i < NWRITERS; i++) close(writers[i].in);
  for (int i = 0; i < NWRITERS; i++) {
    if (writers[i].ended) continue;
    char what[96];
    snprintf(what, sizeof what, "soak_writer %ld (%s), its input closed",
             (long)writers[i].pid, writers[i].victim ? "victim" : "checked");
    judge(what, wait_bounded(writers[i].pid, grace), OK_0, writers[i].log);
  }
  for (int i = 0; i < NWRITERS; i++)
    if (followers[i].pid > 0)
      follower_reap(i, wait_bounded(followers[i].pid, grace));
  if (exporter_pid > 0) {
    kill(exporter_pid, SIGTERM);
    judge("eventring metrics --dir, sent SIGTERM",
          wait_bounded(exporter_pid, grace), (const int[]){0, 143, -1},
          exporter_log);
  }
  if (watcher_pid > 0) {
    kill(watcher_pid, SIGTERM);
    /* --dir alone ends on a signal with 128 + its number. */
    judge("eventring watch --dir, sent SIGTERM",
          wait_bounded(watcher_pid, grace), (const int[]){143, -1},
          watcher_log);
  }
  if (atomic_load(&scrapes_ok) == 0)
    failure(exporter_log, "the exporter answered no scrape");

  /* The figures. */
  for (int i = 0; i < NWRITERS; i++) {
    char text[1024];
    tail_of(writers[i].log, text, sizeof text);
    char *line = strstr(text, "soak_writer ");
    while (line && strstr(line + 1, "\nsoak_writer "))
      line = strstr(line + 1, "\nsoak_writer ") + 1;
    if (line) printf("soak: %.*s\n", (int)strcspn(line, "\n"), line);
  }
  unsigned fruns = 0, f0 = 0, f1 = 0;
  for (int i = 0; i < NWRITERS; i++) {
    fruns += followers[i].runs;
    f0 += followers[i].ended_0;
    f1 += followers[i].ended_1;
  }
  printf("soak: exporter: %lu scrapes answered, %lu failed, %lu idle "
         "connections (re)opened\n",
         atomic_load(&scrapes_ok), atomic_load(&scrapes_failed),
         atomic_load(&idle_reopened));
  printf("soak: dump --follow: %u runs (%u ended 0, %u ended 1); snapshot: "
         "%lu taken (%lu dumped), %lu refused; pause/resume: %lu done, %lu "
         "refused\n", fruns, f0, f1, atomic_load(&snapshots_ok),
         atomic_load(&snapshot_dumps), atomic_load(&snapshots_refused),
         atomic_load(&remote_ok), atomic_load(&remote_refused));
  printf("soak: hostile files: %lu acts; the victim's file cut %lu times\n",
         atomic_load(&vandal_acts), atomic_load(&truncations));
  if (failures) {
    printf("soak: FAILED: %d failures; logs kept in %s\n", failures, base);
  } else {
    printf("soak: passed: nothing hung or died, every reader ended as "
           "documented, every checked file's accounting held\n");
    if (!getenv("SOAK_KEEP")) rm_tree(base);
  }
  fflush(stdout);
  return failures ? 1 : 0;
}
