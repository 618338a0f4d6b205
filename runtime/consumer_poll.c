/* consumer.c -- reading ring files: the cursor API of eventring.h.
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
 * The file is never trusted.  Every value is loaded once into a local and
 * checked before use: the metadata and the extension block against the
 * file's size when the cursor opens, positions against the ring size and
 * against MAX_POSITION, lost counts against the positions, event lengths
 * against the copy and the type, name slots for a NUL.
 *
 * How the file is read.  A file may be truncated while we read it (by its
 * owner, or by anyone who may write it), and a mapping of a file that
 * shrank raises SIGBUS on the next touch of a page past its new end: no
 * check beforehand closes that window.  So a cursor maps a file only as
 * a view that sigbus.c guards: a fault there leaves zeros in the view,
 * marked cut, which the poll reports as EVENTRING_E_TRUNCATED in place
 * of anything it read.  On another process's file the cursor installs
 * that handler (chained to the host's) if this process has not.  Each
 * poll first checks that a fault would still reach the handler (the host
 * may have replaced it, or this thread block SIGBUS): if not, the cursor
 * reads with pread(2) from then on.  It reads with pread(2) from the
 * start when the view table is full (tools reading many files), when the
 * mapping fails, or when EVENTRING_READ_PREAD is set: one call per run of
 * ring words, one per header word whose order matters, a short read
 * being EVENTRING_E_TRUNCATED.  A cursor on an image in memory (the
 * fuzzer's) reads the caller's bytes.  Every access goes through get()
 * and get_acq(), so that the decoding is the same for all three.  The
 * size is also checked with fstat() before each poll, so that a file cut
 * anywhere is reported at once, whatever the poll reads.
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
 *
 * Loads from the mapping are relaxed atomics, so that a cursor in the
 * process that writes the rings reads them without a data race.
 *
 * Released cursors.  A tool reading more finished files than it may hold
 * descriptors releases each once read to its end
 * (eventring__cursor_release()): what the accessors would still read
 * from the file is copied into a struct kept, the view, mapping and
 * descriptor go, and from then on every accessor answers from the copy.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "layout.h"
#include "wallclock.h"
#include "numbering.h"
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

#ifdef ER_CONSUMER_TEST
/* Test builds only (a test compiles this file itself with
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
/* Opening.                                                             */

static uint64_t load(const void *p) { return er_load_rlx((uint64_t *)p); }

/* Relaxed: the store in poll_guarded() is one-way, and either value reads
 * the same bytes of the file. */
static enum via via_of(const eventring_cursor *c) {
  return (enum via)er_iload_rlx(&c->via);
}

/* EVENTRING_E_TRUNCATED when the file was cut under the cursor's mapping
 * (sigbus.c put zeros in its place), else 0.  Looked at after each read
 * through the mapping, so that what came from the zeros is never used:
 * the mark is stored before the zeros are mapped, and a thread that reads
 * them has faulted itself or was interrupted to drop the old mapping
 * (TLB shootdown), either way after the store. */
