/* lifecycle.c -- a trace's life under er_st.lock: starting a file,
 * pausing, resuming, ending.
 *
 * Every function here runs under er_st.lock, so they are serialised with
 * each other, with slot changes and with fork (fork.c takes the lock in
 * its prepare handler).  Opening and closing the world -- when a file may
 * be written into and when it may go -- is stw.c's; what is decided here
 * is the order of the lifecycle events: ring_start first in the
 * starter's ring, ring_pause last before a gap and ring_resume first
 * after it, ring_stop last.  The public entry points, which also start
 * and stop the remote-control watcher and see to a forked child's
 * pending file, are control.c's.
 */
#include <stdlib.h>

#include "remote.h"
#include "writer.h"

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
    if (d->threads && !d->retired) er_domain_bind(d);
  }
  er_stw_open();
  /* The starter's ring begins with ring_start, as OCaml's domain 0 does,
   * even when the thread took its slot before. */
  struct er_domain *d = er_attach_locked();
  if (d) {
    d->spawn_pending &= ~ER_PENDING_SPAWN;
    er_domain_publish(d, ER_HOLDER_TAKEN); /* its events begin the ring */
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

void er_end_locked(void) {
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
}

/* Writes lifecycle `kind` on behalf of the watcher: in the starter's
 * ring, or else the lowest held slot's, with every probe held off
 * (stw.h, holding probes off) so that the owner is not writing there at
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
  uint64_t data = 0;
  er_write(d, ER_FROM_RUNTIME, ER_EV_LIFECYCLE, (unsigned)kind, &data, 1);
}

void er_pause_locked(enum er_recorder by) {
  resumed_for_readers = 0;
  if (er_st.paused || !er_iload_rlx(&er_st.live)) return;
  er_st.paused = 1;
  if (by == ER_BY_WATCHER) {
    on_behalf(EVENTRING_LIFECYCLE_RING_PAUSE);
  } else {
    er_stw_turn_probes_away();
    er_emit_lifecycle(EVENTRING_LIFECYCLE_RING_PAUSE, 0);
  }
  er_store_rel(&er_st.ext[ER_EXT_PAUSED], 1);
}

void er_resume_locked(enum er_recorder by) {
  resumed_for_readers = 0;
  if (!er_st.paused || !er_iload_rlx(&er_st.live)) return;
  er_st.paused = 0;
  if (by == ER_BY_WATCHER)
    on_behalf(EVENTRING_LIFECYCLE_RING_RESUME);
  else
    er_emit_lifecycle(EVENTRING_LIFECYCLE_RING_RESUME, 0);
  /* Lets probes in, with a release that makes the rings as on_behalf()
   * left them visible to them (stw.h). */
  er_stw_let_probes_in();
  er_store_rel(&er_st.ext[ER_EXT_PAUSED], 0);
}

void er_remote_pause_locked(void) { er_pause_locked(ER_BY_WATCHER); }

void er_remote_resume_locked(void) { er_resume_locked(ER_BY_WATCHER); }

void er_readers_came_locked(void) {
  if (!er_st.paused) return;
  er_resume_locked(ER_BY_WATCHER);
  resumed_for_readers = 1;
}

void er_readers_left_locked(void) {
  if (resumed_for_readers) er_pause_locked(ER_BY_WATCHER);
}
