/* Starting, pausing, resuming and stopping while threads write leaves every preserved file well-formed and in order. */
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"

#define NWRITERS 3
#define MAX_PRESERVED 400 /* each is checked and removed at once */
#define WRITER_SHIFT 40 /* a value is writer << WRITER_SHIFT | sequence */

static int seq_id, custom_id, span_id;
static int stop_writers;

static double seconds_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

/* The custom payload of sequence number `seq`: 8 bytes of its value, then
 * a length and bytes that both follow from the value, so the reader can
 * check each payload on its own. */
static size_t custom_len_for(uint64_t value) {
  return 8 + (size_t)((value & 0xffffff) % 97);
}

static void custom_fill(unsigned char *buf, uint64_t value) {
  memcpy(buf, &value, 8);
  size_t n = custom_len_for(value);
  for (size_t k = 8; k < n; k++) buf[k] = (unsigned char)(value + k);
}

static void *writer(void *arg) {
  uint64_t w = (uint64_t)(uintptr_t)arg;
  unsigned char buf[128];
  for (uint64_t seq = 0;
       !__atomic_load_n(&stop_writers, __ATOMIC_RELAXED); seq++) {
    uint64_t value = w << WRITER_SHIFT | seq;
    eventring_begin(EVENTRING_PHASE_MINOR);
    eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, value);
    eventring_write_int(seq_id, (int64_t)value);
    custom_fill(buf, value);
    eventring_write_custom(custom_id, buf, custom_len_for(value));
    eventring_write_span(span_id, (int)(seq & 1));
    eventring_end(EVENTRING_PHASE_MINOR);
    /* Leave the cores to the controlling thread now and then; the
     * machine may have fewer cores than threads. */
    if ((seq & 255) == 0 || !eventring_is_active()) sched_yield();
  }
  return NULL;
}

/* Checks one preserved file; `pauses` is how many pause/resume pairs the
 * controlling thread made while it was live. */
static unsigned long writer_events_checked;

static void check_file(const char *path, int pauses) {
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert(f.has_ext);
  ck_assert_uint_eq(f.ext[ER_EXT_PID], (uint64_t)getpid());
  ck_assert_uint_eq(f.ring_words, 4096);
  ck_assert_uint_eq(
      rf_count(&f, -1, 0, ER_EV_LIFECYCLE, EVENTRING_LIFECYCLE_RING_START), 1);
  ck_assert_uint_eq(
      rf_count(&f, -1, 0, ER_EV_LIFECYCLE, EVENTRING_LIFECYCLE_RING_STOP), 1);
  ck_assert_uint_eq(
      rf_count(&f, -1, 0, ER_EV_LIFECYCLE, EVENTRING_LIFECYCLE_RING_PAUSE),
      (size_t)pauses);
  ck_assert_uint_eq(
      rf_count(&f, -1, 0, ER_EV_LIFECYCLE, EVENTRING_LIFECYCLE_RING_RESUME),
      (size_t)pauses);
  for (uint64_t d = 0; d < f.max_domains; d++) {
    const struct rf_ring *r = &f.rings[d];
    ck_assert_msg(r->pair_head == r->head,
                  "%s ring %d: newest pair's head %llu is not HEAD %llu", path,
                  (int)d, (unsigned long long)r->pair_head,
                  (unsigned long long)r->head);
    ck_assert_msg(r->written - r->evicted == r->nevents,
                  "%s ring %d: written %llu - evicted %llu != %zu decoded",
                  path, (int)d, (unsigned long long)r->written,
                  (unsigned long long)r->evicted, r->nevents);
    int64_t last_int[NWRITERS], last_counter[NWRITERS];
    for (int w = 0; w < NWRITERS; w++) last_int[w] = last_counter[w] = -1;
    for (size_t i = 0; i < r->nevents; i++) {
      const struct rf_event *e = &r->events[i];
      if (i > 0) ck_assert_uint_ge(e->ts, r->events[i - 1].ts);
      int64_t *last = NULL;
      uint64_t value = e->payload[0];
      if (e->is_user && e->type == ER_UEV_INT) {
        ck_assert_uint_eq(e->id, (unsigned)seq_id);
        last = last_int;
      } else if (!e->is_user && e->type == ER_EV_COUNTER) {
        ck_assert_uint_eq(e->id, EVENTRING_COUNTER_MINOR_PROMOTED);
        last = last_counter;
      } else if (e->is_user && e->type == ER_UEV_CUSTOM) {
        ck_assert_uint_eq(e->id, (unsigned)custom_id);
        unsigned char want[128];
        memcpy(&value, e->custom, 8);
        custom_fill(want, value);
        ck_assert_uint_eq(e->custom_len, custom_len_for(value));
        ck_assert(memcmp(e->custom, want, e->custom_len) == 0);
        continue;
      } else {
        continue;
      }
      uint64_t w = value >> WRITER_SHIFT;
      int64_t seq = (int64_t)(value & (((uint64_t)1 << WRITER_SHIFT) - 1));
      ck_assert_uint_lt(w, NWRITERS);
      ck_assert_msg(seq > last[w],
                    "%s ring %d pos %llu: writer %d sequence %lld after %lld",
                    path, (int)d, (unsigned long long)e->pos, (int)w,
                    (long long)seq, (long long)last[w]);
      last[w] = seq;
      writer_events_checked++;
    }
  }
  rf_close(&f);
}

