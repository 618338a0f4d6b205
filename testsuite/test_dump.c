/* Tests the `eventring dump` command as a user runs it: OCaml 5 vectors, our own files, --follow on a live process, bad input. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "ring_format.h"
#include "testlib.h"

/* ------------------------------------------------------------------ */
/* Lines.                                                               */

static size_t count_events(const struct er_lines *l) {
  size_t n = 0;
  for (size_t i = 0; i < l->n; i++)
    n += !strncmp(l->v[i], "domain=", 7) && strstr(l->v[i], " ts=") != NULL;
  return n;
}

/* The output ends with exactly one SUMMARY line whose total is the number
 * of event lines; returns that line. */
static const char *check_summary(const struct er_lines *out) {
  ck_assert_msg(out->n > 0, "no output");
  const char *last = out->v[out->n - 1];
  ck_assert_msg(!strncmp(last, "SUMMARY total=", 14),
                "the last line is not the summary: %s", last);
  struct er_lines s = er_lines_starting(out, "SUMMARY");
  ck_assert_uint_eq(s.n, 1);
  er_lines_free(&s);
  ck_assert_uint_eq(er_field(last, "total"), count_events(out));
  return last;
}

/* ------------------------------------------------------------------ */
/* The OCaml 5 vectors.                                                 */

/* Every line of data/NAME.expected. */
static struct er_lines expected_lines(const char *name) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s.expected",
           er_env_dir("EVENTRING_TEST_DATA"), name);
  return er_lines_read(path);
}

static void check_vector(const char *name, int ocaml50) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  ER_NEED_VECTOR(dir, name, path);
  const char *args[] = {"dump", "--time=raw", ocaml50 ? "--ocaml50" : path,
                        ocaml50 ? path : NULL, NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  er_assert_status(&r, 0);
  struct er_lines out = er_lines_split(r.out);
  struct er_lines exp_all = expected_lines(name);
  struct er_lines got = er_lines_starting(&out, "domain=");
  struct er_lines want = er_lines_starting(&exp_all, "domain=");
  ck_assert_msg(want.n > 100, "%s: only %zu lines expected", name, want.n);
  er_lines_compare(name, &got, &want, 1);
  const char *sum = check_summary(&out);
  struct er_lines esum = er_lines_starting(&exp_all, "SUMMARY");
  ck_assert_uint_ge(esum.n, 1);
  ck_assert_uint_eq(er_field(sum, "lost_events_total"),
                    er_field(esum.v[0], "lost_events_total"));
  ck_assert_uint_eq(er_field(sum, "lost_events_calls"),
                    er_field(esum.v[0], "lost_events_calls"));
  ck_assert_msg(strstr(sum, " lost_unit=words") != NULL, "%s", sum);
  er_lines_free(&esum);
  er_lines_free(&want);
  er_lines_free(&got);
  er_lines_free(&exp_all);
  er_lines_free(&out);
  er_run_free(&r);
  unlink(path);
}

START_TEST(test_vector) {
  check_vector(er_vectors[_i], er_vector_ocaml50(er_vectors[_i]));
}
END_TEST

/* A file that turns out corrupt in the middle: the events of the good
 * rings are printed, then one error line, no summary, status 1. */
START_TEST(test_corrupt_midway) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  const char *name = "ocaml54-multidomain";
  ER_NEED_VECTOR(dir, name, path);
  /* Zero the header of the first event of domain 2: a length of 0. */
  int fd = open(path, O_RDWR);
  ck_assert_int_ge(fd, 0);
  uint64_t meta[ER_META_WORDS], head;
  ck_assert_int_eq(pread(fd, meta, sizeof meta, 0), (ssize_t)sizeof meta);
  ck_assert_int_eq(pread(fd, &head, 8,
                         (off_t)(meta[ER_META_HEADERS_OFFSET] +
                                 2 * meta[ER_META_RING_HEADER_SIZE])),
                   8);
  uint64_t zero = 0;
  off_t at = (off_t)(meta[ER_META_DATA_OFFSET] +
                     2 * meta[ER_META_RING_SIZE_BYTES] +
                     (head & (meta[ER_META_RING_SIZE_ELEMENTS] - 1)) * 8);
  ck_assert_int_eq(pwrite(fd, &zero, 8, at), 8);
  close(fd);

  struct er_run r = er_run_tool(dir, (const char *[]){"dump", "--time=raw", path, NULL}, 0);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  er_assert_one_error(&r, path);
  er_assert_one_error(&r, "malformed");
  struct er_lines out = er_lines_split(r.out);
  struct er_lines exp_all = expected_lines(name);
  struct er_lines want = {0};
  for (size_t i = 0; i < exp_all.n; i++)
    if (!strncmp(exp_all.v[i], "domain=", 7) &&
        strncmp(exp_all.v[i], "domain=2 ", 9))
      er_lines_push(&want, exp_all.v[i], strlen(exp_all.v[i]));
  er_lines_compare(name, &out, &want, 1);
  er_lines_free(&want);
  er_lines_free(&exp_all);
  er_lines_free(&out);
  er_run_free(&r);
}
END_TEST

