/* test_remote_control -- `eventring pause PID` / `eventring resume PID`
 * and the library calls behind them, on a traced helper program
 * (progs/mon_loop, traced from the environment, writing "mon.seq" every
 * 200 us and never pausing itself).
 *
 * The events are read with the consumer API while the program runs.  The
 * pause latency (from the request to the ring_pause event's timestamp,
 * both CLOCK_MONOTONIC) is measured and printed, never asserted.
 */
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "eventring.h"
#include "harness.h"
#include "testlib.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Starts mon_loop traced in `dir` with OCAML_RUNTIME_EVENTS_START=start;
 * it dies with this process, and exits when its stdin closes. */
static struct er_pipe_proc start_loop(const char *dir, const char *start) {
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  char path[PATH_MAX], startvar[64], dirvar[PATH_MAX];
  snprintf(path, sizeof path, "%s/mon_loop", progs);
  snprintf(startvar, sizeof startvar, "OCAML_RUNTIME_EVENTS_START=%s", start);
  snprintf(dirvar, sizeof dirvar, "OCAML_RUNTIME_EVENTS_DIR=%s", dir);
  char *argv[] = {path, NULL};
  char *env[] = {startvar, dirvar, NULL};
  struct er_pipe_proc p = er_pipe_start(argv, env, NULL);
  char line[64];
  er_read_line(p.out, line, sizeof line, 10);
  ck_assert_msg(!strncmp(line, "ready ", 6), "mon_loop: '%s'", line);
  return p;
}

static int stop_loop(struct er_pipe_proc *p) {
  return er_pipe_finish(p, 10);
}

/* Runs `eventring ARGS...` with stderr captured in `errbuf`; returns the
 * exit status (-1 when it had to be killed) and the time it took. */
static int run_tool(char *const args[], char *errbuf, size_t n,
                    uint64_t *took_ns) {
  const char *tool = er_env_dir("EVENTRING_TEST_TOOL");
  char *argv[16] = {(char *)tool};
  int k = 1;
  for (int i = 0; args[i] && k < 15; i++) argv[k++] = args[i];
  argv[k] = NULL;
  int err[2];
  ck_assert_int_eq(pipe2(err, O_CLOEXEC), 0);
  uint64_t t0 = now_ns();
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(err[1], 2);
    execv(tool, argv);
    _exit(127);
  }
  close(err[1]);
  size_t len = 0;
  struct pollfd pf = {.fd = err[0], .events = POLLIN};
  while (len + 1 < n && poll(&pf, 1, 10000) > 0) {
    ssize_t r = read(err[0], errbuf + len, n - len - 1);
    if (r <= 0) break;
    len += (size_t)r;
  }
  errbuf[len] = '\0';
  close(err[0]);
  int st = er_wait_for(pid, 10);
  if (st == -1) return -1;
  if (took_ns) *took_ns = now_ns() - t0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* What the reader saw: lifecycle events and the mon.seq ints. */
#define MAX_EV 200000
struct ev {
  int kind; /* lifecycle kind, or -1 for mon.seq */
  uint64_t ts;
  int64_t value;
};
struct seen {
  struct ev *ev;
  int n;
};

static int on_life(void *data, int domain, uint64_t ts, int kind,
                   int64_t value, int has_data) {
  (void)domain, (void)has_data;
  struct seen *s = data;
  if (s->n < MAX_EV) s->ev[s->n++] = (struct ev){kind, ts, value};
  return 1;
}

static int on_int(void *data, int domain, uint64_t ts, int id,
                  const char *name, int64_t value) {
  (void)domain, (void)id;
  struct seen *s = data;
  if (name && !strcmp(name, "mon.seq") && s->n < MAX_EV)
    s->ev[s->n++] = (struct ev){-1, ts, value};
  return 1;
}

/* Polls the cursor until it has nothing new. */
static void drain(eventring_cursor *c, eventring_callbacks *cb,
                  struct seen *s) {
  int r;
  while ((r = eventring_cursor_poll(c, cb, s, 0)) > 0) {
  }
  ck_assert_int_ge(r, 0);
}

static eventring_callbacks *callbacks(void) {
  eventring_callbacks *cb = eventring_callbacks_create();
  ck_assert_ptr_nonnull(cb);
  eventring_callbacks_set_lifecycle(cb, on_life);
  eventring_callbacks_set_user_int(cb, on_int);
  return cb;
}

/* The timestamp of the last lifecycle `kind` seen, 0 when none. */
static uint64_t last_of(const struct seen *s, int kind) {
  uint64_t ts = 0;
  for (int i = 0; i < s->n; i++)
    if (s->ev[i].kind == kind) ts = s->ev[i].ts;
  return ts;
}

