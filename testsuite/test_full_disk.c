/* Tests tracing on a full disk (a tiny tmpfs): no SIGBUS, a domain whose ring cannot be reserved is not traced and says so once, a start that cannot reserve the headers fails cleanly, and the program runs on. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "testlib.h"

/* The traced process runs in a grandchild of Check's runner: this test's
 * process makes a private mount namespace, mounts the tmpfs, forks the
 * writer, waits for it (bounded), unmounts and only then judges.  A
 * failing assertion before the unmount leaves nothing behind either: the
 * mount belongs to the namespace, which dies with the process. */

#define RUN_TIMEOUT 20.0
#define EVENTS_PER_THREAD 500
#define MAX_THREADS 16

#define NEED_MOUNT()                                                     \
  do {                                                                   \
    const char *tr_ = getenv("EVENTRING_TRACING");                       \
    const char *f_ = getenv("CK_FORK");                                  \
    if (tr_ && !strcmp(tr_, "no")) ER_SKIP("a build without tracing");   \
    if (geteuid() != 0) ER_SKIP("needs root to mount a tmpfs");          \
    if (f_ && !strcmp(f_, "no")) ER_SKIP("needs Check's fork mode");     \
  } while (0)

/* Enters a private mount namespace and mounts a tmpfs of `size` (mount
 * option syntax) on a fresh directory, copied into mnt.  Returns 0, or -1
 * when this system does not let us (the caller skips). */
static int mount_tiny(const char *size, char *mnt, size_t cap) {
  snprintf(mnt, cap, "%s", er_tmpdir());
  if (unshare(CLONE_NEWNS) != 0) return -1;
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return -1;
  char opts[64];
  snprintf(opts, sizeof opts, "size=%s,mode=0700", size);
  if (mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0)
    return -1;
  return 0;
}

static void unmount_tiny(const char *mnt) { umount2(mnt, MNT_DETACH); }

/* ---- The writer (the grandchild). */

static pthread_barrier_t all_in;
static int int_id;

static void *thread_main(void *arg) {
  long t = (long)arg;
  for (int i = 0; i < EVENTS_PER_THREAD; i++)
    eventring_write_int(int_id, t * 1000000 + i);
  /* Every thread holds its slot until all have taken one. */
  pthread_barrier_wait(&all_in);
  printf("thread %ld domain %d\n", t, eventring_domain_id());
  fflush(stdout);
  pthread_barrier_wait(&all_in);
  return NULL;
}

/* Starts tracing, runs nthreads threads that each write, then stops.
 * Prints "start RC" and one "thread T domain D" line per thread; exits 0
 * unless something other than tracing failed. */
static void writer(int nthreads) {
  int_id = eventring_register("disk.int", EVENTRING_TYPE_INT);
  if (int_id < 0) _exit(3);
  int rc = eventring_start();
  printf("start %d\n", rc);
  fflush(stdout);
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_end(EVENTRING_PHASE_MINOR);
  pthread_barrier_init(&all_in, NULL, (unsigned)nthreads + 1);
  pthread_t th[MAX_THREADS];
  for (long t = 1; t <= nthreads; t++)
    if (pthread_create(&th[t - 1], NULL, thread_main, (void *)t) != 0) _exit(4);
  pthread_barrier_wait(&all_in);
  pthread_barrier_wait(&all_in);
  for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
  /* The program goes on with its work. */
  eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, 1);
  if (rc == 0 && eventring_stop() != 0) _exit(5);
  _exit(0);
}

/* ---- The judge. */

struct outcome {
  int status;           /* the writer's wait status, -1 when killed */
  int start_rc;
  int nthreads_seen;
  int thread_domain[MAX_THREADS + 1];
  char err[4096];       /* its stderr */
  int warned[64];       /* "domain N is not traced" lines per domain */
  int other_lines;      /* any other stderr line */
};

static struct outcome run_writer(const char *mnt, const char *log_dir,
                                 const char *param, int nthreads) {
  struct outcome o;
  memset(&o, 0, sizeof o);
  o.start_rc = 1;
  char outp[PATH_MAX], errp[PATH_MAX];
  snprintf(outp, sizeof outp, "%s/out", log_dir);
  snprintf(errp, sizeof errp, "%s/err", log_dir);
  setenv("OCAML_RUNTIME_EVENTS_DIR", mnt, 1);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  if (param) setenv("OCAMLRUNPARAM", param, 1);
  else unsetenv("OCAMLRUNPARAM");
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int out = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0) _exit(2);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    alarm((unsigned)RUN_TIMEOUT);
    writer(nthreads);
  }
  double deadline = er_now() + RUN_TIMEOUT + 5;
  int st;
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    if (er_now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      st = -1;
      break;
    }
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  o.status = st;
  FILE *f = fopen(outp, "r");
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    int t, d, rc;
    if (sscanf(line, "start %d", &rc) == 1) o.start_rc = rc;
    else if (sscanf(line, "thread %d domain %d", &t, &d) == 2 && t >= 1 &&
             t <= MAX_THREADS) {
      o.thread_domain[t] = d;
      o.nthreads_seen++;
    }
  }
  if (f) fclose(f);
  f = fopen(errp, "r");
  size_t n = f ? fread(o.err, 1, sizeof o.err - 1, f) : 0;
  o.err[n] = '\0';
  if (f) fclose(f);
  for (char *l = o.err; *l;) {
    char *nl = strchr(l, '\n');
    int d;
    if (sscanf(l, "eventring: domain %d is not traced", &d) == 1 && d >= 0 &&
        d < 64)
      o.warned[d]++;
    else
      o.other_lines++;
    if (!nl) break;
    l = nl + 1;
  }
  return o;
}

