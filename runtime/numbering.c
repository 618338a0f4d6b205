/* numbering.c -- inferring the phase numbering of an OCaml 5 ring file.
 *
 * OCaml 5.3 inserted phases in the middle of the phase enum without
 * changing the format's version (doc/FORMAT.md), so a file written by an
 * OCaml 5 runtime does not say which of two numberings its phase ids use.
 * Relabelling ids does not change whether begins and ends pair up, so the
 * bracket structure alone cannot tell; what can is what the runtime allows
 * to nest in what.  We replay every domain's begin/end sequence under both
 * numberings and count, for each, the events it makes impossible:
 *
 *   1. A phase id outside the numbering: OCaml 5.0-5.2 have no phase
 *      beyond 43 (compaction_release), and no counter beyond 16
 *      (major_heap_large_blocks; counters are append-only and 5.3 added
 *      17-25).  5.3+ is taken as open-ended: a later OCaml may add ids.
 *   2. A stop-the-world section inside another, or inside a minor
 *      collection.  stw_leader brackets the domain that runs a
 *      stop-the-world section and stw_handler each domain that takes part
 *      in one; a domain takes part in one at a time, and a minor
 *      collection runs inside one.
 *   3. A minor collection or one of its steps (minor, minor_local_roots,
 *      minor_clear, minor_leave_barrier, ...) outside a stop-the-world
 *      section: OCaml 5 collects the minor heaps only with every domain
 *      stopped, so these always nest inside stw_leader or stw_handler.
 *      This needs the whole stack of open phases, which we know only from
 *      a point where it is empty: ring_start and domain_spawn (written
 *      before the domain runs any code) and ring_stop (written at exit,
 *      outside any phase; the stop-the-world section that tears tracing
 *      down begins after it, which makes the last event of a file whose
 *      program exited evidence by itself).  Before such a point, and
 *      after events were lost, the nesting below what we saw is unknown
 *      and rule 3 is not applied.
 *
 * The two numberings disagree exactly where these rules look: 5.0-5.2's
 * stw_handler and stw_leader (31, 32) are 5.3's minor_global_roots and
 * minor_leave_barrier, and 5.3's (34, 35) are 5.0's minor_finalizers_admin
 * and minor_remembered_set.  So the first stop-the-world section a domain
 * enters from a known-empty stack, read with the wrong numbering, is a
 * minor step outside any: one minor collection decides.  Both real 5.2
 * and 5.4 test vectors break the wrong numbering hundreds of times and
 * the right one never.
 *
 * A numbering with no impossible event while the other has some is the
 * verdict (INFERRED).  No evidence against either (a file with only
 * counters, or phases that nest the same way under both) leaves the
 * default, 5.3+, as a guess; evidence against both (a corrupt file, or a
 * runtime that breaks these rules) picks the numbering with less, also
 * unsure.  The verdict never needs the events to be read in order across
 * domains: each domain is replayed on its own.
 *
 * The rings are read the way the consumer reads them (consumer_poll.c): tail
 * first, a copy, then head again; what the writer may have overwritten
 * while we copied is dropped and the nesting after it taken as unknown.
 */
#include <stdlib.h>
#include <string.h>

#include "numbering.h"

/* Words copied out of a ring at a time: more than the longest event (1023
 * words), so that an event at the start of a copy always fits in it. */
#define COPY_WORDS 2048
/* Open phases remembered per domain; OCaml nests seven deep at most.
 * Deeper begins are counted, not kept. */
#define STACK_MAX 32
/* Ids 0..CLASS_IDS-1 are classified; every OCaml phase id is below. */
#define CLASS_IDS 64
/* The first counter id OCaml 5.0-5.2 never write (major_heap_words). */
#define FIRST_COUNTER_53 EVENTRING_COUNTER_MAJOR_HEAP_WORDS

enum { H50, H53, NHYP };
enum { OTHER = 0, STW, MINOR, OUTSIDE };

/* Phases by name, so that the classes follow names.c's tables. */
static const char *const stw_names[] = {"stw_leader", "stw_handler"};
static const char *const minor_names[] = {
    "minor",
    "minor_local_roots",
    "minor_memprof_roots",
    "minor_memprof_clean",
    "minor_finalized",
    "minor_clear",
    "minor_finalizers_oldify",
    "minor_global_roots",
    "minor_leave_barrier",
    "minor_finalizers_admin",
    "minor_remembered_set",
    "minor_remembered_set_promote",
    "minor_local_roots_promote",
};

struct domain {
  uint64_t pos;    /* the next ring position to read */
  int known;       /* the stack holds every open phase */
  int broken;      /* the ring made no sense: not read again */
  unsigned depth;  /* entries in stack */
  uint64_t deeper; /* open begins beyond STACK_MAX */
  uint16_t stack[STACK_MAX];
};

struct er_numbering {
  uint64_t max_domains;
  struct domain **domains; /* allocated when a ring first has events */
  uint64_t against[NHYP];  /* impossible events under each numbering */
  /* Under each numbering, the oldest release that writes every id seen
   * (EVENTRING_OCAML_LATER past them all), and the id that shows it
   * (kind 0: none beyond the numbering's first release). */
  struct { int release, kind; unsigned id; } floor[NHYP];
  unsigned char cls[NHYP][CLASS_IDS];
  uint64_t copy[COPY_WORDS];
};

