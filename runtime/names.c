/* names.c -- names of phases, counters and lifecycle events, as OCaml
 * prints them, indexed by their id in each numbering (FORMAT.md). */
#include "eventring.h"
#include "ring_format.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The lists OCaml's runtime_events.h gives, each name once: the 5.3+
 * phase numbering up to 5.4's, and the counters up to 5.3's.  What
 * eventring writes and what it names in OCaml's files are both made of
 * them, so that they cannot drift apart. */
#define ITEM(name) name,
#define OCAML_PHASES_53(X) \
  X("explicit_gc_set") \
  X("explicit_gc_stat") \
  X("explicit_gc_minor") \
  X("explicit_gc_major") \
  X("explicit_gc_full_major") \
  X("explicit_gc_compact") \
  X("major") \
  X("major_sweep") \
  X("major_mark_roots") \
  X("major_memprof_roots") \
  X("major_mark") \
  X("minor") \
  X("minor_local_roots") \
  X("minor_memprof_roots") \
  X("minor_memprof_clean") \
  X("minor_finalized") \
  X("explicit_gc_major_slice") \
  X("finalise_update_first") \
  X("finalise_update_last") \
  X("interrupt_remote") \
  X("major_ephe_mark") \
  X("major_ephe_sweep") \
  X("major_finish_marking") \
  X("major_gc_cycle_domains") \
  X("major_gc_phase_change") \
  X("major_gc_stw") \
  X("major_mark_opportunistic") \
  X("major_slice") \
  X("major_finish_cycle") \
  X("minor_clear") \
  X("minor_finalizers_oldify") \
  X("minor_global_roots") \
  X("minor_leave_barrier") \
  X("stw_api_barrier") \
  X("stw_handler") \
  X("stw_leader") \
  X("major_finish_sweeping") \
  X("major_memprof_clean") \
  X("minor_finalizers_admin") \
  X("minor_remembered_set") \
  X("minor_remembered_set_promote") \
  X("minor_local_roots_promote") \
  X("domain_condition_wait") \
  X("domain_resize_heap_reservation") \
  X("compaction") \
  X("compaction_evacuate") \
  X("compaction_forward") \
  X("compaction_release") \
  X("empty_minor")
#define OCAML_COUNTERS(X) \
  X("force_minor_alloc_small") \
  X("force_minor_make_vect") \
  X("force_minor_set_minor_heap_size") \
  X("force_minor_memprof") \
  X("minor_promoted") \
  X("minor_allocated") \
  X("request_major_alloc_shr") \
  X("request_major_adjust_gc_speed") \
  X("request_minor_realloc_ref_table") \
  X("request_minor_realloc_ephe_ref_table") \
  X("request_minor_realloc_custom_table") \
  X("major_heap_pool_words") \
  X("major_heap_pool_live_words") \
  X("major_heap_large_words") \
  X("major_heap_pool_frag_words") \
  X("major_heap_pool_live_blocks") \
  X("major_heap_large_blocks") \
  X("major_heap_words") \
  X("major_allocated_words") \
  X("major_allocated_work") \
  X("major_dependent_work") \
  X("major_extra_work") \
  X("major_work_counter") \
  X("major_alloc_counter") \
  X("major_slice_target") \
  X("major_slice_budget")

/* OCaml 5.3 and later: what eventring writes, then its extension ids. */
const char *const eventring__phase_names_53[] = {
  OCAML_PHASES_53(ITEM)
  /* Extension ids, after the listed ones: phases of OCaml 4.13's
   * instrumented runtime that nothing in the list is near (see
   * doc/ocaml4-mapping.md).  They are named in each file's own table. */
  "major_roots_global",
  "major_roots_dynamic_global",
  "major_roots_local",
  "major_roots_c",
  "major_roots_finalised",
  "major_roots_hook",
  "major_check_and_compact",
};
const unsigned eventring__n_phases_53 = COUNT(eventring__phase_names_53);

/* OCaml 5.0-5.2, for reading files of those versions. */
const char *const eventring__phase_names_50[] = {
  "explicit_gc_set",
  "explicit_gc_stat",
  "explicit_gc_minor",
  "explicit_gc_major",
  "explicit_gc_full_major",
  "explicit_gc_compact",
  "major",
  "major_sweep",
  "major_mark_roots",
  "major_mark",
  "minor",
  "minor_local_roots",
  "minor_finalized",
  "explicit_gc_major_slice",
  "finalise_update_first",
  "finalise_update_last",
  "interrupt_remote",
  "major_ephe_mark",
  "major_ephe_sweep",
  "major_finish_marking",
  "major_gc_cycle_domains",
  "major_gc_phase_change",
  "major_gc_stw",
  "major_mark_opportunistic",
  "major_slice",
  "major_finish_cycle",
  "minor_clear",
  "minor_finalizers_oldify",
  "minor_global_roots",
  "minor_leave_barrier",
  "stw_api_barrier",
  "stw_handler",
  "stw_leader",
  "major_finish_sweeping",
  "minor_finalizers_admin",
  "minor_remembered_set",
  "minor_remembered_set_promote",
  "minor_local_roots_promote",
  "domain_condition_wait",
  "domain_resize_heap_reservation",
  "compaction",
  "compaction_evacuate",
  "compaction_forward",
  "compaction_release",
};
const unsigned eventring__n_phases_50 = COUNT(eventring__phase_names_50);

