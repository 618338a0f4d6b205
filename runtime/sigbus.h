/* sigbus.h -- guarding the ring file's mapping against truncation by its
 * owner (sigbus.c).  All under er_st.lock. */
#ifndef EVENTRING_SIGBUS_H
#define EVENTRING_SIGBUS_H

#include <stddef.h>

/* Guards the `len` bytes mapped at `map` from the file open on `fd`
 * (`path`, for the one line said when it is cut), installing the SIGBUS
 * handler the first time.  Replaces the previous guard. */
__attribute__((visibility("hidden"))) void er_sigbus_guard(void *map,
                                                           size_t len, int fd,
                                                           const char *path);

/* The descriptor is about to be closed, the mapping stays (a thread may
 * still write into it): a fault is then repaired with anonymous memory. */
__attribute__((visibility("hidden"))) void er_sigbus_forget_fd(void);

/* The mapping is about to go: nothing is guarded any more. */
__attribute__((visibility("hidden"))) void er_sigbus_unguard(void);

#endif /* EVENTRING_SIGBUS_H */