static int view_cut(const eventring_cursor *c) {
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
static int get(const eventring_cursor *c, uint64_t off, void *dst,
               size_t bytes) {
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
static int get_acq(const eventring_cursor *c, uint64_t off, uint64_t *w) {
  if (via_of(c) != VIA_PREAD) {
    *w = er_load_acq((const uint64_t *)(c->map + off));
    return view_cut(c);
  }
  int e = get(c, off, w, 8);
  er_fence_acquire();
  return e;
}

/* The command line and the thread entries (ER_EXT_FLAG_THREADS) where
 * the layout `l` places them: the line copied into c->cmdline, the
 * entries' offset kept for eventring_cursor_slot_thread().  Returns 0 or a
 * negative error from get(). */
static int read_threads_part(eventring_cursor *c, const struct er_layout *l) {
  if (!l->cmdline_off) return 0;
  char line[ER_EXT_CMDLINE_BYTES];
  int e = get(c, l->cmdline_off, line, sizeof line);
  if (e) return e;
  if (!memchr(line, 0, sizeof line)) return 0;
  if (!(c->cmdline = strdup(line))) return -ENOMEM;
  c->threads_off = l->threads_off;
  return 0;
}

/* The program name that follows the name tables (ER_EXT_FLAG_PROGRAM),
 * copied into c->program when it is there and well formed; a name that
 * is not is ignored, as nothing else depends on it, and so are the
 * command line and the thread entries after it.  Returns 0 or a negative
 * error from get(). */
static int read_program(eventring_cursor *c, const struct er_layout *l) {
  if (!l->program_off) return 0;
  char name[ER_EXT_PROGRAM_BYTES];
  int e = get(c, l->program_off, name, sizeof name);
  if (e) return e;
  if (!memchr(name, 0, sizeof name)) return 0;
  if (!(c->program = strdup(name))) return -ENOMEM;
  return read_threads_part(c, l);
}

/* Reads the extension block, if there is one, whose place `l` (from
 * er_layout_meta()) gives, and copies its name tables and program name.
 * Returns 0, EVENTRING_E_CORRUPT when the block is there but bad, or an
 * error from get(). */
static int read_ext(eventring_cursor *c, struct er_layout *l, uint64_t size) {
  if (c->headers_off < ER_EXT_OFFSET + ER_EXT_WORDS * 8) return 0;
  uint64_t x[ER_EXT_WORDS];
  int e = get(c, ER_EXT_OFFSET, x, sizeof x);
  if (e) return e;
  if (x[ER_EXT_MAGIC_W] != ER_EXT_MAGIC) return 0;
  if (x[ER_EXT_VERSION_W] != ER_EXT_VERSION) return EVENTRING_E_VERSION;
  /* The pairs that give head and the events before it end eventring's
   * ring header: a file with this block and shorter headers would have
   * us read them from the next domain's header, or past the last. */
  if (c->hdr_bytes < OUR_HEADER_BYTES) return EVENTRING_E_CORRUPT;
  c->writer_pid = x[ER_EXT_PID] <= INT_MAX ? (pid_t)x[ER_EXT_PID] : 0;
  if ((e = er_layout_ext(l, x, size)) != 0) return e;
  if (x[ER_EXT_PHASE_NUMBERING] != ER_PHASES_OCAML53 &&
      x[ER_EXT_PHASE_NUMBERING] != ER_PHASES_OCAML50)
    return EVENTRING_E_CORRUPT;
  uint64_t np = x[ER_EXT_N_PHASES], nc = x[ER_EXT_N_COUNTERS];
  uint64_t slot = l->name_bytes;
  c->ours = 1;
  c->numbering = (int)x[ER_EXT_PHASE_NUMBERING];
  c->n_phases = (unsigned)np;
  c->n_counters = (unsigned)nc;
  c->name_bytes = (unsigned)slot;
  size_t bytes = (size_t)((np + nc) * slot);
  c->ext_names = malloc(bytes ? bytes : 1);
  if (!c->ext_names) return -ENOMEM;
  if (bytes && (e = get(c, l->names_off, c->ext_names, bytes)) != 0)
    return e;
  for (uint64_t i = 0; i < np + nc; i++)
    if (!memchr(c->ext_names + i * slot, 0, slot)) return EVENTRING_E_CORRUPT;
  c->wall_off = l->wall_off;
  return read_program(c, l);
}

static int setup(eventring_cursor **out, eventring_cursor *c, uint64_t size);
static void set_fast_kinds(eventring_cursor *c);

/* Lets numbering.c weigh what the rings of an OCaml 5 file hold beyond
 * what it saw before, through get(), and takes its verdict.  Returns 0
 * or -ENOMEM. */
static int read_for_numbering(const void *ctx, uint64_t off, void *dst,
                              uint64_t bytes) {
  const eventring_cursor *c = ctx;
  return bytes == 8 ? get_acq(c, off, dst) : get(c, off, dst, (size_t)bytes);
}

static int infer_numbering(eventring_cursor *c) {
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

/* How open_fd() reads a file. */
enum open_as {
  OPEN_PREAD, /* with pread(2) */
  OPEN_OWN,   /* mapped, this process's own file: the handler is ours */
  OPEN_OTHER  /* mapped, installing the handler (sigbus.c) if need be */
};

/* Whether EVENTRING_READ_PREAD asks for pread(2) on every file. */
static int pread_forced(void) {
  const char *v = getenv("EVENTRING_READ_PREAD");
  return v && *v && strcmp(v, "0") != 0;
}

static int open_fd(eventring_cursor **out, int fd, enum open_as as) {
  *out = NULL;
  struct stat st;
  if (fstat(fd, &st) < 0) return -errno;
  if (!S_ISREG(st.st_mode)) return EVENTRING_E_NOTRING;
  /* A ring file holds another user's program's events: only its owner
   * (or the superuser) may read it, as the 0600 mode says. */
  if (st.st_uid != geteuid() && geteuid() != 0) return -EPERM;
  uint64_t size = (uint64_t)st.st_size;
  if (size < ER_META_WORDS * 8) {
    /* Too short to map usefully, but what it holds says whether it is a
     * ring file cut short or something else. */
    uint64_t meta[ER_META_WORDS] = {0};
    if (pread(fd, meta, (size_t)size, 0) < 0) return -errno;
    return er_check_meta(meta, size);
  }
  if (size > (uint64_t)SIZE_MAX) return EVENTRING_E_CORRUPT;

  eventring_cursor *c = calloc(1, sizeof *c);
  if (!c) return -ENOMEM;
  c->fd = fd;
  c->via = VIA_PREAD;
  c->view = -1;
  c->map_bytes = (size_t)size;
  if (as != OPEN_PREAD && !pread_forced()) {
    /* Mapped only once guarded: with no view free (a tool reading many
     * files holds more cursors than the table has views), or no mapping,
     * the cursor reads with pread(2), which needs neither. */
    void *m = mmap(NULL, c->map_bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED) {
      c->view = as == OPEN_OWN ? er_sigbus_watch_view(m, c->map_bytes)
                               : er_sigbus_watch_other_view(m, c->map_bytes);
      if (c->view < 0) {
        munmap(m, c->map_bytes);
      } else {
        c->map = m;
        c->via = VIA_MAP;
      }
    }
  }
  return setup(out, c, size);
}

/* Checks the metadata and the extension block of the file in c->map
 * (`size` bytes) and completes the cursor.  Frees it on failure, except
 * for the file descriptor, which the caller closes. */
static int setup(eventring_cursor **out, eventring_cursor *c, uint64_t size) {
  uint64_t meta[ER_META_WORDS];
  struct er_layout l;
  int err = get(c, 0, meta, sizeof meta);
  if (!err) err = er_layout_meta(&l, meta, size);
  if (err) goto fail;
  c->max_domains = l.max_domains;
  c->hdr_bytes = l.hdr_bytes;
  c->ring_bytes = l.ring_bytes;
  c->ring_words = l.ring_words;
  c->headers_off = l.headers_off;
  c->data_off = l.data_off;
  c->custom_off = l.custom_off;
  c->numbering = ER_PHASES_OCAML53;
  if ((err = read_ext(c, &l, size)) != 0) goto fail;
  c->rings = calloc((size_t)c->max_domains, sizeof *c->rings);
  c->buf_words = c->ring_words < CHUNK ? c->ring_words : CHUNK;
  c->buf = malloc(c->buf_words * sizeof *c->buf);
  if (!c->rings || !c->buf) {
    err = -ENOMEM;
    goto fail;
  }
  c->basis = EVENTRING_NUMBERING_FROM_FILE;
  if (!c->ours && (err = infer_numbering(c)) != 0) goto fail;
  set_fast_kinds(c);
  *out = c;
  return 0;

fail:
  c->fd = -1; /* the caller closes it */
  eventring_cursor_free(c);
  return err;
}

static int open_path(eventring_cursor **out, const char *path,
                     enum open_as as) {
  /* O_NONBLOCK: opening a FIFO planted at the path must not block us. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return -errno;
  int r = open_fd(out, fd, as);
  if (r != 0) close(fd);
  return r;
}

int eventring_cursor_open_file(eventring_cursor **out, const char *path) {
  if (!out) return EVENTRING_E_INVAL;
  *out = NULL;
  if (!path) return EVENTRING_E_INVAL;
  return open_path(out, path, OPEN_OTHER);
}

int eventring_cursor_open(eventring_cursor **out, const char *dir, pid_t pid) {
  if (!out) return EVENTRING_E_INVAL;
  *out = NULL;
  char path[PATH_MAX];
  if (pid == 0 && !dir) {
    /* This process: the file its tracing writes (a forked child's made
     * now, if pending). */
    er_lock();
    er_fork_file_locked();
    int live = er_iload_rlx(&er_st.live);
    if (live) snprintf(path, sizeof path, "%s", er_st.path);
    er_unlock();
    if (!live) return EVENTRING_E_NOTSTARTED;
    /* Our own file, mapped: a cut is repaired (sigbus.c).  Opening the
     * file by name again could find another, should it have been
     * replaced: it is then read like any other file. */
    return open_path(out, path, OPEN_OWN);
  }
  if (pid < 0) return EVENTRING_E_INVAL;
  int n = er_file_path(path, sizeof path, dir, pid ? pid : getpid());
  if (n) return n;
  return open_path(out, path, OPEN_OTHER);
}

/* A cursor on a ring file's image in memory, which stays the caller's and
 * must outlive the cursor: the same checks and decoding, without a file.
 * For the fuzzer, which would otherwise spend its time in mmap(). */
int er_cursor_open_image(eventring_cursor **out, const void *bytes,
                         size_t len) {
  *out = NULL;
  if ((uintptr_t)bytes % 8) return EVENTRING_E_INVAL;
  if (len < ER_META_WORDS * 8) {
    uint64_t meta[ER_META_WORDS] = {0};
    memcpy(meta, bytes, len);
    return er_check_meta(meta, len);
  }
  eventring_cursor *c = calloc(1, sizeof *c);
  if (!c) return -ENOMEM;
  c->fd = -1;
  c->via = VIA_IMAGE;
  c->view = -1;
  c->map = bytes;
  c->map_bytes = len;
  return setup(out, c, len);
}

/* Gives up the cursor's view (and its SIGBUS watch), mapping and
 * descriptor; every accessor that reads the file fails afterwards. */
static void close_file(eventring_cursor *c) {
  if (c->view >= 0) {
    er_sigbus_unwatch_view(c->view);
    munmap((void *)c->map, c->map_bytes);
    c->view = -1;
  }
  c->map = NULL;
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
}

/* Frees what a released cursor kept (NULL: nothing). */
static void kept_free(struct kept *k) {
  if (!k) return;
  free(k->dropped);
  free(k->threads);
  free(k->thread_rc);
  free(k);
}

void eventring_cursor_free(eventring_cursor *c) {
  if (!c) return;
  close_file(c);
  kept_free(c->kept);
  if (c->user_names)
    for (unsigned i = 0; i < ER_NAME_SLOTS; i++)
      if (c->user_names[i]) free(c->user_names[i]);
  free(c->user_names);
  free(c->buf);
  free(c->ext_names);
  free(c->program);
  free(c->cmdline);
  free(c->rings);
  er_numbering_free(c->infer);
  free(c);
}

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

/* Value of user_name() for a slot without a NUL: the event naming it is
 * malformed. */
#define BAD_NAME 1

/* The name in slot `id` into *name, read from the file (and kept once it
 * is there), "" when the slot is empty.  Returns 0, BAD_NAME when the
 * slot has no NUL, or a negative error (the file shrank, no memory). */
static int user_name(eventring_cursor *c, unsigned id, const char **name) {
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

const char *eventring_cursor_user_name(const eventring_cursor *c, int id) {
  if (!c || id < 0 || id >= ER_NAME_SLOTS) return NULL;
  const char *name;
  return user_name((eventring_cursor *)c, (unsigned)id, &name) ? NULL : name;
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

static void set_fast_kinds(eventring_cursor *c) {
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
    } else { /* the user kinds of set_fast_kinds() */
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
    } else { /* the user kinds of set_fast_kinds() */
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
    int e = user_name(c, id, &name);
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
      infer_numbering(c);
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
  close_file(c);
  c->kept = k;
  return 0;
fail:
  kept_free(k);
  return e;
}
