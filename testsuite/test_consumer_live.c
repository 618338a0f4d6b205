/* Tests cursors on another live process: reading on after it exits and removes its file, two cursors at once, one cursor polled by two threads. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "consumer_cb.h"
#include "eventring.h"
#include "harness.h"
#include "testlib.h"

#define TIME_LIMIT 20.0 /* seconds for any one wait or read */

/* A running progs/live_writer. */
struct child {
  pid_t pid;
  FILE *to, *from; /* its stdin and stdout */
  char path[PATH_MAX];
};

/* Starts live_writer writing `n` ints and waits for its "started" line.
 * Returns 0 when the helper programs are not built (the caller skips). */
static int spawn_writer(struct child *ch, long n) {
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  if (!progs) return 0;
  char prog[PATH_MAX], arg[32];
  snprintf(prog, sizeof prog, "%s/live_writer", progs);
  snprintf(arg, sizeof arg, "%ld", n);
  int in[2], out[2];
  ck_assert_int_eq(pipe(in), 0);
  ck_assert_int_eq(pipe(out), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    execl(prog, prog, arg, (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  ch->pid = pid;
  ch->to = fdopen(in[1], "w");
  ch->from = fdopen(out[0], "r");
  ck_assert(ch->to && ch->from);
  char line[PATH_MAX + 16];
  ck_assert_msg(fgets(line, sizeof line, ch->from) != NULL,
                "live_writer printed nothing");
  line[strcspn(line, "\n")] = '\0';
  ck_assert_msg(strncmp(line, "started ", 8) == 0, "live_writer: %s", line);
  size_t len = strlen(line + 8);
  ck_assert_uint_lt(len, sizeof ch->path);
  memcpy(ch->path, line + 8, len + 1);
  return 1;
}

static void go(struct child *ch) {
  ck_assert_int_ge(fputs("go\n", ch->to), 0);
  fclose(ch->to);
  ch->to = NULL;
}

/* Non-blocking: 1 when the child has exited (with status 0). */
static int reaped(struct child *ch) {
  int st;
  pid_t r = waitpid(ch->pid, &st, WNOHANG);
  ck_assert_int_ge(r, 0);
  if (r == 0) return 0;
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "live_writer ended with status %#x", st);
  fclose(ch->from);
  return 1;
}

static void wait_exit(struct child *ch) {
  double t0 = er_now();
  while (!reaped(ch)) {
    if (er_now() - t0 > TIME_LIMIT) {
      kill(ch->pid, SIGKILL);
      ck_abort_msg("live_writer did not exit");
    }
    usleep(1000);
  }
}

/* What one reader saw: ring_start, the ints in order, ring_stop. */
struct seen {
  pid_t pid;
  long next;        /* the int expected next */
  int starts, stops, lost, bad;
  size_t events;
};

static int on_int(void *data, int d, uint64_t ts, int id, const char *name,
                  int64_t v) {
  struct seen *s = data;
  (void)ts, (void)id;
  if (d != 0 || strcmp(name, "live.seq") != 0 || v != s->next || !s->starts ||
      s->stops)
    s->bad++;
  s->next = v + 1;
  s->events++;
  return 1;
}

static int on_life(void *data, int d, uint64_t ts, int kind, int64_t v,
                   int has) {
  struct seen *s = data;
  (void)ts;
  if (d != 0) s->bad++;
  if (kind == EVENTRING_LIFECYCLE_RING_START) {
    if (!has || v != s->pid || s->starts) s->bad++;
    s->starts++;
  } else if (kind == EVENTRING_LIFECYCLE_RING_STOP) {
    if (has) s->bad++;
    s->stops++;
  } else {
    s->bad++;
  }
  s->events++;
  return 1;
}

static int on_lost(void *data, int d, uint64_t n) {
  struct seen *s = data;
  (void)d, (void)n;
  s->lost++;
  return 1;
}

static eventring_callbacks *callbacks(void) {
  static const struct tool_handlers h = {.lifecycle = on_life,
      .user_int = on_int, .lost_events = on_lost};
  return er_callbacks(&h);
}

static void check_seen(const struct seen *s, long n) {
  ck_assert_int_eq(s->bad, 0);
  ck_assert_int_eq(s->lost, 0);
  ck_assert_int_eq(s->starts, 1);
  ck_assert_int_eq(s->stops, 1);
  ck_assert_int_eq(s->next, n + 1);
  ck_assert_uint_eq(s->events, (size_t)n + 2);
}

/* Polls until a poll returns 0. */
static void drain(eventring_cursor *c, const eventring_callbacks *cb,
                  struct seen *s) {
  double t0 = er_now();
  for (;;) {
    ck_assert(er_now() - t0 < TIME_LIMIT);
    int r = eventring_cursor_poll(c, cb, s, 500);
    ck_assert_msg(r >= 0, "poll: %s", eventring_strerror(r));
    if (r == 0) break;
  }
}

/* A cursor opened on a live process reads while it writes, and after it
 * has exited and removed its file, reads everything that was left. */
START_TEST(test_reads_after_exit) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  struct child ch;
  const long n = 3000;
  if (!spawn_writer(&ch, n)) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  char want[PATH_MAX];
  ck_assert_str_eq(ch.path, er_ring_path_for(want, sizeof want, dir, ch.pid));
  eventring_cursor *c = NULL;
  int rc = eventring_cursor_open(&c, dir, ch.pid);
  ck_assert_msg(rc == 0, "open: %s", eventring_strerror(rc));
  ck_assert_int_eq(eventring_cursor_lost_unit(c), EVENTRING_LOST_EVENTS);
  eventring_callbacks *cb = callbacks();
  struct seen s = {.pid = ch.pid, .next = 1};
  ck_assert_int_eq(eventring_cursor_poll(c, cb, &s, 0), 1); /* ring_start */
  ck_assert_str_eq(eventring_cursor_user_name(c, 0), "live.seq");
  go(&ch);
  double t0 = er_now();
  while (!reaped(&ch)) {
    if (er_now() - t0 > TIME_LIMIT) {
      kill(ch.pid, SIGKILL);
      ck_abort_msg("live_writer did not exit");
    }
    int r = eventring_cursor_poll(c, cb, &s, 0);
    ck_assert_msg(r >= 0, "poll: %s", eventring_strerror(r));
    usleep(500);
  }
  /* The writer removed its file on exit; the cursor still has it. */
  struct stat st;
  ck_assert_int_eq(stat(ch.path, &st), -1);
  ck_assert_int_eq(errno, ENOENT);
  drain(c, cb, &s);
  check_seen(&s, n);
  ck_assert_int_eq(eventring_cursor_poll(c, cb, &s, 0), 0);
  eventring_cursor_free(c);
  /* A new cursor finds nothing to open. */
  ck_assert_int_eq(eventring_cursor_open(&c, dir, ch.pid), -ENOENT);
  eventring_callbacks_free(cb);
  er_rmdir(dir);
}
END_TEST

/* Two cursors, each polled by its own thread, read the same live file at
 * once; each gets every event. */
struct own_reader {
  eventring_cursor *c;
  const eventring_callbacks *cb;
  struct seen s;
  int err;
};

static void *read_until_stop(void *arg) {
  struct own_reader *r = arg;
  double t0 = er_now();
  while (r->s.stops == 0 && r->err == 0) {
    int rc = eventring_cursor_poll(r->c, r->cb, &r->s, 97);
    if (rc < 0) r->err = rc;
    if (er_now() - t0 > TIME_LIMIT) r->err = -1;
  }
  return NULL;
}

START_TEST(test_two_cursors) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  struct child ch;
  const long n = 15000;
  if (!spawn_writer(&ch, n)) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  eventring_callbacks *cb = callbacks();
  static struct own_reader r[2];
  pthread_t th[2];
  for (int i = 0; i < 2; i++) {
    r[i] = (struct own_reader){.cb = cb, .s = {.pid = ch.pid, .next = 1}};
    ck_assert_int_eq(i ? eventring_cursor_open_file(&r[i].c, ch.path)
                       : eventring_cursor_open(&r[i].c, dir, ch.pid), 0);
    ck_assert_int_eq(pthread_create(&th[i], NULL, read_until_stop, &r[i]), 0);
  }
  go(&ch);
  for (int i = 0; i < 2; i++) ck_assert_int_eq(pthread_join(th[i], NULL), 0);
  wait_exit(&ch);
  for (int i = 0; i < 2; i++) {
    ck_assert_msg(r[i].err == 0, "reader %d: %d (%s)", i, r[i].err,
                  eventring_strerror(r[i].err));
    ck_assert_int_eq(eventring_cursor_poll(r[i].c, cb, &r[i].s, 0), 0);
    check_seen(&r[i].s, n);
    eventring_cursor_free(r[i].c);
  }
  eventring_callbacks_free(cb);
  er_rmdir(dir);
}
END_TEST

