/* Tests that a cursor refuses another user's ring file and anything that is not a regular file (FIFO, device, directory, socket) with a clear error, without blocking, mapping it or leaking a descriptor. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "eventring.h"
#include "harness.h"

#define NOBODY 65534

/* Every open below runs under this alarm: a reader that blocks (on a
 * FIFO with no writer, say) is killed by SIGALRM and the test fails. */
#define OPEN_GUARD_S 5

static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  while (readdir(d)) n++;
  closedir(d);
  return n;
}

/* 1 when /proc/self/maps names `path` (a mapping of that file); shared
 * anonymous memory shows as "/dev/zero (deleted)", which is not one. */
static int mapped(const char *path) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return 0;
  char line[PATH_MAX + 128];
  int found = 0;
  size_t n = strlen(path);
  while (fgets(line, sizeof line, f)) {
    size_t k = strcspn(line, "\n");
    line[k] = '\0';
    if (k > n && !strcmp(line + k - n, path) && line[k - n - 1] == ' ')
      found = 1;
  }
  fclose(f);
  return found;
}

/* Opens a cursor on path and returns the result; the cursor, if one was
 * made, is freed.  Asserts that a refusal left no descriptor and no
 * mapping behind. */
static int try_open(const char *path) {
  int fds = count_fds();
  eventring_cursor *c = (eventring_cursor *)&c; /* must be reset */
  alarm(OPEN_GUARD_S);
  int r = eventring_cursor_open_file(&c, path);
  alarm(0);
  if (r == 0) {
    ck_assert_ptr_nonnull(c);
    eventring_cursor_free(c);
  } else {
    ck_assert_ptr_null(c);
    ck_assert_msg(r < 0, "open returned %d", r);
    ck_assert_ptr_nonnull(eventring_strerror(r));
    ck_assert_int_eq(count_fds(), fds);
    ck_assert_msg(!mapped(path), "%s is mapped after a refusal", path);
  }
  return r;
}

/* Makes a real ring file in a fresh directory: tracing started, one
 * event, stopped with the file kept.  Returns the directory. */
static const char *make_ring(char *path, size_t cap) {
  const char *dir = er_tmpdir();
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  setenv("OCAMLRUNPARAM", "e=10,d=2", 1);
  ck_assert_int_eq(eventring_start(), 0);
  eventring_begin(EVENTRING_PHASE_MINOR);
  ck_assert_int_eq(eventring_stop(), 0);
  er_ring_path(path, cap, dir);
  ck_assert_int_eq(try_open(path), 0);
  return dir;
}

/* Runs fn(arg) in a child that has become uid/gid nobody; returns what
 * fn returned (an open result), or fails the test. */
static int as_nobody(int (*fn)(const char *), const char *arg) {
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(p[0]);
    int r = 1;
    if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 ||
        setuid(NOBODY) != 0) {
      r = 1; /* reported as such below */
    } else {
      r = fn(arg);
    }
    ssize_t w = write(p[1], &r, sizeof r);
    (void)w;
    _exit(0);
  }
  close(p[1]);
  int r = 0;
  ssize_t got = read(p[0], &r, sizeof r);
  close(p[0]);
  int st;
  waitpid(pid, &st, 0);
  ck_assert_msg(got == sizeof r && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "the unprivileged child failed (status %d)", st);
  ck_assert_msg(r != 1, "could not become uid %d", NOBODY);
  return r;
}

/* The child's side: a plain open, no Check assertions (they would report
 * from a process Check does not know). */
static int open_result(const char *path) {
  eventring_cursor *c = NULL;
  alarm(OPEN_GUARD_S);
  int r = eventring_cursor_open_file(&c, path);
  alarm(0);
  if (r == 0) eventring_cursor_free(c);
  return r;
}

#define NEED_ROOT()                                                      \
  do {                                                                   \
    if (geteuid() != 0) ER_SKIP("needs root to act as two users");      \
    const char *f_ = getenv("CK_FORK");                                  \
    if (f_ && !strcmp(f_, "no")) ER_SKIP("needs Check's fork mode");    \
  } while (0)

START_TEST(test_other_users_private_file) {
  NEED_ROOT();
  char path[PATH_MAX];
  const char *dir = make_ring(path, sizeof path);
  /* The directory is searchable by all, so that only the file's own
   * permissions and owner are in question. */
  ck_assert_int_eq(chmod(dir, 0755), 0);
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_eq(st.st_mode & 07777, 0600);
  ck_assert_int_eq(st.st_uid, 0);
  int r = as_nobody(open_result, path);
  ck_assert_msg(r == -EACCES || r == -EPERM, "got %d (%s)", r,
                eventring_strerror(r));
  er_rmdir(dir);
}
END_TEST

/* A file another user made readable to all is still refused: the owner
 * check does not rely on the mode, which its owner may have loosened. */
START_TEST(test_other_users_readable_file) {
  NEED_ROOT();
  char path[PATH_MAX];
  const char *dir = make_ring(path, sizeof path);
  ck_assert_int_eq(chmod(dir, 0755), 0);
  ck_assert_int_eq(chmod(path, 0644), 0);
  ck_assert_int_eq(as_nobody(open_result, path), -EPERM);
  /* The same file given to nobody opens for nobody... */
  ck_assert_int_eq(chown(path, NOBODY, NOBODY), 0);
  ck_assert_int_eq(as_nobody(open_result, path), 0);
  /* ...and for the superuser, who may read every user's file. */
  ck_assert_int_eq(try_open(path), 0);
  er_rmdir(dir);
}
END_TEST

