/* stw.h -- the stop-the-world protocol: entering and leaving a probe,
 * opening and closing the world, and when the mapping may go.
 *
 * The protocol is stated here once; other files call the functions below
 * and never touch `live`, eventring__on, `in_probe` or the slotless gates
 * themselves.  The probe side is inline here (every probe's fast path);
 * the stopping side is stw.c, under er_st.lock.
 *
 * THE INVARIANT.  No thread dereferences the mapping (er_st.map, meta,
 * ext, a slot's ring and hdr) once it is unmapped, and no slot's ring
 * pointers change while its owner writes through them: both happen only
 * while the world is stopped, that is, `live` and eventring__on are 0
 * and no thread is between the load of the flag that let it in and its
 * leaving of the probe.
 *
 * THE FLAG WORD.  The world is open while `live` is 1.  Probes that
 * honour a pause (ER_IF_ON) test eventring__on instead: 0, or ER_ON_OPEN
 * with ER_ON_FENCE where probes must fence; it is nonzero only while
 * `live` is 1 (stored after the store of `live` that opens, cleared
 * before the one that closes), so it stands for `live` below.  While a
 * forked child's file is pending it is ER_ON_PENDING, with `live` 0.
 * Control operations' writes (ER_EVEN_PAUSED, under the lock) and
 * slotless threads test `live` itself, after er_need_fence.
 *
 *   probe (owner of the slot)          stopper (holder of er_st.lock)
 *   in_probe = 1        (relaxed)      on = 0, live = 0     (relaxed)
 *   compiler barrier                   membarrier(2), then a full fence
 *   if (on, acquire) write             wait for in_probe == 0 (acquire),
 *   in_probe = 0        (release)        per slot, and the gate's in == 0
 *                                      unmap
 *
 * Proof.  membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) makes every running
 * thread of the process execute a full barrier before it returns; a
 * thread not running has been through a context switch, a full barrier
 * too.  If a probe's barrier comes after its in_probe = 1, the stopper,
 * which reads in_probe after membarrier, sees 1 and waits; if before,
 * the probe's later load of the flag sees 0 and it writes nothing.  The
 * release of in_probe = 0 pairs with the stopper's acquire load, so the
 * stopper sees every word the probe wrote before it unmaps.  Where
 * membarrier is missing the flag carries ER_ON_FENCE: probes fence after
 * their store and decide on a second load, the same argument with the
 * barrier in the probe (the fast path enters on exactly ER_ON_OPEN
 * only).  Opening needs no barrier: a probe reads nothing of the mapping
 * before its acquire load finds the world open, and the stores that open
 * it (er_stw_open(), er_stw_let_probes_in()) are releases made after the
 * file is built.  The inlined test of eventring.h loads the flag with no
 * ordering, only to decide whether to come in.
 *
 * THREADS WITHOUT A SLOT count a drop in the extension block; the current
 * gate's `in` (stw.c) is their common in_probe: incremented, then the
 * same compiler barrier and fence, decremented with release (the
 * read-modify-write's own order differs between the builds and is not
 * relied on).  A nested probe (a signal handler's, on its own thread)
 * finds its in_probe set and drops its event (er_nested_drop()).
 *
 * HOLDING PROBES OFF (er_stw_hold_probes()) is closing without `live`:
 * on = 0 and the same wait.  Until probes are let in again (a release),
 * the holder of the lock may write any slot's ring as its owner would.
 *
 * A THREAD STUCK inside a probe for two seconds (stopped, or in a signal
 * handler) is not waited for: its slot is retired -- ER_PENDING_RETIRED,
 * set by read-modify-write before any release that lets probes in; never
 * written, bound or reused again; its thread takes another slot at its
 * next event -- or its gate is abandoned, and the mapping stays for good
 * (ER_WORLD_STUCK).  After a failed membarrier the mapping stays too
 * (ER_WORLD_UNPROVEN), and probes fence from then on.  A forked child's
 * only thread is the forking one, so its world is stopped by
 * construction (er_stw_close_forked()), provided no probe runs there
 * first: atfork.c blocks signals across fork().
 *
 * SIGNAL HANDLERS AND THE LOCK.  A probe takes er_st.lock only for its
 * thread's first event, and never waits for a control path, which may
 * itself wait for anything (the probes, a lock the interrupted code
 * holds).  Every path that takes the lock counts itself in
 * er_tls_locking from before it tries until after it gives it back;
 * control paths also in er_st.control_busy.  A first event whose
 * thread's count is nonzero, or that finds the lock held with
 * control_busy nonzero, drops its event as a slotless thread's
 * (er_lock_from_probe()).  Slot changes, like first events, hold the
 * lock for microseconds and wait for nothing: first events wait for them.
 */