/* --merge on a file refused at its first poll (every ring's tail out of
 * range): one error line, nothing printed, status 1, and no undefined
 * behaviour on the way (the sanitizer builds check). */
START_TEST(test_merge_refused) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  ER_NEED_VECTOR(dir, "ocaml54-basic", path);
  int fd = open(path, O_RDWR);
  ck_assert_int_ge(fd, 0);
  uint64_t meta[ER_META_WORDS], tail = UINT64_C(1) << 62;
  ck_assert_int_eq(pread(fd, meta, sizeof meta, 0), (ssize_t)sizeof meta);
  for (uint64_t d = 0; d < meta[ER_META_MAX_DOMAINS]; d++)
    ck_assert_int_eq(pwrite(fd, &tail, 8,
                            (off_t)(meta[ER_META_HEADERS_OFFSET] +
                                    d * meta[ER_META_RING_HEADER_SIZE] +
                                    8 * ER_RING_TAIL)),
                     8);
  close(fd);
  struct er_run r =
      er_run_tool(dir, (const char *[]){"dump", "--merge", path, NULL}, 0);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  er_assert_one_error(&r, "malformed");
  ck_assert_str_eq(r.out, "");
  er_run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Files written by eventring.                                          */

/* Runs progs/i_dump_writer in `dir` (ring file kept, 1024-word rings)
 * and returns its ring file's path in `path`; 0 when it cannot run. */
static int write_own_file(const char *dir, char *path, pid_t *pid_out) {
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  const char *tracing = getenv("EVENTRING_TRACING");
  if (!progs || (tracing && !strcmp(tracing, "no"))) return 0;
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  setenv("OCAMLRUNPARAM", "e=10", 1);
  char prog[PATH_MAX];
  snprintf(prog, sizeof prog, "%s/i_dump_writer", progs);
  char *argv[] = {prog, NULL};
  pid_t pid = er_spawn(argv, -1, -1, -1, NULL, 0);
  int st = er_wait_for(pid, ER_RUN_TIMEOUT);
  unsetenv("OCAMLRUNPARAM");
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "i_dump_writer failed (status %d)", st);
  er_ring_path_for(path, PATH_MAX, dir, pid);
  *pid_out = pid;
  return 1;
}

/* The event lines of domain `d`, without "domain=D " and the timestamp
 * (so "kind=... name=... value=..."); lost_events lines as
 * "kind=lost_events value=N". */
static struct er_lines domain_lines(const struct er_lines *out, int d) {
  char prefix[32];
  snprintf(prefix, sizeof prefix, "domain=%d ", d);
  struct er_lines l = {0};
  for (size_t i = 0; i < out->n; i++) {
    const char *s = out->v[i];
    if (strncmp(s, prefix, strlen(prefix))) continue;
    s += strlen(prefix);
    if (!strncmp(s, "ts=", 3)) {
      const char *sp = strchr(s, ' ');
      ck_assert_ptr_nonnull(sp);
      s = sp + 1;
    }
    er_lines_push(&l, s, strlen(s));
  }
  return l;
}

