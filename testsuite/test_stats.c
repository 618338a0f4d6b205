/* Tests `eventring stats`: phase counts equal `eventring dump`'s begin events, times of crafted phases, counters' last values, user event counts, allocation totals, events read and lost; on crafted files, C programs and the OCaml 5 vectors. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "harness.h"
#include "lat_craft.h"
#include "tooltest.h"

static struct lat_run stats_json(const char *path, const char *extra) {
  const char *args[] = {"stats", "--json", path, extra, NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  return r;
}

/* A phase's field in the report; fails when the phase is not listed. */
static uint64_t phase_field(const char *json, const char *name,
                            const char *field) {
  const char *p = json_named(json, "phases", name);
  ck_assert_msg(p != NULL, "phase %s not in: %s", name, json);
  return json_u64(p, field);
}

/* Checks the report of `path` against `eventring dump` of the same file:
 * every phase's count is its number of begin events, the events read and
 * lost are the dump's totals. */
static void check_against_dump(const char *path, const char *extra,
                               const char *json) {
  const char *args[] = {"dump", "--time=raw", path, extra, NULL};
  struct lat_run d = lat_run_tool(args);
  lat_assert_ok(&d);
  struct {
    char name[64];
    uint64_t n;
  } ph[128];
  size_t nph = 0;
  for (char *line = d.out; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    const char *k = strstr(line, " kind=runtime_begin name=");
    if (k) {
      char name[64];
      ck_assert_int_eq(sscanf(k, " kind=runtime_begin name=%63s", name), 1);
      size_t j = 0;
      while (j < nph && strcmp(ph[j].name, name)) j++;
      if (j == nph) {
        ck_assert_uint_lt(nph, 128);
        snprintf(ph[nph].name, sizeof ph[nph].name, "%s", name);
        ph[nph++].n = 0;
      }
      ph[j].n++;
    }
    if (!strncmp(line, "SUMMARY ", 8)) {
      const char *events = json_at(json, "events");
      uint64_t total, lost;
      const char *t = strstr(line, " total=");
      const char *l = strstr(line, " lost_events_total=");
      ck_assert(t && l);
      total = strtoull(t + 7, NULL, 10);
      lost = strtoull(l + 19, NULL, 10);
      ck_assert_uint_eq(json_u64(events, "read"), total);
      /* dump reports the events before the window as lost, as OCaml's
       * consumer does; stats tells them apart. */
      ck_assert_uint_eq(
          json_u64(events, "lost") + json_u64(events, "before_window"), lost);
    }
    line = nl ? nl + 1 : NULL;
  }
  for (size_t j = 0; j < nph; j++)
    ck_assert_msg(phase_field(json, ph[j].name, "count") == ph[j].n,
                  "%s: %" PRIu64 " in stats, %" PRIu64 " begins in dump",
                  ph[j].name, phase_field(json, ph[j].name, "count"),
                  ph[j].n);
  lat_run_free(&d);
}

/* A crafted file: phase times, counters in two domains, user events, an
 * alloc event, a lost start. */
