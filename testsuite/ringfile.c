/* ringfile.c -- a strict decoder of whole ring files, for tests.
 *
 * The decoder reads the file with read(2) into one buffer and trusts
 * nothing in it: every offset, size and event header is checked against
 * the file's length and against FORMAT.md before it is used, so a broken
 * producer shows up as an rf_open() error naming the first bad field
 * rather than as a crash or a silently wrong event list.
 *
 * It only takes the layout constants and the vocabulary name tables from
 * the library (ring_format.h, names.c); the walking and decoding logic is
 * written again here from FORMAT.md so that the tests check the producer
 * against a reading independent of the library's consumer.
 */
#include "ringfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eventring.h"
#include "ring_format.h"

/* A test never needs a file this large; refusing it keeps a runaway
 * producer (a huge sparse file) from making the test read gigabytes. */
#define RF_MAX_FILE_BYTES ((uint64_t)1 << 32)

/* The ids the format knows of (FORMAT.md's lists).  An id past these is
 * reported as corrupt, which is what FORMAT.md asks of a reader. */
#define RF_MAX_PHASES 49
#define RF_MAX_COUNTERS 26
#define RF_MAX_LIFECYCLE 8

static int fail(char *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, 256, fmt, ap);
  va_end(ap);
  return -1;
}

static uint64_t word_at(const struct rf_file *f, uint64_t off) {
  uint64_t w;
  memcpy(&w, f->bytes + off, sizeof w);
  return w;
}

static int read_all(const char *path, struct rf_file *f, char *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(err, "%s: open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return fail(err, "%s: fstat: %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > RF_MAX_FILE_BYTES) {
    close(fd);
    return fail(err, "%s: not a regular file of sane size (%lld bytes)", path,
                (long long)st.st_size);
  }
  f->size = (size_t)st.st_size;
  f->bytes = malloc(f->size ? f->size : 1);
  if (!f->bytes) {
    close(fd);
    return fail(err, "%s: out of memory for %zu bytes", path, f->size);
  }
  size_t got = 0;
  while (got < f->size) {
    ssize_t n = read(fd, f->bytes + got, f->size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = n < 0 ? errno : 0;
      close(fd);
      return fail(err, "%s: read at %zu: %s", path, got,
                  e ? strerror(e) : "file shrank");
    }
    got += (size_t)n;
  }
  close(fd);
  return 0;
}

static int check_meta(struct rf_file *f, char *err) {
  if (f->size < ER_META_WORDS * 8)
    return fail(err, "file of %zu bytes has no metadata header", f->size);
  for (int i = 0; i < ER_META_WORDS; i++) f->meta[i] = word_at(f, 8 * i);
  const uint64_t *m = f->meta;
  if (m[ER_META_VERSION] != ER_FORMAT_VERSION)
    return fail(err, "version %" PRIu64 ", expected 1", m[ER_META_VERSION]);
  uint64_t nd = m[ER_META_MAX_DOMAINS], words = m[ER_META_RING_SIZE_ELEMENTS];
  if (nd == 0 || nd > 65536)
    return fail(err, "max_domains %" PRIu64 " out of range", nd);
  /* OCaml 5 writes 80-byte ring headers and eventring 128; a reader takes
   * whatever the file says, as long as it holds the words FORMAT.md names. */
  uint64_t hsize = m[ER_META_RING_HEADER_SIZE];
  if (hsize < ER_RING_HEADER_MIN_BYTES || hsize % 8 != 0 || hsize > 4096)
    return fail(err, "ring header size %" PRIu64 ", expected a multiple of 8 "
                "of at least 80", hsize);
  if (words < 2 || (words & (words - 1)) != 0 || words > ((uint64_t)1 << 32))
    return fail(err, "ring size %" PRIu64 " words is not a power of two",
                words);
  if (m[ER_META_RING_SIZE_BYTES] != words * 8)
    return fail(err, "ring bytes %" PRIu64 " != 8 * %" PRIu64,
                m[ER_META_RING_SIZE_BYTES], words);
  uint64_t ho = m[ER_META_HEADERS_OFFSET];
  if (ho < ER_META_WORDS * 8 || ho % 8 != 0 || ho > f->size)
    return fail(err, "headers_offset %" PRIu64 " invalid", ho);
  /* The rings may start after the headers' end (eventring aligns them to
   * a page), never inside them, and must stay word-aligned. */
  uint64_t data = m[ER_META_DATA_OFFSET], custom, end, hend;
  if (__builtin_mul_overflow(nd, hsize, &hend) ||
      __builtin_add_overflow(hend, ho, &hend) || data < hend || data % 8 != 0)
    return fail(err, "data_offset %" PRIu64 " overlaps the %" PRIu64
                " ring headers at %" PRIu64, data, nd, ho);
  if (__builtin_mul_overflow(nd, words * 8, &custom) ||
      __builtin_add_overflow(custom, data, &custom) ||
      m[ER_META_CUSTOM_EVENTS_OFFSET] != custom)
    return fail(err, "custom_events_offset %" PRIu64 " inconsistent",
                m[ER_META_CUSTOM_EVENTS_OFFSET]);
  if (__builtin_add_overflow(custom,
                             (uint64_t)ER_NAME_SLOTS * ER_NAME_SLOT_BYTES,
                             &end) ||
      end > f->size)
    return fail(err, "name slots end at %" PRIu64 ", past the file (%zu)",
                custom + (uint64_t)ER_NAME_SLOTS * ER_NAME_SLOT_BYTES,
                f->size);
  f->max_domains = nd;
  f->ring_words = words;
  return 0;
}

