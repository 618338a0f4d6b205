/* stats.c -- `eventring stats`: a summary of a ring file.
 *
 *   - Per runtime phase, by name: the number of begin events, and over
 *     the instances whose begin and end were both read (`completed`),
 *     the total, mean and maximum time.  Nested phases count for
 *     themselves: a minor collection inside a major slice adds to both.
 *   - The wall time, from the first to the last timestamp of any domain,
 *     and the time spent in GC: the sum of the pauses (outermost phases
 *     but markers, as `eventring latency` counts them; "markers" says how
 *     many were left out), per domain and in total, with
 *     its share: of the wall time for each domain, and of the wall time
 *     times the number of domains that have events for the total, so
 *     that domains collecting at once never add up past 100 %.
 *   - Allocation bucket totals (the instrumented variant's alloc events),
 *     when there are any.
 *   - Each counter's last value (the one with the latest timestamp, in
 *     any domain), by name, and how many samples were read.
 *   - User events: how many of each name and kind.
 *   - Events read and lost, per domain; lost counts are in the cursor's
 *     unit (events for eventring's files, ring words for OCaml 5's).
 *
 * --json prints the same as one object:
 *
 *   {"wall_ns": N, "first_ts": N, "last_ts": N,
 *    "gc": {"total_ns": N, "share": X, "pauses": N, "cut": N,
 *           "unfinished": N, "unmatched_ends": N, "markers": N,
 *           "domains": [{"domain": D, "pauses": N, "total_ns": N,
 *                        "share": X}, ...]},
 *    "phases": [{"name": S, "count": N, "completed": N, "total_ns": N,
 *                "mean_ns": X, "max_ns": N}, ...],
 *    "alloc": null | {"events": N, "buckets": [N x 20]},
 *    "counters": [{"name": S, "last": N, "samples": N, "domain": D}, ...],
 *    "user_events": [{"name": S, "kind": "unit"|"int"|"span"|"custom",
 *                     "count": N}, ...],
 *    "events": {"read": N, "lost": N, "lost_unit": "events"|"words",
 *               "dropped": N, "malformed": N,
 *               "domains": [{"domain": D, "read": N, "lost": N}, ...]}}
 *
 * first_ts and last_ts are null (and wall_ns 0) when no event was read.
 * Phases, counters and user events are listed in order of first
 * appearance of their id; domains that have no event and no loss are
 * left out.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "events.h"

#define HELP_REF "eventring stats --help"

/* Ids are 13 bits wide in the event header. */
#define N_IDS 8192

enum { U_UNIT, U_INT, U_SPAN, U_CUSTOM, U_KINDS };
static const char *const user_kinds[U_KINDS] = {"unit", "int", "span",
                                                "custom"};

struct phase_stat {
  uint64_t count, completed, total, max;
  int seen;
};

struct counter_stat {
  uint64_t last, last_ts, samples;
  int domain;
  int seen;
};

struct domain_stat {
  uint64_t read, lost, pauses, gc;
};

struct stats {
  struct tool_source *src;
  struct pauses pauses;
  int ndomains;
  struct domain_stat *domains;
  uint64_t first_ts, last_ts;
  int any_ts;
  /* Each table is indexed by id; the *_order arrays list the ids (for
   * user events: id * U_KINDS + kind) in order of first appearance. */
  struct phase_stat phases[N_IDS];
  int phase_order[N_IDS], nphases;
  struct counter_stat counters[N_IDS];
  int counter_order[N_IDS], ncounters;
  uint64_t user[N_IDS * U_KINDS];
  int user_order[N_IDS * U_KINDS], nusers;
  uint64_t alloc_events, alloc[EVENTRING_ALLOC_BUCKETS];
};

static void saw(struct stats *s, int domain, uint64_t ts) {
  if (!s->any_ts || ts < s->first_ts) s->first_ts = ts;
  if (!s->any_ts || ts > s->last_ts) s->last_ts = ts;
  s->any_ts = 1;
  if (domain >= 0 && domain < s->ndomains) s->domains[domain].read++;
}

static void on_pause(void *arg, int domain, uint64_t duration) {
  struct stats *s = arg;
  if (domain >= 0 && domain < s->ndomains) {
    s->domains[domain].pauses++;
    s->domains[domain].gc += duration;
  }
}

static struct phase_stat *phase_stat(struct stats *s, int phase) {
  phase &= N_IDS - 1;
  struct phase_stat *p = &s->phases[phase];
  if (!p->seen) {
    p->seen = 1;
    s->phase_order[s->nphases++] = phase;
  }
  return p;
}

