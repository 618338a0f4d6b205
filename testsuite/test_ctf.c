/* Tests `eventring ctf` against the real babeltrace2: same events, same values as `eventring dump`, domain by domain. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sys/resource.h>

#include "cases.h"
#include "craft_small.h"
#include "harness.h"
#include "testlib.h"
#include "tooltest.h"

/* The packet size the tool promises not to exceed (tools/cmd/ctf.c). */
#define PACKET_MAX 65536

/* ck_assert_msg() records its location with a write for every check that
 * passes, which the parsing loops below would do millions of times; this
 * one costs nothing until it fails. */
#define REQUIRE(cond, ...)                                                \
  do {                                                                    \
    if (!(cond)) ck_abort_msg(__VA_ARGS__);                               \
  } while (0)

/* ------------------------------------------------------------------ */
/* Running programs.                                                    */

#define NEED_TOOLS()                                                       \
  do {                                                                     \
    if (!er_tool_path()) ER_SKIP("EVENTRING_TEST_TOOL is not set");        \
    if (!er_babeltrace_path())                                                \
      ER_SKIP("babeltrace2 is not installed (bootstrap installs it)");     \
  } while (0)

/* ------------------------------------------------------------------ */
/* babeltrace2's text output, back into dump's lines.                   */

/* A field of a pretty-printed event: its name and its value as text
 * (strings unescaped, arrays as "a,b,c", enumerations as their label). */
struct field {
  char name[32];
  char *value;
  size_t count; /* number of elements of an array */
};

#define MAX_FIELDS 8

struct bt_event {
  uint64_t ts;
  char name[32];
  int domain;
  struct field f[MAX_FIELDS];
  int nf;
};

/* Parses a double-quoted string at *p, undoing babeltrace2's escaping,
 * as in C, of the backslash, the quotes and the question mark: the tool
 * writes only printable ASCII into strings, so no other escape may
 * appear. */
static char *parse_string(const char **p, const char *line) {
  const char *s = *p;
  REQUIRE(*s == '"', "no string at: %.300s", line);
  s++;
  char *out = malloc(strlen(s) + 1);
  REQUIRE(out != NULL, "out of memory");
  size_t n = 0;
  for (; *s && *s != '"'; s++) {
    if (*s == '\\') {
      s++;
      REQUIRE(*s && strchr("\\\"'?", *s),
                    "unexpected escape \\%c in: %.300s", *s, line);
    }
    out[n++] = *s;
  }
  REQUIRE(*s == '"', "unterminated string in: %.300s", line);
  out[n] = '\0';
  *p = s + 1;
  return out;
}

/* Parses "{ a = v, b = v, ... }" at *p into e->f. */
static void parse_fields(struct bt_event *e, const char **p, const char *line) {
  const char *s = *p;
  REQUIRE(!strncmp(s, "{ ", 2), "no field list at: %.300s", line);
  s += 2;
  while (*s != '}') {
    REQUIRE(e->nf < MAX_FIELDS, "too many fields: %.300s", line);
    struct field *f = &e->f[e->nf++];
    f->count = 0;
    size_t n = strcspn(s, " ");
    REQUIRE(n < sizeof f->name && !strncmp(s + n, " = ", 3),
                  "bad field at: %.300s", s);
    memcpy(f->name, s, n);
    f->name[n] = '\0';
    s += n + 3;
    if (*s == '"') {
      f->value = parse_string(&s, line);
    } else if (*s == '[') {
      /* [ [0] = 1, [1] = 2 ] or [ ] */
      char *buf = NULL;
      size_t len = 0;
      FILE *m = open_memstream(&buf, &len);
      s += 2;
      while (*s == '[') {
        const char *eq = strstr(s, "] = ");
        REQUIRE(eq != NULL, "bad array in: %.300s", line);
        s = eq + 4;
        size_t k = strcspn(s, ", ");
        fprintf(m, "%s%.*s", f->count ? "," : "", (int)k, s);
        f->count++;
        s += k;
        if (!strncmp(s, ", ", 2)) s += 2;
        else if (*s == ' ') s++;
      }
      REQUIRE(*s == ']', "unterminated array in: %.300s", line);
      s++;
      fclose(m);
      f->value = buf;
    } else if (*s == '(') {
      /* ( "label" : container = N ) */
      s += 2;
      f->value = parse_string(&s, line);
      const char *close = strchr(s, ')');
      REQUIRE(close != NULL, "bad enumeration in: %.300s", line);
      s = close + 1;
    } else {
      size_t k = strcspn(s, ", }");
      f->value = strndup(s, k);
      s += k;
      if (*s == ' ' && s[1] != '}') s++;
    }
    if (!strncmp(s, ", ", 2)) s += 2;
    else if (!strncmp(s, " }", 2)) s++;
    else
      REQUIRE(0, "unexpected text after a field: [%.100s] in %.300s", s,
                    line);
  }
  *p = s + 1;
}