/* Counters only ever grow at the end, so one table serves every version. */
const char *const eventring__counter_names[] = {
  OCAML_COUNTERS(ITEM)
  /* Extension ids: OCaml 4.13's counters with no listed counterpart. */
  "alloc_jump",
  "force_minor_weak",
  "major_mark_slice_remain",
  "major_mark_slice_fields",
  "major_mark_slice_pointers",
  "major_work_extra",
};
const unsigned eventring__n_counters = COUNT(eventring__counter_names);

/* OCaml's own lists, for reading the files an OCaml 5 runtime writes
 * (which carry no names): the 5.3+ phase numbering and the counters, as
 * OCaml's runtime_events.h lists them up to 5.5.  Only ids read from an
 * OCaml header are named: 5.5 also lists a ramp-up phase and three
 * major allocated-words counters (ocaml/ocaml#15001) whose ids were not
 * read from a header, so they, like any id past these lists (a later
 * OCaml's), are shown as numbers, never as a possibly wrong name; nor are
 * they given the extension names above, which only eventring's files
 * use.  The first id each release added is in eventring__ocaml_releases. */
const char *const eventring__ocaml_phase_names[] = {
  OCAML_PHASES_53(ITEM)
  "minor_ephe_clean",            /* 5.5 */
};
const unsigned eventring__n_ocaml_phases =
    COUNT(eventring__ocaml_phase_names);

const char *const eventring__ocaml_counter_names[] = {
  OCAML_COUNTERS(ITEM)
  "minor_allocated_words",           /* 5.5 */
  "minor_promoted_words",
};
const unsigned eventring__n_ocaml_counters =
    COUNT(eventring__ocaml_counter_names);

/* Each OCaml 5 release and the ids it writes that eventring names:
 * phases below `phases` in its own numbering (5.0-5.2's or 5.3+'s),
 * counters below `counters`.  5.5 writes more (see above); those count as
 * past every list.  Oldest first; every release's lists extend the
 * previous one's in the same numbering. */
const struct er_ocaml_release eventring__ocaml_releases[] = {
  {50, ER_PHASES_OCAML50, 40, 11},
  {51, ER_PHASES_OCAML50, 40, 17},
  {52, ER_PHASES_OCAML50, 44, 17},
  {53, ER_PHASES_OCAML53, 48, 26},
  {54, ER_PHASES_OCAML53, 49, 26},
  {55, ER_PHASES_OCAML53, 50, 28},
};
const unsigned eventring__n_ocaml_releases = COUNT(eventring__ocaml_releases);

const char *const eventring__lifecycle_names[] = {
  "ring_start", "ring_stop", "ring_pause", "ring_resume",
  "fork_parent", "fork_child", "domain_spawn", "domain_terminate",
};
const unsigned eventring__n_lifecycle = COUNT(eventring__lifecycle_names);

_Static_assert(COUNT(eventring__phase_names_53) == ER_N_PHASES_53,
               "phase enum and names disagree");
_Static_assert(COUNT(eventring__counter_names) == ER_N_COUNTERS,
               "counter enum and names disagree");
_Static_assert(EVENTRING_OCAML_LATEST == 55 &&
                   COUNT(eventring__ocaml_phase_names) == 50 &&
                   COUNT(eventring__ocaml_counter_names) == 28,
               "OCaml's lists and eventring__ocaml_releases disagree");
_Static_assert(COUNT(eventring__lifecycle_names) == ER_N_LIFECYCLE,
               "lifecycle enum and names disagree");

static const char *lookup(const char *const *names, unsigned n, int id) {
  return id >= 0 && (unsigned)id < n ? names[id] : 0;
}

/* The listed vocabulary only: an extension id means something only in a
 * file that names it. */
const char *eventring_phase_name(int phase) {
  return lookup(eventring__phase_names_53, EVENTRING_PHASE_COUNT, phase);
}

const char *eventring_counter_name(int counter) {
  return lookup(eventring__counter_names, EVENTRING_COUNTER_COUNT, counter);
}

const char *eventring_lifecycle_name(int kind) {
  return lookup(eventring__lifecycle_names, eventring__n_lifecycle, kind);
}
