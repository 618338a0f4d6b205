/* consumer_poll.c -- polling a cursor: reading each domain's ring and
 * decoding its events (the cursor API of eventring.h; cursor.h says which
 * file does what).
 *
 * A cursor maps a ring file read-only and reads each domain's ring from
 * its own position, with no coordination with the writer (ring.c):
 *
 *   1. Load the pair (ring_head, evicted) -- consistently, through the SEQ
 *      word, on eventring's files -- and then ring_tail with acquire
 *      order (pairs with the writer's release store of the tail, so the
 *      words below the tail are there to read).
 *   2. If head passed our position, what was in between was overwritten:
 *      report it (in events: evicted minus the events we had passed; in
 *      words on OCaml 5's files, which have no counts) and jump to head.
 *   3. Copy a run of words [position, tail) -- at most CHUNK -- out of the
 *      ring, then one acquire fence and one reload of head for the whole
 *      run.  The writer publishes a new head before it overwrites the
 *      words it frees (ring.c), so every event at or above the reloaded
 *      head was copied intact; the events below it may be torn and are
 *      reported lost, counted exactly from the reloaded pair.
 *   4. Decode the copy, checking every header, and deliver: runs of
 *      events of a fixed length (runtime phases and counters, user
 *      units, ints and spans) in one pass that checks each event just
 *      before its callback (check_dispatch_run), or, in a poll with no
 *      callbacks, in a pass that checks the run (scan_run) and one that
 *      delivers what it must (user names) without checks; any other
 *      event one at a time.
 *
 * Header words.  Through a mapping every header word is one aligned
 * 8-byte load and cannot tear.  Through pread(2) the kernel copies them
 * as bytes (`rep movsb`), with no promise to read an aligned word in one
 * access, so a word the writer stores while it is copied may come back
 * torn: bytes of the old value and of the new.  There: a pair (head,
 * events before it) is read while the writer leaves its slot alone, as
 * the second load of PSEQ proves (load_head), so it does not tear; PSEQ
 * moves by one, so a torn PSEQ differs from a value it had only across a
 * carry out of a byte, and is then far from the second load, which
 * makes load_head() try again.  TAIL is loaded twice: once before the
 * copy, to bound it, and again after it, in the same call as PSEQ (or
 * OCaml's head).  A first load torn past the real tail shows as a second
 * load smaller than the first: the copy is dropped, nothing past the
 * real tail is delivered, and the next poll loads TAIL again.  A first
 * load torn short of the real tail cuts the last event, which with a
 * second load past it is left for the next poll instead of being called
 * a broken ring (test_reader_races forces both).  What is left, through
 * pread(2) only: a first load torn past the real tail that the writer
 * passes before the second load (a tear across a byte's carry is 256
 * words off or more, hundreds of nanoseconds of a writer's stores) would
 * let words copied while being written be delivered, and so would two
 * loads torn alike.
 *
 * Bad events.  An event header is sane when its 36 low bits are zero (no
 * writer sets them), its length is not 0 and the event fits in the run
 * it was copied in: then the next event starts right after it, whatever
 * its type and id say.  A sane header whose type, id, length for its
 * type, user name or custom padding is wrong is one malformed event: it
 * is skipped, counted per domain (eventring_cursor_malformed) and the
 * ring is read on.  An insane header means the cursor no longer knows
 * where events start: the ring is broken from there (EVENTRING_E_CORRUPT)
 * and skipped by later polls.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cursor.h"
#include "numbering.h"

#ifdef ER_CONSUMER_TEST
/* Test builds only (a test compiles the consumer's files itself with
 * ER_CONSUMER_TEST defined): called between the copy of a run of ring
 * words and the re-check of head that validates it, so that a test can
 * move the writer's head or truncate the file exactly there.  Production
 * builds have neither the pointer nor the call. */
void (*er_consumer_test_after_copy)(int domain, uint64_t pos, uint64_t n);
#define AFTER_COPY(d, pos, n)                                            \
  do {                                                                   \
    if (er_consumer_test_after_copy) er_consumer_test_after_copy(d, pos, n); \
  } while (0)
#else
#define AFTER_COPY(d, pos, n) ((void)0)
#endif

/* ------------------------------------------------------------------ */
/* User event names, read as events need them.                          */

int er_cursor_user_name(eventring_cursor *c, unsigned id,
                        const char **name) {
  if (ER_LIKELY(c->user_names && c->user_names[id])) {
    *name = c->user_names[id];
    return 0;
  }
  if (c->kept) {
    /* Every name the file held was cached at the release. */
    if (c->kept->bad_name[id / 8] & (1u << (id % 8))) return BAD_NAME;
    *name = "";
    return 0;
  }
  char tmp[ER_NAME_SLOT_BYTES];
  int e = get(c, c->custom_off + (uint64_t)id * ER_NAME_SLOT_BYTES, tmp,
              sizeof tmp);
  if (e) return e;
  if (!memchr(tmp, 0, sizeof tmp)) return BAD_NAME;
  if (!tmp[0]) {
    *name = "";
    return 0;
  }
  if (!c->user_names &&
      !(c->user_names = calloc(ER_NAME_SLOTS, sizeof *c->user_names)))
    return -ENOMEM;
  if (!(c->user_names[id] = strdup(tmp))) return -ENOMEM;
  *name = c->user_names[id];
  return 0;
}

/* Lets numbering.c weigh what the rings of an OCaml 5 file hold beyond
 * what it saw before, through get(), and takes its verdict.  Returns 0
 * or -ENOMEM. */
static int read_for_numbering(const void *ctx, uint64_t off, void *dst,
                              uint64_t bytes) {
  const eventring_cursor *c = ctx;
  return bytes == 8 ? get_acq(c, off, dst) : get(c, off, dst, (size_t)bytes);
}

int er_cursor_infer_numbering(eventring_cursor *c) {
  if (!c->infer && !(c->infer = er_numbering_new(c->max_domains)))
    return -ENOMEM;
  struct er_rings r = {read_for_numbering, c,
                       c->max_domains,     c->ring_words,
                       c->ring_bytes,      c->hdr_bytes,
                       c->headers_off,     c->data_off};
  er_numbering_scan(c->infer, &r);
  c->numbering = er_numbering_verdict(c->infer, &c->basis);
  return 0;
}