START_TEST(test_own_file) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  pid_t pid;
  if (!write_own_file(dir, path, &pid))
    ER_SKIP("no helper programs, or a build without tracing");
  struct rf_file f;
  er_open_ring(path, &f);

  struct er_run r = er_run_tool(dir, (const char *[]){"dump", "--time=raw", path, NULL}, 0);
  er_assert_status(&r, 0);
  struct er_lines out = er_lines_split(r.out);
  const char *sum = check_summary(&out);
  ck_assert_msg(strstr(sum, " lost_unit=events") != NULL, "%s", sum);

  /* Domains 1..3: exactly what each thread wrote, in order. */
  for (int k = 1; k <= 3; k++) {
    char want[12][160];
    int n = 0;
    snprintf(want[n++], 160, "kind=lifecycle name=domain_spawn value=%ld",
             (long)pid);
    snprintf(want[n++], 160, "kind=runtime_begin name=major_slice value=-");
    snprintf(want[n++], 160,
             "kind=runtime_counter name=minor_promoted value=%" PRIu64,
             (UINT64_C(1) << 63) + (uint64_t)k);
    snprintf(want[n++], 160, "kind=user_unit name=w.unit value=()");
    snprintf(want[n++], 160, "kind=user_int name=w.int value=-%d000000000000",
             k);
    snprintf(want[n++], 160, "kind=user_span name=w.span value=begin");
    snprintf(want[n++], 160,
             "kind=user_custom name=w.custom "
             "value=\"\\n\\\"\\\\\\001\\255\\t\\r\\b ~\\127\\128%d\"",
             k);
    snprintf(want[n++], 160, "kind=user_custom name=w.custom value=\"\"");
    snprintf(want[n++], 160,
             "kind=alloc name=alloc_buckets "
             "value=0,1,0,0,0,1,0,0,0,0,1,0,0,0,0,0,0,0,0,2");
    snprintf(want[n++], 160, "kind=user_span name=w.span value=end");
    snprintf(want[n++], 160, "kind=runtime_end name=major_slice value=-");
    snprintf(want[n++], 160,
             "kind=lifecycle name=domain_terminate value=%ld", (long)pid);
    struct er_lines got = domain_lines(&out, k);
    ck_assert_msg(got.n == (size_t)n, "domain %d: %zu lines, expected %d", k,
                  got.n, n);
    for (int i = 0; i < n; i++)
      ck_assert_msg(!strcmp(got.v[i], want[i]),
                    "domain %d line %d:\n  got  %s\n  want %s", k, i,
                    got.v[i], want[i]);
    ck_assert_uint_eq(f.rings[k].written, (uint64_t)n);
    er_lines_free(&got);
  }

  /* Domain 0 wrapped: one loss report, then consecutive ints up to 2000,
   * then ring_stop; the loss and the events read add up to every event
   * the ring ever had. */
  struct er_lines d0 = domain_lines(&out, 0);
  ck_assert_uint_ge(d0.n, 3);
  uint64_t lost;
  ck_assert_msg(sscanf(d0.v[0], "kind=lost_events value=%" SCNu64, &lost) == 1,
                "domain 0 does not start with a loss: %s", d0.v[0]);
  long first = -1;
  for (size_t i = 1; i + 1 < d0.n; i++) {
    long v;
    ck_assert_msg(sscanf(d0.v[i], "kind=user_int name=w.seq value=%ld", &v) == 1,
                  "domain 0 line %zu: %s", i, d0.v[i]);
    if (first < 0) first = v;
    ck_assert_int_eq(v, first + (long)(i - 1));
  }
  ck_assert_int_eq(first + (long)(d0.n - 2) - 1, 2000);
  ck_assert_str_eq(d0.v[d0.n - 1], "kind=lifecycle name=ring_stop value=-");
  uint64_t delivered = d0.n - 1;
  ck_assert_uint_eq(lost + delivered, f.rings[0].written);
  /* What was lost is ring_start and the ints below the first one read. */
  ck_assert_uint_eq(lost, (uint64_t)first + 1);
  ck_assert_uint_eq(er_field(sum, "lost_events_total"), lost);
  ck_assert_uint_eq(er_field(sum, "lost_events_calls"), 1);
  ck_assert_uint_eq(er_field(sum, "alloc"), 3);
  ck_assert_uint_eq(er_field(sum, "user_custom"), 6);
  er_lines_free(&d0);

  /* The same file under a name that gives no pid, with --follow: read to
   * ring_stop, which is there already, and the same listing. */
  char copy[PATH_MAX];
  snprintf(copy, sizeof copy, "%s/copy.events", dir);
  ck_assert_int_eq(rename(path, copy), 0);
  struct er_run r2 =
      er_run_tool(dir, (const char *[]){"dump", "--time=raw", "--follow", copy, NULL}, 0);
  er_assert_status(&r2, 0);
  ck_assert_str_eq(r2.out, r.out);
  er_run_free(&r2);

  rf_close(&f);
  er_lines_free(&out);
  er_run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* --follow on a live process.                                          */

