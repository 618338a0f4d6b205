/* test_find_ring -- `eventring ... --pid PID` finds a process's ring file
 * wherever the process put it, --follow waits for a file about to appear
 * and stops once its writer is gone, and every way of not finding or not
 * reading a ring file gets a message that says which. */
#include <signal.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "testlib.h"

/* Starts progs/`name` with `arg` (or none) and `env` (NULL-terminated);
 * it dies with the test.  Reads its first line into `line`. */
static struct er_pipe_proc start_prog(const char *name, const char *arg,
                                      char *const env[], char *line,
                                      size_t size) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", er_env_dir("EVENTRING_TEST_PROGS"),
           name);
  char *argv[] = {path, (char *)arg, NULL};
  struct er_pipe_proc p = er_pipe_start(argv, env, NULL);
  ck_assert_int_eq(er_read_line(p.out, line, size, 10), 0);
  return p;
}

/* The pid after "waiting " or "ready " in a helper's first line. */
static pid_t pid_in(const char *line) {
  const char *sp = strchr(line, ' ');
  ck_assert_msg(sp != NULL, "line: '%s'", line);
  return (pid_t)strtol(sp + 1, NULL, 10);
}

/* Sends a line to a late_start and checks its answer starts `want`;
 * returns what follows (static storage). */
static const char *tell(struct er_pipe_proc *p, const char *want) {
  ck_assert_int_eq(write(p->in, "go\n", 3), 3);
  static char line[PATH_MAX];
  ck_assert_int_eq(er_read_line(p->out, line, sizeof line, 10), 0);
  ck_assert_msg(!strncmp(line, want, strlen(want)), "late_start: '%s'", line);
  return line + strlen(want);
}

/* Room for the name of a directory er_tmpdir() makes. */
#define DIR_BYTES 64

/* A fresh directory into `buf` (DIR_BYTES bytes).  er_tmpdir() points
 * OCAML_RUNTIME_EVENTS_DIR at it, which the tool would inherit and search
 * last; the tests want the tool to find files through the process, so
 * the variable goes. */
static const char *fresh_dir(char *buf) {
  snprintf(buf, DIR_BYTES, "%s", er_tmpdir());
  unsetenv("OCAML_RUNTIME_EVENTS_DIR");
  return buf;
}

/* Runs `eventring ARGS...` and returns the run; the caller frees it. */
static struct er_run tool(const char *dir, const char *const *args) {
  return er_run_tool(dir, args, 0);
}


/* A process traced into a directory of its own, found from elsewhere
 * (the tool's working directory and environment name no such
 * directory): through the file it maps.  pause and resume find it the
 * same way. */
START_TEST(test_found_through_maps) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is off in this build");
  char dir[DIR_BYTES], out[DIR_BYTES];
  fresh_dir(dir);
  fresh_dir(out);
  char dirvar[DIR_BYTES + 32], line[256], pid_s[32];
  snprintf(dirvar, sizeof dirvar, "OCAML_RUNTIME_EVENTS_DIR=%s", dir);
  char *env[] = {"OCAML_RUNTIME_EVENTS_START=1", dirvar, NULL};
  struct er_pipe_proc p = start_prog("mon_loop", NULL, env, line, sizeof line);
  snprintf(pid_s, sizeof pid_s, "%ld", (long)pid_in(line));

  struct er_run r = tool(out, (const char *[]){"dump", "--time=raw", "--pid", pid_s, NULL});
  er_assert_status(&r, 0);
  ck_assert_msg(strstr(r.out, "mon.seq") != NULL, "dump: %s", r.out);
  er_run_free(&r);
  r = tool(out, (const char *[]){"pause", pid_s, NULL});
  er_assert_status(&r, 0);
  er_run_free(&r);
  r = tool(out, (const char *[]){"resume", "--pid", pid_s, NULL});
  er_assert_status(&r, 0);
  er_run_free(&r);
  /* --dir still means there and only there, and says where it is. */
  r = tool(out, (const char *[]){"dump", "--time=raw", "--dir", out, "--pid", pid_s, NULL});
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  char want[PATH_MAX];
  snprintf(want, sizeof want, "maps %s/%s.events", dir, pid_s);
  er_assert_one_error(&r, want);
  er_run_free(&r);
  ck_assert_int_eq(er_pipe_finish(&p, 10), 0);
}
END_TEST