/* Parses one line of `babeltrace2 --clock-cycles --no-delta`:
 *   [CYCLES] NAME: { domain = D }, { FIELDS }
 * (an event without fields ends after the packet context). */
static void parse_event(struct bt_event *e, const char *line) {
  memset(e, 0, sizeof *e);
  const char *s = line;
  REQUIRE(*s == '[', "not an event line: %.300s", line);
  char *end;
  e->ts = strtoull(s + 1, &end, 10);
  REQUIRE(!strncmp(end, "] ", 2), "bad time in: %.300s", line);
  s = end + 2;
  size_t n = strcspn(s, ":");
  REQUIRE(n < sizeof e->name && s[n] == ':', "bad name in: %.300s", line);
  memcpy(e->name, s, n);
  s += n + 2;
  REQUIRE(sscanf(s, "{ domain = %d }", &e->domain) == 1,
                "no domain in: %.300s", line);
  s = strchr(s, '}') + 1;
  e->nf = 0;
  if (!strncmp(s, ", ", 2)) {
    s += 2;
    parse_fields(e, &s, line);
  }
  REQUIRE(*s == '\0', "trailing text in: %.300s", line);
}

static void event_free(struct bt_event *e) {
  for (int i = 0; i < e->nf; i++) free(e->f[i].value);
}

static const struct field *get(const struct bt_event *e, const char *name) {
  for (int i = 0; i < e->nf; i++)
    if (!strcmp(e->f[i].name, name)) return &e->f[i];
  REQUIRE(0, "event %s has no field %s", e->name, name);
  return NULL;
}

/* The custom event's payload array, escaped as OCaml does, equals its
 * string field. */
static void check_payload(const struct bt_event *e) {
  const struct field *len = get(e, "length"), *pl = get(e, "payload");
  REQUIRE(strtoull(len->value, NULL, 10) == pl->count, "length %s for %zu bytes",
          len->value, pl->count);
  unsigned char *bytes = malloc(pl->count + 1);
  const char *s = pl->value;
  for (size_t i = 0; i < pl->count; i++) {
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    REQUIRE(v < 256, "byte %lu in a payload", v);
    bytes[i] = (unsigned char)v;
    s = *end == ',' ? end + 1 : end;
  }
  char *text = NULL;
  size_t n = 0;
  FILE *m = open_memstream(&text, &n);
  rf_print_ocaml_string(m, bytes, pl->count);
  fclose(m);
  REQUIRE(!strcmp(text, get(e, "value")->value),
                "payload %.300s\n  escapes to %.300s\n  but value is %.300s",
                pl->value,
                text, get(e, "value")->value);
  free(text);
  free(bytes);
}

/* The line `eventring dump` prints for the event.  `lost_unit` is the
 * unit dump's summary names. */
