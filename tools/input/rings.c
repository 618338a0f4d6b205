/* rings.c -- ring files and the processes that write them: the pids in
 * file names, finding a process's file, whether a writer is gone, and
 * the messages for a file's errors, losses and phase numbering.  The
 * bottom of the input layer with events.c and walltime.c: it calls no
 * other file of it but progress.c.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ring_format.h"
#include "starttime.h"
#include "input/input.h"

/* How often --follow asks whether the writer still maps its file (the
 * kernel walks the process's mappings to answer), and how long a writer
 * that has never been seen mapping it (a pid reused by another program,
 * a file found before its writer mapped it) is given. */
#define MAPS_CHECK_NS 100000000ULL
#define UNMAPPED_GRACE_NS 1000000000ULL

int tool_source_numbering(const struct tool_source *src) {
  return src->ocaml50   ? EVENTRING_NUMBERING_OCAML50
         : src->ocaml53 ? EVENTRING_NUMBERING_OCAML53
                        : EVENTRING_NUMBERING_AUTO;
}

/* One line when the phase events of an OCaml 5 file could not tell its
 * numbering (eventring's own files record theirs): the phase names shown
 * are then a guess, and the user is the one who knows the OCaml version.
 * Judged once the file has been read, since the cursor goes on looking
 * while a live writer writes; a file with no event names nothing and
 * draws no warning. */
void tool_warn_numbering(const eventring_cursor *c, const char *path) {
  int basis;
  int n = eventring_cursor_numbering(c, &basis);
  if (basis == EVENTRING_NUMBERING_GUESSED)
    tool_error("%s: cannot tell OCaml 5.0-5.2 from 5.3+ phase numbering "
               "(too few phase events); assuming 5.3+, use --ocaml50 or "
               "--ocaml53 to choose", path);
  else if (basis == EVENTRING_NUMBERING_CONFLICTING)
    tool_error("%s: the phase events fit neither OCaml 5.0-5.2's nor 5.3+'s "
               "phase numbering; assuming %s, use --ocaml50 or --ocaml53 to "
               "choose", path,
               n == EVENTRING_NUMBERING_OCAML50 ? "5.0-5.2" : "5.3+");
  /* An id past every OCaml list the library has is shown as a number:
   * say why once.  It is a later OCaml's, or one of 5.5's whose id was
   * not read from a header, so the line claims neither. */
  int kind, id;
  if (eventring_cursor_ocaml_release(c, &kind, &id) == EVENTRING_OCAML_LATER) {
    const char *k = kind == EVENTRING_ID_COUNTER ? "counter" : "phase";
    tool_error("%s: %s id %d has no name in eventring's lists (OCaml 5.0 "
               "to %d.%d's headers as read; a later or unlisted id); shown "
               "as %s_%d", path, k, id, EVENTRING_OCAML_LATEST / 10,
               EVENTRING_OCAML_LATEST % 10, k, id);
  }
}

pid_t tool_parse_pid(const char *s, size_t len) {
  if (len == 0 || len > 10) return 0;
  long long v = 0;
  for (size_t i = 0; i < len; i++) {
    if (!isdigit((unsigned char)s[i])) return 0;
    v = v * 10 + (s[i] - '0');
  }
  return v >= 1 && v <= INT_MAX ? (pid_t)v : 0;
}

pid_t tool_ring_name(const char *path, unsigned long *image) {
  const char *base = strrchr(path, '/');
  int32_t pid;
  unsigned long nth;
  if (!er_ring_name(base ? base + 1 : path, &pid, &nth)) return 0;
  if (image) *image = nth;
  return pid;
}

pid_t tool_pid_of_path(const char *path) { return tool_ring_name(path, NULL); }

void tool_process_name(pid_t pid, char *name, size_t size) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/comm", (long)pid);
  name[0] = '\0';
  FILE *f = fopen(path, "re");
  if (!f) return;
  if (fgets(name, (int)size, f)) name[strcspn(name, "\n")] = '\0';
  fclose(f);
}

