/* sigbus.c -- the host survives its ring file being cut short.
 *
 * The ring file is mapped shared, and its owner may truncate it while the
 * program runs (`truncate -s 0 DIR/PID.events`).  Every access to a page
 * past the new end of the file then raises SIGBUS, and a probe, the
 * remote-control watcher, the teardown or a cursor reading the file would
 * kill the host with it.
 *
 * Controllers in other processes (remote_client.c) never need this
 * guard: they reach the control words through system calls only, which
 * fail with EFAULT or read short where a load would fault (remote.h).
 * Readers in other processes do: they map the file too (below).
 *
 * So while a file is mapped -- from before the first store that fills it
 * in -- a SIGBUS handler guards it.  A fault whose address lies in the
 * writer's mapping is repaired where it happened, and the handler
 * returns, so that the store runs again:
 *
 *   - the file is shorter than the mapping: it is grown back to its size
 *     (ftruncate).  The mapping stays the file's, so that the watcher's
 *     futex words stay the ones a controller and the stop wake (remote.h);
 *   - the file is not shorter: it was grown back between the fault and
 *     our look, by another thread's repair (two threads fault together)
 *     or by its owner.  The page's disk block is reserved (fallocate: a
 *     page grown back is a hole, and a full disk faults it again) and the
 *     store simply runs again.  Other memory is not put in the mapping's
 *     place here: it would cut the watcher off its futex, and the stop
 *     would wake another page than the one it sleeps on and never return;
 *   - when neither can help (the descriptor is closed; RLIMIT_FSIZE no
 *     longer allows the size; no block for the page; the same store of
 *     this thread faulted again with the file unchanged since: an I/O
 *     error), the whole mapping is replaced by anonymous memory at the
 *     same address (mmap MAP_FIXED, one step for other threads).  The
 *     watcher may then sleep on a futex that nobody can wake: it never
 *     sleeps for more than a second at a time (remote_watcher.c).
 *
 * The events are lost (the owner wiped them): one line on stderr says so,
 * once per file.
 *
 * A writer's mapping left in place at a stop (a thread stuck inside a
 * probe, stw.h) keeps being guarded after the next file's guard replaces
 * its own: it moves to the table of views below, writable.
 *
 * A cursor reads its file through a mapping of its own, which outlives
 * tracing: on this process's own file (eventring_cursor_open(NULL, 0)),
 * or on another process's, for which the cursor installs the handler
 * when this process has not (er_sigbus_watch_other_view; a process that
 * only reads then has the handler too, chained the same way).  Such a
 * view is registered here for as long as it is mapped (a fixed table; a
 * cursor that finds it full reads with pread(2) instead).  A fault in a
 * view puts anonymous zeros in its place and marks it cut, so that the
 * cursor says EVENTRING_E_TRUNCATED from then on (consumer_poll.c) and never
 * passes on what it read from the zeros.
 *
 * Every call in the handler is async-signal-safe (fallocate(2) is a plain
 * system call, as ftruncate is), and it touches no mapped page of the
 * file: a fault inside it would kill the host, SIGBUS being blocked there.
 *
 * A fault in the writer's mapping or a view that cannot be repaired (the
 * anonymous mapping itself fails) is not returned into, which would run
 * the store into the same fault for ever: the guard of that mapping is
 * dropped, one line says so, and the fault goes on as any other.
 *
 * Any other SIGBUS goes to what was there before us, as if we were not
 * (chain()): the host's handler runs as the kernel would have run it,
 * with the host's sa_mask and SIGBUS blocked (unless SA_NODEFER) on top
 * of the mask of the interrupted code, and only once when installed with
 * SA_RESETHAND: the kernel resets the disposition of the handler it
 * invokes -- ours -- so the reset to SIG_DFL is ours to make, and the
 * fault that runs again once the host's handler returns meets SIG_DFL and
 * kills the process, as it would have untraced.  Under SIG_DFL (or
 * SIG_IGN, which a fault overrides) the default action is restored:
 * a fault that runs again on return (BUS_ADRALN, BUS_ADRERR, BUS_OBJERR,
 * BUS_MCEERR_AR) faults again under it; one that does not (sent by kill(2)
 * or sigqueue(3), or BUS_MCEERR_AO, a memory error reported ahead of any
 * access) is raised again, so that it kills as it would have, rather than
 * leaving the process running with the guard gone.  A memory error
 * (BUS_MCEERR_*) is never a truncation: in a mapping of ours, AO needs
 * nothing (the kernel has taken the page away already) and AR is repaired
 * by the anonymous replacement.  The handler is installed once, when a
 * file is first mapped; a handler the host installs later replaces ours,
 * and then truncation kills the host, as it would with no handler
 * (doc/GUARANTEES.md) -- except under a cursor, which checks before each
 * poll that its faults still come here (er_sigbus_reaches_us) and reads
 * with pread(2) when they would not.  A thread that blocks SIGBUS dies of such a fault whatever we do: the library's own
 * threads never block it, nor does atfork.c when it blocks the forking
 * thread's signals around fork() (the child's handler fills in a new
 * file, which may be cut as it does).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unistd.h>

#include "fsize.h"
#include "internal.h"
#include "sigbus.h"

/* What the host had for SIGBUS before us, set once with `installed`. */
static struct sigaction previous;
/* 1 once a `previous` installed with SA_RESETHAND was run (chain()): the
 * host's disposition is SIG_DFL from then on.  Taken by compare-and-swap,
 * so that of two threads faulting at once one runs it, as the kernel
 * would have. */
