/* remote_client.c -- the controller's side of remote control:
 * eventring_remote_pause(), _resume(), _hold(), _unhold() and _state(),
 * called by another process (`eventring pause`, a reader following a
 * process) on a traced process's ring file (protocol in remote.h).
 *
 * The controller maps only the file's first page, where the control words
 * are, after checking that the file is a ring file of the caller's and
 * that it carries eventring's extension block.  It waits a second at most
 * for the watcher's answer, then withdraws its request if the watcher has
 * not taken it yet, so that a command that failed changes nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "remote.h"

/* The control words lie in the file's first page. */
#define CONTROL_BYTES 4096

/* Opens `<dir>/<pid>.events` and maps its first page, where the control
 * words are.  Returns 0 and the mapping, or a negative error. */
static int map_control(const char *dir, pid_t pid, uint64_t **out) {
  *out = NULL;
  if (pid <= 0) return EVENTRING_E_INVAL;
  char path[PATH_MAX];
  int n = er_file_path(path, sizeof path, dir, pid);
  if (n) return n;
  int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return -errno;
  struct stat st;
  uint64_t meta[ER_META_WORDS] = {0};
  int err = 0;
  if (fstat(fd, &st) < 0) err = -errno;
  else if (!S_ISREG(st.st_mode)) err = EVENTRING_E_NOTRING;
  else if (st.st_uid != geteuid() && geteuid() != 0) err = -EPERM;
  else if (pread(fd, meta, sizeof meta, 0) < 0) err = -errno;
  /* The consumer's checks, so that a file that is no ring file, or one
   * of another version, is called what it is.  A good header implies a
   * file far larger than its first page. */
  else err = er_check_meta(meta, (uint64_t)st.st_size);
  uint64_t *map = MAP_FAILED;
  if (!err) {
    map = mmap(NULL, CONTROL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) err = -errno;
  }
  close(fd); /* the mapping stays */
  if (err) return err;
  uint64_t *ext = map + ER_META_WORDS;
  /* A good header without eventring's extension block: OCaml 5's runtime
   * wrote the file, and it has neither control words nor a thread that
   * serves them. */
  if (er_load_acq(&map[ER_META_VERSION]) != ER_FORMAT_VERSION ||
      er_load_acq(&ext[ER_EXT_MAGIC_W]) != ER_EXT_MAGIC ||
      er_load_rlx(&map[ER_META_HEADERS_OFFSET]) <
          8 * (ER_META_WORDS + ER_EXT_WORDS)) {
    munmap(map, CONTROL_BYTES);
    return EVENTRING_E_NOCONTROL;
  }
  *out = map;
  return 0;
}

int eventring_remote_state(const char *dir, pid_t pid) {
  uint64_t *map;
  int err = map_control(dir, pid, &map);
  if (err) return err;
  uint64_t *ext = map + ER_META_WORDS;
  int r = !er_iload_acq(er_ctl_word(ext, ER_EXT_CTL_WATCHER))
              ? EVENTRING_E_NOTSTARTED
              : er_load_acq(&ext[ER_EXT_PAUSED]) != 0;
  munmap(map, CONTROL_BYTES);
  return r;
}

/* Waits a second at most for the answer to request `want`.  Returns 0
 * when it was applied (or overtaken by a later request that was);
 * otherwise withdraws it if it can (remote.h) and returns
 * EVENTRING_E_NOTSTARTED when the watcher went away, EVENTRING_E_TIMEDOUT
 * when the request was withdrawn (it will never take effect), or
 * EVENTRING_E_PENDING when the watcher took it, or a later request
 * replaced it, and it will take effect when the process runs again. */
static int await_answer(uint64_t *ext, int want) {
  int *req = er_ctl_word(ext, ER_EXT_CTL_REQ);
  int *ack = er_ctl_word(ext, ER_EXT_CTL_ACK);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int a = er_iload_acq(ack);
    if (a == want || (int)(er_ctl_seq(a) - er_ctl_seq(want)) > 0) return 0;
    struct timespec now, wait = {0, 10 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) >
        1000000000L)
      break;
    er_futex(ack, FUTEX_WAIT, a, &wait);
  }
  /* A request of nothing in place of ours: the watcher then answers that
   * one and does nothing. */
  if (er_icas(req, want, (int)((er_ctl_seq(want) + 1) << 2))) {
    er_futex(req, FUTEX_WAKE, INT_MAX, NULL);
    return er_iload_acq(er_ctl_word(ext, ER_EXT_CTL_WATCHER))
               ? EVENTRING_E_TIMEDOUT
               : EVENTRING_E_NOTSTARTED;
  }
  if (!er_iload_acq(er_ctl_word(ext, ER_EXT_CTL_WATCHER)))
    return EVENTRING_E_NOTSTARTED;
  return EVENTRING_E_PENDING;
}