/* ------------------------------------------------------------------ */
/* Polling.                                                             */

/* No second load of TAIL (load_head()). */
#define NO_TAIL UINT64_MAX

/* Loads head and the events before it as a consistent pair (eventring's
 * files, see ring_format.h), or head alone (OCaml's, where the count is
 * unknown and left 0).  `hdr` is the file offset of the ring header.
 * Through pread(), TAIL comes in the same call as PSEQ (or as OCaml's
 * head), into *tail_now, for read_ring()'s check of a torn tail (see the
 * opening comment); NO_TAIL otherwise.  Returns 0, EVENTRING_E_CORRUPT,
 * or an error from get(). */
static int load_head(const eventring_cursor *c, uint64_t hdr,
                     struct ring_pos *rp, uint64_t *head, uint64_t *evicted,
                     uint64_t *tail_now) {
  int e;
  *tail_now = NO_TAIL;
  _Static_assert(ER_RING_TAIL == ER_RING_HEAD + 1 &&
                     ER_RING_PSEQ == ER_RING_TAIL + 3,
                 "TAIL follows HEAD, PSEQ is 3 words after TAIL");
  if (!c->ours) {
    *evicted = 0;
    if (via_of(c) != VIA_PREAD) return get_acq(c, hdr + 8 * ER_RING_HEAD, head);
    uint64_t ht[2];
    e = get(c, hdr + 8 * ER_RING_HEAD, ht, sizeof ht);
    er_fence_acquire();
    *head = ht[0];
    *tail_now = ht[1];
    return e;
  }
  /* A live writer laps a slot only after a dozen moves of head, and each
   * takes it tens of nanoseconds: a million misses in a row mean that the
   * header is being scribbled on, not written by a writer. */
  for (long tries = 0; tries < 1000000; tries++) {
    /* Acquire loads throughout, each pairing with one of the writer's
     * release stores (ring.c, evict()): a pair value from a later move
     * than k makes the second load of PSEQ see at least k + NPAIRS - 1. */
    uint64_t k, k2, h, ev;
    if (via_of(c) == VIA_PREAD) {
      uint64_t w[4]; /* TAIL, WRITTEN, DROPPED, PSEQ */
      if ((e = get(c, hdr + 8 * ER_RING_TAIL, w, sizeof w)) != 0) return e;
      er_fence_acquire();
      *tail_now = w[0];
      k = w[3];
    } else if ((e = get_acq(c, hdr + 8 * ER_RING_PSEQ, &k)) != 0) {
      return e;
    }
    if (k == 0) {
      *head = *evicted = 0;
      return 0;
    }
    /* Head has not moved since the pair read last: that pair is the one
     * the loads below would find, as their second load of PSEQ would
     * (this one is no earlier than any copy it validates).  Two loads
     * fewer from the header line the writer stores to, and through
     * pread() two system calls fewer. */
    if (k == rp->seq) {
      *head = rp->seq_head;
      *evicted = rp->seq_evicted;
      return 0;
    }
    uint64_t pair = hdr + 8 * (ER_RING_PAIRS + 2 * (k % ER_RING_NPAIRS));
    if (via_of(c) == VIA_PREAD) {
      /* One call for the pair: it is the second load of PSEQ that tells
       * whether the writer came round to this slot meanwhile. */
      uint64_t hv[2];
      if ((e = get(c, pair, hv, sizeof hv)) != 0) return e;
      er_fence_acquire();
      h = hv[0];
      ev = hv[1];
    } else if ((e = get_acq(c, pair, &h)) != 0 ||
               (e = get_acq(c, pair + 8, &ev)) != 0) {
      return e;
    }
    if ((e = get_acq(c, hdr + 8 * ER_RING_PSEQ, &k2)) != 0) return e;
    if (k2 - k < ER_RING_NPAIRS - 1) {
      *head = rp->seq_head = h;
      *evicted = rp->seq_evicted = ev;
      rp->seq = k;
      return 0;
    }
    /* The writer lapped the slot while we read it: it moved head a dozen
     * times in that while, so a retry soon finds a slot at rest. */
  }
  return EVENTRING_E_CORRUPT;
}

struct poll_state {
  eventring_cursor *c;
  const eventring_callbacks *cb;
  void *data;
  size_t max, delivered;
  int stop;
};

static int lost(struct poll_state *ps, int domain, uint64_t n) {
  if (n && ps->cb->lost_events && !ps->cb->lost_events(ps->data, domain, n))
    ps->stop = 1;
  return 0;
}

/* The dispatch key of an event: its user bit and message type, the five
 * bits above the id. */
#define KEY(h) ((unsigned)((uint64_t)(h) >> 49) & 0x1f)
#define RUNTIME(t) (t)
#define USER(t) (16 + (t))

/* The two-pass decode.  Most of a trace is runtime phases and counters,
 * each a fixed number of words.  The first pass (scan_run) walks a run
 * of such events in the copy, checking each header -- its zero bits, its
 * length for its kind, its id against the file's tables, its end within
 * the segment -- with one branch per event; the second (dispatch_run)
 * delivers the run without checking anything again.  A poll with
 * callbacks makes both in one pass instead (check_dispatch_run).  An event
 * of any other kind, or a bad one, ends the run and is decoded by
 * deliver().
 *
 * A runtime header's 28 bits above the zero bits are its length (10),
 * user bit (1), type (4) and id (13): the run's kinds are those whose
 * 28 bits less `base` (their length, key and id 0) are below `lim` (the
 * number of ids the file names).  A wrong length, key or id falls
 * outside, so one subtraction and one comparison check all three. */
#define TOP(h) ((uint32_t)((uint64_t)(h) >> 36))
#define FAST_BASE(len, key) (((uint32_t)(len) << 18) | ((uint32_t)(key) << 13))

