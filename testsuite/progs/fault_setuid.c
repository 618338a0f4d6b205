/* fault_setuid -- a program test_hostile_env installs setuid (and, for
 * comparison, not), to see whether it obeys the environment.
 *
 *   fault_setuid env     tracing only if the environment started it
 *                        (OCAML_RUNTIME_EVENTS_START at load);
 *   fault_setuid start   calls eventring_start() itself.
 *
 * Prints one line on stdout:
 *
 *   euid=U rc=R path=PATH words=W
 *
 * rc is eventring_start()'s result ("-" in env mode), PATH the ring file
 * (or "-" when tracing is off) and W its ring size in words, read from
 * the file's own header ("-" when off).  A setuid program must ignore
 * OCAML_RUNTIME_EVENTS_START, _DIR, _PRESERVE and OCAMLRUNPARAM: with
 * them set it prints path=- in env mode and, in start mode, a path in
 * its working directory with the default ring size, removed by
 * eventring_stop() whatever OCAML_RUNTIME_EVENTS_PRESERVE says.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "eventring.h"

int main(int argc, char **argv) {
  int explicit_start = argc > 1 && !strcmp(argv[1], "start");
  char rc[16] = "-";
  if (explicit_start) snprintf(rc, sizeof rc, "%d", eventring_start());
  const char *path = eventring_path();
  char words[32] = "-";
  if (path) {
    uint64_t meta[8];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && pread(fd, meta, sizeof meta, 0) == (ssize_t)sizeof meta)
      snprintf(words, sizeof words, "%llu", (unsigned long long)meta[4]);
    if (fd >= 0) close(fd);
    eventring_begin(EVENTRING_PHASE_MINOR);
    eventring_end(EVENTRING_PHASE_MINOR);
  }
  printf("euid=%ld rc=%s path=%s words=%s\n", (long)geteuid(), rc,
         path ? path : "-", words);
  fflush(stdout);
  /* Stop as the exit teardown would (PRESERVE decides whether the file
   * stays), then leave without the exit handlers: LeakSanitizer's, in a
   * sanitizer build, cannot work in a setuid process (it is not dumpable)
   * and would fail the program. */
  eventring_stop();
  _exit(0);
}
