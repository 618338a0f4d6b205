/* snapshot.c -- compact ring files: the snapshot in memory, and the file
 * it is written as (snapshot_encode.c fills one from a cursor,
 * snapshot_name.c names it, snapshot_api.c is eventring_snapshot()).
 *
 * A flight recorder is looked at when something went wrong, and what it
 * holds then must be kept before the rings wrap over it.  A snapshot
 * copies the rings into a compact ring file (snapshot.h): the same format,
 * so that every reader -- the consumer, every subcommand of the tool,
 * OCaml 5's own -- reads it as it reads a live file.
 *
 * The file's layout (ring_format.h; doc/FORMAT.md, "Compact files"):
 *
 *   0                      metadata header
 *   64                     extension block (ring.c's er_ext_fill; the
 *                          offsets are layout.h's plan)
 *   headers_offset         one 256-byte header per ring
 *   data_offset            the rings, 2^k words each
 *   custom_events_offset   the 8192 user event name slots
 *
 * Ring d holds the events given for domain d from its index 0.  What
 * came before them is told to a reader as one gap ahead of its first
 * event: the ring's head is then one ring size past 0 (index 0 still,
 * since the size divides it), and the (head, events before head) pair of
 * the header says how many events the gap stands for.  Most of them
 * were overwritten before the copy began: the snapshot is a window of
 * the run, and they are no loss.  The header's GAP_LOST word counts the
 * others, those overwritten while they were copied, which are lost.  A
 * cursor starting at position 0 finds head beyond it and reports the
 * two apart (eventring_window_fn, then lost_events), as it would for a
 * live ring that wrapped before it looked and then overtook it.  Losses
 * that happened in the middle of the copy are thus reported together at
 * the start: their number is exact, their place is not kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsize.h"
#include "internal.h"
#include "layout.h"
#include "snapshot.h"

#define MAX_DOMAINS ER_LAYOUT_MAX_DOMAINS /* as many as a reader accepts */

_Static_assert(sizeof(((eventring_slot_thread *)0)->name) ==
                   ER_EXT_THREAD_NAME_BYTES,
               "a thread's name is copied whole into its entry");

struct snap_ring {
  uint64_t *w;       /* the events' words, in order */
  size_t n, cap;     /* words used, allocated */
  uint64_t events;
  uint64_t lost;     /* overwritten while they were copied */
  uint64_t before;   /* overwritten before the copy began: no loss */
  uint64_t first_ts, last_ts; /* of the events, when there are any */
};

struct er_snap {
  struct snap_ring *rings;
  unsigned n_rings;  /* allocated; 1 + the highest domain given anything */
  unsigned used;
  pid_t pid;
  char *program;
  int has_wall;      /* the source's wall clock pairs are known */
  uint64_t wall[4];  /* start ts, wall, latest ts, wall (wallclock.h) */
  int numbering;
  char **names[2];   /* phases, counters */
  unsigned counts[2];
  char **user;       /* ER_NAME_SLOTS names, allocated at the first */
  /* From the file copied (ER_EXT_FLAG_THREADS), or NULL: its command
   * line and the holders of its slots, n_threads of them. */
  char *cmdline;
  eventring_slot_thread *threads;
  unsigned n_threads;
  /* The writer's metadata (ER_EXT_FLAG_META): the source's OCaml version
   * ("" unknown) and labels, and the labels given by er_snap_label(),
   * which win over the source's of the same name. */
  char ocaml_version[ER_EXT_OCAML_VERSION_BYTES];
  unsigned char src_labels[ER_MD_LABEL_BYTES];
  unsigned char own_labels[ER_MD_LABEL_BYTES];
};

/* ------------------------------------------------------------------ */
/* Collecting.                                                          */

static void free_names(struct er_snap *s) {
  for (int t = 0; t < 2; t++) {
    for (unsigned i = 0; s->names[t] && i < s->counts[t]; i++)
      free(s->names[t][i]);
    free(s->names[t]);
    s->names[t] = NULL;
    s->counts[t] = 0;
  }
}

