/* test_metrics -- `eventring metrics`, the Prometheus exporter, run for
 * real (EVENTRING_TEST_TOOL) on traced helper programs (progs/mon_writer,
 * whose events have known shapes and values), scraped with a small HTTP
 * client written here on plain sockets, then by Debian's `prometheus`
 * server, whose HTTP API is asked for the series, and checked by
 * `promtool check metrics` (Prometheus's own linter).
 *
 * Every process started here dies with the test (PR_SET_PDEATHSIG), and
 * every helper exits when its standard input closes, so a failing check
 * (Check ends the test process at once) leaves nothing running.  Every
 * wait is bounded.  Timings are never asserted: durations are checked
 * only against the lower bounds that mon_writer's busy waits guarantee.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "craft_small.h"
#include "harness.h"
#include "lat_craft.h"
#include "testlib.h"

#define WRITER_ROUNDS 20
#define WRITER_FLOOD 10000

/* Reads one line from the process's stdout within `timeout` seconds. */
static int read_line(struct er_pipe_proc *p, char *buf, size_t n,
                     double timeout) {
  return er_read_line(p->out, buf, n, timeout) == 0 ? 0 : -1;
}

static const char *progs_dir(void) { return er_env_dir("EVENTRING_TEST_PROGS"); }
static const char *tool_path(void) { return er_env_dir("EVENTRING_TEST_TOOL"); }

/* Starts mon_writer traced in `dir`, waits for "ready PID". */
static struct er_pipe_proc start_writer_env(const char *dir,
                                            const char *extra,
                                            char *const *more_env);
static struct er_pipe_proc start_writer(const char *dir, const char *extra) {
  return start_writer_env(dir, extra, NULL);
}

/* start_writer() with the variables `more_env` (NULL-terminated) too. */
static struct er_pipe_proc start_writer_env(const char *dir,
                                            const char *extra,
                                            char *const *more_env) {
  static char dirvar[128], path[PATH_MAX];
  snprintf(dirvar, sizeof dirvar, "OCAML_RUNTIME_EVENTS_DIR=%s", dir);
  snprintf(path, sizeof path, "%s/mon_writer", progs_dir());
  char rounds[16], flood[16];
  snprintf(rounds, sizeof rounds, "%d", WRITER_ROUNDS);
  snprintf(flood, sizeof flood, "%d", WRITER_FLOOD);
  char *argv[] = {path, rounds, flood, (char *)extra, NULL};
  /* A small ring (4096 words a domain): the flood wraps its own ring,
   * while the known rounds fit in domain 0's. */
  char *env[8] = {"OCAML_RUNTIME_EVENTS_START=1", dirvar,
                  "OCAMLRUNPARAM=e=12", NULL};
  for (int i = 0, n = 3; more_env && more_env[i] && n < 7; i++)
    env[n++] = more_env[i];
  struct er_pipe_proc p = er_pipe_start(argv, env, NULL);
  char line[64];
  ck_assert_msg(read_line(&p, line, sizeof line, 10) == 0 &&
                    !strncmp(line, "ready ", 6),
                "mon_writer did not get ready: '%s'", line);
  ck_assert_int_eq(atol(line + 6), p.pid);
  return p;
}

/* Starts the exporter with `args` (after "metrics --listen 127.0.0.1:0")
 * and returns its port, read from the line it prints. */
static struct er_pipe_proc start_exporter(char *const args[], const char *log,
                                          int *port, int stdin_pipe) {
  char *argv[32];
  int n = 0;
  argv[n++] = (char *)tool_path();
  argv[n++] = "metrics";
  argv[n++] = "--listen";
  argv[n++] = "127.0.0.1:0";
  for (int i = 0; args[i] && n < 31; i++) argv[n++] = args[i];
  argv[n] = NULL;
  struct er_pipe_proc p = er_pipe_start(argv, NULL, log);
  if (!stdin_pipe) {
    /* Nothing to read; the pipe stays open so that a spawned command
     * sees no EOF. */
  }
  *port = 0;
  double end = er_now() + ER_RUN_TIMEOUT;
  while (er_now() < end && !*port) {
    FILE *f = fopen(log, "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
      /* Not the line of --remote-write's URL, printed before. */
      static const char serving[] = "serving metrics on http://127.0.0.1:";
      const char *s = strstr(line, serving);
      if (s) *port = atoi(s + strlen(serving));
    }
    if (f) fclose(f);
    int st;
    if (!*port && waitpid(p.pid, &st, WNOHANG) == p.pid) {
      p.pid = 0;
      break;
    }
    if (!*port) er_sleep_ms(20);
  }
  ck_assert_msg(*port > 0, "the exporter did not start listening (see %s)",
                log);
  return p;
}

/* GET http://127.0.0.1:port/path with HTTP/1.0; returns the status and
 * sets *body (malloc'd) and *ctype (the Content-Type value, static). */
static int soft_connect;
static const char *accept_header = "text/plain";

static int http_get(int port, const char *path, char **body, char *ctype,
                    size_t ctype_n) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(fd, 0);
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    /* Prometheus may not listen yet: its queries try again. */
    ck_assert_msg(soft_connect, "connect to port %d: %s", port,
                  strerror(errno));
    close(fd);
    *body = strdup("");
    return -1;
  }
  char req[512];
  int n = snprintf(req, sizeof req,
                   "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n"
                   "Accept: %s\r\n\r\n",
                   path, port, accept_header);
  ck_assert_int_eq(write(fd, req, (size_t)n), n);
  size_t len = 0, cap = 1 << 16;
  char *buf = malloc(cap);
  ck_assert_ptr_nonnull(buf);
  for (;;) {
    if (len + 1 >= cap) {
      cap *= 2;
      buf = realloc(buf, cap);
      ck_assert_ptr_nonnull(buf);
    }
    ssize_t r = read(fd, buf + len, cap - len - 1);
    if (r <= 0) break;
    len += (size_t)r;
  }
  close(fd);
  buf[len] = '\0';
  int status = 0;
  ck_assert_msg(sscanf(buf, "HTTP/1.%*d %d", &status) == 1,
                "not an HTTP answer: %.80s", buf);
  char *sep = strstr(buf, "\r\n\r\n");
  ck_assert_ptr_nonnull(sep);
  *sep = '\0';
  if (ctype) {
    ctype[0] = '\0';
    char *h = strcasestr(buf, "\r\nContent-Type:");
    if (h) {
      h += strlen("\r\nContent-Type:");
      while (*h == ' ') h++;
      snprintf(ctype, ctype_n, "%.*s", (int)strcspn(h, "\r\n"), h);
    }
  }
  *body = strdup(sep + 4);
  ck_assert_ptr_nonnull(*body);
  free(buf);
  return status;
}

static char *scrape_raw(int port) {
  char *body, ctype[128];
  int status = http_get(port, "/metrics", &body, ctype, sizeof ctype);
  ck_assert_int_eq(status, 200);
  ck_assert_msg(strstr(ctype, "text/plain") && strstr(ctype, "version=0.0.4"),
                "Content-Type: %s", ctype);
  return body;
}

/* This machine's name, as the exporter labels every series with it. */
static const char *host_name(void) {
  static char h[256];
  if (!h[0]) {
    ck_assert_int_eq(gethostname(h, sizeof h), 0);
    h[sizeof h - 1] = '\0';
  }
  return h;
}

/* The labels given with --label, as they follow host in every series
 * (",env=\"test\""). */
static const char *common_labels = "";

/* A scrape with the labels host="<this machine>" and common_labels taken
 * out of every series, so that the checks name only the labels of their
 * own.  Every sample line must have these labels first. */
static char *scrape(int port) {
  char *body = scrape_raw(port);
  char lab[300];
  int ln = snprintf(lab, sizeof lab, "{host=\"%s\"%s", host_name(),
                    common_labels);
  char *out = malloc(strlen(body) + 1), *o = out;
  ck_assert_ptr_nonnull(out);
  for (const char *l = body; *l;) {
    const char *nl = strchr(l, '\n');
    size_t len = nl ? (size_t)(nl - l + 1) : strlen(l);
    const char *brace = l[0] != '#' ? memchr(l, '{', len) : NULL;
    ck_assert_msg(l[0] == '#' || (brace && !strncmp(brace, lab, (size_t)ln)),
                  "a series without the host label first: %.*s", (int)len, l);
    if (brace) {
      size_t pre = (size_t)(brace - l);
      const char *rest = brace + ln; /* ",..." or "}" */
      memcpy(o, l, pre), o += pre;
      if (*rest == ',') *o++ = '{', rest++;
      else rest++; /* "}": no label left */
      size_t tail = len - (size_t)(rest - l);
      memcpy(o, rest, tail), o += tail;
    } else {
      memcpy(o, l, len), o += len;
    }
    l += len;
  }
  *o = '\0';
  free(body);
  return out;
}

/* The value of the sample whose name and labels are exactly `series`
 * (e.g. `x{a="1"}`); returns 1 and sets *v when present. */
static int sample(const char *body, const char *series, double *v) {
  size_t n = strlen(series);
  for (const char *l = body; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (!strncmp(l, series, n) && l[n] == ' ') {
      *v = strtod(l + n + 1, NULL);
      return 1;
    }
  }
  return 0;
}

static double need(const char *body, const char *series) {
  double v = 0;
  /* Check's messages hold about 4 kB: show the series' family only. */
  if (!sample(body, series, &v)) {
    size_t fl = strcspn(series, "{");
    char fam[256];
    snprintf(fam, sizeof fam, "%.*s", (int)(fl < 255 ? fl : 255), series);
    const char *l = strstr(body, fam);
    ck_abort_msg("no sample %s; the body (%zu bytes) has %s%.1500s", series,
                 strlen(body), l ? "" : "no such family; it starts ",
                 l ? l : body);
  }
  return v;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Checks the exposition as a whole: every sample belongs to the family of
 * the latest TYPE line, each family's HELP and TYPE come once, no series
 * twice, and every histogram's buckets are cumulative, in increasing le,
 * end with +Inf, and +Inf equals _count. */
static void check_format(const char *body) {
  char *copy = strdup(body);
  ck_assert_ptr_nonnull(copy);
  char *types[512];
  int ntypes = 0;
  char *series[8192];
  int nseries = 0;
  char family[256] = "", ftype[32] = "";
  char bkey[512] = "";
  double last_le = -1, last_cum = -1, inf_val = -1;
  char *save;
  for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    if (!strncmp(l, "# HELP ", 7)) continue;
    if (!strncmp(l, "# TYPE ", 7)) {
      ck_assert_msg(sscanf(l, "# TYPE %255s %31s", family, ftype) == 2, "%s", l);
      for (int i = 0; i < ntypes; i++)
        ck_assert_msg(strcmp(types[i], family) != 0, "TYPE twice: %s", family);
      ck_assert_int_lt(ntypes, 512);
      types[ntypes++] = strdup(family);
      ck_assert_msg(!strcmp(ftype, "counter") || !strcmp(ftype, "gauge") ||
                        !strcmp(ftype, "histogram"),
                    "type %s", ftype);
      continue;
    }
    ck_assert_msg(l[0] != '#', "stray comment %s", l);
    /* name[{labels}] value */
    size_t nl = strspn(l, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          "0123456789_:");
    ck_assert_msg(nl > 0 && !(l[0] >= '0' && l[0] <= '9'), "bad name: %s", l);
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)nl, l);
    char *sp = strrchr(l, ' ');
    ck_assert_ptr_nonnull(sp);
    char *end;
    double v = strtod(sp + 1, &end);
    ck_assert_msg(*end == '\0', "bad value: %s", l);
    ck_assert_msg(family[0], "sample before any TYPE: %s", l);
    size_t fl = strlen(family);
    int is_hist = !strcmp(ftype, "histogram");
    int ok = !strcmp(name, family) ||
             (is_hist && !strncmp(name, family, fl) &&
              (!strcmp(name + fl, "_bucket") || !strcmp(name + fl, "_sum") ||
               !strcmp(name + fl, "_count")));
    ck_assert_msg(ok, "sample %s outside its family %s", name, family);
    *sp = '\0';
    ck_assert_int_lt(nseries, 8192);
    series[nseries++] = strdup(l);
    if (is_hist && !strcmp(name + fl, "_bucket")) {
      char *le = strstr(l, ",le=\"");
      ck_assert_ptr_nonnull(le);
      char key[512];
      snprintf(key, sizeof key, "%.*s", (int)(le - l), l);
      double lev = !strncmp(le + 5, "+Inf", 4) ? 1e300 : strtod(le + 5, NULL);
      if (strcmp(key, bkey) != 0) {
        ck_assert_msg(bkey[0] == '\0' || last_le == 1e300,
                      "buckets of %s do not end with +Inf", bkey);
        snprintf(bkey, sizeof bkey, "%s", key);
        last_le = -1, last_cum = -1;
      }
      ck_assert_msg(lev > last_le, "le not increasing: %s", l);
      ck_assert_msg(v >= last_cum, "buckets not cumulative: %s", l);
      last_le = lev, last_cum = v;
      if (lev == 1e300) inf_val = v;
    } else if (is_hist && !strcmp(name + fl, "_count")) {
      /* X_count{labels} follows X_bucket{labels,le="+Inf"}. */
      char expect[512];
      const char *lab = strchr(l, '{');
      snprintf(expect, sizeof expect, "%s_bucket%.*s", family,
               lab ? (int)(strlen(lab) - 1) : 0, lab ? lab : "");
      ck_assert_msg(!strcmp(expect, bkey) && last_le == 1e300,
                    "_count without its buckets: %s", l);
      ck_assert_msg(v == inf_val, "%s: _count %g != +Inf bucket %g", l, v,
                    inf_val);
    }
  }
  /* No series twice: sorted, and compared with plain ifs, since every
   * check assertion that passes costs a message to the parent (which
   * thousands of series squared made slower than the test's timeout). */
  qsort(series, (size_t)nseries, sizeof *series, cmp_str);
  for (int i = 1; i < nseries; i++)
    if (!strcmp(series[i - 1], series[i]))
      ck_abort_msg("series twice: %s", series[i]);
  for (int i = 0; i < ntypes; i++) free(types[i]);
  for (int i = 0; i < nseries; i++) free(series[i]);
  free(copy);
}

/* Scrapes until `series` is present with the value `want` (the reader
 * runs in the background), up to ER_RUN_TIMEOUT; returns the last body. */
static char *scrape_until(int port, const char *series, double want) {
  double end = er_now() + ER_RUN_TIMEOUT;
  for (;;) {
    char *body = scrape(port);
    double v;
    if ((sample(body, series, &v) && v == want) || er_now() > end) return body;
    free(body);
    er_sleep_ms(50);
  }
}

/* The sum of the EVICTED counts of every ring of a quiescent file: what
 * the exporter must report as lost. */
static uint64_t evicted_in(const char *path) {
  struct rf_file f;
  er_open_ring(path, &f);
  uint64_t sum = 0;
  for (int d = 0; d < (int)f.max_domains; d++) sum += f.rings[d].evicted;
  rf_close(&f);
  return sum;
}

