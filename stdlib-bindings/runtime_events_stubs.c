/* runtime_events_stubs.c -- the C half of the OCaml Runtime_events module
 * for OCaml 4.13, over libeventring_i.
 *
 * Three parts:
 *
 *   - Producer stubs (start, pause, resume, path, user events).  OCaml 4
 *     runs its threads one at a time under the runtime lock, so every OCaml
 *     thread writes into domain slot 0, joined with eventring_domain_join()
 *     (join0() below); C threads outside the lock keep slots of their own.
 *
 *   - GC probes for the normal runtime, through the timing hooks 4.13
 *     exposes (misc.h, major_gc.h).  On a runtime with probes of its own
 *     (-runtime-variant i, _er, _eri: eventring__ocaml_instrumented, set by
 *     the bridge in runtime-instrumented/ocaml_bridge.c) the runtime emits
 *     the phases and minor_promoted itself, and the hooks write only the
 *     three counters its probes do not give: minor_allocated,
 *     major_allocated_words and major_heap_words.  Mapping of hooks to
 *     FORMAT.md:
 *       minor GC begin/end       -> minor (11), with counters
 *                                   minor_allocated and minor_promoted, in
 *                                   bytes as OCaml 5 documents them
 *       major slice begin/end    -> major_slice (27), with counters
 *                                   major_allocated_words (words allocated
 *                                   in the major heap since the last slice)
 *                                   and major_heap_words
 *       finalise begin/end       -> finalise_update_first (17).  4.13's hook
 *                                   brackets the running of the finalisers
 *                                   of dead values; FORMAT.md has no phase
 *                                   for that, and finalise_update_first (the
 *                                   first finaliser set, run at the end of
 *                                   marking) is the closest.
 *       major GC hook            -> major_gc_phase_change (24), an empty
 *                                   span at the switch from marking to
 *                                   sweeping
 *       cycle of the major GC    -> major (6), begun at the first hook that
 *                                   sees caml_gc_phase leave Phase_idle and
 *                                   ended at the first that sees it back, so
 *                                   its ends lag by at most one slice and
 *                                   the cycles of one Gc.full_major merge.
 *     Every hook calls the hook that was installed before it.
 *
 *   - fork_parent on Unix.fork (and any fork of the process), below.
 *
 *   - The consumer: read_poll drives eventring_cursor_poll() with C
 *     trampolines that call the OCaml callbacks through caml_callback*_exn.
 *     Nothing is allocated per event on the hot paths: timestamps are OCaml
 *     ints (nanoseconds fit in 62 bits for a century and more), phases and
 *     counters are constant constructors, the alloc buckets go into an int
 *     array owned by the cursor and reused, custom payloads are copied into
 *     a bytes buffer owned by the cursor.  Only lifecycle events (rare)
 *     allocate their `int option`.  An exception raised by a callback ends
 *     the poll after that event and is raised again by read_poll.
 */
#define CAML_NAME_SPACE
#define CAML_INTERNALS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <caml/alloc.h>
#include <caml/callback.h>
#include <caml/custom.h>
#include <caml/fail.h>
#include <caml/io.h>
#include <caml/major_gc.h>
#include <caml/memory.h>
#include <caml/misc.h>
#include <caml/mlvalues.h>
#include <caml/version.h>

#include "eventring.h"

/* Defined by runtime-instrumented/ocaml_bridge.c, in libeventring_i (see
 * runtime-instrumented/ocaml_bridge.h).  Calling the init function pulls
 * the bridge's object into every link, ahead of the OCaml runtime archive,
 * so that the instrumented runtime's eventlog.o is never linked. */
void eventring__ocaml_bridge_init(void);
extern int eventring__ocaml_instrumented;
int eventring__ocaml_join0(void);
extern void (*eventring__ocaml_thread_hook)(void);

/* ------------------------------------------------------------------ */
/* Domain 0 for every OCaml thread.                                     */

/* Set once this thread has joined slot 0: it is an OCaml thread (see
 * fork_parent_handler). */
static __thread int joined;

/* ------------------------------------------------------------------ */
/* Which OCaml thread writes (doc/FORMAT.md, "Thread switches").        */

