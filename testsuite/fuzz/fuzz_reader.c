/* fuzz_reader -- a libFuzzer target for the consumer: any input, read as
 * a ring file, must give an error or events, never a crash, an
 * out-of-bounds read or a hang.
 *
 * Built by `make fuzz` with clang's -fsanitize=fuzzer,address,undefined,
 * the library's sources compiled into it with the same flags.
 *
 * The reader refuses any file smaller than custom_events_offset + 8192 *
 * 128 bytes, so a file that opens is at least 1 MiB, nearly all zeros.
 * Inputs that large would make the fuzzer crawl; instead the input's last
 * byte says how to build the file from the bytes before it:
 *
 *   bit 0 clear   the file is the whole input, last byte included
 *                 (truncated files, small garbage);
 *   bit 0 set     the file is the input without its last byte, extended
 *                 with zeros to (last byte >> 2) * 64 KiB when that is
 *                 larger (name slots and unused ring space are zeros);
 *   bit 1         read the file with the OCaml 5.0-5.2 phase numbering.
 *
 * testsuite/fuzz/mkseeds.c turns real ring files into seeds of this form.
 * The file is built in memory and read through the consumer's image mode
 * (er_cursor_open_image: the same checks and decoding as a file, without
 * the open, fstat and mmap that would cap the fuzzer at a few thousand
 * runs a second); the file path itself is covered by
 * testsuite/test_consumer_malformed.c.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "eventring.h"
#include "internal.h"

#define MAX_POLLS 64
#define MAX_EVENTS 4096

/* Everything the callbacks see goes into this sum, so that every byte
 * they are handed is read (and checked by AddressSanitizer). */
static volatile uint64_t sink;

static void touch(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t s = 0;
  for (size_t i = 0; i < n; i++) s = s * 31 + b[i];
  sink += s;
}

static void touch_name(const char *name) {
  if (name) touch(name, strlen(name) + 1);
}

static int on_phase(void *d, int dom, uint64_t ts, int phase) {
  touch_name(eventring_cursor_phase_name(d, phase));
  sink += (uint64_t)dom + ts;
  return 1;
}
static int on_counter(void *d, int dom, uint64_t ts, int k, uint64_t v) {
  touch_name(eventring_cursor_counter_name(d, k));
  sink += (uint64_t)dom + ts + v;
  return 1;
}
static int on_alloc(void *d, int dom, uint64_t ts, const uint64_t *b) {
  (void)d;
  touch(b, EVENTRING_ALLOC_BUCKETS * sizeof *b);
  sink += (uint64_t)dom + ts;
  return 1;
}
static int on_life(void *d, int dom, uint64_t ts, int k, int64_t v, int has) {
  (void)d;
  touch_name(eventring_lifecycle_name(k));
  sink += (uint64_t)dom + ts + (uint64_t)v + (uint64_t)has;
  return 1;
}
static int on_unit(void *d, int dom, uint64_t ts, int id, const char *name) {
  (void)d;
  touch_name(name);
  sink += (uint64_t)dom + ts + (uint64_t)id;
  return 1;
}
static int on_int(void *d, int dom, uint64_t ts, int id, const char *name,
                  int64_t v) {
  (void)d;
  touch_name(name);
  sink += (uint64_t)dom + ts + (uint64_t)id + (uint64_t)v;
  return 1;
}
static int on_span(void *d, int dom, uint64_t ts, int id, const char *name,
                   int is_end) {
  (void)d;
  touch_name(name);
  sink += (uint64_t)dom + ts + (uint64_t)id + (uint64_t)is_end;
  return 1;
}
static int on_custom(void *d, int dom, uint64_t ts, int id, const char *name,
                     const void *bytes, size_t len) {
  (void)d;
  touch_name(name);
  touch(bytes, len);
  sink += (uint64_t)dom + ts + (uint64_t)id;
  return 1;
}
/* Stops the poll now and then, so that resuming after a stop is fuzzed
 * too. */
static int on_lost(void *d, int dom, uint64_t n) {
  (void)d;
  sink += (uint64_t)dom + n;
  return (n & 7) != 5;
}

static eventring_callbacks *callbacks(void) {
  eventring_callbacks *cb = eventring_callbacks_create();
  if (!cb) abort();
  eventring_callbacks_set_runtime_begin(cb, on_phase);
  eventring_callbacks_set_runtime_end(cb, on_phase);
  eventring_callbacks_set_runtime_counter(cb, on_counter);
  eventring_callbacks_set_alloc(cb, on_alloc);
  eventring_callbacks_set_lifecycle(cb, on_life);
  eventring_callbacks_set_user_unit(cb, on_unit);
  eventring_callbacks_set_user_int(cb, on_int);
  eventring_callbacks_set_user_span(cb, on_span);
  eventring_callbacks_set_user_custom(cb, on_custom);
  eventring_callbacks_set_lost_events(cb, on_lost);
  return cb;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static eventring_callbacks *cb;
  static uint64_t *image; /* words: the reader wants its file aligned */
  static size_t image_cap, dirty; /* bytes of image that may not be 0 */
  if (!cb) cb = callbacks();

  size_t body = size, file = size;
  int ocaml50 = 0;
  if (size > 0 && (data[size - 1] & 1)) {
    body = size - 1;
    size_t want = (size_t)(data[size - 1] >> 2) * 65536;
    file = want > body ? want : body;
    ocaml50 = (data[size - 1] >> 1) & 1;
  }
  if (!image || file > image_cap) {
    free(image);
    image_cap = file > 4096 ? file : 4096;
    image = calloc((image_cap + 7) / 8, 8);
    if (!image) abort();
    dirty = 0;
  }
  /* Past the input the file is zeros: clear only what the last input
   * wrote there. */
  memcpy(image, data, body);
  if (dirty > body) memset((unsigned char *)image + body, 0, dirty - body);
  dirty = body;

  eventring_cursor *c = NULL;
  int r = er_cursor_open_image(&c, image, file);
  if (r < 0) {
    if (c) abort(); /* an error must leave no cursor */
    return 0;
  }
  eventring_cursor_set_ocaml50(c, ocaml50);
  sink += (uint64_t)eventring_cursor_lost_unit(c) +
          (uint64_t)eventring_cursor_max_domains(c);
  for (int id = -1; id <= 64; id++) {
    touch_name(eventring_cursor_phase_name(c, id));
    touch_name(eventring_cursor_counter_name(c, id));
    touch_name(eventring_cursor_user_name(c, id));
  }
  touch_name(eventring_cursor_user_name(c, 8191));
  for (int i = 0; i < MAX_POLLS; i++) {
    r = eventring_cursor_poll(c, cb, c, MAX_EVENTS);
    if (r == 0) {
      /* A stop from the lost callback returns 0 with events left: one
       * more poll tells. */
      r = eventring_cursor_poll(c, cb, c, MAX_EVENTS);
      if (r == 0) break;
    }
    if (r < 0 && r != EVENTRING_E_CORRUPT) abort(); /* no other error fits */
    if (r < 0 && i > 8) break;
  }
  /* What the writer dropped and the reader skipped: a count or
   * EVENTRING_E_CORRUPT for an impossible one, nothing else. */
  for (int d = -1; d < eventring_cursor_max_domains(c) && d < 64; d++) {
    uint64_t n;
    int e = eventring_cursor_dropped(c, d, &n);
    if (e != 0 && e != EVENTRING_E_CORRUPT) abort();
    if (eventring_cursor_malformed(c, d, &n) != 0) abort();
    sink += n;
  }
  eventring_cursor_free(c);
  return 0;
}
