/* starttime.h -- a process's start time, which tells a ring file's writer
 * from a later process given the same pid (starttime.c).  Used by the
 * runtime and by the eventring command, which links the static library. */
#ifndef EVENTRING_STARTTIME_H
#define EVENTRING_STARTTIME_H

#include <stdint.h>
#include <sys/types.h>

/* The start time of process `pid` (0: the caller), field 22 of
 * /proc/PID/stat, into *out.  Returns 0 or a negated errno value. */
__attribute__((visibility("hidden"))) int er_proc_start_time(pid_t pid,
                                                             uint64_t *out);

/* The writer a ring file open on `fd` records: its pid and start time
 * (ER_EXT_FLAG_START_TIME).  Returns 1 when the file records both, 0 when
 * it is not a complete eventring file or records no start time (OCaml's
 * files, earlier versions', one being created), or a negated errno
 * value. */
__attribute__((visibility("hidden"))) int er_file_writer(int fd, pid_t *pid,
                                                         uint64_t *start);

#endif /* EVENTRING_STARTTIME_H */
