/* ocaml_bridge.c -- OCaml 4.13's instrumented runtime feeding eventring.
 *
 * `ocamlopt -runtime-variant i` links libasmruni.a, whose GC calls
 * caml_ev_begin/end/counter/alloc/alloc_flush and whose startup calls
 * caml_eventlog_init; 4.13 defines those (and caml_ev_flush,
 * caml_eventlog_disable, and the Gc.eventlog_pause/resume primitives) in
 * one archive member, eventlog.o, which writes CTF files.  This object
 * defines all ten.  A linker pulls an archive member only for a symbol
 * still undefined, so once this object is in the link (the bindings call
 * eventring__ocaml_bridge_init(), and their archive comes before the
 * runtime's) eventlog.o is never pulled: no CTF file, no duplicate
 * symbol, and every runtime probe comes here.  The same holds when the
 * program links libeventring_i.so, whose version script exports the ten.
 *
 * The probes keep 4.13's contract: they run under the runtime lock, and
 * with tracing off they cost a load and a branch (EVENTRING__ON()); the
 * rest is out of line.  Ids are translated through the table below (see
 * doc/ocaml4-mapping.md for the reasons of each line).  4.13 ids with no
 * OCaml 5 counterpart name an extension id, which the bridge uses once
 * eventring's own name table lists that name; until then they fall back
 * to the listed id given, or are dropped.  A listed id is never used for
 * a different meaning.
 *
 * Domains: OCaml 4 runs one thread at a time under the runtime lock, so
 * every OCaml thread writes into domain 0, joined with
 * eventring_domain_join(); the probes join on a thread's first event.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ocaml_bridge.h"

/* The OCaml whose instrumented runtime this bridge is built for, when the
 * build knows one (stdlib-bindings/rules.mk): its version goes into the
 * files (eventring_set_ocaml_version()). */
#ifdef EVENTRING_OCAML_VERSION_H
#include EVENTRING_OCAML_VERSION_H
#endif

#ifndef EVENTRING_INSTRUMENTED
#error "ocaml_bridge.c belongs to the instrumented variant only"
#endif

int eventring__ocaml_instrumented;
void (*eventring__ocaml_thread_hook)(void);

/* 1 once the bindings' initialisation has run (atomic: read at exit). */
static int bindings_initialised;

void eventring__ocaml_bridge_init(void) {
  __atomic_store_n(&bindings_initialised, 1, __ATOMIC_RELAXED);
}

/* Defined by every OCaml runtime, native or bytecode; a C program linked
 * with libeventring_i has none, and the weak reference is then NULL. */
extern void caml_main(char **argv) __attribute__((weak));

/* The one case where linking the runtime_events package traces nothing:
 * code that never uses Runtime_events lets the linker leave the module
 * out, with the GC hooks its initialisation installs, while this object
 * comes in (the package's -u).  Tracing started from the environment
 * then records no GC event, which is said once, at exit, with the fix. */
__attribute__((destructor)) static void hint_module_left_out(void) {
  if (!caml_main || __atomic_load_n(&bindings_initialised, __ATOMIC_RELAXED) ||
      __atomic_load_n(&eventring__ocaml_instrumented, __ATOMIC_RELAXED) ||
      !secure_getenv("OCAML_RUNTIME_EVENTS_START"))
    return;
  er_warn("this OCaml program recorded no GC event: its code never uses "
          "Runtime_events, so linking left the module out, and its GC "
          "probes with it; link it with the ocamlfind package "
          "runtime_events.auto (-package runtime_events.auto)");
}

/* ------------------------------------------------------------------ */
/* The mapping.                                                         */

#define DROP (-1)

struct o4_map {
  /* The listed (OCaml 5.3+) id written, or DROP. */
  int listed;
  /* An extension name that replaces `listed` when eventring's name table
   * has it; NULL when a listed id already says it all. */
  const char *ext;
  /* Counters: the factor to OCaml 5's unit (4.13 words to 5.x bytes). */
  unsigned scale;
};

