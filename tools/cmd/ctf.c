/* ctf.c -- `eventring ctf`: a ring file as a CTF 1.8 trace.
 *
 * The Common Trace Format is what babeltrace2 and Trace Compass read.
 * A CTF trace is a directory holding a `metadata` file, text in the
 * format's own declaration language (TSDL) that describes the binary
 * layout of everything else, and binary stream files made of packets.
 * We write:
 *
 *   OUTDIR/metadata     written whole before the first event is read:
 *                       every event class is known in advance, so an
 *                       interrupted conversion still has a complete one;
 *   OUTDIR/stream_D     one stream per domain D that has events, created
 *                       on the domain's first event, in the domain's
 *                       order (which is the ring's order).
 *
 * No descriptor is held per stream: a file may have thousands of domains,
 * more than a process may have descriptors open.  Each stream's packet is
 * built in memory and appended to its file with open, write and close
 * when it is full; the packets being filled take BUFFERED_MAX bytes at
 * most together (beyond that every one of them is written out, and the
 * next events start new packets), so that memory stays bounded too.
 *
 * Every stream file is a sequence of packets of at most PACKET_MAX bytes
 * (an event larger than that gets a packet of its own).  A packet is
 *
 *   header   magic 0xC1FC1FC1, the trace's UUID, stream class id 0
 *   context  timestamp_begin, timestamp_end (the first and last event's
 *            times), content_size and packet_size in bits (equal: packets
 *            are not padded), packet_seq_num (0, 1, ... per stream) and
 *            the domain
 *   events   each an event header (the class id on 16 bits, the time on
 *            64) and the class's fields
 *
 * All integers are little-endian and byte-aligned, so that the layout has
 * no padding and is written with plain byte stores.  Times are values of
 * a clock named `monotonic` of frequency 10^9 and offset 0: the
 * nanoseconds of CLOCK_MONOTONIC exactly as the ring holds them, as
 * `eventring dump` prints them.  The clock is not absolute: its origin is
 * the boot of the machine that wrote the ring, not the Epoch, and a
 * reader that prints dates (babeltrace2 without --clock-seconds or
 * --clock-cycles) shows times in early January 1970.
 *
 * One event class per line kind of `eventring dump`, with the same
 * values: the phase, counter, lifecycle kind or user event id, the name
 * dump prints (same escaping, same fallbacks), and the value.  A custom
 * event carries its payload twice, as the raw byte sequence and as the
 * OCaml string literal dump prints, which is what a person reads.  A
 * loss is an event too (lost_events, with dump's count and its unit),
 * so a trace has exactly as many events as dump has event and loss
 * lines.  The ring holds no time for a loss; we give it the time of the
 * domain's next event (it happened before that one and after the
 * previous one), or of its last event when nothing follows.
 *
 * CTF readers want times that never decrease within a stream.  A ring's
 * times do not (the writer takes them under the ring's order), but a file
 * from elsewhere could break that; such an event gets the previous time
 * of its domain, and a warning at the end says how many did.
 *
 * Several processes (a list of files, --dir DIR without --pid: procs.c):
 * each process is a CTF trace of its own in OUTDIR/PID (OUTDIR/PID.2 for
 * a second file of the same pid, an exec'd program), made at the
 * process's first event, with its pid and program in its environment.
 * babeltrace2 OUTDIR reads them all and merges them on the time of the
 * clock, which every trace declares with the same UUID, the boot id of
 * the machine (CLOCK_MONOTONIC is one clock per boot).  A command
 * stays one process, the first traced one, written in OUTDIR.
 *
 * Interruption: on SIGINT, SIGTERM or SIGHUP, source.c stops reading
 * cleanly (and a spawned command is read until it ends); we then write
 * the packets being filled as after a complete read, so the trace holds
 * every event read so far and stays readable.  A read error likewise
 * keeps what came before it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"

#define HELP_REF "eventring ctf --help"

/* Small enough that a reader seeks within a stream cheaply, large enough
 * that the 68 bytes of header and context per packet cost nothing. */
#define PACKET_MAX 65536

/* The bytes the packets being filled may hold together before all are
 * written out: 256 packets' worth. */
#define BUFFERED_MAX (256 * PACKET_MAX)

#define CTF_MAGIC UINT32_C(0xC1FC1FC1)

/* Packet layout, in bytes from the packet's start. */
#define PH_MAGIC 0
#define PH_UUID 4
#define PH_STREAM_ID 20
#define PC_TS_BEGIN 24
#define PC_TS_END 32
#define PC_CONTENT_SIZE 40
#define PC_PACKET_SIZE 48
#define PC_SEQ_NUM 56
#define PC_DOMAIN 64
#define PACKET_HEAD 68