/* Every OCaml thread shares slot 0, where eventring writes a marker with
 * the writing thread's id at each change of writer.  The id is
 * Thread.id (Thread.self ()), which only systhreads knows: its
 * caml_thread_self primitive, found when the program links threads
 * (statically: the weak reference; plain bytecode, whose dllthreads.so
 * ocamlrun loads globally: dlsym), returns the current thread's
 * descriptor, whose field 0 is the id.  It may only be called once the
 * Thread module has set up curr_thread, which caml_thread_initialize does
 * before it sets caml_channel_mutex_lock (io.h), and only where the
 * descriptor can be read: outside a collection that moves blocks.  So it
 * is looked up in join0(), whose callers are the stubs (OCaml code) and
 * the normal runtime's GC hooks (before or after a collection, never in
 * one), and in the instrumented runtime's probes only at the begin of a
 * minor collection or a major slice (thread_hook()); a thread whose
 * first events come from elsewhere in those is known by its kernel tid
 * until then.  The main thread is Thread 0: 4.13
 * numbers the thread that initialises Thread first, and the module's
 * initialiser runs in it. */
extern value caml_thread_self(value) __attribute__((weak));
static value (*thread_self)(value);
static int thread_self_looked; /* under the runtime lock */
/* Set once this thread's id is given to eventring_thread_id(). */
static __thread int tid_known;

static void learn_tid(void) {
  if (caml_channel_mutex_lock == NULL) return; /* Thread not set up (yet) */
  if (!thread_self_looked) {
    thread_self_looked = 1;
    thread_self = caml_thread_self
                      ? caml_thread_self
                      : (value(*)(value))dlsym(RTLD_DEFAULT, "caml_thread_self");
  }
  tid_known = 1;
  if (!thread_self) return; /* another thread library: ids unknown */
  value descr = thread_self(Val_unit);
  eventring_thread_id((int64_t)Long_val(Field(descr, 0)));
}

/* The instrumented runtime's probes (ocaml_bridge.c) call this where the
 * heap can be read: the begin of a minor collection or a major slice. */
static void thread_hook(void) {
  if (__builtin_expect(!tid_known, 0)) learn_tid();
}

/* The bridge's eventring__ocaml_join0() does the work, and remembers a
 * failure so that a thread refused slot 0 does not retry under the
 * control lock on every event. */
static void join0(void) {
  if (eventring__ocaml_join0() == 0) joined = 1;
  if (__builtin_expect(!tid_known, 0)) learn_tid();
}

/* True when an event from the calling OCaml thread should be written now,
 * after making sure it goes to slot 0. */
static inline int ocaml_emit_ok(void) {
  if (!EVENTRING__ON()) return 0;
  join0();
  return 1;
}

/* ------------------------------------------------------------------ */
/* GC hooks of the normal runtime.                                      */

static caml_timing_hook prev_minor_begin, prev_minor_end;
static caml_timing_hook prev_slice_begin, prev_slice_end;
static caml_timing_hook prev_final_begin, prev_final_end;
static void (*prev_major_gc)(void);
static int hooks_installed;

/* State carried from a begin hook to its end hook; only the thread that
 * holds the runtime lock runs the GC, so plain statics are enough. */
static uintnat minor_alloc_words;
static double minor_promoted_before;
static uintnat slice_alloc_words;
static int in_cycle;

/* The hooks' phases and minor_promoted: only where the runtime has no
 * probes of its own, which write them. */
static inline int gc_probes_on(void) {
  return EVENTRING__ON() && !eventring__ocaml_instrumented;
}

/* minor_allocated, major_allocated_words, major_heap_words: on every
 * runtime, since no runtime probe gives them. */
static inline int gc_counters_on(void) { return EVENTRING__ON(); }

/* Marks the edges of a major cycle when caml_gc_phase has moved.  4.13
 * has no span for a whole cycle (OCaml 5's `major` is one automatic
 * slice, as the instrumented bridge maps it), and a span over the cycle
 * would enclose the mutator's time between slices and read as one long
 * pause.  So the edges are empty spans -- major_gc_cycle_domains when a
 * cycle starts, major_finish_cycle when it ends -- written inside the GC
 * work (minor collection or slice) that moved the phase, so that they
 * nest in it and are never taken for pauses themselves. */
static void track_cycle(void) {
  int idle = caml_gc_phase == Phase_idle;
  if (!in_cycle && !idle) {
    eventring_begin(EVENTRING_PHASE_MAJOR_GC_CYCLE_DOMAINS);
    eventring_end(EVENTRING_PHASE_MAJOR_GC_CYCLE_DOMAINS);
    in_cycle = 1;
  } else if (in_cycle && idle) {
    eventring_begin(EVENTRING_PHASE_MAJOR_FINISH_CYCLE);
    eventring_end(EVENTRING_PHASE_MAJOR_FINISH_CYCLE);
    in_cycle = 0;
  }
}

