/* Tests that a reader lapped, truncated or handed a torn TAIL in the middle of a poll gives the right events or an error, never a false "corrupt" or a signal. */
/* Each truncation is forced twice: with the cursor reading through a
 * mapping (the default: sigbus.c's handler, which this untraced process
 * installs when the cursor opens, turns the fault into
 * EVENTRING_E_TRUNCATED) and through pread(2) (EVENTRING_READ_PREAD).
 * The interleavings are forced, not hoped for: this test compiles the
 * consumer itself with ER_CONSUMER_TEST, which calls
 * er_consumer_test_after_copy between the copy of a run of ring words and
 * the check of head that validates it -- exactly where a writer that laps
 * the reader, or a file cut short, does harm.  The hook moves the head of
 * a crafted file there, or truncates it.  The consumer's objects in
 * libeventring.a are then not linked (this file defines their symbols). */
#define ER_CONSUMER_TEST 1
#include "../runtime/consumer_info.c"
#include "../runtime/consumer_io.c"
#include "../runtime/consumer_open.c"
#include "../runtime/consumer_poll.c"

#include <sys/wait.h>

#include "lat_craft.h"

/* The crafted file: OCaml 5's layout (lat_craft.h), domain 0 holding a
 * 3-word counter at position 0 and then 2-word phase events.  Events
 * start at 0, 3, 5, 7, ... (odd positions), so position CHUNK (even) is
 * inside an event: a copy cut at CHUNK words ends in the middle of one. */
#define PHASES 10000
#define TAIL (3 + 2 * PHASES)

static char path[PATH_MAX];
static uint64_t headers_off;

static void make_file(const char *dir) {
  struct craft c;
  craft_init(&c);
  craft_user_name(&c, 0, "unused");
  craft_counter(&c, 0, 1, CT_MINOR_PROMOTED, 7);
  for (int i = 0; i < PHASES; i++) {
    if (i % 2 == 0) craft_begin(&c, 0, 10 + (uint64_t)i, PH_MINOR);
    else craft_end(&c, 0, 10 + (uint64_t)i, PH_MINOR);
  }
  ck_assert_uint_eq(c.tail[0], TAIL);
  snprintf(path, sizeof path, "%s/races.events", dir);
  craft_write(&c, path);
  craft_free(&c);
  struct rf_file f;
  er_open_ring(path, &f);
  headers_off = f.meta[ER_META_HEADERS_OFFSET];
  ck_assert_uint_gt(f.ring_words, CHUNK);
  rf_close(&f);
}

/* Sets ring 0's head, as a writer that lapped the reader would. */
static void set_head_word(uint64_t head) {
  int fd = open(path, O_WRONLY);
  ck_assert_int_ge(fd, 0);
  put_words(fd, (off_t)(headers_off + 8 * ER_RING_HEAD), &head, 1);
  close(fd);
}

struct seen {
  uint64_t events, lost;
};

static int on_phase(void *d, int dom, uint64_t ts, int ph) {
  (void)dom, (void)ts, (void)ph;
  ((struct seen *)d)->events++;
  return 1;
}
static int on_counter(void *d, int dom, uint64_t ts, int k, uint64_t v) {
  (void)dom, (void)ts, (void)k, (void)v;
  ((struct seen *)d)->events++;
  return 1;
}
static int on_lost(void *d, int dom, uint64_t n) {
  (void)dom;
  ((struct seen *)d)->lost += n;
  return 1;
}

static eventring_callbacks *callbacks(void) {
  eventring_callbacks *cb = eventring_callbacks_create();
  ck_assert_ptr_nonnull(cb);
  eventring_callbacks_set_runtime_begin(cb, on_phase);
  eventring_callbacks_set_runtime_end(cb, on_phase);
  eventring_callbacks_set_runtime_counter(cb, on_counter);
  eventring_callbacks_set_lost_events(cb, on_lost);
  return cb;
}

/* Opens a cursor on the crafted file, read through a mapping or with
 * pread(2) as `via` says, and checks that it is. */