#ifndef EVENTRING_STW_H
#define EVENTRING_STW_H

#include "drops.h"
#include "internal.h"

/* 1 where membarrier(2) is missing or failed: probes fence themselves.
 * Stored under er_st.lock; copied into eventring__on as ER_ON_FENCE
 * whenever probes are let in; read by control operations' writes and by
 * threads without a slot. */
extern ER_HIDDEN int er_need_fence;

/* The values of eventring__on (THE FLAG WORD): 0, or ER_ON_OPEN with
 * ER_ON_FENCE where probes must fence; or, in a forked child whose file
 * is not made yet (`live` 0), ER_ON_PENDING, which sends a probe to make
 * it (fork.c). */
#define ER_ON_OPEN 1
#define ER_ON_FENCE 2
#define ER_ON_PENDING 4

/* ------------------------------------------------------------------ */
/* The stopping side (stw.c); all under er_st.lock.                     */

/* Chooses the barrier stopping will use (membarrier(2), or fences in the
 * probes) and sets er_need_fence; at every start, before er_stw_open(). */
ER_HIDDEN void er_stw_init(void);

/* Opens the world (`live` = 1, release) on a fully built file: rings
 * bound, names written.  Probes that honour a pause wait for
 * er_stw_let_probes_in(). */
ER_HIDDEN void er_stw_open(void);

enum er_world {
  ER_WORLD_STOPPED, /* no probe inside: the mapping may go */
  ER_WORLD_STUCK,   /* a probe may still write: the mapping must stay */
  ER_WORLD_UNPROVEN /* the barrier failed: the mapping must stay */
};

/* Closes the world (eventring__on, then `live`, cleared) and waits for
 * every probe to leave, two seconds at most.  Returns what may become of
 * the mapping: ER_WORLD_STOPPED, or ER_WORLD_STUCK (a slot retired or a
 * gate abandoned) or ER_WORLD_UNPROVEN (the barrier failed), after which
 * it must stay. */
ER_HIDDEN enum er_world er_stw_close(void);

/* Lets the probes that honour a pause in: eventring__on = ER_ON_OPEN
 * (release), with ER_ON_FENCE where er_need_fence says so.  With the
 * world open, after everything a probe may read is written. */
ER_HIDDEN void er_stw_let_probes_in(void);

/* Turns every probe that honours a pause away: stores eventring__on = 0,
 * with no wait (a pause by its caller, whose own ring_pause follows; a
 * forked child's pending file given up). */
ER_HIDDEN void er_stw_turn_probes_away(void);

/* In a forked child whose file is pending (`live` 0): stores
 * eventring__on = ER_ON_PENDING, which sends probes to er_enter_pending()
 * (fork.c). */
ER_HIDDEN void er_stw_send_probes_to_pending(void);

/* Holds off every probe that honours a pause: eventring__on = 0, then
 * the wait of er_stw_close(), whose values it returns; `live` stays 1.
 * After ER_WORLD_STOPPED or ER_WORLD_STUCK the caller may write into
 * every ring but a retired slot's until er_stw_let_probes_in(). */
ER_HIDDEN enum er_world er_stw_hold_probes(void);

/* Closes the world in a forked child, whose only thread is the caller:
 * no probe can be inside, no wait is needed.  Async-signal-safe. */
