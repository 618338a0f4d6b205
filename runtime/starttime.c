/* starttime.c -- telling a ring file's writer from a later process that
 * was given the same pid.
 *
 * A file is named after its writer's pid, and pids come round again:
 * quickly in a container's pid namespace, where the program is often pid
 * 2.  A writer killed by SIGKILL leaves its file behind, and the next
 * process with that pid would find its name taken, while a reader asking
 * for that pid would read the dead process's events.  The pid and the
 * process's start time (field 22 of /proc/PID/stat, clock ticks since
 * boot) together name one process for as long as the machine runs, so
 * the writer records its start time in the extension block
 * (ER_EXT_FLAG_START_TIME) and both sides compare it with /proc.
 *
 * Everything here is async-signal-safe (open, read, pread, close): a
 * forked child creates its file from the fork handler.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "starttime.h"

int er_proc_start_time(pid_t pid, uint64_t *out) {
  char path[40], buf[1024];
  if (pid) snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  else snprintf(path, sizeof path, "/proc/self/stat");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  int err = errno;
  close(fd);
  if (n <= 0) return n < 0 ? -err : -EIO;
  buf[n] = '\0';
  /* "pid (comm) state ppid ...": comm may hold spaces and parentheses,
   * so fields are counted from the last ')', which ends it; the state is
   * field 3 and the start time field 22. */
  char *p = strrchr(buf, ')');
  if (!p) return -EIO;
  int field = 2;
  for (p++; *p && field < 22; p++)
    if (*p == ' ') field++;
  if (field != 22 || *p < '0' || *p > '9') return -EIO;
  uint64_t v = 0;
  for (; *p >= '0' && *p <= '9'; p++) v = v * 10 + (uint64_t)(*p - '0');
  *out = v;
  return 0;
}

int er_file_writer(int fd, pid_t *pid, uint64_t *start) {
  uint64_t w[ER_META_WORDS + ER_EXT_WORDS];
  ssize_t n = pread(fd, w, sizeof w, 0);
  if (n < 0) return -errno;
  if ((size_t)n < sizeof w) return 0;
  const uint64_t *x = w + ER_META_WORDS;
  if (w[ER_META_VERSION] != ER_FORMAT_VERSION ||
      x[ER_EXT_MAGIC_W] != ER_EXT_MAGIC || x[ER_EXT_PID] > INT32_MAX)
    return 0;
  *pid = (pid_t)x[ER_EXT_PID];
  uint64_t size = x[ER_EXT_SIZE];
  if (!(x[ER_EXT_FLAGS] & ER_EXT_FLAG_START_TIME) ||
      size < ER_EXT_WORDS * 8 + 8 || size > (UINT64_C(1) << 30))
    return 0;
  /* The block's last word (ring_format.h). */
  uint64_t t;
  n = pread(fd, &t, 8, (off_t)(ER_META_WORDS * 8 + size - 8));
  if (n < 0) return -errno;
  if (n != 8) return 0;
  *start = t;
  return 1;
}