static char *dump_line(const struct bt_event *e, const char *lost_unit) {
  char *line = NULL;
  size_t n = 0;
  FILE *m = open_memstream(&line, &n);
  if (!strcmp(e->name, "lost_events")) {
    REQUIRE(!strcmp(get(e, "unit")->value, lost_unit), "unit %s, dump says %s",
            get(e, "unit")->value, lost_unit);
    fprintf(m, "domain=%d kind=lost_events value=%s", e->domain,
            get(e, "count")->value);
    fclose(m);
    return line;
  }
  fprintf(m, "domain=%d ts=%" PRIu64 " kind=%s name=", e->domain, e->ts,
          e->name);
  const char *kind = e->name;
  if (!strcmp(kind, "runtime_begin") || !strcmp(kind, "runtime_end")) {
    fprintf(m, "%s value=-", get(e, "name")->value);
  } else if (!strcmp(kind, "alloc")) {
    REQUIRE(get(e, "buckets")->count == 20, "%zu buckets",
            get(e, "buckets")->count);
    fprintf(m, "alloc_buckets value=%s", get(e, "buckets")->value);
  } else if (!strcmp(kind, "lifecycle")) {
    int has = !strcmp(get(e, "has_value")->value, "1");
    REQUIRE(has || !strcmp(get(e, "value")->value, "0"),
                  "a lifecycle event without value has one");
    fprintf(m, "%s value=%s", get(e, "name")->value,
            has ? get(e, "value")->value : "-");
  } else if (!strcmp(kind, "user_unit")) {
    fprintf(m, "%s value=()", get(e, "name")->value);
  } else if (!strcmp(kind, "user_custom")) {
    check_payload(e);
    fprintf(m, "%s value=%s", get(e, "name")->value, get(e, "value")->value);
  } else {
    /* runtime_counter, user_int, user_span */
    fprintf(m, "%s value=%s", get(e, "name")->value, get(e, "value")->value);
  }
  fclose(m);
  return line;
}

/* ------------------------------------------------------------------ */
/* The comparison.                                                      */

/* The lines of `all` for domain `d` ("domain=D " prefix). */
static struct er_lines of_domain(const struct er_lines *all, int d) {
  char prefix[32];
  snprintf(prefix, sizeof prefix, "domain=%d ", d);
  struct er_lines l = {0};
  for (size_t i = 0; i < all->n; i++)
    if (!strncmp(all->v[i], prefix, strlen(prefix)))
      er_lines_push(&l, all->v[i], strlen(all->v[i]));
  return l;
}

static int max_domain(const struct er_lines *l) {
  int max = -1;
  for (size_t i = 0; i < l->n; i++) {
    int d;
    if (sscanf(l->v[i], "domain=%d ", &d) == 1 && d > max) max = d;
  }
  return max;
}

/* Per domain, `got` is `want` (or, with `prefix`, its beginning). */
static void compare_domains(const struct er_lines *got,
                            const struct er_lines *want, int prefix) {
  int maxd = max_domain(want), maxg = max_domain(got);
  ck_assert_msg(maxg <= maxd, "events of domain %d, which dump has not",
                maxg);
  for (int d = 0; d <= maxd; d++) {
    struct er_lines g = of_domain(got, d), w = of_domain(want, d);
    size_t n = g.n < w.n ? g.n : w.n;
    for (size_t i = 0; i < n; i++)
      REQUIRE(!strcmp(g.v[i], w.v[i]),
                    "domain %d event %zu:\n  ctf  %.500s\n  dump %.500s", d, i, g.v[i],
                    w.v[i]);
    if (prefix)
      ck_assert_msg(g.n <= w.n, "domain %d: %zu events, dump has %zu", d, g.n,
                    w.n);
    else
      ck_assert_msg(g.n == w.n, "domain %d: %zu events, dump has %zu", d, g.n,
                    w.n);
    er_lines_free(&g);
    er_lines_free(&w);
  }
}

/* dump's event and loss lines, and the unit of its losses. */
static struct er_lines dump_of(const char *dir, const char *path, int ocaml50,
                               char *lost_unit) {
  const char *args[] = {"dump", "--time=raw", ocaml50 ? "--ocaml50" : path,
                        ocaml50 ? path : NULL, NULL};
  struct er_run r = er_run(dir, er_tool_path(), args, NULL, 0);
  ck_assert_msg(er_exit_code(&r, "dump") == 0 && r.err[0] == '\0',
                "dump failed: %.300s", r.err);
  struct er_lines all = er_lines_split(r.out);
  struct er_lines l = er_lines_starting(&all, "domain=");
  ck_assert_uint_ge(all.n, 1);
  const char *u = strstr(all.v[all.n - 1], " lost_unit=");
  ck_assert_msg(u != NULL, "no summary: %s", all.v[all.n - 1]);
  snprintf(lost_unit, 16, "%s", u + 11);
  er_lines_free(&all);
  er_run_free(&r);
  return l;
}

