/* domain.c -- domain slots: which ring each thread writes into.
 *
 * Every thread that emits an event owns a domain slot and writes only into
 * that slot's ring.  A slot is taken on the thread's first event (lowest
 * free index), or explicitly with eventring_domain_bind(), and given back
 * when the thread exits.  With every slot taken, a thread's events are
 * dropped and counted in the extension block, never written into a ring
 * another thread owns.  Slots change under er_st.lock; when a probe may
 * enter and when a slot's ring may change is the stop-the-world
 * protocol's business (stw.h).
 */
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "writer.h"

/* Zero in the image and left so until a thread takes a slot: the array
 * is 1.5 MiB of bss, and a process that never traces must not pay for
 * it, so nothing here writes a slot that no thread takes (a slot's `id`
 * is stored when a thread takes it). */
struct er_domain er_domains[ER_DOMAINS_LIMIT];

__thread struct er_domain *er_tls_self
    __attribute__((tls_model("initial-exec")));
__thread unsigned er_tls_locking __attribute__((tls_model("initial-exec")));
/* The free_epoch at which this thread last found every slot taken. */
static __thread uint64_t noslot_epoch
    __attribute__((tls_model("initial-exec")));
/* The key whose destructor gives a thread's slot back at its exit.  A
 * thread's first event may be made in a signal handler, where neither
 * pthread_once() nor an allocation is allowed, so it is made when the
 * library is loaded (make_exit_key()), before the host has made keys of
 * its own: glibc keeps the values of the first 32 keys in the thread
 * itself, so setting it stores and allocates nothing.  It holds no value,
 * and costs nothing, in a thread that takes no slot.  exit_key_made is 0
 * when the key could not be made: slots are then not given back at a
 * thread's exit. */
static pthread_key_t exit_key __attribute__((section(".data")));
static int exit_key_made __attribute__((section(".data")));

static void on_thread_exit(void *p) {
  /* Runs at thread exit, while the thread's TLS is still there. */
  if (p && er_tls_self == p) eventring_domain_release();
}

/* Makes `name` (cut to fit, the rest zeros) the slot's name. */
static void set_name(struct er_domain *d, const char *name) {
  size_t n = strlen(name);
  if (n > sizeof d->name - 1) n = sizeof d->name - 1;
  memset(d->name, 0, sizeof d->name);
  memcpy(d->name, name, n);
}

/* Records the calling thread as the slot's holder: its thread id and
 * its name as the kernel has it (pthread_setname_np() sets that one), a
 * system call each, paid when a thread takes a slot. */
static void own_thread(struct er_domain *d) {
  char name[16] = "";
  d->tid = (pid_t)syscall(SYS_gettid);
  (void)prctl(PR_GET_NAME, name);
  name[sizeof name - 1] = '\0';
  set_name(d, name);
  d->named = 0;
}

/* Reads again the name of the thread holding `d`, as the kernel has it
 * now, from /proc/self/task/TID/comm for a thread other than the caller
 * (async-signal-safe: no stdio).  Returns 1 when it was read. */
static int read_holder_name(const struct er_domain *d, char name[16]) {
  if (d->tid == (pid_t)syscall(SYS_gettid))
    return prctl(PR_GET_NAME, name) == 0;
  char path[48] = "/proc/self/task/";
  char digits[12];
  int nd = 0;
  for (unsigned long v = (unsigned long)d->tid; nd == 0 || v; v /= 10)
    digits[nd++] = (char)('0' + v % 10);
  size_t at = strlen(path);
  while (nd) path[at++] = digits[--nd];
  memcpy(path + at, "/comm", 6);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, name, 15);
  close(fd);
  if (n <= 0) return 0;
  if (name[n - 1] == '\n') n--;
  name[n] = '\0';
  return 1;
}