static int previous_spent;
static int installed;          /* set under er_st.lock, once */
/* The guarded mapping, read by the handler: base 0 when none.  base is
 * stored last (release) when a file is guarded and first when it is not,
 * so that a handler that sees a base sees its length and descriptor. */
static uint64_t guard_base, guard_len;
static int guard_fd = -1;
static int warned;             /* the line for this file was written */
static char line[PATH_MAX + 128];
static size_t line_len;
/* The line said when the guarded mapping cannot be repaired. */
static char lost_line[PATH_MAX + 160];
static size_t lost_line_len;
static uint64_t page_bytes = 4096; /* the system's, set by er_sigbus_guard */

/* The last fault of this thread that found the file not shorter: where,
 * and the file's change time after the repair.  The same store faulting
 * again with the file unchanged means that running it again does not
 * help. */
static __thread struct {
  uint64_t addr;
  struct timespec ctime;
} last_retry __attribute__((tls_model("initial-exec")));

/* Cursors' views of the file (see the top of the file).  A slot is taken
 * by a compare-and-swap of `used`; its base is stored last (release) and
 * cleared first, as guard_base is. */
#define VIEWS 64
/* Cursors take views from the first CURSOR_VIEWS only, so that a tool
 * reading many files at once leaves room for the writer's mappings kept
 * at a stop (er_sigbus_forget_fd), which have no pread(2) to fall back
 * on. */
#define CURSOR_VIEWS (VIEWS - 8)
static struct view {
  int used;
  int cut;
  int prot; /* PROT_READ for a cursor's, or a writer's left mapped */
  uint64_t base, len;
} views[VIEWS];

static int add_view(const void *map, size_t len, int prot, int slots);

/* Whether the fault `si` happens again when the handler returns: the
 * instruction runs again.  A signal sent (si_code <= 0) or a memory error
 * reported ahead of any access (BUS_MCEERR_AO) does not. */
static int reruns(const siginfo_t *si) {
  return si->si_code == BUS_ADRALN || si->si_code == BUS_ADRERR ||
         si->si_code == BUS_OBJERR || si->si_code == BUS_MCEERR_AR;
}

static void say(const char *s, size_t n) {
  ssize_t w = write(STDERR_FILENO, s, n);
  (void)w;
}

/* The default action of SIGBUS, or ignoring it, as the host asked with
 * `h` (SIG_DFL or SIG_IGN). */
static void default_action(const siginfo_t *si, void (*h)(int)) {
  /* A fault cannot be ignored: the kernel kills on the next one. */
  if (h == SIG_IGN && !reruns(si)) return;
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGBUS, &dfl, NULL);
  /* Blocked until we return, when it kills; a fault that reruns needs no
   * raise, and keeps its si_code for a core dump. */
  if (!reruns(si)) raise(SIGBUS);
}

/* What would have happened without us (see the top of the file): runs
 * the host's handler as the kernel would have, or the default action.
 * `ctx` is the handler's third argument. */
