/* A writer killed between publishing a new (head, evicted) pair and storing HEAD leaves a file every reader counts alike. */
/* ring.c's evict() stores the pair, then PSEQ, then the HEAD word that
 * OCaml's readers use.  A SIGKILL between the last two leaves HEAD one
 * move behind the pair: the events between them are counted as evicted
 * by the pair yet still whole in the ring.  The kill is raised from the
 * test hook at exactly that point (ER_HOOK_PAIR_PUBLISHED), in a child
 * that writes a numbered sequence; the test then reads the dead file. */
#include <signal.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "internal.h"
#include "ring_format.h"

/* The eviction (counted from 1) at which the child kills itself. */
#define KILL_AT 40

static int moves;

static int hook(enum er_hook h) {
  if (h == ER_HOOK_PAIR_PUBLISHED && ++moves == KILL_AT) raise(SIGKILL);
  return 0;
}

static void child(void) {
  er_test_hook = hook;
  int id = eventring_register("kill.seq", EVENTRING_TYPE_INT);
  if (id < 0 || eventring_start() != 0) _exit(2);
  for (int64_t i = 0;; i++) eventring_write_int(id, i);
}

struct seen {
  uint64_t delivered, lost;
  int64_t first, last;
  int holes;
};

static int on_int(void *x, int domain, uint64_t ts, int id, const char *name,
                  int64_t v) {
  struct seen *s = x;
  (void)ts, (void)id, (void)name;
  if (domain != 0) return 1;
  if (s->first < 0) s->first = v;
  else if (v != s->last + 1) s->holes++;
  s->last = v;
  s->delivered++;
  return 1;
}
static int on_life(void *x, int domain, uint64_t ts, int kind, int64_t v,
                   int has) {
  struct seen *s = x;
  (void)ts, (void)kind, (void)v, (void)has;
  if (domain == 0) s->delivered++;
  return 1;
}
static int on_lost(void *x, int domain, uint64_t n) {
  struct seen *s = x;
  if (domain == 0) s->lost += n;
  return 1;
}

START_TEST(test_killed_between_pair_and_head) {
  const char *dir = er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  ck_assert_int_eq(setenv("OCAMLRUNPARAM", "e=10,d=2", 1), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) child();
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
  char path[PATH_MAX];
  er_ring_path_for(path, sizeof path, dir, pid);

  /* The interleaving happened: HEAD is behind the newest pair. */
  struct rf_file f;
  er_open_ring(path, &f);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_eq(r->seq, KILL_AT);
  ck_assert_uint_gt(r->pair_head, r->head);
  ck_assert_uint_eq(r->start, r->pair_head);
  /* Nothing was being written yet: WRITTEN counts exactly what the pair
   * evicted and what lies after its head. */
  ck_assert_uint_eq(r->written, r->evicted + r->nevents);

  /* The cursor goes by the pair: what it reports lost is what the pair
   * evicted, what it delivers is the rest, in sequence. */
  eventring_cursor *cur;
  ck_assert_int_eq(eventring_cursor_open_file(&cur, path), 0);
  eventring_callbacks *cb = eventring_callbacks_create();
  ck_assert_ptr_nonnull(cb);
  eventring_callbacks_set_user_int(cb, on_int);
  eventring_callbacks_set_lifecycle(cb, on_life);
  eventring_callbacks_set_lost_events(cb, on_lost);
  struct seen s = {0, 0, -1, -1, 0};
  int polls = 0;
  for (;;) {
    int n = eventring_cursor_poll(cur, cb, &s, 0);
    ck_assert_msg(n >= 0, "poll: %s", eventring_strerror(n));
    if (n == 0) break;
    ck_assert_int_lt(++polls, 1000);
  }
  eventring_callbacks_free(cb);
  eventring_cursor_free(cur);
  ck_assert_uint_eq(s.lost, r->evicted);
  ck_assert_uint_eq(s.delivered, r->nevents);
  ck_assert_int_eq(s.holes, 0);
  ck_assert_int_gt(s.first, 0); /* the ring wrapped */
  /* The last int written is the last one delivered: the ring_start
   * lifecycle event is the one event written that is not an int. */
  ck_assert_int_eq(s.last + 2, (int64_t)r->written);
  rf_close(&f);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_kill(void) {
  TCase *tc = er_tcase("kill_mid_evict");
  tcase_add_test(tc, test_killed_between_pair_and_head);
  return tc;
}

ER_TEST_MAIN("hook_kill_mid_evict", tc_kill)