/* A process that stopped tracing keeps running and maps its file no
 * more; with OCAML_RUNTIME_EVENTS_PRESERVE the file stays where its
 * environment says: a directory relative to the process's working
 * directory, which is neither the tool's nor named in its environment. */
START_TEST(test_found_through_environment) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is off in this build");
  char cwd[DIR_BYTES], out[DIR_BYTES];
  fresh_dir(cwd);
  fresh_dir(out);
  char sub[PATH_MAX], here[PATH_MAX], line[256], pid_s[32];
  snprintf(sub, sizeof sub, "%s/rings", cwd);
  ck_assert_int_eq(mkdir(sub, 0700), 0);
  ck_assert_ptr_nonnull(getcwd(here, sizeof here));
  ck_assert_int_eq(chdir(cwd), 0);
  char *env[] = {"OCAML_RUNTIME_EVENTS_DIR=rings",
                 "OCAML_RUNTIME_EVENTS_PRESERVE=1", NULL};
  struct er_pipe_proc p =
      start_prog("late_start", "stop", env, line, sizeof line);
  ck_assert_int_eq(chdir(here), 0);
  pid_t pid = pid_in(line);
  snprintf(pid_s, sizeof pid_s, "%ld", (long)pid);
  tell(&p, "started ");
  tell(&p, "stopped");

  /* Forced: the maps no longer name the file. */
  char maps[64];
  snprintf(maps, sizeof maps, "/proc/%ld/maps", (long)pid);
  char *m = er_slurp(maps, NULL);
  ck_assert_msg(strstr(m, ".events") == NULL, "still mapped: %s", m);
  free(m);

  struct er_run r = tool(out, (const char *[]){"dump", "--time=raw", "--pid", pid_s, NULL});
  er_assert_status(&r, 0);
  ck_assert_msg(strstr(r.out, "late.seq") != NULL, "dump: %s", r.out);
  er_run_free(&r);
  /* --follow on it ends: the process lives, but writes it no more. */
  r = tool(out,
           (const char *[]){"dump", "--time=raw", "--follow", "--pid", pid_s, NULL});
  er_assert_status(&r, 0);
  ck_assert_msg(strstr(r.out, "late.seq") != NULL, "dump: %s", r.out);
  er_run_free(&r);
  ck_assert_int_eq(er_pipe_finish(&p, 10), 0);
}
END_TEST

/* Waits (bounded) until the file at `path` holds `text`. */
static void wait_for_text(const char *path, const char *text) {
  double give_up = er_now() + 10;
  for (;;) {
    char *s = er_slurp(path, NULL);
    int found = strstr(s, text) != NULL;
    free(s);
    if (found) return;
    ck_assert_msg(er_now() < give_up, "%s never showed '%s'", path, text);
    er_sleep_ms(5);
  }
}

/* `./prog & eventring dump --follow --pid $!`: the process exists before
 * its file does.  Without --follow the tool says so at once; with it the
 * tool says it waits, and reads the file once it appears.  The file is
 * made to appear only after the tool has said it waits. */
