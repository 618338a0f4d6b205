/* dirscan.c -- finding the ring files that appear in a directory.
 *
 * The host mode of `eventring metrics --dir DIR` and `eventring watch
 * --dir DIR` follows every traced process whose ring file is in DIR: the
 * processes of a service run with OCAML_RUNTIME_EVENTS_DIR=DIR come and
 * go, and each new <pid>.events must be picked up.  A scan lists the
 * directory, asks the subcommand whether it follows each file already
 * (it knows the files by device, inode and path: a file replaced by
 * another of the same name is a new one), and opens a cursor on each new
 * file for the subcommand to take.
 *
 * A file that cannot be opened is tried again at the next scan: a file
 * caught while its writer creates it looks malformed for an instant.
 * Only a lasting refusal (DIRSCAN_TRIES scans in a row) is reported, once
 * per file; another user's file or a stray non-ring file would otherwise
 * fill standard error at every scan.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tool.h"

#define DIRSCAN_TRIES 3

struct dirscan_refused {
  struct dirscan_refused *next;
  char name[NAME_MAX + 1];
  ino_t ino;
  int tries;
  int reported;
  int seen; /* in the current scan */
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
  return TOOL_EXIT_OK;
}

static void note_refused(struct tool_dirscan *d, const char *name, ino_t ino,
                         const char *path, int err) {
  struct dirscan_refused *r;
  for (r = d->refused; r; r = r->next)
    if (!strcmp(r->name, name)) break;
  if (r && r->ino != ino) r->ino = ino, r->tries = 0, r->reported = 0;
  if (!r) {
    r = calloc(1, sizeof *r);
    if (!r) return;
    snprintf(r->name, sizeof r->name, "%s", name);
    r->ino = ino;
    r->next = d->refused;
    d->refused = r;
  }
  r->seen = 1;
  if (++r->tries >= DIRSCAN_TRIES && !r->reported) {
    r->reported = 1;
    tool_error("%s: %s: %s (skipped)", d->who, path, eventring_strerror(err));
  }
}

int tool_dirscan(struct tool_dirscan *d, const struct tool_dirscan_ops *ops,
                 void *arg) {
  int refused = 0;
  for (struct dirscan_refused *r = d->refused; r; r = r->next) r->seen = 0;
  DIR *dp = opendir(d->dir);
  struct dirent *e;
  while (dp && (e = readdir(dp)) != NULL) {
    pid_t pid = tool_pid_of_path(e->d_name);
    if (!pid) continue;
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", d->dir, e->d_name) >=
        sizeof path)
      continue;
    struct stat st;
    if (lstat(path, &st) != 0 || ops->known(arg, path, &st)) continue;
    eventring_cursor *c;
    int r = eventring_cursor_open_file(&c, path);
    if (r < 0) {
      note_refused(d, e->d_name, st.st_ino, path, r);
      refused++;
      continue;
    }
    if (ops->found(arg, c, path, pid, &st) != 0) eventring_cursor_free(c);
  }
  if (dp) closedir(dp);
  /* Forget the refusals of files that are gone. */
  for (struct dirscan_refused **rp = &d->refused; *rp;) {
    struct dirscan_refused *r = *rp;
    if (!r->seen) {
      *rp = r->next;
      free(r);
    } else {
      rp = &r->next;
    }
  }
  return refused;
}

void tool_dirscan_free(struct tool_dirscan *d) {
  while (d->refused) {
    struct dirscan_refused *r = d->refused;
    d->refused = r->next;
    free(r);
  }
}
