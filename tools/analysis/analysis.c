/* analysis.c -- pause tracking and the other pieces that latency.c and
 * stats.c share (analysis.h says what a pause is and how cuts are
 * handled).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

/* Deeper nesting than this is followed by depth alone (no phase can be
 * matched there); OCaml's runtime nests seven deep at most. */
#define STACK_MAX 256

struct frame {
  int phase;
  uint64_t ts;
};

struct pause_domain {
  int depth;       /* frames on the stack */
  uint64_t deeper; /* open begins beyond STACK_MAX */
  int unsure;      /* a cut came before: the true depth is unknown */
  int cut_counted; /* this stretch's cut pause has been counted */
  int top_nested;  /* a phase began inside the outermost open one */
  uint64_t *prov;  /* provisional pauses (start, end pairs) while unsure */
  size_t nprov, capprov;
  /* With merge: the last pause, held until the next one shows whether
   * it follows with no mutator time between. */
  int held;
  uint64_t held_start, held_end;
  struct frame stack[STACK_MAX];
};

int pauses_init(struct pauses *p, const eventring_cursor *names, int ndomains,
                pause_fn on_pause, void *arg) {
  memset(p, 0, sizeof *p);
  p->on_pause = on_pause;
  p->arg = arg;
  p->names = names;
  p->ndomains = ndomains > 0 ? ndomains : 0;
  p->domains =
      calloc(p->ndomains ? (size_t)p->ndomains : 1, sizeof *p->domains);
  return p->domains ? 0 : -1;
}

void pauses_free(struct pauses *p) {
  for (int i = 0; i < p->ndomains; i++) {
    if (p->domains[i]) free(p->domains[i]->prov);
    free(p->domains[i]);
  }
  free(p->domains);
  p->domains = NULL;
}

static struct pause_domain *dom(struct pauses *p, int domain) {
  if (domain < 0 || domain >= p->ndomains) return NULL;
  if (!p->domains[domain]) {
    p->domains[domain] = calloc(1, sizeof(struct pause_domain));
    if (!p->domains[domain]) p->oom = 1;
  }
  return p->domains[domain];
}

/* In the provisional list: the program ran here (pauses_activity). */
#define ACTIVITY UINT64_MAX

static void emit(struct pauses *p, int domain, uint64_t duration) {
  p->count++;
  if (p->on_pause) p->on_pause(p->arg, domain, duration);
}

/* The held pause of `d`, if any, is over: it goes to the callback. */
static void release(struct pauses *p, int domain, struct pause_domain *d) {
  if (!d->held) return;
  d->held = 0;
  emit(p, domain, d->held_end - d->held_start);
}

/* A pause from `start` to `end`, certain.  With merge, one that begins
 * less than PAUSES_MERGE_GAP_NS after the held one ended, with nothing
 * of the program's between (pauses_activity), extends it. */
static void report(struct pauses *p, int domain, struct pause_domain *d,
                   uint64_t start, uint64_t end) {
  if (start == ACTIVITY) {
    release(p, domain, d);
    return;
  }
  if (end < start) end = start;
  if (!p->merge) {
    emit(p, domain, end - start);
    return;
  }
  if (d->held && start >= d->held_end &&
      start - d->held_end < PAUSES_MERGE_GAP_NS) {
    d->held_end = end;
    p->merged++;
    return;
  }
  release(p, domain, d);
  d->held = 1;
  d->held_start = start;
  d->held_end = end;
}

/* The stretch since the last cut is over, or long enough to be sure of:
 * its provisional pauses are real. */
static void confirm(struct pauses *p, int domain, struct pause_domain *d) {
  for (size_t i = 0; i < d->nprov; i++)
    report(p, domain, d, d->prov[2 * i], d->prov[2 * i + 1]);
  d->nprov = 0;
  d->unsure = 0;
}

static void provisional(struct pauses *p, int domain, struct pause_domain *d,
                        uint64_t start, uint64_t end) {
  if (d->nprov == d->capprov) {
    size_t cap = d->capprov ? 2 * d->capprov : 64;
    uint64_t *np = realloc(d->prov, 2 * cap * sizeof *np);
    if (!np) {
      /* Without room to wait and see, take the pause as it looks. */
      p->oom = 1;
      confirm(p, domain, d);
      report(p, domain, d, start, end);
      return;
    }
    d->prov = np;
    d->capprov = cap;
  }
  d->prov[2 * d->nprov] = start;
  d->prov[2 * d->nprov + 1] = end;
  d->nprov++;
  if (d->nprov >= PAUSES_PROVISIONAL_MAX) confirm(p, domain, d);
}

/* Whether `phase` names one of the phases that the OCaml 4.13 bindings
 * write as empty spans to mark an instant (analysis.h). */
static int marker_phase(const struct pauses *p, int phase) {
  static const char *const markers[] = {
      "major_gc_cycle_domains", "major_gc_phase_change", "major_finish_cycle"};
  const char *name = eventring_cursor_phase_name(p->names, phase);
  if (!name) return 0;
  for (size_t i = 0; i < sizeof markers / sizeof markers[0]; i++)
    if (!strcmp(name, markers[i])) return 1;
  return 0;
}

