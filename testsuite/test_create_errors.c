/* eventring_start() refuses unusable paths with a clear error and leaves what is there untouched. */
#include "eventring.h"
#include "cases.h"
#include "harness.h"
#include "ring_format.h"
#include "testlib.h"

/* After a failed start, tracing is simply off: no path, probes do
 * nothing, stop says it was not started, and a start in a good
 * directory then succeeds. */
static void assert_off_then_recovers(void) {
  ck_assert_ptr_null(eventring_path());
  ck_assert_int_eq(eventring_is_active(), 0);
  int id = eventring_register("create.val", EVENTRING_TYPE_INT);
  ck_assert_int_ge(id, 0);
  eventring_write_int(id, 1);
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_end(EVENTRING_PHASE_MINOR);
  eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, 1);
  eventring_pause();
  eventring_resume();
  ck_assert_int_eq(eventring_is_active(), 0);
  ck_assert_int_eq(eventring_stop(), EVENTRING_E_NOTSTARTED);

  char good[64];
  snprintf(good, sizeof good, "%s", er_tmpdir());
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_int_eq(eventring_is_active(), 1);
  char want[PATH_MAX];
  er_ring_path(want, sizeof want, good);
  ck_assert_str_eq(eventring_path(), want);
  eventring_write_int(id, 2);
  ck_assert_int_eq(eventring_stop(), 0);
  struct rf_file f;
  er_open_ring(want, &f);
  ck_assert_uint_eq(rf_count(&f, -1, 1, ER_UEV_INT, id), 1);
  rf_close(&f);
  er_rmdir(good);
}

START_TEST(test_missing_dir) {
  char dir[64], missing[128];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(missing, sizeof missing, "%s/no/such/dir", dir);
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_DIR", missing, 1), 0);
  ck_assert_int_eq(eventring_start(), -ENOENT);
  ck_assert_ptr_nonnull(eventring_strerror(-ENOENT));
  assert_off_then_recovers();
  er_rmdir(dir);
}
END_TEST

START_TEST(test_read_only_dir) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  if (geteuid() == 0) {
    /* Root writes into a 0500 directory regardless.  Each test runs in a
     * process of its own, so it can become an unprivileged user instead;
     * without Check's fork that would last for the rest of the run. */
    const char *fork_mode = getenv("CK_FORK");
    if (fork_mode && strcmp(fork_mode, "no") == 0)
      ER_SKIP("running as root without CK_FORK: cannot drop privileges");
    if (chown(dir, 65534, 65534) != 0 || setgid(65534) != 0 ||
        setuid(65534) != 0)
      ER_SKIP("running as root and cannot become uid 65534");
  }
  ck_assert_int_eq(chmod(dir, 0500), 0);
  ck_assert_int_eq(eventring_start(), -EACCES);
  ck_assert_int_eq(chmod(dir, 0700), 0);
  char path[PATH_MAX];
  ck_assert_int_ne(access(er_ring_path(path, sizeof path, dir), F_OK), 0);
  assert_off_then_recovers();
  er_rmdir(dir);
}
END_TEST

/* Something in the way of the ring file at `path` in `dir`: what the test
 * puts there, and checks that start left it as it was. */

static void plant_file(const char *dir, const char *path) {
  (void)dir;
  er_write_text(path, "not a ring file\n", 0);
}

static void file_kept(const char *dir, const char *path) {
  (void)dir;
  er_assert_content(path, "not a ring file\n");
}

static void plant_link_to_file(const char *dir, const char *path) {
  char target[PATH_MAX];
  snprintf(target, sizeof target, "%s/target", dir);
  er_write_text(target, "precious\n", 0);
  ck_assert_int_eq(symlink(target, path), 0);
}

static void link_and_target_kept(const char *dir, const char *path) {
  char target[PATH_MAX];
  snprintf(target, sizeof target, "%s/target", dir);
  er_assert_content(target, "precious\n");
  struct stat st;
  ck_assert_int_eq(lstat(path, &st), 0);
  ck_assert(S_ISLNK(st.st_mode));
}

static void plant_dangling_link(const char *dir, const char *path) {
  char target[PATH_MAX];
  snprintf(target, sizeof target, "%s/would-be-created", dir);
  ck_assert_int_eq(symlink(target, path), 0);
}

static void target_not_created(const char *dir, const char *path) {
  (void)path;
  char target[PATH_MAX];
  snprintf(target, sizeof target, "%s/would-be-created", dir);
  ck_assert_int_ne(access(target, F_OK), 0);
}

static void plant_directory(const char *dir, const char *path) {
  (void)dir;
  ck_assert_int_eq(mkdir(path, 0700), 0);
}

/* Removes it afterwards, for the recovery. */
static void directory_kept(const char *dir, const char *path) {
  (void)dir;
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert(S_ISDIR(st.st_mode));
  rmdir(path);
}

static const struct way_case {
  const char *name;
  void (*plant)(const char *dir, const char *path);
  int or_eloop; /* start may fail with -ELOOP as well as -EEXIST */
  void (*kept)(const char *dir, const char *path);
  int kept_after; /* checked again after the recovery, which ran in
                     another directory: this one is as it was */
} way_cases[] = {
    {"existing_file", plant_file, 0, file_kept, 1},
    {"symlink_to_file", plant_link_to_file, 1, link_and_target_kept, 0},
    /* A dangling link must not be followed to create its target. */
    {"dangling_symlink", plant_dangling_link, 1, target_not_created, 0},
    /* A directory where the file would go is in the way too. */
    {"directory_in_the_way", plant_directory, 0, directory_kept, 0},
};

START_TEST(test_in_the_way) {
  const struct way_case *k = &way_cases[_i];
  char dir[64], path[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  er_ring_path(path, sizeof path, dir);
  k->plant(dir, path);
  int rc = eventring_start();
  ck_assert_msg(rc == -EEXIST || (k->or_eloop && rc == -ELOOP),
                "start returned %d", rc);
  k->kept(dir, path);
  assert_off_then_recovers();
  if (k->kept_after) k->kept(dir, path);
  er_rmdir(dir);
}
END_TEST

/* The file is created private to its owner. */
START_TEST(test_file_mode) {
  char dir[64], path[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  mode_t old = umask(0);
  ck_assert_int_eq(eventring_start(), 0);
  umask(old);
  er_ring_path(path, sizeof path, dir);
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_eq(st.st_mode & 07777, 0600);
  ck_assert_int_eq(eventring_start(), 0); /* already started */
  ck_assert_int_eq(eventring_stop(), 0);
  ck_assert_int_ne(access(path, F_OK), 0); /* PRESERVE unset */
  er_rmdir(dir);
}
END_TEST

static TCase *tc_errors(void) {
  TCase *tc = er_tcase("create_errors");
  ER_ADD_TESTS(tc, test_missing_dir, test_read_only_dir);
  ER_ADD_CASES(tc, test_in_the_way, way_cases);
  tcase_add_test(tc, test_file_mode);
  return tc;
}

ER_TEST_MAIN("create_errors", tc_errors)