static int ints_after(const struct seen *s, uint64_t ts) {
  int n = 0;
  for (int i = 0; i < s->n; i++)
    if (s->ev[i].kind == -1 && s->ev[i].ts > ts) n++;
  return n;
}

static int ints_between(const struct seen *s, uint64_t a, uint64_t b) {
  int n = 0;
  for (int i = 0; i < s->n; i++)
    if (s->ev[i].kind == -1 && s->ev[i].ts > a && s->ev[i].ts < b) n++;
  return n;
}

/* Drains until the cursor has delivered an int later than the last
 * lifecycle `kind` (or any int, for kind -1), which must come: mon_loop
 * writes one every turn while it records.  Bounded by ER_RUN_TIMEOUT. */
static void drain_until_int_after(eventring_cursor *c, eventring_callbacks *cb,
                                  struct seen *s, int kind) {
  double deadline = er_now() + ER_RUN_TIMEOUT;
  for (;;) {
    drain(c, cb, s);
    uint64_t ts = kind < 0 ? 0 : last_of(s, kind);
    if ((kind < 0 || ts > 0) && ints_after(s, ts) > 0) return;
    ck_assert_msg(er_now() < deadline, "no mon.seq after lifecycle %d", kind);
    er_sleep_ms(1);
  }
}

/* What most tests watch: mon_loop traced in a fresh directory, and a
 * cursor on its file with the callbacks above. */
struct watch {
  char dir[64], pid[16];
  struct er_pipe_proc p;
  eventring_cursor *c;
  eventring_callbacks *cb;
  struct seen s;
};

static void watch_start(struct watch *w, const char *start) {
  snprintf(w->dir, sizeof w->dir, "%s", er_tmpdir());
  w->p = start_loop(w->dir, start);
  snprintf(w->pid, sizeof w->pid, "%ld", (long)w->p.pid);
  ck_assert_int_eq(eventring_cursor_open(&w->c, w->dir, w->p.pid), 0);
  w->cb = callbacks();
  w->s = (struct seen){calloc(MAX_EV, sizeof(struct ev)), 0};
  ck_assert_ptr_nonnull(w->s.ev);
}

/* Ends mon_loop and frees the rest; returns mon_loop's status. */
static int watch_end(struct watch *w) {
  int st = stop_loop(&w->p);
  free(w->s.ev);
  eventring_callbacks_free(w->cb);
  eventring_cursor_free(w->c);
  return st;
}