START_TEST(test_crafted) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  struct craft c;
  craft_new(&c, path, "crafted");
  craft_user_name(&c, 0, "s.int");
  craft_user_name(&c, 1, "s.unit");
  /* Domain 0: 100 pauses of 10 us, each with 2.5 us of
   * minor_local_roots; then a major slice of 1 ms with a minor of 100 us
   * inside.  Wall time 1000 .. 3001000 + ... (see below). */
  uint64_t ts = 1000;
  craft_lifecycle(&c, 0, ts, EVENTRING_LIFECYCLE_RING_START, 7);
  for (int i = 0; i < 100; i++) {
    ts = craft_pause(&c, 0, ts + 10000, 10000);
    craft_counter(&c, 0, ts + 1, CT_MINOR_PROMOTED, 1000 + i);
    craft_user_int(&c, 0, ts + 2, 0, i);
  }
  craft_begin(&c, 0, ts + 100, PH_MAJOR_SLICE);
  craft_pause(&c, 0, ts + 200, 100000);
  craft_end(&c, 0, ts + 100 + 1000000, PH_MAJOR_SLICE);
  ts += 100 + 1000000;
  uint64_t buckets[20] = {0};
  buckets[1] = 11;
  buckets[19] = 2;
  craft_alloc(&c, 0, ts + 5, buckets);
  craft_alloc(&c, 0, ts + 6, buckets);
  uint64_t last0 = ts + 6;
  /* Domain 1 lost its first 500 words; its minor_promoted comes later
   * than domain 0's and wins; minor_allocated only here. */
  craft_skip(&c, 1, 500);
  craft_counter(&c, 1, 500000, CT_MINOR_ALLOCATED, 5);
  craft_counter(&c, 1, last0 + 1000, CT_MINOR_PROMOTED, 77);
  craft_user_unit(&c, 1, last0 + 1001, 1);
  craft_user_unit(&c, 1, last0 + 1002, 1);
  craft_pause(&c, 1, last0 + 2000, 50000);
  uint64_t last = last0 + 2000 + 50000;
  craft_write(&c, path);
  craft_free(&c);

  struct lat_run r = stats_json(path, NULL);
  const char *j = r.out;
  ck_assert_uint_eq(json_u64(j, "first_ts"), 1000);
  ck_assert_uint_eq(json_u64(j, "last_ts"), last);
  ck_assert_uint_eq(json_u64(j, "wall_ns"), last - 1000);
  /* GC: domain 0's 100 x 10 us + 1 ms, domain 1's 50 us. */
  const char *gc = json_at(j, "gc");
  ck_assert_uint_eq(json_u64(gc, "total_ns"), 100 * 10000 + 1000000 + 50000);
  ck_assert_uint_eq(json_u64(gc, "pauses"), 102);
  double share = json_double(gc, "share");
  /* Of the two domains' lifetimes: domain 0 from 1000 to last0, domain
   * 1 from 500000 to last. */
  double want = (double)(100 * 10000 + 1000000 + 50000) /
                ((double)(last0 - 1000) + (double)(last - 500000));
  ck_assert(share > want * (1 - 1e-12) && share < want * (1 + 1e-12));
  ck_assert_uint_eq(phase_field(j, "minor", "count"), 102);
  ck_assert_uint_eq(phase_field(j, "minor", "completed"), 102);
  ck_assert_uint_eq(phase_field(j, "minor", "total_ns"), 100 * 10000 + 100000 + 50000);
  ck_assert_uint_eq(phase_field(j, "minor", "max_ns"), 100000);
  ck_assert_uint_eq(phase_field(j, "minor_local_roots", "count"), 102);
  ck_assert_uint_eq(phase_field(j, "minor_local_roots", "total_ns"),
                    100 * 2500 + 25000 + 12500);
  ck_assert_uint_eq(phase_field(j, "major_slice", "count"), 1);
  ck_assert_uint_eq(phase_field(j, "major_slice", "max_ns"), 1000000);
  const char *mp = json_named(j, "counters", "minor_promoted");
  ck_assert_ptr_nonnull(mp);
  json_counts(mp, "last=77 samples=101 domain=1");
  const char *ma = json_named(j, "counters", "minor_allocated");
  ck_assert_ptr_nonnull(ma);
  ck_assert_uint_eq(json_u64(ma, "last"), 5);
  const char *ui = json_named(j, "user_events", "s.int");
  ck_assert_ptr_nonnull(ui);
  ck_assert_uint_eq(json_u64(ui, "count"), 100);
  const char *uu = json_named(j, "user_events", "s.unit");
  ck_assert_ptr_nonnull(uu);
  ck_assert_uint_eq(json_u64(uu, "count"), 2);
  const char *al = json_at(j, "alloc");
  ck_assert_uint_eq(json_u64(al, "events"), 2);
  ck_assert_msg(strstr(al, "\"buckets\": [0, 22, 0, 0, 0, 0, 0, 0, 0, 0, 0, "
                           "0, 0, 0, 0, 0, 0, 0, 0, 4]"),
                "%s", al);
  const char *ev = json_at(j, "events");
  /* Overwritten before the file was read: a window, not a loss. */
  ck_assert_uint_eq(json_u64(ev, "lost"), 0);
  ck_assert_uint_eq(json_u64(ev, "before_window"), 500);
  ck_assert_msg(strstr(ev, "\"lost_unit\": \"words\""), "%s", ev);
  check_against_dump(path, NULL, j);
  lat_run_free(&r);

  /* The text report names the same things. */
  const char *args[] = {"stats", path, NULL};
  r = lat_run_tool(args);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "minor_local_roots") &&
                    strstr(r.out, "minor_promoted") && strstr(r.out, "s.int") &&
                    strstr(r.out, ">=100 words"),
                "%s", r.out);
  lat_run_free(&r);
}
END_TEST

