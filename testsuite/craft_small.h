/* craft_small.h -- small ring files of any number of domains, written
 * word by word for the tests of readers' limits (the exporter's directory
 * scan, ctf's streams): an OCaml 5 style file (no extension block) whose
 * every domain holds a few runtime counter events in a ring of
 * CRAFT_SMALL_RING_WORDS words, so that thousands of domains or files
 * cost a few kilobytes each.
 */
#ifndef EVENTRING_TEST_CRAFT_SMALL_H
#define EVENTRING_TEST_CRAFT_SMALL_H

#include <stdint.h>

#define CRAFT_SMALL_RING_WORDS 16
/* Counter events per domain at most: three words each fit the ring. */
#define CRAFT_SMALL_MAX_EVENTS 5

/* Writes the file at `path` (created, or truncated) with `ndomains`
 * domains, each holding `events` counter events (counter id 5,
 * minor_allocated, value 1000 * domain + i, at time 1000 + i).  Fails the
 * running test on an error. */
void er_craft_small(const char *path, int ndomains, int events);

#endif
