/* atfork.c -- the fork handlers, and eventring_fork().
 *
 * The handlers are installed once, before the first use of er_st.lock
 * (er_arm(), which init.c arms with er_fork_install()): until then there
 * is no state to carry across.  er_st.lock is held across the fork, so
 * the child inherits a consistent state and a lock it can release.
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
 *
 * The child's handler gives every layer its state back in the child, from
 * the bottom up: slots, stop-the-world, clock, the watcher, then the
 * pending file (fork.c).
 */
#include <signal.h>
#include <unistd.h>

#include "remote.h"
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
  er_block_signals(&mask_before_fork);
  er_lock();
  /* A watcher just created may not run yet (the start does not wait). */
  er_remote_wait_up();
}

static void fork_parent(void) {
  er_unlock();
  pthread_sigmask(SIG_SETMASK, &mask_before_fork, NULL);
}


/* Only async-signal-safe calls are made on this path. */
static void fork_child(void) {
  /* The lock taken in fork_prepare() is held by this thread, the only one
   * of the child; it is released once the child's state is its own. */
  er_domains_after_fork();
  er_stw_after_fork();
  er_clock_after_fork();
  er_remote_after_fork();
  er_fork_after_fork();
  er_unlock();
  pthread_sigmask(SIG_SETMASK, &mask_before_fork, NULL);
}

void er_fork_install(void) {
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

