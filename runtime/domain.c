/* domain.c -- domain slots, entering and leaving probes, stopping the world.
 *
 * Every thread that emits an event owns a domain slot and writes only into
 * that slot's ring.  A slot is taken on the thread's first event (lowest
 * free index), or explicitly with eventring_domain_bind(), and given back
 * when the thread exits.  With every slot taken, a thread's events are
 * dropped and counted in the extension block, never written into a ring
 * another thread owns.
 *
 * Stopping the world.  The mapping must never go away under a probe that
 * is writing into it, yet a probe must not pay for an atomic
 * read-modify-write or a fence.  Each domain has an `in_probe` word that
 * only its owner stores:
 *
 *   probe (owner)                     stop (holder of the control lock)
 *   in_probe = 1        (plain)       live = 0            (plain)
 *   compiler barrier                  membarrier(2)
 *   if (live) write the event         wait for in_probe == 0, per domain
 *   in_probe = 0        (release)     unmap
 *
 * Without a fence on the probe side the CPU may let the probe's load of
 * `live` pass its store of `in_probe`, and the stopper could read a stale
 * 0.  membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) makes every running
 * thread of the process execute a full barrier before it returns: for
 * each probe, either that barrier comes after its store of in_probe (and
 * the stopper, which reads in_probe after membarrier returns, sees 1 and
 * waits), or before it (and the probe's later load of live sees 0 and it
 * writes nothing).  A thread that is not running has been through a
 * context switch, which is a full barrier too.  The probe's release store
 * of 0 pairs with the stopper's acquire load, so the stopper sees every
 * word the probe wrote before it unmaps or reuses anything.
 *
 * Where membarrier is missing, probes execute a full fence after their
 * store instead (er_need_fence), which gives the same argument.
 *
 * Starting needs no barrier: a probe reads nothing of the mapping before
 * its acquire load of `live` returns 1, which pairs with the release store
 * that publishes a fully built file.
 *
 * Signal handlers: a probe in a handler that interrupted a probe of the
 * same thread would be a second writer in the ring; it sees its own
 * in_probe already set, drops the event and counts it (DROPPED word).
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "writer.h"

struct er_domain er_domains[ER_DOMAINS_LIMIT];
int er_need_fence;

/* initial-exec: one load from the thread pointer, no call to
 * __tls_get_addr, even in the shared library. */
__thread struct er_domain *er_tls_self
    __attribute__((tls_model("initial-exec")));
#define self er_tls_self
/* The free_epoch at which this thread last found every slot taken. */
static __thread uint64_t noslot_epoch
    __attribute__((tls_model("initial-exec")));
static pthread_key_t exit_key;
static int barrier_cmd;

static void on_thread_exit(void *p) {
  /* Runs at thread exit, while the thread's TLS is still there. */
  if (p && self == p) eventring_domain_release();
}

void er_domains_init(void) {
  for (int i = 0; i < ER_DOMAINS_LIMIT; i++) er_domains[i].id = i;
  pthread_key_create(&exit_key, on_thread_exit);
  er_store_rlx(&er_st.free_epoch, 1);
}

void er_barrier_init(void) {
  long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  int cmd = 0;
  if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
      syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0,
              0) == 0)
    cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED;
  else if (cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL))
    cmd = MEMBARRIER_CMD_GLOBAL;
  barrier_cmd = cmd;
  /* Read by probes before they load `live`; stored before the release
   * store of `live` that lets them in. */
  er_istore_rlx(&er_need_fence, cmd == 0);
}

/* Events from a thread with no slot: counted in the extension block.
 * slotless_in plays the role of in_probe for all such threads; its
 * read-modify-write is a full barrier, and this path is not the fast one. */
static void slotless_drop(void) {
  er_fetch_add(&er_st.slotless_in, 1);
  if (er_iload_acq(&er_st.live)) er_fetch_add(&er_st.ext[ER_EXT_DROPPED], 1);
  er_fetch_add(&er_st.slotless_in, (uint64_t)-1);
}

struct er_domain *er_attach_locked(int spawn_event) {
  if (self) return self;
  for (unsigned i = 0; i < er_st.max_domains; i++) {
    struct er_domain *d = &er_domains[i];
    if (d->owned || d->retired) continue;
    d->owned = 1;
    d->shared = 0;
    er_domain_bind_file(d);
    d->spawn_pending = spawn_event;
    if (i + 1 > er_st.slots_hw) er_st.slots_hw = i + 1;
    self = d;
    pthread_setspecific(exit_key, d);
    return d;
  }
  return NULL;
}

static void release_slot_locked(struct er_domain *d) {
  d->owned = 0;
  d->spawn_pending = 0;
  er_store_rlx(&er_st.free_epoch, er_load_rlx(&er_st.free_epoch) + 1);
}

static struct er_domain *attach_from_probe(void) {
  if (noslot_epoch == er_load_rlx(&er_st.free_epoch)) {
    slotless_drop();
    return NULL;
  }
  struct er_domain *d = NULL;
  int live;
  pthread_mutex_lock(&er_st.lock);
  live = er_iload_rlx(&er_st.live);
  if (live) {
    d = er_attach_locked(1);
    if (!d) noslot_epoch = er_load_rlx(&er_st.free_epoch);
  }
  pthread_mutex_unlock(&er_st.lock);
  if (!d && live) slotless_drop();
  return d;
}