/* Starts progs/dump_live and waits for its "ready" line; *go is the
 * pipe whose closing lets it start writing. */
static pid_t start_live(int *go) {
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  char prog[PATH_MAX];
  snprintf(prog, sizeof prog, "%s/dump_live", progs);
  int p[2], in[2];
  ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
  ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
  char *argv[] = {prog, NULL};
  pid_t pid = er_spawn(argv, in[0], p[1], -1, NULL, 0);
  close(p[1]);
  close(in[0]);
  *go = in[1];
  struct pollfd pfd = {p[0], POLLIN, 0};
  char buf[16] = {0};
  ck_assert_msg(poll(&pfd, 1, (int)(ER_RUN_TIMEOUT * 1000)) == 1,
                "dump_live did not start");
  ck_assert_msg(read(p[0], buf, sizeof buf - 1) > 0 &&
                    !strncmp(buf, "ready", 5),
                "dump_live: [%s]", buf);
  close(p[0]);
  return pid;
}

/* `by_pid`: name the process with --dir/--pid (else by its file name).
 * `reap_first`: wait for the child before the tool; otherwise the child
 * stays a zombie until the tool has ended, which it must notice. */
static void follow_live(int by_pid, int reap_first) {
  ER_NEED_TOOL();
  const char *tracing = getenv("EVENTRING_TRACING");
  if (!er_env_dir("EVENTRING_TEST_PROGS") || (tracing && !strcmp(tracing, "no")))
    ER_SKIP("no helper programs, or a build without tracing");
  const char *dir = er_tmpdir();
  /* Keep the file when the tool reads it by name; read by pid, the file
   * is removed at exit while the tool still reads it. */
  if (!by_pid) setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  int go;
  pid_t child = start_live(&go);
  char pidstr[32], path[PATH_MAX], outp[PATH_MAX], errp[PATH_MAX];
  snprintf(pidstr, sizeof pidstr, "%ld", (long)child);
  er_ring_path_for(path, sizeof path, dir, child);
  const char *a_pid[] = {"dump", "--time=raw", "--follow", "--dir", dir, "--pid", pidstr,
                         NULL};
  const char *a_file[] = {"dump", "--time=raw", "-f", path, NULL};
  pid_t tool = er_start_tool(dir, by_pid ? a_pid : a_file, 0, outp, errp);
  er_wait_open(tool, path);
  close(go);
  int cst = 0;
  if (reap_first) cst = er_wait_for(child, ER_RUN_TIMEOUT);
  struct er_run r = er_finish(tool, outp, errp, ER_RUN_TIMEOUT);
  if (!reap_first) cst = er_wait_for(child, ER_RUN_TIMEOUT);
  ck_assert_msg(cst != -1 && WIFEXITED(cst) && WEXITSTATUS(cst) == 0,
                "dump_live failed (status %d)", cst);
  er_assert_status(&r, 0);

  struct er_lines out = er_lines_split(r.out);
  const char *sum = check_summary(&out);
  ck_assert_uint_eq(er_field(sum, "lost_events_calls"), 0);
  struct er_lines d0 = domain_lines(&out, 0);
  ck_assert_uint_ge(d0.n, 4);
  ck_assert_msg(!strncmp(d0.v[0], "kind=lifecycle name=ring_start value=", 37),
                "%s", d0.v[0]);
  long ticks = 0;
  for (size_t i = 1; i + 2 < d0.n; i++) {
    long v;
    ck_assert_msg(sscanf(d0.v[i], "kind=user_int name=live.tick value=%ld",
                         &v) == 1 && v == (long)(i - 1),
                  "line %zu: %s", i, d0.v[i]);
    ticks++;
  }
  char last[96];
  snprintf(last, sizeof last, "kind=user_int name=live.last value=%ld", ticks);
  ck_assert_str_eq(d0.v[d0.n - 2], last);
  ck_assert_str_eq(d0.v[d0.n - 1], "kind=lifecycle name=ring_stop value=-");
  er_lines_free(&d0);
  er_lines_free(&out);
  er_run_free(&r);
}

