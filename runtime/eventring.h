/* eventring.h -- runtime events in per-domain, memory-mapped ring buffers.
 *
 * This is the only public header of libeventring.  A host runtime (or any
 * C program) calls the probes below; tracing writes them into a ring file
 * `<pid>.events` in the OCaml 5 runtime-events format (version 1), which
 * OCaml 5 consumers and eventring's own tools read.
 *
 * Variants, chosen when compiling and linking the caller:
 *   - default (`pkg-config eventring`): every probe is an inlined load of
 *     one flag and a predictable branch while tracing is off or paused;
 *     the allocation probes compile to nothing.
 *   - instrumented (`pkg-config eventring-i`, which defines
 *     EVENTRING_INSTRUMENTED and links libeventring_i): the allocation
 *     probes are compiled in as well.
 *   - EVENTRING_DISABLED defined: every probe compiles to nothing and
 *     every function is an inline stub (end of this header), so the
 *     caller need not link libeventring at all.
 *
 * Errors are negative: either one of the EVENTRING_E_* codes below or a
 * negated errno value (for example -ENOENT when the directory is missing);
 * eventring_strerror() describes both.
 */
#ifndef EVENTRING_H
#define EVENTRING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define EVENTRING__EXPORT __attribute__((visibility("default")))
#else
#define EVENTRING__EXPORT
#endif

/* With EVENTRING_DISABLED, outside the library's own sources (which
 * define EVENTRING__LIBRARY), every function declared EVENTRING_API is
 * an inline stub defined at the end of this header, so no call needs
 * libeventring; internal symbols are declared EVENTRING__EXPORT. */
#if defined(EVENTRING_DISABLED) && !defined(EVENTRING__LIBRARY)
#define EVENTRING__STUBS 1
#define EVENTRING_API static inline
#else
#define EVENTRING_API EVENTRING__EXPORT
#endif

/* Error codes.  They lie below -1000 so that they never collide with a
 * negated errno value. */
enum eventring_error {
  EVENTRING_OK = 0,
  EVENTRING_E_INVAL = -1001,       /* an argument is out of range */
  EVENTRING_E_NAMETOOLONG = -1002, /* event name over 127 bytes or empty */
  EVENTRING_E_TOOMANY = -1003,     /* all 8192 user event ids are taken */
  EVENTRING_E_EXISTS = -1004,      /* name registered with another type */
  EVENTRING_E_TOOBIG = -1005,      /* payload does not fit in one event */
  EVENTRING_E_DISABLED = -1006,    /* library built with tracing disabled */
  EVENTRING_E_BUSY = -1007,        /* slot or cursor in use by another thread */
  EVENTRING_E_NOTSTARTED = -1008,  /* tracing is not started */
  EVENTRING_E_CORRUPT = -1009,     /* a ring file is malformed */
  EVENTRING_E_VERSION = -1010,     /* a ring file has another version */
  EVENTRING_E_NOTRING = -1011,     /* not a regular file (FIFO, directory) */
  EVENTRING_E_TIMEDOUT = -1012,    /* the traced process did not answer */
  EVENTRING_E_NOTRINGFILE = -1013, /* a regular file, but not a ring file */
  EVENTRING_E_TRUNCATED = -1014,   /* shorter than its header says */
  EVENTRING_E_NOCONTROL = -1015,   /* a ring file without remote control
                                      (OCaml 5's runtime wrote it) */
  EVENTRING_E_PENDING = -1016,     /* a request the traced process took
                                      but has not applied yet (stopped) */
  EVENTRING_E_NOWALLCLOCK = -1017  /* the ring file does not record the
                                      wall clock (OCaml 5's files) */
};

/* The descriptions eventring_strerror() gives, for the library and the
 * EVENTRING_DISABLED stubs alike.  Internal. */
#define EVENTRING__ERROR_TEXTS(X)                                            \
  X(EVENTRING_OK, "success")                                                 \
  X(EVENTRING_E_INVAL, "invalid argument")                                   \
  X(EVENTRING_E_NAMETOOLONG, "event name is empty or longer than 127 bytes") \
  X(EVENTRING_E_TOOMANY, "all 8192 user event ids are in use")               \
  X(EVENTRING_E_EXISTS, "event name already registered with another type")   \
  X(EVENTRING_E_TOOBIG, "payload does not fit in one event")                 \
  X(EVENTRING_E_DISABLED, "eventring was built with tracing disabled")       \
  X(EVENTRING_E_BUSY, "busy: the domain slot is held by another thread, "    \
                      "or another thread is polling this cursor")            \
  X(EVENTRING_E_NOTSTARTED, "tracing is not started")                        \
  X(EVENTRING_E_CORRUPT, "ring file is malformed")                           \
  X(EVENTRING_E_VERSION, "ring file has an unsupported version")             \
  X(EVENTRING_E_NOTRING, "not a ring file: not a regular file")              \
  X(EVENTRING_E_TIMEDOUT, "the traced process did not answer in time")       \
  X(EVENTRING_E_NOTRINGFILE, "not a ring file")                              \
  X(EVENTRING_E_TRUNCATED, "truncated ring file: shorter than its header "   \
                           "says")                                           \
  X(EVENTRING_E_NOCONTROL, "the ring file has no remote control: OCaml 5's " \
                           "runtime wrote it, and pausing or resuming from " \
                           "outside needs eventring's runtime")              \
  X(EVENTRING_E_PENDING, "the traced process took the request but has not "  \
                         "applied it yet")                                   \
  X(EVENTRING_E_NOWALLCLOCK, "the ring file does not record the wall clock " \
                             "(OCaml 5's runtime or an earlier eventring "   \
                             "wrote it)")

/* Returns a static, human-readable description of `err`, which is an
 * EVENTRING_E_* code or a negated errno value.  Never returns NULL. */
EVENTRING_API const char *eventring_strerror(int err);

/* ------------------------------------------------------------------ */
/* Event vocabulary: the 5.3+ numbering of the OCaml 5 format.          */

