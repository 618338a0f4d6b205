/* Tests windows against losses: a reader that starts after a ring wrapped reads a window of the run (eventring_window_fn), one that falls behind the writer loses events (lost_events); snapshots, their readers and `eventring stats` keep the two apart. */
#include <inttypes.h>
#include <stdint.h>
#include <sys/wait.h>

#include "eventring.h"
#include "ring_format.h"
#include "testlib.h"

struct counts {
  uint64_t window[8], lost[8], events[8];
  int window_calls[8];
  int window_after_event; /* a window reported after an event of its ring */
};

static int on_window(void *data, int domain, uint64_t before) {
  struct counts *c = data;
  ck_assert_int_lt(domain, 8);
  if (c->events[domain]) c->window_after_event = 1;
  c->window[domain] += before;
  c->window_calls[domain]++;
  return 1;
}

static int on_lost(void *data, int domain, uint64_t n) {
  struct counts *c = data;
  ck_assert_int_lt(domain, 8);
  c->lost[domain] += n;
  return 1;
}

static int count(void *data, int domain) {
  ((struct counts *)data)->events[domain]++;
  return 1;
}
static int on_phase(void *data, int domain, uint64_t ts, int id) {
  (void)ts, (void)id;
  return count(data, domain);
}
static int on_int(void *data, int domain, uint64_t ts, int id, const char *n,
                  int64_t v) {
  (void)ts, (void)id, (void)n, (void)v;
  return count(data, domain);
}
static int on_custom(void *data, int domain, uint64_t ts, int id,
                     const char *n, const void *b, size_t l) {
  (void)ts, (void)id, (void)n, (void)b, (void)l;
  return count(data, domain);
}
static int on_life(void *data, int domain, uint64_t ts, int kind, int64_t v,
                   int has) {
  (void)ts, (void)kind, (void)v, (void)has;
  return count(data, domain);
}

static eventring_callbacks *callbacks(int with_window) {
  eventring_callbacks *cb = eventring_callbacks_create();
  ck_assert_ptr_nonnull(cb);
  eventring_callbacks_set_runtime_begin(cb, on_phase);
  eventring_callbacks_set_runtime_end(cb, on_phase);
  eventring_callbacks_set_user_int(cb, on_int);
  eventring_callbacks_set_user_custom(cb, on_custom);
  eventring_callbacks_set_lifecycle(cb, on_life);
  eventring_callbacks_set_lost_events(cb, on_lost);
  if (with_window) eventring_callbacks_set_window(cb, on_window);
  return cb;
}

static void drain(eventring_cursor *c, struct counts *n, int with_window) {
  eventring_callbacks *cb = callbacks(with_window);
  int r;
  while ((r = eventring_cursor_poll(c, cb, n, 0)) > 0) {
  }
  ck_assert_int_eq(r, 0);
  eventring_callbacks_free(cb);
}

/* snap_writer (testsuite/progs) with a ring of 1024 words. */
struct writer {
  struct er_pipe_proc p;
  char path[PATH_MAX];
};

static int start_writer(struct writer *w, const char *dir) {
  const char *prog = er_prog_path("snap_writer");
  if (!prog) return 0;
  char envdir[PATH_MAX + 32];
  snprintf(envdir, sizeof envdir, "OCAML_RUNTIME_EVENTS_DIR=%s", dir);
  char *env[] = {envdir, "OCAMLRUNPARAM=e=10", NULL};
  char *argv[] = {(char *)prog, NULL};
  w->p = er_pipe_start(argv, env, NULL);
  char line[PATH_MAX + 16];
  ck_assert_int_eq(er_read_line(w->p.out, line, sizeof line, ER_RUN_TIMEOUT),
                   0);
  ck_assert_int_eq(strncmp(line, "started ", 8), 0);
  ck_assert_uint_lt(strlen(line + 8), sizeof w->path);
  memcpy(w->path, line + 8, strlen(line + 8) + 1);
  return 1;
}

static void ask(struct writer *w, const char *cmd, const char *want) {
  size_t n = strlen(cmd);
  ck_assert_int_eq(write(w->p.in, cmd, n), (ssize_t)n);
  ck_assert_int_eq(write(w->p.in, "\n", 1), 1);
  char ans[128];
  ck_assert_int_eq(er_read_line(w->p.out, ans, sizeof ans, ER_RUN_TIMEOUT), 0);
  ck_assert_str_eq(ans, want);
}

