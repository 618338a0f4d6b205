/* bench_rss.c -- what linking eventring costs a process that never traces.
 *
 * A program linked with the library but never started (no
 * OCAML_RUNTIME_EVENTS_START, no eventring_start()) should be as big in
 * memory as the same program without it: issue 14 allows 64 KiB.
 *
 * Method.  This source is built three times (Makefile.in): the driver,
 * bench/bench_rss, and the two programs it compares, which are the same
 * small program: bench/bench_rss_with (-DBENCH_RSS_WITH), linked with
 * the static libeventring, and bench/bench_rss_without
 * (-DBENCH_RSS_WITHOUT), linked without it, where the probes are calls
 * of an empty function instead; neither has the driver's code or the
 * bench helpers.  Each, run with `--child`, calls its probes in a short
 * loop (inactive probes: tracing never started), then reads its VmRSS,
 * RssAnon and RssFile from /proc/self/status and prints them.  The
 * driver runs the two in alternation, each run a new process, and
 * reports the medians and the median of the per-round differences, in
 * KiB.
 *
 * VmRSS counts file pages too: the with-library binary's own text (about
 * 50 KiB of it is the library's, mapped whole by the kernel's
 * fault-around once the file is in the page cache), clean and shared
 * with every other process that runs the program.  RssAnon is what the process alone pays; the slots'
 * 1.5 MiB were there before they were left untouched.
 *
 * Output: a table on stdout; JSON to the file EVENTRING_BENCH_OUT names,
 * every figure as bl_json_stat() writes it (median, min, max).  The exit
 * status reports errors only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>

#if defined(BENCH_RSS_WITH)
#include "eventring.h"
#define PROBE_BEGIN() eventring_begin(EVENTRING_PHASE_MINOR)
#define PROBE_END() eventring_end(EVENTRING_PHASE_MINOR)
#elif defined(BENCH_RSS_WITHOUT)
/* The program without the library: the probes' places hold a call that
 * the compiler cannot remove. */
__attribute__((noinline)) static void no_probe(void) { __asm__ volatile(""); }
#define PROBE_BEGIN() no_probe()
#define PROBE_END() no_probe()
#else
#include "benchlib.h"
#endif

/* The figures a child prints, in order (KiB, from /proc/self/status). */
enum { F_RSS, F_ANON, F_FILE, N_F };

#if defined(BENCH_RSS_WITH) || defined(BENCH_RSS_WITHOUT)
static const char *const f_keys[N_F] = {"VmRSS:", "RssAnon:", "RssFile:"};

static int child(void) {
  for (int i = 0; i < 1000; i++) {
    PROBE_BEGIN();
    PROBE_END();
  }
  long v[N_F] = {-1, -1, -1};
  char line[256];
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL) return 2;
  while (fgets(line, sizeof line, f))
    for (int i = 0; i < N_F; i++)
      if (strncmp(line, f_keys[i], strlen(f_keys[i])) == 0)
        v[i] = strtol(line + strlen(f_keys[i]), NULL, 10);
  fclose(f);
  for (int i = 0; i < N_F; i++)
    if (v[i] < 0) return 2;
  printf("%ld %ld %ld\n", v[F_RSS], v[F_ANON], v[F_FILE]);
  return 0;
}
#endif

#if defined(BENCH_RSS_WITH) || defined(BENCH_RSS_WITHOUT)
int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--child") == 0) return child();
  fprintf(stderr, "usage: %s --child (run by bench_rss)\n", argv[0]);
  return 2;
}
#else

/* Runs `prog --child` and reads its figures into v; 0 or -1. */
static int run(const char *prog, double v[N_F]) {
  char out[256];
  char *args[] = {"--child", NULL};
  if (bl_spawn(prog, args, out, sizeof out) != 0) return -1;
  char *p = out, *e;
  for (int i = 0; i < N_F; i++, p = e) {
    v[i] = strtod(p, &e);
    if (e == p) return -1;
  }
  return 0;
}

