/* Tests the writer's metadata in ring files (ER_EXT_FLAG_META): the labels of EVENTRING_LABELS (bad items warned about and left out, the host never stopped), the OCaml version given by eventring_set_ocaml_version() before and after a start, and both carried into snapshots, with the labels of `eventring snapshot --label` and `eventring watch --label`. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eventring.h"
#include "harness.h"
#include "testlib.h"

/* The labels of the file at `path` as "name=value" joined by commas,
 * and its OCaml version ("-" when it says none), into `out`. */
static void file_meta(const char *path, char *labels, size_t n,
                      char *version, size_t vn) {
  eventring_cursor *c;
  int e = eventring_cursor_open_file(&c, path);
  ck_assert_msg(e == 0, "%s: %s", path, eventring_strerror(e));
  const char *name, *value, *v = eventring_cursor_ocaml_version(c);
  snprintf(version, vn, "%s", v ? v : "-");
  labels[0] = '\0';
  for (int i = 0; eventring_cursor_label(c, i, &name, &value) == 1; i++)
    snprintf(labels + strlen(labels), n - strlen(labels), "%s%s=%s",
             i ? "," : "", name, value);
  eventring_cursor_free(c);
}

/* Checks that the file at `path` records the labels `labels` (as
 * file_meta() joins them) and the version `version` ("-": none). */
static void expect_meta(const char *path, const char *labels,
                        const char *version) {
  char got[1024], got_version[64];
  file_meta(path, got, sizeof got, got_version, sizeof got_version);
  ck_assert_str_eq(got, labels);
  ck_assert_str_eq(got_version, version);
}

/* Starts tracing this process with EVENTRING_LABELS=`labels`, into the
 * file at `ring` (PATH_MAX bytes) in `dir`. */
static void start_with(const char *dir, const char *labels, char *ring) {
  setenv("EVENTRING_LABELS", labels, 1);
  ck_assert_int_eq(eventring_start(), 0);
  unsetenv("EVENTRING_LABELS");
  er_ring_path(ring, PATH_MAX, dir);
}

/* Runs envstart traced and preserved in `dir` with
 * EVENTRING_LABELS=`labels`: it must run traced, whatever the labels;
 * its ring file's path goes to `path` (PATH_MAX bytes). */
static struct er_run run_envstart(const char *dir, const char *labels,
                                  char *path) {
  const char *prog = er_prog_path("envstart");
  ck_assert_ptr_nonnull(prog);
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s", prog);
  setenv("OCAMLRUNPARAM", "e=10,d=2", 1);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  setenv("EVENTRING_LABELS", labels, 1);
  struct er_run r = er_run(dir, p, (const char *[]){NULL},
                           "OCAML_RUNTIME_EVENTS_START=1", 0);
  unsetenv("EVENTRING_LABELS");
  /* A bad value never stops the program, nor its tracing. */
  ck_assert_int_eq(er_exit_code(&r, "envstart"), 0);
  ck_assert_int_eq(sscanf(r.out, "active=1 path=%4095s", path), 1);
  return r;
}

/* ---- EVENTRING_LABELS, read by a traced program at its start. */

static const struct env_case {
  const char *value;
  const char *want;   /* the file's labels */
  const char *warns;  /* in the program's stderr; NULL: nothing there */
} envs[] = {
    {"service=api", "service=api", NULL},
    {"service=api,zone=eu-1", "service=api,zone=eu-1", NULL},
    {",service=api,,zone=a b=c,", "service=api,zone=a b=c", NULL},
    {"a=1,a=2", "a=2", NULL},
    {"", "", NULL},
    {"bad-name=x,ok=1", "ok=1",
     "ignoring EVENTRING_LABELS item 'bad-name=x': a label name is letters"},
    {"9lives=x", "", "'9lives=x': a label name is"},
    {"__name__=x", "", "'__name__=x': a label name is"},
    {"novalue,ok=1", "ok=1", "'novalue': not name=value"},
    {"empty=,ok=1", "ok=1", "'empty=': the value is empty"},
    {"a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9,j=10,k=11,l=12,m=13,n=14,o=15,"
     "p=16,q=17",
     "a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9,j=10,k=11,l=12,m=13,n=14,o=15,"
     "p=16",
     "'q=17': the labels exceed 472 bytes or 16 labels"},
};

