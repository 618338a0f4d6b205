/* dirscan.c -- finding the ring files that appear in a directory.
 *
 * The host mode of `eventring metrics --dir DIR` and `eventring watch
 * --dir DIR` follows every traced process whose ring file is in DIR: the
 * processes of a service run with OCAML_RUNTIME_EVENTS_DIR=DIR come and
 * go, and each new <pid>.events must be picked up.  A scan lists the
 * directory and opens a cursor on each new file for the subcommand to
 * take (ops->found); of a file it took, the subcommand hears at every
 * scan that it is still there (ops->still), and from one scan on which it
 * heard nothing, that the file is gone or was replaced.
 *
 * The cost of a scan must stay linear in the number of files, and small
 * for files that never become ring files: a shared directory may hold
 * thousands of them (empty files, another user's, stale ones), and the
 * scan runs four times a second.  So every file named like a ring file
 * has an entry in a hash table by name, with the inode readdir gives,
 * and a file is opened only when it is new, replaced (another inode), or
 * changed since it was refused (size or modification time, from one
 * fstatat).  Not so a file whose first word (the format version) is
 * still zero: its writer stores the version last, through its mapping,
 * which changes neither the size nor, always, the modification time, so
 * such a file is opened again at each look until it is complete.  A refused file is looked at again on the next scans (a
 * file caught while its writer creates it looks malformed for an
 * instant), then, once DIRSCAN_TRIES looks in a row refused it, only
 * every LOOK_EVERY scans, each file at its own phase so that the looks
 * spread evenly over the scans.  Its refusal is reported once, after
 * those tries: another user's file or a stray non-ring file would
 * otherwise fill standard error.  A file refused for want of descriptors
 * is opened again (not just looked at) when its turn comes, since it has
 * not changed; that refusal too is reported once.
 *
 * Only the files the subcommand took hold a descriptor (their cursors),
 * for as long as it keeps them: a refused file's is closed at once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input/input.h"

/* Looks in a row (one a scan) before a refusal is settled and reported. */
#define DIRSCAN_TRIES 3
/* How long a file whose writer has not finished making it is looked at
 * at every scan before its refusal is settled: a writer preempted while
 * it fills the header is not given up on at once, which would miss a
 * short-lived process (the watcher rescans within milliseconds while a
 * refusal is fresh). */
#define UNFINISHED_NS 2000000000ULL
/* Scans between two looks at a settled refusal. */
#define LOOK_EVERY 32
/* The same for a file refused for want of descriptors. */
#define LOOK_EVERY_NOFILE 4

enum entry_state { OFFERED, REFUSED };

struct dirscan_entry {
  struct dirscan_entry *next; /* in its hash chain */
  uint32_t hash;
  ino_t ino;                  /* as readdir gave it */
  enum entry_state state;
  void *handle;               /* OFFERED: the subcommand's */
  /* REFUSED: what the last look found, and when to look again. */
  off_t size;
  struct timespec mtime;
  int err;                    /* the cursor's error, 0 when declined */
  int unfinished;             /* its version word was still zero */
  int young;                  /* unfinished, first refused < UNFINISHED_NS ago */
  uint64_t first_ns;          /* when an unfinished file was first refused */
  int tries;
  int reported;
  unsigned long next_look;
  unsigned long seen;         /* the last scan that listed it */
  char name[];
};

struct dirscan_files {
  struct dirscan_entry **bucket;
  size_t nbuckets, count;
  unsigned long scan; /* scans made, the current one included */
};

int tool_dirscan_check(const char *dir, const char *who) {
  struct stat st;
  if (stat(dir, &st) != 0) {
    tool_error("%s: %s: %s", who, dir, strerror(errno));
    return TOOL_EXIT_INPUT;
  }
  if (!S_ISDIR(st.st_mode)) {
    tool_error("%s: %s: not a directory", who, dir);
    return TOOL_EXIT_INPUT;
  }
  /* One descriptor is held per live process followed: take all the
   * system allows us (the hard limit is the administrator's word). */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  return TOOL_EXIT_OK;
}

int tool_output_dir(const char *dir, const char *who) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    tool_error("%s: %s: %s", who, dir, strerror(errno));
    return TOOL_EXIT_INPUT;
  }
  int rc = tool_dirscan_check(dir, who);
  if (rc != TOOL_EXIT_OK) return rc;
  if (access(dir, W_OK | X_OK) != 0) {
    tool_error("%s: %s: %s", who, dir, strerror(errno));
    return TOOL_EXIT_INPUT;
  }
  return TOOL_EXIT_OK;
}

