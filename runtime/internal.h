/* internal.h -- state shared by the files of the runtime (not installed).
 *
 * Who touches what:
 *   er_state      under er_st.lock, except `live` (atomic) and the fields
 *                 a probe reads after it has seen the world open (the
 *                 mapping's geometry), which only change while the world
 *                 is stopped (stw.h).  Probes test eventring__on
 *                 (stw.c), which is nonzero only while `live` is 1.
 *   er_domain     the owning thread, inside a probe; the thread holding
 *                 er_st.lock while the world is stopped (start, stop,
 *                 fork); and `in_probe`, which the stopping thread reads at
 *                 any time (stw.h).
 */
#ifndef EVENTRING_INTERNAL_H
#define EVENTRING_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "atomics.h"
#include "eventring.h"
#include "ring_format.h"

#define ER_HIDDEN __attribute__((visibility("hidden")))
#define ER_LIKELY(x) __builtin_expect(!!(x), 1)
#define ER_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define ER_DOMAINS_LIMIT 4096   /* largest d= accepted */
#define ER_DOMAINS_DEFAULT 128
/* 2 words, the smallest ring that holds an event (a header and a
 * timestamp: a phase's begin or end).  OCaml 5 honours small rings and
 * people use them to provoke losses; an event longer than its ring is
 * dropped and counted (writer.h, er_reserve()). */
#define ER_LOG2_MIN 1
#define ER_LOG2_MAX 26          /* 512 MiB per ring */
#define ER_LOG2_DEFAULT 16
/* Largest apparent (sparse) file: d is lowered to stay under it. */
#define ER_MAX_FILE_BYTES (UINT64_C(64) << 30)

/* Eviction in batches (evict.c, er_make_room()): a ring of 2^e words is cut
 * into ER_CHUNKS chunks (2^e / ER_CHUNKS words each, or 1 word for rings
 * of fewer words), and eviction frees whole chunks.  A chunk's mark lives
 * from when it is written until head passes it: at most ER_CHUNKS + 1 at
 * once, and one more while an event is being placed. */
#define ER_CHUNKS_LOG2 5
#define ER_CHUNKS (1u << ER_CHUNKS_LOG2)
#define ER_MARKS (ER_CHUNKS + 2)

struct er_domain {
  /* 1 while the owner is between entering and leaving a probe.  Stored by
   * the owner with no fence (stw.h says why that is enough); alone in its
   * cache line because the stopping thread polls it. */
  int in_probe;
  char pad_[64 - sizeof(int)];

  /* Owner-private while tracing runs.  The fast path (writer.h,
   * er_emit_fast()) reads this cache line and no other of the struct. */
  uint64_t *ring;      /* the ring's words in the mapping, or NULL */
  uint64_t *hdr;       /* the ring's header words in the mapping */
  uint64_t mask;       /* ring_size_elements - 1 */
  uint64_t tail;       /* the owner's copy of ring_tail */
  /* An event of n words goes at the tail with no padding, no eviction
   * and no mark to take when tail + n <= limit: the smaller of mark_at
   * and head + ring size (0 while there is no ring), updated whenever
   * either moves (evict.c, er_make_room()). */
  uint64_t limit;
  uint64_t written;    /* events before tail */
  uint64_t last_ts;    /* the last timestamp written (never go back) */
  int spawn_pending;   /* ER_PENDING_*: what the owner sees to before its
                          next event (nonzero: one test on the probe path);
                          atomic, the stopper adds ER_PENDING_RETIRED */
  int id;              /* slot index, stored when a thread takes it */
  uint64_t *ext;       /* the extension block of the file bound to */
  uint64_t head;       /* the owner's copy of ring_head */
  uint64_t evicted;    /* events before head */
  uint64_t seq;        /* the PSEQ word's value: moves of head */
  uint64_t file_gen;   /* er_st.file_gen the fields above belong to */
  /* Eviction in batches (evict.c): the ring is cut into ER_CHUNKS chunks
   * of chunk_mask + 1 words, and the first event (or padding) that
   * starts at or after each chunk's start is a mark, whose position and
   * count of events before it are kept in marks[], oldest first
   * (mk_first, mk_n), so that eviction moves head to a mark without
   * reading the ring.  mark_at: the start of the chunk after the last
   * mark, where the next mark is due. */
  uint64_t chunk_mask;
  uint64_t mark_at;
  unsigned mk_first, mk_n;
  int threads;         /* threads bound to the slot; under er_st.lock */
  int shared;          /* joined (eventring_domain_join): several threads
                          whose probes the host serialises */
  int retired;         /* stuck in a probe at a stop or a hold: never
                          written again nor reused (stw.h); under the lock */
  /* Who holds the slot (doc/FORMAT.md, "Threads"): set when a thread
   * takes it, under er_st.lock, and written into the file's entry at
   * `thr` (NULL without one) by er_domain_publish(). */
  uint64_t *thr;
  pid_t tid;
  char name[ER_EXT_THREAD_NAME_BYTES];
  int named;           /* the name is eventring_domain_name()'s, not the
                          thread's own, which is not read again */
  uint64_t alloc[EVENTRING_ALLOC_BUCKETS];
  /* A shared slot: the writer key (domain.c) of the thread that wrote its
   * last thread-switch marker in this file, 0 for none.  Its threads'
   * probes are serialised by the host (the OCaml runtime lock), which
   * orders their accesses as it orders their stores into the ring. */
  uint64_t last_writer;
  struct er_mark {
    uint64_t pos;      /* a ring position where an event or padding starts */
    uint64_t count;    /* events (padding excluded) before it */
  } marks[ER_MARKS];
} __attribute__((aligned(64)));

