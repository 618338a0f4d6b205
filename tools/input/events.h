/* events.h -- what the subcommands share in handling the events a cursor
 * delivers: one table to install their callbacks, the names of phases,
 * counters, lifecycle kinds and user events (with the fallback that
 * stands for a name the file does not give), and the unit of the lost
 * counts.
 *
 * Every subcommand shows an unnamed id the same way, as the kind's
 * fallback and the id (phase_12, counter_3, lifecycle_9, user_40), so
 * that the outputs of dump, ctf, trace, stats and metrics can be matched
 * against one another.
 */
#ifndef EVENTRING_TOOL_EVENTS_H
#define EVENTRING_TOOL_EVENTS_H

#include <stddef.h>
#include <stdio.h>

#include "tool.h"

/* A subcommand's callbacks, one field per kind of event, in the order of
 * eventring.h's setters (a table that handles every kind can list them
 * without names); a NULL field leaves that kind to the cursor's default
 * (skipped). */
struct tool_handlers {
  eventring_phase_fn runtime_begin;
  eventring_phase_fn runtime_end;
  eventring_counter_fn runtime_counter;
  eventring_alloc_fn alloc;
  eventring_lifecycle_fn lifecycle;
  eventring_user_unit_fn user_unit;
  eventring_user_int_fn user_int;
  eventring_user_span_fn user_span;
  eventring_user_custom_fn user_custom;
  eventring_lost_fn lost_events;
  eventring_thread_fn thread;
  /* NULL: the events before a ring's window go to lost_events, as
   * OCaml 5's consumer reports them. */
  eventring_window_fn window;
};

/* A callbacks object with the handlers of `h` installed; NULL when out of
 * memory.  Free it with eventring_callbacks_free(). */
eventring_callbacks *tool_callbacks_new(const struct tool_handlers *h);

/* The handlers that tool_callbacks_new() installed in `cb` (which the
 * filters of filter.c wrap), or NULL for a callbacks object it did not
 * make. */
const struct tool_handlers *tool_callbacks_handlers(
    const eventring_callbacks *cb);

enum tool_name_kind {
  TOOL_NAME_PHASE,
  TOOL_NAME_COUNTER,
  TOOL_NAME_LIFECYCLE,
  TOOL_NAME_USER,
};

/* The fallback of each kind: "phase_", "counter_", "lifecycle_",
 * "user_". */
extern const char *const tool_name_fallback[];

/* Room for a fallback name and its id. */
#define TOOL_NAME_BUF 32

/* The name the file gives id `id` of kind `k` (the cursor's phase and
 * counter tables, the library's lifecycle names, the file's user event
 * slots): NULL or "" when it has none. */
const char *tool_file_name(const eventring_cursor *c, enum tool_name_kind k,
                           int id);

/* `name` when it is not NULL or empty, else `fallback` and `id` written
 * into `buf` (TOOL_NAME_BUF bytes). */
const char *tool_name_or(char *buf, const char *name, const char *fallback,
                         int id);

/* The file's name for the id, or the kind's fallback and the id written
 * into `buf` (TOOL_NAME_BUF bytes).  Unescaped: for JSON strings, labels
 * and tables that escape in their own way. */
const char *tool_event_name(const eventring_cursor *c, enum tool_name_kind k,
                            int id, char *buf);

/* Writes the file's name for the id as tool_put_name() does (one field of
 * one line, the kind's fallback for a missing name). */
void tool_put_event_name(FILE *out, const eventring_cursor *c,
                         enum tool_name_kind k, int id);

/* "events" or "words": the unit of the cursor's lost counts. */
const char *tool_lost_unit(const eventring_cursor *c);

/* tool_put_name() into `buf` (`size` bytes, NUL-terminated, cut short if
 * need be); returns buf. */
const char *tool_name_str(char *buf, size_t size, const char *name,
                          const char *fallback, int id);

/* tool_put_ocaml_string() into `buf` (`size` bytes), without the quotes
 * and NUL-terminated; returns the length, 0 when it does not fit. */
size_t tool_ocaml_string_str(char *buf, size_t size, const void *bytes,
                             size_t len);

#endif /* EVENTRING_TOOL_EVENTS_H */
