/* ring_format.h -- the on-disk layout of a ring file (format version 1).
 *
 * The one definition of the layout: the producer writes through it and
 * every reader (the consumer, the tools, the tests) reads through it.
 * ../shared/FORMAT.md (kept in doc/ of the repository) is the contract.
 *
 *   offset 0               metadata header, 8 words (er_meta)
 *   64                     eventring extension block (er_ext), which OCaml
 *                          5 readers skip because they go by the offsets
 *   headers_offset         max_domains ring headers (ring_header_size_bytes)
 *   data_offset            max_domains rings of ring_size_elements words;
 *                          eventring aligns it to a page, so that each
 *                          ring occupies whole pages of its own
 *   custom_events_offset   8192 user event name slots of 128 bytes
 *
 * Where each section lies, for a file being made and for one being read,
 * is computed in one place, layout.h (er_layout_plan(), er_layout_meta(),
 * er_layout_ext()), with every sum checked for overflow.
 *
 * All words are 64-bit in host order.  Ring positions only grow; the index
 * of position p is p & (ring_size_elements - 1).
 */
#ifndef EVENTRING_RING_FORMAT_H
#define EVENTRING_RING_FORMAT_H

#include <stdint.h>
#include <string.h>

#define ER_FORMAT_VERSION 1
#define ER_META_WORDS 8
/* OCaml 5 writes 80-byte ring headers; readers (OCaml's included) locate
 * header i at headers_offset + i * ring_header_size_bytes, so eventring
 * writes 256 bytes: cache lines of their own per domain, so that no two
 * domains' writers ever store into the same line, and room for the pairs
 * below.  Readers accept any size of at least 80 bytes that is a multiple
 * of 8. */
#define ER_RING_HEADER_BYTES 256
#define ER_RING_HEADER_MIN_BYTES 80
#define ER_NAME_SLOT_BYTES 128
#define ER_NAME_SLOTS 8192
#define ER_MAX_EVENT_WORDS 1023

/* Metadata header: word indices. */
enum {
  ER_META_VERSION = 0,
  ER_META_MAX_DOMAINS = 1,
  ER_META_RING_HEADER_SIZE = 2,
  ER_META_RING_SIZE_BYTES = 3,
  ER_META_RING_SIZE_ELEMENTS = 4,
  ER_META_HEADERS_OFFSET = 5,
  ER_META_DATA_OFFSET = 6,
  ER_META_CUSTOM_EVENTS_OFFSET = 7
};

/* Ring header: word indices.  OCaml 5 uses only the first two; eventring
 * uses the spare words for exact lost-event accounting:
 *
 *   WRITTEN  events (padding excluded) before TAIL, i.e. ever written;
 *            stored before TAIL, so it is never behind the TAIL a reader
 *            loaded earlier.  A writer killed between the two stores
 *            leaves it one ahead (the event it was committing, which was
 *            never published).
 *   DROPPED  events this domain could not write (a probe from a signal
 *            handler that interrupted a probe on the same thread).
 *   PSEQ     how many times the writer has moved HEAD.  Move k stores the
 *            pair (head, events before head) in slot k % ER_RING_NPAIRS,
 *            then PSEQ = k, then HEAD.  A reader loads PSEQ = k, the pair
 *            in slot k % NPAIRS, and PSEQ again: the pair is consistent
 *            unless the writer came round to that slot meanwhile, which
 *            takes NPAIRS - 1 more moves.  (A single sequence count would
 *            change on every event once the ring is full, and a reader on
 *            another core would seldom see it stand still.)  PSEQ = 0: head
 *            never moved, the pair is (0, 0).  A writer killed in the
 *            middle of a move leaves the previous pair complete.
 *   GAP_LOST in a compact file (snapshot.h), how many of the events
 *            before HEAD were lost while they were copied; the others
 *            were overwritten before the copy began.  0 in a live ring.
 */