/* Bits of er_domain.spawn_pending. */
#define ER_PENDING_SPAWN 1  /* domain_spawn */
#define ER_PENDING_WRITER 2 /* a shared slot: a thread-switch marker when
                               the writer is not the last one (set for as
                               long as the slot is shared) */
#define ER_PENDING_RETIRED 4 /* the slot is retired: its threads leave it
                                for another at their next event (stw.h) */

struct er_state {
  pthread_mutex_t lock;
  int live;            /* the world is open: a mapping is there to write
                          into (atomic; stw.h).  Tested by control
                          operations' writes and slotless threads; the
                          probes test eventring__on, one word for open,
                          not paused and no fence (stw.h, THE FLAG WORD) */
  int paused;
  unsigned char *map;  /* the whole file, mapped shared */
  size_t map_bytes;
  int fd;
  char path[PATH_MAX];
  int preserve;
  int kept_aside;      /* the start gave an earlier image's file its own
                          name (leftovers.c): the teardown looks there */
  uint64_t *meta;      /* metadata header words */
  uint64_t *ext;       /* extension block words */
  uint64_t *threads;   /* its thread entries (ER_EXT_FLAG_THREADS) */
  unsigned max_domains;
  unsigned ring_log2;
  uint64_t file_gen;   /* counts files created, so domains notice a new one */
  unsigned slots_hw;   /* 1 + highest slot ever bound */
  uint64_t free_epoch; /* bumped when a slot may have become free; from
                          1, as a thread's noslot_epoch starts at 0 */
  uint64_t control_busy;/* control paths holding or awaiting `lock`
                          (atomic; stw.h) */
  pid_t pid;
};

/* The process's tracing state (state.c), as `struct er_state` says. */
extern ER_HIDDEN struct er_state er_st;
/* In bss, untouched until a thread takes a slot (state.c): a process
 * that never traces keeps it unallocated. */
extern ER_HIDDEN struct er_domain er_domains[ER_DOMAINS_LIMIT];
/* The calling thread's slot, or NULL (state.c).  initial-exec: one load
 * from the thread pointer, no call to __tls_get_addr, even in the shared
 * library. */
extern ER_HIDDEN __thread struct er_domain *er_tls_self
    __attribute__((tls_model("initial-exec")));

/* How many times the calling thread is between taking er_st.lock (or
 * trying to) and giving it back: a probe of a signal handler that finds
 * it nonzero must not wait for the lock (stw.h). */
extern ER_HIDDEN __thread unsigned er_tls_locking
    __attribute__((tls_model("initial-exec")));

