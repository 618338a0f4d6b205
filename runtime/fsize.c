/* fsize.c -- the file size limit, checked before a file grows
 * (fsize.h). */
#include <sys/resource.h>

#include "fsize.h"

int er_fsize_allows(uint64_t end) {
  struct rlimit fsize;
  return getrlimit(RLIMIT_FSIZE, &fsize) != 0 ||
         fsize.rlim_cur == RLIM_INFINITY || end <= (uint64_t)fsize.rlim_cur;
}
