/* consumer_cb.h -- the callback sets of the consumer tests, from a table.
 *
 * A test that reads a ring file through eventring_cursor_poll() names its
 * handlers once, in a struct er_handlers, and gets the matching
 * eventring_callbacks; the kinds it leaves NULL stay unset, so their
 * events are skipped as the library documents.  Each field is named
 * after its setter, shortened (eventring_callbacks_set_runtime_begin:
 * begin, set_lifecycle: life, set_lost_events: lost):
 *
 *   static const struct er_handlers h = {.begin = on_begin, .end = on_end,
 *       .user_int = on_int, .lost = on_lost};
 *   eventring_callbacks *cb = er_callbacks(&h);
 *
 * Links with libeventring (unlike testlib.o); fails the running test
 * (ck_assert) when the set cannot be allocated.
 */
#ifndef EVENTRING_TEST_CONSUMER_CB_H
#define EVENTRING_TEST_CONSUMER_CB_H

#include "eventring.h"

struct er_handlers {
  eventring_phase_fn begin;
  eventring_phase_fn end;
  eventring_counter_fn counter;
  eventring_alloc_fn alloc;
  eventring_lifecycle_fn life;
  eventring_user_unit_fn unit;
  eventring_user_int_fn user_int;
  eventring_user_span_fn span;
  eventring_user_custom_fn custom;
  eventring_lost_fn lost;
  eventring_thread_fn thread;
  eventring_window_fn window;
};

/* A new set with h's non-NULL handlers; free it with
 * eventring_callbacks_free(). */
eventring_callbacks *er_callbacks(const struct er_handlers *h);

#endif