/* Every path that takes er_st.lock but a thread's first event (domain.c)
 * takes it with er_lock() and gives it back with er_unlock(); stw.h says
 * why the counts come before the lock and after the unlock.
 *
 * er_arm() (state.c) runs, once, the action er_arm_with() gave it: the
 * fork handlers' installation (init.c gives it at load, atfork.c's
 * er_fork_install()).  Every path that takes the lock calls it first (a
 * thread's first event comes after tracing started, which took it), so a
 * process that never traces registers no handler, and one whose lock a
 * thread holds has them installed, to hold the lock across fork().
 * er_armed() returns 1 once er_arm() has run (no lock needed). */
ER_HIDDEN void er_arm(void);
ER_HIDDEN void er_arm_with(void (*action)(void));
ER_HIDDEN int er_armed(void);

static inline void er_lock(void) {
  er_arm();
  er_tls_locking++;
  er_compiler_barrier();
  er_fetch_add(&er_st.control_busy, 1);
  pthread_mutex_lock(&er_st.lock);
}

static inline void er_unlock(void) {
  pthread_mutex_unlock(&er_st.lock);
  er_fetch_add(&er_st.control_busy, (uint64_t)-1);
  er_compiler_barrier();
  er_tls_locking--;
}

/* Whether a write waits for eventring__on: a probe's does; the lifecycle
 * events of control operations, whose caller holds er_st.lock, are
 * written even while paused. */
enum er_when { ER_IF_ON, ER_EVEN_PAUSED };

/* ring.c: the file and the writer. */
/* The ring file of process `pid` in `dir`: `<dir>/<pid>.events`, dir NULL
 * or empty meaning OCAML_RUNTIME_EVENTS_DIR, else the current directory.
 * Returns 0, or -ENAMETOOLONG when it does not fit in `size` bytes. */
ER_HIDDEN int er_file_path(char *buf, size_t size, const char *dir,
                           pid_t pid);
/* Creates and maps this process's ring file in `dir` (NULL: as
 * er_file_path() says) as `params` say; under the lock, not live.
 * Returns 0 or a negated errno value; er_st.path names the file either
 * way. */
struct er_params;
ER_HIDDEN int er_file_create(const char *dir, const struct er_params *params);
/* Creates the new file `path` as every file eventring writes is created
 * (the ring file, snapshots): mode 0600, refusing an existing file or a
 * symbolic link.  Returns the descriptor (read-write, close-on-exec) or a
 * negated errno value (-EEXIST, -ELOOP, ...). */
ER_HIDDEN int er_file_open_new(const char *path);
/* Returns `fd` when it is above 2, else a close-on-exec duplicate above 2
 * (or a negated errno value) after closing `fd`: a descriptor the library
 * keeps must never be the host's stdin, stdout or stderr. */
ER_HIDDEN int er_fd_above_std(int fd);
/* What er_file_drop() does besides closing the descriptor. */
enum {
  ER_FILE_UNMAP = 1,  /* only when the world stopped (stw.h) */
  ER_FILE_UNLINK = 2  /* unless OCAML_RUNTIME_EVENTS_PRESERVE is set */
};
/* Closes the file and forgets it, doing what `what` (ER_FILE_* or'ed)
 * says; under the lock, with the world closed. */
ER_HIDDEN void er_file_drop(unsigned what);
/* Writes user event `id`'s name into the live file's name slot; a slot
 * the disk has no room for is left empty, with one warning per file.
 * Under the lock, with a live file. */
ER_HIDDEN void er_file_write_name(int id, const char *name);
/* Gives slot `d` its ring in the live file, once per file: resets the
 * writer's copies of head and tail, reserves the ring's blocks (a slot
 * past the file's domains, or whose blocks cannot be had, gets no ring;
 * one warning) and points `d` at its ring, header and thread entry.
 * Returns 1 when it pointed `d` at a thread entry of this file, which
 * the caller then fills (er_domain_bind()), else 0.  Under the lock. */
ER_HIDDEN int er_domain_bind_file(struct er_domain *d);
/* warn.c: prints "eventring: " and the message on standard error, as
 * one line, async-signal-safely (the conversions it knows are listed
 * there). */
