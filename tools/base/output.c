/* output.c -- standard output and error lines of the `eventring` command.
 *
 * Where the report goes.  Every subcommand writes its report to standard
 * output (fd 1), and tool_output_open() decides beforehand what fd 1 is:
 * the tool's own standard output, the file of `-o FILE`, or, when the
 * tool runs a command (`-- CMD`), standard error.  A command keeps the
 * standard output and error the tool was given, as under time(1),
 * strace(1) or perf stat: its output and the report must never share a
 * stream, or a JSON report, a trace or a listing would come out
 * interleaved with the program's lines.  So before the command is
 * spawned the tool's original fd 1 is kept aside (close-on-exec, above
 * the standard descriptors) and fd 1 is pointed at the report's
 * destination; the child puts the original back on fd 1 before its exec
 * (tool_output_child_streams()).  A destination that is the command's own
 * standard output or error is refused, as `-o -` is.
 *
 * Event listings can be long and are often piped into head, grep or a
 * pager, so standard output gets a large buffer of its own, and SIGPIPE
 * is ignored: a reader that goes away makes the next write fail with
 * EPIPE, the subcommand notices (tool_output_ok()), stops reading and
 * exits with TOOL_EXIT_PIPE without a word, which is what a shell shows
 * for a command killed by SIGPIPE but without dying mid-write.  Any other
 * write error (a full disk, a closed descriptor) is reported once.
 * SIGXFSZ is ignored too: a write past the file size limit (`ulimit -f`)
 * then fails with EFBIG instead of killing the tool halfway through a
 * file, and is reported (tool_strerror() names the limit) as any other.
 * A regular file of `-o FILE` is written as a temporary file beside it
 * (.FILE.XXXXXX) and renamed to FILE once the report is complete
 * (tool_output_finish()): a report that could not be written whole, or a
 * subcommand that fails before it finishes, leaves FILE as it was, and
 * the temporary file is removed at exit.  A FILE that holds a ring file
 * is never replaced by a report (tool_output_check_path()).  A listing
 * that is read as it grows (tool_output_in_place()) is written to FILE
 * itself, truncated once the checks pass, and removed when a write
 * fails.
 *
 * Errors go to stderr as exactly one line starting with "eventring: ",
 * which scripts and the tests rely on.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "base/base.h"

/* Large enough that a listing is written in few system calls; small
 * enough not to matter. */
static char outbuf[1 << 18];
static int out_errno; /* errno of the first failed write, 0 while none */

/* What fd 1 is, for messages about a failed write. */
static const char *out_name = "standard output";
/* The report goes to standard error (a command runs, no -o): an error
 * line then flushes the report first, so the two keep their order. */
static int report_on_stderr;
/* main() saw `-- CMD`: the command gets the tool's original fd 1. */
static int command_given;
/* That original fd 1 while the tool's own fd 1 points elsewhere;
 * NO_SAVED when nothing was moved, CLOSED_SAVED when the tool was
 * started with fd 1 closed (the command then gets it closed too). */
#define NO_SAVED (-1)
#define CLOSED_SAVED (-2)
static int saved_stdout = NO_SAVED;
/* The regular file of `-o FILE` that fd 1 writes, through the temporary
 * file out_tmp beside it, renamed to out_file once the report is
 * complete; both empty when fd 1 is none. */
static char out_file[PATH_MAX];
static char out_tmp[PATH_MAX];
/* tool_output_in_place() was called: FILE is written as it is. */
static int in_place;
/* SIGXFSZ's disposition as the tool was given it, for the command. */
static struct sigaction xfsz_given;
static int xfsz_saved;

void tool_output_init(void) {
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
  signal(SIGPIPE, SIG_IGN);
  struct sigaction ign;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  xfsz_saved = sigaction(SIGXFSZ, &ign, &xfsz_given) == 0;
}

const char *tool_strerror(int err) {
  static char buf[192];
  struct rlimit rl;
  if (err == EFBIG && getrlimit(RLIMIT_FSIZE, &rl) == 0 &&
      rl.rlim_cur != RLIM_INFINITY) {
    snprintf(buf, sizeof buf,
             "%s: over the file size limit of %llu bytes (ulimit -f)",
             strerror(err), (unsigned long long)rl.rlim_cur);
    return buf;
  }
  return strerror(err);
}