/* The begin hooks record what the end hooks report whenever tracing is
 * on; on a runtime with probes the hooks write only the counters (see
 * gc_counters_on). */
static void h_minor_begin(void) {
  if (gc_counters_on()) {
    join0();
    minor_alloc_words =
        (uintnat)(Caml_state->young_alloc_end - Caml_state->young_ptr);
    minor_promoted_before = Caml_state->stat_promoted_words;
    if (gc_probes_on()) eventring_begin(EVENTRING_PHASE_MINOR);
  }
  if (prev_minor_begin) prev_minor_begin();
}

static void h_minor_end(void) {
  if (prev_minor_end) prev_minor_end();
  if (gc_counters_on()) {
    join0();
    eventring_counter(EVENTRING_COUNTER_MINOR_ALLOCATED,
                      (uint64_t)minor_alloc_words * sizeof(value));
    if (gc_probes_on()) {
      double promoted = Caml_state->stat_promoted_words - minor_promoted_before;
      if (promoted < 0) promoted = 0;
      eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED,
                        (uint64_t)promoted * sizeof(value));
      track_cycle();
      eventring_end(EVENTRING_PHASE_MINOR);
    }
  }
}

static void h_slice_begin(void) {
  if (gc_counters_on()) {
    join0();
    /* The slice resets caml_allocated_words, so read it before. */
    slice_alloc_words = caml_allocated_words;
    if (gc_probes_on()) eventring_begin(EVENTRING_PHASE_MAJOR_SLICE);
  }
  if (prev_slice_begin) prev_slice_begin();
}

static void h_slice_end(void) {
  if (prev_slice_end) prev_slice_end();
  if (gc_counters_on()) {
    join0();
    eventring_counter(EVENTRING_COUNTER_MAJOR_ALLOCATED_WORDS,
                      slice_alloc_words);
    eventring_counter(EVENTRING_COUNTER_MAJOR_HEAP_WORDS,
                      (uint64_t)Caml_state->stat_heap_wsz);
    if (gc_probes_on()) {
      track_cycle();
      eventring_end(EVENTRING_PHASE_MAJOR_SLICE);
    }
  }
}

static void h_final_begin(void) {
  if (gc_probes_on()) {
    join0();
    eventring_begin(EVENTRING_PHASE_FINALISE_UPDATE_FIRST);
  }
  if (prev_final_begin) prev_final_begin();
}

static void h_final_end(void) {
  if (prev_final_end) prev_final_end();
  if (gc_probes_on()) {
    join0();
    eventring_end(EVENTRING_PHASE_FINALISE_UPDATE_FIRST);
  }
}

static void h_major_gc(void) {
  if (gc_probes_on()) {
    join0();
    track_cycle();
    eventring_begin(EVENTRING_PHASE_MAJOR_GC_PHASE_CHANGE);
    eventring_end(EVENTRING_PHASE_MAJOR_GC_PHASE_CHANGE);
  }
  if (prev_major_gc) prev_major_gc();
}

/* ------------------------------------------------------------------ */
/* fork_parent on Unix.fork.                                            */

/* OCaml 5's Unix.fork writes fork_parent, with the child's pid, into the
 * parent's ring; eventring's fork handlers write only the child's side
 * (ring_start and fork_child in the child's new file).  4.13 gives the
 * parent no hook after fork(), and the other places the event could come
 * from are all wrong somewhere:
 *
 *   - a pthread_atfork parent handler runs in the parent once fork()
 *     returns, but is not told the child's pid;
 *   - defining unix_fork ourselves (or -Wl,--wrap=fork) depends on the
 *     order in which the linker meets our archive and libunix.a, and
 *     cannot work for plain bytecode, where ocamlrun finds unix_fork in
 *     dllunix.so;
 *   - the child writing fork_parent into its parent's ring (the mapping
 *     is still there in the child) makes a second writer of a ring that
 *     has exactly one, the parent's thread, which is writing on.
 *
 * So the child tells the parent its pid through a pipe made just before
 * the fork: the child handler writes getpid() (async-signal-safe calls
 * only), and the parent handler waits for it and writes fork_parent from
 * the thread that forked, the ring's own writer.  Every fork of the
 * process is covered, in native code and both kinds of bytecode.  A child
 * that dies before writing closes the pipe, and the parent, whose own
 * copy of the write end is closed first, reads end-of-file and writes
 * nothing; a child held stopped (a debugger) is waited for FORK_WAIT_MS
 * at most, after which the event is left out rather than made up.
 *
 * The cost, a pipe and a wait for the child to run its fork handlers, is
 * only paid while tracing is active (not paused): otherwise no pipe is
 * made and the handlers return at once.  fork_mutex keeps two threads'
 * forks from sharing the pipe; it is taken before eventring's own
 * prepare handler takes its lock (prepare handlers run in the reverse
 * order of registration) and released after eventring's handlers ran. */
