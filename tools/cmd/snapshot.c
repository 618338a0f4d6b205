/* snapshot.c -- `eventring snapshot`: what the rings hold now, kept.
 *
 * The rings are a flight recorder: they hold the last moments of every
 * domain until the writer wraps over them.  This subcommand copies what
 * they hold at the moment it runs, without pausing the writer, into a
 * compact ring file (runtime/snapshot.h: the same format, each ring sized
 * to what it holds), which every subcommand and OCaml 5's reader read.
 * Events the writer overwrites while they are copied are counted as lost
 * in the snapshot, never kept torn: the copy is the consumer's.
 *
 * --format fxt, json or ctf writes a trace instead: the compact file is
 * written to a private directory and handed to `eventring trace` or
 * `eventring ctf`, so the traces are exactly theirs.
 *
 * A snapshot never overwrites a file: the default name says what and
 * when (PROGRAM-PID-TIME, to the millisecond, then -2, -3... for names
 * taken), and a name given that is taken is an error.  The extension of
 * -o's name says the format, as for `trace -o`.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "snapshot.h"
#include "cmd/cmd.h"

#define HELP_REF "eventring snapshot --help"

/* How many names of a default name's sequence are tried. */
#define NAME_TRIES 1000

static void help(void) {
  printf(
      "Usage: eventring snapshot [OPTION]... --pid PID [--dir DIR]\n"
      "   or: eventring snapshot [OPTION]... FILE.events\n"
      "Copy what the rings of a traced process (or a ring file) hold now,\n"
      "without pausing the writer, into a compact ring file that every\n"
      "subcommand and OCaml 5's Runtime_events read, or into a trace.\n"
      "\n"
      "Options:\n"
      "  -o OUT, --output OUT\n"
      "                 write to OUT ('-': standard output, not for ctf);\n"
      "                 default: PROGRAM-PID-TIME.EXT in the current\n"
      "                 directory, TIME in UTC (20261124T031500.123Z),\n"
      "                 -2, -3... added when that name is taken\n"
      "  --format FMT   events (the default: a compact .events file), fxt\n"
      "                 (Fuchsia trace for Perfetto), json (Chrome JSON\n"
      "                 trace) or ctf (a CTF directory for babeltrace2);\n"
      "                 by default the extension of OUT says: .events,\n"
      "                 .fxt, .json or .ctf (another: events)\n"
      "  --pid PID      copy the rings of process PID\n"
      "  --dir DIR      where its ring file is (default: "
      "$OCAML_RUNTIME_EVENTS_DIR,\n"
      "                 else the current directory)\n"
      "  --label NAME=VALUE\n"
      "                 record the label in the snapshot (repeatable, 16\n"
      "                 at most), over the source's label of that name\n"
      "  --ocaml50      number phases as OCaml 5.0-5.2 did\n"
      "  --ocaml53      number phases as OCaml 5.3+ does (default: inferred\n"
      "                 from the file)\n"
      "  -h, --help     print this help and exit\n"
      "\n"
      "A snapshot never overwrites a file.  One line on standard error says\n"
      "where it went and what it holds.  Events the writer overwrote while\n"
      "they were copied are counted as lost, never copied torn.\n"
      "Exit status: 0 success, 1 unreadable input or unwritable output, 2 "
      "bad\n"
      "usage.  See eventring(1).\n");
}

enum format { FMT_EVENTS, FMT_FXT, FMT_JSON, FMT_CTF };
static const char *const format_names[] = {"events", "fxt", "json", "ctf"};

/* The message for a name that is taken. */
static void taken(const char *path) {
  tool_error("%s: already exists (a snapshot never overwrites a file: "
             "remove it or give -o another name)",
             path);
}

/* Writes the compact file to `fd`, the file `path` created for it
 * (removed when the write fails) or standard output ("-").  Returns the
 * exit status, after printing one line on failure. */