enum {
  ER_RING_HEAD = 0,
  ER_RING_TAIL = 1,
  ER_RING_WRITTEN = 2,
  ER_RING_DROPPED = 3,
  ER_RING_PSEQ = 4,
  ER_RING_GAP_LOST = 5,
  ER_RING_PAIRS = 6, /* slot j: words PAIRS + 2j (head), PAIRS + 2j + 1 */
  ER_RING_NPAIRS = 13
};
_Static_assert((ER_RING_PAIRS + 2 * ER_RING_NPAIRS) * 8 <= ER_RING_HEADER_BYTES,
               "the pairs must fit in the ring header");

/* Event header word:
 *
 *   63          54 53 52    49 48          36 35              0
 *   +-------------+--+--------+--------------+-----------------+
 *   | length (10) |U | type(4)|   id (13)    |      zero       |
 *   +-------------+--+--------+--------------+-----------------+
 *
 * length counts words including the header and the timestamp; U is 1 for
 * a user event.  Padding is a runtime event of type 0 and id 0. */
#define ER_HDR(len, user, type, id)                                      \
  (((uint64_t)(len) << 54) | ((uint64_t)(user) << 53) |                 \
   ((uint64_t)(type) << 49) | ((uint64_t)(id) << 36))
#define ER_HDR_LEN(h) ((unsigned)((uint64_t)(h) >> 54))
#define ER_HDR_IS_USER(h) ((unsigned)(((uint64_t)(h) >> 53) & 1))
#define ER_HDR_TYPE(h) ((unsigned)(((uint64_t)(h) >> 49) & 0xf))
#define ER_HDR_ID(h) ((unsigned)(((uint64_t)(h) >> 36) & 0x1fff))

/* Runtime message types. */
enum {
  ER_EV_INTERNAL = 0, /* padding */
  ER_EV_LIFECYCLE = 1,
  ER_EV_BEGIN = 2,
  ER_EV_END = 3,
  ER_EV_COUNTER = 4,
  ER_EV_ALLOC = 5,
  ER_EV_FLUSH = 6
};

/* User message types. */
enum {
  ER_UEV_UNIT = 0,
  ER_UEV_INT = 1,
  ER_UEV_SPAN_BEGIN = 2,
  ER_UEV_SPAN_END = 3,
  ER_UEV_CUSTOM = 4
};

/* eventring's own events (doc/FORMAT.md, "Thread switches").  They are
 * runtime events of message type ER_EV_FLUSH, which OCaml 5 defines and
 * never writes, and whose readers (OCaml 5.0 to 5.4's, and eventring's
 * before these ids) skip it whatever its id and length; id 0 stays what
 * it always was.  Not a phase or counter id: OCaml's readers hand those
 * to callbacks that index their own tables, and later OCaml versions add
 * ids at the end of those tables.
 *
 * ER_XEV_THREAD: a thread switch in a shared (joined) slot.  Payload: the
 * thread's id as its host numbers it (an OCaml 4 program: Thread.id, -1
 * when not given), its kernel thread id, then optionally its name, padded
 * as a custom payload.  Every later event of the ring, up to the next
 * marker, is that thread's. */
#define ER_XEV_THREAD 1
#define ER_XEV_THREAD_MIN_WORDS 4 /* header, time, id, kernel tid */
#define ER_THREAD_NAME_BYTES 64   /* a name's bytes, NUL included */

/* Custom payload of `len` bytes: (len + 8) / 8 words; the last byte of the
 * last word is the number of padding bytes before it. */
#define ER_CUSTOM_WORDS(len) (((uint64_t)(len) + 8) / 8)

/* Word `w` (below ER_CUSTOM_WORDS(len)) of the padded payload of the
 * `len` bytes at `bytes`: the one home of the padding's encoding, for
 * the writer's rings and for compact files alike. */
static inline uint64_t er_padded_word(const void *bytes, uint64_t len,
                                      uint64_t w) {
  unsigned char b[8] = {0};
  uint64_t off = w * 8, words = ER_CUSTOM_WORDS(len);
  if (len > off)
    __builtin_memcpy(b, (const unsigned char *)bytes + off,
                     len - off < 8 ? len - off : 8);
  if (w == words - 1) b[7] = (unsigned char)(words * 8 - 1 - len);
  uint64_t v;
  __builtin_memcpy(&v, b, 8);
  return v;
}