/* Scrapes until the writer `pid`'s rounds have all been read: the end of
 * the last round's request span comes after every event check_values()
 * looks at (all in domain 0, read in order), whereas a scrape may come
 * between two batches of the exporter's reading, so an earlier event of
 * the last round (its queue depth, say) does not mean the round is in. */
static char *scrape_rounds(int port, long pid) {
  char s[256];
  snprintf(s, sizeof s,
           "eventring_user_mon_request_seconds_count{pid=\"%ld\","
           "program=\"mon_writer\",event=\"mon.request\"}", pid);
  return scrape_until(port, s, WRITER_ROUNDS);
}

static void check_values(const char *body, pid_t pid, const char *program) {
  char s[512], lab[160];
  snprintf(lab, sizeof lab, "pid=\"%ld\",program=\"%s\"", (long)pid, program);
  check_format(body);
  ck_assert_ptr_nonnull(strstr(body, "# HELP eventring_gc_pause_seconds "));
  ck_assert_ptr_nonnull(strstr(body, "# TYPE eventring_gc_pause_seconds histogram\n"));
  ck_assert_ptr_nonnull(strstr(body, "# TYPE eventring_events_read_total counter\n"));
  ck_assert_ptr_nonnull(strstr(body, "# TYPE eventring_lost_events_total counter\n"));
  ck_assert_ptr_nonnull(strstr(body, "# TYPE eventring_runtime_minor_promoted gauge\n"));
  ck_assert_ptr_nonnull(strstr(body, "# TYPE eventring_user_mon_queue_depth gauge\n"));
  ck_assert_ptr_nonnull(strstr(body, "# TYPE eventring_user_mon_request_seconds histogram\n"));
  ck_assert_ptr_nonnull(strstr(body, "# TYPE eventring_user_mon_tick_total counter\n"));

  /* Counters' latest values, per domain (the rounds run in domain 0). */
  snprintf(s, sizeof s, "eventring_runtime_minor_promoted{%s,domain=\"0\"}", lab);
  ck_assert_double_eq(need(body, s), 10.0 * WRITER_ROUNDS);
  snprintf(s, sizeof s, "eventring_runtime_minor_allocated{%s,domain=\"0\"}", lab);
  ck_assert_double_eq(need(body, s), 4242);
  /* User ints, and the name that needs sanitising and escaping. */
  snprintf(s, sizeof s,
           "eventring_user_mon_queue_depth{%s,event=\"mon.queue_depth\","
           "domain=\"0\"}", lab);
  ck_assert_double_eq(need(body, s), WRITER_ROUNDS);
  snprintf(s, sizeof s,
           "eventring_user_mon_weird__q____back_line__{%s,event=\"mon weird "
           "\\\"q\\\" \\\\ back\\nline \xef\xbf\xbd\",domain=\"0\"}", lab);
  ck_assert_double_eq(need(body, s), -WRITER_ROUNDS);

  /* GC pauses: one minor (>= 300 us) a round and a major slice (>= 2 ms)
   * every 5th; nothing at or under 250 us. */
  int pauses = WRITER_ROUNDS + WRITER_ROUNDS / 5;
  snprintf(s, sizeof s, "eventring_gc_pause_seconds_count{%s}", lab);
  ck_assert_double_eq(need(body, s), pauses);
  snprintf(s, sizeof s, "eventring_gc_pause_seconds_bucket{%s,le=\"0.00025\"}", lab);
  ck_assert_double_eq(need(body, s), 0);
  snprintf(s, sizeof s, "eventring_gc_pause_seconds_bucket{%s,le=\"0.001\"}", lab);
  ck_assert_double_le(need(body, s), WRITER_ROUNDS);
  snprintf(s, sizeof s, "eventring_gc_pause_seconds_sum{%s}", lab);
  ck_assert_double_ge(need(body, s),
                      WRITER_ROUNDS * 300e-6 + WRITER_ROUNDS / 5 * 2e-3);
  /* Per phase: the nested one too. */
  snprintf(s, sizeof s,
           "eventring_gc_phase_seconds_count{%s,phase=\"minor_local_roots\"}", lab);
  ck_assert_double_eq(need(body, s), WRITER_ROUNDS);
  snprintf(s, sizeof s,
           "eventring_gc_phase_seconds_bucket{%s,phase=\"minor_local_roots\","
           "le=\"0.0001\"}", lab);
  ck_assert_double_eq(need(body, s), 0);
  snprintf(s, sizeof s,
           "eventring_gc_phase_seconds_count{%s,phase=\"major_slice\"}", lab);
  ck_assert_double_eq(need(body, s), WRITER_ROUNDS / 5);
  /* User spans. */
  snprintf(s, sizeof s,
           "eventring_user_mon_request_seconds_count{%s,event=\"mon.request\"}",
           lab);
  ck_assert_double_eq(need(body, s), WRITER_ROUNDS);
  snprintf(s, sizeof s,
           "eventring_user_mon_request_seconds_bucket{%s,event=\"mon.request\","
           "le=\"5e-05\"}", lab);
  ck_assert_double_eq(need(body, s), 0);
  snprintf(s, sizeof s, "eventring_ring_paused{%s}", lab);
  ck_assert_double_eq(need(body, s), 0);
}

/* Ends writer `w`, whose exit ends exporter `e`: both successfully. */
static void finish_both(struct er_pipe_proc *w, struct er_pipe_proc *e) {
  int ws = er_pipe_finish(w, 10);
  ck_assert_msg(ws != -1 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0,
                "mon_writer status %d", ws);
  int es = er_pipe_finish(e, 10);
  ck_assert_msg(es != -1 && WIFEXITED(es) && WEXITSTATUS(es) == 0,
                "exporter status %d", es);
}

/* --pid: exact values and the exposition's rules. */
START_TEST(test_pid_values) {
  if (!progs_dir() || !tool_path()) ER_SKIP("EVENTRING_TEST_PROGS/TOOL unset");
  const char *dir = er_tmpdir();
  char d[64], log[128], ring[PATH_MAX];
  snprintf(d, sizeof d, "%s", dir);
  snprintf(log, sizeof log, "%s/exporter.log", d);
  struct er_pipe_proc w = start_writer(d, NULL);
  er_ring_path_for(ring, sizeof ring, d, w.pid);
  uint64_t lost = evicted_in(ring);
  ck_assert_uint_gt(lost, 0);

  char pid[16];
  snprintf(pid, sizeof pid, "%ld", (long)w.pid);
  char *args[] = {"--pid", pid, "--dir", d, NULL};
  int port;
  struct er_pipe_proc e = start_exporter(args, log, &port, 0);

  char s[256];
  char *body = scrape_rounds(port, atol(pid));
  check_values(body, w.pid, "mon_writer");
  snprintf(s, sizeof s,
           "eventring_lost_events_total{pid=\"%s\",program=\"mon_writer\"}", pid);
  ck_assert_double_eq(need(body, s), (double)lost);
  snprintf(s, sizeof s, "eventring_user_mon_tick_total{pid=\"%s\","
           "program=\"mon_writer\",event=\"mon.tick\"}", pid);
  double ticks = need(body, s);
  snprintf(s, sizeof s,
           "eventring_events_read_total{pid=\"%s\",program=\"mon_writer\"}", pid);
  ck_assert_double_gt(need(body, s), ticks);
  ck_assert_double_eq(need(body, "eventring_rings"), 1);
  free(body);

  /* Other paths and methods. */
  char *b2;
  ck_assert_int_eq(http_get(port, "/nothing", &b2, NULL, 0), 404);
  free(b2);
  ck_assert_int_eq(http_get(port, "/", &b2, NULL, 0), 200);
  free(b2);

  /* The writer exits: so does the exporter, successfully. */
  finish_both(&w, &e);
}
END_TEST

/* The OCaml version and labels a process's ring file records are labels
 * of its series, after pid and program; an operator's --label of the
 * same name wins. */
START_TEST(test_file_labels) {
  if (!progs_dir() || !tool_path()) ER_SKIP("EVENTRING_TEST_PROGS/TOOL unset");
  const char *dir = er_tmpdir();
  char d[64], log[128];
  snprintf(d, sizeof d, "%s", dir);
  snprintf(log, sizeof log, "%s/exporter.log", d);
  char *env[] = {"EVENTRING_LABELS=service=checkout,zone=eu-1",
                 "MON_OCAML_VERSION=4.14.2", NULL};
  struct er_pipe_proc w = start_writer_env(d, NULL, env);
  char pid[16];
  snprintf(pid, sizeof pid, "%ld", (long)w.pid);
  char *args[] = {"--label", "zone=op", "--pid", pid, "--dir", d, NULL};
  int port;
  common_labels = ",zone=\"op\"";
  struct er_pipe_proc e = start_exporter(args, log, &port, 0);
  char s[256];
  snprintf(s, sizeof s, "eventring_user_mon_request_seconds_count{pid=\"%s\","
           "program=\"mon_writer\",ocaml_version=\"4.14.2\","
           "service=\"checkout\",event=\"mon.request\"}", pid);
  char *body = scrape_until(port, s, WRITER_ROUNDS);
  snprintf(s, sizeof s, "eventring_events_read_total{pid=\"%s\","
           "program=\"mon_writer\",ocaml_version=\"4.14.2\","
           "service=\"checkout\"}", pid);
  ck_assert_double_gt(need(body, s), 0);
  /* The file's zone gave way to the operator's, on every series. */
  ck_assert_msg(!strstr(body, "eu-1"), "the file's zone is there: %s", body);
  free(body);
  common_labels = "";
  finish_both(&w, &e);
}
END_TEST

/* -- CMD: the program label is the command's name; its status is ours. */
START_TEST(test_command) {
  if (!progs_dir() || !tool_path()) ER_SKIP("EVENTRING_TEST_PROGS/TOOL unset");
  const char *dir = er_tmpdir();
  char log[128], path[PATH_MAX];
  snprintf(log, sizeof log, "%s/exporter.log", dir);
  snprintf(path, sizeof path, "%s/mon_writer", progs_dir());
  char *args[] = {"--", path, "20", "0", NULL};
  int port;
  struct er_pipe_proc e = start_exporter(args, log, &port, 1);
  char *body = scrape_until(port, "eventring_rings", 1);
  /* The spawned command's pid is in the labels; find it. */
  const char *p = strstr(body, "eventring_events_read_total{pid=\"");
  ck_assert_ptr_nonnull(p);
  pid_t pid = (pid_t)atol(p + strlen("eventring_events_read_total{pid=\""));
  free(body);
  body = scrape_rounds(port, (long)pid);
  check_values(body, pid, "mon_writer");
  free(body);
  /* Closing the tool's stdin closes the command's: both end, 0. */
  int es = er_pipe_finish(&e, 10);
  ck_assert_msg(es != -1 && WIFEXITED(es) && WEXITSTATUS(es) == 0,
                "exporter status %d", es);
}
END_TEST

/* The pids of the series `eventring_user_mon_request_seconds_count` of
 * program mon_writer whose value is WRITER_ROUNDS in `body`, at most
 * `max` into `pids`; returns how many. */
static int writers_done(const char *body, long *pids, int max) {
  static const char pre[] = "eventring_user_mon_request_seconds_count{pid=\"";
  int n = 0;
  for (const char *p = strstr(body, pre); p && n < max;
       p = strstr(p + 1, pre)) {
    char *end;
    long pid = strtol(p + strlen(pre), &end, 10);
    char want[128];
    snprintf(want, sizeof want,
             "\",program=\"mon_writer\",event=\"mon.request\"} %d\n",
             WRITER_ROUNDS);
    if (!strncmp(end, want, strlen(want))) pids[n++] = pid;
  }
  return n;
}

/* -- CMD follows the command's whole tree, as stats reads it: two
 * writers under an untraced shell are two processes, each labelled with
 * its pid and its own program, never the shell's name. */
START_TEST(test_command_tree) {
  if (!progs_dir() || !tool_path()) ER_SKIP("EVENTRING_TEST_PROGS/TOOL unset");
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  const char *dir = er_tmpdir();
  char log[128], script[2 * PATH_MAX + 128];
  snprintf(log, sizeof log, "%s/exporter.log", dir);
  /* The background writer gets the shell's standard input through fd 3
   * (an asynchronous list's own is /dev/null): both end when it closes. */
  snprintf(script, sizeof script,
           "exec 3<&0; '%s/mon_writer' 20 0 <&3 & '%s/mon_writer' 20 0; wait",
           progs_dir(), progs_dir());
  char *args[] = {"--", "sh", "-c", script, NULL};
  int port;
  struct er_pipe_proc e = start_exporter(args, log, &port, 1);
  long pids[4];
  int n = 0;
  char *body = NULL;
  double end = er_now() + ER_RUN_TIMEOUT;
  while ((n = writers_done(body ? body : "", pids, 4)) < 2 && er_now() < end) {
    free(body);
    er_sleep_ms(50);
    body = scrape(port);
  }
  ck_assert_msg(n == 2, "%d writers exported: %.2000s", n, body);
  ck_assert_int_ne(pids[0], pids[1]);
  for (int i = 0; i < 2; i++) check_values(body, (pid_t)pids[i], "mon_writer");
  ck_assert_msg(!strstr(body, "program=\"sh\""), "%.2000s", body);
  free(body);
  int es = er_pipe_finish(&e, 10);
  ck_assert_msg(es != -1 && WIFEXITED(es) && WEXITSTATUS(es) == 0,
                "exporter status %d", es);
}
END_TEST

/* --event: only the chosen events are exported (filter.c, applied by
 * the source layer before the exporter sees them). */
START_TEST(test_event_filter) {
  if (!progs_dir() || !tool_path()) ER_SKIP("EVENTRING_TEST_PROGS/TOOL unset");
  const char *dir = er_tmpdir();
  char log[128], path[PATH_MAX];
  snprintf(log, sizeof log, "%s/exporter.log", dir);
  snprintf(path, sizeof path, "%s/mon_writer", progs_dir());
  char *args[] = {"--event", "mon.*", "--", path, "20", "0", NULL};
  int port;
  struct er_pipe_proc e = start_exporter(args, log, &port, 1);
  char *body = scrape_until(port, "eventring_rings", 1);
  const char *p = strstr(body, "eventring_events_read_total{pid=\"");
  ck_assert_ptr_nonnull(p);
  pid_t pid = (pid_t)atol(p + strlen("eventring_events_read_total{pid=\""));
  free(body);
  body = scrape_rounds(port, (long)pid);
  /* The runtime counters the writer sets are not exported. */
  const char *leak = strstr(body, "eventring_runtime_minor_promoted{");
  ck_assert_msg(!leak, "exported: %.300s", leak);
  free(body);
  int es = er_pipe_finish(&e, 10);
  ck_assert_msg(es != -1 && WIFEXITED(es) && WEXITSTATUS(es) == 0,
                "exporter status %d", es);
}
END_TEST

