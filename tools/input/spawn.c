/* spawn.c -- `eventring SUBCOMMAND -- CMD ARGS...`: run a program and
 * read its ring file while it runs.
 *
 * The command runs with tracing switched on through the environment, the
 * way a user would do it by hand:
 *
 *   OCAML_RUNTIME_EVENTS_START=1     the library (or OCaml 5's runtime)
 *                                    starts tracing when the program loads;
 *   OCAML_RUNTIME_EVENTS_DIR=PRIV    its file goes into a directory of our
 *                                    own, made with mkdtemp (mode 0700), so
 *                                    that no other user can see or replace
 *                                    it and we know where to look;
 *   OCAML_RUNTIME_EVENTS_PRESERVE=1  the file stays when the program ends,
 *                                    so a program that lives only a few
 *                                    milliseconds is still read whole.
 *
 * The command inherits the tool's standard streams as the tool was given
 * them (output.c has pointed the tool's own fd 1 at the report and gives
 * the child the original back), its working directory and process group
 * (so that Ctrl-C on a terminal reaches both).  A failed
 * exec is reported through a close-on-exec pipe: the child writes errno
 * into it, the parent reads nothing when the exec succeeded.
 *
 * We then wait for a ring file to appear in the private directory:
 * <childpid>.events, or, when the command is a wrapper (a shell script
 * that runs the real program as its child), the first other <pid>.events
 * that appears.  The library creates the file under its final name and
 * writes the header's version word last, so a file seen too early does
 * not open as a ring yet: we retry for a while.  A command that ends
 * without a file is an error; so is one that makes none within
 * FILE_WAIT_NS (it is then stopped), since it is not traced at all
 * (not linked with eventring, or tracing failed to start, which the
 * library reports itself on stderr).
 *
 * At the end (tool_spawn_cleanup) the ring files and the directory are
 * removed.  The command is reaped by tool_spawn_done() when it ends on its
 * own, and killed and reaped here when the tool ends before it.
 *
 * Signals.  SIGINT, SIGTERM and SIGHUP only set a flag that the reading
 * loop (source.c) looks at.  A signal sent to the tool by another process
 * (kill, a supervisor; si_code <= 0) is passed on to the command; one the
 * kernel generated (Ctrl-C on the terminal, si_code SI_KERNEL) is not,
 * since the terminal sent it to the whole foreground process group, the
 * command included.  Signals the tool inherited as ignored stay ignored,
 * for it and for the command, as a shell's `cmd &` expects.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "input/input.h"

/* How long a command may run without making a ring file. */
#define FILE_WAIT_NS 10000000000ULL
/* How long a file that exists may fail to open as a ring (its header
 * not yet written) before that is an error. */
#define OPEN_RETRY_NS 2000000000ULL

static pid_t child;       /* the command, 0 once reaped or when none */
static pid_t spawned;     /* the command's pid, kept after reaping */
static int killed;        /* tool_spawn_kill() was called */
static char privdir[64];  /* the private directory, "" once removed */

/* ------------------------------------------------------------------ */
/* Signals.                                                             */

static const int handled[] = {SIGINT, SIGTERM, SIGHUP};
#define N_HANDLED (sizeof handled / sizeof handled[0])

static struct sigaction saved[N_HANDLED];
static int installed[N_HANDLED];
/* Written by the handler, read by the loop: sig_atomic_t makes each
 * access whole, volatile makes the loop read memory every time. */
static volatile sig_atomic_t first_signal, n_signals;
static volatile sig_atomic_t forward_pid;

static void on_signal(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  if (!first_signal) first_signal = sig;
  if (n_signals < 1000) n_signals++;
  pid_t to = (pid_t)forward_pid;
  /* kill() is async-signal-safe; errno is restored for the code we
   * interrupted. */
  if (to > 0 && si && si->si_code <= 0 && si->si_pid != to) {
    int e = errno;
    kill(to, sig);
    errno = e;
  }
}

void tool_signals_install(void) {
  first_signal = 0;
  n_signals = 0;
  for (size_t i = 0; i < N_HANDLED; i++) {
    if (installed[i]) continue;
    struct sigaction old;
    if (sigaction(handled[i], NULL, &old) < 0) continue;
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN)
      continue;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: a signal ends a sleep */
    sigemptyset(&sa.sa_mask);
    if (sigaction(handled[i], &sa, &saved[i]) == 0) installed[i] = 1;
  }
}

void tool_signals_restore(void) {
  for (size_t i = 0; i < N_HANDLED; i++)
    if (installed[i]) {
      sigaction(handled[i], &saved[i], NULL);
      installed[i] = 0;
    }
  forward_pid = 0;
}

void tool_signals_forward_to(pid_t pid) { forward_pid = pid; }

int tool_signal_pending(void) { return first_signal; }

int tool_signal_count(void) { return n_signals; }

/* ------------------------------------------------------------------ */
/* The child.                                                           */