/* Event class ids, in the order of the metadata's event blocks. */
enum ev_class {
  EV_RUNTIME_BEGIN,
  EV_RUNTIME_END,
  EV_RUNTIME_COUNTER,
  EV_ALLOC,
  EV_LIFECYCLE,
  EV_USER_UNIT,
  EV_USER_INT,
  EV_USER_SPAN,
  EV_USER_CUSTOM,
  EV_LOST_EVENTS,
};

/* One domain's stream: the packet being filled (its file, stream_D, is
 * opened only to append a packet). */
struct stream {
  uint8_t *buf;       /* the packet: header, context, events */
  size_t len, cap;    /* bytes used (0: no packet open), allocated */
  uint64_t seq;       /* the packet's sequence number */
  uint64_t ts_first;  /* time of the packet's first event */
  uint64_t ts_last;   /* time of the stream's last event */
  int has_events;     /* whether ts_last is set */
  int lost_pending;   /* a loss waits for the next event's time */
  uint64_t lost_count;
};

struct ctf {
  struct tool_source *src;
  /* The process: its file, program and pid, the cursor naming ids. */
  const char *path, *program;
  pid_t pid;
  const char *outdir;
  int dirfd;
  size_t buffered;         /* bytes of every packet being filled */
  int failed_domain;       /* the stream flush_all() could not write */
  uint8_t uuid[16];
  int max_domains;
  struct stream **streams; /* [max_domains], NULL until a domain has events */
  uint8_t *ev;             /* the event being built */
  size_t ev_len, ev_cap;
  const char *lost_unit;   /* "events" or "words" */
  uint64_t backwards;      /* events whose time went backwards */
  char *name_buf;          /* a name as dump prints it */
  size_t name_size;
  FILE *name_out;          /* writes into name_buf */
  char dir_buf[4096];      /* OUTDIR/PID with several processes */
};

/* What the callbacks get: one trace, or one per process. */
struct ctf_set {
  struct tool_source *src;
  struct ctf *one;   /* one process */
  struct ctf **per;  /* several: by index in src->procs */
  int nper;
  const char *outdir;
  uint8_t clock_uuid[16];
  int clock_uuid_known;
};

/* ------------------------------------------------------------------ */
/* Packets.                                                             */

