/* Tests that a SIGBUS which is not about a ring file reaches the host's handler as the kernel would have delivered it -- once under SA_RESETHAND, then the default action kills; with the host's sa_mask; SIGBUS unblocked under SA_NODEFER -- in a tracing process and in one that only holds a cursor, and that a memory error reported ahead of time (BUS_MCEERR_AO) neither leaves the process running with the guard gone nor passes for a truncation. */
#include <setjmp.h>
#include <signal.h>
#include <sys/syscall.h>
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

/* A child's exit codes for what went wrong in it. */
#define EXIT_LOOPED 3    /* the host's handler ran RUNAWAY times */
#define EXIT_SURVIVED 4  /* got past what should have killed it */
#define EXIT_SETUP 5     /* could not set the scene */

/* A handler entered this often has been returned into the same fault
 * again and again: the child gives up and says so, rather than hang. */
#define RUNAWAY 100

/* Shared with the children (made before they fork): how often the
 * host's handler ran, and what it saw. */
static struct seen {
  int calls;
  int code;
  int usr1_blocked, usr2_blocked, hup_blocked, bus_blocked;
} *seen;

static void map_seen(void) {
  seen = mmap(NULL, sizeof *seen, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ck_assert_ptr_ne(seen, MAP_FAILED);
  memset(seen, 0, sizeof *seen);
}

/* The crash reporter's handler: note the fault, return, and let the
 * fault that runs again kill the process (SA_RESETHAND). */
static void reporter(int sig, siginfo_t *si, void *ctx) {
  (void)sig;
  (void)ctx;
  seen->code = si->si_code;
  if (__atomic_add_fetch(&seen->calls, 1, __ATOMIC_SEQ_CST) >= RUNAWAY)
    _exit(EXIT_LOOPED);
}

static void install(void (*fn)(int, siginfo_t *, void *), int flags,
                    const sigset_t *mask) {
  struct sigaction act;
  memset(&act, 0, sizeof act);
  act.sa_sigaction = fn;
  act.sa_flags = SA_SIGINFO | flags;
  if (mask)
    act.sa_mask = *mask;
  else
    sigemptyset(&act.sa_mask);
  ck_assert_int_eq(sigaction(SIGBUS, &act, NULL), 0);
}

/* Forks; the child runs `body` (which must not return), the parent
 * waits for it, bounded, and returns its wait status. */
static int in_child(void (*body)(const char *dir, pid_t writer),
                    const char *dir, pid_t writer) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    body(dir, writer);
    _exit(EXIT_SURVIVED);
  }
  return er_wait_for(pid, ER_RUN_TIMEOUT);
}

static void assert_killed_by_sigbus(int status) {
  ck_assert_msg(!(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_LOOPED),
                "the host's SA_RESETHAND handler ran %d times",
                seen->calls);
  ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS,
                "status 0x%x (SIGBUS is %d); the handler ran %d times",
                status, SIGBUS, seen->calls);
}

static void resethand_writer(const char *dir, pid_t writer) {
  (void)writer;
  install(reporter, SA_RESETHAND, NULL);
  if (eventring_start() != 0) _exit(EXIT_SETUP);
  eventring_begin(EVENTRING_PHASE_MAJOR);
  er_store_to_cut_mapping(dir);
}

/* The crash reporter's pattern under a tracing process: the handler runs
 * once, and the fault that runs again kills the process. */
START_TEST(test_resethand_writer) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  map_seen();
  int status = in_child(resethand_writer, dir, 0);
  assert_killed_by_sigbus(status);
  ck_assert_int_eq(seen->calls, 1);
  ck_assert_int_eq(seen->code, BUS_ADRERR);
  er_rmdir(dir);
}
END_TEST

static void resethand_reader(const char *dir, pid_t writer) {
  install(reporter, SA_RESETHAND, NULL);
  eventring_cursor *c;
  if (eventring_cursor_open(&c, dir, writer) != 0) _exit(EXIT_SETUP);
  /* The cursor's handler is in front of the host's. */
  struct sigaction now;
  if (sigaction(SIGBUS, NULL, &now) != 0 || now.sa_sigaction == reporter)
    _exit(EXIT_SETUP);
  er_store_to_cut_mapping(dir);
}