static void sleep_ns(long ns) {
  struct timespec ts = {0, ns};
  nanosleep(&ts, NULL);
}

/* Reaps the command if it has ended (or, with `block`, once it has). */
static int reap(struct tool_source *src, int block) {
  if (!child) return 1;
  int st;
  pid_t r;
  do
    r = waitpid(child, &st, block ? 0 : WNOHANG);
  while (r < 0 && errno == EINTR && block);
  if (r == 0 || (r < 0 && errno == EINTR)) return 0;
  if (r == child) {
    src->child_reaped = 1;
    src->child_status = st;
  }
  /* r < 0 (ECHILD): someone reaped it for us; nothing more to learn. */
  child = 0;
  tool_signals_forward_to(0);
  return 1;
}

/* In the child: set up the environment and exec; on failure, report
 * errno through `fd` and exit.  Only what is safe after fork() in a
 * single-threaded program is used. */
static void exec_child(struct tool_source *src, int fd) {
  /* The tool ignores SIGPIPE (output.c), and an ignored signal stays
   * ignored across exec: give the command the default back.  Caught
   * signals become default by themselves. */
  signal(SIGPIPE, SIG_DFL);
  tool_output_child_streams();
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (setenv("OCAML_RUNTIME_EVENTS_START", "1", 1) < 0 ||
      setenv("OCAML_RUNTIME_EVENTS_DIR", privdir, 1) < 0 ||
      setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1) < 0) {
    int e = errno;
    (void)!write(fd, &e, sizeof e);
    _exit(TOOL_EXIT_NOEXEC);
  }
  execvp(src->cmd[0], src->cmd);
  int e = errno;
  (void)!write(fd, &e, sizeof e);
  _exit(e == ENOENT ? TOOL_EXIT_NOTFOUND : TOOL_EXIT_NOEXEC);
}

/* Looks for a ring file in the private directory: ours first, else the
 * first <pid>.events of another process.  Returns its pid, or 0. */
static pid_t find_ring(pid_t own) {
  char p[128];
  snprintf(p, sizeof p, "%s/%ld.events", privdir, (long)own);
  struct stat st;
  if (stat(p, &st) == 0) return own;
  DIR *d = opendir(privdir);
  if (!d) return 0;
  pid_t found = 0;
  struct dirent *e;
  while (!found && (e = readdir(d)) != NULL) {
    char *end;
    long v = strtol(e->d_name, &end, 10);
    if (v > 0 && end != e->d_name && !strcmp(end, ".events"))
      found = (pid_t)v;
  }
  closedir(d);
  return found;
}

/* Describes how the command ended, for messages. */
static void describe_status(int st, char *buf, size_t n) {
  if (WIFEXITED(st))
    snprintf(buf, n, "exit status %d", WEXITSTATUS(st));
  else if (WIFSIGNALED(st))
    snprintf(buf, n, "killed by signal %d (%s)", WTERMSIG(st),
             strsignal(WTERMSIG(st)));
  else
    snprintf(buf, n, "wait status %d", st);
}

/* Waits for the ring file and opens the cursor on it. */
static int wait_and_open(struct tool_source *src, pid_t own) {
  uint64_t start = tool_now_ns();
  uint64_t seen = 0; /* when the file was first seen, 0 before */
  long nap = 200000;  /* 0.2 ms, doubling to 10 ms */
  for (;;) {
    /* With several processes read, the command may end before the one
     * that traces (`sh -c 'prog &'`): only the whole tree ending counts. */
    int ended = src->multi ? tool_spawn_tree_done(src) : reap(src, 0);
    pid_t pid = find_ring(own);
    if (pid) {
      snprintf(src->path, sizeof src->path, "%s/%ld.events", privdir,
               (long)pid);
      int r = eventring_cursor_open_file(&src->cursor, src->path);
      if (r == 0) {
        src->pid = pid;
        return TOOL_EXIT_OK;
      }
      if (!seen) seen = tool_now_ns();
      /* A writer that has ended has written all the header it ever will. */
      if (ended || tool_now_ns() - seen > OPEN_RETRY_NS) {
        tool_error("%s: ring file of %s: %s", src->cmd[0], src->path,
                   eventring_strerror(r));
        return TOOL_EXIT_INPUT;
      }
    } else if (ended) {
      char how[96];
      describe_status(src->child_status, how, sizeof how);
      tool_error("%s made no ring file (%s); is it linked with eventring, "
                 "or, for OCaml 4, with the ocamlfind package "
                 "runtime_events.auto?",
                 src->cmd[0], how);
      return TOOL_EXIT_INPUT;
    } else if (tool_now_ns() - start > FILE_WAIT_NS) {
      tool_error("%s made no ring file in %llu s; is it linked with "
                 "eventring, or, for OCaml 4, with the ocamlfind package "
                 "runtime_events.auto? (stopped it)",
                 src->cmd[0], FILE_WAIT_NS / 1000000000ULL);
      return TOOL_EXIT_INPUT;
    }
    int sig = tool_signal_pending();
    if (sig) {
      /* The command got the signal too (or from us); give it its
       * chance to end, then report the signal as the tool's status. */
      src->interrupted = sig;
      return 128 + sig;
    }
    sleep_ns(nap);
    if (nap < 10000000) nap *= 2;
  }
}

