/* ringfile.h -- a strict, simple decoder of whole ring files, for tests.
 *
 * Reads a ring file into memory with read(2) (never mmap), checks every
 * header field, offset and length against the file's size, and walks each
 * domain's ring from ring_head to ring_tail.  It is deliberately separate
 * from the library's consumer so that the tests check the producer against
 * an independent reading of FORMAT.md.
 */
#ifndef EVENTRING_TEST_RINGFILE_H
#define EVENTRING_TEST_RINGFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct rf_event {
  int domain;
  uint64_t pos;        /* ring position (words) of the header */
  uint64_t ts;
  unsigned len;        /* words, header and timestamp included */
  int is_user;
  unsigned type;       /* message type */
  unsigned id;         /* event id */
  unsigned npayload;   /* len - 2 */
  uint64_t payload[20];/* first words of the payload (alloc: all 20) */
  /* user custom events: the payload bytes, recovered length */
  const unsigned char *custom;
  size_t custom_len;
};

struct rf_ring {
  uint64_t head, tail;       /* ring header words 0 and 1 */
  /* eventring's spare words (ring_format.h), 0 in OCaml 5's files: PSEQ
   * (moves of head), the newest pair's head and evicted count, WRITTEN,
   * DROPPED. */
  uint64_t seq, pair_head, evicted, written, dropped;
  /* Where the events decoded begin: the newest pair's head when there is
   * one (a writer killed between publishing the pair and storing HEAD
   * leaves HEAD one move behind it), else HEAD. */
  uint64_t start;
  size_t nevents;            /* events decoded (padding excluded) */
  struct rf_event *events;   /* in ring order */
};

struct rf_file {
  unsigned char *bytes;      /* the whole file */
  size_t size;
  uint64_t meta[8];
  int has_ext;               /* eventring's extension block present */
  uint64_t ext[16];          /* its fixed part when has_ext */
  uint64_t max_domains, ring_words;
  struct rf_ring *rings;     /* max_domains of them */
};

/* Reads and decodes `path`.  Returns 0, or -1 with a message in `err`
 * (at least 256 bytes) when the file is unreadable or malformed. */
int rf_open(const char *path, struct rf_file *f, char *err);
void rf_close(struct rf_file *f);

/* The user event name in slot `id`, or NULL when the slot is empty. */
const char *rf_user_name(const struct rf_file *f, unsigned id);

/* The extension block's name table entries (NULL when absent/out of
 * range): kind 0 phases, 1 counters, 2 lifecycle. */
const char *rf_ext_name(const struct rf_file *f, int kind, unsigned id);

/* Prints `ev` in the line format of the OCaml 5 vectors' .expected files:
 *   domain=D ts=NS kind=KIND name=NAME value=VALUE
 * `phases50` selects the OCaml 5.0-5.2 phase names (else 5.3+).  Payload
 * integers print as OCaml's reader would (their low 63 bits, signed), and
 * ring_stop's value prints as "-" whatever its length (FORMAT.md's quirk). */
void rf_print_event(FILE *out, const struct rf_file *f,
                    const struct rf_event *ev, int phases50);

/* Prints the `n` bytes at `bytes` as OCaml's Printf "%S" would (the
 * vectors' user_custom values): in double quotes, with the escapes of
 * String.escaped. */
void rf_print_ocaml_string(FILE *out, const void *bytes, size_t n);

/* Counts events of one kind in a domain (is_user, type, id; id -1 = any;
 * domain -1 = every domain). */
size_t rf_count(const struct rf_file *f, int domain, int is_user,
                unsigned type, int id);

#endif
