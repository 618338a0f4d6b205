/* Tests flight-recorder snapshots: eventring_snapshot() under writers at full speed, `eventring snapshot` against a follower, compact files through every reader. */
#include <inttypes.h>
#include <pthread.h>
#include <regex.h>
#include <semaphore.h>
#include <stdint.h>
#include <sys/wait.h>

#include "eventring.h"
#include "ring_format.h"
#include "testlib.h"

/* ------------------------------------------------------------------ */
/* Events as a reader sees them, for comparisons.                       */

struct ev {
  int domain;
  uint64_t ts;
  int kind;      /* 0 begin, 1 end, 2 counter, 3 lifecycle, 4 int, 5 custom,
                    6 other user events, 7 alloc */
  int id;
  uint64_t value; /* the int, the custom payload's first word, ... */
};

struct seen {
  struct ev *v;
  size_t n, cap;
  uint64_t lost[256];
  uint64_t delivered[256];
  uint64_t torn;     /* custom payloads whose hash does not hold */
  int64_t last_seq[256];
  int out_of_order;
};

static void push(struct seen *s, int d, uint64_t ts, int kind, int id,
                 uint64_t value) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 4096;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    ck_assert_ptr_nonnull(s->v);
  }
  s->v[s->n++] = (struct ev){d, ts, kind, id, value};
  if (d >= 0 && d < 256) s->delivered[d]++;
}

static int on_begin(void *p, int d, uint64_t ts, int id) {
  push(p, d, ts, 0, id, 0);
  return 1;
}
static int on_end(void *p, int d, uint64_t ts, int id) {
  push(p, d, ts, 1, id, 0);
  return 1;
}
static int on_counter(void *p, int d, uint64_t ts, int id, uint64_t v) {
  push(p, d, ts, 2, id, v);
  return 1;
}
static int on_alloc(void *p, int d, uint64_t ts, const uint64_t *b) {
  push(p, d, ts, 7, 0, b[0]);
  return 1;
}
static int on_lifecycle(void *p, int d, uint64_t ts, int kind, int64_t v,
                        int has) {
  push(p, d, ts, 3, kind, has ? (uint64_t)v : UINT64_MAX);
  return 1;
}
static int on_int(void *p, int d, uint64_t ts, int id, const char *name,
                  int64_t v) {
  (void)name;
  push(p, d, ts, 4, id, (uint64_t)v);
  return 1;
}
static int on_unit(void *p, int d, uint64_t ts, int id, const char *name) {
  (void)name;
  push(p, d, ts, 6, id, 0);
  return 1;
}
static int on_span(void *p, int d, uint64_t ts, int id, const char *name,
                   int is_end) {
  (void)name;
  push(p, d, ts, 6, id, 1 + (uint64_t)is_end);
  return 1;
}

/* The payload every custom event of these tests carries: a sequence
 * number and a hash of it, so that a torn copy shows. */
static uint64_t hash_of(uint64_t k) {
  return k * UINT64_C(0x9e3779b97f4a7c15) ^ 0x5eed;
}

static int on_custom(void *p, int d, uint64_t ts, int id, const char *name,
                     const void *bytes, size_t len) {
  struct seen *s = p;
  (void)name;
  uint64_t w[2] = {0, 0};
  if (len == sizeof w) memcpy(w, bytes, sizeof w);
  if (len != sizeof w || w[1] != hash_of(w[0])) s->torn++;
  if (d >= 0 && d < 256) {
    if ((int64_t)w[0] <= s->last_seq[d]) s->out_of_order = 1;
    s->last_seq[d] = (int64_t)w[0];
  }
  push(s, d, ts, 5, id, w[0]);
  return 1;
}
static int on_lost(void *p, int d, uint64_t n) {
  struct seen *s = p;
  if (d >= 0 && d < 256) s->lost[d] += n;
  return 1;
}

