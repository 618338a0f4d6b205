/* soak_writer -- a traced process for the adversarial soak
 * (testsuite/soak/soak.c): everything a host may do to the library at
 * once, with the stress test's event scheme (stress_check.h) so that every
 * file it leaves undamaged can be held to its accounting.
 *
 *   soak_writer DIR checked|victim
 *
 * Until its standard input reaches its end, the main thread starts
 * tracing into DIR, reads its own file with cursors, pauses and resumes,
 * registers events, forks a child that traces too, and stops, over and
 * over; two writer threads write for the whole run; short-lived threads
 * come and go, more of them at once than the domain slots the driver
 * gives (OCAMLRUNPARAM d=), each with a timer of its own firing SIGALRM
 * into it; and an interval timer fires SIGALRM into the main thread
 * while it starts, stops, registers and forks.  Every SIGALRM handler
 * writes a counter and a user int (the scheme's writer SIG_WRITER).
 *
 * A "checked" writer holds every file it stopped (its own and its
 * children's) to the reader's checks: every event intact and in order,
 * delivered + lost == WRITTEN in every domain, for each in-process
 * cursor and for the file's final contents.  A "victim" writer's files
 * are truncated under it by the driver: it checks nothing but that it
 * survives, and that its readers fail only as a truncated or corrupt
 * file allows.
 *
 * On its end it prints one line, "soak_writer PID: ok ..." with its
 * figures, or "soak_writer PID: FAILED ..." after one line per problem
 * on standard error.  Exit status 0, 1 when a check failed, 2 on a usage
 * error.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ring_format.h"
#include "ringfile.h"
#include "progs/stress_check.h"

#define NFIXED 2        /* writers 0 and 1, for the whole run */
#define NCHURN 6        /* short-lived threads alive at once */
#define CHURN_IDS 126   /* churn threads' writer ids: 2 .. 127 */
#define SIG_WRITER 254  /* the main thread's signal handlers' writer id */
#define NREADERS 3      /* in-process cursors per file */

static const char *dir;
static int victim;
static struct st_ids ids;
static eventring_callbacks *cb;
static atomic_int stop_all;
static atomic_uint_fast64_t sig_events, custom_errors, churned;

/* The writer id and next iteration of this thread's signal handlers:
 * each thread's own sequence (SIG_WRITER for the main thread, 128 .. 253
 * for the churn threads, each id's sequence going on from its previous
 * thread), so that readers' order checks hold whichever thread a domain
 * slot passes to.  Only this thread's handlers touch them. */
static __thread unsigned sig_writer = SIG_WRITER;
static __thread uint64_t sig_next;

/* What this process saw, printed at the end. */
static struct {
  unsigned cycles, files_checked, forks, pauses, registers, reader_errors;
  uint64_t written, delivered, lost, dropped, ext_dropped, skips;
  unsigned failures;
} tot;

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Per thread: the main thread and the churn thread draw from it. */
static __thread uint64_t rng = 0x243f6a8885a308d3u;
static unsigned rnd(unsigned n) {
  rng = st_mix(rng + 0x9e3779b97f4a7c15u);
  return (unsigned)(rng % n);
}

static __attribute__((format(printf, 1, 2))) void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "soak_writer %ld: ", (long)getpid());
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  tot.failures++;
}

/* A line on standard error that explains a failure reported beside it;
 * not a failure of its own. */
static __attribute__((format(printf, 1, 2))) void note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "soak_writer %ld:   ", (long)getpid());
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ------------------------------------------------------------------ */
/* Signal handlers' probes: a counter and a user int of the thread's
 * handler writer's next iteration, two of the scheme's steps, so that readers check their
 * payloads like any other; what they interrupt shows as a break in a
 * sequence (a "skip"), which is why the soak does not count skips as
 * failures. */

/* Set by a handler that ran while the library still traced into another
 * process's file: in a forked child, before eventring's fork handler gave
 * the parent's file up, its probes write into the parent's rings. */