static const struct o4_map phase_map[EVENTRING_OCAML4_PHASE_COUNT] = {
  [EVENTRING_OCAML4_COMPACT_MAIN] = {EVENTRING_PHASE_COMPACTION, NULL, 1},
  [EVENTRING_OCAML4_COMPACT_RECOMPACT] = {EVENTRING_PHASE_COMPACTION, NULL, 1},
  [EVENTRING_OCAML4_EXPLICIT_GC_SET] =
      {EVENTRING_PHASE_EXPLICIT_GC_SET, NULL, 1},
  [EVENTRING_OCAML4_EXPLICIT_GC_STAT] =
      {EVENTRING_PHASE_EXPLICIT_GC_STAT, NULL, 1},
  [EVENTRING_OCAML4_EXPLICIT_GC_MINOR] =
      {EVENTRING_PHASE_EXPLICIT_GC_MINOR, NULL, 1},
  [EVENTRING_OCAML4_EXPLICIT_GC_MAJOR] =
      {EVENTRING_PHASE_EXPLICIT_GC_MAJOR, NULL, 1},
  [EVENTRING_OCAML4_EXPLICIT_GC_FULL_MAJOR] =
      {EVENTRING_PHASE_EXPLICIT_GC_FULL_MAJOR, NULL, 1},
  [EVENTRING_OCAML4_EXPLICIT_GC_COMPACT] =
      {EVENTRING_PHASE_EXPLICIT_GC_COMPACT, NULL, 1},
  [EVENTRING_OCAML4_MAJOR] = {EVENTRING_PHASE_MAJOR, NULL, 1},
  [EVENTRING_OCAML4_MAJOR_ROOTS] = {EVENTRING_PHASE_MAJOR_MARK_ROOTS, NULL, 1},
  [EVENTRING_OCAML4_MAJOR_SWEEP] = {EVENTRING_PHASE_MAJOR_SWEEP, NULL, 1},
  [EVENTRING_OCAML4_MAJOR_MARK_ROOTS] =
      {EVENTRING_PHASE_MAJOR_MARK_ROOTS, NULL, 1},
  [EVENTRING_OCAML4_MAJOR_MARK_MAIN] =
      {EVENTRING_PHASE_FINALISE_UPDATE_FIRST, NULL, 1},
  [EVENTRING_OCAML4_MAJOR_MARK_FINAL] =
      {EVENTRING_PHASE_FINALISE_UPDATE_LAST, NULL, 1},
  [EVENTRING_OCAML4_MAJOR_MARK] = {EVENTRING_PHASE_MAJOR_MARK, NULL, 1},
  /* Nested in major_mark_roots and as long as it: nothing to add. */
  [EVENTRING_OCAML4_MAJOR_MARK_GLOBAL_ROOTS_SLICE] = {DROP, NULL, 1},
  [EVENTRING_OCAML4_MAJOR_ROOTS_GLOBAL] = {DROP, "major_roots_global", 1},
  [EVENTRING_OCAML4_MAJOR_ROOTS_DYNAMIC_GLOBAL] =
      {DROP, "major_roots_dynamic_global", 1},
  [EVENTRING_OCAML4_MAJOR_ROOTS_LOCAL] = {DROP, "major_roots_local", 1},
  [EVENTRING_OCAML4_MAJOR_ROOTS_C] = {DROP, "major_roots_c", 1},
  [EVENTRING_OCAML4_MAJOR_ROOTS_FINALISED] =
      {DROP, "major_roots_finalised", 1},
  [EVENTRING_OCAML4_MAJOR_ROOTS_MEMPROF] =
      {EVENTRING_PHASE_MAJOR_MEMPROF_ROOTS, NULL, 1},
  [EVENTRING_OCAML4_MAJOR_ROOTS_HOOK] = {DROP, "major_roots_hook", 1},
  [EVENTRING_OCAML4_MAJOR_CHECK_AND_COMPACT] =
      {DROP, "major_check_and_compact", 1},
  [EVENTRING_OCAML4_MINOR] = {EVENTRING_PHASE_MINOR, NULL, 1},
  [EVENTRING_OCAML4_MINOR_LOCAL_ROOTS] =
      {EVENTRING_PHASE_MINOR_LOCAL_ROOTS, NULL, 1},
  [EVENTRING_OCAML4_MINOR_REF_TABLES] =
      {EVENTRING_PHASE_MINOR_REMEMBERED_SET, NULL, 1},
  [EVENTRING_OCAML4_MINOR_COPY] =
      {EVENTRING_PHASE_MINOR_REMEMBERED_SET_PROMOTE, NULL, 1},
  [EVENTRING_OCAML4_MINOR_UPDATE_WEAK] =
      {EVENTRING_PHASE_MINOR_FINALIZED, NULL, 1},
  [EVENTRING_OCAML4_MINOR_FINALIZED] = {EVENTRING_PHASE_MINOR_CLEAR, NULL, 1},
  [EVENTRING_OCAML4_EXPLICIT_GC_MAJOR_SLICE] =
      {EVENTRING_PHASE_EXPLICIT_GC_MAJOR_SLICE, NULL, 1},
};

