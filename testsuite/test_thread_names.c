/* Thread and program names, as the files record them and as the
 * eventring command shows them: a main thread that names itself first
 * thing in main() (after tracing began in the library's constructor) is
 * recorded and shown under that name, the program under its own; a
 * program started through an exec is named after its own image; every
 * table that shows a domain shows its thread's name; --domain takes a
 * thread's name.  All on progs/named_threads, run for real. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventring.h"
#include "harness.h"
#include "testlib.h"

/* Runs named_threads (`args` after its name) traced, its file preserved
 * in `dir`; the file's path goes to `path` (PATH_MAX bytes). */
static void run_named(const char *dir, const char *const *args, char *path) {
  setenv("OCAML_RUNTIME_EVENTS_START", "1", 1);
  setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  const char *prog = er_prog_path("named_threads");
  struct er_run r = er_run(dir, prog, args, NULL, 0);
  ck_assert_msg(er_exit_code(&r, "named_threads") == 0, "%s", r.err);
  unsetenv("OCAML_RUNTIME_EVENTS_START");
  unsetenv("OCAML_RUNTIME_EVENTS_DIR");
  unsetenv("OCAML_RUNTIME_EVENTS_PRESERVE");
  er_run_free(&r);
  /* The one file of the directory. */
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, ".events")) {
      snprintf(path, PATH_MAX, "%s/%s", dir, e->d_name);
      n++;
    }
  closedir(d);
  ck_assert_int_eq(n, 1);
}

/* The name file `path` records for slot `domain` ("" when none). */
static void slot_name(const char *path, int domain, char *name) {
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
  eventring_slot_thread th;
  name[0] = '\0';
  if (eventring_cursor_slot_thread(c, domain, &th) == 1)
    snprintf(name, 24, "%s", th.name);
  eventring_cursor_free(c);
}

/* The number of occurrences of `needle` in `s`. */
static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

static struct er_run tool(const char *dir, const char *const *args) {
  return er_run_tool(dir, args, 0);
}

/* `trace -o OUT ARGS...`'s JSON trace. */
static char *trace_json(const char *dir, const char *const *args) {
  char out[PATH_MAX];
  snprintf(out, sizeof out, "%s/trace.json", dir);
  const char *a[16] = {"trace", "-o", out};
  int n = 3;
  for (; *args && n < 15; args++) a[n++] = *args;
  a[n] = NULL;
  struct er_run r = tool(dir, a);
  ck_assert_msg(er_exit_code(&r, "trace") == 0, "%s", r.err);
  er_run_free(&r);
  char *text = er_slurp(out, NULL);
  unlink(out);
  return text;
}

START_TEST(test_main_thread_named) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  const char *dir = er_tmpdir();
  char path[PATH_MAX], name[24];
  run_named(dir, (const char *[]){NULL}, path);
  /* The main thread took slot 0 before main() ran, under the program's
   * name; the file has the name it gave itself since. */
  slot_name(path, 0, name);
  ck_assert_str_eq(name, "main-loop");
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
  ck_assert_str_eq(eventring_cursor_program(c), "named_threads");
  eventring_cursor_free(c);
  char *json = trace_json(dir, (const char *[]){path, NULL});
  ck_assert_msg(strstr(json, "\"name\":\"main-loop (domain 0)\""), "%.400s", json);
  ck_assert_msg(strstr(json, "\"process_name\",\"pid\":") &&
                    strstr(json, "\"args\":{\"name\":\"named_threads\"}"),
                "%.400s", json);
  ck_assert_int_eq(count(json, "\"name\":\"worker (domain "), 2);
  ck_assert_int_eq(count(json, "\"name\":\"io (domain "), 1);
  free(json);
}
END_TEST

/* `trace -- COMMAND`: the program is named after the image that wrote
 * the file, not after the command's first word, and its main thread
 * after its own name. */
START_TEST(test_exec_named_after_image) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  const char *dir = er_tmpdir();
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "exec %s", er_prog_path("named_threads"));
  char *json = trace_json(dir, (const char *[]){"--", "sh", "-c", cmd, NULL});
  ck_assert_msg(strstr(json, "\"args\":{\"name\":\"named_threads\"}"), "%.400s",
                json);
  ck_assert_msg(!strstr(json, "\"args\":{\"name\":\"sh\"}"), "%.400s", json);
  ck_assert_msg(strstr(json, "\"name\":\"main-loop (domain 0)\""), "%.400s", json);
  free(json);
  /* A fork and an exec: each process under its own program. */
  char named[PATH_MAX], chatty[PATH_MAX];
  snprintf(named, sizeof named, "%s", er_prog_path("named_threads"));
  snprintf(chatty, sizeof chatty, "%s", er_prog_path("chatty"));
  json = trace_json(dir, (const char *[]){"--", named, "exec", chatty, NULL});
  ck_assert_msg(strstr(json, "\"args\":{\"name\":\"named_threads\"}"), "%.400s",
                json);
  ck_assert_msg(strstr(json, "\"args\":{\"name\":\"chatty\"}"), "%.400s", json);
  ck_assert_msg(strstr(json, "\"name\":\"chatty (domain 0)\""), "%.400s", json);
  free(json);
}
END_TEST