ER_HIDDEN void er_warn(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
/* The English description of errno value `err`, or "unknown error";
 * async-signal-safe. */
ER_HIDDEN const char *er_errno_text(int err);

/* lifecycle.c: a trace's life, under er_st.lock.
 * er_start_locked() makes the file in `dir` (NULL: as er_file_path()
 * says) and opens it to probes, ring_start first; it does not start the
 * remote-control watcher (it is also the forked child's start).  Returns
 * 0 (also when already started) or er_file_create()'s error.
 * er_end_locked() ends a live file: ring_stop, the world closed, the
 * file dropped as the world allows (a warning when it must stay mapped).
 * er_pause_locked() and er_resume_locked() pause and resume a live file,
 * recorded as `by` says; nothing when not live or already so. */
enum er_recorder {
  ER_BY_CALLER,  /* the thread that asked, in its own ring */
  ER_BY_WATCHER  /* the remote-control watcher, which takes no slot */
};
ER_HIDDEN int er_start_locked(const char *dir);
ER_HIDDEN void er_end_locked(void);
ER_HIDDEN void er_pause_locked(enum er_recorder by);
ER_HIDDEN void er_resume_locked(enum er_recorder by);

/* control.c: stops tracing, the watcher first, or gives a forked child's
 * pending file up.  Returns 0, or EVENTRING_E_NOTSTARTED when neither
 * was there.  Under er_st.lock. */
ER_HIDDEN int er_stop_locked(void);

/* params.c: the parameters of a new ring file, from the environment
 * (clamped, with a warning for each value replaced). */
struct er_params {
  unsigned log2;        /* OCAMLRUNPARAM e= */
  unsigned max_domains; /* OCAMLRUNPARAM d=, lowered to fit 64 GiB */
  int preserve;         /* OCAML_RUNTIME_EVENTS_PRESERVE is set */
  int record_cmdline;   /* EVENTRING_RECORD_CMDLINE asks for the arguments */
  /* EVENTRING_LABELS, as the metadata section holds them (layout.h's
   * er_labels_set()); the items that cannot be used left out. */
  unsigned char labels[ER_MD_LABEL_BYTES];
};
ER_HIDDEN void er_params_read(struct er_params *out);

/* users.c: the registry of user events.  Ids below er_user_count (loaded
 * with acquire order) are registered; er_users_write_names() writes every
 * name into a new file, under the lock. */
extern ER_HIDDEN int er_user_count;
static inline int er_user_id_ok(int id) {
  return id >= 0 && id < er_iload_acq(&er_user_count);
}
ER_HIDDEN void er_users_write_names(void);

/* atfork.c: installs the fork handlers (the action of er_arm()). */
ER_HIDDEN void er_fork_install(void);
/* fork.c: a forked child's file, made when first needed (fork.c says
 * when).  er_fork_pending() is 1 while it is pending (no lock needed).
 * The rest runs under er_st.lock.  er_fork_file_locked() makes it:
 * returns 0 (made, or nothing pending) or the failed start's error,
 * after which the child is untraced.  er_fork_cancel_locked() gives it
 * up (a stop): returns 1 when one was pending.  er_fork_pause_locked()
 * and er_fork_resume_locked() pause and resume a child whose file is
 * pending.  er_fork_after_fork() is the child's fork handler's part,
 * with the lock held: leaves tracing pending when the parent traced. */
ER_HIDDEN int er_fork_pending(void);
ER_HIDDEN int er_fork_file_locked(void);
ER_HIDDEN int er_fork_cancel_locked(void);
ER_HIDDEN void er_fork_pause_locked(void);
ER_HIDDEN void er_fork_resume_locked(void);
ER_HIDDEN void er_fork_after_fork(void);
/* Counts the event of a probe that found the file pending and could not
 * take the lock to make it: in the file when it was made meanwhile, else
 * until it is (no lock needed; async-signal-safe). */
ER_HIDDEN void er_fork_drop_unfiled(void);
/* Blocks every signal but the faults in the calling thread, the old mask
 * into *old (fork.c says why). */
ER_HIDDEN void er_block_signals(sigset_t *old);

/* domain.c: slots.  er_attach_locked() returns the caller's slot, taken
 * if it has none (its ring then begins with domain_spawn), or NULL when
 * every slot is taken; under er_st.lock.  er_attach_from_probe() does
 * the same for a probe, taking the lock as er_lock_from_probe() does:
 * NULL, the event counted as a slotless thread's, when it cannot. */
ER_HIDDEN struct er_domain *er_attach_locked(void);
ER_HIDDEN struct er_domain *er_attach_from_probe(void);
/* In a forked child: every slot but the caller's is free. */
ER_HIDDEN void er_domains_after_fork(void);
/* What changed of a slot's holder, for er_domain_publish(). */
enum er_holder {
  ER_HOLDER_RENAMED, /* its tid or name: those two words only */
  ER_HOLDER_TAKEN    /* a new holder: its `since` too (spawn_pending) */
};
/* Writes the slot's holder (tid, name; since, when taken) into its
 * file's thread entry, if it has one in the live file.  Under
 * er_st.lock. */
ER_HIDDEN void er_domain_publish(struct er_domain *d, enum er_holder change);
/* Binds slot `d` to the live file (er_domain_bind_file()) and fills its
 * thread entry when the slot got one.  Under er_st.lock. */
ER_HIDDEN void er_domain_bind(struct er_domain *d);
/* Names every held slot of the live file after its thread again (unless
 * the program named the slot): a thread that renamed itself since it
 * took its slot, as a main thread that calls pthread_setname_np() in
 * main() after tracing started before it.  Under er_st.lock. */
ER_HIDDEN void er_domains_rename_locked(void);
/* Slot bookkeeping for slots.c, under er_st.lock but er_slot_hold() and
 * er_slot_set_exit_key(), which touch the calling thread's words only:
 * take slot `d` as index `id` for the caller (its tid and name), hold it
 * (er_tls_self and the exit key), leave a retired slot, free a slot its
 * last thread left; name it, or after the caller's thread. */
ER_HIDDEN void er_slot_take_locked(struct er_domain *d, unsigned id);
ER_HIDDEN void er_slot_hold(struct er_domain *d);
ER_HIDDEN void er_slot_set_exit_key(struct er_domain *d);
ER_HIDDEN void er_slot_leave_retired_locked(struct er_domain *d);
ER_HIDDEN void er_slot_release_locked(struct er_domain *d);
ER_HIDDEN void er_slot_set_name(struct er_domain *d, const char *name);
ER_HIDDEN void er_slot_own_thread(struct er_domain *d);
/* The key whose destructor, slots.c's er_on_thread_exit(), gives a
 * thread's slot back at its exit; made at load by init.c
 * (er_exit_key_made 0 when it could not be). */
extern ER_HIDDEN pthread_key_t er_exit_key;
extern ER_HIDDEN int er_exit_key_made;
ER_HIDDEN void er_on_thread_exit(void *slot);
/* The program name files record: the one the host gave
 * (eventring__set_program()), else program_invocation_short_name. */
ER_HIDDEN const char *er_program_name(void);

/* leftovers.c: files whose writer is gone.  er_file_hold() takes the
 * lock that tells a live writer's file (0 or a negated errno value).
 * er_leftover_take() examines the file at `path`, where this process's
 * new file goes: when it names our pid, is our user's, complete, and its
 * writer is gone, returns a descriptor on it (locked against other
 * starts until closed) and says in *keep whether it must be kept (an
 * earlier image of this process, our `start` time; or marked
 * preserved); -EEXIST otherwise.  er_leftover_aside() gives the file
 * described by *st at `path` its earlier image's name,
 * <pid>.<N>.events; 0 or a negated errno value.  er_leftovers_reap()
 * removes, in the directory of `path`, the files ER_REAP_* say. */
enum {
  ER_REAP_DEAD = 1,      /* dead processes' files, not preserved */
  ER_REAP_OWN_IMAGES = 2 /* this process's earlier images', not preserved */
};
struct stat;
ER_HIDDEN int er_file_hold(int fd);
ER_HIDDEN int er_leftover_take(const char *path, uint64_t start,
                               struct stat *st, int *keep);
ER_HIDDEN int er_leftover_aside(const char *path, pid_t pid,
                                const struct stat *st);
ER_HIDDEN void er_leftovers_reap(const char *path, unsigned what);

/* cmdline.c: the command line a file records.  The program name, or the
 * process's arguments when the program (eventring_record_cmdline()) or,
 * the program not having chosen, `env_asks` (er_params) says so, into
 * buf (cut to fit, NUL-terminated).  Under the lock. */
ER_HIDDEN void er_cmdline_text(char *buf, size_t size, int env_asks);
/* Writes the live file's command line again (the choice or the program
 * name changed); nothing without a live file.  Under the lock. */
ER_HIDDEN void er_cmdline_rewrite_locked(void);
/* The host's OCaml version that files record (eventring_set_ocaml_version()),
 * or "": under the lock. */
ER_HIDDEN const char *er_ocaml_version(void);

/* remote_watcher.c: the thread that serves pause/resume requests from
 * outside.  Started and stopped under the lock: started once a file
 * exists, stopped (er_stop_locked() does it) before the world closes and
 * the file goes away.  It only tries the lock, so stopping it under the
 * lock cannot deadlock. */
ER_HIDDEN void er_remote_start(uint64_t *ext);
ER_HIDDEN void er_remote_stop(void);
ER_HIDDEN void er_remote_wait_up(void);
ER_HIDDEN void er_remote_after_fork(void);

/* layout.c: what a ring file's metadata header (`meta`, the first 8
 * words, zero-padded when the file is shorter) must be, for the cursor and
 * remote control alike.  `size` is the file's size.  Returns 0 for a
 * version 1 header whose layout fits in the file, EVENTRING_E_NOTRINGFILE
 * when the words do not look like a ring file's header at all,
 * EVENTRING_E_VERSION when they do but with another version,
 * EVENTRING_E_TRUNCATED when the file is shorter than the header says, or
 * EVENTRING_E_CORRUPT. */
ER_HIDDEN int er_check_meta(const uint64_t *meta, uint64_t size);

/* Test hooks: points where a test forces an interleaving (a thread stuck
 * inside a probe, a membarrier that fails, a fork during recalibration).
 * Compiled in only with ER_TEST_HOOKS, for testsuite/test_hook_*.c
 * (Makefile.in); elsewhere ER_HOOK() is the constant 0.  A hook returns
 * nonzero to make the operation at that point fail, where it can. */
enum er_hook {
  ER_HOOK_INSIDE_PROBE,    /* a probe saw the world open, about to write */
  ER_HOOK_INSIDE_SLOTLESS, /* a slotless probe saw `live`, before counting */
  ER_HOOK_STOP_MEMBARRIER, /* the stopper's membarrier: nonzero fails it */
  ER_HOOK_RECALIBRATING,   /* a probe holds the clock's recalibration */
  ER_HOOK_CLOCK_SWITCH,    /* a probe holds the switch to the TSC, before
                            * its sample: 1 puts the first set
                            * ER_CLOCK_TEST_SKEW_NS behind, 2 leaves the
                            * switch to a later probe (clock.h) */
  ER_HOOK_SIGBUS_REPAIR,   /* sigbus.c: a fault of ours, before the file's
                            * size is looked at */
  ER_HOOK_POLL_SIZED,      /* a poll found its file whole, before reading */
  ER_HOOK_FILE_MAPPED,     /* a new ring file mapped, not yet filled in */
  ER_HOOK_DROP,            /* a dropped event about to be counted */
  ER_HOOK_PAIR_PUBLISHED   /* ring.c: a new (head, evicted) pair and PSEQ
                            * stored, the HEAD word not yet */
};
#ifdef ER_TEST_HOOKS
extern int (*er_test_hook)(enum er_hook);
#define ER_HOOK(h) (er_test_hook ? er_test_hook(h) : 0)
#else
#define ER_HOOK(h) 0
#endif

/* consumer_open.c: a cursor on a ring file image in memory (for the fuzzer). */
ER_HIDDEN int er_cursor_open_image(eventring_cursor **out, const void *bytes,
                                   size_t len);

#endif /* EVENTRING_INTERNAL_H */
