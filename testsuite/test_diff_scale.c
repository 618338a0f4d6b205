/* Tests that eventring diff scales with its inputs: the names it compares to find an entry stay a few per entry however many spans there are (a count, not a time), and a large stats --json costs memory for the samples kept, not for the document's tree (the peak resident size of the run). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "harness.h"
#include "testlib.h"

/* diff.c compiled in, counting its name comparisons. */
static uint64_t compared;
#define DIFF_NAME_COMPARED() (compared++)
#include "../tools/cmd/diff.c"

/* Runs `eventring diff A B -o OUT` in this process.  Returns its exit
 * status. */
static int run_diff(const char *a, const char *b, const char *out) {
  char *argv[] = {"diff", "-o", (char *)out, (char *)a, (char *)b, NULL};
  optind = 0; /* getopt_long starts over */
  return tool_diff(5, argv);
}

/* Writes a stats --json of `nspans` spans named span_0.. with `nbuckets`
 * buckets each (durations from `first`, ascending) to `path`; returns
 * its size in bytes. */
static long write_stats(const char *path, int nspans, long nbuckets,
                        uint64_t first) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("{\"version\": 1, \"phases\": [], \"spans\": [", f);
  for (int i = 0; i < nspans; i++) {
    fprintf(f,
            "%s\n {\"name\": \"span_%d\", \"count\": %ld, \"total_ns\": "
            "%ld, \"mean_ns\": 1.5, \"p50_ns\": 7, \"p99_ns\": 9, "
            "\"max_ns\": 9, \"buckets\": [",
            i ? "," : "", i, 2 * nbuckets, 3 * nbuckets);
    for (long k = 0; k < nbuckets; k++)
      fprintf(f, "%s[%" PRIu64 ", 2]", k ? ", " : "", first + 3 * (uint64_t)k);
    fputs("]}", f);
  }
  fputs("]}\n", f);
  long size = ftell(f);
  ck_assert_int_eq(fclose(f), 0);
  return size;
}

/* The paths of a.json, b.json and out.txt in the test's directory, in
 * `a`, `b` and `out` (PATH_MAX bytes each). */
static void diff_paths(char *a, char *b, char *out) {
  const char *dir = er_tmpdir();
  snprintf(a, PATH_MAX, "%s/a.json", dir);
  snprintf(b, PATH_MAX, "%s/b.json", dir);
  snprintf(out, PATH_MAX, "%s/out.txt", dir);
}

/* Lookups: 4000 spans on each side cost a few comparisons per entry (a
 * search through every entry for each costs millions). */
START_TEST(test_name_lookups) {
  char a[PATH_MAX], b[PATH_MAX], out[PATH_MAX];
  diff_paths(a, b, out);
  enum { N = 4000 };
  write_stats(a, N, 2, 100);
  write_stats(b, N, 2, 101);
  compared = 0;
  ck_assert_int_eq(run_diff(a, b, out), 0);
  /* Every row is there. */
  struct er_lines l = er_lines_read(out);
  int rows = 0;
  for (size_t i = 0; i < l.n; i++)
    rows += l.v[i][0] && !strncmp(l.v[i] + 1, " span span_", 11);
  er_lines_free(&l);
  ck_assert_int_eq(rows, N);
  /* 2N entries kept and N paired: each lookup compares one name or two
   * (the table is at most half full). */
  ck_assert_msg(compared <= 8 * (uint64_t)N,
                "%" PRIu64 " name comparisons for %d spans", compared, N);
}
END_TEST

/* Peak resident memory of this process, in bytes. */
static uint64_t max_rss(void) {
  struct rusage ru;
  ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
  return (uint64_t)ru.ru_maxrss * 1024;
}

/* Memory: two stats outputs of 1.5 million buckets (about 20 MB each).
 * The samples kept take 16 bytes a bucket; a tree of the document took
 * some 600. */
START_TEST(test_memory) {
  char a[PATH_MAX], b[PATH_MAX], out[PATH_MAX];
  diff_paths(a, b, out);
  enum { BUCKETS = 1500000 };
  long size = write_stats(a, 1, BUCKETS, 1000);
  size += write_stats(b, 1, BUCKETS, 1001);
  uint64_t before = max_rss();
  ck_assert_int_eq(run_diff(a, b, out), 0);
  uint64_t grew = max_rss() - before;
  /* The inputs' text and samples, with room for the allocator; an
   * AddressSanitizer build also keeps what was freed in quarantine (197
   * MB in all here), a ThreadSanitizer build shadow memory several times
   * the size of what the program touches (345 MB).  A tree of the
   * document would still be some 4 times over, even there. */
  const char *san = getenv("EVENTRING_SANITIZER");
  uint64_t factor = !san || !strcmp(san, "none")  ? 1
                    : !strcmp(san, "thread")      ? 8
                                                  : 2;
  uint64_t limit = factor * (4 * (uint64_t)size + (64u << 20));
  ck_assert_msg(grew <= limit,
                "diff of two %ld-byte inputs grew the resident size by %" PRIu64
                " MB (limit %" PRIu64 " MB)",
                size / 2, grew >> 20, limit >> 20);
  struct er_lines l = er_lines_read(out);
  int found = 0;
  for (size_t i = 0; i < l.n; i++)
    found += l.v[i][0] && !strncmp(l.v[i] + 1, " span span_0 ", 13);
  er_lines_free(&l);
  ck_assert_int_eq(found, 1);
}
END_TEST

static TCase *tc_scale(void) {
  TCase *tc = er_tcase("scale");
  tcase_add_test(tc, test_name_lookups);
  tcase_add_test(tc, test_memory);
  return tc;
}

ER_TEST_MAIN("diff scale", tc_scale)