/* Events per domain in the file the writer left (PRESERVE). */
static int count_events(const char *path, uint64_t *per_domain, int ndom) {
  struct rf_file f;
  char err[256];
  if (rf_open(path, &f, err) != 0) return -1;
  for (int d = 0; d < ndom && (uint64_t)d < f.max_domains; d++)
    per_domain[d] = f.rings[d].nevents;
  rf_close(&f);
  return 0;
}

static void find_ring_file(const char *mnt, char *path, size_t cap) {
  path[0] = '\0';
  DIR *d = opendir(mnt);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, ".events"))
      snprintf(path, cap, "%s/%s", mnt, e->d_name);
  closedir(d);
}

/* A run of the writer on a tmpfs of `size`: its outcome, the file it
 * left (path, "" for none), the events each of the first 8 domains has in
 * it, and what count_events() returned (-2: no file). */
struct tiny_run {
  struct outcome o;
  char path[PATH_MAX];
  uint64_t ev[8];
  int decoded;
};

/* Runs the writer (OCAMLRUNPARAM `param`, `nthreads` threads) on a fresh
 * tmpfs of `size`, its logs in `logs`.  Returns -1 when no tmpfs could be
 * mounted, else 0. */
static int run_tiny(const char *size, const char *param, int nthreads,
                    const char *logs, struct tiny_run *t) {
  char mnt[64];
  if (mount_tiny(size, mnt, sizeof mnt) != 0) return -1;
  t->o = run_writer(mnt, logs, param, nthreads);
  find_ring_file(mnt, t->path, sizeof t->path);
  memset(t->ev, 0, sizeof t->ev);
  t->decoded = t->path[0] ? count_events(t->path, t->ev, 8) : -2;
  unmount_tiny(mnt);
  return 0;
}

/* 1 MiB, 256 KiB rings: the headers and a few rings fit, the others do
 * not.  Every thread whose ring was reserved has all its events; every
 * other one is named once on stderr and has none; nothing crashes. */
START_TEST(test_some_domains_fit) {
  NEED_MOUNT();
  char logs[64];
  snprintf(logs, sizeof logs, "%s", er_tmpdir());
  const int nthreads = 6;
  static struct tiny_run t;
  if (run_tiny("1m", "e=15,d=8", nthreads, logs, &t) != 0)
    ER_SKIP("cannot mount a tmpfs here");
  const struct outcome o = t.o;
  const uint64_t *ev = t.ev;
  int decoded = t.decoded;

  ck_assert_msg(o.status != -1, "the writer hung");
  ck_assert_msg(!WIFSIGNALED(o.status), "the writer died of signal %d",
                WTERMSIG(o.status));
  ck_assert_msg(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0,
                "the writer exited %d; stderr: %s", WEXITSTATUS(o.status),
                o.err);
  ck_assert_int_eq(o.start_rc, 0);
  ck_assert_int_eq(o.nthreads_seen, nthreads);
  ck_assert_msg(o.other_lines == 0, "stderr: %s", o.err);
  ck_assert_msg(decoded == 0, "the file %s did not decode (%d)", t.path,
                decoded);
  int traced = 0, untraced = 0;
  for (int d = 0; d < 8; d++) ck_assert_int_le(o.warned[d], 1);
  /* The starter (domain 0) fits: ring_start, its two phases, the
   * counter, ring_stop. */
  ck_assert_int_eq(o.warned[0], 0);
  ck_assert_uint_eq(ev[0], 5);
  for (int t = 1; t <= nthreads; t++) {
    int d = o.thread_domain[t];
    ck_assert(d >= 1 && d < 8);
    if (o.warned[d]) {
      untraced++;
      ck_assert_uint_eq(ev[d], 0);
    } else {
      traced++;
      /* domain_spawn, its ints, domain_terminate. */
      ck_assert_uint_eq(ev[d], EVENTS_PER_THREAD + 2);
    }
  }
  ck_assert_int_ge(traced, 1);
  ck_assert_int_ge(untraced, 1);
  int warnings = 0;
  for (int d = 0; d < 64; d++) warnings += o.warned[d];
  ck_assert_int_eq(warnings, untraced);
  er_rmdir(logs);
}
END_TEST

