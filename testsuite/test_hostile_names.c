/* Tests that the names a file or a process supplies (the program name, set with a hostile argv[0], thread, slot and event names, /proc/PID/comm) reach no subcommand's output raw: no control byte but the tool's own newlines and tabs, no ESC, no C1 control; valid UTF-8 shown as it is. */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "testlib.h"
#include "lat_craft.h"

/* The program name hostile_names runs under: an OSC that retitles the
 * terminal, a colour, a line break that forges a line, and a C1 CSI. */
#define HOSTILE_ARGV0 "\033]0;PWN\a\033[31mRED\r\nfake\xc2\x9b" "2J"
/* A program name in UTF-8 that must be shown as it is. */
#define UTF8_ARGV0 "caf\xc3\xa9-\xe2\x9c\x93"

/* Fails when `text` (`len` bytes, the output of `what`) holds a byte
 * below 0x20 other than a newline or a tab, DEL, or a C1 control
 * (U+0080..U+009F in UTF-8). */
static void assert_clean(const char *what, const char *text, size_t len) {
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)text[i];
    int bad = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ||
              (c == 0xc2 && i + 1 < len &&
               (unsigned char)text[i + 1] >= 0x80 &&
               (unsigned char)text[i + 1] <= 0x9f);
    ck_assert_msg(!bad, "%s: byte 0x%02x at offset %zu: %.*s", what, c, i,
                  (int)(len - i < 60 ? len - i : 60), text + i);
  }
}

/* Runs `args` with the tool, checks that it exits with `code` and both
 * its streams; `must_show` (when not NULL) must appear in one of them, so
 * that the check is not vacuous. */
static void run_clean(const char *dir, const char *const *args,
                      const char *must_show, int code) {
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, args[0]) == code,
                "eventring %s: exit %d, want %d; stderr: %s", args[0],
                er_exit_code(&r, args[0]), code, r.err);
  char what[128];
  snprintf(what, sizeof what, "eventring %s: stdout", args[0]);
  assert_clean(what, r.out, strlen(r.out));
  snprintf(what, sizeof what, "eventring %s: stderr", args[0]);
  assert_clean(what, r.err, strlen(r.err));
  if (must_show)
    ck_assert_msg(strstr(r.out, must_show) || strstr(r.err, must_show),
                  "eventring %s: no '%s' in\n%s\n%s", args[0], must_show,
                  r.out, r.err);
  er_run_free(&r);
}

/* Checks the text file at `path`, which must show `must_show`. */
static void file_clean(const char *path, const char *must_show) {
  size_t len;
  char *text = er_slurp(path, &len);
  assert_clean(path, text, len);
  ck_assert_msg(strstr(text, must_show), "%s: no '%s'", path, must_show);
  free(text);
}

/* Runs `CMD -o DIR/NAME INPUTS...` as run_clean() does (status 0,
 * `run_shows`), then checks the file it wrote, which must show
 * `file_shows` (when not NULL). */
static void clean_to_file(const char *dir, const char *cmd,
                          const char *const *inputs, const char *name,
                          const char *run_shows, const char *file_shows) {
  char out[PATH_MAX];
  snprintf(out, sizeof out, "%s/%s", dir, name);
  const char *args[8] = {cmd, "-o", out};
  int n = 3;
  for (; *inputs; inputs++) args[n++] = *inputs;
  args[n] = NULL;
  run_clean(dir, args, run_shows, 0);
  if (file_shows) file_clean(out, file_shows);
}

/* Runs hostile_names COUNT as `argv0` (exec -a) with tracing on into
 * `dir`, the file preserved, and OCAMLRUNPARAM `param` (or none).
 * Returns its ring file's path (malloc'd). */
static char *run_prog(const char *dir, const char *argv0, const char *count,
                      const char *param) {
  const char *prog = er_prog_path("hostile_names");
  ck_assert_ptr_nonnull(prog);
  char *path = strdup(prog);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    setenv("OCAML_RUNTIME_EVENTS_START", "1", 1);
    setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
    setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
    if (param) setenv("OCAMLRUNPARAM", param, 1);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    char *argv[] = {(char *)argv0, (char *)count, NULL};
    execv(path, argv);
    _exit(127);
  }
  int st = er_wait_for(pid, ER_RUN_TIMEOUT);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "hostile_names: status %d", st);
  free(path);
  char *file = malloc(PATH_MAX);
  er_ring_path_for(file, PATH_MAX, dir, pid);
  return file;
}

#define NEED_ALL()                                                         \
  do {                                                                     \
    ER_NEED_TOOL();                                                        \
    if (!er_prog_path("hostile_names")) ER_SKIP("no helper programs");     \
    if (er_tracing_off()) ER_SKIP("a build without tracing");              \
  } while (0)

/* One file: every subcommand that reads it. */
START_TEST(test_one_file) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  char *a = run_prog(dir, HOSTILE_ARGV0, "3", NULL);
  char *b = run_prog(dir, HOSTILE_ARGV0, "5", NULL);

  run_clean(dir, (const char *[]){"dump", a, NULL}, "PWN", 0);
  run_clean(dir, (const char *[]){"stats", a, NULL}, "PWN", 0);
  run_clean(dir, (const char *[]){"latency", a, NULL}, NULL, 0);
  run_clean(dir, (const char *[]){"diff", a, b, NULL}, "PWN", 0);

  clean_to_file(dir, "trace", (const char *[]){a, NULL}, "t.json", NULL,
                "PWN");
  clean_to_file(dir, "report", (const char *[]){a, NULL}, "r.html", NULL,
                "PWN");
  clean_to_file(dir, "snapshot", (const char *[]){a, NULL}, "s.events",
                "snapshot of \\027]0;PWN\\007", NULL);
  free(a);
  free(b);
}
END_TEST

