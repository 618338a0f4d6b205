/* stress_check.h -- the stress test's event scheme and the checks every
 * reader applies to it, shared by testsuite/test_stress.c (its writer
 * threads, in-process readers and forked children) and
 * testsuite/progs/stress_reader.c (the reader in another process).
 *
 * A writer w emits iteration s of its sequence as eight events, always in
 * this order:
 *
 *   step 0  begin(phase(w, s))
 *   step 1  counter(counter(w, s), pack(w, s))
 *   step 2  user int "stress.int" = pack(w, s)
 *   step 3  user custom "stress.custom": pack(w, s), then bytes derived
 *           from (w, s), then an FNV-1a hash of all that; its length too
 *           follows from (w, s), now and then a few kilobytes
 *   step 4  user span begin "stress.span"
 *   step 5  user unit "stress.unitK", K = s % ST_NUNITS
 *   step 6  user span end "stress.span"
 *   step 7  end(phase(w, s))
 *
 * pack(w, s) = check << 48 | w << 40 | s, where the 15-bit check is a hash
 * of the rest, so each payload proves itself intact.  Events without a
 * payload are checked against their neighbours: within one ring, after an
 * event of (w, s, step) the next one must be (w, s, step + 1) -- or the
 * first step of s + 1 -- unless the reader was told of a loss in between
 * or a lifecycle event intervenes (a thread's slot changing hands).  Such
 * a break with no loss reported is a "skip": an event gone without a
 * trace, which only a pause (probes record nothing while paused) may
 * explain.
 *
 * A reader keeps per-domain counts of what it was given and what it was
 * told is lost, which the test holds against the ring headers' WRITTEN
 * words: delivered + lost == written, exactly.
 */
#ifndef EVENTRING_STRESS_CHECK_H
#define EVENTRING_STRESS_CHECK_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "eventring.h"

#define ST_SEQ_BITS 40
#define ST_SEQ_MASK ((UINT64_C(1) << ST_SEQ_BITS) - 1)
#define ST_MAX_WRITERS 256
#define ST_MAX_DOMAINS 64
#define ST_NUNITS 8
#define ST_STEPS 8
#define ST_MAX_CUSTOM 4096
/* The writer id of a forked child's only writer. */
#define ST_CHILD_WRITER 255

enum {
  ST_BEGIN,
  ST_COUNTER,
  ST_INT,
  ST_CUSTOM,
  ST_SPAN_BEGIN,
  ST_UNIT,
  ST_SPAN_END,
  ST_END
};

/* A 64-bit mixer (the finaliser of splitmix64): every output bit depends
 * on every input bit, so a flipped bit anywhere changes the check. */
static inline uint64_t st_mix(uint64_t x) {
  x ^= x >> 30;
  x *= UINT64_C(0xbf58476d1ce4e5b9);
  x ^= x >> 27;
  x *= UINT64_C(0x94d049bb133111eb);
  x ^= x >> 31;
  return x;
}

static inline uint64_t st_fnv(const unsigned char *p, size_t n) {
  uint64_t h = UINT64_C(14695981039346656037);
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * UINT64_C(1099511628211);
  return h;
}

static inline uint64_t st_pack(unsigned w, uint64_t s) {
  uint64_t k = (uint64_t)(w & 0xff) << ST_SEQ_BITS | (s & ST_SEQ_MASK);
  /* 15 bits, so that the value stays positive as an OCaml-style int. */
  return (st_mix(k) >> 49) << 48 | k;
}

/* Decodes a packed value; returns 0 when its check does not match. */
static inline int st_unpack(uint64_t v, unsigned *w, uint64_t *s) {
  *w = (unsigned)(v >> ST_SEQ_BITS) & 0xff;
  *s = v & ST_SEQ_MASK;
  return st_pack(*w, *s) == v;
}

static inline int st_phase(unsigned w, uint64_t s) {
  return (int)((s * 7 + w) % EVENTRING_PHASE_COUNT);
}

static inline int st_counter(unsigned w, uint64_t s) {
  return (int)((s + w) % EVENTRING_COUNTER_COUNT);
}

