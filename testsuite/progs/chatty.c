/* chatty -- a traced program that talks: for test_tool_streams to run
 * under `eventring SUBCOMMAND -- chatty`.  It writes CHATTY_LINES lines
 * to standard output and as many to standard error, each stream's lines
 * distinct ("chatty: stdout N" / "chatty: stderr N"), interleaved with a
 * few events (a span "chatty.work" around ints "chatty.n"), and exits 0.
 * Tracing is started by the tool's environment, as for any program.
 */
#include <stdio.h>

#include "eventring.h"

#define CHATTY_LINES 3

int main(void) {
  int n_id = eventring_register("chatty.n", EVENTRING_TYPE_INT);
  int span_id = eventring_register("chatty.work", EVENTRING_TYPE_SPAN);
  if (n_id < 0 || span_id < 0) return 2;
  eventring_write_span(span_id, 0);
  for (int i = 1; i <= CHATTY_LINES; i++) {
    /* Each line is flushed at once, so that it reaches its stream while
     * the tool is still reading: an interleaving with the report, were
     * they to share a stream, would show. */
    printf("chatty: stdout %d\n", i);
    fflush(stdout);
    eventring_write_int(n_id, i);
    fprintf(stderr, "chatty: stderr %d\n", i);
  }
  eventring_write_span(span_id, 1);
  return 0;
}
