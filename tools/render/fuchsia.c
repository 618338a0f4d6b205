/* fuchsia.c -- `eventring trace` in the Fuchsia trace format (FXT), the
 * compact binary format Perfetto opens natively.
 *
 * The format is a sequence of records, each a whole number of 64-bit
 * little-endian words whose first word holds the record's type (bits
 * 0..3) and size in words (bits 4..15, the header included).  A file is
 * valid after any whole record, which suits a trace that may be cut
 * short; we still finish every record we start.  What we write, in order:
 *
 *   magic number record      the 8 bytes every FXT file starts with;
 *   provider info metadata   provider 1, "eventring";
 *   initialization record    1e9 ticks per second: our ticks are the
 *                            CLOCK_MONOTONIC nanoseconds of the ring;
 *   kernel object record     the process (ZX_OBJ_TYPE_PROCESS, 1): its
 *                            koid is the pid, its name the program's
 *                            (and one for each further process of a
 *                            trace of several, before its threads);
 *   then, as they come:
 *   string records           names, categories and argument keys, each
 *                            registered once in the string table
 *                            (indices 1..32767; past that, and for long
 *                            or one-off strings such as custom payloads,
 *                            strings go inline in the record using them);
 *   thread records           a table entry (1..255) per domain, so that
 *                            events name their thread in one byte; a
 *                            256th domain and later ones are written
 *                            inline (process and thread koids);
 *   kernel object records    each domain's thread (ZX_OBJ_TYPE_THREAD,
 *                            2) with its name and the "process" koid
 *                            argument that ties it to the process;
 *   event records            instant (0), counter (1), duration begin
 *                            (2) and end (3), duration complete (4).
 *
 * Arguments are the format's typed key/value pairs: signed and unsigned
 * 64-bit integers, strings and booleans.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"

#define REC_MAX_WORDS 4095   /* the 12-bit size field */
#define STR_TABLE_MAX 0x7fff /* indices 1..0x7fff */
/* Strings longer than this are never put in the table. */
#define STR_INTERN_MAX 256
/* An inline string is cut to this many bytes so that a record holding it
 * stays within REC_MAX_WORDS whatever else it holds (our records carry
 * at most one long string, a custom payload). */
#define STR_INLINE_MAX 30000
#define THREAD_TABLE_MAX 255

#define ZX_OBJ_TYPE_PROCESS 1
#define ZX_OBJ_TYPE_THREAD 2

enum { REC_METADATA = 0, REC_INIT = 1, REC_STRING = 2, REC_THREAD = 3,
       REC_EVENT = 4, REC_KOBJ = 7 };
enum { ARG_INT64 = 3, ARG_UINT64 = 4, ARG_STRING = 6, ARG_KOID = 8,
       ARG_BOOL = 9 };
enum { EV_INSTANT = 0, EV_COUNTER = 1, EV_BEGIN = 2, EV_END = 3,
       EV_COMPLETE = 4 };

struct str_slot {
  char *s; /* NULL: free */
  size_t len;
  unsigned index;
};

struct fxt {
  uint64_t pid;
  const struct trace_wallclock *wall; /* the trace's, read by begin() */
  /* The string table, an open-addressing hash set twice its capacity. */
  struct str_slot slots[2 * (STR_TABLE_MAX + 1)];
  unsigned nstrings;
  /* Thread table index of each track, 0 when inline; grown on demand. */
  unsigned char *thread_index;
  int nthread_slots;
  unsigned nthreads;
  /* The record being built. */
  uint64_t rec[REC_MAX_WORDS];
  size_t n;
};

/* ------------------------------------------------------------------ */
/* Building records.                                                    */

static void put_word(struct fxt *f, uint64_t w) {
  if (f->n < REC_MAX_WORDS) f->rec[f->n] = w;
  f->n++;
}

