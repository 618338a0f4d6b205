/* Under load -- writers of every event kind, readers in this process and in another, tracing started, paused, resumed, stopped and forked over and over: every delivered event is intact and in order, and delivered + lost == written for every reader, file and domain. */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>

#include "eventring.h"
#include "harness.h"
#include "progs/stress_check.h"
#include "ring_format.h"
#include "testlib.h"

extern char **environ;

#define NFIXED 3      /* writer threads that live through the whole test */
#define NEPHEMERAL 2  /* writer threads per cycle that write and exit */
#define NREADERS 3    /* in-process readers per cycle */
#define NDIRS 4       /* directories the cycles take turns in */
#define NSLOTS 16     /* OCAMLRUNPARAM d= */

/* Ring sizes (log2 of words) the cycles take turns with: small ones wrap
 * many times a cycle, the largest seldom. */
static const int ring_log2[] = {10, 11, 12, 14};
/* Iterations a forked child writes: fewer than fill a 1024-word ring, and
 * many times more. */
static const uint64_t child_iters[] = {20, 300, 3000};

static struct st_ids ids;
static eventring_callbacks *cb;
static int stop_writers;  /* atomic: the fixed writers end */
static int custom_errors; /* atomic: eventring_write_custom() failures */

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

/* The schedule's randomness: a fixed seed, so that a run is repeatable in
 * what it chooses (not in how the threads interleave). */
static uint64_t rng = 0x9e3779b97f4a7c15u;
static unsigned rnd(unsigned n) {
  rng = st_mix(rng + 0x9e3779b97f4a7c15u);
  return (unsigned)(rng % n);
}

static double stress_seconds(void) {
  const char *env = getenv("EVENTRING_STRESS_SECONDS");
  if (env && atof(env) > 0) return atof(env);
  const char *san = getenv("EVENTRING_SANITIZER");
  return san && *san && strcmp(san, "none") != 0 ? 8 : 20;
}

/* Poll limits that make polls end at every kind of place. */
static size_t poll_limit(unsigned long n) {
  static const size_t limits[] = {0, 7, 1000, 1, 64, 0, 300};
  return limits[n % (sizeof limits / sizeof limits[0])];
}

/* ------------------------------------------------------------------ */
/* Writers.                                                             */

static void *fixed_writer(void *arg) {
  unsigned w = (unsigned)(uintptr_t)arg;
  unsigned char buf[ST_MAX_CUSTOM];
  for (uint64_t s = 0; !__atomic_load_n(&stop_writers, __ATOMIC_RELAXED);
       s++) {
    if (st_iteration(&ids, w, s, buf) != 0)
      __atomic_add_fetch(&custom_errors, 1, __ATOMIC_RELAXED);
    /* The machine may have fewer cores than threads: leave them to the
     * controlling thread and the readers now and then, and mostly while
     * tracing is off. */
    if ((s & 63) == 0) sched_yield();
    if (!eventring_is_active()) sleep_us(50);
  }
  return NULL;
}

/* A thread that takes a slot, writes `n` iterations and exits, giving the
 * slot back (domain_terminate) for a later one to take (domain_spawn). */
struct ephemeral {
  pthread_t th;
  unsigned w;
  uint64_t s0, n;
};

static void *ephemeral_writer(void *arg) {
  struct ephemeral *e = arg;
  unsigned char buf[ST_MAX_CUSTOM];
  for (uint64_t i = 0; i < e->n; i++) {
    if (st_iteration(&ids, e->w, e->s0 + i, buf) != 0)
      __atomic_add_fetch(&custom_errors, 1, __ATOMIC_RELAXED);
    if ((i & 63) == 0) sched_yield();
  }
  return NULL;
}

/* ------------------------------------------------------------------ */
/* Readers in this process: one cursor each, polled from a thread of its
 * own while the file is written, then drained once tracing stopped. */