/* --dir alone: processes appear and leave. */
START_TEST(test_dir) {
  if (!progs_dir() || !tool_path()) ER_SKIP("EVENTRING_TEST_PROGS/TOOL unset");
  const char *dir = er_tmpdir();
  char d[64], log[128];
  snprintf(d, sizeof d, "%s", dir);
  /* The log goes elsewhere: the directory holds ring files only. */
  const char *ld = er_tmpdir();
  snprintf(log, sizeof log, "%s/exporter.log", ld);
  char *args[] = {"--dir", d, "--keep", "0.3", NULL};
  int port;
  struct er_pipe_proc e = start_exporter(args, log, &port, 0);
  char *body = scrape_until(port, "eventring_rings", 0);
  ck_assert_double_eq(need(body, "eventring_rings"), 0);
  check_format(body);
  free(body);

  struct er_pipe_proc w1 = start_writer(d, NULL);
  struct er_pipe_proc w2 = start_writer(d, NULL);
  char s[256];
  /* The exporter reads the files one batch at a time: wait for both. */
  free(scrape_rounds(port, (long)w1.pid));
  body = scrape_rounds(port, (long)w2.pid);
  check_values(body, w1.pid, "mon_writer");
  check_values(body, w2.pid, "mon_writer");
  ck_assert_double_eq(need(body, "eventring_rings"), 2);
  free(body);

  /* w1 exits (its file goes): after --keep it is no longer exported. */
  int ws = er_pipe_finish(&w1, 10);
  ck_assert_msg(ws != -1 && WIFEXITED(ws), "mon_writer status %d", ws);
  body = scrape_until(port, "eventring_rings", 1);
  ck_assert_double_eq(need(body, "eventring_rings"), 1);
  snprintf(s, sizeof s, "pid=\"%ld\"", (long)w1.pid);
  ck_assert_ptr_null(strstr(body, s));
  check_values(body, w2.pid, "mon_writer");
  free(body);

  er_pipe_finish(&w2, 10);
  kill(e.pid, SIGTERM);
  int es = er_pipe_finish(&e, 10);
  ck_assert_msg(es != -1 && WIFEXITED(es) && WEXITSTATUS(es) == 128 + SIGTERM,
                "exporter status %d", es);
}
END_TEST

/* progs/script_writer, traced in `dir`, told what to record by say(). */
static struct er_pipe_proc start_script(const char *dir) {
  static char dirvar[128], path[PATH_MAX];
  snprintf(dirvar, sizeof dirvar, "OCAML_RUNTIME_EVENTS_DIR=%s", dir);
  snprintf(path, sizeof path, "%s/script_writer", progs_dir());
  char *argv[] = {path, NULL};
  char *env[] = {dirvar, NULL};
  struct er_pipe_proc p = er_pipe_start(argv, env, NULL);
  char line[64];
  ck_assert_msg(read_line(&p, line, sizeof line, 10) == 0 &&
                    !strncmp(line, "ready ", 6),
                "script_writer did not get ready: '%s'", line);
  return p;
}

/* Sends one command to a script_writer and returns what it answered
 * ("ok RC"), once the command is done. */
static int say(struct er_pipe_proc *p, const char *cmd) {
  size_t n = strlen(cmd);
  ck_assert_int_eq(write(p->in, cmd, n), (ssize_t)n);
  ck_assert_int_eq(write(p->in, "\n", 1), 1);
  char line[64];
  ck_assert_msg(read_line(p, line, sizeof line, 10) == 0 &&
                    !strncmp(line, "ok ", 3),
                "script_writer: '%s' answered '%s'", cmd, line);
  return atoi(line + 3);
}

/* --dir follows a process through its tracing sessions: each stop and
 * start makes a new file for the same pid, and the series go on from
 * the earlier sessions' totals (counters stay monotonic), whether a scan
 * saw the gap between the files or only the new file in place of the
 * old. */
START_TEST(test_dir_sessions) {
  if (!progs_dir() || !tool_path()) ER_SKIP("EVENTRING_TEST_PROGS/TOOL unset");
  char d[64], log[128], s[256], lab[96];
  snprintf(d, sizeof d, "%s", er_tmpdir());
  snprintf(log, sizeof log, "%s/exporter.log", er_tmpdir());
  char *args[] = {"--dir", d, NULL};
  int port;
  struct er_pipe_proc e = start_exporter(args, log, &port, 0);
  struct er_pipe_proc w = start_script(d);
  snprintf(lab, sizeof lab, "pid=\"%ld\",program=\"script_writer\"",
           (long)w.pid);
  ck_assert_int_eq(say(&w, "reg unit sess.tick"), 0);
  ck_assert_int_eq(say(&w, "reg span sess.span"), 1);
  snprintf(s, sizeof s, "eventring_user_sess_tick_total{%s,event=\"sess.tick\"}",
           lab);
  static const int per_session[] = {5, 7, 11};
  double total = 0, read_before = 0;
  for (int k = 0; k < 3; k++) {
    char cmd[32];
    ck_assert_int_eq(say(&w, "start"), 0);
    snprintf(cmd, sizeof cmd, "unit 0 %d", per_session[k]);
    say(&w, cmd);
    say(&w, "span 1");
    total += per_session[k];
    char *body = scrape_until(port, s, total);
    check_format(body);
    ck_assert_double_eq(need(body, s), total);
    char q[256];
    snprintf(q, sizeof q,
             "eventring_user_sess_span_seconds_count{%s,event=\"sess.span\"}",
             lab);
    ck_assert_double_eq(need(body, q), k + 1);
    snprintf(q, sizeof q, "eventring_events_read_total{%s}", lab);
    double read = need(body, q);
    ck_assert_double_gt(read, read_before);
    read_before = read;
    ck_assert_double_eq(need(body, "eventring_rings"), 1);
    free(body);
    ck_assert_int_eq(say(&w, "stop"), 0);
  }
  er_pipe_finish(&w, 10);
  kill(e.pid, SIGTERM);
  int es = er_pipe_finish(&e, 10);
  ck_assert_msg(es != -1 && WIFEXITED(es) && WEXITSTATUS(es) == 128 + SIGTERM,
                "exporter status %d", es);
}
END_TEST

START_TEST(test_usage) {
  if (!tool_path()) ER_SKIP("EVENTRING_TEST_TOOL unset");
  const char *dir = er_tmpdir();
  char log[128];
  snprintf(log, sizeof log, "%s/out.log", dir);
  struct {
    char *args[8];
    int status;
  } cases[] = {
      {{"metrics", "--pid", "1", NULL}, 2},                   /* no --listen */
      {{"metrics", "--listen", "nonsense", "--pid", "1", NULL}, 2},
      {{"metrics", "--listen", "127.0.0.1:0", NULL}, 2},      /* no source */
      {{"metrics", "--listen", "127.0.0.1:0", "--pid", "999999999", "--dir",
        (char *)dir, NULL}, 1},                               /* no file */
      {{"metrics", "--listen", "127.0.0.1:0", "--since", "1s", "--pid", "1",
        NULL}, 2},                                /* no time for a live one */
      {{"metrics", "--listen", "127.0.0.1:0", "--domain", "0", "--dir",
        (char *)dir, NULL}, 2},                   /* not read by the source */
      {{"metrics", "--remote-write", "https://127.0.0.1:1/api/v1/write",
        "--pid", "1", NULL}, 2},                  /* http:// only */
      {{"metrics", "--remote-write", "http://127.0.0.1:99999/", "--pid", "1",
        NULL}, 2},
      {{"metrics", "--listen", "127.0.0.1:0", "--label", "env", "--pid", "1",
        NULL}, 2},                                /* no =VALUE */
      {{"metrics", "--listen", "127.0.0.1:0", "--label", "pid=3", "--pid",
        "1", NULL}, 2},                           /* the series' own */
      {{"metrics", "--listen", "127.0.0.1:0", "--label", "__x=3", "--pid",
        "1", NULL}, 2},                           /* Prometheus's */
      {{"metrics", "--listen", "127.0.0.1:0", "--label", "a-b=3", "--pid",
        "1", NULL}, 2},
      {{"metrics", "--label", "a=1", "--label", "a=2", "--listen",
        "127.0.0.1:0", NULL}, 2},                 /* twice */
      {{"metrics", "--remote-write", "http://127.0.0.1:1/", "--push-interval",
        "15", "--pid", "1", NULL}, 2},            /* no unit */
      {{"metrics", "--remote-write", "http://127.0.0.1:1/", "--push-timeout",
        "0s", "--pid", "1", NULL}, 2},
      {{"metrics", "--remote-write", "http://127.0.0.1:1/", "--queue-size",
        "0", "--pid", "1", NULL}, 2},
      {{"metrics", "--exemplars", "watch.json", "--pid", "1", NULL},
       2},                                        /* for no output */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *argv[10] = {(char *)tool_path()};
    for (int k = 0; cases[i].args[k]; k++) argv[k + 1] = cases[i].args[k];
    struct er_pipe_proc p = er_pipe_start(argv, NULL, log);
    int st = er_pipe_finish(&p, 10);
    ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == cases[i].status,
                  "case %zu: status %d", i, st);
    FILE *f = fopen(log, "r");
    char line[512] = "";
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_msg(!strncmp(line, "eventring: ", 11), "case %zu: %s", i, line);
    ck_assert_ptr_null(fgets(line, sizeof line, f)); /* one line */
    fclose(f);
  }
}
END_TEST

/* ------------------------------------------------------------------ */
/* The real Prometheus.                                                 */

static int rm_entry(const char *p, const struct stat *sb, int flag,
                    struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  remove(p);
  return 0;
}

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t l = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &l);
  close(fd);
  return ntohs(a.sin_port);
}

/* The program `name` as found in PATH (static storage), or NULL. */
static const char *find_program(const char *name) {
  static char path[PATH_MAX];
  const char *env = getenv("PATH");
  char *dirs = strdup(env ? env : "/usr/bin:/bin");
  char *save;
  for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
    snprintf(path, sizeof path, "%s/%s", d, name);
    if (access(path, X_OK) == 0) {
      free(dirs);
      return path;
    }
  }
  free(dirs);
  return NULL;
}

/* Percent-encodes a PromQL expression for a query string. */
static void urlencode(char *dst, size_t n, const char *s) {
  size_t k = 0;
  for (; *s && k + 4 < n; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-')
      dst[k++] = (char)c;
    else
      k += (size_t)snprintf(dst + k, n - k, "%%%02X", c);
  }
  dst[k] = '\0';
}

/* Runs an instant query; returns 1 and the first result's value (and
 * copies the response) when the result is non-empty. */
static int query(int port, const char *expr, double *v, char *resp,
                 size_t resp_n) {
  char enc[1024], path[1200];
  urlencode(enc, sizeof enc, expr);
  snprintf(path, sizeof path, "/api/v1/query?query=%s", enc);
  char *body;
  soft_connect = 1;
  int status = http_get(port, path, &body, NULL, 0);
  soft_connect = 0;
  if (resp) snprintf(resp, resp_n, "%s", body);
  int ok = 0;
  /* {"status":"success","data":{"resultType":"vector","result":[{"metric":
   * {...},"value":[1700000000.123,"4242"]}]}} */
  const char *val = strstr(body, "\"value\":[");
  if (status == 200 && strstr(body, "\"status\":\"success\"") && val) {
    const char *q = strchr(val, ',');
    if (q && q[1] == '"') {
      char *end;
      *v = strtod(q + 2, &end);
      ok = *end == '"';
    }
  }
  free(body);
  return ok;
}

/* The files of a test with Prometheus: a temporary directory `d` for
 * the ring files, logs and configuration, and a storage directory of
 * Prometheus's own (it makes subdirectories: removed by the test). */
struct prom_files {
  char prom[PATH_MAX]; /* the prometheus program */
  char d[64], log[128], plog[128], cfg[128], data[128];
};