START_TEST(test_follow_waits_for_file) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is off in this build");
  char dir[DIR_BYTES], out[DIR_BYTES];
  fresh_dir(dir);
  fresh_dir(out);
  char dirvar[DIR_BYTES + 32], line[256], pid_s[32], want[256];
  snprintf(dirvar, sizeof dirvar, "OCAML_RUNTIME_EVENTS_DIR=%s", dir);
  /* The file outlives the process: the tool may look at it (find it, read
   * its start time) and open its cursor a while later, when the process
   * has ended, on a loaded machine. */
  char *env[] = {dirvar, "OCAML_RUNTIME_EVENTS_PRESERVE=1", NULL};
  struct er_pipe_proc p =
      start_prog("late_start", NULL, env, line, sizeof line);
  pid_t pid = pid_in(line);
  snprintf(pid_s, sizeof pid_s, "%ld", (long)pid);

  struct er_run r = tool(out, (const char *[]){"stats", "--pid", pid_s, NULL});
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  snprintf(want, sizeof want,
           "process %s (late_start) is not traced: it maps no ring file; "
           "start it with OCAML_RUNTIME_EVENTS_START=1",
           pid_s);
  er_assert_one_error(&r, want);
  er_run_free(&r);

  char outp[PATH_MAX], errp[PATH_MAX];
  pid_t t = er_start_tool(
      out,
      (const char *[]){"dump", "--time=raw", "--follow", "--wait", "600s",
                       "--pid", pid_s, NULL},
      0, outp, errp);
  snprintf(want, sizeof want,
           "eventring: waiting up to 600 s for process %s to create its ring "
           "file\n",
           pid_s);
  wait_for_text(errp, want);
  /* The process ends once the tool has found its file. */
  char ring[PATH_MAX];
  snprintf(ring, sizeof ring, "%s", tell(&p, "started "));
  er_wait_open(t, ring);
  ck_assert_int_eq(er_pipe_finish(&p, 10), 0);
  r = er_finish(t, outp, errp, 20);
  ck_assert_msg(er_exit_code(&r, "the tool") == 0, "%s", r.err);
  ck_assert_str_eq(r.err, want);
  ck_assert_msg(strstr(r.out, "late.seq") != NULL, "dump: %s", r.out);
  er_run_free(&r);
}
END_TEST

/* Starts late_start untraced (it never creates a ring file), its pid in
 * `pid_s` (32 bytes). */
static struct er_pipe_proc untraced(char *pid_s) {
  char line[256];
  char *env[] = {NULL};
  struct er_pipe_proc p =
      start_prog("late_start", NULL, env, line, sizeof line);
  snprintf(pid_s, 32, "%ld", (long)pid_in(line));
  return p;
}

/* A process that never creates its file: --follow gives up after --wait
 * (5 s by default), and says why. */
START_TEST(test_follow_times_out) {
  ER_NEED_TOOL();
  char out[DIR_BYTES];
  fresh_dir(out);
  char pid_s[32], want[384];
  struct er_pipe_proc p = untraced(pid_s);
  static const struct {
    const char *wait; /* NULL: the default */
    const char *secs;
  } rows[] = {{"100ms", "0.1"}, {"2s", "2"}, {NULL, "5"}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const char *argv[] = {"dump", "--follow", "--pid", pid_s,
                          rows[i].wait ? "--wait" : NULL, rows[i].wait, NULL};
    struct er_run r = tool(out, argv);
    ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
    snprintf(want, sizeof want,
             "eventring: waiting up to %s s for process %s to create its "
             "ring file\n"
             "eventring: process %s (late_start) is not traced: it maps no "
             "ring file; start it with OCAML_RUNTIME_EVENTS_START=1 (waited "
             "%s s; --wait DUR waits longer)\n",
             rows[i].secs, pid_s, pid_s, rows[i].secs);
    ck_assert_str_eq(r.err, want);
    er_run_free(&r);
  }
  ck_assert_int_eq(er_pipe_finish(&p, 10), 0);
}
END_TEST

