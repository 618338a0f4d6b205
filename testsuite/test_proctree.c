/* Tests whole process trees as the `eventring` command reads them: every
 * process of `-- CMD` (children, grandchildren, forked copies, exec'd
 * programs, orphans drained after the command ended, and the drain
 * timeout), a list of files and --dir DIR, for dump, stats, latency and
 * trace (JSON and Fuchsia), and that timestamps never go back across a
 * fork or a file boundary. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cases.h"
#include "harness.h"
#include "testlib.h"
#include "tooltest.h"

#define NEED_ALL()                                                         \
  do {                                                                     \
    if (!er_tool_path()) ER_SKIP("EVENTRING_TEST_TOOL is not set");        \
    if (!er_prog_path("proc_tree")) ER_SKIP("no helper programs");         \
    if (er_tracing_off()) ER_SKIP("a build without tracing");              \
  } while (0)

static char *prog(const char *name) {
  const char *p = er_prog_path(name);
  ck_assert_ptr_nonnull(p);
  return strdup(p);
}

/* ------------------------------------------------------------------ */
/* Listings.                                                            */

/* One event line of `eventring dump`. */
struct ev {
  long pid;
  long line; /* its place in the listing */
  uint64_t ts;
  char kind[32], name[64];
  long long value;
};

struct listing {
  struct ev *v;
  size_t n;
  long pids[16]; /* the SUMMARY pid=P lines, in order */
  int npids;
  char total[1024]; /* the last SUMMARY line */
};

/* Parses a listing: lines without pid= belong to the first process. */
static struct listing parse(const char *text) {
  struct listing l;
  memset(&l, 0, sizeof l);
  struct er_lines all = er_lines_split(text);
  for (size_t i = 0; i < all.n; i++) {
    long pid;
    if (sscanf(all.v[i], "SUMMARY pid=%ld ", &pid) == 1) {
      ck_assert_int_lt(l.npids, 16);
      l.pids[l.npids++] = pid;
    } else if (!strncmp(all.v[i], "SUMMARY ", 8)) {
      snprintf(l.total, sizeof l.total, "%s", all.v[i]);
    }
  }
  l.v = calloc(all.n + 1, sizeof *l.v);
  for (size_t i = 0; i < all.n; i++) {
    const char *s = all.v[i];
    struct ev e;
    memset(&e, 0, sizeof e);
    e.pid = l.npids ? l.pids[0] : 0;
    int at = 0;
    if (sscanf(s, "pid=%ld %n", &e.pid, &at) == 1) s += at;
    char value[64] = "";
    if (sscanf(s, "domain=%*d ts=%" SCNu64 " kind=%31s name=%63s value=%63s",
               &e.ts, e.kind, e.name, value) != 4)
      continue;
    e.value = strtoll(value, NULL, 10);
    e.line = (long)i;
    l.v[l.n++] = e;
  }
  er_lines_free(&all);
  return l;
}

static size_t count(const struct listing *l, long pid, const char *name) {
  size_t n = 0;
  for (size_t i = 0; i < l->n; i++)
    n += l->v[i].pid == pid && !strcmp(l->v[i].name, name);
  return n;
}

/* The first event named `name` of process `pid` (from the `nth` one on,
 * counting its events named `name`), or NULL. */
static const struct ev *find(const struct listing *l, long pid,
                             const char *name, int nth) {
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i].pid == pid && !strcmp(l->v[i].name, name) && nth-- == 0)
      return &l->v[i];
  return NULL;
}

/* The smallest timestamp of process `pid`. */
static uint64_t first_ts(const struct listing *l, long pid) {
  uint64_t m = UINT64_MAX;
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i].pid == pid && l->v[i].ts < m) m = l->v[i].ts;
  return m;
}

/* Runs `dump -- ARGS...` and parses the listing (stderr: the command
 * keeps stdout). */
static struct listing dump_cmd(const char *dir, const char *const *cmd,
                               struct er_run *run) {
  const char *args[24] = {"dump", "--time=raw", "--"};
  int n = 3;
  for (; *cmd && n < 23; cmd++) args[n++] = *cmd;
  args[n] = NULL;
  *run = er_run_tool(dir, args, 0);
  return parse(run->err);
}

/* Every process listed wrote tree.seq 0..9 once and its tree.pid is its
 * own pid. */