void tool_error(const char *fmt, ...) {
  va_list ap;
  char line[1024], shown[TOOL_TEXT_BUF(sizeof line)];
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (report_on_stderr) fflush(stdout);
  fprintf(stderr, "eventring: %s\n",
          tool_text(shown, sizeof shown, line, TOOL_TEXT_UTF8));
}

int tool_usage_error(const char *help, const char *fmt, ...) {
  va_list ap;
  char msg[768];
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tool_error("%s (see '%s')", msg, help);
  return TOOL_EXIT_USAGE;
}

int tool_output_ok(void) {
  if (out_errno) return 0;
  if (!ferror(stdout)) return 1;
  /* The failed write was the last call on stdout, so errno is still its
   * error; EIO stands in should anything have cleared it. */
  out_errno = errno ? errno : EIO;
  return 0;
}

int tool_output_finish(void) {
  int saved = errno;
  errno = 0;
  if (fflush(stdout) != 0 && !out_errno) out_errno = errno ? errno : EIO;
  errno = saved;
  tool_output_ok();
  if (!out_errno) {
    if (!out_tmp[0] || rename(out_tmp, out_file) == 0) {
      out_tmp[0] = 0;
      return TOOL_EXIT_OK;
    }
    out_errno = errno;
  }
  if (out_errno == EPIPE) return TOOL_EXIT_PIPE;
  if (out_tmp[0] && unlink(out_tmp) == 0)
    tool_error("%s: %s (the file is left as it was)", out_name,
               tool_strerror(out_errno));
  else if (in_place && out_file[0] && unlink(out_file) == 0)
    tool_error("%s: %s (the incomplete file is removed)", out_name,
               tool_strerror(out_errno));
  else
    tool_error("%s: %s", out_name, tool_strerror(out_errno));
  out_tmp[0] = 0;
  out_file[0] = 0;
  return TOOL_EXIT_INPUT;
}

static void put_ddd(FILE *out, unsigned char c) {
  putc_unlocked('\\', out);
  putc_unlocked('0' + c / 100, out);
  putc_unlocked('0' + c / 10 % 10, out);
  putc_unlocked('0' + c % 10, out);
}

void tool_put_ocaml_string(FILE *out, const void *bytes, size_t len) {
  const unsigned char *s = bytes;
  putc_unlocked('"', out);
  for (size_t i = 0; i < len; i++) {
    unsigned char c = s[i];
    switch (c) {
    case '"': fputs_unlocked("\\\"", out); break;
    case '\\': fputs_unlocked("\\\\", out); break;
    case '\n': fputs_unlocked("\\n", out); break;
    case '\t': fputs_unlocked("\\t", out); break;
    case '\r': fputs_unlocked("\\r", out); break;
    case '\b': fputs_unlocked("\\b", out); break;
    default:
      if (c >= 32 && c <= 126)
        putc_unlocked(c, out);
      else
        put_ddd(out, c);
    }
  }
  putc_unlocked('"', out);
}

size_t tool_utf8_char(const void *text, size_t len, uint32_t *cp) {
  const unsigned char *s = text;
  unsigned c = s[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t n;
  uint32_t v, min;
  if (c >= 0xc2 && c <= 0xdf) n = 2, v = c & 0x1f, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef) n = 3, v = c & 0x0f, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, v = c & 0x07, min = 0x10000;
  else return 0;
  if (len < n) return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    v = v << 6 | (s[i] & 0x3f);
  }
  if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
    return 0; /* overlong, out of range, a surrogate */
  *cp = v;
  return n;
}

