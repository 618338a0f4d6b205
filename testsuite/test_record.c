/* Tests eventring record: files rotated by size and by trace time, --keep and --max-size, every file read alone by dump and as OCaml 5 reads it, counts and losses across the files exactly what the program wrote, SIGTERM mid-file, bad usage. */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "eventring.h"
#include "ring_format.h"
#include "testlib.h"
#include "tooltest.h"

#define MS 1000000ULL
#define MIB (1024ULL * 1024)

/* What one file holds, as `eventring dump FILE` shows it. */
struct file_seen {
  uint64_t values, first, last; /* rec.n events, their first and last */
  uint64_t total, lost;         /* every event; lost_events_total */
  uint64_t lo, hi;              /* least and greatest timestamps */
  uint64_t bytes;               /* the file's size */
};

/* What a recording's files hold together. */
struct series {
  size_t files;
  uint64_t values, lost, last, total;
  uint64_t max_bytes, sum_bytes, max_span;
};

static void read_one(const char *dir, const char *file, struct file_seen *f) {
  memset(f, 0, sizeof *f);
  struct er_lines l = er_dump_raw(dir, file);
  int summary = 0;
  for (size_t i = 0; i < l.n; i++) {
    const char *s = l.v[i];
    if (!strncmp(s, "SUMMARY", 7)) {
      f->total = er_field(s, "total");
      f->lost = er_field(s, "lost_events_total");
      summary = 1;
      continue;
    }
    if (!strncmp(s, "domain=", 7) && strstr(s, " ts=")) {
      uint64_t ts = er_field(s, "ts");
      if (!f->lo || ts < f->lo) f->lo = ts;
      if (ts > f->hi) f->hi = ts;
    }
    if (!strstr(s, "kind=user_int name=rec.n ")) continue;
    uint64_t v = er_field(s, "value");
    ck_assert_msg(v > f->last, "%s: rec.n %" PRIu64 " after %" PRIu64, file,
                  v, f->last);
    if (!f->values) f->first = v;
    f->last = v;
    f->values++;
  }
  ck_assert_msg(summary, "%s: no SUMMARY line", file);
  er_lines_free(&l);
  struct stat st;
  ck_assert_int_eq(stat(file, &st), 0);
  f->bytes = (uint64_t)st.st_size;
}

/* Reads every file of `out` in name order: the values go up across the
 * files, every file is read alone by dump, none is left half-written. */
static struct series read_series(const char *dir, const char *out) {
  struct series s;
  memset(&s, 0, sizeof s);
  struct er_lines tmp = er_entries(out, ".tmp");
  ck_assert_msg(tmp.n == 0, "a temporary file is left: %s",
                tmp.n ? tmp.v[0] : "");
  er_lines_free(&tmp);
  struct er_lines l = er_entries(out, ".events");
  for (size_t i = 0; i < l.n; i++) {
    struct file_seen f;
    read_one(dir, l.v[i], &f);
    ck_assert_msg(f.total > 0 || f.lost > 0, "%s holds nothing", l.v[i]);
    if (f.values) {
      ck_assert_msg(f.first > s.last, "%s: rec.n %" PRIu64 " after %" PRIu64
                    " in an earlier file", l.v[i], f.first, s.last);
      s.last = f.last;
    }
    s.values += f.values;
    s.lost += f.lost;
    s.total += f.total;
    s.sum_bytes += f.bytes;
    if (f.bytes > s.max_bytes) s.max_bytes = f.bytes;
    if (f.total && f.hi - f.lo > s.max_span) s.max_span = f.hi - f.lo;
  }
  s.files = l.n;
  er_lines_free(&l);
  return s;
}

/* Runs `eventring record -o DIR/out OPTS... -- numbered PROG...` with
 * `env` to its end, which must be a success; returns its run, the
 * output directory's path in `out` (PATH_MAX bytes). */
