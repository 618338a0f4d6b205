/* layout.c -- the ring file's layout, planned for a writer and decoded
 * for a reader (layout.h).
 *
 * The extension block's sections, in file order (ring_format.h says what
 * each holds and which flag brings it):
 *
 *   ER_EXT_OFFSET     the fixed words (ER_EXT_WORDS)
 *   leases_off        ER_EXT_LEASE_SLOTS words       ER_EXT_FLAG_LEASES
 *   names_off         the name tables, at ER_EXT_NAMES_OFFSET
 *   program_off       ER_EXT_PROGRAM_BYTES           ER_EXT_FLAG_PROGRAM
 *   wall_off          ER_EXT_WALL_WORDS words        ER_EXT_FLAG_WALLCLOCK
 *   cmdline_off       ER_EXT_CMDLINE_BYTES           ER_EXT_FLAG_THREADS
 *   threads_off       max_domains thread entries     ER_EXT_FLAG_THREADS
 *   meta_off          ER_EXT_META_BYTES              ER_EXT_FLAG_META
 *   start_time_off    the block's last word          ER_EXT_FLAG_START_TIME
 *
 * A reader finds the name tables through ER_EXT_NAMES_OFFSET, not by
 * adding up the sections before them, so that a block with sections it
 * does not know still reads; every later section is found from the end
 * of the one before.  A section a reader cannot place inside the block is
 * left out, as a reader that predates its flag would: only a block whose
 * fixed part or name tables do not fit is an error.
 */
#include <errno.h>
#include <string.h>

#include "layout.h"

#define PAGE_MAX 65536

/* a + b * c, without overflow, into *out; 0 when it overflows. */
static int sum(uint64_t a, uint64_t b, uint64_t c, uint64_t *out) {
  uint64_t p;
  return !__builtin_mul_overflow(b, c, &p) &&
         !__builtin_add_overflow(a, p, out);
}

/* a + b * c <= limit, without overflow; stores a + b * c in *out. */
static int fits(uint64_t a, uint64_t b, uint64_t c, uint64_t limit,
                uint64_t *out) {
  uint64_t s;
  if (!sum(a, b, c, &s)) return 0;
  if (out) *out = s;
  return s <= limit;
}

/* x rounded up to `to`, a power of two; 0 when it overflows. */
static int round_up(uint64_t x, uint64_t to, uint64_t *out) {
  if (__builtin_add_overflow(x, to - 1, out)) return 0;
  *out &= ~(to - 1);
  return 1;
}

static int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

int er_layout_plan(struct er_layout *l, uint64_t flags, uint64_t n_names,
                   uint64_t max_domains, uint64_t ring_words,
                   uint64_t data_align) {
  *l = (struct er_layout){.max_domains = max_domains,
                          .hdr_bytes = ER_RING_HEADER_BYTES,
                          .ring_words = ring_words, .flags = flags,
                          .n_names = n_names, .name_bytes = ER_EXT_NAME_BYTES};
  uint64_t at = ER_EXT_OFFSET + ER_EXT_WORDS * 8;
  if (flags & ER_EXT_FLAG_LEASES) {
    l->leases_off = at;
    at += ER_EXT_LEASE_SLOTS * 8;
  }
  l->names_off = at;
  if (!sum(at, n_names, ER_EXT_NAME_BYTES, &at)) return -EOVERFLOW;
  if (flags & ER_EXT_FLAG_PROGRAM) {
    l->program_off = at;
    at += ER_EXT_PROGRAM_BYTES;
  }
  if (flags & ER_EXT_FLAG_WALLCLOCK) {
    l->wall_off = at;
    at += ER_EXT_WALL_WORDS * 8;
  }
  if (flags & ER_EXT_FLAG_THREADS) {
    l->cmdline_off = at;
    l->threads_off = at + ER_EXT_CMDLINE_BYTES;
    if (!sum(l->threads_off, max_domains, ER_EXT_THREAD_BYTES, &at))
      return -EOVERFLOW;
  }
  if (flags & ER_EXT_FLAG_META) {
    l->meta_off = at;
    at += ER_EXT_META_BYTES;
  }
  if (flags & ER_EXT_FLAG_START_TIME) {
    l->start_time_off = at;
    at += 8;
  }
  l->ext_bytes = at - ER_EXT_OFFSET;
  if (!is_pow2(data_align) || data_align > PAGE_MAX) return -EINVAL;
  if (!sum(0, ring_words, 8, &l->ring_bytes) ||
      !round_up(at, 64, &l->headers_off) ||
      !sum(l->headers_off, max_domains, ER_RING_HEADER_BYTES, &at) ||
      !round_up(at, data_align, &l->data_off) ||
      !sum(l->data_off, max_domains, l->ring_bytes, &l->custom_off) ||
      !sum(l->custom_off, ER_NAME_SLOTS, ER_NAME_SLOT_BYTES, &l->file_bytes))
    return -EOVERFLOW;
  return 0;
}