static int on_begin(void *data, int domain, uint64_t ts, int phase) {
  struct stats *s = data;
  saw(s, domain, ts);
  phase_stat(s, phase)->count++;
  pauses_begin(&s->pauses, domain, ts, phase);
  return 1;
}

static int on_end(void *data, int domain, uint64_t ts, int phase) {
  struct stats *s = data;
  saw(s, domain, ts);
  uint64_t start;
  if (pauses_end(&s->pauses, domain, ts, phase, &start)) {
    uint64_t d = ts >= start ? ts - start : 0;
    struct phase_stat *p = phase_stat(s, phase);
    p->completed++;
    p->total += d;
    if (d > p->max) p->max = d;
  }
  return 1;
}

static int on_counter(void *data, int domain, uint64_t ts, int counter,
                      uint64_t value) {
  struct stats *s = data;
  saw(s, domain, ts);
  counter &= N_IDS - 1;
  struct counter_stat *c = &s->counters[counter];
  if (!c->seen) {
    c->seen = 1;
    s->counter_order[s->ncounters++] = counter;
  }
  /* Ties go to the later read, which within a domain is the later
   * event. */
  if (c->samples == 0 || ts >= c->last_ts) {
    c->last = value;
    c->last_ts = ts;
    c->domain = domain;
  }
  c->samples++;
  return 1;
}

static int on_alloc(void *data, int domain, uint64_t ts,
                    const uint64_t *buckets) {
  struct stats *s = data;
  saw(s, domain, ts);
  s->alloc_events++;
  for (int i = 0; i < EVENTRING_ALLOC_BUCKETS; i++) s->alloc[i] += buckets[i];
  return 1;
}

static int on_lifecycle(void *data, int domain, uint64_t ts, int kind,
                        int64_t value, int has_data) {
  (void)value, (void)has_data;
  struct stats *s = data;
  saw(s, domain, ts);
  tool_source_lifecycle(s->src, kind);
  pauses_lifecycle(&s->pauses, domain, kind);
  return 1;
}

static void user(struct stats *s, int domain, uint64_t ts, int id, int k) {
  saw(s, domain, ts);
  int key = (id & (N_IDS - 1)) * U_KINDS + k;
  if (!s->user[key]) s->user_order[s->nusers++] = key;
  s->user[key]++;
}

static int on_user_unit(void *data, int domain, uint64_t ts, int id,
                        const char *name) {
  (void)name;
  user(data, domain, ts, id, U_UNIT);
  return 1;
}

static int on_user_int(void *data, int domain, uint64_t ts, int id,
                       const char *name, int64_t value) {
  (void)name, (void)value;
  user(data, domain, ts, id, U_INT);
  return 1;
}

/* A span counts once, by its begin; its end is read but not counted. */
static int on_user_span(void *data, int domain, uint64_t ts, int id,
                        const char *name, int is_end) {
  (void)name;
  struct stats *s = data;
  if (is_end)
    saw(s, domain, ts);
  else
    user(s, domain, ts, id, U_SPAN);
  return 1;
}

static int on_user_custom(void *data, int domain, uint64_t ts, int id,
                          const char *name, const void *bytes, size_t len) {
  (void)name, (void)bytes, (void)len;
  user(data, domain, ts, id, U_CUSTOM);
  return 1;
}

static int on_lost(void *data, int domain, uint64_t count) {
  struct stats *s = data;
  tool_source_lost(s->src, domain, count);
  if (domain >= 0 && domain < s->ndomains) s->domains[domain].lost += count;
  pauses_cut(&s->pauses, domain);
  return 1;
}

/* ------------------------------------------------------------------ */
/* Reports.                                                             */

/* The phases merged by name, in order of first appearance. */
struct named_phase {
  const char *name;
  char buf[TOOL_NAME_BUF];
  uint64_t count, completed, total, max;
};

static size_t merge_phases(const struct stats *s, struct named_phase *out) {
  size_t n = 0;
  for (int i = 0; i < s->nphases; i++) {
    int id = s->phase_order[i];
    const struct phase_stat *p = &s->phases[id];
    {
      char buf[TOOL_NAME_BUF];
      const char *name = tool_event_name(s->src->cursor, TOOL_NAME_PHASE, id, buf);
      size_t j = 0;
      while (j < n && strcmp(out[j].name, name) != 0) j++;
      if (j == n) {
        memset(&out[n], 0, sizeof out[n]);
        if (name == buf) {
          memcpy(out[n].buf, buf, sizeof buf);
          name = out[n].buf;
        }
        out[n++].name = name;
      }
      out[j].count += p->count;
      out[j].completed += p->completed;
      out[j].total += p->total;
      if (p->max > out[j].max) out[j].max = p->max;
    }
  }
  return n;
}

