/* writer.h -- the write path of a probe, inlined into each entry point.
 *
 * A probe that passed the inlined flag test of eventring.h ends up in one
 * function (an entry point of probes.c, the alloc probes) into which all
 * of this is inlined: enter the domain (stw.h), take a timestamp, reserve
 * words, store them, publish the tail, leave.
 *
 * Each entry point has two copies of it.  er_emit_fast() (or
 * er_emit_fast_hdr(), given the header word) handles the
 * usual event -- entered with one flag test, room in the ring without
 * padding or eviction -- and nothing else: it makes no call but the
 * clock's (a recalibration every tenth of a second), so the compiler
 * gives the entry point no stack frame and no register saves.  Whatever
 * it does not handle -- a thread's first event, a signal handler's
 * nested probe, domain_spawn, the ring's end, evicting old events, an
 * event longer than the ring, a fence -- it leaves to er_emit(), the
 * whole path, which the entry point reaches by a tail call to an
 * out-of-line function.  A probe that gives up has written nothing and
 * has left its domain, so er_emit() starts it again from the beginning.
 *
 * Timestamps come from clock.h.
 */
#ifndef EVENTRING_WRITER_H
#define EVENTRING_WRITER_H

#include "clock.h"
#include "drops.h"
#include "internal.h"
#include "stw.h"

/* Entering and leaving a probe are the stop-the-world protocol's: stw.h. */

/* A timestamp for the domain's next event: never before its last one. */
static inline uint64_t er_stamp(struct er_domain *d) {
  uint64_t t = er_now();
  if (ER_UNLIKELY(t < d->last_ts)) t = d->last_ts;
  d->last_ts = t;
  return t;
}

/* ------------------------------------------------------------------ */
/* Reserving and publishing words (see evict.c for the overwrite policy). */

/* The whole of reserving (evict.c): pads to the ring's end, evicts a batch
 * and takes a mark as needed, and returns room for `len` (at most the
 * ring's size) contiguous words at the tail. */
ER_HIDDEN uint64_t *er_make_room(struct er_domain *d, unsigned len);

/* Counts an event the domain could not write in its ring's DROPPED word.
 * Called inside a probe that saw the world open, on a domain with a
 * ring, so the header is mapped. */
static inline void er_count_dropped(struct er_domain *d) {
  er_drop(&d->hdr[ER_RING_DROPPED]);
}

/* Returns room for `len` contiguous words at the tail, after padding to
 * the ring's end and evicting old events as needed; or NULL, the event
 * dropped and counted, when it is longer than the whole ring (rings go
 * down to 2 words, OCAMLRUNPARAM e=1, and a custom event up to 1023).
 * Writing it would mean evicting past the tail and wrapping the event
 * onto itself; OCaml 5 has no answer for that case either, so it is
 * settled here, once, for every kind of event. */
static inline uint64_t *er_reserve(struct er_domain *d, unsigned len) {
  if (ER_UNLIKELY(len > d->mask + 1)) {
    er_count_dropped(d);
    return NULL;
  }
  uint64_t tail = d->tail;
  if (ER_LIKELY(tail + len <= d->limit)) return &d->ring[tail & d->mask];
  return er_make_room(d, len);
}

/* Publishes the `len` words written at the tail as one event.  The
 * domain's words are read once into locals: the stores into the mapping
 * could alias them as far as the compiler knows. */
static inline void er_commit_at(struct er_domain *d, uint64_t tail,
                                unsigned len) {
  uint64_t *hdr = d->hdr;
  uint64_t written = d->written + 1;
  tail += len;
  d->tail = tail;
  d->written = written;
  /* WRITTEN before TAIL: a reader that loads TAIL (acquire) then WRITTEN
   * gets a count that covers every event up to that tail. */
  er_store_rlx(&hdr[ER_RING_WRITTEN], written);
  /* Publishes the event's words; pairs with the reader's acquire load of
   * ring_tail. */
  er_store_rel(&hdr[ER_RING_TAIL], tail);
}

/* er_commit_at() at the domain's tail. */
static inline void er_commit(struct er_domain *d, unsigned len) {
  er_commit_at(d, d->tail, len);
}

/* The header's user bit: whose numbering `id` is in. */
enum er_origin {
  ER_FROM_RUNTIME = 0, /* phases, counters, lifecycle kinds */
  ER_FROM_USER = 1     /* registered user events (eventring_register()) */
};

/* Writes one event of `n` payload words in `d`'s ring, as its writer:
 * the caller is inside a probe on `d` (er_enter()), or holds er_st.lock
 * with every probe held off (stw.h).  An event longer than the ring is
 * dropped and counted (er_reserve()). */
