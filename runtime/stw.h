/* stw.h -- the stop-the-world protocol: entering and leaving a probe,
 * opening and closing the world, and what may be unmapped when.
 *
 * This is the one statement of the protocol; every other file calls the
 * functions below rather than touching `live`, eventring__on, `in_probe` or
 * the slotless gates itself.  The probe side is inline here because it is on
 * every probe's fast path; the stopping side is in stw.c.
 *
 * THE INVARIANT.  No thread dereferences the mapping of the ring file
 * (er_st.map, meta, ext, a domain's ring and hdr) after it has been
 * unmapped, and no slot's ring pointers change while its owner writes
 * through them.  Equivalently: the mapping is unmapped, or a file's
 * geometry replaced, only while the world is stopped, that is, while
 * `er_st.live` and eventring__on are 0 and no thread is between its load
 * of the flag it tests (below) seeing the world open and its leaving of
 * the probe.
 *
 * THE FLAG WORD.  The world is "open" while `live` is 1; a probe that
 * honours a pause (ER_IF_ON: every probe of eventring.h) tests
 * eventring__on instead, the word its inlined test has just read, which
 * is 0, or ER_ON_OPEN with ER_ON_FENCE where probes must fence.  It is
 * nonzero only while `live` is 1: stored ER_ON_OPEN (release) after the
 * release store of `live` that opens the world and after everything a
 * probe may read is written, and stored 0 before `live` is, at every
 * close.  So it stands for `live` in all that follows, and a probe tests
 * one word, once: exactly ER_ON_OPEN lets it in with no fence.  (While
 * a forked child's file is pending, the word is ER_ON_PENDING and `live`
 * 0: a probe that finds it leaves, then makes the file under the lock,
 * which opens the world as a start does, and enters again.)  The
 * writes of control operations (ER_EVEN_PAUSED), which hold er_st.lock
 * and are written while paused too, test `live` itself, after
 * er_need_fence, as threads without a slot do.
 *
 * A probe must not pay for an atomic read-modify-write or a fence, so
 * each domain has an `in_probe` word that only its owner stores, and the
 * one thread that stops the world (it holds er_st.lock, so there is only
 * one) does the expensive part:
 *
 *   probe (owner of the slot)          stopper (holder of er_st.lock)
 *   in_probe = 1        (relaxed)      on = 0, live = 0     (relaxed)
 *   compiler barrier                   membarrier(2), then a full fence
 *   if (on, acquire) write             wait for in_probe == 0 (acquire),
 *   in_probe = 0        (release)        per slot, and the gate's in == 0
 *                                      unmap
 *
 * Proof.  Without a fence on the probe side the CPU may let the probe's load
 * of eventring__on pass its store of `in_probe`, and the stopper could read
 * a stale 0.  membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) makes every
 * running thread of the process execute a full barrier before it returns; a
 * thread that is not running has been through a context switch, which is a
 * full barrier too.  So for each probe, either that barrier comes after its
 * store of in_probe = 1, and the stopper, which reads in_probe after
 * membarrier returns, sees 1 and waits; or it comes before, and the probe's
 * later load of the flag sees 0 and it writes nothing.  The probe's release
 * store of in_probe = 0 pairs with the stopper's acquire load, so the
 * stopper sees every word the probe wrote before it unmaps or reuses
 * anything.  Where membarrier is missing, probes execute a full fence after
 * their store instead, which gives the same argument with the barrier moved
 * into the probe: a probe finds ER_ON_FENCE in the word it loads, fences,
 * and decides on a second load of the word made after the fence (a control
 * operation's write and a slotless thread read er_need_fence before
 * `live`).  The fast path (er_enter_fast()) is taken only on exactly
 * ER_ON_OPEN, so it never needs the fence.
 *
 * THREADS WITHOUT A SLOT (every slot taken) only count a drop in the
 * extension block, and share one counter, the current gate's `in`
 * (stw.c), that plays the role of in_probe for all of them.  It is moved
 * by read-modify-writes, whose own order differs between the two builds
 * (relaxed in C11's, full in libatomic_ops'), so the protocol relies on
 * neither: the increment is followed by the same compiler barrier and,
 * where er_need_fence says so, the same fence as a probe's store of
 * in_probe = 1, and the decrement is a release, like in_probe = 0.  The
 * proof above then holds word for word on any CPU.  A thread counts into
 * the `ext` its gate was given when the world opened, never er_st.ext.
 *
 * A THREAD STUCK inside a probe past a stop's or a hold's two seconds
 * has its slot retired: never written again by anyone, never bound to a
 * later file nor reused, and not waited for again.  The probe it is stuck
 * in finishes its event where it is; the mapping that probe writes into
 * stays while it may still be inside: a stop that finds a retired slot
 * of the current file with in_probe set returns ER_WORLD_STUCK without
 * waiting.  Its later probes find ER_PENDING_RETIRED in spawn_pending,
 * which the stopper sets with a read-modify-write (the owner may be
 * clearing its own bits inside) before any release store that lets
 * probes in again, and which they load after their acquire load of the
 * flag: they leave the slot and take another, as a first event does
 * (er_enter_slow()); a signal handler nested in one counts its drop as a
 * slotless thread's.  A thread without a slot stuck past the deadline
 * keeps its gate, abandoned to it with the `ext` it holds, and later
 * threads count in the next gate.  So a stuck thread never writes into a later file nor
 * through a mapping that is gone.  (Eight gates; past the last, stops
 * wait for a stuck slotless thread again.)
 *
 * A signal handler's probe that interrupts a probe of the same thread
 * would be a second writer in the ring: it finds its own in_probe set,
 * drops the event and counts it (er_nested_drop()).  The interrupted
 * probe holds in_probe, so the mapping stays while the handler runs.
 *
 * SIGNAL HANDLERS AND THE LOCK.  A probe takes er_st.lock only for its
 * thread's first event, to take a slot, and never waits for a control
 * path there: a control path (start, stop, pause, eventring_register,
 * fork) may hold the lock while it waits for
 * anything -- the probes to leave, a lock that the code a handler
 * interrupted holds -- so a handler waiting for it could wait for ever,
 * and does when it interrupted its own thread's control path.  So every
 * path that takes the lock counts itself, in its thread's er_tls_locking
 * before it tries the lock and until after it gives it back (a handler
 * that interrupts it anywhere in between sees the count), and, control
 * paths only, in er_st.control_busy.  A slot's change (bind, join,
 * release, a thread's exit) is not a control path: like a first event it
 * holds the lock for microseconds and waits for nothing, so other
 * threads' first events wait for it instead of dropping (a thread
 * exiting while another starts would otherwise drop the newcomer's whole
 * burst).  A first event whose thread's count
 * is not zero, or that finds the lock held while control_busy is not
 * zero, drops its event and counts it as a slotless thread's
 * (er_slotless_drop()); the thread's next event tries again.  Another
 * thread's first event is the only holder a probe waits for (trylock
 * and yield): it holds the lock for microseconds and waits for nothing
 * but posix_fallocate(2).
 *
 * Opening needs no barrier: a probe reads nothing of the mapping before
 * its acquire load of its flag finds the world open -- eventring__on
 * stored by er_stw_let_probes_in(), or `live` stored by er_stw_open(),
 * both release stores made after the file was fully built.  Everything a
 * probe reads through the mapping -- the geometry in er_st, a domain's
 * ring, hdr and mask -- is written before that store or, for a slot taken
 * while the world is open, by the slot's own thread before it enters.
 *
 * The inlined test of eventring.h reads eventring__on with no ordering,
 * only to decide whether to come in; a probe then loads it again, inside,
 * as above.
 *
 * HOLDING PROBES OFF.  Inside the probe, a probe that honours a pause
 * (ER_IF_ON) loads `on` after its store of in_probe; so
 * er_stw_hold_probes(), which stores on = 0 and then does the stopper's
 * part above, gives the same guarantee as closing the world without taking
 * the mapping away: once it returns ER_WORLD_STOPPED, no probe writes into
 * any ring until probes are let in again, because the only writes made
 * while paused (ER_EVEN_PAUSED) are control operations' and they hold
 * er_st.lock.  The holder of the lock may then write into any slot's ring as
 * its owner would, head, tail and counts included (remote control records
 * ring_pause and ring_resume so, taking no slot: control.c).  The store of
 * ER_ON_OPEN that lets probes in again (er_stw_let_probes_in()) is a
 * release and a probe's load of `on` an acquire, so an owner sees those
 * words as the holder left them.  A slot retired by ER_WORLD_STUCK is not
 * written (see A THREAD STUCK).
 *
 * WHAT MAY BE UNMAPPED WHEN.  After er_stw_close() returns
 * ER_WORLD_STOPPED, the mapping and every ring may go.  After it returns
 * ER_WORLD_STUCK (a thread stayed inside a probe for two seconds: stopped,
 * or stuck in a signal handler, now or at an earlier hold of this file),
 * the mapping must stay for good, because that thread may still write
 * into it; its slot is retired.  After it returns ER_WORLD_UNPROVEN (membarrier(2) failed at
 * this stop: a probe that loaded the flag without ER_ON_FENCE before the
 * failure may be inside with its store of in_probe not yet seen), the
 * mapping stays for good too; later probes fence themselves (the flag
 * is stored with ER_ON_FENCE from then on).  In a forked child, only the
 * forking thread exists, so the world is stopped by construction
 * (er_stw_close_forked()) -- provided that thread runs no probe before
 * then, since until then it shares its parent's mapping and its copy of
 * the parent's tails: fork.c blocks signals in the forking thread from its
 * prepare handler until its child handler has given the parent's file up,
 * so that no signal handler's probe runs in between.  The remote-control
 * watcher maps nothing of its own but reads the extension block: it is
 * stopped before the world is (remote_watcher.c).
 */
