/* bench_memory.c -- what a ring file costs on disk and in memory.
 *
 * A ring file reserves room for every domain slot (128 by default, each
 * with a 512 KiB ring), but a slot no thread ever took should cost
 * nothing: the file is sparse and its pages are never touched.  A used
 * slot should cost its ring, once, and nothing more.  Issue 6 asks for
 * both.
 *
 * Method.  A run (this program re-executed with `--one N`) starts tracing
 * with the default ring size and number of slots, then N threads (the
 * main thread and N - 1 others) each write enough events to wrap their
 * ring once, and stay alive so that they keep their slots.  The run then
 * measures, in this order so that measuring touches nothing first:
 *   - the file's size and what it occupies on disk (st_blocks * 512);
 *   - the resident size of the library's mapping of the file in this
 *     process (Rss of its lines in /proc/self/smaps);
 *   - which of the file's pages are in the page cache (mincore() on a
 *     mapping of our own, which reads no page), split into the metadata
 *     and ring headers, the rings of used slots, the rings of idle slots
 *     and the user event names.
 * Sizes are deterministic, but the runs are repeated like every other
 * benchmark, each in a new process, and the median is reported.
 *
 * Output: a table on stdout; JSON to the file EVENTRING_BENCH_OUT names.
 * The exit status reports errors only.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "benchlib.h"
#include "eventring.h"
#include "ring_format.h"

#define CHILD_TIMEOUT_S 20
#define MAX_N 8

static uint64_t fill_events; /* counter events (3 words) that wrap a ring */
static pthread_barrier_t written, measured;

static void fill(void) {
  for (uint64_t i = 0; i < fill_events; i++)
    eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, i);
}

static void *filler(void *arg) {
  (void)arg;
  fill();
  pthread_barrier_wait(&written);
  /* Alive until measured: a thread that exits frees its slot. */
  pthread_barrier_wait(&measured);
  return NULL;
}

/* Sum of the Rss lines (kB) of the mappings of `path` in smaps. */
static long smaps_rss_kb(const char *path) {
  FILE *f = fopen("/proc/self/smaps", "r");
  char line[4608];
  long kb = 0;
  int in = 0;
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f)) {
    unsigned long a, b;
    if (sscanf(line, "%lx-%lx ", &a, &b) == 2) {
      line[strcspn(line, "\n")] = '\0';
      size_t ll = strlen(line), pl = strlen(path);
      in = ll >= pl && strcmp(line + ll - pl, path) == 0;
    } else if (in && strncmp(line, "Rss:", 4) == 0) {
      kb += strtol(line + 4, NULL, 10);
    }
  }
  fclose(f);
  return kb;
}

/* Resident bytes of pages [from, to) (byte offsets) by the mincore vector. */
static uint64_t resident(const unsigned char *vec, uint64_t pages,
                         uint64_t page, uint64_t from, uint64_t to) {
  uint64_t n = 0;
  for (uint64_t p = from / page; p < pages && p * page < to; p++)
    n += vec[p] & 1;
  return n * page;
}

static uint64_t meta_word(int fd, uint64_t off) {
  uint64_t w = 0;
  if (pread(fd, &w, sizeof w, (off_t)off) != (ssize_t)sizeof w) return 0;
  return w;
}

