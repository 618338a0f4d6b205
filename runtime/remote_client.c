/* remote_client.c -- the controller's side of remote control:
 * eventring_remote_pause(), _resume() and _state(), called by another
 * process (the `eventring pause` command) on a traced process's ring file
 * (protocol in remote.h).
 *
 * The controller maps only the file's first page, where the control words
 * are, after checking that the file is a ring file of the caller's and
 * that it carries eventring's extension block.  It waits a second at most
 * for the watcher's answer.
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

static int remote_request(const char *dir, pid_t pid, int op) {
  uint64_t *map;
  int err = map_control(dir, pid, &map);
  if (err) return err;
  uint64_t *ext = map + ER_META_WORDS;
  if (!er_iload_acq(er_ctl_word(ext, ER_EXT_CTL_WATCHER))) {
    err = EVENTRING_E_NOTSTARTED;
    goto out;
  }
  int *ack = er_ctl_word(ext, ER_EXT_CTL_ACK);
  int want = er_post_request(er_ctl_word(ext, ER_EXT_CTL_REQ), op);
  /* Wait for the answer, a second at most. */
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int a = er_iload_acq(ack);
    /* Applied, or overtaken by a later request (applied in order). */
    if (a == want || (int)(((unsigned)a >> 2) - ((unsigned)want >> 2)) > 0)
      break;
    struct timespec now, wait = {0, 10 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) >
        1000000000L) {
      err = EVENTRING_E_TIMEDOUT;
      break;
    }
    er_futex(ack, FUTEX_WAIT, a, &wait);
  }
out:
  munmap(map, CONTROL_BYTES);
  return err;
}

int eventring_remote_pause(const char *dir, pid_t pid) {
  return remote_request(dir, pid, ER_CTL_PAUSE);
}

int eventring_remote_resume(const char *dir, pid_t pid) {
  return remote_request(dir, pid, ER_CTL_RESUME);
}
