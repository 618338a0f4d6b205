/* consumer_info.c -- the callbacks table, and what a cursor tells
 * besides events: names, numbering, drops, the program, the wall clock,
 * the threads; and releasing a cursor read to its end.
 *
 * Released cursors.  A tool reading more finished files than it may hold
 * descriptors releases each once read to its end
 * (eventring__cursor_release()): what the accessors would still read
 * from the file is copied into a struct kept, the view, mapping and
 * descriptor go, and from then on every accessor answers from the copy.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cursor.h"
#include "numbering.h"

/* ------------------------------------------------------------------ */
/* Callbacks.                                                           */

eventring_callbacks *eventring_callbacks_create(void) {
  return calloc(1, sizeof(eventring_callbacks));
}

void eventring_callbacks_free(eventring_callbacks *cb) { free(cb); }

#define SETTER(field, type)                                            \
  void eventring_callbacks_set_##field(eventring_callbacks *cb, type f) { \
    if (cb) cb->field = f;                                             \
  }
SETTER(runtime_begin, eventring_phase_fn)
SETTER(runtime_end, eventring_phase_fn)
SETTER(runtime_counter, eventring_counter_fn)
SETTER(alloc, eventring_alloc_fn)
SETTER(lifecycle, eventring_lifecycle_fn)
SETTER(user_unit, eventring_user_unit_fn)
SETTER(user_int, eventring_user_int_fn)
SETTER(user_span, eventring_user_span_fn)
SETTER(user_custom, eventring_user_custom_fn)
SETTER(lost_events, eventring_lost_fn)
SETTER(thread, eventring_thread_fn)
SETTER(window, eventring_window_fn)

/* ------------------------------------------------------------------ */
/* Numbering and names.                                                 */

int eventring_cursor_set_numbering(eventring_cursor *c, int numbering) {
  if (!c || (numbering != EVENTRING_NUMBERING_AUTO &&
             numbering != EVENTRING_NUMBERING_OCAML50 &&
             numbering != EVENTRING_NUMBERING_OCAML53))
    return EVENTRING_E_INVAL;
  /* The public values are the extension block's (ER_PHASES_*). */
  c->forced = numbering;
  return 0;
}

int eventring_cursor_set_ocaml50(eventring_cursor *c, int yes) {
  return eventring_cursor_set_numbering(
      c, yes ? EVENTRING_NUMBERING_OCAML50 : EVENTRING_NUMBERING_AUTO);
}

int eventring_cursor_numbering(const eventring_cursor *c, int *basis) {
  if (!c) return EVENTRING_E_INVAL;
  int forced = c->forced && !c->ours;
  if (basis) *basis = forced ? EVENTRING_NUMBERING_FORCED : c->basis;
  return forced ? c->forced : c->numbering;
}

int eventring_cursor_lost_unit(const eventring_cursor *c) {
  return c && c->ours ? EVENTRING_LOST_EVENTS : EVENTRING_LOST_WORDS;
}

pid_t eventring_cursor_writer_pid(const eventring_cursor *c) {
  return c ? c->writer_pid : 0;
}

int eventring_cursor_max_domains(const eventring_cursor *c) {
  return c ? (int)c->max_domains : 0;
}

const char *eventring_cursor_phase_name(const eventring_cursor *c,
                                        int phase) {
  if (!c || phase < 0) return NULL;
  if (c->ours)
    return (unsigned)phase < c->n_phases
               ? c->ext_names + (size_t)phase * c->name_bytes
               : NULL;
  if (eventring_cursor_numbering(c, NULL) == ER_PHASES_OCAML50)
    return (unsigned)phase < eventring__n_phases_50
               ? eventring__phase_names_50[phase]
               : NULL;
  return (unsigned)phase < eventring__n_ocaml_phases
             ? eventring__ocaml_phase_names[phase]
             : NULL;
}

const char *eventring_cursor_counter_name(const eventring_cursor *c,
                                          int counter) {
  if (!c || counter < 0) return NULL;
  if (c->ours)
    return (unsigned)counter < c->n_counters
               ? c->ext_names +
                     (size_t)(c->n_phases + (unsigned)counter) * c->name_bytes
               : NULL;
  return (unsigned)counter < eventring__n_ocaml_counters
             ? eventring__ocaml_counter_names[counter]
             : NULL;
}

int eventring_cursor_ocaml_release(const eventring_cursor *c, int *kind,
                                   int *id) {
  if (!c) return EVENTRING_E_INVAL;
  if (kind) *kind = 0;
  if (id) *id = 0;
  if (c->ours || !c->infer) return 0;
  return er_numbering_release(c->infer, eventring_cursor_numbering(c, NULL),
                              kind, id);
}

