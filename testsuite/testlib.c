/* testlib.c -- the helpers testlib.h declares: processes, files, lines. */
#include "testlib.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ck_assert_msg() records its location with a write for every check that
 * passes, which the line loops below would do for every line of a long
 * trace; this one costs nothing until it fails. */
#define REQUIRE(cond, ...)                                                \
  do {                                                                    \
    if (!(cond)) ck_abort_msg(__VA_ARGS__);                               \
  } while (0)

/* The most arguments er_start() passes on, argv[0] included. */
#define MAX_ARGS 32

double er_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void er_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
  }
}

uint64_t er_xorshift(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

void er_shuffle(uint64_t *v, size_t n, uint64_t *state) {
  for (size_t i = n - 1; i > 0 && i < n; i--) {
    size_t j = er_xorshift(state) % (i + 1);
    uint64_t t = v[i];
    v[i] = v[j];
    v[j] = t;
  }
}

const char *er_tool_path(void) {
  const char *t = getenv("EVENTRING_TEST_TOOL");
  return t && *t && access(t, X_OK) == 0 ? t : NULL;
}

const char *er_prog_path(const char *name) {
  static char p[PATH_MAX];
  const char *dir = er_env_dir("EVENTRING_TEST_PROGS");
  if (!dir) return NULL;
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return access(p, X_OK) == 0 ? p : NULL;
}

int er_tracing_off(void) {
  const char *t = getenv("EVENTRING_TRACING");
  return t && !strcmp(t, "no");
}

pid_t er_fork_captured(FILE **out, FILE **err) {
  *out = tmpfile();
  *err = tmpfile();
  ck_assert_ptr_nonnull(*out);
  ck_assert_ptr_nonnull(*err);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    dup2(fileno(*out), STDOUT_FILENO);
    dup2(fileno(*err), STDERR_FILENO);
  }
  return pid;
}

pid_t er_spawn(char *const argv[], int in_fd, int out_fd, int err_fd,
               const char *env, int flags) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    if (flags & ER_SPAWN_SIGINT) signal(SIGINT, SIG_DFL);
    int null = open("/dev/null", O_RDWR);
    int fds[3] = {in_fd, out_fd, err_fd};
    for (int i = 0; i < 3; i++)
      if (fds[i] != ER_FD_KEEP) dup2(fds[i] >= 0 ? fds[i] : null, i);
    if (env) putenv((char *)env);
    if (flags & ER_SPAWN_PATH)
      execvp(argv[0], argv);
    else
      execv(argv[0], argv);
    _exit(127);
  }
  return pid;
}

int er_wait_for(pid_t pid, double seconds) {
  double deadline = er_now() + seconds;
  for (;;) {
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return st;
    ck_assert_msg(r == 0, "waitpid: %s", strerror(errno));
    if (er_now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    er_sleep_ms(2);
  }
}

/* Whether every thread of `pid` is stopped ('T' in its stat line). */
static int all_stopped(pid_t pid) {
  char taskdir[64];
  snprintf(taskdir, sizeof taskdir, "/proc/%ld/task", (long)pid);
  DIR *d = opendir(taskdir);
  ck_assert_msg(d != NULL, "%s: %s", taskdir, strerror(errno));
  struct dirent *e;
  int stopped = 1, threads = 0;
  while (stopped && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[320], line[512];
    snprintf(path, sizeof path, "%s/%s/stat", taskdir, e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue; /* a thread that just ended */
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = 0;
    const char *paren = strrchr(line, ')');
    threads++;
    if (!paren || paren[1] != ' ' || paren[2] != 'T') stopped = 0;
  }
  closedir(d);
  return stopped && threads > 0;
}

void er_stop(pid_t pid) {
  ck_assert_int_eq(kill(pid, SIGSTOP), 0);
  double deadline = er_now() + ER_RUN_TIMEOUT;
  while (!all_stopped(pid)) {
    ck_assert_msg(er_now() < deadline, "pid %ld: not stopped after %.0f s",
                  (long)pid, ER_RUN_TIMEOUT);
    er_sleep_ms(1);
  }
}

void er_wait_open(pid_t pid, const char *path) {
  char fddir[64];
  snprintf(fddir, sizeof fddir, "/proc/%ld/fd", (long)pid);
  double deadline = er_now() + ER_RUN_TIMEOUT;
  for (;;) {
    DIR *d = opendir(fddir);
    ck_assert_msg(d != NULL, "%s: %s (did the tool fail?)", fddir,
                  strerror(errno));
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d)) != NULL) {
      char link[PATH_MAX + 64], target[PATH_MAX];
      snprintf(link, sizeof link, "%s/%s", fddir, e->d_name);
      ssize_t n = readlink(link, target, sizeof target - 1);
      if (n > 0) {
        target[n] = '\0';
        found = !strcmp(target, path);
      }
    }
    closedir(d);
    if (found) return;
    ck_assert_msg(er_now() < deadline, "the tool never opened %s", path);
    er_sleep_ms(2);
  }
}

