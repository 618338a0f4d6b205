/* stw.c -- the stopping side of the stop-the-world protocol.
 *
 * The protocol, its invariant and the proof are stated once, in stw.h,
 * beside the probe side it pairs with.  This file chooses the barrier,
 * opens and closes the world, waits for probes to leave, and counts the
 * events of probes that may not write (nested in a signal handler, or
 * from a thread without a slot).  Everything here but the drops runs
 * under er_st.lock.
 */
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stw.h"
#include "writer.h"

/* The flag the inlined probes test (eventring.h; stw.h, THE FLAG WORD).
 * Stored only here, under the lock; loaded by the inlined test with no
 * ordering, because it only decides whether to go and look, and inside
 * the probe with acquire order.  In .data, whose pages a process has in
 * memory from its start (the loader clears the one beside bss, the
 * constructors write the exit key): an untraced probe reads it, and must
 * not bring a page of bss in (testsuite/install-check.sh). */
int eventring__on __attribute__((section(".data")));

int er_need_fence;
#ifdef ER_TEST_HOOKS
int (*er_test_hook)(enum er_hook);
#endif
/* The membarrier command stopping issues, or 0 when there is none. */
static int barrier_cmd;

void er_stw_init(void) {
  long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  int cmd = 0;
  if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
      syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0,
              0) == 0)
    cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED;
  else if (cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL))
    cmd = MEMBARRIER_CMD_GLOBAL;
  barrier_cmd = cmd;
  /* Read by control operations' writes and slotless threads before they
   * load `live`, and copied into eventring__on by er_stw_let_probes_in();
   * stored before the release stores of `live` and of eventring__on that
   * let any of them in. */
  er_istore_rlx(&er_need_fence, cmd == 0);
}

/* The counters that play in_probe's part for threads without a slot
 * (stw.h, THREADS WITHOUT A SLOT).  `gate` indexes the current one; one
 * in which a thread stayed stuck is abandoned to it, with the mapping its
 * `ext` points into, and the next one is used from then on.  The last
 * one is never abandoned: past it, stops wait for stuck threads again. */
#define GATES 8
static struct gate {
  uint64_t in;  /* threads inside (atomic) */
  uint64_t *ext; /* the extension block they count into */
} gates[GATES];
static int gate; /* atomic; changed under the lock, world closed */

void er_stw_open(void) {
  gates[gate].ext = er_st.ext;
  /* Pairs with the probes' acquire load of `live`: they see the file and
   * the gate's `ext` complete. */
  er_istore_rel(&er_st.live, 1);
}

void er_stw_let_probes_in(void) {
  int on = ER_ON_OPEN | (er_iload_rlx(&er_need_fence) ? ER_ON_FENCE : 0);
  /* Pairs with the probes' acquire load of eventring__on: they see the
   * file, and the rings as a holder of the lock left them (stw.h). */
  er_istore_rel(&eventring__on, on);
}

static uint64_t now_ms(void) { return er_clock_monotonic() / 1000000u; }

/* Waits for every probe to leave; returns ER_WORLD_STUCK when one stayed
 * past the deadline (its slot is then retired, or its gate abandoned),
 * ER_WORLD_UNPROVEN when the barrier failed. */
static enum er_world wait_for_probes(void) {
  /* Make the caller's stores of eventring__on and `live` visible to
   * every thread and theirs of in_probe to us (stw.h).  Where there is no
   * membarrier, probes have fenced themselves since the start; where it
   * fails now, a probe that loaded the flag without ER_ON_FENCE before
   * us may be inside unseen.  The flag is 0 now; it gets ER_ON_FENCE
   * when probes are let in again. */
  int proven = 1;
  if (barrier_cmd != 0 && (ER_HOOK(ER_HOOK_STOP_MEMBARRIER) ||
                           syscall(__NR_membarrier, barrier_cmd, 0, 0) != 0)) {
    er_istore_rlx(&er_need_fence, 1);
    proven = 0;
  }
  er_fence();
  /* A probe is a few hundred nanoseconds; a thread still inside one after
   * two seconds is stopped or stuck in a signal handler.  We will not hang
   * the host for it: its slot is retired and the mapping left in place. */
  uint64_t deadline = now_ms() + 2000;
  enum er_world world = ER_WORLD_STOPPED;
  for (unsigned i = 0; i < er_st.slots_hw; i++) {
    struct er_domain *d = &er_domains[i];
    if (d->retired) {
      /* Not waited for again (stw.h, A THREAD STUCK); but while it is
       * inside the probe it was stuck in, a mapping it was bound to
       * stays, so this one must if it is that one. */
      if (d->file_gen == er_st.file_gen && er_iload_acq(&d->in_probe))
        world = ER_WORLD_STUCK;
      continue;
    }
    while (er_iload_acq(&d->in_probe)) {
      if (now_ms() > deadline) {
        d->retired = 1;
        /* Sends the owner's next probe out of the slot (stw.h).  A
         * read-modify-write: the owner, inside, may be clearing its own
         * bits.  Its later probes see it after their acquire load of
         * eventring__on, which is 0 until a release store lets them in
         * again. */
        er_ifetch_or(&d->spawn_pending, ER_PENDING_RETIRED);
        world = ER_WORLD_STUCK;
        break;
      }
      sched_yield();
    }
  }
  struct gate *g = &gates[gate];
  while (er_load_acq(&g->in)) {
    if (now_ms() > deadline) {
      world = ER_WORLD_STUCK;
      /* The next gate counts into the same file until the world opens
       * again (er_stw_hold_probes() leaves it open).  The release store
       * pairs with the acquire load in er_slotless_drop(): a thread that
       * loads the new index counts itself, and into that `ext`, in the
       * new gate. */
      if (gate + 1 < GATES) {
        gates[gate + 1].ext = g->ext;
        er_istore_rel(&gate, gate + 1);
      }
      break;
    }
    sched_yield();
  }
  if (!proven && world == ER_WORLD_STOPPED) world = ER_WORLD_UNPROVEN;
  return world;
}