const char *eventring_cursor_user_name(const eventring_cursor *c, int id) {
  if (!c || id < 0 || id >= ER_NAME_SLOTS) return NULL;
  const char *name;
  return er_cursor_user_name((eventring_cursor *)c, (unsigned)id, &name)
             ? NULL
             : name;
}

/* ------------------------------------------------------------------ */
/* What the writer could not record, and what the cursor skipped.       */

int eventring_cursor_dropped(const eventring_cursor *c, int domain,
                             uint64_t *count) {
  if (!c || !count || domain < -1 ||
      (domain >= 0 && (uint64_t)domain >= c->max_domains))
    return EVENTRING_E_INVAL;
  *count = 0;
  /* OCaml 5's files do not count what they drop. */
  if (!c->ours) return 0;
  if (c->kept) {
    *count = c->kept->dropped[domain + 1].n;
    return c->kept->dropped[domain + 1].err;
  }
  uint64_t off = domain < 0
                     ? ER_META_WORDS * 8 + 8 * ER_EXT_DROPPED
                     : c->headers_off + (uint64_t)domain * c->hdr_bytes +
                           8 * ER_RING_DROPPED;
  uint64_t n;
  int e = get_acq(c, off, &n);
  if (e) return e;
  if (n > MAX_COUNT) return EVENTRING_E_CORRUPT;
  *count = n;
  return 0;
}

int eventring_cursor_malformed(const eventring_cursor *c, int domain,
                               uint64_t *count) {
  if (!c || !count || domain < -1 ||
      (domain >= 0 && (uint64_t)domain >= c->max_domains))
    return EVENTRING_E_INVAL;
  *count = domain < 0 ? 0 : er_load_rlx(&c->rings[domain].malformed);
  return 0;
}

/* ------------------------------------------------------------------ */
/* The program name of eventring's files (ER_EXT_FLAG_PROGRAM).         */

const char *eventring_cursor_program(const eventring_cursor *c) {
  /* Copied when the cursor opened (read_program()). */
  return c ? c->program : NULL;
}

/* ------------------------------------------------------------------ */
/* The wall clock of eventring's files (ER_EXT_FLAG_WALLCLOCK).         */

int eventring_cursor_wallclock(const eventring_cursor *c, int which,
                               eventring_wallclock *out) {
  if (!c || !out || (which != EVENTRING_WALLCLOCK_START &&
                     which != EVENTRING_WALLCLOCK_LATEST))
    return EVENTRING_E_INVAL;
  if (!c->wall_off) return EVENTRING_E_NOWALLCLOCK;
  if (c->kept) {
    *out = c->kept->wall[which];
    return c->kept->wall_err[which];
  }
  uint64_t w[2];
  int e;
  if (which == EVENTRING_WALLCLOCK_START) {
    /* Written before the file was published, never changed. */
    e = get(c, c->wall_off + 8 * ER_WALL_START_TS, w, sizeof w);
  } else {
    /* The writer publishes slot g & 1, then g (wallclock.c): a copy of
     * the slot between two loads of the same g is one pair.  It
     * publishes every 0.1 s at most, so a few tries always do. */
    for (int tries = 0;; tries++) {
      uint64_t g1, g2;
      if ((e = get_acq(c, c->wall_off + 8 * ER_WALL_GEN, &g1)) != 0) break;
      if (g1 == 0) return EVENTRING_E_CORRUPT;
      if ((e = get(c, c->wall_off + 8 * (ER_WALL_SLOTS + 2 * (g1 & 1)), w,
                   sizeof w)) != 0)
        break;
      /* Orders the copy before the second load; pairs with the writer's
       * release fence before it rewrites a slot. */
      er_fence_acquire();
      if ((e = get(c, c->wall_off + 8 * ER_WALL_GEN, &g2, 8)) != 0) break;
      if (g1 == g2) break;
      if (tries == 100) return EVENTRING_E_BUSY;
    }
  }
  if (e) return e;
  out->ts = w[0];
  out->wall = (int64_t)w[1];
  return 0;
}

/* ------------------------------------------------------------------ */
/* Threads and the command line (ER_EXT_FLAG_THREADS).                 */

const char *eventring_cursor_cmdline(const eventring_cursor *c) {
  /* Copied when the cursor opened (read_threads_part()). */
  return c ? c->cmdline : NULL;
}

/* ------------------------------------------------------------------ */
/* The writer's metadata (ER_EXT_FLAG_META).                            */

const char *eventring_cursor_ocaml_version(const eventring_cursor *c) {
  /* Copied when the cursor opened (read_meta()). */
  return c ? c->ocaml_version : NULL;
}

int eventring_cursor_label(const eventring_cursor *c, int i,
                           const char **name, const char **value) {
  if (!c || i < 0 || !name || !value) return EVENTRING_E_INVAL;
  if ((unsigned)i >= c->n_labels) return 0;
  const char *p = c->labels;
  for (int k = 0; k < 2 * i; k++) p += strlen(p) + 1;
  *name = p;
  *value = p + strlen(p) + 1;
  return 1;
}