static struct er_run record_cmd(const char *dir, const char *env,
                                const char *const *opts,
                                const char *const *prog, char *out) {
  const char *args[32];
  int n = 0;
  snprintf(out, PATH_MAX, "%s/out", dir);
  args[n++] = "record";
  args[n++] = "-o";
  args[n++] = out;
  for (; *opts; opts++) args[n++] = *opts;
  args[n++] = "--";
  args[n++] = er_prog_path("numbered");
  for (; *prog; prog++) args[n++] = *prog;
  args[n] = NULL;
  struct er_run r = er_run(dir, er_tool_path(), args, env, 0);
  ck_assert_msg(er_exit_code(&r, "record") == 0, "record: %s", r.err);
  return r;
}

static void need(void) {
  ER_NEED_TOOL();
  if (!er_prog_path("numbered")) ER_SKIP("numbered is not built");
  if (er_tracing_off()) ER_SKIP("built without tracing");
}

/* A numbered program and its recorder by --pid. */
struct pid_run {
  struct er_pipe_proc prog;
  pid_t rec;
  char out[PATH_MAX], outp[PATH_MAX], errp[PATH_MAX], flag[PATH_MAX];
};

/* Starts `numbered N OPTS... FLAG` (FLAG: `dir`/flag, the argument of
 * the last of OPTS) writing its ring file in `dir` with `env` (or NULL)
 * added, waits for its first line, which must be `line`, then starts
 * `eventring record -o DIR/out --rotate ROTATE --pid PID`. */
static void start_pid_run(struct pid_run *r, const char *dir, const char *n,
                          const char *const *opts, const char *env,
                          const char *line, const char *rotate) {
  char env_dir[PATH_MAX + 32];
  snprintf(r->flag, sizeof r->flag, "%s/flag", dir);
  snprintf(r->out, sizeof r->out, "%s/out", dir);
  snprintf(env_dir, sizeof env_dir, "OCAML_RUNTIME_EVENTS_DIR=%s", dir);
  ck_assert_int_eq(mkdir(r->out, 0777), 0);
  char *pargv[16];
  int k = 0;
  pargv[k++] = (char *)er_prog_path("numbered");
  pargv[k++] = (char *)n;
  for (; *opts; opts++) pargv[k++] = (char *)*opts;
  pargv[k++] = r->flag;
  pargv[k] = NULL;
  char *const penv[] = {env_dir, (char *)env, NULL};
  r->prog = er_pipe_start(pargv, penv, NULL);
  char got[64];
  ck_assert_int_eq(er_read_line(r->prog.out, got, sizeof got, ER_RUN_TIMEOUT),
                   0);
  ck_assert_str_eq(got, line);
  char pid[32];
  snprintf(pid, sizeof pid, "%ld", (long)r->prog.pid);
  const char *args[] = {"record", "-o",  r->out,  "--rotate", rotate,
                        "--pid",  pid,   "--dir", dir,        NULL};
  r->rec = er_start_tool(dir, args, 0, r->outp, r->errp);
}

/* Waits (at most ER_RUN_TIMEOUT) until `out` holds `n` ring files. */
static void wait_files(const char *out, int n) {
  double end = er_now() + ER_RUN_TIMEOUT;
  while (er_count_entries(out, ".events") < n && er_now() < end)
    er_sleep_ms(5);
  ck_assert_int_ge(er_count_entries(out, ".events"), n);
}

/* The count in the final line "... N files written ... (R removed". */
static uint64_t summary_count(const char *err, const char *key) {
  const char *p = strstr(err, "eventring: record: ");
  ck_assert_msg(p != NULL, "no summary line: %s", err);
  const char *k = strstr(p, key);
  ck_assert_msg(k != NULL, "no '%s' in: %s", key, err);
  while (k > p && k[-1] == ' ') k--;
  while (k > p && k[-1] >= '0' && k[-1] <= '9') k--;
  return strtoull(k, NULL, 10);
}

/* ------------------------------------------------------------------ */

/* By size: no file over SIZE, every event in exactly one file.  The
 * ring holds the whole run, so nothing can be lost. */
