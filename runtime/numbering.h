/* numbering.h -- telling OCaml 5.0-5.2's phase numbering from 5.3's in a
 * file that does not say which it uses (numbering.c).
 *
 * The consumer (consumer_open.c) makes one of these for a file written by an
 * OCaml 5 runtime, lets it scan the rings when the cursor opens and, while
 * the evidence is too thin to decide, again before each poll; it asks for
 * the verdict after each scan.
 */
#ifndef EVENTRING_NUMBERING_H
#define EVENTRING_NUMBERING_H

#include <stdint.h>

#include "internal.h"

/* Where a file's rings are: values the consumer has checked against the
 * file's size, and how to read them: `read` copies `bytes` bytes at file
 * offset `off` (8 bytes: one word, with acquire order) and returns 0, or
 * a negative error when the file can no longer be read there. */
struct er_rings {
  int (*read)(const void *ctx, uint64_t off, void *dst, uint64_t bytes);
  const void *ctx;
  uint64_t max_domains, ring_words, ring_bytes, hdr_bytes;
  uint64_t headers_off, data_off;
};

struct er_numbering;

/* A fresh inference for a file of `max_domains` rings, with no evidence
 * yet; NULL when out of memory. */
ER_HIDDEN struct er_numbering *er_numbering_new(uint64_t max_domains);

/* Frees `n` (NULL: nothing). */
ER_HIDDEN void er_numbering_free(struct er_numbering *n);

/* Reads the events the rings hold beyond those read by the previous scan
 * and weighs them.  Never trusts the file: a ring whose words make no
 * sense is left alone from then on (the consumer reports it when it reads
 * it), and a ring its writer laps during the scan is read from its new
 * head with the nesting there taken as unknown. */
ER_HIDDEN void er_numbering_scan(struct er_numbering *n,
                                 const struct er_rings *r);

/* The numbering the evidence so far points to (ER_PHASES_OCAML50 or
 * ER_PHASES_OCAML53), and in *basis how sure that is:
 * EVENTRING_NUMBERING_INFERRED, EVENTRING_NUMBERING_GUESSED (no evidence
 * against either: 5.3+, the default) or EVENTRING_NUMBERING_CONFLICTING
 * (evidence against both: the one with less). */
ER_HIDDEN int er_numbering_verdict(const struct er_numbering *n, int *basis);

/* Under `numbering` (ER_PHASES_OCAML50 or _OCAML53), the oldest OCaml
 * release that writes every phase and counter id scanned so far (50 for
 * 5.0 ... 55, EVENTRING_OCAML_LATER past them all), with the kind
 * (EVENTRING_ID_PHASE or _COUNTER) and id that show it in *kind and *id
 * (*kind 0: none beyond the numbering's first release).  NULL pointers
 * are skipped. */
ER_HIDDEN int er_numbering_release(const struct er_numbering *n,
                                   int numbering, int *kind, int *id);

#endif /* EVENTRING_NUMBERING_H */