#define FORK_WAIT_MS 2000

static pthread_mutex_t fork_mutex = PTHREAD_MUTEX_INITIALIZER;
static int fork_pipe[2] = {-1, -1};

static void close_fork_pipe(void) {
  for (int i = 0; i < 2; i++) {
    if (fork_pipe[i] >= 0) close(fork_pipe[i]);
    fork_pipe[i] = -1;
  }
}

static void fork_prepare(void) {
  pthread_mutex_lock(&fork_mutex);
  /* O_CLOEXEC: a program spawned meanwhile by another thread must not
   * hold the write end open. */
  if (EVENTRING__ON() && pipe2(fork_pipe, O_CLOEXEC) != 0)
    fork_pipe[0] = fork_pipe[1] = -1;
}

/* Also runs when fork() failed: the write end closed here is then the
 * only one, and the read sees end-of-file at once. */
static void fork_parent_handler(void) {
  pid_t child = 0;
  if (fork_pipe[0] >= 0) {
    close(fork_pipe[1]);
    fork_pipe[1] = -1;
    struct pollfd p = {.fd = fork_pipe[0], .events = POLLIN};
    int r;
    do r = poll(&p, 1, FORK_WAIT_MS);
    while (r < 0 && errno == EINTR);
    ssize_t n = 0;
    if (r > 0) {
      do n = read(fork_pipe[0], &child, sizeof child);
      while (n < 0 && errno == EINTR);
    }
    if (n != (ssize_t)sizeof child) child = 0;
  }
  close_fork_pipe();
  pthread_mutex_unlock(&fork_mutex);
  if (child > 0 && EVENTRING__ON()) {
    /* An OCaml thread (one that joined slot 0) writes there, as its other
     * events do.  A C thread of the program keeps the slot it has: making
     * it join slot 0 would give that ring a writer outside the runtime
     * lock. */
    if (joined) join0();
    eventring_lifecycle(EVENTRING_LIFECYCLE_FORK_PARENT, child);
  }
}

static void fork_child_handler(void) {
  if (fork_pipe[1] >= 0) {
    pid_t me = getpid();
    ssize_t n = write(fork_pipe[1], &me, sizeof me);
    (void)n; /* the parent reads a short write as no pid */
  }
  close_fork_pipe();
  pthread_mutex_unlock(&fork_mutex);
}

/* Called once from the module's initialisation, with the runtime lock,
 * with Sys.executable_name, which files record as the program's name. */
CAMLprim value caml_eventring_ml_init(value exe) {
  eventring__ocaml_bridge_init();
  eventring__set_program(String_val(exe));
  /* The OCaml these stubs are compiled for, the one that links them. */
  eventring_set_ocaml_version(OCAML_VERSION_STRING);
  if (!hooks_installed) {
    hooks_installed = 1;
    prev_minor_begin = caml_minor_gc_begin_hook;
    prev_minor_end = caml_minor_gc_end_hook;
    prev_slice_begin = caml_major_slice_begin_hook;
    prev_slice_end = caml_major_slice_end_hook;
    prev_final_begin = caml_finalise_begin_hook;
    prev_final_end = caml_finalise_end_hook;
    prev_major_gc = caml_major_gc_hook;
    caml_minor_gc_begin_hook = h_minor_begin;
    caml_minor_gc_end_hook = h_minor_end;
    caml_major_slice_begin_hook = h_slice_begin;
    caml_major_slice_end_hook = h_slice_end;
    caml_finalise_begin_hook = h_final_begin;
    caml_finalise_end_hook = h_final_end;
    caml_major_gc_hook = h_major_gc;
    in_cycle = 0;
    /* Registered after eventring's own handlers (eventring__set_program()
     * above took eventring's lock, which installs them, if starting
     * tracing had not), so the parent and child handlers above run after
     * them. */
    pthread_atfork(fork_prepare, fork_parent_handler, fork_child_handler);
  }
  /* The main thread takes slot 0 before any other thread can; it is
   * Thread 0 (see learn_tid()). */
  eventring_thread_id(0);
  tid_known = 1;
  eventring__ocaml_thread_hook = thread_hook;
  join0();
  return Val_unit;
}