static void check_work(const struct listing *l) {
  for (int p = 0; p < l->npids; p++) {
    ck_assert_uint_eq(count(l, l->pids[p], "tree.seq"),
                      l->pids[p] == l->pids[0] ? count(l, l->pids[0],
                                                       "tree.seq")
                                               : 10);
    const struct ev *e = find(l, l->pids[p], "tree.pid", 0);
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(e->value, l->pids[p]);
  }
}

/* A process forked by `parent` starts after the parent's tree.fork
 * event, on the ring's clock and on CLOCK_MONOTONIC (the value). */
static void check_after_fork(const struct listing *l, long parent, int nth,
                             long child) {
  const struct ev *f = find(l, parent, "tree.fork", nth);
  ck_assert_ptr_nonnull(f);
  uint64_t c = first_ts(l, child);
  ck_assert_msg(c >= f->ts, "child %ld starts at %" PRIu64
                ", before its parent's fork at %" PRIu64, child, c, f->ts);
  ck_assert_msg(c >= (uint64_t)f->value, "child %ld starts at %" PRIu64
                ", before the fork's clock read %lld", child, c, f->value);
}

/* What each run of the tree table checks beyond the exit status and the
 * number of processes. */

static void check_two_children(const struct listing *l,
                               const struct er_run *r) {
  ck_assert_int_ne(l->pids[0], l->pids[1]);
  ck_assert_uint_eq(count(l, l->pids[0], "tree.seq"), 10);
  ck_assert_uint_eq(count(l, l->pids[1], "tree.seq"), 10);
  check_work(l);
  ck_assert_uint_eq(er_field(l->total, "processes"), 2);
  ck_assert_uint_eq(er_field(l->total, "user_int"), 2 * (10 + 2));
  /* The second process's lines name it; the first's read as before. */
  ck_assert_ptr_nonnull(strstr(r->err, "\npid="));
}

static void check_forked(const struct listing *l, const struct er_run *r) {
  (void)r;
  check_work(l);
  ck_assert_uint_eq(count(l, l->pids[0], "tree.seq"), 10);
  ck_assert_uint_eq(count(l, l->pids[0], "tree.after"), 1);
  check_after_fork(l, l->pids[0], 0, l->pids[1]);
}

static void check_grandchild(const struct listing *l,
                             const struct er_run *r) {
  (void)r;
  check_work(l);
  ck_assert_uint_eq(count(l, l->pids[0], "tree.seq"), 10);
  /* Which is the child: the one whose tree.start comes after the first
   * process's fork and which forked itself. */
  long child = find(l, l->pids[1], "tree.fork", 0) ? l->pids[1] : l->pids[2];
  long grand = child == l->pids[1] ? l->pids[2] : l->pids[1];
  ck_assert_ptr_nonnull(find(l, child, "tree.fork", 0));
  ck_assert_ptr_null(find(l, grand, "tree.fork", 0));
  check_after_fork(l, l->pids[0], 0, child);
  check_after_fork(l, child, 0, grand);
}

/* Two images, one pid, two files: two processes. */
static void check_exec(const struct listing *l, const struct er_run *r) {
  (void)r;
  ck_assert_int_eq(l->pids[0], l->pids[1]);
  ck_assert_uint_eq(count(l, l->pids[0], "tree.seq"), 20);
  ck_assert_uint_eq(count(l, l->pids[0], "ring_start"), 2);
  ck_assert_uint_eq(er_field(l->total, "processes"), 2);
  /* The old image's file is read to its end before the new one: its
   * events come first in the listing, and their timestamps are all
   * below the new image's (the file boundary never goes back). */
  const struct ev *second = find(l, l->pids[0], "ring_start", 1);
  ck_assert_ptr_nonnull(second);
  uint64_t old_max = 0, new_min = UINT64_MAX;
  for (size_t i = 0; i < l->n; i++) {
    if (l->v[i].line < second->line) {
      if (l->v[i].ts > old_max) old_max = l->v[i].ts;
    } else if (l->v[i].ts < new_min) {
      new_min = l->v[i].ts;
    }
  }
  ck_assert_msg(old_max <= new_min,
                "the exec'd image starts at %" PRIu64
                ", before its predecessor's last event at %" PRIu64,
                new_min, old_max);
  ck_assert_uint_eq(count(l, l->pids[0], "tree.seq"), 20);
}

