/* internal.h -- state shared by the files of the runtime (not installed).
 *
 * Who touches what:
 *   er_state      under er_st.lock, except `live` (atomic) and the fields
 *                 a probe reads after it has seen `live` set (the mapping's
 *                 geometry), which only change while no probe runs.
 *   er_domain     the owning thread, inside a probe; the thread holding
 *                 er_st.lock while no probe runs (start, stop, fork); and
 *                 `in_probe`, which the stopping thread reads at any time.
 */
#ifndef EVENTRING_INTERNAL_H
#define EVENTRING_INTERNAL_H

#include <limits.h>
#include <pthread.h>
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

struct er_domain {
  /* 1 while the owner is between entering and leaving a probe.  Stored by
   * the owner with no fence (see domain.c for why that is enough); alone
   * in its cache line because the stopping thread polls it. */
  int in_probe;
  char pad_[64 - sizeof(int)];

  /* Owner-private while tracing runs. */
  uint64_t *ring;      /* the ring's words in the mapping, or NULL */
  uint64_t *hdr;       /* the ring's header words in the mapping */
  uint64_t mask;       /* ring_size_elements - 1 */
  uint64_t head, tail; /* the owner's copies of ring_head / ring_tail */
  uint64_t evicted;    /* events before head */
  uint64_t written;    /* events before tail */
  uint64_t seq;        /* the PSEQ word's value: moves of head */
  uint64_t last_ts;    /* the last timestamp written (never go back) */
  uint64_t file_gen;   /* er_st.file_gen the fields above belong to */
  int spawn_pending;   /* write domain_spawn before the next event */
  int id;              /* slot index, fixed */
  int owned;           /* threads bound to the slot; under er_st.lock */
  int shared;          /* joined (eventring_domain_join): several threads
                          whose probes the host serialises */
  int retired;         /* stuck in a probe at a teardown: never reused */
  uint64_t dropped;    /* events from a signal handler that interrupted a
                          probe of this thread (DROPPED word) */
  uint64_t alloc[EVENTRING_ALLOC_BUCKETS];
} __attribute__((aligned(64)));

struct er_state {
  pthread_mutex_t lock;
  int live;            /* a mapping is there to write into (atomic) */
  int paused;
  unsigned char *map;  /* the whole file, mapped shared */
  size_t map_bytes;
  int fd;
  char path[PATH_MAX];
  int preserve;
  uint64_t *meta;      /* metadata header words */
  uint64_t *ext;       /* extension block words */
  unsigned max_domains;
  unsigned ring_log2;
  uint64_t file_gen;   /* counts files created, so domains notice a new one */
  unsigned slots_hw;   /* 1 + highest slot ever owned */
  uint64_t free_epoch; /* bumped when a slot may have become free */
  uint64_t slotless_in;/* threads without a slot inside a probe (atomic) */
  pid_t pid;
};

extern ER_HIDDEN struct er_state er_st;
extern ER_HIDDEN struct er_domain er_domains[ER_DOMAINS_LIMIT];
extern ER_HIDDEN int er_need_fence;

/* ring.c: the file and the writer. */
/* The ring file of process `pid` in `dir`: `<dir>/<pid>.events`, dir NULL
 * or empty meaning OCAML_RUNTIME_EVENTS_DIR, else the current directory.
 * Returns 0, or -ENAMETOOLONG when it does not fit in `size` bytes. */
ER_HIDDEN int er_file_path(char *buf, size_t size, const char *dir,
                           pid_t pid);
/* Creates and maps this process's ring file; under the lock, not live.
 * Returns 0 or a negated errno value; er_st.path names the file either
 * way. */
ER_HIDDEN int er_file_create(unsigned log2, unsigned max_domains);
/* Creates the new file `path` as every file eventring writes is created
 * (the ring file, snapshots): mode 0600, refusing an existing file or a
 * symbolic link.  Returns the descriptor (read-write, close-on-exec) or a
 * negated errno value (-EEXIST, -ELOOP, ...). */
ER_HIDDEN int er_file_open_new(const char *path);
/* What an extension block holds besides its magic (ring_format.h): the
 * name tables (phases, counters, lifecycle kinds; a NULL name is written
 * empty), the writer's pid and, unless NULL, its program name. */
struct er_ext_desc {
  int numbering;             /* ER_PHASES_OCAML53 or _OCAML50 */
  uint64_t flags;            /* ER_EXT_FLAG_* other than _PROGRAM */
  pid_t pid;
  uint64_t dropped;          /* the ER_EXT_DROPPED word */
  const char *program;
  const char *const *tables[3];
  unsigned counts[3];
};
/* The bytes the block takes, names included. */
ER_HIDDEN uint64_t er_ext_bytes(const struct er_ext_desc *d);
/* Writes every word of the block at `x` (zeroed, er_ext_bytes() long)
 * except the magic, which the caller stores last. */
ER_HIDDEN void er_ext_fill(uint64_t *x, const struct er_ext_desc *d);
/* Unmaps (unless a stuck probe may still write) and closes the file, and
 * removes it when asked; under the lock, with no probe running. */
ER_HIDDEN void er_file_drop(int unlink_it, int unmap_it);
ER_HIDDEN void er_file_write_name(int id, const char *name);
ER_HIDDEN void er_domain_bind_file(struct er_domain *d);
ER_HIDDEN void er_warn(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* domain.c: slots, entering and leaving probes (the inline part is in
 * writer.h), stopping the world. */
ER_HIDDEN struct er_domain *er_attach_locked(int spawn_event);
ER_HIDDEN int er_stop_world(void);   /* under lock; 0 when quiescent */
ER_HIDDEN void er_barrier_init(void);
ER_HIDDEN void er_domains_after_fork(void);
ER_HIDDEN void er_domains_init(void);

/* ring.c: a custom event (er_emit, for the others, is in writer.h). */
ER_HIDDEN int er_emit_custom(int id, const void *bytes, size_t len);

/* remote.c: the thread that serves pause/resume requests from outside.
 * Start it under the lock once a file exists; stop it WITHOUT the lock
 * (it takes the lock to apply requests) before the file goes away. */
ER_HIDDEN void er_remote_start(uint64_t *ext);
ER_HIDDEN void er_remote_stop(void);
ER_HIDDEN void er_remote_after_fork(void);

/* consumer.c: what a ring file's metadata header (`meta`, the first 8
 * words, zero-padded when the file is shorter) must be, for the cursor and
 * remote control alike.  `size` is the file's size.  Returns 0 for a
 * version 1 header whose layout fits in the file, EVENTRING_E_NOTRINGFILE
 * when the words do not look like a ring file's header at all,
 * EVENTRING_E_VERSION when they do but with another version,
 * EVENTRING_E_TRUNCATED when the file is shorter than the header says, or
 * EVENTRING_E_CORRUPT. */
ER_HIDDEN int er_check_meta(const uint64_t *meta, uint64_t size);

/* consumer.c: a cursor on a ring file image in memory (for the fuzzer). */
ER_HIDDEN int er_cursor_open_image(eventring_cursor **out, const void *bytes,
                                   size_t len);

#endif /* EVENTRING_INTERNAL_H */