/* The syscall `pid` is blocked in (/proc/PID/syscall), -1 while it runs,
 * -2 when the file cannot be read (the process is gone). */
static long blocked_in(pid_t pid) {
  char p[64], buf[256];
  snprintf(p, sizeof p, "/proc/%ld/syscall", (long)pid);
  FILE *f = fopen(p, "re");
  if (!f) return -2;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  if (n == 0) return -2;
  if (!strncmp(buf, "running", 7)) return -1;
  return strtol(buf, NULL, 10);
}

void er_wait_idle(pid_t pid) {
  double deadline = er_now() + ER_RUN_TIMEOUT;
  for (;;) {
    long nr = blocked_in(pid);
    if (nr == SYS_nanosleep || nr == SYS_clock_nanosleep) return;
    ck_assert_msg(nr != -2, "process %ld ended (or hides /proc/%ld/syscall) "
                  "before it waited for more events", (long)pid, (long)pid);
    ck_assert_msg(er_now() < deadline,
                  "process %ld never waited for more events", (long)pid);
    er_sleep_ms(1);
  }
}

/* The voluntary context switches of `pid`'s main thread, -1 when its
 * status cannot be read. */
static long long sleeps_of(pid_t pid) {
  char p[64], line[256];
  snprintf(p, sizeof p, "/proc/%ld/status", (long)pid);
  FILE *f = fopen(p, "re");
  if (!f) return -1;
  long long n = -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "voluntary_ctxt_switches:", 24))
      n = strtoll(line + 24, NULL, 10);
  fclose(f);
  return n;
}

void er_wait_turns(pid_t pid, int n) {
  long long start = sleeps_of(pid), now;
  ck_assert_msg(start >= 0, "process %ld: no /proc/%ld/status", (long)pid,
                (long)pid);
  double deadline = er_now() + ER_RUN_TIMEOUT;
  while ((now = sleeps_of(pid)) < start + n) {
    ck_assert_msg(now >= 0, "process %ld ended", (long)pid);
    ck_assert_msg(er_now() < deadline, "process %ld slept %lld times, not %d",
                  (long)pid, now - start, n);
    er_sleep_ms(1);
  }
}

int er_read_line(int fd, char *buf, size_t cap, double seconds) {
  size_t n = 0;
  double deadline = er_now() + seconds;
  while (n + 1 < cap) {
    struct pollfd p = {fd, POLLIN, 0};
    int left = (int)((deadline - er_now()) * 1000);
    if (left <= 0) break;
    int r = poll(&p, 1, left);
    if (r < 0 && errno == EINTR) continue;
    ck_assert_int_ge(r, 0);
    if (r == 0) continue;
    if (read(fd, buf + n, 1) != 1) {
      buf[n] = '\0';
      return -2;
    }
    if (buf[n] == '\n') {
      buf[n] = '\0';
      return 0;
    }
    n++;
  }
  buf[n] = '\0';
  return n + 1 < cap ? -1 : -2;
}