/* The eventring extension block, at byte 64.  Every field is a word. */
#define ER_EXT_MAGIC UINT64_C(0x3154584547524e45) /* "ENRGEXT1" */
#define ER_EXT_VERSION 1
#define ER_PHASES_OCAML53 53 /* phase ids in the OCaml 5.3+ numbering */
#define ER_PHASES_OCAML50 50 /* phase ids in the OCaml 5.0-5.2 numbering */
#define ER_EXT_NAME_BYTES 48 /* one slot of a name table */
#define ER_EXT_FLAG_INSTRUMENTED 1
/* A program name follows the name tables: ER_EXT_PROGRAM_BYTES bytes
 * holding a NUL-terminated string, inside ER_EXT_SIZE.  A flag rather than
 * a word of the fixed part, so that readers that predate it (which check
 * the names against ER_EXT_WORDS) read these files unchanged. */
#define ER_EXT_FLAG_PROGRAM 2
#define ER_EXT_PROGRAM_BYTES 64
/* The block's last word (at byte 64 + ER_EXT_SIZE - 8, inside ER_EXT_SIZE,
 * so readers that predate the flag skip it) is the writer's start time:
 * field 22 of /proc/PID/stat, clock ticks since boot.  With ER_EXT_PID it
 * names the writing process even after its pid is reused (starttime.c). */
#define ER_EXT_FLAG_START_TIME 8
/* The writer was told to keep its file after it ends
 * (OCAML_RUNTIME_EVENTS_PRESERVE): no later start removes it once the
 * writer is gone (leftovers.c). */
#define ER_EXT_FLAG_PRESERVED 64

/* With ER_EXT_FLAG_THREADS (and ER_EXT_FLAG_PROGRAM), the program name and
 * the wall clock words (with ER_EXT_FLAG_WALLCLOCK) are followed by the
 * command line, ER_EXT_CMDLINE_BYTES bytes holding a
 * NUL-terminated string (the arguments joined by spaces, cut to fit),
 * then by one thread entry per domain slot (max_domains of the metadata
 * header), ER_EXT_THREAD_BYTES each, whose words are ER_THR_*: who holds
 * the slot, so that readers can name each domain's track after its
 * thread.  Inside ER_EXT_SIZE and after the name tables, so readers that
 * predate the flag read these files unchanged. */
#define ER_EXT_FLAG_THREADS 32
#define ER_EXT_CMDLINE_BYTES 256
#define ER_EXT_THREAD_BYTES 48
#define ER_EXT_THREAD_NAME_BYTES 24
/* ER_THR_SINCE before the holder's domain_spawn is written. */
#define ER_THR_SINCE_PENDING UINT64_MAX
enum {
  /* Odd while the writer changes TID or NAME: a reader loads it, the
   * entry, and it again, and keeps the entry when both loads are the
   * same even value. */
  ER_THR_SEQ = 0,
  ER_THR_TID = 1,   /* the holder's Linux thread id; 0: never held */
  /* The timestamp of the holder's domain_spawn event, which begins its
   * events in the ring; 0 when its events begin the ring (the thread that
   * started tracing, or one that held the slot before this file). */
  ER_THR_SINCE = 2,
  ER_THR_NAME = 3,  /* ER_EXT_THREAD_NAME_BYTES: a NUL-terminated name */
  ER_THR_WORDS = ER_EXT_THREAD_BYTES / 8
};
_Static_assert(ER_THR_NAME * 8 + ER_EXT_THREAD_NAME_BYTES ==
                   ER_EXT_THREAD_BYTES,
               "a thread entry is its words and its name");