/* FNV-1a: names of files in one directory need nothing stronger. */
static uint32_t hash_name(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

static struct dirscan_entry **slot_of(struct dirscan_files *f,
                                      const char *name, uint32_t h) {
  struct dirscan_entry **ep = &f->bucket[h & (f->nbuckets - 1)];
  while (*ep && ((*ep)->hash != h || strcmp((*ep)->name, name) != 0))
    ep = &(*ep)->next;
  return ep;
}

/* Doubles the table when it holds twice as many entries as buckets, so
 * that a lookup stays a few comparisons; 0 or -1 (out of memory: the
 * table keeps working, its chains only grow longer). */
static int grow(struct dirscan_files *f) {
  if (f->nbuckets && f->count < 2 * f->nbuckets) return 0;
  size_t n = f->nbuckets ? 2 * f->nbuckets : 64;
  struct dirscan_entry **b = calloc(n, sizeof *b);
  if (!b) return -1;
  for (size_t i = 0; i < f->nbuckets; i++)
    for (struct dirscan_entry *e = f->bucket[i], *next; e; e = next) {
      next = e->next;
      e->next = b[e->hash & (n - 1)];
      b[e->hash & (n - 1)] = e;
    }
  free(f->bucket);
  f->bucket = b;
  f->nbuckets = n;
  return 0;
}

static int no_descriptor(int err) { return err == -EMFILE || err == -ENFILE; }

/* Whether the file `name`, refused with `err`, may be a ring file that
 * its writer has not finished making: refused for its version, and
 * whose version word reads zero. */
static int unfinished(int dfd, const char *name, int err) {
  if (err != EVENTRING_E_NOTRINGFILE && err != EVENTRING_E_VERSION) return 0;
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  uint64_t version = 1;
  ssize_t n = pread(fd, &version, sizeof version, 0);
  close(fd);
  return n == (ssize_t)sizeof version && version == 0;
}

/* A look at `e` refused the file with `err` (0: the subcommand declined
 * it): count the try, say so once it is settled, and choose the next
 * look. */
static void refused(struct tool_dirscan *d, struct dirscan_entry *e,
                    const char *path, int err) {
  struct dirscan_files *f = d->files;
  e->state = REFUSED;
  e->err = err;
  e->tries++;
  int tries = d->tries ? d->tries : DIRSCAN_TRIES;
  if (!e->unfinished) {
    e->young = 0;
    e->first_ns = 0;
  } else {
    uint64_t now = tool_now_ns();
    if (!e->first_ns) e->first_ns = now;
    e->young = now - e->first_ns < UNFINISHED_NS;
  }
  if (e->young) {
    e->next_look = f->scan + 1;
    return;
  }
  if (e->tries >= tries && !e->reported && err) {
    e->reported = 1;
    if (e->unfinished)
      tool_error("%s: %s: its header is not complete yet (looked at again "
                 "later)",
                 d->who, path);
    else if (no_descriptor(err))
      tool_error("%s: %s: %s (tried again later; raise the limit on open "
                 "files, ulimit -n)",
                 d->who, path, eventring_strerror(err));
    else
      tool_error("%s: %s: %s (skipped)", d->who, path,
                 eventring_strerror(err));
  }
  if (e->tries < tries)
    e->next_look = f->scan + 1;
  else if (no_descriptor(err))
    e->next_look = f->scan + LOOK_EVERY_NOFILE;
  else if (e->tries == tries)
    e->next_look = f->scan + 1 + e->hash % LOOK_EVERY; /* its phase */
  else
    e->next_look = f->scan + LOOK_EVERY;
}

static void forget(struct dirscan_files *f, struct dirscan_entry *e) {
  struct dirscan_entry **ep = slot_of(f, e->name, e->hash);
  *ep = e->next;
  f->count--;
  free(e);
}

/* One file of the listing, `name` of process `pid` and inode `ino`. */
static void scan_one(struct tool_dirscan *d, const struct tool_dirscan_ops *ops,
                     void *arg, int dfd, const char *name, ino_t ino,
                     pid_t pid) {
  struct dirscan_files *f = d->files;
  uint32_t h = hash_name(name);
  struct dirscan_entry *e = *slot_of(f, name, h);
  if (e && e->ino != ino) {
    /* Replaced by another file of the same name: the subcommand hears
     * nothing of the old one from now on, and the new one is new. */
    forget(f, e);
    e = NULL;
  }
  if (e) {
    e->seen = f->scan;
    if (e->state == OFFERED) {
      ops->still(arg, e->handle);
      return;
    }
    if (f->scan < e->next_look) return;
  }
  char path[PATH_MAX];
  if ((size_t)snprintf(path, sizeof path, "%s/%s", d->dir, name) >=
      sizeof path)
    return;
  struct stat st;
  if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (e && !no_descriptor(e->err) && !e->unfinished && st.st_ino == e->ino &&
      st.st_size == e->size && st.st_mtim.tv_sec == e->mtime.tv_sec &&
      st.st_mtim.tv_nsec == e->mtime.tv_nsec) {
    /* Unchanged: opening it again would refuse it again. */
    refused(d, e, path, e->err);
    return;
  }
  if (!e) {
    size_t len = strlen(name);
    grow(f);
    e = calloc(1, sizeof *e + len + 1);
    if (!e) return;
    memcpy(e->name, name, len + 1);
    e->hash = h;
    e->ino = ino;
    e->seen = f->scan;
    struct dirscan_entry **ep = &f->bucket[h & (f->nbuckets - 1)];
    e->next = *ep;
    *ep = e;
    f->count++;
  }
  e->size = st.st_size;
  e->mtime = st.st_mtim;
  eventring_cursor *c;
  int r = eventring_cursor_open_file(&c, path);
  if (r < 0) {
    e->unfinished = S_ISREG(st.st_mode) && st.st_size >= 8 &&
                    unfinished(dfd, name, r);
    refused(d, e, path, r);
    return;
  }
  e->unfinished = 0;
  void *handle = ops->found(arg, c, path, pid, &st);
  if (!handle) {
    eventring_cursor_free(c);
    refused(d, e, path, 0);
    return;
  }
  e->state = OFFERED;
  e->handle = handle;
}

int tool_dirscan(struct tool_dirscan *d, const struct tool_dirscan_ops *ops,
                 void *arg) {
  if (!d->files && !(d->files = calloc(1, sizeof *d->files))) return 0;
  struct dirscan_files *f = d->files;
  if (!f->bucket && grow(f) < 0) return 0;
  f->scan++;
  DIR *dp = opendir(d->dir);
  if (!dp) return 0; /* gone for now: nothing is forgotten */
  int dfd = dirfd(dp);
  struct dirent *de;
  while ((de = readdir(dp)) != NULL) {
    unsigned long image = 0;
    pid_t pid = tool_ring_name(de->d_name, &image);
    if (pid && (!image || d->images))
      scan_one(d, ops, arg, dfd, de->d_name, de->d_ino, pid);
  }
  closedir(dp);
  /* Forget the files that are gone; count the refusals worth another
   * look soon. */
  int fresh = 0;
  for (size_t i = 0; i < f->nbuckets; i++)
    for (struct dirscan_entry **ep = &f->bucket[i]; *ep;) {
      struct dirscan_entry *e = *ep;
      if (e->seen != f->scan) {
        *ep = e->next;
        f->count--;
        free(e);
        continue;
      }
      if (e->state == REFUSED &&
          (e->young || e->tries < (d->tries ? d->tries : DIRSCAN_TRIES)))
        fresh++;
      ep = &e->next;
    }
  return fresh;
}

int tool_dirscan_nofile(const struct tool_dirscan *d) {
  const struct dirscan_files *f = d->files;
  int n = 0;
  for (size_t i = 0; f && i < f->nbuckets; i++)
    for (const struct dirscan_entry *e = f->bucket[i]; e; e = e->next)
      n += e->state == REFUSED && no_descriptor(e->err);
  return n;
}

void tool_dirscan_free(struct tool_dirscan *d) {
  struct dirscan_files *f = d->files;
  if (!f) return;
  for (size_t i = 0; i < f->nbuckets; i++)
    for (struct dirscan_entry *e = f->bucket[i], *next; e; e = next) {
      next = e->next;
      free(e);
    }
  free(f->bucket);
  free(f);
  d->files = NULL;
}