static int named(const char *name, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(name, list[i]) == 0) return 1;
  return 0;
}

static void classify(unsigned char *cls, const char *const *names,
                     unsigned n, int open_ended) {
  for (unsigned id = 0; id < CLASS_IDS; id++) {
    if (id >= n) {
      cls[id] = open_ended ? OTHER : OUTSIDE;
      continue;
    }
    const char *name = names[id];
    cls[id] = named(name, stw_names, sizeof stw_names / sizeof *stw_names)
                  ? STW
              : named(name, minor_names,
                      sizeof minor_names / sizeof *minor_names)
                  ? MINOR
                  : OTHER;
  }
}

struct er_numbering *er_numbering_new(uint64_t max_domains) {
  struct er_numbering *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  n->max_domains = max_domains;
  n->domains = calloc((size_t)max_domains, sizeof *n->domains);
  if (!n->domains) {
    free(n);
    return NULL;
  }
  classify(n->cls[H50], eventring__phase_names_50, eventring__n_phases_50, 0);
  classify(n->cls[H53], eventring__ocaml_phase_names,
           eventring__n_ocaml_phases, 1);
  n->floor[H50].release = 50;
  n->floor[H53].release = 53;
  return n;
}

void er_numbering_free(struct er_numbering *n) {
  if (!n) return;
  for (uint64_t d = 0; d < n->max_domains; d++) free(n->domains[d]);
  free(n->domains);
  free(n);
}

static int class_of(const struct er_numbering *n, int h, unsigned id) {
  if (id < CLASS_IDS) return n->cls[h][id];
  return h == H50 ? OUTSIDE : OTHER;
}

/* The stack of open phases is known to be empty from here on. */
static void anchor(struct domain *dm) {
  dm->depth = 0;
  dm->deeper = 0;
  dm->known = 1;
}

/* Events may be missing before here: what is open below is unknown. */
static void unanchor(struct domain *dm) {
  dm->depth = 0;
  dm->deeper = 0;
  dm->known = 0;
}

static void begin(struct er_numbering *n, struct domain *dm, unsigned id) {
  for (int h = 0; h < NHYP; h++) {
    int cls = class_of(n, h, id);
    if (cls == OUTSIDE) {
      n->against[h]++;
    } else if (cls == STW) {
      for (unsigned i = 0; i < dm->depth; i++) {
        int outer = class_of(n, h, dm->stack[i]);
        if (outer == STW || outer == MINOR) {
          n->against[h]++;
          break;
        }
      }
    } else if (cls == MINOR && dm->known && dm->deeper == 0) {
      unsigned i = 0;
      while (i < dm->depth && class_of(n, h, dm->stack[i]) != STW) i++;
      if (i == dm->depth) n->against[h]++;
    }
  }
  if (dm->depth < STACK_MAX && dm->deeper == 0)
    dm->stack[dm->depth++] = (uint16_t)id;
  else
    dm->deeper++;
}

/* Closes the innermost open phase `id` and whatever is open inside it.
 * An end with no begin closes a phase opened before what we saw (or is
 * corrupt, which tells neither numbering from the other): nothing to do. */
static void end(struct domain *dm, unsigned id) {
  if (dm->deeper) {
    dm->deeper--;
    return;
  }
  unsigned i = dm->depth;
  while (i > 0 && dm->stack[i - 1] != id) i--;
  if (i > 0) dm->depth = i - 1;
}

/* Raises each numbering's release floor to the oldest release of it that
 * writes phase or counter `id`: past every list of 5.3+, a later OCaml;
 * past 5.0-5.2's, nothing (rule 1 counts that against it). */
static void date(struct er_numbering *n, int kind, unsigned id) {
  static const int numbering[NHYP] = {ER_PHASES_OCAML50, ER_PHASES_OCAML53};
  for (int h = 0; h < NHYP; h++) {
    int rel = h == H53 ? EVENTRING_OCAML_LATER : 0;
    for (unsigned i = 0; i < eventring__n_ocaml_releases; i++) {
      const struct er_ocaml_release *r = &eventring__ocaml_releases[i];
      if (r->numbering != numbering[h]) continue;
      if (id < (kind == EVENTRING_ID_PHASE ? r->phases : r->counters)) {
        rel = r->release;
        break;
      }
    }
    if (rel > n->floor[h].release) {
      n->floor[h].release = rel;
      n->floor[h].kind = kind;
      n->floor[h].id = id;
    }
  }
}