/* The orphan wrote its events only once the command had ended: read to
 * its end, ring_stop included. */
static void check_orphan(const struct listing *l, const struct er_run *r) {
  (void)r;
  long orphan = l->pids[1];
  ck_assert_uint_eq(count(l, orphan, "tree.seq"), 10);
  ck_assert_uint_eq(count(l, orphan, "ring_stop"), 1);
  check_after_fork(l, l->pids[0], 0, orphan);
}

/* `dump -- CMD` of a process tree: CMD's words, in which "@" stands for
 * progs/proc_tree, how many processes the listing holds, and the rest. */
static const struct tree_case {
  const char *name;
  const char *cmd[6];
  int npids;
  void (*check)(const struct listing *l, const struct er_run *r);
} tree_cases[] = {
    {"two_children", {"sh", "-c", "@ leaf & @ leaf; wait"}, 2,
     check_two_children},
    {"fork", {"@", "fork"}, 2, check_forked},
    {"grandchild", {"@", "grandchild"}, 3, check_grandchild},
    {"exec", {"@", "exec", "@", "leaf"}, 2, check_exec},
    {"orphan_drained", {"@", "orphan"}, 2, check_orphan},
};

/* `word` with each "@" replaced by `p` (malloc'd). */
static char *expand(const char *word, const char *p) {
  size_t n = strlen(word) + 1;
  for (const char *s = word; *s; s++) n += *s == '@' ? strlen(p) : 0;
  char *out = malloc(n), *o = out;
  ck_assert_ptr_nonnull(out);
  for (const char *s = word; *s; s++)
    o += *s == '@' ? (size_t)sprintf(o, "%s", p) : (size_t)(*o = *s, 1);
  *o = '\0';
  return out;
}

START_TEST(test_tree_case) {
  const struct tree_case *c = &tree_cases[_i];
  NEED_ALL();
  const char *dir = er_tmpdir();
  char *p = prog("proc_tree");
  char *cmd[7] = {NULL};
  for (int i = 0; c->cmd[i]; i++) cmd[i] = expand(c->cmd[i], p);
  struct er_run r;
  struct listing l = dump_cmd(dir, (const char *const *)cmd, &r);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 0);
  ck_assert_int_eq(l.npids, c->npids);
  c->check(&l, &r);
  free(l.v);
  er_run_free(&r);
  for (int i = 0; cmd[i]; i++) free(cmd[i]);
  free(p);
}
END_TEST

START_TEST(test_drain_timeout) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  char *p = prog("proc_tree");
  struct er_run r = er_run_tool(
      dir,
      (const char *[]){"dump", "--time=raw", "-o", "/dev/null", "--drain-timeout", "200ms",
                       "--", p, "orphan", "hang", NULL},
      0);
  /* The command's status, and one line naming the process left. */
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 0);
  er_assert_one_error(&r, "--drain-timeout");
  const char *at = strstr(r.err, "still running");
  ck_assert_ptr_nonnull(at);
  const char *pid_at = strstr(at, "pid ");
  ck_assert_ptr_nonnull(pid_at);
  long pid = strtol(pid_at + 4, NULL, 10);
  ck_assert_int_gt(pid, 1);
  ck_assert_ptr_nonnull(strstr(pid_at, "(proc_tree"));
  /* It was left running: ours to end. */
  ck_assert_int_eq(kill((pid_t)pid, 0), 0);
  kill((pid_t)pid, SIGKILL);
  er_run_free(&r);
  /* A bad duration is a usage error. */
  r = er_run_tool(dir,
                  (const char *[]){"dump", "--time=raw", "--drain-timeout", "5", "--", p,
                                   "leaf", NULL},
                  0);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
  er_run_free(&r);
  free(p);
}
END_TEST

/* ------------------------------------------------------------------ */
/* stats and latency: per process and in total.                         */

/* The number after the `nth` occurrence of `key` (e.g. "\"pauses\": "). */
static uint64_t nth_number(const char *s, const char *key, int nth) {
  const char *at = s;
  for (int i = 0; i <= nth; i++) {
    at = strstr(at, key);
    ck_assert_msg(at != NULL, "%s #%d not in %.300s", key, nth, s);
    at += strlen(key);
  }
  return strtoull(at, NULL, 10);
}

