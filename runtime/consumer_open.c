/* consumer_open.c -- opening a cursor: the file's metadata and extension
 * block checked and copied into it.
 *
 * The file is never trusted.  Every value is loaded once into a local and
 * checked before use: the metadata and the extension block against the
 * file's size when the cursor opens, positions against the ring size and
 * against MAX_POSITION, lost counts against the positions, event lengths
 * against the copy and the type, name slots for a NUL.
 *
 * Where each section lies is layout.h's to say (er_layout_meta(),
 * er_layout_ext()); what this file adds is what the sections hold: the
 * extension block's version, the name tables' NULs, the program name,
 * the command line, the writer's metadata.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cursor.h"
#include "layout.h"
#include "numbering.h"

static int setup(eventring_cursor **out, eventring_cursor *c, uint64_t size);

/* The string of the `bytes` bytes (at most 256) at `off` into a copy at
 * *out.  Returns 1, 0 when they hold no NUL (*out untouched), or a
 * negative error from get() or -ENOMEM. */
static int read_string(const eventring_cursor *c, uint64_t off, size_t bytes,
                       char **out) {
  char s[256];
  int e = get(c, off, s, bytes);
  if (e) return e;
  if (!memchr(s, 0, bytes)) return 0;
  return (*out = strdup(s)) ? 1 : -ENOMEM;
}

/* The program name that follows the name tables (ER_EXT_FLAG_PROGRAM),
 * copied into c->program when it is there and well formed, then the
 * command line and the thread entries (ER_EXT_FLAG_THREADS): the line
 * copied into c->cmdline, the entries' offset kept for
 * eventring_cursor_slot_thread().  A name or a line that is not well
 * formed is ignored, as nothing else depends on it, and so is what
 * follows it.  Returns 0 or a negative error from get(). */
static int read_program(eventring_cursor *c, const struct er_layout *l) {
  if (!l->program_off) return 0;
  int e = read_string(c, l->program_off, ER_EXT_PROGRAM_BYTES, &c->program);
  if (e <= 0 || !l->cmdline_off) return e < 0 ? e : 0;
  e = read_string(c, l->cmdline_off, ER_EXT_CMDLINE_BYTES, &c->cmdline);
  if (e <= 0) return e;
  c->threads_off = l->threads_off;
  return 0;
}

/* The writer's metadata (ER_EXT_FLAG_META): its OCaml version into
 * c->ocaml_version and its labels into c->labels, each when well formed
 * (a version of printable characters, a labels' area that
 * er_labels_check() accepts: all the labels or none); nothing else
 * depends on them.  Returns 0 or a negative error from get(). */
static int read_meta(eventring_cursor *c, const struct er_layout *l) {
  if (!l->meta_off) return 0;
  unsigned char sec[ER_EXT_META_BYTES];
  uint64_t seq1, seq2;
  /* The writer changes the section under a sequence count
   * (eventring_set_ocaml_version()); one that dies mid-update leaves it
   * odd, so a few tries, then the section as it is. */
  for (int tries = 0; tries < 100; tries++) {
    int e = get_acq(c, l->meta_off + ER_MD_SEQ, &seq1);
    if (!e) e = get(c, l->meta_off + 8, sec + 8, sizeof sec - 8);
    /* Pairs with the writer's release fence after its odd sequence. */
    er_fence_acquire();
    if (!e) e = get(c, l->meta_off + ER_MD_SEQ, &seq2, 8);
    if (e) return e;
    if (seq1 == seq2 && !(seq1 & 1)) break;
  }
  const char *v = (const char *)sec + ER_MD_VERSION;
  size_t vn = strnlen(v, ER_EXT_OCAML_VERSION_BYTES);
  if (vn && vn < ER_EXT_OCAML_VERSION_BYTES && er_label_value_ok(v, vn) &&
      !(c->ocaml_version = strdup(v)))
    return -ENOMEM;
  const unsigned char *area = sec + ER_MD_LABELS;
  int n = er_labels_check(area, ER_MD_LABEL_BYTES);
  if (n <= 0) return 0;
  /* Each "name=value" becomes "name\0value\0": as many bytes. */
  if (!(c->labels = malloc(ER_MD_LABEL_BYTES))) return -ENOMEM;
  size_t pos = 0, at = 0;
  struct er_label lb;
  while (er_labels_next(area, ER_MD_LABEL_BYTES, &pos, &lb) == 1) {
    memcpy(c->labels + at, lb.name, lb.name_len);
    at += lb.name_len;
    c->labels[at++] = '\0';
    memcpy(c->labels + at, lb.value, lb.value_len);
    at += lb.value_len;
    c->labels[at++] = '\0';
  }
  c->n_labels = (unsigned)n;
  return 0;
}