void er_nested_drop(struct er_domain *d) {
  /* The interrupted probe holds in_probe, so the mapping cannot go away
   * while we are here once we have seen `live`. */
  d->dropped++;
  if (er_iload_acq(&er_st.live) && d->hdr)
    er_store_rlx(&d->hdr[ER_RING_DROPPED], d->dropped);
}

struct er_domain *er_enter_slow(int force) {
  /* A forced write comes from a control operation, which holds the lock
   * already. */
  struct er_domain *d = force ? er_attach_locked(1) : attach_from_probe();
  if (!d) {
    if (force) slotless_drop();
    return NULL;
  }
  return er_enter_domain(d, force);
}

void er_write_spawn(struct er_domain *d) {
  d->spawn_pending = 0;
  uint64_t *ev = er_reserve(d, 3);
  if (!ev) return; /* a 2-word ring: counted in DROPPED */
  er_store_rlx(&ev[0], ER_HDR(3, 0, ER_EV_LIFECYCLE,
                              EVENTRING_LIFECYCLE_DOMAIN_SPAWN));
  er_store_rlx(&ev[1], er_stamp(d));
  er_store_rlx(&ev[2], (uint64_t)er_st.pid);
  er_commit(d, 3);
}

static uint64_t now_ms(void) { return er_clock_monotonic() / 1000000u; }

int er_stop_world(void) {
  /* `live` was cleared by the caller.  Make that store visible to every
   * thread and theirs of in_probe to us (see the comment at the top). */
  if (barrier_cmd == 0 || syscall(__NR_membarrier, barrier_cmd, 0, 0) != 0)
    er_istore_rlx(&er_need_fence, 1);
  er_fence();
  /* A probe is a few hundred nanoseconds; a thread still inside one after
   * two seconds is stopped or stuck in a signal handler.  We will not hang
   * the host for it: its slot is retired and the mapping left in place. */
  uint64_t deadline = now_ms() + 2000;
  int stuck = 0;
  for (unsigned i = 0; i < er_st.slots_hw; i++) {
    struct er_domain *d = &er_domains[i];
    while (er_iload_acq(&d->in_probe)) {
      if (now_ms() > deadline) {
        d->retired = 1;
        stuck = 1;
        break;
      }
      sched_yield();
    }
  }
  while (er_load_acq(&er_st.slotless_in)) {
    if (now_ms() > deadline) {
      stuck = 1;
      break;
    }
    sched_yield();
  }
  return stuck ? -1 : 0;
}

void er_domains_after_fork(void) {
  /* Only the forking thread exists in the child: every other slot is free
   * and no probe is running. */
  for (unsigned i = 0; i < er_st.slots_hw; i++) {
    struct er_domain *d = &er_domains[i];
    if (d == self) {
      d->owned = 1;
      continue;
    }
    d->owned = 0;
    d->retired = 0;
    er_istore_rlx(&d->in_probe, 0);
  }
  er_store_rlx(&er_st.slotless_in, 0);
  er_store_rlx(&er_st.free_epoch, er_load_rlx(&er_st.free_epoch) + 1);
}

/* ------------------------------------------------------------------ */
/* Public domain API.                                                   */

/* Takes the calling thread out of its slot, under the lock; the last
 * thread to leave a slot writes domain_terminate and frees it. */
static void leave_slot_locked(void) {
  struct er_domain *d = self;
  if (!d) return;
  if (d->owned == 1)
    eventring_lifecycle(EVENTRING_LIFECYCLE_DOMAIN_TERMINATE, getpid());
  if (--d->owned == 0) release_slot_locked(d);
  self = NULL;
  pthread_setspecific(exit_key, NULL);
}

/* Puts the calling thread in slot `id`: alone (bind) or beside the
 * threads already joined to it (join). */
static int enter_slot(int id, int shared) {
  pthread_mutex_lock(&er_st.lock);
  unsigned limit = er_iload_rlx(&er_st.live) ? er_st.max_domains
                                             : ER_DOMAINS_LIMIT;
  int r = 0;
  struct er_domain *d = id >= 0 && (unsigned)id < limit ? &er_domains[id] : NULL;
  if (!d) {
    r = EVENTRING_E_INVAL;
  } else if (self == d) {
    /* The sole holder of a slot may open it to joiners (the thread that
     * started tracing holds slot 0 alone until the host's other threads
     * join it); a joined slot never turns exclusive again. */
    if (shared && !d->shared && d->owned == 1) d->shared = 1;
    r = d->shared == shared ? 0 : EVENTRING_E_BUSY;
  } else if (d->retired || (d->owned && !(shared && d->shared))) {
    r = EVENTRING_E_BUSY;
  } else {
    leave_slot_locked();
    if (d->owned++ == 0) {
      d->shared = shared;
      d->spawn_pending = 1;
      if (er_iload_rlx(&er_st.live)) er_domain_bind_file(d);
      if ((unsigned)id + 1 > er_st.slots_hw) er_st.slots_hw = (unsigned)id + 1;
    }
    self = d;
    pthread_setspecific(exit_key, d);
  }
  pthread_mutex_unlock(&er_st.lock);
  return r;
}

int eventring_domain_bind(int id) { return enter_slot(id, 0); }

int eventring_domain_join(int id) { return enter_slot(id, 1); }

void eventring_domain_release(void) {
  if (!self) return;
  pthread_mutex_lock(&er_st.lock);
  leave_slot_locked();
  pthread_mutex_unlock(&er_st.lock);
}

int eventring_domain_id(void) { return self ? self->id : -1; }
