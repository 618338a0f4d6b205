/* tooltest.c -- see tooltest.h. */
#include "tooltest.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

pid_t er_trace_prog(const char *dir, const char *name,
                    const char *const *args, const char *env, char *path) {
  const char *prog = er_prog_path(name);
  ck_assert_msg(prog != NULL, "no helper program %s", name);
  char p[PATH_MAX], outp[PATH_MAX], errp[PATH_MAX];
  snprintf(p, sizeof p, "%s", prog);
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  static const char *const none[] = {NULL};
  pid_t pid = er_start(dir, p, args ? args : none, ER_FD_NULL, env, 0, outp,
                       errp);
  struct er_run r = er_finish(pid, outp, errp, ER_RUN_TIMEOUT);
  ck_assert_msg(r.status != -1 && WIFEXITED(r.status) &&
                    WEXITSTATUS(r.status) == 0,
                "%s: wait status %d, stderr: %s", name, r.status, r.err);
  er_run_free(&r);
  if (path) er_ring_path_for(path, PATH_MAX, dir, pid);
  return pid;
}

int64_t er_parse_wall(const char *s) {
  struct tm tm = {0};
  long long ns;
  int n = 0;
  ck_assert_msg(sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%9lldZ%n", &tm.tm_year,
                       &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                       &tm.tm_sec, &ns, &n) == 7 &&
                    s[n] == 0 && n == 30,
                "not an ISO 8601 UTC time with nanoseconds: %s", s);
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return (int64_t)timegm(&tm) * 1000000000 + ns;
}

const char *er_babeltrace_path(void) {
  static char found[PATH_MAX];
  const char *path = getenv("PATH");
  if (!path) path = "/usr/bin:/bin";
  while (*path) {
    size_t n = strcspn(path, ":");
    snprintf(found, sizeof found, "%.*s/babeltrace2", (int)n, path);
    if (n > 0 && access(found, X_OK) == 0) return found;
    path += n + (path[n] == ':');
  }
  return NULL;
}

struct er_pipe_proc er_start_ready(const char *name) {
  const char *prog = er_prog_path(name);
  ck_assert_msg(prog != NULL, "no helper program %s", name);
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s", prog);
  struct er_pipe_proc live = er_pipe_start((char *const[]){p, NULL}, NULL,
                                           NULL);
  char line[64];
  ck_assert_msg(er_read_line(live.out, line, sizeof line, ER_RUN_TIMEOUT) ==
                    0,
                "%s printed no line", name);
  return live;
}

struct er_lines er_dump_raw(const char *dir, const char *file) {
  const char *args[] = {"dump", "--time=raw", file, NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "eventring dump") == 0, "dump %s: %s", file,
                r.err);
  struct er_lines l = er_lines_split(r.out);
  er_run_free(&r);
  return l;
}