/* Replaces the name table `t` (0 phases, 1 counters) with `n` names
 * given by `get` (NULL names become empty).  Returns 0 or -ENOMEM. */
static int set_names(struct er_snap *s, int t, unsigned n,
                     const char *(*get)(const void *, int), const void *arg) {
  char **v = calloc(n ? n : 1, sizeof *v);
  if (!v) return -ENOMEM;
  for (unsigned i = 0; i < n; i++) {
    const char *name = get(arg, (int)i);
    if (!(v[i] = strdup(name ? name : ""))) {
      while (i--) free(v[i]);
      free(v);
      return -ENOMEM;
    }
  }
  for (unsigned i = 0; s->names[t] && i < s->counts[t]; i++)
    free(s->names[t][i]);
  free(s->names[t]);
  s->names[t] = v;
  s->counts[t] = n;
  return 0;
}

static const char *builtin_name(const void *table, int i) {
  return ((const char *const *)table)[i];
}

struct er_snap *er_snap_new(void) {
  struct er_snap *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->numbering = ER_PHASES_OCAML53;
  if (set_names(s, 0, eventring__n_phases_53, builtin_name,
                eventring__phase_names_53) ||
      set_names(s, 1, eventring__n_counters, builtin_name,
                eventring__counter_names)) {
    er_snap_free(s);
    return NULL;
  }
  return s;
}

void er_snap_free(struct er_snap *s) {
  if (!s) return;
  for (unsigned d = 0; d < s->n_rings; d++) free(s->rings[d].w);
  free(s->rings);
  free(s->program);
  free(s->cmdline);
  free(s->threads);
  free_names(s);
  for (unsigned i = 0; s->user && i < ER_NAME_SLOTS; i++) free(s->user[i]);
  free(s->user);
  free(s);
}

int er_snap_set_writer(struct er_snap *s, pid_t pid, const char *program) {
  char *p = NULL;
  if (program && *program &&
      !(p = strndup(program, ER_EXT_PROGRAM_BYTES - 1)))
    return -ENOMEM;
  free(s->program);
  s->program = p;
  s->pid = pid;
  return 0;
}

/* The ring of `domain`, grown into existence.  NULL: out of range or of
 * memory (*err says which). */
static struct snap_ring *ring_of(struct er_snap *s, int domain, int *err) {
  if (domain < 0 || domain >= MAX_DOMAINS) {
    *err = EVENTRING_E_INVAL;
    return NULL;
  }
  if ((unsigned)domain >= s->n_rings) {
    unsigned n = s->n_rings ? s->n_rings : 8;
    while (n <= (unsigned)domain) n *= 2;
    struct snap_ring *r = realloc(s->rings, n * sizeof *r);
    if (!r) {
      *err = -ENOMEM;
      return NULL;
    }
    memset(r + s->n_rings, 0, (n - s->n_rings) * sizeof *r);
    s->rings = r;
    s->n_rings = n;
  }
  if ((unsigned)domain >= s->used) s->used = (unsigned)domain + 1;
  return &s->rings[domain];
}

int er_snap_event(struct er_snap *s, int domain, const uint64_t *ev,
                  unsigned len) {
  if (len < 2 || len > ER_MAX_EVENT_WORDS || ER_HDR_LEN(ev[0]) != len)
    return EVENTRING_E_INVAL;
  int err = 0;
  struct snap_ring *r = ring_of(s, domain, &err);
  if (!r) return err;
  if (r->cap - r->n < len) {
    size_t cap = r->cap ? r->cap * 2 : 1024;
    while (cap - r->n < len) cap *= 2;
    uint64_t *w = realloc(r->w, cap * sizeof *w);
    if (!w) return -ENOMEM;
    r->w = w;
    r->cap = cap;
  }
  memcpy(r->w + r->n, ev, len * sizeof *ev);
  r->n += len;
  if (!r->events++) r->first_ts = ev[1];
  r->last_ts = ev[1];
  return 0;
}