void pauses_begin(struct pauses *p, int domain, uint64_t ts, int phase) {
  struct pause_domain *d = dom(p, domain);
  if (!d) return;
  /* Whether the outermost phase has anything nested in it decides, at
   * its end, whether it may be a marker. */
  d->top_nested = d->depth > 0 || d->deeper > 0;
  if (d->depth < STACK_MAX && d->deeper == 0) {
    d->stack[d->depth].phase = phase;
    d->stack[d->depth].ts = ts;
    d->depth++;
  } else {
    d->deeper++;
  }
}

int pauses_end(struct pauses *p, int domain, uint64_t ts, int phase,
               uint64_t *start) {
  struct pause_domain *d = dom(p, domain);
  if (!d) return 0;
  if (d->deeper) {
    d->deeper--;
    return 0;
  }
  if (d->depth == 0) {
    if (d->unsure) {
      /* The end of a phase that was open at the cut: the pauses since
       * were nested in it. */
      if (!d->cut_counted) p->cut++;
      d->cut_counted = 1;
      d->nprov = 0;
    } else {
      p->unmatched++;
    }
    return 0;
  }
  int j = d->depth - 1;
  while (j >= 0 && d->stack[j].phase != phase) j--;
  if (j < 0) {
    p->unmatched++;
    return 0;
  }
  d->depth = j;
  *start = d->stack[j].ts;
  if (j == 0) {
    if (!d->top_nested && marker_phase(p, phase))
      p->markers++;
    else if (d->unsure)
      provisional(p, domain, d, *start, ts);
    else
      report(p, domain, d, *start, ts);
  }
  return 1;
}

void pauses_cut(struct pauses *p, int domain) {
  struct pause_domain *d = dom(p, domain);
  if (!d) return;
  confirm(p, domain, d);
  release(p, domain, d);
  /* The ends without a begin that may follow are most likely those of
   * the pause in progress: it is counted once. */
  d->cut_counted = d->depth || d->deeper;
  if (d->cut_counted) p->cut++;
  d->depth = 0;
  d->deeper = 0;
  d->unsure = !p->live;
}

void pauses_restart(struct pauses *p, int domain) {
  struct pause_domain *d = dom(p, domain);
  if (!d) return;
  confirm(p, domain, d);
  release(p, domain, d);
  if (d->depth || d->deeper) p->unfinished++;
  d->depth = 0;
  d->deeper = 0;
}

void pauses_activity(struct pauses *p, int domain) {
  if (!p->merge || domain < 0 || domain >= p->ndomains) return;
  struct pause_domain *d = p->domains[domain];
  if (!d) return;
  /* Behind provisional pauses, the activity waits in their list, so
   * that confirm() sees it in order. */
  if (!d->nprov)
    release(p, domain, d);
  else if (d->prov[2 * (d->nprov - 1)] != ACTIVITY)
    provisional(p, domain, d, ACTIVITY, ACTIVITY);
}

void pauses_lifecycle(struct pauses *p, int domain, int kind) {
  if (kind == EVENTRING_LIFECYCLE_RING_PAUSE)
    pauses_cut(p, domain);
  else if (kind == EVENTRING_LIFECYCLE_DOMAIN_SPAWN ||
           kind == EVENTRING_LIFECYCLE_DOMAIN_TERMINATE)
    pauses_restart(p, domain);
  else
    pauses_activity(p, domain);
}

void pauses_finish(struct pauses *p) {
  for (int i = 0; i < p->ndomains; i++) {
    struct pause_domain *d = p->domains[i];
    if (!d) continue;
    confirm(p, i, d);
    release(p, i, d);
    if (d->depth || d->deeper) p->unfinished++;
    d->depth = 0;
    d->deeper = 0;
  }
}

/* ------------------------------------------------------------------ */

static const char options_help[] =
    "Options:\n"
    "  --json         print one JSON object instead of the table\n"
    "  -o FILE, --output FILE\n"
    "                 write the report to FILE ('-': standard output)\n"
    TOOL_HELP_PID_DIR "\n"
    "  -f, --follow   keep reading until the writing process has exited\n"
    TOOL_HELP_WAIT
    TOOL_HELP_DRAIN
    TOOL_HELP_OCAML5X_FILES
    TOOL_HELP_FILTERS_HEAD
    "                 (T: 10s from the first event, or a time of day "
    "05:50:42;\n"
    "                 see eventring(1), FILTERS)\n"
    "  -h, --help     print this help and exit\n";