static eventring_callbacks *callbacks(void) {
  eventring_callbacks *cb = eventring_callbacks_create();
  ck_assert_ptr_nonnull(cb);
  eventring_callbacks_set_runtime_begin(cb, on_begin);
  eventring_callbacks_set_runtime_end(cb, on_end);
  eventring_callbacks_set_runtime_counter(cb, on_counter);
  eventring_callbacks_set_alloc(cb, on_alloc);
  eventring_callbacks_set_lifecycle(cb, on_lifecycle);
  eventring_callbacks_set_user_int(cb, on_int);
  eventring_callbacks_set_user_unit(cb, on_unit);
  eventring_callbacks_set_user_span(cb, on_span);
  eventring_callbacks_set_user_custom(cb, on_custom);
  eventring_callbacks_set_lost_events(cb, on_lost);
  return cb;
}

static void seen_init(struct seen *s) {
  memset(s, 0, sizeof *s);
  for (int d = 0; d < 256; d++) s->last_seq[d] = -1;
}

/* Everything the cursor `c` delivers until a poll finds nothing. */
static void drain(eventring_cursor *c, struct seen *s) {
  eventring_callbacks *cb = callbacks();
  int r;
  while ((r = eventring_cursor_poll(c, cb, s, 0)) > 0) {
  }
  ck_assert_int_eq(r, 0);
  eventring_callbacks_free(cb);
}

/* Reads a whole (compact) file through the consumer API. */
static void read_file(const char *path, struct seen *s) {
  eventring_cursor *c;
  int r = eventring_cursor_open_file(&c, path);
  ck_assert_msg(r == 0, "%s: %s", path, eventring_strerror(r));
  seen_init(s);
  drain(c, s);
  eventring_cursor_free(c);
}

static uint64_t sum(const uint64_t *v) {
  uint64_t t = 0;
  for (int d = 0; d < 256; d++) t += v[d];
  return t;
}

/* ------------------------------------------------------------------ */
/* In process: snapshots while two threads write at full speed.         */

#define WRITERS 2

/* Events a writer writes between two snapshots: more than its ring
 * (8192 words) holds, whatever their size, so that it has wrapped. */
#define LAP_EVENTS 8192

static int g_blob;
static int g_stop;
static uint64_t g_written[WRITERS]; /* the last event number written */
static sem_t g_ready, g_go, g_parked, g_leave;

static void *writer(void *arg) {
  int w = (int)(intptr_t)arg;
  ck_assert_int_eq(eventring_domain_bind(1 + w), 0);
  uint64_t k = 0;
  uint64_t p[2] = {k, hash_of(k)};
  eventring_write_custom(g_blob, p, sizeof p);
  /* Held after event 0, so that the test can count what comes before it
   * in the ring (domain_spawn) while nothing has been overwritten. */
  sem_post(&g_ready);
  while (sem_wait(&g_go) != 0) continue;
  /* Pairs with the test's release store of g_stop. */
  while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
    k++;
    p[0] = k;
    p[1] = hash_of(k);
    eventring_write_custom(g_blob, p, sizeof p);
    /* Pairs with the test's acquire load: event k is in the ring. */
    __atomic_store_n(&g_written[w], k, __ATOMIC_RELEASE);
  }
  /* Parked, not exited: a thread's exit may write to its ring, and the
   * last snapshot wants the ring as the writer left it. */
  sem_post(&g_parked);
  while (sem_wait(&g_leave) != 0) continue;
  return NULL;
}

/* Waits (bounded) until each writer has written LAP_EVENTS events after
 * event since[w], and notes where it got to. */
static void wait_laps(uint64_t *since) {
  double give_up = er_now() + ER_RUN_TIMEOUT;
  for (int w = 0; w < WRITERS; w++) {
    uint64_t k;
    while ((k = __atomic_load_n(&g_written[w], __ATOMIC_ACQUIRE)) <
           since[w] + LAP_EVENTS) {
      ck_assert_msg(er_now() < give_up, "writer %d stalled at event %llu", w,
                    (unsigned long long)k);
      er_sleep_ms(1);
    }
    since[w] = k;
  }
}