static const struct o4_map counter_map[EVENTRING_OCAML4_COUNTER_COUNT] = {
  [EVENTRING_OCAML4_C_ALLOC_JUMP] = {DROP, "alloc_jump", 1},
  [EVENTRING_OCAML4_C_FORCE_MINOR_ALLOC_SMALL] =
      {EVENTRING_COUNTER_FORCE_MINOR_ALLOC_SMALL, NULL, 1},
  [EVENTRING_OCAML4_C_FORCE_MINOR_MAKE_VECT] =
      {EVENTRING_COUNTER_FORCE_MINOR_MAKE_VECT, NULL, 1},
  [EVENTRING_OCAML4_C_FORCE_MINOR_SET_MINOR_HEAP_SIZE] =
      {EVENTRING_COUNTER_FORCE_MINOR_SET_MINOR_HEAP_SIZE, NULL, 1},
  [EVENTRING_OCAML4_C_FORCE_MINOR_WEAK] = {DROP, "force_minor_weak", 1},
  [EVENTRING_OCAML4_C_FORCE_MINOR_MEMPROF] =
      {EVENTRING_COUNTER_FORCE_MINOR_MEMPROF, NULL, 1},
  [EVENTRING_OCAML4_C_MAJOR_MARK_SLICE_REMAIN] =
      {DROP, "major_mark_slice_remain", 1},
  /* 4.13's mark_slice counts these two only while its own eventlog is
   * enabled (Caml_state->eventlog_enabled, which only its eventlog.o,
   * never linked here, sets), yet reports them at the end of every
   * marking slice: they would always read 0.  A 0 that means "not
   * counted" is a lie to a reader, so they are not written at all. */
  [EVENTRING_OCAML4_C_MAJOR_MARK_SLICE_FIELDS] = {DROP, NULL, 1},
  [EVENTRING_OCAML4_C_MAJOR_MARK_SLICE_POINTERS] = {DROP, NULL, 1},
  [EVENTRING_OCAML4_C_MAJOR_WORK_EXTRA] = {DROP, "major_work_extra", 1},
  [EVENTRING_OCAML4_C_MAJOR_WORK_MARK] =
      {EVENTRING_COUNTER_MAJOR_SLICE_BUDGET, NULL, 1},
  [EVENTRING_OCAML4_C_MAJOR_WORK_SWEEP] =
      {EVENTRING_COUNTER_MAJOR_SLICE_BUDGET, NULL, 1},
  /* 4.13 counts words, OCaml 5 bytes. */
  [EVENTRING_OCAML4_C_MINOR_PROMOTED] =
      {EVENTRING_COUNTER_MINOR_PROMOTED, NULL, sizeof(uintptr_t)},
  [EVENTRING_OCAML4_C_REQUEST_MAJOR_ALLOC_SHR] =
      {EVENTRING_COUNTER_REQUEST_MAJOR_ALLOC_SHR, NULL, 1},
  [EVENTRING_OCAML4_C_REQUEST_MAJOR_ADJUST_GC_SPEED] =
      {EVENTRING_COUNTER_REQUEST_MAJOR_ADJUST_GC_SPEED, NULL, 1},
  [EVENTRING_OCAML4_C_REQUEST_MINOR_REALLOC_REF_TABLE] =
      {EVENTRING_COUNTER_REQUEST_MINOR_REALLOC_REF_TABLE, NULL, 1},
  [EVENTRING_OCAML4_C_REQUEST_MINOR_REALLOC_EPHE_REF_TABLE] =
      {EVENTRING_COUNTER_REQUEST_MINOR_REALLOC_EPHE_REF_TABLE, NULL, 1},
  [EVENTRING_OCAML4_C_REQUEST_MINOR_REALLOC_CUSTOM_TABLE] =
      {EVENTRING_COUNTER_REQUEST_MINOR_REALLOC_CUSTOM_TABLE, NULL, 1},
};