/* Custom payload length: mostly 16..215 bytes, one in 512 between 1 and
 * 4 KiB, so that big events meet the ring's end and evict many small
 * ones at once. */
static inline size_t st_custom_len(unsigned w, uint64_t s) {
  uint64_t m = st_mix(st_pack(w, s) ^ UINT64_C(0x5bd1e9955bd1e995));
  if ((m & 511) == 0)
    return 1024 + (size_t)((m >> 20) % (ST_MAX_CUSTOM - 1024));
  return 16 + (size_t)((m >> 20) % 200);
}

/* Writes iteration (w, s)'s custom payload into `buf` (ST_MAX_CUSTOM
 * bytes); returns its length. */
static inline size_t st_custom_fill(unsigned char *buf, unsigned w,
                                    uint64_t s) {
  size_t n = st_custom_len(w, s);
  uint64_t v = st_pack(w, s), m = st_mix(v ^ UINT64_C(0x2545f4914f6cdd1d));
  memcpy(buf, &v, 8);
  for (size_t k = 8; k < n - 8; k++)
    buf[k] = (unsigned char)((m >> ((k & 7) * 8)) + k);
  uint64_t h = st_fnv(buf, n - 8);
  memcpy(buf + n - 8, &h, 8);
  return n;
}

/* ------------------------------------------------------------------ */
/* Writing.                                                             */

struct st_ids {
  int i, custom, span, unit[ST_NUNITS];
};

/* Registers the scheme's user events; returns 0 or a negative error. */
static inline int st_register(struct st_ids *ids) {
  int r;
  if ((r = ids->i = eventring_register("stress.int", EVENTRING_TYPE_INT)) < 0)
    return r;
  if ((r = ids->custom = eventring_register("stress.custom",
                                            EVENTRING_TYPE_CUSTOM)) < 0)
    return r;
  if ((r = ids->span = eventring_register("stress.span",
                                          EVENTRING_TYPE_SPAN)) < 0)
    return r;
  for (int k = 0; k < ST_NUNITS; k++) {
    char name[32];
    snprintf(name, sizeof name, "stress.unit%d", k);
    if ((r = ids->unit[k] = eventring_register(name, EVENTRING_TYPE_UNIT)) < 0)
      return r;
  }
  return 0;
}

/* Emits iteration (w, s).  `buf` holds ST_MAX_CUSTOM bytes.  Returns what
 * eventring_write_custom() returned (0 unless something is wrong). */
static inline int st_iteration(const struct st_ids *ids, unsigned w,
                               uint64_t s, unsigned char *buf) {
  int ph = st_phase(w, s);
  uint64_t v = st_pack(w, s);
  eventring_begin((eventring_phase)ph);
  eventring_counter((eventring_counter_id)st_counter(w, s), v);
  eventring_write_int(ids->i, (int64_t)v);
  size_t n = st_custom_fill(buf, w, s);
  int r = eventring_write_custom(ids->custom, buf, n);
  eventring_write_span(ids->span, 0);
  eventring_write_unit(ids->unit[s % ST_NUNITS]);
  eventring_write_span(ids->span, 1);
  eventring_end((eventring_phase)ph);
  return r;
}

/* ------------------------------------------------------------------ */
/* Reading.                                                             */

struct st_dom {
  uint64_t delivered, lost, last_ts;
  /* The event due next when `known`: writer w's iteration s, step. */
  int known;
  unsigned w, step;
  uint64_t s;
};

enum {
  ST_K_BEGIN, ST_K_END, ST_K_COUNTER, ST_K_INT, ST_K_CUSTOM, ST_K_SPAN,
  ST_K_UNIT, ST_K_LIFECYCLE, ST_K_N
};

