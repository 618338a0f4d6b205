/* evict.c -- the writer's out-of-line path: room for an event that does
 * not fit before the ring's end or its head (writer.h calls it).
 *
 * Overwrite policy: a flight recorder.  Each domain's ring has exactly one
 * writer, the thread holding the slot.  When a new event does not fit, the
 * writer advances ring_head past the oldest whole events, in batches: the
 * ring is cut into ER_CHUNKS (32) chunks, the first event or padding to
 * start in each chunk is a mark, whose position and count of events before
 * it the writer keeps (internal.h), and head goes to the first mark at or
 * after where the event needs it, so a ring that keeps wrapping moves head
 * once per chunk, without reading a word of the ring.  The ring so holds
 * up to a chunk (1/32 of it) and one event less history than it could.  The writer
 * publishes the new head, and only then overwrites the words; a reader
 * that copied an event and then finds ring_head beyond it knows the copy
 * may be torn.  The owner keeps its own copies of head, tail and the
 * counts, so the write path never loads a shared word.
 *
 * Stores into the ring are relaxed atomics: on x86-64 and AArch64 they are
 * the plain stores a memcpy would do, and they let concurrent readers in
 * the same process read without a data race.  The inline write path is in
 * writer.h; when the mapping may be unmapped is stw.h's to say.
 */
#include "writer.h"

/* Marks (internal.h, ER_CHUNKS): the event or padding about to be
 * written at `pos` is one when it is the first to start in a chunk. */
static void take_mark(struct er_domain *d, uint64_t pos) {
  if (pos < d->mark_at) return;
  if (d->mk_n == ER_MARKS) {
    /* Cannot happen (see ER_MARKS); were it to, losing the oldest mark
     * only makes a later eviction free more. */
    d->mk_first = (d->mk_first + 1) % ER_MARKS;
    d->mk_n--;
  }
  struct er_mark *m = &d->marks[(d->mk_first + d->mk_n) % ER_MARKS];
  m->pos = pos;
  m->count = d->written;
  d->mk_n++;
  d->mark_at = (pos | d->chunk_mask) + 1;
}

/* Advances head so that the words up to `end` fit in the ring, to the
 * first mark at or after end - size, or, when there is none, past
 * everything written; `pad` words of padding precede the new event.
 * Returns 1 when the padding itself had to be given up (the padding and
 * the event together are longer than the ring), in which case the caller
 * does not write it. */
static int evict(struct er_domain *d, uint64_t end, uint64_t pad) {
  uint64_t size = d->mask + 1, need = end - size;
  uint64_t head, evicted;
  int skip_pad = 0;
  while (d->mk_n && d->marks[d->mk_first].pos < need) {
    d->mk_first = (d->mk_first + 1) % ER_MARKS;
    d->mk_n--;
  }
  if (d->mk_n) {
    /* Popped too: head never comes back to it. */
    const struct er_mark *m = &d->marks[d->mk_first];
    head = m->pos;
    evicted = m->count;
    d->mk_first = (d->mk_first + 1) % ER_MARKS;
    d->mk_n--;
  } else {
    /* Everything written is gone.  If the padding still does not fit,
     * start the ring again after where the padding would have been. */
    head = d->tail;
    evicted = d->written;
    if (end - head > size) {
      head += pad;
      skip_pad = 1;
    }
  }
  d->head = head;
  d->evicted = evicted;
  /* Publish head and evicted as a pair in the next slot, then its number,
   * then head itself for OCaml's readers (see ring_format.h).  Each store
   * is a release: a reader that sees a slot rewritten also sees the PSEQ
   * stored before it, and so knows the slot is no longer the one it
   * asked for. */
  uint64_t k = ++d->seq;
  uint64_t *pair = &d->hdr[ER_RING_PAIRS + 2 * (k % ER_RING_NPAIRS)];
  er_store_rel(&pair[0], head);
  er_store_rel(&pair[1], evicted);
  er_store_rel(&d->hdr[ER_RING_PSEQ], k);
  (void)ER_HOOK(ER_HOOK_PAIR_PUBLISHED);
  er_store_rel(&d->hdr[ER_RING_HEAD], head);
  /* The new head must be visible before any of the words it frees is
   * overwritten: a reader checks head after copying an event to detect a
   * torn copy.  Pairs with the reader's acquire fence between its copy
   * and its second load of the pair.  On x86-64 this emits no instruction
   * (stores are not reordered with stores). */
  er_fence_release();
  return skip_pad;
}

uint64_t *er_make_room(struct er_domain *d, unsigned len) {
  uint64_t size = d->mask + 1, tail = d->tail;
  uint64_t idx = tail & d->mask;
  uint64_t pad = idx + len > size ? size - idx : 0;
  uint64_t end = tail + pad + len;
  int skip_pad = 0;
  if (end - d->head > size) skip_pad = evict(d, end, pad);
  if (pad) {
    if (!skip_pad) {
      take_mark(d, tail);
      er_store_rlx(&d->ring[idx], ER_HDR(pad, 0, 0, 0));
    }
    tail += pad;
    d->tail = tail;
    idx = 0;
  }
  take_mark(d, tail);
  uint64_t room = d->head + size;
  d->limit = d->mark_at < room ? d->mark_at : room;
  return &d->ring[idx];
}
