/* Tests the wall clock in `eventring trace` output: the JSON trace's otherData and the Fuchsia trace's process record carry the file's wall-clock start and offset (parsed back and compared with the file's start pair); an OCaml 5 file's traces carry none. */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eventring.h"
#include "harness.h"
#include "rtlib.h"
#include "testlib.h"
#include "tooltest.h"

/* What a trace says of the wall clock. */
struct wall_meta {
  int have_start, have_offset;
  char start[64];
  int64_t offset;
};

/* ------------------------------------------------------------------ */
/* JSON, parsed with json-c when the machine has it.                    */

static struct {
  void *(*parse)(const char *);
  int (*get_ex)(void *, const char *, void **);
  const char *(*get_string)(void *);
  int (*put)(void *);
} jc;

static int jc_load(void) {
  void *h = dlopen("libjson-c.so.5", RTLD_NOW | RTLD_LOCAL);
  if (!h) return 0;
  *(void **)&jc.parse = dlsym(h, "json_tokener_parse");
  *(void **)&jc.get_ex = dlsym(h, "json_object_object_get_ex");
  *(void **)&jc.get_string = dlsym(h, "json_object_get_string");
  *(void **)&jc.put = dlsym(h, "json_object_put");
  return jc.parse && jc.get_ex && jc.get_string && jc.put;
}

static struct wall_meta json_meta(const char *text) {
  struct wall_meta m = {0};
  if (!jc_load()) {
    /* Without json-c: the fields as the writer lays them out. */
    const char *p = strstr(text, "\"wall-clock-start\":\"");
    if (p && sscanf(p + 20, "%63[^\"]", m.start) == 1) m.have_start = 1;
    p = strstr(text, "\"wall-clock-offset-ns\":\"");
    if (p && sscanf(p + 24, "%" SCNd64, &m.offset) == 1) m.have_offset = 1;
    return m;
  }
  void *doc = jc.parse(text);
  ck_assert_msg(doc != NULL, "the JSON trace does not parse");
  void *other = NULL, *v = NULL;
  ck_assert_msg(jc.get_ex(doc, "otherData", &other), "no otherData");
  if (jc.get_ex(other, "wall-clock-start", &v)) {
    snprintf(m.start, sizeof m.start, "%s", jc.get_string(v));
    m.have_start = 1;
  }
  if (jc.get_ex(other, "wall-clock-offset-ns", &v)) {
    char *end;
    const char *s = jc.get_string(v);
    m.offset = strtoll(s, &end, 10);
    ck_assert_msg(*s && !*end, "wall-clock-offset-ns is not a number: %s", s);
    m.have_offset = 1;
  }
  ck_assert_msg(jc.get_ex(other, "clock-domain", &v) &&
                    !strcmp(jc.get_string(v), "LINUX_CLOCK_MONOTONIC"),
                "no clock-domain LINUX_CLOCK_MONOTONIC in otherData");
  jc.put(doc);
  return m;
}

/* ------------------------------------------------------------------ */
/* Fuchsia: the process's kernel object record and its arguments.      */

static uint64_t bits(uint64_t w, int lo, int hi) {
  return (w >> lo) & ((1ull << (hi - lo + 1)) - 1);
}

static size_t words(size_t len) { return (len + 7) / 8; }