static eventring_cursor *open_via(enum via via) {
  if (via == VIA_PREAD)
    ck_assert_int_eq(setenv("EVENTRING_READ_PREAD", "1", 1), 0);
  else
    ck_assert_int_eq(unsetenv("EVENTRING_READ_PREAD"), 0);
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
  ck_assert_int_eq(via_of(c), via);
  return c;
}

/* ---- A lap during the first copy. */

static int hook_calls;
static uint64_t lap_to;

static void lap_hook(int domain, uint64_t pos, uint64_t n) {
  if (domain != 0 || hook_calls++ != 0) return;
  /* The first copy is [0, CHUNK): cut by its size, not at the tail. */
  ck_assert_uint_eq(pos, 0);
  ck_assert_uint_eq(n, CHUNK);
  set_head_word(lap_to);
}

/* The writer moves head to TAIL - CHUNK, an event's start, while the
 * reader copies [0, CHUNK).  The reader must drop what lies below the new
 * head and decode the rest of the copy as cut by its size, taking the
 * event across CHUNK from the next copy.  The old code judged "cut by
 * its size" from the new head (head + CHUNK == tail) and called that
 * event corrupt (issue 13, item 10). */
START_TEST(test_lap_during_copy_is_not_corrupt) {
  make_file(er_tmpdir());
  lap_to = TAIL - CHUNK;
  ck_assert_uint_eq(lap_to % 2, 1); /* an event's start */
  hook_calls = 0;
  er_consumer_test_after_copy = lap_hook;
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
  eventring_callbacks *cb = callbacks();
  struct seen s = {0, 0};
  int r;
  int total = 0;
  while ((r = eventring_cursor_poll(c, cb, &s, 0)) > 0) total += r;
  ck_assert_msg(r == 0, "poll after a lap: %s", eventring_strerror(r));
  ck_assert_int_ge(hook_calls, 1);
  /* Every event from the new head on, and the words below it lost (OCaml
   * 5's files count losses in words). */
  ck_assert_uint_eq(s.events, (TAIL - lap_to) / 2);
  ck_assert_uint_eq((uint64_t)total, s.events);
  ck_assert_uint_eq(s.lost, lap_to);
  eventring_callbacks_free(cb);
  eventring_cursor_free(c);
  er_consumer_test_after_copy = NULL;
}
END_TEST

/* ---- Truncation in the middle of a poll. */

static off_t cut_to;

static void cut_hook(int domain, uint64_t pos, uint64_t n) {
  (void)pos, (void)n;
  if (domain != 0 || hook_calls++ != 0) return;
  ck_assert_int_eq(truncate(path, cut_to), 0);
}

/* The file is cut after the reader copied ring words and before it
 * looks at head again: to nothing (the header is gone), and to just past
 * the start of the rings (the header is there, the next copy is not).
 * Through a mapping either would be SIGBUS; the poll returns
 * EVENTRING_E_TRUNCATED, and so does every later one. */
START_TEST(test_truncated_during_poll) {
  const char *dir = er_tmpdir();
  for (int k = 0; k < 4; k++) {
    make_file(dir);
    struct rf_file f;
    er_open_ring(path, &f);
    cut_to = k % 2 == 0 ? 0 : (off_t)f.meta[ER_META_DATA_OFFSET] + 64;
    rf_close(&f);
    hook_calls = 0;
    er_consumer_test_after_copy = cut_hook;
    eventring_cursor *c = open_via(k < 2 ? VIA_MAP : VIA_PREAD);
    eventring_callbacks *cb = callbacks();
    struct seen s = {0, 0};
    int r = eventring_cursor_poll(c, cb, &s, 0);
    ck_assert_int_eq(hook_calls, 1);
    ck_assert_msg(r == EVENTRING_E_TRUNCATED, "cut to %ld: poll gave %d (%s)",
                  (long)cut_to, r, eventring_strerror(r));
    ck_assert_int_eq(eventring_cursor_poll(c, cb, &s, 0),
                     EVENTRING_E_TRUNCATED);
    uint64_t n;
    ck_assert_int_eq(eventring_cursor_dropped(c, 0, &n), 0); /* OCaml 5 */
    eventring_callbacks_free(cb);
    eventring_cursor_free(c);
    er_consumer_test_after_copy = NULL;
    unlink(path);
  }
}
END_TEST

