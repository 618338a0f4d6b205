/* self_kill -- a program traced from the environment (OCAML_RUNTIME_EVENTS_START)
 * that writes a few events and dies of SIGKILL, leaving its ring file
 * behind as a crashed or killed process does. */
#include <signal.h>
#include <stdio.h>

#include "eventring.h"

int main(void) {
  const char *path = eventring_path();
  printf("active=%d path=%s\n", eventring_is_active(), path ? path : "-");
  fflush(stdout);
  for (int i = 0; i < 10; i++) {
    eventring_begin(EVENTRING_PHASE_MAJOR);
    eventring_end(EVENTRING_PHASE_MAJOR);
  }
  raise(SIGKILL);
  return 1;
}
