/* cmdline.c -- what a ring file says of the command that started its
 * writer.
 *
 * The file has room for a command line (ER_EXT_CMDLINE_BYTES, FORMAT.md),
 * but arguments carry secrets (`mysql -pSECRET`, tokens, URLs with
 * passwords), and a ring file outlives its writer when preserved, is
 * copied into snapshots and summed up in reports.  So the field holds the
 * program name unless the full command line is asked for: by the
 * environment (EVENTRING_RECORD_CMDLINE, read at every start, params.c)
 * or by the program (eventring_record_cmdline(), which wins over the
 * environment from the call on).  The program name is the host's
 * (eventring__set_program()), else the one the C library knows.
 * The host's OCaml version (eventring_set_ocaml_version(), which the
 * OCaml bindings call) goes into the metadata section (ER_EXT_FLAG_META)
 * in the same way: of later files, and of the live one, made before the
 * host's initialisation ran when tracing starts from the environment.
 * Everything here runs under er_st.lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "layout.h"

/* The program name the host gave (eventring__set_program()), or empty;
 * under er_st.lock. */
static char program[ER_EXT_PROGRAM_BYTES];

/* The live file's layout into *l: 1, or 0 without a live file. */
static int live_layout(struct er_layout *l) {
  return er_st.map &&
         er_layout_read(l, er_st.meta, er_st.ext, er_st.map_bytes) == 0;
}

const char *er_program_name(void) {
  return program[0] ? program : program_invocation_short_name;
}

void eventring__set_program(const char *name) {
  if (!name) return;
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  if (!*base) return;
  er_lock();
  snprintf(program, sizeof program, "%s", base);
  /* A file made before (OCAML_RUNTIME_EVENTS_START starts tracing before
   * the host's own initialisation) is renamed too.  Readers copy the
   * name when they open the file; one that opens it while this runs may
   * get a mixed name, once. */
  struct er_layout l;
  if (live_layout(&l) && l.program_off) {
    unsigned char *at = er_st.map + l.program_off;
    memset(at, 0, ER_EXT_PROGRAM_BYTES);
    memcpy(at, program, strlen(program));
  }
  /* Unless it records the arguments, the command line is the name. */
  er_cmdline_rewrite_locked();
  er_unlock();
}

/* The host's OCaml version (eventring_set_ocaml_version()), or empty;
 * under er_st.lock. */
static char ocaml_version[ER_EXT_OCAML_VERSION_BYTES];

const char *er_ocaml_version(void) { return ocaml_version; }

void eventring_set_ocaml_version(const char *version) {
  if (!version) version = "";
  er_lock();
  snprintf(ocaml_version, sizeof ocaml_version, "%s", version);
  struct er_layout l;
  if (live_layout(&l) && l.meta_off) {
    /* Readers copy the section between two loads of an even SEQ
     * (ring_format.h), as they copy a thread entry. */
    uint64_t *sec = (uint64_t *)(er_st.map + l.meta_off);
    uint64_t seq = er_load_rlx(&sec[ER_MD_SEQ]) + 1;
    er_store_rlx(&sec[ER_MD_SEQ], seq);
    er_fence_release();
    uint64_t w[ER_EXT_OCAML_VERSION_BYTES / 8];
    er_put_name((unsigned char *)w, sizeof w, ocaml_version);
    for (size_t i = 0; i < sizeof w / 8; i++)
      er_store_rlx(&sec[ER_MD_VERSION / 8 + i], w[i]);
    er_store_rel(&sec[ER_MD_SEQ], seq + 1);
  }
  er_unlock();
}

/* -1 while the environment decides, else the program's choice. */
static int chosen = -1;
/* The environment's answer at the last start: whether the live file
 * records the full command line when the program has not chosen. */
static int env_asked;

/* The process's arguments joined by spaces into buf (cut to fit); empty
 * when /proc does not say.  Async-signal-safe: a forked child's file is
 * made in the fork handler. */
static void read_cmdline(char *buf, size_t size) {
  buf[0] = '\0';
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n <= 0) return;
  /* The arguments end with a NUL each: the last is the string's end. */
  while (n > 0 && buf[n - 1] == '\0') n--;
  for (ssize_t i = 0; i < n; i++)
    if (buf[i] == '\0') buf[i] = ' ';
  buf[n] = '\0';
}

void er_cmdline_text(char *buf, size_t size, int env_asks) {
  env_asked = env_asks;
  if (chosen > 0 || (chosen < 0 && env_asks)) {
    read_cmdline(buf, size);
    return;
  }
  size_t n = strnlen(er_program_name(), size - 1);
  memcpy(buf, er_program_name(), n);
  buf[n] = '\0';
}

void er_cmdline_rewrite_locked(void) {
  struct er_layout l;
  if (!live_layout(&l) || !l.cmdline_off) return;
  char text[ER_EXT_CMDLINE_BYTES];
  er_cmdline_text(text, sizeof text, env_asked);
  /* Readers copy the line when they open the file; one that opens it
   * while this runs may get a mixed line, once. */
  unsigned char *at = er_st.map + l.cmdline_off;
  size_t n = strlen(text);
  memcpy(at, text, n);
  memset(at + n, 0, ER_EXT_CMDLINE_BYTES - n);
}

void eventring_record_cmdline(int on) {
  er_lock();
  chosen = on != 0;
  er_cmdline_rewrite_locked();
  er_unlock();
}