struct st_reader {
  /* Set by the caller before reading. */
  pid_t pid;          /* the file's writer process */
  pid_t parent;       /* its parent, for fork_child; 0: none may appear */
  unsigned fixed;     /* writers below this id keep one slot per file */
  /* Results. */
  struct st_dom dom[ST_MAX_DOMAINS];
  uint64_t kinds[ST_K_N];
  uint64_t bad;       /* malformed or wrongly checked events */
  uint64_t order;     /* a writer's sequence going back in one ring */
  uint64_t skips;     /* breaks in a ring's sequence with no loss told */
  uint64_t polled;    /* sum of what the polls returned */
  /* The first problem of the gravest kind seen, for the failure message:
   * a bad or out-of-order event replaces a skip noted before it, since
   * skips are expected wherever pauses or signal handlers write. */
  char first[256];
  char latest[256];   /* the last bad or out-of-order event's problem */
  /* [domain][writer]: the last (s * ST_STEPS + step) seen, plus 1. */
  uint64_t *last;
  int fixed_dom[ST_MAX_WRITERS];
};

static inline void st_reader_init(struct st_reader *r, pid_t pid,
                                  pid_t parent, unsigned fixed) {
  uint64_t *last = r->last;
  memset(r, 0, sizeof *r);
  r->last = last ? last : malloc(sizeof(uint64_t) * ST_MAX_DOMAINS *
                                 ST_MAX_WRITERS);
  if (!r->last) abort();
  memset(r->last, 0, sizeof(uint64_t) * ST_MAX_DOMAINS * ST_MAX_WRITERS);
  r->pid = pid;
  r->parent = parent;
  r->fixed = fixed;
  for (int i = 0; i < ST_MAX_WRITERS; i++) r->fixed_dom[i] = -1;
}

static inline void st_reader_free(struct st_reader *r) {
  free(r->last);
  r->last = NULL;
}