/* One cursor, two threads polling it at once: a poll that finds another
 * running gets EVENTRING_E_BUSY and changes nothing.  The callbacks'
 * state is deliberately unsynchronised: only the cursor's exclusion
 * orders the two threads' callbacks (ThreadSanitizer checks it does). */
struct shared_poll {
  eventring_cursor *c;
  const eventring_callbacks *cb;
  struct seen s;
  uint64_t delivered[2], busy[2], polls[2];
  int bad_rc, stop; /* stop: atomic */
};

struct poller {
  struct shared_poll *sp;
  int me;
};

static void *poll_shared(void *arg) {
  struct poller *p = arg;
  struct shared_poll *sp = p->sp;
  double t0 = er_now();
  while (!__atomic_load_n(&sp->stop, __ATOMIC_ACQUIRE) && er_now() - t0 < TIME_LIMIT) {
    int rc = eventring_cursor_poll(sp->c, sp->cb, &sp->s, 50);
    /* Atomic: the test waits for the pollers' progress. */
    __atomic_add_fetch(&sp->polls[p->me], 1, __ATOMIC_RELAXED);
    if (rc == EVENTRING_E_BUSY) {
      sp->busy[p->me]++;
    } else if (rc >= 0) {
      sp->delivered[p->me] += (uint64_t)rc;
    } else {
      __atomic_store_n(&sp->bad_rc, rc, __ATOMIC_RELAXED);
      break;
    }
  }
  return NULL;
}