START_TEST(test_rotate_size) {
  need();
  const char *dir = er_tmpdir();
  const char *opts[] = {"--rotate", "2M", NULL};
  const char *prog[] = {"100000", NULL};
  char out[PATH_MAX];
  struct er_run r = record_cmd(dir, "OCAMLRUNPARAM=e=22", opts, prog, out);
  struct series s = read_series(dir, out);
  ck_assert_uint_le(s.max_bytes, 2 * MIB);
  /* 100000 ints of 3 words are 2.4 MB: more than one file holds. */
  ck_assert_uint_ge(s.files, 2);
  ck_assert_uint_eq(s.values, 100000);
  ck_assert_uint_eq(s.last, 100000);
  ck_assert_uint_eq(s.lost, 0);
  ck_assert_uint_eq(summary_count(r.err, "file"), s.files);
  ck_assert_uint_eq(summary_count(r.err, "events,"), s.total);
  er_run_free(&r);

  /* The directory read whole, its files in record's order, as one
   * process (they are one writer's): every value once, in order. */
  const char *args[] = {"dump", out, NULL};
  r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "dump DIR") == 0, "dump DIR: %s", r.err);
  struct er_lines l = er_lines_split(r.out);
  uint64_t expect = 1;
  for (size_t i = 0; i < l.n; i++)
    if (strstr(l.v[i], "kind=user_int name=rec.n ")) {
      ck_assert_uint_eq(er_field(l.v[i], "value"), expect);
      expect++;
    }
  ck_assert_uint_eq(expect, 100001);
  ck_assert_msg(!strstr(l.v[l.n - 1], "processes="), "%s", l.v[l.n - 1]);
  er_lines_free(&l);
  er_run_free(&r);
  er_rmdir(dir);
}
END_TEST

/* By trace time: no file spans more than the interval, and the program's
 * events span more, so there are several files; together they hold
 * everything. */
START_TEST(test_rotate_time) {
  need();
  const char *dir = er_tmpdir();
  const char *opts[] = {"--rotate", "50ms", NULL};
  const char *prog[] = {"2000", "--span", "300", NULL};
  char out[PATH_MAX];
  struct er_run r = record_cmd(dir, NULL, opts, prog, out);
  struct series s = read_series(dir, out);
  ck_assert_uint_le(s.max_span, 50 * MS);
  ck_assert_uint_ge(s.files, 2);
  ck_assert_uint_eq(s.values + s.lost, 2000);
  ck_assert_uint_eq(s.last, 2000);
  er_run_free(&r);
  er_rmdir(dir);
}
END_TEST

/* Read late, the events of a program that is done rotate as they are
 * read: each file still names the user events it holds. */
START_TEST(test_rotate_late) {
  need();
  const char *dir = er_tmpdir();
  struct pid_run pr;
  static const char *const opts[] = {"--span", "400", "--hold", NULL};
  start_pid_run(&pr, dir, "3", opts, NULL, "wrote 3", "100ms");
  /* One file per event, 200 ms apart: the first two closed as the next
   * is read, the third once the clock is past it. */
  wait_files(pr.out, 3);
  er_write_text(pr.flag, "", 1);
  ck_assert_int_eq(er_pipe_finish(&pr.prog, ER_RUN_TIMEOUT), 0);
  struct er_run r = er_finish(pr.rec, pr.outp, pr.errp, ER_RUN_TIMEOUT);
  ck_assert_msg(er_exit_code(&r, "record") == 0, "record: %s", r.err);
  struct series s = read_series(dir, pr.out);
  ck_assert_uint_ge(s.files, 3);
  ck_assert_uint_eq(s.values, 3);
  ck_assert_uint_eq(s.last, 3);
  ck_assert_uint_le(s.max_span, 100 * MS);
  er_run_free(&r);
  er_rmdir(dir);
}
END_TEST

/* --keep N: the newest N files, the last events among them; --max-size:
 * the newest files that fit. */
START_TEST(test_caps) {
  need();
  const char *dir = er_tmpdir();
  const char *keep[] = {"--rotate", "2M", "--keep", "3", NULL};
  const char *max[] = {"--rotate", "2M", "--max-size", "4M", NULL};
  const char *const *opts = _i ? max : keep;
  const char *prog[] = {"200000", NULL};
  char out[PATH_MAX];
  struct er_run r = record_cmd(dir, "OCAMLRUNPARAM=e=22", opts, prog, out);
  struct series s = read_series(dir, out);
  uint64_t written = summary_count(r.err, "file");
  uint64_t removed = summary_count(r.err, "removed");
  /* 200000 events are more than 8 files of 2M. */
  ck_assert_uint_ge(written, 8);
  ck_assert_uint_eq(removed, written - s.files);
  if (_i) {
    ck_assert_uint_le(s.sum_bytes, 4 * MIB);
    /* One more file would not have fitted. */
    ck_assert_uint_gt(s.sum_bytes + s.max_bytes, 4 * MIB);
  } else {
    ck_assert_uint_eq(s.files, 3);
  }
  /* The newest files: the last events, none missing among them. */
  ck_assert_uint_eq(s.last, 200000);
  ck_assert_uint_eq(s.lost, 0);
  er_run_free(&r);
  er_rmdir(dir);
}
END_TEST

