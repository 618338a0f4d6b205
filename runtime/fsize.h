/* fsize.h -- the file size limit (RLIMIT_FSIZE, `ulimit -f`), checked
 * before a file grows (fsize.c). */
#ifndef EVENTRING_FSIZE_H
#define EVENTRING_FSIZE_H

#include <stdint.h>

/* Whether a regular file may be written, truncated or reserved up to
 * `end` bytes under the calling process's soft RLIMIT_FSIZE.  The kernel
 * raises SIGXFSZ, which kills a host that does not handle it, at a write
 * that starts at or past the limit and at an ftruncate(2) or
 * fallocate(2) that would grow the file past it; the library never
 * changes the host's disposition of SIGXFSZ, so it asks this first and
 * fails with -EFBIG instead.  A limit that cannot be read allows
 * anything.  Async-signal-safe (one getrlimit(2)). */
__attribute__((visibility("hidden"))) int er_fsize_allows(uint64_t end);

#endif /* EVENTRING_FSIZE_H */