static void chain(int sig, siginfo_t *si, void *ctx) {
  void (*h)(int) = previous.sa_handler; /* SA_SIGINFO or not */
  if (h == SIG_DFL || h == SIG_IGN ||
      ((previous.sa_flags & SA_RESETHAND) &&
       !er_icas(&previous_spent, 0, 1))) {
    default_action(si, h == SIG_IGN ? SIG_IGN : SIG_DFL);
    return;
  }
  /* The mask the kernel gives the host's handler: the interrupted code's,
   * plus sa_mask, plus SIGBUS itself unless SA_NODEFER; ours blocks every
   * signal, which is put back once the host's handler returns. */
  sigset_t mask, ours;
  memcpy(&mask, &((ucontext_t *)ctx)->uc_sigmask, sizeof mask);
  sigorset(&mask, &mask, &previous.sa_mask);
  if (!(previous.sa_flags & SA_NODEFER)) sigaddset(&mask, SIGBUS);
  pthread_sigmask(SIG_SETMASK, &mask, &ours);
  if (previous.sa_flags & SA_SIGINFO)
    previous.sa_sigaction(sig, si, ctx);
  else
    h(sig);
  pthread_sigmask(SIG_SETMASK, &ours, NULL);
}

static int same_time(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Whether the store at `addr`, in the guarded mapping of `len` bytes at
 * `base`, succeeds when it runs again, after what this does to the file
 * (see the top of the file). */
static int fix_file(uint64_t base, uint64_t len, uint64_t addr) {
  int fd = er_iload_rlx(&guard_fd);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return 0;
  if ((uint64_t)st.st_size < len) {
    last_retry.addr = 0;
    return er_fsize_allows(len) && ftruncate(fd, (off_t)len) == 0;
  }
  if (last_retry.addr == addr && same_time(&last_retry.ctime, &st.st_ctim))
    return 0;
  uint64_t page = (addr - base) / page_bytes * page_bytes;
  uint64_t bytes = len - page < page_bytes ? len - page : page_bytes;
  /* EOPNOTSUPP (a file system without it) is no proof that the page can
   * be written: the mapping is replaced then too. */
  if (fallocate(fd, 0, (off_t)page, (off_t)bytes) != 0 || fstat(fd, &st) != 0)
    return 0;
  last_retry.addr = addr;
  last_retry.ctime = st.st_ctim;
  return 1;
}

/* Puts anonymous memory of `prot` in place of the `len` bytes at `base`.
 * Returns whether it did. */
static int replace(uint64_t base, uint64_t len, int prot) {
  return mmap((void *)(uintptr_t)base, (size_t)len, prot,
              MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
              0) != MAP_FAILED;
}

/* Makes the guarded mapping writable again after a fault at `addr` with
 * code `code` (see the top of the file).  Returns 0 when it cannot: the
 * mapping is then no longer guarded, and the fault is the host's. */
static int repair(uint64_t base, uint64_t len, uint64_t addr, int code) {
  if (code == BUS_MCEERR_AO) return 1;
  (void)ER_HOOK(ER_HOOK_SIGBUS_REPAIR);
  if ((code == BUS_MCEERR_AR || !fix_file(base, len, addr)) &&
      !replace(base, len, PROT_READ | PROT_WRITE)) {
    /* Another file's guard may have taken the place meanwhile. */
    er_cas(&guard_base, base, 0);
    say(lost_line, lost_line_len);
    return 0;
  }
  if (er_icas(&warned, 0, 1)) {
    static const char memory_error[] =
        "eventring: a memory error hit the ring file's mapping: its events "
        "are lost; the program goes on\n";
    if (code == BUS_MCEERR_AR)
      say(memory_error, sizeof memory_error - 1);
    else
      say(line, line_len);
  }
  return 1;
}

/* Repairs a fault at `addr` with code `code` in a view.  Returns 1 when
 * repaired, 0 when `addr` is in none, -1 when the view cannot be
 * repaired: it is then no longer guarded, and the fault is the host's. */
static int repair_view(uint64_t addr, int code) {
  for (int i = 0; i < VIEWS; i++) {
    struct view *v = &views[i];
    uint64_t base = er_load_acq(&v->base);
    if (!base || addr - base >= er_load_rlx(&v->len)) continue;
    if (code == BUS_MCEERR_AO) return 1;
    /* Marked before the zeros appear: a cursor that read them finds the
     * mark when it next looks (er_sigbus_view_cut, an acquire). */
    er_istore_rel(&v->cut, 1);
    if (replace(base, er_load_rlx(&v->len), er_iload_rlx(&v->prot))) return 1;
    er_cas(&v->base, base, 0);
    static const char msg[] =
        "eventring: a ring file was cut short under a mapping that cannot "
        "be replaced: the fault goes to the program\n";
    say(msg, sizeof msg - 1);
    return -1;
  }
  return 0;
}

static void on_sigbus(int sig, siginfo_t *si, void *ctx) {
  int saved = errno;
  uint64_t base = er_load_acq(&guard_base);
  uint64_t len = er_load_rlx(&guard_len);
  uint64_t addr = (uint64_t)(uintptr_t)si->si_addr;
  int repaired = 0;
  if (si->si_code > 0) { /* a fault, not a signal sent */
    if (base && addr - base < len)
      repaired = repair(base, len, addr, si->si_code);
    else
      repaired = repair_view(addr, si->si_code) > 0;
  }
  if (!repaired) chain(sig, si, ctx);
  errno = saved;
}

/* Installs the handler once; the caller holds er_st.lock.  Returns
 * whether it is installed. */
static int install(void) {
  if (!er_iload_rlx(&installed)) {
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_sigaction = on_sigbus;
    act.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigfillset(&act.sa_mask);
    if (sigaction(SIGBUS, &act, &previous) != 0) return 0;
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0) page_bytes = (uint64_t)page;
    /* Pairs with the acquire load in add_view(): a view registered after
     * it is seen by the handler, which `previous` is set for. */
    er_istore_rel(&installed, 1);
  }
  return 1;
}