enum er_world er_stw_close(void) {
  /* `on` first: it is nonzero only while `live` is 1 (stw.h, THE FLAG
   * WORD). */
  er_istore_rlx(&eventring__on, 0);
  er_istore_rlx(&er_st.live, 0);
  return wait_for_probes();
}

enum er_world er_stw_hold_probes(void) {
  /* `live` stays: only the probes that honour a pause are held off, and
   * those that write while paused hold the lock we hold (stw.h). */
  er_istore_rlx(&eventring__on, 0);
  return wait_for_probes();
}

void er_stw_turn_probes_away(void) { er_istore_rlx(&eventring__on, 0); }

void er_stw_send_probes_to_pending(void) {
  /* Nothing of a mapping is read on the way to er_enter_pending(): no
   * ordering is needed. */
  er_istore_rlx(&eventring__on, ER_ON_PENDING);
}

void er_stw_close_forked(void) {
  er_istore_rlx(&eventring__on, 0);
  er_istore_rlx(&er_st.live, 0);
}

void er_stw_after_fork(void) {
  /* Only the forking thread exists in the child: the probes the others
   * were inside do not.  The forking thread's own word is left as it
   * was. */
  for (unsigned i = 0; i < er_st.slots_hw; i++) {
    struct er_domain *d = &er_domains[i];
    if (d != er_tls_self) er_istore_rlx(&d->in_probe, 0);
  }
  for (int i = 0; i < GATES; i++) er_store_rlx(&gates[i].in, 0);
  er_istore_rlx(&gate, 0);
  /* The parent's threads that were waiting for the lock do not exist
   * here either: what remains is the forking thread's own count, which
   * its fork handler gives back with the lock (atfork.c). */
  er_store_rlx(&er_st.control_busy, 1);
}

void er_nested_drop(struct er_domain *d) {
  /* A retired slot is not written, even to count (stw.h). */
  if (er_iload_rlx(&d->spawn_pending) & ER_PENDING_RETIRED) {
    er_slotless_drop();
    return;
  }
  /* The interrupted probe holds in_probe, so the mapping cannot go away
   * while we are here once we have seen `live`.  A domain without a ring
   * counts where its own probes do (stw.h). */
  if (!er_iload_acq(&er_st.live)) return;
  if (d->hdr) er_drop(&d->hdr[ER_RING_DROPPED]);
  else if (d->ext) er_drop(&d->ext[ER_EXT_DROPPED]);
}

void er_slotless_drop(void) {
  /* The gate's `in` is in_probe for every thread without a slot, and the
   * orders are in_probe's (stw.h, THREADS WITHOUT A SLOT): the increment
   * is relaxed in one build and full in the other, so neither is relied
   * on. */
  struct gate *g = &gates[er_iload_acq(&gate)];
  er_fetch_add(&g->in, 1);
  er_compiler_barrier();
  if (ER_UNLIKELY(er_iload_rlx(&er_need_fence))) er_fence();
  if (er_iload_acq(&er_st.live)) {
    (void)ER_HOOK(ER_HOOK_INSIDE_SLOTLESS);
    er_drop(&g->ext[ER_EXT_DROPPED]);
  }
  /* Pairs with the stopper's acquire load of `in`. */
  er_fetch_add_rel(&g->in, (uint64_t)-1);
}
