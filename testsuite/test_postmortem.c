/* Tests that a writer killed by SIGKILL or crashing with SIGSEGV, or one that exits at once, leaves a ring file from which the cursor and `eventring dump` read every completed event, and never a half-written one. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "consumer_cb.h"
#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "testlib.h"

/* progs/fault_writer.c describes the events checked here. */
#define MAX_DOM 16

#define NEED_WRITER()                                                      \
  do {                                                                     \
    if (er_tracing_off()) ER_SKIP("a build without tracing");              \
    if (!er_prog_path("fault_writer"))                                     \
      ER_SKIP("EVENTRING_TEST_PROGS has no fault_writer");                 \
  } while (0)

/* Reads one line from fd within `seconds` (fails the test otherwise). */
static void read_line(int fd, char *buf, size_t cap, double seconds) {
  int rc = er_read_line(fd, buf, cap, seconds);
  ck_assert_msg(rc != -1, "no line from the helper within %.0f s", seconds);
  ck_assert_msg(rc == 0,
                "helper closed its output before a line (or its "
                "line did not fit)");
}

/* ------------------------------------------------------------------ */
/* The checker: fed by the cursor or by dump's lines.                   */

struct dom_check {
  int64_t last;       /* the last sequence number seen, -1 before one */
  int thread;         /* t= of the payloads, -1 before one */
  uint64_t events;    /* events delivered, every kind */
  uint64_t user;      /* fw.seq and fw.blob events */
  uint64_t lost;      /* lost events reported */
  uint64_t last_ts;
};

struct check {
  struct dom_check d[MAX_DOM];
  int bad;            /* number of violations */
  char why[256];      /* the first one */
  int ring_start, ring_stop;
  int64_t start_pid;
};

static void check_init(struct check *c) {
  memset(c, 0, sizeof *c);
  for (int i = 0; i < MAX_DOM; i++) c->d[i].last = -1, c->d[i].thread = -1;
}

#define VIOLATION(c, ...)                                             \
  do {                                                                \
    if ((c)->bad++ == 0) snprintf((c)->why, sizeof (c)->why, __VA_ARGS__); \
  } while (0)

static struct dom_check *dom(struct check *c, int domain) {
  if (domain < 0 || domain >= MAX_DOM) {
    VIOLATION(c, "event in domain %d", domain);
    return NULL;
  }
  return &c->d[domain];
}

static void saw_seq(struct check *c, int domain, int64_t n, int thread) {
  struct dom_check *d = dom(c, domain);
  if (!d) return;
  d->user++;
  /* The first user event read may be anywhere (older ones were
   * overwritten and reported lost); from then on nothing is skipped. */
  if (d->last >= 0 && n != d->last + 1)
    VIOLATION(c, "domain %d: sequence %" PRId64 " after %" PRId64, domain, n,
              d->last);
  d->last = n;
  if (thread >= 0) {
    if (d->thread >= 0 && d->thread != thread)
      VIOLATION(c, "domain %d: thread %d after %d", domain, thread, d->thread);
    d->thread = thread;
  }
}

