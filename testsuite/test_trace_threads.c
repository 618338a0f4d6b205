/* `eventring trace` splits a shared slot's ring into one track per
 * thread, after its thread-switch markers (doc/FORMAT.md, "Thread
 * switches"), and reports a span that one thread began and another
 * ended instead of drawing it.
 *
 * The file is written here, by threads joined to slot 0 whose turns are
 * forced by a baton (a turn number under a mutex and a condition
 * variable, standing for OCaml 4's master lock), so the interleaving is
 * the script's, not the scheduler's.  The JSON output is read line by
 * line: json.c writes one event per line, and the checks only need each
 * line's phase, name, tid and "cut". */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "eventring.h"
#include "harness.h"
#include "rtlib.h"
#include "testlib.h"

static struct er_baton baton = ER_BATON_INIT;
static int span_a, span_b, span_c, tick;

/* Step i of the script: thread `who` writes `what` (a span's begin or
 * end, or a tick). */
enum what { BEGIN_A, END_A, BEGIN_B, END_B, BEGIN_C, END_C, TICK };
struct step {
  int who;
  enum what what;
};
static const struct step script[] = {
    {0, BEGIN_A}, /* main */
    {1, BEGIN_B}, /* worker 1, while A is open on main */
    {0, END_A},   /* one track: B would be cut "ended out of order" */
    {1, END_B},
    {0, BEGIN_C},
    {2, TICK},
    {2, END_C},   /* worker 2 ends what main began: reported */
    {0, END_C},   /* main's own end of C */
};
#define NSTEPS ((int)(sizeof script / sizeof script[0]))
#define NTHREADS 3

static void write_step(enum what w) {
  switch (w) {
  case BEGIN_A: eventring_write_span(span_a, 0); break;
  case END_A: eventring_write_span(span_a, 1); break;
  case BEGIN_B: eventring_write_span(span_b, 0); break;
  case END_B: eventring_write_span(span_b, 1); break;
  case BEGIN_C: eventring_write_span(span_c, 0); break;
  case END_C: eventring_write_span(span_c, 1); break;
  case TICK: eventring_write_int(tick, 1); break;
  }
}

static void play(int who) {
  for (int i = 0; i < NSTEPS; i++) {
    if (script[i].who != who) continue;
    er_baton_take(&baton, i);
    write_step(script[i].what);
    er_baton_pass(&baton);
  }
}

static void *worker(void *arg) {
  int who = (int)(long)arg;
  er_join0_worker(who);
  play(who);
  return NULL;
}

/* One line of the JSON output, taken apart. */
struct line {
  char ph;
  char name[64];
  unsigned long tid;
  char cut[64];
};

/* Whether a track is domain 0's own: "domain 0", or named after the
 * thread that holds the slot, "NAME (domain 0)" (the test's main thread,
 * named after the program), not after a marker's thread. */
static int is_domain0_track(const char *name) {
  return !strcmp(name, "domain 0") ||
         (strstr(name, " (domain 0)") && !strstr(name, "thread "));
}

/* The string value of "key":"..." in `s`, into buf; 0 when absent. */
static int field(const char *s, const char *key, char *buf, size_t cap) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":\"", key);
  const char *p = strstr(s, pat);
  if (!p) return 0;
  p += strlen(pat);
  const char *q = strchr(p, '"');
  ck_assert_ptr_nonnull(q);
  size_t n = (size_t)(q - p) < cap - 1 ? (size_t)(q - p) : cap - 1;
  memcpy(buf, p, n);
  buf[n] = '\0';
  return 1;
}

static int parse(const char *from, struct line *l) {
  memset(l, 0, sizeof *l);
  /* The line alone: the searches below must not run into the next. */
  char s[1024];
  size_t n = strcspn(from, "\n");
  if (n >= sizeof s) n = sizeof s - 1;
  memcpy(s, from, n);
  s[n] = '\0';
  char ph[4];
  if (!field(s, "ph", ph, sizeof ph)) return 0;
  l->ph = ph[0];
  const char *tid = strstr(s, "\"tid\":");
  ck_assert_ptr_nonnull(tid);
  l->tid = strtoul(tid + 6, NULL, 10);
  if (l->ph == 'M') {
    /* Metadata: the name is the track's, in args. */
    const char *args = strstr(s, "\"args\":");
    if (args) field(args, "name", l->name, sizeof l->name);
    char what[32];
    field(s, "name", what, sizeof what);
    if (strcmp(what, "thread_name") != 0) l->name[0] = '\0';
    return 1;
  }
  field(s, "name", l->name, sizeof l->name);
  field(s, "cut", l->cut, sizeof l->cut);
  return 1;
}