void er_domains_rename_locked(void) {
  for (unsigned i = 0; i < er_st.slots_hw; i++) {
    struct er_domain *d = &er_domains[i];
    char name[16] = "";
    if (!d->threads || d->retired || d->named || !d->tid ||
        !read_holder_name(d, name))
      continue;
    name[sizeof name - 1] = '\0';
    if (strncmp(name, d->name, sizeof d->name) == 0) continue;
    set_name(d, name);
    er_domain_publish(d, 0);
  }
}

void er_domain_publish(struct er_domain *d, int taken) {
  uint64_t *e = d->thr;
  /* The entry of a file that is gone, or another file's, is not ours to
   * write; er_st.threads is NULL once the file is dropped. */
  if (!e || !er_st.threads || d->file_gen != er_st.file_gen) return;
  uint64_t seq = er_load_rlx(&e[ER_THR_SEQ]) + 1;
  er_store_rlx(&e[ER_THR_SEQ], seq);
  /* Orders the odd sequence before the entry's words; pairs with the
   * reader's acquire fence before its second load of the sequence
   * (consumer_threads.c). */
  er_fence_release();
  er_store_rlx(&e[ER_THR_TID], (uint64_t)d->tid);
  if (taken)
    er_store_rlx(&e[ER_THR_SINCE],
                 d->spawn_pending & ER_PENDING_SPAWN ? ER_THR_SINCE_PENDING
                                                     : 0);
  uint64_t w[ER_EXT_THREAD_NAME_BYTES / 8];
  memcpy(w, d->name, sizeof w);
  for (unsigned i = 0; i < sizeof w / 8; i++)
    er_store_rlx(&e[ER_THR_NAME + i], w[i]);
  /* Publishes the entry; pairs with the reader's acquire load of the
   * sequence. */
  er_store_rel(&e[ER_THR_SEQ], seq + 1);
}

/* Before the library's other constructors (init.c's may start tracing),
 * and so before anything takes a slot. */
__attribute__((constructor(101))) static void make_exit_key(void) {
  exit_key_made = pthread_key_create(&exit_key, on_thread_exit) == 0;
}

/* Sets the calling thread's value of the exit key (async-signal-safe:
 * see exit_key). */
static void set_exit_key(struct er_domain *d) {
  if (exit_key_made) pthread_setspecific(exit_key, d);
}

/* Readies slot `d` (index `id`) for the calling thread.  Under
 * er_st.lock. */
static void take_slot_locked(struct er_domain *d, unsigned id) {
  d->id = (int)id;
  own_thread(d);
}

/* Marks the calling thread as the holder of `d` (its exit gives it
 * back). */
static void hold_slot(struct er_domain *d) {
  er_tls_self = d;
  set_exit_key(d);
}

/* Takes the calling thread out of its retired slot, under the lock.  The
 * slot gets nothing more, not even domain_terminate, and is never freed;
 * the thread-exit key keeps pointing at it, which on_thread_exit()
 * ignores, until the thread holds another. */
static void leave_retired_locked(struct er_domain *d) {
  d->threads--;
  er_tls_self = NULL;
}

struct er_domain *er_attach_locked(void) {
  struct er_domain *self = er_tls_self;
  if (self && !self->retired) return self;
  if (self) leave_retired_locked(self);
  for (unsigned i = 0; i < er_st.max_domains; i++) {
    struct er_domain *d = &er_domains[i];
    if (d->threads || d->retired) continue;
    take_slot_locked(d, i);
    d->threads = 1;
    d->shared = 0;
    d->spawn_pending = ER_PENDING_SPAWN;
    er_domain_bind_file(d);
    er_domain_publish(d, 1);
    if (i + 1 > er_st.slots_hw) er_st.slots_hw = i + 1;
    hold_slot(d);
    return d;
  }
  return NULL;
}

static void release_slot_locked(struct er_domain *d) {
  d->threads = 0;
  d->spawn_pending = 0;
  er_store_rlx(&er_st.free_epoch, er_load_rlx(&er_st.free_epoch) + 1);
}