static uint32_t fnv(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

/* Checks one fw.blob payload (fault_writer.c's form). */
static void saw_blob(struct check *c, int domain, const char *p, size_t len) {
  char s[200];
  if (len >= sizeof s) {
    VIOLATION(c, "domain %d: payload of %zu bytes", domain, len);
    return;
  }
  memcpy(s, p, len);
  s[len] = '\0';
  const char *cpos = strstr(s, " c=");
  int t;
  unsigned long long n;
  unsigned h;
  if (!cpos || sscanf(s, "t=%d s=%llu f=", &t, &n) != 2 ||
      sscanf(cpos, " c=%8x", &h) != 1 || strlen(cpos) != 11 ||
      fnv(s, (size_t)(cpos - s)) != h) {
    VIOLATION(c, "domain %d: torn or foreign payload \"%s\"", domain, s);
    return;
  }
  /* The fill is a function of n: a payload stitched from two events
   * would have the right hash only by accident. */
  unsigned fill = (unsigned)(n * 7 % 61);
  const char *f = strstr(s, "f=") + 2;
  if ((size_t)(cpos - f) != fill)
    VIOLATION(c, "domain %d: fill of %zu for %llu", domain,
              (size_t)(cpos - f), n);
  saw_seq(c, domain, (int64_t)n, t);
}

static void saw_event(struct check *c, int domain, uint64_t ts) {
  struct dom_check *d = dom(c, domain);
  if (!d) return;
  d->events++;
  if (ts && ts < d->last_ts)
    VIOLATION(c, "domain %d: timestamp went back", domain);
  if (ts) d->last_ts = ts;
}

/* Cursor callbacks. */

static int cb_phase(void *x, int domain, uint64_t ts, int phase) {
  (void)phase;
  saw_event(x, domain, ts);
  return 1;
}
static int cb_counter(void *x, int domain, uint64_t ts, int k, uint64_t v) {
  (void)k, (void)v;
  saw_event(x, domain, ts);
  return 1;
}
static int cb_alloc(void *x, int domain, uint64_t ts, const uint64_t *b) {
  (void)b;
  saw_event(x, domain, ts);
  return 1;
}
static int cb_life(void *x, int domain, uint64_t ts, int kind, int64_t v,
                   int has) {
  struct check *c = x;
  (void)has;
  saw_event(c, domain, ts);
  if (kind == EVENTRING_LIFECYCLE_RING_START) c->ring_start++, c->start_pid = v;
  if (kind == EVENTRING_LIFECYCLE_RING_STOP) c->ring_stop++;
  return 1;
}
static int cb_unit(void *x, int domain, uint64_t ts, int id, const char *n) {
  (void)id, (void)n;
  saw_event(x, domain, ts);
  return 1;
}
static int cb_span(void *x, int domain, uint64_t ts, int id, const char *n,
                   int e) {
  (void)id, (void)n, (void)e;
  saw_event(x, domain, ts);
  return 1;
}
static int cb_int(void *x, int domain, uint64_t ts, int id, const char *name,
                  int64_t v) {
  (void)id;
  struct check *c = x;
  saw_event(c, domain, ts);
  if (name && !strcmp(name, "fw.seq")) saw_seq(c, domain, v, -1);
  else VIOLATION(c, "domain %d: int event %s", domain, name ? name : "?");
  return 1;
}
static int cb_custom(void *x, int domain, uint64_t ts, int id,
                     const char *name, const void *b, size_t len) {
  (void)id;
  struct check *c = x;
  saw_event(c, domain, ts);
  if (name && !strcmp(name, "fw.blob")) saw_blob(c, domain, b, len);
  else VIOLATION(c, "domain %d: custom event %s", domain, name ? name : "?");
  return 1;
}
static int cb_lost(void *x, int domain, uint64_t n) {
  struct dom_check *d = dom(x, domain);
  if (d) d->lost += n;
  return 1;
}

/* Reads the whole file with a cursor into c. */
static void read_with_cursor(const char *path, struct check *c) {
  check_init(c);
  eventring_cursor *cur;
  int rc = eventring_cursor_open_file(&cur, path);
  ck_assert_msg(rc == 0, "cursor on %s: %s", path, eventring_strerror(rc));
  ck_assert_int_eq(eventring_cursor_lost_unit(cur), EVENTRING_LOST_EVENTS);
  static const struct tool_handlers h = {.runtime_begin = cb_phase,
      .runtime_end = cb_phase, .runtime_counter = cb_counter, .alloc = cb_alloc,
      .lifecycle = cb_life, .user_unit = cb_unit, .user_int = cb_int,
      .user_span = cb_span, .user_custom = cb_custom, .lost_events = cb_lost};
  eventring_callbacks *cb = er_callbacks(&h);
  /* The file is quiescent: polls end once they deliver nothing; the
   * bound only guards against a reader that never ends. */
  int polls = 0;
  for (;;) {
    int n = eventring_cursor_poll(cur, cb, c, 0);
    ck_assert_msg(n >= 0, "poll: %s", eventring_strerror(n));
    if (n == 0) break;
    ck_assert_int_lt(++polls, 100000);
  }
  eventring_callbacks_free(cb);
  eventring_cursor_free(cur);
}

/* Runs `eventring dump` with `args` (NULL-terminated, after "dump") and
 * feeds its lines into c.  Returns the tool's wait status. */
static int read_with_dump(const char *dir, const char *const *args,
                          struct check *c, char *err_text, size_t err_cap) {
  check_init(c);
  const char *argv[16] = {"dump", "--time=raw"};
  size_t k = 2;
  for (; *args; args++) {
    ck_assert_uint_lt(k, 15);
    argv[k++] = *args;
  }
  argv[k] = NULL;
  struct er_run r = er_run_tool(dir, argv, 0);
  int st = r.status;
  ck_assert_msg(st != -1, "eventring dump did not end");
  snprintf(err_text, err_cap, "%s", r.err);
  /* With `-o FILE` (a command keeps standard output) the listing is
   * there. */
  if (k > 3 && !strcmp(argv[2], "-o")) {
    free(r.out);
    r.out = access(argv[3], F_OK) == 0 ? er_slurp(argv[3], NULL) : strdup("");
  }

  FILE *f = fmemopen(r.out, strlen(r.out), "r");
  ck_assert_ptr_nonnull(f);
  char *line = NULL;
  size_t cap = 0;
  uint64_t summary_total = UINT64_MAX;
  uint64_t total = 0;
  while (getline(&line, &cap, f) > 0) {
    int domain;
    uint64_t ts, v;
    char kind[32], name[140];
    int off = 0;
    if (sscanf(line, "domain=%d kind=lost_events value=%" SCNu64, &domain,
               &v) == 2) {
      struct dom_check *d = dom(c, domain);
      if (d) d->lost += v;
      continue;
    }
    if (sscanf(line, "SUMMARY total=%" SCNu64, &v) == 1) {
      summary_total = v;
      continue;
    }
    if (sscanf(line, "domain=%d ts=%" SCNu64 " kind=%31s name=%139s value=%n",
               &domain, &ts, kind, name, &off) != 4 || off == 0) {
      VIOLATION(c, "dump line: %s", line);
      continue;
    }
    total++;
    saw_event(c, domain, ts);
    char *val = line + off;
    val[strcspn(val, "\n")] = '\0';
    if (!strcmp(kind, "lifecycle") && !strcmp(name, "ring_start"))
      c->ring_start++, c->start_pid = strtoll(val, NULL, 10);
    else if (!strcmp(kind, "lifecycle") && !strcmp(name, "ring_stop"))
      c->ring_stop++;
    else if (!strcmp(kind, "user_int") && !strcmp(name, "fw.seq"))
      saw_seq(c, domain, strtoll(val, NULL, 10), -1);
    else if (!strcmp(kind, "user_custom") && !strcmp(name, "fw.blob")) {
      /* Payloads are printable and hold neither '"' nor '\\': the
       * literal is the payload between quotes. */
      size_t n = strlen(val);
      if (n < 2 || val[0] != '"' || val[n - 1] != '"')
        VIOLATION(c, "dump custom value %s", val);
      else
        saw_blob(c, domain, val + 1, n - 2);
    }
  }
  free(line);
  fclose(f);
  er_run_free(&r);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
    ck_assert_msg(summary_total != UINT64_MAX, "dump printed no SUMMARY");
    ck_assert_uint_eq(summary_total, total);
  }
  return st;
}

