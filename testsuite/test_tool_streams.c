/* Tests that a program run by `eventring SUBCOMMAND -- CMD` keeps its standard output and error, that the report goes to standard error or -o FILE and never to the program's streams, trace's format and terminal rules, and the one wording of an unknown option. */
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "jsonc.h"
#include "testlib.h"

/* What testsuite/progs/chatty.c writes to each stream. */
static const char chatty_out[] =
    "chatty: stdout 1\nchatty: stdout 2\nchatty: stdout 3\n";
static const char chatty_err[] =
    "chatty: stderr 1\nchatty: stderr 2\nchatty: stderr 3\n";

#define NEED_CHATTY()                                                      \
  do {                                                                     \
    ER_NEED_TOOL();                                                        \
    if (!er_prog_path("chatty")) ER_SKIP("no helper programs");            \
    if (er_tracing_off()) ER_SKIP("a build without tracing");              \
  } while (0)

/* er_prog_path() is overwritten by its next call: a copy. */
static const char *chatty(void) {
  static char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", er_prog_path("chatty"));
  return path;
}

/* Runs the tool with `args` (NULL-terminated, without argv[0]) in `dir`,
 * its private directory there too, stdout and stderr captured apart. */
static struct er_run run(const char *dir, const char *const *args) {
  setenv("TMPDIR", dir, 1);
  return er_run_tool(dir, args, 0);
}

/* ------------------------------------------------------------------ */
/* Reading reports.                                                     */

/* `text` is exactly one JSON object (strictly parsed, whitespace
 * after it allowed).  Without json-c: it begins with '{' and ends with
 * "}\n", which is weaker but still fails on a line mixed into it. */
static void check_json(const char *text, const char *what) {
  const struct er_jc *jc = er_jc();
  size_t n = strlen(text);
  if (!jc) {
    ck_assert_msg(n >= 2 && text[0] == '{' && !strcmp(text + n - 2, "}\n"),
                  "%s: not a JSON object: [%s]", what, text);
    return;
  }
  void *tok = jc->tokener_new();
  ck_assert_ptr_nonnull(tok);
  jc->tokener_set_flags(tok, ER_JC_STRICT);
  void *root = jc->tokener_parse_ex(tok, text, (int)n);
  ck_assert_msg(root && jc->tokener_get_error(tok) == 0,
                "%s: not valid JSON: [%s]", what, text);
  for (size_t i = jc->tokener_get_parse_end(tok); i < n; i++)
    ck_assert_msg(strchr(" \t\r\n", text[i]) != NULL,
                  "%s: bytes after the JSON document: [%s]", what, text);
  ck_assert_int_eq(jc->object_get_type(root), ER_JC_OBJECT);
  jc->object_put(root);
  jc->tokener_free(tok);
}

/* `text` is a dump listing of chatty: event lines, then one SUMMARY
 * line whose total counts them, chatty's three ints among them. */
static void check_dump(const char *text, const char *what) {
  struct er_lines l = er_lines_split(text);
  ck_assert_msg(l.n >= 2, "%s: no listing: [%s]", what, text);
  size_t events = 0;
  for (size_t i = 0; i + 1 < l.n; i++) {
    ck_assert_msg(!strncmp(l.v[i], "domain=", 7), "%s: stray line: %s", what,
                  l.v[i]);
    events += strstr(l.v[i], " ts=") != NULL;
  }
  ck_assert_msg(!strncmp(l.v[l.n - 1], "SUMMARY total=", 14),
                "%s: the last line is not the summary: %s", what,
                l.v[l.n - 1]);
  ck_assert_uint_eq(er_field(l.v[l.n - 1], "total"), events);
  for (int i = 1; i <= 3; i++) {
    char want[64];
    snprintf(want, sizeof want, "kind=user_int name=chatty.n value=%d\n", i);
    ck_assert_msg(strstr(text, want) != NULL, "%s: no %s", what, want);
  }
  er_lines_free(&l);
}

enum report { R_DUMP, R_STATS, R_LATENCY, R_JSON };