/* Runs babeltrace2 on `outdir` twice, as `babeltrace2 OUTDIR` (with TZ
 * set to UTC) and with --clock-cycles --no-delta, checks that both succeed
 * silently and print the same events, and returns the events as dump's
 * lines. */
static struct er_lines babeltrace_lines(const char *dir, const char *outdir,
                                        const char *lost_unit) {
  struct er_run plain = er_run(dir, er_babeltrace_path(),
                               (const char *[]){outdir, NULL}, "TZ=UTC", 0);
  ck_assert_msg(
      er_exit_code(&plain, "babeltrace2") == 0 && plain.err[0] == '\0',
      "babeltrace2 %s: status %d, stderr: %.300s", outdir, plain.status,
      plain.err);
  struct er_run cyc = er_run(
      dir, er_babeltrace_path(),
      (const char *[]){"--clock-cycles", "--no-delta", outdir, NULL}, NULL, 0);
  ck_assert_msg(er_exit_code(&cyc, "babeltrace2") == 0 && cyc.err[0] == '\0',
                "babeltrace2 --clock-cycles: stderr: %.300s", cyc.err);
  struct er_lines pl = er_lines_split(plain.out), cl = er_lines_split(cyc.out),
                  out = {0};
  ck_assert_uint_eq(pl.n, cl.n);
  for (size_t i = 0; i < cl.n; i++) {
    struct bt_event e;
    parse_event(&e, cl.v[i]);
    /* The plain line: [HH:MM:SS.NNNNNNNNN] (+DELTA) and the same rest,
     * the time of day being that of CLOCK_MONOTONIC's nanoseconds taken
     * as seconds from the Epoch. */
    uint64_t day = e.ts % (UINT64_C(86400) * 1000000000);
    char when[64];
    snprintf(when, sizeof when, "[%02u:%02u:%02u.%09u] ",
             (unsigned)(day / 3600000000000), (unsigned)(day / 60000000000 % 60),
             (unsigned)(day / 1000000000 % 60), (unsigned)(day % 1000000000));
    REQUIRE(!strncmp(pl.v[i], when, strlen(when)),
                  "line %zu: %.300s\n  expected the time %s", i, pl.v[i], when);
    const char *rest_p = strchr(pl.v[i] + strlen(when), ')');
    const char *rest_c = strchr(cl.v[i], ']');
    REQUIRE(rest_p && rest_c && !strcmp(rest_p + 1, rest_c + 1),
            "line %zu differs:\n  %.300s\n  %.300s", i, pl.v[i], cl.v[i]);
    char *line = dump_line(&e, lost_unit);
    er_lines_push(&out, line, strlen(line));
    free(line);
    event_free(&e);
  }
  er_lines_free(&pl);
  er_lines_free(&cl);
  er_run_free(&plain);
  er_run_free(&cyc);
  return out;
}

/* Converts `path` into `outdir` (empty) and checks the trace against
 * dump; `dir` takes the programs' output. */
static void check_file(const char *dir, const char *outdir, const char *path,
                       int ocaml50) {
  char lost_unit[16];
  struct er_lines want = dump_of(dir, path, ocaml50, lost_unit);
  const char *args[] = {"ctf", "-o", outdir, ocaml50 ? "--ocaml50" : path,
                        ocaml50 ? path : NULL, NULL};
  struct er_run r = er_run(dir, er_tool_path(), args, NULL, 0);
  ck_assert_msg(er_exit_code(&r, "ctf") == 0, "ctf failed: %.300s", r.err);
  /* Nothing on stderr but, when there were losses, their summary. */
  ck_assert_msg(r.err[0] == '\0' ||
                    (!strncmp(r.err, "eventring: ", 11) &&
                     er_count_lines(r.err) == 1 && strstr(r.err, "lost")),
                "ctf stderr: %.300s", r.err);
  er_run_free(&r);
  struct er_lines got = babeltrace_lines(dir, outdir, lost_unit);
  ck_assert_msg(got.n == want.n, "babeltrace2 printed %zu events, dump %zu",
                got.n, want.n);
  compare_domains(&got, &want, 0);
  er_lines_free(&got);
  er_lines_free(&want);
}