/* What the ring overwrote while the recorder was stopped is lost, and
 * counted exactly: the files' events and losses add up to what the
 * program wrote. */
START_TEST(test_lost_exact) {
  need();
  const char *dir = er_tmpdir();
  struct pid_run pr;
  static const char *const opts[] = {"--first", "10", "--go", NULL};
  /* A ring of 1024 words: 341 ints. */
  start_pid_run(&pr, dir, "20000", opts, "OCAMLRUNPARAM=e=10", "ready",
                "1ms");
  /* A file holds the first events: the recorder has read the ring once,
   * so what it loses from now on is lost, not a window's start. */
  wait_files(pr.out, 1);
  pid_t rec = pr.rec;
  ck_assert_int_eq(kill(rec, SIGSTOP), 0);
  er_write_text(pr.flag, "", 1);
  char line[64];
  ck_assert_int_eq(
      er_read_line(pr.prog.out, line, sizeof line, ER_RUN_TIMEOUT), 0);
  ck_assert_str_eq(line, "wrote 20000");
  ck_assert_int_eq(er_pipe_finish(&pr.prog, ER_RUN_TIMEOUT), 0);
  ck_assert_int_eq(kill(rec, SIGCONT), 0);
  struct er_run r = er_finish(rec, pr.outp, pr.errp, ER_RUN_TIMEOUT);
  ck_assert_msg(er_exit_code(&r, "record") == 0, "record: %s", r.err);
  struct series s = read_series(dir, pr.out);
  ck_assert_uint_gt(s.lost, 0);
  ck_assert_uint_eq(s.values + s.lost, 20000);
  ck_assert_uint_eq(s.last, 20000);
  ck_assert_uint_eq(summary_count(r.err, "lost\n"), s.lost);
  er_run_free(&r);
  er_rmdir(dir);
}
END_TEST

/* SIGTERM in the middle of a file: the command ends, the open file is
 * written whole, and nothing is missing before the last event. */
START_TEST(test_sigterm) {
  need();
  const char *dir = er_tmpdir();
  char out[PATH_MAX];
  snprintf(out, sizeof out, "%s/out", dir);
  ck_assert_int_eq(mkdir(out, 0777), 0);
  const char *args[] = {"record", "-o", out, "--rotate", "2M", "--",
                        er_prog_path("numbered"), "0", "--rate", "50",
                        NULL};
  char outp[PATH_MAX], errp[PATH_MAX];
  pid_t rec = er_start(dir, er_tool_path(), args, ER_FD_NULL,
                       "OCAMLRUNPARAM=e=22", 0, outp, errp);
  /* A first file written, the second under way. */
  wait_files(out, 1);
  ck_assert_int_eq(kill(rec, SIGTERM), 0);
  struct er_run r = er_finish(rec, outp, errp, ER_RUN_TIMEOUT);
  /* The command's status: it ends cleanly on SIGTERM. */
  ck_assert_msg(er_exit_code(&r, "record") == 0, "record: %s", r.err);
  struct series s = read_series(dir, out);
  ck_assert_uint_ge(s.files, 2);
  /* Every event the program wrote is in a file or counted lost. */
  const char *w = strstr(r.out, "wrote ");
  ck_assert_msg(w != NULL, "the program did not finish: %s", r.out);
  ck_assert_uint_eq(s.last, strtoull(w + 6, NULL, 10));
  ck_assert_uint_eq(s.values + s.lost, s.last);
  er_run_free(&r);
  er_rmdir(dir);
}
END_TEST