static inline __attribute__((always_inline)) void
er_write(struct er_domain *d, enum er_origin origin, unsigned type,
         unsigned id, const uint64_t *payload, unsigned n) {
  unsigned len = 2 + n;
  uint64_t *ev = er_reserve(d, len);
  if (ER_UNLIKELY(!ev)) return;
  er_store_rlx(&ev[0], ER_HDR(len, origin, type, id));
  er_store_rlx(&ev[1], er_stamp(d));
  for (unsigned i = 0; i < n; i++) er_store_rlx(&ev[2 + i], payload[i]);
  er_commit(d, len);
}

/* Writes one event of `n` payload words in the calling thread's ring,
 * when `when` says so (internal.h).  Inlined so that each entry point is
 * compiled for its own payload size. */
static inline __attribute__((always_inline)) void
er_emit(enum er_when when, enum er_origin origin, unsigned type, unsigned id,
        const uint64_t *payload, unsigned n) {
  struct er_domain *d = er_enter(when);
  if (!d) return;
  er_write(d, origin, type, id, payload, n);
  er_leave(d);
}

/* The usual case of er_emit(ER_IF_ON, ...), for an entry point's fast
 * path: returns 1 when the event is written, or 0 having written nothing
 * and left nothing entered, when the caller must call er_emit() instead
 * (see the top of this file).  The tests are the ones er_enter() and
 * er_reserve() make, in one piece: room for `2 + n` words before the
 * domain's limit (er_domain.limit: before the ring's end, head + size
 * and the next mark; an event longer than the ring fails this too).
 * `hdr` is the event's header word (ER_HDR(2 + n, ...)), which the
 * caller can decode for the whole path (er_emit_fast() builds it). */
static inline __attribute__((always_inline)) int
er_emit_fast_hdr(uint64_t hdr, const uint64_t *payload, unsigned n) {
  struct er_domain *d = er_tls_self;
  /* No test of d->ring: without a ring the limit is 0 (below). */
  if (ER_UNLIKELY(!d) || ER_UNLIKELY(!er_enter_fast_at(d, ER_RING_ANY)))
    return 0;
  const unsigned len = 2 + n;
  /* Room before the limit (see er_domain.limit): no padding, no
   * eviction, no mark; an event longer than the ring fails this too,
   * and so does a domain without a ring (limit 0). */
  uint64_t tail = d->tail;
  if (ER_UNLIKELY(tail + len > d->limit)) {
    er_leave(d);
    return 0;
  }
  /* With a payload, the event's address is taken before the clock and
   * the tail loaded again after it (below), so that the fast path needs
   * no more than the caller-saved registers across rdtsc, and saves
   * none.  Without one, both stay in registers. */
  uint64_t *ev = n ? &d->ring[tail & d->mask] : NULL;
  /* The clock's usual case only (clock.h): whatever needs a call -- no
   * TSC set yet, a recalibration due -- goes the whole way, so that this
   * path makes no call and saves no register.  Nothing is stored yet. */
  uint64_t t;
  if (ER_UNLIKELY(!er_now_fast(&t))) {
    er_leave(d);
    return 0;
  }
  /* Never before the domain's last timestamp, as er_stamp() does. */
  if (ER_UNLIKELY(t < d->last_ts)) t = d->last_ts;
  d->last_ts = t;
  if (n == 0) ev = &d->ring[tail & d->mask];
  er_store_rlx(&ev[0], hdr);
  er_store_rlx(&ev[1], t);
  for (unsigned i = 0; i < n; i++) er_store_rlx(&ev[2 + i], payload[i]);
  /* Without a payload, the tail loaded above: the stores into the
   * mapping could alias d->tail as far as the compiler knows, which
   * would reload it. */
  if (n) er_commit(d, len);
  else er_commit_at(d, tail, len);
  er_leave(d);
  return 1;
}

/* er_emit_fast_hdr() with the header built from `origin`, `type`, `id`
 * and `n`. */
static inline __attribute__((always_inline)) int
er_emit_fast(enum er_origin origin, unsigned type, unsigned id,
             const uint64_t *payload, unsigned n) {
  return er_emit_fast_hdr(ER_HDR(2 + n, origin, type, id), payload, n);
}

/* A lifecycle event of a control operation, whose caller holds
 * er_st.lock: written even while paused. */
static inline void er_emit_lifecycle(int kind, uint64_t data) {
  /* The process's event, not a thread's: no thread-switch marker before
   * it in a shared slot (domain.c), so that a ring still begins with
   * ring_start (and fork_child).  The slot's threads are the host's to
   * serialise, and this one holds it. */
  struct er_domain *d = er_tls_self;
  int writer = d ? d->spawn_pending & ER_PENDING_WRITER : 0;
  if (d) d->spawn_pending &= ~ER_PENDING_WRITER;
  er_emit(ER_EVEN_PAUSED, ER_FROM_RUNTIME, ER_EV_LIFECYCLE, (unsigned)kind,
          &data, 1);
  if (d) d->spawn_pending |= writer;
}

#endif /* EVENTRING_WRITER_H */