int eventring_cursor_slot_thread(const eventring_cursor *c, int domain,
                            eventring_slot_thread *out) {
  if (!c || !out || domain < 0 || (uint64_t)domain >= c->max_domains)
    return EVENTRING_E_INVAL;
  memset(out, 0, sizeof *out);
  if (!c->threads_off) return 0;
  if (c->kept) {
    *out = c->kept->threads[domain];
    return c->kept->thread_rc[domain];
  }
  uint64_t off = c->threads_off + (uint64_t)domain * ER_EXT_THREAD_BYTES;
  uint64_t w[ER_THR_WORDS], seq2;
  /* The writer's protocol is a sequence count (er_domain_publish()); a
   * writer that dies mid-update leaves it odd, so a few tries, then the
   * entry as it is. */
  for (int tries = 0; tries < 100; tries++) {
    int e = get_acq(c, off, &w[ER_THR_SEQ]);
    if (!e) e = get(c, off + 8, &w[1], sizeof w - 8);
    /* Pairs with the writer's release fence after its odd sequence. */
    er_fence_acquire();
    if (!e) e = get(c, off, &seq2, 8);
    if (e) return e;
    if (seq2 == w[ER_THR_SEQ] && !(seq2 & 1)) break;
  }
  if (w[ER_THR_TID] == 0 || w[ER_THR_TID] > INT_MAX) return 0;
  out->tid = (pid_t)w[ER_THR_TID];
  out->since = w[ER_THR_SINCE];
  memcpy(out->name, &w[ER_THR_NAME], ER_EXT_THREAD_NAME_BYTES);
  out->name[sizeof out->name - 1] = '\0';
  return 1;
}

/* ------------------------------------------------------------------ */
/* Releasing a file read to its end.                                    */

/* Every name slot of the file cached in c->user_names, those without a
 * NUL (or that could not be read) marked bad in `k`: what user_name()
 * answers from once the file is released.  Returns 0 or -ENOMEM. */
static int keep_names(eventring_cursor *c, struct kept *k) {
  size_t bytes = (size_t)ER_NAME_SLOTS * ER_NAME_SLOT_BYTES;
  char *all = malloc(bytes);
  if (!all) return -ENOMEM;
  int e = get(c, c->custom_off, all, bytes);
  for (unsigned id = 0; id < ER_NAME_SLOTS; id++) {
    const char *slot = all + (size_t)id * ER_NAME_SLOT_BYTES;
    if (c->user_names && c->user_names[id]) continue;
    if (e || !memchr(slot, 0, ER_NAME_SLOT_BYTES)) {
      k->bad_name[id / 8] |= (unsigned char)(1u << (id % 8));
      continue;
    }
    if (!slot[0]) continue;
    if ((!c->user_names &&
         !(c->user_names = calloc(ER_NAME_SLOTS, sizeof *c->user_names))) ||
        !(c->user_names[id] = strdup(slot))) {
      free(all);
      return -ENOMEM;
    }
  }
  free(all);
  return 0;
}

int eventring__cursor_release(eventring_cursor *c) {
  if (!c) return EVENTRING_E_INVAL;
  if (c->kept || via_of(c) == VIA_IMAGE) return 0;
  struct kept *k = calloc(1, sizeof *k);
  int e = -ENOMEM;
  if (!k ||
      !(k->dropped = calloc((size_t)c->max_domains + 1, sizeof *k->dropped)))
    goto fail;
  for (int d = -1; d < (int)c->max_domains; d++)
    k->dropped[d + 1].err =
        eventring_cursor_dropped(c, d, &k->dropped[d + 1].n);
  if (c->threads_off) {
    if (!(k->threads = calloc((size_t)c->max_domains, sizeof *k->threads)) ||
        !(k->thread_rc = calloc((size_t)c->max_domains, sizeof *k->thread_rc)))
      goto fail;
    for (int d = 0; d < (int)c->max_domains; d++)
      k->thread_rc[d] = eventring_cursor_slot_thread(c, d, &k->threads[d]);
  }
  for (int w = 0; w < 2; w++)
    k->wall_err[w] = eventring_cursor_wallclock(c, w, &k->wall[w]);
  if ((e = keep_names(c, k)) != 0) goto fail;
  /* From here on nothing reads the file: the accessors answer from `k`,
   * and a stray get() would fail on the closed descriptor. */
  er_istore_rlx(&c->via, VIA_PREAD);
  er_cursor_close_file(c);
  c->kept = k;
  return 0;
fail:
  er_cursor_kept_free(k);
  return e;
}

/* Frees what a released cursor kept (NULL: nothing). */
void er_cursor_kept_free(struct kept *k) {
  if (!k) return;
  free(k->dropped);
  free(k->threads);
  free(k->thread_rc);
  free(k);
}