/* 200 KiB: the headers fit, no ring does, not even the starter's.  Start
 * succeeds, every domain says once that it is not traced, the file holds
 * no event and the program runs on. */
START_TEST(test_no_ring_fits) {
  NEED_MOUNT();
  char logs[64];
  snprintf(logs, sizeof logs, "%s", er_tmpdir());
  static struct tiny_run t;
  if (run_tiny("200k", "e=15,d=8", 2, logs, &t) != 0)
    ER_SKIP("cannot mount a tmpfs here");
  const struct outcome o = t.o;
  const uint64_t *ev = t.ev;
  int decoded = t.decoded;

  ck_assert_msg(o.status != -1 && WIFEXITED(o.status) &&
                    WEXITSTATUS(o.status) == 0,
                "writer status %d; stderr: %s", o.status, o.err);
  ck_assert_int_eq(o.start_rc, 0);
  ck_assert_int_eq(o.nthreads_seen, 2);
  ck_assert_msg(o.other_lines == 0, "stderr: %s", o.err);
  ck_assert_int_eq(o.warned[0], 1);
  ck_assert_int_eq(o.warned[o.thread_domain[1]], 1);
  ck_assert_int_eq(o.warned[o.thread_domain[2]], 1);
  ck_assert_int_eq(decoded, 0);
  for (int d = 0; d < 8; d++) ck_assert_uint_eq(ev[d], 0);
  er_rmdir(logs);
}
END_TEST

/* 16 KiB: not even the headers.  Start fails with ENOSPC and removes what
 * it made; the program runs on untraced. */
START_TEST(test_headers_do_not_fit) {
  NEED_MOUNT();
  char mnt[64], logs[64];
  snprintf(logs, sizeof logs, "%s", er_tmpdir());
  if (mount_tiny("16k", mnt, sizeof mnt) != 0)
    ER_SKIP("cannot mount a tmpfs here");
  struct outcome o = run_writer(mnt, logs, NULL, 2);
  char path[PATH_MAX];
  find_ring_file(mnt, path, sizeof path);

  /* The constructor's start, as OCAML_RUNTIME_EVENTS_START asks for it:
   * one line, and the program runs on. */
  int env_status = -2;
  char env_err[1024] = "";
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  char prog[PATH_MAX];
  if (progs) {
    snprintf(prog, sizeof prog, "%s/fault_setuid", progs);
    if (access(prog, X_OK) == 0) {
      char errp[PATH_MAX];
      snprintf(errp, sizeof errp, "%s/env.err", logs);
      pid_t pid = fork();
      ck_assert_int_ge(pid, 0);
      if (pid == 0) {
        int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int null = open("/dev/null", O_WRONLY);
        dup2(e, STDERR_FILENO);
        dup2(null, STDOUT_FILENO);
        setenv("OCAML_RUNTIME_EVENTS_START", "1", 1);
        alarm((unsigned)RUN_TIMEOUT);
        execl(prog, prog, "env", (char *)NULL);
        _exit(127);
      }
      waitpid(pid, &env_status, 0);
      FILE *f = fopen(errp, "r");
      if (f) {
        size_t n = fread(env_err, 1, sizeof env_err - 1, f);
        env_err[n] = '\0';
        fclose(f);
      }
    }
  }
  char path2[PATH_MAX];
  find_ring_file(mnt, path2, sizeof path2);
  unmount_tiny(mnt);

  ck_assert_msg(o.status != -1 && WIFEXITED(o.status) &&
                    WEXITSTATUS(o.status) == 0,
                "writer status %d; stderr: %s", o.status, o.err);
  ck_assert_int_eq(o.start_rc, -ENOSPC);
  ck_assert_int_eq(o.nthreads_seen, 2);
  ck_assert_msg(o.err[0] == '\0', "stderr: %s", o.err);
  ck_assert_msg(path[0] == '\0', "left behind: %s", path);
  if (env_status == -2) {
    er_note_skip("no fault_setuid: the constructor's start not checked");
  } else {
    ck_assert_msg(WIFEXITED(env_status) && WEXITSTATUS(env_status) == 0,
                  "fault_setuid status %d", env_status);
    ck_assert_int_eq(er_count_lines(env_err), 1);
    ck_assert_msg(strncmp(env_err, "eventring:", 10) == 0, "%s", env_err);
    ck_assert_msg(path2[0] == '\0', "left behind: %s", path2);
  }
  er_rmdir(logs);
}
END_TEST

static TCase *tc_disk(void) {
  TCase *tc = er_tcase("full_disk");
  tcase_add_test(tc, test_some_domains_fit);
  tcase_add_test(tc, test_no_ring_fits);
  tcase_add_test(tc, test_headers_do_not_fit);
  return tc;
}

ER_TEST_MAIN("full_disk", tc_disk)