START_TEST(test_env_labels) {
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  const struct env_case *t = &envs[_i];
  char path[PATH_MAX];
  struct er_run r = run_envstart(er_tmpdir(), t->value, path);
  if (t->warns)
    ck_assert_msg(strstr(r.err, t->warns), "%s: stderr: %s", t->value, r.err);
  else
    ck_assert_msg(!r.err[0], "%s: stderr: %s", t->value, r.err);
  expect_meta(path, t->want, "-"); /* a C program says no version */
  er_run_free(&r);
  unlink(path);
}
END_TEST

/* A label value of 470 bytes does not fit with another: the item is
 * shown cut in the warning, whose reason is there. */
START_TEST(test_env_labels_bytes) {
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char path[PATH_MAX], value[600];
  memset(value, 'x', sizeof value);
  memcpy(value, "a=1,v=", 6);
  value[6 + 470] = '\0';
  struct er_run r = run_envstart(er_tmpdir(), value, path);
  ck_assert_msg(strstr(r.err, "xxx...': the labels exceed 472 bytes"), "%s",
                r.err);
  expect_meta(path, "a=1", "-");
  er_run_free(&r);
  unlink(path);
}
END_TEST

/* ---- The OCaml version: given after the start (the live file's
 * section rewritten) and before the next; into eventring_snapshot(). */

START_TEST(test_ocaml_version) {
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  const char *dir = er_tmpdir();
  char ring[PATH_MAX], snap[PATH_MAX];
  start_with(dir, "team=db", ring);
  expect_meta(ring, "team=db", "-");
  eventring_set_ocaml_version("5.2.1");
  expect_meta(ring, "team=db", "5.2.1");

  /* The snapshot carries both. */
  snprintf(snap, sizeof snap, "%s/own.events", dir);
  ck_assert_int_eq(eventring_snapshot(snap), 0);
  expect_meta(snap, "team=db", "5.2.1");

  /* A version too long is cut to 31 bytes; NULL says none. */
  eventring_set_ocaml_version("4.14.2+flambda+a-very-long-suffix-here");
  expect_meta(ring, "team=db", "4.14.2+flambda+a-very-long-suff");
  eventring_set_ocaml_version(NULL);
  expect_meta(ring, "team=db", "-");

  /* Given while stopped, the next file has it from its creation, and
   * EVENTRING_LABELS is read again. */
  ck_assert_int_eq(eventring_stop(), 0);
  eventring_set_ocaml_version("4.13.1");
  ck_assert_int_eq(eventring_start(), 0);
  expect_meta(ring, "", "4.13.1");
  ck_assert_int_eq(eventring_stop(), 0);
  eventring_set_ocaml_version(NULL);
}
END_TEST

/* ---- `eventring snapshot --label`: the operator's labels first, over
 * the source's of the same name; bad ones refused before anything is
 * read or written. */

/* Runs `eventring snapshot ARGS... -o out SOURCE` in `dir`, which must
 * exit with `want`, saying `says` on stderr when `want` is not 0; a
 * refused snapshot leaves no file. */
static void snapshot_run(const char *dir, const char *const *args,
                         const char *out, const char *source, int want,
                         const char *says) {
  const char *argv[24] = {"snapshot"};
  int n = 1;
  while (*args && n < 20) argv[n++] = *args++;
  argv[n++] = "-o";
  argv[n++] = out;
  argv[n++] = source;
  argv[n] = NULL;
  struct er_run r = er_run_tool(dir, argv, 0);
  ck_assert_msg(er_exit_code(&r, "snapshot") == want, "%s", r.err);
  if (want) {
    ck_assert_msg(strstr(r.err, says), "want '%s': %s", says, r.err);
    ck_assert_int_ne(access(out, F_OK), 0);
  }
  er_run_free(&r);
}

