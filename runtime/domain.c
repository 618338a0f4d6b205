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

/* The free_epoch at which this thread last found every slot taken. */
static __thread uint64_t noslot_epoch
    __attribute__((tls_model("initial-exec")));
/* The key whose destructor gives a thread's slot back at its exit.  A
 * thread's first event may be made in a signal handler, where neither
 * pthread_once() nor an allocation is allowed, so it is made when the
 * library is loaded (init.c), before the host has made keys of
 * its own: glibc keeps the values of the first 32 keys in the thread
 * itself, so setting it stores and allocates nothing.  It holds no value,
 * and costs nothing, in a thread that takes no slot.  er_exit_key_made is 0
 * when the key could not be made: slots are then not given back at a
 * thread's exit.  init.c makes it, with slots.c's er_on_thread_exit() as
 * its destructor. */
pthread_key_t er_exit_key __attribute__((section(".data")));
int er_exit_key_made __attribute__((section(".data")));

/* Makes `name` (cut to fit, the rest zeros) the slot's name. */
void er_slot_set_name(struct er_domain *d, const char *name) {
  size_t n = strlen(name);
  if (n > sizeof d->name - 1) n = sizeof d->name - 1;
  memset(d->name, 0, sizeof d->name);
  memcpy(d->name, name, n);
}

/* Records the calling thread as the slot's holder: its thread id and
 * its name as the kernel has it (pthread_setname_np() sets that one), a
 * system call each, paid when a thread takes a slot. */
void er_slot_own_thread(struct er_domain *d) {
  char name[16] = "";
  d->tid = (pid_t)syscall(SYS_gettid);
  (void)prctl(PR_GET_NAME, name);
  name[sizeof name - 1] = '\0';
  er_slot_set_name(d, name);
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
    er_slot_set_name(d, name);
    er_domain_publish(d, ER_HOLDER_RENAMED);
  }
}

void er_domain_bind(struct er_domain *d) {
  if (er_domain_bind_file(d)) er_domain_publish(d, ER_HOLDER_TAKEN);
}

void er_domain_publish(struct er_domain *d, enum er_holder change) {
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
  if (change == ER_HOLDER_TAKEN)
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

/* Sets the calling thread's value of the exit key (async-signal-safe:
 * see er_exit_key). */
void er_slot_set_exit_key(struct er_domain *d) {
  if (er_exit_key_made) pthread_setspecific(er_exit_key, d);
}

/* Readies slot `d` (index `id`) for the calling thread.  Under
 * er_st.lock. */
void er_slot_take_locked(struct er_domain *d, unsigned id) {
  d->id = (int)id;
  er_slot_own_thread(d);
}

/* Marks the calling thread as the holder of `d` (its exit gives it
 * back). */
void er_slot_hold(struct er_domain *d) {
  er_tls_self = d;
  er_slot_set_exit_key(d);
}

/* Takes the calling thread out of its retired slot, under the lock.  The
 * slot gets nothing more, not even domain_terminate, and is never freed;
 * the thread-exit key keeps pointing at it, which er_on_thread_exit()
 * ignores, until the thread holds another. */
void er_slot_leave_retired_locked(struct er_domain *d) {
  d->threads--;
  er_tls_self = NULL;
}

struct er_domain *er_attach_locked(void) {
  struct er_domain *self = er_tls_self;
  if (self && !self->retired) return self;
  if (self) er_slot_leave_retired_locked(self);
  for (unsigned i = 0; i < er_st.max_domains; i++) {
    struct er_domain *d = &er_domains[i];
    if (d->threads || d->retired) continue;
    er_slot_take_locked(d, i);
    d->threads = 1;
    d->shared = 0;
    d->spawn_pending = ER_PENDING_SPAWN;
    er_domain_bind(d);
    er_domain_publish(d, ER_HOLDER_TAKEN);
    if (i + 1 > er_st.slots_hw) er_st.slots_hw = i + 1;
    er_slot_hold(d);
    return d;
  }
  return NULL;
}

void er_slot_release_locked(struct er_domain *d) {
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

struct er_domain *er_attach_from_probe(void) {
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

struct er_domain *er_enter_first_locked(void) {
  struct er_domain *d = er_attach_locked();
  if (!d) {
    er_slotless_drop();
    return NULL;
  }
  return er_enter_domain(d, ER_EVEN_PAUSED);
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
