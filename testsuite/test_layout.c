/* Tests the ring file's creation, layout, metadata, extension block and removal. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "testlib.h"

static uint64_t round_up(uint64_t v, uint64_t to) {
  return (v + to - 1) / to * to;
}

/* Starts tracing in a fresh directory and returns the directory.  The
 * library reads OCAML_RUNTIME_EVENTS_PRESERVE when it starts, as OCaml
 * does, so whether the file outlives the stop is decided here. */
static const char *start_fresh(int preserve) {
  const char *dir = er_tmpdir();
  if (preserve) setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  ck_assert_ptr_null(eventring_path());
  int rc = eventring_start();
  ck_assert_msg(rc == 0, "eventring_start: %d (%s)", rc,
                eventring_strerror(rc));
  return dir;
}

/* Stops tracing (started with preserve set) and decodes the file. */
static void stop_and_open(const char *path, struct rf_file *f) {
  ck_assert_int_eq(eventring_stop(), 0);
  er_open_ring(path, f);
}

/* Starts tracing in a fresh directory with preserve set, stops, decodes
 * the file into `f` and returns the directory. */
static const char *traced_file(struct rf_file *f) {
  const char *dir = start_fresh(1);
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  stop_and_open(path, f);
  return dir;
}

/* Closes the decoded file and removes the test's directory. */
static void close_and_remove(struct rf_file *f, const char *dir) {
  rf_close(f);
  er_rmdir(dir);
}

START_TEST(test_file_created) {
  const char *dir = start_fresh(0);
  char want[PATH_MAX];
  er_ring_path(want, sizeof want, dir);
  const char *path = eventring_path();
  ck_assert_ptr_nonnull(path);
  ck_assert_str_eq(path, want);
  struct stat st;
  ck_assert_int_eq(lstat(path, &st), 0);
  ck_assert(S_ISREG(st.st_mode));
  ck_assert_msg((st.st_mode & 07777) == 0600, "mode %o", st.st_mode & 07777);
  ck_assert_int_eq(st.st_uid, getuid());
  ck_assert_int_eq(eventring_is_active(), 1);
  ck_assert_int_eq(eventring_stop(), 0);
  er_rmdir(dir);
}
END_TEST

START_TEST(test_metadata) {
  const char *dir = start_fresh(1);
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  struct rf_file f;
  stop_and_open(path, &f);
  const uint64_t *m = f.meta;
  ck_assert_uint_eq(m[ER_META_VERSION], 1);
  ck_assert_uint_eq(m[ER_META_MAX_DOMAINS], 128);
  ck_assert_uint_eq(m[ER_META_RING_HEADER_SIZE], 256);
  ck_assert_uint_eq(m[ER_META_RING_SIZE_ELEMENTS], 1u << 16);
  ck_assert_uint_eq(m[ER_META_RING_SIZE_BYTES], 8u << 16);
  ck_assert(f.has_ext);
  uint64_t ho = m[ER_META_HEADERS_OFFSET];
  ck_assert_uint_eq(ho % 64, 0);
  ck_assert_uint_eq(ho, 64 + round_up(f.ext[ER_EXT_SIZE], 64));
  ck_assert_uint_eq(m[ER_META_DATA_OFFSET], round_up(ho + 128 * 256, 4096));
  ck_assert_uint_eq(m[ER_META_CUSTOM_EVENTS_OFFSET],
                    m[ER_META_DATA_OFFSET] + 128 * (8u << 16));
  ck_assert_uint_eq((uint64_t)st.st_size,
                    m[ER_META_CUSTOM_EVENTS_OFFSET] + 8192 * 128);
  ck_assert_uint_eq(f.size, (size_t)st.st_size);
  close_and_remove(&f, dir);
}
END_TEST

