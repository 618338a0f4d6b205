/* layout.h -- where each section of a ring file lies: the one codec of the
 * layout whose words ring_format.h names (doc/FORMAT.md, "Layout" and
 * "The extension block").
 *
 * The writers (ring.c's file, snapshot.c's compact files) plan a layout
 * from what the file is to hold: er_layout_plan().  The readers (the
 * consumer, the writer looking at its own block, remote control, the
 * tools) decode it from the header words: er_layout_meta(), then
 * er_layout_ext().  Either way the answer is a struct er_layout whose
 * offsets are bytes from the file's start, every sum and product checked
 * for overflow.  Pure functions of their arguments: no state, no I/O,
 * async-signal-safe.
 */
#ifndef EVENTRING_LAYOUT_H
#define EVENTRING_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "eventring.h"
#include "ring_format.h"

#ifndef ER_HIDDEN
#define ER_HIDDEN __attribute__((visibility("hidden")))
#endif

/* The byte offset of the extension block: it follows the metadata. */
#define ER_EXT_OFFSET (ER_META_WORDS * 8)

/* The most domains a reader accepts (and a compact file may hold). */
#define ER_LAYOUT_MAX_DOMAINS 65536
/* The largest ring a reader accepts: 2^32 words. */
#define ER_LAYOUT_MAX_RING_LOG2 32
/* The most a writer leaves between the ring headers and the rings, and
 * between the rings and the name slots: eventring aligns the rings to a
 * page (64 KiB at most), OCaml 5 leaves nothing. */
#define ER_LAYOUT_MAX_GAP 65536
/* The largest name table a block may declare, and its slots' bounds. */
#define ER_LAYOUT_MAX_NAMES 8192
#define ER_LAYOUT_MIN_NAME_SLOT 2
#define ER_LAYOUT_MAX_NAME_SLOT 256

struct er_layout {
  /* The metadata header (ER_META_*). */
  uint64_t max_domains, hdr_bytes, ring_bytes, ring_words;
  uint64_t headers_off, data_off, custom_off;
  uint64_t file_bytes; /* where the user event name slots end */
  /* The extension block; ext_bytes is 0 when there is none (or before
   * er_layout_ext()).  A section's offset is 0 when the block lacks it,
   * or when the block's words would put it outside the block. */
  uint64_t ext_bytes;  /* ER_EXT_SIZE: the block's bytes from ER_EXT_OFFSET */
  uint64_t flags;      /* ER_EXT_FLAGS */
  uint64_t leases_off; /* ER_EXT_LEASE_SLOTS words */
  uint64_t names_off;  /* n_names slots of name_bytes */
  uint64_t n_names, name_bytes;
  uint64_t program_off; /* ER_EXT_PROGRAM_BYTES */
  uint64_t wall_off;    /* ER_EXT_WALL_WORDS words, 8-byte aligned */
  uint64_t cmdline_off; /* ER_EXT_CMDLINE_BYTES; only with program_off */
  uint64_t threads_off; /* max_domains entries of ER_EXT_THREAD_BYTES */
  uint64_t start_time_off; /* the block's last word */
  uint64_t meta_off;    /* ER_EXT_META_BYTES, 8-byte aligned */
};

/* Decodes the layout of a whole file of `size` bytes whose metadata header
 * is `meta` and whose extension block's fixed words are `x` (magic and
 * version checked by the caller): er_layout_meta(), then er_layout_ext().
 * Returns 0 or their errors. */
ER_HIDDEN int er_layout_read(struct er_layout *l, const uint64_t *meta,
                             const uint64_t *x, uint64_t size);

/* Plans a file of `max_domains` rings of `ring_words` words whose block
 * has the sections `flags` (ER_EXT_FLAG_*, ER_EXT_FLAG_PROGRAM included
 * when it has a program name) and `n_names` name slots of
 * ER_EXT_NAME_BYTES: the block's sections in the order ring_format.h
 * gives, the ring headers (ER_RING_HEADER_BYTES each) on a 64-byte
 * boundary after it, the rings on a `data_align` boundary (a power of
 * two, at most 65536), then the name slots.  Returns 0, -EINVAL for
 * another `data_align`, or -EOVERFLOW when the file's size would not fit
 * in 64 bits. */
ER_HIDDEN int er_layout_plan(struct er_layout *l, uint64_t flags,
                             uint64_t n_names, uint64_t max_domains,
                             uint64_t ring_words, uint64_t data_align);

/* Decodes the metadata header `meta` (the first 8 words, zero-padded when
 * the file is shorter) of a file of `size` bytes into the metadata part
 * of *l (the rest zeroed).  Returns 0 for a version 1 header whose layout
 * fits in the file, EVENTRING_E_NOTRINGFILE when the words do not look
 * like a ring file's header at all, EVENTRING_E_VERSION when they do but
 * with another version, EVENTRING_E_TRUNCATED when the file is shorter
 * than the header says, or EVENTRING_E_CORRUPT. */
ER_HIDDEN int er_layout_meta(struct er_layout *l, const uint64_t *meta,
                             uint64_t size);