#ifndef EVENTRING_STW_H
#define EVENTRING_STW_H

#include "drops.h"
#include "internal.h"

/* 1 where membarrier(2) is missing or failed: probes fence themselves.
 * Under er_st.lock; copied into eventring__on as ER_ON_FENCE whenever
 * probes are let in, and read as itself by the writes of control
 * operations and by threads without a slot. */
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

/* Chooses the barrier stopping will use; at every start, before
 * er_stw_open(). */
ER_HIDDEN void er_stw_init(void);

/* Opens the world: publishes a fully built file (rings bound, names
 * written) to probes. */
ER_HIDDEN void er_stw_open(void);

enum er_world {
  ER_WORLD_STOPPED, /* no probe inside: the mapping may go */
  ER_WORLD_STUCK,   /* a probe may still write: the mapping must stay */
  ER_WORLD_UNPROVEN /* the barrier failed: the mapping must stay */
};

/* Closes the world (eventring__on, then `live`, cleared) and waits for
 * every probe to leave, two seconds at most. */
ER_HIDDEN enum er_world er_stw_close(void);

/* Lets the probes that honour a pause in: stores eventring__on (release)
 * = ER_ON_OPEN, with ER_ON_FENCE where er_need_fence says so.  With the
 * world open only, and after everything a probe may read is written. */