/* Whether the metadata words 1-7 describe a layout a writer could have
 * made, whatever the file's size: a text file, an executable or zeros do
 * not, a ring file of another version most likely does.  The gaps are
 * bounded so that a header whose offsets are wild is not taken for that
 * of a truncated file. */
static int meta_plausible(const uint64_t *m) {
  uint64_t headers_end, rings_end;
  return m[ER_META_MAX_DOMAINS] >= 1 &&
         m[ER_META_MAX_DOMAINS] <= ER_LAYOUT_MAX_DOMAINS &&
         m[ER_META_RING_HEADER_SIZE] >= ER_RING_HEADER_MIN_BYTES &&
         m[ER_META_RING_HEADER_SIZE] % 8 == 0 &&
         m[ER_META_RING_HEADER_SIZE] <= 4096 &&
         is_pow2(m[ER_META_RING_SIZE_ELEMENTS]) &&
         m[ER_META_RING_SIZE_ELEMENTS] >= 2 &&
         m[ER_META_RING_SIZE_ELEMENTS] <=
             (UINT64_C(1) << ER_LAYOUT_MAX_RING_LOG2) &&
         m[ER_META_RING_SIZE_BYTES] == m[ER_META_RING_SIZE_ELEMENTS] * 8 &&
         m[ER_META_HEADERS_OFFSET] >= 64 && m[ER_META_HEADERS_OFFSET] % 8 == 0 &&
         m[ER_META_DATA_OFFSET] % 8 == 0 &&
         m[ER_META_CUSTOM_EVENTS_OFFSET] % 8 == 0 &&
         fits(m[ER_META_HEADERS_OFFSET], m[ER_META_MAX_DOMAINS],
              m[ER_META_RING_HEADER_SIZE], m[ER_META_DATA_OFFSET],
              &headers_end) &&
         m[ER_META_DATA_OFFSET] - headers_end <= ER_LAYOUT_MAX_GAP &&
         fits(m[ER_META_DATA_OFFSET], m[ER_META_MAX_DOMAINS],
              m[ER_META_RING_SIZE_BYTES], m[ER_META_CUSTOM_EVENTS_OFFSET],
              &rings_end) &&
         m[ER_META_CUSTOM_EVENTS_OFFSET] - rings_end <= ER_LAYOUT_MAX_GAP;
}

int er_layout_meta(struct er_layout *l, const uint64_t *meta, uint64_t size) {
  *l = (struct er_layout){0};
  if (size < ER_META_WORDS * 8)
    return size >= 8 && meta[ER_META_VERSION] == ER_FORMAT_VERSION
               ? EVENTRING_E_TRUNCATED
               : EVENTRING_E_NOTRINGFILE;
  int plausible = meta_plausible(meta);
  if (meta[ER_META_VERSION] != ER_FORMAT_VERSION)
    return plausible ? EVENTRING_E_VERSION : EVENTRING_E_NOTRINGFILE;
  if (!plausible) return EVENTRING_E_CORRUPT;
  if (!fits(meta[ER_META_CUSTOM_EVENTS_OFFSET], ER_NAME_SLOTS,
            ER_NAME_SLOT_BYTES, size, &l->file_bytes))
    return EVENTRING_E_TRUNCATED;
  l->max_domains = meta[ER_META_MAX_DOMAINS];
  l->hdr_bytes = meta[ER_META_RING_HEADER_SIZE];
  l->ring_bytes = meta[ER_META_RING_SIZE_BYTES];
  l->ring_words = meta[ER_META_RING_SIZE_ELEMENTS];
  l->headers_off = meta[ER_META_HEADERS_OFFSET];
  l->data_off = meta[ER_META_DATA_OFFSET];
  l->custom_off = meta[ER_META_CUSTOM_EVENTS_OFFSET];
  return 0;
}