static volatile sig_atomic_t alarm_in_parents_file;

/* Whether the file being traced into is another process's (the path
 * ends in PID.events); async-signal-safe. */
static int tracing_into_other_process(void) {
  const char *path = eventring_path();
  if (!path) return 0;
  const char *base = strrchr(path, '/');
  long pid = strtol(base ? base + 1 : path, NULL, 10);
  return pid != (long)getpid();
}

static void on_alarm(int sig) {
  (void)sig;
  int saved = errno;
  if (tracing_into_other_process()) alarm_in_parents_file = 1;
  uint64_t s = sig_next++;
  uint64_t v = st_pack(sig_writer, s);
  eventring_counter((eventring_counter_id)st_counter(sig_writer, s), v);
  eventring_write_int(ids.i, (int64_t)v);
  atomic_fetch_add_explicit(&sig_events, 1, memory_order_relaxed);
  errno = saved;
}

static void block_alarm(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGALRM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
}

static void interval_timer(long us) {
  struct itimerval it = {{0, us}, {0, us}};
  setitimer(ITIMER_REAL, &it, NULL);
}

/* ------------------------------------------------------------------ */
/* Writers.                                                             */

static void *fixed_writer(void *arg) {
  unsigned w = (unsigned)(uintptr_t)arg;
  unsigned char buf[ST_MAX_CUSTOM];
  block_alarm();
  for (uint64_t s = 0; !atomic_load(&stop_all); s++) {
    if (st_iteration(&ids, w, s, buf) != 0) atomic_fetch_add(&custom_errors, 1);
    if ((s & 63) == 0) sched_yield();
    if (!eventring_is_active()) sleep_us(100);
  }
  return NULL;
}

struct churn {
  pthread_t th;
  atomic_int done;
  int live;
  unsigned w;
  uint64_t s0, n;
  uint64_t sig_s0, sig_end; /* its handlers' sequence */
  long timer_us;
};

/* A short-lived thread: a timer of its own fires SIGALRM into it (its
 * first event, taking a slot, included), it writes a few iterations and
 * exits, giving its slot back, if it had one. */
static void *churn_thread(void *arg) {
  struct churn *c = arg;
  sig_writer = c->w + CHURN_IDS;
  sig_next = c->sig_s0;
  timer_t t;
  struct sigevent sev = {0};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGALRM;
  sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
  int have_timer = timer_create(CLOCK_MONOTONIC, &sev, &t) == 0;
  if (have_timer) {
    struct itimerspec its = {{0, c->timer_us * 1000}, {0, c->timer_us * 1000}};
    timer_settime(t, 0, &its, NULL);
  }
  unsigned char buf[ST_MAX_CUSTOM];
  for (uint64_t i = 0; i < c->n; i++)
    if (st_iteration(&ids, c->w, c->s0 + i, buf) != 0)
      atomic_fetch_add(&custom_errors, 1);
  if (have_timer) timer_delete(t);
  block_alarm();
  c->sig_end = sig_next;
  atomic_store(&c->done, 1);
  return NULL;
}

/* Keeps NCHURN short-lived threads going, with writer ids 2 .. 127 in
 * turn (never two alive with one id) and each id's sequence going on
 * from where its last thread left it, so that order checks hold. */