ER_HIDDEN void er_stw_let_probes_in(void);

/* Holds off every probe that honours a pause: stores eventring__on = 0
 * and waits, as er_stw_close() does, for the probes inside to leave; the
 * mapping stays and `live` stays 1.  The caller may write into the rings
 * until it stores `on` again (see HOLDING PROBES OFF). */
ER_HIDDEN enum er_world er_stw_hold_probes(void);

/* Closes the world in a forked child, whose only thread is the caller:
 * no probe can be inside, and no wait is needed (async-signal-safe). */
ER_HIDDEN void er_stw_close_forked(void);

/* In a forked child: the probes the parent's other threads were inside
 * do not exist here. */
ER_HIDDEN void er_stw_after_fork(void);

/* ------------------------------------------------------------------ */
/* The probe side.                                                      */

/* Counts the event of a signal handler's probe that interrupted a probe
 * of the same thread on `d`. */
ER_HIDDEN void er_nested_drop(struct er_domain *d);

/* Counts, in the extension block, an event of a thread that has no slot. */
ER_HIDDEN void er_slotless_drop(void);

/* Takes a slot for a thread's first event, or for the next event of a
 * thread whose slot was retired, then enters (domain.c). */
ER_HIDDEN struct er_domain *er_enter_slow(enum er_when when);

