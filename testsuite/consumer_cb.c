/* consumer_cb.c -- callback sets from a table (consumer_cb.h). */
#include "consumer_cb.h"

#include <check.h>

eventring_callbacks *er_callbacks(const struct er_handlers *h) {
  eventring_callbacks *cb = eventring_callbacks_create();
  ck_assert_ptr_nonnull(cb);
  /* A NULL handler leaves its kind unset. */
  if (h->begin) eventring_callbacks_set_runtime_begin(cb, h->begin);
  if (h->end) eventring_callbacks_set_runtime_end(cb, h->end);
  if (h->counter) eventring_callbacks_set_runtime_counter(cb, h->counter);
  if (h->alloc) eventring_callbacks_set_alloc(cb, h->alloc);
  if (h->life) eventring_callbacks_set_lifecycle(cb, h->life);
  if (h->unit) eventring_callbacks_set_user_unit(cb, h->unit);
  if (h->user_int) eventring_callbacks_set_user_int(cb, h->user_int);
  if (h->span) eventring_callbacks_set_user_span(cb, h->span);
  if (h->custom) eventring_callbacks_set_user_custom(cb, h->custom);
  if (h->lost) eventring_callbacks_set_lost_events(cb, h->lost);
  if (h->thread) eventring_callbacks_set_thread(cb, h->thread);
  if (h->window) eventring_callbacks_set_window(cb, h->window);
  return cb;
}