static void check_report(enum report kind, const char *text,
                         const char *what) {
  switch (kind) {
  case R_DUMP: check_dump(text, what); break;
  case R_STATS:
    ck_assert_msg(!strncmp(text, "wall time: ", 11), "%s: [%s]", what, text);
    break;
  case R_LATENCY:
    ck_assert_msg(!strncmp(text, "GC pauses: 0 ", 13), "%s: [%s]", what,
                  text);
    break;
  case R_JSON: check_json(text, what); break;
  }
}

/* The file at `path` is a Fuchsia trace: whole words, the magic number
 * record first. */
static void check_fxt(const char *path) {
  size_t n;
  char *b = er_slurp(path, &n);
  uint64_t magic = 0;
  if (n >= 8) memcpy(&magic, b, 8);
  ck_assert_msg(n >= 16 && n % 8 == 0 && magic == 0x0016547846040010ull,
                "%s: not a Fuchsia trace (%zu bytes)", path, n);
  free(b);
}

/* Takes chatty's lines out of `err` (the tool's stderr) and returns the
 * rest, the report (malloc'd); chatty's lines must all be there, in
 * order, each whole. */
static char *strip_chatty(const char *err) {
  struct er_lines l = er_lines_split(err);
  char *rest = calloc(1, strlen(err) + 1);
  ck_assert_ptr_nonnull(rest);
  char seen[sizeof chatty_err] = "";
  for (size_t i = 0; i < l.n; i++) {
    if (!strncmp(l.v[i], "chatty: ", 8)) {
      strcat(seen, l.v[i]);
      strcat(seen, "\n");
    } else {
      strcat(rest, l.v[i]);
      strcat(rest, "\n");
    }
  }
  ck_assert_str_eq(seen, chatty_err);
  er_lines_free(&l);
  return rest;
}

/* ------------------------------------------------------------------ */
/* Every subcommand that writes a report, on a program that talks.      */

static const struct {
  const char *args[3]; /* the subcommand and its options */
  enum report kind;
} reports[] = {
    {{"dump", "--time=raw"}, R_DUMP},
    {{"stats"}, R_STATS},
    {{"stats", "--json"}, R_JSON},
    {{"latency"}, R_LATENCY},
    {{"latency", "--json"}, R_JSON},
};
#define N_REPORTS (sizeof reports / sizeof reports[0])

/* `args` of reports[i], then `extra` (NULL-terminated), then -- chatty. */
static struct er_run run_report(const char *dir, size_t i,
                                const char *const *extra) {
  const char *args[16];
  int n = 0;
  for (int k = 0; k < 3 && reports[i].args[k]; k++)
    args[n++] = reports[i].args[k];
  for (; extra && *extra; extra++) args[n++] = *extra;
  args[n++] = "--";
  args[n++] = chatty();
  args[n] = NULL;
  return run(dir, args);
}

static void what_of(char *buf, size_t i, const char *how) {
  snprintf(buf, 128, "%s%s%s %s", reports[i].args[0],
           reports[i].args[1] ? " " : "",
           reports[i].args[1] ? reports[i].args[1] : "", how);
}

/* Without -o: the program's stdout is its own, the report on stderr
 * beside the program's stderr lines. */
START_TEST(test_report_on_stderr) {
  NEED_CHATTY();
  const char *dir = er_tmpdir();
  size_t i = (size_t)_i;
  char what[128];
  what_of(what, i, "-- chatty");
  struct er_run r = run_report(dir, i, NULL);
  ck_assert_msg(er_exit_code(&r, what) == 0, "%s: %s", what, r.err);
  ck_assert_str_eq(r.out, chatty_out);
  char *report = strip_chatty(r.err);
  check_report(reports[i].kind, report, what);
  free(report);
  er_run_free(&r);
}
END_TEST