/* Takes er_st.lock for a probe, never waiting for a control path: 1
 * when taken, 0 when the event must be dropped instead (stw.h, SIGNAL
 * HANDLERS AND THE LOCK).  Also fork.c's, for a forked child's file. */
int er_lock_from_probe(void) {
  /* Our own thread is taking, holding or giving back the lock: this
   * probe runs in a signal handler that interrupted it. */
  if (er_tls_locking) return 0;
  er_tls_locking++;
  er_compiler_barrier();
  while (pthread_mutex_trylock(&er_st.lock) != 0) {
    /* Another thread's first event holds it for a few microseconds and
     * waits for nothing; a control path may wait for anything (a lock
     * our interrupted code holds, the probes to leave): give up. */
    if (er_load_rlx(&er_st.control_busy)) {
      er_compiler_barrier();
      er_tls_locking--;
      return 0;
    }
    sched_yield();
  }
  return 1;
}

void er_unlock_from_probe(void) {
  pthread_mutex_unlock(&er_st.lock);
  er_compiler_barrier();
  er_tls_locking--;
}

/* Takes er_st.lock for a slot's change (bind, join, release, a thread's
 * exit), which holds it for microseconds and waits for nothing, as a
 * first event does: counted in the thread's er_tls_locking (a handler on
 * this thread must not wait for it) but not in control_busy, so that
 * other threads' first events wait for it rather than drop (stw.h). */
static void lock_for_slot(void) {
  er_arm();
  er_tls_locking++;
  er_compiler_barrier();
  pthread_mutex_lock(&er_st.lock);
}

static void unlock_for_slot(void) {
  pthread_mutex_unlock(&er_st.lock);
  er_compiler_barrier();
  er_tls_locking--;
}

static struct er_domain *attach_from_probe(void) {
  if (noslot_epoch == er_load_rlx(&er_st.free_epoch) ||
      !er_lock_from_probe()) {
    er_slotless_drop();
    return NULL;
  }
  struct er_domain *d = NULL;
  int live = er_iload_rlx(&er_st.live);
  if (live) {
    d = er_attach_locked();
    if (!d) noslot_epoch = er_load_rlx(&er_st.free_epoch);
  }
  er_unlock_from_probe();
  if (!d && live) er_slotless_drop();
  return d;
}

struct er_domain *er_enter_slow(enum er_when when) {
  /* A forked child's file is made first (fork.c); the probe then comes
   * back here. */
  if (when == ER_IF_ON &&
      ER_UNLIKELY(er_iload_rlx(&eventring__on) == ER_ON_PENDING))
    return er_enter_pending(when);
  /* A write even while paused comes from a control operation, which holds
   * the lock already. */
  struct er_domain *d =
      when == ER_EVEN_PAUSED ? er_attach_locked() : attach_from_probe();
  if (!d) {
    if (when == ER_EVEN_PAUSED) er_slotless_drop();
    return NULL;
  }
  return er_enter_domain(d, when);
}

void er_write_spawn(struct er_domain *d) {
  /* A read-modify-write: a stopper may be retiring the slot (stw.c). */
  er_ifetch_and(&d->spawn_pending, ~ER_PENDING_SPAWN);
  uint64_t *ev = er_reserve(d, 3);
  if (!ev) return; /* a 2-word ring: counted in DROPPED */
  er_store_rlx(&ev[0], ER_HDR(3, 0, ER_EV_LIFECYCLE,
                              EVENTRING_LIFECYCLE_DOMAIN_SPAWN));
  uint64_t ts = er_stamp(d);
  er_store_rlx(&ev[1], ts);
  er_store_rlx(&ev[2], (uint64_t)er_st.pid);
  /* The holder's events begin here (doc/FORMAT.md, "Threads"): the
   * owner, inside its probe, is the only writer of this word once the
   * slot is taken.  Before the commit, whose release store of the tail
   * orders it for a reader that reads the event. */
  er_store_rlx(&d->thr[ER_THR_SINCE], ts);
  er_commit(d, 3);
}