/* --domain NAME: every domain whose thread has the name (or matches the
 * glob), numbers and names mixed; an unknown name is a usage error that
 * lists the names there are. */
START_TEST(test_domain_by_name) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  run_named(dir, (const char *[]){NULL}, path);
  /* Which slots the workers took is the scheduler's business. */
  int worker[2], nw = 0, io = -1;
  for (int d = 1; d <= 3; d++) {
    char name[24];
    slot_name(path, d, name);
    if (!strcmp(name, "worker") && nw < 2) worker[nw++] = d;
    else if (!strcmp(name, "io")) io = d;
  }
  ck_assert_int_eq(nw, 2);
  ck_assert_int_ge(io, 1);
  char want[2][32], ioline[32];
  for (int i = 0; i < 2; i++)
    snprintf(want[i], sizeof want[i], "domain=%d ", worker[i]);
  snprintf(ioline, sizeof ioline, "domain=%d ", io);

  /* Both workers' domains: 10 ints, domain_spawn and domain_terminate
   * each. */
  struct er_run r = tool(dir, (const char *[]){"dump", "--domain", "worker",
                                               path, NULL});
  ck_assert_msg(er_exit_code(&r, "dump") == 0, "%s", r.err);
  ck_assert_int_eq(count(r.out, want[0]), 12);
  ck_assert_int_eq(count(r.out, want[1]), 12);
  ck_assert_int_eq(count(r.out, "domain="), 24);
  er_run_free(&r);

  /* A name and a number; a glob. */
  r = tool(dir, (const char *[]){"dump", "--domain", "io,0", path, NULL});
  ck_assert_msg(er_exit_code(&r, "dump") == 0, "%s", r.err);
  ck_assert_int_eq(count(r.out, ioline), 12);
  ck_assert_int_gt(count(r.out, "domain=0 "), 0);
  ck_assert_int_eq(count(r.out, "domain="),
                   12 + count(r.out, "domain=0 "));
  er_run_free(&r);
  r = tool(dir, (const char *[]){"dump", "--domain", "main-*", path, NULL});
  ck_assert_msg(er_exit_code(&r, "dump") == 0, "%s", r.err);
  ck_assert_int_gt(count(r.out, "domain=0 "), 0);
  ck_assert_int_eq(count(r.out, "domain="), count(r.out, "domain=0 "));
  er_run_free(&r);

  /* Unknown: exit 2, the names there are. */
  r = tool(dir, (const char *[]){"stats", "--domain", "nope", path, NULL});
  ck_assert_int_eq(er_exit_code(&r, "stats"), 2);
  /* Each name once, in the order of the slots (the workers' is the
   * scheduler's). */
  er_assert_one_error(&r, "no thread named 'nope' (threads: 'main-loop', ");
  ck_assert_int_eq(count(r.err, "'worker'"), 1);
  ck_assert_int_eq(count(r.err, "'io'"), 1);
  ck_assert_str_eq(r.out, "");
  er_run_free(&r);

  /* A command's threads come later: the name is looked for until it
   * ends, then refused the same way; a known one is found. */
  char named[PATH_MAX];
  snprintf(named, sizeof named, "%s", er_prog_path("named_threads"));
  r = tool(dir, (const char *[]){"stats", "--domain", "nope", "--", named,
                                 NULL});
  ck_assert_int_eq(er_exit_code(&r, "stats"), 2);
  er_assert_one_error(&r, "no thread named 'nope' (threads: 'main-loop', ");
  er_run_free(&r);
  r = tool(dir, (const char *[]){"dump", "--domain", "io", "--", named, NULL});
  ck_assert_msg(er_exit_code(&r, "dump") == 0, "%s", r.err);
  /* The listing goes to stderr with a command. */
  ck_assert_int_eq(count(r.err, "name=named.n "), 10);
  er_run_free(&r);
}
END_TEST

/* stats shows each domain with its thread's name, in text and JSON. */
START_TEST(test_stats_names) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  run_named(dir, (const char *[]){NULL}, path);
  struct er_run r = tool(dir, (const char *[]){"stats", path, NULL});
  ck_assert_msg(er_exit_code(&r, "stats") == 0, "%s", r.err);
  /* The GC table and the events table. */
  ck_assert_int_eq(count(r.out, "\n  domain 0 (main-loop) "), 2);
  ck_assert_int_eq(count(r.out, " (worker) "), 4);
  ck_assert_int_eq(count(r.out, " (io) "), 2);
  er_run_free(&r);
  r = tool(dir, (const char *[]){"stats", "--json", path, NULL});
  ck_assert_msg(er_exit_code(&r, "stats") == 0, "%s", r.err);
  ck_assert_int_eq(count(r.out, "{\"domain\": 0, \"thread\": \"main-loop\", "),
                   2);
  er_run_free(&r);
}
END_TEST

static TCase *tc_names(void) {
  TCase *tc = er_tcase("names");
  tcase_add_test(tc, test_main_thread_named);
  tcase_add_test(tc, test_exec_named_after_image);
  tcase_add_test(tc, test_domain_by_name);
  tcase_add_test(tc, test_stats_names);
  return tc;
}

ER_TEST_MAIN("thread_names", tc_names)