static int remote_request(const char *dir, pid_t pid, int op) {
  uint64_t *map;
  int err = map_control(dir, pid, &map);
  if (err) return err;
  uint64_t *ext = map + ER_META_WORDS;
  if (!er_iload_acq(er_ctl_word(ext, ER_EXT_CTL_WATCHER)))
    err = EVENTRING_E_NOTSTARTED;
  else
    err = await_answer(ext, er_post_request(er_ctl_word(ext, ER_EXT_CTL_REQ), op));
  munmap(map, CONTROL_BYTES);
  return err;
}

int eventring_remote_pause(const char *dir, pid_t pid) {
  return remote_request(dir, pid, ER_CTL_PAUSE);
}

int eventring_remote_resume(const char *dir, pid_t pid) {
  return remote_request(dir, pid, ER_CTL_RESUME);
}

/* Maps the control page of a file that has lease words and a watcher. */
static int map_leases(const char *dir, pid_t pid, uint64_t **out) {
  int err = map_control(dir, pid, out);
  if (err) return err;
  uint64_t *ext = *out + ER_META_WORDS;
  if (!(er_load_acq(&ext[ER_EXT_FLAGS]) & ER_EXT_FLAG_LEASES) ||
      er_load_rlx(&(*out)[ER_META_HEADERS_OFFSET]) <
          8 * (ER_META_WORDS + ER_EXT_WORDS + ER_EXT_LEASE_SLOTS))
    err = EVENTRING_E_NOCONTROL;
  else if (!er_iload_acq(er_ctl_word(ext, ER_EXT_CTL_WATCHER)))
    err = EVENTRING_E_NOTSTARTED;
  if (err) {
    munmap(*out, CONTROL_BYTES);
    *out = NULL;
  }
  return err;
}

int eventring_remote_hold(const char *dir, pid_t pid) {
  uint64_t *map;
  int err = map_leases(dir, pid, &map);
  if (err) return err;
  uint64_t *ext = map + ER_META_WORDS;
  uint64_t me = (uint64_t)getpid(), *mine = NULL;
  for (int i = 0; i < ER_EXT_LEASE_SLOTS && !mine; i++)
    if (er_cas(er_lease_word(ext, i), 0, me)) mine = er_lease_word(ext, i);
  if (!mine) {
    err = EVENTRING_E_TOOMANY;
  } else {
    int paused = er_load_acq(&ext[ER_EXT_PAUSED]) != 0;
    int want = er_post_request(er_ctl_word(ext, ER_EXT_CTL_REQ), ER_CTL_LEASES);
    /* A process that records needs no answer: the lease is counted
     * whenever the watcher runs next.  A paused one is resumed first. */
    if (paused) err = await_answer(ext, want);
    /* Not resumed for us: take the lease back.  (Taken but not answered,
     * the watcher counts it, then finds it gone at its next check.) */
    if (err) er_cas(mine, me, 0);
  }
  munmap(map, CONTROL_BYTES);
  return err;
}

int eventring_remote_unhold(const char *dir, pid_t pid) {
  uint64_t *map;
  int err = map_leases(dir, pid, &map);
  if (err) return err == EVENTRING_E_NOTSTARTED ? 0 : err;
  uint64_t *ext = map + ER_META_WORDS;
  uint64_t me = (uint64_t)getpid();
  int found = 0;
  for (int i = 0; i < ER_EXT_LEASE_SLOTS && !found; i++)
    found = er_cas(er_lease_word(ext, i), me, 0);
  /* The answer tells that the process was paused again if we were the
   * last; unanswered, the watcher finds the lease gone at its next
   * check of the holders, which it makes while it counts any. */
  if (found)
    err = await_answer(ext, er_post_request(er_ctl_word(ext, ER_EXT_CTL_REQ),
                                            ER_CTL_LEASES));
  munmap(map, CONTROL_BYTES);
  return err;
}