/* Snapshot `i` into `dir`, read back: never a torn or reordered event,
 * and for each writer's domain every event up to the last one copied
 * either copied or reported lost.  A domain the writer lapped during the
 * copy is reported lost whole, nothing of it delivered; that happens or
 * not as the two CPUs run, so it is allowed, never required.  Returns, in
 * last[w], the last event of writer w copied (-1 when none). */
static void snapshot_and_check(const char *dir, int i, const uint64_t *before,
                               int64_t *last) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/snap%d.events", dir, i);
  int r = eventring_snapshot(path);
  ck_assert_msg(r == 0, "eventring_snapshot: %s", eventring_strerror(r));
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0600);
  struct seen s;
  read_file(path, &s);
  ck_assert_uint_eq(s.torn, 0);
  ck_assert_int_eq(s.out_of_order, 0);
  for (int w = 0; w < WRITERS; w++) {
    int d = 1 + w;
    /* Each writer has written more than its ring holds since the start:
     * some of it is lost in every snapshot. */
    ck_assert_msg(s.lost[d] > 0, "snapshot %d, domain %d: nothing lost", i, d);
    last[w] = s.delivered[d] ? s.last_seq[d] : -1;
    if (s.delivered[d] == 0) continue;
    ck_assert_int_ge(s.last_seq[d], 0);
    ck_assert_uint_eq(s.lost[d] + s.delivered[d],
                      before[w] + (uint64_t)s.last_seq[d] + 1);
  }
  free(s.v);
}

START_TEST(test_inprocess_while_writing) {
  const char *dir = er_tmpdir();
  /* 8192 words: a copy (a few microseconds) rarely loses a whole ring to
   * a writer on the other CPU; when it does, the snapshot rightly holds
   * nothing of that domain (snapshot_and_check). */
  setenv("OCAMLRUNPARAM", "e=13", 1);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/early.events", dir);
  ck_assert_int_eq(eventring_snapshot(path), EVENTRING_E_NOTSTARTED);
  ck_assert_int_eq(access(path, F_OK), -1);
  ck_assert_int_eq(eventring_start(), 0);
  g_blob = eventring_register("snap.blob", EVENTRING_TYPE_CUSTOM);
  ck_assert_int_ge(g_blob, 0);
  sem_init(&g_ready, 0, 0);
  sem_init(&g_go, 0, 0);
  sem_init(&g_parked, 0, 0);
  sem_init(&g_leave, 0, 0);
  pthread_t t[WRITERS];
  for (int w = 0; w < WRITERS; w++)
    ck_assert_int_eq(pthread_create(&t[w], NULL, writer, (void *)(intptr_t)w),
                     0);
  for (int w = 0; w < WRITERS; w++)
    while (sem_wait(&g_ready) != 0) continue;
  /* Events of each writer's domain ahead of its event 0. */
  uint64_t before[WRITERS];
  {
    eventring_cursor *c;
    ck_assert_int_eq(eventring_cursor_open(&c, NULL, 0), 0);
    struct seen s;
    seen_init(&s);
    drain(c, &s);
    eventring_cursor_free(c);
    for (int w = 0; w < WRITERS; w++) {
      ck_assert_uint_eq(s.lost[1 + w], 0);
      ck_assert_uint_ge(s.delivered[1 + w], 1);
      before[w] = s.delivered[1 + w] - 1;
    }
    free(s.v);
  }
  for (int w = 0; w < WRITERS; w++) sem_post(&g_go);

  /* Four snapshots while the writers run, each after every writer has
   * wrapped its ring again. */
  uint64_t since[WRITERS] = {0};
  int64_t last[WRITERS];
  for (int i = 0; i < 4; i++) {
    wait_laps(since);
    snapshot_and_check(dir, i, before, last);
  }

  /* A last one with the writers parked: each ring is copied, up to the
   * writer's last event. */
  __atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
  for (int w = 0; w < WRITERS; w++)
    while (sem_wait(&g_parked) != 0) continue;
  snapshot_and_check(dir, 4, before, last);
  for (int w = 0; w < WRITERS; w++)
    ck_assert_int_eq(last[w], (int64_t)__atomic_load_n(&g_written[w],
                                                        __ATOMIC_ACQUIRE));
  for (int w = 0; w < WRITERS; w++) sem_post(&g_leave);
  for (int w = 0; w < WRITERS; w++) pthread_join(t[w], NULL);
  ck_assert_int_eq(eventring_stop(), 0);
  er_rmdir(dir);
}
END_TEST

