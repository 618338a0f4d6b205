/* tooltest.c -- see tooltest.h. */
#include "tooltest.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/wait.h>

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