/* The extension block is recognised by its magic and only when the gap
 * between the metadata header and headers_offset can hold it; OCaml 5
 * files have no gap and therefore no block. */
static int check_ext(struct rf_file *f, char *err) {
  uint64_t ho = f->meta[ER_META_HEADERS_OFFSET];
  f->has_ext = 0;
  if (ho < 64 + ER_EXT_WORDS * 8 || word_at(f, 64) != ER_EXT_MAGIC) return 0;
  for (int i = 0; i < ER_EXT_WORDS; i++) f->ext[i] = word_at(f, 64 + 8 * i);
  const uint64_t *x = f->ext;
  if (x[ER_EXT_VERSION_W] != ER_EXT_VERSION)
    return fail(err, "extension version %" PRIu64, x[ER_EXT_VERSION_W]);
  if (x[ER_EXT_SIZE] < ER_EXT_WORDS * 8 || x[ER_EXT_SIZE] > ho - 64)
    return fail(err, "extension size %" PRIu64 " does not fit before %" PRIu64,
                x[ER_EXT_SIZE], ho);
  uint64_t n = x[ER_EXT_N_PHASES] + x[ER_EXT_N_COUNTERS] +
               x[ER_EXT_N_LIFECYCLE];
  uint64_t slot = x[ER_EXT_NAME_SLOT], no = x[ER_EXT_NAMES_OFFSET];
  if (x[ER_EXT_N_PHASES] > 4096 || x[ER_EXT_N_COUNTERS] > 4096 ||
      x[ER_EXT_N_LIFECYCLE] > 4096 || slot == 0 || slot > 4096)
    return fail(err, "extension name table counts out of range");
  if (no < 64 + ER_EXT_WORDS * 8 || no + n * slot > 64 + x[ER_EXT_SIZE])
    return fail(err, "extension name tables (offset %" PRIu64 ", %" PRIu64
                " slots of %" PRIu64 ") outside the block", no, n, slot);
  for (uint64_t i = 0; i < n; i++)
    if (!memchr(f->bytes + no + i * slot, 0, slot))
      return fail(err, "extension name %" PRIu64 " not NUL-terminated", i);
  f->has_ext = 1;
  return 0;
}

/* Checks that a non-padding header is one the format allows. */
static int check_event(unsigned len, int user, unsigned type, unsigned id,
                       char *err, int d, uint64_t pos) {
  int ok;
  if (len < 2)
    return fail(err, "domain %d pos %" PRIu64 ": event of length %u", d, pos,
                len);
  if (user) {
    switch (type) {
    case ER_UEV_UNIT:
    case ER_UEV_SPAN_BEGIN:
    case ER_UEV_SPAN_END: ok = len == 2; break;
    case ER_UEV_INT: ok = len == 3; break;
    case ER_UEV_CUSTOM: ok = len >= 3; break;
    default: ok = 0;
    }
    ok = ok && id < ER_NAME_SLOTS;
  } else {
    switch (type) {
    case ER_EV_LIFECYCLE:
      ok = id < RF_MAX_LIFECYCLE &&
           (len == 3 || (len == 2 && id == EVENTRING_LIFECYCLE_RING_STOP));
      break;
    case ER_EV_BEGIN:
    case ER_EV_END: ok = len == 2 && id < RF_MAX_PHASES; break;
    case ER_EV_COUNTER: ok = len == 3 && id < RF_MAX_COUNTERS; break;
    case ER_EV_ALLOC: ok = len == 2 + EVENTRING_ALLOC_BUCKETS && id == 0; break;
    /* eventring's thread-switch marker: id, kernel tid, a name of at
     * most 63 bytes (8 words); other flush events have no meaning. */
    case ER_EV_FLUSH:
      ok = id == ER_XEV_THREAD ? len >= ER_XEV_THREAD_MIN_WORDS &&
                                     len <= ER_XEV_THREAD_MIN_WORDS + 8
                               : len <= 3;
      break;
    default: ok = 0;
    }
  }
  if (!ok)
    return fail(err, "domain %d pos %" PRIu64 ": bad %s event type %u id %u "
                "length %u", d, pos, user ? "user" : "runtime", type, id, len);
  return 0;
}