/* One run per OCaml 5 vector, named after it. */
START_TEST(test_ocaml5_vector) {
  const char *name = er_vectors[_i];
  ER_NEED_TOOL();
  const char *data = er_env_dir("EVENTRING_TEST_DATA");
  if (!data) ER_SKIP("EVENTRING_TEST_DATA is not set");
  char file[PATH_MAX];
  ck_assert(er_unpack_vector(er_tmpdir(), name, file));
  const char *opt = er_vector_ocaml50(name) ? "--ocaml50" : NULL;
  struct lat_run r = stats_json(file, opt);
  check_against_dump(file, opt, r.out);
  if (strstr(name, "wrapped")) {
    /* A preserved file read after its writer ended: its ring had
     * wrapped over 14002 words, none of them lost by this reader. */
    ck_assert_uint_eq(json_u64(json_at(r.out, "events"), "lost"), 0);
    ck_assert_uint_eq(
        json_u64(json_at(r.out, "events"), "before_window"), 14002);
  }
  if (strstr(name, "multidomain")) {
    /* The vectors' domains 0 .. 3 each spent time in GC. */
    const char *gc = json_at(r.out, "gc");
    for (int d = 0; d < 4; d++) {
      char key[32];
      snprintf(key, sizeof key, "{\"domain\": %d, \"pauses\": ", d);
      const char *p = strstr(gc, key);
      ck_assert_msg(p != NULL, "no domain %d in %s", d, gc);
      ck_assert_uint_gt(strtoull(p + strlen(key), NULL, 10), 0);
    }
  }
  lat_run_free(&r);
  unlink(file);
}
END_TEST

/* A C program, its ring small enough to wrap: lost events are exact
 * event counts, read + lost is every event written. */
START_TEST(test_c_program_wrapped) {
  ER_NEED_TOOL();
  if (!er_env_dir("EVENTRING_TEST_PROGS"))
    ER_SKIP("EVENTRING_TEST_PROGS is not set");
  char path[PATH_MAX];
  er_trace_prog(er_tmpdir(), "lat_phases", (const char *[]){"40", NULL},
                "OCAMLRUNPARAM=e=10", path);
  struct lat_run r = stats_json(path, NULL);
  const char *ev = json_at(r.out, "events");
  ck_assert_msg(strstr(ev, "\"lost_unit\": \"events\""), "%s", ev);
  struct rf_file f;
  er_open_ring(path, &f);
  uint64_t written = f.rings[0].written + f.rings[1].written;
  /* The writer had finished: what it overwrote is before the window. */
  ck_assert_uint_eq(json_u64(ev, "lost"), 0);
  ck_assert_uint_gt(json_u64(ev, "before_window"), 0);
  ck_assert_uint_eq(json_u64(ev, "read") + json_u64(ev, "before_window"),
                    written);
  rf_close(&f);
  const char *mp = json_named(r.out, "counters", "minor_promoted");
  ck_assert_ptr_nonnull(mp);
  ck_assert_uint_eq(json_u64(mp, "last"), 299);
  /* Domain 1's 40 minors are all there (its ring did not wrap). */
  const char *gc = json_at(r.out, "gc");
  /* Its thread's name comes between the domain and its figures. */
  const char *d1 = strstr(gc, "{\"domain\": 1, \"thread\": \"lat_phases\", ");
  ck_assert_ptr_nonnull(d1);
  d1 = strstr(d1, "\"pauses\": ");
  ck_assert_ptr_nonnull(d1);
  ck_assert_uint_eq(strtoull(d1 + strlen("\"pauses\": "), NULL, 10), 40);
  check_against_dump(path, NULL, r.out);
  lat_run_free(&r);
}
END_TEST