/* ------------------------------------------------------------------ */
/* Thread switches in shared slots (doc/FORMAT.md, "Thread switches").  */

/* Threads that share a slot (an OCaml 4 program's threads, which run one
 * at a time under the runtime lock) write into one ring.  Before the
 * first event of a thread that is not the slot's last writer, the probe
 * writes a marker naming the thread, so that readers can give each
 * thread a track of its own.  A thread is known by its writer key, a
 * number no other thread of the process has had, taken afresh when its
 * id or name changes so that the next event writes a marker with them.
 * Only slots opened to joiners pay for this: the test is behind
 * spawn_pending, which the probe tests anyway. */
/* Keys handed out.  Taken with an atomic read-modify-write so that no
 * two threads get the same key; the key orders nothing (each thread
 * compares its own key with its slot's word, under the host's lock), so
 * the increment pairs with no other access. */
static uint64_t next_writer_key;
static __thread uint64_t writer_key
    __attribute__((tls_model("initial-exec")));
static __thread int64_t thread_id = -1;   /* eventring_thread_id() */
static __thread uint64_t kernel_tid;      /* 0 until looked up */
static __thread char thread_name[ER_THREAD_NAME_BYTES];

static void write_marker(struct er_domain *d) {
  if (!writer_key) {
    writer_key = er_fetch_add(&next_writer_key, 1) + 1;
    if (!kernel_tid) kernel_tid = (uint64_t)syscall(SYS_gettid);
  }
  /* Set even when the marker cannot be written (a ring shorter than it):
   * it is counted as dropped once, not at every event. */
  d->last_writer = writer_key;
  size_t n = strnlen(thread_name, sizeof thread_name);
  unsigned len = ER_XEV_THREAD_MIN_WORDS + (n ? (unsigned)ER_CUSTOM_WORDS(n) : 0);
  uint64_t *ev = er_reserve(d, len);
  if (!ev) return;
  er_store_rlx(&ev[0], ER_HDR(len, 0, ER_EV_FLUSH, ER_XEV_THREAD));
  er_store_rlx(&ev[1], er_stamp(d));
  er_store_rlx(&ev[2], (uint64_t)thread_id);
  er_store_rlx(&ev[3], kernel_tid);
  /* The name padded as a custom event's payload. */
  for (unsigned w = 0; w < len - ER_XEV_THREAD_MIN_WORDS; w++)
    er_store_rlx(&ev[ER_XEV_THREAD_MIN_WORDS + w],
                 er_padded_word(thread_name, n, w));
  er_commit(d, len);
}

void er_write_pending(struct er_domain *d) {
  if (d->spawn_pending & ER_PENDING_SPAWN) er_write_spawn(d);
  if ((d->spawn_pending & ER_PENDING_WRITER) &&
      (!writer_key || d->last_writer != writer_key))
    write_marker(d);
}

void eventring_thread_id(int64_t id) {
  if (id < 0) id = -1;
  if (id == thread_id) return;
  thread_id = id;
  writer_key = 0;
}

int eventring_thread_name(const char *name) {
  if (!name) name = "";
  size_t n = strnlen(name, sizeof thread_name);
  if (n >= sizeof thread_name) return EVENTRING_E_NAMETOOLONG;
  if (strcmp(name, thread_name) == 0) return 0;
  memcpy(thread_name, name, n + 1);
  writer_key = 0;
  return 0;
}

void er_domains_after_fork(void) {
  /* Only the forking thread exists in the child: every other slot is
   * free. */
  for (unsigned i = 0; i < er_st.slots_hw; i++) {
    struct er_domain *d = &er_domains[i];
    if (d == er_tls_self) {
      d->threads = 1;
      /* A thread of its own in the child; the child's file gets it. */
      d->tid = (pid_t)syscall(SYS_gettid);
      continue;
    }
    d->threads = 0;
    d->retired = 0;
  }
  er_store_rlx(&er_st.free_epoch, er_load_rlx(&er_st.free_epoch) + 1);
}