/* Makes the files, or returns why the test is skipped. */
static const char *prom_files_make(struct prom_files *f) {
  if (!progs_dir() || !tool_path()) return "EVENTRING_TEST_PROGS/TOOL unset";
  const char *prom = find_program("prometheus");
  if (!prom) return "prometheus is not installed (Debian: prometheus)";
  snprintf(f->prom, sizeof f->prom, "%s", prom);
  snprintf(f->d, sizeof f->d, "%s", er_tmpdir());
  snprintf(f->log, sizeof f->log, "%s/exporter.log", f->d);
  snprintf(f->plog, sizeof f->plog, "%s/prometheus.log", f->d);
  snprintf(f->cfg, sizeof f->cfg, "%s/prometheus.yml", f->d);
  snprintf(f->data, sizeof f->data, "/tmp/eventring-prom-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(f->data));
  return NULL;
}

/* Starts Prometheus on 127.0.0.1:pport with `cfg` and storage `data`,
 * logging to `plog`, with options `flag` and `flag2` (each NULL,
 * RECEIVER or EXEMPLARS), and waits (bounded) until its API answers. */
#define RECEIVER "--web.enable-remote-write-receiver"
#define EXEMPLARS "--enable-feature=exemplar-storage"
static struct er_pipe_proc start_prometheus(const char *prom, const char *cfg,
                                            const char *data, int pport,
                                            const char *plog,
                                            const char *flag,
                                            const char *flag2) {
  static char a_cfg[200], a_data[200], a_listen[64];
  snprintf(a_cfg, sizeof a_cfg, "--config.file=%s", cfg);
  snprintf(a_data, sizeof a_data, "--storage.tsdb.path=%s", data);
  snprintf(a_listen, sizeof a_listen, "--web.listen-address=127.0.0.1:%d",
           pport);
  char *pargv[] = {(char *)prom, a_cfg, a_data, a_listen, "--log.level=warn",
                   (char *)flag, (char *)flag2, NULL};
  struct er_pipe_proc p = er_pipe_start(pargv, NULL, plog);
  double v, end = er_now() + 40;
  while (!query(pport, "vector(1)", &v, NULL, 0)) {
    int st;
    ck_assert_msg(waitpid(p.pid, &st, WNOHANG) == 0,
                  "prometheus exited (see %s)", plog);
    ck_assert_msg(er_now() < end, "prometheus did not answer (see %s)", plog);
    er_sleep_ms(100);
  }
  return p;
}

START_TEST(test_prometheus) {
  struct prom_files pf;
  const char *skip = prom_files_make(&pf);
  if (skip) ER_SKIP(skip);
  const char *prom = pf.prom;
  char *d = pf.d, *log = pf.log, *plog = pf.plog, *cfg = pf.cfg;
  char *data = pf.data;

  /* A writer that goes on pausing while Prometheus scrapes, so that the
   * rate() of its histogram is defined. */
  struct er_pipe_proc w = start_writer(d, "live");
  char pid[16];
  snprintf(pid, sizeof pid, "%ld", (long)w.pid);
  char *args[] = {"--pid", pid, "--dir", d, NULL};
  int port;
  struct er_pipe_proc e = start_exporter(args, log, &port, 0);

  FILE *f = fopen(cfg, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f,
          "global:\n"
          "  scrape_interval: 1s\n"
          "  evaluation_interval: 1s\n"
          "scrape_configs:\n"
          "  - job_name: eventring\n"
          "    static_configs:\n"
          "      - targets: ['127.0.0.1:%d']\n",
          port);
  fclose(f);
  int pport = free_port();
  struct er_pipe_proc p =
      start_prometheus(prom, cfg, data, pport, plog, NULL, NULL);

  /* Until Prometheus has scraped the exporter successfully and the
   * histogram has moved between two scrapes (bounded). */
  char resp[4096] = "";
  double v = 0, end = er_now() + 40;
  int up = 0;
  while (er_now() < end) {
    int st;
    ck_assert_msg(waitpid(p.pid, &st, WNOHANG) == 0,
                  "prometheus exited (see %s)", plog);
    up = query(pport, "up{job=\"eventring\"}", &v, resp, sizeof resp) && v == 1;
    double n;
    if (up && query(pport, "increase(eventring_gc_pause_seconds_count[1m])",
                    &n, NULL, 0) && n > 0)
      break;
    er_sleep_ms(250);
  }
  ck_assert_msg(up, "Prometheus never scraped the exporter: %s", resp);

  char q[512];
  /* The counter gauge, with its labels. */
  snprintf(q, sizeof q,
           "eventring_runtime_minor_allocated{pid=\"%s\",program=\"mon_writer\","
           "domain=\"0\"}", pid);
  ck_assert_msg(query(pport, q, &v, resp, sizeof resp), "%s: %s", q, resp);
  ck_assert_double_eq(v, 4242);
  snprintf(q, sizeof q,
           "eventring_runtime_minor_promoted{pid=\"%s\",domain=\"0\"}", pid);
  ck_assert_msg(query(pport, q, &v, resp, sizeof resp), "%s: %s", q, resp);
  ck_assert_double_eq(v, 10.0 * WRITER_ROUNDS);
  /* The pauses: the rounds' and the live ones since. */
  snprintf(q, sizeof q, "eventring_gc_pause_seconds_count{pid=\"%s\"}", pid);
  ck_assert_msg(query(pport, q, &v, resp, sizeof resp), "%s: %s", q, resp);
  ck_assert_double_gt(v, WRITER_ROUNDS + WRITER_ROUNDS / 5);
  /* The README's p99: the live pauses are all >= 2 ms, so it lies in a
   * bucket above 1 ms. */
  snprintf(q, sizeof q,
           "histogram_quantile(0.99, sum by (le) "
           "(rate(eventring_gc_pause_seconds_bucket[5m])))");
  ck_assert_msg(query(pport, q, &v, resp, sizeof resp), "%s: %s", q, resp);
  ck_assert_msg(v >= 0.001 && v <= 10, "p99 %g: %s", v, resp);
  /* And over all pauses so far, without rate(). */
  snprintf(q, sizeof q,
           "histogram_quantile(0.5, sum by (le) "
           "(eventring_gc_pause_seconds_bucket{pid=\"%s\"}))", pid);
  ck_assert_msg(query(pport, q, &v, resp, sizeof resp), "%s: %s", q, resp);
  ck_assert_msg(v >= 0.00025 && v <= 10, "p50 %g: %s", v, resp);
  /* Escaped labels arrive intact. */
  snprintf(q, sizeof q, "eventring_user_mon_weird__q____back_line__{pid=\"%s\"}",
           pid);
  ck_assert_msg(query(pport, q, &v, resp, sizeof resp), "%s: %s", q, resp);
  ck_assert_double_eq(v, -WRITER_ROUNDS);
  ck_assert_msg(strstr(resp, "\"event\":\"mon weird \\\"q\\\" \\\\ back\\nline "),
                "event label: %s", resp);

  kill(p.pid, SIGTERM);
  er_pipe_finish(&p, 15);
  er_pipe_finish(&w, 10);
  er_pipe_finish(&e, 10);
  nftw(data, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Exemplars: watch's snapshots, in Prometheus's exemplar storage.      */

/* The string value of "key":"..." in JSON line `line` into `out` (no
 * escapes expected), or "" when absent. */
static void line_str(const char *line, const char *key, char *out,
                     size_t n) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\":\"", key);
  const char *p = strstr(line, k);
  out[0] = '\0';
  if (p) {
    p += strlen(k);
    snprintf(out, n, "%.*s", (int)strcspn(p, "\""), p);
  }
}

static uint64_t line_u64(const char *line, const char *key) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = strstr(line, k);
  ck_assert_msg(p, "no %s in %s", key, line);
  return strtoull(p + strlen(k), NULL, 10);
}

/* The first snapshot line with a wall time of watch's JSON log `path`,
 * waited for (bounded), into `line`. */
static void first_snapshot(const char *path, char *line, size_t n) {
  double end = er_now() + ER_RUN_TIMEOUT;
  for (;;) {
    char *text = access(path, F_OK) == 0 ? er_slurp(path, NULL) : NULL;
    const char *s = text;
    while ((s = s ? strstr(s, "\"event\":\"snapshot\"") : NULL)) {
      const char *nl = strchr(s, '\n'), *wt = strstr(s, "\"wall_time_ns\":");
      if (wt && (!nl || wt < nl)) break;
      s = nl;
    }
    if (s) {
      while (s > text && s[-1] != '\n') s--;
      snprintf(line, n, "%.*s", (int)strcspn(s, "\n"), s);
      free(text);
      return;
    }
    free(text);
    ck_assert_msg(er_now() < end, "watch wrote no snapshot (see %s)", path);
    er_sleep_ms(50);
  }
}

/* The response of Prometheus's API at `path` (malloc'd), or NULL when
 * it does not answer with success. */
static char *api_get(int pport, const char *path) {
  char *body;
  soft_connect = 1;
  int status = http_get(pport, path, &body, NULL, 0);
  soft_connect = 0;
  if (status == 200 && strstr(body, "\"status\":\"success\"")) return body;
  free(body);
  return NULL;
}

/* The response of /api/v1/query_exemplars for `expr` between `from`
 * and `to` (seconds since the epoch), as api_get() returns it. */
static char *query_exemplars(int pport, const char *expr, uint64_t from,
                             uint64_t to) {
  char enc[256], path[512];
  urlencode(enc, sizeof enc, expr);
  snprintf(path, sizeof path,
           "/api/v1/query_exemplars?query=%s&start=%" PRIu64 "&end=%" PRIu64,
           enc, from, to);
  return api_get(pport, path);
}

/* The le label of the bucket of a value of `ns` nanoseconds, above 1 ms:
 * how long a pause or a span lasts depends on the machine's load. */
static const char *le_of(uint64_t ns) {
  static const struct {
    uint64_t ns;
    const char *le;
  } b[] = {{2500000, "0.0025"},     {5000000, "0.005"},
           {10000000, "0.01"},      {25000000, "0.025"},
           {50000000, "0.05"},      {100000000, "0.1"},
           {250000000, "0.25"},     {500000000, "0.5"},
           {1000000000, "1"},       {2500000000ULL, "2.5"},
           {5000000000ULL, "5"},    {10000000000ULL, "10"}};
  ck_assert_uint_gt(ns, 1000000);
  for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
    if (ns <= b[i].ns) return b[i].le;
  return "+Inf";
}