void er_cursor_set_fast_kinds(eventring_cursor *c) {
  /* OCaml 5's files have no tables: every 13-bit id is taken. */
  uint32_t phases = c->ours ? c->n_phases : 8192;
  uint32_t counters = c->ours ? c->n_counters : 8192;
  memset(c->fast, 0, sizeof c->fast);
  c->fast[RUNTIME(ER_EV_BEGIN)].base = FAST_BASE(2, RUNTIME(ER_EV_BEGIN));
  c->fast[RUNTIME(ER_EV_BEGIN)].lim = phases;
  c->fast[RUNTIME(ER_EV_END)].base = FAST_BASE(2, RUNTIME(ER_EV_END));
  c->fast[RUNTIME(ER_EV_END)].lim = phases;
  c->fast[RUNTIME(ER_EV_COUNTER)].base = FAST_BASE(3, RUNTIME(ER_EV_COUNTER));
  c->fast[RUNTIME(ER_EV_COUNTER)].lim = counters;
  /* User events of a fixed length: their names are checked by the second
   * pass (a name not yet read ends the run there). */
  _Static_assert(ER_NAME_SLOTS == 8192, "a user id has 13 bits");
  c->fast[USER(ER_UEV_UNIT)].base = FAST_BASE(2, USER(ER_UEV_UNIT));
  c->fast[USER(ER_UEV_UNIT)].lim = ER_NAME_SLOTS;
  c->fast[USER(ER_UEV_INT)].base = FAST_BASE(3, USER(ER_UEV_INT));
  c->fast[USER(ER_UEV_INT)].lim = ER_NAME_SLOTS;
  c->fast[USER(ER_UEV_SPAN_BEGIN)].base = FAST_BASE(2, USER(ER_UEV_SPAN_BEGIN));
  c->fast[USER(ER_UEV_SPAN_BEGIN)].lim = ER_NAME_SLOTS;
  c->fast[USER(ER_UEV_SPAN_END)].base = FAST_BASE(2, USER(ER_UEV_SPAN_END));
  c->fast[USER(ER_UEV_SPAN_END)].lim = ER_NAME_SLOTS;
}

/* The longest kind a run holds, in words. */
#define FAST_MAX_LEN 3

/* The first pass: the end of the run of at most `room` checked events
 * that starts at `off` and ends at or before `end`, and their number in
 * *count.  An event that starts FAST_MAX_LEN words or more before `end`
 * fits before it, so the first loops check the kind alone; the last few
 * words are looked at by the slower loop after them.  The zero bits of the
 * headers are or-ed together and checked once for the run: when one is
 * set, the run is cut before the first header that has it.  Sets
 * *any_user when the run holds a user event.  Not inlined, so that its
 * loop has the registers to itself. */
static __attribute__((noinline)) uint64_t
scan_run(const eventring_cursor *c, const uint64_t *buf, uint64_t off,
         uint64_t end, uint64_t room, uint64_t *count, uint64_t *any_user) {
  const uint64_t start = off;
  const struct fast_kind *const fast = c->fast;
  uint64_t left = room, zero = 0;
  /* Two events per turn while they surely fit.  Where the next event
   * starts depends on the load of this one's header: one event per turn
   * would wait for a load at each.  The second header is picked from the
   * two words it can be (the first event has 2 words or 3, or is not of
   * the run), loaded with the first, so a turn waits for one load. */
  if (end - off >= 2 * FAST_MAX_LEN) {
    const uint64_t last = end - 2 * FAST_MAX_LEN;
    while (off <= last && left >= 2) {
      const uint64_t h0 = buf[off], at2 = buf[off + 2], at3 = buf[off + 3];
      const uint64_t len0 = h0 >> 54;
      const uint64_t h1 = len0 == 2 ? at2 : at3;
      const uint32_t t0 = TOP(h0), t1 = TOP(h1);
      const unsigned k0 = (t0 >> 13) & 0x1f, k1 = (t1 >> 13) & 0x1f;
      if ((t0 - fast[k0].base >= fast[k0].lim) |
          (t1 - fast[k1].base >= fast[k1].lim))
        break; /* the loops below take the first, if it is good */
      zero |= h0 | h1;
      off += len0 + (h1 >> 54);
      left -= 2;
    }
  }
  /* One event per turn, while it surely fits. */
  if (end - off >= FAST_MAX_LEN) {
    const uint64_t last = end - FAST_MAX_LEN;
    while (off <= last && left > 0) {
      const uint64_t h = buf[off];
      const uint32_t top = TOP(h);
      const unsigned key = (top >> 13) & 0x1f;
      if (top - fast[key].base >= fast[key].lim) break;
      zero |= h;
      off += h >> 54;
      left--;
    }
  }
  /* The last words of the segment, each event checked against its end. */
  while (off < end && left > 0) {
    const uint64_t h = buf[off];
    const uint32_t top = TOP(h);
    const unsigned key = (top >> 13) & 0x1f;
    if (top - fast[key].base >= fast[key].lim || off + (h >> 54) > end)
      break;
    zero |= h;
    off += h >> 54;
    left--;
  }
  uint64_t n = room - left;
  if (ER_UNLIKELY(zero & HDR_ZERO_BITS)) {
    /* Rare: a header with stray bits.  The run stops before it, and
     * deliver()'s checks report it. */
    off = start;
    n = 0;
    zero = 0;
    while (!(buf[off] & HDR_ZERO_BITS)) {
      zero |= buf[off];
      off += ER_HDR_LEN(buf[off]);
      n++;
    }
  }
  *count = n;
  /* The user bit of any header of the run. */
  *any_user = (zero >> 53) & 1;
  return off;
}

/* Delivers the user event of a fixed length (unit, int, span) at *p,
 * whose header the caller has checked and whose name it has, to its
 * callback if set, and moves *p past it.  Returns the callback's answer
 * (1 without one).  The one home of these kinds' delivery for the two
 * run loops below; deliver() decodes the rest. */