/* --wait is for --follow --pid alone (its durations: test_durations). */
START_TEST(test_wait_usage) {
  ER_NEED_TOOL();
  char out[DIR_BYTES];
  fresh_dir(out);
  static const struct {
    const char *argv[8];
    const char *err;
  } rows[] = {
      {{"dump", "--wait", "1s", "--pid", "1", NULL},
       "--wait applies to --follow --pid"},
      {{"stats", "--follow", "--wait", "1s", "x.events", NULL},
       "--wait applies to --follow --pid"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    struct er_run r = tool(out, rows[i].argv);
    ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
    ck_assert_msg(strstr(r.err, rows[i].err) != NULL, "row %zu: %s", i,
                  r.err);
    er_run_free(&r);
  }
}
END_TEST

/* A process that never creates its file and ends while --follow waits is
 * reported as such. */
START_TEST(test_follow_gives_up) {
  ER_NEED_TOOL();
  char out[DIR_BYTES];
  fresh_dir(out);
  char pid_s[32], want[256];
  struct er_pipe_proc p = untraced(pid_s);
  char outp[PATH_MAX], errp[PATH_MAX];
  pid_t t = er_start_tool(
      out,
      (const char *[]){"dump", "--time=raw", "--follow", "--wait", "600s",
                       "--pid", pid_s, NULL},
      0, outp, errp);
  snprintf(want, sizeof want, "waiting up to 600 s for process %s", pid_s);
  wait_for_text(errp, want);
  ck_assert_int_eq(er_pipe_finish(&p, 10), 0); /* ends untraced */
  struct er_run r = er_finish(t, outp, errp, 20);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  snprintf(want, sizeof want,
           "eventring: process %s ended without creating a ring file\n",
           pid_s);
  ck_assert_msg(strstr(r.err, want) != NULL, "stderr: %s", r.err);
  er_run_free(&r);
}
END_TEST

/* Makes a ring file left by a process that has exited (preserved), and
 * returns its path in `path`; its pid goes to *pid. */
static void dead_file(const char *dir, char *path, pid_t *pid) {
  char dirvar[DIR_BYTES + 32];
  snprintf(dirvar, sizeof dirvar, "OCAML_RUNTIME_EVENTS_DIR=%s", dir);
  char *env[] = {"OCAML_RUNTIME_EVENTS_START=1",
                 "OCAML_RUNTIME_EVENTS_PRESERVE=1", dirvar, NULL};
  char line[256];
  struct er_pipe_proc p = start_prog("mon_loop", NULL, env, line, sizeof line);
  *pid = pid_in(line);
  ck_assert_int_eq(er_pipe_finish(&p, 10), 0);
  snprintf(path, PATH_MAX, "%s/%ld.events", dir, (long)*pid);
}

/* Copies the file at `from` to `to`. */
static void copy_file(const char *from, const char *to) {
  size_t len;
  char *s = er_slurp(from, &len);
  int fd = open(to, O_WRONLY | O_CREAT | O_EXCL, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, s, len), (ssize_t)len);
  close(fd);
  free(s);
}

/* --follow on a file whose writer is gone returns, whatever the file is
 * called: the file names its writer.  So does a file whose writer's pid
 * now belongs to a live process that does not map it (pid reuse, forced
 * here by writing a live pid into the copy). */
START_TEST(test_follow_copy_of_dead_file) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is off in this build");
  char dir[DIR_BYTES];
  fresh_dir(dir);
  char path[PATH_MAX], copy[PATH_MAX];
  pid_t pid;
  dead_file(dir, path, &pid);
  snprintf(copy, sizeof copy, "%s/copy.events", dir);
  copy_file(path, copy);
  struct er_run r = tool(dir, (const char *[]){"dump", "--time=raw", "--follow", copy, NULL});
  er_assert_status(&r, 0);
  ck_assert_msg(strstr(r.out, "mon.seq") != NULL, "dump: %s", r.out);
  er_run_free(&r);

  /* The pid word of the extension block, rewritten to a live process. */
  char *argv[] = {"sleep", "30", NULL};
  pid_t live = er_spawn(argv, ER_FD_NULL, ER_FD_NULL, ER_FD_KEEP, NULL,
                        ER_SPAWN_PATH);
  snprintf(copy, sizeof copy, "%s/reused.events", dir);
  copy_file(path, copy);
  int fd = open(copy, O_RDWR);
  ck_assert_int_ge(fd, 0);
  uint64_t w = (uint64_t)live;
  ck_assert_int_eq(pwrite(fd, &w, 8, 8 * (ER_META_WORDS + ER_EXT_PID)), 8);
  close(fd);
  r = tool(dir, (const char *[]){"dump", "--time=raw", "--follow", copy, NULL});
  er_assert_status(&r, 0);
  ck_assert_msg(strstr(r.out, "mon.seq") != NULL, "dump: %s", r.out);
  er_run_free(&r);
  kill(live, SIGKILL);
  er_wait_for(live, 10);
}
END_TEST

