/* runcmd.c -- commands run beside the tool without holding it up: the
 * actions of `eventring watch --exec`.
 *
 * A command line is a template split into words here, without a shell:
 * blanks separate words, single quotes keep everything up to the next
 * one, double quotes keep everything but a backslash before " \ $ or `,
 * and a backslash outside quotes keeps the next character.  Every "{}"
 * in a word is then replaced by the argument (a file name), which
 * therefore reaches the command as it is, whatever it holds: spaces,
 * quotes and shell syntax are never read again.  A template without "{}"
 * runs as it is written.
 *
 * A command runs as the leader of a process group of its own, standard
 * input from /dev/null, standard output onto our standard error (the
 * traced program keeps standard output), the signals' default actions
 * and an empty mask.  At most `max` run at once; the caller polls
 * (tool_run_poll) between its reads and is told of each end.  One past
 * its timeout gets SIGTERM, with its group; RUN_KILL_GRACE_NS later,
 * SIGKILL.  The jobs are this process's own (one table): a reaper of
 * every child (spawn.c's waitpid(-1)) hands their statuses back with
 * tool_run_reaped().
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

/* Between SIGTERM and SIGKILL. */
#define RUN_KILL_GRACE_NS 2000000000ULL
/* The sleep between two looks while tool_run_wait() waits. */
#define RUN_WAIT_NS 10000000L

struct job {
  pid_t pid; /* 0: a free slot */
  void *tag;
  uint64_t started, term_at, kill_at;
  int term_sent, kill_sent;
  int reaped; /* tool_run_reaped() has its status */
  int status;
};

static struct {
  struct job jobs[TOOL_RUN_MAX];
  int max;
  uint64_t timeout_ns;
  tool_run_done_fn done;
  void *arg;
} R;

/* ------------------------------------------------------------------ */
/* The template.                                                        */

static int push_word(struct tool_cmdline *c, const char *w, size_t n) {
  char **v = realloc(c->words, (size_t)(c->n + 2) * sizeof *v);
  if (!v) return -1;
  c->words = v;
  if (!(v[c->n] = strndup(w, n))) return -1;
  v[++c->n] = NULL;
  return 0;
}

int tool_cmdline_parse(const char *tmpl, struct tool_cmdline *c, char *why,
                       size_t size) {
  memset(c, 0, sizeof *c);
  size_t len = strlen(tmpl);
  char *w = malloc(len + 1);
  if (!w) {
    snprintf(why, size, "out of memory");
    return -1;
  }
  const char *p = tmpl;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    if (!*p) break;
    size_t n = 0;
    char quote = 0;
    for (; *p && (quote || (*p != ' ' && *p != '\t' && *p != '\n')); p++) {
      if (quote == '\'') {
        if (*p == '\'') quote = 0;
        else w[n++] = *p;
      } else if (quote == '"') {
        if (*p == '"') quote = 0;
        else if (*p == '\\' && p[1] && strchr("\"\\$`", p[1])) w[n++] = *++p;
        else w[n++] = *p;
      } else if (*p == '\'' || *p == '"') {
        quote = *p;
      } else if (*p == '\\' && p[1]) {
        w[n++] = *++p;
      } else {
        w[n++] = *p;
      }
    }
    if (quote) {
      snprintf(why, size, "no closing %c quote", quote);
      free(w);
      tool_cmdline_free(c);
      return -1;
    }
    if (push_word(c, w, n) < 0) {
      snprintf(why, size, "out of memory");
      free(w);
      tool_cmdline_free(c);
      return -1;
    }
  }
  free(w);
  if (!c->n) {
    snprintf(why, size, "no command");
    return -1;
  }
  return 0;
}

void tool_cmdline_free(struct tool_cmdline *c) {
  for (int i = 0; i < c->n; i++) free(c->words[i]);
  free(c->words);
  memset(c, 0, sizeof *c);
}

/* `word` with every "{}" replaced by `arg`, or NULL. */
static char *substitute(const char *word, const char *arg) {
  size_t n = 0, alen = strlen(arg);
  for (const char *p = word; *p;)
    if (p[0] == '{' && p[1] == '}') n += alen, p += 2;
    else n++, p++;
  char *s = malloc(n + 1), *o = s;
  if (!s) return NULL;
  for (const char *p = word; *p;)
    if (p[0] == '{' && p[1] == '}') {
      memcpy(o, arg, alen);
      o += alen;
      p += 2;
    } else {
      *o++ = *p++;
    }
  *o = '\0';
  return s;
}