/* Two fresh directories: `outdir` for the trace (the harness removes
 * the files in each, not subdirectories, so the trace gets one of its
 * own), then the returned one, for everything else, which is also
 * OCAML_RUNTIME_EVENTS_DIR. */
static const char *two_dirs(char *outdir) {
  strcpy(outdir, er_tmpdir());
  return er_tmpdir();
}

/* ------------------------------------------------------------------ */
/* The OCaml 5 vectors.                                                 */

static void check_vector(const char *name, int ocaml50) {
  NEED_TOOLS();
  const char *data = er_env_dir("EVENTRING_TEST_DATA");
  if (!data) ER_SKIP("EVENTRING_TEST_DATA is not set");
  char outdir[64], path[PATH_MAX];
  const char *dir = two_dirs(outdir);
  ck_assert(er_unpack_vector(dir, name, path));
  check_file(dir, outdir, path, ocaml50);
  unlink(path);
}

START_TEST(test_vector) {
  check_vector(er_vectors[_i], er_vector_ocaml50(er_vectors[_i]));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Files written by eventring.                                          */

static int can_trace(void) {
  return er_env_dir("EVENTRING_TEST_PROGS") && !er_tracing_off();
}

/* Runs progs/PROG with `params` as OCAMLRUNPARAM in `dir`, keeping its
 * ring file, whose path goes to `path`. */
static void write_file(const char *dir, const char *prog, const char *params,
                       char *path) {
  char exe[PATH_MAX];
  snprintf(exe, sizeof exe, "%s/%s", er_env_dir("EVENTRING_TEST_PROGS"),
           prog);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  setenv("OCAMLRUNPARAM", params, 1);
  char *argv[] = {exe, NULL};
  pid_t pid = er_spawn(argv, -1, -1, -1, NULL, 0);
  int st = er_wait_for(pid, ER_RUN_TIMEOUT);
  unsetenv("OCAMLRUNPARAM");
  unsetenv("OCAML_RUNTIME_EVENTS_PRESERVE");
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "%s failed (status %d)", prog, st);
  er_ring_path_for(path, PATH_MAX, dir, pid);
}

/* Four threads, every kind of event, custom payloads with every escape,
 * and a wrapped ring (1024 words): a loss in domain 0. */
START_TEST(test_own_file) {
  NEED_TOOLS();
  if (!can_trace()) ER_SKIP("no helper programs, or a build without tracing");
  char outdir[64], path[PATH_MAX];
  const char *dir = two_dirs(outdir);
  write_file(dir, "i_dump_writer", "e=10", path);
  check_file(dir, outdir, path, 0);
}
END_TEST

static uint64_t le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* Walks the packets of a stream file: each starts with the magic and the
 * trace's UUID, its sizes are its length in bits, it is at most
 * PACKET_MAX bytes, its times are ordered and its sequence number is the
 * next.  Returns the number of packets. */
static int check_packets(const char *file, const uint8_t *uuid) {
  char *data = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&data, &len);
  FILE *f = fopen(file, "r");
  ck_assert_msg(f != NULL, "%s: %s", file, strerror(errno));
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, n, m);
  fclose(f);
  fclose(m);
  const uint8_t *p = (const uint8_t *)data;
  size_t at = 0;
  int packets = 0;
  uint64_t last_end = 0;
  while (at < len) {
    ck_assert_msg(len - at >= 68, "%s: a packet header is cut", file);
    ck_assert_uint_eq(le(p + at, 4), 0xC1FC1FC1);
    ck_assert(!memcmp(p + at + 4, uuid, 16));
    uint64_t begin = le(p + at + 24, 8), end = le(p + at + 32, 8);
    uint64_t content = le(p + at + 40, 8), size = le(p + at + 48, 8);
    ck_assert_uint_eq(content, size);
    ck_assert_uint_eq(size % 8, 0);
    ck_assert_uint_le(size / 8, PACKET_MAX);
    ck_assert_uint_le(size / 8, len - at);
    ck_assert_uint_le(begin, end);
    ck_assert_uint_le(last_end, begin);
    ck_assert_uint_eq(le(p + at + 56, 8), (uint64_t)packets);
    last_end = end;
    at += size / 8;
    packets++;
  }
  free(data);
  return packets;
}

