/* read.c -- reading a source: polling its cursor to the end, or
 * following the writer, with the accounting of what was lost.
 *
 * Reading ends in one of these ways:
 *   - by default when a poll finds nothing new: a snapshot of the file;
 *   - with --follow, and always for a spawned command, when the writer
 *     is gone.  We learn its pid from --pid, from the spawn, or from a
 *     file name of the form <pid>.events, and poll every POLL_IDLE_NS
 *     while it lives.  A process that has exited but not yet been reaped
 *     by its parent (a zombie) still answers kill(pid, 0), so
 *     /proc/<pid>/stat is asked as well; our own child is asked with
 *     waitpid().  Once it is gone, a last round of polls drains what it
 *     wrote before exiting.  A file whose name gives no pid is followed
 *     until ring_stop has been read (the subcommand's lifecycle callback
 *     reports it through tool_source_lifecycle()).  The pid could in
 *     principle have been reused by a new process by the time we ask; the
 *     cost is that we keep waiting, never that we stop early, and ring
 *     files are short-lived enough that it does not arise in practice.
 *   - on SIGINT, SIGTERM or SIGHUP.  The handler only records the signal
 *     (and passes it on to a spawned command); the loop notices it
 *     between polls, so the subcommand always gets whole events and
 *     finishes its output.  Without a spawned command reading stops at
 *     once.  A spawned command gets the signal and is read until it ends,
 *     so that its last events are not lost; one that outlives the signal
 *     by KILL_GRACE_NS (or a second signal) is killed.
 *
 * Lost events are not the source's to print: the subcommand's lost_events
 * callback reports them through tool_source_lost(), which counts them per
 * domain, and the subcommand prints tool_source_lost_summary() once at
 * the end.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "input/input.h"

/* How long --follow sleeps when a poll found nothing: short enough that
 * a live listing keeps up and that a default-sized ring (64 Ki words per
 * domain) cannot fill up in between at the rates our demo programs and a
 * GC-heavy OCaml program write, long enough to cost nothing measurable. */
#define POLL_IDLE_NS 10000000L

/* How long a spawned command may outlive the signal that interrupted
 * the tool before it is killed. */
#define KILL_GRACE_NS 3000000000ULL

struct tool_source *tool_source_current;

void tool_source_lifecycle(struct tool_source *src, int kind) {
  if (kind != EVENTRING_LIFECYCLE_RING_STOP) return;
  src->saw_ring_stop = 1;
  if (src->multi && src->proc < src->nprocs)
    src->procs[src->proc]->saw_ring_stop = 1;
}

void tool_source_lost(struct tool_source *src, int domain, uint64_t count) {
  /* With several processes, src->lost per domain would add up domains of
   * different processes: only the total is kept there. */
  if (src->multi) {
    src->lost_total = tool_add_sat(src->lost_total, count);
    tool_procs_lost(src, domain, count);
    return;
  }
  tool_count_lost(src->cursor, &src->lost_total, &src->lost, &src->lost_n,
                  domain, count);
}

int tool_source_on_lost(void *data, int domain, uint64_t count) {
  (void)data;
  if (tool_source_current)
    tool_source_lost(tool_source_current, domain, count);
  return 1;
}

void tool_source_window(struct tool_source *src, int domain,
                        uint64_t before) {
  (void)domain;
  src->before_total = tool_add_sat(src->before_total, before);
  if (src->multi && src->proc < src->nprocs) {
    struct tool_proc *p = src->procs[src->proc];
    p->before_total = tool_add_sat(p->before_total, before);
  }
}

int tool_source_on_window(void *data, int domain, uint64_t before) {
  (void)data;
  if (tool_source_current)
    tool_source_window(tool_source_current, domain, before);
  return 1;
}

uint64_t tool_source_lost_summary(const struct tool_source *src, FILE *out) {
  if (src->multi) {
    tool_procs_lost_summary(src, out);
  } else {
    tool_window_line(out, src->cursor, src->path, "", src->before_total);
    tool_lost_lines(out, src->cursor, src->path, "", src->lost_total,
                    src->lost, src->lost_n);
  }
  return src->lost_total;
}

/* Whether the writer is done, so that what is left is all there will be.
 * A live process with the writer's pid is not enough: the pid may have
 * been reused since (a copy of a dead process's file), or the process
 * may have stopped tracing; either way it no longer maps the file. */
static int writer_done(struct tool_source *src) {
  if (src->cmd) return tool_spawn_done(src);
  if (!src->pid) return src->saw_ring_stop;
  return tool_writer_gone(&src->w, src->pid);
}

int tool_source_read_raw(struct tool_source *src,
                         const eventring_callbacks *cb, void *data) {
  if (src->multi) {
    tool_source_current = src;
    return tool_procs_read(src, cb, data);
  }
  int following = src->follow || src->cmd;
  int draining = 0, killed = 0;
  uint64_t kill_at = 0;
  tool_source_current = src;
  for (;;) {
    int r = eventring_cursor_poll(src->cursor, cb, data, 0);
    if (r > 0) src->events_read += (uint64_t)r;
    if (src->between_polls) src->between_polls(src, data);
    tool_progress_tick(src);
    if (!tool_output_ok()) break; /* the caller reports it */
    if (r < 0) {
      /* The events read so far come first, then the reason we stopped:
       * a file cut short says by how much. */
      tool_poll_error(src->path, r);
      return TOOL_EXIT_INPUT;
    }
    int sig = tool_signal_pending();
    if (sig && !src->interrupted) {
      src->interrupted = sig;
      kill_at = tool_now_ns() + KILL_GRACE_NS;
    }
    /* Interrupted, a file or another's process is left at once; our own
     * command is read until it has ended (below). */
    if (src->interrupted && !src->cmd) break;
    if (r > 0) continue;
    if (!following || draining) break;
    if (writer_done(src)) {
      src->end_ns = tool_now_ns();
      draining = 1; /* one more pass reads what it wrote last */
      continue;
    }
    if (src->interrupted && !killed &&
        (tool_signal_count() > 1 || tool_now_ns() >= kill_at)) {
      tool_spawn_kill(src);
      killed = 1;
    }
    /* Show what we have before waiting for more. */
    if (fflush(stdout) != 0 && !tool_output_ok()) break;
    /* A signal cuts the sleep short (the handlers are installed without
     * SA_RESTART), which is what we want: the loop looks at it at once. */
    struct timespec ts = {0, POLL_IDLE_NS};
    nanosleep(&ts, NULL);
  }
  tool_progress_end();
  if (src->events_read) tool_warn_numbering(src->cursor, src->path);
  return TOOL_EXIT_OK;
}

