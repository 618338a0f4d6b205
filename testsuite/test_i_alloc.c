/* The instrumented variant counts allocations into the 20 size buckets of FORMAT.md and flushes them as alloc events. */
#include <pthread.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "rtlib.h"
#include "ring_format.h"

#ifndef EVENTRING_INSTRUMENTED
#error "test_i_alloc must be compiled with -DEVENTRING_INSTRUMENTED"
#endif

static void assert_alloc_event(const struct rf_event *e,
                               const uint64_t want[EVENTRING_ALLOC_BUCKETS]) {
  ck_assert(!e->is_user);
  ck_assert_uint_eq(e->type, ER_EV_ALLOC);
  ck_assert_uint_eq(e->id, 0);
  ck_assert_uint_eq(e->len, 2 + EVENTRING_ALLOC_BUCKETS);
  for (int b = 0; b < EVENTRING_ALLOC_BUCKETS; b++)
    ck_assert_msg(e->payload[b] == want[b],
                  "bucket %d: %llu, expected %llu", b,
                  (unsigned long long)e->payload[b],
                  (unsigned long long)want[b]);
}

START_TEST(test_buckets) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  char *path = er_start_preserved(NULL);

  /* Sizes 1..9: size s allocated s + 1 times (bucket s); 10..99: each
   * size once (ten per bucket 10..18); 100 and over: five sizes up to the
   * largest, all in bucket 19.  The expected buckets are written out from
   * FORMAT.md's rule rather than computed by it. */
  for (uint64_t s = 1; s <= 9; s++)
    for (uint64_t k = 0; k <= s; k++) eventring_alloc(s);
  for (uint64_t s = 10; s <= 99; s++) eventring_alloc(s);
  const uint64_t big[] = {100, 101, 1000, (uint64_t)1 << 40, UINT64_MAX};
  for (size_t k = 0; k < sizeof big / sizeof big[0]; k++)
    eventring_alloc(big[k]);
  const uint64_t want[EVENTRING_ALLOC_BUCKETS] = {
      0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 5};
  eventring_alloc_flush();

  /* The flush reset the buckets: the second event holds only these. */
  eventring_alloc(3);
  eventring_alloc(3);
  eventring_alloc(42);
  eventring_alloc(500);
  uint64_t want2[EVENTRING_ALLOC_BUCKETS] = {0};
  want2[3] = 2;
  want2[13] = 1;
  want2[19] = 1;
  eventring_alloc_flush();
  ck_assert_int_eq(eventring_stop(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert(f.has_ext);
  ck_assert_uint_eq(f.ext[ER_EXT_FLAGS] & ER_EXT_FLAG_INSTRUMENTED, 1);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_ALLOC, -1), 2);
  const struct rf_ring *r = &f.rings[0];
  const struct rf_event *allocs[2];
  int n = 0;
  for (size_t i = 0; i < r->nevents; i++)
    if (!r->events[i].is_user && r->events[i].type == ER_EV_ALLOC)
      allocs[n++] = &r->events[i];
  ck_assert_int_eq(n, 2);
  assert_alloc_event(allocs[0], want);
  assert_alloc_event(allocs[1], want2);
  rf_close(&f);
  free(path);
  er_rmdir(dir);
}
END_TEST

/* Buckets are per domain: another thread's allocations are flushed into
 * its own ring and do not mix with the main thread's. */
static void *other_thread(void *arg) {
  (void)arg;
  eventring_alloc(7);
  eventring_alloc(70);
  eventring_alloc_flush();
  return NULL;
}

START_TEST(test_buckets_per_domain) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  char *path = er_start_preserved(NULL);
  eventring_alloc(2);
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, other_thread, NULL), 0);
  pthread_join(th, NULL);
  eventring_alloc_flush();
  ck_assert_int_eq(eventring_stop(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  uint64_t main_want[EVENTRING_ALLOC_BUCKETS] = {0};
  uint64_t other_want[EVENTRING_ALLOC_BUCKETS] = {0};
  main_want[2] = 1;
  other_want[7] = 1;
  other_want[16] = 1;
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_ALLOC, -1), 1);
  ck_assert_uint_eq(rf_count(&f, 1, 0, ER_EV_ALLOC, -1), 1);
  for (int d = 0; d < 2; d++) {
    const struct rf_ring *r = &f.rings[d];
    for (size_t i = 0; i < r->nevents; i++)
      if (!r->events[i].is_user && r->events[i].type == ER_EV_ALLOC)
        assert_alloc_event(&r->events[i], d == 0 ? main_want : other_want);
  }
  rf_close(&f);
  free(path);
  er_rmdir(dir);
}
END_TEST

/* The shared instrumented library, started from the environment. */
START_TEST(test_shared_library_from_env) {
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  if (!progs) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  char dir[64], prog[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(prog, sizeof prog, "%s/i_alloc", progs);
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_START", "1", 1), 0);
  fflush(stdout);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    execl(prog, prog, (char *)NULL);
    _exit(127);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "i_alloc status 0x%x", status);
  char path[PATH_MAX];
  er_ring_path_for(path, sizeof path, dir, pid);
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(f.ext[ER_EXT_FLAGS] & ER_EXT_FLAG_INSTRUMENTED, 1);
  uint64_t want[EVENTRING_ALLOC_BUCKETS] = {0};
  want[1] = 1;
  want[10] = 2;
  want[19] = 3;
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_ALLOC, -1), 1);
  const struct rf_ring *r = &f.rings[0];
  for (size_t i = 0; i < r->nevents; i++)
    if (!r->events[i].is_user && r->events[i].type == ER_EV_ALLOC)
      assert_alloc_event(&r->events[i], want);
  rf_close(&f);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_alloc(void) {
  TCase *tc = er_tcase("alloc");
  tcase_add_test(tc, test_buckets);
  tcase_add_test(tc, test_buckets_per_domain);
  tcase_add_test(tc, test_shared_library_from_env);
  return tc;
}

ER_TEST_MAIN("i_alloc", tc_alloc)
