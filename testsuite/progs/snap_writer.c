/* snap_writer -- a traced program for test_snapshot that writes only when
 * told, so that a test knows exactly what its ring holds when it takes a
 * snapshot.  It starts tracing, prints "started PATH", then obeys lines
 * on stdin:
 *   w N     write N more iterations (begin minor, user int "snap.seq" =
 *           the iteration's number, user custom "snap.blob" holding that
 *           number and a hash of it, end minor), then print "ok N"
 *   s PATH  eventring_snapshot(PATH), then print "snap RC"
 * and exits at the end of its input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventring.h"

int main(void) {
  int rc = eventring_start();
  if (rc != 0) {
    fprintf(stderr, "snap_writer: start: %s\n", eventring_strerror(rc));
    return 2;
  }
  int seq = eventring_register("snap.seq", EVENTRING_TYPE_INT);
  int blob = eventring_register("snap.blob", EVENTRING_TYPE_CUSTOM);
  if (seq < 0 || blob < 0) return 2;
  printf("started %s\n", eventring_path());
  fflush(stdout);
  char line[4200];
  uint64_t k = 0;
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = 0;
    if (line[0] == 'w') {
      long n = strtol(line + 2, NULL, 10);
      for (long i = 0; i < n; i++, k++) {
        eventring_begin(EVENTRING_PHASE_MINOR);
        eventring_write_int(seq, (int64_t)k);
        uint64_t payload[2] = {k, k * UINT64_C(0x9e3779b97f4a7c15) ^ 0x5eed};
        eventring_write_custom(blob, payload, sizeof payload);
        eventring_end(EVENTRING_PHASE_MINOR);
      }
      printf("ok %llu\n", (unsigned long long)k);
    } else if (line[0] == 's') {
      printf("snap %d\n", eventring_snapshot(line + 2));
    }
    fflush(stdout);
  }
  return 0;
}