/* The UUID the metadata gives the trace. */
static void metadata_uuid(const char *outdir, uint8_t *uuid) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/metadata", outdir);
  char *text = er_slurp(path, NULL);
  ck_assert_msg(!strncmp(text, "/* CTF 1.8 */", 13), "metadata: %.40s", text);
  const char *u = strstr(text, "uuid = \"");
  ck_assert_ptr_nonnull(u);
  u += 8;
  for (int i = 0; i < 16; i++) {
    if (*u == '-') u++;
    unsigned v;
    ck_assert_int_eq(sscanf(u, "%2x", &v), 1);
    uuid[i] = (uint8_t)v;
    u += 2;
  }
  free(text);
}

/* Two domains, 11000 ints and 10 custom events of the largest size: many
 * packets, each checked, and the same events as dump. */
START_TEST(test_many_packets) {
  NEED_TOOLS();
  if (!can_trace()) ER_SKIP("no helper programs, or a build without tracing");
  char outdir[64], path[PATH_MAX], stream[PATH_MAX];
  const char *dir = two_dirs(outdir);
  write_file(dir, "ctf_writer", "e=17,d=4", path);
  check_file(dir, outdir, path, 0);
  uint8_t uuid[16];
  metadata_uuid(outdir, uuid);
  snprintf(stream, sizeof stream, "%s/stream_0", outdir);
  ck_assert_int_ge(check_packets(stream, uuid), 10);
  snprintf(stream, sizeof stream, "%s/stream_1", outdir);
  ck_assert_int_ge(check_packets(stream, uuid), 1);
  snprintf(stream, sizeof stream, "%s/stream_2", outdir);
  ck_assert_msg(access(stream, F_OK) != 0, "a stream for an idle domain");
}
END_TEST

/* ------------------------------------------------------------------ */
/* Interruption.                                                        */

/* Ctrl-C while following a live writer: the trace holds what was read,
 * babeltrace2 reads it, and it is the beginning of what dump reads
 * afterwards. */
START_TEST(test_interrupt) {
  NEED_TOOLS();
  if (!can_trace()) ER_SKIP("no helper programs, or a build without tracing");
  char outdir[64], exe[PATH_MAX];
  const char *dir = two_dirs(outdir);
  snprintf(exe, sizeof exe, "%s/dump_live", er_env_dir("EVENTRING_TEST_PROGS"));
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  int ready[2], go[2];
  ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
  ck_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
  pid_t writer = fork();
  ck_assert_int_ge(writer, 0);
  if (writer == 0) {
    dup2(go[0], STDIN_FILENO);
    dup2(ready[1], STDOUT_FILENO);
    execl(exe, exe, (char *)NULL);
    _exit(127);
  }
  close(ready[1]);
  close(go[0]);
  char buf[16] = {0};
  ck_assert_msg(read(ready[0], buf, sizeof buf - 1) > 0 &&
                    !strncmp(buf, "ready", 5),
                "dump_live did not start: [%s]", buf);
  close(ready[0]);

  char pid_arg[32];
  snprintf(pid_arg, sizeof pid_arg, "%ld", (long)writer);
  char outp[PATH_MAX], errp[PATH_MAX];
  pid_t tool =
      er_start_tool(dir,
                    (const char *[]){"ctf", "--follow", "-o", outdir, "--pid",
                                     pid_arg, "--dir", dir, NULL},
                    0, outp, errp);
  /* Once the tool reads the file, let the writer write a few ticks (of
   * the half second's worth it writes), stop it there, and interrupt the
   * tool once it has read what is written: the rest comes after. */
  char path[PATH_MAX], lost_unit[16];
  er_ring_path_for(path, sizeof path, dir, writer);
  er_wait_open(tool, path);
  close(go[1]);
  er_wait_turns(writer, 3);
  ck_assert_int_eq(kill(writer, SIGSTOP), 0);
  er_wait_idle(tool);
  kill(tool, SIGINT);
  struct er_run r = er_finish(tool, outp, errp, ER_RUN_TIMEOUT);
  ck_assert_int_eq(kill(writer, SIGCONT), 0);
  ck_assert_msg(r.status != -1, "the tool did not stop on SIGINT");
  ck_assert_msg((WIFEXITED(r.status) && (WEXITSTATUS(r.status) == 0 ||
                                         WEXITSTATUS(r.status) == 130)) ||
                    (WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGINT),
                "status %d after SIGINT, stderr: %.300s", r.status, r.err);
  er_run_free(&r);
  int st = er_wait_for(writer, ER_RUN_TIMEOUT);
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "dump_live failed (status %d)", st);

  struct er_lines want = dump_of(dir, path, 0, lost_unit);
  struct er_lines got = babeltrace_lines(dir, outdir, lost_unit);
  /* Some events were read before the signal (ring_start at least, as
   * the tool polls right after opening the file), not all. */
  ck_assert_msg(got.n >= 1, "no event in the trace");
  ck_assert_msg(got.n < want.n, "the trace has all %zu events", got.n);
  compare_domains(&got, &want, 1);
  er_lines_free(&got);
  er_lines_free(&want);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The output directory and bad usage.                                  */

