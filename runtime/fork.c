/* fork.c -- what becomes of tracing across fork().
 *
 * The parent goes on as before.  The child must not write into its
 * parent's rings (they are shared mappings) nor remove its parent's file:
 * it drops the mapping and, if tracing was on, starts a file of its own,
 * with a fork_child event naming its parent.  The handlers are installed
 * once, before the first use of er_st.lock (init.c, er_arm()): until
 * then there is no state to carry across.  er_st.lock is held across the
 * fork, so the child inherits a consistent state and a lock it can
 * release.
 *
 * Until the child's handler has closed the world, the child shares its
 * parent's mapping and its copy of every ring's tail: a probe run there
 * would write at the parent's tail, a second writer in the parent's ring
 * (stw.h, where the child's world is stopped by construction).  What may
 * run there unasked is a signal handler.  So the forking thread blocks
 * signals from our prepare handler until the parent's handler and the
 * child's have run; a signal sent meanwhile waits and is delivered after,
 * in the parent to its own file, in the child to its new one.  (A probe
 * in a fork handler that the host installed before ours would still run
 * in that window: not guarded against.)  Faults (SIGBUS above all, which
 * sigbus.c repairs in a cut file) stay unblocked: the kernel kills a
 * thread whose fault it cannot deliver.
 */
#include <signal.h>
#include <unistd.h>

#include "writer.h"

pid_t eventring_fork(void) {
  pid_t pid = fork();
  if (pid > 0) eventring_lifecycle(EVENTRING_LIFECYCLE_FORK_PARENT, pid);
  return pid;
}

/* The forking thread's signal mask before fork_prepare() blocked them. */
static __thread sigset_t mask_before_fork
    __attribute__((tls_model("initial-exec")));

static void fork_prepare(void) {
  sigset_t all;
  sigfillset(&all);
  static const int faults[] = {SIGBUS, SIGSEGV, SIGILL, SIGFPE, SIGTRAP,
                               SIGSYS};
  for (unsigned i = 0; i < sizeof faults / sizeof faults[0]; i++)
    sigdelset(&all, faults[i]);
  pthread_sigmask(SIG_BLOCK, &all, &mask_before_fork);
  er_lock();
}

static void fork_parent(void) {
  er_unlock();
  pthread_sigmask(SIG_SETMASK, &mask_before_fork, NULL);
}

/* Only async-signal-safe calls are made on this path when tracing was
 * off. */
static void fork_child(void) {
  /* The lock taken in fork_prepare() is held by this thread, the only one
   * of the child; it is released once the child's state is its own. */
  er_domains_after_fork();
  er_stw_after_fork();
  er_clock_after_fork();
  er_remote_after_fork();
  if (!er_iload_rlx(&er_st.live)) {
    er_unlock();
    pthread_sigmask(SIG_SETMASK, &mask_before_fork, NULL);
    return;
  }
  uint64_t parent = (uint64_t)er_st.pid;
  er_stw_close_forked();
  /* The file stays, and stays the parent's. */
  er_file_drop(ER_FILE_UNMAP);
  int r = er_start_locked();
  if (r == 0)
    er_emit_lifecycle(EVENTRING_LIFECYCLE_FORK_CHILD, parent);
  else
    er_warn("cannot trace forked child %ld: %s: %s", (long)getpid(),
            er_st.path, eventring_strerror(r));
  er_unlock();
  /* Signals sent to the child meanwhile are delivered here, their
   * probes writing into the child's own file. */
  pthread_sigmask(SIG_SETMASK, &mask_before_fork, NULL);
}

void er_fork_install(void) {
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}