START_TEST(test_follow_pid) { follow_live(1, 1); }
END_TEST

START_TEST(test_follow_file_zombie) { follow_live(0, 0); }
END_TEST

/* ------------------------------------------------------------------ */
/* Bad input and usage.                                                 */

/* The run failed with `code`, printed nothing on stdout and one error
 * line mentioning `what`. */
static void expect_failure(const char *dir, const char *const *args,
                           int code, const char *what) {
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(
      er_exit_code(&r, "the tool") == code,
      "%s %s: exit status %d, expected %d", args[0] ? args[0] : "(no argument)",
      args[0] && args[1] ? args[1] : "", er_exit_code(&r, "the tool"), code);
  ck_assert_msg(r.out[0] == '\0', "stdout: %s", r.out);
  er_assert_one_error(&r, what);
  er_run_free(&r);
}

static void write_file(const char *path, const void *bytes, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, bytes, len), (ssize_t)len);
  close(fd);
}

START_TEST(test_bad_input) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char p[PATH_MAX];

  snprintf(p, sizeof p, "%s/none.events", dir);
  expect_failure(dir, (const char *[]){"dump", p, NULL}, 1, p);
  expect_failure(dir, (const char *[]){"dump", "--dir", dir, "--pid", "999999999", NULL},
                 1, "999999999.events");
  expect_failure(dir, (const char *[]){"dump", dir, NULL}, 1, dir);

  /* A FIFO must neither block the tool nor be taken for a ring. */
  snprintf(p, sizeof p, "%s/fifo.events", dir);
  ck_assert_int_eq(mkfifo(p, 0600), 0);
  expect_failure(dir, (const char *[]){"dump", p, NULL}, 1, p);

  snprintf(p, sizeof p, "%s/short.events", dir);
  write_file(p, "0123456789", 10);
  expect_failure(dir, (const char *[]){"dump", p, NULL}, 1, "not a ring file");

  /* A well-formed header but version 2: one domain, an 80-byte ring
   * header at 64, a ring of 1024 words after it, the names after that. */
  uint64_t meta[512] = {0};
  meta[ER_META_VERSION] = 2;
  meta[ER_META_MAX_DOMAINS] = 1;
  meta[ER_META_RING_HEADER_SIZE] = 80;
  meta[ER_META_RING_SIZE_BYTES] = 8192;
  meta[ER_META_RING_SIZE_ELEMENTS] = 1024;
  meta[ER_META_HEADERS_OFFSET] = 64;
  meta[ER_META_DATA_OFFSET] = 144;
  meta[ER_META_CUSTOM_EVENTS_OFFSET] = 144 + 8192;
  snprintf(p, sizeof p, "%s/v2.events", dir);
  write_file(p, meta, sizeof meta);
  expect_failure(dir, (const char *[]){"dump", p, NULL}, 1,
                 "a ring file of an unsupported version 2");

  /* The same header with only its version word still zero: a file whose
   * writer had not finished creating it. */
  meta[ER_META_VERSION] = 0;
  snprintf(p, sizeof p, "%s/v0.events", dir);
  write_file(p, meta, sizeof meta);
  expect_failure(dir, (const char *[]){"dump", p, NULL}, 1,
                 "an unfinished ring file");
}
END_TEST