/* A directory of processes (one of which lost events, so that the
 * readers print a line per process): the headers and messages that name
 * each process. */
START_TEST(test_directory) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  free(run_prog(dir, HOSTILE_ARGV0, "3", NULL));
  free(run_prog(dir, HOSTILE_ARGV0, "400", "e=6"));
  free(run_prog(dir, UTF8_ARGV0, "3", NULL));
  /* The UTF-8 name is shown as it is. */
  const char *utf8 = "(" UTF8_ARGV0 ")";

  run_clean(dir, (const char *[]){"stats", "--dir", dir, NULL}, utf8, 0);
  run_clean(dir, (const char *[]){"stats", "--dir", dir, NULL},
            "(\\027]0;PWN\\007\\027[31mRED\\013\\010fake\\194\\1552J)", 0);
  run_clean(dir, (const char *[]){"latency", "--dir", dir, NULL}, "PWN", 0);
  run_clean(dir, (const char *[]){"dump", "--dir", dir, NULL}, "PWN", 0);
  clean_to_file(dir, "trace", (const char *[]){"--dir", dir, NULL}, "t.json",
                "PWN", "PWN");
  clean_to_file(dir, "report", (const char *[]){"--dir", dir, NULL}, "r.html",
                "PWN", "PWN");
}
END_TEST

/* watch's log lines, for a command whose own name is hostile (a link so
 * named), and a trigger on an event whose name is. */
START_TEST(test_watch) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  char link[PATH_MAX];
  snprintf(link, sizeof link, "%s/" HOSTILE_ARGV0, dir);
  ck_assert_int_eq(symlink(er_prog_path("hostile_names"), link), 0);
  run_clean(dir,
            (const char *[]){"watch", "--when", "event:int\033[2J\n", "--out",
                             dir, "--", link, NULL},
            "in \\027]0;PWN\\007", 0);
  unlink(link);
}
END_TEST

/* The name of a live process (/proc/PID/comm), in the messages of the
 * subcommands that take --pid. */
START_TEST(test_comm) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  int ready[2];
  ck_assert_int_eq(pipe(ready), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_NAME, "PWN\033[31m\n\a");
    close(ready[0]);
    close(ready[1]); /* named: the test may look */
    for (;;) pause();
  }
  close(ready[1]);
  char c;
  ck_assert_int_eq(read(ready[0], &c, 1), 0);
  close(ready[0]);
  char spid[32];
  snprintf(spid, sizeof spid, "%ld", (long)pid);
  run_clean(dir, (const char *[]){"dump", "--pid", spid, NULL},
            "(PWN\\027[31m", 1);
  run_clean(dir, (const char *[]){"pause", "--pid", spid, NULL},
            "(PWN\\027[31m", 1);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}
END_TEST

/* Event names in UTF-8 in the HTML report and the JSON trace: a valid
 * one ("café ✓") as it is, not byte by byte; the bytes of an invalid
 * one (0xff, and 0xc3 without its continuation) escaped as \DDD, as the
 * terminal listings write them. */
START_TEST(test_utf8_names) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char path[PATH_MAX], out[PATH_MAX];
  snprintf(path, sizeof path, "%s/u.events", dir);
  struct craft c;
  craft_init(&c);
  craft_user_name(&c, 0, "caf\xc3\xa9 \xe2\x9c\x93");
  craft_user_name(&c, 1, "bad\xff\xc3(x");
  uint64_t ts = 1000000;
  craft_lifecycle(&c, 0, ts, EVENTRING_LIFECYCLE_RING_START, 42);
  for (int i = 0; i < 3; i++) {
    craft_user_unit(&c, 0, ts += 1000, 0);
    craft_user_unit(&c, 0, ts += 1000, 1);
  }
  craft_write(&c, path);
  craft_free(&c);

  snprintf(out, sizeof out, "%s/u.html", dir);
  run_clean(dir, (const char *[]){"report", "-o", out, path, NULL}, NULL, 0);
  file_clean(out, ">caf\xc3\xa9 \xe2\x9c\x93<");
  file_clean(out, ">bad\\255\\195(x<");
  char *page = er_slurp(out, NULL);
  ck_assert_ptr_null(strstr(page, "&#xc3;"));
  free(page);

  snprintf(out, sizeof out, "%s/u.json", dir);
  run_clean(dir, (const char *[]){"trace", "-o", out, path, NULL}, NULL, 0);
  file_clean(out, "\"name\":\"caf\xc3\xa9 \xe2\x9c\x93\"");
  file_clean(out, "\"name\":\"bad\\\\255\\\\195(x\"");
}
END_TEST

static TCase *tc_names(void) {
  TCase *tc = er_tcase("names");
  tcase_add_test(tc, test_one_file);
  tcase_add_test(tc, test_directory);
  tcase_add_test(tc, test_watch);
  tcase_add_test(tc, test_comm);
  tcase_add_test(tc, test_utf8_names);
  return tc;
}

ER_TEST_MAIN("hostile names", tc_names)