ER_HIDDEN void er_stw_close_forked(void);

/* In a forked child, from its fork handler with the lock held: forgets
 * the probes and slotless threads of the parent's other threads, and
 * leaves the lock's control_busy count to the forking thread. */
ER_HIDDEN void er_stw_after_fork(void);

/* ------------------------------------------------------------------ */
/* The probe side.                                                      */

/* Counts the event of a signal handler's probe that interrupted a probe
 * of the same thread on `d`: in its ring's DROPPED word, or as a
 * slotless thread's when `d` is retired.  Async-signal-safe, no lock. */
ER_HIDDEN void er_nested_drop(struct er_domain *d);

/* Counts, in the extension block of its gate, an event of a thread that
 * has no slot; nothing while the world is closed.  Async-signal-safe, no
 * lock. */
ER_HIDDEN void er_slotless_drop(void);

/* Takes a slot for a thread's first event, or for the next event of a
 * thread whose slot was retired, then enters as er_enter_domain() does
 * (enter.c).  Returns the slot, entered, or NULL having entered nothing:
 * every slot taken or the lock not to be had without waiting for a
 * control path (the event counted as dropped), or nothing to write. */
ER_HIDDEN struct er_domain *er_enter_first(void);
/* The same for a control operation's write (ER_EVEN_PAUSED), whose
 * caller holds er_st.lock (domain.c). */
ER_HIDDEN struct er_domain *er_enter_first_locked(void);

/* A probe that found eventring__on ER_ON_PENDING, having entered nothing:
 * makes the forked child's file, then enters as er_enter(ER_IF_ON) does.
 * Returns what that returns, or NULL (the event counted as dropped) when
 * the lock could not be taken without waiting for a control path
 * (enter.c). */
ER_HIDDEN struct er_domain *er_enter_pending(void);

/* Take and give back er_st.lock for a probe (domain.c; SIGNAL HANDLERS
 * AND THE LOCK): er_lock_from_probe() returns 1 with the lock, or 0
 * without it when waiting could deadlock. */
ER_HIDDEN int er_lock_from_probe(void);
ER_HIDDEN void er_unlock_from_probe(void);

/* Writes domain_spawn, the first event of `d`'s holder (domain.c); a
 * ring too short for it counts it as dropped.  Inside a probe on `d`, or
 * with probes held off. */
ER_HIDDEN void er_write_spawn(struct er_domain *d);
/* What spawn_pending says, for the slot's owner inside a probe:
 * domain_spawn, and in a shared slot a thread-switch marker (domain.c). */
ER_HIDDEN void er_write_pending(struct er_domain *d);

/* Leaves the probe entered on `d`. */
static inline void er_leave(struct er_domain *d) {
  /* Pairs with the acquire load in er_stw_close(): everything this probe
   * wrote is visible to the stopper before it touches the mapping. */
  er_istore_rel(&d->in_probe, 0);
}

/* Whether er_enter_fast_at() tests for a ring: not when the caller's
 * own test fails without one (writer.h: a ringless slot's limit is 0). */
enum er_ring_test { ER_RING_ANY, ER_RING_NEEDED };

/* Enters a probe on `d`, the calling thread's domain, when everything is
 * as a probe usually finds it: not nested, eventring__on exactly
 * ER_ON_OPEN (no fence), a ring bound when `ring` is ER_RING_NEEDED, and
 * nothing pending (a shared slot always has a marker pending).  Returns
 * 1 inside the probe, or 0 having entered nothing: the caller then goes
 * the whole way, er_enter(), out of line.  No call and no branch but
 * these tests, so that the probe that inlines it keeps its fast path
 * free of register saves. */