void er_sigbus_guard(void *map, size_t len, int fd, const char *path) {
  if (!install()) return;
  er_store_rel(&guard_base, 0);
  int n = snprintf(line, sizeof line,
                   "eventring: %s was truncated while the program ran: its "
                   "events are lost; the program goes on\n",
                   path);
  line_len = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
  n = snprintf(lost_line, sizeof lost_line,
               "eventring: %s was cut short and its mapping cannot be "
               "replaced: the fault goes to the program\n",
               path);
  lost_line_len = n < 0                            ? 0
                  : (size_t)n < sizeof lost_line ? (size_t)n
                                                 : sizeof lost_line - 1;
  er_istore_rlx(&warned, 0);
  er_istore_rlx(&guard_fd, fd);
  er_store_rlx(&guard_len, (uint64_t)len);
  er_store_rel(&guard_base, (uint64_t)(uintptr_t)map);
}

void er_sigbus_forget_fd(void) {
  er_istore_rlx(&guard_fd, -1);
  /* The mapping stays for a thread still inside a probe, and will never
   * be unmapped: it keeps a view of its own, writable, so that the next
   * file's guard does not leave it unguarded.  With the table full it
   * stays the guarded mapping until then. */
  uint64_t base = er_load_rlx(&guard_base);
  if (base && add_view((void *)(uintptr_t)base,
                       (size_t)er_load_rlx(&guard_len),
                       PROT_READ | PROT_WRITE, VIEWS) >= 0)
    er_store_rel(&guard_base, 0);
}

void er_sigbus_unguard(void) {
  er_store_rel(&guard_base, 0);
  er_istore_rlx(&guard_fd, -1);
}

/* Registers a view in one of the first `slots` of the table. */
static int add_view(const void *map, size_t len, int prot, int slots) {
  /* Without our handler a fault in the view would not reach us. */
  if (!er_iload_acq(&installed)) return -1;
  for (int i = 0; i < slots; i++) {
    struct view *v = &views[i];
    if (er_iload_rlx(&v->used) || !er_icas(&v->used, 0, 1)) continue;
    er_istore_rlx(&v->cut, 0);
    er_istore_rlx(&v->prot, prot);
    er_store_rlx(&v->len, (uint64_t)len);
    er_store_rel(&v->base, (uint64_t)(uintptr_t)map);
    return i;
  }
  return -1;
}

int er_sigbus_watch_view(const void *map, size_t len) {
  return add_view(map, len, PROT_READ, CURSOR_VIEWS);
}

int er_sigbus_watch_other_view(const void *map, size_t len) {
  if (!er_iload_acq(&installed)) {
    er_lock();
    int ok = install();
    er_unlock();
    if (!ok) return -1;
  }
  return add_view(map, len, PROT_READ, CURSOR_VIEWS);
}

int er_sigbus_reaches_us(void) {
  struct sigaction now;
  sigset_t blocked;
  if (!er_iload_acq(&installed) || sigaction(SIGBUS, NULL, &now) != 0 ||
      !(now.sa_flags & SA_SIGINFO) || now.sa_sigaction != on_sigbus ||
      pthread_sigmask(SIG_BLOCK, NULL, &blocked) != 0)
    return 0;
  return !sigismember(&blocked, SIGBUS);
}

int er_sigbus_view_cut(int view) {
  return er_iload_acq(&views[view].cut);
}

void er_sigbus_unwatch_view(int view) {
  er_store_rel(&views[view].base, 0);
  er_istore_rel(&views[view].used, 0);
}
