/* Tests that probes given an id the format cannot hold (a counter, phase or lifecycle kind beyond the file's name tables, a phase of 8192 that would spill into the type bits, a message type that is not the entry point's) write nothing and count the event in the ring's DROPPED word, so the ring stays whole. */
#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "testlib.h"

#define GOOD 1000

/* One of each kind of bad id; returns how many events it tried. */
static int emit_bad_ids(void) {
  eventring_counter((eventring_counter_id)40, 1);
  eventring_begin((eventring_phase)8192);
  eventring_end((eventring_phase)9000);
  eventring_begin((eventring_phase)EVENTRING_PHASE_COUNT + 7);
  eventring_counter((eventring_counter_id)EVENTRING_COUNTER_COUNT + 6, 2);
  eventring_lifecycle((eventring_lifecycle_kind)EVENTRING_LIFECYCLE_COUNT, 0);
  eventring_counter((eventring_counter_id)-1, 3);
  /* The entry points below are the header's; a type that is not theirs
   * would give an event of the wrong length, or set the user bit. */
  if (EVENTRING__ON()) {
    eventring__runtime(EVENTRING__EV_COUNTER, 0);
    eventring__runtime1(EVENTRING__EV_BEGIN, 0, 0);
    eventring__runtime(16 + EVENTRING__EV_BEGIN, 0);
    eventring__runtime1(16 + EVENTRING__EV_COUNTER, 0, 4);
  }
  return 11;
}

START_TEST(test_out_of_range_ids_dropped) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("built without tracing");
  const char *dir = er_tmpdir();
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  int id = eventring_register("bad_ids.int", EVENTRING_TYPE_INT);
  ck_assert_int_ge(id, 0);
  ck_assert_int_eq(eventring_start(), 0);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", eventring_path());
  int bad = 0;
  for (int i = 0; i < GOOD; i++) {
    eventring_write_int(id, i);
    if (i == 5) bad += emit_bad_ids();
  }
  /* The last ids of OCaml's numbering are still written (the decoder
   * below knows no others). */
  eventring_counter((eventring_counter_id)EVENTRING_COUNTER_COUNT - 1, 7);
  eventring_begin((eventring_phase)EVENTRING_PHASE_COUNT - 1);
  eventring_end((eventring_phase)EVENTRING_PHASE_COUNT - 1);
  ck_assert_int_eq(eventring_stop(), 0);

  /* The strict decoder reads the whole ring, and every id is in range. */
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(f.rings[0].dropped, (uint64_t)bad);
  ck_assert_uint_eq(rf_count(&f, 0, 1, ER_UEV_INT, -1), GOOD);
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_COUNTER, -1), 1);
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_BEGIN, -1), 1);
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_END, -1), 1);
  for (size_t i = 0; i < f.rings[0].nevents; i++) {
    const struct rf_event *ev = &f.rings[0].events[i];
    if (ev->is_user) continue;
    if (ev->type == ER_EV_COUNTER)
      ck_assert_uint_lt(ev->id, f.ext[ER_EXT_N_COUNTERS]);
    if (ev->type == ER_EV_BEGIN || ev->type == ER_EV_END)
      ck_assert_uint_lt(ev->id, f.ext[ER_EXT_N_PHASES]);
  }
  rf_close(&f);

  /* And the command reads every good event, nothing malformed, the bad
   * ones reported as dropped by the writer. */
  struct er_run r = er_run_tool(dir, (const char *[]){"dump", "--time=raw", path, NULL}, 0);
  er_assert_status(&r, 0);
  struct er_lines all = er_lines_split(r.out);
  ck_assert_uint_gt(all.n, 0);
  const char *sum = all.v[all.n - 1];
  ck_assert_msg(!strncmp(sum, "SUMMARY ", 8), "%s", sum);
  ck_assert_uint_eq(er_field(sum, "user_int"), GOOD);
  ck_assert_uint_eq(er_field(sum, "runtime_counter"), 1);
  ck_assert_uint_eq(er_field(sum, "malformed_events"), 0);
  ck_assert_uint_eq(er_field(sum, "dropped_events"), (uint64_t)bad);
  er_lines_free(&all);
  er_run_free(&r);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_ids(void) {
  TCase *tc = er_tcase("ids");
  tcase_add_test(tc, test_out_of_range_ids_dropped);
  return tc;
}

ER_TEST_MAIN("bad_ids", tc_ids)