static int write_events(struct er_snap *s, int fd, const char *path,
                        struct er_snap_stats *st) {
  int to_stdout = !strcmp(path, "-");
  int r = er_snap_write(s, fd, st);
  if (!to_stdout && close(fd) < 0 && !r) r = -errno;
  if (r) {
    if (r == -EPIPE) return TOOL_EXIT_PIPE;
    tool_error("%s: %s", to_stdout ? "standard output" : path,
               tool_strerror(-r));
    if (!to_stdout) unlink(path);
    return TOOL_EXIT_INPUT;
  }
  return TOOL_EXIT_OK;
}

/* Takes the name `path` for a snapshot in format `f`, never over
 * anything that is there (nor through a symbolic link): creates the
 * compact file itself and returns its descriptor, or the directory of a
 * CTF trace or an empty file that the trace replaces, and returns 0.
 * Returns -EEXIST when the name is taken, another negated errno when it
 * cannot be created. */
static int claim(enum format f, const char *path) {
  if (f == FMT_EVENTS) return er_file_open_new(path);
  if (f == FMT_CTF) return mkdir(path, 0777) == 0 ? 0 : -errno;
  int fd = er_file_open_new(path);
  if (fd < 0) return fd;
  close(fd);
  return 0;
}

/* Turns the compact file at `events` into a trace at `out` with the
 * subcommand that writes that format, as if the user had run it.
 * Returns its exit status. */
static int write_trace(enum format f, const char *events, const char *out) {
  char *argv[8];
  int argc = 0;
  argv[argc++] = f == FMT_CTF ? "ctf" : "trace";
  if (f != FMT_CTF) {
    argv[argc++] = "--format";
    argv[argc++] = f == FMT_FXT ? "fuchsia" : "json";
  }
  argv[argc++] = "-o";
  argv[argc++] = (char *)out;
  argv[argc++] = (char *)events;
  argv[argc] = NULL;
  optind = 0; /* a fresh getopt for the subcommand's own parse */
  return f == FMT_CTF ? tool_ctf(argc, argv) : tool_trace(argc, argv);
}

/* The size of the file at `path`, or of the files of the directory. */
static uint64_t bytes_of(const char *path) {
  struct stat sb;
  if (stat(path, &sb) != 0) return 0;
  if (!S_ISDIR(sb.st_mode)) return (uint64_t)sb.st_size;
  uint64_t total = 0;
  DIR *d = opendir(path);
  struct dirent *e;
  char p[PATH_MAX + 256];
  while (d && (e = readdir(d)) != NULL) {
    snprintf(p, sizeof p, "%s/%s", path, e->d_name);
    if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) total += (uint64_t)sb.st_size;
  }
  if (d) closedir(d);
  return total;
}

/* The --label NAME=VALUE pairs into the snapshot's metadata: 0, or a
 * usage error that says which and why. */
static int add_labels(struct er_snap *s, const char *const *labels, int n) {
  for (int i = 0; i < n; i++) {
    const char *eq = strchr(labels[i], '=');
    char name[256];
    int r = -EINVAL;
    if (eq && (size_t)(eq - labels[i]) < sizeof name) {
      snprintf(name, sizeof name, "%.*s", (int)(eq - labels[i]), labels[i]);
      r = er_snap_label(s, name, eq + 1);
    }
    if (r == -ENOSPC)
      return tool_usage_error(HELP_REF, "--label: the labels exceed %d "
                              "bytes or %d labels", ER_MD_LABEL_BYTES,
                              ER_EXT_MAX_LABELS);
    if (r)
      return tool_usage_error(HELP_REF, "--label: '%s' is not NAME=VALUE "
                              "(NAME: a letter or _, then letters, digits "
                              "or _; VALUE: not empty, no control "
                              "character)", labels[i]);
  }
  return TOOL_EXIT_OK;
}