/* Runtime_events_thread.set_name. */
CAMLprim value caml_eventring_ml_thread_name(value name) {
  if (!caml_string_is_c_safe(name) ||
      eventring_thread_name(String_val(name)) != 0)
    caml_invalid_argument(
        "Runtime_events_thread.set_name: longer than 63 bytes or has a NUL "
        "byte");
  join0();
  return Val_unit;
}

/* ------------------------------------------------------------------ */
/* Control.                                                             */

static void fail_with(const char *what, int err) {
  char msg[256];
  snprintf(msg, sizeof msg, "Runtime_events.%s: %s", what,
           eventring_strerror(err));
  caml_failwith(msg);
}

CAMLprim value caml_eventring_ml_start(value unit) {
  (void)unit;
  join0();
  int r = eventring_start();
  if (r < 0) fail_with("start", r);
  return Val_unit;
}

CAMLprim value caml_eventring_ml_pause(value unit) {
  (void)unit;
  join0();
  eventring_pause();
  return Val_unit;
}

CAMLprim value caml_eventring_ml_resume(value unit) {
  (void)unit;
  join0();
  eventring_resume();
  return Val_unit;
}

CAMLprim value caml_eventring_ml_path(value unit) {
  CAMLparam1(unit);
  CAMLlocal2(s, some);
  const char *p = eventring_path();
  if (!p) CAMLreturn(Val_int(0));
  s = caml_copy_string(p);
  some = caml_alloc_small(1, 0);
  Field(some, 0) = s;
  CAMLreturn(some);
}