typedef enum eventring_phase {
  EVENTRING_PHASE_EXPLICIT_GC_SET = 0,
  EVENTRING_PHASE_EXPLICIT_GC_STAT = 1,
  EVENTRING_PHASE_EXPLICIT_GC_MINOR = 2,
  EVENTRING_PHASE_EXPLICIT_GC_MAJOR = 3,
  EVENTRING_PHASE_EXPLICIT_GC_FULL_MAJOR = 4,
  EVENTRING_PHASE_EXPLICIT_GC_COMPACT = 5,
  EVENTRING_PHASE_MAJOR = 6,
  EVENTRING_PHASE_MAJOR_SWEEP = 7,
  EVENTRING_PHASE_MAJOR_MARK_ROOTS = 8,
  EVENTRING_PHASE_MAJOR_MEMPROF_ROOTS = 9,
  EVENTRING_PHASE_MAJOR_MARK = 10,
  EVENTRING_PHASE_MINOR = 11,
  EVENTRING_PHASE_MINOR_LOCAL_ROOTS = 12,
  EVENTRING_PHASE_MINOR_MEMPROF_ROOTS = 13,
  EVENTRING_PHASE_MINOR_MEMPROF_CLEAN = 14,
  EVENTRING_PHASE_MINOR_FINALIZED = 15,
  EVENTRING_PHASE_EXPLICIT_GC_MAJOR_SLICE = 16,
  EVENTRING_PHASE_FINALISE_UPDATE_FIRST = 17,
  EVENTRING_PHASE_FINALISE_UPDATE_LAST = 18,
  EVENTRING_PHASE_INTERRUPT_REMOTE = 19,
  EVENTRING_PHASE_MAJOR_EPHE_MARK = 20,
  EVENTRING_PHASE_MAJOR_EPHE_SWEEP = 21,
  EVENTRING_PHASE_MAJOR_FINISH_MARKING = 22,
  EVENTRING_PHASE_MAJOR_GC_CYCLE_DOMAINS = 23,
  EVENTRING_PHASE_MAJOR_GC_PHASE_CHANGE = 24,
  EVENTRING_PHASE_MAJOR_GC_STW = 25,
  EVENTRING_PHASE_MAJOR_MARK_OPPORTUNISTIC = 26,
  EVENTRING_PHASE_MAJOR_SLICE = 27,
  EVENTRING_PHASE_MAJOR_FINISH_CYCLE = 28,
  EVENTRING_PHASE_MINOR_CLEAR = 29,
  EVENTRING_PHASE_MINOR_FINALIZERS_OLDIFY = 30,
  EVENTRING_PHASE_MINOR_GLOBAL_ROOTS = 31,
  EVENTRING_PHASE_MINOR_LEAVE_BARRIER = 32,
  EVENTRING_PHASE_STW_API_BARRIER = 33,
  EVENTRING_PHASE_STW_HANDLER = 34,
  EVENTRING_PHASE_STW_LEADER = 35,
  EVENTRING_PHASE_MAJOR_FINISH_SWEEPING = 36,
  EVENTRING_PHASE_MAJOR_MEMPROF_CLEAN = 37,
  EVENTRING_PHASE_MINOR_FINALIZERS_ADMIN = 38,
  EVENTRING_PHASE_MINOR_REMEMBERED_SET = 39,
  EVENTRING_PHASE_MINOR_REMEMBERED_SET_PROMOTE = 40,
  EVENTRING_PHASE_MINOR_LOCAL_ROOTS_PROMOTE = 41,
  EVENTRING_PHASE_DOMAIN_CONDITION_WAIT = 42,
  EVENTRING_PHASE_DOMAIN_RESIZE_HEAP_RESERVATION = 43,
  EVENTRING_PHASE_COMPACTION = 44,
  EVENTRING_PHASE_COMPACTION_EVACUATE = 45,
  EVENTRING_PHASE_COMPACTION_FORWARD = 46,
  EVENTRING_PHASE_COMPACTION_RELEASE = 47,
  EVENTRING_PHASE_EMPTY_MINOR = 48,
  EVENTRING_PHASE_COUNT = 49
} eventring_phase;

typedef enum eventring_counter_id {
  EVENTRING_COUNTER_FORCE_MINOR_ALLOC_SMALL = 0,
  EVENTRING_COUNTER_FORCE_MINOR_MAKE_VECT = 1,
  EVENTRING_COUNTER_FORCE_MINOR_SET_MINOR_HEAP_SIZE = 2,
  EVENTRING_COUNTER_FORCE_MINOR_MEMPROF = 3,
  EVENTRING_COUNTER_MINOR_PROMOTED = 4,
  EVENTRING_COUNTER_MINOR_ALLOCATED = 5,
  EVENTRING_COUNTER_REQUEST_MAJOR_ALLOC_SHR = 6,
  EVENTRING_COUNTER_REQUEST_MAJOR_ADJUST_GC_SPEED = 7,
  EVENTRING_COUNTER_REQUEST_MINOR_REALLOC_REF_TABLE = 8,
  EVENTRING_COUNTER_REQUEST_MINOR_REALLOC_EPHE_REF_TABLE = 9,
  EVENTRING_COUNTER_REQUEST_MINOR_REALLOC_CUSTOM_TABLE = 10,
  EVENTRING_COUNTER_MAJOR_HEAP_POOL_WORDS = 11,
  EVENTRING_COUNTER_MAJOR_HEAP_POOL_LIVE_WORDS = 12,
  EVENTRING_COUNTER_MAJOR_HEAP_LARGE_WORDS = 13,
  EVENTRING_COUNTER_MAJOR_HEAP_POOL_FRAG_WORDS = 14,
  EVENTRING_COUNTER_MAJOR_HEAP_POOL_LIVE_BLOCKS = 15,
  EVENTRING_COUNTER_MAJOR_HEAP_LARGE_BLOCKS = 16,
  EVENTRING_COUNTER_MAJOR_HEAP_WORDS = 17,
  EVENTRING_COUNTER_MAJOR_ALLOCATED_WORDS = 18,
  EVENTRING_COUNTER_MAJOR_ALLOCATED_WORK = 19,
  EVENTRING_COUNTER_MAJOR_DEPENDENT_WORK = 20,
  EVENTRING_COUNTER_MAJOR_EXTRA_WORK = 21,
  EVENTRING_COUNTER_MAJOR_WORK_COUNTER = 22,
  EVENTRING_COUNTER_MAJOR_ALLOC_COUNTER = 23,
  EVENTRING_COUNTER_MAJOR_SLICE_TARGET = 24,
  EVENTRING_COUNTER_MAJOR_SLICE_BUDGET = 25,
  EVENTRING_COUNTER_COUNT = 26
} eventring_counter_id;

typedef enum eventring_lifecycle_kind {
  EVENTRING_LIFECYCLE_RING_START = 0,
  EVENTRING_LIFECYCLE_RING_STOP = 1,
  EVENTRING_LIFECYCLE_RING_PAUSE = 2,
  EVENTRING_LIFECYCLE_RING_RESUME = 3,
  EVENTRING_LIFECYCLE_FORK_PARENT = 4,
  EVENTRING_LIFECYCLE_FORK_CHILD = 5,
  EVENTRING_LIFECYCLE_DOMAIN_SPAWN = 6,
  EVENTRING_LIFECYCLE_DOMAIN_TERMINATE = 7,
  EVENTRING_LIFECYCLE_COUNT = 8
} eventring_lifecycle_kind;

/* User event types, as given to eventring_register(). */
enum eventring_type {
  EVENTRING_TYPE_UNIT = 0,
  EVENTRING_TYPE_INT = 1,
  EVENTRING_TYPE_SPAN = 2,
  EVENTRING_TYPE_CUSTOM = 4
};

/* Which end of a span: eventring_write_span()'s `is_end`, and the
 * `is_end` a reader's span callback gets. */
enum eventring_span_end {
  EVENTRING_SPAN_BEGIN = 0,
  EVENTRING_SPAN_END = 1
};

#define EVENTRING_MAX_USER_EVENTS 8192
#define EVENTRING_MAX_NAME 127          /* bytes, without the NUL */
#define EVENTRING_ALLOC_BUCKETS 20
/* Largest custom payload: an event is at most 1023 words, two of which are
 * the header and the timestamp, and the padding count takes one byte. */
#define EVENTRING_MAX_CUSTOM_BYTES (1021 * 8 - 1)

/* Names of the vocabulary, as OCaml prints them; NULL when out of range. */
EVENTRING_API const char *eventring_phase_name(int phase);
EVENTRING_API const char *eventring_counter_name(int counter);
EVENTRING_API const char *eventring_lifecycle_name(int kind);

/* ------------------------------------------------------------------ */
/* Control.  All are thread-safe; none may be called from a signal      */
/* handler.                                                             */