START_TEST(test_pause_resume_tool) {
  if (!er_env_dir("EVENTRING_TEST_PROGS") || !er_env_dir("EVENTRING_TEST_TOOL"))
    ER_SKIP("EVENTRING_TEST_PROGS/TOOL unset");
  struct watch w;
  watch_start(&w, "1");
  drain_until_int_after(w.c, w.cb, &w.s, -1);

  char err[512];
  char *pause_args[] = {"pause", w.pid, "--dir", w.dir, NULL};
  char *resume_args[] = {"resume", "--pid", w.pid, "--dir", w.dir, NULL};
  uint64_t took, t0 = now_ns();
  ck_assert_int_eq(run_tool(pause_args, err, sizeof err, &took), 0);
  ck_assert_str_eq(err, "");
  uint64_t after_pause = now_ns();
  /* Two more turns of the loop, each of which would write an int. */
  er_wait_turns(w.p.pid, 3);
  drain(w.c, w.cb, &w.s);
  uint64_t pause_ts = last_of(&w.s, EVENTRING_LIFECYCLE_RING_PAUSE);
  ck_assert_uint_gt(pause_ts, 0);
  /* Recorded before the command returned... */
  ck_assert_uint_le(pause_ts, after_pause);
  /* ...and nothing from the program since. */
  ck_assert_int_eq(ints_after(&w.s, pause_ts), 0);
  printf("eventring pause: command took %.3f ms; request to ring_pause "
         "(incl. process start) %.3f ms\n",
         took / 1e6, (double)(pause_ts - t0) / 1e6);

  ck_assert_int_eq(run_tool(resume_args, err, sizeof err, NULL), 0);
  drain_until_int_after(w.c, w.cb, &w.s, EVENTRING_LIFECYCLE_RING_RESUME);
  uint64_t resume_ts = last_of(&w.s, EVENTRING_LIFECYCLE_RING_RESUME);
  ck_assert_uint_gt(resume_ts, pause_ts);
  ck_assert_int_eq(ints_between(&w.s, pause_ts, resume_ts), 0);
  ck_assert_int_gt(ints_after(&w.s, resume_ts), 0);

  /* Both are idempotent: a second pause records one more ring_pause at
   * most, and returns 0. */
  ck_assert_int_eq(run_tool(pause_args, err, sizeof err, NULL), 0);
  ck_assert_int_eq(run_tool(pause_args, err, sizeof err, NULL), 0);
  ck_assert_int_eq(run_tool(resume_args, err, sizeof err, NULL), 0);

  int st = watch_end(&w);
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "mon_loop status %d", st);
}
END_TEST

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The library's calls, many times: the latency the issue asks about. */
START_TEST(test_pause_latency) {
  if (!er_env_dir("EVENTRING_TEST_PROGS")) ER_SKIP("EVENTRING_TEST_PROGS unset");
  struct watch w;
  watch_start(&w, "1");
  enum { N = 30 };
  double lat[N], rtt[N];
  for (int i = 0; i < N; i++) {
    er_wait_turns(w.p.pid, 2); /* the loop runs between the pauses */
    uint64_t t0 = now_ns();
    ck_assert_int_eq(eventring_remote_pause(w.dir, w.p.pid), 0);
    uint64_t t1 = now_ns();
    drain(w.c, w.cb, &w.s);
    uint64_t ts = last_of(&w.s, EVENTRING_LIFECYCLE_RING_PAUSE);
    ck_assert_uint_ge(ts, t0);
    ck_assert_int_eq(ints_after(&w.s, ts), 0);
    lat[i] = (double)(ts - t0) / 1e3;
    rtt[i] = (double)(t1 - t0) / 1e3;
    ck_assert_int_eq(eventring_remote_resume(w.dir, w.p.pid), 0);
    w.s.n = 0; /* only the latest matter */
  }
  /* Sorted, for the median and the maximum. */
  qsort(lat, N, sizeof lat[0], cmp_double);
  qsort(rtt, N, sizeof rtt[0], cmp_double);
  printf("pause latency (request to ring_pause, %d runs): median %.1f us, "
         "max %.1f us; call returned after median %.1f us, max %.1f us\n",
         N, lat[N / 2], lat[N - 1], rtt[N / 2], rtt[N - 1]);
  watch_end(&w);
}
END_TEST

/* OCAML_RUNTIME_EVENTS_START=paused: armed, records nothing but
 * ring_start and ring_pause until resumed. */
START_TEST(test_start_paused) {
  if (!er_env_dir("EVENTRING_TEST_PROGS") || !er_env_dir("EVENTRING_TEST_TOOL"))
    ER_SKIP("EVENTRING_TEST_PROGS/TOOL unset");
  struct watch w;
  watch_start(&w, "paused");
  /* Two turns of the loop, each of which would write an int. */
  er_wait_turns(w.p.pid, 3);
  drain(w.c, w.cb, &w.s);
  ck_assert_int_eq(w.s.n, 2);
  ck_assert_int_eq(w.s.ev[0].kind, EVENTRING_LIFECYCLE_RING_START);
  ck_assert_int_eq(w.s.ev[1].kind, EVENTRING_LIFECYCLE_RING_PAUSE);

  char err[512];
  char *resume_args[] = {"resume", w.pid, "--dir", w.dir, NULL};
  ck_assert_int_eq(run_tool(resume_args, err, sizeof err, NULL), 0);
  drain_until_int_after(w.c, w.cb, &w.s, EVENTRING_LIFECYCLE_RING_RESUME);
  uint64_t resume_ts = last_of(&w.s, EVENTRING_LIFECYCLE_RING_RESUME);
  ck_assert_uint_gt(resume_ts, 0);
  ck_assert_int_eq(ints_between(&w.s, 0, resume_ts), 0);
  ck_assert_int_gt(ints_after(&w.s, resume_ts), 0);
  watch_end(&w);
}
END_TEST

/* A process started armed but paused records while a reader attached
 * with --pid reads it, and is paused again afterwards. */
