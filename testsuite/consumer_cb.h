/* consumer_cb.h -- the callback sets of the consumer tests, from a table.
 *
 * A test that reads a ring file through eventring_cursor_poll() names its
 * handlers once, in the command's struct tool_handlers (one field per
 * setter of eventring.h, tools/input/input.h), and gets the matching
 * eventring_callbacks from tool_callbacks_new(); the kinds it leaves NULL
 * stay unset, so their events are skipped as the library documents:
 *
 *   static const struct tool_handlers h = {.runtime_begin = on_begin,
 *       .user_int = on_int, .lost_events = on_lost};
 *   eventring_callbacks *cb = er_callbacks(&h);
 *
 * Links with libeventring and tools/libtool.a (as every test but
 * test_hook_*, test_i_* and test_nolib_* does).
 */
#ifndef EVENTRING_TEST_CONSUMER_CB_H
#define EVENTRING_TEST_CONSUMER_CB_H

#include "eventring.h"
#include "input/input.h"

/* A new set with h's non-NULL handlers (fails the running test when it
 * cannot be allocated); free it with eventring_callbacks_free(). */
eventring_callbacks *er_callbacks(const struct tool_handlers *h);

#endif