/* Reads the extension block, if there is one, whose place `l` (from
 * er_layout_meta()) gives, and copies its name tables and program name.
 * Returns 0, EVENTRING_E_CORRUPT when the block is there but bad, or an
 * error from get(). */
static int read_ext(eventring_cursor *c, struct er_layout *l, uint64_t size) {
  if (c->headers_off < ER_EXT_OFFSET + ER_EXT_WORDS * 8) return 0;
  uint64_t x[ER_EXT_WORDS];
  int e = get(c, ER_EXT_OFFSET, x, sizeof x);
  if (e) return e;
  if (x[ER_EXT_MAGIC_W] != ER_EXT_MAGIC) return 0;
  if (x[ER_EXT_VERSION_W] != ER_EXT_VERSION) return EVENTRING_E_VERSION;
  /* The pairs that give head and the events before it end eventring's
   * ring header: a file with this block and shorter headers would have
   * us read them from the next domain's header, or past the last. */
  if (c->hdr_bytes < OUR_HEADER_BYTES) return EVENTRING_E_CORRUPT;
  c->writer_pid = x[ER_EXT_PID] <= INT_MAX ? (pid_t)x[ER_EXT_PID] : 0;
  if ((e = er_layout_ext(l, x, size)) != 0) return e;
  if (x[ER_EXT_PHASE_NUMBERING] != ER_PHASES_OCAML53 &&
      x[ER_EXT_PHASE_NUMBERING] != ER_PHASES_OCAML50)
    return EVENTRING_E_CORRUPT;
  uint64_t np = x[ER_EXT_N_PHASES], nc = x[ER_EXT_N_COUNTERS];
  uint64_t slot = l->name_bytes;
  c->ours = 1;
  c->numbering = (int)x[ER_EXT_PHASE_NUMBERING];
  c->n_phases = (unsigned)np;
  c->n_counters = (unsigned)nc;
  c->name_bytes = (unsigned)slot;
  size_t bytes = (size_t)((np + nc) * slot);
  c->ext_names = malloc(bytes ? bytes : 1);
  if (!c->ext_names) return -ENOMEM;
  if (bytes && (e = get(c, l->names_off, c->ext_names, bytes)) != 0)
    return e;
  for (uint64_t i = 0; i < np + nc; i++)
    if (!memchr(c->ext_names + i * slot, 0, slot)) return EVENTRING_E_CORRUPT;
  c->wall_off = l->wall_off;
  if ((e = read_program(c, l)) != 0) return e;
  return read_meta(c, l);
}

static int open_fd(eventring_cursor **out, int fd, enum open_as as) {
  *out = NULL;
  struct stat st;
  if (fstat(fd, &st) < 0) return -errno;
  if (!S_ISREG(st.st_mode)) return EVENTRING_E_NOTRING;
  /* A ring file holds another user's program's events: only its owner
   * (or the superuser) may read it, as the 0600 mode says. */
  if (st.st_uid != geteuid() && geteuid() != 0) return -EPERM;
  uint64_t size = (uint64_t)st.st_size;
  if (size < ER_META_WORDS * 8) {
    /* Too short to map usefully, but what it holds says whether it is a
     * ring file cut short or something else. */
    uint64_t meta[ER_META_WORDS] = {0};
    if (pread(fd, meta, (size_t)size, 0) < 0) return -errno;
    return er_check_meta(meta, size);
  }
  if (size > (uint64_t)SIZE_MAX) return EVENTRING_E_CORRUPT;

  eventring_cursor *c = er_cursor_new_fd(fd, size, as);
  if (!c) return -ENOMEM;
  return setup(out, c, size);
}

/* Checks the metadata and the extension block of the file in c->map
 * (`size` bytes) and completes the cursor.  Frees it on failure, except
 * for the file descriptor, which the caller closes. */