static struct wall_meta fxt_meta(const uint64_t *w, size_t nw) {
  static char *strings[0x8000];
  struct wall_meta m = {0};
  int processes = 0;
  for (size_t at = 1; at < nw;) {
    const uint64_t *rec = w + at;
    unsigned type = (unsigned)bits(rec[0], 0, 3);
    size_t size = bits(rec[0], 4, 15);
    ck_assert_msg(size >= 1 && at + size <= nw, "record at word %zu", at);
    if (type == 2) { /* string */
      unsigned index = (unsigned)bits(rec[0], 16, 30);
      free(strings[index]);
      strings[index] = strndup((const char *)(rec + 1),
                               bits(rec[0], 32, 46));
    } else if (type == 7 && bits(rec[0], 16, 23) == 1) { /* a process */
      processes++;
      size_t pos = 2;
      unsigned name = (unsigned)bits(rec[0], 24, 39);
      if (name & 0x8000) pos += words(name & 0x7fff);
      int nargs = (int)bits(rec[0], 40, 43);
      for (int a = 0; a < nargs; a++) {
        size_t start = pos;
        uint64_t h = rec[pos++];
        unsigned kref = (unsigned)bits(h, 16, 31);
        char key[64] = "";
        if (kref & 0x8000) {
          snprintf(key, sizeof key, "%.*s", (int)(kref & 0x7fff),
                   (const char *)(rec + pos));
          pos += words(kref & 0x7fff);
        } else if (strings[kref]) {
          snprintf(key, sizeof key, "%s", strings[kref]);
        }
        unsigned at_type = (unsigned)bits(h, 0, 3);
        if (at_type == 6) {
          unsigned vref = (unsigned)bits(h, 32, 47);
          char val[64] = "";
          if (vref & 0x8000) {
            snprintf(val, sizeof val, "%.*s", (int)(vref & 0x7fff),
                     (const char *)(rec + pos));
            pos += words(vref & 0x7fff);
          } else if (strings[vref]) {
            snprintf(val, sizeof val, "%s", strings[vref]);
          }
          if (!strcmp(key, "wall_clock_start")) {
            snprintf(m.start, sizeof m.start, "%s", val);
            m.have_start = 1;
          }
        } else if (at_type == 3) {
          int64_t v = (int64_t)rec[pos++];
          if (!strcmp(key, "wall_clock_offset_ns")) {
            m.offset = v;
            m.have_offset = 1;
          }
        } else {
          pos += bits(h, 4, 15) - 1;
        }
        ck_assert_msg(pos - start == bits(h, 4, 15),
                      "argument %s: size word %" PRIu64 ", content %zu words",
                      key, bits(h, 4, 15), pos - start);
      }
      ck_assert_msg(pos == size, "process record: %zu words of %zu", pos,
                    size);
    }
    at += size;
  }
  ck_assert_int_eq(processes, 1);
  for (size_t i = 0; i < 0x8000; i++) {
    free(strings[i]);
    strings[i] = NULL;
  }
  return m;
}

/* ------------------------------------------------------------------ */

/* `eventring trace -o OUT --format FMT PATH`, OUT's bytes. */
static char *trace_of(const char *dir, const char *fmt, const char *path,
                      size_t *len) {
  char out[PATH_MAX];
  snprintf(out, sizeof out, "%s/trace.%s", dir, fmt);
  unlink(out);
  struct er_run r = er_run_tool(
      dir, (const char *[]){"trace", "-o", out, "--format", fmt, path, NULL}, 0);
  ck_assert_msg(er_exit_code(&r, "the tool") == 0, "trace: %s", r.err);
  er_run_free(&r);
  return er_slurp(out, len);
}

static void check_both(const char *dir, const char *path,
                       const eventring_wallclock *w) {
  size_t len;
  char *json = trace_of(dir, "json", path, &len);
  struct wall_meta jm = json_meta(json);
  free(json);
  char *fxt = trace_of(dir, "fuchsia", path, &len);
  ck_assert_uint_eq(len % 8, 0);
  struct wall_meta fm = fxt_meta((const uint64_t *)(void *)fxt, len / 8);
  free(fxt);
  const struct wall_meta *ms[] = {&jm, &fm};
  for (int i = 0; i < 2; i++) {
    const char *what = i ? "fuchsia" : "json";
    if (!w) {
      ck_assert_msg(!ms[i]->have_start && !ms[i]->have_offset,
                    "%s: a wall clock for a file without one", what);
      continue;
    }
    ck_assert_msg(ms[i]->have_start && ms[i]->have_offset,
                  "%s: no wall clock", what);
    ck_assert_msg(ms[i]->offset == w->wall - (int64_t)w->ts,
                  "%s: offset %" PRId64 ", the file's %" PRId64, what,
                  ms[i]->offset, w->wall - (int64_t)w->ts);
    ck_assert_msg(er_parse_wall(ms[i]->start) == w->wall,
                  "%s: start %s, the file's %" PRId64, what, ms[i]->start,
                  w->wall);
  }
}

START_TEST(test_own_file) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char *path = er_start_preserved(NULL);
  int id = eventring_register("wall.span", EVENTRING_TYPE_SPAN);
  eventring_write_span(id, 0);
  eventring_write_span(id, 1);
  ck_assert_int_eq(eventring_stop(), 0);
  eventring_wallclock w;
  ck_assert_int_eq(er_file_wallclock(path, EVENTRING_WALLCLOCK_START, &w), 0);
  check_both(dir, path, &w);
  free(path);
}
END_TEST

START_TEST(test_ocaml5_file) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  ER_NEED_VECTOR(dir, "ocaml54-basic", path);
  check_both(dir, path, NULL);
}
END_TEST

static TCase *tc_trace_wall(void) {
  TCase *tc = er_tcase("trace_wall");
  tcase_add_test(tc, test_own_file);
  tcase_add_test(tc, test_ocaml5_file);
  return tc;
}

ER_TEST_MAIN("trace_wall", tc_trace_wall)
