/* cursor.h -- the cursor of the consumer (internal): its state, and the
 * one path by which every part of the consumer reads the file's bytes.
 *
 * The consumer is four files, one job each:
 *
 *   consumer_io.c     the three ways to the bytes (a mapping guarded by
 *                     sigbus.c, pread(2), an image in memory): making,
 *                     choosing and closing them
 *   consumer_open.c   opening a file: its metadata and extension block
 *                     checked (layout.h) and copied into the cursor
 *   consumer_poll.c   polling: loading heads, copying runs of ring words,
 *                     decoding and delivering events
 *   consumer_info.c   the callbacks table, and what a cursor tells besides
 *                     events (names, drops, the wall clock, the threads),
 *                     including once released
 *
 * They call one another in that direction only: open calls io, poll and
 * info; info calls io and poll; poll calls nothing of the others, and
 * every one reads through get() and get_acq() below.
 *
 * Loads from the mapping are relaxed atomics, so that a cursor in the
 * process that writes the rings reads them without a data race.
 */
#ifndef EVENTRING_CURSOR_H
#define EVENTRING_CURSOR_H

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "sigbus.h"

/* Words copied out of a ring per batch: enough to amortise the fence and
 * the reload of head, small enough to stay in L2. */
#define CHUNK 16384

/* No ring position can exceed 2^60 words: a writer storing one word per
 * nanosecond, faster than any probe, takes 36 years to get there.  A
 * larger head or tail is a malformed file.  The counts of eventring's
 * files have the same bound: the events before head cannot exceed
 * WRITTEN (every event before head was written), nor WRITTEN 2^60 (one
 * event per nanosecond for 36 years), so no domain's lost count can;
 * not half of head, as a compact file (snapshot.c) tells a gap of any
 * size with a head of one ring size.  The DROPPED words count events
 * never written, under the same bound. */
#define MAX_POSITION (UINT64_C(1) << 60)
#define MAX_COUNT (UINT64_C(1) << 60)

/* The bits of an event header below the id, which every writer leaves 0
 * (ring_format.h). */
#define HDR_ZERO_BITS ((UINT64_C(1) << 36) - 1)

/* The ring header words a cursor on an eventring file reads: the pairs
 * end the header. */
#define OUR_HEADER_BYTES ((ER_RING_PAIRS + 2 * ER_RING_NPAIRS) * 8)

struct eventring_callbacks {
  eventring_phase_fn runtime_begin, runtime_end;
  eventring_counter_fn runtime_counter;
  eventring_alloc_fn alloc;
  eventring_lifecycle_fn lifecycle;
  eventring_user_unit_fn user_unit;
  eventring_user_int_fn user_int;
  eventring_user_span_fn user_span;
  eventring_user_custom_fn user_custom;
  eventring_lost_fn lost_events;
  eventring_thread_fn thread;
  eventring_window_fn window;
};

struct ring_pos {
  uint64_t pos;     /* next word position to read */
  uint64_t events;  /* events (padding excluded) before pos */
  uint64_t malformed; /* bad events skipped */
  int broken;       /* corrupt: skipped from now on */
  int looked;       /* this cursor has loaded the ring's head once */
  /* The last pair load_head() read whole, and its number (0: none): while
   * PSEQ still says it, head has not moved since. */
  uint64_t seq, seq_head, seq_evicted;
};

/* How the cursor reaches the file's bytes (see the opening comment). */
enum via { VIA_PREAD, VIA_MAP, VIA_IMAGE };

struct eventring_cursor {
  int fd;                   /* -1 for an image in memory */
  /* An enum via, read with via_of(): a poll may turn VIA_MAP into
   * VIA_PREAD for good (poll_guarded()) while another thread asks the
   * cursor for a name or a thread entry. */
  int via;
  const unsigned char *map; /* mapped, or the image; NULL for pread only */
  int view;                 /* sigbus.c's number for the map, or -1 */
  size_t map_bytes;
  uint64_t max_domains, ring_words, ring_bytes, hdr_bytes;
  uint64_t headers_off, data_off, custom_off;
  int ours;                 /* eventring's extension block is present */
  int numbering;            /* ER_PHASES_OCAML53 or _OCAML50 */
  int forced;               /* ER_PHASES_* set by the caller, or 0 */
  int basis;                /* EVENTRING_NUMBERING_GUESSED, ... */
  struct er_numbering *infer; /* OCaml 5's files: numbering.c's evidence */
  pid_t writer_pid;         /* from the extension block, 0: unknown */
  char *program;            /* the program name of the extension block */
  uint64_t wall_off;        /* file offset of the wall clock words, or 0 */
  char *cmdline;            /* its command line (ER_EXT_FLAG_THREADS) */
  uint64_t threads_off;     /* its thread entries' offset, 0: none */
  char *ocaml_version;      /* ER_EXT_FLAG_META: the host's, or NULL */
  char *labels;             /* ER_EXT_FLAG_META: n_labels pairs of
                               NUL-terminated name and value, or NULL */
  unsigned n_labels;
  /* Name tables from the file (ours) or built in. */
  char *ext_names;          /* n_phases + n_counters slots of name_bytes */
  unsigned n_phases, n_counters, name_bytes;
  char **user_names;        /* ER_NAME_SLOTS, cached once non-empty;
                               allocated at the first user event */
  /* The kinds the first pass of the decode validates in runs (read_ring):
   * for each dispatch key, the header's 28 high bits less `base` must be
   * below `lim`; lim is 0 for the kinds decoded one at a time. */
  struct fast_kind { uint32_t base, lim; } fast[32];
  uint64_t busy;            /* a poll is running (atomic) */
  struct ring_pos *rings;
  uint64_t *buf;            /* the copy: min(CHUNK, ring size) words */
  uint64_t buf_words;
  /* What a released cursor answers from (eventring__cursor_release()),
   * NULL while the file is open. */
  struct kept *kept;
};

