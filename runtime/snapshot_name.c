/* snapshot_name.c -- the names snapshots get when none is given. */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "snapshot.h"

void er_snap_file_part(const char *name, char *out, size_t size) {
  size_t n = 0;
  for (; name && name[n] && n + 1 < size; n++) {
    unsigned char ch = (unsigned char)name[n];
    out[n] = ch > ' ' && ch < 127 && ch != '/' ? (char)ch : '_';
  }
  out[n] = 0;
  if (!n) snprintf(out, size, "unknown");
}

int er_snap_default_name(char *buf, size_t size, const char *program,
                         pid_t pid, const struct timespec *when, int seq,
                         const char *ext) {
  char prog[64], stamp[32], nth[16] = "";
  er_snap_file_part(program, prog, sizeof prog);
  struct tm tm;
  gmtime_r(&when->tv_sec, &tm);
  size_t n = strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
  snprintf(stamp + n, sizeof stamp - n, ".%03ldZ", when->tv_nsec / 1000000);
  if (seq > 1) snprintf(nth, sizeof nth, "-%d", seq);
  int len = snprintf(buf, size, "%s-%ld-%s%s.%s", prog, (long)pid, stamp,
                     nth, ext);
  return len < 0 || (size_t)len >= size ? -ENAMETOOLONG : 0;
}