/* ------------------------------------------------------------------ */
/* Finding a process's ring file.                                       */
/*                                                                      */
/* The library names the file <dir>/<pid>.events, dir coming from the   */
/* process's own OCAML_RUNTIME_EVENTS_DIR or its working directory, so  */
/* the tool's environment and working directory say little about where  */
/* it is.  The process itself does: it maps the file shared for as long */
/* as it traces, and /proc/PID/maps names every file mapping.  Only a   */
/* mapping named <pid>.events counts: a child forked from a traced      */
/* process still maps its parent's file.  When the maps show nothing    */
/* (tracing stopped with OCAML_RUNTIME_EVENTS_PRESERVE, a file not      */
/* mapped yet), the process's environment and working directory give    */
/* where the library put or will put it; the tool's own                 */
/* OCAML_RUNTIME_EVENTS_DIR or working directory come last.             */

/* One file mapping of a process, from a line of /proc/PID/maps. */
struct mapping {
  unsigned long start, end;
  dev_t dev;
  ino_t ino;
  const char *path; /* points into the line; " (deleted)" cut off */
  int deleted;
};

/* Parses a line of /proc/PID/maps ("start-end perms offset maj:min inode
 * path").  Returns 1 for a shared mapping of a file, else 0. */
static int parse_mapping(char *line, struct mapping *m) {
  char perms[8];
  unsigned long long off, ino;
  unsigned maj, min;
  int at = 0;
  line[strcspn(line, "\n")] = '\0';
  if (sscanf(line, "%lx-%lx %7s %llx %x:%x %llu %n", &m->start, &m->end,
             perms, &off, &maj, &min, &ino, &at) < 7 || at == 0)
    return 0;
  if (strlen(perms) < 4 || perms[3] != 's' || line[at] != '/') return 0;
  m->dev = makedev(maj, min);
  m->ino = (ino_t)ino;
  m->path = line + at;
  static const char deleted[] = " (deleted)";
  size_t n = strlen(m->path), dn = sizeof deleted - 1;
  m->deleted = n > dn && !strcmp(line + at + n - dn, deleted);
  if (m->deleted) line[at + n - dn] = '\0';
  return 1;
}

/* Whether `path`'s last component is `name`. */
static int base_is(const char *path, const char *name) {
  const char *b = strrchr(path, '/');
  return !strcmp(b ? b + 1 : path, name);
}

/* Whether an eventring file names a writer other than `pid` in its
 * extension block (OCaml 5's files, which have none, name nobody). */
static int names_other_writer(const char *path, pid_t pid) {
  eventring_cursor *c;
  if (eventring_cursor_open_file(&c, path) != 0) return 0;
  pid_t w = eventring_cursor_writer_pid(c);
  eventring_cursor_free(c);
  return w && w != pid;
}

/* Looks through the shared file mappings of `pid` for its ring file.
 * Returns 1 with its path in `path` (the name it is mapped under, or
 * /proc/PID/map_files/... when that name no longer leads to it: removed,
 * or in another mount namespace), 0 when there is none, or -errno when
 * the maps cannot be read (EACCES: another user's process). */
static int find_in_maps(pid_t pid, char *path, size_t size) {
  char maps[64], want[32], line[PATH_MAX + 128];
  snprintf(maps, sizeof maps, "/proc/%ld/maps", (long)pid);
  snprintf(want, sizeof want, "%ld.events", (long)pid);
  FILE *f = fopen(maps, "re");
  if (!f) return -errno;
  int found = 0;
  struct mapping m;
  while (!found && fgets(line, sizeof line, f)) {
    if (!parse_mapping(line, &m) || !base_is(m.path, want)) continue;
    struct stat st;
    if (!m.deleted && stat(m.path, &st) == 0 && st.st_dev == m.dev &&
        st.st_ino == m.ino) {
      found = snprintf(path, size, "%s", m.path) < (int)size;
    } else {
      /* The mapping's own link opens the very file whatever its name
       * has become (a file system whose inode numbers differ between
       * the two views, overlayfs, lands here too). */
      snprintf(path, size, "/proc/%ld/map_files/%lx-%lx", (long)pid,
               m.start, m.end);
      found = access(path, R_OK) == 0;
    }
    if (found && names_other_writer(path, pid)) found = 0;
  }
  fclose(f);
  return found;
}

