/* fork.c -- a forked child's tracing, pending until it needs a file.
 *
 * The parent goes on as before.  The child must not write into its
 * parent's rings (they are shared mappings) nor remove its parent's file:
 * its fork handler drops the mapping and, if tracing was on, leaves the
 * child's tracing pending: started, but with no file yet.  The file, with
 * ring_start and a fork_child event naming the parent, is made when the
 * child first needs it (er_fork_file_locked()): its first event, or a
 * call that asks for the file (eventring_path(), a cursor or a snapshot
 * of its own file, eventring_start()).  A child that never writes an
 * event -- one that execs, or a worker that ends with _exit() -- so costs
 * its fork nothing but the handler, and leaves no file.  While pending,
 * eventring__on is ER_ON_PENDING (0 while paused), which sends the probes
 * to er_enter_pending(); `live` stays 0, so nothing reads a mapping.
 *
 * The file is made under er_st.lock, as a start makes it, with the
 * calling thread's signals blocked, so that no signal handler's event
 * lands between ring_start and fork_child.  Everything on the way is
 * async-signal-safe as the fork handler's own path was (open, ftruncate,
 * fallocate, mmap, /proc read with read(2); ring.c, starttime.c), because
 * a first event may come from a signal handler.  The directory is the one
 * the parent's environment named at the fork, made absolute then, so that
 * a child that changes its directory (a daemon's chdir("/")) still writes
 * beside its parent's file.
 *
 * The fork handlers, which hold er_st.lock across fork() and leave the
 * child's tracing pending (er_fork_after_fork()), are atfork.c's.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "drops.h"
#include "writer.h"

/* The pending file of a forked child (see the top of the file).
 * `pending` is 1 from the child's fork handler until the file is made or
 * tracing stopped: stored under er_st.lock, loaded without it (atomic).
 * The rest is under the lock. */
static struct {
  int pending;
  pid_t parent;            /* the fork_child event's data */
  char dir[PATH_MAX];      /* where the file goes: absolute, or as given
                              when the working directory is unknown */
} fk;

/* Events of probes that found the file pending and could not take the
 * lock to make it (a signal handler that interrupted its own thread's
 * holding of the lock, or a control operation in another thread): counted
 * here, atomically, and moved into the file's DROPPED word by whoever sees
 * the file made (er_fork_drop_unfiled()). */
static uint64_t unfiled;

/* Signals a handler could emit from, blocked while the file is made; the
 * faults stay deliverable (see the top of the file). */
void er_block_signals(sigset_t *old) {
  sigset_t all;
  sigfillset(&all);
  static const int faults[] = {SIGBUS, SIGSEGV, SIGILL, SIGFPE, SIGTRAP,
                               SIGSYS};
  for (unsigned i = 0; i < sizeof faults / sizeof faults[0]; i++)
    sigdelset(&all, faults[i]);
  pthread_sigmask(SIG_BLOCK, &all, old);
}

/* Takes the count of unfiled drops (to 0) and returns it. */
static uint64_t take_unfiled(void) {
  uint64_t n;
  do n = er_load_rlx(&unfiled);
  while (n && !er_cas(&unfiled, n, 0));
  return n;
}

/* Where the child's file will go: OCAML_RUNTIME_EVENTS_DIR (else the
 * working directory) as er_file_path() reads it, made absolute with the
 * working directory now.  getcwd(3) is one system call here. */
static void note_dir(void) {
  const char *dir = secure_getenv("OCAML_RUNTIME_EVENTS_DIR");
  if (!dir || !*dir) dir = ".";
  size_t n = 0;
  if (dir[0] != '/' && getcwd(fk.dir, sizeof fk.dir)) {
    n = strlen(fk.dir);
    if (strcmp(dir, ".") == 0) return;
    if (n + 1 < sizeof fk.dir) fk.dir[n++] = '/';
  }
  size_t len = strlen(dir);
  if (n + len >= sizeof fk.dir) n = 0; /* too long: as given */
  if (len >= sizeof fk.dir) len = sizeof fk.dir - 1;
  memcpy(fk.dir + n, dir, len);
  fk.dir[n + len] = '\0';
}

void er_fork_after_fork(void) {
  er_store_rlx(&unfiled, 0);
  /* A child of a child whose file was still pending inherits the
   * pending state, with its own parent. */
  int traced = er_iload_rlx(&er_st.live) || er_iload_rlx(&fk.pending);
  if (!traced) return;
  /* The parent's pid: the one its file records, or the one its own fork
   * handler noted below when its file was still pending. */
  fk.parent = er_st.pid;
  er_st.pid = getpid();
  if (er_iload_rlx(&er_st.live)) {
    er_stw_close_forked();
    /* The file stays, and stays the parent's. */
    er_file_drop(ER_FILE_UNMAP);
  }
  note_dir();
  er_istore_rlx(&fk.pending, 1);
  /* Lets the probes come to er_enter_pending(), unless paused. */
  if (er_st.paused)
    er_stw_turn_probes_away();
  else
    er_stw_send_probes_to_pending();
}

int er_fork_pending(void) { return er_iload_acq(&fk.pending); }

int er_fork_file_locked(void) {
  if (!er_iload_rlx(&fk.pending)) return 0;
  sigset_t old;
  er_block_signals(&old);
  /* The flag stays ER_ON_PENDING meanwhile: other threads' probes come
   * to er_enter_pending() and wait for the lock, or count their event,
   * rather than skip it unseen.  The start stores ER_ON_OPEN. */
  int r = er_start_locked(fk.dir);
  if (r == 0) {
    er_emit_lifecycle(EVENTRING_LIFECYCLE_FORK_CHILD, (uint64_t)fk.parent);
  } else {
    /* Untraced from now on, as after a stop. */
    er_stw_turn_probes_away();
    er_st.paused = 0;
    er_warn("cannot trace forked child %ld: %s: %s", (long)getpid(),
            er_st.path, eventring_strerror(r));
  }
  /* Pairs with the fence in er_fork_drop_unfiled(): a probe that counted a drop
   * before this store sees the file pending and leaves its count to the
   * take below; one that counted after it sees the file made and takes
   * the count itself. */
  er_istore_rlx(&fk.pending, 0);
  er_fence();
  uint64_t n = take_unfiled();
  if (r == 0) er_drop_n(&er_st.ext[ER_EXT_DROPPED], n);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return r;
}

int er_fork_cancel_locked(void) {
  if (!er_iload_rlx(&fk.pending)) return 0;
  er_istore_rlx(&fk.pending, 0);
  er_stw_turn_probes_away();
  er_store_rlx(&unfiled, 0);
  return 1;
}

void er_fork_pause_locked(void) {
  if (er_st.paused) return;
  /* No file to record it in: the probes stop coming to make one. */
  er_st.paused = 1;
  er_stw_turn_probes_away();
}

void er_fork_resume_locked(void) {
  if (!er_st.paused) return;
  er_st.paused = 0;
  er_stw_send_probes_to_pending();
}

void er_fork_drop_unfiled(void) {
  er_drop(&unfiled);
  /* Pairs with the fence in er_fork_file_locked() (see there). */
  er_fence();
  if (er_iload_rlx(&fk.pending)) return;
  for (uint64_t n = take_unfiled(); n; n--) er_slotless_drop();
}