/* With ER_EXT_FLAG_META, the writer's metadata follows the thread
 * entries (or what comes last before them), before the start time word:
 * ER_EXT_META_BYTES bytes, inside ER_EXT_SIZE, so readers that predate the
 * flag read these files unchanged.  Its words are ER_META_*:
 *   SEQ      odd while the writer changes the section (the OCaml version
 *            is given by the host after the file is made: tracing may
 *            start before the host's own initialisation); a reader loads
 *            it, the section, and it again, and keeps the copy when both
 *            loads are the same even value
 *   VERSION  ER_EXT_OCAML_VERSION_BYTES: the OCaml version of the host
 *            ("4.14.2"), NUL-terminated; empty when the writer does not
 *            know it
 *   LABELS   the rest: the operator's labels, each "name=value"
 *            NUL-terminated, one after the other, an empty string (or
 *            the section's end) after the last.  A name matches
 *            [a-zA-Z_][a-zA-Z0-9_]* and does not start with __ (a
 *            Prometheus label name of the user's), a value
 *            holds no control character; at most ER_EXT_MAX_LABELS. */
#define ER_EXT_FLAG_META 128
#define ER_EXT_META_BYTES 512
#define ER_EXT_OCAML_VERSION_BYTES 32
#define ER_EXT_MAX_LABELS 16
enum {
  ER_MD_SEQ = 0,
  ER_MD_VERSION = 8,                                  /* a byte offset */
  ER_MD_LABELS = ER_MD_VERSION + ER_EXT_OCAML_VERSION_BYTES, /* likewise */
  ER_MD_LABEL_BYTES = ER_EXT_META_BYTES - ER_MD_LABELS
};

/* ER_EXT_LEASE_SLOTS lease words follow the fixed part, before the name
 * tables (ER_EXT_NAMES_OFFSET says where those are, so readers that
 * predate the flag read these files unchanged): each holds the pid of a
 * reader that keeps a paused process recording (remote.h), or 0. */
#define ER_EXT_FLAG_LEASES 4
#define ER_EXT_LEASE_SLOTS 16

/* ER_EXT_WALL_WORDS words of wall clock (wallclock.c) follow the program
 * name (or the name tables, without one), before the start time word:
 * readers that predate the flag find the program name and the start time
 * where they were.  They map timestamps (CLOCK_MONOTONIC ns) to
 * CLOCK_REALTIME (ns since the Unix epoch): a pair taken when the file
 * was made, which never changes, and the latest pair, in two slots that a
 * generation word selects so that a reader never takes a torn one. */
#define ER_EXT_FLAG_WALLCLOCK 16
enum {
  ER_WALL_GEN = 0,        /* pairs published; the latest is in slot gen & 1 */
  ER_WALL_START_TS = 1,   /* the pair taken when the file was made */
  ER_WALL_START_WALL = 2,
  ER_WALL_SLOTS = 3,      /* slot j: words SLOTS + 2j (ts), SLOTS + 2j + 1 */
  ER_EXT_WALL_WORDS = 7
};

enum {
  ER_EXT_MAGIC_W = 0,
  ER_EXT_VERSION_W = 1,
  ER_EXT_SIZE = 2,            /* bytes, names included */
  ER_EXT_PHASE_NUMBERING = 3, /* ER_PHASES_OCAML53 */
  ER_EXT_FLAGS = 4,           /* ER_EXT_FLAG_* */
  ER_EXT_PID = 5,
  ER_EXT_DROPPED = 6, /* events dropped for want of a free domain slot */
  ER_EXT_NAMES_OFFSET = 7, /* file offset of the name tables */
  ER_EXT_N_PHASES = 8,
  ER_EXT_N_COUNTERS = 9,
  ER_EXT_N_LIFECYCLE = 10,
  ER_EXT_NAME_SLOT = 11, /* ER_EXT_NAME_BYTES */
  /* Control from outside (remote.h).  Their first four bytes are 32-bit
   * futex words: */
  ER_EXT_CTL_REQ = 12,    /* request: sequence << 2 | ER_CTL_* */
  ER_EXT_CTL_ACK = 13,    /* the last request applied */
  ER_EXT_CTL_WATCHER = 14,/* 1 while a thread serves requests */
  ER_EXT_PAUSED = 15,     /* 1 while tracing is paused */
  ER_EXT_WORDS = 16       /* fixed part; the name tables follow */
};
#define ER_CTL_PAUSE 1
#define ER_CTL_RESUME 2
#define ER_CTL_LEASES 3 /* the lease words changed: count the holders */
/* The name tables follow the fixed part: n_phases names, then n_counters,
 * then n_lifecycle, each a NUL-terminated string in a 48-byte slot; then,
 * with ER_EXT_FLAG_PROGRAM, the program name; then, with
 * ER_EXT_FLAG_WALLCLOCK, the wall clock; then, with ER_EXT_FLAG_THREADS,
 * the command line and the thread entries; then, with ER_EXT_FLAG_META,
 * the writer's metadata. */

