/* childfile.h -- a ring file of another process, for the tests that read
 * a file they do not write (cursors, tools, SIGBUS in a reader).  Include
 * after eventring.h, harness.h and testlib.h. */
#ifndef ER_CHILDFILE_H
#define ER_CHILDFILE_H

/* Makes a ring file in the test's directory in a child process that
 * traces, writes `pairs` begin/end pairs and stops, keeping the file
 * (OCAML_RUNTIME_EVENTS_PRESERVE).  Returns the child's pid, once it has
 * exited with status 0; fails the test otherwise. */
static ER_UNUSED pid_t er_child_file(int pairs) {
  fflush(stdout);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    if (setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1) != 0 ||
        eventring_start() != 0)
      _exit(3);
    for (int i = 0; i < pairs; i++) {
      eventring_begin(EVENTRING_PHASE_MAJOR);
      eventring_end(EVENTRING_PHASE_MAJOR);
    }
    _exit(eventring_stop() == 0 ? 0 : 4);
  }
  int status = er_wait_for(pid, ER_RUN_TIMEOUT);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x",
                status);
  return pid;
}

#endif