static uint64_t written(const char *path) {
  struct rf_file f;
  er_open_ring(path, &f);
  uint64_t n = f.rings[0].written;
  rf_close(&f);
  return n;
}

/* A reader that starts after the ring wrapped reads a window: what was
 * overwritten before is reported once, as the window's start, and is no
 * loss; when it then falls behind the writer, what it misses is lost. */
START_TEST(test_live_window_then_loss) {
  const char *dir = er_tmpdir();
  struct writer w;
  if (!start_writer(&w, dir)) ER_SKIP("snap_writer is not built");
  /* 500 iterations of 12 words: the 1024-word ring wraps several times. */
  ask(&w, "w 500", "ok 500");
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, w.path), 0);
  struct counts n;
  memset(&n, 0, sizeof n);
  drain(c, &n, 1);
  ck_assert_int_eq(n.window_calls[0], 1);
  ck_assert_int_eq(n.window_after_event, 0);
  ck_assert_uint_gt(n.window[0], 0);
  ck_assert_uint_eq(n.lost[0], 0);
  ck_assert_uint_eq(n.window[0] + n.events[0], written(w.path));
  /* The reader falls behind: the writer laps it between two polls. */
  ask(&w, "w 500", "ok 1000");
  drain(c, &n, 1);
  ck_assert_int_eq(n.window_calls[0], 1);
  ck_assert_uint_gt(n.lost[0], 0);
  ck_assert_uint_eq(n.window[0] + n.lost[0] + n.events[0], written(w.path));
  eventring_cursor_free(c);

  /* Without a window callback, the cursor reports as OCaml's does. */
  ck_assert_int_eq(eventring_cursor_open_file(&c, w.path), 0);
  struct counts o;
  memset(&o, 0, sizeof o);
  drain(c, &o, 0);
  ck_assert_uint_gt(o.lost[0], 0);
  ck_assert_uint_eq(o.lost[0] + o.events[0], written(w.path));
  eventring_cursor_free(c);
  close(w.p.in);
  ck_assert_int_eq(er_pipe_finish(&w.p, ER_RUN_TIMEOUT), 0);
}
END_TEST

/* A ring that was empty when the reader first looked: everything it
 * misses later is lost, none of it a window. */
START_TEST(test_live_empty_then_loss) {
  const char *dir = er_tmpdir();
  struct writer w;
  if (!start_writer(&w, dir)) ER_SKIP("snap_writer is not built");
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, w.path), 0);
  struct counts n;
  memset(&n, 0, sizeof n);
  drain(c, &n, 1); /* ring_start only */
  ask(&w, "w 500", "ok 500");
  drain(c, &n, 1);
  ck_assert_int_eq(n.window_calls[0], 0);
  ck_assert_uint_gt(n.lost[0], 0);
  ck_assert_uint_eq(n.lost[0] + n.events[0], written(w.path));
  eventring_cursor_free(c);
  close(w.p.in);
  ck_assert_int_eq(er_pipe_finish(&w.p, ER_RUN_TIMEOUT), 0);
}
END_TEST

/* A snapshot of a wrapped ring: its readers are told of a window, with
 * nothing lost; `eventring stats` says what the window holds, and no
 * tool advises a larger ring for a loss that did not happen.  A compact
 * file's GAP_LOST word splits the gap into window and loss. */