struct reader {
  pthread_t th;
  int mode; /* 0: opened by the test's thread as "this process's file",
               1: by directory and pid, 2: by path, a little late */
  const char *dir, *path;
  eventring_cursor *c;
  int stop; /* atomic: tracing has stopped */
  int err;
  unsigned long polls;
  struct st_reader rd;
};

static void *reader_main(void *arg) {
  struct reader *r = arg;
  if (r->mode == 1) {
    r->err = eventring_cursor_open(&r->c, r->dir, getpid());
  } else if (r->mode == 2) {
    sleep_us(2000);
    r->err = eventring_cursor_open_file(&r->c, r->path);
  }
  if (r->err) return NULL;
  for (;;) {
    /* Pairs with the release store after eventring_stop() returned: the
     * polls from here on see the whole, quiescent file. */
    int stop = __atomic_load_n(&r->stop, __ATOMIC_ACQUIRE);
    int n = eventring_cursor_poll(r->c, cb, &r->rd,
                                  stop ? 0 : poll_limit(r->polls + r->mode));
    r->polls++;
    if (n < 0) {
      r->err = n;
      return NULL;
    }
    r->rd.polled += (uint64_t)n;
    if (n == 0) {
      if (stop) break;
      sched_yield();
    }
  }
  return NULL;
}

/* ------------------------------------------------------------------ */
/* The reader in another process (progs/stress_reader).                */

static pid_t helper;
static FILE *to_helper, *from_helper;

static void helper_start(const char *progs) {
  char prog[PATH_MAX];
  snprintf(prog, sizeof prog, "%s/stress_reader", progs);
  ck_assert_msg(access(prog, X_OK) == 0, "%s: %s", prog, strerror(errno));
  int in[2], out[2];
  ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
  ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  /* dup2 clears close-on-exec on the copies. */
  posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  char *argv[] = {prog, NULL};
  int rc = posix_spawn(&helper, prog, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  ck_assert_msg(rc == 0, "posix_spawn %s: %s", prog, strerror(rc));
  close(in[0]);
  close(out[1]);
  to_helper = fdopen(in[1], "w");
  from_helper = fdopen(out[0], "r");
  ck_assert(to_helper && from_helper);
}

static void helper_open(const char *dir) {
  fprintf(to_helper, "open %s %ld 0 %u\n", dir, (long)getpid(), NFIXED);
  ck_assert_int_eq(fflush(to_helper), 0);
}

static void helper_finish(struct st_reader *rd) {
  fprintf(to_helper, "stop\n");
  ck_assert_int_eq(fflush(to_helper), 0);
  char line[128];
  int rc = -1;
  ck_assert_msg(fgets(line, sizeof line, from_helper) &&
                    sscanf(line, "opened %d", &rc) == 1,
                "stress_reader did not answer");
  ck_assert_msg(rc == 0, "stress_reader: open: %s", eventring_strerror(rc));
  memset(rd->dom, 0, sizeof rd->dom);
  ck_assert_msg(st_read_report(from_helper, rd) == 0, "stress_reader: %s",
                rd->first);
}

static void helper_end(void) {
  fclose(to_helper);
  int status;
  ck_assert_int_eq(waitpid(helper, &status, 0), helper);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "stress_reader ended with status %#x", status);
  fclose(from_helper);
}

/* ------------------------------------------------------------------ */
/* Checks.                                                              */

struct totals {
  uint64_t written;
  /* In-process cursors, the other process's, cursors on the children's
   * files, and the file's final contents decoded by ringfile.c. */
  uint64_t delivered[4], lost[4];
  uint64_t kinds[ST_K_N]; /* what the in-process readers saw, by kind */
  uint64_t skips_paused;  /* gaps that pauses explain */
  unsigned cycles, pauses, forks, child_files, ephemerals, reader_runs;
};
enum { IN_PROCESS, OTHER_PROCESS, CHILD_CURSOR, FINAL_CONTENTS };