/* The bucket's block sizes, as the format defines them. */
static void bucket_label(char *buf, size_t n, int i) {
  if (i == 0)
    snprintf(buf, n, "0 words");
  else if (i < 10)
    snprintf(buf, n, "%d %s", i, i == 1 ? "word" : "words");
  else if (i < 19)
    snprintf(buf, n, "%d-%d words", (i - 9) * 10, (i - 9) * 10 + 9);
  else
    snprintf(buf, n, ">=100 words");
}

static double share(uint64_t part, uint64_t whole) {
  return whole ? (double)part / (double)whole : 0;
}

static uint64_t gc_total(const struct stats *s) {
  uint64_t t = 0;
  for (int d = 0; d < s->ndomains; d++) t += s->domains[d].gc;
  return t;
}

static int domain_listed(const struct domain_stat *d) {
  return d->read || d->lost;
}

/* The time the domains that have events could have spent: the wall time
 * once per domain. */
static uint64_t domain_time(const struct stats *s, uint64_t wall) {
  uint64_t n = 0;
  for (int d = 0; d < s->ndomains; d++) n += domain_listed(&s->domains[d]);
  return wall * (n ? n : 1);
}

static void print_text(const struct stats *s, const struct named_phase *ph,
                       size_t nph) {
  char a[32], b[32], c[32], name[256];
  uint64_t wall = s->any_ts ? s->last_ts - s->first_ts : 0;
  uint64_t gc = gc_total(s);
  printf("wall time: %s (first to last event)\n", analysis_duration(a, wall));
  printf("GC time:   %s in %" PRIu64 " pauses (%.2f%% of wall time, over "
         "all domains)\n",
         analysis_duration(a, gc), s->pauses.count,
         100 * share(gc, domain_time(s, wall)));
  for (int d = 0; d < s->ndomains; d++) {
    const struct domain_stat *ds = &s->domains[d];
    if (!domain_listed(ds)) continue;
    printf("  domain %-3d %10s in %" PRIu64 " pauses (%.2f%%)\n", d,
           analysis_duration(a, ds->gc), ds->pauses, 100 * share(ds->gc, wall));
  }
  if (s->pauses.cut || s->pauses.unfinished || s->pauses.unmatched)
    printf("  not included: %" PRIu64 " cut, %" PRIu64 " unfinished, %" PRIu64
           " unmatched ends\n",
           s->pauses.cut, s->pauses.unfinished, s->pauses.unmatched);

  if (nph) {
    printf("\n%-32s %8s %11s %11s %11s\n", "phase", "count", "total", "mean",
           "max");
    for (size_t i = 0; i < nph; i++) {
      const struct named_phase *p = &ph[i];
      uint64_t mean = p->completed ? p->total / p->completed : 0;
      printf("%-32s %8" PRIu64 " %11s %11s %11s\n",
             tool_name_str(name, sizeof name, p->name, "phase_", 0), p->count,
             analysis_duration(a, p->total), analysis_duration(b, mean),
             analysis_duration(c, p->max));
    }
  }

  if (s->alloc_events) {
    printf("\nallocations (blocks by size, %" PRIu64 " alloc events):\n",
           s->alloc_events);
    for (int i = 0; i < EVENTRING_ALLOC_BUCKETS; i++) {
      if (!s->alloc[i]) continue;
      bucket_label(a, sizeof a, i);
      printf("  %-12s %12" PRIu64 "\n", a, s->alloc[i]);
    }
  }

  if (s->ncounters) {
    printf("\n%-32s %20s %8s\n", "counter", "last", "samples");
    for (int i = 0; i < s->ncounters; i++) {
      int id = s->counter_order[i];
      const struct counter_stat *cs = &s->counters[id];
      printf("%-32s %20" PRIu64 " %8" PRIu64 "\n",
             tool_name_str(name, sizeof name,
                           tool_file_name(s->src->cursor, TOOL_NAME_COUNTER, id),
                           "counter_", id),
             cs->last, cs->samples);
    }
  }

  if (s->nusers) {
    printf("\n%-32s %-7s %8s\n", "user event", "kind", "count");
    for (int i = 0; i < s->nusers; i++) {
      int key = s->user_order[i], id = key / U_KINDS;
      printf("%-32s %-7s %8" PRIu64 "\n",
             tool_name_str(name, sizeof name,
                           tool_file_name(s->src->cursor, TOOL_NAME_USER, id),
                           "user_", id),
             user_kinds[key % U_KINDS], s->user[key]);
    }
  }

  uint64_t read = 0, lost = 0;
  for (int d = 0; d < s->ndomains; d++) {
    read += s->domains[d].read;
    lost += s->domains[d].lost;
  }
  printf("\nevents: %" PRIu64 " read, %" PRIu64 " lost (%s)", read, lost,
         tool_lost_unit(s->src->cursor));
  /* Only when there are some, so that the line reads as before. */
  struct tool_unrecorded u;
  if (tool_unrecorded(s->src->cursor, &u) == 0) {
    if (u.dropped)
      printf(", %" PRIu64 " dropped by the writer", u.dropped);
    if (u.malformed) printf(", %" PRIu64 " malformed skipped", u.malformed);
  }
  printf("\n");
  for (int d = 0; d < s->ndomains; d++) {
    const struct domain_stat *ds = &s->domains[d];
    if (!domain_listed(ds)) continue;
    printf("  domain %-3d %12" PRIu64 " read %12" PRIu64 " lost\n", d, ds->read,
           ds->lost);
  }
}

