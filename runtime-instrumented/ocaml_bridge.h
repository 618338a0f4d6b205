/* ocaml_bridge.h -- OCaml 4.13's instrumented runtime writing into eventring.
 *
 * OCaml 4.13 built with `-runtime-variant i` (libasmruni.a, libcamlruni.a)
 * reports its GC phases, counters and allocation sizes by calling the ten
 * functions declared below, which its own eventlog member defines and which
 * write CTF files.  libeventring_i defines all ten in one object
 * (ocaml_bridge.c); when that object is in the link before the runtime
 * archive is scanned, the linker takes ours, never pulls eventlog's, and
 * the runtime's probes land in eventring's rings with their ids mapped
 * onto the OCaml 5 vocabulary (doc/ocaml4-mapping.md).
 *
 * The bindings' C stubs (stdlib-bindings/) call eventring__ocaml_bridge_init()
 * once, which is what brings the object into a static link, and keep their
 * GC-hook probes silent while eventring__ocaml_instrumented is 1.
 *
 * Every caml_* function here needs the OCaml runtime lock, as in 4.13.
 * The enums mirror 4.13's ev_gc_phase and ev_gc_counter (caml/eventlog.h)
 * value for value; they are spelt differently so that this header compiles
 * without OCaml's headers, and the caml_* prototypes are left out when
 * caml/eventlog.h has already declared them for CAML_INSTR.
 */
#ifndef EVENTRING_OCAML_BRIDGE_H
#define EVENTRING_OCAML_BRIDGE_H

#include <stdint.h>

#include "eventring.h"

