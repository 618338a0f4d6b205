/* ctf_writer -- a ring file that spans many CTF packets, for test_ctf.
 *
 * The main thread (domain 0) writes the ints 0 .. N-1 (argv[1], default
 * 10000) of "c.seq", and after every 1000th a custom event "c.blob" of
 * EVENTRING_MAX_CUSTOM_BYTES bytes, every byte value in turn, so that its
 * OCaml literal is about four times as long; a second thread (domain 1)
 * writes N/10 ints of "c.other" meanwhile.  The test sets a ring large
 * enough to lose nothing (OCAMLRUNPARAM=e=17) and keeps the file.
 * Exit status: 0, or the step that failed. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "eventring.h"

static long n = 10000;
static int id_seq, id_blob, id_other;

static void *other(void *arg) {
  (void)arg;
  for (long i = 0; i < n / 10; i++) eventring_write_int(id_other, -i);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) n = strtol(argv[1], NULL, 10);
  id_seq = eventring_register("c.seq", EVENTRING_TYPE_INT);
  id_blob = eventring_register("c.blob", EVENTRING_TYPE_CUSTOM);
  id_other = eventring_register("c.other", EVENTRING_TYPE_INT);
  if (id_seq < 0 || id_blob < 0 || id_other < 0) return 2;
  if (eventring_start() != 0) return 3;
  static unsigned char blob[EVENTRING_MAX_CUSTOM_BYTES];
  for (size_t i = 0; i < sizeof blob; i++) blob[i] = (unsigned char)i;
  pthread_t t;
  if (pthread_create(&t, NULL, other, NULL) != 0) return 4;
  for (long i = 0; i < n; i++) {
    eventring_write_int(id_seq, i);
    if (i % 1000 == 999 &&
        eventring_write_custom(id_blob, blob, sizeof blob) != 0)
      return 5;
  }
  pthread_join(t, NULL);
  return eventring_stop() == 0 ? 0 : 6;
}
