/* consumer_io.c -- the three ways a cursor reaches a file's bytes.
 *
 * How the file is read.  A file may be truncated while we read it (by its
 * owner, or by anyone who may write it), and a mapping of a file that
 * shrank raises SIGBUS on the next touch of a page past its new end: no
 * check beforehand closes that window.  So a cursor maps a file only as
 * a view that sigbus.c guards: a fault there leaves zeros in the view,
 * marked cut, which the poll reports as EVENTRING_E_TRUNCATED in place
 * of anything it read.  On another process's file the cursor installs
 * that handler (chained to the host's) if this process has not.  Each
 * poll first checks that a fault would still reach the handler (the host
 * may have replaced it, or this thread block SIGBUS): if not, the cursor
 * reads with pread(2) from then on.  It reads with pread(2) from the
 * start when the view table is full (tools reading many files), when the
 * mapping fails, or when EVENTRING_READ_PREAD is set: one call per run of
 * ring words, one per header word whose order matters, a short read
 * being EVENTRING_E_TRUNCATED.  A cursor on an image in memory (the
 * fuzzer's) reads the caller's bytes.  Every access goes through get()
 * and get_acq(), so that the decoding is the same for all three.  The
 * size is also checked with fstat() before each poll, so that a file cut
 * anywhere is reported at once, whatever the poll reads.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cursor.h"

/* Whether EVENTRING_READ_PREAD asks for pread(2) on every file. */
static int pread_forced(void) {
  const char *v = getenv("EVENTRING_READ_PREAD");
  return v && *v && strcmp(v, "0") != 0;
}

eventring_cursor *er_cursor_new_fd(int fd, uint64_t size, enum open_as as) {
  eventring_cursor *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->fd = fd;
  c->via = VIA_PREAD;
  c->view = -1;
  c->map_bytes = (size_t)size;
  if (as != OPEN_PREAD && !pread_forced()) {
    /* Mapped only once guarded: with no view free (a tool reading many
     * files holds more cursors than the table has views), or no mapping,
     * the cursor reads with pread(2), which needs neither. */
    void *m = mmap(NULL, c->map_bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED) {
      c->view = as == OPEN_OWN ? er_sigbus_watch_view(m, c->map_bytes)
                               : er_sigbus_watch_other_view(m, c->map_bytes);
      if (c->view < 0) {
        munmap(m, c->map_bytes);
      } else {
        c->map = m;
        c->via = VIA_MAP;
      }
    }
  }
  return c;
}

eventring_cursor *er_cursor_new_image(const void *bytes, size_t len) {
  eventring_cursor *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->fd = -1;
  c->via = VIA_IMAGE;
  c->view = -1;
  c->map = bytes;
  c->map_bytes = len;
  return c;
}

void er_cursor_close_file(eventring_cursor *c) {
  if (c->view >= 0) {
    er_sigbus_unwatch_view(c->view);
    munmap((void *)c->map, c->map_bytes);
    c->view = -1;
  }
  c->map = NULL;
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
}