/* Name tables of the vocabulary (names.c).  The phase and counter tables
 * list OCaml's ids, then eventring's extension ids (EVENTRING_PHASE_COUNT
 * and EVENTRING_COUNTER_COUNT onwards), which only a file's own name
 * table gives meaning to. */
extern const char *const eventring__phase_names_53[];
extern const unsigned eventring__n_phases_53;
extern const char *const eventring__phase_names_50[];
extern const unsigned eventring__n_phases_50;
extern const char *const eventring__counter_names[];
extern const unsigned eventring__n_counters;
extern const char *const eventring__lifecycle_names[];
extern const unsigned eventring__n_lifecycle;
/* OCaml's own lists, the names of ids in files an OCaml 5 runtime wrote:
 * phases in the 5.3+ numbering (5.0-5.2's is eventring__phase_names_50)
 * and counters, as far as read from OCaml's headers (up to 5.5, less
 * 5.5's ids not read); and which release added which ids. */
extern const char *const eventring__ocaml_phase_names[];
extern const unsigned eventring__n_ocaml_phases;
extern const char *const eventring__ocaml_counter_names[];
extern const unsigned eventring__n_ocaml_counters;
struct er_ocaml_release {
  int release;            /* 50 for OCaml 5.0, ..., 55 for 5.5 */
  int numbering;          /* ER_PHASES_OCAML50 or _OCAML53 */
  unsigned phases;        /* the phase ids it writes are below */
  unsigned counters;      /* the counter ids it writes are below */
};
extern const struct er_ocaml_release eventring__ocaml_releases[];
extern const unsigned eventring__n_ocaml_releases;
/* Their sizes as constants (names.c checks them against the tables), in
 * terms of eventring.h's enums: the ids a probe may write, since they are
 * the ids a file of this library has names for. */
#define ER_N_PHASES_53 (EVENTRING_PHASE_COUNT + 7)
#define ER_N_COUNTERS (EVENTRING_COUNTER_COUNT + 6)
#define ER_N_LIFECYCLE EVENTRING_LIFECYCLE_COUNT

/* File names (doc/FORMAT.md).  <pid>.events is the file of the image
 * running under <pid>; <pid>.<N>.events (N >= 1) is the file of an
 * earlier image of that process, kept at an exec or at a restart with
 * OCAML_RUNTIME_EVENTS_PRESERVE, N counting up in the order written.
 * Whether base name `name` is one of them: 1 with the pid in *pid and N
 * in *image (0 for <pid>.events), else 0.  Each number has 1 to 10
 * digits, is not 0 and fits in 31 bits.  Async-signal-safe: the library
 * reads directories with it in a fork handler, the tools everywhere. */
static inline int er_ring_name(const char *name, int32_t *pid,
                               unsigned long *image) {
  unsigned long v[2] = {0, 0};
  int parts = 0;
  const char *p = name;
  while (parts < 2) {
    const char *start = p;
    unsigned long x = 0;
    for (; *p >= '0' && *p <= '9' && p - start < 10; p++)
      x = x * 10 + (unsigned long)(*p - '0');
    if (p == start || *p != '.' || x == 0 || x > INT32_MAX) return 0;
    v[parts++] = x;
    p++;
    if (!strcmp(p, "events")) break;
  }
  if (strcmp(p, "events") != 0) return 0;
  *pid = (int32_t)v[0];
  *image = parts == 2 ? v[1] : 0;
  return 1;
}

#endif /* EVENTRING_RING_FORMAT_H */
