/* benchlib.c -- the helpers of benchlib.h. */
#include "benchlib.h"

#include <ctype.h>
#include <fcntl.h>
#include <errno.h>
#include <libgen.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "eventring.h"

uint64_t bl_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t clock_sink;

__attribute__((noinline)) uint64_t bl_loop_clock(long n) {
  struct timespec ts;
  uint64_t acc = 0, t0 = bl_now_ns();
  for (long i = 0; i < n; i++) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    acc += (uint64_t)ts.tv_nsec;
    BL_BARRIER();
  }
  uint64_t t1 = bl_now_ns();
  clock_sink = acc;
  return t1 - t0;
}

double bl_ns_per_op(uint64_t (*loop)(long n), double target_ns,
                    uint64_t calib_ns) {
  long n = 1024;
  uint64_t t;
  for (;;) {
    t = loop(n);
    if (t >= calib_ns || n > (1L << 40)) break;
    n *= 2;
  }
  n = (long)((double)n * target_ns / (double)(t ? t : 1));
  if (n < 1) n = 1;
  t = loop(n);
  return (double)t / (double)n;
}

void bl_self(const char *argv0, char *buf, size_t len) {
  ssize_t n = readlink("/proc/self/exe", buf, len - 1);
  if (n > 0)
    buf[n] = '\0';
  else
    snprintf(buf, len, "%s", argv0);
}

int bl_tool(const char *argv0, const char *who, char *buf, size_t len) {
  const char *env = getenv("EVENTRING_BENCH_TOOL");
  if (env && *env) {
    snprintf(buf, len, "%s", env);
  } else {
    char self[4096];
    bl_self(argv0, self, sizeof self);
    snprintf(buf, len, "%s/../tools/eventring", dirname(self));
  }
  if (access(buf, X_OK) == 0) return 0;
  fprintf(stderr, "%s: no eventring command at %s\n", who, buf);
  return 2;
}

int bl_runs(void) {
  /* The program's own variable first, so that `make bench` can give one
   * slow benchmark fewer rounds, said in its output, without changing the
   * others: bench_probes reads EVENTRING_BENCH_PROBES_RUNS. */
  char var[128];
  const char *name = program_invocation_short_name;
  if (strncmp(name, "bench_", 6) == 0) name += 6;
  size_t n = (size_t)snprintf(var, sizeof var, "EVENTRING_BENCH_");
  for (; *name && n + sizeof "_RUNS" < sizeof var; name++)
    var[n++] = isalnum((unsigned char)*name)
                   ? (char)toupper((unsigned char)*name)
                   : '_';
  snprintf(var + n, sizeof var - n, "_RUNS");
  const char *r = getenv(var);
  if (r == NULL || *r == '\0') r = getenv("EVENTRING_BENCH_RUNS");
  int runs = BL_RUNS_DEFAULT;
  if (r != NULL && *r) runs = atoi(r);
  if (runs < 1) runs = 1;
  if (runs > BL_RUNS_MAX) runs = BL_RUNS_MAX;
  return runs;
}

int bl_spawn(const char *self, char *const args[], char *buf, size_t len) {
  int fd[2];
  buf[0] = '\0';
  if (pipe(fd) != 0) {
    perror("bench: pipe");
    return -1;
  }
  /* Whatever the parent buffered must not be written twice. */
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    perror("bench: fork");
    close(fd[0]);
    close(fd[1]);
    return -1;
  }
  if (pid == 0) {
    char *argv[9];
    int n = 0;
    argv[n++] = (char *)self;
    for (int i = 0; args[i] != NULL && n < 8; i++) argv[n++] = args[i];
    argv[n] = NULL;
    dup2(fd[1], STDOUT_FILENO);
    close(fd[0]);
    close(fd[1]);
    execv(self, argv);
    perror("bench: execv");
    _exit(127);
  }
  close(fd[1]);
  size_t got = 0;
  ssize_t r;
  while (got < len - 1 &&
         ((r = read(fd[0], buf + got, len - 1 - got)) > 0 ||
          (r < 0 && errno == EINTR)))
    if (r > 0) got += (size_t)r;
  close(fd[0]);
  buf[got] = '\0';
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status)) {
    fprintf(stderr, "bench: %s %s died of signal %d\n", self,
            args[0] ? args[0] : "", WTERMSIG(status));
    return -1;
  }
  return WEXITSTATUS(status);
}

void bl_add(struct bl_stat *s, double v) {
  if (s->nv < BL_RUNS_MAX) s->v[s->nv++] = v;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void bl_summarize(struct bl_stat *s) {
  double t[BL_RUNS_MAX];
  if (s->nv == 0) {
    s->median = s->min = s->max = 0;
    return;
  }
  memcpy(t, s->v, (size_t)s->nv * sizeof t[0]);
  qsort(t, (size_t)s->nv, sizeof t[0], cmp_double);
  s->min = t[0];
  s->max = t[s->nv - 1];
  s->median = s->nv % 2 ? t[s->nv / 2] : (t[s->nv / 2 - 1] + t[s->nv / 2]) / 2;
}

void bl_cpu_model(char *out, size_t len) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  snprintf(out, len, "unknown");
  if (f == NULL) return;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "model name", 10) == 0) {
      char *v = strchr(line, ':');
      if (v) {
        v += 1 + (v[1] == ' ');
        v[strcspn(v, "\n")] = '\0';
        snprintf(out, len, "%s", v);
      }
      break;
    }
  fclose(f);
}

