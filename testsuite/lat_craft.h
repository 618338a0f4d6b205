/* lat_craft.h -- what the tests of `eventring latency` and `eventring
 * stats` (test_latency, test_stats) share: ring files built word by word,
 * running the tool, and reading numbers out of its JSON.
 *
 * The probes take their timestamps from the clock, so a file with pause
 * durations known in advance has to be written directly: an OCaml 5
 * style file (no extension block: the reader names phases with OCaml
 * 5.3's numbering and counts lost events in ring words), laid out as
 * FORMAT.md says with ring_format.h's definitions.  Each domain's events
 * are appended in memory and written out by craft_write(); a domain may
 * start at a ring position above 0 (craft_skip), which a reader sees as
 * the oldest events of a wrapped ring having been overwritten.
 */
#ifndef EVENTRING_TEST_LAT_CRAFT_H
#define EVENTRING_TEST_LAT_CRAFT_H

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "eventring.h"
#include "ring_format.h"
#include "testlib.h"

#define CRAFT_DOMAINS 2
#define CRAFT_RING_WORDS (UINT64_C(1) << 17)
#define CRAFT_HDR_BYTES 80

/* Phase and counter ids of OCaml 5.3's numbering (FORMAT.md). */
#define PH_MINOR 11
#define PH_MINOR_LOCAL_ROOTS 12
#define PH_MAJOR_SLICE 27
#define PH_MAJOR_MARK 10
/* The phases OCaml 4.13's GC hooks write as empty marker spans. */
#define PH_MAJOR_GC_CYCLE_DOMAINS 23
#define PH_MAJOR_GC_PHASE_CHANGE 24
#define PH_MAJOR_FINISH_CYCLE 28
#define CT_MINOR_PROMOTED 4
#define CT_MINOR_ALLOCATED 5

struct craft {
  uint64_t *ring[CRAFT_DOMAINS]; /* CRAFT_RING_WORDS each */
  uint64_t head[CRAFT_DOMAINS], tail[CRAFT_DOMAINS];
  char names[8][ER_NAME_SLOT_BYTES]; /* user event names, slots 0..7 */
};

static __attribute__((unused)) void craft_init(struct craft *c) {
  memset(c, 0, sizeof *c);
  for (int d = 0; d < CRAFT_DOMAINS; d++) {
    c->ring[d] = calloc(CRAFT_RING_WORDS, 8);
    ck_assert_ptr_nonnull(c->ring[d]);
  }
}

/* craft_init(), for a file NAME.events in a fresh directory of the test
 * (er_tmpdir()), whose path goes to `path` (PATH_MAX bytes).  Returns the
 * directory. */
static __attribute__((unused)) const char *craft_new(struct craft *c,
                                                     char *path,
                                                     const char *name) {
  const char *dir = er_tmpdir();
  snprintf(path, PATH_MAX, "%s/%s.events", dir, name);
  craft_init(c);
  return dir;
}

static __attribute__((unused)) void craft_free(struct craft *c) {
  for (int d = 0; d < CRAFT_DOMAINS; d++) free(c->ring[d]);
}

/* Starts domain `d` at ring position `pos` (before any event): the
 * `pos` words before it count as overwritten. */
static __attribute__((unused)) void craft_skip(struct craft *c, int d, uint64_t pos) {
  c->head[d] = c->tail[d] = pos;
}

static __attribute__((unused)) void craft_event(struct craft *c, int d, int user, unsigned type,
                        unsigned id, uint64_t ts, const uint64_t *payload,
                        unsigned npayload) {
  unsigned len = 2 + npayload;
  const uint64_t mask = CRAFT_RING_WORDS - 1;
  /* No event straddles the end of the ring: pad to it. */
  uint64_t room = CRAFT_RING_WORDS - (c->tail[d] & mask);
  if (room < len) {
    c->ring[d][c->tail[d] & mask] = ER_HDR(room, 0, ER_EV_INTERNAL, 0);
    c->tail[d] += room;
  }
  ck_assert_msg(c->tail[d] + len - c->head[d] <= CRAFT_RING_WORDS,
                "crafted ring %d overflows", d);
  uint64_t *w = &c->ring[d][c->tail[d] & mask];
  w[0] = ER_HDR(len, user, type, id);
  w[1] = ts;
  for (unsigned i = 0; i < npayload; i++) w[2 + i] = payload[i];
  c->tail[d] += len;
}

