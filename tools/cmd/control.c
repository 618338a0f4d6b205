/* control.c -- `eventring pause PID` and `eventring resume PID`: switch
 * the recording of a running process off and on from outside.
 *
 * Both ask the library (eventring_remote_pause/_resume), which hands the
 * request to a small thread of the traced process through its ring file
 * and waits for the answer: when the command returns 0 the process has
 * applied the request and recorded ring_pause or ring_resume.  There is
 * nothing to read, so these subcommands take a pid (and the directory of
 * its file) rather than the source options of the others.
 *
 * The library already refuses what the operating system would: the file
 * is 0600, so only its owner (or root) can open it for writing.  We turn
 * its error codes into messages that say what to do next.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"

static void help(const char *name) {
  int pause = !strcmp(name, "pause");
  printf("Usage: eventring %s [OPTION]... PID\n"
         "%s recording in the running process PID, through its ring file,\n"
         "and wait until it has %s (it records %s).\n"
         "\n"
         "Options:\n"
         "  --pid PID      the process (instead of the operand)\n"
         "  --dir DIR      where its ring file PID.events is (default:\n"
         "                 $OCAML_RUNTIME_EVENTS_DIR, else the current "
         "directory)\n"
         "  -h, --help     print this help and exit\n"
         "\n"
         "Exit status: 0 done, 1 the process could not be %s (no ring "
         "file,\n"
         "not yours, not answering within a second: then the request is\n"
         "withdrawn, or reported pending if the process took it), 2 bad "
         "usage.\n",
         name, pause ? "Pause" : "Resume", pause ? "paused" : "resumed",
         pause ? "ring_pause" : "ring_resume", pause ? "paused" : "resumed");
}

static int control(int argc, char **argv, int pause) {
  const char *name = pause ? "pause" : "resume";
  const char *help_ref = pause ? "eventring pause --help"
                               : "eventring resume --help";
  static const struct option longopts[] = {
      {"dir", required_argument, NULL, TOOL_OPT_DIR},
      {"pid", required_argument, NULL, TOOL_OPT_PID},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *dir = NULL, *pid_arg = NULL;
  int c;
  while ((c = tool_getopt(argc, argv, ":h", longopts)) != -1) {
    switch (c) {
    case TOOL_OPT_DIR: dir = optarg; break;
    case TOOL_OPT_PID: pid_arg = optarg; break;
    case 'h':
      help(name);
      return tool_output_finish();
    default: return tool_option_error(help_ref, c, argv);
    }
  }
  int nargs = argc - optind;
  if (nargs == 0 && !pid_arg)
    return tool_usage_error(help_ref, "no process given (PID)");
  if (nargs > 1 || (nargs == 1 && pid_arg))
    return tool_usage_error(help_ref, "one process at a time");
  if (nargs == 1) pid_arg = argv[optind];
  pid_t pid = tool_parse_pid(pid_arg, strlen(pid_arg));
  if (!pid) return tool_usage_error(help_ref, "invalid pid '%s'", pid_arg);
  if (dir && !*dir) return tool_usage_error(help_ref, "empty directory name");

  /* Found the way every subcommand finds a process's file; the library
   * takes the directory of it. */
  char path[4096], msg[4096 + 256];
  if (tool_find_ring(pid, dir, path, sizeof path, msg, sizeof msg) !=
      TOOL_FIND_OK) {
    tool_error("%s", msg);
    return TOOL_EXIT_INPUT;
  }
  char where[4096];
  tool_dir_of(path, where, sizeof where);

  int r = pause ? eventring_remote_pause(where, pid)
                : eventring_remote_resume(where, pid);
  char why[256];
  switch (r) {
  case 0: return TOOL_EXIT_OK;
  case -EPERM:
  case -EACCES:
    tool_error("%s: not yours: only the owner of a traced process (or "
               "root) can %s it",
               path, name);
    break;
  case EVENTRING_E_NOCONTROL:
    tool_error("%s: written by OCaml 5's runtime, which cannot be paused or "
               "resumed from outside: %s needs a program traced with "
               "eventring's runtime",
               path, name);
    break;
  case EVENTRING_E_NOTSTARTED:
    tool_error("pid %ld does not take requests (it stopped tracing, or "
               "its eventring is too old to be controlled from outside)",
               (long)pid);
    break;
  case EVENTRING_E_TIMEDOUT:
    tool_error("pid %ld did not answer within a second (it is stopped, or "
               "has exited): the request was withdrawn, nothing changed",
               (long)pid);
    break;
  case EVENTRING_E_PENDING:
    tool_error("pid %ld took the request but has not applied it within a "
               "second (it is stopped): it will be %s when it runs again",
               (long)pid, pause ? "paused" : "resumed");
    break;
  default:
    tool_error("%s: %s", path, tool_ring_error(path, r, why, sizeof why));
    break;
  }
  return TOOL_EXIT_INPUT;
}

int tool_pause(int argc, char **argv) { return control(argc, argv, 1); }

int tool_resume(int argc, char **argv) { return control(argc, argv, 0); }
