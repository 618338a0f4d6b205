/* bench_rss.c -- what linking eventring costs a process that never traces.
 *
 * A program linked with the library but never started (no
 * OCAML_RUNTIME_EVENTS_START, no eventring_start()) should be as big in
 * memory as the same program without it: issue 14 allows 64 KiB.
 *
 * Method.  This source is built four times (Makefile.in): the driver,
 * bench/bench_rss, and the three programs it compares, which are the
 * same small program: bench/bench_rss_with (-DBENCH_RSS_WITH), linked as
 * users link, `cc prog.c $(pkg-config --cflags --libs eventring)`
 * against a copy installed in bench/inst, that is with the shared
 * library; bench/bench_rss_static, the same source linked with the
 * static library; and bench/bench_rss_without (-DBENCH_RSS_WITHOUT),
 * linked without it, where the probes are calls of an empty function
 * instead; none has the driver's code or the bench helpers.  Each, run
 * with `--child`, calls its probes in a short loop (inactive probes:
 * tracing never started), then reads its VmRSS, RssAnon and RssFile from
 * /proc/self/status and prints them.  The driver runs them in turn, each
 * run a new process, and reports the medians and the median of the
 * per-round differences, in KiB.  The target (64 KiB) is the shared
 * library's.
 *
 * VmRSS counts file pages too: the library's text, which the kernel maps
 * 64 KiB at a time around a fault (its fault-around window) once the
 * file is in the page cache, clean and shared with every other process
 * that runs the program.  RssAnon is what the process alone pays; the
 * slots' 1.5 MiB were there before they were left untouched.  Where each
 * mapping lands decides how much the fault-around windows cover, of the
 * library and of libc alike, so the rounds run without address
 * randomisation (same layout every run); a second set of rounds with it
 * gives the median over random layouts, the figure a user's process has
 * on average.
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

enum { P_WITH, P_STATIC, P_WITHOUT, N_P };
static const char *const p_names[N_P] = {"bench_rss_with", "bench_rss_static",
                                         "bench_rss_without"};

/* One set of rounds; s[p][f] gets program p's figures, d[0] and d[1] the
 * differences with - without and static - without.  0 or the number of
 * failed rounds. */
static int rounds(char prog[N_P][4200], int runs, struct bl_stat s[N_P][N_F],
                  struct bl_stat d[2][N_F]) {
  int errors = 0;
  for (int round = 0; round < runs; round++) {
    double v[N_P][N_F];
    int bad = 0;
    /* Rotate which runs first, so that none always follows another's
     * exit. */
    for (int k = 0; k < N_P; k++) {
      int p = (round + k) % N_P;
      if (run(prog[p], v[p]) != 0) bad = 1;
    }
    if (bad) {
      fprintf(stderr, "bench_rss: round %d failed (are %s, %s and %s "
                      "built?)\n", round + 1, prog[0], prog[1], prog[2]);
      errors++;
      continue;
    }
    for (int i = 0; i < N_F; i++) {
      for (int p = 0; p < N_P; p++) bl_add(&s[p][i], v[p][i]);
      bl_add(&d[0][i], v[P_WITH][i] - v[P_WITHOUT][i]);
      bl_add(&d[1][i], v[P_STATIC][i] - v[P_WITHOUT][i]);
    }
  }
  for (int i = 0; i < N_F; i++) {
    for (int p = 0; p < N_P; p++) bl_summarize(&s[p][i]);
    for (int k = 0; k < 2; k++) bl_summarize(&d[k][i]);
  }
  return errors;
}