static void weigh(struct er_numbering *n, struct domain *dm, uint64_t hdr) {
  if (ER_HDR_IS_USER(hdr)) return;
  unsigned id = ER_HDR_ID(hdr);
  switch (ER_HDR_TYPE(hdr)) {
  case ER_EV_COUNTER:
  case ER_EV_BEGIN:
  case ER_EV_END:
    date(n, ER_HDR_TYPE(hdr) == ER_EV_COUNTER ? EVENTRING_ID_COUNTER
                                               : EVENTRING_ID_PHASE,
         id);
    break;
  default: break;
  }
  switch (ER_HDR_TYPE(hdr)) {
  case ER_EV_LIFECYCLE:
    if (id == EVENTRING_LIFECYCLE_RING_START ||
        id == EVENTRING_LIFECYCLE_RING_STOP ||
        id == EVENTRING_LIFECYCLE_DOMAIN_SPAWN)
      anchor(dm);
    break;
  case ER_EV_COUNTER:
    if (id >= FIRST_COUNTER_53) n->against[H50]++;
    break;
  case ER_EV_BEGIN: begin(n, dm, id); break;
  case ER_EV_END: end(dm, id); break;
  default: break;
  }
}

/* Reads one ring from where the last scan left it up to the tail. */
static void scan_ring(struct er_numbering *n, const struct er_rings *r,
                      uint64_t d) {
  const uint64_t hdr = r->headers_off + d * r->hdr_bytes;
  const uint64_t ring = r->data_off + d * r->ring_bytes;
  const uint64_t words = r->ring_words, mask = words - 1;
  /* The tail first, with acquire order (pairs with the writer's release
   * store of it): the words below it are written.  A file that can no
   * longer be read is left alone: the consumer reports it. */
  uint64_t tail;
  if (r->read(r->ctx, hdr + 8 * ER_RING_TAIL, &tail, 8) != 0) return;
  struct domain *dm = n->domains[d];
  if (!dm) {
    if (tail == 0) return;
    if (!(dm = n->domains[d] = calloc(1, sizeof *dm))) return;
  }
  if (dm->broken || tail == dm->pos) return;
  if (tail < dm->pos) {
    dm->broken = 1;
    return;
  }
  uint64_t pos = dm->pos;
  while (pos < tail) {
    uint64_t head;
    if (r->read(r->ctx, hdr + 8 * ER_RING_HEAD, &head, 8) != 0) break;
    /* A head past the tail we loaded is a writer that lapped us since:
     * the next scan sees the new tail. */
    if (head > tail) break;
    if (tail - head > words) {
      dm->broken = 1;
      break;
    }
    if (head > pos) {
      unanchor(dm);
      pos = head;
      continue;
    }
    /* One run of words, up to the ring's end, the tail or a copy's
     * worth: no event straddles the ring's end. */
    uint64_t at = pos & mask, run = tail - pos;
    if (run > words - at) run = words - at;
    if (run > COPY_WORDS) run = COPY_WORDS;
    if (r->read(r->ctx, ring + 8 * at, n->copy, run * 8) != 0) break;
    /* The copy's loads stay before the reload of head; pairs with the
     * writer's ordering of publishing head before overwriting the words
     * it frees (FORMAT.md's writer protocol). */
    er_fence_acquire();
    uint64_t head2;
    if (r->read(r->ctx, hdr + 8 * ER_RING_HEAD, &head2, 8) != 0) break;
    uint64_t off = 0;
    if (head2 > pos) {
      /* What lies below head2 may be torn: skip it. */
      unanchor(dm);
      if (head2 - pos >= run) {
        pos = head2;
        continue;
      }
      off = head2 - pos;
    }
    while (off < run) {
      unsigned len = ER_HDR_LEN(n->copy[off]);
      if (len == 0) {
        dm->broken = 1;
        goto out;
      }
      if (off + len > run) {
        /* Cut by the copy's size: the next copy starts at this event.
         * Cut by the ring's end or the tail: corrupt. */
        if (run == COPY_WORDS && off > 0) break;
        dm->broken = 1;
        goto out;
      }
      weigh(n, dm, n->copy[off]);
      off += len;
    }
    pos += off;
  }
out:
  dm->pos = pos;
}

void er_numbering_scan(struct er_numbering *n, const struct er_rings *r) {
  for (uint64_t d = 0; d < r->max_domains && d < n->max_domains; d++)
    scan_ring(n, r, d);
}

int er_numbering_verdict(const struct er_numbering *n, int *basis) {
  uint64_t a50 = n->against[H50], a53 = n->against[H53];
  if (a50 == 0 && a53 == 0) {
    *basis = EVENTRING_NUMBERING_GUESSED;
    return ER_PHASES_OCAML53;
  }
  if (a50 == 0 || a53 == 0) {
    *basis = EVENTRING_NUMBERING_INFERRED;
    return a50 == 0 ? ER_PHASES_OCAML50 : ER_PHASES_OCAML53;
  }
  *basis = EVENTRING_NUMBERING_CONFLICTING;
  return a50 < a53 ? ER_PHASES_OCAML50 : ER_PHASES_OCAML53;
}

int er_numbering_release(const struct er_numbering *n, int numbering,
                         int *kind, int *id) {
  int h = numbering == ER_PHASES_OCAML50 ? H50 : H53;
  if (kind) *kind = n->floor[h].kind;
  if (id) *id = (int)n->floor[h].id;
  return n->floor[h].release;
}
