/* leftovers.c -- ring files whose writer is gone: an earlier image's is
 * kept under a name of its own, a dead process's is removed unless it
 * asked to be preserved.
 *
 * Liveness.  A writer holds an open file description lock (F_OFD_SETLK,
 * a read lock on byte 0) on its file for as long as it keeps the file's
 * descriptor.  The kernel drops it when the last descriptor of that
 * description closes: at a stop, at exit or death, and at exec (the
 * descriptor is close-on-exec); a forked child shares its parent's
 * description and closes its copy, which leaves the parent's lock alone.
 * Whoever takes the write lock on byte 0 knows that no writer holds the
 * file, in any pid namespace, and holds other starts off it while it
 * decides.  The lock is not flock(2), which controllers take in turns
 * (remote_client.c): the two do not conflict.
 *
 * Names.  <pid>.events is the file of the image running under that pid
 * (OCaml's readers and `eventring --pid` look there).  A start that finds
 * that name taken by a file whose writer is gone gives it, before its own
 * file takes the name (ring.c, which exchanges the two atomically):
 *   - to <pid>.<N>.events, when it is an earlier image of this process
 *     (the same start time: the program exec'd, or this image stopped
 *     tracing with OCAML_RUNTIME_EVENTS_PRESERVE and starts again) or a
 *     dead process's file marked preserved (ER_EXT_FLAG_PRESERVED).  N is
 *     one more than the highest such N of the pid in the directory, so a
 *     pid's files sort by N, <pid>.events last: the order they were
 *     written in.  The name is a second link made before the exchange,
 *     so that no reader ever finds the file without a name;
 *   - to nobody, when it is a dead process's file not preserved.
 *
 * Reaping.  Files of dead processes that did not ask to be preserved are
 * removed by the next start in their directory (er_leftovers_reap()): a
 * forked worker that ends with _exit() runs no teardown.  A file is
 * removed only when all of these hold: a complete eventring file of our
 * user that records its writer's start time and no PRESERVED flag, its
 * lock free, and /proc showing no process with its pid and start time
 * (a zombie still counts as its process).  Files of the earlier images
 * of a live process are kept while it lives; its teardown removes those
 * not preserved along with its own file.
 *
 * Everything on the paths of a start is async-signal-safe (open, pread,
 * fcntl, getdents64, link, unlink): a forked child may create its file
 * in the fork handler.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "starttime.h"

/* Sets (F_RDLCK, F_WRLCK) or releases (F_UNLCK) the liveness lock on
 * `fd` without waiting.  Returns 0 or a negated errno value (-EAGAIN:
 * held by someone else). */
static int liveness_lock(int fd, short type) {
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 1;
  /* l_pid must be 0 for an open file description lock. */
  return fcntl(fd, F_OFD_SETLK, &fl) == 0 ? 0 : -errno;
}

int er_file_hold(int fd) { return liveness_lock(fd, F_RDLCK); }

/* Calls fn(dfd, name, arg) for each entry of directory `dir` named like
 * a ring file, with getdents64 so that it may run in a fork handler. */
static void each_ring_name(const char *dir,
                           void (*fn)(int, const char *, pid_t,
                                      unsigned long, void *),
                           void *arg) {
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  /* struct linux_dirent64 as the kernel lays it out. */
  union {
    char bytes[4096];
    uint64_t align;
  } buf;
  long n;
  while ((n = syscall(SYS_getdents64, dfd, buf.bytes, sizeof buf.bytes)) > 0) {
    for (long off = 0; off < n;) {
      unsigned short reclen;
      memcpy(&reclen, buf.bytes + off + 16, sizeof reclen);
      const char *name = buf.bytes + off + 19;
      int32_t pid;
      unsigned long image;
      if (er_ring_name(name, &pid, &image)) fn(dfd, name, pid, image, arg);
      off += reclen;
    }
  }
  close(dfd);
}

/* The directory part of `path` ("." when it has none) into buf. */
static void dir_of(const char *path, char *buf, size_t size) {
  const char *slash = strrchr(path, '/');
  if (!slash) {
    snprintf(buf, size, ".");
  } else if (slash == path) {
    snprintf(buf, size, "/");
  } else {
    size_t n = (size_t)(slash - path);
    if (n >= size) n = size - 1;
    memcpy(buf, path, n);
    buf[n] = '\0';
  }
}

/* Opens `name` in directory `dfd` for reading and writing (the write
 * lock needs it) when it is a regular file of our user, with its
 * status in *st.  Returns the descriptor or -1.  It is looked at through
 * a read-only descriptor first, so that nothing else (a device, a FIFO)
 * is ever opened for writing. */
static int open_checked(int dfd, const char *name, struct stat *st) {
  const int how = O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  int ro = openat(dfd, name, O_RDONLY | how);
  if (ro < 0) return -1;
  int ok = fstat(ro, st) == 0 && S_ISREG(st->st_mode) &&
           st->st_uid == geteuid();
  close(ro);
  if (!ok) return -1;
  int fd = openat(dfd, name, O_RDWR | how);
  struct stat again;
  if (fd >= 0 && (fstat(fd, &again) != 0 || again.st_dev != st->st_dev ||
                  again.st_ino != st->st_ino)) {
    close(fd);
    fd = -1;
  }
  return fd;
}

/* Whether a lock error says the file system has no such locks, rather
 * than that someone holds it. */
static int no_locks(int err) {
  return err == -EINVAL || err == -ENOLCK || err == -EOPNOTSUPP;
}