int er_snap_lost(struct er_snap *s, int domain, uint64_t count) {
  int err = 0;
  struct snap_ring *r = ring_of(s, domain, &err);
  if (!r) return err;
  r->lost += count;
  return 0;
}

int er_snap_window(struct er_snap *s, int domain, uint64_t before) {
  int err = 0;
  struct snap_ring *r = ring_of(s, domain, &err);
  if (!r) return err;
  r->before += before;
  return 0;
}

int er_snap_user_name(struct er_snap *s, int id, const char *name) {
  if (id < 0 || id >= ER_NAME_SLOTS || !name) return EVENTRING_E_INVAL;
  if (!s->user && !(s->user = calloc(ER_NAME_SLOTS, sizeof *s->user)))
    return -ENOMEM;
  if (s->user[id] && !strcmp(s->user[id], name)) return 0;
  char *n = strndup(name, ER_NAME_SLOT_BYTES - 1);
  if (!n) return -ENOMEM;
  free(s->user[id]);
  s->user[id] = n;
  return 0;
}

static const char *cursor_phase(const void *c, int i) {
  return eventring_cursor_phase_name(c, i);
}

static const char *cursor_counter(const void *c, int i) {
  return eventring_cursor_counter_name(c, i);
}

/* How many names `get` has for the cursor: the ids up to the first
 * without one, and at least `seen` (ids the events used, whose names may
 * be unknown: they are written empty, which readers show as phase_N). */
static unsigned count_names(const eventring_cursor *c,
                            const char *(*get)(const void *, int),
                            unsigned seen) {
  unsigned n = 0;
  while (n < 8192 && get(c, (int)n)) n++;
  return n > seen ? n : seen;
}

int er_snap_label(struct er_snap *s, const char *name, const char *value) {
  return er_labels_set(s->own_labels, sizeof s->own_labels, name,
                       strlen(name), value, strlen(value));
}

/* The OCaml version and labels that the cursor's file records (none for
 * a file that records none), for the snapshot's metadata. */
static void take_meta(struct er_snap *s, const eventring_cursor *c) {
  const char *v = eventring_cursor_ocaml_version(c), *name, *value;
  snprintf(s->ocaml_version, sizeof s->ocaml_version, "%s", v ? v : "");
  memset(s->src_labels, 0, sizeof s->src_labels);
  for (int i = 0; eventring_cursor_label(c, i, &name, &value) == 1; i++)
    (void)er_labels_set(s->src_labels, sizeof s->src_labels, name,
                        strlen(name), value, strlen(value));
}

/* The labels the file gets into `out`: er_snap_label()'s, then the
 * source's of other names as long as they fit.  Returns how many. */
static int merge_labels(const struct er_snap *s, unsigned char *out) {
  memcpy(out, s->own_labels, ER_MD_LABEL_BYTES);
  size_t pos = 0, own_pos;
  struct er_label lb, own;
  while (er_labels_next(s->src_labels, ER_MD_LABEL_BYTES, &pos, &lb) == 1) {
    int taken = 0;
    own_pos = 0;
    while (!taken &&
           er_labels_next(s->own_labels, ER_MD_LABEL_BYTES, &own_pos, &own) == 1)
      taken = own.name_len == lb.name_len &&
              !memcmp(own.name, lb.name, lb.name_len);
    if (!taken)
      (void)er_labels_set(out, ER_MD_LABEL_BYTES, lb.name, lb.name_len,
                          lb.value, lb.value_len);
  }
  return er_labels_check(out, ER_MD_LABEL_BYTES);
}

/* The command line and the slots' holders that the cursor's file
 * records, kept for the snapshot's extension block.  Returns 0 or
 * -ENOMEM; a file that records none leaves none. */
