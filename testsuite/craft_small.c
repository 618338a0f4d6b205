/* craft_small.c -- small ring files of many domains (craft_small.h). */
#include "craft_small.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring_format.h"

/* The ring header size OCaml 5 writes, and the smallest a reader takes. */
#define HDR_BYTES ER_RING_HEADER_MIN_BYTES
#define HEADERS_OFF 64
#define COUNTER_MINOR_ALLOCATED 5

void er_craft_small(const char *path, int ndomains, int events) {
  ck_assert_int_ge(ndomains, 1);
  ck_assert_int_le(events, CRAFT_SMALL_MAX_EVENTS);
  uint64_t n = (uint64_t)ndomains;
  uint64_t data_off = HEADERS_OFF + n * HDR_BYTES;
  uint64_t ring_bytes = CRAFT_SMALL_RING_WORDS * 8;
  uint64_t names_off = data_off + n * ring_bytes;
  uint64_t size = names_off + (uint64_t)ER_NAME_SLOTS * ER_NAME_SLOT_BYTES;
  /* Built whole in memory, then written with one call: thousands of
   * domains make thousands of small pieces. */
  unsigned char *img = calloc(1, (size_t)names_off);
  ck_assert_ptr_nonnull(img);
  uint64_t meta[ER_META_WORDS] = {
      [ER_META_VERSION] = ER_FORMAT_VERSION,
      [ER_META_MAX_DOMAINS] = n,
      [ER_META_RING_HEADER_SIZE] = HDR_BYTES,
      [ER_META_RING_SIZE_BYTES] = ring_bytes,
      [ER_META_RING_SIZE_ELEMENTS] = CRAFT_SMALL_RING_WORDS,
      [ER_META_HEADERS_OFFSET] = HEADERS_OFF,
      [ER_META_DATA_OFFSET] = data_off,
      [ER_META_CUSTOM_EVENTS_OFFSET] = names_off,
  };
  memcpy(img, meta, sizeof meta);
  for (uint64_t d = 0; d < n; d++) {
    uint64_t *ring = (uint64_t *)(img + data_off + d * ring_bytes);
    for (int i = 0; i < events; i++) {
      ring[3 * i] = ER_HDR(3, 0, ER_EV_COUNTER, COUNTER_MINOR_ALLOCATED);
      ring[3 * i + 1] = 1000 + (uint64_t)i;
      ring[3 * i + 2] = 1000 * d + (uint64_t)i;
    }
    uint64_t ht[2] = {0, 3 * (uint64_t)events}; /* head, tail */
    memcpy(img + HEADERS_OFF + d * HDR_BYTES, ht, sizeof ht);
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
  ck_assert_msg(write(fd, img, (size_t)names_off) == (ssize_t)names_off,
                "%s: short write", path);
  /* The name slots stay zeros (no user event names): a hole. */
  ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
  close(fd);
  free(img);
}