START_TEST(test_exemplars) {
  struct prom_files pf;
  const char *skip = prom_files_make(&pf);
  if (skip) ER_SKIP(skip);
  char *d = pf.d, wlog[128], jlog[128];
  snprintf(wlog, sizeof wlog, "%s/watch.err", d);
  snprintf(jlog, sizeof jlog, "%s/watch.json", d);

  /* A writer whose live pauses all last 2 ms or more, a watcher that
   * writes one snapshot for the first, and the exporter following the
   * watcher's log. */
  struct er_pipe_proc w = start_writer(d, "live");
  char pid[16];
  snprintf(pid, sizeof pid, "%ld", (long)w.pid);
  /* A line that is not watch's, before watch appends its own. */
  er_write_text(jlog, "not json\n", 1);
  char *wargv[] = {(char *)tool_path(), "watch", "--pid", pid, "--dir", d,
                   "--when", "pause>1ms", "--before", "100ms", "--after",
                   "10ms", "--max", "1", "-o", d, "--log", jlog,
                   "--log-format", "json", NULL};
  struct er_pipe_proc wt = er_pipe_start(wargv, NULL, wlog);
  char *args[] = {"--pid", pid, "--dir", d, "--exemplars", jlog, NULL};
  int port;
  struct er_pipe_proc e = start_exporter(args, pf.log, &port, 0);

  char line[4096], snap[PATH_MAX], source[64];
  first_snapshot(jlog, line, sizeof line);
  line_str(line, "snapshot", snap, sizeof snap);
  line_str(line, "source", source, sizeof source);
  ck_assert_str_eq(source, "pause");
  uint64_t ts = line_u64(line, "ts"), value = line_u64(line, "value_ns");
  uint64_t wall = line_u64(line, "wall_time_ns");
  ck_assert_msg(value > 1000000, "value_ns %" PRIu64 ": %s", value, line);
  /* The snapshot exists and holds the pause: its end at ts, its begin
   * value_ns before. */
  char at_end[64], at_begin[64];
  snprintf(at_end, sizeof at_end, "ts=%" PRIu64 " kind=runtime_end", ts);
  snprintf(at_begin, sizeof at_begin, "ts=%" PRIu64 " kind=runtime_begin",
           ts - value);
  const char *dargs[] = {"dump", "--time=raw", snap, NULL};
  struct er_run r = er_run_tool(d, dargs, 0);
  er_assert_status(&r, 0);
  ck_assert_msg(strstr(r.out, at_end) && strstr(r.out, at_begin),
                "%s does not hold the pause (%s, %s)", snap, at_end,
                at_begin);
  er_run_free(&r);
  const char *id = strrchr(snap, '/') + 1;

  /* The OpenMetrics page has the exemplar on the pause's bucket (2 ms
   * or more), and ends in # EOF; the 0.0.4 page has neither. */
  char ctype[128], *body;
  accept_header = "application/openmetrics-text;version=1.0.0,"
                  "text/plain;version=0.0.4;q=0.5";
  double end = er_now() + ER_RUN_TIMEOUT;
  const char *x = NULL;
  for (;;) {
    ck_assert_int_eq(http_get(port, "/metrics", &body, ctype, sizeof ctype),
                     200);
    x = strstr(body, "# {snapshot=");
    if (x || er_now() > end) break;
    free(body);
    er_sleep_ms(50);
  }
  accept_header = "text/plain";
  ck_assert_msg(x, "no exemplar in %s", body);
  ck_assert_msg(strstr(ctype, "application/openmetrics-text") &&
                    strstr(ctype, "version=1.0.0"),
                "Content-Type: %s", ctype);
  while (x > body && x[-1] != '\n') x--;
  char expect[512];
  snprintf(expect, sizeof expect,
           "eventring_gc_pause_seconds_bucket{host=\"%s\",pid=\"%s\","
           "program=\"mon_writer\",le=\"%s\"}",
           host_name(), pid, le_of(value));
  ck_assert_msg(!strncmp(x, expect, strlen(expect)), "exemplar line: %.300s",
                x);
  char tail[300];
  snprintf(tail, sizeof tail,
           " # {snapshot=\"%s\"} %" PRIu64 ".%09" PRIu64 " %" PRIu64
           ".%09" PRIu64 "\n",
           id, value / 1000000000u, value % 1000000000u, wall / 1000000000u,
           wall % 1000000000u);
  ck_assert_msg(strstr(x, tail) && strstr(x, tail) < strchr(x, '\n') + 1,
                "exemplar %s not in %.300s", tail, x);
  size_t blen = strlen(body);
  ck_assert_msg(blen > 6 && !strcmp(body + blen - 6, "# EOF\n"),
                "no # EOF at the end");
  ck_assert_msg(strstr(body, "# TYPE eventring_events_read counter\n"),
                "a counter's family keeps _total");
  free(body);
  body = scrape_raw(port);
  ck_assert_msg(!strstr(body, "# {") && !strstr(body, "# EOF"),
                "exemplars in the 0.0.4 page");
  free(body);
  /* The bad line was said once and skipped. */
  char *elog = er_slurp(pf.log, NULL);
  ck_assert_msg(strstr(elog, "watch.json: line 1 skipped"), "%s", elog);
  free(elog);

  /* Prometheus scrapes in OpenMetrics (its parser is strict: an error
   * fails the scrape) and keeps the exemplar. */
  FILE *f = fopen(pf.cfg, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f,
          "global:\n"
          "  scrape_interval: 1s\n"
          "scrape_configs:\n"
          "  - job_name: eventring\n"
          "    static_configs:\n"
          "      - targets: ['127.0.0.1:%d']\n",
          port);
  fclose(f);
  int pport = free_port();
  struct er_pipe_proc p =
      start_prometheus(pf.prom, pf.cfg, pf.data, pport, pf.plog, EXEMPLARS,
                       NULL);
  char resp[4096] = "";
  double v = 0;
  end = er_now() + 40;
  for (;;) {
    int st;
    ck_assert_msg(waitpid(p.pid, &st, WNOHANG) == 0,
                  "prometheus exited (see %s)", pf.plog);
    body = query_exemplars(pport, "eventring_gc_pause_seconds_bucket",
                           wall / 1000000000u - 3600,
                           wall / 1000000000u + 3600);
    int found = body && strstr(body, "\"exemplars\":[{");
    snprintf(resp, sizeof resp, "%s", body ? body : "");
    free(body);
    if (found || er_now() > end) break;
    er_sleep_ms(250);
  }
  /* A scrape succeeded (the last one may have timed out on a loaded
   * machine: scrape_timeout is the 1 s interval). */
  ck_assert_msg(query(pport, "max_over_time(up{job=\"eventring\"}[10m])", &v,
                      NULL, 0) && v == 1,
                "Prometheus did not scrape the OpenMetrics page");
  char lab[300], val[64];
  snprintf(lab, sizeof lab, "\"labels\":{\"snapshot\":\"%s\"}", id);
  ck_assert_msg(strstr(resp, lab), "no exemplar %s: %s", lab, resp);
  char le[64];
  snprintf(le, sizeof le, "\"le\":\"%s\"", le_of(value));
  ck_assert_msg(strstr(resp, le), "bucket %s: %s", le, resp);
  /* The value as Prometheus read it from the page's 9 decimals. */
  snprintf(val, sizeof val, "%" PRIu64 ".%09" PRIu64, value / 1000000000u,
           value % 1000000000u);
  const char *vp = strstr(resp, "\"value\":\"");
  ck_assert_msg(vp && strtod(vp + 9, NULL) == strtod(val, NULL),
                "value %s not in %s", val, resp);
  /* Prometheus keeps milliseconds. */
  const char *t = strstr(resp, "\"timestamp\":");
  ck_assert_msg(t, "no timestamp: %s", resp);
  double stamp = strtod(t + strlen("\"timestamp\":"), NULL);
  double off = stamp - (double)wall / 1e9;
  ck_assert_msg(off < 0.002 && off > -0.002,
                "timestamp %.3f, wall %" PRIu64 " ns", stamp, wall);

  kill(p.pid, SIGTERM);
  er_pipe_finish(&p, 15);
  er_pipe_finish(&w, 10);
  er_pipe_finish(&wt, 10);
  er_pipe_finish(&e, 10);
  nftw(pf.data, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
END_TEST

/* A span rule's snapshot becomes the exemplar of the span's bucket: a
 * program of 3 ms spans in a directory that watch and the exporter both
 * follow. */
START_TEST(test_span_exemplar) {
  if (!progs_dir() || !tool_path()) ER_SKIP("EVENTRING_TEST_PROGS/TOOL unset");
  char d[64], wlog[128], jlog[128], mlog[128];
  snprintf(d, sizeof d, "%s", er_tmpdir());
  snprintf(wlog, sizeof wlog, "%s/watch.err", d);
  snprintf(jlog, sizeof jlog, "%s/watch.json", d);
  snprintf(mlog, sizeof mlog, "%s/exporter.log", d);
  char *wargv[] = {(char *)tool_path(), "watch", "--dir", d, "--when",
                   "span:diff.req>1ms", "--before", "10ms", "--after",
                   "1ms", "--max", "1", "-o", d, "--log", jlog,
                   "--log-format", "json", NULL};
  struct er_pipe_proc wt = er_pipe_start(wargv, NULL, wlog);
  double end = er_now() + ER_RUN_TIMEOUT;
  for (;;) {
    char *text = access(wlog, F_OK) == 0 ? er_slurp(wlog, NULL) : NULL;
    int ready = text && strstr(text, "for new ring files");
    free(text);
    if (ready) break;
    ck_assert_msg(er_now() < end, "watch did not start (see %s)", wlog);
    er_sleep_ms(20);
  }
  char *args[] = {"--dir", d, "--exemplars", jlog, NULL};
  int port;
  struct er_pipe_proc e = start_exporter(args, mlog, &port, 0);

  char prog[PATH_MAX], dirvar[128];
  snprintf(prog, sizeof prog, "%s/span_sleep", progs_dir());
  snprintf(dirvar, sizeof dirvar, "OCAML_RUNTIME_EVENTS_DIR=%s", d);
  char *sargv[] = {prog, "3000", "5", NULL};
  char *env[] = {dirvar, "OCAML_RUNTIME_EVENTS_PRESERVE=1", NULL};
  struct er_pipe_proc sp = er_pipe_start(sargv, env, NULL);
  int st = er_pipe_finish(&sp, ER_RUN_TIMEOUT);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "span_sleep: %d", st);

  char line[4096], snap[PATH_MAX], source[64];
  first_snapshot(jlog, line, sizeof line);
  line_str(line, "snapshot", snap, sizeof snap);
  line_str(line, "source", source, sizeof source);
  ck_assert_str_eq(source, "span:diff.req");
  uint64_t value = line_u64(line, "value_ns");
  ck_assert_msg(value >= 3000000, "value_ns %" PRIu64 " (a 3 ms sleep)",
                value);
  /* The exemplar is on the span's bucket (3 ms or more). */
  char want[400];
  snprintf(want, sizeof want, "# {snapshot=\"%s\"} %" PRIu64 ".%09" PRIu64
           " ", strrchr(snap, '/') + 1, value / 1000000000u,
           value % 1000000000u);
  accept_header = "application/openmetrics-text;version=1.0.0";
  char *body = NULL, ctype[128];
  const char *x = NULL;
  end = er_now() + ER_RUN_TIMEOUT;
  for (;;) {
    ck_assert_int_eq(http_get(port, "/metrics", &body, ctype, sizeof ctype),
                     200);
    x = strstr(body, want);
    if (x || er_now() > end) break;
    free(body);
    er_sleep_ms(50);
  }
  accept_header = "text/plain";
  ck_assert_msg(x, "no exemplar %s in the page", want);
  while (x > body && x[-1] != '\n') x--;
  char le[64];
  snprintf(le, sizeof le, "le=\"%s\"}", le_of(value));
  const char *lp = strstr(x, le);
  ck_assert_msg(!strncmp(x, "eventring_user_diff_req_seconds_bucket{", 39) &&
                    lp && lp < strstr(x, want),
                "exemplar line (%s): %.300s", le, x);
  free(body);
  kill(wt.pid, SIGTERM);
  kill(e.pid, SIGTERM);
  er_pipe_finish(&wt, 10);
  er_pipe_finish(&e, 10);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Remote write, into the real Prometheus's receiver.                   */

static void promtool_check(const char *promtool, const char *dir,
                           const char *body);

/* A configuration for a Prometheus that only receives (it scrapes
 * nothing). */
static void remote_write_config(const char *cfg) {
  FILE *f = fopen(cfg, "w");
  ck_assert_ptr_nonnull(f);
  fputs("global:\n  scrape_interval: 1m\n", f);
  fclose(f);
}

/* A set of series: "name\1label=value\1..." (labels sorted, values
 * unescaped) and each one's value. */
struct series_set {
  char **key;
  double *val;
  int n, cap;
};

static int cmp_pair(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds the series `name` with the `n` labels "k=v" of `pairs`. */
static void ss_add(struct series_set *s, const char *name, char **pairs,
                   int n, double v) {
  qsort(pairs, (size_t)n, sizeof *pairs, cmp_pair);
  size_t len = strlen(name) + 1;
  for (int i = 0; i < n; i++) len += strlen(pairs[i]) + 1;
  char *k = malloc(len), *o = k;
  ck_assert_ptr_nonnull(k);
  o += sprintf(o, "%s", name);
  for (int i = 0; i < n; i++) o += sprintf(o, "\1%s", pairs[i]);
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 256;
    s->key = realloc(s->key, (size_t)s->cap * sizeof *s->key);
    s->val = realloc(s->val, (size_t)s->cap * sizeof *s->val);
    ck_assert(s->key && s->val);
  }
  s->key[s->n] = k;
  s->val[s->n++] = v;
}

static void ss_free(struct series_set *s) {
  for (int i = 0; i < s->n; i++) free(s->key[i]);
  free(s->key);
  free(s->val);
  memset(s, 0, sizeof *s);
}

/* The samples of a text exposition, but those of families starting with
 * `skip`. */
static void ss_from_text(struct series_set *s, const char *body,
                         const char *skip) {
  for (const char *l = body; *l;) {
    const char *nl = strchr(l, '\n');
    const char *end = nl ? nl : l + strlen(l);
    if (*l != '#' && strncmp(l, skip, strlen(skip)) != 0) {
      char name[256], *pairs[32];
      int np = 0;
      size_t n = strcspn(l, "{ ");
      snprintf(name, sizeof name, "%.*s", (int)n, l);
      const char *p = l + n;
      if (*p == '{') {
        p++;
        while (*p != '}') {
          char pair[1024];
          size_t k = 0;
          while (*p != '=') pair[k++] = *p++;
          pair[k++] = '=';
          p += 2; /* =" */
          while (*p != '"') {
            if (*p == '\\') {
              p++;
              pair[k++] = *p == 'n' ? '\n' : *p;
            } else {
              pair[k++] = *p;
            }
            p++;
          }
          pair[k] = '\0';
          p++;
          if (*p == ',') p++;
          ck_assert_int_lt(np, 32);
          pairs[np++] = strdup(pair);
        }
        p++;
      }
      ss_add(s, name, pairs, np, strtod(p + 1, NULL));
      for (int i = 0; i < np; i++) free(pairs[i]);
    }
    l = nl ? nl + 1 : end;
  }
}

/* A JSON string at *pp (after its opening quote), unescaped into `out`;
 * *pp is left after its closing quote. */
static void json_string(const char **pp, char *out, size_t n) {
  const char *p = *pp;
  size_t k = 0;
  while (*p && *p != '"') {
    unsigned c = (unsigned char)*p++;
    if (c == '\\') {
      c = (unsigned char)*p++;
      if (c == 'n') c = '\n';
      else if (c == 't') c = '\t';
      else if (c == 'r') c = '\r';
      else if (c == 'u') {
        unsigned u = (unsigned)strtoul((char[5]){p[0], p[1], p[2], p[3], 0},
                                       NULL, 16);
        p += 4;
        if (u >= 0x800 && k + 3 < n) {
          out[k++] = (char)(0xe0 | u >> 12);
          out[k++] = (char)(0x80 | ((u >> 6) & 0x3f));
          c = 0x80 | (u & 0x3f);
        } else if (u >= 0x80 && k + 2 < n) {
          out[k++] = (char)(0xc0 | u >> 6);
          c = 0x80 | (u & 0x3f);
        } else {
          c = u;
        }
      }
    }
    if (k + 1 < n) out[k++] = (char)c;
  }
  out[k] = '\0';
  *pp = *p ? p + 1 : p;
}

/* The series of an instant query's vector result. */
static void ss_from_query(struct series_set *s, const char *json) {
  for (const char *p = strstr(json, "{\"metric\":{"); p;
       p = strstr(p, "{\"metric\":{")) {
    p += strlen("{\"metric\":{");
    char name[1024] = "", *pairs[32];
    int np = 0;
    while (*p == '"') {
      char k[256], v[1024], pair[1300];
      p++;
      json_string(&p, k, sizeof k);
      p += 2; /* :" */
      json_string(&p, v, sizeof v);
      if (!strcmp(k, "__name__")) {
        snprintf(name, sizeof name, "%s", v);
      } else {
        snprintf(pair, sizeof pair, "%s=%s", k, v);
        ck_assert_int_lt(np, 32);
        pairs[np++] = strdup(pair);
      }
      if (*p == ',') p++;
    }
    const char *val = strstr(p, "\"value\":[");
    ck_assert_ptr_nonnull(val);
    val = strchr(val, ',');
    ck_assert_ptr_nonnull(val);
    ss_add(s, name, pairs, np, strtod(val + 2, NULL));
    for (int i = 0; i < np; i++) free(pairs[i]);
    p = val;
  }
}

/* Whether the two sets hold the same series with the same values; when
 * not, the first difference goes to `why`. */
static int ss_equal(struct series_set *a, struct series_set *b, char *why,
                    size_t n) {
  for (int i = 0; i < a->n; i++) {
    int found = 0;
    for (int j = 0; j < b->n && !found; j++)
      if (!strcmp(a->key[i], b->key[j])) {
        found = 1;
        if (a->val[i] != b->val[j]) {
          snprintf(why, n, "%s: %.17g scraped, %.17g in Prometheus",
                   a->key[i], a->val[i], b->val[j]);
          return 0;
        }
      }
    if (!found) {
      snprintf(why, n, "%s: scraped, not in Prometheus", a->key[i]);
      return 0;
    }
  }
  if (a->n != b->n) {
    snprintf(why, n, "%d series scraped, %d in Prometheus", a->n, b->n);
    return 0;
  }
  return 1;
}

/* Runs `expr` and returns its whole response (malloc'd), or NULL. */
static char *query_body(int pport, const char *expr) {
  char enc[1024], path[1200];
  urlencode(enc, sizeof enc, expr);
  snprintf(path, sizeof path, "/api/v1/query?query=%s", enc);
  return api_get(pport, path);
}

/* The value of `series` in a raw scrape of `port`. */
static double scraped(int port, const char *series) {
  char *body = scrape(port);
  double v = need(body, series);
  free(body);
  return v;
}

/* Waits (bounded) until the exporter's counter `series` reaches `want`. */
static double scrape_at_least(int port, const char *series, double want) {
  double v = 0, end = er_now() + ER_RUN_TIMEOUT;
  while ((v = scraped(port, series)) < want && er_now() < end)
    er_sleep_ms(50);
  ck_assert_msg(v >= want, "%s is %g after %g s, not %g yet", series, v,
                ER_RUN_TIMEOUT, want);
  return v;
}

#define RW_SENT "eventring_remote_write_sent_samples_total"
#define RW_DROPPED "eventring_remote_write_dropped_samples_total"
#define RW_QUEUED "eventring_remote_write_queued_samples"
#define RW_FAILED "eventring_remote_write_failed_requests_total"
#define RW_COLLECTED "eventring_remote_write_samples_total"
#define RW_LAB "" /* scrape() takes env="test" out */

/* The number of samples Prometheus holds of every eventring_ series
 * (count_over_time would drop the names and merge the series): those of
 * a range selector's matrix, each series's "values":[[t,"v"],[t,"v"]]. */
static double stored_samples(int pport) {
  char *resp = query_body(pport, "{__name__=~\"eventring_.+\"}[1h]");
  if (!resp) return -1;
  double n = 0;
  for (const char *p = resp; (p = strstr(p, "\"values\":[")); p++) n++;
  for (const char *p = resp; (p = strstr(p, "\"],[")); p++) n++;
  free(resp);
  return n;
}

/* Once the queue is empty and the exporter's counts hold still across a
 * query of Prometheus: Prometheus holds exactly the samples the exporter
 * says were sent, and every sample collected was sent, or counted as
 * dropped or rejected.  Returns the samples sent. */
static double check_all_arrived(int port, int pport) {
  double end = er_now() + ER_RUN_TIMEOUT;
  for (;;) {
    double c1 = scraped(port, RW_COLLECTED RW_LAB);
    double s1 = scraped(port, RW_SENT RW_LAB);
    double q = scraped(port, RW_QUEUED RW_LAB);
    double d = scraped(port, RW_DROPPED RW_LAB);
    double r = scraped(port, "eventring_remote_write_rejected_samples_total");
    double p = stored_samples(pport);
    double s2 = scraped(port, RW_SENT RW_LAB);
    double c2 = scraped(port, RW_COLLECTED RW_LAB);
    if (q == 0 && s1 == s2 && c1 == c2 && s1 > 0) {
      ck_assert_msg(p == s1, "Prometheus holds %g samples, %g were sent", p,
                    s1);
      ck_assert_msg(c1 == s1 + d + r, "%g samples collected, %g sent, %g "
                    "dropped, %g rejected", c1, s1, d, r);
      return s1;
    }
    ck_assert_msg(er_now() < end, "the queue did not empty (%g queued)", q);
    er_sleep_ms(20);
  }
}

/* The series pushed are those scraped, with the same values, and the
 * values are those of the file; then the receiver goes away for a while
 * and comes back, and nothing was lost. */
START_TEST(test_remote_write) {
  struct prom_files pf;
  const char *skip = prom_files_make(&pf);
  if (skip) ER_SKIP(skip);
  const char *prom = pf.prom, *found;
  char *d = pf.d, *log = pf.log, *plog = pf.plog, *cfg = pf.cfg;
  char *data = pf.data, url[128];
  remote_write_config(cfg);
  int pport = free_port();
  struct er_pipe_proc p =
      start_prometheus(prom, cfg, data, pport, plog, RECEIVER, NULL);

  /* A writer done with its rounds, pushed every 0.5 s. */
  struct er_pipe_proc w = start_writer(d, NULL);
  char pid[16];
  snprintf(pid, sizeof pid, "%ld", (long)w.pid);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/api/v1/write", pport);
  common_labels = ",env=\"test\"";
  char *args[] = {"--pid", pid, "--dir", d, "--remote-write", url,
                  "--push-interval", "500ms", "--push-timeout", "5s",
                  "--label", "env=test", NULL};
  int port;
  struct er_pipe_proc e = start_exporter(args, log, &port, 0);
  char *body = scrape_rounds(port, w.pid);
  check_values(body, w.pid, "mon_writer");
  free(body);

  /* Every series, but the pusher's own (which move), is in Prometheus
   * with the value scraped, once a push has carried them all. */
  char why[1024] = "", sel[128];
  snprintf(sel, sizeof sel,
           "{__name__=~\"eventring_.+\",__name__!~\"eventring_remote_write_.+\"}");
  double end = er_now() + ER_RUN_TIMEOUT;
  int same = 0, nseries = 0;
  while (!same && er_now() < end) {
    struct series_set a = {0}, b = {0};
    char *raw = scrape_raw(port);
    ss_from_text(&a, raw, "eventring_remote_write_");
    free(raw);
    char *resp = query_body(pport, sel);
    if (resp) ss_from_query(&b, resp);
    free(resp);
    same = ss_equal(&a, &b, why, sizeof why);
    nseries = a.n;
    ss_free(&a);
    ss_free(&b);
    if (!same) er_sleep_ms(100);
  }
  ck_assert_msg(same, "pushed and scraped series differ: %s", why);
  ck_assert_int_gt(nseries, 100);
  /* The labels of a fleet, in Prometheus. */
  char q[512];
  double v;
  snprintf(q, sizeof q,
           "eventring_runtime_minor_allocated{host=\"%s\",env=\"test\","
           "pid=\"%s\",program=\"mon_writer\",domain=\"0\"}",
           host_name(), pid);
  ck_assert_msg(query(pport, q, &v, why, sizeof why), "%s: %s", q, why);
  ck_assert_double_eq(v, 4242);
  ck_assert_double_eq(scraped(port, RW_DROPPED RW_LAB), 0);
  /* With the labels of a fleet, the exposition is one Prometheus's linter
   * accepts. */
  found = find_program("promtool");
  if (found) {
    char *raw = scrape_raw(port);
    promtool_check(found, d, raw);
    free(raw);
  }

  /* The receiver goes away: pushes fail (counted by the exporter) and
   * queue up; it comes back on the same port and storage, and every
   * sample queued meanwhile arrives. */
  kill(p.pid, SIGTERM);
  int st = er_pipe_finish(&p, 30);
  ck_assert_msg(st != -1, "prometheus did not stop");
  double failed = scraped(port, RW_FAILED RW_LAB);
  double queued0 = scraped(port, RW_QUEUED RW_LAB);
  scrape_at_least(port, RW_FAILED RW_LAB, failed + 3);
  ck_assert_double_gt(scrape_at_least(port, RW_QUEUED RW_LAB, queued0 + 1),
                      0);
  snprintf(pf.plog, sizeof pf.plog, "%s/prometheus-again.log", d);
  p = start_prometheus(prom, cfg, data, pport, plog, RECEIVER, NULL);
  double sent = check_all_arrived(port, pport);
  ck_assert_double_eq(scraped(port, RW_DROPPED RW_LAB), 0);
  ck_assert_double_eq(scraped(port, "eventring_remote_write_rejected_samples_total" RW_LAB), 0);
  ck_assert_double_ge(scraped(port, RW_COLLECTED RW_LAB), sent);

  kill(p.pid, SIGTERM);
  er_pipe_finish(&p, 30);
  er_pipe_finish(&w, 10);
  st = er_pipe_finish(&e, 30);
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "exporter status %d", st);
  nftw(data, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
END_TEST

/* The number of sample lines of a scrape: the samples of one push. */
static int sample_lines(const char *body) {
  int n = 0;
  for (const char *l = body; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : "")
    if (*l != '#' && *l != '\n') n++;
  return n;
}

/* A queue too small for the receiver's absence: what does not fit is
 * dropped and counted, exactly; what fits arrives when it comes. */
START_TEST(test_remote_write_queue) {
  struct prom_files pf;
  const char *skip = prom_files_make(&pf);
  if (skip) ER_SKIP(skip);
  const char *prom = pf.prom;
  char *d = pf.d, *log = pf.log, *plog = pf.plog, *cfg = pf.cfg;
  char *data = pf.data, url[128];
  remote_write_config(cfg);
  /* Nothing listens there yet. */
  int pport = free_port();
  snprintf(url, sizeof url, "http://127.0.0.1:%d/api/v1/write", pport);

  struct er_pipe_proc w = start_writer(d, NULL);
  char pid[16];
  snprintf(pid, sizeof pid, "%ld", (long)w.pid);
  common_labels = ",env=\"test\"";
  /* A push holds the series a scrape shows, n samples: a first exporter
   * says how many, once it has read the writer's rounds (their number
   * no longer changes then). */
  char qs[32] = "1000000";
  char *args[] = {"--pid", pid, "--dir", d, "--remote-write", url,
                  "--push-interval", "500ms", "--queue-size", qs,
                  "--label", "env=test", NULL};
  int port;
  struct er_pipe_proc e = start_exporter(args, log, &port, 0);
  char *body = scrape_rounds(port, w.pid);
  free(body);
  body = scrape_raw(port);
  int n = sample_lines(body);
  free(body);
  kill(e.pid, SIGTERM);
  er_pipe_finish(&e, 30);
  /* Room for two pushes, not three. */
  int queue = 2 * n + n / 2;
  snprintf(qs, sizeof qs, "%d", queue);
  snprintf(pf.log, sizeof pf.log, "%s/exporter-again.log", d);
  e = start_exporter(args, log, &port, 0);
  body = scrape_rounds(port, w.pid);
  ck_assert_int_eq(sample_lines(body), n);
  free(body);

  /* Until three pushes' worth were dropped: the queue holds the two
   * newest, and every other sample collected was dropped. */
  scrape_at_least(port, RW_DROPPED RW_LAB, 3.0 * n);
  double collected, dropped, queued, again;
  do {
    collected = scraped(port, RW_COLLECTED RW_LAB);
    dropped = scraped(port, RW_DROPPED RW_LAB);
    queued = scraped(port, RW_QUEUED RW_LAB);
    again = scraped(port, RW_COLLECTED RW_LAB);
  } while (again != collected); /* a push between two reads */
  ck_assert_double_eq(queued, 2.0 * n);
  ck_assert_double_eq(dropped, collected - queued);
  ck_assert_double_eq(scraped(port, RW_SENT RW_LAB), 0);

  /* The receiver comes: what was queued arrives; Prometheus holds every
   * sample collected but those counted as dropped. */
  struct er_pipe_proc p =
      start_prometheus(prom, cfg, data, pport, plog, RECEIVER, NULL);
  double sent = check_all_arrived(port, pport);
  do {
    collected = scraped(port, RW_COLLECTED RW_LAB);
    dropped = scraped(port, RW_DROPPED RW_LAB);
    queued = scraped(port, RW_QUEUED RW_LAB);
    sent = scraped(port, RW_SENT RW_LAB);
    again = scraped(port, RW_COLLECTED RW_LAB);
  } while (again != collected);
  ck_assert_double_eq(collected, sent + dropped + queued);
  ck_assert_double_ge(dropped, 3.0 * n);

  kill(p.pid, SIGTERM);
  er_pipe_finish(&p, 30);
  er_pipe_finish(&w, 10);
  int st = er_pipe_finish(&e, 30);
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "exporter status %d", st);
  nftw(data, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
END_TEST

/* In a response of query_exemplars, the exemplar snapshot="id": the
 * labels of its series (the JSON object, into `series`), its value and
 * its time in milliseconds.  Returns 0 when it is not there. */
static int exemplar_of(const char *body, const char *id, char *series,
                       size_t n, double *value, int64_t *ms) {
  char lab[300];
  snprintf(lab, sizeof lab, "\"labels\":{\"snapshot\":\"%s\"}", id);
  const char *x = strstr(body, lab), *sl = NULL;
  if (!x) return 0;
  for (const char *p = body; (p = strstr(p, "\"seriesLabels\":{")) && p < x;
       p++)
    sl = p;
  const char *v = strstr(x, "\"value\":\""), *t = strstr(x, "\"timestamp\":");
  ck_assert_msg(sl && v && t, "exemplar %s: %s", id, body);
  snprintf(series, n, "%.*s", (int)(strchr(sl, '}') - sl + 1), sl);
  *value = strtod(v + strlen("\"value\":\""), NULL);
  *ms = (int64_t)(strtod(t + strlen("\"timestamp\":"), NULL) * 1000 + 0.5);
  return 1;
}

/* How many times `id` is among the exemplars of `body`. */
static int exemplar_count(const char *body, const char *id) {
  char lab[300];
  int k = 0;
  snprintf(lab, sizeof lab, "\"labels\":{\"snapshot\":\"%s\"}", id);
  for (const char *p = body; (p = strstr(p, lab)); p++) k++;
  return k;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Exemplars pushed: an exporter that only pushes (no --listen) follows
 * watch's log, and the snapshot of a live pause arrives in Prometheus's
 * exemplar storage on the pause's bucket series, with its value and
 * wall time; a snapshot of a file without a wall clock gets the time the
 * exporter read it; and exemplars, which every push carries again, are
 * stored once each. */
#define HAND_ID "handmade.events"
START_TEST(test_remote_write_exemplars) {
  struct prom_files pf;
  const char *skip = prom_files_make(&pf);
  if (skip) ER_SKIP(skip);
  char *d = pf.d, wlog[128], jlog[128], url[128], hand[512];
  snprintf(wlog, sizeof wlog, "%s/watch.err", d);
  snprintf(jlog, sizeof jlog, "%s/watch.json", d);
  remote_write_config(pf.cfg);
  int pport = free_port();
  struct er_pipe_proc p = start_prometheus(pf.prom, pf.cfg, pf.data, pport,
                                           pf.plog, RECEIVER, EXEMPLARS);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/api/v1/write", pport);

  struct er_pipe_proc w = start_writer(d, "live");
  char pid[16];
  snprintf(pid, sizeof pid, "%ld", (long)w.pid);
  /* Before watch's lines, one as watch writes it for a file without a
   * wall clock (no wall_time_ns): a 3 s pause, in the bucket le="5" that
   * no pause of the writer reaches. */
  snprintf(hand, sizeof hand,
           "{\"event\":\"snapshot\",\"snapshot\":\"%s/" HAND_ID "\","
           "\"source\":\"pause\",\"pid\":%s,\"value_ns\":3000000000}\n",
           d, pid);
  er_write_text(jlog, hand, 1);
  char *wargv[] = {(char *)tool_path(), "watch", "--pid", pid, "--dir", d,
                   "--when", "pause>1ms", "--before", "100ms", "--after",
                   "10ms", "--max", "1", "-o", d, "--log", jlog,
                   "--log-format", "json", NULL};
  struct er_pipe_proc wt = er_pipe_start(wargv, NULL, wlog);
  int64_t started_ms = now_ms();
  char *eargv[] = {(char *)tool_path(), "metrics", "--pid", pid, "--dir", d,
                   "--remote-write", url, "--push-interval", "200ms",
                   "--exemplars", jlog, NULL};
  struct er_pipe_proc e = er_pipe_start(eargv, NULL, pf.log);

  char line[4096], snap[PATH_MAX];
  first_snapshot(jlog, line, sizeof line);
  line_str(line, "snapshot", snap, sizeof snap);
  uint64_t value = line_u64(line, "value_ns");
  uint64_t wall = line_u64(line, "wall_time_ns");
  const char *id = strrchr(snap, '/') + 1;

  /* Until Prometheus holds both (bounded). */
  uint64_t now_s = (uint64_t)time(NULL);
  char *body = NULL;
  int64_t found_ms = 0;
  double end = er_now() + ER_RUN_TIMEOUT;
  for (;;) {
    int st;
    ck_assert_msg(waitpid(p.pid, &st, WNOHANG) == 0,
                  "prometheus exited (see %s)", pf.plog);
    ck_assert_msg(waitpid(e.pid, &st, WNOHANG) == 0,
                  "the exporter exited, status %d (see %s)", st, pf.log);
    body = query_exemplars(pport, "eventring_gc_pause_seconds_bucket",
                           now_s - 3600, now_s + 3600);
    found_ms = now_ms();
    if (body && exemplar_count(body, id) && exemplar_count(body, HAND_ID))
      break;
    ck_assert_msg(er_now() < end, "no exemplars %s and " HAND_ID
                  " in Prometheus: %s", id, body ? body : "(no answer)");
    free(body);
    er_sleep_ms(100);
  }

  /* The snapshot's, on its bucket (2 ms or more) of the writer's
   * series, with its value and its wall time to the millisecond. */
  char series[1024], want[64], le[64];
  double v;
  int64_t ms;
  ck_assert(exemplar_of(body, id, series, sizeof series, &v, &ms));
  snprintf(want, sizeof want, "\"pid\":\"%s\"", pid);
  snprintf(le, sizeof le, "\"le\":\"%s\"", le_of(value));
  ck_assert_msg(strstr(series, le) && strstr(series, want) &&
                    strstr(series, "\"program\":\"mon_writer\""),
                "series of %s: %s", id, series);
  ck_assert_double_eq(v, (double)value / 1e9);
  ck_assert_int_eq(ms, (int64_t)(wall / 1000000u));
  /* The one without a wall clock: read by the exporter after it started,
   * before Prometheus showed it. */
  ck_assert(exemplar_of(body, HAND_ID, series, sizeof series, &v, &ms));
  ck_assert_msg(strstr(series, "\"le\":\"5\"") && strstr(series, want),
                "series of " HAND_ID ": %s", series);
  ck_assert_double_eq(v, 3.0);
  ck_assert_msg(ms >= started_ms && ms <= found_ms,
                HAND_ID " at %" PRId64 ", not in [%" PRId64 ", %" PRId64 "]",
                ms, started_ms, found_ms);
  free(body);

  /* Three pushes later (Prometheus holds three more samples of a series
   * pushed every time), each exemplar is still stored once. */
  char q[256];
  double n0 = 0, n = 0;
  snprintf(q, sizeof q,
           "sum(count_over_time(eventring_events_read_total{pid=\"%s\"}[1h]))",
           pid);
  ck_assert_msg(query(pport, q, &n0, NULL, 0), "%s", q);
  end = er_now() + ER_RUN_TIMEOUT;
  while (!query(pport, q, &n, NULL, 0) || n < n0 + 3) {
    ck_assert_msg(er_now() < end, "no pushes arrive (%g samples, then %g)",
                  n0, n);
    er_sleep_ms(100);
  }
  body = query_exemplars(pport, "eventring_gc_pause_seconds_bucket",
                         now_s - 3600, now_s + 3600);
  ck_assert_ptr_nonnull(body);
  ck_assert_int_eq(exemplar_count(body, id), 1);
  ck_assert_int_eq(exemplar_count(body, HAND_ID), 1);
  free(body);

  kill(p.pid, SIGTERM);
  er_pipe_finish(&p, 30);
  er_pipe_finish(&w, 10);
  er_pipe_finish(&wt, 10);
  int st = er_pipe_finish(&e, 30);
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "exporter status %d", st);
  nftw(pf.data, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
END_TEST

/* ------------------------------------------------------------------ */
/* promtool: what Prometheus's linter says about a scrape.              */

/* Runs `promtool check metrics` on `body` (in a file of `dir`, left
 * there when the check fails): it must exit 0 and say nothing (it prints
 * one line per problem). */
static void promtool_check(const char *promtool, const char *dir,
                           const char *body) {
  char in[PATH_MAX];
  snprintf(in, sizeof in, "%s/scrape.txt", dir);
  FILE *f = fopen(in, "w");
  ck_assert_msg(f && fputs(body, f) >= 0 && fclose(f) == 0, "%s: %s", in,
                strerror(errno));
  int fd = open(in, O_RDONLY | O_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  const char *args[] = {"check", "metrics", NULL};
  char outp[PATH_MAX], errp[PATH_MAX];
  pid_t pid = er_start(dir, promtool, args, fd, NULL, 0, outp, errp);
  close(fd);
  struct er_run r = er_finish(pid, outp, errp, 30);
  ck_assert_msg(r.status != -1 && WIFEXITED(r.status) &&
                    WEXITSTATUS(r.status) == 0 && !r.out[0] && !r.err[0],
                "promtool check metrics %s: status %d, said:\n%.1000s%.1000s",
                in, r.status, r.out, r.err);
  er_run_free(&r);
  unlink(in);
}

/* An OCaml 5 style file whose names break Prometheus's naming rules as
 * they are: the runtime counter major_work_counter (a type in its name),
 * user ints named in camelCase, with a type word and a ':', and ending in
 * _total; and pauses among the markers of OCaml 4.13's GC hooks (empty
 * outermost major_gc_phase_change spans), which are no pauses. */
static void craft_badly_named(const char *path) {
  struct craft c;
  craft_init(&c);
  craft_user_name(&c, 0, "reqCount");
  craft_user_name(&c, 1, "queue.counter:gauge");
  craft_user_name(&c, 2, "hits_total");
  craft_user_name(&c, 3, "done");
  uint64_t ts = 1000000;
  craft_lifecycle(&c, 0, ts, EVENTRING_LIFECYCLE_RING_START, 1);
  craft_counter(&c, 0, ts + 10, 22 /* major_work_counter */, 77);
  craft_counter(&c, 0, ts + 20, CT_MINOR_ALLOCATED, 88);
  for (int i = 0; i < 3; i++) {
    ts = craft_pause(&c, 0, ts + 1000, 500000);
    craft_begin(&c, 0, ts + 100, PH_MAJOR_GC_PHASE_CHANGE);
    craft_end(&c, 0, ts + 110, PH_MAJOR_GC_PHASE_CHANGE);
  }
  craft_user_int(&c, 0, ts + 200, 0, 5);
  craft_user_int(&c, 0, ts + 210, 1, 6);
  craft_user_int(&c, 0, ts + 220, 2, 7);
  craft_user_unit(&c, 0, ts + 230, 3);
  craft_write(&c, path);
  craft_free(&c);
}

/* A file caught while its writer makes it (the version word, stored
 * last through the writer's mapping, still zero) is read once complete,
 * even though completing it changed neither its size nor its
 * modification time: here the version is written back and the time set
 * back as it was, after the scans have refused the file. */
START_TEST(test_dir_unfinished_file) {
  if (!progs_dir() || !tool_path()) ER_SKIP("EVENTRING_TEST_PROGS/TOOL unset");
  char d[PATH_MAX], path[PATH_MAX], log[PATH_MAX];
  snprintf(d, sizeof d, "%s", er_tmpdir()); /* its buffer is reused */
  snprintf(path, sizeof path, "%s/2000000001.events", d);
  snprintf(log, sizeof log, "%s/exporter.log", er_tmpdir());
  craft_badly_named(path);
  int fd = open(path, O_RDWR);
  ck_assert_int_ge(fd, 0);
  uint64_t version, zero = 0;
  ck_assert_int_eq(pread(fd, &version, 8, 0), 8);
  ck_assert_uint_ne(version, 0);
  ck_assert_int_eq(pwrite(fd, &zero, 8, 0), 8);
  struct stat st;
  ck_assert_int_eq(fstat(fd, &st), 0);

  char *args[] = {"--dir", d, NULL};
  int port;
  struct er_pipe_proc e = start_exporter(args, log, &port, 0);
  /* Refused at three scans in a row, which the log says. */
  double end = er_now() + ER_RUN_TIMEOUT;
  char *text = NULL;
  for (;;) {
    free(text);
    text = er_slurp(log, NULL);
    if ((text && strstr(text, "not complete yet")) || er_now() > end) break;
    er_sleep_ms(50);
  }
  ck_assert_msg(text && strstr(text, "2000000001.events: its header is not "
                                     "complete yet (looked at again later)"),
                "the exporter said: %.500s", text ? text : "(nothing)");
  free(text);

  ck_assert_int_eq(pwrite(fd, &version, 8, 0), 8);
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  ck_assert_int_eq(futimens(fd, times), 0);
  close(fd);
  const char *series =
      "eventring_user_done_total{pid=\"2000000001\",program=\"\","
      "event=\"done\"}";
  char *body = scrape_until(port, series, 1);
  ck_assert_double_eq(need(body, series), 1);
  free(body);
  kill(e.pid, SIGTERM);
  er_pipe_finish(&e, 10);
}
END_TEST

/* `promtool check metrics` finds no problem in what the exporter serves,
 * with --pid (an eventring file: lost events, a live program's name) and
 * with --dir (an eventring file and an OCaml 5 one: lost ring words, and
 * names that had to be made to follow the rules, as the manual says). */
START_TEST(test_promtool) {
  if (!progs_dir() || !tool_path()) ER_SKIP("EVENTRING_TEST_PROGS/TOOL unset");
  const char *found = find_program("promtool");
  if (!found) ER_SKIP("promtool is not installed (Debian: prometheus)");
  char promtool[PATH_MAX];
  snprintf(promtool, sizeof promtool, "%s", found);
  char d[64], ld[64], log[128], s[512];
  snprintf(d, sizeof d, "%s", er_tmpdir());
  /* Logs and promtool's files go elsewhere: d holds ring files only. */
  snprintf(ld, sizeof ld, "%s", er_tmpdir());
  snprintf(log, sizeof log, "%s/exporter.log", ld);

  struct er_pipe_proc w = start_writer(d, NULL);
  char pid[16];
  snprintf(pid, sizeof pid, "%ld", (long)w.pid);
  char *pargs[] = {"--pid", pid, "--dir", d, NULL};
  int port;
  struct er_pipe_proc e = start_exporter(pargs, log, &port, 0);
  char *body = scrape_rounds(port, atol(pid));
  check_values(body, w.pid, "mon_writer");
  promtool_check(promtool, ld, body);
  free(body);
  kill(e.pid, SIGTERM);
  er_pipe_finish(&e, 10);

  /* A pid that no process has: the file is read all the same. */
  char crafted[PATH_MAX];
  snprintf(crafted, sizeof crafted, "%s/2000000000.events", d);
  craft_badly_named(crafted);
  char *dargs[] = {"--dir", d, NULL};
  /* A log of its own: the first one has the first exporter's port. */
  snprintf(log, sizeof log, "%s/exporter-dir.log", ld);
  e = start_exporter(dargs, log, &port, 0);
  /* The exporter reads the directory's files one after the other: wait
   * for the writer's last round as well as for the crafted file, or the
   * page may hold only one of them. */
  free(scrape_rounds(port, atol(pid)));
  const char *lab = "pid=\"2000000000\",program=\"\"";
  snprintf(s, sizeof s, "eventring_user_done_total{%s,event=\"done\"}", lab);
  body = scrape_until(port, s, 1);
  check_format(body);
  check_values(body, w.pid, "mon_writer");
  promtool_check(promtool, ld, body);
  ck_assert_ptr_nonnull(strstr(body, "# TYPE eventring_lost_ring_words_total counter\n"));
  snprintf(s, sizeof s, "eventring_runtime_major_work_counters{%s,domain=\"0\"}", lab);
  ck_assert_double_eq(need(body, s), 77);
  snprintf(s, sizeof s, "eventring_runtime_minor_allocated{%s,domain=\"0\"}", lab);
  ck_assert_double_eq(need(body, s), 88);
  snprintf(s, sizeof s,
           "eventring_user_reqcount{%s,event=\"reqCount\",domain=\"0\"}", lab);
  ck_assert_double_eq(need(body, s), 5);
  snprintf(s, sizeof s,
           "eventring_user_queue_counters_gauges{%s,event=\"queue.counter:gauge\","
           "domain=\"0\"}", lab);
  ck_assert_double_eq(need(body, s), 6);
  snprintf(s, sizeof s,
           "eventring_user_hits_total_value{%s,event=\"hits_total\",domain=\"0\"}",
           lab);
  ck_assert_double_eq(need(body, s), 7);
  /* Three pauses of 500 us; the markers are not among them. */
  snprintf(s, sizeof s, "eventring_gc_pause_seconds_count{%s}", lab);
  ck_assert_double_eq(need(body, s), 3);
  snprintf(s, sizeof s, "eventring_gc_pause_seconds_bucket{%s,le=\"0.00025\"}", lab);
  ck_assert_double_eq(need(body, s), 0);
  snprintf(s, sizeof s,
           "eventring_gc_phase_seconds_count{%s,phase=\"major_gc_phase_change\"}",
           lab);
  ck_assert_double_eq(need(body, s), 3);
  free(body);

  er_pipe_finish(&w, 10);
  kill(e.pid, SIGTERM);
  er_pipe_finish(&e, 10);
}
END_TEST

/* Events whose names clean alike, of one type or of several, in one
 * process or in two, are all exported: a span r (r_seconds) beside an
 * int r_seconds (r_seconds_value), an int r beside an int R (one family,
 * the label event tells them apart), a unit y (y_total) beside an int
 * y_total (y_total_value).  The old exporter dropped every family but
 * the first of a name, so one process could hide another's. */
START_TEST(test_name_collisions) {
  if (!progs_dir() || !tool_path()) ER_SKIP("EVENTRING_TEST_PROGS/TOOL unset");
  const char *found = find_program("promtool");
  if (!found) ER_SKIP("promtool is not installed (Debian: prometheus)");
  char promtool[PATH_MAX];
  snprintf(promtool, sizeof promtool, "%s", found);
  char d[64], ld[64], log[128], s[512];
  snprintf(d, sizeof d, "%s", er_tmpdir());
  snprintf(ld, sizeof ld, "%s", er_tmpdir());
  snprintf(log, sizeof log, "%s/exporter.log", ld);
  char *args[] = {"--dir", d, NULL};
  int port;
  struct er_pipe_proc e = start_exporter(args, log, &port, 0);
  struct er_pipe_proc a = start_script(d), b = start_script(d);
  ck_assert_int_eq(say(&a, "reg span r"), 0);
  ck_assert_int_eq(say(&a, "reg int R"), 1);
  ck_assert_int_eq(say(&a, "reg unit y"), 2);
  ck_assert_int_eq(say(&b, "reg int r_seconds"), 0);
  ck_assert_int_eq(say(&b, "reg int r"), 1);
  ck_assert_int_eq(say(&b, "reg int y_total"), 2);
  ck_assert_int_eq(say(&a, "start"), 0);
  ck_assert_int_eq(say(&b, "start"), 0);
  say(&a, "span 0");
  say(&a, "int 1 11");
  say(&a, "unit 2 3");
  say(&b, "int 0 21");
  say(&b, "int 1 22");
  say(&b, "int 2 23");
  char la[96], lb[96];
  snprintf(la, sizeof la, "pid=\"%ld\",program=\"script_writer\"", (long)a.pid);
  snprintf(lb, sizeof lb, "pid=\"%ld\",program=\"script_writer\"", (long)b.pid);
  /* Each writer's last event read: the exporter reads the two files in
   * its own order and in batches, so that one writer's last sample in a
   * scrape says nothing of the other's (a scrape once came after all of
   * b's events and none of a's).  Samples only grow, so a's stays. */
  snprintf(s, sizeof s, "eventring_user_y_total{%s,event=\"y\"}", la);
  free(scrape_until(port, s, 3));
  snprintf(s, sizeof s, "eventring_user_y_total_value{%s,event=\"y_total\","
           "domain=\"0\"}", lb);
  char *body = scrape_until(port, s, 23);
  check_format(body);
  snprintf(s, sizeof s, "eventring_user_r_seconds_value{%s,event=\"r_seconds\","
           "domain=\"0\"}", lb);
  promtool_check(promtool, ld, body);
  ck_assert_double_eq(need(body, s), 21);
  snprintf(s, sizeof s, "eventring_user_r_seconds_count{%s,event=\"r\"}", la);
  ck_assert_double_eq(need(body, s), 1);
  snprintf(s, sizeof s, "eventring_user_r{%s,event=\"R\",domain=\"0\"}", la);
  ck_assert_double_eq(need(body, s), 11);
  snprintf(s, sizeof s, "eventring_user_r{%s,event=\"r\",domain=\"0\"}", lb);
  ck_assert_double_eq(need(body, s), 22);
  snprintf(s, sizeof s, "eventring_user_y_total{%s,event=\"y\"}", la);
  ck_assert_double_eq(need(body, s), 3);
  snprintf(s, sizeof s, "eventring_user_y_total_value{%s,event=\"y_total\","
           "domain=\"0\"}", lb);
  ck_assert_double_eq(need(body, s), 23);
  ck_assert_ptr_nonnull(strstr(body, "# TYPE eventring_user_r_seconds histogram\n"));
  ck_assert_ptr_nonnull(strstr(body, "# TYPE eventring_user_r_seconds_value gauge\n"));
  free(body);
  er_pipe_finish(&a, 10);
  er_pipe_finish(&b, 10);
  kill(e.pid, SIGTERM);
  er_pipe_finish(&e, 10);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Limits: idle connections, directories of many files, few descriptors. */

#define IDLE_OTHER 100 /* idle connections from another address */
#define IDLE_SAME 8    /* and from the scraper's own */

/* A TCP connection to 127.0.0.1:port from `src` (an address of the
 * loopback network) that never sends a byte; -1 when `src` cannot be
 * bound.  The connection may still be in the server's backlog. */
static int idle_connection(const char *src, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  inet_pton(AF_INET, src, &a.sin_addr);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int r = connect(fd, (struct sockaddr *)&to, sizeof to);
  ck_assert_msg(r == 0 || errno == EINPROGRESS, "connect from %s: %s", src,
                strerror(errno));
  /* Wait (boundedly) for the handshake, so that the server has them all
   * before the scrape. */
  struct pollfd p = {fd, POLLOUT, 0};
  poll(&p, 1, 1000);
  return fd;
}

/* Idle connections, more than the server's old limit of 64, do not keep
 * a scrape waiting: the one from another address is answered while they
 * stay open (http_get gives up after 5 s; the old server made it wait for
 * its 10 s timeout). */
START_TEST(test_idle_connections) {
  if (!tool_path()) ER_SKIP("EVENTRING_TEST_TOOL unset");
  const char *dir = er_tmpdir();
  char d[64], log[128];
  snprintf(d, sizeof d, "%s", dir);
  snprintf(log, sizeof log, "%s/exporter.log", er_tmpdir());
  char *args[] = {"--dir", d, NULL};
  int port;
  struct er_pipe_proc e = start_exporter(args, log, &port, 0);
  int fds[IDLE_OTHER + IDLE_SAME];
  for (int i = 0; i < IDLE_OTHER; i++) {
    fds[i] = idle_connection("127.0.0.2", port);
    if (fds[i] < 0) ER_SKIP("cannot bind 127.0.0.2 (no loopback network)");
  }
  for (int i = 0; i < IDLE_SAME; i++)
    fds[IDLE_OTHER + i] = idle_connection("127.0.0.1", port);
  for (int round = 0; round < 3; round++) {
    char *body = scrape(port);
    ck_assert_double_eq(need(body, "eventring_rings"), 0);
    free(body);
  }
  for (int i = 0; i < IDLE_OTHER + IDLE_SAME; i++) close(fds[i]);
  kill(e.pid, SIGTERM);
  int es = er_pipe_finish(&e, 10);
  ck_assert_msg(es != -1 && WIFEXITED(es) && WEXITSTATUS(es) == 128 + SIGTERM,
                "exporter status %d", es);
}
END_TEST

#define SLOW_CONNECTIONS 16 /* the exporter's limit for one address */

/* Connections that send their headers one byte at a time hold the
 * exporter's every slot for their address, whatever the idle timeout
 * (each byte restarts it): the header deadline (--header-timeout) cuts
 * them, after which a scrape from that address is answered.  This test
 * is the slow client: it sends a byte on each connection every 200 ms
 * until the exporter has closed them all (bounded by 30 s; the old
 * exporter never closed them), then scrapes. */
START_TEST(test_slow_headers) {
  if (!tool_path()) ER_SKIP("EVENTRING_TEST_TOOL unset");
  char d[64], log[128];
  snprintf(d, sizeof d, "%s", er_tmpdir());
  snprintf(log, sizeof log, "%s/exporter.log", er_tmpdir());
  char *args[] = {"--dir", d, "--header-timeout", "1", NULL};
  int port;
  struct er_pipe_proc e = start_exporter(args, log, &port, 0);
  int fds[SLOW_CONNECTIONS];
  for (int i = 0; i < SLOW_CONNECTIONS; i++)
    fds[i] = idle_connection("127.0.0.1", port);
  static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  size_t sent = 0;
  int open = SLOW_CONNECTIONS;
  double end = er_now() + 30;
  while (open > 0 && er_now() < end) {
    for (int i = 0; i < SLOW_CONNECTIONS; i++) {
      if (fds[i] < 0) continue;
      char c = sent < sizeof req - 1 ? req[sent] : 'a';
      char buf[256];
      ssize_t r = recv(fds[i], buf, sizeof buf, MSG_DONTWAIT);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ||
          send(fds[i], &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        /* The exporter closed it. */
        close(fds[i]);
        fds[i] = -1;
        open--;
      }
    }
    sent++;
    er_sleep_ms(200);
  }
  ck_assert_msg(open == 0, "%d of %d slow connections still open after 30 s",
                open, SLOW_CONNECTIONS);
  char *body = scrape(port);
  ck_assert_double_eq(need(body, "eventring_rings"), 0);
  free(body);
  kill(e.pid, SIGTERM);
  int es = er_pipe_finish(&e, 10);
  ck_assert_msg(es != -1 && WIFEXITED(es) && WEXITSTATUS(es) == 128 + SIGTERM,
                "exporter status %d", es);
}
END_TEST

/* Counting a traced program's system calls on ring files, scan by scan:
 * the program runs under ptrace here, and every openat, open, stat,
 * lstat, newfstatat and statx whose path ends in ".events" counts for
 * the scan in progress; a scan starts with the opening of `dir` itself
 * (opendir).  Independent of the tool's code, as strace would be. */
#define MAX_SCANS 64
struct scan_calls {
  int nscans;               /* directory openings seen */
  int opens[MAX_SCANS + 1]; /* [k]: during scan k (0: before the first) */
  int stats[MAX_SCANS + 1];
};

static void tracee_string(pid_t t, uint64_t addr, char *buf, size_t n) {
  size_t k = 0;
  while (k + sizeof(long) < n) {
    errno = 0;
    long w = ptrace(PTRACE_PEEKDATA, t, (void *)(uintptr_t)(addr + k), NULL);
    if (errno) break;
    memcpy(buf + k, &w, sizeof w);
    if (memchr(&w, 0, sizeof w)) return;
    k += sizeof w;
  }
  buf[k] = '\0';
}

static void count_call(struct scan_calls *sc, const char *dir, pid_t t,
                       const struct __ptrace_syscall_info *in) {
  long nr = (long)in->entry.nr;
  int arg = -1, open = 0;
  if (nr == SYS_openat) arg = 1, open = 1;
  else if (nr == SYS_newfstatat || nr == SYS_statx) arg = 1;
#ifdef SYS_open
  else if (nr == SYS_open) arg = 0, open = 1;
#endif
#ifdef SYS_stat
  else if (nr == SYS_stat || nr == SYS_lstat) arg = 0;
#endif
  if (arg < 0) return;
  char path[PATH_MAX];
  tracee_string(t, in->entry.args[arg], path, sizeof path);
  size_t n = strlen(path);
  if (open && !strcmp(path, dir)) {
    if (sc->nscans < MAX_SCANS) sc->nscans++;
  } else if (n > 7 && !strcmp(path + n - 7, ".events")) {
    if (open) sc->opens[sc->nscans]++;
    else sc->stats[sc->nscans]++;
  }
}

/* How long trace_scans() waits for its scans before failing: the tool
 * scans every 250 ms, but under ptrace on a loaded machine, or a
 * sanitizer's, each scan may take far longer.  A bound, never what is
 * checked. */
#define SCANS_BOUND_S 120

/* Runs the tool with `args` (NULL-terminated, without argv[0]) under
 * ptrace, its output into `log`, until `scans` scans of `dir` have
 * started (failing after SCANS_BOUND_S), then kills it. */
static void trace_scans(char *const args[], const char *log, const char *dir,
                        int scans, struct scan_calls *sc) {
  memset(sc, 0, sizeof *sc);
  char *argv[16];
  int n = 0;
  argv[n++] = (char *)tool_path();
  for (int i = 0; args[i] && n < 15; i++) argv[n++] = args[i];
  argv[n] = NULL;
  pid_t child = fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || nul < 0) _exit(126);
    dup2(nul, 0), dup2(fd, 1), dup2(fd, 2);
    ptrace(PTRACE_TRACEME, 0, NULL, NULL);
    raise(SIGSTOP);
    execv(argv[0], argv);
    _exit(127);
  }
  int st;
  ck_assert_int_eq(waitpid(child, &st, 0), child);
  ck_assert_msg(WIFSTOPPED(st), "the tool did not stop for the tracer");
  long opts = PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE |
              PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL;
  ck_assert_int_eq(ptrace(PTRACE_SETOPTIONS, child, NULL, (void *)opts), 0);
  ptrace(PTRACE_SYSCALL, child, NULL, NULL);
  double end = er_now() + SCANS_BOUND_S;
  while (sc->nscans <= scans && er_now() < end) {
    pid_t t = waitpid(-1, &st, __WALL);
    if (t < 0) break;
    if (WIFEXITED(st) || WIFSIGNALED(st)) {
      ck_assert_msg(t != child, "the tool ended (status %d), see %s", st, log);
      continue;
    }
    int sig = WSTOPSIG(st);
    if (sig == (SIGTRAP | 0x80)) {
      struct __ptrace_syscall_info in;
      if (ptrace(PTRACE_GET_SYSCALL_INFO, t, (void *)sizeof in, &in) > 0 &&
          in.op == PTRACE_SYSCALL_INFO_ENTRY)
        count_call(sc, dir, t, &in);
      sig = 0;
    } else if (sig == SIGTRAP || sig == SIGSTOP) {
      /* Event stops (clone, exec) and new threads' first stop. */
      sig = 0;
    }
    ptrace(PTRACE_SYSCALL, t, NULL, (void *)(long)sig);
  }
  kill(child, SIGKILL);
  while (waitpid(-1, &st, __WALL) > 0) {
  }
  ck_assert_msg(sc->nscans > scans, "only %d scans of %s in %d s (see %s)",
                sc->nscans, dir, SCANS_BOUND_S, log);
}

#define EMPTY_FILES 2000
#define FIRST_EMPTY_PID 6000000 /* above any pid_max: never a live pid */

/* Files named as ring files that never become ones (empty here) cost
 * next to nothing once refused: after the first scans, a scan opens none
 * of them and looks at a small share; each is reported once.  The old
 * scan opened and lstat'ed all 2000 at every scan, four times a second,
 * and compared every name with every refused one (quadratic). */
START_TEST(test_dir_scan_cost) {
  if (!tool_path()) ER_SKIP("EVENTRING_TEST_TOOL unset");
  const char *dir = er_tmpdir();
  char d[64], log[128], path[PATH_MAX];
  snprintf(d, sizeof d, "%s", dir);
  snprintf(log, sizeof log, "%s/exporter.log", er_tmpdir());
  for (int i = 0; i < EMPTY_FILES; i++) {
    snprintf(path, sizeof path, "%s/%d.events", d, FIRST_EMPTY_PID + i);
    er_write_text(path, "", 1);
  }
  char *args[] = {"metrics", "--listen", "127.0.0.1:0", "--dir", d, NULL};
  struct scan_calls sc;
  trace_scans(args, log, d, 12, &sc);
  /* The first scan opens every file; the two after it, which try again
   * a file caught while it was being written, stat them. */
  ck_assert_int_eq(sc.opens[1], EMPTY_FILES);
  for (int k = 4; k <= 12; k++) {
    ck_assert_msg(sc.opens[k] == 0, "scan %d opened %d files", k, sc.opens[k]);
    ck_assert_msg(sc.stats[k] <= EMPTY_FILES / 16,
                  "scan %d looked at %d of %d files", k, sc.stats[k],
                  EMPTY_FILES);
  }
  /* Each refusal said once. */
  struct er_lines l = er_lines_read(log);
  int refusals = 0;
  for (size_t i = 0; i < l.n; i++)
    if (strstr(l.v[i], ".events: ") && strstr(l.v[i], "(skipped)")) refusals++;
  ck_assert_int_eq(refusals, EMPTY_FILES);
  er_lines_free(&l);
}
END_TEST

#define LOW_NOFILE 48
#define STALE_RINGS 100 /* ring files of dead processes */
#define STALE_EMPTY 100 /* and empty ones */
#define FIRST_STALE_PID 5000000

/* More files than descriptors: the exporter keeps none for files that
 * are not ring files or whose process is dead, so a live process's file
 * is read, and each refusal is reported once. */
START_TEST(test_few_descriptors) {
  if (!progs_dir() || !tool_path()) ER_SKIP("EVENTRING_TEST_PROGS/TOOL unset");
  const char *dir = er_tmpdir();
  char d[64], log[128], path[PATH_MAX];
  snprintf(d, sizeof d, "%s", dir);
  snprintf(log, sizeof log, "%s/exporter.log", er_tmpdir());
  for (int i = 0; i < STALE_RINGS; i++) {
    snprintf(path, sizeof path, "%s/%d.events", d, FIRST_STALE_PID + i);
    er_craft_small(path, 1, 2);
  }
  for (int i = 0; i < STALE_EMPTY; i++) {
    snprintf(path, sizeof path, "%s/%d.events", d, FIRST_EMPTY_PID + i);
    er_write_text(path, "", 1);
  }
  /* Soft and hard: the exporter may not raise it. */
  struct rlimit rl = {LOW_NOFILE, LOW_NOFILE};
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
  char *args[] = {"--dir", d, NULL};
  int port;
  struct er_pipe_proc e = start_exporter(args, log, &port, 0);
  struct er_pipe_proc w = start_writer(d, NULL);
  char s[256];
  char *body = scrape_rounds(port, (long)w.pid);
  check_values(body, w.pid, "mon_writer");
  /* The dead processes' files were read to their end: two events each. */
  snprintf(s, sizeof s, "eventring_events_read_total{pid=\"%d\",program=\"\"}",
           FIRST_STALE_PID);
  ck_assert_double_eq(need(body, s), 2);
  free(body);
  er_pipe_finish(&w, 10);
  /* A refusal is reported after three scans: wait (boundedly) for the
   * last one, so that the count below does not depend on how fast the
   * exporter scans. */
  double end = er_now() + 30;
  for (int reported = 0; reported < STALE_EMPTY && er_now() < end;) {
    struct er_lines l = er_lines_read(log);
    reported = 0;
    for (size_t i = 0; i < l.n; i++)
      reported += strstr(l.v[i], "(skipped)") != NULL;
    er_lines_free(&l);
    if (reported < STALE_EMPTY) er_sleep_ms(50);
  }
  kill(e.pid, SIGTERM);
  int es = er_pipe_finish(&e, 10);
  ck_assert_msg(es != -1 && WIFEXITED(es) && WEXITSTATUS(es) == 128 + SIGTERM,
                "exporter status %d", es);
  /* Every empty file reported once, no ring file reported at all. */
  struct er_lines l = er_lines_read(log);
  int empty = 0;
  for (size_t i = 0; i < l.n; i++) {
    ck_assert_msg(!strstr(l.v[i], "Too many open files"), "%s", l.v[i]);
    long pid = 0;
    const char *p = strstr(l.v[i], d);
    if (p) pid = atol(p + strlen(d) + 1);
    ck_assert_msg(pid < FIRST_STALE_PID || pid >= FIRST_EMPTY_PID,
                  "a ring file reported: %s", l.v[i]);
    if (pid >= FIRST_EMPTY_PID) empty++;
  }
  ck_assert_int_eq(empty, STALE_EMPTY);
  er_lines_free(&l);
}
END_TEST

static TCase *tc_exporter(void) {
  TCase *tc = er_tcase("exporter");
  tcase_add_test(tc, test_pid_values);
  tcase_add_test(tc, test_file_labels);
  tcase_add_test(tc, test_command);
  tcase_add_test(tc, test_command_tree);
  tcase_add_test(tc, test_event_filter);
  tcase_add_test(tc, test_dir);
  tcase_add_test(tc, test_dir_unfinished_file);
  tcase_add_test(tc, test_dir_sessions);
  tcase_add_test(tc, test_usage);
  tcase_add_test(tc, test_promtool);
  tcase_add_test(tc, test_name_collisions);
  return tc;
}

static TCase *tc_limits(void) {
  TCase *tc = er_tcase("limits");
  tcase_set_timeout(tc, SCANS_BOUND_S + 30);
  tcase_add_test(tc, test_idle_connections);
  tcase_add_test(tc, test_slow_headers);
  tcase_add_test(tc, test_dir_scan_cost);
  tcase_add_test(tc, test_few_descriptors);
  return tc;
}

static TCase *tc_prometheus(void) {
  TCase *tc = er_tcase("prometheus");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, test_prometheus);
  tcase_add_test(tc, test_exemplars);
  tcase_add_test(tc, test_span_exemplar);
  tcase_add_test(tc, test_remote_write);
  tcase_add_test(tc, test_remote_write_queue);
  tcase_add_test(tc, test_remote_write_exemplars);
  return tc;
}

ER_TEST_MAIN("metrics", tc_exporter, tc_limits, tc_prometheus)