/* Writes all of `len` bytes at the file's end; 0 or -1 with errno. */
static int write_all(int fd, const uint8_t *p, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void stream_name(char *name, size_t size, int domain) {
  snprintf(name, size, "stream_%d", domain);
}

/* Completes the open packet's context and appends the packet to the
 * stream's file; 0 or -1 with errno. */
static int flush_packet(struct ctf *c, struct stream *s, int domain) {
  if (s->len == 0) return 0;
  put64(s->buf + PC_TS_BEGIN, s->ts_first);
  put64(s->buf + PC_TS_END, s->ts_last);
  put64(s->buf + PC_CONTENT_SIZE, (uint64_t)s->len * 8);
  put64(s->buf + PC_PACKET_SIZE, (uint64_t)s->len * 8);
  put64(s->buf + PC_SEQ_NUM, s->seq);
  char name[32];
  stream_name(name, sizeof name, domain);
  int rc = -1, fd = openat(c->dirfd, name, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd >= 0) {
    rc = write_all(fd, s->buf, s->len);
    int err = errno;
    if (close(fd) < 0 && rc == 0) err = errno, rc = -1;
    errno = err;
  }
  c->buffered -= s->len;
  s->len = 0;
  s->seq++;
  return rc;
}

/* Writes every open packet; returns 0, or -1 with errno and
 * c->failed_domain of the first failure.  With `release` the packets'
 * buffers are freed as well: the memory they took is what the bound is
 * about. */
static int flush_all(struct ctf *c, int release) {
  int rc = 0, err = 0;
  for (int d = 0; d < c->max_domains; d++) {
    struct stream *s = c->streams[d];
    if (!s) continue;
    if (flush_packet(c, s, d) < 0 && rc == 0) {
      rc = -1;
      err = errno;
      c->failed_domain = d;
    }
    if (release) {
      free(s->buf);
      s->buf = NULL;
      s->cap = 0;
    }
  }
  if (rc < 0) errno = err;
  return rc;
}

/* ------------------------------------------------------------------ */
/* The output directory and the metadata.                               */

/* Creates `dir`, or accepts it when it is an empty directory.  Sets
 * *created when we made it.  Prints the error line and returns -1 on
 * failure. */
static int make_outdir(const char *dir, int *created) {
  *created = 0;
  if (mkdir(dir, 0777) == 0) {
    *created = 1;
    return 0;
  }
  if (errno != EEXIST) {
    tool_error("%s: cannot create the output directory: %s", dir,
               strerror(errno));
    return -1;
  }
  DIR *d = opendir(dir);
  if (!d) {
    tool_error("%s: exists and is not a usable directory: %s", dir,
               strerror(errno));
    return -1;
  }
  struct dirent *e;
  int empty = 1;
  while (empty && (e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = 0;
  closedir(d);
  if (!empty) {
    tool_error("%s: the output directory exists and is not empty "
               "(give a new or an empty one)",
               dir);
    return -1;
  }
  return 0;
}

/* Writes `s` into a TSDL string literal: the printable ASCII characters
 * other than the quote and the backslash as they are, those two escaped,
 * every other byte as '?', which keeps the metadata plain ASCII. */
static void put_tsdl_string(FILE *f, const char *s) {
  putc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else
      putc(*p >= 32 && *p < 127 ? *p : '?', f);
  }
  putc('"', f);
}

static void put_uuid(FILE *f, const uint8_t *u) {
  for (int i = 0; i < 16; i++)
    fprintf(f, "%02x%s", u[i], i == 3 || i == 5 || i == 7 || i == 9 ? "-" : "");
}

static const char metadata_types[] =
    "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
    "typealias integer { size = 16; align = 8; signed = false; } := "
    "uint16_t;\n"
    "typealias integer { size = 32; align = 8; signed = false; } := "
    "uint32_t;\n"
    "typealias integer { size = 64; align = 8; signed = false; } := "
    "uint64_t;\n"
    "typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n"
    "\n";

static const char metadata_streams[] =
    "clock {\n"
    "\tname = monotonic;\n"
    "\tdescription = \"CLOCK_MONOTONIC of the machine that wrote the ring, "
    "in nanoseconds\";\n"
    "\tfreq = 1000000000;\n"
    "\tprecision = 1;\n"
    "\toffset_s = 0;\n"
    "\toffset = 0;\n"
    "\tabsolute = false;\n"
    "};\n"
    "\n"
    "typealias integer {\n"
    "\tsize = 64; align = 8; signed = false;\n"
    "\tmap = clock.monotonic.value;\n"
    "} := clock_ns_t;\n"
    "\n"
    "stream {\n"
    "\tid = 0;\n"
    "\tpacket.context := struct {\n"
    "\t\tclock_ns_t timestamp_begin;\n"
    "\t\tclock_ns_t timestamp_end;\n"
    "\t\tuint64_t content_size;\n"
    "\t\tuint64_t packet_size;\n"
    "\t\tuint64_t packet_seq_num;\n"
    "\t\tuint32_t domain;\n"
    "\t};\n"
    "\tevent.header := struct {\n"
    "\t\tuint16_t id;\n"
    "\t\tclock_ns_t timestamp;\n"
    "\t};\n"
    "};\n"
    "\n"
    "enum span_edge : uint8_t { \"begin\" = 0, \"end\" = 1 };\n"
    "\n";

/* The event classes: name and fields, indexed by enum ev_class. */
static const char *const event_classes[][2] = {
    {"runtime_begin", "uint32_t phase; string name;"},
    {"runtime_end", "uint32_t phase; string name;"},
    {"runtime_counter", "uint32_t counter; string name; uint64_t value;"},
    {"alloc", "uint64_t buckets[20];"},
    {"lifecycle",
     "uint32_t kind; string name; int64_t value; uint8_t has_value;"},
    {"user_unit", "uint32_t id; string name;"},
    {"user_int", "uint32_t id; string name; int64_t value;"},
    {"user_span", "uint32_t id; string name; enum span_edge value;"},
    {"user_custom",
     "uint32_t id; string name; uint32_t length; uint8_t payload[length]; "
     "string value;"},
    {"lost_events", "uint64_t count; string unit;"},
};

#define N_EVENT_CLASSES (sizeof event_classes / sizeof event_classes[0])

static int write_metadata(struct ctf *c, const uint8_t *clock_uuid) {
  int fd = openat(c->dirfd, "metadata",
                  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) goto fail;
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    goto fail;
  }
  fputs("/* CTF 1.8 */\n"
        "/* Written by eventring " EVENTRING_VERSION
        " (eventring ctf) from a runtime events ring file. */\n\n",
        f);
  fputs(metadata_types, f);
  fputs("trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"", f);
  put_uuid(f, c->uuid);
  fputs("\";\n\tbyte_order = le;\n"
        "\tpacket.header := struct {\n"
        "\t\tuint32_t magic;\n"
        "\t\tuint8_t uuid[16];\n"
        "\t\tuint32_t stream_id;\n"
        "\t};\n"
        "};\n\n",
        f);
  fputs("env {\n\ttracer_name = \"eventring\";\n\ttracer_version = ", f);
  put_tsdl_string(f, EVENTRING_VERSION);
  fputs(";\n\tsource = ", f);
  put_tsdl_string(f, c->path);
  /* Not `hostname` nor `domain`: babeltrace2 would print those with
   * every event. */
  if (c->program && c->program[0]) {
    fputs(";\n\tprogram = ", f);
    put_tsdl_string(f, c->program);
  }
  if (c->pid) fprintf(f, ";\n\tpid = %ld", (long)c->pid);
  fprintf(f, ";\n\tlost_unit = \"%s\";\n};\n\n", c->lost_unit);
  if (clock_uuid) {
    /* The clock block with the machine's boot id as its UUID, so that a
     * reader merges the traces of several processes on it. */
    static const char head[] = "clock {\n\tname = monotonic;\n";
    fputs(head, f);
    fputs("\tuuid = \"", f);
    put_uuid(f, clock_uuid);
    fputs("\";\n", f);
    fputs(metadata_streams + sizeof head - 1, f);
  } else {
    fputs(metadata_streams, f);
  }
  for (size_t i = 0; i < N_EVENT_CLASSES; i++)
    fprintf(f,
            "event {\n\tname = \"%s\";\n\tid = %zu;\n\tstream_id = 0;\n"
            "\tfields := struct { %s };\n};\n\n",
            event_classes[i][0], i, event_classes[i][1]);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) goto fail;
  return 0;
fail:
  tool_error("%s/metadata: %s", c->outdir, strerror(errno ? errno : EIO));
  return -1;
}

/* ------------------------------------------------------------------ */
/* Events.                                                              */

static void *grow(void *p, size_t *cap, size_t need) {
  if (need <= *cap) return p;
  size_t n = *cap ? *cap : 256;
  while (n < need) n *= 2;
  void *q = realloc(p, n);
  if (!q) {
    tool_error("out of memory");
    exit(TOOL_EXIT_INPUT);
  }
  *cap = n;
  return q;
}

static uint8_t *ev_room(struct ctf *c, size_t n) {
  c->ev = grow(c->ev, &c->ev_cap, c->ev_len + n);
  uint8_t *p = c->ev + c->ev_len;
  c->ev_len += n;
  return p;
}

static void ev_u8(struct ctf *c, uint8_t v) { *ev_room(c, 1) = v; }
static void ev_u32(struct ctf *c, uint32_t v) { put32(ev_room(c, 4), v); }
static void ev_u64(struct ctf *c, uint64_t v) { put64(ev_room(c, 8), v); }

static void ev_bytes(struct ctf *c, const void *p, size_t n) {
  if (n) memcpy(ev_room(c, n), p, n);
}

/* A CTF string: the bytes and a NUL (the text never holds one: it is
 * what tool_put_name or tool_put_ocaml_string wrote). */
static void ev_string(struct ctf *c, const char *s, size_t n) {
  ev_bytes(c, s, n);
  ev_u8(c, 0);
}

/* Starts an event: its header with a time filled in later. */
static void ev_start(struct ctf *c, enum ev_class cls) {
  c->ev_len = 0;
  uint8_t *p = ev_room(c, 10);
  p[0] = (uint8_t)cls;
  p[1] = (uint8_t)(cls >> 8);
}

/* Fetches what the name stream wrote; returns its length. */
static size_t name_text(struct ctf *c) {
  fflush(c->name_out);
  size_t n = (size_t)ftell(c->name_out);
  rewind(c->name_out);
  return n;
}

/* The name of id `id` of kind `k` as dump prints it: `name`, else the
 * file's, else the kind's fallback. */
static void ev_name(struct ctf *c, enum tool_name_kind k, int id,
                    const char *name) {
  if (!name) name = tool_file_name(c->src->cursor, k, id); /* this one's */
  tool_put_name(c->name_out, name, tool_name_fallback[k], id);
  ev_string(c, c->name_buf, name_text(c));
}

/* Reports a failure to write the trace, writes what can still be
 * written and exits: nothing read later could be kept. */
static void fail_write(struct ctf *c, int domain, int err) {
  tool_error("%s/stream_%d: %s", c->outdir, domain, strerror(err));
  flush_all(c, 0);
  exit(TOOL_EXIT_INPUT);
}

/* The stream of `domain`, its file created on first use. */
static struct stream *stream_of(struct ctf *c, int domain) {
  /* The cursor checks domains against the file's count; this is the
   * array's guard all the same. */
  if (domain < 0 || domain >= c->max_domains) {
    tool_error("%s: event of domain %d, beyond the file's %d domains",
               c->path, domain, c->max_domains);
    flush_all(c, 0);
    exit(TOOL_EXIT_INPUT);
  }
  struct stream *s = c->streams[domain];
  if (s) return s;
  s = calloc(1, sizeof *s);
  if (!s) {
    tool_error("out of memory");
    flush_all(c, 0);
    exit(TOOL_EXIT_INPUT);
  }
  /* Created now, so that the streams appear in the domains' order and a
   * name taken by someone else is reported at once. */
  char name[32];
  stream_name(name, sizeof name, domain);
  int fd = openat(c->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                  0666);
  if (fd < 0 || close(fd) < 0) {
    free(s);
    fail_write(c, domain, errno);
  }
  c->streams[domain] = s;
  return s;
}

/* Appends the event of `len` bytes at `ev` (its time left out) to
 * `domain`'s stream with time `ts`. */
static void append(struct ctf *c, struct stream *s, int domain, uint8_t *ev,
                   size_t len, uint64_t ts) {
  if (s->has_events && ts < s->ts_last) {
    c->backwards++;
    ts = s->ts_last;
  }
  put64(ev + 2, ts);
  if (s->len > 0 && s->len + len > PACKET_MAX && flush_packet(c, s, domain) < 0)
    fail_write(c, domain, errno);
  if (c->buffered + len + PACKET_HEAD > BUFFERED_MAX && flush_all(c, 1) < 0)
    fail_write(c, c->failed_domain, errno);
  size_t before = s->len;
  s->buf = grow(s->buf, &s->cap, (s->len ? s->len : PACKET_HEAD) + len);
  if (s->len == 0) {
    /* The context's times and sizes are filled in by flush_packet(). */
    memset(s->buf, 0, PACKET_HEAD);
    put32(s->buf + PH_MAGIC, CTF_MAGIC);
    memcpy(s->buf + PH_UUID, c->uuid, 16);
    put32(s->buf + PH_STREAM_ID, 0);
    put32(s->buf + PC_DOMAIN, (uint32_t)domain);
    s->len = PACKET_HEAD;
    s->ts_first = ts;
  }
  memcpy(s->buf + s->len, ev, len);
  s->len += len;
  c->buffered += s->len - before;
  s->ts_last = ts;
  s->has_events = 1;
}

/* Writes a loss that waited for a time. */
static void append_lost(struct ctf *c, struct stream *s, int domain,
                        uint64_t ts) {
  uint8_t ev[64];
  size_t n = strlen(c->lost_unit) + 1;
  s->lost_pending = 0;
  ev[0] = (uint8_t)EV_LOST_EVENTS;
  ev[1] = 0;
  put64(ev + 10, s->lost_count);
  memcpy(ev + 18, c->lost_unit, n);
  append(c, s, domain, ev, 18 + n, ts);
}

/* Ends an event callback: writes the event built in c->ev (after a loss
 * that waited for its time) and returns the callback's answer. */
static int emit(struct ctf *c, int domain, uint64_t ts) {
  struct stream *s = stream_of(c, domain);
  if (s->lost_pending) append_lost(c, s, domain, ts);
  append(c, s, domain, c->ev, c->ev_len, ts);
  return 1;
}

static struct ctf *ctf_of(void *data);
static void ctf_free(struct ctf *c);

static int on_phase(struct ctf *c, enum ev_class cls, int domain,
                    uint64_t ts, int phase) {
  ev_start(c, cls);
  ev_u32(c, (uint32_t)phase);
  ev_name(c, TOOL_NAME_PHASE, phase, NULL);
  return emit(c, domain, ts);
}

static int on_begin(void *data, int domain, uint64_t ts, int phase) {
  return on_phase(ctf_of(data), EV_RUNTIME_BEGIN, domain, ts, phase);
}

static int on_end(void *data, int domain, uint64_t ts, int phase) {
  return on_phase(ctf_of(data), EV_RUNTIME_END, domain, ts, phase);
}

static int on_counter(void *data, int domain, uint64_t ts, int counter,
                      uint64_t value) {
  struct ctf *c = ctf_of(data);
  ev_start(c, EV_RUNTIME_COUNTER);
  ev_u32(c, (uint32_t)counter);
  ev_name(c, TOOL_NAME_COUNTER, counter, NULL);
  ev_u64(c, value);
  return emit(c, domain, ts);
}

static int on_alloc(void *data, int domain, uint64_t ts,
                    const uint64_t *buckets) {
  struct ctf *c = ctf_of(data);
  ev_start(c, EV_ALLOC);
  for (int i = 0; i < EVENTRING_ALLOC_BUCKETS; i++) ev_u64(c, buckets[i]);
  return emit(c, domain, ts);
}

static int on_lifecycle(void *data, int domain, uint64_t ts, int kind,
                        int64_t value, int has_data) {
  struct ctf *c = ctf_of(data);
  tool_source_lifecycle(c->src, kind);
  ev_start(c, EV_LIFECYCLE);
  ev_u32(c, (uint32_t)kind);
  ev_name(c, TOOL_NAME_LIFECYCLE, kind, NULL);
  ev_u64(c, has_data ? (uint64_t)value : 0);
  ev_u8(c, has_data != 0);
  return emit(c, domain, ts);
}

static void user_head(struct ctf *c, enum ev_class cls, int id,
                      const char *name) {
  ev_start(c, cls);
  ev_u32(c, (uint32_t)id);
  ev_name(c, TOOL_NAME_USER, id, name);
}

static int on_user_unit(void *data, int domain, uint64_t ts, int id,
                        const char *name) {
  struct ctf *c = ctf_of(data);
  user_head(c, EV_USER_UNIT, id, name);
  return emit(c, domain, ts);
}

static int on_user_int(void *data, int domain, uint64_t ts, int id,
                       const char *name, int64_t value) {
  struct ctf *c = ctf_of(data);
  user_head(c, EV_USER_INT, id, name);
  ev_u64(c, (uint64_t)value);
  return emit(c, domain, ts);
}

static int on_user_span(void *data, int domain, uint64_t ts, int id,
                        const char *name, int is_end) {
  struct ctf *c = ctf_of(data);
  user_head(c, EV_USER_SPAN, id, name);
  ev_u8(c, is_end != 0);
  return emit(c, domain, ts);
}

static int on_user_custom(void *data, int domain, uint64_t ts, int id,
                          const char *name, const void *bytes, size_t len) {
  struct ctf *c = ctf_of(data);
  user_head(c, EV_USER_CUSTOM, id, name);
  ev_u32(c, (uint32_t)len);
  ev_bytes(c, bytes, len);
  tool_put_ocaml_string(c->name_out, bytes, len);
  ev_string(c, c->name_buf, name_text(c));
  return emit(c, domain, ts);
}

static int on_lost(void *data, int domain, uint64_t count) {
  struct ctf *c = ctf_of(data);
  tool_source_lost(c->src, domain, count);
  struct stream *s = stream_of(c, domain);
  /* Two losses in a row (the cursor reports one per gap, so this does
   * not happen in practice) each keep their own event. */
  if (s->lost_pending)
    append_lost(c, s, domain, s->has_events ? s->ts_last : 0);
  s->lost_pending = 1;
  s->lost_count = count;
  return 1;
}

/* Writes the losses nothing followed, then every open packet.  Returns 0,
 * or -1 after reporting an error. */
static int finish(struct ctf *c) {
  int rc = 0;
  for (int d = 0; d < c->max_domains; d++) {
    struct stream *s = c->streams[d];
    if (s && s->lost_pending)
      append_lost(c, s, d, s->has_events ? s->ts_last : 0);
  }
  if (flush_all(c, 0) < 0) {
    tool_error("%s/stream_%d: %s", c->outdir, c->failed_domain,
               strerror(errno));
    rc = -1;
  }
  return rc;
}

/* ------------------------------------------------------------------ */
/* One trace per process.                                               */

/* The machine's boot id, the UUID of its CLOCK_MONOTONIC.  Returns 1, or
 * 0 when it cannot be read. */
static int boot_id(uint8_t *u) {
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
  char text[64] = "";
  if (!f) return 0;
  int ok = fgets(text, sizeof text, f) != NULL;
  fclose(f);
  int n = 0;
  for (const char *p = text; ok && *p && n < 32; p++) {
    if (*p == '-') continue;
    int v = *p >= '0' && *p <= '9'   ? *p - '0'
            : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
                                     : -1;
    if (v < 0) break;
    if (n % 2 == 0) u[n / 2] = (uint8_t)(v << 4);
    else u[n / 2] |= (uint8_t)v;
    n++;
  }
  return ok && n == 32;
}

/* A trace in directory `dir` (which exists) of the file `path` that
 * `cursor` reads; NULL after reporting why not. */
static struct ctf *ctf_new(struct tool_source *src, const char *dir,
                           const eventring_cursor *cursor, const char *path,
                           const char *program, pid_t pid,
                           const uint8_t *clock_uuid) {
  struct ctf *c = calloc(1, sizeof *c);
  if (!c) {
    tool_error("out of memory");
    return NULL;
  }
  c->dirfd = -1;
  c->src = src;
  c->path = path;
  c->program = program;
  c->pid = pid;
  snprintf(c->dir_buf, sizeof c->dir_buf, "%s", dir);
  c->outdir = c->dir_buf;
  c->lost_unit = tool_lost_unit(cursor);
  c->max_domains = eventring_cursor_max_domains(cursor);
  if (c->max_domains < 1) c->max_domains = 1;
  c->streams = calloc((size_t)c->max_domains, sizeof *c->streams);
  c->name_out = open_memstream(&c->name_buf, &c->name_size);
  c->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (!c->streams || !c->name_out) {
    tool_error("out of memory");
    goto fail;
  }
  if (c->dirfd < 0) {
    tool_error("%s: %s", dir, strerror(errno));
    goto fail;
  }
  if (getrandom(c->uuid, sizeof c->uuid, 0) != (ssize_t)sizeof c->uuid) {
    /* No entropy source: a UUID unique enough for one trace. */
    uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^
                 (uint64_t)(uintptr_t)c;
    for (int i = 0; i < 16; i++)
      c->uuid[i] = (uint8_t)(t >> (8 * (i % 8)) ^ i);
  }
  c->uuid[6] = (uint8_t)((c->uuid[6] & 0x0f) | 0x40); /* version 4 */
  c->uuid[8] = (uint8_t)((c->uuid[8] & 0x3f) | 0x80); /* RFC 4122 variant */
  if (write_metadata(c, clock_uuid) < 0) goto fail;
  return c;
fail:
  ctf_free(c);
  return NULL;
}

static int ctf_finish(struct ctf *c) {
  int rc = finish(c);
  if (c->backwards > 0)
    tool_error("%s: %" PRIu64 " events had a time earlier than the one "
               "before them in their domain; they have that one's time",
               c->path, c->backwards);
  return rc;
}

static void ctf_free(struct ctf *c) {
  if (!c) return;
  if (c->dirfd >= 0) close(c->dirfd);
  for (int d = 0; c->streams && d < c->max_domains; d++)
    if (c->streams[d]) {
      free(c->streams[d]->buf);
      free(c->streams[d]);
    }
  free(c->streams);
  free(c->ev);
  if (c->name_out) fclose(c->name_out);
  free(c->name_buf);
  free(c);
}

/* The trace of the process being read: the one trace, or, with several
 * processes, the process's own, made in OUTDIR/PID at its first event.
 * A trace that cannot be made ends the command, as a failed write does. */
static struct ctf *ctf_of(void *data) {
  struct ctf_set *set = data;
  if (set->one) return set->one;
  const struct tool_source *src = set->src;
  int i = src->proc;
  if (i >= set->nper) {
    int n = i + 8;
    struct ctf **v = realloc(set->per, (size_t)n * sizeof *v);
    if (!v) {
      tool_error("out of memory");
      exit(TOOL_EXIT_INPUT);
    }
    memset(v + set->nper, 0, (size_t)(n - set->nper) * sizeof *v);
    set->per = v;
    set->nper = n;
  }
  if (set->per[i]) return set->per[i];
  const struct tool_proc *p = src->procs[i];
  char dir[4096];
  struct stat st;
  long id = p->pid ? (long)p->pid : (long)i + 1;
  snprintf(dir, sizeof dir, "%s/%ld", set->outdir, id);
  for (int k = 2; stat(dir, &st) == 0; k++)
    snprintf(dir, sizeof dir, "%s/%ld.%d", set->outdir, id, k);
  if (mkdir(dir, 0777) < 0) {
    tool_error("%s: %s", dir, strerror(errno));
    exit(TOOL_EXIT_INPUT);
  }
  set->per[i] = ctf_new(set->src, dir, p->cursor, p->path, p->name, p->pid,
                        set->clock_uuid_known ? set->clock_uuid : NULL);
  if (!set->per[i]) exit(TOOL_EXIT_INPUT);
  return set->per[i];
}

static void help(void) {
  printf(
      "Usage: eventring ctf [OPTION]... -o OUTDIR FILE.events...\n"
      "   or: eventring ctf [OPTION]... -o OUTDIR --pid PID [--dir DIR]\n"
      "   or: eventring ctf [OPTION]... -o OUTDIR --dir DIR\n"
      "   or: eventring ctf [OPTION]... -o OUTDIR -- COMMAND [ARG]...\n"
      "Write the events of a ring file as a CTF 1.8 trace in OUTDIR (a new\n"
      "or empty directory): a 'metadata' file and one 'stream_D' file per\n"
      "domain D, for babeltrace2 and other CTF readers.  The trace has one\n"
      "event per line of 'eventring dump' (losses included), with the "
      "same\n"
      "values; times are CLOCK_MONOTONIC nanoseconds.  Every operand is a\n"
      "ring file to read.  A COMMAND keeps standard output and error to\n"
      "itself.\n"
      "\n"
      "Options:\n"
      "  -o OUTDIR, --output OUTDIR\n"
      "                 write the trace into directory OUTDIR\n"
      TOOL_HELP_PID_DIR ", each process a trace in "
      "OUTDIR/PID\n"
      "  -f, --follow   keep reading until the writing process has exited\n"
      "                 (always done for a COMMAND, which is run traced)\n"
      TOOL_HELP_WAIT
      TOOL_HELP_OCAML5X
      TOOL_HELP_FILTERS_HEAD
      "                 (see eventring(1), FILTERS)\n"
      "  -h, --help     print this help and exit\n"
      "\n"
      "Exit status: 0 success, 1 unreadable input or unwritable output, "
      "2 bad\n"
      "usage.  See eventring(1).\n");
}

int tool_ctf(int argc, char **argv) {
  static const struct option longopts[] = {
      TOOL_SOURCE_OPTIONS,
      TOOL_FILTER_OPTIONS,
      TOOL_OUTPUT_OPTION,
      {NULL, 0, NULL, 0},
  };
  struct tool_source src;
  memset(&src, 0, sizeof src);
  const char *outdir = NULL;
  int opt;
  int rc;
  while ((opt = tool_getopt(argc, argv, ":fho:", longopts)) != -1) {
    if (opt == 'o')
      outdir = optarg;
    else if ((rc = tool_source_other(&src, opt, argv, HELP_REF, help)) >= 0)
      return rc;
  }
  /* The form that took OUTDIR as the first operand is refused with the
   * command to type instead. */
  if (!outdir) {
    if (optind >= argc)
      return tool_usage_error(HELP_REF, "no output directory given (-o "
                                        "OUTDIR)");
    struct stat st;
    if (stat(argv[optind], &st) == 0 && !S_ISDIR(st.st_mode))
      return tool_usage_error(HELP_REF, "no output directory given: write "
                                        "'eventring ctf -o OUTDIR %s%s'",
                              argv[optind], optind + 1 < argc ? " ..." : "");
    return tool_usage_error(HELP_REF, "ctf takes its output directory with "
                                      "-o, and reads every operand: write "
                                      "'eventring ctf -o %s %s%s'",
                            argv[optind],
                            optind + 1 < argc ? argv[optind + 1] : "FILE",
                            optind + 2 < argc ? " ..." : "");
  }
  if (!*outdir) return tool_usage_error(HELP_REF, "empty output directory");
  if (!strcmp(outdir, "-"))
    return tool_usage_error(HELP_REF, "a CTF trace is a directory and cannot "
                                      "go to standard output (give -o OUTDIR)");

  /* The directory is checked before the source is opened, so that a bad
   * one is reported before anything else happens, and removed again
   * when the source cannot be opened. */
  int created;
  if (make_outdir(outdir, &created) < 0) return TOOL_EXIT_INPUT;
  /* Several files or a directory: a trace per process.  A command stays
   * one process. */
  struct stat dst;
  int several = argc - optind > 1 || (src.dir && !src.pid_arg) ||
                (argc - optind == 1 && stat(argv[optind], &dst) == 0 &&
                 S_ISDIR(dst.st_mode));
  src.multi = several;
  rc = tool_source_open(&src, argc - optind, argv + optind, HELP_REF);
  if (rc != TOOL_EXIT_OK) {
    if (created) rmdir(outdir);
    return rc;
  }

  struct ctf_set set;
  memset(&set, 0, sizeof set);
  set.src = &src;
  set.outdir = outdir;
  static const struct tool_handlers handlers = {
      on_begin,     on_end,      on_counter,   on_alloc,       on_lifecycle,
      on_user_unit, on_user_int, on_user_span, on_user_custom, on_lost,
      NULL /* thread-switch markers: not shown */, NULL};
  eventring_callbacks *cb = tool_callbacks_new(&handlers);
  if (!cb) {
    tool_error("out of memory");
    rc = TOOL_EXIT_INPUT;
    goto out;
  }
  if (several) {
    set.clock_uuid_known = boot_id(set.clock_uuid);
  } else {
    set.one = ctf_new(&src, outdir, src.cursor, src.path, src.name, src.pid,
                      NULL);
    if (!set.one) {
      rc = TOOL_EXIT_INPUT;
      goto out;
    }
  }

  rc = tool_source_read(&src, cb, &set);
  /* A read error or an interruption (src.interrupted) still leaves a
   * readable trace of what came before it. */
  if (set.one && ctf_finish(set.one) < 0) rc = TOOL_EXIT_INPUT;
  for (int i = 0; i < set.nper; i++)
    if (set.per[i] && ctf_finish(set.per[i]) < 0) rc = TOOL_EXIT_INPUT;
  tool_source_lost_summary(&src, stderr);

out:
  ctf_free(set.one);
  for (int i = 0; i < set.nper; i++) ctf_free(set.per[i]);
  free(set.per);
  eventring_callbacks_free(cb);
  tool_source_close(&src);
  int out = tool_output_finish();
  return rc != TOOL_EXIT_OK ? rc : out;
}
