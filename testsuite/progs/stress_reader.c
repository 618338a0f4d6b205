/* stress_reader -- the reader in another process for test_stress: reads
 * the ring files of the test's process while it writes them and reports,
 * for each, what it was given and what it was told is lost.
 *
 * Commands, one a line on stdin:
 *   open DIR PID PARENT FIXED
 *                         open a cursor on DIR/PID.events and poll it as
 *                         fast as it goes (PARENT: the pid fork_child may
 *                         name, 0 for none; FIXED: writers below this id
 *                         keep their slot); answers "opened RC"
 *   stop                  the writer has stopped: drain the cursor, then
 *                         answer with the report of stress_check.h
 * End of input ends the program.  Exit status 0, or 2 on a usage error.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stress_check.h"

/* Polls with a limit that changes from poll to poll, so that polls end
 * at every kind of place: mid-ring, at a domain's end, at the tail. */
static size_t next_limit(unsigned long n) {
  static const size_t limits[] = {0, 1, 3, 64, 1000, 0, 17};
  return limits[n % (sizeof limits / sizeof limits[0])];
}

/* Reads one line from stdin into `line` (without its newline); returns 1,
 * or 0 at end of input.  Blocking when `wait`, else returns -1 when no
 * whole line is there yet. */
static char inbuf[4096];
static size_t inlen;

static int read_line(char *line, size_t size, int wait) {
  for (;;) {
    char *nl = memchr(inbuf, '\n', inlen);
    if (nl) {
      size_t n = (size_t)(nl - inbuf);
      size_t m = n < size - 1 ? n : size - 1;
      memcpy(line, inbuf, m);
      line[m] = 0;
      memmove(inbuf, nl + 1, inlen - n - 1);
      inlen -= n + 1;
      return 1;
    }
    if (inlen == sizeof inbuf) return 0; /* a line too long: give up */
    struct pollfd p = {STDIN_FILENO, POLLIN, 0};
    int r = poll(&p, 1, wait ? -1 : 0);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return -1;
    ssize_t got = read(STDIN_FILENO, inbuf + inlen, sizeof inbuf - inlen);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return 0;
    inlen += (size_t)got;
  }
}

int main(void) {
  eventring_callbacks *cb = st_callbacks();
  if (!cb) return 2;
  struct st_reader rd = {0};
  char line[512];
  int r;
  while ((r = read_line(line, sizeof line, 1)) == 1) {
    char dir[256];
    long pid, parent;
    unsigned fixed;
    if (sscanf(line, "open %255s %ld %ld %u", dir, &pid, &parent, &fixed) !=
        4) {
      fprintf(stderr, "stress_reader: bad command: %s\n", line);
      return 2;
    }
    eventring_cursor *c = NULL;
    int rc = eventring_cursor_open(&c, dir, (pid_t)pid);
    printf("opened %d\n", rc);
    fflush(stdout);
    st_reader_init(&rd, (pid_t)pid, (pid_t)parent, fixed);
    unsigned long polls = 0;
    int stopping = 0, err = 0;
    for (;;) {
      if (!stopping) {
        int got = read_line(line, sizeof line, 0);
        if (got == 0) return 0;
        if (got == 1) {
          if (strcmp(line, "stop") != 0) {
            fprintf(stderr, "stress_reader: bad command: %s\n", line);
            return 2;
          }
          stopping = 1; /* the file is quiescent from now on */
        }
      }
      if (!c || err) {
        if (stopping) break;
        sched_yield();
        continue;
      }
      int n = eventring_cursor_poll(c, cb, &rd,
                                    stopping ? 0 : next_limit(polls));
      polls++;
      if (n < 0) {
        snprintf(rd.first, sizeof rd.first, "poll: %s", eventring_strerror(n));
        rd.bad++;
        err = n;
        continue;
      }
      rd.polled += (uint64_t)n;
      if (n == 0) {
        if (stopping) break;
        sched_yield();
      }
    }
    if (!c) {
      snprintf(rd.first, sizeof rd.first, "open: %s", eventring_strerror(rc));
      rd.bad++;
    }
    st_report(stdout, &rd);
    eventring_cursor_free(c);
  }
  st_reader_free(&rd);
  eventring_callbacks_free(cb);
  return 0;
}