static void json_fig(FILE *o, const char *key, const struct bl_stat *s,
                     int last) {
  fprintf(o, "  \"%s\": {", key);
  bl_json_stat_digits(o, s, 0);
  fprintf(o, "}%s\n", last ? "" : ",");
}

static int driver(const char *argv0) {
  char self[4096], with[4200], without[4200], cpu[256];
  bl_self(argv0, self, sizeof self);
  const char *slash = strrchr(self, '/');
  int dirlen = slash ? (int)(slash - self + 1) : 0;
  snprintf(with, sizeof with, "%.*sbench_rss_with", dirlen, self);
  snprintf(without, sizeof without, "%.*sbench_rss_without", dirlen, self);
  /* The children must not start tracing from the environment. */
  unsetenv("OCAML_RUNTIME_EVENTS_START");
  /* Without address randomisation (inherited by the children): which
   * file pages the kernel maps around a fault (its fault-around window,
   * aligned in the address space) then stays the same from run to run,
   * instead of adding tens of KiB of noise to both programs' figures. */
  if (personality(0xffffffff) >= 0)
    (void)personality((unsigned long)personality(0xffffffff) |
                      ADDR_NO_RANDOMIZE);
  int runs = bl_runs(), errors = 0;
  if (runs < 5) runs = 5;
  /* with, without and with - without, for each figure */
  static struct bl_stat s[3][N_F];
  memset(s, 0, sizeof s);
  for (int round = 0; round < runs; round++) {
    double w[N_F], wo[N_F];
    /* Alternate which runs first, so that neither always follows the
     * other's exit. */
    int a = round & 1 ? run(without, wo) : run(with, w);
    int b = round & 1 ? run(with, w) : run(without, wo);
    if (a != 0 || b != 0) {
      fprintf(stderr, "bench_rss: round %d failed (are %s and %s built?)\n",
              round + 1, with, without);
      errors++;
      continue;
    }
    for (int i = 0; i < N_F; i++) {
      bl_add(&s[0][i], w[i]);
      bl_add(&s[1][i], wo[i]);
      bl_add(&s[2][i], w[i] - wo[i]);
    }
  }
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < N_F; i++) bl_summarize(&s[k][i]);
  if (s[0][F_RSS].nv == 0) return 1;

  bl_cpu_model(cpu, sizeof cpu);
  printf("resident size of a program that links eventring and never "
         "traces,\nagainst the same program without it; KiB, median of %d "
         "runs (each a new process)\n\n%-10s %10s %10s %10s\n",
         s[0][F_RSS].nv, "", "with", "without", "delta");
  static const char *const rows[N_F] = {"VmRSS", "RssAnon", "RssFile"};
  for (int i = 0; i < N_F; i++)
    printf("%-10s %10.0f %10.0f %10.0f\n", rows[i], s[0][i].median,
           s[1][i].median, s[2][i].median);
  printf("\ndelta: the median of each round's difference (target: VmRSS "
         "<= 64 KiB)\n");

  FILE *o;
  if (bl_json_open("bench_rss", &o) < 0) return 1;
  if (o != NULL) {
    fprintf(o, "{\n  \"unit\": \"KiB\",\n  \"runs\": %d,\n  \"cpu\": ",
            s[0][F_RSS].nv);
    bl_json_str(o, cpu);
    fprintf(o, ",\n");
    json_fig(o, "rss_with_kib", &s[0][F_RSS], 0);
    json_fig(o, "rss_without_kib", &s[1][F_RSS], 0);
    json_fig(o, "rss_delta_kib", &s[2][F_RSS], 0);
    json_fig(o, "rss_anon_with_kib", &s[0][F_ANON], 0);
    json_fig(o, "rss_anon_without_kib", &s[1][F_ANON], 0);
    json_fig(o, "rss_anon_delta_kib", &s[2][F_ANON], 0);
    json_fig(o, "rss_file_delta_kib", &s[2][F_FILE], 1);
    fprintf(o, "}\n");
    if (bl_json_close("bench_rss", o) < 0) errors++;
  }
  return errors ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc != 1) {
    fprintf(stderr, "usage: %s\n", argv[0]);
    return 2;
  }
  return driver(argv[0]);
}
#endif
