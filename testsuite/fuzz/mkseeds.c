/* mkseeds -- makes fuzz_reader's seed corpus from real ring files.
 *
 *   mkseeds OUTDIR [FILE.events ...]
 *
 * Writes into OUTDIR seeds made from ring files eventring writes here
 * (with OCAMLRUNPARAM=e=10,d=2: several threads, every probe and user
 * event type, one ring that wraps) and from each FILE given (the OCaml 5
 * vectors).  A ring file is at least 1 MiB, mostly zeros, so each is
 * compacted first: only the domains that hold events are kept, a ring
 * that never wrapped shrinks to the smallest power of two holding its
 * events, the offsets are rewritten to match, and the trailing zeros are
 * cut and left to fuzz_reader's extension byte (see fuzz_reader.c).  Each
 * file also gives a few plainly truncated seeds.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eventring.h"
#include "ring_format.h"

static const char *outdir;
static int nseeds;

static void die(const char *what) {
  fprintf(stderr, "mkseeds: %s: %s\n", what, strerror(errno));
  exit(1);
}

static unsigned char *slurp(const char *path, size_t *size) {
  FILE *fp = fopen(path, "rb");
  if (!fp) die(path);
  struct stat st;
  if (fstat(fileno(fp), &st) < 0) die(path);
  unsigned char *b = malloc((size_t)st.st_size + 1);
  if (!b) die("malloc");
  *size = fread(b, 1, (size_t)st.st_size, fp);
  fclose(fp);
  return b;
}

static void emit(const char *name, const unsigned char *b, size_t n,
                 int ctl) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", outdir, name);
  FILE *fp = fopen(path, "wb");
  if (!fp) die(path);
  if (fwrite(b, 1, n, fp) != n) die(path);
  if (ctl >= 0) fputc(ctl, fp);
  if (fclose(fp) != 0) die(path);
  nseeds++;
}

static uint64_t get(const unsigned char *b, uint64_t off) {
  uint64_t w;
  memcpy(&w, b + off, 8);
  return w;
}

static void put(unsigned char *b, uint64_t off, uint64_t w) {
  memcpy(b + off, &w, 8);
}

/* Compacts the ring file `b` (already validated by the library's
 * reader) and writes it as seed NAME.  Returns 0, or -1 when its layout
 * is not one this compaction handles. */
static int compact(const char *name, const unsigned char *b, size_t size) {
  uint64_t nd = get(b, 8 * ER_META_MAX_DOMAINS);
  uint64_t hb = get(b, 8 * ER_META_RING_HEADER_SIZE);
  uint64_t rw = get(b, 8 * ER_META_RING_SIZE_ELEMENTS);
  uint64_t ho = get(b, 8 * ER_META_HEADERS_OFFSET);
  uint64_t dofs = get(b, 8 * ER_META_DATA_OFFSET);
  uint64_t co = get(b, 8 * ER_META_CUSTOM_EVENTS_OFFSET);
  if (co + ER_NAME_SLOTS * ER_NAME_SLOT_BYTES > size) return -1;

  /* Domains in use, and whether every ring still starts at 0. */
  uint64_t used = 0, max_tail = 0;
  int wrapped = 0;
  for (uint64_t d = 0; d < nd; d++) {
    uint64_t head = get(b, ho + d * hb + 8 * ER_RING_HEAD);
    uint64_t tail = get(b, ho + d * hb + 8 * ER_RING_TAIL);
    if (tail == 0) continue;
    used = d + 1;
    if (tail > max_tail) max_tail = tail;
    if (head != 0 || tail > rw) wrapped = 1;
  }
  if (used == 0) used = 1;
  uint64_t nrw = rw;
  if (!wrapped) {
    nrw = 16;
    while (nrw < max_tail) nrw *= 2;
  }

  uint64_t nho = ho, ndo = nho + used * hb, nco = ndo + used * nrw * 8;
  size_t nsize = (size_t)(nco + ER_NAME_SLOTS * ER_NAME_SLOT_BYTES);
  unsigned char *o = calloc(1, nsize);
  if (!o) die("calloc");
  memcpy(o, b, (size_t)ho); /* metadata and extension block */
  put(o, 8 * ER_META_MAX_DOMAINS, used);
  put(o, 8 * ER_META_RING_SIZE_BYTES, nrw * 8);
  put(o, 8 * ER_META_RING_SIZE_ELEMENTS, nrw);
  put(o, 8 * ER_META_DATA_OFFSET, ndo);
  put(o, 8 * ER_META_CUSTOM_EVENTS_OFFSET, nco);
  memcpy(o + nho, b + ho, (size_t)(used * hb));
  for (uint64_t d = 0; d < used; d++)
    memcpy(o + ndo + d * nrw * 8, b + dofs + d * rw * 8, (size_t)(nrw * 8));
  memcpy(o + nco, b + co, ER_NAME_SLOTS * ER_NAME_SLOT_BYTES);

  /* Cut the zeros at the end; the extension byte restores the size. */
  size_t keep = nsize;
  while (keep > 0 && o[keep - 1] == 0) keep--;
  keep = (keep + 7) & ~(size_t)7;
  uint64_t units = (nsize + 65535) / 65536;
  if (units > 63) {
    free(o);
    return -1;
  }
  char seed[512];
  snprintf(seed, sizeof seed, "%s.seed", name);
  emit(seed, o, keep, (int)(units << 2 | 1));
  /* The same, read with the 5.0-5.2 numbering. */
  snprintf(seed, sizeof seed, "%s-50.seed", name);
  emit(seed, o, keep, (int)(units << 2 | 3));
  /* Truncated: the extension stops just short of the name slots' end,
   * and plain prefixes. */
  snprintf(seed, sizeof seed, "%s-short.seed", name);
  emit(seed, o, keep, (int)((units - 1) << 2 | 1));
  const size_t cuts[] = {63, 64, 200, 4096};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    if (cuts[i] >= keep) continue;
    snprintf(seed, sizeof seed, "%s-cut%zu.seed", name, cuts[i]);
    /* An even last byte: the input is the file. */
    unsigned char save = o[cuts[i] - 1];
    o[cuts[i] - 1] &= 0xfe;
    emit(seed, o, cuts[i], -1);
    o[cuts[i] - 1] = save;
  }
  free(o);
  return 0;
}