/* --dir alone, as a service runs it: started before any program, it
 * records each that starts in the directory, writes a program's last
 * file when the program ends (not when the recorder does), and ends on
 * SIGTERM. */
START_TEST(test_dir_service) {
  need();
  const char *dir = er_tmpdir();
  char rings[PATH_MAX], out[PATH_MAX], env_dir[PATH_MAX + 32];
  snprintf(rings, sizeof rings, "%s/rings", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  snprintf(env_dir, sizeof env_dir, "OCAML_RUNTIME_EVENTS_DIR=%s", rings);
  ck_assert_int_eq(mkdir(rings, 0777), 0);
  const char *args[] = {"record", "-o", out, "--dir", rings, NULL};
  char outp[PATH_MAX], errp[PATH_MAX];
  pid_t rec = er_start_tool(dir, args, 0, outp, errp);
  ck_assert(er_wait_text(errp, "until stopped", 1, ER_RUN_TIMEOUT));
  for (int k = 1; k <= 2; k++) {
    /* A program that stays until the recorder has its file open. */
    char hold[PATH_MAX], ring[PATH_MAX], got[64];
    snprintf(hold, sizeof hold, "%s/hold%d", dir, k);
    char *pargv[] = {(char *)er_prog_path("numbered"), "500", "--hold", hold,
                     NULL};
    char *const penv[] = {env_dir, NULL};
    struct er_pipe_proc p = er_pipe_start(pargv, penv, NULL);
    ck_assert_int_eq(er_read_line(p.out, got, sizeof got, ER_RUN_TIMEOUT), 0);
    ck_assert_str_eq(got, "wrote 500");
    snprintf(ring, sizeof ring, "%s/%ld.events", rings, (long)p.pid);
    er_wait_open(rec, ring);
    er_write_text(hold, "", 1);
    ck_assert_int_eq(er_pipe_finish(&p, ER_RUN_TIMEOUT), 0);
    /* Its file, once it has ended: the recorder goes on. */
    wait_files(out, k);
    ck_assert_int_eq(kill(rec, 0), 0);
  }
  ck_assert_int_eq(kill(rec, SIGTERM), 0);
  struct er_run r = er_finish(rec, outp, errp, ER_RUN_TIMEOUT);
  ck_assert_msg(er_exit_code(&r, "record") == 128 + SIGTERM, "record: %s",
                r.err);
  ck_assert_msg(strstr(r.err, "2 files written"), "%s", r.err);
  /* One file each, all of its program's events, read alone. */
  struct er_lines l = er_entries(out, ".events");
  ck_assert_uint_eq(l.n, 2);
  for (size_t i = 0; i < l.n; i++) {
    struct file_seen f;
    read_one(dir, l.v[i], &f);
    ck_assert_uint_eq(f.values, 500);
    ck_assert_uint_eq(f.first, 1);
    ck_assert_uint_eq(f.last, 500);
    ck_assert_uint_eq(f.lost, 0);
  }
  er_lines_free(&l);
  er_run_free(&r);
  er_rmdir(dir);
}
END_TEST

static int count_rec_n(void *data, int domain, uint64_t ts, int id,
                       const char *name, int64_t value) {
  (void)domain, (void)ts, (void)id, (void)value;
  if (name && !strcmp(name, "rec.n")) ++*(uint64_t *)data;
  return 1;
}

/* A file read as OCaml 5's reader reads it: without the extension
 * block's magic the cursor takes it for an OCaml 5 file, and finds the
 * same events, the user events' names in their slots. */
START_TEST(test_ocaml5_reads_each) {
  need();
  const char *dir = er_tmpdir();
  const char *opts[] = {"--rotate", "2M", NULL};
  const char *prog[] = {"50000", NULL};
  char out[PATH_MAX];
  struct er_run r = record_cmd(dir, "OCAMLRUNPARAM=e=22", opts, prog, out);
  er_run_free(&r);
  struct er_lines l = er_entries(out, ".events");
  ck_assert_uint_ge(l.n, 2);
  uint64_t values = 0;
  for (size_t i = 0; i < l.n; i++) {
    size_t len;
    char *bytes = er_slurp(l.v[i], &len);
    ((uint64_t *)(bytes + 64))[ER_EXT_MAGIC_W] = 0;
    char plain[PATH_MAX + 16];
    snprintf(plain, sizeof plain, "%s/plain.events", dir);
    unlink(plain);
    int fd = open(plain, O_WRONLY | O_CREAT | O_EXCL, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, bytes, len), (ssize_t)len);
    close(fd);
    free(bytes);
    eventring_cursor *c;
    ck_assert_int_eq(eventring_cursor_open_file(&c, plain), 0);
    ck_assert_ptr_null(eventring_cursor_program(c));
    eventring_callbacks *cb = eventring_callbacks_create();
    eventring_callbacks_set_user_int(cb, count_rec_n);
    uint64_t n = 0;
    int got;
    while ((got = eventring_cursor_poll(c, cb, &n, 0)) > 0) {
    }
    ck_assert_int_eq(got, 0);
    eventring_callbacks_free(cb);
    eventring_cursor_free(c);
    struct file_seen f;
    read_one(dir, l.v[i], &f);
    ck_assert_uint_eq(n, f.values);
    values += n;
  }
  ck_assert_uint_eq(values, 50000);
  er_lines_free(&l);
  er_rmdir(dir);
}
END_TEST