/* With -o FILE: both of the program's streams are its own, whole. */
START_TEST(test_report_to_file) {
  NEED_CHATTY();
  const char *dir = er_tmpdir();
  size_t i = (size_t)_i;
  char what[128], path[PATH_MAX];
  what_of(what, i, "-o FILE -- chatty");
  snprintf(path, sizeof path, "%s/report.txt", dir);
  /* A longer file is truncated, not overwritten in part. */
  er_write_text(path, "old content that is longer than nothing\n", 1);
  struct er_run r = run_report(dir, i, (const char *[]){"-o", path, NULL});
  ck_assert_msg(er_exit_code(&r, what) == 0, "%s: %s", what, r.err);
  ck_assert_str_eq(r.out, chatty_out);
  ck_assert_str_eq(r.err, chatty_err);
  char *report = er_slurp(path, NULL);
  check_report(reports[i].kind, report, what);
  free(report);
  er_run_free(&r);

  /* --output is the same option. */
  r = run_report(dir, i, (const char *[]){"--output", path, NULL});
  ck_assert_int_eq(er_exit_code(&r, what), 0);
  ck_assert_str_eq(r.out, chatty_out);
  ck_assert_str_eq(r.err, chatty_err);
  report = er_slurp(path, NULL);
  check_report(reports[i].kind, report, what);
  free(report);
  er_run_free(&r);
}
END_TEST

/* -o - with a command: a usage error, and the command is not run. */
START_TEST(test_dash_with_command) {
  NEED_CHATTY();
  const char *dir = er_tmpdir();
  size_t i = (size_t)_i;
  struct er_run r = run_report(dir, i, (const char *[]){"-o", "-", NULL});
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
  er_assert_one_error(&r, "-o - would mix the report with the command's "
                          "standard output");
  ck_assert_str_eq(r.out, "");
  er_run_free(&r);
}
END_TEST

/* trace to .json and .fxt (by -o and by the old operand), and ctf. */
START_TEST(test_trace_and_ctf) {
  NEED_CHATTY();
  const char *dir = er_tmpdir();
  char json[PATH_MAX], fxt[PATH_MAX], ctf[PATH_MAX], meta[PATH_MAX];
  snprintf(json, sizeof json, "%s/t.json", dir);
  snprintf(fxt, sizeof fxt, "%s/t.fxt", dir);
  snprintf(ctf, sizeof ctf, "%s/ctf", dir);
  snprintf(meta, sizeof meta, "%s/ctf/metadata", dir);
  const char *const runs[][8] = {
      {"trace", "-o", json, "--"},
      {"trace", "--output", fxt, "--"},
      {"trace", "--format", "json", "-o", json, "--"},
      {"trace", "-o", fxt, "--"},
      {"ctf", "-o", ctf, "--"},
  };
  for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
    unlink(json);
    unlink(fxt);
    const char *args[8];
    int n = 0;
    for (; runs[k][n]; n++) args[n] = runs[k][n];
    args[n++] = chatty();
    args[n] = NULL;
    struct er_run r = run(dir, args);
    ck_assert_msg(er_exit_code(&r, "the tool") == 0, "run %zu: %s", k, r.err);
    ck_assert_str_eq(r.out, chatty_out);
    ck_assert_str_eq(r.err, chatty_err);
    er_run_free(&r);
    if (k == 4) {
      char *m = er_slurp(meta, NULL);
      ck_assert_msg(!strncmp(m, "/* CTF 1.8", 10), "metadata: %.40s", m);
      free(m);
    } else if (access(json, F_OK) == 0) {
      char *t = er_slurp(json, NULL);
      check_json(t, json);
      free(t);
    } else {
      check_fxt(fxt);
    }
  }
}
END_TEST

/* metrics serves its report over HTTP: the program's streams are its
 * own, with the "serving" line beside its stderr. */