/* Runs `eventring trace -o DIR/NAME PATH`, which must succeed; the
 * output file's path is left in out (PATH_MAX bytes). */
static struct er_run trace_to(const char *dir, const char *path,
                              const char *name, char *out) {
  snprintf(out, PATH_MAX, "%s/%s", dir, name);
  const char *args[] = {"trace", "-o", out, path, NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "trace") == 0, "stderr: %s", r.err);
  return r;
}

START_TEST(test_one_track_per_thread) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  span_a = eventring_register("A", EVENTRING_TYPE_SPAN);
  span_b = eventring_register("B", EVENTRING_TYPE_SPAN);
  span_c = eventring_register("C", EVENTRING_TYPE_SPAN);
  tick = eventring_register("tick", EVENTRING_TYPE_INT);
  ck_assert(span_a >= 0 && span_b >= 0 && span_c >= 0 && tick >= 0);
  ck_assert_int_eq(eventring_domain_join(0), 0);
  eventring_thread_id(0);
  ck_assert_int_eq(eventring_thread_name("main"), 0);
  ck_assert_int_eq(eventring_start(), 0);
  char *path = strdup(eventring_path());
  pthread_t th[NTHREADS];
  for (long t = 1; t < NTHREADS; t++)
    ck_assert_int_eq(pthread_create(&th[t], NULL, worker, (void *)t), 0);
  play(0);
  for (int t = 1; t < NTHREADS; t++) pthread_join(th[t], NULL);
  ck_assert_int_eq(eventring_stop(), 0);
  eventring_domain_release();

  char out[PATH_MAX];
  struct er_run r = trace_to(dir, path, "t.json", out);
  /* The crossing span is reported, once. */
  ck_assert_msg(strstr(r.err, "1 span ended on another thread") != NULL,
                "stderr: %s", r.err);
  ck_assert_int_eq(er_count_lines(r.err), 1);
  er_run_free(&r);

  size_t len;
  char *json = er_slurp(out, &len);
  /* Tracks: tid -> name. */
  unsigned long tid_main = 0, tid_w1 = 0, tid_w2 = 0, tid_dom = 0;
  int ntracks = 0;
  struct line l;
  for (char *s = json; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL) {
    if (!parse(s, &l) || l.ph != 'M' || !l.name[0]) continue;
    ntracks++;
    if (!strcmp(l.name, "main, thread 0 (domain 0)")) tid_main = l.tid;
    else if (!strcmp(l.name, "worker 1, thread 10 (domain 0)")) tid_w1 = l.tid;
    else if (!strcmp(l.name, "worker 2, thread 20 (domain 0)")) tid_w2 = l.tid;
    else if (is_domain0_track(l.name)) tid_dom = l.tid;
    else ck_abort_msg("unexpected track %s", l.name);
  }
  ck_assert_int_eq(ntracks, 4);
  ck_assert(tid_main && tid_w1 && tid_w2 && tid_dom);
  ck_assert(tid_main != tid_w1 && tid_w1 != tid_w2 && tid_main != tid_w2);

  /* Every span on its thread's track, whole; C's foreign end an instant
   * on worker 2's track. */
  int a = 0, b = 0, c = 0, crossed = 0, ticks = 0;
  for (char *s = json; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL) {
    if (!parse(s, &l) || l.ph == 'M') continue;
    ck_assert_msg(strcmp(l.cut, "ended out of order") != 0,
                  "a span cut on a shared track: %s", s);
    if (!strcmp(l.name, "A")) {
      ck_assert_uint_eq(l.tid, tid_main);
      ck_assert(l.ph == 'B' || l.ph == 'E');
      a++;
    } else if (!strcmp(l.name, "B")) {
      ck_assert_uint_eq(l.tid, tid_w1);
      ck_assert(l.ph == 'B' || l.ph == 'E');
      b++;
    } else if (!strcmp(l.name, "C")) {
      if (l.ph == 'i') {
        ck_assert_uint_eq(l.tid, tid_w2);
        ck_assert_str_eq(l.cut, "began on another thread");
        crossed++;
      } else {
        ck_assert_uint_eq(l.tid, tid_main);
        ck_assert(l.ph == 'B' || l.ph == 'E');
        ck_assert_str_eq(l.cut, "");
        c++;
      }
    } else if (strstr(l.name, "tick")) {
      ck_assert_uint_eq(l.tid, tid_w2);
      ticks++;
    } else if (!strcmp(l.name, "ring_start")) {
      /* Before the first marker: the domain's own track. */
      ck_assert_uint_eq(l.tid, tid_dom);
    }
  }
  ck_assert_int_eq(a, 2);
  ck_assert_int_eq(b, 2);
  ck_assert_int_eq(c, 2);
  ck_assert_int_eq(crossed, 1);
  ck_assert_int_eq(ticks, 1);
  free(json);

  /* dump lists the markers: one per turn of a thread that did not write
   * last (7 in the script), with the thread's name, id and kernel tid. */
  const char *dargs[] = {"dump", "--time=raw", path, NULL};
  r = er_run_tool(dir, dargs, 0);
  ck_assert_int_eq(er_exit_code(&r, "dump"), 0);
  int markers = 0;
  for (const char *p = r.out; (p = strstr(p, " kind=thread ")); p++) markers++;
  ck_assert_int_eq(markers, 7);
  ck_assert_ptr_nonnull(strstr(r.out, " kind=thread name=worker\\0322 value=20 tid="));
  const char *sum = strstr(r.out, "SUMMARY ");
  ck_assert_ptr_nonnull(sum);
  ck_assert_uint_eq(er_field(sum, "thread"), 7);
  er_run_free(&r);

  /* The Fuchsia writer takes the same tracks (test_trace checks its
   * records); here only that it runs and reports alike. */
  snprintf(out, sizeof out, "%s/t.fxt", dir);
  const char *fargs[] = {"trace", "-o", out, path, NULL};
  r = er_run_tool(dir, fargs, 0);
  ck_assert_msg(er_exit_code(&r, "trace") == 0, "stderr: %s", r.err);
  ck_assert_msg(strstr(r.err, "1 span ended on another thread") != NULL,
                "stderr: %s", r.err);
  er_run_free(&r);
  free(path);
}
END_TEST