static int take_threads(struct er_snap *s, eventring_cursor *c) {
  const char *line = eventring_cursor_cmdline(c);
  free(s->cmdline);
  s->cmdline = NULL;
  if (line && !(s->cmdline = strdup(line))) return -ENOMEM;
  unsigned n = 0;
  eventring_slot_thread th;
  for (unsigned d = 0; d < MAX_DOMAINS; d++) {
    int r = eventring_cursor_slot_thread(c, (int)d, &th);
    if (r < 0) break;  /* past the file's slots, or unreadable */
    if (r == 1) n = d + 1;
  }
  free(s->threads);
  s->threads = NULL;
  s->n_threads = 0;
  if (!n) return 0;
  if (!(s->threads = calloc(n, sizeof *s->threads))) return -ENOMEM;
  for (unsigned d = 0; d < n; d++)
    if (eventring_cursor_slot_thread(c, (int)d, &s->threads[d]) != 1)
      memset(&s->threads[d], 0, sizeof s->threads[d]);
  s->n_threads = n;
  return 0;
}

int er_snap_source_from_cursor(struct er_snap *s, eventring_cursor *c,
                               unsigned max_phase, unsigned max_counter) {
  int e = take_threads(s, c);
  if (e) return e;
  take_meta(s, c);
  int numbering = eventring_cursor_numbering(c, NULL);
  if (numbering == ER_PHASES_OCAML50 || numbering == ER_PHASES_OCAML53)
    s->numbering = numbering;
  /* The source's wall clock goes with its timestamps, which are kept. */
  eventring_wallclock start, latest;
  if (eventring_cursor_wallclock(c, EVENTRING_WALLCLOCK_START, &start) == 0 &&
      eventring_cursor_wallclock(c, EVENTRING_WALLCLOCK_LATEST, &latest) ==
          0) {
    s->has_wall = 1;
    s->wall[0] = start.ts;
    s->wall[1] = (uint64_t)start.wall;
    s->wall[2] = latest.ts;
    s->wall[3] = (uint64_t)latest.wall;
  }
  e = set_names(s, 0, count_names(c, cursor_phase, max_phase),
                    cursor_phase, c);
  if (!e)
    e = set_names(s, 1, count_names(c, cursor_counter, max_counter),
                  cursor_counter, c);
  return e;
}

int er_snap_names_from_cursor(struct er_snap *s, eventring_cursor *c) {
  return er_snap_source_from_cursor(s, c, 0, 0);
}

/* ------------------------------------------------------------------ */
/* Writing.                                                             */

struct out {
  int fd;
  int seekable; /* a regular file: zeros become a hole */
  int err;      /* the first negated errno */
};

static void put(struct out *o, const void *p, size_t n) {
  const unsigned char *b = p;
  while (n && !o->err) {
    ssize_t w = write(o->fd, b, n);
    if (w < 0) {
      if (errno != EINTR) o->err = -errno;
      continue;
    }
    b += w;
    n -= (size_t)w;
  }
}

static void zeros(struct out *o, uint64_t n) {
  if (o->err || !n) return;
  if (o->seekable) {
    if (lseek(o->fd, (off_t)n, SEEK_CUR) < 0) o->err = -errno;
    return;
  }
  static const unsigned char z[4096];
  for (; n > sizeof z; n -= sizeof z) put(o, z, sizeof z);
  put(o, z, (size_t)n);
}

/* The extension block `s` gets with the thread entries `entries` (NULL:
 * none), its labels merged into `labels` (ER_MD_LABEL_BYTES). */
static void describe(const struct er_snap *s, const uint64_t *entries,
                     struct er_ext_desc *desc, unsigned char *labels) {
  memset(desc, 0, sizeof *desc);
  if (merge_labels(s, labels) > 0 || s->ocaml_version[0]) {
    desc->flags |= ER_EXT_FLAG_META;
    desc->ocaml_version = s->ocaml_version;
    desc->labels = labels;
  }
  desc->numbering = s->numbering;
  desc->flags |= entries ? ER_EXT_FLAG_THREADS : 0;
  desc->pid = s->pid;
  desc->program = s->program;
  desc->cmdline = s->cmdline;
  desc->thread_entries = entries;
  desc->tables[0] = (const char *const *)s->names[0];
  desc->tables[1] = (const char *const *)s->names[1];
  desc->tables[2] = eventring__lifecycle_names;
  desc->counts[0] = s->counts[0];
  desc->counts[1] = s->counts[1];
  desc->counts[2] = eventring__n_lifecycle;
  if (s->has_wall) {
    desc->flags |= ER_EXT_FLAG_WALLCLOCK;
    memcpy(desc->wall, s->wall, sizeof desc->wall);
  }
}