/* The entries of "processes" in a report: {"pid": N, "name": ... */
static int process_entries(const char *s) {
  int n = 0;
  for (const char *at = s; (at = strstr(at, "{\"pid\": ")) != NULL; at++) {
    char *end;
    strtol(at + 8, &end, 10);
    n += !strncmp(end, ", \"name\": ", 10);
  }
  return n;
}

static int occurrences(const char *s, const char *key) {
  int n = 0;
  for (const char *at = s; (at = strstr(at, key)) != NULL; at += strlen(key))
    n++;
  return n;
}

START_TEST(test_stats_latency_per_process) {
  NEED_ALL();
  if (!er_prog_path("lat_phases")) ER_SKIP("no lat_phases");
  const char *dir = er_tmpdir();
  char *p = prog("proc_tree"), *lat = prog("lat_phases");
  char line[2 * PATH_MAX];
  snprintf(line, sizeof line, "%s & %s fork; wait", lat, p);
  const char *cmd[] = {"sh", "-c", line, NULL};

  /* stats --json: the total, then "processes" with each one's own. */
  struct er_run r = er_run_tool(
      dir, (const char *[]){"stats", "--json", "--", cmd[0], cmd[1], cmd[2],
                            NULL},
      0);
  ck_assert_int_eq(er_exit_code(&r, "stats"), 0);
  ck_assert_ptr_nonnull(strstr(r.err, "\"processes\": ["));
  ck_assert_int_eq(process_entries(r.err), 3);
  ck_assert_int_eq(occurrences(r.err, "\"wall_ns\": "), 4);
  /* tree.seq: 10 in each proc_tree process, 20 in total, by name. */
  ck_assert_uint_eq(nth_number(r.err, "\"name\": \"tree.seq\", \"kind\": "
                                      "\"int\", \"count\": ", 0),
                    20);
  ck_assert_int_eq(occurrences(r.err, "\"name\": \"tree.seq\", \"kind\": "
                                      "\"int\", \"count\": 10}"),
                   2);
  /* Domains of the total name their process. */
  ck_assert_ptr_nonnull(strstr(r.err, "{\"pid\": "));
  uint64_t total_pauses = nth_number(r.err, "\"pauses\": ", 0);
  er_run_free(&r);

  /* stats as text: a section per process after the total. */
  r = er_run_tool(dir, (const char *[]){"stats", "--", cmd[0], cmd[1], cmd[2],
                                        NULL},
                  0);
  ck_assert_int_eq(er_exit_code(&r, "stats"), 0);
  ck_assert_ptr_nonnull(strstr(r.err, "== all 3 processes =="));
  ck_assert_int_eq(occurrences(r.err, "\n== pid "), 3);
  ck_assert_ptr_nonnull(strstr(r.err, "(lat_phases) =="));
  er_run_free(&r);

  /* latency --json: the total's pauses are the sum of the processes'. */
  r = er_run_tool(dir, (const char *[]){"latency", "--json", "--", cmd[0],
                                        cmd[1], cmd[2], NULL},
                  0);
  ck_assert_int_eq(er_exit_code(&r, "latency"), 0);
  ck_assert_int_eq(process_entries(r.err), 3);
  uint64_t all = nth_number(r.err, "\"pauses\": ", 0), sum = 0;
  for (int i = 1; i <= 3; i++) sum += nth_number(r.err, "\"pauses\": ", i);
  ck_assert_uint_gt(all, 0);
  ck_assert_uint_eq(all, sum);
  er_run_free(&r);
  /* stats counts the same pauses, though from another run. */
  ck_assert_uint_gt(total_pauses, 0);

  r = er_run_tool(dir, (const char *[]){"latency", "--", cmd[0], cmd[1],
                                        cmd[2], NULL},
                  0);
  ck_assert_int_eq(er_exit_code(&r, "latency"), 0);
  ck_assert_ptr_nonnull(strstr(r.err, "== all 3 processes =="));
  ck_assert_int_eq(occurrences(r.err, "\n== pid "), 3);
  er_run_free(&r);
  free(p);
  free(lat);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Files and --dir.                                                     */

/* Runs proc_tree MODE with its file kept in `rings`; returns its pid. */
static long write_post(const char *dir, const char *rings, const char *mode) {
  char *p = prog("proc_tree");
  setenv("OCAML_RUNTIME_EVENTS_START", "1", 1);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  setenv("OCAML_RUNTIME_EVENTS_DIR", rings, 1);
  char *argv[] = {p, (char *)mode, NULL};
  pid_t pid = er_spawn(argv, ER_FD_NULL, ER_FD_NULL, ER_FD_KEEP, NULL, 0);
  int st = er_wait_for(pid, 30);
  unsetenv("OCAML_RUNTIME_EVENTS_START");
  unsetenv("OCAML_RUNTIME_EVENTS_PRESERVE");
  unsetenv("OCAML_RUNTIME_EVENTS_DIR");
  ck_assert_msg(st == 0, "proc_tree %s: status %d", mode, st);
  free(p);
  (void)dir;
  return (long)pid;
}

/* The pids of the events of a JSON trace (one event per line), each once,
 * and whether each has a process_name; fails when a track's timestamps go
 * back. */
static int json_pids(const char *text, long *pids, int max, int *named) {
  int n = 0;
  struct { long pid, tid; uint64_t ts; } last[64];
  int nlast = 0;
  struct er_lines all = er_lines_split(text);
  for (size_t i = 0; i < all.n; i++) {
    const char *s = all.v[i], *at = strstr(s, "\"pid\":");
    if (!at) continue;
    long pid = strtol(at + 6, NULL, 10);
    int k = 0;
    while (k < n && pids[k] != pid) k++;
    if (k == n && n < max) {
      named[n] = 0;
      pids[n++] = pid;
    }
    if (strstr(s, "\"name\":\"process_name\"")) named[k] = 1;
    const char *tid_at = strstr(s, "\"tid\":"), *ts_at = strstr(s, "\"ts\":");
    if (!tid_at || !ts_at) continue;
    long tid = strtol(tid_at + 6, NULL, 10);
    char *end;
    uint64_t us = strtoull(ts_at + 5, &end, 10), ns = us * 1000;
    if (*end == '.') ns += strtoull(end + 1, NULL, 10);
    int t = 0;
    while (t < nlast && (last[t].pid != pid || last[t].tid != tid)) t++;
    if (t == nlast) {
      ck_assert_int_lt(nlast, 64);
      last[nlast].pid = pid;
      last[nlast].tid = tid;
      last[nlast++].ts = ns;
    }
    ck_assert_msg(ns >= last[t].ts, "track %ld/%ld goes back: %s", pid, tid,
                  s);
    last[t].ts = ns;
  }
  er_lines_free(&all);
  return n;
}

/* The processes of a Fuchsia trace: the koids of its process objects
 * (`pids`, whose events are counted into `events`), walking its records;
 * fails when a thread's timestamps go back. */
static int fxt_pids(const char *path, long *pids, int max, int *events) {
  size_t len;
  char *buf = er_slurp(path, &len);
  const uint64_t *w = (const uint64_t *)buf;
  size_t nw = len / 8, i = 0;
  int n = 0;
  uint64_t thread_pid[256] = {0}, thread_tid[256] = {0};
  struct { uint64_t pid, tid, ts; } last[64];
  int nlast = 0;
  while (i < nw) {
    uint64_t h = w[i];
    unsigned type = h & 15, size = (unsigned)(h >> 4) & 0xfff;
    ck_assert_uint_gt(size, 0);
    ck_assert_uint_le(i + size, nw);
    if (type == 7 && ((h >> 16) & 0xff) == 1 && n < max) {
      events[n] = 0;
      pids[n++] = (long)w[i + 1];
    } else if (type == 3) {
      unsigned idx = (h >> 16) & 0xff;
      thread_pid[idx] = w[i + 1];
      thread_tid[idx] = w[i + 2];
    } else if (type == 4) {
      unsigned ref = (h >> 24) & 0xff;
      uint64_t ts = w[i + 1];
      uint64_t pid = ref ? thread_pid[ref] : w[i + 2];
      uint64_t tid = ref ? thread_tid[ref] : w[i + 3];
      for (int k = 0; k < n; k++)
        if ((uint64_t)pids[k] == pid) events[k]++;
      int t = 0;
      while (t < nlast && (last[t].pid != pid || last[t].tid != tid)) t++;
      if (t == nlast) {
        ck_assert_int_lt(nlast, 64);
        last[nlast].pid = pid;
        last[nlast].tid = tid;
        last[nlast++].ts = ts;
      }
      ck_assert_msg(ts >= last[t].ts, "thread %" PRIu64 "/%" PRIu64
                    " goes back", pid, tid);
      last[t].ts = ts;
    }
    i += size;
  }
  free(buf);
  return n;
}

static int has_pid(const long *v, int n, long pid) {
  for (int i = 0; i < n; i++)
    if (v[i] == pid) return 1;
  return 0;
}

START_TEST(test_files_and_dir) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  char rings[PATH_MAX], a[PATH_MAX + 32], b[PATH_MAX + 32], out[PATH_MAX];
  snprintf(rings, sizeof rings, "%s/rings", dir);
  ck_assert_int_eq(mkdir(rings, 0700), 0);
  long pa = write_post(dir, rings, "leaf"), pb = write_post(dir, rings, "leaf");
  snprintf(a, sizeof a, "%s/%ld.events", rings, pa);
  snprintf(b, sizeof b, "%s/%ld.events", rings, pb);

  /* Each reporting subcommand, with --dir and with the list. */
  for (int form = 0; form < 2; form++) {
    const char *src[3] = {"--dir", rings, NULL};
    if (form) src[0] = a, src[1] = b;
    struct er_run r = er_run_tool(
        dir, (const char *[]){"dump", "--time=raw", src[0], src[1], NULL}, 0);
    er_assert_status(&r, 0);
    struct listing l = parse(r.out);
    ck_assert_int_eq(l.npids, 2);
    ck_assert(has_pid(l.pids, 2, pa) && has_pid(l.pids, 2, pb));
    ck_assert_uint_eq(count(&l, pa, "tree.seq"), 10);
    ck_assert_uint_eq(count(&l, pb, "tree.seq"), 10);
    /* Every line names its process. */
    ck_assert_int_eq(occurrences(r.out, "\ndomain="), 0);
    free(l.v);
    er_run_free(&r);

    r = er_run_tool(dir, (const char *[]){"stats", "--json", src[0], src[1],
                                          NULL},
                    0);
    er_assert_status(&r, 0);
    ck_assert_int_eq(process_entries(r.out), 2);
    ck_assert_uint_eq(nth_number(r.out, "\"name\": \"tree.seq\", \"kind\": "
                                        "\"int\", \"count\": ", 0),
                      20);
    er_run_free(&r);

    r = er_run_tool(dir, (const char *[]){"latency", "--json", src[0], src[1],
                                          NULL},
                    0);
    er_assert_status(&r, 0);
    ck_assert_int_eq(process_entries(r.out), 2);
    er_run_free(&r);

    /* trace, JSON: each process with its pid and name. */
    snprintf(out, sizeof out, "%s/t.json", dir);
    r = er_run_tool(dir, form ? (const char *[]){"trace", "-o", out, a, b, NULL}
                              : (const char *[]){"trace", "-o", out, "--dir",
                                                 rings, NULL},
                    0);
    er_assert_status(&r, 0);
    er_run_free(&r);
    char *text = er_slurp(out, NULL);
    long pids[8];
    int named[8];
    int n = json_pids(text, pids, 8, named);
    ck_assert_int_eq(n, 2);
    ck_assert(has_pid(pids, n, pa) && has_pid(pids, n, pb));
    ck_assert(named[0] && named[1]);
    free(text);

    /* trace, Fuchsia. */
    snprintf(out, sizeof out, "%s/t.fxt", dir);
    r = er_run_tool(dir, (const char *[]){"trace", "-o", out, src[0], src[1],
                                          NULL},
                    0);
    er_assert_status(&r, 0);
    er_run_free(&r);
    int evs[8];
    n = fxt_pids(out, pids, 8, evs);
    ck_assert_int_eq(n, 2);
    ck_assert(has_pid(pids, n, pa) && has_pid(pids, n, pb));
    ck_assert_int_gt(evs[0], 10);
    ck_assert_int_gt(evs[1], 10);
  }

  /* --dir with --pid is the one file, as before; --dir with a file or a
   * directory without ring files are errors. */
  char pid[32];
  snprintf(pid, sizeof pid, "%ld", pa);
  struct er_run r = er_run_tool(
      dir, (const char *[]){"dump", "--time=raw", "--dir", rings, "--pid", pid, NULL}, 0);
  er_assert_status(&r, 0);
  ck_assert_int_eq(occurrences(r.out, "pid="), 0);
  er_run_free(&r);
  r = er_run_tool(dir, (const char *[]){"dump", "--time=raw", "--dir", rings, a, NULL}, 0);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
  er_run_free(&r);
  /* -o naming one of the files read is refused before it is truncated. */
  struct stat before, after;
  ck_assert_int_eq(stat(b, &before), 0);
  r = er_run_tool(dir, (const char *[]){"stats", "-o", b, a, b, NULL}, 0);
  er_assert_one_error(&r, "is one of the ring files");
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
  er_run_free(&r);
  ck_assert_int_eq(stat(b, &after), 0);
  ck_assert_int_eq(after.st_size, before.st_size);
  r = er_run_tool(dir, (const char *[]){"stats", "--dir", dir, NULL}, 0);
  er_assert_one_error(&r, "no ring file");
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  er_run_free(&r);
}
END_TEST