static void *ticker(void *arg) {
  (void)arg;
  ck_assert_int_eq(eventring_domain_join(0), 0);
  eventring_thread_id(10);
  ck_assert_int_eq(eventring_thread_name("ticker"), 0);
  pthread_mutex_lock(&baton.lock);
  /* 200 ticks of 3 words wrap a 64-word ring many times over: its own
   * marker is overwritten with the rest. */
  for (int i = 0; i < 200; i++) eventring_write_int(tick, i);
  pthread_mutex_unlock(&baton.lock);
  return NULL;
}

/* A ring that wrapped over the last marker: what follows the gap is no
 * known thread's (the domain's own track) until the next marker. */
START_TEST(test_wrapped_marker) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  ck_assert_int_eq(setenv("OCAMLRUNPARAM", "e=6", 1), 0);
  span_a = eventring_register("A", EVENTRING_TYPE_SPAN);
  tick = eventring_register("tick", EVENTRING_TYPE_INT);
  ck_assert_int_eq(eventring_domain_join(0), 0);
  eventring_thread_id(0);
  ck_assert_int_eq(eventring_thread_name("main"), 0);
  ck_assert_int_eq(eventring_start(), 0);
  unsetenv("OCAMLRUNPARAM");
  char *path = strdup(eventring_path());
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, ticker, NULL), 0);
  pthread_join(th, NULL);
  eventring_write_span(span_a, 0);
  eventring_write_span(span_a, 1);
  ck_assert_int_eq(eventring_stop(), 0);
  eventring_domain_release();

  char out[PATH_MAX];
  struct er_run r = trace_to(dir, path, "w.json", out);
  er_run_free(&r);
  size_t len;
  char *json = er_slurp(out, &len);
  unsigned long tid_main = 0, tid_dom = 0;
  struct line l;
  int ticks = 0, spans = 0;
  for (char *s = json; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL) {
    if (!parse(s, &l) || l.ph != 'M' || !l.name[0]) continue;
    if (!strcmp(l.name, "main, thread 0 (domain 0)")) tid_main = l.tid;
    if (is_domain0_track(l.name)) tid_dom = l.tid;
    ck_assert_msg(strstr(l.name, "ticker") == NULL,
                  "the ticker's track, whose marker was overwritten: %s",
                  l.name);
  }
  ck_assert(tid_main && tid_dom);
  for (char *s = json; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL) {
    if (!parse(s, &l) || l.ph == 'M') continue;
    if (strstr(l.name, "tick (")) {
      ck_assert_uint_eq(l.tid, tid_dom);
      ticks++;
    } else if (!strcmp(l.name, "A")) {
      ck_assert_uint_eq(l.tid, tid_main);
      spans++;
    }
  }
  ck_assert_int_gt(ticks, 0);
  ck_assert_int_eq(spans, 2);
  free(json);
  free(path);
}
END_TEST

static TCase *tc_threads(void) {
  TCase *tc = er_tcase("threads");
  tcase_add_test(tc, test_one_track_per_thread);
  tcase_add_test(tc, test_wrapped_marker);
  return tc;
}

ER_TEST_MAIN("trace_threads", tc_threads)