static int compact_file(const char *name, const char *path) {
  eventring_cursor *c = NULL;
  int r = eventring_cursor_open_file(&c, path);
  if (r < 0) {
    fprintf(stderr, "mkseeds: %s: %s\n", path, eventring_strerror(r));
    return -1;
  }
  eventring_cursor_free(c);
  size_t size;
  unsigned char *b = slurp(path, &size);
  r = compact(name, b, size);
  free(b);
  if (r < 0) fprintf(stderr, "mkseeds: %s: layout not handled\n", path);
  return r;
}

/* Events of every kind from a second thread. */
static int ids[5];

static void *thread_events(void *arg) {
  (void)arg;
  eventring_begin(EVENTRING_PHASE_MAJOR_SLICE);
  eventring_counter(EVENTRING_COUNTER_MAJOR_HEAP_WORDS, 123456);
  for (int i = 0; i < 10; i++) eventring_write_int(ids[1], -i);
  eventring_write_custom(ids[3], "from the second thread", 22);
  eventring_end(EVENTRING_PHASE_MAJOR_SLICE);
  return NULL;
}

/* Writes an eventring file in `dir`; wrap: overflow the ring. */
static void write_own(const char *dir, int wrap, char *path, size_t n) {
  setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
  setenv("OCAMLRUNPARAM", "e=10,d=2", 1);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  ids[0] = eventring_register("seed.unit", EVENTRING_TYPE_UNIT);
  ids[1] = eventring_register("seed.int", EVENTRING_TYPE_INT);
  ids[2] = eventring_register("seed.span", EVENTRING_TYPE_SPAN);
  ids[3] = eventring_register("seed.custom", EVENTRING_TYPE_CUSTOM);
  int r = eventring_start();
  if (r != 0) {
    fprintf(stderr, "mkseeds: start: %s\n", eventring_strerror(r));
    exit(1);
  }
  snprintf(path, n, "%s", eventring_path());
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, 42);
  eventring_end(EVENTRING_PHASE_MINOR);
  eventring_lifecycle(EVENTRING_LIFECYCLE_FORK_PARENT, 4242);
  eventring_write_unit(ids[0]);
  eventring_write_span(ids[2], 0);
  unsigned char buf[300];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i * 7);
  for (size_t len = 0; len <= 17; len++) eventring_write_custom(ids[3], buf, len);
  eventring_write_custom(ids[3], buf, sizeof buf);
  eventring_write_span(ids[2], 1);
  pthread_t th;
  if (pthread_create(&th, NULL, thread_events, NULL) == 0)
    pthread_join(th, NULL);
  for (int i = 0; i < (wrap ? 2000 : 20); i++) {
    eventring_write_int(ids[1], i);
    if (wrap && i % 50 == 0) eventring_write_custom(ids[3], buf, (size_t)i % 97);
  }
  eventring_pause();
  eventring_resume();
  eventring_stop();
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: mkseeds OUTDIR [FILE.events ...]\n");
    return 2;
  }
  outdir = argv[1];
  if (mkdir(outdir, 0700) < 0 && errno != EEXIST) die(outdir);
  char tmp[] = "/tmp/eventring-mkseeds-XXXXXX";
  if (!mkdtemp(tmp)) die("mkdtemp");
  int failed = 0;
  char path[4096];
  write_own(tmp, 0, path, sizeof path);
  failed |= compact_file("own", path) < 0;
  unlink(path);
  write_own(tmp, 1, path, sizeof path);
  failed |= compact_file("own-wrapped", path) < 0;
  unlink(path);
  rmdir(tmp);
  for (int i = 2; i < argc; i++) {
    const char *base = strrchr(argv[i], '/');
    base = base ? base + 1 : argv[i];
    char name[256];
    snprintf(name, sizeof name, "%s", base);
    char *dot = strstr(name, ".events");
    if (dot) *dot = '\0';
    failed |= compact_file(name, argv[i]) < 0;
  }
  printf("mkseeds: %d seeds in %s\n", nseeds, outdir);
  return failed;
}