START_TEST(test_snapshot_label) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  const char *dir = er_tmpdir();
  char ring[PATH_MAX], snap[PATH_MAX + 16], again[PATH_MAX + 16];
  start_with(dir, "service=api,zone=eu-1", ring);
  eventring_set_ocaml_version("4.14.2");
  snprintf(snap, sizeof snap, "%s/snap.events", dir);
  snapshot_run(dir, (const char *[]){"--label", "team=web", "--label",
                                     "zone=us-2", NULL},
               snap, ring, 0, NULL);
  expect_meta(snap, "team=web,zone=us-2,service=api", "4.14.2");
  /* And a snapshot of the snapshot keeps them. */
  snprintf(again, sizeof again, "%s/again.events", dir);
  snapshot_run(dir, (const char *[]){NULL}, again, snap, 0, NULL);
  expect_meta(again, "team=web,zone=us-2,service=api", "4.14.2");

  static const char *const bad[] = {"team", "a-b=1", "__x=1", "team="};
  char out[PATH_MAX + 16];
  snprintf(out, sizeof out, "%s/bad.events", dir);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    snapshot_run(dir, (const char *[]){"--label", bad[i], NULL}, out, ring,
                 2, "is not NAME=VALUE");
  /* 17 labels are too many. */
  const char *many[18];
  char items[17][16];
  for (int i = 0; i < 17; i++) {
    snprintf(items[i], sizeof items[i], "--label=l%d=1", i);
    many[i] = items[i];
  }
  many[17] = NULL;
  snapshot_run(dir, many, out, ring, 2, "or 16 labels");
  ck_assert_int_eq(eventring_stop(), 0);
  eventring_set_ocaml_version(NULL);
}
END_TEST

/* ---- `eventring watch --label`: in the snapshots it writes, with the
 * watched program's own (EVENTRING_LABELS), and without --log-format
 * json. */

START_TEST(test_watch_label) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  char w[PATH_MAX];
  snprintf(w, sizeof w, "%s", er_prog_path("watch_writer"));
  setenv("EVENTRING_LABELS", "service=api,team=app", 1);
  const char *args[] = {"watch",    "--when",  "event:app.slow", "--label",
                        "team=ops", "--out",   dir,              "--",
                        w,          "--lead",  "50",             "--inject",
                        "event",    "--tail",  "50",             NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  unsetenv("EVENTRING_LABELS");
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  er_run_free(&r);
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  int snaps = 0;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n < 7 || strcmp(e->d_name + n - 7, ".events")) continue;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    expect_meta(path, "team=ops,service=api", "-");
    snaps++;
  }
  closedir(d);
  ck_assert_int_eq(snaps, 1);
}
END_TEST

/* `eventring watch` over a file that records an OCaml version: its JSON
 * log lines about the process say it, and the snapshot keeps it with the
 * file's labels. */
START_TEST(test_watch_version) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  const char *dir = er_tmpdir();
  char ring[PATH_MAX], src[PATH_MAX + 16], out[PATH_MAX + 16];
  char log[PATH_MAX + 16];
  start_with(dir, "service=api", ring);
  eventring_set_ocaml_version("4.14.2");
  int id = eventring_register("app.slow", EVENTRING_TYPE_UNIT);
  ck_assert_int_ge(id, 0);
  eventring_write_unit(id);
  snprintf(src, sizeof src, "%s/src.events", dir);
  ck_assert_int_eq(eventring_snapshot(src), 0);
  ck_assert_int_eq(eventring_stop(), 0);
  eventring_set_ocaml_version(NULL);
  snprintf(out, sizeof out, "%s/out", dir);
  ck_assert_int_eq(mkdir(out, 0700), 0);
  snprintf(log, sizeof log, "%s/log.json", dir);
  struct er_run r = er_run_tool(dir, (const char *[]){"watch", "--when",
                                                      "event:app.slow",
                                                      "--log-format", "json",
                                                      "--log", log, "--out",
                                                      out, src, NULL},
                                0);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  er_run_free(&r);
  size_t len;
  char *text = er_slurp(log, &len);
  int snaps = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (!strstr(line, "\"event\":\"snapshot\"")) continue;
    ck_assert_msg(strstr(line, "\"ocaml_version\":\"4.14.2\""), "%s", line);
    char *p = strstr(line, "\"snapshot\":\"");
    ck_assert_ptr_nonnull(p);
    p += strlen("\"snapshot\":\"");
    *strchr(p, '"') = '\0';
    expect_meta(p, "service=api", "4.14.2");
    snaps++;
  }
  ck_assert_int_eq(snaps, 1);
  free(text);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static TCase *tc_meta(void) {
  TCase *tc = er_tcase("meta");
  tcase_add_loop_test(tc, test_env_labels, 0, N(envs));
  tcase_add_test(tc, test_env_labels_bytes);
  tcase_add_test(tc, test_ocaml_version);
  tcase_add_test(tc, test_snapshot_label);
  tcase_add_test(tc, test_watch_label);
  tcase_add_test(tc, test_watch_version);
  return tc;
}

ER_TEST_MAIN("file_meta", tc_meta)
