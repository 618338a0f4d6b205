/* Thread-switch markers: threads joined to one slot take turns in its
 * ring, and each turn of a thread that is not the slot's last writer
 * begins with a marker naming it (doc/FORMAT.md, "Thread switches").
 *
 * The turns are forced, not left to the scheduler: a baton (a turn
 * number under a mutex and a condition variable) says which thread
 * writes next, and stands for the host's lock (OCaml 4's master lock),
 * under which joined threads write. */
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "ringfile.h"
#include "rtlib.h"

static struct er_baton baton = ER_BATON_INIT;
static int seq_id;

/* The script: at step i, thread script[i].who writes the value i (or,
 * with `rename`, first renames itself).  Thread 0 is the main thread. */
struct step {
  int who;
  const char *rename;
};
static const struct step script[] = {
    {0, NULL}, {1, NULL}, {1, NULL}, {2, NULL}, {0, NULL},
    {2, NULL}, {1, "renamed"}, {1, NULL}, {0, NULL},
};
#define NSTEPS ((int)(sizeof script / sizeof script[0]))
#define NTHREADS 3

static uint64_t ktid[NTHREADS];

/* Plays thread `who`'s steps, each when its turn comes. */
static void play(int who) {
  ktid[who] = (uint64_t)syscall(SYS_gettid);
  for (int i = 0; i < NSTEPS; i++) {
    if (script[i].who != who) continue;
    er_baton_take(&baton, i);
    if (script[i].rename)
      ck_assert_int_eq(eventring_thread_name(script[i].rename), 0);
    eventring_write_int(seq_id, i);
    er_baton_pass(&baton);
  }
}

static void *worker(void *arg) {
  int who = (int)(long)arg;
  er_join0_worker(who);
  play(who);
  return NULL;
}

static char *start_joined(void) {
  er_tmpdir();
  seq_id = eventring_register("switch.seq", EVENTRING_TYPE_INT);
  ck_assert_int_ge(seq_id, 0);
  ck_assert_int_eq(eventring_domain_join(0), 0);
  return er_start_preserved(NULL);
}

/* The marker's name, from its payload words (a custom-style padding). */
static size_t marker_name(const struct rf_file *f, const struct rf_event *e,
                          char *buf, size_t cap) {
  (void)f;
  if (e->len == ER_XEV_THREAD_MIN_WORDS) return 0;
  size_t words = e->len - ER_XEV_THREAD_MIN_WORDS;
  unsigned char b[64];
  for (size_t w = 0; w < words; w++)
    memcpy(b + 8 * w, &e->payload[2 + w], 8);
  size_t n = words * 8 - 1 - b[words * 8 - 1];
  ck_assert_uint_lt(n, cap);
  memcpy(buf, b, n);
  buf[n] = '\0';
  return n;
}

static int is_marker(const struct rf_event *e) {
  return !e->is_user && e->type == ER_EV_FLUSH && e->id == ER_XEV_THREAD;
}

/* Plays the whole script: the calling thread as thread 0 ("main"), the
 * others on workers, joined when done. */
static void play_script(void) {
  eventring_thread_id(0);
  ck_assert_int_eq(eventring_thread_name("main"), 0);
  pthread_t th[NTHREADS];
  for (long t = 1; t < NTHREADS; t++)
    ck_assert_int_eq(pthread_create(&th[t], NULL, worker, (void *)t), 0);
  play(0);
  for (int t = 1; t < NTHREADS; t++) pthread_join(th[t], NULL);
}

START_TEST(test_markers_follow_the_turns) {
  char *path = start_joined();
  play_script();
  /* A snapshot keeps the markers, names included. */
  char snap[PATH_MAX];
  snprintf(snap, sizeof snap, "%s.snap", path);
  ck_assert_int_eq(eventring_snapshot(snap), 0);
  ck_assert_int_eq(eventring_stop(), 0);
  eventring_domain_release();

  struct rf_file f;
  er_open_ring(snap, &f);
  size_t snap_markers = rf_count(&f, 0, 0, ER_EV_FLUSH, ER_XEV_THREAD);
  char snap_name[64] = "";
  for (size_t i = 0; i < f.rings[0].nevents; i++)
    if (is_marker(&f.rings[0].events[i]) &&
        f.rings[0].events[i].payload[0] == 10)
      marker_name(&f, &f.rings[0].events[i], snap_name, sizeof snap_name);
  rf_close(&f);
  /* Worker 1's last marker: after it renamed itself. */
  ck_assert_str_eq(snap_name, "renamed");

  er_open_ring(path, &f);
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_FLUSH, ER_XEV_THREAD),
                    snap_markers);
  const struct rf_ring *r = &f.rings[0];
  /* ring_start comes first, before any marker. */
  ck_assert(!r->events[0].is_user && r->events[0].type == ER_EV_LIFECYCLE &&
            r->events[0].id == EVENTRING_LIFECYCLE_RING_START);
  /* Replay the script: a marker exactly where the writer changes (or a
   * thread renamed itself), naming the step's thread. */
  size_t i = 1;
  int last = -1;
  const char *names[NTHREADS] = {"main", "worker 1", "worker 2"};
  for (int s = 0; s < NSTEPS; s++) {
    int who = script[s].who;
    if (script[s].rename) names[who] = script[s].rename;
    if (who != last || script[s].rename) {
      ck_assert_uint_lt(i, r->nevents);
      const struct rf_event *m = &r->events[i++];
      ck_assert_msg(is_marker(m), "step %d: no marker before it", s);
      ck_assert_int_eq((int64_t)m->payload[0], who * 10);
      ck_assert_uint_eq(m->payload[1], ktid[who]);
      char name[64];
      marker_name(&f, m, name, sizeof name);
      ck_assert_str_eq(name, names[who]);
    }
    last = who;
    ck_assert_uint_lt(i, r->nevents);
    const struct rf_event *e = &r->events[i++];
    ck_assert_msg(e->is_user && e->id == (unsigned)seq_id, "step %d", s);
    ck_assert_int_eq((int)e->payload[0], s);
  }
  /* ring_stop, from the main thread, which wrote last: no marker. */
  ck_assert_uint_eq(i + 1, r->nevents);
  ck_assert_uint_eq(r->events[i].type, ER_EV_LIFECYCLE);
  ck_assert_uint_eq(r->events[i].id, EVENTRING_LIFECYCLE_RING_STOP);
  ck_assert_uint_eq(r->written - r->evicted, r->nevents);
  rf_close(&f);
  free(path);
}
END_TEST

