/* errors.c -- descriptions of error codes. */
#include <string.h>

#include "internal.h"

const char *eventring_strerror(int err) {
  switch (err) {
#define CASE(code, text) \
  case code: return text;
    EVENTRING__ERROR_TEXTS(CASE)
#undef CASE
  default: break;
  }
  /* Negated errno values, described without the locale or a buffer, so
   * that a warning may quote them in a signal handler or a forked child
   * (warn.c). */
  if (err < 0 && err > -4096) return er_errno_text(-err);
  return "unknown eventring error";
}