START_TEST(test_snapshot_window) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  struct writer w;
  if (!start_writer(&w, dir)) ER_SKIP("snap_writer is not built");
  ask(&w, "w 500", "ok 500");
  char snap[PATH_MAX + 16], cmd[PATH_MAX + 32];
  snprintf(snap, sizeof snap, "%s/snap.events", dir);
  snprintf(cmd, sizeof cmd, "s %s", snap);
  ask(&w, cmd, "snap 0");
  uint64_t total = written(w.path);
  close(w.p.in);
  ck_assert_int_eq(er_pipe_finish(&w.p, ER_RUN_TIMEOUT), 0);

  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, snap), 0);
  struct counts n;
  memset(&n, 0, sizeof n);
  drain(c, &n, 1);
  eventring_cursor_free(c);
  ck_assert_uint_gt(n.window[0], 0);
  ck_assert_uint_eq(n.lost[0], 0);
  ck_assert_uint_eq(n.window[0] + n.events[0], total);

  const char *json[] = {"stats", "--json", snap, NULL};
  struct er_run r = er_run_tool(dir, json, 0);
  ck_assert_int_eq(er_exit_code(&r, "stats --json"), 0);
  ck_assert_msg(strstr(r.out, "\"lost\": 0, ") != NULL, "%s", r.out);
  char want[64];
  snprintf(want, sizeof want, "\"before_window\": %" PRIu64 ",", n.window[0]);
  ck_assert_msg(strstr(r.out, want) != NULL, "%s", r.out);
  er_run_free(&r);
  const char *text[] = {"stats", snap, NULL};
  r = er_run_tool(dir, text, 0);
  ck_assert_int_eq(er_exit_code(&r, "stats"), 0);
  ck_assert_msg(strstr(r.out, "\nwindow: the run's last ") != NULL, "%s",
                r.out);
  ck_assert_msg(strstr(r.err, "events lost") == NULL, "%s", r.err);
  ck_assert_msg(strstr(r.err, "e=18") == NULL, "%s", r.err);
  ck_assert_msg(strstr(r.err, "a window of the run") != NULL, "%s", r.err);
  er_run_free(&r);

  /* 7 of the gap's events lost while they were copied. */
  struct rf_file f;
  er_open_ring(snap, &f);
  uint64_t hdr = f.meta[ER_META_HEADERS_OFFSET];
  rf_close(&f);
  int fd = open(snap, O_RDWR);
  ck_assert_int_ge(fd, 0);
  uint64_t seven = 7;
  ck_assert_int_eq(pwrite(fd, &seven, 8, (off_t)(hdr + 8 * ER_RING_GAP_LOST)),
                   8);
  ck_assert_int_eq(eventring_cursor_open_file(&c, snap), 0);
  struct counts g;
  memset(&g, 0, sizeof g);
  drain(c, &g, 1);
  eventring_cursor_free(c);
  ck_assert_uint_eq(g.window[0], n.window[0] - 7);
  ck_assert_uint_eq(g.lost[0], 7);
  /* More lost than the gap holds: the ring is malformed. */
  uint64_t more = n.window[0] + 1;
  ck_assert_int_eq(pwrite(fd, &more, 8, (off_t)(hdr + 8 * ER_RING_GAP_LOST)),
                   8);
  close(fd);
  ck_assert_int_eq(eventring_cursor_open_file(&c, snap), 0);
  eventring_callbacks *cb = callbacks(1);
  memset(&g, 0, sizeof g);
  ck_assert_int_eq(eventring_cursor_poll(c, cb, &g, 0), EVENTRING_E_CORRUPT);
  eventring_callbacks_free(cb);
  eventring_cursor_free(c);
}
END_TEST

/* `eventring snapshot` of a wrapped ring says the file is a window. */
START_TEST(test_tool_snapshot_says_window) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  struct writer w;
  if (!start_writer(&w, dir)) ER_SKIP("snap_writer is not built");
  ask(&w, "w 500", "ok 500");
  char pid[32], out[PATH_MAX + 16];
  snprintf(pid, sizeof pid, "%ld", (long)w.p.pid);
  snprintf(out, sizeof out, "%s/tool.events", dir);
  const char *args[] = {"snapshot", "--dir", dir, "--pid", pid, "-o", out,
                        NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "snapshot") == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, " 0 lost, ") != NULL, "%s", r.err);
  ck_assert_msg(strstr(r.err, "eventring: the snapshot is a window of the "
                              "run: its last ") != NULL,
                "%s", r.err);
  er_run_free(&r);
  close(w.p.in);
  ck_assert_int_eq(er_pipe_finish(&w.p, ER_RUN_TIMEOUT), 0);
}
END_TEST

static TCase *tc_window(void) {
  TCase *tc = er_tcase("window");
  tcase_add_test(tc, test_live_window_then_loss);
  tcase_add_test(tc, test_live_empty_then_loss);
  tcase_add_test(tc, test_snapshot_window);
  tcase_add_test(tc, test_tool_snapshot_says_window);
  return tc;
}

ER_TEST_MAIN("window", tc_window)
