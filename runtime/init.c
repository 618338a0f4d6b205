/* init.c -- program start and exit.
 *
 * The library's constructor reads OCAML_RUNTIME_EVENTS_START and, when
 * it is set, starts tracing before main() as OCaml 5's runtime does; a
 * failure to start is one warning and the program runs untraced.  A
 * program that never traces pays for nothing else: the fork handlers are
 * installed the first time the tracing state is touched (er_arm()), the
 * domain slots stay untouched bss until a thread takes one (domain.c;
 * its thread-exit key, made at load, holds no value until then).  The
 * destructor stops tracing, so that the file is removed (unless
 * preserved) when the program exits.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The process's tracing state is defined here, beside the constructor
 * and destructor that begin and end it: a program linked with the static
 * library gets only the objects whose symbols it uses, and every part of
 * the runtime that uses the state then brings these two along. */
struct er_state er_st = {
    .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1, .free_epoch = 1};

/* The program name the host gave (eventring__set_program()), or empty;
 * under er_st.lock. */
static char program[ER_EXT_PROGRAM_BYTES];

const char *er_program_name(void) {
  return program[0] ? program : program_invocation_short_name;
}

void eventring__set_program(const char *name) {
  if (!name) return;
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  if (!*base) return;
  er_lock();
  snprintf(program, sizeof program, "%s", base);
  /* A file made before (OCAML_RUNTIME_EVENTS_START starts tracing before
   * the host's own initialisation) is renamed too: the name lies just
   * before the command line and the thread entries (ring_format.h).
   * Readers copy it when they open the file; one that opens it while
   * this runs may get a mixed name, once.  The wall clock words, when
   * there, lie between the name and the command line. */
  if (er_st.threads) {
    unsigned char *at = (unsigned char *)er_st.threads -
                        ER_EXT_CMDLINE_BYTES - ER_EXT_PROGRAM_BYTES;
    if (er_st.ext[ER_EXT_FLAGS] & ER_EXT_FLAG_WALLCLOCK)
      at -= ER_EXT_WALL_WORDS * 8;
    memset(at, 0, ER_EXT_PROGRAM_BYTES);
    memcpy(at, program, strlen(program));
  }
  /* Unless it records the arguments, the command line is the name. */
  er_cmdline_rewrite_locked();
  er_unlock();
}

/* 1 once the fork handlers are installed (atomic: the destructor reads
 * it without the lock; pairs with the release store in arm()). */
static int armed;
static pthread_once_t arm_once = PTHREAD_ONCE_INIT;

static void arm(void) {
  er_fork_install();
  er_istore_rel(&armed, 1);
}

void er_arm(void) { pthread_once(&arm_once, arm); }

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
  if (!er_iload_acq(&armed)) return;
  er_lock();
  er_stop_locked();
  er_unlock();
}