/* One run: prints the figures named in `fields` below, in that order. */
static int run_one(int n) {
  char dir[] = "/tmp/eventring-bench.XXXXXX";
  if (n < 1 || n > MAX_N) return 2;
  alarm(CHILD_TIMEOUT_S);
  unsetenv("OCAMLRUNPARAM");
  unsetenv("CAMLRUNPARAM");
  int rc = bl_start_tracing("bench_memory", dir);
  if (rc != 0) return rc;
  char path[4096];
  snprintf(path, sizeof path, "%s", eventring_path());
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    perror("bench_memory: open");
    return 2;
  }
  /* The metadata page was written at start: reading it adds nothing. */
  uint64_t ring_words = meta_word(fd, 8 * ER_META_RING_SIZE_ELEMENTS);
  uint64_t ring_bytes = meta_word(fd, 8 * ER_META_RING_SIZE_BYTES);
  uint64_t max_dom = meta_word(fd, 8 * ER_META_MAX_DOMAINS);
  uint64_t hdr_off = meta_word(fd, 8 * ER_META_HEADERS_OFFSET);
  uint64_t hdr_size = meta_word(fd, 8 * ER_META_RING_HEADER_SIZE);
  uint64_t data_off = meta_word(fd, 8 * ER_META_DATA_OFFSET);
  uint64_t names_off = meta_word(fd, 8 * ER_META_CUSTOM_EVENTS_OFFSET);
  if (ring_words == 0 || max_dom == 0 || data_off == 0) {
    fprintf(stderr, "bench_memory: %s: bad metadata header\n", path);
    return 2;
  }
  /* Each ring wraps once: counter events are 3 words. */
  fill_events = ring_words / 3 * 2;

  pthread_t th[MAX_N];
  pthread_barrier_init(&written, NULL, (unsigned)n);
  pthread_barrier_init(&measured, NULL, (unsigned)n);
  for (int i = 1; i < n; i++)
    if (pthread_create(&th[i], NULL, filler, NULL) != 0) {
      fprintf(stderr, "bench_memory: pthread_create failed\n");
      _exit(2);
    }
  fill();
  pthread_barrier_wait(&written);

  struct stat st;
  if (fstat(fd, &st) != 0) {
    perror("bench_memory: fstat");
    return 2;
  }
  long rss_kb = smaps_rss_kb(path);
  long pg = sysconf(_SC_PAGESIZE);
  uint64_t page = pg > 0 ? (uint64_t)pg : 4096;
  uint64_t size = (uint64_t)st.st_size, pages = (size + page - 1) / page;
  unsigned char *vec = calloc(pages ? pages : 1, 1);
  void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  if (vec == NULL || m == MAP_FAILED || mincore(m, size, vec) != 0) {
    perror("bench_memory: mincore");
    return 2;
  }
  uint64_t total = resident(vec, pages, page, 0, size);
  uint64_t fixed = resident(vec, pages, page, 0, data_off);
  uint64_t names = resident(vec, pages, page, names_off, size);
  uint64_t used = 0, idle = 0, nused = 0, idle_max = 0, used_max = 0;
  for (uint64_t i = 0; i < max_dom; i++) {
    uint64_t from = data_off + i * ring_bytes;
    uint64_t r = resident(vec, pages, page, from, from + ring_bytes);
    /* A slot is used when its ring header counts events written. */
    uint64_t w = meta_word(fd, hdr_off + i * hdr_size + 8 * ER_RING_WRITTEN);
    if (w > 0) {
      used += r, nused++;
      if (r > used_max) used_max = r;
    } else {
      idle += r;
      if (r > idle_max) idle_max = r;
    }
  }
  munmap(m, size);
  free(vec);
  struct statfs sf;
  unsigned long fstype = fstatfs(fd, &sf) == 0 ? (unsigned long)sf.f_type : 0;
  close(fd);

  printf("%llu %llu %ld %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
         "%lx\n",
         (unsigned long long)size, (unsigned long long)st.st_blocks * 512ull,
         rss_kb * 1024, (unsigned long long)total,
         (unsigned long long)fixed, (unsigned long long)used,
         (unsigned long long)nused, (unsigned long long)used_max,
         (unsigned long long)idle, (unsigned long long)idle_max,
         (unsigned long long)names, (unsigned long long)ring_bytes,
         (unsigned long long)max_dom, fstype);
  fflush(stdout);
  pthread_barrier_wait(&measured);
  for (int i = 1; i < n; i++) pthread_join(th[i], NULL);
  eventring_stop();
  rmdir(dir);
  return 0;
}

/* The figures a run prints, in order. */
enum {
  M_SIZE, M_DISK, M_RSS, M_CACHE, M_FIXED, M_USED, M_NUSED, M_USED_MAX,
  M_IDLE, M_IDLE_MAX, M_NAMES, M_RING, M_MAXDOM, N_M
};
static const char *const m_names[N_M] = {
  "file_size", "on_disk", "mapping_rss", "page_cache",
  "meta_and_headers_resident", "used_rings_resident", "used_slots",
  "used_ring_resident_max", "idle_rings_resident", "idle_ring_resident_max",
  "names_resident", "ring_bytes", "max_domains"};

static const int ns[] = {1, 2, 8};
#define N_NS (int)(sizeof ns / sizeof ns[0])

static double kib(double b) { return b / 1024.0; }