/* Creates `<dir>/<pid>.events` (dir from OCAML_RUNTIME_EVENTS_DIR, else
 * the current directory) and starts tracing; writes ring_start.  Ring size
 * and slot count come from OCAMLRUNPARAM (`e=`, `d=`), read at every start
 * (clamped to [1, 26] and [1, 4096], d lowered further so that the file's
 * apparent size stays within 64 GiB; each adjustment prints one warning
 * line).  Returns 0 on success or when already started; a negative error
 * otherwise (-EEXIST when a file or link is already at the path, -ENOENT,
 * -EACCES, -ENOSPC, ...), after which the program runs on untraced. */
EVENTRING_API int eventring_start(void);

/* Writes ring_stop, waits until no thread is inside a probe, unmaps the
 * ring file and removes it unless OCAML_RUNTIME_EVENTS_PRESERVE is set.
 * Tracing can be started again afterwards.  Runs automatically at exit.
 * Returns 0, or EVENTRING_E_NOTSTARTED when tracing was not started. */
EVENTRING_API int eventring_stop(void);

/* Stop and resume recording; each writes ring_pause / ring_resume once
 * (both are idempotent, and do nothing when tracing is not started). */
EVENTRING_API void eventring_pause(void);
EVENTRING_API void eventring_resume(void);

/* 1 when started and not paused, else 0. */
EVENTRING_API int eventring_is_active(void);

/* Flight recorder: writes what this process's rings hold now to the new
 * file `path`, as a compact ring file (the same format, every ring
 * sized to what it holds, with the name tables, the pid and the program
 * name; doc/FORMAT.md), while other threads go on writing: an event they
 * overwrite during the copy is counted as lost in the snapshot, never
 * copied torn.  The file is created as the ring file is (mode 0600, never
 * over an existing file or through a symbolic link), and removed again
 * when the snapshot fails.  Not async-signal-safe (it allocates); never
 * aborts.  Returns 0, EVENTRING_E_NOTSTARTED when tracing is not started,
 * EVENTRING_E_INVAL for a NULL or empty path, -EEXIST, -ENOSPC and other
 * negated errno values for the file, or an error of the cursor that
 * reads the rings (EVENTRING_E_CORRUPT). */
EVENTRING_API int eventring_snapshot(const char *path);

/* The ring file's path, or NULL when not started; in a forked child whose
 * file is not made yet, makes it first (see eventring_fork).  The string
 * stays valid until the next eventring_stop(). */
EVENTRING_API const char *eventring_path(void);

/* Fork with tracing kept consistent: the child gets its own ring file
 * (when tracing was on) starting with fork_child, and the parent's ring
 * records fork_parent with the child's pid.  A plain fork() also gives the
 * child its own file, but records no fork_parent.  The child's file is
 * made at its first event (or when eventring_path(), a cursor or a
 * snapshot of its own file, or eventring_start() asks for it), in the
 * directory the environment named at the fork: a child that writes no
 * event (it execs, or ends with _exit()) leaves no file and costs the
 * fork almost nothing.  Returns what fork() returns. */
EVENTRING_API pid_t eventring_fork(void);

/* Pause or resume tracing in another process (or this one) from outside,
 * through its ring file `<dir>/<pid>.events` (dir NULL: as
 * eventring_cursor_open).  The traced process applies the request within
 * about a millisecond and records ring_pause / ring_resume; these return
 * once it has.  Only the file's owner (or root) can.  A child forked
 * while tracing has its own file but no remote control (its first event
 * may come from a signal handler, where no thread may be started) until
 * it calls eventring_start() or stops and starts tracing again.
 * Returns 0, -ENOENT
 * (no ring file), -EPERM, EVENTRING_E_NOTRING (not a regular file),
 * EVENTRING_E_NOTRINGFILE, EVENTRING_E_VERSION, EVENTRING_E_TRUNCATED or
 * EVENTRING_E_CORRUPT (not a usable ring file), EVENTRING_E_NOCONTROL (a
 * ring file written by OCaml 5's runtime, which has no remote control),
 * EVENTRING_E_NOTSTARTED (the process does not serve requests: it stopped
 * tracing), EVENTRING_E_TIMEDOUT (no answer within a second: the process
 * is gone or stopped, and the request was withdrawn: it will never take
 * effect), EVENTRING_E_PENDING (no answer within a second, but the
 * process had taken the request, or a later one replaced it: it takes
 * effect when the process runs again, e.g. after SIGCONT). */
EVENTRING_API int eventring_remote_pause(const char *dir, pid_t pid);
EVENTRING_API int eventring_remote_resume(const char *dir, pid_t pid);

/* Keeps that process recording while the caller reads it: a lease, held
 * until eventring_remote_unhold() or until the calling process dies.  A
 * paused process is resumed (and this returns once it has); when the last
 * lease goes, it is paused again, unless its state was set explicitly
 * meanwhile (eventring_pause/_resume, eventring_remote_pause/_resume).
 * Leases of several readers add up: one leaving does not pause the
 * others' process.  The process checks every 0.1 s that the holders are
 * alive, so a reader killed with SIGKILL lets go too.  Returns 0, the
 * errors of eventring_remote_pause() (EVENTRING_E_NOCONTROL also for a
 * file of an eventring too old to have leases), or EVENTRING_E_TOOMANY
 * when 16 readers hold leases already; on error no lease is held. */
EVENTRING_API int eventring_remote_hold(const char *dir, pid_t pid);
/* Gives back a lease of the calling process; 0 when it held none.
 * Returns as eventring_remote_pause() does. */
EVENTRING_API int eventring_remote_unhold(const char *dir, pid_t pid);

/* 1 when that process's tracing is paused, 0 when it records, or a
 * negative error as above (EVENTRING_E_NOTSTARTED when it serves no
 * requests). */
EVENTRING_API int eventring_remote_state(const char *dir, pid_t pid);

/* ------------------------------------------------------------------ */
/* Domains: each thread that emits an event gets a ring of its own on   */
/* its first event and gives it back when it exits.                     */

/* Binds the calling thread to domain slot `id` (0 <= id < max domains),
 * releasing any slot it held.  Returns 0, EVENTRING_E_BUSY when another
 * thread holds the slot, or EVENTRING_E_INVAL. */
EVENTRING_API int eventring_domain_bind(int id);

/* Binds the calling thread to slot `id` beside the other threads joined
 * to it, for hosts whose threads take turns under one lock (OCaml 4's
 * runtime lock: every OCaml thread writes into domain 0).  The caller
 * guarantees that at most one of the joined threads is inside a probe at
 * any time.  A thread that holds its slot alone (bound, or taken by its
 * first event) may join that slot, opening it to others.  Returns 0,
 * EVENTRING_E_BUSY when the slot is bound (not joined) by another thread,
 * or EVENTRING_E_INVAL. */
EVENTRING_API int eventring_domain_join(int id);

/* Releases the calling thread's slot (the last thread to leave it writes
 * domain_terminate when tracing is on).  A later event takes a slot
 * again. */
EVENTRING_API void eventring_domain_release(void);

/* The calling thread's slot, or -1 when it holds none. */
EVENTRING_API int eventring_domain_id(void);

