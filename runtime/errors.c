/* errors.c -- descriptions of error codes. */
#include <string.h>

#include "internal.h"

const char *eventring_strerror(int err) {
  switch (err) {
  case EVENTRING_OK: return "success";
  case EVENTRING_E_INVAL: return "invalid argument";
  case EVENTRING_E_NAMETOOLONG:
    return "event name is empty or longer than 127 bytes";
  case EVENTRING_E_TOOMANY: return "all 8192 user event ids are in use";
  case EVENTRING_E_EXISTS:
    return "event name already registered with another type";
  case EVENTRING_E_TOOBIG: return "payload does not fit in one event";
  case EVENTRING_E_DISABLED:
    return "eventring was built with tracing disabled";
  case EVENTRING_E_BUSY:
    return "busy: the domain slot is held by another thread, or another "
           "thread is polling this cursor";
  case EVENTRING_E_NOTSTARTED: return "tracing is not started";
  case EVENTRING_E_CORRUPT: return "ring file is malformed";
  case EVENTRING_E_VERSION: return "ring file has an unsupported version";
  case EVENTRING_E_NOTRING:
    return "not a ring file: not a regular file";
  case EVENTRING_E_TIMEDOUT:
    return "the traced process did not answer in time";
  case EVENTRING_E_NOTRINGFILE: return "not a ring file";
  case EVENTRING_E_TRUNCATED:
    return "truncated ring file: shorter than its header says";
  case EVENTRING_E_NOCONTROL:
    return "the ring file has no remote control: OCaml 5's runtime wrote "
           "it, and pausing or resuming from outside needs eventring's "
           "runtime";
  case EVENTRING_E_PENDING:
    return "the traced process took the request but has not applied it yet";
  case EVENTRING_E_NOWALLCLOCK:
    return "the ring file does not record the wall clock (OCaml 5's runtime "
           "or an earlier eventring wrote it)";
  default: break;
  }
  /* Negated errno values, described without the locale or a buffer, so
   * that a warning may quote them in a signal handler or a forked child
   * (warn.c). */
  if (err < 0 && err > -4096) return er_errno_text(-err);
  return "unknown eventring error";
}