static void *churn_main(void *arg) {
  (void)arg;
  block_alarm();
  static struct churn c[NCHURN];
  static uint64_t next_seq[ST_MAX_WRITERS], next_sig[ST_MAX_WRITERS];
  unsigned next_w = 0;
  while (!atomic_load(&stop_all)) {
    for (int k = 0; k < NCHURN; k++) {
      if (c[k].live) {
        if (!atomic_load(&c[k].done)) continue;
        pthread_join(c[k].th, NULL);
        next_sig[c[k].w] = c[k].sig_end;
        c[k].live = 0;
      }
      c[k].w = NFIXED + next_w++ % CHURN_IDS;
      c[k].s0 = next_seq[c[k].w];
      c[k].sig_s0 = next_sig[c[k].w];
      c[k].n = 5 + rnd(300);
      next_seq[c[k].w] += c[k].n;
      c[k].timer_us = 100 + rnd(400);
      atomic_store(&c[k].done, 0);
      if (pthread_create(&c[k].th, NULL, churn_thread, &c[k]) == 0) {
        c[k].live = 1;
        atomic_fetch_add(&churned, 1);
      }
    }
    /* Thousands of threads a second would leave the machine's two cores
     * to thread creation alone. */
    sleep_us(2000);
  }
  for (int k = 0; k < NCHURN; k++)
    if (c[k].live) pthread_join(c[k].th, NULL);
  return NULL;
}

/* ------------------------------------------------------------------ */
/* In-process readers: one cursor each on this process's file, polled
 * while it is written and drained once tracing stopped.                */

struct reader {
  pthread_t th;
  int k;    /* its index, for the copy a corrupt file leaves */
  unsigned cycle;
  int mode; /* 0: this process's own file (mapped), 1: by directory and
               pid, 2: by path, a little late (both through pread) */
  const char *path;
  eventring_cursor *c;
  atomic_int stop;
  int err;
  unsigned long polls;
  struct st_reader rd;
};

static size_t poll_limit(unsigned long n) {
  static const size_t limits[] = {0, 7, 1000, 1, 64, 0, 300};
  return limits[n % (sizeof limits / sizeof limits[0])];
}

/* Copies this process's file, as a reader found it corrupt, beside the
 * watched directory (DIR/..), where the driver keeps it when the soak
 * fails: the ring may be repaired or overwritten by the time the writer
 * checks its final contents.  Says where, and what ringfile.c makes of
 * the copy. */
static void keep_copy(const struct reader *r) {
  char copy[PATH_MAX], err[256];
  snprintf(copy, sizeof copy, "%s/../writer-%ld-cycle-%u-reader-%d.copy", dir,
           (long)getpid(), r->cycle, r->k);
  int in = open(r->path, O_RDONLY | O_CLOEXEC);
  int out = open(copy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  char buf[65536];
  ssize_t n = -1;
  while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n) n = -1;
  if (in >= 0) close(in);
  if (out >= 0) close(out);
  if (n != 0) {
    note("reader %d: cannot copy %s to %s", r->k, r->path, copy);
    return;
  }
  struct rf_file f;
  if (rf_open(copy, &f, err) == 0) {
    rf_close(&f);
    snprintf(err, sizeof err, "ringfile.c reads it whole");
  }
  note("reader %d found %s corrupt; copied to %s: %s", r->k, r->path, copy,
       err);
}

static void *reader_main(void *arg) {
  struct reader *r = arg;
  block_alarm();
  if (r->mode == 1) {
    r->err = eventring_cursor_open(&r->c, dir, getpid());
  } else if (r->mode == 2) {
    sleep_us(2000);
    r->err = eventring_cursor_open_file(&r->c, r->path);
  }
  if (r->err) return NULL;
  for (;;) {
    /* Pairs with the release store once eventring_stop() returned. */
    int stop = atomic_load_explicit(&r->stop, memory_order_acquire);
    int n = eventring_cursor_poll(r->c, cb, &r->rd,
                                  stop ? 0 : poll_limit(r->polls + r->mode));
    r->polls++;
    if (n < 0) {
      r->err = n;
      if (n == EVENTRING_E_CORRUPT && !victim) keep_copy(r);
      return NULL;
    }
    r->rd.polled += (uint64_t)n;
    if (n == 0) {
      if (stop) break;
      sleep_us(200);
    }
  }
  return NULL;
}

/* ------------------------------------------------------------------ */
/* Checks of a stopped file.                                            */

/* Event i of ring r on one line: where, its header word decoded, its
 * timestamp and first payload word. */
