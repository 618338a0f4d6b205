/* Tests `eventring report`: the numbers of the page against `stats
 * --json` and `latency --json` (OCaml 5 vectors, a C program, a crafted
 * file with losses), names from the file escaped, nothing loaded from
 * elsewhere, usage; and the page of a real traced run rendered by
 * headless chromium: a screenshot, no console message, data points in
 * every chart of the DOM it dumps. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cases.h"
#include "harness.h"
#include "lat_craft.h"
#include "tooltest.h"

/* The number the page gives under data-key `key`; fails when absent. */
static uint64_t page_u64(const char *html, const char *key) {
  char pat[256];
  snprintf(pat, sizeof pat, "data-key=\"%s\" data-value=\"", key);
  const char *p = strstr(html, pat);
  ck_assert_msg(p != NULL, "no data-key \"%s\" in the page", key);
  return strtoull(p + strlen(pat), NULL, 10);
}

/* The JSON string at `q` (after its opening quote; \" and \\ are the
 * only escapes our names need) as the page writes it: HTML-escaped. */
static void json_name_html(const char *q, char *out, size_t size) {
  size_t n = 0;
  for (; *q && *q != '"' && n + 8 < size; q++) {
    char c = *q;
    if (c == '\\') c = *++q;
    const char *e = c == '<'    ? "&lt;"
                    : c == '>'  ? "&gt;"
                    : c == '&'  ? "&amp;"
                    : c == '"'  ? "&quot;"
                    : c == '\'' ? "&#39;"
                                : NULL;
    if (e) {
      memcpy(out + n, e, strlen(e));
      n += strlen(e);
    } else {
      out[n++] = c;
    }
  }
  out[n] = 0;
}

/* The chart titled `title` in `page`: its start, *end at its </svg>;
 * fails when absent. */
static const char *chart_of(const char *page, const char *title,
                            const char **end) {
  char pat[256];
  snprintf(pat, sizeof pat, "<text class=\"title\" x=\"64\" y=\"16\">%s<",
           title);
  const char *t = strstr(page, pat);
  ck_assert_msg(t != NULL, "no chart titled \"%s\"", title);
  const char *start = t;
  while (start > page && strncmp(start, "<svg class=\"chart\"", 18)) start--;
  *end = strstr(t, "</svg>");
  ck_assert_ptr_nonnull(*end);
  return start;
}

static double attr_num(const char *at, const char *end, const char *name) {
  char pat[64];
  snprintf(pat, sizeof pat, " %s=\"", name);
  const char *p = strstr(at, pat);
  ck_assert_msg(p && p < end, "no %s in %.120s", name, at);
  return strtod(p + strlen(pat), NULL);
}

/* Checks that the legend entries of every chart of `page` lie within
 * their chart and that none overlaps another on its row, taking a
 * character of the 11 px font as 6 px wide at least; returns how many
 * entries there are. */
static int legends_apart(const char *page) {
  int total = 0;
  for (const char *c = page; (c = strstr(c, "<svg class=\"chart\"")); c++) {
    const char *end = strstr(c, "</svg>");
    ck_assert_ptr_nonnull(end);
    double w = attr_num(c, end, "width");
    double lo[16], hi[16], row[16];
    int n = 0;
    for (const char *g = c; (g = strstr(g, "<g class=\"legend\">")) && g < end;
         g++) {
      ck_assert_int_lt(n, 16);
      const char *tend = strstr(g, "</g>");
      double rx = attr_num(g, tend, "x"), ry = attr_num(g, tend, "y");
      const char *t = strstr(g, "<text ");
      double tx = attr_num(t, tend, "x");
      const char *txt = strchr(t, '>') + 1;
      int chars = 0;
      for (const char *q = txt; q < tend && *q != '<'; q++)
        chars += ((unsigned char)*q & 0xc0) != 0x80;
      lo[n] = rx;
      hi[n] = tx + 6.0 * chars;
      row[n] = ry;
      ck_assert_msg(hi[n] <= w, "legend past its chart: %.80s", t);
      for (int k = 0; k < n; k++)
        ck_assert_msg(row[k] != ry || hi[k] <= lo[n] || hi[n] <= lo[k],
                      "legend entries overlap: %.80s", t);
      n++;
    }
    total += n;
  }
  return total;
}