/* Threads joined to one slot (eventring_domain_join()) share its ring;
 * before the first event of a thread that is not the slot's last writer,
 * the probe writes a thread-switch marker (doc/FORMAT.md), which readers
 * use to give each thread a track of its own.  The marker carries the
 * calling thread's id as its host numbers it, set here (an OCaml 4
 * program: Thread.id; any negative value: none, the default), its kernel
 * thread id and its name.  Both are the calling thread's own and take
 * effect at its next event in a shared slot; slots that are not shared
 * write no marker and pay nothing. */
EVENTRING_API void eventring_thread_id(int64_t id);
/* Names the calling thread (at most 63 bytes; "" or NULL: no name) in its
 * markers.  Returns 0 or EVENTRING_E_NAMETOOLONG. */
EVENTRING_API int eventring_thread_name(const char *name);

/* Names the calling thread's slot in the ring file (at most 23 bytes
 * kept), as readers show its track; NULL reads the thread's name again
 * (pthread_setname_np() since it took the slot).  A slot is named after
 * its thread when the thread takes it, when it leaves it (at its exit
 * too) and when tracing stops while it holds it; a thread that renames itself meanwhile calls this for a live
 * trace to follow.  Does nothing without a
 * slot.  (eventring_thread_name() names a thread in the markers of a
 * shared slot; this names the slot's holder in the file.) */
EVENTRING_API void eventring_domain_name(const char *name);

/* Whether ring files record the process's full command line (`on`
 * nonzero) or only the program name (0, the default), from now on and
 * over EVENTRING_RECORD_CMDLINE: arguments often carry secrets, and a
 * file may outlive the process (preserved, snapshots, reports).  Applies
 * to the live file at once, to later files and to forked children. */
EVENTRING_API void eventring_record_cmdline(int on);

/* Records `version` (at most 31 bytes kept; NULL or "": unknown) as the
 * OCaml version of the program in ring files: the live file's at once,
 * and later files'.  For language bindings and programs that embed OCaml
 * (eventring's OCaml bindings call it as they initialise).  Readers get
 * it with eventring_cursor_ocaml_version(). */
EVENTRING_API void eventring_set_ocaml_version(const char *version);

/* Internal: the program name that files record, for language bindings
 * whose executable is not the process's (OCaml's Sys.executable_name). */
EVENTRING__EXPORT void eventring__set_program(const char *name);

/* ------------------------------------------------------------------ */
/* User events.                                                         */

/* Registers a user event and returns its id (>= 0), which is also its
 * name slot in the ring file.  Registering the same name with the same
 * type again returns the same id.  Errors: EVENTRING_E_NAMETOOLONG (empty
 * or over 127 bytes), EVENTRING_E_INVAL (bad type), EVENTRING_E_EXISTS
 * (name known with another type), EVENTRING_E_TOOMANY (8192 ids used).
 * Names registered before tracing starts are written when it starts. */
EVENTRING_API int eventring_register(const char *name, int type);

/* ------------------------------------------------------------------ */
/* Consumer: reading rings, from this process, another one, or a file.  */
/*                                                                      */
/* A cursor reads every domain's ring of one file, from the oldest      */
/* event still there, and never trusts the file: every header, offset,  */
/* length and id is checked against the file's real size, and a bad     */
/* file gives an error, never a crash: EVENTRING_E_NOTRINGFILE (it does */
/* not start with a ring file's header), EVENTRING_E_VERSION (it does,  */
/* with a version other than 1), EVENTRING_E_TRUNCATED (shorter than    */
/* its header says) or EVENTRING_E_CORRUPT (anything else that does not */
/* add up).  Many cursors may read one file                             */
/* at once; one cursor must not be polled by two threads at once (the   */
/* second gets EVENTRING_E_BUSY).                                       */

typedef struct eventring_cursor eventring_cursor;
typedef struct eventring_callbacks eventring_callbacks;

/* Opens a cursor on the ring file `<dir>/<pid>.events`; `dir` NULL means
 * OCAML_RUNTIME_EVENTS_DIR or the current directory, `pid` 0 means this
 * process (whose tracing must be started).  Returns 0 and sets *out, or a
 * negative error (-ENOENT, EVENTRING_E_NOTRING, EVENTRING_E_NOTRINGFILE,
 * EVENTRING_E_VERSION, EVENTRING_E_TRUNCATED, EVENTRING_E_CORRUPT, ...).
 * The cursor keeps the file open: it reads what remains after the writer
 * has exited or removed the file. */
EVENTRING_API int eventring_cursor_open(eventring_cursor **out,
                                        const char *dir, pid_t pid);

/* Opens a cursor on a ring file by path (post-mortem reading). */
EVENTRING_API int eventring_cursor_open_file(eventring_cursor **out,
                                             const char *path);

EVENTRING_API void eventring_cursor_free(eventring_cursor *cursor);

/* Internal, for the eventring tools: lets go of the descriptor and the
 * mapping of the file of cursor `c`, which has been read to its end and
 * whose writer is gone, so that a tool can read more files than it may
 * hold open.  What the accessors read from the file later (dropped
 * counts, slot threads, wall clocks, user names) is copied first and
 * answered from the copies; a later poll finds nothing new.  No other
 * thread may use the cursor during the call.  Returns 0 (also for a
 * cursor released already), EVENTRING_E_INVAL, or -ENOMEM (the cursor is
 * then left as it was). */
EVENTRING__EXPORT int eventring__cursor_release(eventring_cursor *c);

/* Files written by OCaml 5.0-5.2 number phases differently from 5.3+
 * under the same format version (doc/FORMAT.md).  eventring's own files
 * say which numbering they use, and the cursor follows them whatever it
 * is told here.  For a file written by OCaml 5 itself the cursor infers
 * the numbering from how the phases nest (doc/FORMAT.md, "Telling the
 * numberings apart"): from what the rings hold when it opens and, while
 * that is too little to decide, from what each poll finds, so that the
 * names it gives may change once, from the 5.3+ default to what the
 * evidence shows.  These force one: */
#define EVENTRING_NUMBERING_AUTO 0    /* infer it (the default) */
#define EVENTRING_NUMBERING_OCAML50 50 /* OCaml 5.0-5.2 */
#define EVENTRING_NUMBERING_OCAML53 53 /* OCaml 5.3 and later */

/* Sets the numbering of phase ids for a file that does not record it:
 * EVENTRING_NUMBERING_AUTO, _OCAML50 or _OCAML53.  Returns 0, or
 * EVENTRING_E_INVAL for another value or a NULL cursor. */
EVENTRING_API int eventring_cursor_set_numbering(eventring_cursor *cursor,
                                                 int numbering);

/* How the cursor came by its numbering: */
#define EVENTRING_NUMBERING_CONFLICTING (-1) /* the phases fit neither;
                                                the one they fit better */
#define EVENTRING_NUMBERING_GUESSED 0   /* too few phase events to tell:
                                           the 5.3+ default */
#define EVENTRING_NUMBERING_INFERRED 1  /* the phases rule the other out */
#define EVENTRING_NUMBERING_FROM_FILE 2 /* eventring's file records it */
#define EVENTRING_NUMBERING_FORCED 3    /* set by the caller */

/* Returns the numbering that eventring_cursor_phase_name() uses now,
 * EVENTRING_NUMBERING_OCAML50 or _OCAML53, and stores in *basis (unless
 * basis is NULL) how it was chosen, one of the values above: greater than
 * 0 when it is certain.  Returns EVENTRING_E_INVAL for a NULL cursor. */
EVENTRING_API int eventring_cursor_numbering(const eventring_cursor *cursor,
                                             int *basis);