static void note_event(const char *what, const struct rf_ring *r, size_t i) {
  if (i >= r->nevents) {
    note("%s: none (head %llu, tail %llu)", what,
         (unsigned long long)r->head, (unsigned long long)r->tail);
    return;
  }
  const struct rf_event *e = &r->events[i];
  note("%s: pos %llu, %s type %u id %u, %u words, ts %llu, payload[0] %#llx",
       what, (unsigned long long)e->pos, e->is_user ? "user" : "runtime",
       e->type, e->id, e->len, (unsigned long long)e->ts,
       (unsigned long long)(e->npayload ? e->payload[0] : 0));
}

/* Describes the event the reader's checks just found bad, in the file's
 * final contents, with the events around it: enough to tell a writer
 * that overwrote its own words from a checker that expected too much. */
static void describe_bad(const struct rf_file *f, int d, size_t i,
                         const struct st_reader *rd) {
  const struct rf_ring *r = &f->rings[d];
  const struct rf_event *e = &r->events[i];
  uint64_t mask = f->ring_words - 1;
  note("bad event in domain %d at pos %llu (index %llu of %llu words; head "
       "%llu, tail %llu, written %llu, evicted %llu, dropped %llu): %s",
       d, (unsigned long long)e->pos, (unsigned long long)(e->pos & mask),
       (unsigned long long)f->ring_words, (unsigned long long)r->head,
       (unsigned long long)r->tail, (unsigned long long)r->written,
       (unsigned long long)r->evicted, (unsigned long long)r->dropped,
       rd->latest);
  for (size_t k = i >= 3 ? i - 3 : 0; k < i; k++) note_event("before", r, k);
  note_event("the bad event", r, i);
  for (size_t k = i + 1; k < i + 4 && k <= r->nevents; k++)
    note_event("after", r, k);
}

/* One event ringfile.c decoded, through the reader's checks. */
static void final_event(const struct rf_file *f, struct st_reader *rd,
                        int dom, const struct rf_event *e) {
  if (!e->is_user) {
    switch (e->type) {
    case ER_EV_BEGIN: st_on_begin(rd, dom, e->ts, (int)e->id); break;
    case ER_EV_END: st_on_end(rd, dom, e->ts, (int)e->id); break;
    case ER_EV_COUNTER:
      st_on_counter(rd, dom, e->ts, (int)e->id, e->payload[0]);
      break;
    case ER_EV_LIFECYCLE: {
      int has = e->len == 3 && e->id != EVENTRING_LIFECYCLE_RING_STOP;
      st_on_lifecycle(rd, dom, e->ts, (int)e->id,
                      has ? (int64_t)e->payload[0] : 0, has);
      break;
    }
    default: st_on_alloc(rd, dom, e->ts, e->payload);
    }
    return;
  }
  const char *name = rf_user_name(f, e->id);
  switch (e->type) {
  case ER_UEV_UNIT: st_on_unit(rd, dom, e->ts, (int)e->id, name); break;
  case ER_UEV_INT:
    st_on_int(rd, dom, e->ts, (int)e->id, name, (int64_t)e->payload[0]);
    break;
  case ER_UEV_SPAN_BEGIN:
  case ER_UEV_SPAN_END:
    st_on_span(rd, dom, e->ts, (int)e->id, name, e->type == ER_UEV_SPAN_END);
    break;
  default:
    st_on_custom(rd, dom, e->ts, (int)e->id, name, e->custom, e->custom_len);
  }
}

/* The events ringfile.c decoded, through the reader's checks; each one
 * they find bad is described. */