static void account(struct totals *t, int who, const struct st_reader *rd) {
  t->delivered[who] += st_total_delivered(rd);
  t->lost[who] += st_total_lost(rd);
  if (who == IN_PROCESS)
    for (int k = 0; k < ST_K_N; k++) t->kinds[k] += rd->kinds[k];
}

/* One reader's accounting held against the file: every event it was given
 * intact and in order, none gone untold (unless a pause explains it), and
 * delivered + lost == WRITTEN in every domain. */
static void check_reader(const struct rf_file *f, const struct st_reader *rd,
                         const char *who, const char *path, int paused,
                         struct totals *t) {
  ck_assert_msg(rd->bad == 0 && rd->order == 0,
                "%s on %s: %llu bad, %llu out of order; first: %s", who, path,
                (unsigned long long)rd->bad, (unsigned long long)rd->order,
                rd->first);
  ck_assert_msg(paused || rd->skips == 0,
                "%s on %s: %llu gaps with no loss told; first: %s", who, path,
                (unsigned long long)rd->skips, rd->first);
  t->skips_paused += rd->skips;
  for (int d = 0; d < ST_MAX_DOMAINS; d++) {
    uint64_t written = (uint64_t)d < f->max_domains ? f->rings[d].written : 0;
    const struct st_dom *dm = &rd->dom[d];
    ck_assert_msg(dm->delivered + dm->lost == written,
                  "%s on %s, domain %d: delivered %llu + lost %llu != "
                  "written %llu", who, path, d,
                  (unsigned long long)dm->delivered,
                  (unsigned long long)dm->lost, (unsigned long long)written);
  }
  ck_assert_msg(rd->polled == st_total_delivered(rd),
                "%s on %s: polls returned %llu, callbacks saw %llu", who, path,
                (unsigned long long)rd->polled,
                (unsigned long long)st_total_delivered(rd));
}

/* Feeds the events ringfile.c decoded from the file through the same
 * checks, as a reader that finds each ring's evicted events lost. */
static void read_final(const struct rf_file *f, struct st_reader *rd) {
  for (uint64_t d = 0; d < f->max_domains; d++) {
    const struct rf_ring *r = &f->rings[d];
    if (r->evicted) st_on_lost(rd, (int)d, r->evicted);
    for (size_t i = 0; i < r->nevents; i++) {
      const struct rf_event *e = &r->events[i];
      int dom = (int)d;
      if (!e->is_user) {
        switch (e->type) {
        case ER_EV_BEGIN:
          st_on_begin(rd, dom, e->ts, (int)e->id);
          break;
        case ER_EV_END:
          st_on_end(rd, dom, e->ts, (int)e->id);
          break;
        case ER_EV_COUNTER:
          st_on_counter(rd, dom, e->ts, (int)e->id, e->payload[0]);
          break;
        case ER_EV_LIFECYCLE: {
          int has = e->len == 3 && e->id != EVENTRING_LIFECYCLE_RING_STOP;
          st_on_lifecycle(rd, dom, e->ts, (int)e->id,
                          has ? (int64_t)e->payload[0] : 0, has);
          break;
        }
        default:
          st_on_alloc(rd, dom, e->ts, e->payload);
        }
        continue;
      }
      const char *name = rf_user_name(f, e->id);
      switch (e->type) {
      case ER_UEV_UNIT:
        st_on_unit(rd, dom, e->ts, (int)e->id, name);
        break;
      case ER_UEV_INT:
        st_on_int(rd, dom, e->ts, (int)e->id, name, (int64_t)e->payload[0]);
        break;
      case ER_UEV_SPAN_BEGIN:
      case ER_UEV_SPAN_END:
        st_on_span(rd, dom, e->ts, (int)e->id, name,
                   e->type == ER_UEV_SPAN_END);
        break;
      default:
        st_on_custom(rd, dom, e->ts, (int)e->id, name, e->custom,
                     e->custom_len);
      }
    }
  }
  rd->polled = st_total_delivered(rd);
}