/* Cut between two polls: the next poll says so. */
START_TEST(test_truncated_between_polls) {
  for (int k = 0; k < 2; k++) {
    make_file(er_tmpdir());
    eventring_cursor *c = open_via(k == 0 ? VIA_MAP : VIA_PREAD);
    eventring_callbacks *cb = callbacks();
    struct seen s = {0, 0};
    ck_assert_int_eq(eventring_cursor_poll(c, cb, &s, 100), 100);
    ck_assert_int_eq(truncate(path, 4096), 0);
    ck_assert_int_eq(eventring_cursor_poll(c, cb, &s, 0),
                     EVENTRING_E_TRUNCATED);
    ck_assert_uint_eq(s.events, 100);
    eventring_callbacks_free(cb);
    eventring_cursor_free(c);
    unlink(path);
  }
}
END_TEST

/* More cursors than sigbus.c has views (a tool reading a directory of
 * files): those past the table read with pread(2), and every one of them
 * reports the cut, inside a poll (the first cursor's hook cuts the file
 * under all of them) and after. */
#define MANY_CURSORS 80
START_TEST(test_more_cursors_than_views) {
  make_file(er_tmpdir());
  ck_assert_int_eq(unsetenv("EVENTRING_READ_PREAD"), 0);
  eventring_cursor *c[MANY_CURSORS];
  int mapped = 0;
  for (int i = 0; i < MANY_CURSORS; i++) {
    ck_assert_int_eq(eventring_cursor_open_file(&c[i], path), 0);
    mapped += via_of(c[i]) == VIA_MAP;
  }
  /* The first ones took every view of the table; the rest fell back. */
  ck_assert_int_gt(mapped, 0);
  ck_assert_int_lt(mapped, MANY_CURSORS);
  ck_assert_int_eq(via_of(c[0]), VIA_MAP);
  ck_assert_int_eq(via_of(c[MANY_CURSORS - 1]), VIA_PREAD);
  eventring_callbacks *cb = callbacks();
  struct seen s = {0, 0};
  for (int i = 1; i < MANY_CURSORS; i++)
    ck_assert_int_eq(eventring_cursor_poll(c[i], cb, &s, 100), 100);
  cut_to = 0;
  hook_calls = 0;
  er_consumer_test_after_copy = cut_hook;
  ck_assert_int_eq(eventring_cursor_poll(c[0], cb, &s, 0),
                   EVENTRING_E_TRUNCATED);
  ck_assert_int_eq(hook_calls, 1);
  er_consumer_test_after_copy = NULL;
  for (int i = 0; i < MANY_CURSORS; i++) {
    ck_assert_int_eq(eventring_cursor_poll(c[i], cb, &s, 0),
                     EVENTRING_E_TRUNCATED);
    eventring_cursor_free(c[i]);
  }
  eventring_callbacks_free(cb);
}
END_TEST

/* The host puts its own SIGBUS handler (here the default action) in
 * place of the one the cursor installed: the next poll finds that a
 * fault would no longer reach sigbus.c and reads with pread(2), so that
 * the cut inside it is EVENTRING_E_TRUNCATED, not the host's death. */
START_TEST(test_handler_replaced_falls_back) {
  make_file(er_tmpdir());
  eventring_cursor *c = open_via(VIA_MAP);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  ck_assert_int_eq(sigaction(SIGBUS, &dfl, NULL), 0);
  cut_to = 0;
  hook_calls = 0;
  er_consumer_test_after_copy = cut_hook;
  eventring_callbacks *cb = callbacks();
  struct seen s = {0, 0};
  ck_assert_int_eq(eventring_cursor_poll(c, cb, &s, 0), EVENTRING_E_TRUNCATED);
  ck_assert_int_eq(hook_calls, 1);
  ck_assert_int_eq(via_of(c), VIA_PREAD);
  er_consumer_test_after_copy = NULL;
  eventring_callbacks_free(cb);
  eventring_cursor_free(c);
}
END_TEST

/* ---- A torn first load of TAIL (through pread(), see consumer_poll.c). */