/* The ids actually written, from the tables above and the extension
 * names eventring knows; -1 = dropped.  Filled by caml_eventlog_init(),
 * which 4.13's startup calls before any GC probe can fire and before any
 * other thread exists; read-only afterwards. */
static int phase_ids[EVENTRING_OCAML4_PHASE_COUNT];
static int counter_ids[EVENTRING_OCAML4_COUNTER_COUNT];
static int ids_ready;

/* An extension id is one past the listed vocabulary whose name eventring's
 * table carries; only that range is searched, so a listed id is never
 * taken for an extension by accident. */
static int ext_id(const char *name, const char *const *names, unsigned n,
                  unsigned first_ext) {
  for (unsigned i = first_ext; i < n; i++)
    if (names[i] && strcmp(names[i], name) == 0) return (int)i;
  return DROP;
}

static void resolve(int *ids, const struct o4_map *map, unsigned n,
                    const char *const *names, unsigned n_names,
                    unsigned first_ext) {
  for (unsigned i = 0; i < n; i++) {
    int id = map[i].ext ? ext_id(map[i].ext, names, n_names, first_ext)
                        : DROP;
    ids[i] = id != DROP ? id : map[i].listed;
  }
}

static void resolve_ids(void) {
  if (ids_ready) return;
  resolve(phase_ids, phase_map, EVENTRING_OCAML4_PHASE_COUNT,
          eventring__phase_names_53, eventring__n_phases_53,
          EVENTRING_PHASE_COUNT);
  resolve(counter_ids, counter_map, EVENTRING_OCAML4_COUNTER_COUNT,
          eventring__counter_names, eventring__n_counters,
          EVENTRING_COUNTER_COUNT);
  ids_ready = 1;
}

/* ------------------------------------------------------------------ */
/* Domain 0.                                                            */

/* Set once this thread has joined slot 0.  Being in slot 0 is not
 * enough: the thread that started tracing holds it alone until it joins
 * (which opens it to the other OCaml threads).  The slot can still change
 * under us (eventring_stop and a new start, fork), hence the id check. */
static __thread int joined __attribute__((tls_model("initial-exec")));

/* er_st.free_epoch + 1 when this thread last failed to join slot 0
 * (another thread bound it for itself), 0 when it has not failed: its
 * events then go to a slot of its own, or are dropped and counted, and
 * it does not take the control lock again to retry until a slot may have
 * become free (the epoch moves on).  domain.c's probes remember a failed
 * attach the same way. */
static __thread uint64_t join_failed_epoch
    __attribute__((tls_model("initial-exec")));

int eventring__ocaml_join0(void) {
  if (ER_LIKELY(joined && eventring_domain_id() == 0)) return 0;
  /* Read before trying: a slot freed while we try moves the epoch past
   * the one remembered, and the next call tries again. */
  uint64_t epoch = er_load_rlx(&er_st.free_epoch);
  if (join_failed_epoch == epoch + 1) return EVENTRING_E_BUSY;
  int r = eventring_domain_join(0);
  joined = r == 0;
  join_failed_epoch = r != 0 ? epoch + 1 : 0;
  return r;
}

/* Makes the calling OCaml thread write into domain 0.  Only called while
 * tracing is on: the check is a TLS load once joined. */
static inline void in_domain0(void) { (void)eventring__ocaml_join0(); }

/* ------------------------------------------------------------------ */
/* The probes: a load and a branch inline, the rest out of line.        */

__attribute__((noinline)) static void emit_phase(unsigned type,
                                                  unsigned phase) {
  if (!ids_ready || phase >= EVENTRING_OCAML4_PHASE_COUNT) return;
  int id = phase_ids[phase];
  if (id < 0) return;
  in_domain0();
  /* Before the event, whose thread-switch marker (if any) carries what
   * the hook tells: see ocaml_bridge.h for why only here. */
  if (type == EVENTRING__EV_BEGIN &&
      (phase == EVENTRING_OCAML4_MINOR || phase == EVENTRING_OCAML4_MAJOR) &&
      eventring__ocaml_thread_hook)
    eventring__ocaml_thread_hook();
  eventring__runtime(type, (unsigned)id);
}