/* What every file must be, whoever wrote it: each ring's counts agree with
 * what lies between head and tail.  The extension block's DROPPED word
 * may count first events: a thread's first event that would have to wait
 * for a control operation (the cycles' pause, stop, fork) drops instead
 * (doc/GUARANTEES.md), and the thread's next event takes its slot. */
static void check_file_shape(const struct rf_file *f, const char *path,
                             pid_t pid, int log2) {
  ck_assert(f->has_ext);
  ck_assert_uint_eq(f->ext[ER_EXT_PID], (uint64_t)pid);
  ck_assert_uint_eq(f->max_domains, NSLOTS);
  ck_assert_uint_eq(f->ring_words, (uint64_t)1 << log2);
  for (uint64_t d = 0; d < f->max_domains; d++) {
    const struct rf_ring *r = &f->rings[d];
    ck_assert_msg(r->written - r->evicted == r->nevents && r->dropped == 0 &&
                      r->pair_head == r->head,
                  "%s ring %d: written %llu, evicted %llu, %zu decoded, "
                  "dropped %llu, pair head %llu, head %llu", path, (int)d,
                  (unsigned long long)r->written,
                  (unsigned long long)r->evicted, r->nevents,
                  (unsigned long long)r->dropped,
                  (unsigned long long)r->pair_head,
                  (unsigned long long)r->head);
  }
}

static uint64_t total_written(const struct rf_file *f) {
  uint64_t n = 0;
  for (uint64_t d = 0; d < f->max_domains; d++) n += f->rings[d].written;
  return n;
}

/* ------------------------------------------------------------------ */
/* Fork: the child writes a little into a file of its own and exits; a
 * cursor here reads that file while it is written.                    */

static void child_main(int ready_fd, uint64_t iters, int stop) {
  int status = 0;
  if (!eventring_is_active()) status = 3;
  /* A forked child's file is made at its first event or when asked for:
   * made now, so that the parent's cursor finds it at the ready byte. */
  if (eventring_path() == NULL) status = 7;
  char c = 'r';
  if (write(ready_fd, &c, 1) != 1) status = 4;
  close(ready_fd);
  unsigned char buf[ST_MAX_CUSTOM];
  for (uint64_t s = 0; s < iters; s++) {
    if (st_iteration(&ids, ST_CHILD_WRITER, s, buf) != 0) status = 5;
    /* Stretch the writing over a while, for the parent's cursor. */
    if (s % 100 == 99) sleep_us(100);
  }
  /* Either the orderly end (ring_stop, the file kept) or an abrupt one,
   * after which the file is still complete. */
  if (stop && eventring_stop() != 0) status = 6;
  _exit(status);
}

