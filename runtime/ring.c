/* ring.c -- the ring file, and the writer's out-of-line eviction.
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
 * Overwrite policy: a flight recorder.  Each domain's ring has exactly one
 * writer, the thread holding the slot.  When a new event does not fit, the
 * writer advances ring_head past the oldest whole events, in batches: the
 * ring is cut into ER_CHUNKS (32) chunks, the first event or padding to
 * start in each chunk is a mark, whose position and count of events before
 * it the writer keeps (internal.h), and head goes to the first mark at or
 * after where the event needs it, so a ring that keeps wrapping moves head
 * once per chunk, without reading a word of the ring.  The ring so holds
 * up to a chunk (1/32 of it) and one event less history than it could.  The writer
 * publishes the new head, and only then overwrites the words; a reader
 * that copied an event and then finds ring_head beyond it knows the copy
 * may be torn.  The owner keeps its own copies of head, tail and the
 * counts, so the write path never loads a shared word.
 *
 * Stores into the ring are relaxed atomics: on x86-64 and AArch64 they are
 * the plain stores a memcpy would do, and they let concurrent readers in
 * the same process read without a data race.  The inline write path is in
 * writer.h; when the mapping may be unmapped is stw.h's to say.
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

static void put_name(unsigned char *slot, size_t slot_bytes,
                     const char *name) {
  size_t n = strnlen(name, slot_bytes - 1);
  memcpy(slot, name, n);
  memset(slot + n, 0, slot_bytes - n);
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

/* Whether the block holds a program name: the thread entries come after
 * one, empty when the writer gave none. */
static int has_program(const struct er_ext_desc *d) {
  return d->program || (d->flags & ER_EXT_FLAG_THREADS);
}

uint64_t er_ext_threads_offset(const struct er_ext_desc *d) {
  uint64_t n_names = (uint64_t)d->counts[0] + d->counts[1] + d->counts[2];
  return ER_EXT_WORDS * 8 + n_names * ER_EXT_NAME_BYTES +
         (d->flags & ER_EXT_FLAG_LEASES ? ER_EXT_LEASE_SLOTS * 8 : 0) +
         (has_program(d) ? ER_EXT_PROGRAM_BYTES : 0) +
         (d->flags & ER_EXT_FLAG_WALLCLOCK ? ER_EXT_WALL_WORDS * 8 : 0) +
         (d->flags & ER_EXT_FLAG_THREADS ? ER_EXT_CMDLINE_BYTES : 0);
}

uint64_t er_ext_bytes(const struct er_ext_desc *d) {
  return er_ext_threads_offset(d) +
         (d->flags & ER_EXT_FLAG_THREADS
              ? (uint64_t)d->threads * ER_EXT_THREAD_BYTES
              : 0) +
         (d->flags & ER_EXT_FLAG_START_TIME ? 8 : 0);
}