int er_layout_ext(struct er_layout *l, const uint64_t *x, uint64_t size) {
  uint64_t ext_end, names_end, end;
  uint64_t np = x[ER_EXT_N_PHASES], nc = x[ER_EXT_N_COUNTERS];
  uint64_t nl = x[ER_EXT_N_LIFECYCLE], slot = x[ER_EXT_NAME_SLOT];
  uint64_t names = x[ER_EXT_NAMES_OFFSET], flags = x[ER_EXT_FLAGS];
  if (!fits(ER_EXT_OFFSET, 1, x[ER_EXT_SIZE], l->headers_off, &ext_end) ||
      x[ER_EXT_SIZE] > size || np > ER_LAYOUT_MAX_NAMES ||
      nc > ER_LAYOUT_MAX_NAMES || nl > ER_LAYOUT_MAX_NAMES ||
      slot < ER_LAYOUT_MIN_NAME_SLOT || slot > ER_LAYOUT_MAX_NAME_SLOT ||
      !fits(names, np + nc + nl, slot, ext_end, &names_end) ||
      names < ER_EXT_OFFSET + ER_EXT_WORDS * 8)
    return EVENTRING_E_CORRUPT;
  l->ext_bytes = x[ER_EXT_SIZE];
  l->flags = flags;
  l->names_off = names;
  l->n_names = np + nc + nl;
  l->name_bytes = slot;
  l->leases_off = l->program_off = l->wall_off = 0;
  l->cmdline_off = l->threads_off = l->start_time_off = l->meta_off = 0;

  /* The lease words lie between the fixed part and the names. */
  if ((flags & ER_EXT_FLAG_LEASES) &&
      names >= ER_EXT_OFFSET + (ER_EXT_WORDS + ER_EXT_LEASE_SLOTS) * 8)
    l->leases_off = ER_EXT_OFFSET + ER_EXT_WORDS * 8;

  uint64_t program_end = 0;
  if ((flags & ER_EXT_FLAG_PROGRAM) &&
      fits(names_end, 1, ER_EXT_PROGRAM_BYTES, l->headers_off, &end) &&
      end <= ext_end) {
    l->program_off = names_end;
    program_end = end;
  }

  /* The wall clock follows the program name's place, whether or not the
   * name itself fits, and keeps clear of the start time word. */
  uint64_t at = names_end +
                (flags & ER_EXT_FLAG_PROGRAM ? ER_EXT_PROGRAM_BYTES : 0);
  uint64_t tail = flags & ER_EXT_FLAG_START_TIME ? 8 : 0;
  if ((flags & ER_EXT_FLAG_WALLCLOCK) && at % 8 == 0 &&
      fits(at, 1, ER_EXT_WALL_WORDS * 8 + tail, ext_end, NULL) &&
      at + ER_EXT_WALL_WORDS * 8 <= l->headers_off)
    l->wall_off = at;

  /* The command line and the thread entries follow the program name and
   * the wall clock. */
  uint64_t line_end;
  if ((flags & ER_EXT_FLAG_THREADS) && l->program_off) {
    at = program_end +
         (flags & ER_EXT_FLAG_WALLCLOCK ? ER_EXT_WALL_WORDS * 8 : 0);
    if (fits(at, 1, ER_EXT_CMDLINE_BYTES, l->headers_off, &line_end) &&
        fits(line_end, l->max_domains, ER_EXT_THREAD_BYTES, l->headers_off,
             &end) &&
        end <= ext_end) {
      l->cmdline_off = at;
      l->threads_off = line_end;
    }
  }

  /* The metadata follows every section before it, whether or not a
   * reader could place those, and keeps clear of the start time word. */
  if (flags & ER_EXT_FLAG_META) {
    at = names_end;
    if (flags & ER_EXT_FLAG_PROGRAM) at += ER_EXT_PROGRAM_BYTES;
    if (flags & ER_EXT_FLAG_WALLCLOCK) at += ER_EXT_WALL_WORDS * 8;
    if ((!(flags & ER_EXT_FLAG_THREADS) ||
         sum(at + ER_EXT_CMDLINE_BYTES, l->max_domains, ER_EXT_THREAD_BYTES,
             &at)) &&
        at % 8 == 0 &&
        fits(at, 1, ER_EXT_META_BYTES + tail, ext_end, NULL))
      l->meta_off = at;
  }

  if ((flags & ER_EXT_FLAG_START_TIME) && l->ext_bytes >= ER_EXT_WORDS * 8 + 8)
    l->start_time_off = ext_end - 8;
  return 0;
}