/* Whether process `pid` maps the file `dev`/`ino` (or, on file systems
 * whose maps show other device numbers than stat(), one at `real`).
 * Returns 1, 0, or -1 when its maps cannot be read. */
static int maps_file(pid_t pid, dev_t dev, ino_t ino, const char *real) {
  char maps[64], line[PATH_MAX + 128];
  snprintf(maps, sizeof maps, "/proc/%ld/maps", (long)pid);
  FILE *f = fopen(maps, "re");
  if (!f) return -1;
  int found = 0;
  struct mapping m;
  while (!found && fgets(line, sizeof line, f))
    found = parse_mapping(line, &m) &&
            ((m.dev == dev && m.ino == ino) ||
             (!m.deleted && real[0] && !strcmp(m.path, real)));
  fclose(f);
  return found;
}

/* OCAML_RUNTIME_EVENTS_DIR in the environment of `pid` into `dir`, made
 * absolute through the process's working directory.  Returns 1, 0 when
 * it is not set, or -errno when the environment cannot be read. */
static int process_env_dir(pid_t pid, char *dir, size_t size) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%ld/environ", (long)pid);
  FILE *f = fopen(p, "re");
  if (!f) return -errno;
  static const char var[] = "OCAML_RUNTIME_EVENTS_DIR=";
  char *entry = NULL;
  size_t cap = 0;
  int found = 0;
  /* Entries end with a NUL; getdelim keeps it. */
  while (!found && getdelim(&entry, &cap, '\0', f) > 0) {
    if (strncmp(entry, var, sizeof var - 1) != 0) continue;
    const char *v = entry + sizeof var - 1;
    if (!*v) continue;
    if (v[0] == '/')
      found = snprintf(dir, size, "%s", v) < (int)size;
    else
      found = snprintf(dir, size, "/proc/%ld/cwd/%s", (long)pid, v) <
              (int)size;
  }
  free(entry);
  fclose(f);
  return found;
}

/* `dir`/<pid>.events into `path` when that file exists (or exists but
 * cannot be examined) and does not name another writer.  Returns 1 or
 * 0. */
static int try_dir(const char *dir, pid_t pid, char *path, size_t size) {
  struct stat st;
  if (snprintf(path, size, "%s/%ld.events", dir, (long)pid) >= (int)size)
    return 0;
  if (stat(path, &st) != 0 && errno == ENOENT) return 0;
  if (names_other_writer(path, pid)) return 0;
  /* /proc/PID/cwd/... reads fine but says little in a message. */
  char real[PATH_MAX];
  if (!strncmp(path, "/proc/", 6) && realpath(path, real) &&
      strlen(real) < size)
    strcpy(path, real);
  return 1;
}

/* The start time the file at `path` records for its writer, when it names
 * `pid` (starttime.c).  Returns 1 and sets *start, or 0. */
int tool_recorded_start(const char *path, pid_t pid, uint64_t *start) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return 0;
  pid_t writer = 0;
  struct stat st;
  int known = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
              er_file_writer(fd, &writer, start) == 1 && writer == pid;
  close(fd);
  return known;
}

/* Whether the file at `path`, found for live process `pid`, is a stale
 * one: written by an earlier process with the same pid (a pid reused in a
 * container, after the writer was killed), as the start times say. */
static int stale_file(const char *path, pid_t pid) {
  uint64_t recorded, now;
  return tool_recorded_start(path, pid, &recorded) &&
         er_proc_start_time(pid, &now) == 0 && now != recorded;
}

/* TOOL_FIND_OK for the file found at `path`, or TOOL_FIND_NONE with a
 * message when it is stale. */
static int found(const char *path, pid_t pid, const char *who, char *msg,
                 size_t msg_size) {
  if (!stale_file(path, pid)) return TOOL_FIND_OK;
  snprintf(msg, msg_size,
           "%s is stale: an earlier process %ld wrote it and is gone; %s is "
           "not traced (remove the file; a traced process with this pid "
           "replaces it)",
           path, (long)pid, who);
  return TOOL_FIND_NONE;
}

