/* metrics_exemplars.c -- `eventring metrics --exemplars FILE`: the
 * snapshots that `eventring watch --log FILE --log-format json` writes,
 * attached as exemplars to the histogram buckets of their events (the
 * model's, which the OpenMetrics page and remote write both show).
 *
 * The log is followed as `tail -F` would: what was added since the last
 * look is read at each scrape and each push's collection (under the
 * exporter's lock, before the series are listed), never waiting for
 * more; a file replaced by another (rotated) or truncated is read again
 * from its start, one that does not exist yet is looked for again the
 * next time.  Of its lines, only "snapshot" events with a "source"
 * (watch writes it for the rules on one event with a duration: pause>,
 * phase:NAME>, span:NAME>) make exemplars; other events are ignored; a line that is not a JSON object,
 * or a snapshot line without its pid or value_ns, is counted and skipped
 * (the first one said on standard error).  A snapshot whose histogram
 * has no value yet (watch read the event before the exporter did) waits
 * for a later look, PENDING_MAX of them at most, the oldest dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"

/* The longest line kept whole; a longer one is skipped. */
#define LINE_MAX_BYTES 65536
/* Bytes read per look, so that a huge backlog does not hold the lock. */
#define READ_MAX_BYTES (1 << 20)
#define PENDING_MAX 256

struct pending {
  pid_t pid;
  char source[EVENTRING_MAX_NAME + 16];
  uint64_t value_ns, wall_ns;
  uint64_t seen_ns; /* when its line was read (CLOCK_REALTIME) */
  char id[METRICS_EXEMPLAR_ID + 1];
};

struct metrics_exemplars {
  char *path;
  int fd;
  dev_t dev;
  ino_t ino;
  off_t off;
  char *line; /* the start of a line whose end is not written yet */
  size_t len;
  int too_long; /* the line being read is skipped */
  uint64_t lineno, skipped;
  struct pending pending[PENDING_MAX];
  int npending;
};

struct metrics_exemplars *metrics_exemplars_new(const char *path) {
  struct metrics_exemplars *x = calloc(1, sizeof *x);
  if (!x || !(x->path = strdup(path)) ||
      !(x->line = malloc(LINE_MAX_BYTES))) {
    if (x) free(x->path);
    free(x);
    return NULL;
  }
  x->fd = -1;
  return x;
}

void metrics_exemplars_free(struct metrics_exemplars *x) {
  if (!x) return;
  if (x->skipped)
    tool_error("metrics: --exemplars %s: %" PRIu64 " line%s skipped (not "
               "JSON lines of eventring watch --log-format json)",
               x->path, x->skipped, x->skipped == 1 ? "" : "s");
  if (x->fd >= 0) close(x->fd);
  free(x->line);
  free(x->path);
  free(x);
}

static void skip(struct metrics_exemplars *x, const char *why) {
  if (!x->skipped++)
    tool_error("metrics: --exemplars %s: line %" PRIu64 " skipped: %s (a "
               "log of eventring watch --log-format json is expected)",
               x->path, x->lineno, why);
}

/* Attaches `p`, or keeps it for later.  Returns 1 when it is to be kept. */
static int attach(struct metrics_exemplars *x, struct metrics_set *set,
                  const struct pending *p) {
  int r = metrics_exemplar_add(set, p->pid, p->source, p->value_ns,
                               p->wall_ns, p->seen_ns, p->id);
  if (r < 0) skip(x, "a snapshot whose exemplar cannot be attached");
  return r == 1;
}

static void keep(struct metrics_exemplars *x, const struct pending *p) {
  if (x->npending == PENDING_MAX) {
    memmove(x->pending, x->pending + 1,
            (PENDING_MAX - 1) * sizeof *x->pending);
    x->npending--;
  }
  x->pending[x->npending++] = *p;
}