void caml_ev_begin(eventring_ocaml4_phase phase) {
  if (EVENTRING__ON()) emit_phase(EVENTRING__EV_BEGIN, (unsigned)phase);
}

void caml_ev_end(eventring_ocaml4_phase phase) {
  if (EVENTRING__ON()) emit_phase(EVENTRING__EV_END, (unsigned)phase);
}

__attribute__((noinline)) static void emit_counter(unsigned counter,
                                                    uint64_t val) {
  if (!ids_ready || counter >= EVENTRING_OCAML4_COUNTER_COUNT) return;
  int id = counter_ids[counter];
  if (id < 0) return;
  in_domain0();
  eventring__runtime1(EVENTRING__EV_COUNTER, (unsigned)id,
                      val * counter_map[counter].scale);
}

void caml_ev_counter(eventring_ocaml4_counter counter, uint64_t val) {
  if (EVENTRING__ON()) emit_counter((unsigned)counter, val);
}

/* 4.13 calls this for every block allocated in the major heap (direct
 * major allocations and promotions), with its size in words.  Its bucket
 * rule is FORMAT.md's, which alloc.c implements. */
__attribute__((noinline)) static void count_alloc(uint64_t size) {
  in_domain0();
  eventring__alloc(size);
}

void caml_ev_alloc(uint64_t size) {
  if (EVENTRING__ON()) count_alloc(size);
}

/* 4.13 calls this when the free list starts a merge (each major cycle's
 * sweep, and once at heap initialisation). */
__attribute__((noinline)) static void flush_alloc(void) {
  in_domain0();
  eventring__alloc_flush();
}

void caml_ev_alloc_flush(void) {
  if (EVENTRING__ON()) flush_alloc();
}

/* 4.13 flushed its event buffer to the CTF file here; ring events are in
 * shared memory as soon as they are written, so there is nothing to do. */
void caml_ev_flush(void) {}

/* ------------------------------------------------------------------ */
/* Control.                                                             */

/* Set by caml_eventlog_disable(): 4.13's disable is final, so
 * Gc.eventlog_resume must not undo it. */
static int disabled;

void caml_eventlog_init(void) {
  resolve_ids();
  __atomic_store_n(&eventring__ocaml_instrumented, 1, __ATOMIC_RELAXED);
#ifdef OCAML_VERSION_STRING
  eventring_set_ocaml_version(OCAML_VERSION_STRING);
#endif
  /* The main thread, which runs this, is the first OCaml thread, and
   * Thread 0 once systhreads numbers threads (it numbers the thread that
   * initialises it, this one, first). */
  eventring_thread_id(0);
  (void)eventring__ocaml_join0();
  /* 4.13's switch: set (any value) starts tracing, a value beginning with
   * 'p' starts it paused.  OCAML_RUNTIME_EVENTS_START, read by eventring's
   * constructor, works as well; OCAML_EVENTLOG_PREFIX is not used (the
   * ring file goes to OCAML_RUNTIME_EVENTS_DIR). */
  const char *on = secure_getenv("OCAML_EVENTLOG_ENABLED");
  if (on) {
    int r = eventring_start();
    if (r < 0)
      er_warn("cannot start tracing (OCAML_EVENTLOG_ENABLED): %s: %s; "
              "running untraced",
              er_st.path, eventring_strerror(r));
    else if (on[0] == 'p')
      eventring_pause();
  }
}

/* 4.13 stops recording for good; the ring file stays, so a reader still
 * sees what was written, and a ring_pause marks the point. */
void caml_eventlog_disable(void) {
  disabled = 1;
  eventring_pause();
}

/* Gc.eventlog_pause and Gc.eventlog_resume: 4.13 documents them as acting
 * on the instrumented runtime only, and so do we; in a program on the
 * normal runtime they stay no-ops (Runtime_events.pause/resume control
 * tracing there). */
eventring_ocaml_value caml_eventlog_pause(eventring_ocaml_value unit) {
  (void)unit;
  if (eventring__ocaml_instrumented) eventring_pause();
  return 1; /* Val_unit */
}

eventring_ocaml_value caml_eventlog_resume(eventring_ocaml_value unit) {
  (void)unit;
  if (eventring__ocaml_instrumented && !disabled) eventring_resume();
  return 1; /* Val_unit */
}