static inline __attribute__((always_inline)) int
user_fixed(const eventring_callbacks *cb, void *data, int domain,
           const uint64_t **pp, int id, const char *name) {
  const uint64_t *p = *pp;
  const unsigned type = ER_HDR_TYPE(p[0]);
  int go = 1;
  /* Loaded here, not before the loops: user events are the fewer. */
  switch (type) {
  case ER_UEV_UNIT:
    if (cb->user_unit) go = cb->user_unit(data, domain, p[1], id, name);
    *pp = p + 2;
    break;
  case ER_UEV_INT:
    if (cb->user_int)
      go = cb->user_int(data, domain, p[1], id, name, (int64_t)p[2]);
    *pp = p + 3;
    break;
  default: /* ER_UEV_SPAN_BEGIN, ER_UEV_SPAN_END */
    if (cb->user_span)
      go = cb->user_span(data, domain, p[1], id, name,
                         type == ER_UEV_SPAN_END);
    *pp = p + 2;
    break;
  }
  return go;
}

/* The second pass: delivers the run [p, end) that scan_run() checked.
 * The callbacks and their argument are copied into locals first: the
 * compiler must assume that a call through a pointer may store anywhere,
 * so fields read through the cursor or the callback set would be loaded
 * again after each call; locals whose address is not taken stay in
 * registers (or in this frame) across the calls.  A user event whose
 * name the cursor has not read yet (or that is empty) is left to
 * deliver(), which reads and checks it: the run stops before it, with
 * *why set to RUN_NAME.  Returns where it stopped: `end`, before such an
 * event, or just after the event whose callback asked to stop (*why set
 * to RUN_STOP).  Not inlined, for the registers. */
#define RUN_STOP 1
#define RUN_NAME 2
static __attribute__((noinline)) const uint64_t *
dispatch_run(const eventring_callbacks *cb, char *const *names, void *data,
             int domain, const uint64_t *p, const uint64_t *end, int *why) {
  _Static_assert((ER_EV_BEGIN & 1) == 0 && ER_EV_END == (ER_EV_BEGIN | 1),
                 "begin and end differ in the type's low bit");
  /* Begin and end share a signature: picked from this pair by the type's
   * low bit, they cost one branch on the kind, not two. */
  const eventring_phase_fn phase[2] = {cb->runtime_begin, cb->runtime_end};
  const eventring_counter_fn on_counter = cb->runtime_counter;
  while (p < end) {
    const uint64_t h = p[0];
    const int id = (int)ER_HDR_ID(h);
    const unsigned key = KEY(h);
    int go = 1;
    if (key == RUNTIME(ER_EV_COUNTER)) {
      if (on_counter) go = on_counter(data, domain, p[1], id, p[2]);
      p += 3;
    } else if (ER_LIKELY(key < USER(0))) { /* begin or end */
      const eventring_phase_fn f = phase[key & 1];
      if (f) go = f(data, domain, p[1], id);
      p += 2;
    } else { /* the user kinds of er_cursor_set_fast_kinds() */
      const char *name = names ? names[id] : NULL;
      if (!name) {
        *why = RUN_NAME;
        return p;
      }
      go = user_fixed(cb, data, domain, &p, id, name);
    }
    if (ER_UNLIKELY(!go)) {
      *why = RUN_STOP;
      break;
    }
  }
  return p;
}

/* The callbacks a run calls when the poll has none of that kind: calling
 * one costs a poll that lacks it a call, and saves every other poll a
 * test per event. */
static int no_phase(void *data, int domain, uint64_t ts, int phase) {
  (void)data, (void)domain, (void)ts, (void)phase;
  return 1;
}
static int no_counter(void *data, int domain, uint64_t ts, int counter,
                      uint64_t value) {
  (void)data, (void)domain, (void)ts, (void)counter, (void)value;
  return 1;
}

/* The two passes in one, for a poll with callbacks: delivers the run that
 * starts at `p` and ends before `end`, each event checked as scan_run()
 * checks it -- its header's zero bits, its length for its kind, its id
 * against the file's tables -- before its callback is called.  The
 * caller keeps the poll's limit by the choice of `end` (`end` - `p`
 * words hold at most half as many events).  The loop stops FAST_MAX_LEN
 * words before `end`, so that every event it takes fits; the last words
 * are deliver()'s.  Stops before the first event that fails a check
 * (deliver() decodes it), before a user event whose name is not read yet
 * (*why = RUN_NAME), or after the event whose callback asked to stop
 * (*why = RUN_STOP); the number delivered in *count.  One pass saves
 * scan_run()'s loads and tests of each header: with a callback per event,
 * the calls bound the loop, not the load of the next header.  Not
 * inlined, for the registers. */
static __attribute__((noinline)) const uint64_t *
check_dispatch_run(const eventring_cursor *c, const eventring_callbacks *cb,
                   void *data, int domain, const uint64_t *p,
                   const uint64_t *end, uint64_t *count, int *why) {
  _Static_assert((ER_EV_BEGIN & 1) == 0 && ER_EV_END == (ER_EV_BEGIN | 1),
                 "begin and end differ in the type's low bit");
  const struct fast_kind *const fast = c->fast;
  const eventring_phase_fn phase[2] = {
      cb->runtime_begin ? cb->runtime_begin : no_phase,
      cb->runtime_end ? cb->runtime_end : no_phase};
  const eventring_counter_fn on_counter =
      cb->runtime_counter ? cb->runtime_counter : no_counter;
  uint64_t n = 0;
  if (end - p < FAST_MAX_LEN) {
    *count = 0;
    return p;
  }
  const uint64_t *const last = end - FAST_MAX_LEN;
  while (p <= last) {
    const uint64_t h = p[0];
    if (h & HDR_ZERO_BITS) break;
    const uint32_t top = TOP(h);
    const unsigned key = KEY(h);
    if (top - fast[key].base >= fast[key].lim) break;
    const int id = (int)(top & 0x1fff);
    int go;
    if (key == RUNTIME(ER_EV_COUNTER)) {
      go = on_counter(data, domain, p[1], id, p[2]);
      p += 3;
    } else if (ER_LIKELY(key < USER(0))) { /* begin or end */
      go = phase[key & 1](data, domain, p[1], id);
      p += 2;
    } else { /* the user kinds of er_cursor_set_fast_kinds() */
      const char *name = c->user_names ? c->user_names[id] : NULL;
      if (!name) {
        *why = RUN_NAME;
        break;
      }
      go = user_fixed(cb, data, domain, &p, id, name);
    }
    n++;
    if (ER_UNLIKELY(!go)) {
      *why = RUN_STOP;
      break;
    }
  }
  *count = n;
  return p;
}