int er_layout_read(struct er_layout *l, const uint64_t *meta,
                   const uint64_t *x, uint64_t size) {
  int e = er_layout_meta(l, meta, size);
  return e ? e : er_layout_ext(l, x, size);
}

int er_check_meta(const uint64_t *meta, uint64_t size) {
  struct er_layout l;
  return er_layout_meta(&l, meta, size);
}

/* ------------------------------------------------------------------ */
/* Encoding a block.                                                    */

void er_put_name(unsigned char *slot, size_t slot_bytes, const char *name) {
  size_t n = strnlen(name, slot_bytes - 1);
  memcpy(slot, name, n);
  memset(slot + n, 0, slot_bytes - n);
}

void er_wall_fill(uint64_t *w, const uint64_t pairs[4]) {
  w[ER_WALL_START_TS] = pairs[0];
  w[ER_WALL_START_WALL] = pairs[1];
  /* Generation 1, slot 1; slot 0 holds the same pair, so that even a
   * reader that ignores the generation reads a sensible one. */
  for (int j = 0; j < 2; j++) {
    w[ER_WALL_SLOTS + 2 * j] = pairs[2];
    w[ER_WALL_SLOTS + 2 * j + 1] = pairs[3];
  }
  w[ER_WALL_GEN] = 1;
}

/* Whether the block holds a program name: the thread entries come after
 * one, empty when the writer gave none. */
static int has_program(const struct er_ext_desc *d) {
  return d->program || (d->flags & ER_EXT_FLAG_THREADS);
}

int er_ext_layout(struct er_layout *l, const struct er_ext_desc *d,
                  uint64_t max_domains, uint64_t ring_words,
                  uint64_t data_align) {
  uint64_t n_names = (uint64_t)d->counts[0] + d->counts[1] + d->counts[2];
  return er_layout_plan(l,
                        d->flags | (has_program(d) ? ER_EXT_FLAG_PROGRAM : 0),
                        n_names, max_domains, ring_words, data_align);
}

void er_ext_fill(uint64_t *x, const struct er_ext_desc *d,
                 const struct er_layout *l) {
  unsigned char *block = (unsigned char *)x - ER_EXT_OFFSET;
  x[ER_EXT_VERSION_W] = ER_EXT_VERSION;
  x[ER_EXT_SIZE] = l->ext_bytes;
  x[ER_EXT_PHASE_NUMBERING] = (uint64_t)d->numbering;
  x[ER_EXT_FLAGS] = l->flags;
  x[ER_EXT_PID] = (uint64_t)d->pid;
  x[ER_EXT_DROPPED] = d->dropped;
  /* The lease words, when there are any, start at 0: no holder. */
  x[ER_EXT_NAMES_OFFSET] = l->names_off;
  x[ER_EXT_N_PHASES] = d->counts[0];
  x[ER_EXT_N_COUNTERS] = d->counts[1];
  x[ER_EXT_N_LIFECYCLE] = d->counts[2];
  x[ER_EXT_NAME_SLOT] = ER_EXT_NAME_BYTES;
  unsigned char *names = block + l->names_off;
  for (int t = 0; t < 3; t++)
    for (unsigned i = 0; i < d->counts[t]; i++, names += ER_EXT_NAME_BYTES)
      er_put_name(names, ER_EXT_NAME_BYTES,
                  d->tables[t][i] ? d->tables[t][i] : "");
  if (l->program_off)
    er_put_name(block + l->program_off, ER_EXT_PROGRAM_BYTES,
             d->program ? d->program : "");
  if (l->wall_off) er_wall_fill((uint64_t *)(block + l->wall_off), d->wall);
  if (l->cmdline_off)
    er_put_name(block + l->cmdline_off, ER_EXT_CMDLINE_BYTES,
             d->cmdline ? d->cmdline : "");
  /* Entries not given stay zero: never held. */
  if (l->threads_off && d->thread_entries)
    memcpy(block + l->threads_off, d->thread_entries,
           (size_t)l->max_domains * ER_EXT_THREAD_BYTES);
  if (l->meta_off) er_meta_fill(block + l->meta_off, d->ocaml_version,
                                d->labels);
  if (l->start_time_off)
    memcpy(block + l->start_time_off, &d->start_time, 8);
}

