/* snapshot_api.c -- eventring_snapshot(): this process's rings into a
 * compact file (snapshot.h), read through a cursor on its own file. */
#include <errno.h>
#include <unistd.h>

#include "internal.h"
#include "snapshot.h"

int eventring_snapshot(const char *path) {
  if (!path || !*path) return EVENTRING_E_INVAL;
  eventring_cursor *c;
  int r = eventring_cursor_open(&c, NULL, 0);
  if (r) return r;
  struct er_snap *s = er_snap_new();
  int fd = -1;
  if (!s) {
    r = -ENOMEM;
    goto out;
  }
  /* The file before the copy: a name already taken is reported without
   * spending the copy, and the copy is not delayed by the creation. */
  if ((fd = er_file_open_new(path)) < 0) {
    r = fd;
    goto out;
  }
  long n = er_snap_read_cursor(s, c);
  if (n < 0) r = (int)n;
  if (!r) r = er_snap_set_writer(s, getpid(), program_invocation_short_name);
  if (!r) r = er_snap_write(s, fd, NULL);
  if (close(fd) < 0 && !r) r = -errno;
  /* We created the file with O_EXCL just now: it is ours to remove. */
  if (r) unlink(path);
out:
  er_snap_free(s);
  eventring_cursor_free(c);
  return r;
}