static void fork_and_check(const char *dir, int k, int log2,
                           struct totals *t) {
  int with_api = k % 2 == 0, stop = k % 4 < 2;
  uint64_t iters = child_iters[k % 3];
  int p[2];
  ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = with_api ? eventring_fork() : fork();
  if (pid == 0) {
    close(p[0]);
    child_main(p[1], iters, stop);
  }
  ck_assert_int_gt(pid, 0);
  close(p[1]);
  char c;
  ck_assert_msg(read(p[0], &c, 1) == 1, "child %ld died at once", (long)pid);
  close(p[0]);

  /* The child's file exists now (it asked for it): read it while
   * the child writes, then drain it once the child is gone. */
  eventring_cursor *cur = NULL;
  int rc = eventring_cursor_open(&cur, dir, pid);
  ck_assert_msg(rc == 0, "cursor on child %ld: %s", (long)pid,
                eventring_strerror(rc));
  static struct st_reader rd;
  st_reader_init(&rd, pid, getpid(), ST_MAX_WRITERS);
  int status = 0, gone = 0;
  double t0 = er_now();
  for (unsigned long n = 0;; n++) {
    if (!gone && waitpid(pid, &status, WNOHANG) == pid) gone = 1;
    int r = eventring_cursor_poll(cur, cb, &rd, gone ? 0 : poll_limit(n));
    ck_assert_msg(r >= 0, "poll of child %ld: %s", (long)pid,
                  eventring_strerror(r));
    rd.polled += (uint64_t)r;
    if (r == 0) {
      if (gone) break;
      sched_yield();
    }
    ck_assert_msg(er_now() - t0 < 60, "child %ld runs on", (long)pid);
  }
  eventring_cursor_free(cur);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "child %ld ended with status %#x", (long)pid, status);

  char path[PATH_MAX];
  er_ring_path_for(path, sizeof path, dir, pid);
  struct rf_file f;
  er_open_ring(path, &f);
  check_file_shape(&f, path, pid, log2);
  /* ring_start, fork_child, the iterations, and ring_stop if it stopped. */
  ck_assert_uint_eq(total_written(&f), 2 + ST_STEPS * iters + (uint64_t)stop);
  ck_assert_uint_eq(
      rf_count(&f, -1, 0, ER_EV_LIFECYCLE, EVENTRING_LIFECYCLE_RING_STOP),
      (size_t)stop);
  int wrapped = 0;
  for (uint64_t d = 0; d < f.max_domains; d++)
    wrapped |= f.rings[d].evicted > 0;
  if (!wrapped) {
    ck_assert_uint_eq(
        rf_count(&f, -1, 0, ER_EV_LIFECYCLE, EVENTRING_LIFECYCLE_RING_START),
        1);
    ck_assert_uint_eq(
        rf_count(&f, -1, 0, ER_EV_LIFECYCLE, EVENTRING_LIFECYCLE_FORK_CHILD),
        1);
  }
  check_reader(&f, &rd, "cursor on child", path, 0, t);
  account(t, CHILD_CURSOR, &rd);
  st_reader_init(&rd, pid, getpid(), ST_MAX_WRITERS);
  read_final(&f, &rd);
  check_reader(&f, &rd, "final contents", path, 0, t);
  account(t, FINAL_CONTENTS, &rd);
  t->written += total_written(&f);
  t->child_files++;
  rf_close(&f);
  ck_assert_int_eq(unlink(path), 0);
}

/* ------------------------------------------------------------------ */
/* The test.                                                            */