static int driver(const char *argv0) {
  char self[4096], prog[N_P][4200], cpu[256];
  bl_self(argv0, self, sizeof self);
  const char *slash = strrchr(self, '/');
  int dirlen = slash ? (int)(slash - self + 1) : 0;
  for (int p = 0; p < N_P; p++)
    snprintf(prog[p], sizeof prog[p], "%.*s%s", dirlen, self, p_names[p]);
  /* The children must not start tracing from the environment. */
  unsetenv("OCAML_RUNTIME_EVENTS_START");
  int runs = bl_runs(), errors = 0;
  if (runs < 5) runs = 5;
  /* Random layouts vary by tens of KiB from run to run: as many rounds
   * as a figure holds. */
  int aslr_runs = BL_RUNS_MAX;
  static struct bl_stat s[N_P][N_F], d[2][N_F], sr[N_P][N_F], dr[2][N_F];
  memset(s, 0, sizeof s);
  memset(d, 0, sizeof d);
  errors += rounds(prog, aslr_runs, sr, dr);
  /* Without address randomisation (inherited by the children): which
   * file pages the kernel maps around a fault (its fault-around window,
   * aligned in the address space) then stays the same from run to run,
   * instead of adding tens of KiB of noise to every figure. */
  if (personality(0xffffffff) >= 0)
    (void)personality((unsigned long)personality(0xffffffff) |
                      ADDR_NO_RANDOMIZE);
  errors += rounds(prog, runs, s, d);
  if (s[P_WITH][F_RSS].nv == 0) return 1;

  bl_cpu_model(cpu, sizeof cpu);
  printf("resident size of a program that links eventring and never "
         "traces,\nagainst the same program without it; KiB, median of %d "
         "runs (each a new process)\ncpu: %s\n\n%-10s %10s %10s %10s %10s "
         "%10s\n",
         s[P_WITH][F_RSS].nv, cpu, "", "shared", "static", "without",
         "delta", "delta");
  printf("%-10s %10s %10s %10s %10s %10s\n", "", "(dynamic)", "", "",
         "shared", "static");
  static const char *const rows[N_F] = {"VmRSS", "RssAnon", "RssFile"};
  for (int i = 0; i < N_F; i++)
    printf("%-10s %10.0f %10.0f %10.0f %10.0f %10.0f\n", rows[i],
           s[P_WITH][i].median, s[P_STATIC][i].median, s[P_WITHOUT][i].median,
           d[0][i].median, d[1][i].median);
  printf("\nshared: linked as users link (pkg-config, dynamic); delta: the "
         "median of each\nround's difference (target: shared VmRSS <= 64 "
         "KiB); without address\nrandomisation.  With it, over %d random "
         "layouts: VmRSS delta %.0f KiB shared,\n%.0f KiB static (RssAnon "
         "%.0f, %.0f)\n",
         dr[0][F_RSS].nv, dr[0][F_RSS].median, dr[1][F_RSS].median,
         dr[0][F_ANON].median, dr[1][F_ANON].median);

  FILE *o;
  if (bl_json_open("bench_rss", &o) < 0) return 1;
  if (o != NULL) {
    fprintf(o, "{\n  \"unit\": \"KiB\",\n  \"runs\": %d,\n  \"link\": "
               "\"dynamic, pkg-config\",\n  \"cpu\": ",
            s[P_WITH][F_RSS].nv);
    bl_json_str(o, cpu);
    fprintf(o, ",\n");
    json_fig(o, "rss_with_kib", &s[P_WITH][F_RSS], 0);
    json_fig(o, "rss_without_kib", &s[P_WITHOUT][F_RSS], 0);
    json_fig(o, "rss_delta_kib", &d[0][F_RSS], 0);
    json_fig(o, "rss_anon_with_kib", &s[P_WITH][F_ANON], 0);
    json_fig(o, "rss_anon_without_kib", &s[P_WITHOUT][F_ANON], 0);
    json_fig(o, "rss_anon_delta_kib", &d[0][F_ANON], 0);
    json_fig(o, "rss_file_delta_kib", &d[0][F_FILE], 0);
    json_fig(o, "rss_static_with_kib", &s[P_STATIC][F_RSS], 0);
    json_fig(o, "rss_static_delta_kib", &d[1][F_RSS], 0);
    json_fig(o, "rss_static_anon_delta_kib", &d[1][F_ANON], 0);
    json_fig(o, "rss_aslr_delta_kib", &dr[0][F_RSS], 0);
    json_fig(o, "rss_aslr_static_delta_kib", &dr[1][F_RSS], 1);
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