/* ------------------------------------------------------------------ */
/* The writer's metadata (ER_EXT_FLAG_META).                            */

void er_meta_fill(unsigned char *sec, const char *version,
                  const unsigned char *labels) {
  memset(sec, 0, ER_MD_LABELS);
  er_put_name(sec + ER_MD_VERSION, ER_EXT_OCAML_VERSION_BYTES,
              version ? version : "");
  if (labels)
    memcpy(sec + ER_MD_LABELS, labels, ER_MD_LABEL_BYTES);
  else
    memset(sec + ER_MD_LABELS, 0, ER_MD_LABEL_BYTES);
}

int er_label_name_ok(const char *s, size_t n) {
  /* Prometheus keeps names starting with __ for itself. */
  if (n == 0 || (s[0] >= '0' && s[0] <= '9') ||
      (n >= 2 && s[0] == '_' && s[1] == '_'))
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_'))
      return 0;
  }
  return 1;
}

int er_label_value_ok(const char *s, size_t n) {
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return 0;
  return 1;
}

int er_labels_next(const unsigned char *area, size_t bytes, size_t *pos,
                   struct er_label *out) {
  if (*pos >= bytes || area[*pos] == 0) return 0;
  const char *at = (const char *)area + *pos;
  const char *end = memchr(at, 0, bytes - *pos);
  if (!end) return -1;
  const char *eq = memchr(at, '=', (size_t)(end - at));
  if (!eq || !er_label_name_ok(at, (size_t)(eq - at)) ||
      !er_label_value_ok(eq + 1, (size_t)(end - eq - 1)))
    return -1;
  out->name = at;
  out->name_len = (size_t)(eq - at);
  out->value = eq + 1;
  out->value_len = (size_t)(end - eq - 1);
  *pos = (size_t)(end - (const char *)area) + 1;
  return 1;
}

int er_labels_check(const unsigned char *area, size_t bytes) {
  size_t pos = 0;
  struct er_label lb;
  int n = 0, r;
  while ((r = er_labels_next(area, bytes, &pos, &lb)) == 1)
    if (++n > ER_EXT_MAX_LABELS) return -1;
  return r < 0 ? -1 : n;
}

int er_labels_set(unsigned char *area, size_t bytes, const char *name,
                  size_t name_len, const char *value, size_t value_len) {
  if (!er_label_name_ok(name, name_len) ||
      !er_label_value_ok(value, value_len))
    return -EINVAL;
  int n = er_labels_check(area, bytes);
  if (n < 0) return -EINVAL;
  /* Where the labels end, and the label of that name, if any. */
  size_t pos = 0, at, old_at = bytes, old_len = 0;
  struct er_label lb;
  for (;;) {
    at = pos;
    if (er_labels_next(area, bytes, &pos, &lb) != 1) break;
    if (lb.name_len == name_len && !memcmp(lb.name, name, name_len)) {
      old_at = at;
      old_len = pos - at;
    }
  }
  /* "name=value" and its NUL; the empty string after it, when it does
   * not end the area, is the zeros that follow. */
  size_t need = name_len + 1 + value_len + 1;
  if (n - (old_len ? 1 : 0) >= ER_EXT_MAX_LABELS ||
      need > bytes - at + old_len)
    return -ENOSPC;
  if (old_len) {
    memmove(area + old_at, area + old_at + old_len, at - old_at - old_len);
    at -= old_len;
  }
  memset(area + at, 0, bytes - at);
  memcpy(area + at, name, name_len);
  area[at + name_len] = '=';
  memcpy(area + at + name_len + 1, value, value_len);
  return 0;
}