static void check_one_error(const struct er_run *r, int code,
                            const char *what) {
  ck_assert_int_eq(er_exit_code(r, "ctf"), code);
  er_assert_one_error(r, what);
}

START_TEST(test_outdir) {
  ER_NEED_TOOL();
  const char *data = er_env_dir("EVENTRING_TEST_DATA");
  if (!data) ER_SKIP("EVENTRING_TEST_DATA is not set");
  char outdir[64], path[PATH_MAX], gz[PATH_MAX], file[PATH_MAX], meta[PATH_MAX];
  const char *dir = two_dirs(outdir);
  snprintf(path, sizeof path, "%s/v.events", dir);
  snprintf(gz, sizeof gz, "%s/ocaml54-basic.events.gz", data);
  er_gunzip(gz, path);
  snprintf(file, sizeof file, "%s/keep", outdir);
  snprintf(meta, sizeof meta, "%s/metadata", outdir);

  /* A directory that is not empty is refused and left alone. */
  int fd = open(file, O_WRONLY | O_CREAT, 0600);
  ck_assert_int_ge(fd, 0);
  close(fd);
  struct er_run r =
      er_run(dir, er_tool_path(), (const char *[]){"ctf", "-o", outdir, path, NULL},
             NULL, 0);
  check_one_error(&r, 1, "not empty");
  er_run_free(&r);
  ck_assert_int_ne(access(meta, F_OK), 0);

  /* An empty one is used. */
  ck_assert_int_eq(unlink(file), 0);
  r = er_run(dir, er_tool_path(), (const char *[]){"ctf", "-o", outdir, path, NULL},
             NULL, 0);
  ck_assert_msg(er_exit_code(&r, "ctf") == 0, "%.300s", r.err);
  er_run_free(&r);
  ck_assert_int_eq(access(meta, F_OK), 0);

  /* A file in its place. */
  r = er_run(dir, er_tool_path(), (const char *[]){"ctf", "-o", meta, path, NULL},
             NULL, 0);
  check_one_error(&r, 1, meta);
  er_run_free(&r);

  /* A missing ring file: the error, and no directory left behind. */
  char missing[PATH_MAX], fresh[PATH_MAX];
  snprintf(missing, sizeof missing, "%s/none.events", dir);
  snprintf(fresh, sizeof fresh, "%s/fresh", dir);
  r = er_run(dir, er_tool_path(), (const char *[]){"ctf", "-o", fresh, missing, NULL},
             NULL, 0);
  check_one_error(&r, 1, missing);
  er_run_free(&r);
  ck_assert_msg(rmdir(fresh) != 0 && errno == ENOENT,
                "the tool left %s behind", fresh);

  /* Usage errors, which create nothing either. */
  r = er_run(dir, er_tool_path(), (const char *[]){"ctf", NULL}, NULL, 0);
  check_one_error(&r, 2, "output directory");
  er_run_free(&r);
  r = er_run(dir, er_tool_path(), (const char *[]){"ctf", fresh, NULL}, NULL,
             0);
  check_one_error(&r, 2, "ctf --help");
  er_run_free(&r);
  ck_assert_msg(rmdir(fresh) != 0 && errno == ENOENT,
                "the tool left %s behind", fresh);
  /* The form that took OUTDIR as the first operand is refused with the
   * command to type instead, and creates nothing. */
  r = er_run(dir, er_tool_path(), (const char *[]){"ctf", fresh, path, NULL},
             NULL, 0);
  char want[2 * PATH_MAX + 32];
  snprintf(want, sizeof want, "'eventring ctf -o %s %s'", fresh, path);
  check_one_error(&r, 2, want);
  er_run_free(&r);
  ck_assert_msg(rmdir(fresh) != 0 && errno == ENOENT,
                "the tool left %s behind", fresh);
  r = er_run(dir, er_tool_path(),
             (const char *[]){"ctf", "--bogus", "-o", fresh, path, NULL}, NULL, 0);
  check_one_error(&r, 2, "--bogus");
  er_run_free(&r);
  unlink(path);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Many domains under a low descriptor limit.                           */

#define MANY_DOMAINS 2000
#define LOW_NOFILE 64

/* Sets the soft limit on descriptors to `n` (at most the hard one);
 * returns the previous soft limit. */
static rlim_t set_nofile(rlim_t n) {
  struct rlimit rl;
  ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
  rlim_t old = rl.rlim_cur;
  rl.rlim_cur = n < rl.rlim_max ? n : rl.rlim_max;
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
  return old;
}

/* 2,000 domains with events make 2,000 streams: written without one
 * descriptor held per stream, under a limit of 64 descriptors, complete
 * (one file per domain, exit 0, nothing on stderr) and read back by
 * babeltrace2 event for event as dump lists them. */
START_TEST(test_many_domains) {
  NEED_TOOLS();
  char outdir[64], path[PATH_MAX];
  const char *dir = two_dirs(outdir);
  snprintf(path, sizeof path, "%s/many.events", dir);
  er_craft_small(path, MANY_DOMAINS, 2);

  /* No phase events to tell the numbering by: say which (dump_of too). */
  const char *args[] = {"ctf", "--ocaml50", "-o", outdir, path, NULL};
  rlim_t old = set_nofile(LOW_NOFILE);
  struct er_run r = er_run(dir, er_tool_path(), args, NULL, 0);
  set_nofile(old);
  ck_assert_msg(er_exit_code(&r, "ctf") == 0 && r.err[0] == '\0',
                "ctf with %d descriptors: status %d, stderr: %.300s",
                LOW_NOFILE, r.status, r.err);
  er_run_free(&r);
  ck_assert_int_eq(er_count_entries(outdir, ""), MANY_DOMAINS + 1);
  char stream[PATH_MAX];
  snprintf(stream, sizeof stream, "%s/stream_%d", outdir, MANY_DOMAINS - 1);
  ck_assert_msg(access(stream, R_OK) == 0, "no %s", stream);

  /* babeltrace2 opens every stream at once: it needs the descriptors we
   * did without. */
  struct rlimit rl;
  ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 2 * MANY_DOMAINS + 64)
    ER_SKIP("the hard descriptor limit is too low for babeltrace2 to read "
            "2000 streams (the trace itself was checked)");
  old = set_nofile(2 * MANY_DOMAINS + 64);
  char lost_unit[16];
  struct er_lines want = dump_of(dir, path, 1, lost_unit);
  ck_assert_uint_eq(want.n, 2 * MANY_DOMAINS);
  struct er_lines got = babeltrace_lines(dir, outdir, lost_unit);
  set_nofile(old);
  ck_assert_msg(got.n == want.n, "babeltrace2 printed %zu events, dump %zu",
                got.n, want.n);
  compare_domains(&got, &want, 0);
  er_lines_free(&got);
  er_lines_free(&want);
}
END_TEST

static TCase *tc_vectors(void) {
  TCase *tc = er_tcase("vectors");
  tcase_add_loop_test(tc, test_vector, 0, ER_NVECTORS);
  return tc;
}

static TCase *tc_own(void) {
  TCase *tc = er_tcase("own files");
  ER_ADD_TESTS(tc, test_own_file, test_many_packets, test_interrupt,
               test_many_domains);
  return tc;
}

static TCase *tc_usage(void) {
  TCase *tc = er_tcase("output directory");
  tcase_add_test(tc, test_outdir);
  return tc;
}

ER_TEST_MAIN("ctf", tc_vectors, tc_own, tc_usage)