int tool_snapshot(int argc, char **argv) {
  enum { OPT_FORMAT = TOOL_OPT_OWN, OPT_LABEL };
  static const struct option longopts[] = {
      TOOL_SOURCE_OPTIONS,
      TOOL_OUTPUT_OPTION,
      {"format", required_argument, NULL, OPT_FORMAT},
      {"label", required_argument, NULL, OPT_LABEL},
      {NULL, 0, NULL, 0},
  };
  struct tool_source src;
  memset(&src, 0, sizeof src);
  enum format format = FMT_EVENTS;
  int format_given = 0;
  const char *outpath = NULL;
  const char *labels[ER_EXT_MAX_LABELS + 1];
  int n_labels = 0;
  int c, rc;
  while ((c = tool_getopt(argc, argv, ":fho:", longopts)) != -1) {
    if (c == OPT_LABEL) {
      if (n_labels == ER_EXT_MAX_LABELS + 1)
        return tool_usage_error(HELP_REF, "--label: too many labels (%d at "
                                "most)", ER_EXT_MAX_LABELS);
      labels[n_labels++] = optarg;
    } else if (c == OPT_FORMAT) {
      size_t i = 0;
      while (i < 4 && strcmp(optarg, format_names[i])) i++;
      if (i == 4)
        return tool_usage_error(HELP_REF,
                                "unknown format '%s' (events, fxt, json or "
                                "ctf)",
                                optarg);
      format = (enum format)i;
      format_given = 1;
    } else if (c == 'o') {
      outpath = optarg;
    } else if ((rc = tool_source_other(&src, c, argv, HELP_REF, help)) >= 0) {
      return rc;
    }
  }
  if (src.follow)
    return tool_usage_error(HELP_REF, "--follow does not apply: a snapshot "
                                      "copies what the rings hold now");
  if (outpath && !*outpath)
    return tool_usage_error(HELP_REF, "empty output file name");
  int to_stdout = outpath && !strcmp(outpath, "-");
  /* The name says what the file holds, as for `trace -o`: x.json is a
   * JSON trace, x.events a compact ring file. */
  if (outpath && !to_stdout) {
    static const enum format by_ext[] = {
        [TOOL_FORMAT_FUCHSIA] = FMT_FXT,
        [TOOL_FORMAT_JSON] = FMT_JSON,
        [TOOL_FORMAT_EVENTS] = FMT_EVENTS,
        [TOOL_FORMAT_CTF] = FMT_CTF,
    };
    enum tool_format ext = tool_format_of(outpath);
    if (ext != TOOL_FORMAT_NONE && format_given && format != by_ext[ext])
      return tool_usage_error(HELP_REF,
                              "--format %s does not match the extension of "
                              "'%s' (%s)",
                              format_names[format], outpath,
                              format_names[by_ext[ext]]);
    if (ext != TOOL_FORMAT_NONE) format = by_ext[ext];
  }
  if (to_stdout && format == FMT_CTF)
    return tool_usage_error(HELP_REF, "a CTF trace is a directory and cannot "
                                      "go to standard output (give -o OUTDIR)");
  if (to_stdout && format != FMT_JSON &&
      (rc = tool_output_open("-", TOOL_OUTPUT_BINARY, HELP_REF)) != 0)
    return rc;
  if (outpath && !to_stdout && access(outpath, F_OK) == 0) {
    taken(outpath);
    return TOOL_EXIT_INPUT;
  }

  struct er_snap *s = er_snap_new();
  if (!s) {
    tool_error("out of memory");
    return TOOL_EXIT_INPUT;
  }
  if ((rc = add_labels(s, labels, n_labels)) != TOOL_EXIT_OK) {
    er_snap_free(s);
    return rc;
  }
  rc = tool_source_open(&src, argc - optind, argv + optind, HELP_REF);
  if (rc != TOOL_EXIT_OK) {
    er_snap_free(s);
    return rc;
  }
  long n = er_snap_read_cursor(s, src.cursor);
  const char *program =
      src.name[0] ? src.name : eventring_cursor_program(src.cursor);
  pid_t pid = src.pid ? src.pid : eventring_cursor_writer_pid(src.cursor);
  char inpath[sizeof src.path];
  snprintf(inpath, sizeof inpath, "%s", src.path);
  if (n >= 0) n = er_snap_set_writer(s, pid, program);
  /* The copy is made: the writer owes us nothing more (a paused process
   * we resumed for the copy is paused again now). */
  char prog[64];
  snprintf(prog, sizeof prog, "%s", program ? program : "");
  tool_source_close(&src);
  if (n < 0) {
    tool_error("%s: %s", inpath, eventring_strerror((int)n));
    er_snap_free(s);
    return TOOL_EXIT_INPUT;
  }

  /* The name is taken before anything is written: a default name taken
   * (another snapshot in the same millisecond) gives way to the next of
   * its sequence, a name given is an error. */
  char name[PATH_MAX];
  int fd = to_stdout ? STDOUT_FILENO : -EEXIST;
  if (!outpath) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    for (int seq = 1; fd == -EEXIST && seq <= NAME_TRIES; seq++) {
      /* PATH_MAX holds any name it makes: the program's part is cut. */
      (void)er_snap_default_name(name, sizeof name, prog, pid, &now, seq,
                                 format_names[format]);
      fd = claim(format, name);
    }
    outpath = name;
  } else if (!to_stdout) {
    fd = claim(format, outpath);
  }
  if (fd < 0) {
    if (fd == -EEXIST)
      taken(outpath);
    else
      tool_error("%s: %s", outpath, strerror(-fd));
    er_snap_free(s);
    return TOOL_EXIT_INPUT;
  }
  struct er_snap_stats st;
  memset(&st, 0, sizeof st);
  if (format == FMT_EVENTS) {
    rc = write_events(s, fd, outpath, &st);
  } else {
    /* The trace writers read a ring file: give them the compact one, in
     * a directory of our own. */
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX], events[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/eventring-snapshot-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
      tool_error("%s: %s", dir, strerror(errno));
      rc = TOOL_EXIT_INPUT;
    } else {
      snprintf(events, sizeof events, "%s/snapshot.events", dir);
      int efd = er_file_open_new(events);
      if (efd < 0) {
        tool_error("%s: %s", events, strerror(-efd));
        rc = TOOL_EXIT_INPUT;
      } else {
        rc = write_events(s, efd, events, &st);
      }
      if (rc == TOOL_EXIT_OK) rc = write_trace(format, events, outpath);
      unlink(events);
      rmdir(dir);
    }
    /* What we claimed goes when the trace did not take its place (an
     * empty file or directory: a CTF directory filled halfway stays). */
    if (rc != TOOL_EXIT_OK && !to_stdout) {
      if (format == FMT_CTF)
        rmdir(outpath);
      else
        unlink(outpath);
    }
  }
  er_snap_free(s);
  if (rc != TOOL_EXIT_OK) return rc;
  if (format != FMT_EVENTS && !to_stdout) st.bytes = bytes_of(outpath);
  char shown[TOOL_TEXT_BUF(sizeof prog)];
  fprintf(stderr,
          "eventring: snapshot of %s (pid %ld) in %s: %" PRIu64
          " events, %u domains, %" PRIu64 " lost, %" PRIu64 " bytes\n",
          prog[0] ? tool_text(shown, sizeof shown, prog, TOOL_TEXT_UTF8)
                  : "unknown",
          (long)pid,
          to_stdout ? "standard output" : outpath, st.events, st.domains,
          st.lost, st.bytes);
  if (st.before) {
    char span[32];
    fprintf(stderr,
            "eventring: the snapshot is a window of the run: its last %s "
            "(ts %" PRIu64 " to %" PRIu64 "); %" PRIu64 " older events had "
            "been overwritten before it was taken (not lost)\n",
            analysis_duration(span, st.to - st.from), st.from, st.to,
            st.before);
  }
  return to_stdout ? tool_output_finish() : TOOL_EXIT_OK;
}