static void on_line(struct metrics_exemplars *x, struct metrics_set *set,
                    const char *s, size_t n) {
  char err[128];
  x->lineno++;
  if (!n) return;
  struct json_value *v = json_parse(s, n, err, sizeof err);
  if (!v || v->type != JSON_OBJECT) {
    skip(x, v ? "not a JSON object" : err);
    json_free(v);
    return;
  }
  const struct json_value *ev = json_get(v, "event"),
                          *src = json_get(v, "source"),
                          *snap = json_get(v, "snapshot");
  struct pending p;
  uint64_t pid;
  memset(&p, 0, sizeof p);
  if (!ev || ev->type != JSON_STRING || strcmp(ev->str, "snapshot") ||
      !src) {
    json_free(v);
    return;
  }
  if (src->type != JSON_STRING || !snap || snap->type != JSON_STRING ||
      !json_u64(json_get(v, "pid"), &pid) || pid > INT32_MAX ||
      !json_u64(json_get(v, "value_ns"), &p.value_ns) ||
      strlen(src->str) >= sizeof p.source) {
    skip(x, "a snapshot without its snapshot, source, pid or value_ns");
    json_free(v);
    return;
  }
  json_u64(json_get(v, "wall_time_ns"), &p.wall_ns);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  p.seen_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
  p.pid = (pid_t)pid;
  snprintf(p.source, sizeof p.source, "%s", src->str);
  const char *base = strrchr(snap->str, '/');
  base = base ? base + 1 : snap->str;
  if (strlen(base) > METRICS_EXEMPLAR_ID) {
    skip(x, "a snapshot's file name longer than an exemplar may be");
  } else {
    snprintf(p.id, sizeof p.id, "%s", base);
    if (attach(x, set, &p)) keep(x, &p);
  }
  json_free(v);
}

/* Opens the log when it is not open or was replaced.  Returns 0 when
 * there is a file to read. */
static int reopen(struct metrics_exemplars *x) {
  struct stat st;
  if (stat(x->path, &st) != 0) return x->fd >= 0 ? 0 : -1;
  if (x->fd >= 0 && st.st_dev == x->dev && st.st_ino == x->ino) return 0;
  int fd = open(x->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return x->fd >= 0 ? 0 : -1;
  if (x->fd >= 0) close(x->fd);
  fstat(fd, &st);
  x->fd = fd;
  x->dev = st.st_dev;
  x->ino = st.st_ino;
  x->off = 0;
  x->len = 0;
  x->too_long = 0;
  x->lineno = 0;
  return 0;
}

void metrics_exemplars_poll(struct metrics_exemplars *x,
                            struct metrics_set *set) {
  int kept = 0;
  for (int i = 0; i < x->npending; i++)
    if (attach(x, set, &x->pending[i])) x->pending[kept++] = x->pending[i];
  x->npending = kept;
  if (reopen(x) < 0) return;
  struct stat st;
  if (fstat(x->fd, &st) == 0 && st.st_size < x->off) {
    x->off = 0; /* truncated: written again from its start */
    x->len = 0;
    x->lineno = 0;
  }
  char buf[16384];
  for (size_t total = 0; total < READ_MAX_BYTES;) {
    ssize_t n = pread(x->fd, buf, sizeof buf, x->off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    x->off += n;
    total += (size_t)n;
    for (ssize_t i = 0; i < n;) {
      char *nl = memchr(buf + i, '\n', (size_t)(n - i));
      size_t k = nl ? (size_t)(nl - (buf + i)) : (size_t)(n - i);
      if (!x->too_long && x->len + k <= LINE_MAX_BYTES) {
        memcpy(x->line + x->len, buf + i, k);
        x->len += k;
      } else if (!x->too_long) {
        x->too_long = 1;
      }
      i += (ssize_t)k;
      if (!nl) break;
      i++;
      if (x->too_long) {
        x->lineno++;
        skip(x, "a line too long");
      } else {
        on_line(x, set, x->line, x->len);
      }
      x->len = 0;
      x->too_long = 0;
    }
  }
}