/* The same as eventring_cursor_set_numbering() with
 * EVENTRING_NUMBERING_OCAML50 when `yes` is nonzero, and with
 * EVENTRING_NUMBERING_AUTO when it is 0.  Returns 0, or EVENTRING_E_INVAL
 * for a NULL cursor. */
EVENTRING_API int eventring_cursor_set_ocaml50(eventring_cursor *cursor,
                                               int yes);

/* The oldest OCaml release whose ids that eventring names include every
 * phase and counter id the cursor has weighed in a file an OCaml 5
 * runtime wrote, in the numbering it uses now: 50 for OCaml 5.0, 51, ...
 * EVENTRING_OCAML_LATEST (55, OCaml 5.5), or EVENTRING_OCAML_LATER when
 * an id is past every list eventring knows: a later OCaml's id, or one of
 * those 5.5 lists whose ids eventring has not read from a header (its
 * ramp-up phase and three major allocated-words counters).  Such ids have
 * no name.
 * Stores in *kind (unless NULL) EVENTRING_ID_PHASE or EVENTRING_ID_COUNTER
 * and in *id (unless NULL) the id that shows it, or 0 in *kind when no id
 * beyond the numbering's first release (5.0 or 5.3) was seen.  The ids
 * weighed are those the numbering is inferred from: what the rings held
 * when the cursor opened and, while it guessed, at each poll.  Returns 0
 * for eventring's own files (they name every id they use) and
 * EVENTRING_E_INVAL for a NULL cursor. */
#define EVENTRING_OCAML_LATEST 55 /* latest release with ids named */
#define EVENTRING_OCAML_LATER 99
#define EVENTRING_ID_PHASE 1
#define EVENTRING_ID_COUNTER 2
EVENTRING_API int eventring_cursor_ocaml_release(
    const eventring_cursor *cursor, int *kind, int *id);

/* The unit of the counts passed to the lost_events callback:
 * EVENTRING_LOST_EVENTS for eventring's files (exact event counts, from
 * the writer's counters), EVENTRING_LOST_WORDS for OCaml 5's files (ring
 * words, as OCaml's reader reports them). */
#define EVENTRING_LOST_EVENTS 0
#define EVENTRING_LOST_WORDS 1
EVENTRING_API int eventring_cursor_lost_unit(const eventring_cursor *cursor);

/* Names as this file uses them (its own tables when eventring wrote it);
 * NULL when unknown. */
EVENTRING_API const char *eventring_cursor_phase_name(
    const eventring_cursor *cursor, int phase);
EVENTRING_API const char *eventring_cursor_counter_name(
    const eventring_cursor *cursor, int counter);
EVENTRING_API const char *eventring_cursor_user_name(
    const eventring_cursor *cursor, int id);

/* Number of domain slots of the file. */
EVENTRING_API int eventring_cursor_max_domains(const eventring_cursor *c);

/* The pid of the process that wrote the file, as eventring's files record
 * it in their extension block, or 0 when the file does not say (OCaml 5's
 * files).  The process may have exited since, and its pid been reused. */
EVENTRING_API pid_t eventring_cursor_writer_pid(const eventring_cursor *c);

/* The name of the program that wrote the file (at most 63 bytes), as
 * eventring's files record it, or NULL when the file does not say (OCaml
 * 5's files, and those of earlier eventring versions).  Valid while the cursor is. */
EVENTRING_API const char *eventring_cursor_program(const eventring_cursor *c);

/* The wall clock against the file's timestamps: `ts` a timestamp
 * (CLOCK_MONOTONIC nanoseconds, the events' clock) and `wall` the
 * CLOCK_REALTIME of the same instant, in nanoseconds since the Unix epoch
 * (UTC), so that the wall time of an event stamped t is
 * wall + (int64_t)(t - ts). */
typedef struct eventring_wallclock {
  uint64_t ts;
  int64_t wall;
} eventring_wallclock;
enum {
  EVENTRING_WALLCLOCK_START = 0, /* taken when the file was made; fixed */
  EVENTRING_WALLCLOCK_LATEST = 1 /* taken at the writer's last clock
                                    recalibration (about every 0.1 s), read
                                    from the file at each call */
};
/* Stores in *out the pair `which` of eventring's files.  The two differ
 * in their offset (wall - ts) only when the wall clock was stepped
 * (settimeofday, not NTP's slewing) while the file was written; forked
 * children's files keep their parent's offset.  Returns 0,
 * EVENTRING_E_NOWALLCLOCK for a file that does not record it (OCaml 5's,
 * earlier eventring versions'), EVENTRING_E_INVAL (NULL argument, bad
 * `which`), or an error of the file's reading (EVENTRING_E_TRUNCATED,
 * ...). */
EVENTRING_API int eventring_cursor_wallclock(const eventring_cursor *c,
                                             int which,
                                             eventring_wallclock *out);

/* The OCaml version of the program that wrote the file ("4.14.2"), as
 * eventring's files record it (eventring_set_ocaml_version()), or NULL
 * when the file does not say.  Valid while the cursor is. */
EVENTRING_API const char *eventring_cursor_ocaml_version(
    const eventring_cursor *c);

/* Label `i` (0, 1, ...) that the file's writer was given
 * (EVENTRING_LABELS, `eventring snapshot --label`): its name, which
 * matches [a-zA-Z_][a-zA-Z0-9_]*, in *name and its value in *value,
 * valid while the cursor is.  Returns 1, 0 when the file has no label
 * `i` (OCaml 5's files have none), or EVENTRING_E_INVAL. */
EVENTRING_API int eventring_cursor_label(const eventring_cursor *c, int i,
                                         const char **name,
                                         const char **value);

/* The command line of the process that wrote the file (its arguments
 * joined by spaces, at most 255 bytes), or NULL when the file does not
 * say.  Valid while the cursor is. */
EVENTRING_API const char *eventring_cursor_cmdline(const eventring_cursor *c);

/* The thread that holds, or last held, a domain slot. */
typedef struct eventring_slot_thread {
  pid_t tid;        /* its Linux thread id */
  /* The timestamp of the domain_spawn event that begins its events in
   * the ring; 0 when its events begin the ring; UINT64_MAX while its
   * domain_spawn is not written yet.  Events of the slot before that
   * point are an earlier thread's. */
  uint64_t since;
  char name[24];    /* its name, NUL-terminated; may be empty */
} eventring_slot_thread;

/* Reads who holds slot `domain` from the file, at each call (a live
 * file's holder changes).  Returns 1 with *out filled in; 0 when the
 * file does not say (OCaml 5's files, earlier eventring's, a slot never
 * held); EVENTRING_E_INVAL; or an error reading the file. */
EVENTRING_API int eventring_cursor_slot_thread(const eventring_cursor *c,
                                               int domain,
                                               eventring_slot_thread *out);

/* Callbacks.  Each receives the `data` given to eventring_cursor_poll(),
 * the domain (slot) and the timestamp (CLOCK_MONOTONIC nanoseconds), and
 * returns nonzero to go on or 0 to end the poll after this event (as in
 * OCaml's consumer).  A callback left unset skips its events, which still
 * count as read. */
typedef int (*eventring_phase_fn)(void *data, int domain, uint64_t ts,
                                  int phase);
typedef int (*eventring_counter_fn)(void *data, int domain, uint64_t ts,
                                    int counter, uint64_t value);
typedef int (*eventring_alloc_fn)(void *data, int domain, uint64_t ts,
                                  const uint64_t *buckets /* [20] */);