/* The answers a released cursor keeps: what its accessors would read
 * from the file.  Each `*_err` is the error reading it gave, or 0. */
struct kept {
  struct { uint64_t n; int err; } *dropped; /* domains -1 .. max - 1 */
  eventring_slot_thread *threads; /* max_domains entries, or NULL */
  int *thread_rc;                /* eventring_cursor_slot_thread()'s */
  eventring_wallclock wall[2];   /* START, LATEST */
  int wall_err[2];
  unsigned char bad_name[ER_NAME_SLOTS / 8]; /* slots without a NUL */
};

/* How open_fd() reads a file. */
enum open_as {
  OPEN_PREAD, /* with pread(2) */
  OPEN_OWN,   /* mapped, this process's own file: the handler is ours */
  OPEN_OTHER  /* mapped, installing the handler (sigbus.c) if need be */
};

static inline uint64_t load(const void *p) {
  return er_load_rlx((uint64_t *)p);
}

/* Relaxed: the store in poll_guarded() is one-way, and either value reads
 * the same bytes of the file. */
static inline enum via via_of(const eventring_cursor *c) {
  return (enum via)er_iload_rlx(&c->via);
}

/* EVENTRING_E_TRUNCATED when the file was cut under the cursor's mapping
 * (sigbus.c put zeros in its place), else 0.  Looked at after each read
 * through the mapping, so that what came from the zeros is never used:
 * the mark is stored before the zeros are mapped, and a thread that reads
 * them has faulted itself or was interrupted to drop the old mapping
 * (TLB shootdown), either way after the store. */
static inline int view_cut(const eventring_cursor *c) {
  return c->view >= 0 && er_sigbus_view_cut(c->view)
             ? EVENTRING_E_TRUNCATED
             : 0;
}

/* Copies the `bytes` bytes at offset `off` of the file into `dst`.  The
 * caller has checked the range against the size the file had when the
 * cursor opened.  Returns 0, EVENTRING_E_TRUNCATED when the file has
 * shrunk since, or another negative errno from pread().  Small aligned
 * reads from a mapping (header words, name slots) are relaxed loads, as
 * this process's writer may be storing them; a run of ring words is a
 * plain copy, which the re-check of head validates (read_ring). */
static inline int get(const eventring_cursor *c, uint64_t off,
                      void *dst, size_t bytes) {
  if (via_of(c) == VIA_PREAD) {
    for (;;) {
      ssize_t r = pread(c->fd, dst, bytes, (off_t)off);
      if (r == (ssize_t)bytes) return 0;
      if (r >= 0) return EVENTRING_E_TRUNCATED;
      if (errno != EINTR) return -errno;
    }
  }
  if (off % 8 == 0 && bytes % 8 == 0 && bytes <= 256) {
    uint64_t *w = dst;
    for (size_t i = 0; i < bytes / 8; i++) w[i] = load(c->map + off + 8 * i);
  } else {
    memcpy(dst, c->map + off, bytes);
  }
  return view_cut(c);
}

/* One word, with acquire order: the loads after it (the copy of the ring
 * words, the next header word) stay after it.  Through pread(), the
 * fence orders what the kernel copied for us before what we load next. */
static inline int get_acq(const eventring_cursor *c, uint64_t off,
                          uint64_t *w) {
  if (via_of(c) != VIA_PREAD) {
    *w = er_load_acq((const uint64_t *)(c->map + off));
    return view_cut(c);
  }
  int e = get(c, off, w, 8);
  er_fence_acquire();
  return e;
}

/* Value of user_name() for a slot without a NUL: the event naming it is
 * malformed. */
#define BAD_NAME 1

/* consumer_poll.c: the name in slot `id` of a user event into *name,
 * read from the file (and kept once it is there), "" when the slot is
 * empty.  Returns 0, BAD_NAME when the slot has no NUL, or a negative
 * error (the file shrank, no memory). */
ER_HIDDEN int er_cursor_user_name(eventring_cursor *c, unsigned id,
                                  const char **name);
/* consumer_poll.c: the dispatch table of the run decoder (c->fast) for
 * the cursor's file, once its numbering and names are known. */
ER_HIDDEN void er_cursor_set_fast_kinds(eventring_cursor *c);
/* consumer_poll.c: weighs what the rings of an OCaml 5 file hold beyond
 * what it saw before and takes numbering.c's verdict into c->numbering.
 * Returns 0 or -ENOMEM. */
ER_HIDDEN int er_cursor_infer_numbering(eventring_cursor *c);

/* consumer_io.c: a cursor on the regular file `fd` of `size` bytes (at
 * least the metadata), reading it as `as` says, or with pread(2) when the
 * file cannot be mapped and guarded; NULL when out of memory.  The rest
 * of the cursor is zero. */
ER_HIDDEN eventring_cursor *er_cursor_new_fd(int fd, uint64_t size,
                                             enum open_as as);
/* consumer_io.c: a cursor on the `len` bytes at `bytes` (8-byte aligned),
 * which stay the caller's; NULL when out of memory. */
ER_HIDDEN eventring_cursor *er_cursor_new_image(const void *bytes,
                                                size_t len);
/* consumer_io.c: gives up the cursor's view (and its SIGBUS watch),
 * mapping and descriptor; every accessor that reads the file fails
 * afterwards. */
ER_HIDDEN void er_cursor_close_file(eventring_cursor *c);
/* consumer_info.c: frees what a released cursor kept (NULL: nothing). */
ER_HIDDEN void er_cursor_kept_free(struct kept *k);

#endif /* EVENTRING_CURSOR_H */