static void read_final(const struct rf_file *f, struct st_reader *rd) {
  for (uint64_t d = 0; d < f->max_domains && d < ST_MAX_DOMAINS; d++) {
    const struct rf_ring *r = &f->rings[d];
    if (r->evicted) st_on_lost(rd, (int)d, r->evicted);
    for (size_t i = 0; i < r->nevents; i++) {
      uint64_t bad_before = rd->bad;
      final_event(f, rd, (int)d, &r->events[i]);
      if (rd->bad != bad_before) describe_bad(f, (int)d, i, rd);
    }
  }
  rd->polled = st_total_delivered(rd);
}

/* One reader held to the file: nothing bad or out of order, and
 * delivered + lost == WRITTEN in every domain.  Breaks in a sequence
 * ("skips") are counted, not failed: pauses, remote pauses and signal
 * handlers' events all make them. */
static void check_reader(const struct rf_file *f, const struct st_reader *rd,
                         const char *who, const char *path) {
  if (rd->bad || rd->order)
    fail("%s on %s: %llu bad, %llu out of order; first: %s", who, path,
         (unsigned long long)rd->bad, (unsigned long long)rd->order,
         rd->first);
  tot.skips += rd->skips;
  for (int d = 0; d < ST_MAX_DOMAINS; d++) {
    uint64_t written = (uint64_t)d < f->max_domains ? f->rings[d].written : 0;
    const struct st_dom *dm = &rd->dom[d];
    if (dm->delivered + dm->lost != written)
      fail("%s on %s, domain %d: delivered %llu + lost %llu != written %llu",
           who, path, d, (unsigned long long)dm->delivered,
           (unsigned long long)dm->lost, (unsigned long long)written);
  }
  if (rd->polled != st_total_delivered(rd))
    fail("%s on %s: polls returned %llu, callbacks saw %llu", who, path,
         (unsigned long long)rd->polled,
         (unsigned long long)st_total_delivered(rd));
}

/* Opens the stopped file at `path`, checks its shape and its final
 * contents, and adds its counts to the totals; returns 0 with the file
 * in `f`, or -1 (reported). */
static int check_file(const char *path, pid_t pid, pid_t parent,
                      struct rf_file *f) {
  char err[256];
  if (rf_open(path, f, err) != 0) {
    fail("%s: %s", path, err);
    return -1;
  }
  if (!f->has_ext || f->ext[ER_EXT_PID] != (uint64_t)pid)
    fail("%s: no extension block naming pid %ld", path, (long)pid);
  for (uint64_t d = 0; d < f->max_domains; d++) {
    const struct rf_ring *r = &f->rings[d];
    if (r->written - r->evicted != r->nevents || r->pair_head != r->head)
      fail("%s ring %d: written %llu, evicted %llu, %zu decoded, pair head "
           "%llu, head %llu", path, (int)d, (unsigned long long)r->written,
           (unsigned long long)r->evicted, r->nevents,
           (unsigned long long)r->pair_head, (unsigned long long)r->head);
    tot.written += r->written;
    tot.dropped += r->dropped;
  }
  tot.ext_dropped += f->has_ext ? f->ext[ER_EXT_DROPPED] : 0;
  static struct st_reader final;
  st_reader_init(&final, pid, parent, parent ? 0 : NFIXED);
  read_final(f, &final);
  check_reader(f, &final, "final contents", path);
  tot.delivered += st_total_delivered(&final);
  tot.lost += st_total_lost(&final);
  tot.files_checked++;
  return 0;
}

/* ------------------------------------------------------------------ */
/* Fork: the child traces into a file of its own, with the interval
 * timer firing into it, and exits; the parent checks its file.  A child
 * forked while its parent was paused (by the remote thread's `eventring
 * pause`) is paused too, and makes its file only when asked for its path
 * (the timer's handler does, at times), since nobody resumes it: it says
 * so by its exit status, and its file, if it made one, is checked. */

#define CHILD_PAUSED 20