static int driver(const char *argv0) {
  char self[4096], out[512], cpu[256];
  bl_self(argv0, self, sizeof self);
  int runs = bl_runs(), errors = 0;
  unsigned long fstype = 0;
  bl_untraced(0);

  static struct bl_stat s[N_NS][N_M];
  memset(s, 0, sizeof s);
  for (int round = 0; round < runs; round++) {
    fprintf(stderr, "bench_memory: round %d of %d\n", round + 1, runs);
    for (int k = 0; k < N_NS; k++) {
      char arg[16];
      snprintf(arg, sizeof arg, "%d", ns[k]);
      char *args[] = {"--one", arg, NULL};
      int st = bl_spawn(self, args, out, sizeof out);
      if (st == BL_EXIT_DISABLED) {
        printf("bench_memory: n/a: library built with tracing disabled\n");
        return 0;
      }
      double v[N_M];
      char *p = out, *e;
      int got = 0;
      for (; got < N_M; got++, p = e) {
        v[got] = strtod(p, &e);
        if (e == p) break;
      }
      if (st != 0 || got != N_M) {
        fprintf(stderr, "bench_memory: run with %d domains failed\n", ns[k]);
        errors++;
        continue;
      }
      fstype = strtoul(p, NULL, 16);
      for (int i = 0; i < N_M; i++) bl_add(&s[k][i], v[i]);
    }
  }
  for (int k = 0; k < N_NS; k++)
    for (int i = 0; i < N_M; i++) bl_summarize(&s[k][i]);

  bl_cpu_model(cpu, sizeof cpu);
  double ring = s[0][M_RING].median;
  printf("eventring memory: one ring file with the default ring (%.0f KiB) "
         "and %.0f slots,\nN threads each wrapping its ring once; KiB, "
         "median of %d runs (each a new process)\nfile system of /tmp: "
         "0x%lx%s\n\n",
         kib(ring), s[0][M_MAXDOM].median, runs, fstype,
         fstype == 0x01021994 ? " (tmpfs)" : fstype == 0xef53 ? " (ext4)"
                                                               : "");
  printf("%-8s %10s %10s %10s %10s %10s %10s %10s %10s\n", "domains",
         "file size", "on disk", "map RSS", "cached", "meta+hdrs",
         "used rings", "per used", "idle rings");
  for (int k = 0; k < N_NS; k++) {
    const struct bl_stat *r = s[k];
    if (r[M_SIZE].nv == 0) continue;
    printf("%-8d %10.0f %10.0f %10.0f %10.0f %10.0f %10.0f %10.0f %10.0f\n",
           ns[k], kib(r[M_SIZE].median), kib(r[M_DISK].median),
           kib(r[M_RSS].median), kib(r[M_CACHE].median),
           kib(r[M_FIXED].median), kib(r[M_USED].median),
           r[M_NUSED].median > 0 ? kib(r[M_USED].median / r[M_NUSED].median)
                                 : 0,
           kib(r[M_IDLE].median));
  }
  printf("\non disk: st_blocks * 512; map RSS: Rss of the library's mapping "
         "in smaps; cached: the\nfile's pages in the page cache (mincore), "
         "split into the metadata and ring headers,\nthe rings of used "
         "slots (per used: their mean) and the rings of idle slots\n");

  FILE *o;
  if (bl_json_open("bench_memory", &o) < 0) return 1;
  if (o != NULL) {
    fprintf(o, "{\n  \"unit\": \"bytes\",\n  \"runs\": %d,\n  \"cpu\": ",
            runs);
    bl_json_str(o, cpu);
    fprintf(o, ",\n  \"fs_type\": \"0x%lx\",\n  \"domains\": [", fstype);
    for (int k = 0; k < N_NS; k++) {
      fprintf(o, "%s\n    {\"n\": %d", k ? "," : "", ns[k]);
      for (int i = 0; i < N_M; i++)
        fprintf(o, ", \"%s\": %.0f", m_names[i], s[k][i].median);
      fprintf(o, "}");
    }
    fprintf(o, "\n  ]\n}\n");
    if (bl_json_close("bench_memory", o) < 0) errors++;
  }
  return errors ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--one") == 0)
    return run_one(atoi(argv[2]));
  if (argc != 1) {
    fprintf(stderr, "usage: %s\n", argv[0]);
    return 2;
  }
  return driver(argv[0]);
}
