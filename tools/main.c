/* main.c -- the `eventring` command: dispatch to its subcommands.
 *
 * `eventring SUBCOMMAND [OPTIONS] [ARGS]` runs one subcommand, which
 * parses the rest of the command line itself; `eventring --help` and
 * `eventring --version` are the only options of the command as a whole.
 *
 * The command is built in layers, one folder and one header each; a
 * file calls only its own layer and the layers below it (checked by
 * testsuite/test_layers.sh), and a header includes only the header of
 * the layer below:
 *   cmd/       one file per subcommand (cmd.h);
 *   render/    output formats: trace files, SVG charts, text bars
 *              (render.h);
 *   analysis/  pauses, spans, histograms, rank tests (analysis.h);
 *   input/     where events come from: files, processes, commands,
 *              directories, filters, event names (input.h);
 *   base/      where the report goes, error lines, escaping, the exit
 *              statuses every subcommand shares, durations (base.h).
 *
 * The tool links libeventring statically and reads ring files only
 * through the public consumer API of eventring.h, as any user's monitor
 * would.  It never starts tracing itself.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"

struct subcommand {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
  int spawns; /* takes `-- CMD ARGS...` */
};

static const struct subcommand subcommands[] = {
    {"dump", tool_dump, "print every event of a ring file, one per line", 1},
    {"ctf", tool_ctf, "write the events as a CTF trace for babeltrace2", 1},
    {"trace", tool_trace, "write the events as a trace for Perfetto", 1},
    {"latency", tool_latency, "print the distribution of GC pause times", 1},
    {"stats", tool_stats, "summarise phases, GC time, counters, events", 1},
    {"diff", tool_diff, "compare two runs' phases and spans, beyond noise",
     0},
    {"report", tool_report, "write an HTML page of charts and tables", 1},
    {"metrics", tool_metrics, "serve the events as Prometheus metrics", 1},
    {"snapshot", tool_snapshot, "copy what the rings hold now to a file", 0},
    {"watch", tool_watch, "write the events around each anomaly to a file", 1},
    {"record", tool_record, "write every event to files rotated by size or time",
     1},
    {"pause", tool_pause, "pause recording in a running process", 0},
    {"resume", tool_resume, "resume recording in a running process", 0},
};

#define N_SUBCOMMANDS (sizeof subcommands / sizeof subcommands[0])

static void help(void) {
  printf("Usage: eventring SUBCOMMAND [OPTION]... [ARG]...\n"
         "Read the ring files that eventring and OCaml 5 programs write.\n"
         "\n"
         "Subcommands:\n");
  for (size_t i = 0; i < N_SUBCOMMANDS; i++)
    printf("  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
  printf("\n"
         "Options:\n"
         "  -h, --help     print this help and exit\n"
         "  -V, --version  print the version and exit\n"
         "\n"
         "'eventring SUBCOMMAND --help' describes a subcommand; the manual\n"
         "page eventring(1) describes them all.\n");
}

/* A word before the subcommand that starts with '-' and is neither -h,
 * --help, -V nor --version: the same messages as a subcommand's options
 * get (output.c's tool_option_error). */
static int global_option_error(const char *word) {
  static const char ref[] = "eventring --help";
  if (word[1] != '-') {
    /* Named by its first letter that is not an option, as getopt does
     * with a word of several. */
    const char *p = word + 1;
    while (p[1] && (*p == 'h' || *p == 'V')) p++;
    return tool_usage_error(ref, "unknown option '-%c'", *p);
  }
  size_t n = strcspn(word, "=");
  if (word[n] && ((n == 6 && !strncmp(word, "--help", n)) ||
                  (n == 9 && !strncmp(word, "--version", n))))
    return tool_usage_error(ref, "option '%.*s' takes no argument ('%s')",
                            (int)n, word, word);
  return tool_usage_error(ref, "unknown option '%.*s'", (int)n, word);
}

int main(int argc, char **argv) {
  tool_output_init();
  if (argc < 2)
    return tool_usage_error("eventring --help", "no subcommand given");
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
    help();
    return tool_output_finish();
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
    printf("eventring %s\n", EVENTRING_VERSION);
    return tool_output_finish();
  }
  for (size_t i = 0; i < N_SUBCOMMANDS; i++)
    if (!strcmp(cmd, subcommands[i].name)) {
      /* `-- CMD ARGS...` is the source's (source.c), not an operand of
       * the subcommand; a spawned command's status becomes the tool's. */
      int n = tool_source_take_command(argc - 1, argv + 1);
      if (n < argc - 1 && !subcommands[i].spawns) {
        char help[64];
        snprintf(help, sizeof help, "eventring %s --help", cmd);
        return tool_usage_error(help, "%s does not run a command ('--')", cmd);
      }
      if (n < argc - 1) tool_output_note_command();
      return tool_source_exit_status(subcommands[i].run(n, argv + 1));
    }
  if (cmd[0] == '-' && cmd[1]) return global_option_error(cmd);
  return tool_usage_error("eventring --help", "unknown subcommand '%s'", cmd);
}