static int push(struct rf_ring *r, size_t *cap, const struct rf_event *ev) {
  if (r->nevents == *cap) {
    size_t ncap = *cap ? 2 * *cap : 64;
    struct rf_event *n = realloc(r->events, ncap * sizeof *n);
    if (!n) return -1;
    r->events = n;
    *cap = ncap;
  }
  r->events[r->nevents++] = *ev;
  return 0;
}

/* Adds to the message in `err` (256 bytes) what a bad event's
 * diagnosis needs: its header word, the ring's head and tail, and the
 * event before it, whose length is what placed this one. */
static int fail_at(char *err, uint64_t h, const struct rf_ring *r,
                   uint64_t prev_pos, uint64_t prev_h) {
  size_t n = strlen(err);
  if (n < 255)
    snprintf(err + n, 256 - n, " (header %#" PRIx64 ", head %" PRIu64
             " tail %" PRIu64 "; %s %" PRIu64 " header %#" PRIx64 ")", h,
             r->head, r->tail, prev_h ? "previous at" : "first event,",
             prev_pos, prev_h);
  return -1;
}

static int walk_ring(struct rf_file *f, int d, char *err) {
  struct rf_ring *r = &f->rings[d];
  uint64_t hdr_off = f->meta[ER_META_HEADERS_OFFSET] +
                     (uint64_t)d * f->meta[ER_META_RING_HEADER_SIZE];
  uint64_t ring_off = f->meta[ER_META_DATA_OFFSET] + (uint64_t)d * f->ring_words * 8;
  uint64_t mask = f->ring_words - 1;
  size_t cap = 0;

  r->head = word_at(f, hdr_off + 8 * ER_RING_HEAD);
  r->tail = word_at(f, hdr_off + 8 * ER_RING_TAIL);
  if (f->has_ext &&
      f->meta[ER_META_RING_HEADER_SIZE] >= 8 * (ER_RING_PAIRS + 2 * ER_RING_NPAIRS)) {
    /* The newest (head, evicted) pair: in a file nobody writes any more,
     * its head is the HEAD word. */
    r->seq = word_at(f, hdr_off + 8 * ER_RING_PSEQ);
    uint64_t slot = ER_RING_PAIRS + 2 * (r->seq % ER_RING_NPAIRS);
    r->pair_head = r->seq ? word_at(f, hdr_off + 8 * slot) : 0;
    r->evicted = r->seq ? word_at(f, hdr_off + 8 * (slot + 1)) : 0;
    r->written = word_at(f, hdr_off + 8 * ER_RING_WRITTEN);
    r->dropped = word_at(f, hdr_off + 8 * ER_RING_DROPPED);
  }
  if (r->tail < r->head || r->tail - r->head > f->ring_words)
    return fail(err, "domain %d: head %" PRIu64 " tail %" PRIu64
                " inconsistent with a ring of %" PRIu64 " words", d, r->head,
                r->tail, f->ring_words);
  /* The pair is what eventring's readers go by: its evicted count is
   * that of the events before its head.  In a file nobody writes it
   * equals HEAD, but for a writer killed between the two stores (ring.c,
   * evict()), whose HEAD still names the move before.  (A copy of a
   * live file may hold a HEAD newer than its pair: then HEAD.) */
  r->start = r->head;
  if (r->seq && r->pair_head > r->head && r->pair_head <= r->tail)
    r->start = r->pair_head;

  uint64_t prev_pos = r->start, prev_h = 0;
  for (uint64_t pos = r->start; pos < r->tail;) {
    uint64_t idx = pos & mask;
    uint64_t h = word_at(f, ring_off + 8 * idx);
    unsigned len = ER_HDR_LEN(h), type = ER_HDR_TYPE(h), id = ER_HDR_ID(h);
    int user = (int)ER_HDR_IS_USER(h);
    if (len == 0 || len > ER_MAX_EVENT_WORDS) {
      fail(err, "domain %d pos %" PRIu64 ": header length %u", d, pos, len);
      return fail_at(err, h, r, prev_pos, prev_h);
    }
    if (idx + len > f->ring_words || pos + len > r->tail) {
      fail(err, "domain %d pos %" PRIu64 ": event of %u words runs past the "
           "%s", d, pos, len,
           idx + len > f->ring_words ? "ring's end" : "tail");
      return fail_at(err, h, r, prev_pos, prev_h);
    }
    if ((h & ((UINT64_C(1) << 36) - 1)) != 0) {
      fail(err, "domain %d pos %" PRIu64 ": reserved header bits set", d, pos);
      return fail_at(err, h, r, prev_pos, prev_h);
    }
    if (!user && type == ER_EV_INTERNAL) {
      /* Padding fills exactly the rest of the ring. */
      if (id != 0 || idx + len != f->ring_words) {
        fail(err, "domain %d pos %" PRIu64 ": padding of %u words does not "
             "end the ring", d, pos, len);
        return fail_at(err, h, r, prev_pos, prev_h);
      }
      prev_pos = pos;
      prev_h = h;
      pos += len;
      continue;
    }
    if (check_event(len, user, type, id, err, d, pos) != 0)
      return fail_at(err, h, r, prev_pos, prev_h);

    struct rf_event ev;
    memset(&ev, 0, sizeof ev);
    ev.domain = d;
    ev.pos = pos;
    ev.ts = word_at(f, ring_off + 8 * (idx + 1));
    ev.len = len;
    ev.is_user = user;
    ev.type = type;
    ev.id = id;
    ev.npayload = len - 2;
    for (unsigned i = 0; i < ev.npayload && i < 20; i++)
      ev.payload[i] = word_at(f, ring_off + 8 * (idx + 2 + i));
    if (user && type == ER_UEV_CUSTOM) {
      const unsigned char *p = f->bytes + ring_off + 8 * (idx + 2);
      size_t nbytes = (size_t)ev.npayload * 8;
      unsigned pad = p[nbytes - 1];
      if (pad > 7) {
        fail(err, "domain %d pos %" PRIu64 ": custom padding count %u", d, pos,
             pad);
        return fail_at(err, h, r, prev_pos, prev_h);
      }
      ev.custom = p;
      ev.custom_len = nbytes - 1 - pad;
    }
    if (push(r, &cap, &ev) != 0)
      return fail(err, "out of memory for events");
    prev_pos = pos;
    prev_h = h;
    pos += len;
  }
  return 0;
}