static __attribute__((unused)) void craft_begin(struct craft *c, int d, uint64_t ts, unsigned ph) {
  craft_event(c, d, 0, ER_EV_BEGIN, ph, ts, NULL, 0);
}

static __attribute__((unused)) void craft_end(struct craft *c, int d, uint64_t ts, unsigned ph) {
  craft_event(c, d, 0, ER_EV_END, ph, ts, NULL, 0);
}

static __attribute__((unused)) void craft_counter(struct craft *c, int d, uint64_t ts, unsigned id,
                          uint64_t v) {
  craft_event(c, d, 0, ER_EV_COUNTER, id, ts, &v, 1);
}

static __attribute__((unused)) void craft_lifecycle(struct craft *c, int d, uint64_t ts, unsigned k,
                            uint64_t v) {
  craft_event(c, d, 0, ER_EV_LIFECYCLE, k, ts, &v, 1);
}

static __attribute__((unused)) void craft_alloc(struct craft *c, int d, uint64_t ts,
                        const uint64_t buckets[20]) {
  craft_event(c, d, 0, ER_EV_ALLOC, 0, ts, buckets, 20);
}

static __attribute__((unused)) void craft_user_name(struct craft *c, unsigned id, const char *name) {
  ck_assert_uint_lt(id, 8);
  snprintf(c->names[id], ER_NAME_SLOT_BYTES, "%s", name);
}

static __attribute__((unused)) void craft_user_int(struct craft *c, int d, uint64_t ts, unsigned id,
                           int64_t v) {
  uint64_t w = (uint64_t)v;
  craft_event(c, d, 1, ER_UEV_INT, id, ts, &w, 1);
}

static __attribute__((unused)) void craft_user_unit(struct craft *c, int d, uint64_t ts,
                            unsigned id) {
  craft_event(c, d, 1, ER_UEV_UNIT, id, ts, NULL, 0);
}

/* A pause of `dur` ns at `ts` on domain `d`: minor, with minor_local_roots
 * nested in its middle half when it is long enough.  Returns the end. */
static __attribute__((unused)) uint64_t craft_pause(struct craft *c, int d, uint64_t ts,
                            uint64_t dur) {
  craft_begin(c, d, ts, PH_MINOR);
  if (dur >= 4) {
    craft_begin(c, d, ts + dur / 4, PH_MINOR_LOCAL_ROOTS);
    craft_end(c, d, ts + dur / 2, PH_MINOR_LOCAL_ROOTS);
  }
  craft_end(c, d, ts + dur, PH_MINOR);
  return ts + dur;
}

static __attribute__((unused)) void put_words(int fd, off_t off, const uint64_t *w, size_t n) {
  ssize_t r = pwrite(fd, w, n * 8, off);
  ck_assert_msg(r == (ssize_t)(n * 8), "pwrite: %s", strerror(errno));
}

/* Byte offsets of the layout. */
#define CRAFT_HEADERS_OFF 64
#define CRAFT_DATA_OFF (CRAFT_HEADERS_OFF + CRAFT_DOMAINS * CRAFT_HDR_BYTES)
#define CRAFT_CUSTOM_OFF (CRAFT_DATA_OFF + CRAFT_DOMAINS * CRAFT_RING_WORDS * 8)

/* Writes the ring headers (head, tail) of every domain. */
static __attribute__((unused)) void craft_write_headers(const struct craft *c, int fd) {
  for (int d = 0; d < CRAFT_DOMAINS; d++) {
    uint64_t ht[2] = {c->head[d], c->tail[d]};
    put_words(fd, CRAFT_HEADERS_OFF + d * CRAFT_HDR_BYTES, ht, 2);
  }
}

