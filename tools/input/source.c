/* source.c -- where the `eventring` command reads events from.
 *
 * A subcommand reads one ring file, named either directly (FILE, e.g. a
 * file kept with OCAML_RUNTIME_EVENTS_PRESERVE or left by a process that
 * crashed), as the file of a process (--pid PID, in --dir DIR or else
 * in OCAML_RUNTIME_EVENTS_DIR or the current directory, as the library
 * names it), or as the file of a program the tool runs itself
 * (`-- CMD ARGS...`, spawn.c).  The cursor keeps the file open and
 * mapped, so a file its writer removes at exit is still read to the end.
 *
 * Reading ends in one of these ways:
 *   - by default when a poll finds nothing new: a snapshot of the file;
 *   - with --follow, and always for a spawned command, when the writer
 *     is gone.  We learn its pid from --pid, from the spawn, or from a
 *     file name of the form <pid>.events, and poll every POLL_IDLE_NS
 *     while it lives.  A process that has exited but not yet been reaped
 *     by its parent (a zombie) still answers kill(pid, 0), so
 *     /proc/<pid>/stat is asked as well; our own child is asked with
 *     waitpid().  Once it is gone, a last round of polls drains what it
 *     wrote before exiting.  A file whose name gives no pid is followed
 *     until ring_stop has been read (the subcommand's lifecycle callback
 *     reports it through tool_source_lifecycle()).  The pid could in
 *     principle have been reused by a new process by the time we ask; the
 *     cost is that we keep waiting, never that we stop early, and ring
 *     files are short-lived enough that it does not arise in practice.
 *   - on SIGINT, SIGTERM or SIGHUP.  The handler only records the signal
 *     (and passes it on to a spawned command); the loop notices it
 *     between polls, so the subcommand always gets whole events and
 *     finishes its output.  Without a spawned command reading stops at
 *     once.  A spawned command gets the signal and is read until it ends,
 *     so that its last events are not lost; one that outlives the signal
 *     by KILL_GRACE_NS (or a second signal) is killed.
 *
 * Lost events are not the source's to print: the subcommand's lost_events
 * callback reports them through tool_source_lost(), which counts them per
 * domain, and the subcommand prints tool_source_lost_summary() once at
 * the end.
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

/* How long --follow sleeps when a poll found nothing: short enough that
 * a live listing keeps up and that a default-sized ring (64 Ki words per
 * domain) cannot fill up in between at the rates our demo programs and a
 * GC-heavy OCaml program write, long enough to cost nothing measurable. */
#define POLL_IDLE_NS 10000000L

/* How long --pid waits for a live process's new file to be complete. */
#define OPEN_RETRY_NS 1000000000ULL

/* How long --follow --pid waits for a live process to create its file:
 * long enough for a program started in the same shell line to get to
 * its first event, short enough that a process that will never be
 * traced is soon reported. */
#define FIND_WAIT_NS 5000000000ULL

/* How often --follow asks whether the writer still maps its file (the
 * kernel walks the process's mappings to answer), and how long a writer
 * that has never been seen mapping it (a pid reused by another program,
 * a file found before its writer mapped it) is given. */
#define MAPS_CHECK_NS 100000000ULL
#define UNMAPPED_GRACE_NS 1000000000ULL

/* How long a spawned command may outlive the signal that interrupted
 * the tool before it is killed. */
#define KILL_GRACE_NS 3000000000ULL

/* The command that main() took off the command line, for
 * tool_source_open(); `taken` even when "--" had nothing after it. */
static char **taken_cmd;
static int taken;

/* The source being opened or read, for tool_source_on_lost() and for
 * tool_source_exit_status(). */
static struct tool_source *current;

/* What tool_source_exit_status() reports once the source is closed. */
static int last_child_reaped, last_child_status, last_interrupted;

uint64_t tool_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int tool_source_take_command(int argc, char **argv) {
  /* The tool reads ring files and never writes one; the library's
   * constructor starts tracing of any program it is linked into when
   * OCAML_RUNTIME_EVENTS_START is set, which a user running
   * `OCAML_RUNTIME_EVENTS_START=1 eventring ...` does not mean for us.
   * The file is removed even with OCAML_RUNTIME_EVENTS_PRESERVE: the
   * library made it just now (O_EXCL), and nobody wants the tool's. */
  const char *own = eventring_path();
  if (own) {
    char path[4096];
    snprintf(path, sizeof path, "%s", own);
    if (eventring_stop() == 0) unlink(path);
  }
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") != 0) continue;
    taken = 1;
    taken_cmd = argv + i + 1;
    argv[i] = NULL;
    return i;
  }
  return argc;
}