/* --follow --dir: every file of the directory is read until its writer
 * has exited, ring_stop included. */
START_TEST(test_follow_dir) {
  NEED_ALL();
  if (!er_prog_path("spawn_child")) ER_SKIP("no spawn_child");
  const char *dir = er_tmpdir();
  char rings[PATH_MAX], file[PATH_MAX + 32];
  snprintf(rings, sizeof rings, "%s/rings", dir);
  ck_assert_int_eq(mkdir(rings, 0700), 0);
  char *sc = prog("spawn_child");
  setenv("OCAML_RUNTIME_EVENTS_START", "1", 1);
  setenv("OCAML_RUNTIME_EVENTS_DIR", rings, 1);
  char *argv[] = {sc, "run", "0.5", NULL};
  pid_t w[2];
  for (int i = 0; i < 2; i++)
    w[i] = er_spawn(argv, ER_FD_NULL, ER_FD_NULL, ER_FD_KEEP, NULL, 0);
  unsetenv("OCAML_RUNTIME_EVENTS_START");
  unsetenv("OCAML_RUNTIME_EVENTS_DIR");
  /* Both files exist before the tool lists the directory. */
  for (int i = 0; i < 2; i++) {
    snprintf(file, sizeof file, "%s/%ld.events", rings, (long)w[i]);
    er_wait_open(w[i], file);
  }
  struct er_run r = er_run_tool(
      dir, (const char *[]){"dump", "--time=raw", "-f", "--dir", rings, NULL},
      0);
  er_assert_status(&r, 0);
  struct listing l = parse(r.out);
  ck_assert_int_eq(l.npids, 2);
  for (int i = 0; i < 2; i++) {
    ck_assert(has_pid(l.pids, 2, (long)w[i]));
    ck_assert_uint_eq(count(&l, (long)w[i], "ring_stop"), 1);
    ck_assert_int_eq(er_wait_for(w[i], 10), 0);
  }
  free(l.v);
  er_run_free(&r);
  free(sc);
}
END_TEST