START_TEST(test_metrics) {
  NEED_CHATTY();
  const char *dir = er_tmpdir();
  struct er_run r = run(dir, (const char *[]){"metrics", "--listen",
                                              "127.0.0.1:0", "--", chatty(),
                                              NULL});
  if (strstr(r.err, "without libmicrohttpd")) {
    er_run_free(&r);
    ER_SKIP("eventring built without libmicrohttpd");
  }
  ck_assert_msg(er_exit_code(&r, "the tool") == 0, "%s", r.err);
  ck_assert_str_eq(r.out, chatty_out);
  char *rest = strip_chatty(r.err);
  ck_assert_msg(!strncmp(rest, "eventring: serving metrics on http://", 37),
                "%s", rest);
  free(rest);
  er_run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* -o FILE that is the command's own stream.                            */

/* Runs the tool with stdout and stderr on `out_fd` and `err_fd`; returns
 * its exit code. */
static int run_fds(const char *dir, const char *const *args, int out_fd,
                   int err_fd) {
  char *argv[16] = {(char *)er_tool_path()};
  int n = 1;
  for (; *args; args++) argv[n++] = (char *)*args;
  argv[n] = NULL;
  setenv("TMPDIR", dir, 1);
  pid_t pid = er_spawn(argv, ER_FD_NULL, out_fd, err_fd, NULL, 0);
  int st = er_wait_for(pid, ER_RUN_TIMEOUT);
  ck_assert_msg(st != -1 && WIFEXITED(st), "the tool: status %d", st);
  return WEXITSTATUS(st);
}

START_TEST(test_same_file) {
  NEED_CHATTY();
  const char *dir = er_tmpdir();
  char out[PATH_MAX], err[PATH_MAX], json[PATH_MAX];
  snprintf(out, sizeof out, "%s/out.txt", dir);
  snprintf(err, sizeof err, "%s/err.json", dir);
  snprintf(json, sizeof json, "%s/out.json", dir);
  er_write_text(out, "kept\n", 1);
  er_write_text(err, "", 1);
  er_write_text(json, "kept\n", 1);
  int ofd = open(out, O_WRONLY | O_APPEND | O_CLOEXEC);
  int efd = open(err, O_WRONLY | O_APPEND | O_CLOEXEC);
  ck_assert_int_ge(ofd, 0);
  ck_assert_int_ge(efd, 0);

  /* The command's stdout, given by name: refused, and not truncated. */
  ck_assert_int_eq(run_fds(dir, (const char *[]){"dump", "--time=raw", "-o", out, "--",
                                                 chatty(), NULL},
                           ofd, efd),
                   2);
  er_assert_content(out, "kept\n");
  char *e = er_slurp(err, NULL);
  ck_assert_msg(strstr(e, "is the command's standard output") &&
                    !strstr(e, "chatty:"),
                "stderr: %s", e);
  free(e);

  /* The command's stderr. */
  er_write_text(err, "", 0);
  ck_assert_int_eq(run_fds(dir, (const char *[]){"latency", "--json", "-o",
                                                 err, "--", chatty(), NULL},
                           ofd, efd),
                   2);
  e = er_slurp(err, NULL);
  ck_assert_msg(strstr(e, "is the command's standard error") &&
                    !strstr(e, "chatty:"),
                "stderr: %s", e);
  free(e);
  er_assert_content(out, "kept\n");

  /* trace, which writes beside its file and renames, checks as well:
   * the rename would leave the program writing to a deleted file. */
  int jfd = open(json, O_WRONLY | O_APPEND | O_CLOEXEC);
  ck_assert_int_ge(jfd, 0);
  er_write_text(err, "", 0);
  ck_assert_int_eq(run_fds(dir, (const char *[]){"trace", "-o", json, "--",
                                                 chatty(), NULL},
                           jfd, efd),
                   2);
  er_assert_content(json, "kept\n");
  close(jfd);

  /* A pipe, through /dev/stdout. */
  int p[2];
  ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
  er_write_text(err, "", 0);
  ck_assert_int_eq(run_fds(dir, (const char *[]){"stats", "-o",
                                                 "/dev/stdout", "--",
                                                 chatty(), NULL},
                           p[1], efd),
                   2);
  close(p[1]);
  char buf[64];
  ck_assert_int_eq(read(p[0], buf, sizeof buf), 0);
  close(p[0]);
  e = er_slurp(err, NULL);
  ck_assert_msg(strstr(e, "is the command's standard output"), "stderr: %s",
                e);
  free(e);
  close(ofd);
  close(efd);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Without a command.                                                   */

/* Runs chatty traced into `dir`, its file kept; its path into `path`. */
static void make_ring(const char *dir, char *path) {
  setenv("OCAML_RUNTIME_EVENTS_START", "1", 1);
  setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  struct er_run r = er_run(dir, chatty(), (const char *[]){NULL}, NULL, 0);
  unsetenv("OCAML_RUNTIME_EVENTS_START");
  unsetenv("OCAML_RUNTIME_EVENTS_DIR");
  unsetenv("OCAML_RUNTIME_EVENTS_PRESERVE");
  ck_assert_int_eq(er_exit_code(&r, "chatty"), 0);
  er_run_free(&r);
  ck_assert_int_eq(er_count_entries(dir, ".events"), 1);
  struct dirent *e;
  DIR *d = opendir(dir);
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, ".events"))
      snprintf(path, PATH_MAX, "%s/%s", dir, e->d_name);
  closedir(d);
}