pid_t er_start(const char *dir, const char *prog, const char *const *args,
               int in_fd, const char *env, int flags, char *outp,
               char *errp) {
  static int seq;
  snprintf(outp, PATH_MAX, "%s/out.%d", dir, seq);
  snprintf(errp, PATH_MAX, "%s/err.%d", dir, seq++);
  int out = open(outp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int err = open(errp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ck_assert_msg(out >= 0 && err >= 0, "%s: %s", dir, strerror(errno));
  ck_assert_ptr_nonnull(prog);
  char *argv[MAX_ARGS];
  size_t n = 0;
  argv[n++] = (char *)prog;
  for (; args[n - 1]; n++) {
    ck_assert_uint_lt(n, MAX_ARGS - 1);
    argv[n] = (char *)args[n - 1];
  }
  argv[n] = NULL;
  pid_t pid = er_spawn(argv, in_fd, out, err, env, flags);
  close(out);
  close(err);
  return pid;
}

struct er_pipe_proc er_pipe_start(char *const argv[], char *const env[],
                                  const char *out_file) {
  int in[2], out[2];
  ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
  ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
  pid_t parent = getpid();
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* The test may have died before the line above took effect. */
    if (getppid() != parent) _exit(127);
    dup2(in[0], STDIN_FILENO);
    if (out_file) {
      int fd = open(out_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd < 0) _exit(127);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    } else {
      dup2(out[1], STDOUT_FILENO);
    }
    for (int i = 0; env && env[i]; i++) putenv(env[i]);
    execv(argv[0], argv);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  return (struct er_pipe_proc){pid, in[1], out[0]};
}

int er_pipe_finish(struct er_pipe_proc *p, double seconds) {
  if (p->in >= 0) close(p->in);
  if (p->out >= 0) close(p->out);
  p->in = p->out = -1;
  if (p->pid <= 0) return -1;
  int st = er_wait_for(p->pid, seconds);
  p->pid = 0;
  return st;
}

struct er_run er_finish(pid_t pid, const char *outp, const char *errp,
                        double seconds) {
  struct er_run r;
  r.status = er_wait_for(pid, seconds);
  r.out = er_slurp(outp, NULL);
  r.err = er_slurp(errp, NULL);
  unlink(outp);
  unlink(errp);
  return r;
}

struct er_run er_run(const char *dir, const char *prog,
                     const char *const *args, const char *env, int flags) {
  char outp[PATH_MAX], errp[PATH_MAX];
  pid_t pid = er_start(dir, prog, args, ER_FD_NULL, env, flags, outp, errp);
  return er_finish(pid, outp, errp, ER_RUN_TIMEOUT);
}

pid_t er_start_tool(const char *dir, const char *const *args, int flags,
                    char *outp, char *errp) {
  return er_start(dir, er_tool_path(), args, ER_FD_NULL, NULL, flags, outp,
                  errp);
}

struct er_run er_run_tool(const char *dir, const char *const *args,
                          int flags) {
  return er_run(dir, er_tool_path(), args, NULL, flags);
}

void er_run_free(struct er_run *r) {
  free(r->out);
  free(r->err);
}

int er_exit_code(const struct er_run *r, const char *what) {
  ck_assert_msg(r->status != -1, "%s did not finish in time", what);
  ck_assert_msg(WIFEXITED(r->status), "%s died of signal %d", what,
                WIFSIGNALED(r->status) ? WTERMSIG(r->status) : 0);
  return WEXITSTATUS(r->status);
}

void er_assert_status(const struct er_run *r, int code) {
  int got = er_exit_code(r, "the tool");
  ck_assert_msg(got == code && r->err[0] == '\0',
                "exit status %d (expected %d), stderr: %s", got, code,
                r->err);
}

void er_assert_one_error(const struct er_run *r, const char *what) {
  ck_assert_msg(!strncmp(r->err, "eventring: ", 11) &&
                    er_count_lines(r->err) == 1 &&
                    r->err[strlen(r->err) - 1] == '\n',
                "stderr is not one 'eventring: ' line: [%s]", r->err);
  if (what)
    ck_assert_msg(strstr(r->err, what) != NULL, "stderr lacks '%s': %s",
                  what, r->err);
}

char *er_slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
  char *buf = NULL;
  size_t n = 0;
  FILE *m = open_memstream(&buf, &n);
  ck_assert_ptr_nonnull(m);
  char chunk[65536];
  size_t k;
  while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, k, m);
  fclose(f);
  fclose(m);
  if (len) *len = n;
  return buf;
}

int er_count_text(const char *s, const char *text) {
  int k = 0;
  for (const char *p = strstr(s, text); p != NULL; p = strstr(p + 1, text))
    k++;
  return k;
}

int er_wait_text(const char *path, const char *text, int n, double seconds) {
  double give_up = er_now() + seconds;
  for (;; er_sleep_ms(20)) {
    char *s = er_slurp(path, NULL);
    int enough = er_count_text(s, text) >= n;
    free(s);
    if (enough) return 1;
    if (er_now() > give_up) return 0;
  }
}

void er_write_text(const char *path, const char *text, int excl) {
  int fd = open(path, O_WRONLY | O_CREAT | (excl ? O_EXCL : O_TRUNC), 0644);
  ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
  size_t n = strlen(text);
  ck_assert_int_eq(write(fd, text, n), (ssize_t)n);
  ck_assert_int_eq(close(fd), 0);
}

void er_assert_content(const char *path, const char *text) {
  char *got = er_slurp(path, NULL);
  ck_assert_str_eq(got, text);
  free(got);
}

int er_count_entries(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  ck_assert_msg(d != NULL, "%s: %s", dir, strerror(errno));
  size_t sl = strlen(suffix);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t k = strlen(e->d_name);
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    n += k > sl && !strcmp(e->d_name + k - sl, suffix);
  }
  closedir(d);
  return n;
}