/* The same in a process that only holds a cursor on another's file. */
START_TEST(test_resethand_reader) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  ck_assert_int_eq(unsetenv("EVENTRING_READ_PREAD"), 0);
  pid_t writer = er_child_file(1);
  map_seen();
  int status = in_child(resethand_reader, dir, writer);
  assert_killed_by_sigbus(status);
  ck_assert_int_eq(seen->calls, 1);
  er_rmdir(dir);
}
END_TEST

static void resethand_nodefer(const char *dir, pid_t writer) {
  (void)writer;
  install(reporter, SA_RESETHAND | SA_NODEFER, NULL);
  if (eventring_start() != 0) _exit(EXIT_SETUP);
  er_store_to_cut_mapping(dir);
}

/* SA_RESETHAND with SA_NODEFER (what signal(2) of System V gives): still
 * once, then the default action. */
START_TEST(test_resethand_nodefer) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  map_seen();
  int status = in_child(resethand_nodefer, dir, 0);
  assert_killed_by_sigbus(status);
  ck_assert_int_eq(seen->calls, 1);
  er_rmdir(dir);
}
END_TEST

static sigjmp_buf jump;

/* Notes which signals are blocked while it runs, and leaves. */
static void mask_taker(int sig, siginfo_t *si, void *ctx) {
  (void)sig;
  (void)ctx;
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, NULL, &now);
  seen->calls++;
  seen->code = si->si_code;
  seen->usr1_blocked = sigismember(&now, SIGUSR1);
  seen->usr2_blocked = sigismember(&now, SIGUSR2);
  seen->hup_blocked = sigismember(&now, SIGHUP);
  seen->bus_blocked = sigismember(&now, SIGBUS);
  siglongjmp(jump, 1);
}

/* Touches a cut mapping of its own under the handler installed with
 * `flags` and sa_mask {SIGUSR1}, with SIGHUP blocked by the code that
 * faults. */
static void fault_with_mask(int flags) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  map_seen();
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGUSR1);
  install(mask_taker, flags, &mask);
  ck_assert_int_eq(eventring_start(), 0);
  volatile char *m = er_cut_mapping(dir);
  sigset_t hup, before, after;
  sigemptyset(&hup);
  sigaddset(&hup, SIGHUP);
  ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, &hup, &before), 0);
  if (sigsetjmp(jump, 1) == 0) {
    m[0] = 1;
    ck_abort_msg("no SIGBUS from a cut mapping");
  }
  /* siglongjmp put back the mask of the sigsetjmp. */
  ck_assert_int_eq(pthread_sigmask(SIG_SETMASK, &before, &after), 0);
  ck_assert_int_eq(sigismember(&after, SIGUSR2), 0);
  ck_assert_int_eq(seen->calls, 1);
  ck_assert_int_eq(seen->code, BUS_ADRERR);
  ck_assert_msg(seen->usr1_blocked, "the host's sa_mask (SIGUSR1) was not "
                                    "blocked in its handler");
  ck_assert_msg(!seen->usr2_blocked, "SIGUSR2, in no mask, was blocked in "
                                     "the host's handler");
  ck_assert_msg(seen->hup_blocked, "the faulting code's mask (SIGHUP) was "
                                   "not kept in the host's handler");
  ck_assert_int_eq(seen->bus_blocked, !(flags & SA_NODEFER));
  /* Tracing goes on, guarded: a cut of its own file is survived. */
  eventring_begin(EVENTRING_PHASE_MAJOR);
  ck_assert_int_eq(eventring_stop(), 0);
  er_rmdir(dir);
}

/* The host's handler runs with its sa_mask and the interrupted code's
 * mask blocked, and SIGBUS; nothing else. */
START_TEST(test_host_sa_mask) { fault_with_mask(0); }
END_TEST

