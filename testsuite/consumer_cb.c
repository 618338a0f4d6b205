/* consumer_cb.c -- callback sets from a table (consumer_cb.h). */
#include "consumer_cb.h"

#include <check.h>

eventring_callbacks *er_callbacks(const struct tool_handlers *h) {
  eventring_callbacks *cb = tool_callbacks_new(h);
  ck_assert_ptr_nonnull(cb);
  return cb;
}