/* Appends a stream: the bytes, zero-padded to a whole word. */
static void put_stream(struct fxt *f, const char *s, size_t len) {
  for (size_t i = 0; i < len; i += 8) {
    uint64_t w = 0;
    size_t k = len - i < 8 ? len - i : 8;
    /* Words are little-endian: byte j of the stream is bits 8j..8j+7. */
    for (size_t j = 0; j < k; j++)
      w |= (uint64_t)(unsigned char)s[i + j] << (8 * j);
    put_word(f, w);
  }
}

static size_t words_for(size_t len) { return (len + 7) / 8; }

/* Starts a record: its header word is filled in by end_record(). */
static void start_record(struct fxt *f) {
  f->n = 0;
  put_word(f, 0);
}

/* Completes the header with type, size and the type-specific bits (16
 * and up), and writes the record. */
static void end_record(struct fxt *f, FILE *out, unsigned type,
                       uint64_t bits) {
  /* Callers size their content to fit (STR_INLINE_MAX); this only guards
   * against a mistake turning into a malformed file. */
  if (f->n > REC_MAX_WORDS) return;
  f->rec[0] = (uint64_t)type | (uint64_t)f->n << 4 | bits << 16;
  fwrite(f->rec, sizeof f->rec[0], f->n, out);
}

/* ------------------------------------------------------------------ */
/* The string table.                                                    */

static uint64_t hash(const char *s, size_t len) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211u;
  }
  return h;
}

/* Returns the string ref of `s[0 .. len)` for a record under
 * construction, writing a string record first when it is new to the
 * table; *inline_len is set to the length to write inline (the ref then
 * says so), or to 0 when the ref needs no stream. */
static unsigned str_ref(struct fxt *f, FILE *out, const char *s, size_t len,
                        int intern, size_t *inline_len) {
  *inline_len = 0;
  if (len == 0) return 0; /* the empty string */
  if (intern && len <= STR_INTERN_MAX) {
    size_t cap = sizeof f->slots / sizeof f->slots[0];
    size_t i = hash(s, len) % cap;
    while (f->slots[i].s) {
      if (f->slots[i].len == len && !memcmp(f->slots[i].s, s, len))
        return f->slots[i].index;
      i = (i + 1) % cap;
    }
    char *copy = f->nstrings < STR_TABLE_MAX ? malloc(len) : NULL;
    if (copy) {
      memcpy(copy, s, len);
      f->slots[i].s = copy;
      f->slots[i].len = len;
      f->slots[i].index = ++f->nstrings;
      /* The string record goes out now, before the record that uses it,
       * which is still being built in f->rec; so it is built apart. */
      uint64_t hdr = (uint64_t)REC_STRING | (uint64_t)(1 + words_for(len)) << 4 |
                     (uint64_t)f->slots[i].index << 16 | (uint64_t)len << 32;
      fwrite(&hdr, sizeof hdr, 1, out);
      static const char zeros[8];
      fwrite(s, 1, len, out);
      fwrite(zeros, 1, words_for(len) * 8 - len, out);
      return f->slots[i].index;
    }
  }
  if (len > STR_INLINE_MAX) len = STR_INLINE_MAX;
  *inline_len = len;
  return 0x8000u | (unsigned)len;
}

/* ------------------------------------------------------------------ */
/* The writer.                                                          */

/* The kernel object record of a process: its koid is the pid. */
/* The kernel object record of a process; the first one (`with_wall`)
 * also carries the trace's wall clock, when the source records it: FXT
 * has no record for it, so it goes as arguments (render.h). */