static void child_main(uint64_t iters, int stop) {
  int paused = eventring_is_active() == 0;
  if (alarm_in_parents_file) {
    fprintf(stderr, "soak_writer %ld: forked child: a SIGALRM handler ran "
            "before eventring's fork handler, while the parent's file was "
            "still traced into\n", (long)getpid());
    _exit(7);
  }
  interval_timer(150);
  unsigned char buf[ST_MAX_CUSTOM];
  int status = 0;
  for (uint64_t s = 0; s < iters; s++) {
    if (st_iteration(&ids, ST_CHILD_WRITER, s, buf) != 0) status = 5;
    if (s % 100 == 99) sleep_us(100);
  }
  if (stop && eventring_stop() != 0) status = 6;
  _exit(status ? status : paused ? CHILD_PAUSED : 0);
}

static void fork_and_check(unsigned k) {
  int with_api = k % 2 == 0, stop = k % 4 < 2;
  uint64_t iters = 20 + rnd(2000);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = with_api ? eventring_fork() : fork();
  if (pid == 0) child_main(iters, stop);
  if (pid < 0) {
    fail("fork: %s", strerror(errno));
    return;
  }
  tot.forks++;
  int status = -1;
  for (int i = 0; i < 20000; i++) { /* 20 s at most */
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) break;
    status = -1;
    sleep_us(1000);
  }
  if (status == -1) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    fail("forked child %ld hung (killed after 20 s)", (long)pid);
    return;
  }
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%ld.events", dir, (long)pid);
  if (WIFEXITED(status) && WEXITSTATUS(status) == CHILD_PAUSED) {
    if (access(path, F_OK) != 0) return;
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fail("forked child %ld ended with status %#x", (long)pid, status);
    return;
  }
  struct rf_file f;
  if (check_file(path, pid, getpid(), &f) == 0) rf_close(&f);
  unlink(path);
}

/* ------------------------------------------------------------------ */
/* One cycle of the main thread: start, read, pause, register, fork,
 * stop, check.                                                         */

static void cycle(unsigned i) {
  setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  int rc = eventring_start();
  if (rc != 0) {
    fail("cycle %u: eventring_start: %s", i, eventring_strerror(rc));
    sleep_us(10000);
    return;
  }
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", eventring_path());
  static struct reader readers[NREADERS];
  for (int k = 0; k < NREADERS; k++) {
    struct reader *r = &readers[k];
    r->mode = k;
    r->k = k;
    r->cycle = i;
    r->path = path;
    r->c = NULL;
    atomic_store(&r->stop, 0);
    r->err = 0;
    r->polls = 0;
    st_reader_init(&r->rd, getpid(), 0, NFIXED);
    if (r->mode == 0) r->err = eventring_cursor_open(&r->c, NULL, 0);
    pthread_create(&r->th, NULL, reader_main, r);
  }

  sleep_us(5000 + rnd(40000));
  if (i % 2 == 1) {
    eventring_pause();
    sleep_us(rnd(5000));
    eventring_resume();
    tot.pauses++;
  }
  /* Registering takes the library's lock with the timer firing: new
   * names (64 of them, then the same ones again) and the scheme's. */
  char name[32];
  snprintf(name, sizeof name, "soak.name%u", i % 64);
  if (eventring_register(name, EVENTRING_TYPE_UNIT) < 0)
    fail("cycle %u: eventring_register(%s) failed", i, name);
  struct st_ids again;
  if (st_register(&again) != 0 || again.i != ids.i)
    fail("cycle %u: the scheme's names registered again differ", i);
  tot.registers += 2;
  if (i % 3 == 0) fork_and_check(tot.forks);
  sleep_us(rnd(20000));
  rc = eventring_stop();
  if (rc != 0) fail("cycle %u: eventring_stop: %s", i, eventring_strerror(rc));

  for (int k = 0; k < NREADERS; k++) {
    atomic_store_explicit(&readers[k].stop, 1, memory_order_release);
    pthread_join(readers[k].th, NULL);
  }
  struct rf_file f;
  int have = 0;
  if (!victim) have = check_file(path, getpid(), 0, &f) == 0;
  for (int k = 0; k < NREADERS; k++) {
    struct reader *r = &readers[k];
    if (r->err) {
      tot.reader_errors++;
      /* A truncated file may read as truncated or, cut mid-header, as
       * corrupt; cut while the start filled the header in, the words
       * stored before the cut are zeros and those after it are there (the
       * handler grows the file back), so an extension block may have its
       * magic and a zero version; an undamaged one must read. */
      if (!victim || (r->err != EVENTRING_E_TRUNCATED &&
                      r->err != EVENTRING_E_CORRUPT &&
                      r->err != EVENTRING_E_NOTRINGFILE &&
                      r->err != EVENTRING_E_VERSION))
        fail("cycle %u: in-process reader %d: %s", i, k,
             eventring_strerror(r->err));
    } else if (have) {
      char who[64];
      snprintf(who, sizeof who, "in-process reader %d", k);
      check_reader(&f, &r->rd, who, path);
    }
    eventring_cursor_free(r->c);
  }
  if (have) rf_close(&f);
  unlink(path);
  tot.cycles++;
}

