/* ring.c -- the ring file: made, bound to the domains, dropped.
 *
 * The file (format version 1, see doc/FORMAT.md and ring_format.h):
 *
 *   0                      metadata header (8 words)
 *   64                     extension block: fixed words, then name tables
 *   headers_offset         max_domains ring headers, 256 bytes each
 *   data_offset (page)     max_domains rings, 2^e words each
 *   custom_events_offset   8192 user event names, 128 bytes each
 *
 * The file is sparse.  Only what is used is given disk blocks: the
 * headers when the file is created, a domain's ring when a thread first
 * takes its slot, a name's page when the name is written.  Blocks are
 * reserved with posix_fallocate() before the first store, so that a full
 * disk is an error we report rather than a SIGBUS in the host.
 *
 * Each domain's ring is filled by its writer (writer.h, evict.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsize.h"
#include "layout.h"
#include "sigbus.h"
#include "starttime.h"
#include "wallclock.h"
#include "writer.h"

#define PAGE 4096u

static uint64_t round_up(uint64_t x, uint64_t to) {
  return (x + to - 1) / to * to;
}

/* Gives the pages of [off, off + len) disk blocks.  Returns 0 or an errno
 * value: EFBIG when the file size limit, lowered since the file was
 * made, is below them (posix_fallocate(3) may write the blocks, and a
 * write past the limit raises SIGXFSZ: fsize.h). */
static int reserve(uint64_t off, uint64_t len) {
  uint64_t start = off / PAGE * PAGE;
  uint64_t end = round_up(off + len, PAGE);
  if (end > er_st.map_bytes) end = er_st.map_bytes;
  if (!er_fsize_allows(end)) return EFBIG;
  return posix_fallocate(er_st.fd, (off_t)start, (off_t)(end - start));
}