/* ------------------------------------------------------------------ */
/* Public domain API.                                                   */

/* Takes the calling thread out of its slot, under the lock; the last
 * thread to leave a slot writes domain_terminate and frees it. */
static void leave_slot_locked(void) {
  struct er_domain *d = er_tls_self;
  if (!d) return;
  if (d->retired) {
    leave_retired_locked(d);
    set_exit_key(NULL);
    return;
  }
  if (d->threads == 1) {
    /* The holder leaves: the file keeps the name it has now (it may have
     * renamed itself since it took the slot), read here, off the probes'
     * path, unless the program named the slot itself. */
    if (!d->named && d->tid == (pid_t)syscall(SYS_gettid)) {
      own_thread(d);
      er_domain_publish(d, 0);
    }
    /* No file made in a forked child: its ring holds nothing to end. */
    if (!er_fork_pending())
      eventring_lifecycle(EVENTRING_LIFECYCLE_DOMAIN_TERMINATE, getpid());
  }
  if (--d->threads == 0) release_slot_locked(d);
  er_tls_self = NULL;
  set_exit_key(NULL);
}

/* How a thread holds a slot. */
enum slot_use {
  SLOT_ALONE,   /* eventring_domain_bind(): no other thread */
  SLOT_SHARED   /* eventring_domain_join(): beside the threads joined */
};

/* Puts the calling thread in slot `id`, used as `use` says. */
static int enter_slot(int id, enum slot_use use) {
  int shared = use == SLOT_SHARED;
  lock_for_slot();
  unsigned limit = er_iload_rlx(&er_st.live) ? er_st.max_domains
                                             : ER_DOMAINS_LIMIT;
  int r = 0;
  struct er_domain *d = id >= 0 && (unsigned)id < limit ? &er_domains[id] : NULL;
  if (!d) {
    r = EVENTRING_E_INVAL;
  } else if (er_tls_self == d) {
    /* The sole holder of a slot may open it to joiners (the thread that
     * started tracing holds slot 0 alone until the host's other threads
     * join it); a joined slot never turns exclusive again. */
    if (shared && !d->shared && d->threads == 1) {
      d->shared = 1;
      d->spawn_pending |= ER_PENDING_WRITER;
    }
    r = d->shared == shared ? 0 : EVENTRING_E_BUSY;
  } else if (d->retired || (d->threads && !(shared && d->shared))) {
    r = EVENTRING_E_BUSY;
  } else {
    leave_slot_locked();
    if (d->threads++ == 0) {
      take_slot_locked(d, (unsigned)id);
      d->shared = shared;
      d->spawn_pending = ER_PENDING_SPAWN | (shared ? ER_PENDING_WRITER : 0);
      d->last_writer = 0;
      if (er_iload_rlx(&er_st.live)) {
        er_domain_bind_file(d);
        er_domain_publish(d, 1);
      }
      if ((unsigned)id + 1 > er_st.slots_hw) er_st.slots_hw = (unsigned)id + 1;
    }
    hold_slot(d);
  }
  unlock_for_slot();
  return r;
}

int eventring_domain_bind(int id) { return enter_slot(id, SLOT_ALONE); }

int eventring_domain_join(int id) { return enter_slot(id, SLOT_SHARED); }

void eventring_domain_release(void) {
  if (!er_tls_self) return;
  lock_for_slot();
  leave_slot_locked();
  unlock_for_slot();
}

int eventring_domain_id(void) { return er_tls_self ? er_tls_self->id : -1; }

void eventring_domain_name(const char *name) {
  if (!er_tls_self) return;
  lock_for_slot();
  struct er_domain *d = er_tls_self;
  if (name) {
    set_name(d, name);
    d->named = 1;
  } else {
    own_thread(d);
  }
  er_domain_publish(d, 0);
  unlock_for_slot();
}