START_TEST(test_extension_block) {
  struct rf_file f;
  const char *dir = traced_file(&f);
  ck_assert(f.has_ext);
  const uint64_t *x = f.ext;
  ck_assert_uint_eq(x[ER_EXT_MAGIC_W], ER_EXT_MAGIC);
  ck_assert_mem_eq(f.bytes + 64, "ENRGEXT1", 8);
  ck_assert_uint_eq(x[ER_EXT_VERSION_W], 1);
  ck_assert_uint_eq(x[ER_EXT_PHASE_NUMBERING], 53);
  ck_assert_uint_eq(x[ER_EXT_FLAGS] & ER_EXT_FLAG_INSTRUMENTED, 0);
  ck_assert_uint_eq(x[ER_EXT_PID], (uint64_t)getpid());
  ck_assert_uint_eq(x[ER_EXT_DROPPED], 0);
  /* OCaml's 49 phases and 26 counters, then eventring's extension ids
   * (7 phases and 6 counters of OCaml 4.13's instrumented runtime). */
  ck_assert_uint_eq(x[ER_EXT_N_PHASES], 49 + 7);
  ck_assert_uint_eq(x[ER_EXT_N_COUNTERS], 26 + 6);
  ck_assert_uint_eq(x[ER_EXT_N_LIFECYCLE], 8);
  ck_assert_uint_eq(x[ER_EXT_NAME_SLOT], 48);
  ck_assert_uint_ge(x[ER_EXT_NAMES_OFFSET], 64 + ER_EXT_WORDS * 8);
  ck_assert_uint_ge(x[ER_EXT_SIZE], x[ER_EXT_NAMES_OFFSET] - 64 +
                                        (56 + 32 + 8) * 48);
  for (unsigned i = 0; i < 49; i++)
    ck_assert_str_eq(rf_ext_name(&f, 0, i), eventring_phase_name((int)i));
  for (unsigned i = 0; i < 26; i++)
    ck_assert_str_eq(rf_ext_name(&f, 1, i), eventring_counter_name((int)i));
  for (unsigned i = 0; i < 8; i++)
    ck_assert_str_eq(rf_ext_name(&f, 2, i), eventring_lifecycle_name((int)i));
  ck_assert_str_eq(rf_ext_name(&f, 0, 49), "major_roots_global");
  ck_assert_str_eq(rf_ext_name(&f, 0, 55), "major_check_and_compact");
  ck_assert_str_eq(rf_ext_name(&f, 1, 26), "alloc_jump");
  ck_assert_str_eq(rf_ext_name(&f, 1, 31), "major_work_extra");
  ck_assert_ptr_null(rf_ext_name(&f, 0, 56));
  ck_assert_ptr_null(rf_ext_name(&f, 1, 32));
  close_and_remove(&f, dir);
}
END_TEST

START_TEST(test_ring_start_and_stop) {
  struct rf_file f;
  const char *dir = traced_file(&f);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_eq(r->nevents, 2);
  const struct rf_event *e = &r->events[0];
  ck_assert(!e->is_user && e->type == ER_EV_LIFECYCLE &&
            e->id == EVENTRING_LIFECYCLE_RING_START);
  ck_assert_uint_eq(e->len, 3);
  ck_assert_uint_eq(e->payload[0], (uint64_t)getpid());
  ck_assert_uint_eq(e->pos, 0);
  e = &r->events[1];
  ck_assert(!e->is_user && e->type == ER_EV_LIFECYCLE &&
            e->id == EVENTRING_LIFECYCLE_RING_STOP);
  ck_assert_uint_eq(e->len, 3);
  ck_assert_uint_eq(e->payload[0], 0);
  ck_assert_uint_ge(e->ts, r->events[0].ts);
  /* The header words account for exactly these events. */
  ck_assert_uint_eq(r->head, 0);
  ck_assert_uint_eq(r->tail, 6);
  ck_assert_uint_eq(r->written, 2);
  ck_assert_uint_eq(r->evicted, 0);
  ck_assert_uint_eq(r->pair_head, r->head);
  ck_assert_uint_eq(r->dropped, 0);
  for (uint64_t d = 1; d < f.max_domains; d++) {
    ck_assert_uint_eq(f.rings[d].nevents, 0);
    ck_assert_uint_eq(f.rings[d].tail, 0);
  }
  close_and_remove(&f, dir);
}
END_TEST

START_TEST(test_stop_removes_file) {
  const char *dir = start_fresh(0);
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  ck_assert_int_eq(access(path, F_OK), 0);
  ck_assert_int_eq(eventring_stop(), 0);
  ck_assert_int_eq(access(path, F_OK), -1);
  ck_assert_int_eq(errno, ENOENT);
  ck_assert_ptr_null(eventring_path());
  ck_assert_int_eq(eventring_is_active(), 0);
  ck_assert_int_eq(eventring_stop(), EVENTRING_E_NOTSTARTED);
  er_rmdir(dir);
}
END_TEST

START_TEST(test_stop_preserves_file) {
  const char *dir = er_tmpdir();
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "", 1); /* any value, even empty */
  ck_assert_int_eq(eventring_start(), 0);
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  ck_assert_int_eq(eventring_stop(), 0);
  ck_assert_int_eq(access(path, F_OK), 0);
  ck_assert_ptr_null(eventring_path());
  struct rf_file f;
  er_open_ring(path, &f);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_ge(r->nevents, 1);
  ck_assert_uint_eq(r->events[r->nevents - 1].type, ER_EV_LIFECYCLE);
  ck_assert_uint_eq(r->events[r->nevents - 1].id,
                    EVENTRING_LIFECYCLE_RING_STOP);
  close_and_remove(&f, dir);
}
END_TEST

START_TEST(test_start_twice) {
  const char *dir = start_fresh(1);
  const char *p1 = eventring_path();
  ck_assert_ptr_nonnull(p1);
  char saved[PATH_MAX];
  strcpy(saved, p1);
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_str_eq(eventring_path(), saved);
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  struct rf_file f;
  stop_and_open(path, &f);
  /* The second start wrote nothing: one ring_start only. */
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_LIFECYCLE,
                             EVENTRING_LIFECYCLE_RING_START), 1);
  close_and_remove(&f, dir);
}
END_TEST

