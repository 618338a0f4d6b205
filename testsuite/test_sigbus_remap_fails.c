/* Tests that a fault in a ring file's mapping that the SIGBUS handler can neither repair in the file nor replace with anonymous memory (mmap(2) interposed to fail) is never returned into: the handler says so once and the fault goes to the host -- its handler, or the default action, which kills -- for a writer's mapping and a cursor's alike. */
#include <dlfcn.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "rtlib.h"
#include "testlib.h"
#include "childfile.h"

#define NEED_TRACING()                                                   \
  do {                                                                   \
    if (er_tracing_off()) ER_SKIP("a build without tracing");            \
  } while (0)

#define EXIT_LOOPED 3   /* the handler tried to replace the mapping RUNAWAY times */
#define EXIT_SURVIVED 4 /* got past the store that should have killed it */
#define EXIT_SETUP 5    /* could not set the scene */

/* A mapping replaced this often means the handler keeps returning into
 * the same fault: the child gives up and says so, rather than hang. */
#define RUNAWAY 100

#define LOST_LINE "cannot be replaced: the fault goes to the program"

/* Set in the child: anonymous mappings at a fixed address (the handler's
 * replacement) fail with ENOMEM. */
static volatile sig_atomic_t refuse_fixed_anon;
static volatile sig_atomic_t refused;

/* The library's mmap(2) calls come here (it is linked statically into
 * this program); everything else goes on to the next definition (a
 * sanitizer's, which must see every mapping, or the C library's).  Not
 * instrumented: ThreadSanitizer's own start calls it before it can count
 * a function entry. */
__attribute__((no_sanitize("thread"))) void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  static void *(*next)(void *, size_t, int, int, int, off_t);
  if (refuse_fixed_anon && (flags & MAP_FIXED) && (flags & MAP_ANONYMOUS)) {
    if (++refused >= RUNAWAY) _exit(EXIT_LOOPED);
    errno = ENOMEM;
    return MAP_FAILED;
  }
  if (!next) *(void **)&next = dlsym(RTLD_NEXT, "mmap");
  if (!next) {
    errno = ENOSYS;
    return MAP_FAILED;
  }
  return next(addr, len, prot, flags, fd, off);
}

/* The store that faults must not be able to grow the file back: a file
 * size limit below it (the handler checks it: no SIGXFSZ). */
static void forbid_regrowth(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(EXIT_SETUP);
  rl.rlim_cur = 4096;
  if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(EXIT_SETUP);
}

/* Runs `body` in a child whose stderr goes to `err_path`; returns its
 * wait status, waited for with a bound. */
static int in_child(void (*body)(const char *dir, pid_t writer),
                    const char *dir, pid_t writer, const char *err_path) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, STDERR_FILENO) < 0) _exit(EXIT_SETUP);
    body(dir, writer);
    _exit(EXIT_SURVIVED);
  }
  return er_wait_for(pid, ER_RUN_TIMEOUT);
}

static void assert_killed(int status, const char *err_path) {
  char *err = er_slurp(err_path, NULL);
  ck_assert_msg(!(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_LOOPED),
                "the handler returned into the same fault %d times; "
                "stderr: %s",
                RUNAWAY, err);
  er_assert_sigbus_death(status, err);
  ck_assert_msg(strstr(err, LOST_LINE) != NULL, "stderr: %s", err);
  /* Once, not once per try. */
  ck_assert_ptr_null(strstr(strstr(err, LOST_LINE) + 1, LOST_LINE));
  free(err);
}

static void writer_body(const char *dir, pid_t writer) {
  (void)dir;
  (void)writer;
  if (eventring_start() != 0) _exit(EXIT_SETUP);
  eventring_begin(EVENTRING_PHASE_MAJOR);
  forbid_regrowth();
  /* Refused before the cut: a fault of another thread of the library's
   * (the remote watcher's look at the file) between the cut and the end
   * below must not find the replacement allowed. */
  refuse_fixed_anon = 1;
  if (truncate(eventring_path(), 0) != 0) _exit(EXIT_SETUP);
  eventring_end(EVENTRING_PHASE_MAJOR);
}

/* The writer's own file, cut under it. */
START_TEST(test_writer_mapping_unrepairable) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  char err[PATH_MAX];
  snprintf(err, sizeof err, "%s/stderr", dir);
  int status = in_child(writer_body, dir, 0, err);
  assert_killed(status, err);
  er_rmdir(dir);
}
END_TEST

/* Where `path` is mapped in this process, from /proc/self/maps, or NULL. */
static const volatile char *mapping_of(const char *path) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return NULL;
  char l[PATH_MAX + 256];
  const volatile char *at = NULL;
  while (!at && fgets(l, sizeof l, f)) {
    char *p = strchr(l, '/');
    unsigned long start;
    if (!p) continue;
    p[strcspn(p, "\n")] = 0;
    if (!strcmp(p, path) && sscanf(l, "%lx-", &start) == 1)
      at = (const volatile char *)start;
  }
  fclose(f);
  return at;
}

static void reader_body(const char *dir, pid_t writer) {
  eventring_cursor *c;
  if (eventring_cursor_open(&c, dir, writer) != 0) _exit(EXIT_SETUP);
  char path[PATH_MAX];
  er_ring_path_for(path, sizeof path, dir, writer);
  const volatile char *view = mapping_of(path);
  refuse_fixed_anon = 1;
  if (!view || truncate(path, 0) != 0) _exit(EXIT_SETUP);
  /* What the cursor's next poll would read first: the file's header. */
  (void)view[0];
}

/* A cursor's view of another process's file, cut under it. */
START_TEST(test_view_unrepairable) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  ck_assert_int_eq(unsetenv("EVENTRING_READ_PREAD"), 0);
  pid_t writer = er_child_file(1);
  char err[PATH_MAX];
  snprintf(err, sizeof err, "%s/stderr", dir);
  int status = in_child(reader_body, dir, writer, err);
  assert_killed(status, err);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_remap(void) {
  TCase *tc = er_tcase("remap_fails");
  tcase_add_test(tc, test_writer_mapping_unrepairable);
  tcase_add_test(tc, test_view_unrepairable);
  return tc;
}

ER_TEST_MAIN("sigbus_remap_fails", tc_remap)