static inline __attribute__((always_inline)) int
er_enter_fast_at(struct er_domain *d, enum er_ring_test ring) {
  if (ER_UNLIKELY(er_iload_rlx(&d->in_probe))) return 0;
  er_istore_rlx(&d->in_probe, 1);
  /* Keeps the compiler from moving the load below above the store; the
   * CPU is kept in order by the stopper's membarrier (see above). */
  er_compiler_barrier();
  /* The one flag test (see THE FLAG WORD); acquire, pairing with the
   * release stores of eventring__on that let probes in. */
  if (ER_LIKELY(er_iload_acq(&eventring__on) == ER_ON_OPEN) &&
      ER_LIKELY(ring == ER_RING_ANY || d->ring != NULL) &&
      ER_LIKELY(!er_iload_rlx(&d->spawn_pending))) {
    (void)ER_HOOK(ER_HOOK_INSIDE_PROBE);
    return 1;
  }
  er_leave(d);
  return 0;
}

/* er_enter_fast_at() for a caller that needs a ring bound. */
static inline __attribute__((always_inline)) int
er_enter_fast(struct er_domain *d) {
  return er_enter_fast_at(d, ER_RING_NEEDED);
}

/* Enters a probe on `d`, the calling thread's domain, as `when` says.
 * Returns d, inside the probe (with its pending events written), or NULL
 * having left it: nested (counted), the flag or `live` closed, a slot
 * without a ring (counted); a retired slot's thread takes another
 * (er_enter_first()), a forked child makes its file (er_enter_pending()). */
static inline struct er_domain *er_enter_domain(struct er_domain *d,
                                                enum er_when when) {
  if (ER_UNLIKELY(er_iload_rlx(&d->in_probe))) {
    er_nested_drop(d);
    return NULL;
  }
  er_istore_rlx(&d->in_probe, 1);
  /* Keeps the compiler from moving the loads below above the store; the
   * CPU is kept in order by the stopper's membarrier (see above). */
  er_compiler_barrier();
  if (when == ER_IF_ON) {
    /* Pairs with the release stores of eventring__on (see THE FLAG
     * WORD); a probe told to fence loads the word again after the fence,
     * and decides on that load. */
    int on = er_iload_acq(&eventring__on);
    if (ER_UNLIKELY(on & ER_ON_FENCE)) {
      er_fence();
      on = er_iload_acq(&eventring__on);
    }
    if (ER_UNLIKELY(!(on & ER_ON_OPEN))) {
      er_leave(d);
      return on == ER_ON_PENDING ? er_enter_pending() : NULL;
    }
  } else {
    /* A control operation's write, under er_st.lock: `live`, which only
     * a holder of the lock changes, is the one to test. */
    if (ER_UNLIKELY(er_iload_rlx(&er_need_fence))) er_fence();
    if (ER_UNLIKELY(!er_iload_acq(&er_st.live))) {
      er_leave(d);
      return NULL;
    }
  }
  int pending = er_iload_rlx(&d->spawn_pending);
  if (ER_UNLIKELY(pending & ER_PENDING_RETIRED)) {
    /* Never written again (see A THREAD STUCK): the thread takes another
     * slot, as for its first event. */
    er_leave(d);
    return when == ER_IF_ON ? er_enter_first() : er_enter_first_locked();
  }
  (void)ER_HOOK(ER_HOOK_INSIDE_PROBE);
  if (ER_UNLIKELY(!d->ring)) {
    /* A domain left untraced (its ring could not be reserved, or its slot
     * is past this file's domains): its events are counted as dropped,
     * in the file the slot was bound to, whose mapping is there: we are
     * inside the probe and saw the world open, or the slot is retired
     * and its mapping stays for good (see A THREAD STUCK). */
    er_drop(&d->ext[ER_EXT_DROPPED]);
    er_leave(d);
    return NULL;
  }
  if (ER_UNLIKELY(pending)) er_write_pending(d);
  return d;
}

/* Enters a probe on the calling thread's domain, as er_enter_domain()
 * does, taking a slot on its first event. */
static inline struct er_domain *er_enter(enum er_when when) {
  struct er_domain *d = er_tls_self;
  if (ER_UNLIKELY(!d))
    return when == ER_IF_ON ? er_enter_first() : er_enter_first_locked();
  return er_enter_domain(d, when);
}

#endif /* EVENTRING_STW_H */