START_TEST(test_attach_resumes_paused) {
  if (!er_env_dir("EVENTRING_TEST_PROGS") || !er_env_dir("EVENTRING_TEST_TOOL"))
    ER_SKIP("EVENTRING_TEST_PROGS/TOOL unset");
  struct watch w;
  watch_start(&w, "paused");
  ck_assert_int_eq(eventring_remote_state(w.dir, w.p.pid), 1);

  const char *args[] = {"dump", "--time=raw", "--pid", w.pid, "--dir", w.dir, NULL};
  struct er_run r = er_run_tool(w.dir, args, 0);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 0);
  er_run_free(&r);
  ck_assert_int_eq(eventring_remote_state(w.dir, w.p.pid), 1);

  /* The file says so: start, paused, resumed for the reader, paused. */
  drain(w.c, w.cb, &w.s);
  int want[] = {EVENTRING_LIFECYCLE_RING_START, EVENTRING_LIFECYCLE_RING_PAUSE,
                EVENTRING_LIFECYCLE_RING_RESUME, EVENTRING_LIFECYCLE_RING_PAUSE};
  int k = 0;
  for (int i = 0; i < w.s.n; i++)
    /* Ring state changes only (the control thread's slot also has its
     * domain_spawn). */
    if (w.s.ev[i].kind >= EVENTRING_LIFECYCLE_RING_START &&
        w.s.ev[i].kind <= EVENTRING_LIFECYCLE_RING_RESUME) {
      ck_assert_int_lt(k, 4);
      ck_assert_int_eq(w.s.ev[i].kind, want[k++]);
    }
  ck_assert_int_eq(k, 4);
  /* Nothing was recorded while the process was paused. */
  ck_assert_int_eq(ints_between(&w.s, 0, last_of(&w.s, EVENTRING_LIFECYCLE_RING_RESUME)), 0);
  watch_end(&w);
}
END_TEST

/* One line on stderr starting "eventring: " and containing `word`. */
static void check_error(const char *err, const char *word) {
  ck_assert_msg(!strncmp(err, "eventring: ", 11), "stderr: %s", err);
  ck_assert_int_eq(er_count_lines(err), 1);
  ck_assert_msg(strstr(err, word) != NULL, "'%s' not in: %s", word, err);
}

START_TEST(test_errors) {
  if (!er_env_dir("EVENTRING_TEST_PROGS") || !er_env_dir("EVENTRING_TEST_TOOL"))
    ER_SKIP("EVENTRING_TEST_PROGS/TOOL unset");
  char d[64], err[512];
  snprintf(d, sizeof d, "%s", er_tmpdir());
  /* Usage. */
  char *a1[] = {"pause", NULL};
  ck_assert_int_eq(run_tool(a1, err, sizeof err, NULL), 2);
  check_error(err, "PID");
  char *a2[] = {"resume", "12x", NULL};
  ck_assert_int_eq(run_tool(a2, err, sizeof err, NULL), 2);
  check_error(err, "invalid pid");
  /* No ring file. */
  char *a3[] = {"pause", "2147483647", "--dir", d, NULL};
  ck_assert_int_eq(run_tool(a3, err, sizeof err, NULL), 1);
  check_error(err, "no ring file");
  ck_assert_int_eq(eventring_remote_pause(d, 2147483647), -ENOENT);

  /* A stopped process does not answer: a bounded wait, then an error. */
  struct er_pipe_proc p = start_loop(d, "1");
  char pid[16];
  snprintf(pid, sizeof pid, "%ld", (long)p.pid);
  er_stop(p.pid);
  char *a4[] = {"pause", pid, "--dir", d, NULL};
  uint64_t took;
  ck_assert_int_eq(run_tool(a4, err, sizeof err, &took), 1);
  check_error(err, "did not answer");
  printf("a stopped process: 'eventring pause' gave up after %.2f s\n",
         took / 1e9);
  kill(p.pid, SIGCONT);

  /* Another user's process: only root can make one here. */
  if (geteuid() != 0) {
    stop_loop(&p);
    ER_SKIP("not root: cannot check pausing another user's process");
  }
  ck_assert_int_eq(chmod(d, 0755), 0);
  int errp[2];
  ck_assert_int_eq(pipe(errp), 0);
  pid_t child = fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(errp[1], 2);
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(99);
    const char *tool = er_env_dir("EVENTRING_TEST_TOOL");
    execl(tool, tool, "pause", pid, "--dir", d, (char *)NULL);
    _exit(98);
  }
  close(errp[1]);
  ssize_t n = 0, r;
  while ((r = read(errp[0], err + n, sizeof err - 1 - (size_t)n)) > 0) n += r;
  err[n] = '\0';
  close(errp[0]);
  int st;
  waitpid(child, &st, 0);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d: %s", st,
                err);
  check_error(err, "not yours");
  stop_loop(&p);
}
END_TEST

static TCase *tc_control(void) {
  TCase *tc = er_tcase("control");
  tcase_add_test(tc, test_pause_resume_tool);
  tcase_add_test(tc, test_pause_latency);
  tcase_add_test(tc, test_start_paused);
  tcase_add_test(tc, test_attach_resumes_paused);
  tcase_add_test(tc, test_errors);
  return tc;
}

ER_TEST_MAIN("remote control", tc_control)