void analysis_help(const char *name, const char *what) {
  printf("Usage: eventring %s [OPTION]... FILE.events...\n"
         "   or: eventring %s [OPTION]... --pid PID [--dir DIR]\n"
         "   or: eventring %s [OPTION]... --dir DIR\n"
         "   or: eventring %s [OPTION]... -- COMMAND [ARG]...\n",
         name, name, name, name);
  fputs(what, stdout);
  fputs("Several files, a directory or a command's process tree are "
        "reported in\ntotal and per process.\n", stdout);
  fputs("\n", stdout);
  fputs(options_help, stdout);
  printf("\n"
         "The report goes to standard output, or with a COMMAND to standard "
         "error\n"
         "(the command keeps standard output and error), unless -o FILE is "
         "given.\n"
         "Exit status: 0 success, 1 unreadable or malformed input, 2 bad "
         "usage;\n"
         "with a COMMAND, the command's status once the report is "
         "complete.\n"
         "See eventring(1).\n");
}

int analysis_open(int argc, char **argv, const char *help_ref,
                  void (*help)(void), struct tool_source *src,
                  struct analysis_opts *opts) {
  memset(src, 0, sizeof *src);
  opts->json = 0;
  opts->nspan = opts->nphase = 0;
  opts->per_phase = 0;
  enum { OPT_JSON = TOOL_OPT_OWN, OPT_SPAN, OPT_PHASE, OPT_PER_PHASE };
  static const struct option longopts[] = {
      TOOL_SOURCE_OPTIONS,
      TOOL_FILTER_OPTIONS,
      TOOL_OUTPUT_OPTION,
      {"json", no_argument, NULL, OPT_JSON},
      {"span", required_argument, NULL, OPT_SPAN},
      {"phase", required_argument, NULL, OPT_PHASE},
      {"per-phase", no_argument, NULL, OPT_PER_PHASE},
      {NULL, 0, NULL, 0},
  };
  const char *output = NULL;
  int c;
  while ((c = tool_getopt(argc, argv, ":fho:", longopts)) != -1) {
    if (c == OPT_JSON) {
      opts->json = 1;
    } else if (c == 'o') {
      output = optarg;
    } else if (c == OPT_PER_PHASE && opts->spans_allowed) {
      opts->per_phase = 1;
    } else if (c == OPT_PER_PHASE) {
      return tool_usage_error(help_ref, "--per-phase is an option of "
                              "'eventring latency'");
    } else if ((c == OPT_SPAN || c == OPT_PHASE) && opts->spans_allowed) {
      char **v = c == OPT_SPAN ? opts->span : opts->phase;
      int *n = c == OPT_SPAN ? &opts->nspan : &opts->nphase;
      if (*n == ANALYSIS_MAX_NAMES)
        return tool_usage_error(help_ref, "at most %d --span and --phase "
                                "names each (a glob matches several)",
                                ANALYSIS_MAX_NAMES);
      v[(*n)++] = optarg;
    } else if (c == OPT_SPAN || c == OPT_PHASE) {
      return tool_usage_error(help_ref, "%s is an option of 'eventring "
                              "latency' (stats reports every span)",
                              c == OPT_SPAN ? "--span" : "--phase");
    } else {
      int rc = tool_source_other(src, c, argv, help_ref, help);
      if (rc >= 0) return rc;
    }
  }
  int rc = tool_output_open_reading(output, help_ref, argv + optind,
                                    argc - optind);
  if (rc != TOOL_EXIT_OK) return rc;
  src->multi = 1; /* both report per process and in total */
  rc = tool_source_open(src, argc - optind, argv + optind, help_ref);
  return rc != TOOL_EXIT_OK ? rc : -1;
}

char *analysis_duration(char *buf, uint64_t ns) {
  if (ns < 1000) {
    snprintf(buf, 32, "%" PRIu64 " ns", ns);
    return buf;
  }
  static const char *const units[] = {"us", "ms", "s"};
  double v = (double)ns / 1e3;
  int u = 0;
  while (u < 2 && v >= 999.95) {
    v /= 1e3;
    u++;
  }
  /* Four significant digits, as far as the unit allows. */
  const char *fmt = v < 9.9995   ? "%.3f %s"
                    : v < 99.995 ? "%.2f %s"
                    : v < 999.95 ? "%.1f %s"
                                 : "%.0f %s";
  snprintf(buf, 32, fmt, v, units[u]);
  return buf;
}

void analysis_json_string(FILE *out, const char *s) {
  putc_unlocked('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      putc_unlocked('\\', out);
      putc_unlocked(*p, out);
    } else if (*p < 0x20 || *p > 0x7e) {
      fprintf(out, "\\u%04x", *p);
    } else {
      putc_unlocked(*p, out);
    }
  }
  putc_unlocked('"', out);
}

void analysis_json_double(FILE *out, double x) {
  if (!(x == x) || x > 1e308 || x < -1e308) x = 0;
  fprintf(out, "%.17g", x);
}

void analysis_json_buckets(FILE *out, const struct histogram *h) {
  fputc('[', out);
  size_t i = 0;
  uint64_t v, c;
  for (int first = 1; h && hist_bucket_next(h, &i, &v, &c); first = 0)
    fprintf(out, "%s[%" PRIu64 ", %" PRIu64 "]", first ? "" : ", ", v, c);
  fputc(']', out);
}