static int input_ended(void) {
  struct pollfd p = {STDIN_FILENO, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return 0;
  char buf[64];
  return read(STDIN_FILENO, buf, sizeof buf) <= 0;
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[2], "checked") && strcmp(argv[2], "victim"))) {
    fprintf(stderr, "usage: soak_writer DIR checked|victim\n");
    return 2;
  }
  dir = argv[1];
  victim = !strcmp(argv[2], "victim");
  rng ^= (uint64_t)getpid();
  if (st_register(&ids) != 0 || !(cb = st_callbacks())) {
    fprintf(stderr, "soak_writer: cannot register the scheme's events\n");
    return 1;
  }
  struct sigaction sa = {0};
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);

  pthread_t fixed[NFIXED], churner;
  for (uintptr_t w = 0; w < NFIXED; w++)
    pthread_create(&fixed[w], NULL, fixed_writer, (void *)w);
  pthread_create(&churner, NULL, churn_main, NULL);
  interval_timer(200);

  for (unsigned i = 0; !input_ended(); i++) cycle(i);

  interval_timer(0);
  atomic_store(&stop_all, 1);
  for (int w = 0; w < NFIXED; w++) pthread_join(fixed[w], NULL);
  pthread_join(churner, NULL);
  /* A victim's file is cut under it: a domain whose ring could not be
   * reserved again refuses its events, which is the damage the soak
   * inflicts, not a defect; it is reported, and fails a checked writer. */
  if (atomic_load(&custom_errors) && !victim)
    fail("%llu eventring_write_custom() failures",
         (unsigned long long)atomic_load(&custom_errors));
  else if (atomic_load(&custom_errors))
    printf("soak_writer %ld: victim: %llu eventring_write_custom() calls "
           "refused after its file was cut\n", (long)getpid(),
           (unsigned long long)atomic_load(&custom_errors));
  printf("soak_writer %ld: %s %s: %u cycles, %u files checked, %u forks, "
         "%u pauses, %u registrations, %llu threads, %llu handler probes; "
         "written %llu, delivered %llu, lost %llu, dropped %llu (rings) + "
         "%llu (no slot), skips %llu, reader errors %u\n",
         (long)getpid(), tot.failures ? "FAILED" : "ok", argv[2], tot.cycles,
         tot.files_checked, tot.forks, tot.pauses, tot.registers,
         (unsigned long long)atomic_load(&churned),
         (unsigned long long)atomic_load(&sig_events),
         (unsigned long long)tot.written, (unsigned long long)tot.delivered,
         (unsigned long long)tot.lost, (unsigned long long)tot.dropped,
         (unsigned long long)tot.ext_dropped, (unsigned long long)tot.skips,
         tot.reader_errors);
  fflush(stdout);
  eventring_callbacks_free(cb);
  return tot.failures ? 1 : 0;
}