static void print_json(const struct stats *s, const struct named_phase *ph,
                       size_t nph) {
  FILE *o = stdout;
  uint64_t wall = s->any_ts ? s->last_ts - s->first_ts : 0;
  uint64_t gc = gc_total(s);
  fprintf(o, "{\"wall_ns\": %" PRIu64, wall);
  if (s->any_ts)
    fprintf(o, ", \"first_ts\": %" PRIu64 ", \"last_ts\": %" PRIu64,
            s->first_ts, s->last_ts);
  else
    fprintf(o, ", \"first_ts\": null, \"last_ts\": null");

  fprintf(o, ",\n \"gc\": {\"total_ns\": %" PRIu64 ", \"share\": ", gc);
  analysis_json_double(o, share(gc, domain_time(s, wall)));
  fprintf(o,
          ", \"pauses\": %" PRIu64 ", \"cut\": %" PRIu64
          ", \"unfinished\": %" PRIu64 ", \"unmatched_ends\": %" PRIu64
          ", \"markers\": %" PRIu64 ", \"domains\": [",
          s->pauses.count, s->pauses.cut, s->pauses.unfinished,
          s->pauses.unmatched, s->pauses.markers);
  const char *sep = "";
  for (int d = 0; d < s->ndomains; d++) {
    const struct domain_stat *ds = &s->domains[d];
    if (!domain_listed(ds)) continue;
    fprintf(o,
            "%s{\"domain\": %d, \"pauses\": %" PRIu64 ", \"total_ns\": %" PRIu64
            ", \"share\": ",
            sep, d, ds->pauses, ds->gc);
    analysis_json_double(o, share(ds->gc, wall));
    fputc('}', o);
    sep = ", ";
  }
  fprintf(o, "]},\n \"phases\": [");
  for (size_t i = 0; i < nph; i++) {
    const struct named_phase *p = &ph[i];
    fprintf(o, "%s\n  {\"name\": ", i ? "," : "");
    analysis_json_string(o, p->name);
    fprintf(o,
            ", \"count\": %" PRIu64 ", \"completed\": %" PRIu64
            ", \"total_ns\": %" PRIu64 ", \"mean_ns\": ",
            p->count, p->completed, p->total);
    analysis_json_double(
        o, p->completed ? (double)p->total / (double)p->completed : 0);
    fprintf(o, ", \"max_ns\": %" PRIu64 "}", p->max);
  }

  fprintf(o, "],\n \"alloc\": ");
  if (s->alloc_events) {
    fprintf(o, "{\"events\": %" PRIu64 ", \"buckets\": [", s->alloc_events);
    for (int i = 0; i < EVENTRING_ALLOC_BUCKETS; i++)
      fprintf(o, "%s%" PRIu64, i ? ", " : "", s->alloc[i]);
    fprintf(o, "]}");
  } else {
    fprintf(o, "null");
  }

  fprintf(o, ",\n \"counters\": [");
  sep = "";
  for (int i = 0; i < s->ncounters; i++) {
    int id = s->counter_order[i];
    const struct counter_stat *cs = &s->counters[id];
    char buf[TOOL_NAME_BUF];
    const char *name = tool_event_name(s->src->cursor, TOOL_NAME_COUNTER, id, buf);
    fprintf(o, "%s\n  {\"name\": ", sep);
    analysis_json_string(o, name);
    fprintf(
        o, ", \"last\": %" PRIu64 ", \"samples\": %" PRIu64 ", \"domain\": %d}",
        cs->last, cs->samples, cs->domain);
    sep = ",";
  }

  fprintf(o, "],\n \"user_events\": [");
  sep = "";
  for (int i = 0; i < s->nusers; i++) {
    int key = s->user_order[i], id = key / U_KINDS, k = key % U_KINDS;
    char buf[TOOL_NAME_BUF];
    const char *name = tool_event_name(s->src->cursor, TOOL_NAME_USER, id, buf);
    fprintf(o, "%s\n  {\"name\": ", sep);
    analysis_json_string(o, name);
    fprintf(o, ", \"kind\": \"%s\", \"count\": %" PRIu64 "}", user_kinds[k],
            s->user[key]);
    sep = ",";
  }

  uint64_t read = 0, lost = 0;
  for (int d = 0; d < s->ndomains; d++) {
    read += s->domains[d].read;
    lost += s->domains[d].lost;
  }
  struct tool_unrecorded u;
  int have_u = tool_unrecorded(s->src->cursor, &u) == 0;
  fprintf(o,
          "],\n \"events\": {\"read\": %" PRIu64 ", \"lost\": %" PRIu64
          ", \"lost_unit\": \"%s\", ",
          read, lost, tool_lost_unit(s->src->cursor));
  if (have_u)
    fprintf(o, "\"dropped\": %" PRIu64 ", \"malformed\": %" PRIu64 ", ",
            u.dropped, u.malformed);
  else
    fprintf(o, "\"dropped\": null, \"malformed\": null, ");
  fprintf(o, "\"domains\": [");
  sep = "";
  for (int d = 0; d < s->ndomains; d++) {
    const struct domain_stat *ds = &s->domains[d];
    if (!domain_listed(ds)) continue;
    fprintf(o,
            "%s{\"domain\": %d, \"read\": %" PRIu64 ", \"lost\": %" PRIu64 "}",
            sep, d, ds->read, ds->lost);
    sep = ", ";
  }
  fprintf(o, "]}}\n");
}

