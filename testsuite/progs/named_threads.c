/* named_threads -- a program whose threads name themselves, for
 * test_thread_names to run under the eventring command.  Its main thread
 * calls pthread_setname_np() first thing in main(), after the library's
 * constructor has started tracing (OCAML_RUNTIME_EVENTS_START) and so
 * taken slot 0 under the program's name; it then starts two threads
 * named "worker" and one named "io", each writing user ints "named.n"
 * 1..10 and then waiting for the others (a barrier), so that the three
 * hold slots 1-3 at once, in some order; the main thread writes
 * "named.n" 0 before and after them.  By MODE (default: run):
 *   run                the above, exit 0;
 *   exec PROG [ARG]... the above, then forks a child that executes PROG
 *                      (a fork+exec), waits for it and exits with its
 *                      status.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "eventring.h"

static int n_id;
static pthread_barrier_t all_in;

static void *worker(void *name) {
  pthread_setname_np(pthread_self(), name);
  for (int i = 1; i <= 10; i++) eventring_write_int(n_id, i);
  pthread_barrier_wait(&all_in);
  return NULL;
}

int main(int argc, char **argv) {
  pthread_setname_np(pthread_self(), "main-loop");
  n_id = eventring_register("named.n", EVENTRING_TYPE_INT);
  if (n_id < 0) return 2;
  eventring_write_int(n_id, 0);
  static char *const names[] = {"worker", "worker", "io"};
  pthread_t t[3];
  pthread_barrier_init(&all_in, NULL, 3);
  for (int i = 0; i < 3; i++)
    if (pthread_create(&t[i], NULL, worker, names[i]) != 0) return 2;
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  eventring_write_int(n_id, 0);
  if (argc > 2 && strcmp(argv[1], "exec") == 0) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
      execv(argv[2], argv + 2);
      _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid) return 2;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
  }
  return 0;
}