static void put_process(struct fxt *f, FILE *out, uint64_t pid,
                        const char *process, int with_wall) {
  size_t il;
  unsigned name = str_ref(f, out, process, strlen(process), 1, &il);
  int wall = with_wall && f->wall->known;
  char when[TOOL_WALL_BYTES];
  size_t kl[2], wl = 0;
  unsigned kref[2], wref = 0;
  if (wall) {
    tool_wall_format(when, sizeof when, f->wall->start);
    kref[0] = str_ref(f, out, "wall_clock_start", 16, 1, &kl[0]);
    wref = str_ref(f, out, when, strlen(when), 0, &wl);
    kref[1] = str_ref(f, out, "wall_clock_offset_ns", 20, 1, &kl[1]);
  }
  start_record(f);
  put_word(f, pid);
  put_stream(f, process, il);
  if (wall) {
    put_word(f, (uint64_t)ARG_STRING |
                    (uint64_t)(1 + words_for(kl[0]) + words_for(wl)) << 4 |
                    (uint64_t)kref[0] << 16 | (uint64_t)wref << 32);
    put_stream(f, "wall_clock_start", kl[0]);
    put_stream(f, when, wl);
    put_word(f, (uint64_t)ARG_INT64 | (uint64_t)(2 + words_for(kl[1])) << 4 |
                    (uint64_t)kref[1] << 16);
    put_stream(f, "wall_clock_offset_ns", kl[1]);
    put_word(f, (uint64_t)f->wall->offset);
  }
  end_record(f, out, REC_KOBJ,
             ZX_OBJ_TYPE_PROCESS | (uint64_t)name << 8 |
                 (uint64_t)(wall ? 2 : 0) << 24);
}

static void fxt_begin(void *self, FILE *out, uint64_t pid,
                      const char *process) {
  struct fxt *f = self;
  f->pid = pid;
  /* Magic number record: metadata, trace info type 0, "FxT" + 0x16. */
  start_record(f);
  end_record(f, out, REC_METADATA, 4 | 0 << 4 | (uint64_t)0x16547846 << 8);

  static const char provider[] = "eventring";
  start_record(f);
  put_stream(f, provider, sizeof provider - 1);
  end_record(f, out, REC_METADATA,
             1 | (uint64_t)1 << 4 | (uint64_t)(sizeof provider - 1) << 36);

  start_record(f);
  put_word(f, 1000000000);
  end_record(f, out, REC_INIT, 0);

  put_process(f, out, pid, process, 1);
}

static void fxt_process(void *self, FILE *out, uint64_t pid,
                        const char *process) {
  struct fxt *f = self;
  f->pid = pid;
  if (process) put_process(f, out, pid, process, 0);
}

static void fxt_track(void *self, FILE *out, int track, uint64_t tid,
                      const char *name) {
  struct fxt *f = self;
  if (track >= f->nthread_slots) {
    int n = track + 64;
    unsigned char *p = realloc(f->thread_index, (size_t)n);
    if (!p) return; /* the track's events then go inline */
    memset(p + f->nthread_slots, 0, (size_t)(n - f->nthread_slots));
    f->thread_index = p;
    f->nthread_slots = n;
  }
  /* A track named again (a thread's new name) keeps its table entry. */
  if (f->nthreads < THREAD_TABLE_MAX && !f->thread_index[track]) {
    unsigned index = ++f->nthreads;
    f->thread_index[track] = (unsigned char)index;
    start_record(f);
    put_word(f, f->pid);
    put_word(f, tid);
    end_record(f, out, REC_THREAD, index);
  }

  size_t il, kl;
  unsigned nref = str_ref(f, out, name, strlen(name), 1, &il);
  unsigned kref = str_ref(f, out, "process", 7, 1, &kl);
  start_record(f);
  put_word(f, tid);
  put_stream(f, name, il);
  /* The argument tying the thread to its process. */
  put_word(f, (uint64_t)ARG_KOID | (uint64_t)(2 + words_for(kl)) << 4 |
                  (uint64_t)kref << 16);
  put_stream(f, "process", kl);
  put_word(f, f->pid);
  end_record(f, out, REC_KOBJ,
             ZX_OBJ_TYPE_THREAD | (uint64_t)nref << 8 | (uint64_t)1 << 24);
}

/* The thread ref of a track: its table index, or 0 for inline. */
static unsigned thread_ref(const struct fxt *f, int track) {
  return track >= 0 && track < f->nthread_slots ? f->thread_index[track] : 0;
}

