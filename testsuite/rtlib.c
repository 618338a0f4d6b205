/* rtlib.c -- steps the runtime's C tests share (rtlib.h). */
#include "rtlib.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "eventring.h"
#include "harness.h"

char *er_start_preserved(const char *params) {
  if (params != NULL) ck_assert_int_eq(setenv("OCAMLRUNPARAM", params, 1), 0);
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  ck_assert_int_eq(eventring_start(), 0);
  char *path = strdup(eventring_path());
  ck_assert_ptr_nonnull(path);
  return path;
}

char *er_stop_saying(void) {
  struct er_capture c;
  er_stderr_begin(&c);
  ck_assert_int_eq(eventring_stop(), 0);
  return er_stderr_end(&c);
}

int er_file_wallclock(const char *path, int which, eventring_wallclock *w) {
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
  int rc = eventring_cursor_wallclock(c, which, w);
  eventring_cursor_free(c);
  return rc;
}

int er_still_mapped(const char *path) {
  FILE *m = fopen("/proc/self/maps", "r");
  ck_assert_ptr_nonnull(m);
  char line[PATH_MAX + 128];
  int found = 0;
  while (!found && fgets(line, sizeof line, m))
    found = strstr(line, path) != NULL;
  fclose(m);
  return found;
}

void er_wait_ok(pid_t pid) {
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "child status 0x%x", status);
}

void er_baton_take(struct er_baton *b, int turn) {
  pthread_mutex_lock(&b->lock);
  while (b->turn != turn) pthread_cond_wait(&b->cond, &b->lock);
}

void er_baton_pass(struct er_baton *b) {
  b->turn++;
  pthread_cond_broadcast(&b->cond);
  pthread_mutex_unlock(&b->lock);
}

void er_join0_worker(int who) {
  ck_assert_int_eq(eventring_domain_join(0), 0);
  eventring_thread_id(who * 10);
  char name[16];
  snprintf(name, sizeof name, "worker %d", who);
  ck_assert_int_eq(eventring_thread_name(name), 0);
}

volatile char *er_cut_mapping(const char *dir) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/other", dir);
  int fd = open(p, O_RDWR | O_CREAT, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, 4096), 0);
  char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ck_assert_ptr_ne(m, MAP_FAILED);
  close(fd);
  ck_assert_int_eq(truncate(p, 0), 0);
  return m;
}

void er_store_to_cut_mapping(const char *dir) {
  volatile char *m = er_cut_mapping(dir);
  m[0] = 1;
}

void er_assert_sigbus_death(int status, const char *what) {
  const char *san = getenv("EVENTRING_SANITIZER");
  if (san && *san && strcmp(san, "none") != 0)
    ck_assert_msg(WIFSIGNALED(status) ||
                      (WIFEXITED(status) && WEXITSTATUS(status) == 66),
                  "status 0x%x; %s", status, what);
  else
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS,
                  "status 0x%x (SIGBUS is %d); %s", status, SIGBUS, what);
}