/* The file is created as the ring file is: never over a file or through
 * a link, and the target of a dangling link is not created. */
START_TEST(test_inprocess_refuses) {
  const char *dir = er_tmpdir();
  ck_assert_int_eq(eventring_start(), 0);
  char path[PATH_MAX], target[PATH_MAX];
  ck_assert_int_eq(eventring_snapshot(NULL), EVENTRING_E_INVAL);
  ck_assert_int_eq(eventring_snapshot(""), EVENTRING_E_INVAL);
  snprintf(path, sizeof path, "%s/taken.events", dir);
  er_write_text(path, "mine\n", 1);
  ck_assert_int_eq(eventring_snapshot(path), -EEXIST);
  er_assert_content(path, "mine\n");
  snprintf(path, sizeof path, "%s/link.events", dir);
  snprintf(target, sizeof target, "%s/target", dir);
  ck_assert_int_eq(symlink(target, path), 0);
  ck_assert_int_eq(eventring_snapshot(path), -EEXIST);
  ck_assert_int_eq(access(target, F_OK), -1);
  snprintf(path, sizeof path, "%s/no/such/dir.events", dir);
  ck_assert_int_eq(eventring_snapshot(path), -ENOENT);
  ck_assert_int_eq(eventring_stop(), 0);
  er_rmdir(dir);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Another process, followed by a cursor, copied by the tool.           */

struct writer_proc {
  struct er_pipe_proc p;
  pid_t pid;
  char path[PATH_MAX];
};

static void start_writer(struct writer_proc *w, const char *dir) {
  const char *prog = er_prog_path("snap_writer");
  if (!prog) return;
  char envdir[PATH_MAX + 32];
  snprintf(envdir, sizeof envdir, "OCAML_RUNTIME_EVENTS_DIR=%s", dir);
  /* 1024 words: 500 iterations of 12 words wrap it several times. */
  char *env[] = {envdir, "OCAMLRUNPARAM=e=10", NULL};
  char *argv[] = {(char *)prog, NULL};
  w->p = er_pipe_start(argv, env, NULL);
  w->pid = w->p.pid;
  char line[PATH_MAX + 16];
  ck_assert_int_eq(er_read_line(w->p.out, line, sizeof line, ER_RUN_TIMEOUT),
                   0);
  ck_assert_int_eq(strncmp(line, "started ", 8), 0);
  ck_assert_uint_lt(strlen(line + 8), sizeof w->path);
  memcpy(w->path, line + 8, strlen(line + 8) + 1);
}

/* Sends one command line and returns the answer line. */
static void ask(struct writer_proc *w, const char *cmd, char *answer,
                size_t size) {
  size_t n = strlen(cmd);
  ck_assert_int_eq(write(w->p.in, cmd, n), (ssize_t)n);
  ck_assert_int_eq(write(w->p.in, "\n", 1), 1);
  ck_assert_int_eq(er_read_line(w->p.out, answer, size, ER_RUN_TIMEOUT), 0);
}

/* Runs the writer for 500 iterations in batches that a follower reads
 * between, so that the follower loses nothing and sees every event. */
static void follow_writer(struct writer_proc *w, struct seen *f) {
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, w->path), 0);
  seen_init(f);
  char ans[64];
  for (int i = 0; i < 10; i++) {
    ask(w, "w 50", ans, sizeof ans);
    ck_assert_int_eq(strncmp(ans, "ok ", 3), 0);
    drain(c, f);
  }
  eventring_cursor_free(c);
  ck_assert_uint_eq(sum(f->lost), 0);
}