/* has_data is 0 for ring_stop, whose data word OCaml 5.2 leaves out. */
typedef int (*eventring_lifecycle_fn)(void *data, int domain, uint64_t ts,
                                      int kind, int64_t value, int has_data);
typedef int (*eventring_user_unit_fn)(void *data, int domain, uint64_t ts,
                                      int id, const char *name);
typedef int (*eventring_user_int_fn)(void *data, int domain, uint64_t ts,
                                     int id, const char *name, int64_t value);
/* is_end: EVENTRING_SPAN_BEGIN or EVENTRING_SPAN_END. */
typedef int (*eventring_user_span_fn)(void *data, int domain, uint64_t ts,
                                      int id, const char *name, int is_end);
typedef int (*eventring_user_custom_fn)(void *data, int domain, uint64_t ts,
                                        int id, const char *name,
                                        const void *bytes, size_t len);
/* `count` is in the unit of eventring_cursor_lost_unit(). */
typedef int (*eventring_lost_fn)(void *data, int domain, uint64_t count);
/* A thread-switch marker (eventring_thread_id()): the domain's events
 * from this one to the next marker are the thread's.  `thread` is the
 * host's id for it (-1: none), `tid` its kernel thread id, `name` its
 * name (`len` bytes, not NUL-terminated; len 0 when it has none). */
typedef int (*eventring_thread_fn)(void *data, int domain, uint64_t ts,
                                   int64_t thread, uint64_t tid,
                                   const char *name, size_t len);

/* The ring of `domain` had wrapped before this cursor first looked at
 * it: its `before` oldest events (in the unit of
 * eventring_cursor_lost_unit()) were overwritten before this reader
 * began, and what it reads is the window that follows them.  Called at
 * most once per ring, before the ring's first event; events overwritten
 * after that look (the reader fell behind the writer, or they were
 * overwritten while it copied them) go to lost_events.  Unset, the count
 * goes to lost_events too, as OCaml 5's consumer reports it. */
typedef int (*eventring_window_fn)(void *data, int domain, uint64_t before);

/* Returns a set with no callback, or NULL when out of memory. */
EVENTRING_API eventring_callbacks *eventring_callbacks_create(void);
EVENTRING_API void eventring_callbacks_free(eventring_callbacks *cb);
EVENTRING_API void eventring_callbacks_set_runtime_begin(
    eventring_callbacks *cb, eventring_phase_fn f);
EVENTRING_API void eventring_callbacks_set_runtime_end(
    eventring_callbacks *cb, eventring_phase_fn f);
EVENTRING_API void eventring_callbacks_set_runtime_counter(
    eventring_callbacks *cb, eventring_counter_fn f);
EVENTRING_API void eventring_callbacks_set_alloc(eventring_callbacks *cb,
                                                 eventring_alloc_fn f);
EVENTRING_API void eventring_callbacks_set_lifecycle(
    eventring_callbacks *cb, eventring_lifecycle_fn f);
EVENTRING_API void eventring_callbacks_set_user_unit(
    eventring_callbacks *cb, eventring_user_unit_fn f);
EVENTRING_API void eventring_callbacks_set_user_int(
    eventring_callbacks *cb, eventring_user_int_fn f);
EVENTRING_API void eventring_callbacks_set_user_span(
    eventring_callbacks *cb, eventring_user_span_fn f);
EVENTRING_API void eventring_callbacks_set_user_custom(
    eventring_callbacks *cb, eventring_user_custom_fn f);
EVENTRING_API void eventring_callbacks_set_lost_events(
    eventring_callbacks *cb, eventring_lost_fn f);
EVENTRING_API void eventring_callbacks_set_thread(eventring_callbacks *cb,
                                                  eventring_thread_fn f);
EVENTRING_API void eventring_callbacks_set_window(eventring_callbacks *cb,
                                                  eventring_window_fn f);

/* Reads at most `max_events` events (0: no limit) across all domains,
 * in domain order, calling `cb` for each.  Returns the number of events
 * delivered (every kind counts; lost-event reports do not), or a negative
 * error: EVENTRING_E_CORRUPT (a ring is malformed), EVENTRING_E_TRUNCATED
 * (the file shrank since the cursor opened it, before or during this
 * poll: never SIGBUS), EVENTRING_E_BUSY (another thread is polling this
 * cursor).  After EVENTRING_E_CORRUPT on one ring the cursor skips that
 * ring's remaining events and later polls go on with the others.
 *
 * One bad event -- its header sane (a length that fits, the bits below
 * the id zero) but its type, id, length for its type, user event name or
 * custom padding wrong -- is skipped and counted (see
 * eventring_cursor_malformed()), and the ring is read on.  A header that
 * is not sane leaves no way to find the next event: that ring is
 * malformed from there.  Counts that cannot be true (a position beyond
 * 2^60 words, more events lost than the ring's writer ever wrote, a
 * written count beyond 2^60) make the ring malformed too, so no lost
 * count exceeds 2^60. */
EVENTRING_API int eventring_cursor_poll(eventring_cursor *cursor,
                                        const eventring_callbacks *cb,
                                        void *data, size_t max_events);

/* Events the writer could not record at all, as eventring's files count
 * them now (they only grow): with `domain` a slot, 0 .. max_domains - 1,
 * the probes of that domain that were dropped (a probe in a signal
 * handler that interrupted another on the same thread, an event longer
 * than the ring); with EVENTRING_NO_DOMAIN, the events of threads that
 * found no free domain slot (more threads than OCAMLRUNPARAM d=, or
 * domains left untraced).  Lost events (overwritten before they were
 * read) are not in these counts: they go to the lost_events callback.
 * Stores the count in *count (0 for OCaml 5's files, which keep none) and
 * returns 0, or EVENTRING_E_INVAL (no cursor, no count, a domain out of
 * range), EVENTRING_E_CORRUPT (a count above 2^60, which no writer can
 * reach), EVENTRING_E_TRUNCATED (the file shrank). */
#define EVENTRING_NO_DOMAIN (-1)
EVENTRING_API int eventring_cursor_dropped(const eventring_cursor *cursor,
                                           int domain, uint64_t *count);

/* The malformed events this cursor has skipped in domain `domain` so far
 * (see eventring_cursor_poll()); EVENTRING_NO_DOMAIN gives 0.  Stores the
 * count in *count and returns 0, or EVENTRING_E_INVAL.  Like
 * eventring_cursor_dropped(), it may be called while another thread
 * polls the cursor (an exporter's scrape). */
EVENTRING_API int eventring_cursor_malformed(const eventring_cursor *cursor,
                                             int domain, uint64_t *count);

/* ------------------------------------------------------------------ */
/* Probes.  Off or paused, each is one load and one branch inlined at   */
/* the call site.  Async-signal-safe: an event from a signal handler    */
/* that interrupted a probe on the same thread is dropped and counted.  */

/* The flag the inlined probes test: nonzero while tracing is started and
 * not paused.  Internal; read it through eventring_is_active(). */
extern EVENTRING__EXPORT int eventring__on;

EVENTRING__EXPORT void eventring__runtime(unsigned type, unsigned id);
EVENTRING__EXPORT void eventring__runtime1(unsigned type, unsigned id,
                                       uint64_t value);