size_t tool_text_char(const void *text, size_t len, unsigned how) {
  const unsigned char *s = text;
  unsigned c = s[0];
  if (c < 0x80) {
    if (c < 0x20 || c == 0x7f) return 0;
    return c == ' ' && (how & TOOL_TEXT_FIELD) ? 0 : 1;
  }
  if (!(how & TOOL_TEXT_UTF8)) return 0;
  uint32_t cp;
  size_t n = tool_utf8_char(s, len, &cp);
  /* C1 controls (U+009B is a CSI to some terminals), the separators that
   * end a line to some viewers, and the bidirectional controls that
   * reorder what follows them on the line. */
  if (!n || cp <= 0x9f || cp == 0x61c || cp == 0x200e || cp == 0x200f ||
      (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
    return 0;
  return n;
}

void tool_put_text(FILE *out, const void *text, size_t len, unsigned how) {
  const unsigned char *s = text;
  while (len) {
    size_t n = tool_text_char(s, len, how);
    if (n) {
      fwrite_unlocked(s, 1, n, out);
    } else {
      put_ddd(out, *s);
      n = 1;
    }
    s += n;
    len -= n;
  }
}

const char *tool_text(char *buf, size_t size, const char *s, unsigned how) {
  size_t at = 0, len = strlen(s);
  const unsigned char *p = (const unsigned char *)s;
  if (!size) return buf;
  while (len) {
    size_t n = tool_text_char(p, len, how);
    if (n) {
      if (at + n >= size) break;
      memcpy(buf + at, p, n);
      at += n;
    } else {
      if (at + 4 >= size) break;
      snprintf(buf + at, 5, "\\%03u", *p);
      at += 4;
      n = 1;
    }
    p += n;
    len -= n;
  }
  buf[at] = '\0';
  return buf;
}

void tool_put_name(FILE *out, const char *name, const char *fallback,
                   int id) {
  if (!name || !*name)
    fprintf(out, "%s%d", fallback, id);
  else
    tool_put_text(out, name, strlen(name), TOOL_TEXT_FIELD);
}

/* ------------------------------------------------------------------ */
/* The report's destination.                                            */

void tool_output_note_command(void) { command_given = 1; }

/* Whether `st` is the file behind descriptor `fd`: only regular files
 * and pipes are compared, since two opens of a terminal or of /dev/null
 * share nothing that could mix. */
static int same_file(const struct stat *st, int fd) {
  struct stat o;
  if (fd < 0 || fstat(fd, &o) < 0) return 0;
  if (!S_ISREG(o.st_mode) && !S_ISFIFO(o.st_mode)) return 0;
  return o.st_dev == st->st_dev && o.st_ino == st->st_ino;
}

/* The stream of the command that `st` is, or NULL. */
static const char *command_stream(const struct stat *st) {
  if (!command_given) return NULL;
  if (same_file(st, saved_stdout >= 0 ? saved_stdout : STDOUT_FILENO))
    return "standard output";
  if (same_file(st, STDERR_FILENO)) return "standard error";
  return NULL;
}

int tool_output_is_ring(const char *path) {
  uint64_t meta[ER_META_WORDS] = {0};
  struct stat st;
  int ring = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return 0;
  /* What the consumer takes for a ring file of another version or a
   * damaged one is a ring file too: it is not ours to replace. */
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      pread(fd, meta, sizeof meta, 0) >= 8)
    ring = er_check_meta(meta, (uint64_t)st.st_size) !=
           EVENTRING_E_NOTRINGFILE;
  close(fd);
  return ring;
}

int tool_output_check_path(const char *path, const char *help) {
  struct stat st;
  const char *stream;
  if (stat(path, &st) != 0) return TOOL_EXIT_OK;
  if ((stream = command_stream(&st)) != NULL)
    return tool_usage_error(help,
                            "'%s' is the command's %s: the report would "
                            "mix with the program's output (give -o another "
                            "file)",
                            path, stream);
  if (tool_output_is_ring(path))
    return tool_usage_error(help,
                            "'%s' is a ring file: it is read, never "
                            "overwritten (give -o another name, or remove "
                            "it first)",
                            path);
  return TOOL_EXIT_OK;
}

enum tool_format tool_format_of(const char *path) {
  const char *base = strrchr(path, '/');
  const char *dot = strrchr(base ? base + 1 : path, '.');
  if (!dot) return TOOL_FORMAT_NONE;
  if (!strcmp(dot, ".fxt")) return TOOL_FORMAT_FUCHSIA;
  if (!strcmp(dot, ".json")) return TOOL_FORMAT_JSON;
  if (!strcmp(dot, ".events")) return TOOL_FORMAT_EVENTS;
  if (!strcmp(dot, ".ctf")) return TOOL_FORMAT_CTF;
  return TOOL_FORMAT_NONE;
}

/* Removes the temporary file of a report that was never finished. */
static void remove_tmp(void) {
  if (out_tmp[0]) unlink(out_tmp);
}

/* Creates the temporary file a report for `path` is written to before
 * it is renamed to `path` (.BASE.XXXXXX, in the same directory), its
 * name in `tmp` (`size` bytes).  Returns its descriptor, or -1 after
 * printing why. */
static int open_tmp(const char *path, char *tmp, size_t size) {
  const char *slash = strrchr(path, '/');
  int dirlen = slash ? (int)(slash - path) + 1 : 0;
  if (snprintf(tmp, size, "%.*s.%s.XXXXXX", dirlen, path, path + dirlen) >=
      (int)size) {
    tool_error("%s: %s", path, strerror(ENAMETOOLONG));
    return -1;
  }
  int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    tool_error("%s: cannot write beside it: %s", path, strerror(errno));
    return -1;
  }
  /* mkostemp makes the file private; give it the mode a plain create
   * would have. */
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  return fd;
}