START_TEST(test_one_cursor_two_threads) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  struct child ch;
  const long n = 20000;
  if (!spawn_writer(&ch, n)) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  eventring_callbacks *cb = callbacks();
  static struct shared_poll sp;
  sp = (struct shared_poll){.cb = cb, .s = {.pid = ch.pid, .next = 1}};
  ck_assert_int_eq(eventring_cursor_open(&sp.c, dir, ch.pid), 0);
  struct poller p[2] = {{&sp, 0}, {&sp, 1}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, poll_shared, &p[i]), 0);
  go(&ch);
  wait_exit(&ch);
  /* Let each poller poll at least once more after the writer's end,
   * then stop them and read what is left from here. */
  uint64_t polled[2];
  for (int i = 0; i < 2; i++)
    polled[i] = __atomic_load_n(&sp.polls[i], __ATOMIC_RELAXED);
  double t0 = er_now();
  for (int i = 0; i < 2; i++)
    while (__atomic_load_n(&sp.polls[i], __ATOMIC_RELAXED) <= polled[i]) {
      ck_assert_msg(er_now() - t0 < TIME_LIMIT, "poller %d stopped polling", i);
      usleep(1000);
    }
  __atomic_store_n(&sp.stop, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < 2; i++) ck_assert_int_eq(pthread_join(th[i], NULL), 0);
  ck_assert_msg(sp.bad_rc == 0, "poll returned %d (%s)", sp.bad_rc,
                eventring_strerror(sp.bad_rc));
  int rc;
  while ((rc = eventring_cursor_poll(sp.c, cb, &sp.s, 0)) > 0)
    sp.delivered[0] += (uint64_t)rc;
  ck_assert_int_eq(rc, 0);
  check_seen(&sp.s, n);
  ck_assert_uint_eq(sp.delivered[0] + sp.delivered[1], (uint64_t)n + 2);
  printf("one cursor, two threads: %llu + %llu polls, %llu + %llu busy, "
         "%llu + %llu events\n",
         (unsigned long long)sp.polls[0], (unsigned long long)sp.polls[1],
         (unsigned long long)sp.busy[0], (unsigned long long)sp.busy[1],
         (unsigned long long)sp.delivered[0],
         (unsigned long long)sp.delivered[1]);
  eventring_cursor_free(sp.c);
  eventring_callbacks_free(cb);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_live(void) {
  TCase *tc = er_tcase("live");
  tcase_add_test(tc, test_reads_after_exit);
  tcase_add_test(tc, test_two_cursors);
  tcase_add_test(tc, test_one_cursor_two_threads);
  return tc;
}

ER_TEST_MAIN("consumer_live", tc_live)
