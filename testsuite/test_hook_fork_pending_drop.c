/* A forked child's thread whose first event comes while another thread makes the child's file for a control operation drops it without waiting, and the drop is counted in the file made. */
/* The child's main thread asks for its file (eventring_path()), which
 * holds the library's lock as a control operation; the hook at the
 * point where the new file is mapped (ER_HOOK_FILE_MAPPED) holds it
 * there while a second thread of the child writes its first event.  That
 * probe must not wait for a control path (stw.h, SIGNAL HANDLERS AND THE
 * LOCK), so it drops the event; the count must reach the file's DROPPED
 * word, and the thread's next event must be written. */
#include <pthread.h>
#include <semaphore.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "rtlib.h"
#include "writer.h"

static int val_id = -1;
static sem_t go, done;

static int hook(enum er_hook h) {
  if (h != ER_HOOK_FILE_MAPPED) return 0;
  er_test_hook = NULL; /* once */
  sem_post(&go);
  while (sem_wait(&done) != 0) continue;
  return 0;
}

static void *second_thread(void *arg) {
  (void)arg;
  while (sem_wait(&go) != 0) continue;
  eventring_write_int(val_id, 1); /* dropped: the file is being made */
  sem_post(&done);
  return NULL;
}

START_TEST(test_drop_while_file_made) {
  const char *dir = er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  val_id = eventring_register("pending.val", EVENTRING_TYPE_INT);
  /* Without the remote-control thread (er_start_locked()), so that the
   * parent is single-threaded at the fork: ThreadSanitizer kills a child
   * of a multithreaded process that starts a thread. */
  er_lock();
  int started = er_start_locked(NULL);
  er_unlock();
  ck_assert_int_eq(started, 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    sem_init(&go, 0, 0);
    sem_init(&done, 0, 0);
    pthread_t th;
    ER_CHILD_CHECK(pthread_create(&th, NULL, second_thread, NULL) == 0, 10);
    er_test_hook = hook;
    ER_CHILD_CHECK(eventring_path() != NULL, 11);
    ER_CHILD_CHECK(pthread_join(th, NULL) == 0, 12);
    /* The thread's next event is written, in a ring of its own. */
    ER_CHILD_CHECK(pthread_create(&th, NULL, second_thread, NULL) == 0, 13);
    sem_post(&go);
    ER_CHILD_CHECK(pthread_join(th, NULL) == 0, 14);
    _exit(0);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "child status 0x%x", status);
  ck_assert_int_eq(eventring_stop(), 0);

  char path[PATH_MAX];
  struct rf_file f;
  er_open_ring(er_ring_path_for(path, sizeof path, dir, pid), &f);
  ck_assert_msg(f.ext[ER_EXT_DROPPED] == 1,
                "the event dropped while the file was made is counted %llu "
                "times in it",
                (unsigned long long)f.ext[ER_EXT_DROPPED]);
  ck_assert_uint_eq(rf_count(&f, -1, 1, ER_UEV_INT, val_id), 1);
  rf_close(&f);
}
END_TEST

static TCase *tc_pending_drop(void) {
  TCase *tc = er_tcase("hook_fork_pending_drop");
  tcase_add_test(tc, test_drop_while_file_made);
  return tc;
}

ER_TEST_MAIN("hook_fork_pending_drop", tc_pending_drop)
