/* sigbus.c -- the host survives its ring file being cut short.
 *
 * The ring file is mapped shared, and its owner may truncate it while the
 * program runs (`truncate -s 0 DIR/PID.events`).  Every store into a page
 * past the new end of the file then raises SIGBUS, and a probe, the
 * remote-control watcher or the teardown would kill the host with it.
 *
 * So while a file is mapped, a SIGBUS handler guards it.  A fault whose
 * address lies in the mapping is repaired where it happened: the file is
 * grown back to its size (ftruncate, so that the mapping stays the file's
 * and the watcher's futex words keep working), or, when that cannot help
 * (the file was not shorter: a full disk or an I/O error; the descriptor
 * is closed; RLIMIT_FSIZE no longer allows the size), the whole mapping is
 * replaced by anonymous memory at the same address (mmap MAP_FIXED).
 * Either way the handler returns and the store is executed again, now
 * into memory that exists.  The events are lost (the owner wiped them):
 * one line on stderr says so, once per file.  Every call in the handler
 * is async-signal-safe.
 *
 * Any other SIGBUS goes to what was there before us, as if we were not:
 * the previous handler, or the default action (the faulting instruction
 * runs again and faults under SIG_DFL; a SIGBUS sent by kill(2) is raised
 * again).  The handler is installed once, when a file is first mapped; a
 * handler the host installs later replaces ours, and then truncation
 * kills the host as it did before (doc/GUARANTEES.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "sigbus.h"

static struct sigaction previous;
static int installed;          /* under er_st.lock */
/* The guarded mapping, read by the handler: base 0 when none.  base is
 * stored last (release) when a file is guarded and first when it is not,
 * so that a handler that sees a base sees its length and descriptor. */
static uint64_t guard_base, guard_len;
static int guard_fd = -1;
static int warned;             /* the line for this file was written */
static char line[PATH_MAX + 128];
static size_t line_len;

/* What would have happened without us. */
static void chain(int sig, siginfo_t *si, void *ctx) {
  if (previous.sa_flags & SA_SIGINFO) {
    previous.sa_sigaction(sig, si, ctx);
    return;
  }
  if (previous.sa_handler == SIG_IGN && si->si_code <= 0) return;
  if (previous.sa_handler == SIG_DFL || previous.sa_handler == SIG_IGN) {
    /* A fault cannot be ignored: the kernel would kill the process on the
     * next one.  The default action is what the host had. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGBUS, &dfl, NULL);
    /* Blocked until we return; a fault needs no raise: it happens again. */
    if (si->si_code <= 0) raise(SIGBUS);
    return;
  }
  previous.sa_handler(sig);
}

/* Makes the guarded mapping writable again (see the top of the file). */
static void repair(uint64_t base, uint64_t len) {
  int fd = er_iload_rlx(&guard_fd);
  struct stat st;
  struct rlimit fsize;
  int grown = fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_size < len &&
              getrlimit(RLIMIT_FSIZE, &fsize) == 0 &&
              (fsize.rlim_cur == RLIM_INFINITY || len <= fsize.rlim_cur) &&
              ftruncate(fd, (off_t)len) == 0;
  if (!grown)
    mmap((void *)(uintptr_t)base, (size_t)len, PROT_READ | PROT_WRITE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  if (er_icas(&warned, 0, 1)) {
    ssize_t w = write(STDERR_FILENO, line, line_len);
    (void)w;
  }
}

static void on_sigbus(int sig, siginfo_t *si, void *ctx) {
  int saved = errno;
  uint64_t base = er_load_acq(&guard_base);
  uint64_t len = er_load_rlx(&guard_len);
  uint64_t addr = (uint64_t)(uintptr_t)si->si_addr;
  if (si->si_code > 0 && base && addr - base < len) repair(base, len);
  else chain(sig, si, ctx);
  errno = saved;
}

void er_sigbus_guard(void *map, size_t len, int fd, const char *path) {
  if (!installed) {
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_sigaction = on_sigbus;
    act.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigfillset(&act.sa_mask);
    if (sigaction(SIGBUS, &act, &previous) != 0) return;
    installed = 1;
  }
  er_store_rel(&guard_base, 0);
  int n = snprintf(line, sizeof line,
                   "eventring: %s was truncated while the program ran: its "
                   "events are lost; the program goes on\n",
                   path);
  line_len = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
  er_istore_rlx(&warned, 0);
  er_istore_rlx(&guard_fd, fd);
  er_store_rlx(&guard_len, (uint64_t)len);
  er_store_rel(&guard_base, (uint64_t)(uintptr_t)map);
}

void er_sigbus_forget_fd(void) { er_istore_rlx(&guard_fd, -1); }

void er_sigbus_unguard(void) {
  er_store_rel(&guard_base, 0);
  er_istore_rlx(&guard_fd, -1);
}