/* The number of events of a checked run [p, end). */
static uint64_t run_events(const uint64_t *p, const uint64_t *end) {
  uint64_t n = 0;
  for (; p < end; p += ER_HDR_LEN(*p)) n++;
  return n;
}

/* What deliver() returns besides 0 (delivered) and a negative error. */
#define PADDING 1   /* not an event */
#define MALFORMED 2 /* an event whose header or payload is wrong */

/* A thread-switch marker (ring_format.h, ER_XEV_THREAD): an event, as
 * its writer counted it.  Out of line: rare, and not OCaml's. */
static __attribute__((noinline)) int
thread_marker(struct poll_state *ps, int domain, const uint64_t *ev,
              unsigned len) {
  if (len < ER_XEV_THREAD_MIN_WORDS) return MALFORMED;
  size_t n = 0;
  const char *name = (const char *)(ev + ER_XEV_THREAD_MIN_WORDS);
  if (len > ER_XEV_THREAD_MIN_WORDS) {
    size_t words = len - ER_XEV_THREAD_MIN_WORDS;
    unsigned pad = (unsigned char)name[words * 8 - 1];
    if (pad > 7 || words * 8 - 1 - pad >= ER_THREAD_NAME_BYTES)
      return MALFORMED;
    n = words * 8 - 1 - pad;
  }
  if (ps->cb->thread &&
      !ps->cb->thread(ps->data, domain, ev[1], (int64_t)ev[2], ev[3],
                      name, n))
    ps->stop = 1;
  return 0;
}

/* Decodes and delivers one event of `len` words at `ev`, whose header is
 * sane (read_ring).  Returns 0, PADDING, MALFORMED, or a negative error
 * from reading a user event's name.  Inlined into the decode loop: one
 * jump on the key, one length check per kind. */
static inline __attribute__((always_inline)) int
deliver(struct poll_state *ps, int domain, const uint64_t *ev, unsigned len) {
  const eventring_callbacks *cb = ps->cb;
  eventring_cursor *c = ps->c;
  uint64_t h = ev[0];
  unsigned id = ER_HDR_ID(h);
  int go = 1;
  switch (KEY(h)) {
  case RUNTIME(ER_EV_FLUSH):
    /* eventring's thread-switch marker; other flush ids stay skipped. */
    if (id == ER_XEV_THREAD && c->ours) return thread_marker(ps, domain, ev, len);
    return PADDING;
  case RUNTIME(ER_EV_INTERNAL):
    return PADDING;
  case RUNTIME(ER_EV_BEGIN):
    if (len != 2 || (c->ours && id >= c->n_phases)) return MALFORMED;
    if (cb->runtime_begin) go = cb->runtime_begin(ps->data, domain, ev[1], (int)id);
    break;
  case RUNTIME(ER_EV_END):
    if (len != 2 || (c->ours && id >= c->n_phases)) return MALFORMED;
    if (cb->runtime_end) go = cb->runtime_end(ps->data, domain, ev[1], (int)id);
    break;
  case RUNTIME(ER_EV_COUNTER):
    if (len != 3 || (c->ours && id >= c->n_counters))
      return MALFORMED;
    if (cb->runtime_counter)
      go = cb->runtime_counter(ps->data, domain, ev[1], (int)id, ev[2]);
    break;
  case RUNTIME(ER_EV_ALLOC):
    if (len != 2 + EVENTRING_ALLOC_BUCKETS) return MALFORMED;
    if (cb->alloc) go = cb->alloc(ps->data, domain, ev[1], ev + 2);
    break;
  case RUNTIME(ER_EV_LIFECYCLE): {
    if ((len != 2 && len != 3) || id >= EVENTRING_LIFECYCLE_COUNT)
      return MALFORMED;
    /* OCaml 5.2 writes ring_stop with no data word yet its reader
     * reports a stale one: ring_stop has no data, whatever its length. */
    int has = len == 3 && id != EVENTRING_LIFECYCLE_RING_STOP;
    if (cb->lifecycle)
      go = cb->lifecycle(ps->data, domain, ev[1], (int)id,
                         has ? (int64_t)ev[2] : 0, has);
    break;
  }
  case USER(ER_UEV_UNIT):
  case USER(ER_UEV_INT):
  case USER(ER_UEV_SPAN_BEGIN):
  case USER(ER_UEV_SPAN_END):
  case USER(ER_UEV_CUSTOM): {
    const char *name;
    int e = er_cursor_user_name(c, id, &name);
    if (e) return e == BAD_NAME ? MALFORMED : e;
    switch (ER_HDR_TYPE(h)) {
    case ER_UEV_UNIT:
      if (len != 2) return MALFORMED;
      if (cb->user_unit)
        go = cb->user_unit(ps->data, domain, ev[1], (int)id, name);
      break;
    case ER_UEV_INT:
      if (len != 3) return MALFORMED;
      if (cb->user_int)
        go = cb->user_int(ps->data, domain, ev[1], (int)id, name,
                          (int64_t)ev[2]);
      break;
    case ER_UEV_SPAN_BEGIN:
    case ER_UEV_SPAN_END:
      if (len != 2) return MALFORMED;
      if (cb->user_span)
        go = cb->user_span(ps->data, domain, ev[1], (int)id, name,
                           ER_HDR_TYPE(h) == ER_UEV_SPAN_END);
      break;
    default: { /* ER_UEV_CUSTOM */
      if (len < 3) return MALFORMED;
      size_t words = len - 2;
      const unsigned char *bytes = (const unsigned char *)(ev + 2);
      unsigned pad = bytes[words * 8 - 1];
      if (pad > 7) return MALFORMED;
      size_t n = words * 8 - 1 - pad;
      if (cb->user_custom)
        go = cb->user_custom(ps->data, domain, ev[1], (int)id, name, bytes, n);
      break;
    }
    }
    break;
  }
  default: /* unknown message types */
    return MALFORMED;
  }
  if (!go) ps->stop = 1;
  return 0;
}