#ifdef __cplusplus
extern "C" {
#endif

/* OCaml 4.13's ev_gc_phase, in its order. */
typedef enum eventring_ocaml4_phase {
  EVENTRING_OCAML4_COMPACT_MAIN,
  EVENTRING_OCAML4_COMPACT_RECOMPACT,
  EVENTRING_OCAML4_EXPLICIT_GC_SET,
  EVENTRING_OCAML4_EXPLICIT_GC_STAT,
  EVENTRING_OCAML4_EXPLICIT_GC_MINOR,
  EVENTRING_OCAML4_EXPLICIT_GC_MAJOR,
  EVENTRING_OCAML4_EXPLICIT_GC_FULL_MAJOR,
  EVENTRING_OCAML4_EXPLICIT_GC_COMPACT,
  EVENTRING_OCAML4_MAJOR,
  EVENTRING_OCAML4_MAJOR_ROOTS,
  EVENTRING_OCAML4_MAJOR_SWEEP,
  EVENTRING_OCAML4_MAJOR_MARK_ROOTS,
  EVENTRING_OCAML4_MAJOR_MARK_MAIN,
  EVENTRING_OCAML4_MAJOR_MARK_FINAL,
  EVENTRING_OCAML4_MAJOR_MARK,
  EVENTRING_OCAML4_MAJOR_MARK_GLOBAL_ROOTS_SLICE,
  EVENTRING_OCAML4_MAJOR_ROOTS_GLOBAL,
  EVENTRING_OCAML4_MAJOR_ROOTS_DYNAMIC_GLOBAL,
  EVENTRING_OCAML4_MAJOR_ROOTS_LOCAL,
  EVENTRING_OCAML4_MAJOR_ROOTS_C,
  EVENTRING_OCAML4_MAJOR_ROOTS_FINALISED,
  EVENTRING_OCAML4_MAJOR_ROOTS_MEMPROF,
  EVENTRING_OCAML4_MAJOR_ROOTS_HOOK,
  EVENTRING_OCAML4_MAJOR_CHECK_AND_COMPACT,
  EVENTRING_OCAML4_MINOR,
  EVENTRING_OCAML4_MINOR_LOCAL_ROOTS,
  EVENTRING_OCAML4_MINOR_REF_TABLES,
  EVENTRING_OCAML4_MINOR_COPY,
  EVENTRING_OCAML4_MINOR_UPDATE_WEAK,
  EVENTRING_OCAML4_MINOR_FINALIZED,
  EVENTRING_OCAML4_EXPLICIT_GC_MAJOR_SLICE,
  EVENTRING_OCAML4_PHASE_COUNT
} eventring_ocaml4_phase;

/* OCaml 4.13's ev_gc_counter, in its order. */
typedef enum eventring_ocaml4_counter {
  EVENTRING_OCAML4_C_ALLOC_JUMP,
  EVENTRING_OCAML4_C_FORCE_MINOR_ALLOC_SMALL,
  EVENTRING_OCAML4_C_FORCE_MINOR_MAKE_VECT,
  EVENTRING_OCAML4_C_FORCE_MINOR_SET_MINOR_HEAP_SIZE,
  EVENTRING_OCAML4_C_FORCE_MINOR_WEAK,
  EVENTRING_OCAML4_C_FORCE_MINOR_MEMPROF,
  EVENTRING_OCAML4_C_MAJOR_MARK_SLICE_REMAIN,
  EVENTRING_OCAML4_C_MAJOR_MARK_SLICE_FIELDS,
  EVENTRING_OCAML4_C_MAJOR_MARK_SLICE_POINTERS,
  EVENTRING_OCAML4_C_MAJOR_WORK_EXTRA,
  EVENTRING_OCAML4_C_MAJOR_WORK_MARK,
  EVENTRING_OCAML4_C_MAJOR_WORK_SWEEP,
  EVENTRING_OCAML4_C_MINOR_PROMOTED,
  EVENTRING_OCAML4_C_REQUEST_MAJOR_ALLOC_SHR,
  EVENTRING_OCAML4_C_REQUEST_MAJOR_ADJUST_GC_SPEED,
  EVENTRING_OCAML4_C_REQUEST_MINOR_REALLOC_REF_TABLE,
  EVENTRING_OCAML4_C_REQUEST_MINOR_REALLOC_EPHE_REF_TABLE,
  EVENTRING_OCAML4_C_REQUEST_MINOR_REALLOC_CUSTOM_TABLE,
  EVENTRING_OCAML4_COUNTER_COUNT
} eventring_ocaml4_counter;

/* Does nothing; calling it makes the linker take ocaml_bridge.o out of
 * libeventring_i.a ahead of the OCaml runtime archive. */
EVENTRING__EXPORT void eventring__ocaml_bridge_init(void);

/* Makes the calling OCaml thread write into domain slot 0, shared with
 * the other OCaml threads (OCaml 4 runs one at a time under its runtime
 * lock).  Returns 0 when the thread is in slot 0, or the error of
 * eventring_domain_join(0) (EVENTRING_E_BUSY: another thread bound the
 * slot for itself).  A failure is remembered: until a domain slot may
 * have become free, the thread's later calls return the same error at
 * once, without the control lock, so that a probe never retries under
 * the lock on every event.  The one piece of code for the bindings'
 * stubs and the bridge's probes; needs no lock, any thread may call it. */
EVENTRING__EXPORT int eventring__ocaml_join0(void);

/* 1 once the OCaml runtime has called caml_eventlog_init(), that is, when
 * the program runs the instrumented (-runtime-variant i) runtime whose
 * probes the bridge turns into events; 0 otherwise.  Written once at
 * startup, before any OCaml code runs. */
extern EVENTRING__EXPORT int eventring__ocaml_instrumented;

/* Set by the OCaml package's stubs (stdlib-bindings/runtime_events_stubs.c)
 * before any OCaml thread is created, NULL otherwise: tells eventring the
 * calling OCaml thread's Thread.id for its thread-switch markers, once per
 * thread.  It reads the thread's descriptor in the heap, so the bridge
 * calls it only where the instrumented runtime's GC has not begun to move
 * blocks: at the begin of a minor collection or of a major slice. */
extern EVENTRING__EXPORT void (*eventring__ocaml_thread_hook)(void);

#if !(defined(CAML_EVENTLOG_H) && defined(CAML_INSTR))
/* OCaml's `value`: a machine word (intnat). */
typedef intptr_t eventring_ocaml_value;

/* The 4.13 entry points, with 4.13's prototypes.  The first eight are
 * called by the runtime (caml_ev_flush and caml_eventlog_disable by
 * nothing in 4.13.1 itself); the last two are the primitives behind
 * Gc.eventlog_pause and Gc.eventlog_resume. */
EVENTRING__EXPORT void caml_eventlog_init(void);
EVENTRING__EXPORT void caml_eventlog_disable(void);
EVENTRING__EXPORT void caml_ev_begin(eventring_ocaml4_phase phase);
EVENTRING__EXPORT void caml_ev_end(eventring_ocaml4_phase phase);
EVENTRING__EXPORT void caml_ev_counter(eventring_ocaml4_counter counter,
                                   uint64_t val);
EVENTRING__EXPORT void caml_ev_alloc(uint64_t size);
EVENTRING__EXPORT void caml_ev_alloc_flush(void);
EVENTRING__EXPORT void caml_ev_flush(void);
EVENTRING__EXPORT eventring_ocaml_value caml_eventlog_pause(
    eventring_ocaml_value unit);
EVENTRING__EXPORT eventring_ocaml_value caml_eventlog_resume(
    eventring_ocaml_value unit);
#endif

#ifdef __cplusplus
}
#endif

#endif /* EVENTRING_OCAML_BRIDGE_H */