int tool_source_option(struct tool_source *src, int c) {
  switch (c) {
  case TOOL_OPT_DIR: src->dir = optarg; return 1;
  case TOOL_OPT_PID: src->pid_arg = optarg; return 1;
  case 'f': src->follow = 1; return 1;
  case TOOL_OPT_OCAML50: src->ocaml50 = 1; return 1;
  case TOOL_OPT_OCAML53: src->ocaml53 = 1; return 1;
  default: return 0;
  }
}

int tool_source_other(struct tool_source *src, int c, char **argv,
                      const char *help_ref, void (*help)(void)) {
  if (c == TOOL_OPT_DRAIN) {
    char why[160];
    if (tool_parse_duration(optarg, &src->drain_ns, why, sizeof why) != 0)
      return tool_usage_error(help_ref, "--drain-timeout: %s", why);
    if (src->drain_ns == 0) src->drain_ns = 1; /* 0 means the default */
    return -1;
  }
  char fwhy[300];
  int fr = tool_filter_option(src, c, optarg, fwhy, sizeof fwhy);
  if (fr < 0) return tool_usage_error(help_ref, "%s", fwhy);
  if (fr > 0) return -1;
  if (tool_source_option(src, c)) {
    if (src->ocaml50 && src->ocaml53)
      return tool_usage_error(help_ref, "--ocaml50 and --ocaml53 contradict "
                                        "each other (give one)");
    return -1;
  }
  if (c == 'h') {
    help();
    return tool_output_finish();
  }
  return tool_option_error(help_ref, c, argv);
}