/* A head beyond the tail we loaded first is normal when the writer
 * lapped us since; beyond the tail loaded now it is a corrupt header,
 * but for one shape: a writer that drops padding it has no room for
 * (ring.c, evict()) publishes a head at the ring's start, less than
 * one event past its tail, for the instant before it writes the event
 * there -- look again a few times then.  Returns 0, EVENTRING_E_CORRUPT
 * or an error from get(). */
static int check_head_past_tail(const eventring_cursor *c, uint64_t hdr,
                                uint64_t head, uint64_t mask) {
  uint64_t tail;
  int e = get_acq(c, hdr + 8 * ER_RING_TAIL, &tail);
  if (e || tail >= head) return e;
  if ((head & mask) != 0 || head - tail >= ER_MAX_EVENT_WORDS)
    return EVENTRING_E_CORRUPT;
  for (int i = 0; i < 100; i++) {
    sched_yield();
    if ((e = get_acq(c, hdr + 8 * ER_RING_TAIL, &tail)) != 0) return e;
    if (tail >= head) return 0;
  }
  return EVENTRING_E_CORRUPT;
}

/* Loads head (and the events before it) and checks head against the
 * tail and against MAX_POSITION.  Returns 0, EVENTRING_E_CORRUPT or an
 * error from get(). */
static int checked_head(const eventring_cursor *c, uint64_t hdr,
                        struct ring_pos *rp, uint64_t tail, uint64_t *head,
                        uint64_t *evicted, uint64_t *tail_now) {
  int e = load_head(c, hdr, rp, head, evicted, tail_now);
  if (e) return e;
  if (*head > MAX_POSITION) return EVENTRING_E_CORRUPT;
  if (*head <= tail && tail - *head > c->ring_words) return EVENTRING_E_CORRUPT;
  if (*head > tail)
    return check_head_past_tail(c, hdr, *head, c->ring_words - 1);
  return 0;
}

/* Loads head and, when it passed *pos, reports what lies between lost
 * and moves *pos and *events to head; *skipped is the words moved over,
 * *tail_now as load_head() says.
 * What lies below head may have been overwritten while we copied it:
 * dropped, and counted exactly from the writer's pair -- a count checked
 * against WRITTEN, loaded after the pair, which the writer had raised
 * past every event before head when it published it.  Returns 0,
 * EVENTRING_E_CORRUPT or an error from get(). */
static int catch_up(struct poll_state *ps, int domain, uint64_t hdr,
                    uint64_t tail, uint64_t *pos, uint64_t *events,
                    uint64_t *skipped, uint64_t *tail_now) {
  const eventring_cursor *c = ps->c;
  uint64_t head, evicted;
  *skipped = 0;
  int err = checked_head(c, hdr, &c->rings[domain], tail, &head, &evicted,
                         tail_now);
  if (err || head <= *pos) return err;
  uint64_t written = 0;
  if (c->ours) {
    if ((err = get_acq(c, hdr + 8 * ER_RING_WRITTEN, &written)) != 0)
      return err;
    if (evicted < *events || evicted > written || written > MAX_COUNT)
      return EVENTRING_E_CORRUPT;
  }
  uint64_t gone = c->ours ? evicted - *events : head - *pos;
  if (!c->rings[domain].looked && ps->cb->window) {
    /* The first look: what was overwritten before it lies outside the
     * window, except what a compact file counts as lost while it was
     * copied (GAP_LOST, 0 in a live ring). */
    uint64_t in_copy = 0;
    if (c->ours &&
        (err = get_acq(c, hdr + 8 * ER_RING_GAP_LOST, &in_copy)) != 0)
      return err;
    if (in_copy > gone) return EVENTRING_E_CORRUPT;
    if (gone - in_copy &&
        !ps->cb->window(ps->data, domain, gone - in_copy))
      ps->stop = 1;
    gone = in_copy;
  }
  lost(ps, domain, gone);
  *skipped = head - *pos;
  *pos = head;
  *events = evicted;
  return 0;
}

/* Reads one domain's ring up to the tail it finds first, until the
 * poll's limit is reached or a callback stops it.  Returns 0,
 * EVENTRING_E_CORRUPT (the ring is broken from here), or an error from
 * get() (the file shrank: every ring is unreadable). */
