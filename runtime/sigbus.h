/* sigbus.h -- guarding the ring file's mappings against truncation by its
 * owner (sigbus.c).  The writer's guard is set under er_st.lock. */
#ifndef EVENTRING_SIGBUS_H
#define EVENTRING_SIGBUS_H

#include <stddef.h>

/* Guards the `len` bytes mapped at `map` from the file open on `fd`
 * (`path`, for the one line said when it is cut), installing the SIGBUS
 * handler the first time.  Replaces the previous guard. */
__attribute__((visibility("hidden"))) void er_sigbus_guard(void *map,
                                                           size_t len, int fd,
                                                           const char *path);

/* The descriptor is about to be closed, the mapping stays for good (a
 * thread may still write into it): a fault there is then repaired with
 * anonymous memory, even after another file is guarded. */
__attribute__((visibility("hidden"))) void er_sigbus_forget_fd(void);

/* The mapping is about to go: nothing is guarded any more. */
__attribute__((visibility("hidden"))) void er_sigbus_unguard(void);

/* A cursor's read-only mapping of this process's ring file, `len` bytes
 * at `map`: a fault there (the file cut under it) puts zeros in its place
 * and marks it cut instead of killing the host.  Returns the view's
 * number, or -1 when it cannot be guarded (no handler installed, or the
 * table full): the caller must not read the file through a mapping then.
 * Need not hold er_st.lock; neither do the two below. */
__attribute__((visibility("hidden"))) int er_sigbus_watch_view(const void *map,
                                                               size_t len);

/* The same for a mapping of another process's file, installing the
 * handler first when this process has not (it takes er_st.lock then, so
 * the caller must not hold it).  Returns the view's number, or -1 (the
 * handler cannot be installed, or the table is full): the caller reads
 * the file with pread(2) then. */
__attribute__((visibility("hidden"))) int er_sigbus_watch_other_view(
    const void *map, size_t len);

/* Whether a fault of the calling thread in a view reaches our handler:
 * it is still the one installed for SIGBUS (a host may have replaced it
 * since) and this thread does not block SIGBUS.  Two system calls. */
__attribute__((visibility("hidden"))) int er_sigbus_reaches_us(void);

/* 1 once a fault in the view replaced it with zeros: nothing read through
 * it since the fault is the file's.  An acquire load. */
__attribute__((visibility("hidden"))) int er_sigbus_view_cut(int view);

/* The view is about to be unmapped. */
__attribute__((visibility("hidden"))) void er_sigbus_unwatch_view(int view);

#endif /* EVENTRING_SIGBUS_H */