static void assert_clean(const struct check *c, const char *who) {
  ck_assert_msg(c->bad == 0, "%s: %d violation(s), first: %s", who, c->bad,
                c->why);
}

/* ------------------------------------------------------------------ */
/* Killed writers.                                                      */

/* Sets the environment of the helpers: small rings (so that they wrap
 * within the test), few slots, the file kept. */
static const char *writer_env(void) {
  const char *dir = er_tmpdir();
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  setenv("OCAMLRUNPARAM", "e=13,d=8", 1);
  return dir;
}

/* Every ring of the dead writer's file, read by the cursor, by dump and
 * by the independent decoder, agrees: per domain, lost + delivered ==
 * the events the writer published (those evicted, then those between
 * head and tail), the sequence has no hole, the payloads are whole.
 * WRITTEN is stored just before TAIL (ring_format.h), so a writer killed
 * between the two stores leaves it one ahead: the event it was
 * committing, never published and never delivered. */
static void check_dead_file(const char *dir, const char *path, int nthreads) {
  struct check cur, dmp;
  read_with_cursor(path, &cur);
  assert_clean(&cur, "cursor");
  ck_assert_int_eq(cur.ring_start, 1);
  ck_assert_int_eq(cur.ring_stop, 0); /* it died: no teardown ran */

  struct rf_file f;
  er_open_ring(path, &f);
  for (int d = 0; d < MAX_DOM && (uint64_t)d < f.max_domains; d++) {
    const struct rf_ring *r = &f.rings[d];
    ck_assert_msg(cur.d[d].lost + cur.d[d].events == r->evicted + r->nevents,
                  "domain %d: lost %" PRIu64 " + delivered %" PRIu64
                  " != published %" PRIu64 " + %zu",
                  d, cur.d[d].lost, cur.d[d].events, r->evicted, r->nevents);
    ck_assert_uint_eq(cur.d[d].events, r->nevents);
    ck_assert_uint_eq(cur.d[d].lost, r->evicted);
    ck_assert_msg(r->written == r->evicted + r->nevents ||
                      r->written == r->evicted + r->nevents + 1,
                  "domain %d: WRITTEN %" PRIu64 ", published %" PRIu64, d,
                  r->written, r->evicted + r->nevents);
  }
  /* Each writer thread had its own ring, which it filled. */
  int busy = 0;
  for (int d = 1; d < MAX_DOM; d++)
    if (cur.d[d].user > 1000) {
      busy++;
      ck_assert_uint_gt(cur.d[d].lost, 0);
    }
  ck_assert_int_eq(busy, nthreads);
  rf_close(&f);

  if (!er_tool_path()) {
    er_note_skip("EVENTRING_TEST_TOOL is not set: dump not checked");
    return;
  }
  char err[1024];
  const char *args[] = {path, NULL};
  int st = read_with_dump(dir, args, &dmp, err, sizeof err);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "eventring dump: status %d, stderr: %s", st, err);
  assert_clean(&dmp, "dump");
  for (int d = 0; d < MAX_DOM; d++) {
    ck_assert_uint_eq(dmp.d[d].events, cur.d[d].events);
    ck_assert_uint_eq(dmp.d[d].lost, cur.d[d].lost);
    ck_assert_uint_eq(dmp.d[d].user, cur.d[d].user);
    ck_assert_int_eq(dmp.d[d].last, cur.d[d].last);
  }
}