/* What the cursor delivers for the markers, in order with the events. */
struct seen {
  char log[2048];
  size_t n;
};

static int on_thread(void *data, int domain, uint64_t ts, int64_t thread,
                     uint64_t tid, const char *name, size_t len) {
  (void)ts;
  (void)tid;
  struct seen *s = data;
  s->n += (size_t)snprintf(s->log + s->n, sizeof s->log - s->n,
                           "[%d:%lld:%.*s]", domain, (long long)thread,
                           (int)len, name);
  return 1;
}

static int on_int(void *data, int domain, uint64_t ts, int id,
                  const char *name, int64_t v) {
  (void)domain;
  (void)ts;
  (void)id;
  (void)name;
  struct seen *s = data;
  s->n += (size_t)snprintf(s->log + s->n, sizeof s->log - s->n, "%lld ",
                           (long long)v);
  return 1;
}

START_TEST(test_cursor_delivers_markers) {
  char *path = start_joined();
  play_script();
  ck_assert_int_eq(eventring_stop(), 0);
  eventring_domain_release();

  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
  eventring_callbacks *cb = eventring_callbacks_create();
  eventring_callbacks_set_thread(cb, on_thread);
  eventring_callbacks_set_user_int(cb, on_int);
  struct seen s = {{0}, 0};
  ck_assert_int_gt(eventring_cursor_poll(c, cb, &s, 0), 0);
  ck_assert_str_eq(s.log,
                   "[0:0:main]0 [0:10:worker 1]1 2 [0:20:worker 2]3 "
                   "[0:0:main]4 [0:20:worker 2]5 [0:10:renamed]6 7 "
                   "[0:0:main]8 ");
  uint64_t bad = 1;
  ck_assert_int_eq(eventring_cursor_malformed(c, 0, &bad), 0);
  ck_assert_uint_eq(bad, 0);
  eventring_callbacks_free(cb);
  eventring_cursor_free(c);
  free(path);
}
END_TEST

static void *alone(void *arg) {
  (void)arg;
  eventring_thread_id(7);
  ck_assert_int_eq(eventring_thread_name("alone"), 0);
  eventring_write_int(seq_id, 1);
  eventring_write_int(seq_id, 2);
  return NULL;
}

/* A slot that is not shared never gets a marker, whatever its thread
 * says about itself. */
START_TEST(test_unshared_slots_write_none) {
  char *path = start_joined();
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, alone, NULL), 0);
  pthread_join(th, NULL);
  ck_assert_int_eq(eventring_stop(), 0);
  eventring_domain_release();
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(rf_count(&f, 1, 1, ER_UEV_INT, seq_id), 2);
  ck_assert_uint_eq(rf_count(&f, 1, 0, ER_EV_FLUSH, -1), 0);
  /* The main thread joined slot 0 and wrote only ring_start and
   * ring_stop, the process's events, which no marker precedes. */
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_FLUSH, ER_XEV_THREAD), 0);
  rf_close(&f);
  free(path);
}
END_TEST

START_TEST(test_names_are_bounded) {
  char name[80];
  memset(name, 'x', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  ck_assert_int_eq(eventring_thread_name(name), EVENTRING_E_NAMETOOLONG);
  name[ER_THREAD_NAME_BYTES - 1] = '\0';
  ck_assert_int_eq(eventring_thread_name(name), 0);
  ck_assert_int_eq(eventring_thread_name(NULL), 0);
}
END_TEST

static TCase *tc_switch(void) {
  TCase *tc = er_tcase("switch");
  tcase_add_test(tc, test_markers_follow_the_turns);
  tcase_add_test(tc, test_cursor_delivers_markers);
  tcase_add_test(tc, test_unshared_slots_write_none);
  tcase_add_test(tc, test_names_are_bounded);
  return tc;
}

ER_TEST_MAIN("thread_switch", tc_switch)