int tool_spawn_open(struct tool_source *src) {
  const char *base = strrchr(src->cmd[0], '/');
  snprintf(src->name, sizeof src->name, "%s", base ? base + 1 : src->cmd[0]);

  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp || strlen(tmp) > 40) tmp = "/tmp";
  snprintf(privdir, sizeof privdir, "%s/eventring-XXXXXX", tmp);
  if (!mkdtemp(privdir)) {
    tool_error("cannot make a directory for the ring file: %s: %s", privdir,
               strerror(errno));
    privdir[0] = '\0';
    return TOOL_EXIT_INPUT;
  }

  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) < 0) {
    tool_error("cannot run %s: %s", src->cmd[0], strerror(errno));
    return TOOL_EXIT_NOEXEC;
  }
  /* The child never flushes its copies of our stdio buffers (it execs or
   * _exits); flushing them here puts what the tool wrote so far before
   * whatever the command writes to the same streams. */
  fflush(stdout);
  fflush(stderr);
  /* Reading the whole tree: its orphans (a child that outlives its
   * parent, a daemon that double-forks) become our children, so that we
   * learn when the last one has ended, and their pids stay theirs until
   * we reap them. */
  if (src->multi) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(pfd[0]);
    close(pfd[1]);
    tool_error("cannot run %s: %s", src->cmd[0], strerror(e));
    return TOOL_EXIT_NOEXEC;
  }
  if (pid == 0) {
    close(pfd[0]);
    exec_child(src, pfd[1]);
  }
  child = spawned = pid;
  tool_signals_forward_to(pid);
  close(pfd[1]);
  int e = 0;
  ssize_t n;
  do
    n = read(pfd[0], &e, sizeof e);
  while (n < 0 && errno == EINTR);
  close(pfd[0]);
  if (n == (ssize_t)sizeof e) {
    reap(src, 1);
    src->child_reaped = 0; /* the tool's status says it, not the child's */
    tool_error("cannot run %s: %s", src->cmd[0], strerror(e));
    return e == ENOENT ? TOOL_EXIT_NOTFOUND : TOOL_EXIT_NOEXEC;
  }
  return wait_and_open(src, pid);
}

int tool_spawn_done(struct tool_source *src) {
  if (!reap(src, 0)) return 0;
  /* When the command was a wrapper, the writer is its child, which may
   * outlive it; not once we have killed the wrapper, though: the writer
   * is then left to itself rather than waited for. */
  return src->pid == spawned || killed || tool_process_gone(src->pid);
}

void tool_spawn_kill(struct tool_source *src) {
  (void)src;
  if (child) kill(child, SIGKILL);
  killed = 1;
}

void tool_spawn_cleanup(struct tool_source *src, double grace_s) {
  if (child && !reap(src, 0)) {
    kill(child, SIGTERM);
    uint64_t deadline = tool_now_ns() + (uint64_t)(grace_s * 1e9);
    while (!reap(src, 0) && tool_now_ns() < deadline) sleep_ns(5000000);
    if (child) {
      kill(child, SIGKILL);
      reap(src, 1);
    }
  }
  if (!privdir[0]) return;
  /* Only ring files are expected here; anything else is left, and so is
   * the directory then. */
  DIR *d = opendir(privdir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      size_t n = strlen(e->d_name);
      if (n > 7 && !strcmp(e->d_name + n - 7, ".events")) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", privdir, e->d_name);
        unlink(p);
      }
    }
    closedir(d);
  }
  if (rmdir(privdir) < 0)
    tool_error("could not remove %s: %s", privdir, strerror(errno));
  privdir[0] = '\0';
}

const char *tool_spawn_dir(void) { return privdir; }

int tool_spawn_tree_done(struct tool_source *src) {
  if (!reap(src, 0)) return 0;
  /* The command is reaped; its descendants that outlived their parents
   * are our children now.  Our other children (runcmd.c's) are waited
   * for too, their statuses handed back. */
  for (;;) {
    int st;
    pid_t r = waitpid(-1, &st, WNOHANG);
    if (r > 0) {
      tool_run_reaped(r, st);
      continue;
    }
    if (r == 0) return 0;
    if (errno == EINTR) continue;
    return errno == ECHILD;
  }
}

int tool_spawn_children(pid_t *v, int max) {
  /* The children of every thread of ours (the tool has one). */
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%ld/children",
           (long)getpid());
  FILE *f = fopen(path, "re");
  if (!f) return 0;
  int n = 0;
  long pid;
  while (n < max && fscanf(f, "%ld", &pid) == 1) v[n++] = (pid_t)pid;
  fclose(f);
  return n;
}