/* Starts fault_writer with `args` and returns its pid once it printed
 * "ready PATH" (PATH into path). */
static pid_t start_writer(const char *const *args, char *path, size_t cap) {
  int p[2];
  ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
  char *argv[8];
  int k = 0;
  argv[k++] = (char *)er_prog_path("fault_writer");
  for (; *args && k < 7; args++) argv[k++] = (char *)*args;
  argv[k] = NULL;
  pid_t pid = er_spawn(argv, ER_FD_NULL, p[1], ER_FD_KEEP, NULL, 0);
  close(p[1]);
  char line[PATH_MAX + 16];
  read_line(p[0], line, sizeof line, ER_RUN_TIMEOUT);
  close(p[0]);
  ck_assert_msg(strncmp(line, "ready ", 6) == 0, "helper said: %s", line);
  size_t n = strlen(line + 6);
  ck_assert_uint_lt(n, cap);
  memcpy(path, line + 6, n + 1);
  return pid;
}

START_TEST(test_sigkill_mid_stream) {
  NEED_WRITER();
  const char *dir = writer_env();
  char path[PATH_MAX];
  const char *args[] = {"run", "4", NULL};
  /* "ready": every writer has wrapped its ring and writes on. */
  pid_t pid = start_writer(args, path, sizeof path);
  ck_assert_int_eq(kill(pid, SIGKILL), 0);
  int st = er_wait_for(pid, ER_RUN_TIMEOUT);
  ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %d", st);
  check_dead_file(dir, path, 4);
  er_rmdir(dir);
}
END_TEST