/* Decodes the extension block whose ER_EXT_WORDS fixed words are `x`
 * (its magic and version already checked) into *l, whose metadata part
 * er_layout_meta() filled, for a file of `size` bytes.  Returns 0, or
 * EVENTRING_E_CORRUPT when the block or its name tables do not fit
 * between the metadata and the ring headers; optional sections that do
 * not fit are left out (offset 0). */
ER_HIDDEN int er_layout_ext(struct er_layout *l, const uint64_t *x,
                            uint64_t size);

/* What an extension block holds besides its magic (ring_format.h): the
 * name tables (phases, counters, lifecycle kinds; a NULL name is written
 * empty), the writer's pid and, unless NULL, its program name. */
struct er_ext_desc {
  int numbering;             /* ER_PHASES_OCAML53 or _OCAML50 */
  uint64_t flags;            /* ER_EXT_FLAG_* other than _PROGRAM */
  pid_t pid;
  uint64_t dropped;          /* the ER_EXT_DROPPED word */
  uint64_t start_time;       /* with ER_EXT_FLAG_START_TIME in flags */
  uint64_t wall[4];          /* with ER_EXT_FLAG_WALLCLOCK: the start pair
                                (ts, wall), then the latest (wallclock.h) */
  const char *program;
  const char *cmdline;       /* with ER_EXT_FLAG_THREADS in flags */
  const uint64_t *thread_entries; /* with ER_EXT_FLAG_THREADS: one entry
                                     per domain slot, or NULL for zeros */
  const char *const *tables[3];
  unsigned counts[3];
  /* With ER_EXT_FLAG_META in flags: the host's OCaml version (NULL or
   * "": unknown) and the labels' ER_MD_LABEL_BYTES bytes (NULL: none),
   * as er_labels_set() makes them. */
  const char *ocaml_version;
  const unsigned char *labels;
};
/* Plans the layout of a file of `max_domains` rings of
 * `ring_words` words aligned to `data_align`, whose block holds what `d`
 * says.  Returns 0 or -EOVERFLOW. */
ER_HIDDEN int er_ext_layout(struct er_layout *l, const struct er_ext_desc *d,
                            uint64_t max_domains, uint64_t ring_words,
                            uint64_t data_align);
/* Writes every word of the block at `x` (zeroed, l->ext_bytes long), `l`
 * being er_ext_layout()'s plan for `d`, except the magic, which the
 * caller stores last. */
ER_HIDDEN void er_ext_fill(uint64_t *x, const struct er_ext_desc *d,
                           const struct er_layout *l);
/* Copies the string `name` into the `slot_bytes` bytes at `slot`, cut to
 * leave a NUL, zero-padded: a name slot of the file. */
ER_HIDDEN void er_put_name(unsigned char *slot, size_t slot_bytes,
                           const char *name);
/* Writes the ER_EXT_WALL_WORDS words of a block being made at `w`: the
 * start pair of `pairs` (wallclock.h) and the latest in its slot, one
 * published. */
ER_HIDDEN void er_wall_fill(uint64_t *w, const uint64_t pairs[4]);

/* The writer's metadata section (ER_EXT_FLAG_META, ring_format.h). */
/* Writes the ER_EXT_META_BYTES bytes at `sec`: SEQ 0, `version` (NULL:
 * empty) cut to fit, the labels' area `labels` (NULL: none). */
ER_HIDDEN void er_meta_fill(unsigned char *sec, const char *version,
                            const unsigned char *labels);
/* Whether the `n` bytes at `s` are a label name, [a-zA-Z_][a-zA-Z0-9_]*,
 * or a label value (not empty, no control character). */
ER_HIDDEN int er_label_name_ok(const char *s, size_t n);
ER_HIDDEN int er_label_value_ok(const char *s, size_t n);
/* One label of a labels' area: pointers into the area, not
 * NUL-terminated at name_len. */
struct er_label {
  const char *name, *value;
  size_t name_len, value_len;
};
/* The label at *pos (0 for the first) of the `bytes` bytes at `area`:
 * 1 with it in *out and *pos moved past it, 0 after the last, -1 when
 * the area is malformed there (no NUL, no '=', a bad name or value). */
ER_HIDDEN int er_labels_next(const unsigned char *area, size_t bytes,
                             size_t *pos, struct er_label *out);
/* The number of labels of a well-formed area (at most ER_EXT_MAX_LABELS),
 * or -1. */
ER_HIDDEN int er_labels_check(const unsigned char *area, size_t bytes);
/* Sets label `name` to `value` in the well-formed area (zeroed when
 * empty), replacing one of that name.  Returns 0, -EINVAL for a bad name
 * or value (or a malformed area), -ENOSPC when it would not fit or
 * would make more than ER_EXT_MAX_LABELS; the area is unchanged then,
 * except that a label of that name has gone. */
ER_HIDDEN int er_labels_set(unsigned char *area, size_t bytes,
                            const char *name, size_t name_len,
                            const char *value, size_t value_len);

#endif /* EVENTRING_LAYOUT_H */