void er_ext_fill(uint64_t *x, const struct er_ext_desc *d) {
  x[ER_EXT_VERSION_W] = ER_EXT_VERSION;
  x[ER_EXT_SIZE] = er_ext_bytes(d);
  x[ER_EXT_PHASE_NUMBERING] = (uint64_t)d->numbering;
  x[ER_EXT_FLAGS] = d->flags | (has_program(d) ? ER_EXT_FLAG_PROGRAM : 0);
  x[ER_EXT_PID] = (uint64_t)d->pid;
  x[ER_EXT_DROPPED] = d->dropped;
  /* The lease words, when there are any, lie between the fixed part and
   * the names (ring_format.h); they start at 0, no holder. */
  unsigned leases = d->flags & ER_EXT_FLAG_LEASES ? ER_EXT_LEASE_SLOTS : 0;
  x[ER_EXT_NAMES_OFFSET] = ER_META_WORDS * 8 + (ER_EXT_WORDS + leases) * 8;
  x[ER_EXT_N_PHASES] = d->counts[0];
  x[ER_EXT_N_COUNTERS] = d->counts[1];
  x[ER_EXT_N_LIFECYCLE] = d->counts[2];
  x[ER_EXT_NAME_SLOT] = ER_EXT_NAME_BYTES;
  unsigned char *names = (unsigned char *)(x + ER_EXT_WORDS + leases);
  for (int t = 0; t < 3; t++)
    for (unsigned i = 0; i < d->counts[t]; i++, names += ER_EXT_NAME_BYTES)
      put_name(names, ER_EXT_NAME_BYTES, d->tables[t][i] ? d->tables[t][i] : "");
  if (has_program(d)) {
    put_name(names, ER_EXT_PROGRAM_BYTES, d->program ? d->program : "");
    names += ER_EXT_PROGRAM_BYTES;
  }
  if (d->flags & ER_EXT_FLAG_WALLCLOCK) {
    er_wall_fill((uint64_t *)names, d->wall);
    names += ER_EXT_WALL_WORDS * 8;
  }
  if (d->flags & ER_EXT_FLAG_THREADS) {
    put_name(names, ER_EXT_CMDLINE_BYTES, d->cmdline ? d->cmdline : "");
    /* Entries not given stay zero: never held. */
    if (d->thread_entries)
      memcpy((unsigned char *)x + er_ext_threads_offset(d), d->thread_entries,
             (size_t)d->threads * ER_EXT_THREAD_BYTES);
  }
  /* The start time is the block's last word, wherever the rest ends. */
  if (d->flags & ER_EXT_FLAG_START_TIME)
    x[er_ext_bytes(d) / 8 - 1] = d->start_time;
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
      .threads = max_domains,
      .tables = {eventring__phase_names_53, eventring__counter_names,
                 eventring__lifecycle_names},
      .counts = {eventring__n_phases_53, eventring__n_counters,
                 eventring__n_lifecycle}};
  if (er_proc_start_time(0, &desc.start_time) == 0)
    desc.flags |= ER_EXT_FLAG_START_TIME;
  if (params->preserve) desc.flags |= ER_EXT_FLAG_PRESERVED;
  desc.flags |= ER_EXT_FLAG_WALLCLOCK;
  er_wall_start(desc.wall);
  uint64_t ext_bytes = er_ext_bytes(&desc);
  uint64_t ring_words = UINT64_C(1) << log2;
  uint64_t headers_off = round_up(ER_META_WORDS * 8 + ext_bytes, 64);
  uint64_t data_off =
      round_up(headers_off + (uint64_t)max_domains * ER_RING_HEADER_BYTES, PAGE);
  uint64_t custom_off = data_off + (uint64_t)max_domains * ring_words * 8;
  uint64_t size = custom_off + (uint64_t)ER_NAME_SLOTS * ER_NAME_SLOT_BYTES;

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
  if ((err = reserve(0, data_off)) != 0) {
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

  uint64_t *x = (uint64_t *)((unsigned char *)map + ER_META_WORDS * 8);
  er_ext_fill(x, &desc);

  uint64_t *m = map;
  m[ER_META_MAX_DOMAINS] = max_domains;
  m[ER_META_RING_HEADER_SIZE] = ER_RING_HEADER_BYTES;
  m[ER_META_RING_SIZE_BYTES] = ring_words * 8;
  m[ER_META_RING_SIZE_ELEMENTS] = ring_words;
  m[ER_META_HEADERS_OFFSET] = headers_off;
  m[ER_META_DATA_OFFSET] = data_off;
  m[ER_META_CUSTOM_EVENTS_OFFSET] = custom_off;
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
  er_wall_file(x);
  er_st.threads = (uint64_t *)((unsigned char *)x + er_ext_threads_offset(&desc));
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
  put_name(er_st.map + off, ER_NAME_SLOT_BYTES, name);
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

/* Marks (internal.h, ER_CHUNKS): the event or padding about to be
 * written at `pos` is one when it is the first to start in a chunk. */
static void take_mark(struct er_domain *d, uint64_t pos) {
  if (pos < d->mark_at) return;
  if (d->mk_n == ER_MARKS) {
    /* Cannot happen (see ER_MARKS); were it to, losing the oldest mark
     * only makes a later eviction free more. */
    d->mk_first = (d->mk_first + 1) % ER_MARKS;
    d->mk_n--;
  }
  struct er_mark *m = &d->marks[(d->mk_first + d->mk_n) % ER_MARKS];
  m->pos = pos;
  m->count = d->written;
  d->mk_n++;
  d->mark_at = (pos | d->chunk_mask) + 1;
}

/* Advances head so that the words up to `end` fit in the ring, to the
 * first mark at or after end - size, or, when there is none, past
 * everything written; `pad` words of padding precede the new event.
 * Returns 1 when the padding itself had to be given up (the padding and
 * the event together are longer than the ring), in which case the caller
 * does not write it. */
static int evict(struct er_domain *d, uint64_t end, uint64_t pad) {
  uint64_t size = d->mask + 1, need = end - size;
  uint64_t head, evicted;
  int skip_pad = 0;
  while (d->mk_n && d->marks[d->mk_first].pos < need) {
    d->mk_first = (d->mk_first + 1) % ER_MARKS;
    d->mk_n--;
  }
  if (d->mk_n) {
    /* Popped too: head never comes back to it. */
    const struct er_mark *m = &d->marks[d->mk_first];
    head = m->pos;
    evicted = m->count;
    d->mk_first = (d->mk_first + 1) % ER_MARKS;
    d->mk_n--;
  } else {
    /* Everything written is gone.  If the padding still does not fit,
     * start the ring again after where the padding would have been. */
    head = d->tail;
    evicted = d->written;
    if (end - head > size) {
      head += pad;
      skip_pad = 1;
    }
  }
  d->head = head;
  d->evicted = evicted;
  /* Publish head and evicted as a pair in the next slot, then its number,
   * then head itself for OCaml's readers (see ring_format.h).  Each store
   * is a release: a reader that sees a slot rewritten also sees the PSEQ
   * stored before it, and so knows the slot is no longer the one it
   * asked for. */
  uint64_t k = ++d->seq;
  uint64_t *pair = &d->hdr[ER_RING_PAIRS + 2 * (k % ER_RING_NPAIRS)];
  er_store_rel(&pair[0], head);
  er_store_rel(&pair[1], evicted);
  er_store_rel(&d->hdr[ER_RING_PSEQ], k);
  (void)ER_HOOK(ER_HOOK_PAIR_PUBLISHED);
  er_store_rel(&d->hdr[ER_RING_HEAD], head);
  /* The new head must be visible before any of the words it frees is
   * overwritten: a reader checks head after copying an event to detect a
   * torn copy.  Pairs with the reader's acquire fence between its copy
   * and its second load of the pair.  On x86-64 this emits no instruction
   * (stores are not reordered with stores). */
  er_fence_release();
  return skip_pad;
}

uint64_t *er_make_room(struct er_domain *d, unsigned len) {
  uint64_t size = d->mask + 1, tail = d->tail;
  uint64_t idx = tail & d->mask;
  uint64_t pad = idx + len > size ? size - idx : 0;
  uint64_t end = tail + pad + len;
  int skip_pad = 0;
  if (end - d->head > size) skip_pad = evict(d, end, pad);
  if (pad) {
    if (!skip_pad) {
      take_mark(d, tail);
      er_store_rlx(&d->ring[idx], ER_HDR(pad, 0, 0, 0));
    }
    tail += pad;
    d->tail = tail;
    idx = 0;
  }
  take_mark(d, tail);
  uint64_t room = d->head + size;
  d->limit = d->mark_at < room ? d->mark_at : room;
  return &d->ring[idx];
}