/* The same program without wrapping: every count is known. */
START_TEST(test_c_program) {
  ER_NEED_TOOL();
  if (!er_env_dir("EVENTRING_TEST_PROGS"))
    ER_SKIP("EVENTRING_TEST_PROGS is not set");
  char path[PATH_MAX];
  er_trace_prog(er_tmpdir(), "lat_phases", NULL, NULL, path);
  struct lat_run r = stats_json(path, NULL);
  const char *j = r.out;
  ck_assert_uint_eq(phase_field(j, "minor", "count"), 300);
  ck_assert_uint_eq(phase_field(j, "minor", "completed"), 300);
  ck_assert_uint_eq(phase_field(j, "minor_local_roots", "count"), 300);
  ck_assert_uint_eq(phase_field(j, "major_slice", "count"), 20);
  ck_assert_uint_eq(phase_field(j, "major_mark", "count"), 20);
  ck_assert_uint_eq(json_u64(json_at(j, "gc"), "pauses"), 320);
  ck_assert_uint_eq(json_u64(json_named(j, "user_events", "lat.ticks"),
                             "count"),
                    300);
  ck_assert_uint_eq(json_u64(json_named(j, "user_events", "lat.unit"),
                             "count"),
                    5);
  ck_assert_uint_eq(json_u64(json_at(j, "events"), "lost"), 0);
  ck_assert_msg(strstr(j, "\"alloc\": null"), "%s", j);
  check_against_dump(path, NULL, j);
  lat_run_free(&r);
}
END_TEST

/* The instrumented variant's allocation buckets, summed over flushes. */
START_TEST(test_alloc_totals) {
  ER_NEED_TOOL();
  if (!er_env_dir("EVENTRING_TEST_PROGS"))
    ER_SKIP("EVENTRING_TEST_PROGS is not set");
  char path[PATH_MAX];
  er_trace_prog(er_tmpdir(), "i_lat_alloc", NULL,
                "OCAML_RUNTIME_EVENTS_START=1", path);
  struct lat_run r = stats_json(path, NULL);
  const char *al = json_at(r.out, "alloc");
  ck_assert_uint_eq(json_u64(al, "events"), 3);
  ck_assert_msg(strstr(al, "\"buckets\": [0, 30, 0, 0, 0, 0, 0, 0, 0, 6, 9, "
                           "0, 0, 0, 0, 0, 0, 0, 3, 15]"),
                "%s", al);
  lat_run_free(&r);
}
END_TEST

/* GC shares in a process tree: a parent that lived 1 s with 10 ms of GC
 * and a child that lived 70 ms of it with 23.569 ms.  Each domain's share
 * is over its own lifetime, in the all-processes table as in its own;
 * the total is over the time each domain existed, 1.07 s. */
START_TEST(test_share_over_lifetimes) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char parent[PATH_MAX], child[PATH_MAX];
  snprintf(parent, sizeof parent, "%s/parent.events", dir);
  snprintf(child, sizeof child, "%s/child.events", dir);
  struct craft c;
  craft_init(&c);
  craft_begin(&c, 0, 1000000000, PH_MINOR);
  craft_end(&c, 0, 1010000000, PH_MINOR);
  craft_begin(&c, 0, 2000000000, PH_MINOR);
  craft_end(&c, 0, 2000000000, PH_MINOR);
  craft_write(&c, parent);
  craft_free(&c);
  craft_init(&c);
  craft_begin(&c, 0, 1500000000, PH_MINOR);
  craft_end(&c, 0, 1523569000, PH_MINOR);
  craft_begin(&c, 0, 1570000000, PH_MINOR);
  craft_end(&c, 0, 1570000000, PH_MINOR);
  craft_write(&c, child);
  craft_free(&c);

  const char *args[] = {"stats", "--json", parent, child, NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  const char *gc = json_at(r.out, "gc");
  double want = (10000000.0 + 23569000.0) / (1000000000.0 + 70000000.0);
  double share = json_double(gc, "share");
  ck_assert_msg(share > want * (1 - 1e-9) && share < want * (1 + 1e-9),
                "total share %g, want %g: %s", share, want, gc);
  /* The domain rows of the total, parent's then child's. */
  const char *row = strstr(gc, "\"domains\"");
  ck_assert_ptr_nonnull(row);
  const char *p0 = strstr(row, "\"share\": ");
  ck_assert_ptr_nonnull(p0);
  const char *p1 = strstr(p0 + 1, "\"share\": ");
  ck_assert_ptr_nonnull(p1);
  ck_assert_msg(strtod(p0 + 9, NULL) > 0.00999 &&
                    strtod(p0 + 9, NULL) < 0.01001,
                "%s", row);
  ck_assert_msg(strtod(p1 + 9, NULL) > 0.33669 &&
                    strtod(p1 + 9, NULL) < 0.33671,
                "%s", row);
  lat_run_free(&r);

  const char *text[] = {"stats", parent, child, NULL};
  r = lat_run_tool(text);
  lat_assert_ok(&r);
  /* In the total's table and in the child's own, alike. */
  const char *first = strstr(r.out, "(33.67% of 70.00 ms)");
  ck_assert_msg(first != NULL, "%s", r.out);
  ck_assert_msg(strstr(first + 1, "(33.67% of 70.00 ms)") != NULL, "%s",
                r.out);
  ck_assert_msg(strstr(r.out, "(3.14% of the domains' lifetimes)") != NULL,
                "%s", r.out);
  lat_run_free(&r);
}
END_TEST