START_TEST(test_file_source) {
  NEED_CHATTY();
  const char *dir = er_tmpdir();
  char ring[PATH_MAX], out[PATH_MAX];
  make_ring(dir, ring);
  snprintf(out, sizeof out, "%s/listing.txt", dir);

  /* -o - is standard output, as no -o is. */
  struct er_run r = run(dir, (const char *[]){"dump", "--time=raw", "-o", "-", ring, NULL});
  er_assert_status(&r, 0);
  check_dump(r.out, "dump -o -");
  er_run_free(&r);

  r = run(dir, (const char *[]){"dump", "--time=raw", "-o", out, ring, NULL});
  er_assert_status(&r, 0);
  ck_assert_str_eq(r.out, "");
  char *t = er_slurp(out, NULL);
  check_dump(t, "dump -o FILE");
  free(t);
  er_run_free(&r);

  r = run(dir, (const char *[]){"latency", "--json", "--output", out, ring,
                                NULL});
  er_assert_status(&r, 0);
  ck_assert_str_eq(r.out, "");
  t = er_slurp(out, NULL);
  check_json(t, "latency --json --output FILE");
  free(t);
  er_run_free(&r);

  /* The ring file itself is refused before it is truncated. */
  struct stat before, after;
  ck_assert_int_eq(stat(ring, &before), 0);
  r = run(dir, (const char *[]){"stats", "--json", "-o", ring, ring, NULL});
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
  er_assert_one_error(&r, "is the ring file being read");
  er_run_free(&r);
  ck_assert_int_eq(stat(ring, &after), 0);
  ck_assert_int_eq(after.st_size, before.st_size);
  r = run(dir, (const char *[]){"dump", "--time=raw", ring, NULL});
  er_assert_status(&r, 0);
  check_dump(r.out, "dump after the refusal");
  er_run_free(&r);

  /* A directory cannot take a report. */
  r = run(dir, (const char *[]){"stats", "-o", dir, ring, NULL});
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  er_assert_one_error(&r, dir);
  er_run_free(&r);

  /* A CTF trace is a directory: never standard output. */
  r = run(dir, (const char *[]){"ctf", "-o", "-", ring, NULL});
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
  er_assert_one_error(&r, "directory");
  er_run_free(&r);
}
END_TEST

/* trace's format: from the extension, or --format, never contradicting
 * each other. */
START_TEST(test_trace_formats) {
  NEED_CHATTY();
  const char *dir = er_tmpdir();
  char ring[PATH_MAX], txt[PATH_MAX], fxt[PATH_MAX], bin[PATH_MAX],
      json[PATH_MAX];
  make_ring(dir, ring);
  snprintf(txt, sizeof txt, "%s/t.txt", dir);
  snprintf(fxt, sizeof fxt, "%s/t.fxt", dir);
  snprintf(bin, sizeof bin, "%s/t.bin", dir);
  snprintf(json, sizeof json, "%s/t.json", dir);
  const struct {
    const char *args[8];
    const char *error; /* NULL: success */
  } cases[] = {
      {{"trace", "-o", txt, ring}, "cannot tell the format of"},
      {{"trace", txt, ring}, "no output file given"},
      {{"trace", "-o", "-", ring}, "standard output needs --format"},
      {{"trace", "--format", "json", "-o", fxt, ring},
       "--format json does not match the extension of"},
      {{"trace", "--format", "fuchsia", "-o", json, ring},
       "--format fuchsia does not match the extension of"},
      {{"trace", "--format", "fuchsia", "-o", bin, ring}, NULL},
      {{"trace", "--format", "json", "-o", txt, ring}, NULL},
      {{"trace", "-o", fxt, ring}, NULL},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    if (cases[k].error) unlink(txt);
    struct er_run r = run(dir, cases[k].args);
    if (cases[k].error) {
      ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
      er_assert_one_error(&r, cases[k].error);
      ck_assert_int_ne(access(txt, F_OK), 0);
    } else {
      er_assert_status(&r, 0);
    }
    er_run_free(&r);
  }
  check_fxt(bin);
  check_fxt(fxt);
  char *t = er_slurp(txt, NULL);
  check_json(t, "trace --format json -o t.txt");
  free(t);

  /* -o - with --format: standard output, when not a terminal. */
  struct er_run r =
      run(dir, (const char *[]){"trace", "--format", "json", "-o", "-", ring,
                                NULL});
  er_assert_status(&r, 0);
  check_json(r.out, "trace --format json -o -");
  er_run_free(&r);
}
END_TEST