START_TEST(test_bad_usage) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  expect_failure(dir, (const char *[]){NULL}, 2, NULL);
  expect_failure(dir, (const char *[]){"frobnicate", NULL}, 2, "frobnicate");
  expect_failure(dir, (const char *[]){"--bogus", NULL}, 2, "--bogus");
  expect_failure(dir, (const char *[]){"dump", "--bogus", "x.events", NULL}, 2,
                 "--bogus");
  expect_failure(dir, (const char *[]){"dump", "-q", "x.events", NULL}, 2,
                 "-q");
  expect_failure(dir, (const char *[]){"dump", "--follow=1", "x.events", NULL},
                 2, "--follow=1");
  expect_failure(dir, (const char *[]){"dump", NULL}, 2, NULL);
  /* Several files are a list to read (procs.c): missing ones are bad
   * input, not bad usage. */
  expect_failure(dir, (const char *[]){"dump", "a.events", "b.events", NULL},
                 1, "a.events");
  expect_failure(dir, (const char *[]){"dump", "--pid", NULL}, 2, "--pid");
  expect_failure(dir, (const char *[]){"dump", "--pid", "12x", NULL}, 2,
                 "12x");
  expect_failure(dir, (const char *[]){"dump", "--pid", "0", NULL}, 2, NULL);
  expect_failure(dir, (const char *[]){"dump", "--pid", "1", "a.events", NULL},
                 2, NULL);
  expect_failure(dir, (const char *[]){"dump", "--dir", dir, "a.events", NULL},
                 2, "--dir");
}
END_TEST

START_TEST(test_help_and_version) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  const char *const cases[][3] = {
      {"--help", NULL, "Usage: eventring"},
      {"dump", "--help", "Usage: eventring dump"},
      {"--version", NULL, "eventring "},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct er_run r = er_run_tool(dir, cases[i], 0);
    er_assert_status(&r, 0);
    ck_assert_msg(!strncmp(r.out, cases[i][2], strlen(cases[i][2])),
                  "%s: %s", cases[i][0], r.out);
    er_run_free(&r);
  }
}
END_TEST

/* A reader that goes away (`eventring dump ... | head`) ends the tool
 * quietly: no message, the status a shell shows for SIGPIPE. */
START_TEST(test_closed_pipe) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  ER_NEED_VECTOR(dir, "ocaml54-multidomain", path);
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  int p[2];
  ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
  char errp[PATH_MAX];
  snprintf(errp, sizeof errp, "%s/pipe.err", dir);
  int err = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_ge(err, 0);
  char *argv[] = {(char *)er_tool_path(), "dump", path, NULL};
  pid_t pid = er_spawn(argv, -1, p[1], err, NULL, 0);
  close(p[1]);
  close(err);
  /* Read the start of the listing (well under the 64 KiB a pipe holds,
   * while the listing is larger), then hang up. */
  char buf[100];
  struct pollfd pfd = {p[0], POLLIN, 0};
  ck_assert_int_eq(poll(&pfd, 1, (int)(ER_RUN_TIMEOUT * 1000)), 1);
  ck_assert_int_gt(read(p[0], buf, sizeof buf), 0);
  close(p[0]);
  int status = er_wait_for(pid, ER_RUN_TIMEOUT);
  ck_assert_msg(status != -1, "the tool did not finish in time");
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 141,
                "status %d (signal %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  char *e = er_slurp(errp, NULL);
  ck_assert_msg(e[0] == '\0', "stderr: %s", e);
  free(e);
}
END_TEST

static TCase *tc_vectors(void) {
  TCase *tc = er_tcase("vectors");
  tcase_add_loop_test(tc, test_vector, 0, ER_NVECTORS);
  tcase_add_test(tc, test_corrupt_midway);
  tcase_add_test(tc, test_merge_refused);
  return tc;
}

static TCase *tc_own(void) {
  TCase *tc = er_tcase("own files");
  tcase_add_test(tc, test_own_file);
  tcase_add_test(tc, test_follow_pid);
  tcase_add_test(tc, test_follow_file_zombie);
  return tc;
}

static TCase *tc_errors(void) {
  TCase *tc = er_tcase("errors");
  tcase_add_test(tc, test_bad_input);
  tcase_add_test(tc, test_bad_usage);
  tcase_add_test(tc, test_help_and_version);
  tcase_add_test(tc, test_closed_pipe);
  return tc;
}

ER_TEST_MAIN("dump", tc_vectors, tc_own, tc_errors)