START_TEST(test_bad_usage) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char file[PATH_MAX];
  snprintf(file, sizeof file, "%s/file", dir);
  er_write_text(file, "x\n", 1);
  static const struct {
    const char *args[8];
    int code;
    const char *what;
  } cases[] = {
      {{"record", "--pid", "1", NULL}, 2, "-o DIR"},
      {{"record", "-o", "o", NULL}, 2, "nothing to record"},
      {{"record", "-o", "o", "--rotate", "1K", "--pid", "1", NULL}, 2,
       "--rotate 1K"},
      {{"record", "-o", "o", "--rotate", "soon", "--pid", "1", NULL}, 2,
       "invalid --rotate 'soon'"},
      {{"record", "-o", "o", "--keep", "0", "--pid", "1", NULL}, 2,
       "invalid --keep '0'"},
      {{"record", "-o", "o", "--max-size", "lots", "--pid", "1", NULL}, 2,
       "invalid --max-size 'lots'"},
      {{"record", "-o", "o", "--pid", "1", "extra", NULL}, 2,
       "unexpected argument 'extra'"},
      {{"record", "-o", "file", "--pid", "1", NULL}, 1, "/file: not a "
       "directory"},
      {{"record", "-o", "o", "--pid", "999999999", NULL}, 1, "999999999"},
  };
  /* "o" and "file" stand for those names in `dir`: the tool runs in the
   * test's own directory, which must not get them. */
  char o[PATH_MAX];
  snprintf(o, sizeof o, "%s/o", dir);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *args[8];
    for (int k = 0; k < 8; k++) {
      const char *a = cases[i].args[k];
      args[k] = a && !strcmp(a, "o") ? o : a && !strcmp(a, "file") ? file : a;
    }
    struct er_run r = er_run_tool(dir, args, 0);
    ck_assert_msg(er_exit_code(&r, "record") == cases[i].code,
                  "case %zu: status %d, stderr %s", i,
                  er_exit_code(&r, "record"), r.err);
    ck_assert_msg(strstr(r.err, cases[i].what) != NULL,
                  "case %zu: stderr lacks '%s': %s", i, cases[i].what, r.err);
    er_run_free(&r);
  }
  er_rmdir(dir);
}
END_TEST

static TCase *tc_rotation(void) {
  TCase *tc = er_tcase("rotation");
  tcase_add_test(tc, test_rotate_size);
  tcase_add_test(tc, test_rotate_time);
  tcase_add_test(tc, test_rotate_late);
  tcase_add_loop_test(tc, test_caps, 0, 2);
  return tc;
}

static TCase *tc_files(void) {
  TCase *tc = er_tcase("files");
  tcase_add_test(tc, test_lost_exact);
  tcase_add_test(tc, test_sigterm);
  tcase_add_test(tc, test_dir_service);
  tcase_add_test(tc, test_ocaml5_reads_each);
  tcase_add_test(tc, test_bad_usage);
  return tc;
}

ER_TEST_MAIN("record", tc_rotation, tc_files)
