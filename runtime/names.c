/* names.c -- names of phases, counters and lifecycle events, as OCaml
 * prints them, indexed by their id in each numbering (FORMAT.md). */
#include "eventring.h"
#include "ring_format.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* OCaml 5.3 and later: what eventring writes, then its extension ids. */
const char *const eventring__phase_names_53[] = {
  "explicit_gc_set",
  "explicit_gc_stat",
  "explicit_gc_minor",
  "explicit_gc_major",
  "explicit_gc_full_major",
  "explicit_gc_compact",
  "major",
  "major_sweep",
  "major_mark_roots",
  "major_memprof_roots",
  "major_mark",
  "minor",
  "minor_local_roots",
  "minor_memprof_roots",
  "minor_memprof_clean",
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
  "major_memprof_clean",
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
  "empty_minor",
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
  "force_minor_alloc_small",
  "force_minor_make_vect",
  "force_minor_set_minor_heap_size",
  "force_minor_memprof",
  "minor_promoted",
  "minor_allocated",
  "request_major_alloc_shr",
  "request_major_adjust_gc_speed",
  "request_minor_realloc_ref_table",
  "request_minor_realloc_ephe_ref_table",
  "request_minor_realloc_custom_table",
  "major_heap_pool_words",
  "major_heap_pool_live_words",
  "major_heap_large_words",
  "major_heap_pool_frag_words",
  "major_heap_pool_live_blocks",
  "major_heap_large_blocks",
  "major_heap_words",
  "major_allocated_words",
  "major_allocated_work",
  "major_dependent_work",
  "major_extra_work",
  "major_work_counter",
  "major_alloc_counter",
  "major_slice_target",
  "major_slice_budget",
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
  "explicit_gc_set",
  "explicit_gc_stat",
  "explicit_gc_minor",
  "explicit_gc_major",
  "explicit_gc_full_major",
  "explicit_gc_compact",
  "major",
  "major_sweep",
  "major_mark_roots",
  "major_memprof_roots",
  "major_mark",
  "minor",
  "minor_local_roots",
  "minor_memprof_roots",
  "minor_memprof_clean",
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
  "major_memprof_clean",
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
  "empty_minor",                 /* 5.4 */
  "minor_ephe_clean",            /* 5.5 */
};
const unsigned eventring__n_ocaml_phases =
    COUNT(eventring__ocaml_phase_names);

const char *const eventring__ocaml_counter_names[] = {
  "force_minor_alloc_small",
  "force_minor_make_vect",
  "force_minor_set_minor_heap_size",
  "force_minor_memprof",
  "minor_promoted",
  "minor_allocated",
  "request_major_alloc_shr",
  "request_major_adjust_gc_speed",
  "request_minor_realloc_ref_table",
  "request_minor_realloc_ephe_ref_table",
  "request_minor_realloc_custom_table",
  "major_heap_pool_words",           /* 5.1 */
  "major_heap_pool_live_words",
  "major_heap_large_words",
  "major_heap_pool_frag_words",
  "major_heap_pool_live_blocks",
  "major_heap_large_blocks",
  "major_heap_words",                /* 5.3 */
  "major_allocated_words",
  "major_allocated_work",
  "major_dependent_work",
  "major_extra_work",
  "major_work_counter",
  "major_alloc_counter",
  "major_slice_target",
  "major_slice_budget",
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