/* ctf with several processes: a CTF trace per process in OUTDIR/PID,
 * whose clocks share one UUID, so that babeltrace2 reads them as one
 * trace, every event of every process in time order. */
START_TEST(test_ctf_several) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  char rings[PATH_MAX], a[PATH_MAX + 32], b[PATH_MAX + 32];
  snprintf(rings, sizeof rings, "%s/rings", dir);
  ck_assert_int_eq(mkdir(rings, 0700), 0);
  long pa = write_post(dir, rings, "leaf"), pb = write_post(dir, rings, "leaf");
  snprintf(a, sizeof a, "%s/%ld.events", rings, pa);
  snprintf(b, sizeof b, "%s/%ld.events", rings, pb);
  struct er_run r = er_run_tool(dir, (const char *[]){"dump", a, b, NULL}, 0);
  er_assert_status(&r, 0);
  struct listing l = parse(r.out);
  uint64_t total = er_field(l.total, "total");
  free(l.v);
  er_run_free(&r);
  for (int form = 0; form < 2; form++) {
    char out[PATH_MAX + 16], meta[PATH_MAX + 64];
    snprintf(out, sizeof out, "%s/ctf%d", dir, form);
    r = er_run_tool(dir, form ? (const char *[]){"ctf", "-o", out, a, b, NULL}
                              : (const char *[]){"ctf", "-o", out, "--dir",
                                                 rings, NULL},
                    0);
    er_assert_status(&r, 0);
    er_run_free(&r);
    char clock[2][64];
    for (int k = 0; k < 2; k++) {
      long pid = k ? pb : pa;
      snprintf(meta, sizeof meta, "%s/%ld/metadata", out, pid);
      char *text = er_slurp(meta, NULL);
      char want[64];
      snprintf(want, sizeof want, "pid = %ld;", pid);
      ck_assert_msg(strstr(text, want), "%s lacks %s", meta, want);
      const char *u = strstr(text, "clock {\n\tname = monotonic;\n\tuuid = \"");
      ck_assert_msg(u != NULL, "%s: no clock uuid", meta);
      snprintf(clock[k], sizeof clock[k], "%.36s", strchr(u, '"') + 1);
      free(text);
    }
    ck_assert_str_eq(clock[0], clock[1]);
    if (!er_babeltrace_path()) continue;
    r = er_run(dir, er_babeltrace_path(),
               (const char *[]){"--clock-cycles", "--no-delta", out, NULL},
               NULL, 0);
    ck_assert_int_eq(er_exit_code(&r, "babeltrace2"), 0);
    struct er_lines lines = er_lines_split(r.out);
    ck_assert_uint_eq(lines.n, total);
    uint64_t prev = 0;
    for (size_t i = 0; i < lines.n; i++) {
      uint64_t c = strtoull(lines.v[i] + 1, NULL, 10);
      ck_assert_msg(c >= prev, "babeltrace2 output goes back: %s",
                    lines.v[i]);
      prev = c;
    }
    er_lines_free(&lines);
    er_run_free(&r);
  }
}
END_TEST