static inline __attribute__((format(printf, 3, 4))) void
st_note(struct st_reader *r, uint64_t *counter, const char *fmt, ...) {
  char text[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  int grave = counter != &r->skips;
  if (grave) memcpy(r->latest, text, sizeof text);
  if (r->bad + r->order == 0 && (grave || r->skips == 0))
    memcpy(r->first, text, sizeof text);
  ++*counter;
}

/* The domain's record, or NULL (and counted bad) when out of range. */
static inline struct st_dom *st_dom_at(struct st_reader *r, int d,
                                       uint64_t ts) {
  if (d < 0 || d >= ST_MAX_DOMAINS) {
    st_note(r, &r->bad, "domain %d out of range", d);
    return NULL;
  }
  struct st_dom *dm = &r->dom[d];
  if (ts < dm->last_ts)
    st_note(r, &r->bad, "domain %d: timestamp %" PRIu64 " after %" PRIu64, d,
            ts, dm->last_ts);
  dm->last_ts = ts;
  dm->delivered++;
  return dm;
}

static inline void st_advance(struct st_dom *dm, unsigned w, uint64_t s,
                              unsigned step) {
  dm->known = 1;
  dm->w = w;
  dm->s = step + 1 == ST_STEPS ? s + 1 : s;
  dm->step = (step + 1) % ST_STEPS;
}

/* A payload event of (w, s) at `step`, whose check passed. */
static inline void st_payload(struct st_reader *r, int d, struct st_dom *dm,
                              unsigned w, uint64_t s, unsigned step) {
  uint64_t key = s * ST_STEPS + step + 1;
  uint64_t *last = &r->last[(size_t)d * ST_MAX_WRITERS + w];
  if (key <= *last)
    st_note(r, &r->order,
            "domain %d: writer %u iteration %" PRIu64 " step %u after "
            "iteration %" PRIu64 " step %u", d, w, s, step,
            (*last - 1) / ST_STEPS, (unsigned)((*last - 1) % ST_STEPS));
  *last = key;
  if (w < r->fixed) {
    if (r->fixed_dom[w] < 0) r->fixed_dom[w] = d;
    else if (r->fixed_dom[w] != d)
      st_note(r, &r->bad, "writer %u in domains %d and %d", w, r->fixed_dom[w],
              d);
  }
  if (dm->known && (dm->w != w || dm->s != s || dm->step != step))
    st_note(r, &r->skips,
            "domain %d: writer %u iteration %" PRIu64 " step %u where "
            "writer %u iteration %" PRIu64 " step %u was due, no loss told",
            d, w, s, step, dm->w, dm->s, dm->step);
  st_advance(dm, w, s, step);
}

/* An event without a payload: `aux` is its phase (begin, end) or unit
 * index; checked against the event due, if known. */
static inline void st_bare(struct st_reader *r, int d, struct st_dom *dm,
                           unsigned step, int aux) {
  if (!dm->known) return;
  int want = -1;
  if (step == ST_BEGIN || step == ST_END) want = st_phase(dm->w, dm->s);
  else if (step == ST_UNIT) want = (int)(dm->s % ST_NUNITS);
  if (dm->step != step || (want >= 0 && aux != want)) {
    st_note(r, &r->skips,
            "domain %d: step %u (%d) where writer %u iteration %" PRIu64
            " step %u was due, no loss told", d, step, aux, dm->w, dm->s,
            dm->step);
    dm->known = 0;
    return;
  }
  st_advance(dm, dm->w, dm->s, step);
}

static inline int st_on_begin(void *data, int d, uint64_t ts, int phase) {
  struct st_reader *r = data;
  struct st_dom *dm = st_dom_at(r, d, ts);
  r->kinds[ST_K_BEGIN]++;
  if (!dm) return 1;
  if (phase < 0 || phase >= EVENTRING_PHASE_COUNT)
    st_note(r, &r->bad, "domain %d: begin of phase %d", d, phase);
  st_bare(r, d, dm, ST_BEGIN, phase);
  return 1;
}

static inline int st_on_end(void *data, int d, uint64_t ts, int phase) {
  struct st_reader *r = data;
  struct st_dom *dm = st_dom_at(r, d, ts);
  r->kinds[ST_K_END]++;
  if (!dm) return 1;
  if (phase < 0 || phase >= EVENTRING_PHASE_COUNT)
    st_note(r, &r->bad, "domain %d: end of phase %d", d, phase);
  st_bare(r, d, dm, ST_END, phase);
  return 1;
}

static inline int st_on_counter(void *data, int d, uint64_t ts, int counter,
                                uint64_t value) {
  struct st_reader *r = data;
  struct st_dom *dm = st_dom_at(r, d, ts);
  r->kinds[ST_K_COUNTER]++;
  if (!dm) return 1;
  unsigned w;
  uint64_t s;
  if (!st_unpack(value, &w, &s) || st_counter(w, s) != counter) {
    st_note(r, &r->bad, "domain %d: counter %d value %#" PRIx64, d, counter,
            value);
    dm->known = 0;
    return 1;
  }
  st_payload(r, d, dm, w, s, ST_COUNTER);
  return 1;
}

static inline int st_on_int(void *data, int d, uint64_t ts, int id,
                            const char *name, int64_t value) {
  struct st_reader *r = data;
  struct st_dom *dm = st_dom_at(r, d, ts);
  r->kinds[ST_K_INT]++;
  (void)id;
  if (!dm) return 1;
  unsigned w;
  uint64_t s;
  if (!name || strcmp(name, "stress.int") != 0 ||
      !st_unpack((uint64_t)value, &w, &s)) {
    st_note(r, &r->bad, "domain %d: int %s value %#" PRIx64, d,
            name ? name : "(null)", (uint64_t)value);
    dm->known = 0;
    return 1;
  }
  st_payload(r, d, dm, w, s, ST_INT);
  return 1;
}

static inline int st_on_custom(void *data, int d, uint64_t ts, int id,
                               const char *name, const void *bytes,
                               size_t len) {
  struct st_reader *r = data;
  struct st_dom *dm = st_dom_at(r, d, ts);
  r->kinds[ST_K_CUSTOM]++;
  (void)id;
  if (!dm) return 1;
  unsigned w = 0;
  uint64_t s = 0, v = 0;
  int ok = name && strcmp(name, "stress.custom") == 0 && len >= 16 &&
           len <= ST_MAX_CUSTOM;
  if (ok) {
    memcpy(&v, bytes, 8);
    ok = st_unpack(v, &w, &s) && st_custom_len(w, s) == len;
  }
  if (ok) {
    unsigned char want[ST_MAX_CUSTOM];
    st_custom_fill(want, w, s);
    ok = memcmp(want, bytes, len) == 0;
  }
  if (!ok) {
    st_note(r, &r->bad, "domain %d: custom %s of %zu bytes, first word %#"
            PRIx64, d, name ? name : "(null)", len, v);
    dm->known = 0;
    return 1;
  }
  st_payload(r, d, dm, w, s, ST_CUSTOM);
  return 1;
}

static inline int st_on_span(void *data, int d, uint64_t ts, int id,
                             const char *name, int is_end) {
  struct st_reader *r = data;
  struct st_dom *dm = st_dom_at(r, d, ts);
  r->kinds[ST_K_SPAN]++;
  (void)id;
  if (!dm) return 1;
  if (!name || strcmp(name, "stress.span") != 0)
    st_note(r, &r->bad, "domain %d: span %s", d, name ? name : "(null)");
  st_bare(r, d, dm, is_end ? ST_SPAN_END : ST_SPAN_BEGIN, -1);
  return 1;
}

static inline int st_on_unit(void *data, int d, uint64_t ts, int id,
                             const char *name) {
  struct st_reader *r = data;
  struct st_dom *dm = st_dom_at(r, d, ts);
  r->kinds[ST_K_UNIT]++;
  (void)id;
  if (!dm) return 1;
  int k = -1;
  if (!name || sscanf(name, "stress.unit%d", &k) != 1 || k < 0 ||
      k >= ST_NUNITS) {
    st_note(r, &r->bad, "domain %d: unit %s", d, name ? name : "(null)");
    dm->known = 0;
    return 1;
  }
  st_bare(r, d, dm, ST_UNIT, k);
  return 1;
}

static inline int st_on_lifecycle(void *data, int d, uint64_t ts, int kind,
                                  int64_t value, int has_data) {
  struct st_reader *r = data;
  struct st_dom *dm = st_dom_at(r, d, ts);
  r->kinds[ST_K_LIFECYCLE]++;
  if (!dm) return 1;
  /* A slot may change hands here: what follows is not tied to what
   * came before. */
  dm->known = 0;
  int ok;
  switch (kind) {
  case EVENTRING_LIFECYCLE_RING_START:
  case EVENTRING_LIFECYCLE_DOMAIN_SPAWN:
  case EVENTRING_LIFECYCLE_DOMAIN_TERMINATE:
    ok = has_data && value == (int64_t)r->pid;
    break;
  case EVENTRING_LIFECYCLE_RING_STOP:
    ok = !has_data;
    break;
  case EVENTRING_LIFECYCLE_RING_PAUSE:
  case EVENTRING_LIFECYCLE_RING_RESUME:
    ok = 1;
    break;
  case EVENTRING_LIFECYCLE_FORK_PARENT:
    ok = has_data && value > 0 && value != (int64_t)r->pid;
    break;
  case EVENTRING_LIFECYCLE_FORK_CHILD:
    ok = has_data && r->parent && value == (int64_t)r->parent;
    break;
  default:
    ok = 0;
  }
  if (!ok)
    st_note(r, &r->bad, "domain %d: lifecycle %d value %" PRId64 " (has %d)",
            d, kind, value, has_data);
  return 1;
}

static inline int st_on_alloc(void *data, int d, uint64_t ts,
                              const uint64_t *buckets) {
  struct st_reader *r = data;
  (void)buckets;
  st_dom_at(r, d, ts);
  st_note(r, &r->bad, "domain %d: an alloc event nobody wrote", d);
  return 1;
}

static inline int st_on_lost(void *data, int d, uint64_t n) {
  struct st_reader *r = data;
  if (d < 0 || d >= ST_MAX_DOMAINS || n == 0) {
    st_note(r, &r->bad, "lost %" PRIu64 " in domain %d", n, d);
    return 1;
  }
  r->dom[d].lost += n;
  r->dom[d].known = 0;
  return 1;
}

/* A callback set for st_reader; NULL when out of memory. */
static inline eventring_callbacks *st_callbacks(void) {
  eventring_callbacks *cb = eventring_callbacks_create();
  if (!cb) return NULL;
  eventring_callbacks_set_runtime_begin(cb, st_on_begin);
  eventring_callbacks_set_runtime_end(cb, st_on_end);
  eventring_callbacks_set_runtime_counter(cb, st_on_counter);
  eventring_callbacks_set_alloc(cb, st_on_alloc);
  eventring_callbacks_set_lifecycle(cb, st_on_lifecycle);
  eventring_callbacks_set_user_unit(cb, st_on_unit);
  eventring_callbacks_set_user_int(cb, st_on_int);
  eventring_callbacks_set_user_span(cb, st_on_span);
  eventring_callbacks_set_user_custom(cb, st_on_custom);
  eventring_callbacks_set_lost_events(cb, st_on_lost);
  return cb;
}

static inline uint64_t st_total_delivered(const struct st_reader *r) {
  uint64_t n = 0;
  for (int d = 0; d < ST_MAX_DOMAINS; d++) n += r->dom[d].delivered;
  return n;
}

static inline uint64_t st_total_lost(const struct st_reader *r) {
  uint64_t n = 0;
  for (int d = 0; d < ST_MAX_DOMAINS; d++) n += r->dom[d].lost;
  return n;
}

/* ------------------------------------------------------------------ */
/* The report the reader in another process sends back, one item a line:
 *
 *   dom D DELIVERED LOST        (domains with anything)
 *   kinds K0 ... K7
 *   counts POLLED BAD ORDER SKIPS
 *   first TEXT                  (when there was a problem)
 *   end
 */

static inline void st_report(FILE *out, const struct st_reader *r) {
  for (int d = 0; d < ST_MAX_DOMAINS; d++)
    if (r->dom[d].delivered || r->dom[d].lost)
      fprintf(out, "dom %d %" PRIu64 " %" PRIu64 "\n", d, r->dom[d].delivered,
              r->dom[d].lost);
  fprintf(out, "kinds");
  for (int k = 0; k < ST_K_N; k++) fprintf(out, " %" PRIu64, r->kinds[k]);
  fprintf(out, "\ncounts %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
          r->polled, r->bad, r->order, r->skips);
  if (r->first[0]) {
    char line[sizeof r->first];
    snprintf(line, sizeof line, "%s", r->first);
    line[strcspn(line, "\n")] = 0;
    fprintf(out, "first %s\n", line);
  }
  fprintf(out, "end\n");
  fflush(out);
}

/* Reads a report into `r` (counts only).  Returns 0, or -1 on a short or
 * malformed report, with the offending line in r->first. */
static inline int st_read_report(FILE *in, struct st_reader *r) {
  char line[512];
  for (;;) {
    if (!fgets(line, sizeof line, in)) {
      snprintf(line, sizeof line, "(end of file)");
      break;
    }
    int d;
    uint64_t a, b, c, e;
    if (sscanf(line, "dom %d %" SCNu64 " %" SCNu64, &d, &a, &b) == 3) {
      if (d < 0 || d >= ST_MAX_DOMAINS) break;
      r->dom[d].delivered = a;
      r->dom[d].lost = b;
    } else if (!strncmp(line, "kinds", 5)) {
      char *p = line + 5;
      for (int k = 0; k < ST_K_N; k++) r->kinds[k] = strtoull(p, &p, 10);
    } else if (sscanf(line, "counts %" SCNu64 " %" SCNu64 " %" SCNu64
                      " %" SCNu64, &a, &b, &c, &e) == 4) {
      r->polled = a;
      r->bad = b;
      r->order = c;
      r->skips = e;
    } else if (!strncmp(line, "first ", 6)) {
      line[strcspn(line, "\n")] = 0;
      snprintf(r->first, sizeof r->first, "%.200s", line + 6);
    } else if (!strcmp(line, "end\n")) {
      return 0;
    } else {
      break;
    }
  }
  line[strcspn(line, "\n")] = 0;
  snprintf(r->first, sizeof r->first, "bad report line: %.200s", line);
  return -1;
}

#endif