START_TEST(test_sigsegv_mid_stream) {
  NEED_WRITER();
  const char *dir = writer_env();
  /* Under a sanitizer, its own SIGSEGV handler would report and exit;
   * the test wants the plain crash. */
  const char *vars[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"};
  for (int i = 0; i < 3; i++) {
    const char *old = getenv(vars[i]);
    char v[512];
    snprintf(v, sizeof v, "%s%shandle_segv=0:disable_coredump=1",
             old ? old : "", old && *old ? ":" : "");
    setenv(vars[i], v, 1);
  }
  /* No core file from the crash. */
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  char path[PATH_MAX];
  const char *args[] = {"segv", "3", "30", NULL};
  pid_t pid = start_writer(args, path, sizeof path);
  int st = er_wait_for(pid, ER_RUN_TIMEOUT);
  ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status %d", st);
  check_dead_file(dir, path, 3);
  er_rmdir(dir);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Short-lived programs.                                                */

/* Runs fault_writer with args to its end and returns its file's path. */
static void run_short(const char *dir, const char *const *args, char *path,
                      size_t cap) {
  char *argv[8];
  int k = 0;
  argv[k++] = (char *)er_prog_path("fault_writer");
  for (; *args && k < 7; args++) argv[k++] = (char *)*args;
  argv[k] = NULL;
  pid_t pid = er_spawn(argv, ER_FD_NULL, -1, ER_FD_KEEP, NULL, 0);
  int st = er_wait_for(pid, ER_RUN_TIMEOUT);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
  er_ring_path_for(path, cap, dir, pid);
  ck_assert_msg(access(path, F_OK) == 0, "%s is missing", path);
}

/* A program that wrote n pairs from its main thread and exited: all of
 * them, in order, nothing lost; ring_stop when `stopped`. */
static void check_short(const struct check *c, pid_t pid, long pairs,
                        int stopped, const char *who) {
  assert_clean(c, who);
  ck_assert_int_eq(c->ring_start, 1);
  if (pid) ck_assert_int_eq(c->start_pid, pid);
  ck_assert_int_eq(c->ring_stop, stopped);
  ck_assert_uint_eq(c->d[0].user, (uint64_t)(2 * pairs));
  ck_assert_int_eq(c->d[0].last, 2 * pairs - 1);
  ck_assert_uint_eq(c->d[0].lost, 0);
  /* ring_start, the user events, ring_stop. */
  ck_assert_uint_eq(c->d[0].events, 1 + (uint64_t)(2 * pairs) + stopped);
  for (int d = 1; d < MAX_DOM; d++) ck_assert_uint_eq(c->d[d].events, 0);
}

static pid_t pid_of(const char *path) {
  const char *b = strrchr(path, '/');
  return (pid_t)strtol(b ? b + 1 : path, NULL, 10);
}

static void short_case(const char *mode, long pairs, int stopped) {
  NEED_WRITER();
  const char *dir = er_tmpdir();
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  char path[PATH_MAX], n[16];
  snprintf(n, sizeof n, "%ld", pairs);
  const char *args[] = {mode, n, NULL};
  run_short(dir, args, path, sizeof path);
  struct check c;
  read_with_cursor(path, &c);
  check_short(&c, pid_of(path), pairs, stopped, "cursor");
  if (er_tool_path()) {
    char err[1024];
    const char *dargs[] = {path, NULL};
    int st = read_with_dump(dir, dargs, &c, err, sizeof err);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "dump: %s", err);
    check_short(&c, pid_of(path), pairs, stopped, "dump");
  } else {
    er_note_skip("EVENTRING_TEST_TOOL is not set: dump not checked");
  }
  er_rmdir(dir);
}

START_TEST(test_quick_exit) { short_case("quick", 0, 1); }
END_TEST

START_TEST(test_exit_after_writing) { short_case("exit", 3000, 1); }
END_TEST

/* _exit() runs no teardown: no ring_stop, every event still there. */
START_TEST(test_underscore_exit) { short_case("_exit", 3000, 0); }
END_TEST

/* The tool runs the program itself (`dump -- CMD`): preserved, drained,
 * the private directory removed. */
static void spawn_case(const char *mode, long pairs) {
  NEED_WRITER();
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char n[16];
  snprintf(n, sizeof n, "%ld", pairs);
  char listing[PATH_MAX];
  snprintf(listing, sizeof listing, "%s/listing.txt", dir);
  const char *args[] = {"-o", listing, "--", er_prog_path("fault_writer"),
                        mode, n, NULL};
  char err[1024];
  struct check c;
  setenv("TMPDIR", dir, 1);
  int st = read_with_dump(dir, args, &c, err, sizeof err);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 2 &&
      (strstr(err, "invalid option") || strstr(err, "unknown option") ||
       strstr(err, "usage") || strstr(err, "Usage")))
    ER_SKIP("eventring dump does not support `-- CMD` yet");
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "dump -- fault_writer %s: status %d, stderr: %s", mode, st,
                err);
  check_short(&c, 0, pairs, 1, "dump --");
  er_rmdir(dir);
}

START_TEST(test_spawn_quick) { spawn_case("quick", 0); }
END_TEST

START_TEST(test_spawn_exit) { spawn_case("exit", 3000); }
END_TEST

static TCase *tc_killed(void) {
  TCase *tc = er_tcase("killed");
  tcase_add_test(tc, test_sigkill_mid_stream);
  tcase_add_test(tc, test_sigsegv_mid_stream);
  return tc;
}

static TCase *tc_short(void) {
  TCase *tc = er_tcase("short_lived");
  tcase_add_test(tc, test_quick_exit);
  tcase_add_test(tc, test_exit_after_writing);
  tcase_add_test(tc, test_underscore_exit);
  tcase_add_test(tc, test_spawn_quick);
  tcase_add_test(tc, test_spawn_exit);
  return tc;
}

ER_TEST_MAIN("postmortem", tc_killed, tc_short)