/* A binary trace is never written to a terminal: neither standard
 * output on one nor a terminal named by -o.  JSON is text and goes. */
START_TEST(test_terminal) {
  NEED_CHATTY();
  const char *dir = er_tmpdir();
  char ring[PATH_MAX], err[PATH_MAX];
  make_ring(dir, ring);
  snprintf(err, sizeof err, "%s/err.txt", dir);
  int master, slave;
  char name[PATH_MAX];
  if (openpty(&master, &slave, name, NULL, NULL) < 0)
    ER_SKIP("no pseudo-terminal (openpty)");
  fcntl(master, F_SETFD, FD_CLOEXEC);
  fcntl(slave, F_SETFD, FD_CLOEXEC);

  const char *const cases[][8] = {
      {"trace", "--format", "fuchsia", "-o", "-", ring},
      {"trace", "--format", "fuchsia", "-o", "-"},
      {"trace", "--format", "fuchsia", "-o", name, ring},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int efd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ck_assert_int_ge(efd, 0);
    const char *args[8];
    int n = 0;
    for (; cases[k][n]; n++) args[n] = cases[k][n];
    if (k == 1) args[n++] = ring;
    args[n] = NULL;
    ck_assert_int_eq(run_fds(dir, args, slave, efd), 2);
    close(efd);
    struct er_run r = {0, strdup(""), er_slurp(err, NULL)};
    er_assert_one_error(&r, "will not write a binary trace to a terminal "
                            "(give -o FILE, or redirect standard output)");
    er_run_free(&r);
  }

  /* JSON to the terminal: the tool runs while we drain the master. */
  char *argv[] = {(char *)er_tool_path(), "trace", "--format", "json", "-o",
                  "-", ring, NULL};
  pid_t pid = er_spawn(argv, ER_FD_NULL, slave, ER_FD_NULL, NULL, 0);
  close(slave);
  size_t got = 0;
  char buf[4096];
  int st = -1;
  double deadline = er_now() + ER_RUN_TIMEOUT;
  for (;;) {
    struct pollfd pfd = {master, POLLIN, 0};
    if (poll(&pfd, 1, 50) == 1) {
      ssize_t m = read(master, buf, sizeof buf);
      if (m > 0) got += (size_t)m;
    }
    if (waitpid(pid, &st, WNOHANG) == pid) break;
    ck_assert_msg(er_now() < deadline, "trace to a terminal did not end");
  }
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
  ck_assert_uint_gt(got, 0);
  close(master);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Unknown options: one wording whatever the spelling.                  */

static void expect_usage(const char *dir, const char *const *args,
                         const char *want) {
  struct er_run r = run(dir, args);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
  ck_assert_str_eq(r.err, want);
  ck_assert_str_eq(r.out, "");
  er_run_free(&r);
}

START_TEST(test_unknown_options) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  const char *subs[] = {"dump",    "stats", "latency", "trace",
                        "ctf",     "pause", "resume",  "metrics"};
  const char *const spellings[][2] = {
      {"-x", "-x"},         {"--bogus", "--bogus"}, {"--bogus=1", "--bogus"},
      {"-fx", "-x"},        {"-xf", "-x"},
  };
  char want[256];
  for (size_t s = 0; s < sizeof subs / sizeof subs[0]; s++) {
    if (!strcmp(subs[s], "metrics")) {
      struct er_run r = run(dir, (const char *[]){"metrics", "-x", NULL});
      int without = strstr(r.err, "without libmicrohttpd") != NULL;
      er_run_free(&r);
      if (without) continue;
    }
    int no_f = !strcmp(subs[s], "pause") || !strcmp(subs[s], "resume") ||
               !strcmp(subs[s], "metrics");
    for (size_t k = 0; k < sizeof spellings / sizeof spellings[0]; k++) {
      /* -f is --follow, which pause, resume and metrics do not take:
       * there the unknown letter is the first one, f. */
      const char *name = spellings[k][1];
      if (no_f && spellings[k][0][1] == 'f') name = "-f";
      snprintf(want, sizeof want,
               "eventring: unknown option '%s' (see 'eventring %s --help')\n",
               name, subs[s]);
      expect_usage(dir, (const char *[]){subs[s], spellings[k][0], "x", NULL},
                   want);
    }
  }
  /* Commands that write nothing take no -o. */
  for (int pause = 0; pause < 2; pause++) {
    const char *sub = pause ? "pause" : "resume";
    snprintf(want, sizeof want,
             "eventring: unknown option '-o' (see 'eventring %s --help')\n",
             sub);
    expect_usage(dir, (const char *[]){sub, "-o", "f", "1", NULL}, want);
    snprintf(want, sizeof want,
             "eventring: unknown option '--output' (see 'eventring %s "
             "--help')\n",
             sub);
    expect_usage(dir, (const char *[]){sub, "--output=f", "1", NULL}, want);
  }
  /* The command's own options. */
  const char *global = "(see 'eventring --help')\n";
  snprintf(want, sizeof want, "eventring: unknown option '-x' %s", global);
  expect_usage(dir, (const char *[]){"-x", NULL}, want);
  snprintf(want, sizeof want, "eventring: unknown option '--bogus' %s",
           global);
  expect_usage(dir, (const char *[]){"--bogus", NULL}, want);
  expect_usage(dir, (const char *[]){"--bogus=1", NULL}, want);
  snprintf(want, sizeof want,
           "eventring: option '--help' takes no argument ('--help=1') %s",
           global);
  expect_usage(dir, (const char *[]){"--help=1", NULL}, want);

  /* Misused options are named precisely. */
  expect_usage(dir, (const char *[]){"latency", "--json=3", "x", NULL},
               "eventring: option '--json' takes no argument ('--json=3') "
               "(see 'eventring latency --help')\n");
  expect_usage(dir, (const char *[]){"dump", "--output", NULL},
               "eventring: option '--output' needs an argument (see "
               "'eventring dump --help')\n");
  expect_usage(dir, (const char *[]){"dump", "-o", NULL},
               "eventring: option '-o' needs an argument (see 'eventring "
               "dump --help')\n");
  expect_usage(dir, (const char *[]){"trace", "--fo", "x", NULL},
               "eventring: ambiguous option '--fo' (2 options begin so; "
               "spell it out) (see 'eventring trace --help')\n");
}
END_TEST

static TCase *tc_command(void) {
  TCase *tc = er_tcase("command");
  tcase_add_loop_test(tc, test_report_on_stderr, 0, N_REPORTS);
  tcase_add_loop_test(tc, test_report_to_file, 0, N_REPORTS);
  tcase_add_loop_test(tc, test_dash_with_command, 0, N_REPORTS);
  tcase_add_test(tc, test_trace_and_ctf);
  tcase_add_test(tc, test_metrics);
  tcase_add_test(tc, test_same_file);
  return tc;
}

static TCase *tc_file(void) {
  TCase *tc = er_tcase("file");
  tcase_add_test(tc, test_file_source);
  tcase_add_test(tc, test_trace_formats);
  tcase_add_test(tc, test_terminal);
  return tc;
}

static TCase *tc_options(void) {
  TCase *tc = er_tcase("options");
  tcase_add_test(tc, test_unknown_options);
  return tc;
}

ER_TEST_MAIN("tool streams", tc_command, tc_file, tc_options)