static inline __attribute__((always_inline)) int
read_ring(struct poll_state *ps, int domain) {
  eventring_cursor *c = ps->c;
  struct ring_pos *rp = &c->rings[domain];
  const uint64_t hdr = c->headers_off + (uint64_t)domain * c->hdr_bytes;
  const uint64_t ring = c->data_off + (uint64_t)domain * c->ring_bytes;
  const uint64_t words = c->ring_words, mask = words - 1;
  /* The tail first: the writer moves head before the tail that follows
   * it, so the head loaded next is at least tail - ring size (or beyond
   * the tail, when the writer lapped us meanwhile).  Pairs with the
   * writer's release store of the tail: the words below it are written.
   * A poll reads up to this tail, so a writer faster than the reader
   * cannot keep it from returning. */
  uint64_t tail;
  int err = get_acq(c, hdr + 8 * ER_RING_TAIL, &tail);
  if (err) return err;
  uint64_t pos = rp->pos, events = rp->events, malformed = rp->malformed;
  if (tail == pos) {
    rp->looked = 1; /* empty so far: whatever is overwritten later is lost */
    return 0; /* nothing new: head cannot have passed it */
  }
  if (tail < pos || tail > MAX_POSITION) return EVENTRING_E_CORRUPT;
  if (!rp->looked) {
    /* Where the window begins: head as this cursor first finds it.  Every
     * later catch-up is a loss, the reader having fallen behind. */
    uint64_t skipped, ignored;
    err = catch_up(ps, domain, hdr, tail, &pos, &events, &skipped, &ignored);
    rp->looked = 1;
    if (err) return err;
  }
  size_t delivered = ps->delivered;
  const size_t max = ps->max ? ps->max : SIZE_MAX;
  /* TAIL loaded again with head after a copy (load_head()). */
  uint64_t tail_now = NO_TAIL;
  const int any_cb = ps->cb->runtime_begin || ps->cb->runtime_end ||
                     ps->cb->runtime_counter || ps->cb->user_unit ||
                     ps->cb->user_int || ps->cb->user_span;
  /* Set when a run stopped before an event that deliver() decodes. */
  int one_by_one = 0;

  while (pos < tail && delivered < max && !ps->stop) {
    /* Copy [pos, pos + n) out of the ring, in at most two runs, then
     * learn from head which of it the writer may have overwritten
     * meanwhile.  Head is looked at before the copy only when the tail
     * says the writer has lapped us already: the words at pos are gone,
     * and copying them would only pull the lines the writer is about to
     * write into (and, through pread(), cost more than the three system
     * calls of a look at head).  Otherwise a copy of words the writer
     * laps meanwhile is dropped by the check after it. */
    if (tail - pos > words) {
      uint64_t skipped;
      if ((err = catch_up(ps, domain, hdr, tail, &pos, &events, &skipped,
                          &tail_now)) != 0)
        break;
      continue;
    }
    uint64_t n = tail - pos;
    if (n > c->buf_words) n = c->buf_words;
    /* A poll limited to a few events copies about what they take (a few
     * words each, the longest event more), not a whole CHUNK each time:
     * through pread() the copy is most of a small poll's cost.  A copy
     * cut short is read on by the next, as one cut by CHUNK. */
    if (max != SIZE_MAX && max - delivered < c->buf_words / 8) {
      uint64_t want = (uint64_t)(max - delivered) * 4 + ER_MAX_EVENT_WORDS;
      if (n > want) n = want;
    }
    uint64_t at = pos & mask, first = words - at;
    if (first > n) first = n;
    /* Whether the copy ends at the tail rather than where CHUNK cut it:
     * decided from the position the copy starts at, before a lap found
     * below moves pos. */
    const int whole = pos + n == tail;
    /* A plain copy: whatever a concurrent writer does to these words is
     * caught by the check of head below. */
    if ((err = get(c, ring + 8 * at, c->buf, first * 8)) != 0) break;
    if (n > first && (err = get(c, ring, c->buf + first, (n - first) * 8)) != 0)
      break;
    AFTER_COPY(domain, pos, n);
    /* The copy's loads stay before the load of the pair; pairs with the
     * writer's release fence between publishing head and overwriting the
     * words it freed (ring.c, evict()). */
    er_fence_acquire();
    uint64_t off = 0;
    if ((err = catch_up(ps, domain, hdr, tail, &pos, &events, &off,
                        &tail_now)) != 0)
      break;
    /* TAIL has gone back: the first load came back torn (through pread()
     * only, see the opening comment), past the real tail.  Nothing of
     * this copy is delivered; the next poll loads TAIL again. */
    if (ER_UNLIKELY(tail_now < tail)) break;
    if (off >= n || ps->stop) continue;

    /* Decode the events of the copy.  The copy ends at the tail unless
     * CHUNK cut it (`whole`); when it wrapped, the ring's end lies at
     * `first` in it and no event may straddle that.  So the copy is
     * decoded as up to two segments, [off, first) and [first, n), each
     * with one bound: an event running past its segment's end straddles
     * the ring's end, runs past the tail, or continues in the next
     * copy. */
    const uint64_t *buf = c->buf;
    uint64_t seg_end = first < n && off < first ? first : n;
    for (;;) {
      while (off < seg_end) {
        /* A run of events of fixed length first (the two passes above),
         * when there is one; not when the event here is one the run
         * left to deliver(). */
        uint64_t count, any_user;
        /* With callbacks, checked and delivered in one pass, over at
         * most twice as many words as the poll may still deliver events
         * (an event of a run has 2 words or more); it stops where
         * deliver() takes over. */
        const int one_pass = any_cb && !one_by_one;
        if (one_pass) {
          int why = 0;
          uint64_t run_lim = seg_end;
          if ((max - delivered) < (seg_end - off) / 2)
            run_lim = off + 2 * (uint64_t)(max - delivered);
          const uint64_t *q =
              check_dispatch_run(c, ps->cb, ps->data, domain, buf + off,
                                 buf + run_lim, &count, &why);
          if (q != buf + off) {
            pos += (uint64_t)(q - buf) - off;
            off = (uint64_t)(q - buf);
            events += count;
            delivered += count;
            if (why == RUN_STOP) ps->stop = 1;
            if (delivered >= max || ps->stop) goto next_copy;
            if (off >= seg_end) continue;
          }
          /* The event at off is one for deliver(). */
        }
        uint64_t run_end = one_by_one || one_pass
                           ? off
                           : scan_run(c, buf, off, seg_end, max - delivered,
                                      &count, &any_user);
        if (run_end != off) {
          /* Without callbacks for them, the runtime events of a run need
           * no second pass; the names of user events always do. */
          if (any_cb || any_user) {
            int why = 0;
            const uint64_t *q = dispatch_run(ps->cb, c->user_names, ps->data,
                                             domain, buf + off,
                                             buf + run_end, &why);
            if (ER_UNLIKELY(why)) {
              if (why == RUN_STOP) ps->stop = 1;
              else one_by_one = 1;
              count = run_events(buf + off, q);
              run_end = (uint64_t)(q - buf);
            }
          }
          pos += run_end - off;
          off = run_end;
          events += count;
          delivered += count;
          if (delivered >= max || ps->stop) goto next_copy;
          continue;
        }
        one_by_one = 0;
        uint64_t h = buf[off];
        unsigned len = ER_HDR_LEN(h);
        if (ER_UNLIKELY(len == 0 || (h & HDR_ZERO_BITS) ||
                        off + len > seg_end)) {
          /* Past the copy's end, not the ring's: the next copy has it. */
          if (len != 0 && !(h & HDR_ZERO_BITS) && seg_end == n && !whole)
            goto next_copy;
          /* Past a tail the writer has since moved beyond: a first load
           * of TAIL that came back torn, short of the real tail, is the
           * one way a writer's file gets here.  The next poll loads TAIL
           * again and reads the event whole. */
          if (len != 0 && !(h & HDR_ZERO_BITS) && seg_end == n &&
              tail_now != NO_TAIL && tail_now > tail)
            goto out;
          /* Not a header, or an event running past its segment: where
           * the next event starts is unknown from here on. */
          err = EVENTRING_E_CORRUPT;
          goto out;
        }
        int r = deliver(ps, domain, buf + off, len);
        if (ER_UNLIKELY(r < 0)) {
          err = r;
          goto out;
        }
        off += len;
        pos += len;
        if (ER_LIKELY(r == 0)) {
          events++;
          if (ER_UNLIKELY(++delivered >= max || ps->stop)) goto next_copy;
        } else if (r == MALFORMED) {
          /* Its length was sane, so the next event starts after it: the
           * writer counted it as an event, and so do we. */
          events++;
          malformed++;
        }
      }
      if (seg_end == n) break;
      seg_end = n; /* the second segment, from the ring's start */
    }
  next_copy:;
  }
out:
  rp->pos = pos;
  rp->events = events;
  /* Atomic: eventring_cursor_malformed() may read it from another
   * thread while we poll. */
  er_store_rlx(&rp->malformed, malformed);
  ps->delivered = delivered;
  return err;
}