/* Writes the whole file at `path` (mode 0600). */
static __attribute__((unused)) void craft_write(const struct craft *c, const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
  uint64_t meta[ER_META_WORDS] = {
      [ER_META_VERSION] = ER_FORMAT_VERSION,
      [ER_META_MAX_DOMAINS] = CRAFT_DOMAINS,
      [ER_META_RING_HEADER_SIZE] = CRAFT_HDR_BYTES,
      [ER_META_RING_SIZE_BYTES] = CRAFT_RING_WORDS * 8,
      [ER_META_RING_SIZE_ELEMENTS] = CRAFT_RING_WORDS,
      [ER_META_HEADERS_OFFSET] = CRAFT_HEADERS_OFF,
      [ER_META_DATA_OFFSET] = CRAFT_DATA_OFF,
      [ER_META_CUSTOM_EVENTS_OFFSET] = CRAFT_CUSTOM_OFF,
  };
  put_words(fd, 0, meta, ER_META_WORDS);
  for (int d = 0; d < CRAFT_DOMAINS; d++)
    put_words(fd, CRAFT_DATA_OFF + (off_t)d * CRAFT_RING_WORDS * 8,
              c->ring[d], CRAFT_RING_WORDS);
  ck_assert_int_eq(ftruncate(fd, CRAFT_CUSTOM_OFF +
                                     ER_NAME_SLOTS * ER_NAME_SLOT_BYTES),
                   0);
  for (unsigned i = 0; i < 8; i++)
    ck_assert_int_eq(pwrite(fd, c->names[i], ER_NAME_SLOT_BYTES,
                            CRAFT_CUSTOM_OFF + i * ER_NAME_SLOT_BYTES),
                     ER_NAME_SLOT_BYTES);
  craft_write_headers(c, fd);
  close(fd);
}

/* Writes two crafted files, a.events and b.events, in a fresh directory
 * of the test (their paths go to `a` and `b`, PATH_MAX bytes each), the
 * events of file f (0 for a, 1 for b) by `fill`.  Returns the directory. */
static __attribute__((unused)) const char *craft_pair(
    char *a, char *b, void (*fill)(struct craft *c, int f)) {
  const char *dir = er_tmpdir();
  snprintf(a, PATH_MAX, "%s/a.events", dir);
  snprintf(b, PATH_MAX, "%s/b.events", dir);
  for (int f = 0; f < 2; f++) {
    struct craft c;
    craft_init(&c);
    fill(&c, f);
    craft_write(&c, f ? b : a);
    craft_free(&c);
  }
  return dir;
}

/* Rewrites domain `d`'s ring words and then the ring headers of the file
 * at `path`, as a writer would publish new events (and a new head). */
static __attribute__((unused)) void craft_update(const struct craft *c, const char *path, int d) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
  put_words(fd, CRAFT_DATA_OFF + (off_t)d * CRAFT_RING_WORDS * 8, c->ring[d],
            CRAFT_RING_WORDS);
  craft_write_headers(c, fd);
  close(fd);
}

/* ------------------------------------------------------------------ */
/* Running programs (the tool, helper programs), bounded in time.       */

struct lat_run {
  int status; /* exit status, or -1 when killed after the timeout or by a
               * signal */
  char *out, *err;
};

/* Starts argv[0] (NULL-terminated argv) with stdout and stderr going to
 * the temporary files *out and *err. */
static __attribute__((unused)) pid_t lat_start(char *const argv[], FILE **out, FILE **err) {
  *out = tmpfile();
  *err = tmpfile();
  ck_assert(*out && *err);
  return er_spawn(argv, ER_FD_NULL, fileno(*out), fileno(*err), NULL, 0);
}