/* The writer's extension flags of the file open on `fd`, or 0. */
static uint64_t file_flags(int fd) {
  uint64_t w = 0;
  if (pread(fd, &w, 8, (off_t)(ER_META_WORDS + ER_EXT_FLAGS) * 8) != 8)
    return 0;
  return w;
}

/* What a file's writer was, read from the file open on `fd`: 1 when it
 * is a complete eventring file that records its writer's pid and start
 * time (then in *pid, *start, with its flags in *flags), else 0. */
static int writer_of(int fd, pid_t *pid, uint64_t *start, uint64_t *flags) {
  if (er_file_writer(fd, pid, start) != 1) return 0;
  *flags = file_flags(fd);
  return 1;
}

int er_leftover_take(const char *path, uint64_t start, struct stat *st,
                     int *keep) {
  int fd = open_checked(AT_FDCWD, path, st);
  if (fd < 0) return -EEXIST;
  pid_t pid = 0;
  uint64_t recorded = 0, flags = 0;
  if (!writer_of(fd, &pid, &recorded, &flags) || pid != getpid()) {
    close(fd);
    return -EEXIST;
  }
  /* A writer holding it is alive (another pid namespace's process with
   * our pid number).  Where the file system has no such locks, the pid
   * and our own liveness say enough in this namespace. */
  int r = liveness_lock(fd, F_WRLCK);
  if (r != 0 && !no_locks(r)) {
    close(fd);
    return -EEXIST;
  }
  *keep = recorded == start || (flags & ER_EXT_FLAG_PRESERVED);
  return fd;
}

/* Finds the highest image number of `pid` in the directory. */
struct highest {
  pid_t pid;
  unsigned long image;
};

static void note_highest(int dfd, const char *name, pid_t pid,
                         unsigned long image, void *arg) {
  (void)dfd, (void)name;
  struct highest *h = arg;
  if (pid == h->pid && image > h->image) h->image = image;
}

int er_leftover_aside(const char *path, pid_t pid, const struct stat *st) {
  char dir[PATH_MAX], aside[PATH_MAX];
  dir_of(path, dir, sizeof dir);
  struct highest h = {pid, 0};
  each_ring_name(dir, note_highest, &h);
  /* Another start of a process with our pid number (another namespace)
   * may take a name meanwhile: the next one then. */
  for (unsigned long n = h.image + 1; n <= h.image + 64; n++) {
    if (snprintf(aside, sizeof aside, "%s/%ld.%lu.events", dir, (long)pid,
                 n) >= (int)sizeof aside)
      return -ENAMETOOLONG;
    if (link(path, aside) != 0) {
      if (errno == EEXIST) continue;
      return -errno;
    }
    /* The link must be to the file checked, not one put at `path` since
     * by whoever can write in the directory. */
    struct stat now;
    if (lstat(aside, &now) == 0 && now.st_dev == st->st_dev &&
        now.st_ino == st->st_ino)
      return 0;
    unlink(aside);
    return -EEXIST;
  }
  return -EEXIST;
}

/* What a reap removes, and what it needs to know. */
struct reap {
  unsigned what;       /* ER_REAP_* */
  pid_t self;
  uint64_t self_start;
  dev_t own_dev;       /* the live file, never removed */
  ino_t own_ino;
  int own_known;
};

/* Whether the process that wrote a file (pid, start) is gone: /proc shows
 * no process with that pid, or a later one. */
static int process_gone(pid_t pid, uint64_t start) {
  uint64_t now;
  int r = er_proc_start_time(pid, &now);
  if (r == -ENOENT || r == -ESRCH) return 1;
  return r == 0 && now != start;
}

static void reap_one(int dfd, const char *name, pid_t pid,
                     unsigned long image, void *arg) {
  struct reap *rp = arg;
  int own = pid == rp->self;
  /* Our own files: only the earlier images', at our teardown. */
  if (own && !(rp->what & ER_REAP_OWN_IMAGES)) return;
  if (!own && !(rp->what & ER_REAP_DEAD)) return;
  if (own && image == 0) return;
  struct stat st;
  int fd = open_checked(dfd, name, &st);
  if (fd < 0) return;
  pid_t writer;
  uint64_t start, flags;
  int gone =
      writer_of(fd, &writer, &start, &flags) && writer == pid && !(flags & ER_EXT_FLAG_PRESERVED) &&
      !(rp->own_known && st.st_dev == rp->own_dev && st.st_ino == rp->own_ino);
  if (gone)
    gone = own ? start == rp->self_start : process_gone(writer, start);
  /* Held while it is removed: no writer has it, and no other start
   * decides about it meanwhile. */
  if (gone && liveness_lock(fd, F_WRLCK) == 0) {
    struct stat now;
    if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
        now.st_dev == st.st_dev && now.st_ino == st.st_ino)
      unlinkat(dfd, name, 0);
  }
  close(fd);
}

void er_leftovers_reap(const char *path, unsigned what) {
  struct reap rp = {.what = what, .self = getpid()};
  /* Without our own start time /proc is not there to tell the dead from
   * the living: nothing is removed. */
  if (er_proc_start_time(0, &rp.self_start) != 0) return;
  struct stat st;
  if (er_st.fd >= 0 && fstat(er_st.fd, &st) == 0) {
    rp.own_dev = st.st_dev;
    rp.own_ino = st.st_ino;
    rp.own_known = 1;
  }
  char dir[PATH_MAX];
  dir_of(path, dir, sizeof dir);
  each_ring_name(dir, reap_one, &rp);
}