/* Keeps the tool's original fd 1 aside for the command.  Returns 0, or
 * -1 after printing why. */
static int save_stdout(void) {
  if (!command_given || saved_stdout != NO_SAVED) return 0;
  saved_stdout = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (saved_stdout >= 0) return 0;
  if (errno == EBADF) {
    saved_stdout = CLOSED_SAVED;
    return 0;
  }
  tool_error("cannot keep standard output for the command: %s",
             strerror(errno));
  saved_stdout = NO_SAVED;
  return -1;
}

void tool_output_in_place(void) { in_place = 1; }

int tool_output_open(const char *path, unsigned flags, const char *help) {
  return tool_output_open_for(path, flags, help, NULL);
}

int tool_output_is_input(const char *path, char *const *files, int n) {
  struct stat out, in;
  if (!path || !strcmp(path, "-") || stat(path, &out) != 0) return 0;
  for (int i = 0; i < n; i++)
    if (stat(files[i], &in) == 0 && in.st_dev == out.st_dev &&
        in.st_ino == out.st_ino)
      return 1;
  return 0;
}

int tool_output_open_reading(const char *path, const char *help,
                             char *const *files, int n) {
  if (n > 1 && tool_output_is_input(path, files, n))
    return tool_usage_error(help, "-o %s is one of the ring files read",
                            path);
  return tool_output_open_for(path, 0, help, n == 1 ? files[0] : NULL);
}

int tool_output_open_for(const char *path, unsigned flags, const char *help,
                         const char *source) {
  if (path && !*path) return tool_usage_error(help, "empty output file name");
  int to_stdout = path && !strcmp(path, "-");
  if (to_stdout && command_given)
    return tool_usage_error(help, "-o - would mix the report with the "
                                  "command's standard output (give -o "
                                  "FILE)");
  if (!path && command_given) {
    if (save_stdout() < 0) return TOOL_EXIT_INPUT;
    if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
      return tool_usage_error(help, "standard error is closed: give the "
                                    "report a file with -o FILE");
    out_name = "standard error";
    report_on_stderr = 1;
  } else if (path && !to_stdout) {
    /* Checked before anything is written: `-o log -- cmd >> log` must not
     * lose what log held. */
    struct stat st, src;
    int exists = stat(path, &st) == 0;
    if (exists && source && stat(source, &src) == 0 &&
        src.st_dev == st.st_dev && src.st_ino == st.st_ino)
      return tool_usage_error(help, "'%s' is the ring file being read",
                              path);
    int rc = tool_output_check_path(path, help);
    if (rc != TOOL_EXIT_OK) return rc;
    /* A regular file is replaced by a complete report or not at all;
     * what is not one (a pipe, a device) is written as it is. */
    int regular = !exists || S_ISREG(st.st_mode);
    int beside = regular && !in_place;
    if (beside && exists && access(path, W_OK) != 0) {
      tool_error("%s: %s", path, strerror(errno));
      return TOOL_EXIT_INPUT;
    }
    char tmp[PATH_MAX];
    int fd = beside ? open_tmp(path, tmp, sizeof tmp)
                    : open(path,
                           O_WRONLY | O_CLOEXEC | O_NOCTTY |
                               (regular ? O_CREAT | O_TRUNC : 0),
                           0666);
    if (fd < 0) {
      if (!beside) tool_error("%s: %s", path, strerror(errno));
      return TOOL_EXIT_INPUT;
    }
    if (regular && !beside) snprintf(out_file, sizeof out_file, "%s", path);
    if (beside) {
      static int registered;
      snprintf(out_tmp, sizeof out_tmp, "%s", tmp);
      snprintf(out_file, sizeof out_file, "%s", path);
      if (!registered) registered = atexit(remove_tmp) == 0;
    }
    if (save_stdout() < 0 || dup2(fd, STDOUT_FILENO) < 0) {
      if (saved_stdout == NO_SAVED) tool_error("%s: %s", path, strerror(errno));
      close(fd);
      return TOOL_EXIT_INPUT;
    }
    close(fd);
    out_name = path;
  }
  if ((flags & TOOL_OUTPUT_BINARY) && isatty(STDOUT_FILENO))
    return tool_usage_error(help, "will not write a binary trace to a "
                                  "terminal (give -o FILE, or redirect "
                                  "standard output)");
  return TOOL_EXIT_OK;
}