/* Without root: a regular file of another user (root's /etc/passwd).
 * Root becomes uid 65534 for it: each test runs in a process of its own
 * (without Check's fork, that would last for the rest of the run). */
START_TEST(test_foreign_file_unprivileged) {
  struct stat st;
  if (geteuid() == 0) {
    const char *fork_mode = getenv("CK_FORK");
    if (fork_mode && strcmp(fork_mode, "no") == 0)
      ER_SKIP("running as root without CK_FORK: cannot drop privileges");
    ck_assert_int_eq(setgid(65534), 0);
    ck_assert_int_eq(setuid(65534), 0);
  }
  if (stat("/etc/passwd", &st) != 0 || st.st_uid == geteuid())
    ER_SKIP("no readable file of another user");
  ck_assert_int_eq(try_open("/etc/passwd"), -EPERM);
}
END_TEST

START_TEST(test_fifo) {
  const char *dir = er_tmpdir();
  char fifo[PATH_MAX];
  snprintf(fifo, sizeof fifo, "%s/%ld.events", dir, (long)getpid() + 1);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  /* No writer: a blocking open would wait forever. */
  ck_assert_int_eq(try_open(fifo), EVENTRING_E_NOTRING);
  /* Through the pid form as well. */
  eventring_cursor *c;
  alarm(OPEN_GUARD_S);
  ck_assert_int_eq(eventring_cursor_open(&c, dir, getpid() + 1),
                   EVENTRING_E_NOTRING);
  alarm(0);
  /* With a writer holding it open, still no reading from it. */
  int w = open(fifo, O_RDWR | O_NONBLOCK);
  ck_assert_int_ge(w, 0);
  ck_assert_int_eq(write(w, "RING", 4), 4);
  ck_assert_int_eq(try_open(fifo), EVENTRING_E_NOTRING);
  char buf[8];
  ck_assert_int_eq(read(w, buf, sizeof buf), 4); /* not consumed by us */
  close(w);
  /* A link to it changes nothing. */
  char link[PATH_MAX];
  snprintf(link, sizeof link, "%s/link.events", dir);
  ck_assert_int_eq(symlink(fifo, link), 0);
  ck_assert_int_eq(try_open(link), EVENTRING_E_NOTRING);
  er_rmdir(dir);
}
END_TEST

START_TEST(test_devices) {
  ck_assert_int_eq(try_open("/dev/null"), EVENTRING_E_NOTRING);
  if (access("/dev/zero", R_OK) == 0)
    ck_assert_int_eq(try_open("/dev/zero"), EVENTRING_E_NOTRING);
  if (access("/dev/urandom", R_OK) == 0)
    ck_assert_int_eq(try_open("/dev/urandom"), EVENTRING_E_NOTRING);
}
END_TEST

START_TEST(test_directory) {
  const char *dir = er_tmpdir();
  ck_assert_int_eq(try_open(dir), EVENTRING_E_NOTRING);
  char sub[PATH_MAX];
  snprintf(sub, sizeof sub, "%s/%ld.events", dir, (long)getpid());
  ck_assert_int_eq(mkdir(sub, 0700), 0);
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open(&c, dir, getpid()),
                   EVENTRING_E_NOTRING);
  rmdir(sub);
  er_rmdir(dir);
}
END_TEST

START_TEST(test_socket) {
  const char *dir = er_tmpdir();
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  int n = snprintf(a.sun_path, sizeof a.sun_path, "%s/sock.events", dir);
  ck_assert_int_lt(n, (int)sizeof a.sun_path);
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  ck_assert_int_ge(s, 0);
  ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(s, 1), 0);
  /* open(2) itself refuses a socket (ENXIO); either way, a clear error. */
  int r = try_open(a.sun_path);
  ck_assert_msg(r == -ENXIO || r == EVENTRING_E_NOTRING, "got %d (%s)", r,
                eventring_strerror(r));
  close(s);
  er_rmdir(dir);
}
END_TEST

/* Not a ring at all, or not there: the ordinary errors. */
START_TEST(test_plain_errors) {
  const char *dir = er_tmpdir();
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/missing.events", dir);
  ck_assert_int_eq(try_open(p), -ENOENT);
  snprintf(p, sizeof p, "%s/empty.events", dir);
  int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
  ck_assert_int_ge(fd, 0);
  close(fd);
  ck_assert_int_eq(try_open(p), EVENTRING_E_NOTRINGFILE);
  eventring_cursor *c = NULL;
  ck_assert_int_eq(eventring_cursor_open_file(&c, NULL), EVENTRING_E_INVAL);
  ck_assert_int_eq(eventring_cursor_open_file(NULL, p), EVENTRING_E_INVAL);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_users(void) {
  TCase *tc = er_tcase("other_users");
  tcase_add_test(tc, test_other_users_private_file);
  tcase_add_test(tc, test_other_users_readable_file);
  tcase_add_test(tc, test_foreign_file_unprivileged);
  return tc;
}

static TCase *tc_types(void) {
  TCase *tc = er_tcase("not_regular");
  tcase_add_test(tc, test_fifo);
  tcase_add_test(tc, test_devices);
  tcase_add_test(tc, test_directory);
  tcase_add_test(tc, test_socket);
  tcase_add_test(tc, test_plain_errors);
  return tc;
}

ER_TEST_MAIN("reader_refuses", tc_users, tc_types)