/* Under SA_NODEFER, SIGBUS stays unblocked in the host's handler. */
START_TEST(test_host_nodefer) { fault_with_mask(SA_NODEFER); }
END_TEST

/* Sends this thread the SIGBUS a machine check reports ahead of any
 * access (BUS_MCEERR_AO) at `addr`, as the kernel would: only a process
 * may send itself a positive si_code. */
static void send_mceerr_ao(void *addr) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = SIGBUS;
  si.si_code = BUS_MCEERR_AO;
  si.si_addr = addr;
  si.si_addr_lsb = 12;
  if (syscall(SYS_rt_tgsigqueueinfo, getpid(), (pid_t)syscall(SYS_gettid),
              SIGBUS, &si) != 0)
    _exit(EXIT_SETUP);
}

static void ao_default(const char *dir, pid_t writer) {
  (void)dir;
  (void)writer;
  if (eventring_start() != 0) _exit(EXIT_SETUP);
  static char elsewhere[4096];
  send_mceerr_ao(elsewhere);
}

/* A process with the default action for SIGBUS dies of an AO report, as
 * it would untraced, rather than going on with the guard gone. */
START_TEST(test_mceerr_ao_default_kills) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  map_seen();
  int status = in_child(ao_default, dir, 0);
  er_assert_sigbus_death(status, "");
  er_rmdir(dir);
}
END_TEST

/* The start of this process's ring file's mapping, from /proc/self/maps. */
static void *ring_mapping(const char *path) {
  FILE *f = fopen("/proc/self/maps", "r");
  ck_assert_ptr_nonnull(f);
  char l[PATH_MAX + 256];
  void *at = NULL;
  while (!at && fgets(l, sizeof l, f)) {
    char *p = strchr(l, '/');
    if (!p) continue;
    p[strcspn(p, "\n")] = 0;
    unsigned long start;
    if (!strcmp(p, path) && sscanf(l, "%lx-", &start) == 1)
      at = (void *)start;
  }
  fclose(f);
  ck_assert_ptr_nonnull(at);
  return at;
}

/* A host's handler for AO reports (a process that asked for them with
 * PR_MCE_KILL_EARLY) gets each, and tracing goes on guarded; an AO report
 * for a page of the ring file is no truncation and needs nothing. */
START_TEST(test_mceerr_ao_host_handler) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  map_seen();
  install(reporter, 0, NULL);
  ck_assert_int_eq(eventring_start(), 0);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", eventring_path());
  eventring_begin(EVENTRING_PHASE_MAJOR);
  struct er_capture cap;
  er_stderr_begin(&cap);
  static char elsewhere[4096];
  send_mceerr_ao(elsewhere);
  ck_assert_int_eq(seen->calls, 1);
  ck_assert_int_eq(seen->code, BUS_MCEERR_AO);
  send_mceerr_ao(ring_mapping(path));
  ck_assert_int_eq(seen->calls, 1);
  char *err = er_stderr_end(&cap);
  ck_assert_str_eq(err, "");
  free(err);
  /* Still guarded: the file cut under the writer is survived. */
  ck_assert_int_eq(truncate(path, 0), 0);
  er_stderr_begin(&cap);
  eventring_end(EVENTRING_PHASE_MAJOR);
  ck_assert_int_eq(eventring_stop(), 0);
  err = er_stderr_end(&cap);
  ck_assert_ptr_nonnull(strstr(err, "was truncated while the program ran"));
  free(err);
  ck_assert_int_eq(seen->calls, 1);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_host(void) {
  TCase *tc = er_tcase("host_handler");
  tcase_add_test(tc, test_resethand_writer);
  tcase_add_test(tc, test_resethand_reader);
  tcase_add_test(tc, test_resethand_nodefer);
  tcase_add_test(tc, test_host_sa_mask);
  tcase_add_test(tc, test_host_nodefer);
  tcase_add_test(tc, test_mceerr_ao_default_kills);
  tcase_add_test(tc, test_mceerr_ao_host_handler);
  return tc;
}

ER_TEST_MAIN("sigbus_host_handler", tc_host)