/* Whether the file still begins as it did when the cursor opened: the
 * metadata words and, in eventring's files, the extension block's magic
 * and writer pid.  A file cut and grown again between two polls (zeros,
 * or a new writer's file of another layout or pid) no longer does: what
 * the cursor was reading is gone, which is a truncation, not a malformed
 * ring.  Returns 0, EVENTRING_E_TRUNCATED, or an error from get(). */
static int header_still(const eventring_cursor *c) {
  uint64_t m[ER_META_WORDS];
  int e = get(c, 0, m, sizeof m);
  if (e) return e;
  if (m[ER_META_VERSION] != ER_FORMAT_VERSION ||
      m[ER_META_MAX_DOMAINS] != c->max_domains ||
      m[ER_META_RING_HEADER_SIZE] != c->hdr_bytes ||
      m[ER_META_RING_SIZE_BYTES] != c->ring_bytes ||
      m[ER_META_RING_SIZE_ELEMENTS] != c->ring_words ||
      m[ER_META_HEADERS_OFFSET] != c->headers_off ||
      m[ER_META_DATA_OFFSET] != c->data_off ||
      m[ER_META_CUSTOM_EVENTS_OFFSET] != c->custom_off)
    return EVENTRING_E_TRUNCATED;
  if (!c->ours) return 0;
  uint64_t x[ER_EXT_PID + 1];
  if ((e = get(c, ER_META_WORDS * 8, x, sizeof x)) != 0) return e;
  pid_t pid = x[ER_EXT_PID] <= INT_MAX ? (pid_t)x[ER_EXT_PID] : 0;
  return x[ER_EXT_MAGIC_W] != ER_EXT_MAGIC || pid != c->writer_pid
             ? EVENTRING_E_TRUNCATED
             : 0;
}

int eventring_cursor_poll(eventring_cursor *c, const eventring_callbacks *cb,
                          void *data, size_t max_events) {
  if (!c || !cb) return EVENTRING_E_INVAL;
  if (!er_cas(&c->busy, 0, 1)) return EVENTRING_E_BUSY;
  int r = 0;
  struct stat st;
  /* A file cut shorter than when the cursor opened is reported before
   * anything is read: through pread() a read past the end would say so
   * too, but only for the parts a poll happens to read. */
  if (via_of(c) == VIA_MAP && !er_sigbus_reaches_us())
    /* A fault in the view would no longer reach sigbus.c: the host has
     * put its own SIGBUS handler in place of ours since, or this thread
     * blocks SIGBUS.  This cursor reads with pread(2) from now on (the
     * view stays registered until the cursor is freed, so that a cut
     * seen through it is still reported below).  Checked once per poll:
     * a handler replaced by another thread during a poll is not seen
     * until the next. */
    er_istore_rlx(&c->via, VIA_PREAD);
  if (c->kept) {
    r = 0; /* released: the file was read to its end */
  } else if (view_cut(c) || (via_of(c) != VIA_IMAGE && (fstat(c->fd, &st) < 0 ||
                                               (uint64_t)st.st_size <
                                                   c->map_bytes))) {
    r = EVENTRING_E_TRUNCATED;
  } else if (via_of(c) != VIA_IMAGE && (r = header_still(c)) != 0) {
    /* Cut and grown again since the last poll (or cut now). */
  } else {
    (void)ER_HOOK(ER_HOOK_POLL_SIZED);
    /* Too little evidence so far: look at what is new before naming it. */
    if (c->infer && !c->forced && c->basis == EVENTRING_NUMBERING_GUESSED)
      er_cursor_infer_numbering(c);
    struct poll_state ps = {c, cb, data, max_events, 0, 0};
    for (uint64_t d = 0; d < c->max_domains && !ps.stop; d++) {
      if (c->rings[d].broken) continue;
      int e = read_ring(&ps, (int)d);
      if (e == EVENTRING_E_CORRUPT) {
        c->rings[d].broken = 1;
        r = e;
      } else if (e < 0) {
        /* The file shrank under us (or cannot be read): no ring of it
         * can be read now, and the next poll's fstat() says so. */
        r = e;
        break;
      }
      if (ps.max && ps.delivered >= ps.max) break;
    }
    /* A corrupt ring is reported even when others delivered events (the
     * callbacks have seen those). */
    if (r == 0) r = ps.delivered > INT_MAX ? INT_MAX : (int)ps.delivered;
  }
  er_store_rel(&c->busy, 0);
  return r;
}