static int same_event(const struct ev *a, const struct ev *b) {
  return a->domain == b->domain && a->ts == b->ts && a->kind == b->kind &&
         a->id == b->id && a->value == b->value;
}

START_TEST(test_agrees_with_follower) {
  ER_NEED_TOOL();
  if (!er_prog_path("snap_writer")) ER_SKIP("snap_writer is not built");
  const char *dir = er_tmpdir();
  struct writer_proc w;
  start_writer(&w, dir);
  struct seen f;
  follow_writer(&w, &f);

  char out[PATH_MAX], pid[32];
  snprintf(out, sizeof out, "%s/tool.events", dir);
  snprintf(pid, sizeof pid, "%ld", (long)w.pid);
  const char *args[] = {"snapshot", "--pid", pid, "--dir", dir, "-o", out,
                        NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 0);
  er_run_free(&r);

  /* The writer has stopped writing: the snapshot is the tail of what the
   * follower saw, event for event, and the rest is reported lost. */
  struct seen s;
  read_file(out, &s);
  ck_assert_uint_gt(s.n, 0);
  ck_assert_uint_lt(s.n, f.n);
  ck_assert_uint_gt(sum(s.lost), 0);
  ck_assert_uint_eq(sum(s.lost) + s.n, f.n);
  for (size_t i = 0; i < s.n; i++)
    ck_assert_msg(same_event(&s.v[i], &f.v[f.n - s.n + i]),
                  "event %zu of the snapshot differs from the follower's", i);
  ck_assert_uint_eq(s.torn, 0);

  /* The process's own snapshot of the same rings is the same. */
  char cmd[PATH_MAX + 8], ans[64], own[PATH_MAX];
  snprintf(own, sizeof own, "%s/own.events", dir);
  snprintf(cmd, sizeof cmd, "s %s", own);
  ask(&w, cmd, ans, sizeof ans);
  ck_assert_str_eq(ans, "snap 0");
  struct seen o;
  read_file(own, &o);
  ck_assert_uint_eq(o.n, s.n);
  ck_assert_uint_eq(sum(o.lost), sum(s.lost));
  for (size_t i = 0; i < s.n; i++) ck_assert(same_event(&o.v[i], &s.v[i]));
  /* Who wrote it. */
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, own), 0);
  ck_assert_int_eq(eventring_cursor_writer_pid(c), w.pid);
  ck_assert_ptr_nonnull(eventring_cursor_program(c));
  ck_assert_str_eq(eventring_cursor_program(c), "snap_writer");
  eventring_cursor_free(c);

  free(s.v);
  free(o.v);
  free(f.v);
  er_pipe_finish(&w.p, ER_RUN_TIMEOUT);
  er_rmdir(dir);
}
END_TEST