static int by_string(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

struct er_lines er_entries(const char *dir, const char *suffix) {
  struct er_lines l = {0};
  DIR *d = opendir(dir);
  ck_assert_msg(d != NULL, "%s: %s", dir, strerror(errno));
  size_t sl = strlen(suffix);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t k = strlen(e->d_name);
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || k < sl ||
        strcmp(e->d_name + k - sl, suffix))
      continue;
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    er_lines_push(&l, p, strlen(p));
  }
  closedir(d);
  if (l.n) qsort(l.v, l.n, sizeof *l.v, by_string);
  return l;
}

void er_gunzip(const char *gz, const char *path) {
  char cmd[3 * PATH_MAX];
  snprintf(cmd, sizeof cmd, "gzip -dc '%s' > '%s'", gz, path);
  int rc = system(cmd);
  ck_assert_msg(rc == 0, "'%s' failed with status %d", cmd, rc);
}

const char *const er_vectors[ER_NVECTORS] = {
    "ocaml5-basic", "ocaml5-multidomain", "ocaml5-wrapped", "ocaml54-basic",
    "ocaml54-multidomain"};

int er_vector_ocaml50(const char *name) {
  return !strncmp(name, "ocaml5-", 7);
}

int er_unpack_vector(const char *dir, const char *name, char *path) {
  const char *data = er_env_dir("EVENTRING_TEST_DATA");
  if (!data) return 0;
  char gz[PATH_MAX];
  snprintf(gz, sizeof gz, "%s/%s.events.gz", data, name);
  snprintf(path, PATH_MAX, "%s/%s.events", dir, name);
  er_gunzip(gz, path);
  return 1;
}

void er_lines_push(struct er_lines *l, const char *s, size_t len) {
  if (l->n == l->cap) {
    /* Geometric growth: traces have tens of thousands of lines. */
    l->cap = l->cap ? 2 * l->cap : 256;
    l->v = realloc(l->v, l->cap * sizeof *l->v);
    REQUIRE(l->v != NULL, "out of memory");
  }
  l->v[l->n] = strndup(s, len);
  REQUIRE(l->v[l->n] != NULL, "out of memory");
  l->n++;
}

struct er_lines er_lines_split(const char *s) {
  struct er_lines l = {0};
  while (*s) {
    const char *nl = strchr(s, '\n');
    size_t len = nl ? (size_t)(nl - s) : strlen(s);
    er_lines_push(&l, s, len);
    s += len + (nl != NULL);
  }
  return l;
}

struct er_lines er_lines_read(const char *path) {
  char *text = er_slurp(path, NULL);
  struct er_lines l = er_lines_split(text);
  free(text);
  return l;
}

struct er_lines er_lines_starting(const struct er_lines *all,
                                  const char *prefix) {
  struct er_lines l = {0};
  size_t plen = strlen(prefix);
  for (size_t i = 0; i < all->n; i++)
    if (!strncmp(all->v[i], prefix, plen))
      er_lines_push(&l, all->v[i], strlen(all->v[i]));
  return l;
}

void er_lines_free(struct er_lines *l) {
  for (size_t i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
  l->v = NULL;
  l->n = l->cap = 0;
}

int er_is_ring_stop(const char *line) {
  return strstr(line, " kind=lifecycle name=ring_stop value=") != NULL;
}

void er_lines_compare(const char *what, const struct er_lines *got,
                      const struct er_lines *want, int ring_stop_dash) {
  size_t n = got->n < want->n ? got->n : want->n;
  for (size_t i = 0; i < n; i++) {
    const char *g = got->v[i], *w = want->v[i];
    if (er_is_ring_stop(w)) {
      size_t prefix = (size_t)(strstr(w, "value=") - w) + strlen("value=");
      REQUIRE(!strncmp(g, w, prefix), "%s line %zu:\n  got  %s\n  want %s",
              what, i, g, w);
      REQUIRE(!ring_stop_dash || !strcmp(g + prefix, "-"),
              "%s line %zu: ring_stop printed with a value: %s", what, i, g);
      continue;
    }
    REQUIRE(!strcmp(g, w), "%s line %zu:\n  got  %s\n  want %s", what, i, g,
            w);
  }
  ck_assert_msg(got->n == want->n, "%s: %zu lines, expected %zu", what,
                got->n, want->n);
}

uint64_t er_field(const char *line, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, " %s=", key);
  const char *p = strstr(line, pat);
  ck_assert_msg(p != NULL, "no %s in: %s", key, line);
  return strtoull(p + strlen(pat), NULL, 10);
}