/* Files that are not ring files, each called what it is. */
START_TEST(test_not_ring_files) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char text[PATH_MAX], zeros[PATH_MAX], want[PATH_MAX + 64];
  snprintf(text, sizeof text, "%s/testsuite/test_find_ring.c",
           er_env_dir("EVENTRING_TEST_SRCDIR"));
  snprintf(zeros, sizeof zeros, "%s/zeros.events", dir);
  char z[64] = {0};
  int fd = open(zeros, O_WRONLY | O_CREAT | O_EXCL, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, z, sizeof z), (ssize_t)sizeof z);
  close(fd);
  const char *files[] = {text, "/bin/true", zeros};
  for (int i = 0; i < 3; i++) {
    struct er_run r = tool(dir, (const char *[]){"dump", "--time=raw", files[i], NULL});
    ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
    snprintf(want, sizeof want, "eventring: %s: not a ring file\n", files[i]);
    ck_assert_str_eq(r.err, want);
    er_run_free(&r);
  }
}
END_TEST

/* A pid with no process, and a live process that is not traced. */
START_TEST(test_pid_errors) {
  ER_NEED_TOOL();
  char dir[DIR_BYTES];
  fresh_dir(dir);
  char pid_s[32], want[256];
  /* A pid just freed: reaped, and not reused within the test (pids go
   * round the whole range first). */
  pid_t gone = fork();
  ck_assert_int_ge(gone, 0);
  if (gone == 0) _exit(0);
  ck_assert_int_eq(er_wait_for(gone, 10), 0);
  snprintf(pid_s, sizeof pid_s, "%ld", (long)gone);
  struct er_run r = tool(dir, (const char *[]){"dump", "--time=raw", "--pid", pid_s, NULL});
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  snprintf(want, sizeof want, "eventring: no such process %s\n", pid_s);
  ck_assert_str_eq(r.err, want);
  er_run_free(&r);
  r = tool(dir, (const char *[]){"pause", pid_s, NULL});
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  ck_assert_str_eq(r.err, want);
  er_run_free(&r);

  char *argv[] = {"sleep", "30", NULL};
  pid_t live = er_spawn(argv, ER_FD_NULL, ER_FD_NULL, ER_FD_KEEP, NULL,
                        ER_SPAWN_PATH);
  snprintf(pid_s, sizeof pid_s, "%ld", (long)live);
  /* Once it is sleep, not still the test's fork on its way to exec. */
  char comm[64], cpath[64];
  snprintf(cpath, sizeof cpath, "/proc/%ld/comm", (long)live);
  double give_up = er_now() + 10;
  for (;;) {
    char *s = er_slurp(cpath, NULL);
    snprintf(comm, sizeof comm, "%s", s);
    free(s);
    if (!strcmp(comm, "sleep\n")) break;
    ck_assert(er_now() < give_up);
    er_sleep_ms(2);
  }
  snprintf(want, sizeof want,
           "eventring: process %s (sleep) is not traced: it maps no ring "
           "file; start it with OCAML_RUNTIME_EVENTS_START=1\n",
           pid_s);
  const char *cmds[] = {"dump", "stats", "latency", "trace", "ctf", "pause",
                        "resume"};
  for (int i = 0; i < 7; i++) {
    int bare = !strcmp(cmds[i], "pause") || !strcmp(cmds[i], "resume");
    char o[PATH_MAX];
    snprintf(o, sizeof o, "%s/out-%s%s", dir, cmds[i],
             !strcmp(cmds[i], "trace") ? ".json" : "");
    int wants_o = !strcmp(cmds[i], "trace") || !strcmp(cmds[i], "ctf");
    r = bare ? tool(dir, (const char *[]){cmds[i], pid_s, NULL})
        : wants_o
            ? tool(dir, (const char *[]){cmds[i], "-o", o, "--pid", pid_s,
                                         NULL})
            : tool(dir, (const char *[]){cmds[i], "--pid", pid_s, NULL});
    ck_assert_msg(er_exit_code(&r, "the tool") == 1, "%s: status %d: %s",
                  cmds[i], er_exit_code(&r, "the tool"), r.err);
    ck_assert_msg(!strcmp(r.err, want), "%s: %s", cmds[i], r.err);
    er_run_free(&r);
  }

  /* An OCaml 5 program's file can be read but not paused: such a file
   * under the live pid's name stands for one (no OCaml 5 runtime here). */
  char vec[PATH_MAX], named[PATH_MAX];
  if (!er_unpack_vector(dir, "ocaml54-basic", vec)) {
    kill(live, SIGKILL);
    er_wait_for(live, 10);
    ER_SKIP("EVENTRING_TEST_DATA is not set");
  }
  snprintf(named, sizeof named, "%s/%s.events", dir, pid_s);
  ck_assert_int_eq(rename(vec, named), 0);
  r = tool(dir, (const char *[]){"pause", "--dir", dir, pid_s, NULL});
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  er_assert_one_error(&r, "written by OCaml 5's runtime, which cannot be "
                          "paused or resumed from outside: pause needs a "
                          "program traced with eventring's runtime");
  er_run_free(&r);
  r = tool(dir, (const char *[]){"dump", "--time=raw", "--dir", dir, "--pid", pid_s, NULL});
  er_assert_status(&r, 0);
  er_run_free(&r);
  kill(live, SIGKILL);
  er_wait_for(live, 10);
}
END_TEST