static __attribute__((unused)) struct lat_run lat_finish(pid_t pid, FILE *out, FILE *err) {
  struct lat_run r = {-1, NULL, NULL};
  int st = er_wait_for(pid, ER_RUN_TIMEOUT);
  if (st != -1 && WIFEXITED(st)) r.status = WEXITSTATUS(st);
  r.out = er_read_stream(out);
  r.err = er_read_stream(err);
  return r;
}

/* Runs the tool with `args` (NULL-terminated, without argv[0]). */
static __attribute__((unused)) struct lat_run lat_run_tool(const char *const *args) {
  char *argv[32];
  size_t n = 0;
  argv[n++] = (char *)er_tool_path();
  for (; args[n - 1]; n++) {
    ck_assert_uint_lt(n, 31);
    argv[n] = (char *)args[n - 1];
  }
  argv[n] = NULL;
  FILE *out, *err;
  pid_t pid = lat_start(argv, &out, &err);
  return lat_finish(pid, out, err);
}

static __attribute__((unused)) void lat_run_free(struct lat_run *r) {
  free(r->out);
  free(r->err);
}

/* The run ended with status 0; its stderr is then ignored (a lost-event
 * summary may be there). */
static __attribute__((unused)) void lat_assert_ok(const struct lat_run *r) {
  ck_assert_msg(r->status == 0, "exit status %d, stderr: %s", r->status,
                r->err);
}

/* ------------------------------------------------------------------ */
/* Numbers out of the tool's JSON (one object, known keys).             */

/* The text just after `"key": ` at or after `from`; fails when absent. */
static __attribute__((unused)) const char *json_at(const char *from, const char *key) {
  char pat[128];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  const char *p = strstr(from, pat);
  ck_assert_msg(p != NULL, "no key \"%s\" in: %.300s", key, from);
  return p + strlen(pat);
}

static __attribute__((unused)) uint64_t json_u64(const char *from, const char *key) {
  const char *p = json_at(from, key);
  char *end;
  errno = 0;
  unsigned long long v = strtoull(p, &end, 10);
  ck_assert_msg(end != p && errno == 0, "\"%s\" is not a count: %.40s", key,
                p);
  return v;
}

/* Checks the counts `spec` names ("cut=1 unmatched_ends=0 ...": keys and
 * values, separated by spaces) against the tool's JSON at `from`; the
 * failure names the key. */
static __attribute__((unused)) void json_counts(const char *from,
                                                const char *spec) {
  char key[64];
  unsigned long long want;
  int n;
  while (sscanf(spec, " %63[^=]=%llu%n", key, &want, &n) == 2) {
    uint64_t got = json_u64(from, key);
    ck_assert_msg(got == want, "\"%s\": %llu, want %llu", key,
                  (unsigned long long)got, want);
    spec += n;
  }
  ck_assert_msg(*spec == '\0', "bad count spec at: %s", spec);
}

static __attribute__((unused)) double json_double(const char *from, const char *key) {
  const char *p = json_at(from, key);
  char *end;
  double v = strtod(p, &end);
  ck_assert_msg(end != p, "\"%s\" is not a number: %.40s", key, p);
  return v;
}

/* The object of array `key` whose "name" is `name` (a pointer to its
 * "name"), or NULL.  The array ends at its own closing bracket: objects
 * in it may hold arrays of their own (per-domain rows). */
static __attribute__((unused)) const char *json_named(const char *json, const char *key,
                              const char *name) {
  const char *arr = json_at(json, key);
  char pat[256];
  snprintf(pat, sizeof pat, "{\"name\": \"%s\"", name);
  size_t n = strlen(pat);
  int depth = 0, in_str = 0;
  for (const char *p = arr; *p; p++) {
    if (in_str) {
      if (*p == '\\' && p[1]) p++;
      else if (*p == '"') in_str = 0;
      continue;
    }
    if (depth == 1 && !strncmp(p, pat, n)) return p;
    if (*p == '"') in_str = 1;
    else if (*p == '[' || *p == '{') depth++;
    else if ((*p == ']' || *p == '}') && --depth == 0) return NULL;
  }
  return NULL;
}

#endif