int rf_open(const char *path, struct rf_file *f, char *err) {
  memset(f, 0, sizeof *f);
  if (read_all(path, f, err) != 0 || check_meta(f, err) != 0 ||
      check_ext(f, err) != 0)
    goto bad;
  f->rings = calloc(f->max_domains, sizeof *f->rings);
  if (!f->rings) {
    fail(err, "out of memory for %" PRIu64 " rings", f->max_domains);
    goto bad;
  }
  for (uint64_t d = 0; d < f->max_domains; d++)
    if (walk_ring(f, (int)d, err) != 0) goto bad;
  return 0;
bad:
  rf_close(f);
  return -1;
}

void rf_close(struct rf_file *f) {
  if (f->rings)
    for (uint64_t d = 0; d < f->max_domains; d++) free(f->rings[d].events);
  free(f->rings);
  free(f->bytes);
  memset(f, 0, sizeof *f);
}

const char *rf_user_name(const struct rf_file *f, unsigned id) {
  if (id >= ER_NAME_SLOTS || !f->bytes) return NULL;
  const char *s = (const char *)f->bytes + f->meta[ER_META_CUSTOM_EVENTS_OFFSET] +
                  (uint64_t)id * ER_NAME_SLOT_BYTES;
  if (s[0] == '\0' || !memchr(s, 0, ER_NAME_SLOT_BYTES)) return NULL;
  return s;
}

const char *rf_ext_name(const struct rf_file *f, int kind, unsigned id) {
  if (!f->has_ext || kind < 0 || kind > 2) return NULL;
  const uint64_t *x = f->ext;
  uint64_t n[3] = {x[ER_EXT_N_PHASES], x[ER_EXT_N_COUNTERS],
                   x[ER_EXT_N_LIFECYCLE]};
  if (id >= n[kind]) return NULL;
  uint64_t index = id + (kind > 0 ? n[0] : 0) + (kind > 1 ? n[1] : 0);
  return (const char *)f->bytes + x[ER_EXT_NAMES_OFFSET] +
         index * x[ER_EXT_NAME_SLOT];
}

