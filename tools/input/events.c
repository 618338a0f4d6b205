/* events.c -- callbacks, names and units shared by the subcommands (see
 * input.h).
 */
#include <string.h>

#include "input/input.h"

/* The last few callbacks objects made, with their handlers: a subcommand
 * makes one or two, and the filter asks for the one it is given. */
#define KNOWN 16
static struct {
  const eventring_callbacks *cb;
  const struct tool_handlers *h;
} known[KNOWN];
static unsigned known_next;

const struct tool_handlers *tool_callbacks_handlers(
    const eventring_callbacks *cb) {
  for (int i = 0; i < KNOWN; i++)
    if (known[i].cb == cb && cb) return known[i].h;
  return NULL;
}

eventring_callbacks *tool_callbacks_new(const struct tool_handlers *h) {
  eventring_callbacks *cb = eventring_callbacks_create();
  if (!cb) return NULL;
  /* An address freed and reused names the new object only. */
  int slot = -1;
  for (int i = 0; i < KNOWN; i++)
    if (known[i].cb == cb) slot = i;
  if (slot < 0) slot = (int)(known_next++ % KNOWN);
  known[slot].cb = cb;
  known[slot].h = h;
  if (h->runtime_begin)
    eventring_callbacks_set_runtime_begin(cb, h->runtime_begin);
  if (h->runtime_end) eventring_callbacks_set_runtime_end(cb, h->runtime_end);
  if (h->runtime_counter)
    eventring_callbacks_set_runtime_counter(cb, h->runtime_counter);
  if (h->alloc) eventring_callbacks_set_alloc(cb, h->alloc);
  if (h->lifecycle) eventring_callbacks_set_lifecycle(cb, h->lifecycle);
  if (h->user_unit) eventring_callbacks_set_user_unit(cb, h->user_unit);
  if (h->user_int) eventring_callbacks_set_user_int(cb, h->user_int);
  if (h->user_span) eventring_callbacks_set_user_span(cb, h->user_span);
  if (h->user_custom) eventring_callbacks_set_user_custom(cb, h->user_custom);
  if (h->lost_events) eventring_callbacks_set_lost_events(cb, h->lost_events);
  if (h->thread) eventring_callbacks_set_thread(cb, h->thread);
  if (h->window) eventring_callbacks_set_window(cb, h->window);
  return cb;
}

const char *const tool_name_fallback[] = {
    [TOOL_NAME_PHASE] = "phase_",
    [TOOL_NAME_COUNTER] = "counter_",
    [TOOL_NAME_LIFECYCLE] = "lifecycle_",
    [TOOL_NAME_USER] = "user_",
};

const char *tool_file_name(const eventring_cursor *c, enum tool_name_kind k,
                           int id) {
  switch (k) {
  case TOOL_NAME_PHASE: return eventring_cursor_phase_name(c, id);
  case TOOL_NAME_COUNTER: return eventring_cursor_counter_name(c, id);
  case TOOL_NAME_LIFECYCLE: return eventring_lifecycle_name(id);
  case TOOL_NAME_USER: return eventring_cursor_user_name(c, id);
  }
  return NULL;
}

const char *tool_name_or(char *buf, const char *name, const char *fallback,
                         int id) {
  if (name && *name) return name;
  snprintf(buf, TOOL_NAME_BUF, "%s%d", fallback, id);
  return buf;
}

const char *tool_event_name(const eventring_cursor *c, enum tool_name_kind k,
                            int id, char *buf) {
  return tool_name_or(buf, tool_file_name(c, k, id), tool_name_fallback[k],
                      id);
}

void tool_put_event_name(FILE *out, const eventring_cursor *c,
                         enum tool_name_kind k, int id) {
  tool_put_name(out, tool_file_name(c, k, id), tool_name_fallback[k], id);
}

const char *tool_lost_unit(const eventring_cursor *c) {
  return eventring_cursor_lost_unit(c) == EVENTRING_LOST_EVENTS ? "events"
                                                                : "words";
}

const char *tool_name_str(char *buf, size_t size, const char *name,
                          const char *fallback, int id) {
  FILE *f = fmemopen(buf, size, "w");
  if (!f) return fallback;
  tool_put_name(f, name, fallback, id);
  fclose(f);
  buf[size - 1] = '\0';
  return buf;
}

size_t tool_ocaml_string_str(char *buf, size_t size, const void *bytes,
                             size_t len) {
  FILE *m = fmemopen(buf, size, "w");
  long pos = -1;
  if (m) {
    tool_put_ocaml_string(m, bytes, len);
    pos = ftell(m);
    fclose(m);
  }
  if (pos < 2 || (size_t)pos > size) {
    if (size) buf[0] = '\0';
    return 0;
  }
  /* Drop the quotes: move the text over the opening one. */
  memmove(buf, buf + 1, (size_t)pos - 2);
  buf[pos - 2] = '\0';
  return (size_t)pos - 2;
}
