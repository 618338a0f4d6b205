/* harness.h -- what every eventring test shares: main(), temp dirs,
 * ring file paths, environment paths, explicit skips, stderr capture.
 *
 * A test file defines TCase factories and ends with
 *
 *   static TCase *tc_basic(void) {
 *     TCase *tc = er_tcase("basic");
 *     tcase_add_test(tc, test_something);
 *     return tc;
 *   }
 *   ER_TEST_MAIN("layout", tc_basic, tc_other)
 *
 * Check runs every test in a forked child (unless CK_FORK=no), so each
 * test may start tracing, change the environment and exit without
 * cleaning up after the library; it should still remove its temp dir.
 *
 * Skips: Check has no notion of a skipped test, so ER_SKIP("why") prints
 * "SKIP: CASE: why" (CASE the function that skipped, the test's name for
 * a START_TEST body), counts the skip in a counter shared with the parent
 * (an anonymous shared mapping made before the children fork) and returns
 * from the test, which Check then counts as passed.  The summary line
 * gives the skip count, and a run in which every test skipped exits 77,
 * automake's code for a skipped test.  CI (.ci/check-skips) fails on any
 * SKIP line that its allow-list does not name by stage, test and CASE.
 *
 * Temp dirs: er_tmpdir() records each directory it makes in the same
 * shared mapping, and main() removes them all after the run, so that a
 * failing test (Check ends it with _exit, skipping any cleanup) leaves no
 * litter in /tmp.  Set EVENTRING_TEST_KEEP to keep them for a post-mortem.
 */
#ifndef EVENTRING_TEST_HARNESS_H
#define EVENTRING_TEST_HARNESS_H

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ringfile.h"

#define ER_UNUSED __attribute__((unused))

/* Seconds a single test may take before Check kills it: a bound that
 * turns a hang into a failure, never a measure, so generous enough for a
 * loaded machine running a sanitizer build (a test that writes 2,000 CTF
 * streams took over 30 s there). */
#ifndef ER_TEST_TIMEOUT
#define ER_TEST_TIMEOUT 120
#endif

/* State shared by main() and the forked children running the tests. */
#define ER_MAX_TMPDIRS 512
struct er_shared {
  int skips;
  int ndirs;
  char dirs[ER_MAX_TMPDIRS][64];
};
/* NULL until main() maps it. */
static struct er_shared *er_shared ER_UNUSED;

/* Prints "SKIP: CASE: reason" and counts the skip; `fn` is the calling
 * function's __func__, whose "_fn" suffix (Check's START_TEST adds it)
 * is dropped to give the test's own name. */
static ER_UNUSED void er_note_skip_in(const char *fn, const char *reason) {
  size_t n = strlen(fn);
  if (n > 3 && !strcmp(fn + n - 3, "_fn")) n -= 3;
  printf("SKIP: %.*s: %s\n", (int)n, fn, reason);
  fflush(stdout);
  if (er_shared) __atomic_add_fetch(&er_shared->skips, 1, __ATOMIC_SEQ_CST);
}

/* Counts a skip of part of the current test, which goes on. */
#define er_note_skip(reason) er_note_skip_in(__func__, reason)

static ER_UNUSED void er_rmdir(const char *dir);

/* Skips the rest of the current test, saying why. */
#define ER_SKIP(reason)                                                  \
  do {                                                                   \
    er_note_skip(reason);                                                \
    return;                                                              \
  } while (0)

/* A TCase with the harness's timeout. */
static ER_UNUSED TCase *er_tcase(const char *name) {
  TCase *tc = tcase_create(name);
  tcase_set_timeout(tc, ER_TEST_TIMEOUT);
  return tc;
}

/* Builds the suite from the TCase factories, runs it with CK_NORMAL
 * output and returns the exit status: 1 on any failure, 77 when every
 * test skipped, else 0. */
static ER_UNUSED int er_run_suite(const char *name, TCase *(*const *fns)(void),
                                  size_t nfns) {
  void *shared = mmap(NULL, sizeof(struct er_shared), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared != MAP_FAILED) er_shared = shared;
  Suite *s = suite_create(name);
  for (size_t i = 0; i < nfns; i++) suite_add_tcase(s, fns[i]());
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  int run = srunner_ntests_run(sr);
  srunner_free(sr);
  int skipped = er_shared ? er_shared->skips : 0;
  if (er_shared && !getenv("EVENTRING_TEST_KEEP")) {
    int n = er_shared->ndirs < ER_MAX_TMPDIRS ? er_shared->ndirs
                                              : ER_MAX_TMPDIRS;
    for (int i = 0; i < n; i++)
      if (er_shared->dirs[i][0]) er_rmdir(er_shared->dirs[i]);
  }
  printf("%s: %d test(s) run, %d failed, %d skipped\n", name, run, failed,
         skipped);
  if (failed != 0) return 1;
  if (run > 0 && skipped >= run) return 77;
  return 0;
}

