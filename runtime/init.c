/* init.c -- program start and exit.
 *
 * The library's constructor reads OCAML_RUNTIME_EVENTS_START and, when
 * it is set, starts tracing before main() as OCaml 5's runtime does; a
 * failure to start is one warning and the program runs untraced.  A
 * program that never traces pays for nothing else: the fork handlers are
 * installed the first time the tracing state is touched (er_arm()), the
 * domain slots stay untouched bss until a thread takes one (state.c;
 * its thread-exit key, made at load, holds no value until then).  The
 * destructor stops tracing, so that the file is removed (unless
 * preserved) when the program exits.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* What state.c's anchor refers to: a program that uses the state gets
 * this object, its constructors and its destructor. */
const char er_init_anchor = 0;

/* Before the library's other constructors (the one below may start
 * tracing), and so before anything takes the lock or a slot: the
 * thread-exit key (domain.c says why it is made at load) and what
 * arming installs (er_arm(), the fork handlers). */
__attribute__((constructor(101))) static void er_init_early(void) {
  er_exit_key_made =
      pthread_key_create(&er_exit_key, er_on_thread_exit) == 0;
  er_arm_with(er_fork_install);
}

/* The variable's name, in .data rather than .rodata: the data segment's
 * pages are in memory once the loader has relocated the library, while
 * nothing else of a program that never traces reads the read-only data
 * segment, whose pages would otherwise all be mapped for this one string
 * (the kernel maps the pages around a fault).  See bench/bench_rss.c. */
static char start_var[] = "OCAML_RUNTIME_EVENTS_START";

__attribute__((constructor)) static void er_init(void) {
#ifndef EVENTRING_DISABLED
  const char *start = secure_getenv(start_var);
  if (start) {
    /* "paused": armed, paying only the paused probe cost until resumed
     * (eventring_resume() or `eventring resume PID` from outside). */
    if (strcmp(start, "paused") == 0) er_st.paused = 1;
    int r = eventring_start();
    if (r < 0)
      er_warn("cannot start tracing: %s: %s; running untraced", er_st.path,
              eventring_strerror(r));
  }
#endif
}

__attribute__((destructor)) static void er_fini(void) {
  /* Never touched: nothing to stop, and nothing to install now. */
  if (!er_armed()) return;
  er_lock();
  er_stop_locked();
  er_unlock();
}