START_TEST(test_restart_after_stop) {
  const char *dir = start_fresh(0);
  ck_assert_int_eq(eventring_stop(), 0);
  /* Read again at this start: this file is kept. */
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  ck_assert_int_eq(eventring_start(), 0);
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  ck_assert_str_eq(eventring_path(), path);
  eventring_begin(EVENTRING_PHASE_MINOR);
  struct rf_file f;
  stop_and_open(path, &f);
  /* A fresh file: ring_start, the begin, ring_stop, nothing older. */
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_eq(r->nevents, 3);
  ck_assert_uint_eq(r->events[0].id, EVENTRING_LIFECYCLE_RING_START);
  ck_assert_uint_eq(r->events[1].type, ER_EV_BEGIN);
  ck_assert_uint_eq(r->events[1].id, EVENTRING_PHASE_MINOR);
  close_and_remove(&f, dir);
}
END_TEST

START_TEST(test_existing_file_untouched) {
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  er_write_text(path, "not a ring file\n", 1);
  int rc = eventring_start();
  ck_assert_msg(rc == -EEXIST, "start over a file: %d (%s)", rc,
                eventring_strerror(rc));
  ck_assert_ptr_null(eventring_path());
  ck_assert_int_eq(eventring_is_active(), 0);
  er_assert_content(path, "not a ring file\n");
  /* Probes while not started write nowhere, and stop says so. */
  eventring_begin(EVENTRING_PHASE_MINOR);
  ck_assert_int_eq(eventring_stop(), EVENTRING_E_NOTSTARTED);
  er_assert_content(path, "not a ring file\n");
  er_rmdir(dir);
}
END_TEST

START_TEST(test_symlink_not_followed) {
  const char *dir = er_tmpdir();
  char path[PATH_MAX], target[PATH_MAX], dangling[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  snprintf(target, sizeof target, "%s/target", dir);
  er_write_text(target, "victim\n", 1);
  ck_assert_int_eq(symlink(target, path), 0);
  int rc = eventring_start();
  ck_assert_msg(rc == -EEXIST || rc == -ELOOP, "start over a symlink: %d (%s)",
                rc, eventring_strerror(rc));
  ck_assert_ptr_null(eventring_path());
  er_assert_content(target, "victim\n");
  struct stat st;
  ck_assert_int_eq(lstat(path, &st), 0);
  ck_assert(S_ISLNK(st.st_mode));

  /* A dangling link must not make the library create its target. */
  ck_assert_int_eq(unlink(path), 0);
  snprintf(dangling, sizeof dangling, "%s/created-through-link", dir);
  ck_assert_int_eq(symlink(dangling, path), 0);
  rc = eventring_start();
  ck_assert_msg(rc == -EEXIST || rc == -ELOOP, "start over a dangling link: "
                "%d (%s)", rc, eventring_strerror(rc));
  ck_assert_int_eq(access(dangling, F_OK), -1);
  er_rmdir(dir);
}
END_TEST

START_TEST(test_missing_dir) {
  const char *dir = er_tmpdir();
  char missing[PATH_MAX];
  snprintf(missing, sizeof missing, "%s/no/such/dir", dir);
  setenv("OCAML_RUNTIME_EVENTS_DIR", missing, 1);
  ck_assert_int_eq(eventring_start(), -ENOENT);
  ck_assert_ptr_null(eventring_path());
  ck_assert_int_eq(eventring_is_active(), 0);
  er_rmdir(dir);
}
END_TEST

START_TEST(test_path_null_before_start) {
  ck_assert_ptr_null(eventring_path());
  ck_assert_int_eq(eventring_is_active(), 0);
  ck_assert_int_eq(eventring_stop(), EVENTRING_E_NOTSTARTED);
}
END_TEST

static TCase *tc_file(void) {
  TCase *tc = er_tcase("file");
  tcase_add_test(tc, test_path_null_before_start);
  tcase_add_test(tc, test_file_created);
  tcase_add_test(tc, test_stop_removes_file);
  tcase_add_test(tc, test_stop_preserves_file);
  tcase_add_test(tc, test_start_twice);
  tcase_add_test(tc, test_restart_after_stop);
  tcase_add_test(tc, test_existing_file_untouched);
  tcase_add_test(tc, test_symlink_not_followed);
  tcase_add_test(tc, test_missing_dir);
  return tc;
}

static TCase *tc_layout(void) {
  TCase *tc = er_tcase("layout");
  tcase_add_test(tc, test_metadata);
  tcase_add_test(tc, test_extension_block);
  tcase_add_test(tc, test_ring_start_and_stop);
  return tc;
}

ER_TEST_MAIN("layout", tc_file, tc_layout)
