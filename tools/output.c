/* output.c -- standard output and error lines of the `eventring` command.
 *
 * Event listings can be long and are often piped into head, grep or a
 * pager, so standard output gets a large buffer of its own, and SIGPIPE
 * is ignored: a reader that goes away makes the next write fail with
 * EPIPE, the subcommand notices (tool_output_ok()), stops reading and
 * exits with TOOL_EXIT_PIPE without a word, which is what a shell shows
 * for a command killed by SIGPIPE but without dying mid-write.  Any other
 * write error (a full disk, a closed descriptor) is reported once.
 *
 * Errors go to stderr as exactly one line starting with "eventring: ",
 * which scripts and the tests rely on.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tool.h"

/* Large enough that a listing is written in few system calls; small
 * enough not to matter. */
static char outbuf[1 << 18];
static int out_errno; /* errno of the first failed write, 0 while none */

void tool_output_init(void) {
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
  signal(SIGPIPE, SIG_IGN);
}

void tool_error(const char *fmt, ...) {
  va_list ap;
  char line[1024];
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  /* Whatever it holds, the message stays on one line. */
  for (char *p = line; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  fprintf(stderr, "eventring: %s\n", line);
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
  if (!out_errno) return TOOL_EXIT_OK;
  if (out_errno == EPIPE) return TOOL_EXIT_PIPE;
  tool_error("standard output: %s", strerror(out_errno));
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

void tool_put_name(FILE *out, const char *name, const char *fallback,
                   int id) {
  if (!name || !*name) {
    fprintf(out, "%s%d", fallback, id);
    return;
  }
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
    if (*p > 32 && *p < 127)
      putc_unlocked(*p, out);
    else
      put_ddd(out, *p);
  }
}

int tool_option_error(const char *help, int c, char **argv) {
  if (c == ':')
    return tool_usage_error(help, "option '%s' needs an argument",
                            argv[optind - 1]);
  /* A short option is named by optopt (its word may hold several); a
   * long one, unknown or given an argument it does not take, by its
   * word. */
  if (optopt > 0 && optopt < 128 && argv[optind - 1][1] != '-')
    return tool_usage_error(help, "unknown option '-%c'", optopt);
  return tool_usage_error(help, "invalid option '%s'", argv[optind - 1]);
}