void tool_output_child_streams(void) {
  /* Only dup2, close and sigaction: this runs between fork and exec.  An
   * ignored signal stays ignored across exec. */
  if (saved_stdout >= 0)
    dup2(saved_stdout, STDOUT_FILENO);
  else if (saved_stdout == CLOSED_SAVED)
    close(STDOUT_FILENO);
  if (xfsz_saved) sigaction(SIGXFSZ, &xfsz_given, NULL);
}

/* ------------------------------------------------------------------ */
/* Options.                                                             */

/* The long options of the getopt_long() call in progress, for
 * tool_option_error(). */
static const struct option *current_longopts;

int tool_getopt(int argc, char **argv, const char *shortopts,
                const struct option *longopts) {
  current_longopts = longopts;
  opterr = 0; /* our own one-line messages instead of getopt's */
  return getopt_long(argc, argv, shortopts, longopts, NULL);
}

/* The long option that `word` ("--name" or "--name=value") names, given
 * that getopt_long returned `val` for it: the one option with that value
 * whose name `name` is or begins, or NULL. */
static const struct option *long_option(const char *word, int val) {
  const char *name = word + 2;
  size_t n = strcspn(name, "=");
  for (const struct option *o = current_longopts; o && o->name; o++)
    if (o->val == val && !strncmp(o->name, name, n)) return o;
  return NULL;
}

int tool_option_error(const char *help, int c, char **argv) {
  /* getopt_long has moved past a long option's word whatever went wrong
   * with it, so argv[optind - 1] is that word; a short option is named by
   * optopt, wherever in its word (which may hold several) it was. */
  const char *word = optind > 0 ? argv[optind - 1] : "";
  int is_long = !strncmp(word, "--", 2) && word[2] &&
                (optopt == 0 || long_option(word, optopt) != NULL);
  if (is_long) {
    const struct option *o = optopt ? long_option(word, optopt) : NULL;
    int n = (int)strcspn(word, "=");
    if (!o) {
      /* getopt_long says the same for a prefix of several names. */
      int matches = 0;
      for (const struct option *p = current_longopts; p && p->name; p++)
        matches += !strncmp(p->name, word + 2, (size_t)n - 2);
      if (matches > 1)
        return tool_usage_error(help, "ambiguous option '%.*s' (%d options "
                                      "begin so; spell it out)",
                                n, word, matches);
      return tool_usage_error(help, "unknown option '%.*s'", n, word);
    }
    if (c == ':')
      return tool_usage_error(help, "option '--%s' needs an argument",
                              o->name);
    return tool_usage_error(help, "option '--%s' takes no argument ('%s')",
                            o->name, word);
  }
  if (c == ':')
    return tool_usage_error(help, "option '-%c' needs an argument", optopt);
  if (optopt > 32 && optopt < 127)
    return tool_usage_error(help, "unknown option '-%c'", optopt);
  return tool_usage_error(help, "unknown option '%s'", word);
}