/* The user name of `uid`, or its number, into `buf`. */
static const char *user_name(uid_t uid, char *buf, size_t size) {
  struct passwd *pw = getpwuid(uid);
  if (pw) snprintf(buf, size, "%s", pw->pw_name);
  else snprintf(buf, size, "%lu", (unsigned long)uid);
  return buf;
}

int tool_find_ring(pid_t pid, const char *dir, char *path, size_t size,
                   char *msg, size_t msg_size) {
  char name[64], shown[TOOL_TEXT_BUF(sizeof name)], who[300], user[64];
  msg[0] = '\0';
  tool_process_name(pid, name, sizeof name);
  if (name[0])
    snprintf(who, sizeof who, "process %ld (%s)", (long)pid,
             tool_text(shown, sizeof shown, name, TOOL_TEXT_UTF8));
  else snprintf(who, sizeof who, "process %ld", (long)pid);
  int alive = !tool_process_gone(pid);

  if (dir) {
    /* --dir: look there and nowhere else, but say where it is when the
     * process maps a file elsewhere. */
    if (snprintf(path, size, "%s/%ld.events", dir, (long)pid) >= (int)size) {
      snprintf(msg, msg_size, "%.200s...: %s", dir, strerror(ENAMETOOLONG));
      return TOOL_FIND_ERROR;
    }
    struct stat st;
    if (stat(path, &st) == 0 || errno != ENOENT)
      return alive ? found(path, pid, who, msg, msg_size) : TOOL_FIND_OK;
    char elsewhere[PATH_MAX];
    int r = alive ? find_in_maps(pid, elsewhere, sizeof elsewhere) : 0;
    snprintf(msg, msg_size, "no ring file for pid %ld in %s (no %s): %s%s%s",
             (long)pid, dir, path,
             !alive ? "no such process" : r == 1 ? who : "it is not traced",
             r == 1 ? " maps " : "", r == 1 ? elsewhere : "");
    return alive && r != 1 ? TOOL_FIND_NONE : TOOL_FIND_ERROR;
  }

  if (!alive) {
    if (kill(pid, 0) == 0 || errno == EPERM)
      snprintf(msg, msg_size, "process %ld has exited", (long)pid);
    else
      snprintf(msg, msg_size, "no such process %ld", (long)pid);
    return TOOL_FIND_NOPROC;
  }
  int in_maps = find_in_maps(pid, path, size);
  if (in_maps == 1) return TOOL_FIND_OK;
  char d[PATH_MAX];
  int env = process_env_dir(pid, d, sizeof d);
  if (env == 1 && try_dir(d, pid, path, size))
    return found(path, pid, who, msg, msg_size);
  snprintf(d, sizeof d, "/proc/%ld/cwd", (long)pid);
  if (env >= 0 && try_dir(d, pid, path, size))
    return found(path, pid, who, msg, msg_size);
  const char *own = getenv("OCAML_RUNTIME_EVENTS_DIR");
  if (try_dir(own && *own ? own : ".", pid, path, size))
    return found(path, pid, who, msg, msg_size);

  if (in_maps == -EACCES || in_maps == -EPERM) {
    struct stat st;
    snprintf(d, sizeof d, "/proc/%ld", (long)pid);
    if (stat(d, &st) == 0 && st.st_uid != geteuid())
      snprintf(msg, msg_size,
               "%s belongs to user %s: only that user or root can find and "
               "read its ring file",
               who, user_name(st.st_uid, user, sizeof user));
    else
      snprintf(msg, msg_size, "%s: cannot read /proc/%ld/maps to find its "
               "ring file: %s (try --dir)", who, (long)pid,
               strerror(-in_maps));
    return TOOL_FIND_ERROR;
  }
  snprintf(msg, msg_size,
           "%s is not traced: it maps no ring file; start it with "
           "OCAML_RUNTIME_EVENTS_START=1",
           who);
  return TOOL_FIND_NONE;
}

void tool_dir_of(const char *path, char *dir, size_t size) {
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(dir, size, ".");
  else if (slash == path) snprintf(dir, size, "/");
  else snprintf(dir, size, "%.*s", (int)(slash - path), path);
}