EVENTRING__EXPORT void eventring__user(unsigned type, int id, int64_t value);
EVENTRING__EXPORT int eventring__custom(int id, const void *bytes, size_t len);
EVENTRING__EXPORT void eventring__alloc(uint64_t words);
EVENTRING__EXPORT void eventring__alloc_flush(void);

#if defined(__GNUC__) || defined(__clang__)
#define EVENTRING__ON() \
  __builtin_expect(__atomic_load_n(&eventring__on, __ATOMIC_RELAXED), 0)
#else
#define EVENTRING__ON() (*(volatile int *)&eventring__on)
#endif

/* Runtime message types of the format (FORMAT.md). */
#define EVENTRING__EV_LIFECYCLE 1
#define EVENTRING__EV_BEGIN 2
#define EVENTRING__EV_END 3
#define EVENTRING__EV_COUNTER 4
/* User message types of a span's two ends (FORMAT.md). */
#define EVENTRING__UEV_SPAN_BEGIN 2
#define EVENTRING__UEV_SPAN_END 3

#ifndef EVENTRING_DISABLED

static inline void eventring_begin(eventring_phase phase) {
  if (EVENTRING__ON())
    eventring__runtime(EVENTRING__EV_BEGIN, (unsigned)phase);
}

static inline void eventring_end(eventring_phase phase) {
  if (EVENTRING__ON())
    eventring__runtime(EVENTRING__EV_END, (unsigned)phase);
}

static inline void eventring_counter(eventring_counter_id counter,
                                     uint64_t value) {
  if (EVENTRING__ON())
    eventring__runtime1(EVENTRING__EV_COUNTER, (unsigned)counter, value);
}

static inline void eventring_lifecycle(eventring_lifecycle_kind kind,
                                       int64_t data) {
  if (EVENTRING__ON())
    eventring__runtime1(EVENTRING__EV_LIFECYCLE, (unsigned)kind,
                        (uint64_t)data);
}

/* An unregistered id is ignored. */
static inline void eventring_write_unit(int id) {
  if (EVENTRING__ON()) eventring__user(EVENTRING_TYPE_UNIT, id, 0);
}

static inline void eventring_write_int(int id, int64_t value) {
  if (EVENTRING__ON()) eventring__user(EVENTRING_TYPE_INT, id, value);
}

/* is_end: EVENTRING_SPAN_BEGIN (0) for the span's begin,
 * EVENTRING_SPAN_END (1, or any nonzero value) for its end. */
static inline void eventring_write_span(int id, int is_end) {
  if (EVENTRING__ON())
    eventring__user(is_end ? EVENTRING__UEV_SPAN_END
                           : EVENTRING__UEV_SPAN_BEGIN,
                    id, 0);
}

/* Returns 0 (also while tracing is off), EVENTRING_E_TOOBIG when `len`
 * exceeds EVENTRING_MAX_CUSTOM_BYTES or the event is longer than this
 * file's rings (OCAMLRUNPARAM e= below 10; the event is then counted in
 * the ring's DROPPED word), EVENTRING_E_INVAL for an id that is not
 * registered (checked while tracing is on). */
static inline int eventring_write_custom(int id, const void *bytes,
                                         size_t len) {
  if (len > EVENTRING_MAX_CUSTOM_BYTES) return EVENTRING_E_TOOBIG;
  if (EVENTRING__ON()) return eventring__custom(id, bytes, len);
  return 0;
}

#ifdef EVENTRING_INSTRUMENTED
/* Counts one allocation of `words` words in the calling domain's buckets;
 * eventring_alloc_flush() writes the buckets as one alloc event and resets
 * them.  Only in the instrumented variant. */
static inline void eventring_alloc(uint64_t words) {
  if (EVENTRING__ON()) eventring__alloc(words);
}
static inline void eventring_alloc_flush(void) {
  if (EVENTRING__ON()) eventring__alloc_flush();
}
#else
#define eventring_alloc(words) ((void)0)
#define eventring_alloc_flush() ((void)0)
#endif

#else /* EVENTRING_DISABLED: every probe compiles to nothing. */

/* The arguments are named in sizeof only, which does not evaluate them
 * but counts as a use (no unused-variable warning in the caller). */
#define eventring_begin(phase) ((void)sizeof(phase))
#define eventring_end(phase) ((void)sizeof(phase))
#define eventring_counter(counter, value) \
  ((void)sizeof(counter), (void)sizeof(value))
#define eventring_lifecycle(kind, data) \
  ((void)sizeof(kind), (void)sizeof(data))
#define eventring_write_unit(id) ((void)sizeof(id))
#define eventring_write_int(id, value) \
  ((void)sizeof(id), (void)sizeof(value))
#define eventring_write_span(id, is_end) \
  ((void)sizeof(id), (void)sizeof(is_end))
/* A call, so that the result may be ignored without a warning. */
static inline int eventring__disabled_custom(size_t unused) {
  (void)unused;
  return 0;
}
#define eventring_write_custom(id, bytes, len) \
  eventring__disabled_custom(sizeof(id) + sizeof(bytes) + sizeof(len))
#define eventring_alloc(words) ((void)sizeof(words))
#define eventring_alloc_flush() ((void)0)

#endif /* EVENTRING_DISABLED */

#ifdef EVENTRING__STUBS
/* EVENTRING_DISABLED: the functions, as stubs that let a program run on
 * untraced.  Tracing cannot start (EVENTRING_E_DISABLED, no ring file);
 * what only shapes the trace (domains, thread names, user event
 * registration, which gives id 0 to every valid name) succeeds and does
 * nothing, so that a program that checks it runs as it would untraced;
 * eventring_fork() forks; no cursor opens (EVENTRING_E_DISABLED), and
 * the cursor accessors answer as for a NULL cursor; name lookups give
 * NULL; eventring_strerror() describes every code as the library does. */
#include <string.h>
#include <unistd.h>

static inline const char *eventring_strerror(int err) {
  switch (err) {
#define EVENTRING__CASE(code, text) \
  case code: return text;
    EVENTRING__ERROR_TEXTS(EVENTRING__CASE)
#undef EVENTRING__CASE
  default: break;
  }
  if (err < 0 && err > -4096) return strerror(-err);
  return "unknown eventring error";
}

static inline const char *eventring_phase_name(int phase) {
  (void)phase;
  return NULL;
}
static inline const char *eventring_counter_name(int counter) {
  (void)counter;
  return NULL;
}
static inline const char *eventring_lifecycle_name(int kind) {
  (void)kind;
  return NULL;
}

static inline int eventring_start(void) { return EVENTRING_E_DISABLED; }
static inline int eventring_stop(void) { return EVENTRING_E_NOTSTARTED; }
static inline void eventring_pause(void) {}
static inline void eventring_resume(void) {}
static inline int eventring_is_active(void) { return 0; }
static inline int eventring_snapshot(const char *path) {
  (void)path;
  return EVENTRING_E_DISABLED;
}
static inline const char *eventring_path(void) { return NULL; }
static inline pid_t eventring_fork(void) { return fork(); }

static inline int eventring_remote_pause(const char *dir, pid_t pid) {
  (void)dir, (void)pid;
  return EVENTRING_E_DISABLED;
}
static inline int eventring_remote_resume(const char *dir, pid_t pid) {
  (void)dir, (void)pid;
  return EVENTRING_E_DISABLED;
}
static inline int eventring_remote_hold(const char *dir, pid_t pid) {
  (void)dir, (void)pid;
  return EVENTRING_E_DISABLED;
}
static inline int eventring_remote_unhold(const char *dir, pid_t pid) {
  (void)dir, (void)pid;
  return EVENTRING_E_DISABLED;
}
static inline int eventring_remote_state(const char *dir, pid_t pid) {
  (void)dir, (void)pid;
  return EVENTRING_E_DISABLED;
}