static void help(void) {
  analysis_help(
      "stats",
      "Summarise a ring file: per runtime phase its count, total, mean and\n"
      "maximum time; the wall time and the share spent in GC pauses; "
      "allocation\n"
      "totals; counters' last values; user event counts; events read and "
      "lost.\n");
}

int tool_stats(int argc, char **argv) {
  struct tool_source src;
  int json;
  int rc = analysis_open(argc, argv, HELP_REF, help, &src, &json);
  if (rc >= 0) return rc;

  static const struct tool_handlers handlers = {
      on_begin,     on_end,      on_counter,   on_alloc,       on_lifecycle,
      on_user_unit, on_user_int, on_user_span, on_user_custom, on_lost,
      NULL /* thread-switch markers: not shown */};
  eventring_callbacks *cb = tool_callbacks_new(&handlers);
  struct stats *s = calloc(1, sizeof *s);
  struct named_phase *ph = NULL;
  if (s) {
    s->src = &src;
    s->ndomains = eventring_cursor_max_domains(src.cursor);
    s->domains = calloc((size_t)s->ndomains + 1, sizeof *s->domains);
  }
  if (!cb || !s || !s->domains ||
      pauses_init(&s->pauses, s->src->cursor, s->ndomains, on_pause, s) < 0) {
    tool_error("out of memory");
    rc = TOOL_EXIT_INPUT;
    goto out;
  }
  rc = tool_source_read(&src, cb, s);
  if (rc == TOOL_EXIT_OK) {
    pauses_finish(&s->pauses);
    ph = calloc((size_t)s->nphases + 1, sizeof *ph);
    if (!ph) {
      tool_error("out of memory");
      rc = TOOL_EXIT_INPUT;
      goto out;
    }
    size_t nph = merge_phases(s, ph);
    if (json)
      print_json(s, ph, nph);
    else
      print_text(s, ph, nph);
    if (!json) tool_source_lost_summary(&src, stderr);
  }
out:
  free(ph);
  if (s) {
    pauses_free(&s->pauses);
    free(s->domains);
  }
  free(s);
  eventring_callbacks_free(cb);
  tool_source_close(&src);
  int out = tool_output_finish();
  return rc != TOOL_EXIT_OK ? rc : out;
}