START_TEST(test_start_stop_under_load) {
  double seconds = 5;
  const char *env = getenv("EVENTRING_STRESS_SECONDS");
  if (env && atof(env) > 0) seconds = atof(env);

  char scratch[64];
  snprintf(scratch, sizeof scratch, "%s", er_tmpdir());
  seq_id = eventring_register("stress.seq", EVENTRING_TYPE_INT);
  custom_id = eventring_register("stress.custom", EVENTRING_TYPE_CUSTOM);
  span_id = eventring_register("stress.span", EVENTRING_TYPE_SPAN);
  ck_assert_int_ge(seq_id, 0);
  ck_assert_int_ge(custom_id, 0);
  ck_assert_int_ge(span_id, 0);

  pthread_t th[NWRITERS];
  for (uintptr_t w = 0; w < NWRITERS; w++)
    ck_assert_int_eq(pthread_create(&th[w], NULL, writer, (void *)w), 0);

  int iterations = 0, preserved = 0;
  double deadline = seconds_now() + seconds;
  while (seconds_now() < deadline) {
    int i = iterations++;
    int preserve = i % 3 == 0 && preserved < MAX_PRESERVED;
    char dir[64];
    if (preserve) {
      /* A directory of its own, so the file survives until checked. */
      snprintf(dir, sizeof dir, "/tmp/eventring-stress-XXXXXX");
      ck_assert_ptr_nonnull(mkdtemp(dir));
      setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
    } else {
      /* The same directory every time: the previous stop removed the
       * file, or this start would fail with -EEXIST. */
      snprintf(dir, sizeof dir, "%s", scratch);
      unsetenv("OCAML_RUNTIME_EVENTS_PRESERVE");
    }
    setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
    setenv("OCAMLRUNPARAM", "e=12", 1);

    ck_assert_int_eq(eventring_start(), 0);
    ck_assert_int_eq(eventring_is_active(), 1);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", eventring_path());
    sleep_us(200 + (i * 397) % 3000);
    int pauses = 0;
    if (i % 2 == 1) {
      eventring_pause();
      ck_assert_int_eq(eventring_is_active(), 0);
      sleep_us(100 + (i * 131) % 1000);
      eventring_resume();
      ck_assert_int_eq(eventring_is_active(), 1);
      pauses = 1;
      sleep_us(100 + (i * 211) % 2000);
    }
    ck_assert_int_eq(eventring_stop(), 0);
    ck_assert_ptr_null(eventring_path());
    ck_assert_int_eq(eventring_is_active(), 0);

    if (preserve) {
      check_file(path, pauses);
      preserved++;
      er_rmdir(dir);
    } else {
      ck_assert_msg(access(path, F_OK) != 0, "%s left behind", path);
    }
  }
  __atomic_store_n(&stop_writers, 1, __ATOMIC_RELAXED);
  for (int w = 0; w < NWRITERS; w++) pthread_join(th[w], NULL);
  printf("stw_stress: %d start/stop cycles, %d files checked, %lu writer "
         "events in them\n", iterations, preserved, writer_events_checked);
  ck_assert_int_ge(preserved, 1);
  er_rmdir(scratch);
}
END_TEST

static TCase *tc_stress(void) {
  TCase *tc = er_tcase("stress");
  const char *env = getenv("EVENTRING_STRESS_SECONDS");
  double seconds = env && atof(env) > 0 ? atof(env) : 5;
  /* The loop's own length plus room for a sanitizer build's slowness. */
  tcase_set_timeout(tc, seconds + 60);
  tcase_add_test(tc, test_start_stop_under_load);
  return tc;
}

ER_TEST_MAIN("stw_stress", tc_stress)