static int setup(eventring_cursor **out, eventring_cursor *c, uint64_t size) {
  uint64_t meta[ER_META_WORDS];
  struct er_layout l;
  int err = get(c, 0, meta, sizeof meta);
  if (!err) err = er_layout_meta(&l, meta, size);
  if (err) goto fail;
  c->max_domains = l.max_domains;
  c->hdr_bytes = l.hdr_bytes;
  c->ring_bytes = l.ring_bytes;
  c->ring_words = l.ring_words;
  c->headers_off = l.headers_off;
  c->data_off = l.data_off;
  c->custom_off = l.custom_off;
  c->numbering = ER_PHASES_OCAML53;
  if ((err = read_ext(c, &l, size)) != 0) goto fail;
  c->rings = calloc((size_t)c->max_domains, sizeof *c->rings);
  c->buf_words = c->ring_words < CHUNK ? c->ring_words : CHUNK;
  c->buf = malloc(c->buf_words * sizeof *c->buf);
  if (!c->rings || !c->buf) {
    err = -ENOMEM;
    goto fail;
  }
  c->basis = EVENTRING_NUMBERING_FROM_FILE;
  if (!c->ours && (err = er_cursor_infer_numbering(c)) != 0) goto fail;
  er_cursor_set_fast_kinds(c);
  *out = c;
  return 0;

fail:
  c->fd = -1; /* the caller closes it */
  eventring_cursor_free(c);
  return err;
}

static int open_path(eventring_cursor **out, const char *path,
                     enum open_as as) {
  /* O_NONBLOCK: opening a FIFO planted at the path must not block us. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return -errno;
  int r = open_fd(out, fd, as);
  if (r != 0) close(fd);
  return r;
}

int eventring_cursor_open_file(eventring_cursor **out, const char *path) {
  if (!out) return EVENTRING_E_INVAL;
  *out = NULL;
  if (!path) return EVENTRING_E_INVAL;
  return open_path(out, path, OPEN_OTHER);
}

int eventring_cursor_open(eventring_cursor **out, const char *dir, pid_t pid) {
  if (!out) return EVENTRING_E_INVAL;
  *out = NULL;
  char path[PATH_MAX];
  if (pid == 0 && !dir) {
    /* This process: the file its tracing writes (a forked child's made
     * now, if pending). */
    er_lock();
    er_fork_file_locked();
    int live = er_iload_rlx(&er_st.live);
    if (live) snprintf(path, sizeof path, "%s", er_st.path);
    er_unlock();
    if (!live) return EVENTRING_E_NOTSTARTED;
    /* Our own file, mapped: a cut is repaired (sigbus.c).  Opening the
     * file by name again could find another, should it have been
     * replaced: it is then read like any other file. */
    return open_path(out, path, OPEN_OWN);
  }
  if (pid < 0) return EVENTRING_E_INVAL;
  int n = er_file_path(path, sizeof path, dir, pid ? pid : getpid());
  if (n) return n;
  return open_path(out, path, OPEN_OTHER);
}

/* A cursor on a ring file's image in memory, which stays the caller's and
 * must outlive the cursor: the same checks and decoding, without a file.
 * For the fuzzer, which would otherwise spend its time in mmap(). */
int er_cursor_open_image(eventring_cursor **out, const void *bytes,
                         size_t len) {
  *out = NULL;
  if ((uintptr_t)bytes % 8) return EVENTRING_E_INVAL;
  if (len < ER_META_WORDS * 8) {
    uint64_t meta[ER_META_WORDS] = {0};
    memcpy(meta, bytes, len);
    return er_check_meta(meta, len);
  }
  eventring_cursor *c = er_cursor_new_image(bytes, len);
  if (!c) return -ENOMEM;
  return setup(out, c, len);
}

void eventring_cursor_free(eventring_cursor *c) {
  if (!c) return;
  er_cursor_close_file(c);
  er_cursor_kept_free(c->kept);
  if (c->user_names)
    for (unsigned i = 0; i < ER_NAME_SLOTS; i++)
      if (c->user_names[i]) free(c->user_names[i]);
  free(c->user_names);
  free(c->buf);
  free(c->ext_names);
  free(c->program);
  free(c->cmdline);
  free(c->ocaml_version);
  free(c->labels);
  free(c->rings);
  er_numbering_free(c->infer);
  free(c);
}