void tool_poll_error(const char *path, int err) {
  tool_progress_end();
  fflush(stdout);
  char why[256];
  tool_error("%s: %s", path,
             err == EVENTRING_E_TRUNCATED
                 ? tool_ring_error(path, err, why, sizeof why)
                 : eventring_strerror(err));
}

const char *tool_ring_error(const char *path, int err, char *buf,
                            size_t size) {
  /* The header's first words tell what the library's code alone cannot
   * put in a static string: the version found, the size expected. */
  uint64_t w[ER_META_WORDS + ER_EXT_WORDS] = {0};
  struct stat st;
  ssize_t got = -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
    got = pread(fd, w, sizeof w, 0);
  if (fd >= 0) close(fd);
  uint64_t version = w[ER_META_VERSION];
  uint64_t ext_version = w[ER_META_WORDS + ER_EXT_VERSION_W];
  uint64_t names = w[ER_META_CUSTOM_EVENTS_OFFSET];
  char user[64];
  switch (err) {
  case EVENTRING_E_VERSION:
    if (got < 8) break;
    if (version == 0)
      snprintf(buf, size, "an unfinished ring file: its writer had not "
               "written the version word yet, or died first");
    else if (version == ER_FORMAT_VERSION)
      snprintf(buf, size, "a ring file whose eventring extension block has "
               "an unsupported version %llu (this eventring reads %d)",
               (unsigned long long)ext_version, ER_EXT_VERSION);
    else
      snprintf(buf, size, "a ring file of an unsupported version %llu (this "
               "eventring reads version %d)", (unsigned long long)version,
               ER_FORMAT_VERSION);
    return buf;
  case EVENTRING_E_TRUNCATED: {
    if (got < 0) break;
    uint64_t want = names + ER_NAME_SLOTS * ER_NAME_SLOT_BYTES;
    int whole = got >= 8 * ER_META_WORDS;
    if (whole && version == ER_FORMAT_VERSION && names < UINT64_MAX / 2 &&
        (uint64_t)st.st_size < want)
      snprintf(buf, size, "truncated ring file: %llu bytes where its header "
               "says %llu", (unsigned long long)st.st_size,
               (unsigned long long)want);
    else if (whole)
      /* Long enough again, or no ring header any more: the file was cut
       * under the reader and has grown since (zeros, or another
       * writer's file). */
      snprintf(buf, size, "truncated ring file: cut while it was read, "
               "and grown again since (%llu bytes now): the events it held "
               "are gone", (unsigned long long)st.st_size);
    else
      snprintf(buf, size, "truncated ring file: %llu bytes, not even its "
               "header", (unsigned long long)st.st_size);
    return buf;
  }
  case EVENTRING_E_NOTRINGFILE:
    snprintf(buf, size, "not a ring file%s", got == 0 ? " (empty)" : "");
    return buf;
  case EVENTRING_E_CORRUPT:
    snprintf(buf, size, "malformed ring file: the sizes and offsets of its "
             "header or of its eventring extension block do not add up");
    return buf;
  case -EPERM:
  case -EACCES:
    if (stat(path, &st) == 0 && st.st_uid != geteuid()) {
      snprintf(buf, size, "the ring file belongs to user %s: only that user "
               "or root can read it", user_name(st.st_uid, user, sizeof user));
      return buf;
    }
    break;
  default: break;
  }
  return eventring_strerror(err);
}

void tool_writer_note(struct tool_writer_state *w, const char *path,
                      pid_t pid) {
  w->writer_start_known =
      pid && tool_recorded_start(path, pid, &w->writer_start);
  struct stat st;
  w->file_known = stat(path, &st) == 0;
  if (w->file_known) {
    w->file_dev = st.st_dev;
    w->file_ino = st.st_ino;
  }
  if (!realpath(path, w->file_real)) w->file_real[0] = '\0';
}

/* a + b, or UINT64_MAX when that does not fit: the cursor bounds each
 * domain's count (2^60), not the sum over thousands of domains. */