/* OCaml's consumer hands payload words to OCaml as native ints, which
 * keep 63 bits: a value prints as its low 63 bits, sign-extended. */
static long long ocaml_int(uint64_t w) {
  return (long long)((int64_t)(w << 1) >> 1);
}

void rf_print_ocaml_string(FILE *out, const void *bytes, size_t n) {
  const unsigned char *s = bytes;
  fputc('"', out);
  for (size_t i = 0; i < n; i++) {
    unsigned c = s[i];
    switch (c) {
    case '"': fputs("\\\"", out); break;
    case '\\': fputs("\\\\", out); break;
    case '\n': fputs("\\n", out); break;
    case '\t': fputs("\\t", out); break;
    case '\r': fputs("\\r", out); break;
    case '\b': fputs("\\b", out); break;
    default:
      if (c >= ' ' && c <= '~')
        fputc((int)c, out);
      else
        fprintf(out, "\\%03u", c);
    }
  }
  fputc('"', out);
}

static const char *phase_name(unsigned id, int phases50) {
  if (phases50)
    return id < eventring__n_phases_50 ? eventring__phase_names_50[id] : NULL;
  return eventring_phase_name((int)id);
}

void rf_print_event(FILE *out, const struct rf_file *f,
                    const struct rf_event *ev, int phases50) {
  fprintf(out, "domain=%d ts=%" PRIu64 " ", ev->domain, ev->ts);
  if (ev->is_user) {
    const char *name = rf_user_name(f, ev->id);
    if (!name) name = "?";
    switch (ev->type) {
    case ER_UEV_UNIT:
      fprintf(out, "kind=user_unit name=%s value=()\n", name);
      return;
    case ER_UEV_INT:
      fprintf(out, "kind=user_int name=%s value=%lld\n", name,
              ocaml_int(ev->payload[0]));
      return;
    case ER_UEV_SPAN_BEGIN:
    case ER_UEV_SPAN_END:
      fprintf(out, "kind=user_span name=%s value=%s\n", name,
              ev->type == ER_UEV_SPAN_BEGIN ? "begin" : "end");
      return;
    case ER_UEV_CUSTOM:
      fprintf(out, "kind=user_custom name=%s value=", name);
      rf_print_ocaml_string(out, ev->custom, ev->custom_len);
      fputc('\n', out);
      return;
    }
    fprintf(out, "kind=user_%u name=%s value=-\n", ev->type, name);
    return;
  }
  const char *name;
  switch (ev->type) {
  case ER_EV_BEGIN:
  case ER_EV_END:
    name = phase_name(ev->id, phases50);
    fprintf(out, "kind=%s name=%s value=-\n",
            ev->type == ER_EV_BEGIN ? "runtime_begin" : "runtime_end",
            name ? name : "?");
    return;
  case ER_EV_COUNTER:
    name = eventring_counter_name((int)ev->id);
    fprintf(out, "kind=runtime_counter name=%s value=%lld\n",
            name ? name : "?", ocaml_int(ev->payload[0]));
    return;
  case ER_EV_ALLOC:
    fputs("kind=alloc name=alloc_buckets value=", out);
    for (unsigned i = 0; i < ev->npayload && i < 20; i++)
      fprintf(out, "%s%lld", i ? "," : "", ocaml_int(ev->payload[i]));
    fputc('\n', out);
    return;
  case ER_EV_LIFECYCLE:
    name = eventring_lifecycle_name((int)ev->id);
    fprintf(out, "kind=lifecycle name=%s value=", name ? name : "?");
    /* ring_stop's data is absent by FORMAT.md, whatever its length. */
    if (ev->npayload == 0 || ev->id == EVENTRING_LIFECYCLE_RING_STOP)
      fputs("-\n", out);
    else
      fprintf(out, "%lld\n", ocaml_int(ev->payload[0]));
    return;
  }
  fprintf(out, "kind=runtime_%u name=%u value=-\n", ev->type, ev->id);
}

size_t rf_count(const struct rf_file *f, int domain, int is_user,
                unsigned type, int id) {
  size_t n = 0;
  for (uint64_t d = 0; d < f->max_domains; d++) {
    if (domain >= 0 && (uint64_t)domain != d) continue;
    const struct rf_ring *r = &f->rings[d];
    for (size_t i = 0; i < r->nevents; i++) {
      const struct rf_event *e = &r->events[i];
      if (e->is_user == is_user && e->type == type &&
          (id < 0 || e->id == (unsigned)id))
        n++;
    }
  }
  return n;
}