/* The words of each ring of a file whose fullest ring holds `most`: the
 * smallest power of two that holds them, 2 at least (the smallest ring
 * a reader accepts). */
static uint64_t ring_words_for(uint64_t most) {
  uint64_t words = 2;
  while (words < most) words *= 2;
  return words;
}

/* The layout of the file: the rings on a 64-byte boundary only (a
 * compact file is written, not mapped by a writer).  0, or -1 when it
 * overflows. */
static int lay_out(const struct er_ext_desc *desc, unsigned n_rings,
                   uint64_t ring_words, struct er_layout *l) {
  return er_ext_layout(l, desc, n_rings, ring_words, 64);
}

uint64_t er_snap_bytes(const struct er_snap *s, int domain, unsigned words) {
  unsigned used = s->used;
  if (words && domain >= 0 && (unsigned)domain >= used)
    used = (unsigned)domain + 1;
  unsigned n_rings = used ? used : 1;
  uint64_t most = 0;
  for (unsigned d = 0; d < used; d++) {
    uint64_t n = d < s->used ? s->rings[d].n : 0;
    if (words && (int)d == domain) n += words;
    if (n > most) most = n;
  }
  struct er_ext_desc desc;
  /* Only the presence of the entries counts for the size. */
  static const uint64_t some_entries[1];
  unsigned char labels[ER_MD_LABEL_BYTES];
  describe(s, s->threads || s->cmdline ? some_entries : NULL, &desc, labels);
  struct er_layout l;
  if (lay_out(&desc, n_rings, ring_words_for(most), &l) != 0)
    return UINT64_MAX;
  return l.file_bytes;
}