#define ER_TEST_MAIN(suite_name, ...)                                    \
  int main(void) {                                                       \
    static TCase *(*const fns[])(void) = {__VA_ARGS__};                  \
    return er_run_suite(suite_name, fns, sizeof fns / sizeof fns[0]);    \
  }

/* Makes a fresh private directory under /tmp, points
 * OCAML_RUNTIME_EVENTS_DIR at it and clears the variables that change the
 * library's behaviour (OCAMLRUNPARAM, CAMLRUNPARAM,
 * OCAML_RUNTIME_EVENTS_PRESERVE, EVENTRING_RECORD_CMDLINE), so that a test starts from the defaults
 * whatever the caller's environment.  Returns the directory (static
 * storage, overwritten by the next call); fails the test on error. */
static ER_UNUSED const char *er_tmpdir(void) {
  static char dir[64];
  strcpy(dir, "/tmp/eventring-test-XXXXXX");
  ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
  if (er_shared) {
    int i = __atomic_fetch_add(&er_shared->ndirs, 1, __ATOMIC_SEQ_CST);
    if (i < ER_MAX_TMPDIRS) strcpy(er_shared->dirs[i], dir);
  }
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1), 0);
  unsetenv("OCAMLRUNPARAM");
  unsetenv("CAMLRUNPARAM");
  unsetenv("OCAML_RUNTIME_EVENTS_PRESERVE");
  unsetenv("EVENTRING_RECORD_CMDLINE");
  return dir;
}

/* Removes `dir` and the files directly in it (tests make no subdirs);
 * a missing `dir` is fine. */
static ER_UNUSED void er_rmdir(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char p[PATH_MAX];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      unlink(p);
    }
    closedir(d);
  }
  rmdir(dir);
}

/* Writes `<dir>/<pid>.events` for `pid` (0 = the calling process). */
static ER_UNUSED char *er_ring_path_for(char *buf, size_t n, const char *dir,
                                        pid_t pid) {
  snprintf(buf, n, "%s/%ld.events", dir, (long)(pid ? pid : getpid()));
  return buf;
}

/* The ring file path of the calling process in `dir`. */
static ER_UNUSED char *er_ring_path(char *buf, size_t n, const char *dir) {
  return er_ring_path_for(buf, n, dir, 0);
}

/* A directory named by an environment variable (EVENTRING_TEST_DATA,
 * EVENTRING_TEST_PROGS), or NULL when it is unset or empty; callers skip
 * with ER_SKIP when it is NULL. */
static ER_UNUSED const char *er_env_dir(const char *var) {
  const char *v = getenv(var);
  return v && *v ? v : NULL;
}

/* Decodes the ring file at `path` into `f`, failing the test with the
 * decoder's message when it is malformed. */
static ER_UNUSED void er_open_ring(const char *path, struct rf_file *f) {
  char err[256];
  int rc = rf_open(path, f, err);
  ck_assert_msg(rc == 0, "rf_open(%s): %s", path, err);
}

/* Redirects stderr to a fresh temporary file until er_stderr_end(), which
 * restores it and returns what was written (malloc'd, NUL-terminated). */
struct er_capture {
  int saved_fd;
  FILE *tmp;
};

static ER_UNUSED void er_stderr_begin(struct er_capture *c) {
  fflush(stderr);
  c->tmp = tmpfile();
  ck_assert_msg(c->tmp != NULL, "tmpfile: %s", strerror(errno));
  c->saved_fd = dup(STDERR_FILENO);
  ck_assert_int_ge(c->saved_fd, 0);
  ck_assert_int_ge(dup2(fileno(c->tmp), STDERR_FILENO), 0);
}

/* Everything written to the temporary file `f` (malloc'd,
 * NUL-terminated); closes `f`. */
static ER_UNUSED char *er_read_stream(FILE *f) {
  fflush(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  ck_assert_int_ge(n, 0);
  char *s = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(s);
  rewind(f);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = '\0';
  fclose(f);
  return s;
}

static ER_UNUSED char *er_stderr_end(struct er_capture *c) {
  fflush(stderr);
  dup2(c->saved_fd, STDERR_FILENO);
  close(c->saved_fd);
  return er_read_stream(c->tmp);
}

/* Number of '\n'-terminated lines in `s`. */
static ER_UNUSED int er_count_lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

#endif