int er_file_path(char *buf, size_t size, const char *dir, pid_t pid) {
  if (!dir) dir = secure_getenv("OCAML_RUNTIME_EVENTS_DIR");
  if (!dir || !*dir) dir = ".";
  int n = snprintf(buf, size, "%s/%ld.events", dir, (long)pid);
  return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int er_file_open_new(const char *path) {
  /* O_EXCL and O_NOFOLLOW: a file or a link planted at the path (in a
   * shared directory) is refused, never written through; 0600 because
   * the events are the owner's business. */
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return -errno;
  return er_fd_above_std(fd);
}

int er_fd_above_std(int fd) {
  /* A host started with stdin, stdout or stderr closed would otherwise
   * give us that number, and its next printf would write into our file
   * (and its next open() would not get the descriptor it expects). */
  if (fd > STDERR_FILENO) return fd;
  int high = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  int err = errno;
  close(fd);
  return high < 0 ? -err : high;
}

/* Puts the complete file `fresh` in place of the one at `path` whose
 * writer is gone (er_leftover_take() described it in *stale).  The names are exchanged
 * atomically, so a reader never finds the name missing or the file half
 * made; then the file now at `fresh` must be the stale one checked, or
 * something put there since (by whoever can write in the directory) is
 * put back and we give up.  Returns 0 or -EEXIST. */
static int swap_in(const char *fresh, const char *path,
                   const struct stat *stale) {
  if (renameat2(AT_FDCWD, fresh, AT_FDCWD, path, RENAME_EXCHANGE) != 0)
    return -EEXIST; /* no RENAME_EXCHANGE here: keep the old answer */
  struct stat st;
  if (lstat(fresh, &st) == 0 && st.st_dev == stale->st_dev &&
      st.st_ino == stale->st_ino) {
    unlink(fresh);
    return 0;
  }
  renameat2(AT_FDCWD, fresh, AT_FDCWD, path, RENAME_EXCHANGE);
  return -EEXIST;
}

int er_file_create(const char *dir, const struct er_params *params) {
  unsigned log2 = params->log2, max_domains = params->max_domains;
  int n = er_file_path(er_st.path, sizeof er_st.path, dir, getpid());
  if (n) return n;
  char cmdline[ER_EXT_CMDLINE_BYTES];
  er_cmdline_text(cmdline, sizeof cmdline, params->record_cmdline);

  struct er_ext_desc desc = {
      .numbering = ER_PHASES_OCAML53,
#ifdef EVENTRING_INSTRUMENTED
      .flags = ER_EXT_FLAG_INSTRUMENTED | ER_EXT_FLAG_LEASES |
               ER_EXT_FLAG_THREADS,
#else
      .flags = ER_EXT_FLAG_LEASES | ER_EXT_FLAG_THREADS,
#endif
      .pid = getpid(),
      .program = er_program_name(),
      .cmdline = cmdline,
      .tables = {eventring__phase_names_53, eventring__counter_names,
                 eventring__lifecycle_names},
      .counts = {eventring__n_phases_53, eventring__n_counters,
                 eventring__n_lifecycle}};
  if (er_proc_start_time(0, &desc.start_time) == 0)
    desc.flags |= ER_EXT_FLAG_START_TIME;
  if (params->preserve) desc.flags |= ER_EXT_FLAG_PRESERVED;
  desc.flags |= ER_EXT_FLAG_WALLCLOCK | ER_EXT_FLAG_META;
  er_wall_start(desc.wall);
  desc.ocaml_version = er_ocaml_version();
  desc.labels = params->labels;
  struct er_layout l;
  if (er_ext_layout(&l, &desc, max_domains, UINT64_C(1) << log2, PAGE) != 0)
    return -EFBIG;
  uint64_t size = l.file_bytes;

  /* Refused before it exists (fsize.h); a limit lowered later is checked
   * again by each reservation (reserve()). */
  if (!er_fsize_allows(size)) return -EFBIG;

  /* The file is created at its name, or, when a file of our pid whose
   * writer is gone is there (leftovers.c), beside it, to be exchanged
   * with it once complete; that one first gets a name of its own when it
   * is to be kept.  `old` holds it locked until then. */
  struct stat stale;
  char fresh[PATH_MAX];
  const char *created = er_st.path;
  int old = -1, keep = 0;
  int fd = er_file_open_new(er_st.path);
  if (fd == -EEXIST && (desc.flags & ER_EXT_FLAG_START_TIME) &&
      snprintf(fresh, sizeof fresh, "%s.XXXXXX", er_st.path) <
          (int)sizeof fresh &&
      (old = er_leftover_take(er_st.path, desc.start_time, &stale, &keep)) >=
          0) {
    int r = keep ? er_leftover_aside(er_st.path, desc.pid, &stale) : 0;
    if (r == 0) {
      fd = mkostemp(fresh, O_CLOEXEC);
      fd = fd < 0 ? -errno : er_fd_above_std(fd);
      created = fresh;
    }
  }
  if (fd < 0) {
    if (old >= 0) close(old);
    return fd;
  }
  /* Held until the descriptor closes: this file's writer is alive. */
  er_file_hold(fd);
  int err = 0;
  void *map = MAP_FAILED;
  if (ftruncate(fd, (off_t)size) < 0) {
    err = -errno;
    goto fail;
  }
  er_st.fd = fd;
  er_st.map_bytes = size;
  if ((err = reserve(0, l.data_off)) != 0) {
    err = -err;
    goto fail;
  }
  map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    err = -errno;
    goto fail;
  }
  /* Without this, the first write faults read ahead around the page (the
   * device's read_ahead_kb, megabytes), filling the page cache with the
   * holes of idle rings: an idle slot must cost no memory. */
  madvise(map, size, MADV_RANDOM);
  /* Guarded before the first store: the owner may cut the file while we
   * fill it in (sigbus.c). */
  er_sigbus_guard(map, size, fd, er_st.path);
  (void)ER_HOOK(ER_HOOK_FILE_MAPPED);

  uint64_t *x = (uint64_t *)((unsigned char *)map + ER_EXT_OFFSET);
  er_ext_fill(x, &desc, &l);

  uint64_t *m = map;
  m[ER_META_MAX_DOMAINS] = max_domains;
  m[ER_META_RING_HEADER_SIZE] = ER_RING_HEADER_BYTES;
  m[ER_META_RING_SIZE_BYTES] = l.ring_bytes;
  m[ER_META_RING_SIZE_ELEMENTS] = l.ring_words;
  m[ER_META_HEADERS_OFFSET] = l.headers_off;
  m[ER_META_DATA_OFFSET] = l.data_off;
  m[ER_META_CUSTOM_EVENTS_OFFSET] = l.custom_off;
  /* The magic and the version go last, each with release order: a reader
   * polling a file being created sees either no version or a complete
   * header behind it. */
  er_store_rel(&x[ER_EXT_MAGIC_W], ER_EXT_MAGIC);
  er_store_rel(&m[ER_META_VERSION], ER_FORMAT_VERSION);
  if (created != er_st.path && (err = swap_in(created, er_st.path, &stale))) {
    goto fail;
  }
  if (old >= 0) close(old);
  er_st.kept_aside = keep;
  er_st.map = map;
  er_st.meta = m;
  er_st.ext = x;
  er_wall_file(l.wall_off);
  er_st.threads = (uint64_t *)((unsigned char *)map + l.threads_off);
  er_st.max_domains = max_domains;
  er_st.ring_log2 = log2;
  er_st.pid = getpid();
  er_st.file_gen++;
  return 0;

fail:
  if (old >= 0) close(old);
  if (map != MAP_FAILED) {
    er_sigbus_unguard();
    munmap(map, size);
  }
  /* We created this path with O_EXCL just now, so it is ours to remove. */
  unlink(created);
  close(fd);
  er_st.fd = -1;
  er_st.map_bytes = 0;
  return err;
}

