/* drops.h -- counting the events a writer gives up.
 *
 * An event that cannot be written is counted in one word of the ring
 * file (doc/GUARANTEES.md, the table of what is lost): the DROPPED word
 * of the writer's ring header (an event longer than the ring, an id or a
 * type the file cannot hold, a signal handler's probe nested in a probe
 * of its own thread), or the extension block's (a thread without a slot,
 * a domain without a ring, a control event with no ring to hold it).
 *
 * Every count is er_drop_n() (er_drop() for one): one atomic
 * read-modify-write.  A ring's word
 * is shared by its owner and the signal handlers that interrupt it (a
 * nested probe counts there while the probe it interrupted may be
 * counting too), and the extension block's by every thread: a load and
 * a store would lose the count of whoever ran between them.  Relaxed: a
 * count orders nothing; a reader takes it as it finds it.  Drops are off
 * the probes' fast path, so the locked instruction costs them nothing.
 */
#ifndef EVENTRING_DROPS_H
#define EVENTRING_DROPS_H

#include "internal.h"

/* Counts `n` dropped events in `word`: a DROPPED word in a mapping the
 * caller knows stays while it counts (inside a probe that saw the world
 * open, or one that stays for good: stw.h), or a count that a caller
 * moves into one later (fork.c). */
static inline void er_drop_n(uint64_t *word, uint64_t n) {
  if (!n) return;
  (void)ER_HOOK(ER_HOOK_DROP);
  er_fetch_add(word, n);
}

/* Counts one dropped event in `word`, as er_drop_n() says. */
static inline void er_drop(uint64_t *word) { er_drop_n(word, 1); }

#endif /* EVENTRING_DROPS_H */
