/* runtime_events_snapshot_stubs.c -- the C half of Runtime_events_snapshot:
 * eventring_snapshot() for OCaml programs, with OCaml's exceptions.
 *
 * The copy reads every ring and writes a file, which takes as long as the
 * rings are big; the stub lets the program's other threads run meanwhile
 * by releasing the runtime lock around it.  That is safe because of what
 * eventring_snapshot() does and does not do:
 *
 *   - It only reads the rings, through a cursor of its own that maps the
 *     ring file anew (runtime/snapshot.c): it writes no event, so the
 *     calling thread, which joined slot 0 as every OCaml thread does
 *     (runtime_events_stubs.c), is not a writer of ring 0 while it runs
 *     outside the lock.  Ring 0 keeps one writer at a time: whichever
 *     OCaml thread holds the runtime lock, GC hooks and the instrumented
 *     runtime's probes included, since they run under the lock too.
 *
 *   - Those writers go on while the copy reads, which is the ordinary case
 *     of a reader following a live ring: what they overwrite during the
 *     copy is counted as lost in the snapshot, never copied torn (the
 *     consumer's race detection, runtime/consumer_poll.c).  Holding the lock
 *     would not make the copy more exact anyway: C threads with slots of
 *     their own write outside it.
 *
 *   - It neither calls back into OCaml nor touches the OCaml heap; the
 *     only OCaml value it needs, the path, is copied out of the heap
 *     first, since another thread's GC may move the string.  The only lock
 *     it takes, the library's own state lock (briefly, for the ring file's
 *     path), is never held by code that waits for the runtime lock.
 *
 * The exception is raised once the lock is held again. */
#define CAML_NAME_SPACE
#include <errno.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>

#include <caml/alloc.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <caml/signals.h>

#include "eventring.h"
#include "snapshot.h"

/* The message of the Failure that function `who` raises for error `err`
 * on `path`: "WHO: PATH: REASON", the reason saying what to do where there
 * is something to do. */
static value failure_message(const char *who, const char *path, int err) {
  const char *why;
  if (err == EVENTRING_E_NOTSTARTED)
    why = "runtime events are not started in this process (call "
          "Runtime_events.start first)";
  else if (err == -EEXIST)
    why = "already exists (a snapshot never overwrites a file: remove it "
          "or give another name)";
  else
    why = eventring_strerror(err);
  return caml_alloc_sprintf("%s: %s: %s", who, path, why);
}

/* eventring_snapshot(path) with the runtime lock released (see above):
 * `path` must not be in the OCaml heap. */
static int snapshot_unlocked(const char *path) {
  caml_enter_blocking_section();
  int r = eventring_snapshot(path);
  caml_leave_blocking_section();
  return r;
}

#define WHO "Runtime_events_snapshot.write"

/* How many names of the sequence write_default tries. */
#define SNAPSHOT_NAME_TRIES 1000

/* write : string -> unit */
CAMLprim value caml_eventring_ml_snapshot_write(value vpath) {
  CAMLparam1(vpath);
  CAMLlocal1(msg);
  if (caml_string_length(vpath) == 0)
    caml_invalid_argument(WHO ": empty path");
  if (!caml_string_is_c_safe(vpath))
    caml_invalid_argument(WHO ": the path has null characters");
  char *path = caml_stat_strdup(String_val(vpath));
  int r = snapshot_unlocked(path);
  if (r < 0) msg = failure_message(WHO, path, r);
  caml_stat_free(path);
  if (r < 0) caml_failwith_value(msg);
  CAMLreturn(Val_unit);
}

/* write_default : unit -> string.  The name is the one `eventring
 * snapshot` would give this process's snapshot (er_snap_default_name,
 * with the program name eventring_snapshot() records in the file). */
CAMLprim value caml_eventring_ml_snapshot_write_default(value unit) {
  CAMLparam1(unit);
  char name[PATH_MAX];
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  /* A name taken (a snapshot in the same millisecond) gives way to the
   * next of the sequence. */
  int r = -EEXIST;
  for (int seq = 1; r == -EEXIST && seq <= SNAPSHOT_NAME_TRIES; seq++) {
    r = er_snap_default_name(name, sizeof name, program_invocation_short_name,
                             getpid(), &now, seq, "events");
    if (r == 0) r = snapshot_unlocked(name);
  }
  if (r < 0)
    caml_failwith_value(failure_message(WHO "_default", name, r));
  CAMLreturn(caml_copy_string(name));
}