static void set_tail_word(uint64_t tail) {
  int fd = open(path, O_WRONLY);
  ck_assert_int_ge(fd, 0);
  put_words(fd, (off_t)(headers_off + 8 * ER_RING_TAIL), &tail, 1);
  close(fd);
}

/* The writer's store "ends" after the reader's first load of TAIL and
 * before its second: the file holds the real tail again. */
static void untear_hook(int domain, uint64_t pos, uint64_t n) {
  (void)pos, (void)n;
  if (domain != 0 || hook_calls++ != 0) return;
  set_tail_word(TAIL);
}

/* Polls until a poll delivers nothing twice in a row; fails on an error.
 * Returns the events delivered. */
static uint64_t drain(eventring_cursor *c, eventring_callbacks *cb,
                      struct seen *s) {
  uint64_t total = 0;
  int empty = 0;
  for (int polls = 0; empty < 2; polls++) {
    ck_assert_int_lt(polls, 100);
    int r = eventring_cursor_poll(c, cb, s, 0);
    ck_assert_msg(r >= 0, "poll: %s", eventring_strerror(r));
    total += (uint64_t)r;
    empty = r == 0 ? empty + 1 : 0;
  }
  return total;
}

/* Reads the file through pread(2) with untear_hook() after the copy: the
 * hook runs, and the poll returns the start and the PHASES phases.
 * Returns what the callbacks saw. */
static struct seen read_untorn(void) {
  hook_calls = 0;
  er_consumer_test_after_copy = untear_hook;
  /* Only pread(2) tears a word; a mapping reads TAIL in one load. */
  eventring_cursor *c = open_via(VIA_PREAD);
  eventring_callbacks *cb = callbacks();
  struct seen s = {0, 0};
  uint64_t total = drain(c, cb, &s);
  ck_assert_int_ge(hook_calls, 1);
  ck_assert_uint_eq(total, 1 + PHASES);
  ck_assert_uint_eq(s.events, 1 + PHASES);
  eventring_callbacks_free(cb);
  eventring_cursor_free(c);
  er_consumer_test_after_copy = NULL;
  return s;
}

/* The first load of TAIL comes back past the real tail, where words of
 * an older lap parse as 128 whole events up to it.  Nothing past the
 * real tail may be delivered: the second load of TAIL, with head after
 * the copy, is smaller than the first, and the copy is dropped. */
START_TEST(test_torn_tail_past_the_real_one) {
  make_file(er_tmpdir());
  struct rf_file f;
  er_open_ring(path, &f);
  uint64_t data_off = f.meta[ER_META_DATA_OFFSET];
  rf_close(&f);
  int fd = open(path, O_WRONLY);
  ck_assert_int_ge(fd, 0);
  for (uint64_t i = 0; i < 128; i++) {
    uint64_t ev[2] = {ER_HDR(2, 0, ER_EV_BEGIN, PH_MINOR), 1000000 + i};
    put_words(fd, (off_t)(data_off + 8 * (TAIL + 2 * i)), ev, 2);
  }
  close(fd);
  set_tail_word(TAIL + 256);
  struct seen s = read_untorn();
  ck_assert_uint_eq(s.lost, 0);
}
END_TEST

/* The first load of TAIL comes back short of the real tail, inside the
 * last event: the event runs past the copy's end.  That is not a broken
 * ring when the second load of TAIL is past it: the next poll reads it. */
START_TEST(test_torn_tail_short_of_the_real_one) {
  make_file(er_tmpdir());
  set_tail_word(TAIL - 1);
  read_untorn();
}
END_TEST

static TCase *tc_races(void) {
  TCase *tc = er_tcase("races");
  tcase_add_test(tc, test_lap_during_copy_is_not_corrupt);
  tcase_add_test(tc, test_truncated_during_poll);
  tcase_add_test(tc, test_truncated_between_polls);
  tcase_add_test(tc, test_more_cursors_than_views);
  tcase_add_test(tc, test_handler_replaced_falls_back);
  tcase_add_test(tc, test_torn_tail_past_the_real_one);
  tcase_add_test(tc, test_torn_tail_short_of_the_real_one);
  return tc;
}

ER_TEST_MAIN("reader_races", tc_races)