/* Writes the report of `file` (plus `extra`, or NULL) to `html` and
 * returns the page. */
static char *report_of(const char *file, const char *extra, const char *html) {
  const char *args[] = {"report", "-o", html, file, extra, NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  ck_assert_str_eq(r.out, "");
  lat_run_free(&r);
  char *page = er_slurp(html, NULL);
  ck_assert_ptr_nonnull(page);
  return page;
}

/* Writes the report of `report -o HTML -- PROG [ARG1 [ARG2]]` and returns
 * the page. */
static char *report_cmd(const char *html, const char *prog, const char *arg1,
                        const char *arg2) {
  const char *args[] = {"report", "-o", html, "--", prog, arg1, arg2, NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  lat_run_free(&r);
  char *page = er_slurp(html, NULL);
  ck_assert_ptr_nonnull(page);
  return page;
}

/* Every number the page shares with stats and latency is theirs.
 * Returns the number of span names compared. */
static int compare(const char *file, const char *extra, const char *html) {
  char *page = report_of(file, extra, html);
  const char *sa[] = {"stats", "--json", file, extra, NULL};
  struct lat_run s = lat_run_tool(sa);
  lat_assert_ok(&s);
  /* The page's pause distribution is per outermost phase. */
  const char *la[] = {"latency", "--json", "--per-phase", file, extra, NULL};
  struct lat_run l = lat_run_tool(la);
  lat_assert_ok(&l);

  ck_assert_uint_eq(page_u64(page, "wall_ns"), json_u64(s.out, "wall_ns"));
  const char *ev = json_at(s.out, "events");
  ck_assert_uint_eq(page_u64(page, "events.read"), json_u64(ev, "read"));
  ck_assert_uint_eq(page_u64(page, "events.lost"), json_u64(ev, "lost"));
  const char *gc = json_at(s.out, "gc");
  ck_assert_uint_eq(page_u64(page, "gc.pauses"), json_u64(gc, "pauses"));
  ck_assert_uint_eq(page_u64(page, "gc.total_ns"), json_u64(gc, "total_ns"));
  ck_assert_uint_eq(page_u64(page, "gc.cut"), json_u64(gc, "cut"));
  ck_assert_uint_eq(page_u64(page, "gc.unfinished"),
                    json_u64(gc, "unfinished"));
  ck_assert_uint_eq(page_u64(page, "gc.markers"), json_u64(gc, "markers"));
  /* Per domain, as stats lists them. */
  const char *d = json_at(gc, "domains");
  const char *stop = strchr(d, ']');
  int ndom = 0;
  while ((d = strstr(d, "{\"domain\": ")) && d < stop) {
    int dom = atoi(d + 11);
    char key[64];
    snprintf(key, sizeof key, "gc.domain.%d.pauses", dom);
    ck_assert_uint_eq(page_u64(page, key), json_u64(d, "pauses"));
    snprintf(key, sizeof key, "gc.domain.%d.total_ns", dom);
    ck_assert_uint_eq(page_u64(page, key), json_u64(d, "total_ns"));
    d++;
    ndom++;
  }
  ck_assert_int_gt(ndom, 0);
  /* The counters' last values. */
  const char *c = json_at(s.out, "counters");
  stop = strchr(c, ']');
  while ((c = strstr(c, "{\"name\": \"")) && c < stop) {
    char name[128], key[160];
    const char *q = c + 10, *e = strchr(q, '"');
    snprintf(name, sizeof name, "%.*s", (int)(e - q), q);
    snprintf(key, sizeof key, "counter.%s.last", name);
    ck_assert_uint_eq(page_u64(page, key), json_u64(c, "last"));
    c++;
  }
  /* Every user span name's numbers. */
  const char *sp = json_at(s.out, "spans");
  int nspans = 0;
  stop = strstr(sp, "\"user_ints\"");
  ck_assert_ptr_nonnull(stop);
  while ((sp = strstr(sp, "{\"name\": \"")) && sp < stop) {
    char name[128], key[512];
    json_name_html(sp + 10, name, sizeof name);
    static const char *const fields[] = {"count",  "total_ns", "p50_ns",
                                         "p99_ns", "max_ns",   "cut",
                                         "unfinished", "unmatched_ends"};
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
      const char *v = json_at(sp, fields[k]);
      if (!strncmp(v, "null", 4)) continue;
      snprintf(key, sizeof key, "span.%s.%s", name, fields[k]);
      ck_assert_msg(page_u64(page, key) == json_u64(sp, fields[k]),
                    "%s: page %" PRIu64 ", stats %" PRIu64, key,
                    page_u64(page, key), json_u64(sp, fields[k]));
    }
    sp++;
    nspans++;
  }
  /* The percentiles of latency. */
  if (json_u64(l.out, "pauses") > 0) {
    const char *p = json_at(l.out, "percentiles");
    ck_assert_uint_eq(page_u64(page, "gc.p50"), json_u64(p, "50"));
    ck_assert_uint_eq(page_u64(page, "gc.p99"), json_u64(p, "99"));
    ck_assert_uint_eq(page_u64(page, "gc.max"), json_u64(p, "100"));
  }
  /* Self-contained: nothing to load, no script. */
  ck_assert_ptr_null(strstr(page, "<script"));
  ck_assert_ptr_null(strstr(page, "<link"));
  ck_assert_ptr_null(strstr(page, "url("));
  ck_assert_ptr_null(strstr(page, "@import"));
  ck_assert_ptr_null(strstr(page, "src="));
  ck_assert_ptr_null(strstr(page, "href="));
  lat_run_free(&s);
  lat_run_free(&l);
  free(page);
  return nspans;
}

START_TEST(test_vectors) {
  const char *name = er_vectors[_i];
  ER_NEED_TOOL();
  if (!er_env_dir("EVENTRING_TEST_DATA")) ER_SKIP("EVENTRING_TEST_DATA is not set");
  const char *dir = er_tmpdir();
  char file[PATH_MAX], html[PATH_MAX];
  ck_assert(er_unpack_vector(dir, name, file));
  snprintf(html, sizeof html, "%s/%s.html", dir, name);
  compare(file, er_vector_ocaml50(name) ? "--ocaml50" : NULL,
          html);
  unlink(file);
}
END_TEST

START_TEST(test_c_program) {
  ER_NEED_TOOL();
  if (!er_env_dir("EVENTRING_TEST_PROGS")) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  const char *dir = er_tmpdir();
  char path[PATH_MAX], html[PATH_MAX];
  /* lat_phases: a C program of known phases, counters and user events. */
  er_trace_prog(dir, "lat_phases", NULL, NULL, path);
  snprintf(html, sizeof html, "%s/c.html", dir);
  compare(path, NULL, html);
  char *page = er_slurp(html, NULL);
  /* lat_phases's user events: 5 lat.unit, 300 samples of lat.ticks. */
  ck_assert_uint_eq(page_u64(page, "unit.lat.unit.count"), 5);
  ck_assert_uint_eq(page_u64(page, "int.lat.ticks.max"), 299);
  /* Titled by the program the file records, not by the file. */
  ck_assert_ptr_nonnull(strstr(page, "<title>eventring report: lat_phases<"));
  free(page);
}
END_TEST

/* Several files, and a command: the page is about all their processes,
 * with stats' totals. */
START_TEST(test_several) {
  ER_NEED_TOOL();
  if (!er_env_dir("EVENTRING_TEST_DATA")) ER_SKIP("EVENTRING_TEST_DATA is not set");
  const char *dir = er_tmpdir();
  char a[PATH_MAX], b[PATH_MAX], html[PATH_MAX];
  ck_assert(er_unpack_vector(dir, "ocaml54-basic", a));
  ck_assert(er_unpack_vector(dir, "ocaml54-multidomain", b));
  snprintf(html, sizeof html, "%s/two.html", dir);
  const char *args[] = {"report", "-o", html, a, b, NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  lat_run_free(&r);
  char *page = er_slurp(html, NULL);
  const char *sa[] = {"stats", "--json", a, b, NULL};
  struct lat_run s = lat_run_tool(sa);
  lat_assert_ok(&s);
  ck_assert_ptr_nonnull(strstr(page, "2 processes"));
  ck_assert_ptr_nonnull(strstr(page, "data-key=\"gc.domain.pid "));
  /* The lines of the GC time share are named "pid N domain D", and the
   * names do not run into each other. */
  ck_assert_ptr_nonnull(strstr(page, "\">pid "));
  ck_assert_int_ge(legends_apart(page), 2);
  const char *gc = json_at(s.out, "gc");
  ck_assert_uint_eq(page_u64(page, "gc.pauses"), json_u64(gc, "pauses"));
  ck_assert_uint_eq(page_u64(page, "gc.total_ns"), json_u64(gc, "total_ns"));
  ck_assert_uint_eq(page_u64(page, "events.read"),
                    json_u64(json_at(s.out, "events"), "read"));
  lat_run_free(&s);
  free(page);

  /* A command (lat_phases): its 320 pauses. */
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  if (!progs) return;
  char prog[PATH_MAX];
  snprintf(prog, sizeof prog, "%s/lat_phases", progs);
  page = report_cmd(html, prog, NULL, NULL);
  ck_assert_uint_eq(page_u64(page, "gc.pauses"), 320);
  ck_assert_ptr_nonnull(strstr(page, "command: "));
  free(page);
}
END_TEST

/* A C program that records no runtime phase (spawn_child): no GC
 * charts, one line saying there are no GC events; the title is the
 * program's name. */
START_TEST(test_no_gc) {
  ER_NEED_TOOL();
  const char *prog = er_prog_path("spawn_child");
  if (!prog) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  if (er_tracing_off()) ER_SKIP("a build without tracing");
  const char *dir = er_tmpdir();
  char html[PATH_MAX];
  snprintf(html, sizeof html, "%s/c.html", dir);
  char *page = report_cmd(html, prog, "exit", "0");
  ck_assert_ptr_nonnull(strstr(page, "id=\"no-gc\">No GC events"));
  ck_assert_ptr_null(strstr(page, "GC pause distribution"));
  ck_assert_ptr_null(strstr(page, "GC time share"));
  ck_assert_ptr_null(strstr(page, "gc.total_ns"));
  ck_assert_ptr_nonnull(strstr(page, "<title>eventring report: spawn_child<"));
  ck_assert_ptr_nonnull(strstr(page, "<h1>eventring report: spawn_child<"));
  /* Its user ints are charted all the same. */
  ck_assert_uint_eq(page_u64(page, "int.spawn.seq.max"), 99);
  free(page);
}
END_TEST

/* Two processes (proc_tree fork): each process's samples of tree.seq
 * are a line of their own, named by the process in a legend whose
 * entries do not overlap. */
START_TEST(test_two_processes) {
  ER_NEED_TOOL();
  const char *prog = er_prog_path("proc_tree");
  if (!prog) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  if (er_tracing_off()) ER_SKIP("a build without tracing");
  const char *dir = er_tmpdir();
  char html[PATH_MAX];
  snprintf(html, sizeof html, "%s/two.html", dir);
  char *page = report_cmd(html, prog, "fork", NULL);
  ck_assert_ptr_nonnull(strstr(page, "2 processes"));
  const char *end,
      *chart = chart_of(page,
                        "user int tree.seq (per process: minimum and maximum "
                        "per bin)",
                        &end);
  int entries = 0;
  for (const char *g = chart; (g = strstr(g, "<g class=\"legend\">")) && g < end;
       g++) {
    const char *t = strstr(g, "<text");
    ck_assert_msg(strstr(t, ">pid ") == strchr(t, '>'), "legend %.60s", t);
    entries++;
  }
  ck_assert_int_eq(entries, 2);
  /* The second process's points, in its own colour. */
  const char *line = strstr(chart, "stroke=\"#d55e00\"");
  const char *dot = strstr(chart, "class=\"dot\" fill=\"#d55e00\"");
  ck_assert_msg((line && line < end) || (dot && dot < end),
                "one colour of lines");
  ck_assert_int_ge(legends_apart(page), 2);
  free(page);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Crafted files.                                                       */

/* Names with markup, spans: the marks and the span counts. */
static void craft_markup(struct craft *c) {
  craft_user_name(c, 0, "<script>alert(\"x\")</script>&");
  craft_user_name(c, 1, "req'uest");
  uint64_t ts = 1000000;
  craft_lifecycle(c, 0, ts, EVENTRING_LIFECYCLE_RING_START, 42);
  for (int i = 0; i < 100; i++) {
    ts = craft_pause(c, 0, ts + 1000, 5000 + (uint64_t)i * 100);
    craft_event(c, 0, 1, ER_UEV_UNIT, 0, ts + 10, NULL, 0);
    /* Spans of 1 .. 100 us, one nested in another of the same name. */
    craft_event(c, 0, 1, ER_UEV_SPAN_BEGIN, 1, ts + 20, NULL, 0);
    if (i % 10 == 0) {
      craft_event(c, 0, 1, ER_UEV_SPAN_BEGIN, 1, ts + 30, NULL, 0);
      craft_event(c, 0, 1, ER_UEV_SPAN_END, 1, ts + 40, NULL, 0);
    }
    ts += 20 + 1000 * (uint64_t)(i + 1);
    craft_event(c, 0, 1, ER_UEV_SPAN_END, 1, ts, NULL, 0);
  }
}

static void check_markup(const char *page) {
  ck_assert_ptr_null(strstr(page, "<script"));
  ck_assert_ptr_nonnull(strstr(page, "&lt;script&gt;alert(&quot;x&quot;)"
                                     "&lt;/script&gt;&amp;"));
  ck_assert_ptr_nonnull(strstr(page, "req&#39;uest"));
  ck_assert_uint_eq(page_u64(page, "span.req&#39;uest.count"), 110);
  ck_assert_uint_eq(
      page_u64(page, "unit.&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"
                     "&amp;.count"),
      100);
  ck_assert_uint_eq(page_u64(page, "gc.pauses"), 100);
}

/* test_crafted's kind of file with its ring start overwritten before it
 * was read: a window of the run, which is no loss and has no loss mark
 * on the time lines. */
static void craft_window(struct craft *c) {
  craft_skip(c, 0, 1000);
  uint64_t ts = 1000000;
  for (int i = 0; i < 50; i++) {
    ts = craft_pause(c, 0, ts + 1000, 5000);
    craft_counter(c, 0, ts + 1, CT_MINOR_PROMOTED, (uint64_t)i);
  }
}

static void check_window(const char *page) {
  ck_assert_uint_eq(page_u64(page, "events.lost"), 0);
  ck_assert_ptr_null(strstr(page, "class=\"mark\""));
  ck_assert_uint_eq(page_u64(page, "gc.pauses"), 50);
}

/* A file read from its start: no mark either. */
static void craft_from_start(struct craft *c) {
  uint64_t ts = 1000000;
  craft_lifecycle(c, 0, ts, EVENTRING_LIFECYCLE_RING_START, 42);
  for (int i = 0; i < 50; i++) ts = craft_pause(c, 0, ts + 1000, 5000);
}

static void check_from_start(const char *page) {
  ck_assert_uint_eq(page_u64(page, "events.lost"), 0);
  ck_assert_ptr_null(strstr(page, "class=\"mark\""));
}

/* Timestamps from one end of 64 bits to the other (a damaged file): the
 * time bins stop widening at their bound, and the page is still made,
 * with stats' numbers. */
static void craft_extreme_times(struct craft *c) {
  craft_lifecycle(c, 0, 0, EVENTRING_LIFECYCLE_RING_START, 42);
  craft_pause(c, 0, 10, 5000);
  craft_counter(c, 0, 6000, CT_MINOR_PROMOTED, 1);
  craft_pause(c, 0, UINT64_C(1) << 63, 5000);
  craft_counter(c, 0, (UINT64_C(1) << 63) + 6000, CT_MINOR_PROMOTED, 2);
  craft_pause(c, 0, UINT64_MAX - 10000, 9000);
  craft_counter(c, 0, UINT64_MAX - 5, CT_MINOR_PROMOTED, 3);
  /* Domain 1 starts at the far end and goes back to the start. */
  craft_lifecycle(c, 1, UINT64_MAX - 1, EVENTRING_LIFECYCLE_DOMAIN_SPAWN,
                  42);
  craft_pause(c, 1, 1, 100);
}

static void check_extreme_times(const char *page) {
  ck_assert_uint_eq(page_u64(page, "gc.pauses"), 4);
  ck_assert_uint_eq(page_u64(page, "counter.minor_promoted.last"), 3);
}

/* One pause of 50 ms among 3000 of 5 us: its bar in the distribution
 * is tall enough to see (the counts are on a log scale), and the
 * distribution of span durations is drawn alike. */
static void craft_tail(struct craft *c) {
  uint64_t ts = 1000000;
  craft_lifecycle(c, 0, ts, EVENTRING_LIFECYCLE_RING_START, 42);
  for (int i = 0; i < 3000; i++) {
    ts = craft_pause(c, 0, ts + 1000, 5000);
    if (i == 1500) ts = craft_pause(c, 0, ts + 1000, 50000000);
  }
}

static void check_tail(const char *page) {
  ck_assert_uint_eq(page_u64(page, "gc.pauses"), 3001);
  const char *end, *chart = chart_of(page, "GC pause distribution", &end);
  double tallest = 0, tail = -1;
  for (const char *b = chart; (b = strstr(b, "<rect class=\"bar\"")) && b < end;
       b++) {
    const char *close = strstr(b, "</rect>");
    double h = attr_num(b, close, "height");
    if (h > tallest) tallest = h;
    const char *tip = strstr(b, "<title>");
    ck_assert_ptr_nonnull(tip);
    if (strstr(tip, " ms: 1</title>") && strstr(tip, " ms: 1</title>") < close)
      tail = h;
  }
  ck_assert_msg(tail >= 0, "no bar of the 50 ms pause");
  ck_assert_msg(tail >= 10 && tail >= tallest / 10,
                "the 50 ms pause's bar is %.1f px high, the tallest %.1f px",
                tail, tallest);
}

/* A crafted file, its page, and what the page must show.  With `spans`
 * >= 0 the page's numbers are compared with stats' and latency's first
 * (compare()), which must find that many span names; -2 compares without
 * counting them, -1 does not compare. */
static const struct crafted_case {
  const char *name;
  void (*craft)(struct craft *c);
  int spans;
  void (*check)(const char *page);
} crafted_cases[] = {
    {"crafted", craft_markup, 1, check_markup},
    {"lost_marked", craft_window, -1, check_window},
    {"lost_marked_from_start", craft_from_start, -1, check_from_start},
    {"extreme_times", craft_extreme_times, -2, check_extreme_times},
    {"tail_visible", craft_tail, -1, check_tail},
};

START_TEST(test_crafted_case) {
  const struct crafted_case *k = &crafted_cases[_i];
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char path[PATH_MAX], html[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s.events", dir, k->name);
  snprintf(html, sizeof html, "%s/%s.html", dir, k->name);
  struct craft c;
  craft_init(&c);
  k->craft(&c);
  craft_write(&c, path);
  craft_free(&c);
  char *page;
  if (k->spans == -1) {
    page = report_of(path, NULL, html);
  } else {
    int spans = compare(path, NULL, html);
    if (k->spans >= 0) ck_assert_int_eq(spans, k->spans);
    page = er_slurp(html, NULL);
  }
  k->check(page);
  free(page);
}
END_TEST

START_TEST(test_usage) {
  ER_NEED_TOOL();
  const char *a1[] = {"report", "x.events", NULL};
  struct lat_run r = lat_run_tool(a1);
  ck_assert_int_eq(r.status, 2);
  ck_assert_int_eq(er_count_lines(r.err), 1);
  ck_assert_msg(strstr(r.err, "-o FILE") != NULL, "%s", r.err);
  lat_run_free(&r);
  const char *a2[] = {"report", "--json", "-o", "x.html", "x.events", NULL};
  r = lat_run_tool(a2);
  ck_assert_int_eq(r.status, 2);
  lat_run_free(&r);
  const char *a3[] = {"report", "-o", "/nonexistent/x.html",
                      "/nonexistent/1.events", NULL};
  r = lat_run_tool(a3);
  ck_assert_int_ne(r.status, 0);
  lat_run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The browser.                                                         */

/* The path of chromium in PATH, or NULL. */
static const char *chromium(void) {
  static char path[PATH_MAX];
  const char *env = getenv("PATH");
  if (!env) return NULL;
  char *copy = strdup(env), *save = NULL;
  for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
    snprintf(path, sizeof path, "%s/chromium", d);
    if (access(path, X_OK) == 0) {
      free(copy);
      return path;
    }
  }
  free(copy);
  return NULL;
}

/* Runs headless chromium on file `html` with `mode` (--dump-dom or
 * --screenshot=FILE), bounded by timeout(1); returns its stdout and
 * stderr (the browser's log, console messages included). */
static struct er_run browse(const char *dir, const char *html,
                            const char *mode) {
  char url[PATH_MAX + 8], profile[PATH_MAX];
  snprintf(url, sizeof url, "file://%s", html);
  snprintf(profile, sizeof profile, "--user-data-dir=%s/profile", dir);
  const char *args[] = {"-k", "5", "60", chromium(), "--headless",
                        "--disable-gpu", "--no-sandbox", "--no-first-run",
                        "--disable-extensions", "--window-size=960,1600",
                        "--enable-logging=stderr", "--v=0", profile, mode,
                        url, NULL};
  char outp[PATH_MAX], errp[PATH_MAX];
  pid_t pid = er_start(dir, "timeout", args, ER_FD_NULL, NULL, ER_SPAWN_PATH,
                       outp, errp);
  int st = er_wait_for(pid, 90);
  struct er_run r = {st, er_slurp(outp, NULL), er_slurp(errp, NULL)};
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "chromium %s: status %d\n%s", mode, st, r.err);
  return r;
}

/* Renders `html` in chromium: every chart of the DOM it built has data
 * points and its legend entries apart, there are `min_charts` charts at
 * least, no console message, and a screenshot.  Returns the DOM. */
static char *browse_report(const char *dir, const char *html,
                           int min_charts) {
  char png[PATH_MAX], shot[PATH_MAX + 16];
  struct er_run r = browse(dir, html, "--dump-dom");
  int charts = 0;
  for (const char *p = r.out; (p = strstr(p, "<svg class=\"chart\"")); p++) {
    const char *end = strstr(p, "</svg>");
    ck_assert_ptr_nonnull(end);
    const char *pts = strstr(p, "data-points=\"");
    ck_assert_msg(pts && pts < end && atol(pts + 13) > 0,
                  "a chart without data points: %.200s", p);
    const char *drawn[] = {"class=\"bar\"", "class=\"line\"", "class=\"dot\""};
    int any = 0;
    for (size_t k = 0; k < 3; k++) {
      const char *q = strstr(p, drawn[k]);
      any |= q && q < end;
    }
    ck_assert_msg(any, "a chart with nothing drawn: %.200s", p);
    charts++;
  }
  ck_assert_int_ge(charts, min_charts);
  legends_apart(r.out);
  /* No console message: the page has no script to fail, and a resource
   * it could not load, or markup the browser refused, would log one. */
  ck_assert_msg(strstr(r.err, "CONSOLE") == NULL, "console: %s", r.err);
  char *dom = r.out;
  r.out = NULL;
  er_run_free(&r);

  snprintf(png, sizeof png, "%s.png", html);
  snprintf(shot, sizeof shot, "--screenshot=%s", png);
  r = browse(dir, html, shot);
  ck_assert_msg(strstr(r.err, "CONSOLE") == NULL, "console: %s", r.err);
  er_run_free(&r);
  size_t len;
  char *img = er_slurp(png, &len);
  ck_assert_ptr_nonnull(img);
  ck_assert_uint_gt(len, 1000);
  ck_assert(!memcmp(img, "\x89PNG", 4));
  free(img);
  return dom;
}

START_TEST(test_browser) {
  ER_NEED_TOOL();
  if (!er_env_dir("EVENTRING_TEST_PROGS")) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  if (!chromium()) ER_SKIP("chromium is not installed (build-aux/install-deps)");
  const char *dir = er_tmpdir();
  char path[PATH_MAX], html[PATH_MAX];
  /* lat_phases: a C program of known phases, counters and user events. */
  er_trace_prog(dir, "lat_phases", NULL, NULL, path);
  snprintf(html, sizeof html, "%s/report.html", dir);
  free(report_of(path, NULL, html));
  /* The pause distribution, GC share, lat.ticks and the counter. */
  char *dom = browse_report(dir, html, 4);
  ck_assert_uint_eq(page_u64(dom, "gc.pauses"), 320);
  free(dom);

  /* A process and its child (proc_tree fork): a line and a legend entry
   * for each in the charts of their user ints. */
  const char *prog = er_prog_path("proc_tree");
  ck_assert_ptr_nonnull(prog);
  snprintf(html, sizeof html, "%s/two.html", dir);
  free(report_cmd(html, prog, "fork", NULL));
  dom = browse_report(dir, html, 3);
  ck_assert_ptr_nonnull(strstr(dom, "2 processes"));
  ck_assert_ptr_nonnull(strstr(dom, "(per process: minimum and maximum"));
  free(dom);
}
END_TEST

static TCase *tc_numbers(void) {
  TCase *tc = er_tcase("numbers");
  er_add_cases(tc, test_vectors, er_vectors, ER_NVECTORS,
               sizeof er_vectors[0]);
  tcase_add_test(tc, test_c_program);
  ER_ADD_CASES(tc, test_crafted_case, crafted_cases);
  tcase_add_test(tc, test_several);
  tcase_add_test(tc, test_usage);
  tcase_add_test(tc, test_no_gc);
  tcase_add_test(tc, test_two_processes);
  return tc;
}

static TCase *tc_browser(void) {
  TCase *tc = er_tcase("browser");
  tcase_set_timeout(tc, 200);
  tcase_add_test(tc, test_browser);
  return tc;
}

ER_TEST_MAIN("report", tc_numbers, tc_browser)