int tool_parse_duration(const char *s, uint64_t *ns, char *why, size_t size) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  int overflow = errno == ERANGE && v > 1; /* HUGE_VAL */
  if (end == s || (errno && !overflow) || !(v >= 0) || !(*s == '.' ||
      (*s >= '0' && *s <= '9'))) {
    snprintf(why, size, "duration '%s' is not a number and a unit (ns, us, "
             "ms, s), e.g. 10ms", s);
    return -1;
  }
  static const struct {
    const char *unit;
    double ns;
  } units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  if (!*end) {
    snprintf(why, size, "duration '%s' needs a unit (ns, us, ms, s)", s);
    return -1;
  }
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (!strcmp(end, units[i].unit)) {
      double x = v * units[i].ns;
      if (overflow || !(x <= TOOL_DURATION_MAX_NS)) {
        snprintf(why, size, "duration '%s' is too large (at most %.0fs, "
                 "about 31 years)", s, TOOL_DURATION_MAX_NS / 1e9);
        return -1;
      }
      *ns = (uint64_t)(x + 0.5);
      return 0;
    }
  snprintf(why, size, "duration '%s' has an unknown unit '%s' (ns, us, ms, "
           "s)", s, end);
  return -1;
}

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
static int recorded_start(const char *path, pid_t pid, uint64_t *start) {
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
  return recorded_start(path, pid, &recorded) &&
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

/* Waits (FIND_WAIT_NS at most) while process `pid` lives without a
 * ring file, as --follow does for a process started a moment ago.
 * Returns tool_find_ring()'s last answer. */
static int wait_for_ring(struct tool_source *src, const char *dir, char *msg,
                         size_t msg_size) {
  tool_error("waiting up to %d s for process %ld to create its ring file",
             (int)(FIND_WAIT_NS / 1000000000u), (long)src->pid);
  uint64_t give_up = tool_now_ns() + FIND_WAIT_NS;
  int r;
  do {
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
    r = tool_find_ring(src->pid, dir, src->path, sizeof src->path, msg,
                       msg_size);
  } while (r == TOOL_FIND_NONE && tool_now_ns() < give_up &&
           !tool_signal_pending());
  if (r == TOOL_FIND_NOPROC)
    snprintf(msg, msg_size, "process %ld ended without creating a ring file",
             (long)src->pid);
  else if (r == TOOL_FIND_NONE && !tool_signal_pending())
    snprintf(msg + strlen(msg), msg_size - strlen(msg),
             " (waited %d s)", (int)(FIND_WAIT_NS / 1000000000u));
  return r;
}

void tool_writer_note(struct tool_writer_state *w, const char *path,
                      pid_t pid) {
  w->writer_start_known = pid && recorded_start(path, pid, &w->writer_start);
  struct stat st;
  w->file_known = stat(path, &st) == 0;
  if (w->file_known) {
    w->file_dev = st.st_dev;
    w->file_ino = st.st_ino;
  }
  if (!realpath(path, w->file_real)) w->file_real[0] = '\0';
}

/* Remembers which file the cursor reads, so that following it can tell
 * whether the writer still maps it (writer_done). */
static void note_file(struct tool_source *src) {
  tool_writer_note(&src->w, src->path, src->pid);
}

/* Opens the cursor on a FILE or on the file of --pid. */
static int open_named(struct tool_source *src, const char *help) {
  if (src->file) {
    if (!*src->file) return tool_usage_error(help, "empty file name");
    if (snprintf(src->path, sizeof src->path, "%s", src->file) >=
        (int)sizeof src->path) {
      tool_error("%.200s...: %s", src->file, strerror(ENAMETOOLONG));
      return TOOL_EXIT_INPUT;
    }
  } else {
    src->pid = tool_parse_pid(src->pid_arg, strlen(src->pid_arg));
    if (!src->pid)
      return tool_usage_error(help, "invalid pid '%s'", src->pid_arg);
    if (src->dir && !*src->dir)
      return tool_usage_error(help, "empty directory name");
    char msg[PATH_MAX + 256];
    int f = tool_find_ring(src->pid, src->dir, src->path, sizeof src->path,
                           msg, sizeof msg);
    if (f == TOOL_FIND_NONE && src->follow)
      f = wait_for_ring(src, src->dir, msg, sizeof msg);
    if (f != TOOL_FIND_OK) {
      tool_error("%s", msg);
      return TOOL_EXIT_INPUT;
    }
    tool_process_name(src->pid, src->name, sizeof src->name);
  }

  int r = eventring_cursor_open_file(&src->cursor, src->path);
  /* A process that has just started tracing may not have written its
   * file's header yet (the library writes the version word last): give
   * a live process a moment before calling its file malformed. */
  uint64_t give_up = tool_now_ns() + OPEN_RETRY_NS;
  while (!src->file &&
         (r == EVENTRING_E_VERSION || r == EVENTRING_E_CORRUPT ||
          r == EVENTRING_E_NOTRINGFILE || r == EVENTRING_E_TRUNCATED) &&
         tool_now_ns() < give_up && !tool_process_gone(src->pid) &&
         !tool_signal_pending()) {
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    r = eventring_cursor_open_file(&src->cursor, src->path);
  }
  if (r < 0) {
    char why[256];
    tool_error("%s: %s", src->path,
               tool_ring_error(src->path, r, why, sizeof why));
    return TOOL_EXIT_INPUT;
  }
  note_file(src);
  if (src->file) {
    /* The writer, to follow the file while it lives: as the file says,
     * else as its name says. */
    src->pid = eventring_cursor_writer_pid(src->cursor);
    if (!src->pid) src->pid = tool_pid_of_path(src->file);
    src->w.writer_start_known =
        src->pid &&
        recorded_start(src->path, src->pid, &src->w.writer_start);
    return TOOL_EXIT_OK;
  }
  /* A process armed but paused records while we read it: we hold a lease
   * on it (tool_source_close gives it back, and the process lets go of it
   * by itself if we are killed).  Leases add up, so that a reader leaving
   * never pauses a process another one still reads; hence one is taken
   * even on a process that records already.  Without one (an older
   * eventring, 16 readers already, a stopped process) we read anyway.
   * The library's remote control takes the directory of the file. */
  tool_dir_of(src->path, src->ctl_dir_buf, sizeof src->ctl_dir_buf);
  const char *dir = src->ctl_dir_buf;
  if (eventring_remote_hold(dir, src->pid) == 0) {
    src->resumed = 1;
    src->ctl_dir = dir;
  }
  return TOOL_EXIT_OK;
}

int tool_source_command_given(void) { return taken; }

int tool_source_open(struct tool_source *src, int nargs, char **args,
                     const char *help) {
  src->cursor = NULL;
  src->pid = 0;
  src->saw_ring_stop = 0;
  src->path[0] = '\0';
  src->name[0] = '\0';
  src->cmd = taken ? taken_cmd : NULL;
  src->events_read = 0;
  src->lost_total = 0;
  src->before_total = 0;
  src->lost = NULL;
  src->lost_n = 0;
  src->interrupted = 0;
  src->end_ns = 0;
  src->child_reaped = 0;
  src->child_status = 0;
  src->resumed = 0;
  src->ctl_dir = NULL;
  src->procs = NULL;
  src->nprocs = 0;
  src->proc = 0;
  src->scan = NULL;
  if (nargs > 1 && !src->multi)
    return tool_usage_error(help, "too many arguments (one ring file at most)");
  src->file = nargs >= 1 ? args[0] : NULL;
  if (nargs > 1 && (src->cmd || src->pid_arg || src->dir))
    return tool_usage_error(help, "give either FILEs, --pid, --dir or "
                                  "-- COMMAND, not several");
  if (taken && !taken_cmd[0])
    return tool_usage_error(help, "no command after '--'");
  if (src->cmd && (src->file || src->pid_arg))
    return tool_usage_error(help, "give either a FILE, --pid or -- COMMAND, "
                                  "not several");
  if (src->file && src->pid_arg)
    return tool_usage_error(help, "give either a FILE or --pid, not both");
  int dir_alone = src->dir && !src->pid_arg;
  if (dir_alone && (src->file || src->cmd))
    return tool_usage_error(help, src->multi
                                      ? "give either FILEs, --dir or "
                                        "-- COMMAND, not several"
                                      : "--dir needs --pid");
  if (!src->file && !src->pid_arg && !src->cmd && !(dir_alone && src->multi))
    return tool_usage_error(help, src->multi
                                      ? "no ring file given (FILE..., --dir "
                                        "DIR, --pid PID or -- COMMAND)"
                                      : "no ring file given (FILE, --pid PID "
                                        "or -- COMMAND)");
  if (dir_alone && !src->multi)
    return tool_usage_error(help, "--dir needs --pid");
  if (dir_alone && !*src->dir)
    return tool_usage_error(help, "empty directory name");
  int frc = tool_filter_check(src, help);
  if (frc != TOOL_EXIT_OK) return frc;

  current = src;
  tool_signals_install();
  int rc = src->multi && (nargs > 1 || dir_alone)
               ? TOOL_EXIT_OK
               : src->cmd ? tool_spawn_open(src) : open_named(src, help);
  /* With `multi`, the one file opened above becomes the first process,
   * and the others are found by procs.c. */
  if (rc == TOOL_EXIT_OK && src->multi)
    rc = tool_procs_open(src, nargs, args, help);
  if (rc != TOOL_EXIT_OK) {
    tool_source_close(src);
    return rc;
  }
  if (src->cursor)
    eventring_cursor_set_numbering(src->cursor, tool_source_numbering(src));
  /* The program as its file records it wins over the spawned command's
   * name and /proc/PID/comm: it is the image's own after an exec (`sh -c
   * 'exec ./prog'` wrote prog's file), and stays the program's when the
   * main thread names itself (comm is the main thread's name). */
  const char *prog = src->cursor ? eventring_cursor_program(src->cursor) : NULL;
  if (prog && *prog) snprintf(src->name, sizeof src->name, "%s", prog);
  tool_progress_begin(src);
  return TOOL_EXIT_OK;
}

void tool_source_close(struct tool_source *src) {
  tool_progress_end();
  if (src->resumed) {
    /* The process may have exited meanwhile: nothing to give back then. */
    eventring_remote_unhold(src->ctl_dir, src->pid);
    src->resumed = 0;
  }
  if (src->multi) tool_procs_close(src); /* frees src->cursor too */
  else eventring_cursor_free(src->cursor);
  src->cursor = NULL;
  if (src->cmd) tool_spawn_cleanup(src, 2.0);
  if (!src->interrupted) src->interrupted = tool_signal_pending();
  last_child_reaped = src->child_reaped;
  last_child_status = src->child_status;
  last_interrupted = src->interrupted;
  tool_signals_restore();
  free(src->lost);
  src->lost = NULL;
  src->lost_n = 0;
  tool_filter_free(src);
  if (current == src) current = NULL;
}

int tool_source_exit_status(int status) {
  if (current) tool_source_close(current);
  if (status != TOOL_EXIT_OK) return status;
  if (last_child_reaped) {
    if (WIFEXITED(last_child_status)) return WEXITSTATUS(last_child_status);
    if (WIFSIGNALED(last_child_status))
      return 128 + WTERMSIG(last_child_status);
  }
  if (last_interrupted) return 128 + last_interrupted;
  return TOOL_EXIT_OK;
}

void tool_source_lifecycle(struct tool_source *src, int kind) {
  if (kind != EVENTRING_LIFECYCLE_RING_STOP) return;
  src->saw_ring_stop = 1;
  if (src->multi && src->proc < src->nprocs)
    src->procs[src->proc]->saw_ring_stop = 1;
}

/* a + b, or UINT64_MAX when that does not fit: the cursor bounds each
 * domain's count (2^60), not the sum over thousands of domains. */
static uint64_t add_sat(uint64_t a, uint64_t b) {
  uint64_t s;
  return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

void tool_count_lost(const eventring_cursor *c, uint64_t *total,
                     uint64_t **lost, int *lost_n, int domain,
                     uint64_t count) {
  *total = add_sat(*total, count);
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
  (*lost)[domain] = add_sat((*lost)[domain], count);
}

void tool_source_lost(struct tool_source *src, int domain, uint64_t count) {
  /* With several processes, src->lost per domain would add up domains of
   * different processes: only the total is kept there. */
  if (src->multi) {
    src->lost_total = add_sat(src->lost_total, count);
    tool_procs_lost(src, domain, count);
    return;
  }
  tool_count_lost(src->cursor, &src->lost_total, &src->lost, &src->lost_n,
                  domain, count);
}

int tool_source_on_lost(void *data, int domain, uint64_t count) {
  (void)data;
  if (current) tool_source_lost(current, domain, count);
  return 1;
}

void tool_source_window(struct tool_source *src, int domain,
                        uint64_t before) {
  (void)domain;
  src->before_total = add_sat(src->before_total, before);
  if (src->multi && src->proc < src->nprocs) {
    struct tool_proc *p = src->procs[src->proc];
    p->before_total = add_sat(p->before_total, before);
  }
}

int tool_source_on_window(void *data, int domain, uint64_t before) {
  (void)data;
  if (current) tool_source_window(current, domain, before);
  return 1;
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
    u->dropped = add_sat(u->dropped, n);
    u->malformed = add_sat(u->malformed, m);
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

uint64_t tool_source_lost_summary(const struct tool_source *src, FILE *out) {
  if (src->multi) {
    tool_procs_lost_summary(src, out);
  } else {
    tool_window_line(out, src->cursor, src->path, "", src->before_total);
    tool_lost_lines(out, src->cursor, src->path, "", src->lost_total,
                    src->lost, src->lost_n);
  }
  return src->lost_total;
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

/* Whether the writer is done, so that what is left is all there will be.
 * A live process with the writer's pid is not enough: the pid may have
 * been reused since (a copy of a dead process's file), or the process
 * may have stopped tracing; either way it no longer maps the file. */
static int writer_done(struct tool_source *src) {
  if (src->cmd) return tool_spawn_done(src);
  if (!src->pid) return src->saw_ring_stop;
  return tool_writer_gone(&src->w, src->pid);
}

int tool_source_read(struct tool_source *src, const eventring_callbacks *cb,
                     void *data) {
  if (src->filter) return tool_filter_read(src, cb, data);
  return tool_source_read_raw(src, cb, data);
}

int tool_source_read_raw(struct tool_source *src,
                         const eventring_callbacks *cb, void *data) {
  if (src->multi) {
    current = src;
    return tool_procs_read(src, cb, data);
  }
  int following = src->follow || src->cmd;
  int draining = 0, killed = 0;
  uint64_t kill_at = 0;
  current = src;
  for (;;) {
    int r = eventring_cursor_poll(src->cursor, cb, data, 0);
    if (r > 0) src->events_read += (uint64_t)r;
    if (src->between_polls) src->between_polls(src, data);
    tool_progress_tick(src);
    if (!tool_output_ok()) break; /* the caller reports it */
    if (r < 0) {
      /* The events read so far come first, then the reason we stopped:
       * a file cut short says by how much. */
      tool_poll_error(src->path, r);
      return TOOL_EXIT_INPUT;
    }
    int sig = tool_signal_pending();
    if (sig && !src->interrupted) {
      src->interrupted = sig;
      kill_at = tool_now_ns() + KILL_GRACE_NS;
    }
    /* Interrupted, a file or another's process is left at once; our own
     * command is read until it has ended (below). */
    if (src->interrupted && !src->cmd) break;
    if (r > 0) continue;
    if (!following || draining) break;
    if (writer_done(src)) {
      src->end_ns = tool_now_ns();
      draining = 1; /* one more pass reads what it wrote last */
      continue;
    }
    if (src->interrupted && !killed &&
        (tool_signal_count() > 1 || tool_now_ns() >= kill_at)) {
      tool_spawn_kill(src);
      killed = 1;
    }
    /* Show what we have before waiting for more. */
    if (fflush(stdout) != 0 && !tool_output_ok()) break;
    /* A signal cuts the sleep short (the handlers are installed without
     * SA_RESTART), which is what we want: the loop looks at it at once. */
    struct timespec ts = {0, POLL_IDLE_NS};
    nanosleep(&ts, NULL);
  }
  tool_progress_end();
  if (src->events_read) tool_warn_numbering(src->cursor, src->path);
  return TOOL_EXIT_OK;
}