START_TEST(test_under_load) {
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  if (!progs) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  const char *tracing = getenv("EVENTRING_TRACING");
  if (tracing && !strcmp(tracing, "no")) ER_SKIP("tracing is compiled out");
  double seconds = stress_seconds();
  /* EVENTRING_STRESS_FORKS=0 leaves forks out, for a sanitizer that
   * cannot follow them. */
  const char *fk = getenv("EVENTRING_STRESS_FORKS");
  int forks = !fk || atoi(fk) != 0;
  if (!forks) printf("stress: forks left out (EVENTRING_STRESS_FORKS=0)\n");
  /* A reader that died must fail the test with a message, not kill it. */
  signal(SIGPIPE, SIG_IGN);

  /* Each cycle's files go to a directory that the previous cycle there
   * left empty, so that no name can collide; all are removed at the end
   * (and by the harness when a check fails). */
  char dirs[NDIRS][64];
  for (int i = 0; i < NDIRS; i++)
    snprintf(dirs[i], sizeof dirs[i], "%s", er_tmpdir());
  ck_assert_int_eq(st_register(&ids), 0);
  cb = st_callbacks();
  ck_assert_ptr_nonnull(cb);
  helper_start(progs);

  pthread_t fixed[NFIXED];
  for (uintptr_t w = 0; w < NFIXED; w++)
    ck_assert_int_eq(
        pthread_create(&fixed[w], NULL, fixed_writer, (void *)w), 0);

  static struct reader readers[NREADERS];
  static struct st_reader other, final;
  static uint64_t next_seq[ST_MAX_WRITERS];
  struct totals t = {0};
  unsigned next_ephemeral = 0;
  double deadline = er_now() + seconds;

  while (er_now() < deadline) {
    unsigned i = t.cycles++;
    const char *dir = dirs[i % NDIRS];
    ck_assert_msg(er_count_entries(dir, "") == 0, "%s: files left from a cycle",
                  dir);
    int log2 = ring_log2[i % (sizeof ring_log2 / sizeof ring_log2[0])];
    char param[32];
    snprintf(param, sizeof param, "e=%d,d=%d", log2, NSLOTS);
    setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
    setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
    setenv("OCAMLRUNPARAM", param, 1);

    ck_assert_int_eq(eventring_start(), 0);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", eventring_path());

    for (int k = 0; k < NREADERS; k++) {
      struct reader *r = &readers[k];
      r->mode = k % 3;
      r->dir = dir;
      r->path = path;
      r->c = NULL;
      r->stop = 0;
      r->err = 0;
      r->polls = 0;
      st_reader_init(&r->rd, getpid(), 0, NFIXED);
      if (r->mode == 0)
        ck_assert_int_eq(eventring_cursor_open(&r->c, NULL, 0), 0);
      ck_assert_int_eq(pthread_create(&r->th, NULL, reader_main, r), 0);
    }
    helper_open(dir);

    struct ephemeral eph[NEPHEMERAL];
    for (int k = 0; k < NEPHEMERAL; k++) {
      unsigned w = NFIXED + next_ephemeral++ % (ST_CHILD_WRITER - NFIXED);
      eph[k].w = w;
      eph[k].s0 = next_seq[w];
      eph[k].n = 20 + rnd(2000);
      ck_assert_int_eq(
          pthread_create(&eph[k].th, NULL, ephemeral_writer, &eph[k]), 0);
      t.ephemerals++;
    }

    sleep_us(2000 + rnd(20000));
    int paused = i % 2 == 1, forks_with_api = 0;
    if (paused) {
      eventring_pause();
      ck_assert_int_eq(eventring_is_active(), 0);
      sleep_us(500 + rnd(5000));
      eventring_resume();
      ck_assert_int_eq(eventring_is_active(), 1);
      t.pauses++;
    }
    if (forks && i % 3 == 0) {
      /* Only while recording: a child forked while paused starts paused. */
      unsigned k = t.forks++;
      forks_with_api = k % 2 == 0;
      fork_and_check(dir, (int)k, log2, &t);
    }
    sleep_us(rnd(10000));
    ck_assert_int_eq(eventring_stop(), 0);

    for (int k = 0; k < NEPHEMERAL; k++) {
      ck_assert_int_eq(pthread_join(eph[k].th, NULL), 0);
      next_seq[eph[k].w] = eph[k].s0 + eph[k].n;
    }
    for (int k = 0; k < NREADERS; k++) {
      __atomic_store_n(&readers[k].stop, 1, __ATOMIC_RELEASE);
      ck_assert_int_eq(pthread_join(readers[k].th, NULL), 0);
    }
    st_reader_init(&other, getpid(), 0, NFIXED);
    helper_finish(&other);

    struct rf_file f;
    er_open_ring(path, &f);
    check_file_shape(&f, path, getpid(), log2);
    ck_assert_uint_eq(
        rf_count(&f, -1, 0, ER_EV_LIFECYCLE, EVENTRING_LIFECYCLE_RING_START),
        1);
    ck_assert_uint_eq(
        rf_count(&f, -1, 0, ER_EV_LIFECYCLE, EVENTRING_LIFECYCLE_RING_STOP), 1);
    ck_assert_uint_eq(
        rf_count(&f, -1, 0, ER_EV_LIFECYCLE, EVENTRING_LIFECYCLE_RING_PAUSE),
        (size_t)paused);
    ck_assert_uint_eq(
        rf_count(&f, -1, 0, ER_EV_LIFECYCLE, EVENTRING_LIFECYCLE_RING_RESUME),
        (size_t)paused);
    ck_assert_uint_eq(
        rf_count(&f, -1, 0, ER_EV_LIFECYCLE, EVENTRING_LIFECYCLE_FORK_PARENT),
        (size_t)forks_with_api);
    t.written += total_written(&f);

    for (int k = 0; k < NREADERS; k++) {
      struct reader *r = &readers[k];
      ck_assert_msg(r->err == 0, "reader %d (mode %d): %s", k, r->mode,
                    eventring_strerror(r->err));
      ck_assert_int_eq(eventring_cursor_lost_unit(r->c), EVENTRING_LOST_EVENTS);
      ck_assert_int_eq(eventring_cursor_max_domains(r->c), NSLOTS);
      char who[64];
      snprintf(who, sizeof who, "in-process reader %d", k);
      check_reader(&f, &r->rd, who, path, paused, &t);
      account(&t, IN_PROCESS, &r->rd);
      eventring_cursor_free(r->c);
      t.reader_runs++;
    }
    check_reader(&f, &other, "reader in another process", path, paused, &t);
    account(&t, OTHER_PROCESS, &other);
    st_reader_init(&final, getpid(), 0, NFIXED);
    read_final(&f, &final);
    check_reader(&f, &final, "final contents", path, paused, &t);
    account(&t, FINAL_CONTENTS, &final);
    rf_close(&f);
    ck_assert_int_eq(unlink(path), 0);
  }

  __atomic_store_n(&stop_writers, 1, __ATOMIC_RELAXED);
  for (int w = 0; w < NFIXED; w++) pthread_join(fixed[w], NULL);
  helper_end();
  ck_assert_int_eq(__atomic_load_n(&custom_errors, __ATOMIC_RELAXED), 0);

  printf("stress: %.0f s, %u cycles (%u paused), %u forks, %u ephemeral "
         "writers; %llu events written in %u files\n",
         seconds, t.cycles, t.pauses, t.forks, t.ephemerals,
         (unsigned long long)t.written, t.cycles + t.child_files);
  static const char *const names[] = {
      "in-process readers", "reader in another process",
      "cursors on children", "final contents"};
  for (int k = 0; k < 4; k++)
    printf("stress: %-26s %12llu delivered %12llu lost\n", names[k],
           (unsigned long long)t.delivered[k], (unsigned long long)t.lost[k]);
  printf("stress: %llu sequence gaps in paused files (explained by pauses)\n",
         (unsigned long long)t.skips_paused);
  static const char *const kinds[ST_K_N] = {
      "begin", "end", "counter", "int", "custom", "span", "unit", "lifecycle"};
  printf("stress: in-process readers saw");
  for (int k = 0; k < ST_K_N; k++)
    printf(" %s %llu", kinds[k], (unsigned long long)t.kinds[k]);
  printf("\n");
  fflush(stdout);
  for (int k = 0; k < ST_K_N; k++)
    ck_assert_msg(t.kinds[k] > 0, "no %s event was delivered", kinds[k]);

  ck_assert_uint_ge(t.cycles, 1);
  for (int k = 0; k < 4; k++)
    if (k != CHILD_CURSOR || t.forks)
      ck_assert_uint_gt(t.delivered[k], 0);
  for (int k = 0; k < NREADERS; k++) st_reader_free(&readers[k].rd);
  st_reader_free(&other);
  st_reader_free(&final);
  eventring_callbacks_free(cb);
  for (int i = 0; i < NDIRS; i++) er_rmdir(dirs[i]);
}
END_TEST

static TCase *tc_stress(void) {
  TCase *tc = er_tcase("under load");
  /* The run's own length plus the final drains and checks, which a
   * sanitizer build makes slow. */
  tcase_set_timeout(tc, stress_seconds() + 90);
  tcase_add_test(tc, test_under_load);
  return tc;
}

ER_TEST_MAIN("stress", tc_stress)