/* A probe that found eventring__on ER_ON_PENDING, having entered nothing:
 * makes the forked child's file, then enters as er_enter() does.  Returns
 * what er_enter() returns, or NULL (the event counted as dropped) when
 * the lock could not be taken without waiting for a control path
 * (fork.c). */
ER_HIDDEN struct er_domain *er_enter_pending(enum er_when when);

/* Take and give back er_st.lock for a probe, as a thread's first event
 * does (domain.c; SIGNAL HANDLERS AND THE LOCK): er_lock_from_probe()
 * returns 1 with the lock, or 0 when waiting could deadlock. */
ER_HIDDEN int er_lock_from_probe(void);
ER_HIDDEN void er_unlock_from_probe(void);

ER_HIDDEN void er_write_spawn(struct er_domain *d);
/* What spawn_pending says, for the slot's owner: domain_spawn, and in a
 * shared slot a thread-switch marker (domain.c). */
ER_HIDDEN void er_write_pending(struct er_domain *d);

static inline void er_leave(struct er_domain *d) {
  /* Pairs with the acquire load in er_stw_close(): everything this probe
   * wrote is visible to the stopper before it touches the mapping. */
  er_istore_rel(&d->in_probe, 0);
}

/* Enters a probe on `d`, the calling thread's domain, when everything is
 * as a probe usually finds it: not nested, the world open and not
 * paused (eventring__on exactly ER_ON_OPEN, so no fence either), a ring
 * bound and nothing pending (no domain_spawn to write first; a shared
 * slot, whose thread-switch markers stay pending for as long as it is
 * shared, always goes the whole way).  Returns 1 inside the probe,
 * or 0 having entered nothing (or left again): the caller then goes the
 * whole way, er_enter(), out of line.  No call and no branch but these
 * tests, so that the probe that inlines it keeps its fast path free of
 * register saves. */
static inline __attribute__((always_inline)) int
er_enter_fast_at(struct er_domain *d, int need_ring) {
  if (ER_UNLIKELY(er_iload_rlx(&d->in_probe))) return 0;
  er_istore_rlx(&d->in_probe, 1);
  /* Keeps the compiler from moving the load below above the store; the
   * CPU is kept in order by the stopper's membarrier (see above). */
  er_compiler_barrier();
  /* The one flag test (see THE FLAG WORD); acquire, pairing with the
   * release stores of eventring__on that let probes in. */
  if (ER_LIKELY(er_iload_acq(&eventring__on) == ER_ON_OPEN) &&
      ER_LIKELY(!need_ring || d->ring != NULL) &&
      ER_LIKELY(!er_iload_rlx(&d->spawn_pending))) {
    (void)ER_HOOK(ER_HOOK_INSIDE_PROBE);
    return 1;
  }
  er_leave(d);
  return 0;
}

static inline __attribute__((always_inline)) int
er_enter_fast(struct er_domain *d) {
  return er_enter_fast_at(d, 1);
}

/* Enters a probe on `d`, the calling thread's domain.  Returns d, or NULL
 * when nothing may be written (and then the probe is left already). */
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
      return on == ER_ON_PENDING ? er_enter_pending(when) : NULL;
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
    return er_enter_slow(when);
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

/* Enters a probe on the calling thread's domain, taking a slot on its
 * first event. */
static inline struct er_domain *er_enter(enum er_when when) {
  struct er_domain *d = er_tls_self;
  if (ER_UNLIKELY(!d)) return er_enter_slow(when);
  return er_enter_domain(d, when);
}

#endif /* EVENTRING_STW_H */