char **tool_cmdline_argv(const struct tool_cmdline *c, const char *arg) {
  char **v = calloc((size_t)c->n + 1, sizeof *v);
  if (!v) return NULL;
  for (int i = 0; i < c->n; i++) {
    v[i] = substitute(c->words[i], arg);
    if (!v[i]) {
      tool_cmdline_argv_free(v);
      return NULL;
    }
  }
  return v;
}

void tool_cmdline_argv_free(char **argv) {
  if (!argv) return;
  for (char **p = argv; *p; p++) free(*p);
  free(argv);
}

/* ------------------------------------------------------------------ */
/* The jobs.                                                            */

void tool_run_setup(int max, uint64_t timeout_ns, tool_run_done_fn done,
                    void *arg) {
  memset(&R, 0, sizeof R);
  R.max = max < 1 ? 1 : max > TOOL_RUN_MAX ? TOOL_RUN_MAX : max;
  R.timeout_ns = timeout_ns;
  R.done = done;
  R.arg = arg;
}

int tool_run_running(void) {
  int n = 0;
  for (int i = 0; i < TOOL_RUN_MAX; i++) n += R.jobs[i].pid != 0;
  return n;
}

int tool_run_start(char *const argv[], void *tag, pid_t *pid) {
  struct job *j = NULL;
  if (tool_run_running() >= R.max) return -EAGAIN;
  for (int i = 0; i < TOOL_RUN_MAX && !j; i++)
    if (!R.jobs[i].pid) j = &R.jobs[i];
  if (!j) return -EAGAIN;
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  if (posix_spawn_file_actions_init(&fa)) return -ENOMEM;
  if (posix_spawnattr_init(&at)) {
    posix_spawn_file_actions_destroy(&fa);
    return -ENOMEM;
  }
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY,
                                   0);
  posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
  /* Its own group, so that a timeout ends what it started too; every
   * signal as exec leaves a new program that we did not touch. */
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setpgroup(&at, 0);
  posix_spawnattr_setsigdefault(&at, &all);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP |
                                    POSIX_SPAWN_SETSIGDEF |
                                    POSIX_SPAWN_SETSIGMASK);
  /* Its output after what we wrote so far. */
  fflush(stdout);
  fflush(stderr);
  extern char **environ;
  pid_t p;
  int r = posix_spawnp(&p, argv[0], &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (r) return -r;
  memset(j, 0, sizeof *j);
  j->pid = p;
  j->tag = tag;
  j->started = tool_now_ns();
  j->term_at = R.timeout_ns ? j->started + R.timeout_ns : 0;
  *pid = p;
  return 0;
}

int tool_run_reaped(pid_t pid, int status) {
  for (int i = 0; i < TOOL_RUN_MAX; i++)
    if (R.jobs[i].pid == pid && pid > 0) {
      R.jobs[i].reaped = 1;
      R.jobs[i].status = status;
      return 1;
    }
  return 0;
}

/* Tells the caller that job `j` ended with `status` (or is lost: -1)
 * and frees its slot. */
static void finish(struct job *j, int status, uint64_t now) {
  struct tool_run_end e;
  e.pid = j->pid;
  e.tag = j->tag;
  e.status = status;
  e.timed_out = j->term_sent;
  e.duration_ns = now - j->started;
  memset(j, 0, sizeof *j);
  if (R.done) R.done(R.arg, &e);
}

int tool_run_poll(void) {
  uint64_t now = tool_now_ns();
  int left = 0;
  for (int i = 0; i < TOOL_RUN_MAX; i++) {
    struct job *j = &R.jobs[i];
    if (!j->pid) continue;
    if (j->reaped) {
      finish(j, j->status, now);
      continue;
    }
    int st;
    pid_t r = waitpid(j->pid, &st, WNOHANG);
    if (r == j->pid) {
      finish(j, st, now);
      continue;
    }
    if (r < 0 && errno == ECHILD) {
      finish(j, -1, now);
      continue;
    }
    /* The leader is unreaped, so its pid, the group's id, is still
     * its own. */
    if (j->term_at && !j->term_sent && now >= j->term_at) {
      kill(-j->pid, SIGTERM);
      j->term_sent = 1;
      j->kill_at = now + RUN_KILL_GRACE_NS;
    } else if (j->term_sent && !j->kill_sent && now >= j->kill_at) {
      kill(-j->pid, SIGKILL);
      j->kill_sent = 1;
    }
    left++;
  }
  return left;
}

void tool_run_wait(void) {
  while (tool_run_poll() > 0) {
    struct timespec ts = {0, RUN_WAIT_NS};
    nanosleep(&ts, NULL);
  }
}