static void fxt_event(void *self, FILE *out, const struct trace_event *ev) {
  struct fxt *f = self;
  static const unsigned type[] = {[TRACE_BEGIN] = EV_BEGIN,
                                  [TRACE_END] = EV_END,
                                  [TRACE_COMPLETE] = EV_COMPLETE,
                                  [TRACE_INSTANT] = EV_INSTANT,
                                  [TRACE_COUNTER] = EV_COUNTER};
  /* Every string ref first, as registering a string writes a record. */
  size_t cat_il, name_il;
  unsigned cat = str_ref(f, out, ev->cat, strlen(ev->cat), 1, &cat_il);
  unsigned name = str_ref(f, out, ev->name, strlen(ev->name), 1, &name_il);
  int nargs = ev->nargs > 15 ? 15 : ev->nargs; /* the 4-bit count */
  unsigned key[15], val[15];
  size_t key_il[15], val_il[15];
  for (int i = 0; i < nargs; i++) {
    const struct trace_arg *a = &ev->args[i];
    key[i] = str_ref(f, out, a->key, strlen(a->key), 1, &key_il[i]);
    val[i] = 0;
    val_il[i] = 0;
    if (a->type == TRACE_ARG_STR)
      /* Short values (reasons, units) repeat; payloads do not. */
      val[i] = str_ref(f, out, a->s, a->len, a->len <= 64, &val_il[i]);
  }

  unsigned thread = thread_ref(f, ev->track);
  start_record(f);
  put_word(f, ev->ts);
  if (!thread) {
    put_word(f, f->pid);
    put_word(f, ev->tid);
  }
  put_stream(f, ev->cat, cat_il);
  put_stream(f, ev->name, name_il);
  for (int i = 0; i < nargs; i++) {
    const struct trace_arg *a = &ev->args[i];
    size_t kw = words_for(key_il[i]);
    switch (a->type) {
    case TRACE_ARG_STR:
      put_word(f, (uint64_t)ARG_STRING |
                      (uint64_t)(1 + kw + words_for(val_il[i])) << 4 |
                      (uint64_t)key[i] << 16 | (uint64_t)val[i] << 32);
      put_stream(f, a->key, key_il[i]);
      put_stream(f, a->s, val_il[i]);
      break;
    case TRACE_ARG_INT:
    case TRACE_ARG_UINT:
      put_word(f, (uint64_t)(a->type == TRACE_ARG_INT ? ARG_INT64 : ARG_UINT64) |
                      (uint64_t)(2 + kw) << 4 | (uint64_t)key[i] << 16);
      put_stream(f, a->key, key_il[i]);
      put_word(f, a->type == TRACE_ARG_INT ? (uint64_t)a->i : a->u);
      break;
    case TRACE_ARG_BOOL:
      put_word(f, (uint64_t)ARG_BOOL | (uint64_t)(1 + kw) << 4 |
                      (uint64_t)key[i] << 16 | (uint64_t)(a->i != 0) << 32);
      put_stream(f, a->key, key_il[i]);
      break;
    }
  }
  if (ev->ph == TRACE_COUNTER) put_word(f, 0); /* the counter id */
  if (ev->ph == TRACE_COMPLETE) put_word(f, ev->end_ts);
  end_record(f, out, REC_EVENT,
             type[ev->ph] | (uint64_t)nargs << 4 | (uint64_t)thread << 8 |
                 (uint64_t)cat << 16 | (uint64_t)name << 32);
}

static void fxt_end(void *self, FILE *out) {
  (void)self;
  (void)out; /* every record is complete as soon as it is written */
}

static void fxt_free(void *self) {
  struct fxt *f = self;
  for (size_t i = 0; i < sizeof f->slots / sizeof f->slots[0]; i++)
    free(f->slots[i].s);
  free(f->thread_index);
  free(f);
}

static const struct trace_writer writer = {
    fxt_begin, fxt_process, fxt_track, fxt_event, fxt_end, fxt_free};

void *trace_fuchsia_new(struct trace_writer *w,
                        const struct trace_wallclock *wall) {
  struct fxt *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->wall = wall;
  *w = writer;
  return f;
}
