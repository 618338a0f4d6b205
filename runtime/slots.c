/* slots.c -- the public slot API: eventring_domain_bind(), _join(),
 * _release(), _name(), and giving a slot back at a thread's exit.
 *
 * A slot is taken on a thread's first event (domain.c) or here; the last
 * thread to leave a slot writes domain_terminate, a probe like any other
 * (it honours a pause), so this file sits above the probes' entry points.
 */
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "writer.h"

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


/* Takes the calling thread out of its slot, under the lock; the last
 * thread to leave a slot writes domain_terminate and frees it. */
static void leave_slot_locked(void) {
  struct er_domain *d = er_tls_self;
  if (!d) return;
  if (d->retired) {
    er_slot_leave_retired_locked(d);
    er_slot_set_exit_key(NULL);
    return;
  }
  if (d->threads == 1) {
    /* The holder leaves: the file keeps the name it has now (it may have
     * renamed itself since it took the slot), read here, off the probes'
     * path, unless the program named the slot itself. */
    if (!d->named && d->tid == (pid_t)syscall(SYS_gettid)) {
      er_slot_own_thread(d);
      er_domain_publish(d, ER_HOLDER_RENAMED);
    }
    /* No file made in a forked child: its ring holds nothing to end. */
    if (!er_fork_pending())
      eventring_lifecycle(EVENTRING_LIFECYCLE_DOMAIN_TERMINATE, getpid());
  }
  if (--d->threads == 0) er_slot_release_locked(d);
  er_tls_self = NULL;
  er_slot_set_exit_key(NULL);
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
      er_slot_take_locked(d, (unsigned)id);
      d->shared = shared;
      d->spawn_pending = ER_PENDING_SPAWN | (shared ? ER_PENDING_WRITER : 0);
      d->last_writer = 0;
      if (er_iload_rlx(&er_st.live)) {
        er_domain_bind(d);
        er_domain_publish(d, ER_HOLDER_TAKEN);
      }
      if ((unsigned)id + 1 > er_st.slots_hw) er_st.slots_hw = (unsigned)id + 1;
    }
    er_slot_hold(d);
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
    er_slot_set_name(d, name);
    d->named = 1;
  } else {
    er_slot_own_thread(d);
  }
  er_domain_publish(d, ER_HOLDER_RENAMED);
  unlock_for_slot();
}

void er_on_thread_exit(void *p) {
  /* Runs at thread exit, while the thread's TLS is still there. */
  if (p && er_tls_self == p) eventring_domain_release();
}
