/* control.c -- starting, pausing, resuming and stopping tracing.
 *
 * Every control operation holds er_st.lock, so they are serialised with
 * each other, with slot changes and with fork (fork.c takes it in its
 * prepare handler).  Probes never take it except on a thread's first
 * event.  Opening and closing the world -- when a file may be written
 * into and when it may go -- is stw.c's; what is decided here is the
 * order of the lifecycle events: ring_start first in the starter's ring,
 * ring_pause last before a gap and ring_resume first after it, ring_stop
 * last.
 */
#include <stdlib.h>

#include "remote.h"
#include "writer.h"

/* The flag the inlined probes test (eventring.h): 0, or ER_ON_OPEN with
 * ER_ON_FENCE where probes must fence (stw.h, THE FLAG WORD).  Stored
 * only under the lock, by stw.c's functions and here (0, pausing);
 * loaded by the inlined test with no ordering, because it only decides
 * whether to go and look, and inside the probe with acquire order. */
int eventring__on;

/* The slot of the thread that started tracing, whose ring begins with
 * ring_start; -1 when it had none.  Under the lock. */
static int starter_slot = -1;
/* 1 while the process records only because readers hold leases
 * (remote.h): the last lease to go pauses it again.  Under the lock. */
static int resumed_for_readers;

int er_start_locked(const char *dir) {
  if (er_iload_rlx(&er_st.live)) return 0;
  struct er_params params;
  er_params_read(&params);
  er_stw_init();
  er_clock_init();
  int r = er_file_create(dir, &params);
  if (r) return r;
  er_st.preserve = params.preserve;

  er_users_write_names();
  /* Threads that kept their slot from an earlier file get a ring in this
   * one, before the world opens. */
  for (unsigned i = 0; i < er_st.slots_hw; i++) {
    struct er_domain *d = &er_domains[i];
    if (d->threads && !d->retired) er_domain_bind_file(d);
  }
  er_stw_open();
  /* The starter's ring begins with ring_start, as OCaml's domain 0 does,
   * even when the thread took its slot before. */
  struct er_domain *d = er_attach_locked();
  if (d) {
    d->spawn_pending &= ~ER_PENDING_SPAWN;
    er_domain_publish(d, 1); /* its events begin the ring */
  }
  starter_slot = d ? d->id : -1;
  resumed_for_readers = 0;
  er_emit_lifecycle(EVENTRING_LIFECYCLE_RING_START, (uint64_t)er_st.pid);
  /* Started armed but paused (OCAML_RUNTIME_EVENTS_START=paused, or a
   * forked child of a paused parent): say so in the ring. */
  if (er_st.paused)
    er_emit_lifecycle(EVENTRING_LIFECYCLE_RING_PAUSE, 0);
  else
    er_stw_let_probes_in();
  er_store_rel(&er_st.ext[ER_EXT_PAUSED], er_st.paused);
  return 0;
}

/* Starts tracing and the thread that serves control from outside; in a
 * forked child whose file is pending, makes that file.  Not for a first
 * event, which may run in a signal handler: no thread may be created
 * there, so a traced child has no remote control until it calls
 * eventring_start() or starts tracing anew. */
static int start_with_watcher_locked(void) {
  int was_live = er_iload_rlx(&er_st.live);
  int r = er_fork_pending() ? er_fork_file_locked() : er_start_locked(NULL);
  if (r == 0 && !was_live) {
    er_remote_start(er_st.ext);
    /* Files of processes that ended without a teardown (_exit, a
     * signal) go now; not from a fork handler, where a child must start
     * cheaply. */
    er_leftovers_reap(er_st.path, ER_REAP_DEAD);
  }
  return r;
}

int er_stop_locked(void) {
  if (!er_iload_rlx(&er_st.live)) {
    /* A forked child whose file is not made has nothing to close. */
    if (!er_fork_cancel_locked()) return EVENTRING_E_NOTSTARTED;
    er_st.paused = 0;
    return 0;
  }
  /* The watcher reads this file's extension block: it goes first, under
   * the lock, so that no stop and start in another thread can give it a
   * file that we then unmap under it (remote_watcher.c). */
  er_remote_stop();
  /* The file keeps the names the threads have at its end. */
  er_domains_rename_locked();
  er_emit_lifecycle(EVENTRING_LIFECYCLE_RING_STOP, 0);
  unsigned drop = er_st.preserve ? 0 : ER_FILE_UNLINK;
  enum er_world world = er_stw_close();
  if (world == ER_WORLD_STOPPED)
    drop |= ER_FILE_UNMAP;
  else if (world == ER_WORLD_STUCK)
    er_warn("a thread stayed inside a probe; leaving %s mapped", er_st.path);
  else
    er_warn("membarrier(2) failed: a probe may still be inside; leaving %s "
            "mapped", er_st.path);
  er_file_drop(drop);
  /* Not preserved: the files of this process's earlier images that this
   * start kept go with its own. */
  if ((drop & ER_FILE_UNLINK) && er_st.kept_aside)
    er_leftovers_reap(er_st.path, ER_REAP_OWN_IMAGES);
  er_st.paused = 0;
  resumed_for_readers = 0;
  return 0;
}