int er_snap_write(struct er_snap *s, int fd, struct er_snap_stats *st) {
  unsigned n_rings = s->used ? s->used : 1;
  uint64_t most = 0, events = 0, lost = 0, before = 0, from = 0, to = 0;
  unsigned domains = 0;
  for (unsigned d = 0; d < s->used; d++) {
    struct snap_ring *r = &s->rings[d];
    if (r->n > most) most = r->n;
    if (r->events && (!events || r->first_ts < from)) from = r->first_ts;
    if (r->events && (!events || r->last_ts > to)) to = r->last_ts;
    events += r->events;
    lost += r->lost;
    before += r->before;
    domains += r->events || r->lost || r->before;
  }
  uint64_t ring_words = ring_words_for(most);
  uint64_t ring_bytes = ring_words * 8;

  /* The holders of the copied slots, as thread entries (ring_format.h). */
  uint64_t *entries = NULL;
  if (s->threads || s->cmdline) {
    entries = calloc(n_rings, ER_EXT_THREAD_BYTES);
    if (!entries) return -ENOMEM;
    for (unsigned d = 0; d < n_rings && d < s->n_threads; d++) {
      uint64_t *e = entries + (size_t)d * ER_THR_WORDS;
      e[ER_THR_TID] = (uint64_t)s->threads[d].tid;
      e[ER_THR_SINCE] = s->threads[d].since;
      memcpy(&e[ER_THR_NAME], s->threads[d].name, ER_EXT_THREAD_NAME_BYTES);
    }
  }
  struct er_ext_desc desc;
  unsigned char labels[ER_MD_LABEL_BYTES];
  describe(s, entries, &desc, labels);
  struct er_layout l;
  if (lay_out(&desc, n_rings, ring_words, &l) != 0) {
    free(entries);
    return -EFBIG;
  }
  uint64_t headers_off = l.headers_off, data_off = l.data_off;
  uint64_t size = l.file_bytes;

  /* Everything before the rings, built in memory. */
  unsigned char *front = calloc(1, (size_t)data_off);
  if (!front) {
    free(entries);
    return -ENOMEM;
  }
  uint64_t *m = (uint64_t *)front;
  m[ER_META_VERSION] = ER_FORMAT_VERSION;
  m[ER_META_MAX_DOMAINS] = n_rings;
  m[ER_META_RING_HEADER_SIZE] = ER_RING_HEADER_BYTES;
  m[ER_META_RING_SIZE_BYTES] = ring_bytes;
  m[ER_META_RING_SIZE_ELEMENTS] = ring_words;
  m[ER_META_HEADERS_OFFSET] = headers_off;
  m[ER_META_DATA_OFFSET] = data_off;
  m[ER_META_CUSTOM_EVENTS_OFFSET] = l.custom_off;
  uint64_t *x = (uint64_t *)(front + ER_EXT_OFFSET);
  er_ext_fill(x, &desc, &l);
  free(entries);
  x[ER_EXT_MAGIC_W] = ER_EXT_MAGIC;
  for (unsigned d = 0; d < s->used; d++) {
    struct snap_ring *r = &s->rings[d];
    uint64_t *h = (uint64_t *)(front + headers_off +
                               (uint64_t)d * ER_RING_HEADER_BYTES);
    /* The events before the window and the losses are a head one ring
     * size on, published as move 1 of head (ring_format.h): index 0
     * still, `gap` events before it, GAP_LOST of them lost. */
    uint64_t gap = r->before + r->lost;
    uint64_t head = gap ? ring_words : 0;
    h[ER_RING_HEAD] = head;
    h[ER_RING_TAIL] = head + r->n;
    h[ER_RING_WRITTEN] = gap + r->events;
    h[ER_RING_GAP_LOST] = r->lost;
    if (gap) {
      h[ER_RING_PSEQ] = 1;
      h[ER_RING_PAIRS + 2 * (1 % ER_RING_NPAIRS)] = head;
      h[ER_RING_PAIRS + 2 * (1 % ER_RING_NPAIRS) + 1] = gap;
    }
  }

  struct stat sb;
  off_t start = lseek(fd, 0, SEEK_CUR);
  struct out o = {fd, start >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode),
                  0};
  /* Nothing is written that the file size limit would cut (fsize.h). */
  if (o.seekable) {
    int flags = fcntl(fd, F_GETFL);
    uint64_t from = flags >= 0 && (flags & O_APPEND) ? (uint64_t)sb.st_size
                                                     : (uint64_t)start;
    if (!er_fsize_allows(from + size)) {
      free(front);
      return -EFBIG;
    }
  }
  put(&o, front, (size_t)data_off);
  free(front);
  for (unsigned d = 0; d < n_rings; d++) {
    uint64_t n = d < s->used ? s->rings[d].n : 0;
    if (n) put(&o, s->rings[d].w, (size_t)n * 8);
    zeros(&o, ring_bytes - n * 8);
  }
  for (unsigned i = 0; i < ER_NAME_SLOTS; i++) {
    const char *name = s->user ? s->user[i] : NULL;
    if (!name || !*name) {
      zeros(&o, ER_NAME_SLOT_BYTES);
      continue;
    }
    char slot[ER_NAME_SLOT_BYTES] = {0};
    memcpy(slot, name, strnlen(name, ER_NAME_SLOT_BYTES - 1));
    put(&o, slot, sizeof slot);
  }
  /* A hole at the end is no size at all until the file is extended. */
  if (!o.err && o.seekable && ftruncate(fd, start + (off_t)size) < 0)
    o.err = -errno;
  if (o.err) return o.err;
  if (st) {
    st->events = events;
    st->lost = lost;
    st->before = before;
    st->from = from;
    st->to = to;
    st->domains = domains;
    st->max_domains = n_rings;
    st->bytes = size;
  }
  return 0;
}