static inline int eventring_domain_bind(int id) {
  return id < 0 ? EVENTRING_E_INVAL : 0;
}
static inline int eventring_domain_join(int id) {
  return id < 0 ? EVENTRING_E_INVAL : 0;
}
static inline void eventring_domain_release(void) {}
static inline int eventring_domain_id(void) { return -1; }
static inline void eventring_thread_id(int64_t id) { (void)id; }
/* The length of `s`, or `max` + 1 when it is longer than `max`. */
static inline size_t eventring__stub_len(const char *s, size_t max) {
  size_t n = 0;
  while (n <= max && s[n]) n++;
  return n;
}
static inline int eventring_thread_name(const char *name) {
  return name && eventring__stub_len(name, 63) > 63 ? EVENTRING_E_NAMETOOLONG
                                                    : 0;
}
static inline void eventring_domain_name(const char *name) { (void)name; }
static inline void eventring_record_cmdline(int on) { (void)on; }
static inline void eventring_set_ocaml_version(const char *version) {
  (void)version;
}

static inline int eventring_register(const char *name, int type) {
  if (!name) return EVENTRING_E_INVAL;
  size_t n = eventring__stub_len(name, EVENTRING_MAX_NAME);
  if (n == 0 || n > EVENTRING_MAX_NAME) return EVENTRING_E_NAMETOOLONG;
  if (type != EVENTRING_TYPE_UNIT && type != EVENTRING_TYPE_INT &&
      type != EVENTRING_TYPE_SPAN && type != EVENTRING_TYPE_CUSTOM)
    return EVENTRING_E_INVAL;
  return 0;
}

static inline int eventring_cursor_open(eventring_cursor **out,
                                        const char *dir, pid_t pid) {
  (void)dir, (void)pid;
  if (out) *out = NULL;
  return EVENTRING_E_DISABLED;
}
static inline int eventring_cursor_open_file(eventring_cursor **out,
                                             const char *path) {
  (void)path;
  if (out) *out = NULL;
  return EVENTRING_E_DISABLED;
}
static inline void eventring_cursor_free(eventring_cursor *cursor) {
  (void)cursor;
}
static inline int eventring_cursor_set_numbering(eventring_cursor *cursor,
                                                 int numbering) {
  (void)cursor, (void)numbering;
  return EVENTRING_E_INVAL;
}
static inline int eventring_cursor_numbering(const eventring_cursor *cursor,
                                             int *basis) {
  (void)cursor, (void)basis;
  return EVENTRING_E_INVAL;
}
static inline int eventring_cursor_set_ocaml50(eventring_cursor *cursor,
                                               int yes) {
  (void)cursor, (void)yes;
  return EVENTRING_E_INVAL;
}
static inline int eventring_cursor_ocaml_release(
    const eventring_cursor *cursor, int *kind, int *id) {
  (void)cursor, (void)kind, (void)id;
  return EVENTRING_E_INVAL;
}
static inline int eventring_cursor_lost_unit(const eventring_cursor *cursor) {
  (void)cursor;
  return EVENTRING_LOST_WORDS;
}
static inline const char *eventring_cursor_phase_name(
    const eventring_cursor *cursor, int phase) {
  (void)cursor, (void)phase;
  return NULL;
}
static inline const char *eventring_cursor_counter_name(
    const eventring_cursor *cursor, int counter) {
  (void)cursor, (void)counter;
  return NULL;
}
static inline const char *eventring_cursor_user_name(
    const eventring_cursor *cursor, int id) {
  (void)cursor, (void)id;
  return NULL;
}
static inline int eventring_cursor_max_domains(const eventring_cursor *c) {
  (void)c;
  return 0;
}
static inline pid_t eventring_cursor_writer_pid(const eventring_cursor *c) {
  (void)c;
  return 0;
}
static inline const char *eventring_cursor_program(const eventring_cursor *c) {
  (void)c;
  return NULL;
}
static inline int eventring_cursor_wallclock(const eventring_cursor *c,
                                             int which,
                                             eventring_wallclock *out) {
  (void)c, (void)which, (void)out;
  return EVENTRING_E_INVAL;
}
static inline const char *eventring_cursor_cmdline(const eventring_cursor *c) {
  (void)c;
  return NULL;
}
static inline const char *eventring_cursor_ocaml_version(
    const eventring_cursor *c) {
  (void)c;
  return NULL;
}
static inline int eventring_cursor_label(const eventring_cursor *c, int i,
                                         const char **name,
                                         const char **value) {
  (void)c, (void)i, (void)name, (void)value;
  return EVENTRING_E_INVAL;
}
static inline int eventring_cursor_slot_thread(const eventring_cursor *c,
                                               int domain,
                                               eventring_slot_thread *out) {
  (void)c, (void)domain, (void)out;
  return EVENTRING_E_INVAL;
}

/* A set of callbacks is accepted and ignored: the one object every call
 * gets is not memory of its own, and is never freed. */
static inline eventring_callbacks *eventring_callbacks_create(void) {
  static char eventring__no_callbacks;
  return (eventring_callbacks *)(void *)&eventring__no_callbacks;
}
static inline void eventring_callbacks_free(eventring_callbacks *cb) {
  (void)cb;
}
#define EVENTRING__SETTER(what, type)                          \
  static inline void eventring_callbacks_set_##what(           \
      eventring_callbacks *cb, type f) {                       \
    (void)cb, (void)f;                                         \
  }
EVENTRING__SETTER(runtime_begin, eventring_phase_fn)
EVENTRING__SETTER(runtime_end, eventring_phase_fn)
EVENTRING__SETTER(runtime_counter, eventring_counter_fn)
EVENTRING__SETTER(alloc, eventring_alloc_fn)
EVENTRING__SETTER(lifecycle, eventring_lifecycle_fn)
EVENTRING__SETTER(user_unit, eventring_user_unit_fn)
EVENTRING__SETTER(user_int, eventring_user_int_fn)
EVENTRING__SETTER(user_span, eventring_user_span_fn)
EVENTRING__SETTER(user_custom, eventring_user_custom_fn)
EVENTRING__SETTER(lost_events, eventring_lost_fn)
EVENTRING__SETTER(thread, eventring_thread_fn)
EVENTRING__SETTER(window, eventring_window_fn)
#undef EVENTRING__SETTER

static inline int eventring_cursor_poll(eventring_cursor *cursor,
                                        const eventring_callbacks *cb,
                                        void *data, size_t max_events) {
  (void)cursor, (void)cb, (void)data, (void)max_events;
  return EVENTRING_E_INVAL;
}
static inline int eventring_cursor_dropped(const eventring_cursor *cursor,
                                           int domain, uint64_t *count) {
  (void)cursor, (void)domain, (void)count;
  return EVENTRING_E_INVAL;
}
static inline int eventring_cursor_malformed(const eventring_cursor *cursor,
                                             int domain, uint64_t *count) {
  (void)cursor, (void)domain, (void)count;
  return EVENTRING_E_INVAL;
}
#endif /* EVENTRING__STUBS */

#ifdef __cplusplus
}
#endif

#endif /* EVENTRING_H */
