/* proc_tree -- a process tree for test_proctree to run under
 * `eventring SUBCOMMAND -- proc_tree MODE ...`.  Tracing is started by
 * the tool's environment (OCAML_RUNTIME_EVENTS_START), which every
 * process of the tree inherits.  Each process writes user ints
 * tree.seq 0..9 and, as tree.pid, its pid; by MODE:
 *   leaf              only that;
 *   fork              forks a copy (plain fork(): the library gives the
 *                     child a file of its own), which writes its events;
 *                     the parent waits for it, then writes tree.after;
 *   grandchild        forks a child that forks a grandchild; each waits
 *                     for its own child;
 *   exec PROG ARG...  writes its events, waits until another process
 *                     (the tool) has its ring file open, so that the file
 *                     is read before the next image replaces it, then
 *                     execs PROG (the same pid);
 *   exec-now PROG ARG...  writes its events and execs PROG at once;
 *   hold              writes its events, prints "ready" and waits until
 *                     its standard input ends;
 *   orphan [hang]     forks a child and exits at once; the child waits
 *                     until its parent has exited (its parent pid
 *                     changes) and only then writes its events, so that
 *                     they are written after the command ended; with
 *                     hang, the child then sleeps until killed.
 * Before a fork a process writes tree.fork with the time (its own clock,
 * CLOCK_MONOTONIC ns) read just before fork(); every process starts with
 * tree.start, its own first event.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "eventring.h"

static int seq_id, pid_id, after_id, fork_id, start_id;

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void work(void) {
  eventring_write_int(pid_id, getpid());
  for (int i = 0; i < 10; i++) eventring_write_int(seq_id, i);
}

static void register_all(void) {
  seq_id = eventring_register("tree.seq", EVENTRING_TYPE_INT);
  pid_id = eventring_register("tree.pid", EVENTRING_TYPE_INT);
  after_id = eventring_register("tree.after", EVENTRING_TYPE_INT);
  fork_id = eventring_register("tree.fork", EVENTRING_TYPE_INT);
  start_id = eventring_register("tree.start", EVENTRING_TYPE_INT);
}

static pid_t fork_marked(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  eventring_write_int(fork_id,
                      (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
  return fork();
}

static int wait_child(pid_t pid) {
  int st;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) return 2;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}

/* Whether a process other than us has `path` open. */
static int opened_elsewhere(const char *path) {
  DIR *proc = opendir("/proc");
  if (!proc) return 0;
  struct dirent *p;
  int found = 0;
  char self[32];
  snprintf(self, sizeof self, "%ld", (long)getpid());
  while (!found && (p = readdir(proc)) != NULL) {
    if (p->d_name[0] < '0' || p->d_name[0] > '9' || !strcmp(p->d_name, self))
      continue;
    char fds[PATH_MAX];
    snprintf(fds, sizeof fds, "/proc/%s/fd", p->d_name);
    DIR *d = opendir(fds);
    if (!d) continue;
    struct dirent *f;
    while (!found && (f = readdir(d)) != NULL) {
      char link[PATH_MAX + 300], target[PATH_MAX];
      snprintf(link, sizeof link, "%s/%s", fds, f->d_name);
      ssize_t n = readlink(link, target, sizeof target - 1);
      if (n <= 0) continue;
      target[n] = '\0';
      found = !strcmp(target, path);
    }
    closedir(d);
  }
  closedir(proc);
  return found;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  register_all();
  eventring_write_int(start_id, getpid());
  const char *mode = argv[1];
  if (!strcmp(mode, "leaf")) {
    work();
    return 0;
  }
  if (!strcmp(mode, "fork")) {
    work();
    pid_t c = fork_marked();
    if (c == 0) {
      eventring_write_int(start_id, getpid());
      work();
      return 0;
    }
    int rc = wait_child(c);
    eventring_write_int(after_id, 1);
    return rc;
  }
  if (!strcmp(mode, "grandchild")) {
    work();
    pid_t c = fork_marked();
    if (c == 0) {
      eventring_write_int(start_id, getpid());
      work();
      pid_t g = fork_marked();
      if (g == 0) {
        eventring_write_int(start_id, getpid());
        work();
        return 0;
      }
      return wait_child(g);
    }
    return wait_child(c);
  }
  if (!strcmp(mode, "exec") && argc > 2) {
    work();
    char real[PATH_MAX];
    const char *path = eventring_path();
    if (!path || !realpath(path, real)) return 2;
    /* At most 20 s: a tool that never opens it fails the test anyway. */
    for (int i = 0; i < 20000 && !opened_elsewhere(real); i++) sleep_ms(1);
    execvp(argv[2], argv + 2);
    return 127;
  }
  if (!strcmp(mode, "exec-now") && argc > 2) {
    work();
    execvp(argv[2], argv + 2);
    return 127;
  }
  if (!strcmp(mode, "hold")) {
    work();
    printf("ready\n");
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0) {
    }
    return 0;
  }
  if (!strcmp(mode, "orphan")) {
    pid_t parent = getpid();
    pid_t c = fork_marked();
    if (c < 0) return 2;
    if (c > 0) return 0; /* the command ends here */
    eventring_write_int(start_id, getpid());
    while (getppid() == parent) sleep_ms(1);
    work();
    if (argc > 2 && !strcmp(argv[2], "hang"))
      for (;;) pause();
    return 0;
  }
  return 2;
}