/* trace -- CMD: every process of the tree, on one clock, each with its
 * pid; no track goes back in time. */
START_TEST(test_trace_tree) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  char *p = prog("proc_tree");
  char line[3 * PATH_MAX];
  snprintf(line, sizeof line, "%s leaf & %s fork; %s exec %s leaf; wait", p,
           p, p, p);
  for (int f = 0; f < 2; f++) {
    char out[PATH_MAX];
    snprintf(out, sizeof out, "%s/tree.%s", dir, f ? "fxt" : "json");
    struct er_run r = er_run_tool(
        dir, (const char *[]){"trace", "-o", out, "--", "sh", "-c", line, NULL},
        0);
    /* The programs share the tool's stderr (a sanitizer build's programs
     * may say things there at exit): only the tool must say nothing. */
    ck_assert_int_eq(er_exit_code(&r, "the tool"), 0);
    ck_assert_msg(!strstr(r.err, "eventring"), "stderr: %s", r.err);
    er_run_free(&r);
    long pids[16];
    int extra[16], n;
    if (f) {
      n = fxt_pids(out, pids, 16, extra);
      /* The exec'd image is declared again under its pid. */
      int distinct = 0;
      for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++) seen |= pids[j] == pids[i];
        distinct += !seen;
        ck_assert_int_gt(extra[i], 0);
      }
      ck_assert_int_eq(distinct, 4);
      ck_assert_int_eq(n, 5);
    } else {
      char *text = er_slurp(out, NULL);
      n = json_pids(text, pids, 16, extra);
      free(text);
      /* leaf, fork and its copy, exec (both images: one pid). */
      ck_assert_int_eq(n, 4);
      for (int i = 0; i < n; i++) ck_assert(extra[i]);
    }
  }
  free(p);
}
END_TEST

static TCase *tc_tree(void) {
  TCase *tc = er_tcase("tree");
  ER_ADD_CASES(tc, test_tree_case, tree_cases);
  tcase_add_test(tc, test_drain_timeout);
  return tc;
}

static TCase *tc_reports(void) {
  TCase *tc = er_tcase("reports");
  ER_ADD_TESTS(tc, test_stats_latency_per_process, test_files_and_dir,
               test_trace_tree, test_ctf_several, test_follow_dir);
  return tc;
}

ER_TEST_MAIN("proctree", tc_tree, tc_reports)