CAMLprim value caml_eventring_ml_timestamp(value unit) {
  (void)unit;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return Val_long((intnat)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

CAMLprim value caml_eventring_ml_is_active(value unit) {
  (void)unit;
  return Val_bool(EVENTRING__ON());
}

/* table: 0 phases, 1 counters, 2 lifecycle events. */
CAMLprim value caml_eventring_ml_name(value table, value i) {
  int n = Int_val(i);
  const char *s = Int_val(table) == 0   ? eventring_phase_name(n)
                  : Int_val(table) == 1 ? eventring_counter_name(n)
                                        : eventring_lifecycle_name(n);
  return caml_copy_string(s ? s : "unknown");
}

/* ------------------------------------------------------------------ */
/* User events.                                                         */

/* Returns the id, or raises Invalid_argument as OCaml 5 does. */
CAMLprim value caml_eventring_ml_register(value name, value type) {
  if (!caml_string_is_c_safe(name))
    caml_invalid_argument(
        "Runtime_events.User.register: event name has null characters");
  int r = eventring_register(String_val(name), Int_val(type));
  switch (r) {
  case EVENTRING_E_NAMETOOLONG:
    caml_invalid_argument(caml_string_length(name) == 0
        ? "Runtime_events.User.register: empty event name"
        : "Runtime_events.User.register: maximum length for event name "
          "exceeded");
  case EVENTRING_E_TOOMANY:
    caml_invalid_argument(
        "Runtime_events.User.register: maximum number of custom events "
        "exceeded");
  case EVENTRING_E_EXISTS:
    caml_invalid_argument(
        "Runtime_events.User.register: an event of that name is registered "
        "with another type");
  default:
    if (r < 0) fail_with("User.register", r);
  }
  return Val_int(r);
}

/* The write stubs neither allocate nor raise: [@@noalloc] externals. */
CAMLprim value caml_eventring_ml_write_unit(value id) {
  if (ocaml_emit_ok()) eventring__user(EVENTRING_TYPE_UNIT, Int_val(id), 0);
  return Val_unit;
}

CAMLprim value caml_eventring_ml_write_int(value id, value v) {
  if (ocaml_emit_ok())
    eventring__user(EVENTRING_TYPE_INT, Int_val(id), (int64_t)Long_val(v));
  return Val_unit;
}

/* is_end is the span constructor: Begin = 0, End = 1. */
CAMLprim value caml_eventring_ml_write_span(value id, value is_end) {
  if (ocaml_emit_ok())
    eventring__user(Int_val(is_end) ? 3 : 2, Int_val(id), 0);
  return Val_unit;
}

/* The caller checked 0 <= len <= Bytes.length buf. */
CAMLprim value caml_eventring_ml_write_custom(value id, value buf, value len) {
  if (ocaml_emit_ok())
    (void)eventring__custom(Int_val(id), Bytes_val(buf),
                            (size_t)Long_val(len));
  return Val_unit;
}

/* ------------------------------------------------------------------ */
/* Cursors.                                                             */

struct ml_cursor {
  eventring_cursor *c;
  eventring_callbacks *cb;
  int polling; /* a callback called read_poll on the same cursor */
};

#define Cursor_val(v) ((struct ml_cursor *)Data_custom_val(v))

static void cursor_release(struct ml_cursor *mc) {
  if (mc->c) eventring_cursor_free(mc->c);
  if (mc->cb) eventring_callbacks_free(mc->cb);
  mc->c = NULL;
  mc->cb = NULL;
}

static void cursor_finalize(value v) { cursor_release(Cursor_val(v)); }

static struct custom_operations cursor_ops = {
    "eventring.cursor",        cursor_finalize,
    custom_compare_default,    custom_hash_default,
    custom_serialize_default,  custom_deserialize_default,
    custom_compare_ext_default, custom_fixed_length_default};

/* target: None (this process) or Some (dir, pid). */
CAMLprim value caml_eventring_ml_create_cursor(value target) {
  CAMLparam1(target);
  CAMLlocal1(res);
  eventring_cursor *c = NULL;
  eventring_callbacks *cb = eventring_callbacks_create();
  if (!cb) caml_raise_out_of_memory();
  int r;
  char where[160];
  if (Is_block(target)) {
    value pair = Field(target, 0);
    value dir = Field(pair, 0);
    long pid = Long_val(Field(pair, 1));
    if (!caml_string_is_c_safe(dir) || pid <= 0 || pid != (pid_t)pid) {
      eventring_callbacks_free(cb);
      caml_invalid_argument(
          "Runtime_events.create_cursor: invalid directory or pid");
    }
    r = eventring_cursor_open(&c, String_val(dir), (pid_t)pid);
    snprintf(where, sizeof where, "%.100s/%ld.events", String_val(dir), pid);
  } else {
    r = eventring_cursor_open(&c, NULL, 0);
    snprintf(where, sizeof where, "this process");
  }
  if (r < 0) {
    char msg[320];
    eventring_callbacks_free(cb);
    if (r == EVENTRING_E_NOTSTARTED || (!Is_block(target) && r == -ENOENT))
      snprintf(msg, sizeof msg,
               "Runtime_events.create_cursor: runtime events are not "
               "started in this process");
    else
      snprintf(msg, sizeof msg, "Runtime_events.create_cursor: %s: %s", where,
               eventring_strerror(r));
    caml_failwith(msg);
  }
  res = caml_alloc_custom(&cursor_ops, sizeof(struct ml_cursor), 0, 1);
  Cursor_val(res)->c = c;
  Cursor_val(res)->cb = cb;
  Cursor_val(res)->polling = 0;
  CAMLreturn(res);
}

CAMLprim value caml_eventring_ml_free_cursor(value cur) {
  struct ml_cursor *mc = Cursor_val(cur);
  if (mc->polling)
    caml_failwith("Runtime_events.free_cursor: the cursor is being polled");
  cursor_release(mc);
  return Val_unit;
}

CAMLprim value caml_eventring_ml_user_name(value cur, value id) {
  struct ml_cursor *mc = Cursor_val(cur);
  const char *n = mc->c ? eventring_cursor_user_name(mc->c, Int_val(id))
                        : NULL;
  return caml_copy_string(n ? n : "");
}

/* The OCaml cursor record (runtime_events.ml, type cursor): */
#define CUR_RAW 0     /* the custom block above */
#define CUR_BUF 2     /* bytes: custom payloads are copied here */
#define CUR_BUCKETS 3 /* int array of the 20 alloc buckets, reused */
#define CUR_EV 4      /* int array: domain, ts, id, kind, value */

/* The callbacks record (Callbacks.t): options, then the user events. */
#define CB_BEGIN 0
#define CB_END 1
#define CB_COUNTER 2
#define CB_ALLOC 3
#define CB_LIFECYCLE 4
#define CB_LOST 5
#define CB_HAS_USER 6 /* bool: some user event callback is set */

/* What a poll's trampolines reach through their data pointer.  The
 * values are local roots of read_poll, so a GC run by a callback moves
 * them safely. */
struct poll_ctx {
  value *cursor;
  value *cbs;
  value *exn;
  int raised;
};

/* The OCaml trampolines (runtime_events.ml) for the events whose
 * callbacks take four arguments or more: C stores the event in the
 * cursor's `ev` array and calls them with two.  caml_callbackN_exn would
 * allocate a partial application per event instead. */
static const value *tr_user, *tr_counter, *tr_lifecycle;

static inline void set_ev(struct poll_ctx *c, int dom, uint64_t ts, int id,
                          int kind, intnat v) {
  value e = Field(*c->cursor, CUR_EV);
  /* Immediate values need no write barrier. */
  Field(e, 0) = Val_int(dom);
  Field(e, 1) = Val_long((intnat)ts);
  Field(e, 2) = Val_int(id);
  Field(e, 3) = Val_int(kind);
  Field(e, 4) = Val_long(v);
}

#define CTX(d) ((struct poll_ctx *)(d))

static inline int after_call(struct poll_ctx *c, value r) {
  if (Is_exception_result(r)) {
    *c->exn = Extract_exception(r);
    c->raised = 1;
    return 0;
  }
  return 1;
}

static inline value callback_of(struct poll_ctx *c, int field) {
  value o = Field(*c->cbs, field);
  return Is_block(o) ? Field(o, 0) : Val_unit;
}

static int t_begin(void *d, int dom, uint64_t ts, int phase) {
  if ((unsigned)phase >= EVENTRING_PHASE_COUNT) return 1;
  value f = callback_of(CTX(d), CB_BEGIN);
  if (f == Val_unit) return 1;
  return after_call(CTX(d), caml_callback3_exn(f, Val_int(dom),
                                               Val_long(ts), Val_int(phase)));
}

static int t_end(void *d, int dom, uint64_t ts, int phase) {
  if ((unsigned)phase >= EVENTRING_PHASE_COUNT) return 1;
  value f = callback_of(CTX(d), CB_END);
  if (f == Val_unit) return 1;
  return after_call(CTX(d), caml_callback3_exn(f, Val_int(dom),
                                               Val_long(ts), Val_int(phase)));
}

static int t_counter(void *d, int dom, uint64_t ts, int id, uint64_t v) {
  if ((unsigned)id >= EVENTRING_COUNTER_COUNT) return 1;
  if (callback_of(CTX(d), CB_COUNTER) == Val_unit) return 1;
  set_ev(CTX(d), dom, ts, id, 0, (intnat)v);
  return after_call(CTX(d), caml_callback2_exn(*tr_counter, *CTX(d)->cursor,
                                               *CTX(d)->cbs));
}

static int t_alloc(void *d, int dom, uint64_t ts, const uint64_t *b) {
  value f = callback_of(CTX(d), CB_ALLOC);
  if (f == Val_unit) return 1;
  value arr = Field(*CTX(d)->cursor, CUR_BUCKETS);
  /* Immediate values need no write barrier. */
  for (int i = 0; i < EVENTRING_ALLOC_BUCKETS; i++)
    Field(arr, i) = Val_long((intnat)b[i]);
  return after_call(CTX(d),
                    caml_callback3_exn(f, Val_int(dom), Val_long(ts), arr));
}

static int t_lifecycle(void *d, int dom, uint64_t ts, int kind, int64_t v,
                       int has_data) {
  if ((unsigned)kind >= EVENTRING_LIFECYCLE_COUNT) return 1;
  if (callback_of(CTX(d), CB_LIFECYCLE) == Val_unit) return 1;
  value opt = Val_int(0);
  if (has_data) {
    opt = caml_alloc_small(1, 0);
    Field(opt, 0) = Val_long((intnat)v);
  }
  set_ev(CTX(d), dom, ts, kind, 0, 0);
  return after_call(CTX(d), caml_callback3_exn(*tr_lifecycle, *CTX(d)->cursor,
                                               *CTX(d)->cbs, opt));
}

static int t_lost(void *d, int dom, uint64_t count) {
  value f = callback_of(CTX(d), CB_LOST);
  if (f == Val_unit) return 1;
  return after_call(CTX(d), caml_callback2_exn(f, Val_int(dom),
                                               Val_long((intnat)count)));
}

/* User events go to the OCaml dispatcher, which resolves the event by
 * name (the writer's ids are not the reader's) and calls the callbacks
 * of its type: dispatch cursor callbacks, the event being
 * (domain, ts, id, kind, value),
 * kind 0 unit, 1 int, 2 span begin, 3 span end, 4 custom (value = the
 * payload's length in the cursor's buffer), passed in the cursor's
 * `ev` array. */
static int user(void *d, int dom, uint64_t ts, int id, int kind, intnat v) {
  struct poll_ctx *c = CTX(d);
  set_ev(c, dom, ts, id, kind, v);
  return after_call(c, caml_callback2_exn(*tr_user, *c->cursor, *c->cbs));
}

static int t_unit(void *d, int dom, uint64_t ts, int id, const char *name) {
  (void)name;
  return user(d, dom, ts, id, 0, 0);
}

static int t_int(void *d, int dom, uint64_t ts, int id, const char *name,
                 int64_t v) {
  (void)name;
  return user(d, dom, ts, id, 1, (intnat)v);
}

static int t_span(void *d, int dom, uint64_t ts, int id, const char *name,
                  int is_end) {
  (void)name;
  return user(d, dom, ts, id, is_end ? 3 : 2, 0);
}

static int t_custom(void *d, int dom, uint64_t ts, int id, const char *name,
                    const void *bytes, size_t len) {
  (void)name;
  value buf = Field(*CTX(d)->cursor, CUR_BUF);
  if (len > caml_string_length(buf)) return 1;
  memcpy(Bytes_val(buf), bytes, len);
  return user(d, dom, ts, id, 4, (intnat)len);
}

/* read_poll cursor callbacks max: max 0 means no limit. */
CAMLprim value caml_eventring_ml_read_poll(value cursor, value cbs,
                                           value vmax) {
  CAMLparam3(cursor, cbs, vmax);
  CAMLlocal1(exn);
  struct ml_cursor *mc = Cursor_val(Field(cursor, CUR_RAW));
  if (!mc->c)
    caml_invalid_argument("Runtime_events.read_poll: the cursor was freed");
  if (mc->polling)
    caml_failwith("Runtime_events.read_poll: the cursor is already being "
                  "polled (read_poll called from a callback)");
  if (!tr_user) {
    tr_counter = caml_named_value("Runtime_events.counter");
    tr_lifecycle = caml_named_value("Runtime_events.lifecycle");
    tr_user = caml_named_value("Runtime_events.user");
    if (!tr_user || !tr_counter || !tr_lifecycle)
      caml_failwith("Runtime_events.read_poll: not initialised");
  }

  /* Set only what is subscribed, so that the others are skipped in C. */
  eventring_callbacks *cb = mc->cb;
  int user_on = Bool_val(Field(cbs, CB_HAS_USER));
  eventring_callbacks_set_runtime_begin(
      cb, Is_block(Field(cbs, CB_BEGIN)) ? t_begin : NULL);
  eventring_callbacks_set_runtime_end(
      cb, Is_block(Field(cbs, CB_END)) ? t_end : NULL);
  eventring_callbacks_set_runtime_counter(
      cb, Is_block(Field(cbs, CB_COUNTER)) ? t_counter : NULL);
  eventring_callbacks_set_alloc(
      cb, Is_block(Field(cbs, CB_ALLOC)) ? t_alloc : NULL);
  eventring_callbacks_set_lifecycle(
      cb, Is_block(Field(cbs, CB_LIFECYCLE)) ? t_lifecycle : NULL);
  eventring_callbacks_set_lost_events(
      cb, Is_block(Field(cbs, CB_LOST)) ? t_lost : NULL);
  eventring_callbacks_set_user_unit(cb, user_on ? t_unit : NULL);
  eventring_callbacks_set_user_int(cb, user_on ? t_int : NULL);
  eventring_callbacks_set_user_span(cb, user_on ? t_span : NULL);
  eventring_callbacks_set_user_custom(cb, user_on ? t_custom : NULL);

  exn = Val_unit;
  struct poll_ctx ctx = {&cursor, &cbs, &exn, 0};
  mc->polling = 1;
  int r = eventring_cursor_poll(mc->c, cb, &ctx, (size_t)Long_val(vmax));
  /* A callback may have run a GC that moved the custom block. */
  mc = Cursor_val(Field(cursor, CUR_RAW));
  mc->polling = 0;
  if (ctx.raised) caml_raise(exn);
  if (r < 0) fail_with("read_poll", r);
  CAMLreturn(Val_int(r));
}