/* Another user's traced process: as root, one is made with setpriv(1),
 * and looked for by a third user, who may not see its maps. */
START_TEST(test_other_users_process) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is off in this build");
  if (geteuid() != 0) ER_SKIP("needs root to run processes as other users");
  if (access("/usr/bin/setpriv", X_OK) != 0) ER_SKIP("no setpriv(1)");
  char dir[DIR_BYTES], out[DIR_BYTES];
  fresh_dir(dir);
  fresh_dir(out);
  ck_assert_int_eq(chmod(dir, 0777), 0);
  char dirvar[DIR_BYTES + 32], prog[PATH_MAX + 16], line[256], pid_s[32];
  char want[256];
  snprintf(dirvar, sizeof dirvar, "OCAML_RUNTIME_EVENTS_DIR=%s", dir);
  snprintf(prog, sizeof prog, "%s/mon_loop", er_env_dir("EVENTRING_TEST_PROGS"));
  char *argv[] = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                  "--clear-groups", prog, NULL};
  char *env[] = {"OCAML_RUNTIME_EVENTS_START=1", dirvar, NULL};
  struct er_pipe_proc p = er_pipe_start(argv, env, NULL);
  if (er_read_line(p.out, line, sizeof line, 10) != 0) {
    er_pipe_finish(&p, 10);
    ER_SKIP("mon_loop cannot run as uid 65534 here");
  }
  snprintf(pid_s, sizeof pid_s, "%ld", (long)pid_in(line));

  struct er_run r = er_run(
      out, "/usr/bin/setpriv",
      (const char *[]){"--reuid=65533", "--regid=65533", "--clear-groups",
                       er_tool_path(), "dump", "--pid", pid_s, NULL},
      NULL, 0);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  struct stat st;
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/%s", pid_s);
  ck_assert_int_eq(stat(proc, &st), 0);
  snprintf(want, sizeof want, "process %s (mon_loop) belongs to user ", pid_s);
  er_assert_one_error(&r, want);
  er_assert_one_error(&r, "only that user or root can find and read its "
                          "ring file");
  er_run_free(&r);
  /* Root may. */
  r = tool(out, (const char *[]){"dump", "--time=raw", "--pid", pid_s, NULL});
  er_assert_status(&r, 0);
  er_run_free(&r);
  ck_assert_int_eq(er_pipe_finish(&p, 10), 0);
}
END_TEST

static TCase *tc_find(void) {
  TCase *tc = er_tcase("find");
  tcase_add_test(tc, test_found_through_maps);
  tcase_add_test(tc, test_found_through_environment);
  tcase_add_test(tc, test_other_users_process);
  return tc;
}

static TCase *tc_follow(void) {
  TCase *tc = er_tcase("follow");
  tcase_add_test(tc, test_follow_waits_for_file);
  tcase_add_test(tc, test_follow_gives_up);
  tcase_add_test(tc, test_follow_times_out);
  tcase_add_test(tc, test_wait_usage);
  tcase_add_test(tc, test_follow_copy_of_dead_file);
  return tc;
}

static TCase *tc_errors(void) {
  TCase *tc = er_tcase("errors");
  tcase_add_test(tc, test_not_ring_files);
  tcase_add_test(tc, test_pid_errors);
  return tc;
}

ER_TEST_MAIN("find_ring", tc_find, tc_follow, tc_errors)