int eventring_start(void) {
#ifdef EVENTRING_DISABLED
  return EVENTRING_E_DISABLED;
#else
  er_lock();
  int r = start_with_watcher_locked();
  er_unlock();
  return r;
#endif
}

int eventring_stop(void) {
  ER_REMOTE_POINT(ER_POINT_STOP_ENTERED);
  er_lock();
  int r = er_stop_locked();
  er_unlock();
  return r;
}

/* Who records a pause or a resume: the thread that asked, in its own
 * ring, or the watcher, which must not take a slot a user thread needs
 * (on_behalf()). */
enum recorder { BY_CALLER, BY_WATCHER };

/* Writes lifecycle `kind` on behalf of the watcher: in the starter's
 * ring, or else the lowest held slot's, with every probe held off
 * (stw.h, HOLDING PROBES OFF) so that the owner is not writing there at
 * the same time.  Leaves `on` at 0.  With no ring to write into, the
 * event is counted as dropped. */
static void on_behalf(int kind) {
  /* Stuck or not, the slots we may write are held off: a stuck one is
   * retired, and skipped below. */
  enum er_world world = er_stw_hold_probes();
  struct er_domain *d = NULL;
  /* Unless the stop was proven (a failed membarrier proves nothing: a
   * probe may be inside unseen), no ring may be written. */
  if (world != ER_WORLD_STOPPED && world != ER_WORLD_STUCK) {
    er_drop(&er_st.ext[ER_EXT_DROPPED]);
    return;
  }
  for (int i = -1; i < (int)er_st.slots_hw && !d; i++) {
    int id = i < 0 ? starter_slot : i;
    if (id < 0) continue;
    struct er_domain *c = &er_domains[id];
    if (c->ring && c->file_gen == er_st.file_gen && !c->retired &&
        (i < 0 || c->threads))
      d = c;
  }
  /* A 2-word ring cannot hold the 3-word event (nor its domain_spawn);
   * the ring's own DROPPED word is its owner's, so the extension block
   * counts it. */
  if (!d || d->mask + 1 < 3) {
    er_drop(&er_st.ext[ER_EXT_DROPPED]);
    return;
  }
  if (d->spawn_pending & ER_PENDING_SPAWN) er_write_spawn(d);
  uint64_t *ev = er_reserve(d, 3);
  er_store_rlx(&ev[0], ER_HDR(3, ER_FROM_RUNTIME, ER_EV_LIFECYCLE, kind));
  er_store_rlx(&ev[1], er_stamp(d));
  er_store_rlx(&ev[2], 0);
  er_commit(d, 3);
}

static void pause_locked(enum recorder by) {
  resumed_for_readers = 0;
  if (er_st.paused) return;
  if (er_fork_pending()) {
    /* No file to record it in: the probes stop coming to make one. */
    er_st.paused = 1;
    er_istore_rlx(&eventring__on, 0);
    return;
  }
  if (!er_iload_rlx(&er_st.live)) return;
  er_st.paused = 1;
  if (by == BY_WATCHER) {
    on_behalf(EVENTRING_LIFECYCLE_RING_PAUSE);
  } else {
    er_istore_rlx(&eventring__on, 0);
    er_emit_lifecycle(EVENTRING_LIFECYCLE_RING_PAUSE, 0);
  }
  er_store_rel(&er_st.ext[ER_EXT_PAUSED], 1);
}

static void resume_locked(enum recorder by) {
  resumed_for_readers = 0;
  if (!er_st.paused) return;
  if (er_fork_pending()) {
    er_st.paused = 0;
    er_istore_rlx(&eventring__on, ER_ON_PENDING);
    return;
  }
  if (!er_iload_rlx(&er_st.live)) return;
  er_st.paused = 0;
  if (by == BY_WATCHER)
    on_behalf(EVENTRING_LIFECYCLE_RING_RESUME);
  else
    er_emit_lifecycle(EVENTRING_LIFECYCLE_RING_RESUME, 0);
  /* Lets probes in, with a release that makes the rings as on_behalf()
   * left them visible to them (stw.h). */
  er_stw_let_probes_in();
  er_store_rel(&er_st.ext[ER_EXT_PAUSED], 0);
}

void er_remote_pause_locked(void) { pause_locked(BY_WATCHER); }

void er_remote_resume_locked(void) { resume_locked(BY_WATCHER); }

void er_readers_hold_locked(int held) {
  if (held && er_st.paused) {
    resume_locked(BY_WATCHER);
    resumed_for_readers = 1;
  } else if (!held && resumed_for_readers) {
    pause_locked(BY_WATCHER);
  }
}

void eventring_pause(void) {
  er_lock();
  pause_locked(BY_CALLER);
  er_unlock();
}

void eventring_resume(void) {
  er_lock();
  resume_locked(BY_CALLER);
  er_unlock();
}

int eventring_is_active(void) { return er_iload_rlx(&eventring__on) != 0; }

const char *eventring_path(void) {
  /* A forked child's pending file is made for whoever asks for it, but
   * for a signal handler that interrupted its own thread inside the
   * library's lock (making that very file, say): it cannot take the lock,
   * so it gets NULL and the interrupted thread makes the file. */
  if (er_fork_pending() && !er_tls_locking) {
    er_lock();
    er_fork_file_locked();
    er_unlock();
  }
  return er_iload_acq(&er_st.live) ? er_st.path : NULL;
}