uint64_t tool_add_sat(uint64_t a, uint64_t b) {
  uint64_t s;
  return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

void tool_count_lost(const eventring_cursor *c, uint64_t *total,
                     uint64_t **lost, int *lost_n, int domain,
                     uint64_t count) {
  *total = tool_add_sat(*total, count);
  if (domain < 0) return;
  if (domain >= *lost_n) {
    /* Grown to the file's domain count at once: losses are rare, and a
     * file has at most a few thousand domains. */
    int n = eventring_cursor_max_domains(c);
    if (n <= domain) n = domain + 1;
    uint64_t *p = realloc(*lost, (size_t)n * sizeof *p);
    if (!p) return; /* the total above is still right */
    memset(p + *lost_n, 0, (size_t)(n - *lost_n) * sizeof *p);
    *lost = p;
    *lost_n = n;
  }
  (*lost)[domain] = tool_add_sat((*lost)[domain], count);
}

int tool_unrecorded(const eventring_cursor *c, struct tool_unrecorded *u) {
  memset(u, 0, sizeof *u);
  if (!c) return 0;
  int e = eventring_cursor_dropped(c, EVENTRING_NO_DOMAIN, &u->no_slot);
  if (e) return e;
  u->dropped = u->no_slot;
  for (int d = 0; d < eventring_cursor_max_domains(c); d++) {
    uint64_t n, m;
    if ((e = eventring_cursor_dropped(c, d, &n)) != 0 ||
        (e = eventring_cursor_malformed(c, d, &m)) != 0)
      return e;
    u->dropped = tool_add_sat(u->dropped, n);
    u->malformed = tool_add_sat(u->malformed, m);
  }
  return 0;
}

const char *tool_domain_thread(const eventring_cursor *c, int domain,
                               char *buf, size_t size) {
  eventring_slot_thread th;
  buf[0] = '\0';
  if (c && eventring_cursor_slot_thread(c, domain, &th) == 1 && th.name[0])
    tool_text(buf, size, th.name, TOOL_TEXT_UTF8);
  return buf;
}

const char *tool_domain_text(char *buf, size_t size, int domain,
                             const char *thread) {
  if (thread[0])
    snprintf(buf, size, "domain %d (%s)", domain, thread);
  else
    snprintf(buf, size, "domain %d", domain);
  return buf;
}

const char *tool_domain_label(const eventring_cursor *c, int domain,
                              char *buf, size_t size) {
  char name[TOOL_THREAD_BUF];
  return tool_domain_text(buf, size, domain,
                          tool_domain_thread(c, domain, name, sizeof name));
}

/* Up to 8 domains' counts of `get` as "domain D: N", the rest as a
 * count, after `sep` when one is printed. */
static void per_domain(FILE *out, const eventring_cursor *c, const char *sep,
                       int (*get)(const eventring_cursor *, int, uint64_t *)) {
  int shown = 0, more = 0;
  for (int d = 0; d < eventring_cursor_max_domains(c); d++) {
    uint64_t n;
    if (get(c, d, &n) != 0 || n == 0) continue;
    if (shown == 8) {
      more++;
      continue;
    }
    char label[TOOL_DOMAIN_BUF];
    fprintf(out, "%s%s: %llu", shown ? ", " : sep,
            tool_domain_label(c, d, label, sizeof label),
            (unsigned long long)n);
    shown++;
  }
  if (more) fprintf(out, ", %d more domain%s", more, more > 1 ? "s" : "");
}

/* The lines of tool_source_lost_summary() for what the writer never
 * recorded and what the reader skipped. */
static void unrecorded_summary(FILE *out, const eventring_cursor *c,
                               const char *path, const char *label) {
  struct tool_unrecorded u;
  int e = tool_unrecorded(c, &u);
  if (e) {
    fprintf(out, "eventring: %s: cannot tell the events the writer dropped: "
            "%s\n", path, eventring_strerror(e));
    return;
  }
  if (u.dropped) {
    fprintf(out, "eventring: %s%llu event%s dropped by the writer, never "
            "recorded (", label, (unsigned long long)u.dropped,
            u.dropped > 1 ? "s" : "");
    if (u.no_slot)
      fprintf(out, "without a domain slot: %llu",
              (unsigned long long)u.no_slot);
    per_domain(out, c, u.no_slot ? ", " : "", eventring_cursor_dropped);
    fprintf(out, ")%s%s\n",
            u.no_slot ? "; more threads than domain slots: raise "
                        "OCAMLRUNPARAM=d=N" : "",
            u.dropped > u.no_slot ? "; a domain drops probes run by signal "
                                    "handlers inside another probe and "
                                    "events longer than its ring" : "");
  }
  if (u.malformed) {
    fprintf(out, "eventring: %s: %llu malformed event%s skipped (",
            path, (unsigned long long)u.malformed,
            u.malformed > 1 ? "s" : "");
    per_domain(out, c, "", eventring_cursor_malformed);
    fprintf(out, "); the file holds events no writer of this format "
            "writes\n");
  }
}

void tool_lost_lines(FILE *out, const eventring_cursor *c, const char *path,
                     const char *label, uint64_t lost_total,
                     const uint64_t *lost, int lost_n) {
  unrecorded_summary(out, c, path, label);
  if (lost_total == 0) return;
  int words = c && eventring_cursor_lost_unit(c) == EVENTRING_LOST_WORDS;
  fprintf(out, "eventring: %s%llu %s lost (", label,
          (unsigned long long)lost_total,
          words ? "ring words of events" : "events");
  /* A few domains by name, the rest as a count: one line however many. */
  int shown = 0, more = 0;
  for (int d = 0; d < lost_n; d++) {
    if (!lost[d]) continue;
    if (shown == 8) {
      more++;
      continue;
    }
    char dl[TOOL_DOMAIN_BUF];
    fprintf(out, "%s%s: %llu", shown ? ", " : "",
            tool_domain_label(c, d, dl, sizeof dl),
            (unsigned long long)lost[d]);
    shown++;
  }
  if (more) fprintf(out, ", %d more domain%s", more, more > 1 ? "s" : "");
  fprintf(out, "); the writer overwrote them before they were read%s\n",
          words ? "" : " (a larger ring: OCAMLRUNPARAM=e=18 or more)");
}

void tool_window_line(FILE *out, const eventring_cursor *c, const char *path,
                      const char *label, uint64_t before) {
  if (!before) return;
  int words = c && eventring_cursor_lost_unit(c) == EVENTRING_LOST_WORDS;
  fprintf(out, "eventring: %s%s: a window of the run: its rings had wrapped "
          "before they were read, over %llu older %s (not lost: a ring "
          "keeps the latest events)\n", label, path,
          (unsigned long long)before,
          words ? "ring words of events" : "events");
}

int tool_process_gone(pid_t pid) {
  if (kill(pid, 0) < 0 && errno == ESRCH) return 1;
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  FILE *f = fopen(path, "re");
  if (!f) return 0; /* no /proc: kill()'s answer is all there is */
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* "pid (comm) S ...": comm may hold anything, so the state is the
   * first field after the last ')'. */
  const char *p = strrchr(buf, ')');
  return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

int tool_writer_gone(struct tool_writer_state *w, pid_t pid) {
  if (tool_process_gone(pid)) return 1;
  uint64_t start;
  if (w->writer_start_known && er_proc_start_time(pid, &start) == 0 &&
      start != w->writer_start)
    return 1; /* the pid is a later process's */
  if (!w->file_known) return 0;
  uint64_t now = tool_now_ns();
  if (now < w->maps_checked_ns + MAPS_CHECK_NS) return 0;
  w->maps_checked_ns = now;
  int m = maps_file(pid, w->file_dev, w->file_ino, w->file_real);
  if (m < 0) return 0; /* maps unreadable: the pid is all we know */
  if (m) {
    w->seen_mapped = 1;
    w->unmapped_since_ns = 0;
    return 0;
  }
  if (w->seen_mapped) return 1;
  if (!w->unmapped_since_ns) w->unmapped_since_ns = now;
  return now - w->unmapped_since_ns >= UNMAPPED_GRACE_NS;
}