/* The default name, the line on stderr, the mode, and no overwriting. */
START_TEST(test_tool_naming) {
  ER_NEED_TOOL();
  if (!er_prog_path("snap_writer")) ER_SKIP("snap_writer is not built");
  const char *dir = er_tmpdir();
  struct writer_proc w;
  start_writer(&w, dir);
  char ans[64];
  ask(&w, "w 20", ans, sizeof ans);
  ck_assert_str_eq(ans, "ok 20");
  char pid[32];
  snprintf(pid, sizeof pid, "%ld", (long)w.pid);
  ck_assert_int_eq(chdir(dir), 0);
  const char *args[] = {"snapshot", "--pid", pid, "--dir", dir, NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 0);
  ck_assert_str_eq(r.out, "");
  regex_t re;
  char pat[256];
  snprintf(pat, sizeof pat,
           "^eventring: snapshot of snap_writer \\(pid %s\\) in "
           "(snap_writer-%s-20[0-9]{6}T[0-9]{6}\\.[0-9]{3}Z\\.events): "
           "([0-9]+) events, 1 domains, 0 lost, ([0-9]+) bytes\n$",
           pid, pid);
  ck_assert_int_eq(regcomp(&re, pat, REG_EXTENDED), 0);
  regmatch_t m[4];
  ck_assert_msg(regexec(&re, r.err, 4, m, 0) == 0, "stderr: %s", r.err);
  regfree(&re);
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)(m[1].rm_eo - m[1].rm_so),
           r.err + m[1].rm_so);
  /* ring_start, then 20 iterations of 4 events. */
  ck_assert_uint_eq(strtoull(r.err + m[2].rm_so, NULL, 10), 1 + 20 * 4);
  struct stat st;
  ck_assert_int_eq(stat(name, &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0600);
  ck_assert_uint_eq((uint64_t)st.st_size,
                    strtoull(r.err + m[3].rm_so, NULL, 10));
  er_run_free(&r);

  /* A name that is taken -- a file or a link -- is refused. */
  const char *again[] = {"snapshot", "--pid", pid, "--dir", dir, "-o", name,
                         NULL};
  r = er_run_tool(dir, again, 0);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  er_assert_one_error(&r, "already exists");
  er_run_free(&r);
  ck_assert_int_eq(symlink("nowhere", "link.events"), 0);
  const char *link[] = {"snapshot", "--pid", pid, "--dir", dir, "-o",
                        "link.events", NULL};
  r = er_run_tool(dir, link, 0);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  er_assert_one_error(&r, "already exists");
  ck_assert_int_eq(access("nowhere", F_OK), -1);
  er_run_free(&r);

  /* Usage errors. */
  const char *bad[] = {"snapshot", "--format", "pdf", "--pid", pid, NULL};
  r = er_run_tool(dir, bad, 0);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
  er_assert_one_error(&r, "unknown format 'pdf'");
  er_run_free(&r);
  const char *none[] = {"snapshot", NULL};
  r = er_run_tool(dir, none, 0);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
  er_run_free(&r);

  er_pipe_finish(&w.p, ER_RUN_TIMEOUT);
  er_rmdir(dir);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The compact file through every subcommand and an OCaml 5 reader.     */

/* A snapshot of a writer that wrapped its ring; its path into `out`. */
static void make_snapshot(const char *dir, char *out, size_t size,
                          struct writer_proc *w) {
  start_writer(w, dir);
  char ans[64];
  ask(w, "w 500", ans, sizeof ans);
  snprintf(out, size, "%s/s.events", dir);
  char cmd[PATH_MAX + 8];
  snprintf(cmd, sizeof cmd, "s %s", out);
  ask(w, cmd, ans, sizeof ans);
  ck_assert_str_eq(ans, "snap 0");
}

static struct er_run tool(const char *dir, const char *a0, const char *a1,
                          const char *a2, const char *a3, const char *a4) {
  const char *args[] = {a0, a1, a2, a3, a4, NULL};
  return er_run_tool(dir, args, 0);
}

START_TEST(test_every_subcommand_reads_it) {
  ER_NEED_TOOL();
  if (!er_prog_path("snap_writer")) ER_SKIP("snap_writer is not built");
  const char *dir = er_tmpdir();
  char snap[PATH_MAX];
  struct writer_proc w;
  make_snapshot(dir, snap, sizeof snap, &w);
  struct seen s;
  read_file(snap, &s);

  struct er_run r = tool(dir, "dump", "--time=raw", snap, NULL, NULL);
  ck_assert_int_eq(er_exit_code(&r, "dump"), 0);
  struct er_lines l = er_lines_split(r.out);
  /* One line per event, one for the loss, the summary. */
  ck_assert_uint_eq(l.n, s.n + 2);
  ck_assert_uint_eq(er_field(l.v[l.n - 1], "total"), s.n);
  ck_assert_uint_eq(er_field(l.v[l.n - 1], "lost_events_total"), sum(s.lost));
  ck_assert_ptr_nonnull(strstr(r.out, "name=snap.seq"));
  ck_assert_ptr_nonnull(strstr(r.out, "name=snap.blob"));
  ck_assert_ptr_nonnull(strstr(r.out, "kind=runtime_begin name=minor "));
  er_lines_free(&l);
  er_run_free(&r);

  r = tool(dir, "stats", snap, NULL, NULL, NULL);
  ck_assert_int_eq(er_exit_code(&r, "stats"), 0);
  ck_assert_ptr_nonnull(strstr(r.out, "minor"));
  er_run_free(&r);
  r = tool(dir, "latency", snap, NULL, NULL, NULL);
  ck_assert_int_eq(er_exit_code(&r, "latency"), 0);
  er_run_free(&r);

  char json[PATH_MAX + 16], fxt[PATH_MAX + 16], ctf[PATH_MAX + 16];
  snprintf(json, sizeof json, "%s/t.json", dir);
  snprintf(fxt, sizeof fxt, "%s/t.fxt", dir);
  snprintf(ctf, sizeof ctf, "%s/ctf", dir);
  r = tool(dir, "trace", "-o", json, snap, NULL);
  ck_assert_int_eq(er_exit_code(&r, "trace"), 0);
  er_run_free(&r);
  char *text = er_slurp(json, NULL);
  ck_assert_ptr_nonnull(strstr(text, "snap.seq"));
  free(text);
  r = tool(dir, "trace", "-o", fxt, snap, NULL);
  ck_assert_int_eq(er_exit_code(&r, "trace"), 0);
  er_run_free(&r);
  r = tool(dir, "ctf", "-o", ctf, snap, NULL);
  ck_assert_int_eq(er_exit_code(&r, "ctf"), 0);
  er_run_free(&r);
  if (access("/usr/bin/babeltrace2", X_OK) == 0) {
    const char *bt[] = {ctf, NULL};
    struct er_run b = er_run(dir, "/usr/bin/babeltrace2", bt, NULL, 0);
    ck_assert_int_eq(er_exit_code(&b, "babeltrace2"), 0);
    /* One line per event and one for the loss, as dump has. */
    ck_assert_int_eq(er_count_lines(b.out), (int)s.n + 1);
    er_run_free(&b);
  }

  /* --format writes the same traces straight from the process. */
  char pid[32], out[PATH_MAX + 16];
  snprintf(pid, sizeof pid, "%ld", (long)w.pid);
  const char *fmts[] = {"json", "fxt", "ctf"};
  for (int i = 0; i < 3; i++) {
    snprintf(out, sizeof out, "%s/f.%s", dir, fmts[i]);
    const char *args[] = {"snapshot", "--pid", pid,  "--dir", dir,
                          "--format", fmts[i], "-o", out,     NULL};
    r = er_run_tool(dir, args, 0);
    ck_assert_int_eq(er_exit_code(&r, "the tool"), 0);
    ck_assert_ptr_nonnull(strstr(r.err, "eventring: snapshot of snap_writer"));
    struct stat st;
    ck_assert_int_eq(stat(out, &st), 0);
    er_run_free(&r);
  }
  er_rmdir(out); /* the CTF directory, last of the loop */
  er_rmdir(ctf);

  free(s.v);
  er_pipe_finish(&w.p, ER_RUN_TIMEOUT);
  er_rmdir(dir);
}
END_TEST

/* What an OCaml 5 reader uses: the metadata header's layout, and events
 * from ring_head to ring_tail of each ring; the extension block it skips
 * (a copy without the block's magic reads the same through the cursor). */
START_TEST(test_ocaml5_reader) {
  if (!er_prog_path("snap_writer")) ER_SKIP("snap_writer is not built");
  const char *dir = er_tmpdir();
  char snap[PATH_MAX];
  struct writer_proc w;
  make_snapshot(dir, snap, sizeof snap, &w);
  er_pipe_finish(&w.p, ER_RUN_TIMEOUT);
  struct seen s;
  read_file(snap, &s);

  size_t len;
  char *bytes = er_slurp(snap, &len);
  uint64_t *m = (uint64_t *)bytes;
  ck_assert_uint_eq(m[ER_META_VERSION], 1);
  ck_assert_uint_ge(m[ER_META_RING_HEADER_SIZE], 80);
  ck_assert_uint_eq(m[ER_META_RING_SIZE_BYTES],
                    m[ER_META_RING_SIZE_ELEMENTS] * 8);
  uint64_t words = m[ER_META_RING_SIZE_ELEMENTS];
  ck_assert_uint_eq(words & (words - 1), 0);
  /* Sized to what it holds: the ring of the source was 1024 words and
   * full, the copy's is no bigger. */
  ck_assert_uint_le(words, 1024);
  ck_assert_uint_eq(m[ER_META_MAX_DOMAINS], 1);
  ck_assert_uint_ge(m[ER_META_HEADERS_OFFSET], 64);
  ck_assert_uint_ge(m[ER_META_DATA_OFFSET],
                    m[ER_META_HEADERS_OFFSET] +
                        m[ER_META_MAX_DOMAINS] * m[ER_META_RING_HEADER_SIZE]);
  ck_assert_uint_ge(m[ER_META_CUSTOM_EVENTS_OFFSET],
                    m[ER_META_DATA_OFFSET] +
                        m[ER_META_MAX_DOMAINS] * m[ER_META_RING_SIZE_BYTES]);
  ck_assert_uint_eq(len, m[ER_META_CUSTOM_EVENTS_OFFSET] + 8192 * 128);
  /* Walk ring 0 as OCaml's reader does. */
  const uint64_t *hdr = (const uint64_t *)(bytes + m[ER_META_HEADERS_OFFSET]);
  const uint64_t *ring = (const uint64_t *)(bytes + m[ER_META_DATA_OFFSET]);
  uint64_t n = 0;
  for (uint64_t p = hdr[0]; p < hdr[1];) {
    uint64_t h = ring[p & (words - 1)];
    ck_assert_uint_ge(ER_HDR_LEN(h), 2);
    ck_assert_uint_le((p & (words - 1)) + ER_HDR_LEN(h), words);
    p += ER_HDR_LEN(h);
    n++;
  }
  ck_assert_uint_eq(n, s.n);
  /* Names of user events where OCaml looks for them. */
  int seen_name = 0;
  for (int i = 0; i < 8192; i++)
    seen_name |= !strcmp(bytes + m[ER_META_CUSTOM_EVENTS_OFFSET] + 128 * i,
                         "snap.seq");
  ck_assert(seen_name);

  /* Without the extension block's magic the cursor takes it for an OCaml
   * 5 file: the same events (losses then count ring words). */
  ((uint64_t *)(bytes + 64))[ER_EXT_MAGIC_W] = 0;
  char plain[PATH_MAX + 16];
  snprintf(plain, sizeof plain, "%s/plain.events", dir);
  int fd = open(plain, O_WRONLY | O_CREAT | O_EXCL, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, bytes, len), (ssize_t)len);
  close(fd);
  struct seen o;
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, plain), 0);
  ck_assert_int_eq(eventring_cursor_lost_unit(c), EVENTRING_LOST_WORDS);
  ck_assert_ptr_null(eventring_cursor_program(c));
  eventring_cursor_set_numbering(c, EVENTRING_NUMBERING_OCAML53);
  seen_init(&o);
  drain(c, &o);
  eventring_cursor_free(c);
  ck_assert_uint_eq(o.n, s.n);
  for (size_t i = 0; i < s.n; i++) ck_assert(same_event(&o.v[i], &s.v[i]));
  ck_assert_uint_gt(sum(o.lost), 0);
  free(bytes);
  free(s.v);
  free(o.v);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_inprocess(void) {
  TCase *tc = er_tcase("inprocess");
  tcase_add_test(tc, test_inprocess_while_writing);
  tcase_add_test(tc, test_inprocess_refuses);
  return tc;
}

static TCase *tc_tool(void) {
  TCase *tc = er_tcase("tool");
  tcase_add_test(tc, test_agrees_with_follower);
  tcase_add_test(tc, test_tool_naming);
  tcase_add_test(tc, test_every_subcommand_reads_it);
  tcase_add_test(tc, test_ocaml5_reader);
  return tc;
}

ER_TEST_MAIN("snapshot", tc_inprocess, tc_tool)