void er_file_drop(unsigned what) {
  /* Without ER_FILE_UNMAP the mapping is forgotten but stays: a probe may
   * still write into it (stw.h). */
  if (what & ER_FILE_UNMAP) er_sigbus_unguard();
  else er_sigbus_forget_fd();
  if ((what & ER_FILE_UNMAP) && er_st.map) munmap(er_st.map, er_st.map_bytes);
  if (er_st.fd >= 0) close(er_st.fd);
  if (what & ER_FILE_UNLINK) unlink(er_st.path);
  er_st.map = NULL;
  er_st.meta = er_st.ext = er_st.threads = NULL;
  er_st.map_bytes = 0;
  er_st.fd = -1;
}

void er_file_write_name(int id, const char *name) {
  uint64_t off = er_st.meta[ER_META_CUSTOM_EVENTS_OFFSET] +
                 (uint64_t)id * ER_NAME_SLOT_BYTES;
  if (reserve(off, ER_NAME_SLOT_BYTES) != 0) {
    /* One line per file, not one per name. */
    static uint64_t warned_gen;
    if (warned_gen != er_st.file_gen) {
      warned_gen = er_st.file_gen;
      er_warn("no disk space for user event names in %s (first: %d, %s)",
              er_st.path, id, name);
    }
    return;
  }
  er_put_name(er_st.map + off, ER_NAME_SLOT_BYTES, name);
}

int er_domain_bind_file(struct er_domain *d) {
  if (d->file_gen == er_st.file_gen) return 0; /* still this file's ring */
  d->file_gen = er_st.file_gen;
  d->ext = er_st.ext; /* where its drops are counted, ring or not */
  d->head = d->tail = d->evicted = d->written = d->seq = 0;
  d->last_writer = 0; /* a shared slot's first event writes a marker */
  d->ring = d->hdr = d->thr = NULL;
  d->limit = 0; /* until er_make_room() has taken the first mark */
  d->mark_at = 0;
  d->mk_first = d->mk_n = 0;
  if ((unsigned)d->id >= er_st.max_domains) return 0;
  uint64_t ring_bytes = er_st.meta[ER_META_RING_SIZE_BYTES];
  uint64_t off = er_st.meta[ER_META_DATA_OFFSET] + (uint64_t)d->id * ring_bytes;
  int err = reserve(off, ring_bytes);
  if (err != 0) {
    er_warn("domain %d is not traced: cannot reserve its ring in %s: %s",
            d->id, er_st.path, er_errno_text(err));
    return 0;
  }
  d->ring = (uint64_t *)(er_st.map + off);
  d->hdr = (uint64_t *)(er_st.map + er_st.meta[ER_META_HEADERS_OFFSET] +
                        (uint64_t)d->id * ER_RING_HEADER_BYTES);
  d->mask = er_st.meta[ER_META_RING_SIZE_ELEMENTS] - 1;
  d->chunk_mask = d->mask >> ER_CHUNKS_LOG2; /* 0: chunks of a word */
  d->thr = er_st.threads + (uint64_t)d->id * ER_THR_WORDS;
  return 1;
}