/* A real process tree: two processes, one after the other, each with
 * GC pauses.  Each one's share is over its own lifetime, in its section
 * and in the table of all, and the total is over the sum of their
 * lifetimes, not over the whole run's wall time twice. */
START_TEST(test_share_in_tree) {
  ER_NEED_TOOL();
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  if (!progs) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  char cmd[2 * PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "%s/lat_phases; %s/lat_phases", progs, progs);
  char out[PATH_MAX];
  snprintf(out, sizeof out, "%s/tree.json", er_tmpdir());
  const char *args[] = {"stats", "--json", "-o", out, "--", "sh", "-c", cmd,
                        NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  free(r.out);
  r.out = er_slurp(out, NULL);
  ck_assert_ptr_nonnull(r.out);
  const char *procs = json_at(r.out, "processes");
  ck_assert_ptr_nonnull(procs);
  const char *rows = strstr(json_at(r.out, "gc"), "\"domains\"");
  ck_assert_ptr_nonnull(rows);
  double gc_sum = 0, life_sum = 0;
  const char *p = procs;
  for (int i = 0; i < 2; i++) {
    p = strstr(p + 1, "{\"pid\": ");
    ck_assert_msg(p != NULL, "%s", procs);
    /* lat_phases writes in domain 0 only: its wall time is its
     * domain's lifetime. */
    uint64_t wall = json_u64(p, "wall_ns");
    const char *gc = json_at(p, "gc");
    uint64_t total = json_u64(gc, "total_ns");
    double share = json_double(gc, "share");
    double want = (double)total / (double)wall;
    ck_assert_msg(total > 0 && share > want * (1 - 1e-9) &&
                      share < want * (1 + 1e-9),
                  "process %d: share %g, %" PRIu64 " / %" PRIu64, i, share,
                  total, wall);
    rows = strstr(rows + 1, "\"share\": ");
    ck_assert_ptr_nonnull(rows);
    double row = strtod(rows + 9, NULL);
    ck_assert_msg(row > want * (1 - 1e-9) && row < want * (1 + 1e-9),
                  "row %d of all: %g, its own %g", i, row, want);
    gc_sum += (double)total;
    life_sum += (double)wall;
  }
  double share = json_double(json_at(r.out, "gc"), "share");
  ck_assert_msg(share > gc_sum / life_sum * (1 - 1e-9) &&
                    share < gc_sum / life_sum * (1 + 1e-9),
                "total share %g, want %g", share, gc_sum / life_sum);
  lat_run_free(&r);
}
END_TEST

static TCase *tc_stats(void) {
  TCase *tc = er_tcase("stats");
  tcase_add_test(tc, test_crafted);
  tcase_add_test(tc, test_share_over_lifetimes);
  tcase_add_test(tc, test_share_in_tree);
  er_add_cases(tc, test_ocaml5_vector, er_vectors, ER_NVECTORS,
               sizeof er_vectors[0]);
  tcase_add_test(tc, test_c_program);
  tcase_add_test(tc, test_c_program_wrapped);
  tcase_add_test(tc, test_alloc_totals);
  return tc;
}

ER_TEST_MAIN("stats", tc_stats)