void bl_json_str(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', out);
    fputc(*s, out);
  }
  fputc('"', out);
}

void bl_json_stat_digits(FILE *out, const struct bl_stat *s, int digits) {
  fprintf(out, "\"median\": %.*f, \"min\": %.*f, \"max\": %.*f", digits,
          s->median, digits, s->min, digits, s->max);
}

void bl_json_stat(FILE *out, const struct bl_stat *s) {
  bl_json_stat_digits(out, s, 4);
}

void bl_json_figures(FILE *out, const char *const *keys,
                     const struct bl_stat *s, int n) {
  for (int i = 0; i < n; i++) {
    fprintf(out, ",\n  \"%s\": {", keys[i]);
    bl_json_stat(out, &s[i]);
    fputc('}', out);
  }
}

int bl_start_tracing(const char *prog, char *dir) {
  if (mkdtemp(dir) == NULL) {
    fprintf(stderr, "%s: mkdtemp: %s\n", prog, strerror(errno));
    return 2;
  }
  setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
  int rc = eventring_start();
  if (rc == EVENTRING_E_DISABLED) {
    rmdir(dir);
    return BL_EXIT_DISABLED;
  }
  if (rc != 0) {
    fprintf(stderr, "%s: eventring_start: %s\n", prog, eventring_strerror(rc));
    rmdir(dir);
    return 2;
  }
  return 0;
}

/* Creates every missing directory above `path`, like `mkdir -p
 * "$(dirname path)"`. */
static void make_parents(const char *prog, const char *path) {
  char buf[4096];
  if (strlen(path) >= sizeof buf) return;
  strcpy(buf, path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
      fprintf(stderr, "%s: mkdir %s: %s\n", prog, buf, strerror(errno));
    *p = '/';
  }
}

static const char *json_path(void) {
  const char *p = getenv("EVENTRING_BENCH_OUT");
  return p != NULL && *p ? p : NULL;
}

int bl_json_open(const char *prog, FILE **out) {
  const char *path = json_path();
  *out = NULL;
  if (path == NULL) return 0;
  make_parents(prog, path);
  *out = fopen(path, "w");
  if (*out == NULL) {
    fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
    return -1;
  }
  return 0;
}

int bl_json_close(const char *prog, FILE *out) {
  const char *path = json_path();
  if (fclose(out) != 0) {
    fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
    return -1;
  }
  printf("\nfigures written to %s\n", path);
  return 0;
}

int bl_fifo(void) {
  const char *e = getenv("EVENTRING_BENCH_FIFO");
  if (e && strcmp(e, "0") == 0) return 0;
  struct sched_param sp = {.sched_priority = 10};
  return sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
}

void bl_untraced(int params) {
  unsetenv("OCAML_RUNTIME_EVENTS_START");
  unsetenv("OCAML_RUNTIME_EVENTS_PRESERVE");
  if (params) {
    unsetenv("OCAMLRUNPARAM");
    unsetenv("CAMLRUNPARAM");
  }
  if (eventring_path() != NULL) eventring_stop();
}

int bl_main(int argc, char **argv, int (*one)(void),
            int (*driver)(const char *argv0)) {
  if (argc == 2 && strcmp(argv[1], "--one") == 0) return one();
  if (argc != 1) {
    fprintf(stderr, "usage: %s\n", argv[0]);
    return 2;
  }
  return driver(argv[0]);
}

int bl_main_op(int argc, char **argv, int (*one)(const char *op),
               int (*driver)(const char *argv0)) {
  if (argc == 3 && strcmp(argv[1], "--one") == 0) return one(argv[2]);
  if (argc != 1) {
    fprintf(stderr, "usage: %s\n", argv[0]);
    return 2;
  }
  return driver(argv[0]);
}

int bl_fork_writer(void (*writer)(int go, int ready, int arg), int arg,
                   pid_t *pid, int *go, int *ready) {
  int g[2], r[2];
  if (pipe2(g, O_CLOEXEC)) return 2;
  if (pipe2(r, O_CLOEXEC)) {
    close(g[0]);
    close(g[1]);
    return 2;
  }
  pid_t w = fork();
  if (w == 0) {
    close(g[1]);
    close(r[0]);
    writer(g[0], r[1], arg);
    _exit(2);
  }
  close(g[0]);
  close(r[1]);
  char c;
  if (w < 0 || read(r[0], &c, 1) != 1) {
    int st = 0;
    if (w > 0) waitpid(w, &st, 0);
    close(g[1]);
    close(r[0]);
    return WIFEXITED(st) && WEXITSTATUS(st) == BL_EXIT_DISABLED
               ? BL_EXIT_DISABLED
               : 2;
  }
  *pid = w;
  *go = g[1];
  *ready = r[0];
  return 0;
}

int bl_exec_tool(const char *prog, const char *tool, char *const args[],
                 pid_t *pid, int *err) {
  int e[2];
  if (pipe2(e, O_CLOEXEC)) return 2;
  pid_t t = fork();
  if (t == 0) {
    dup2(e[1], 2);
    close(e[0]);
    close(e[1]);
    execv(tool, args);
    fprintf(stderr, "%s: %s: %s\n", prog, tool, strerror(errno));
    _exit(127);
  }
  close(e[1]);
  *pid = t;
  *err = e[0];
  return 0;
}

double bl_cpu_seconds(const struct rusage *ru) {
  return (double)ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 +
         (double)ru->ru_stime.tv_sec + ru->ru_stime.tv_usec / 1e6;
}
