/* Tests tracing in a hostile environment: a planted link or file at the predicted path, umask 0, a setuid program, absurd directories and OCAMLRUNPARAM values, and callers that pass oversized events or too many names. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "testlib.h"

#define NOBODY 65534
#define RUN_TIMEOUT 20.0

#define NEED_TRACING() \
  do { \
    if (er_tracing_off()) ER_SKIP("a build without tracing"); \
  } while (0)

/* After a refused start: off, and every probe a no-op. */
static void assert_untraced(void) {
  ck_assert_ptr_null(eventring_path());
  ck_assert_int_eq(eventring_is_active(), 0);
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_end(EVENTRING_PHASE_MINOR);
  ck_assert_int_eq(eventring_stop(), EVENTRING_E_NOTSTARTED);
}

/* A world-writable, sticky directory as /tmp is, owned by root when we
 * are root. */
static const char *shared_dir(void) {
  const char *dir = er_tmpdir();
  ck_assert_int_eq(chmod(dir, 01777), 0);
  return dir;
}

/* ------------------------------------------------------------------ */
/* Planted paths.                                                       */

START_TEST(test_planted_symlink) {
  NEED_TRACING();
  const char *dir = shared_dir();
  char path[PATH_MAX], target[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  /* The victim's file lives elsewhere; the attacker's link points at it. */
  snprintf(target, sizeof target, "%s/victim", dir);
  er_write_text(target, "the victim's data\n", 0);
  ck_assert_int_eq(chmod(target, 0600), 0);
  ck_assert_int_eq(symlink(target, path), 0);
  if (geteuid() == 0) ck_assert_int_eq(lchown(path, NOBODY, NOBODY), 0);
  struct stat before;
  ck_assert_int_eq(stat(target, &before), 0);

  int rc = eventring_start();
  ck_assert_msg(rc == -EEXIST || rc == -ELOOP, "start returned %d", rc);
  assert_untraced();
  er_assert_content(target, "the victim's data\n");
  struct stat after, l;
  ck_assert_int_eq(stat(target, &after), 0);
  ck_assert_int_eq(after.st_size, before.st_size);
  ck_assert_int_eq(after.st_mode, before.st_mode);
  ck_assert_int_eq(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  ck_assert_int_eq(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  ck_assert_int_eq(lstat(path, &l), 0);
  ck_assert(S_ISLNK(l.st_mode));
  er_rmdir(dir);
}
END_TEST

START_TEST(test_planted_file) {
  NEED_TRACING();
  const char *dir = shared_dir();
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  er_write_text(path, "attacker's bait\n", 0);
  ck_assert_int_eq(chmod(path, 0666), 0);
  if (geteuid() == 0) ck_assert_int_eq(chown(path, NOBODY, NOBODY), 0);
  ck_assert_int_eq(eventring_start(), -EEXIST);
  assert_untraced();
  er_assert_content(path, "attacker's bait\n");
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_eq(st.st_mode & 07777, 0666);
  if (geteuid() == 0) ck_assert_int_eq(st.st_uid, NOBODY);
  er_rmdir(dir);
}
END_TEST

/* The constructor's start (OCAML_RUNTIME_EVENTS_START) meets a planted
 * link: one line on stderr, the program runs on untraced.  The child's pid
 * is known before it execs, so the link is planted at its exact path. */
START_TEST(test_planted_link_env_start) {
  NEED_TRACING();
  const char *prog = er_prog_path("fault_setuid");
  if (!prog) ER_SKIP("EVENTRING_TEST_PROGS has no fault_setuid");
  const char *dir = shared_dir();
  char target[PATH_MAX], outp[PATH_MAX], errp[PATH_MAX];
  snprintf(target, sizeof target, "%s/victim", dir);
  snprintf(outp, sizeof outp, "%s/out", dir);
  snprintf(errp, sizeof errp, "%s/err", dir);
  er_write_text(target, "untouched\n", 0);
  setenv("OCAML_RUNTIME_EVENTS_START", "1", 1);
  int go[2];
  ck_assert_int_eq(pipe(go), 0);
  int out = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  int err = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ck_assert(out >= 0 && err >= 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(go[1]);
    char c;
    if (read(go[0], &c, 1) != 1) _exit(126);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    execl(prog, prog, "env", (char *)NULL);
    _exit(127);
  }
  close(go[0]);
  close(out);
  close(err);
  char path[PATH_MAX];
  er_ring_path_for(path, sizeof path, dir, pid);
  ck_assert_int_eq(symlink(target, path), 0);
  ck_assert_int_eq(write(go[1], "x", 1), 1);
  close(go[1]);
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
  FILE *f = fopen(errp, "r");
  char line[512] = "";
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  ck_assert_msg(strncmp(line, "eventring:", 10) == 0, "stderr: %s", line);
  ck_assert_msg(fgetc(f) == EOF, "more than one line on stderr");
  fclose(f);
  f = fopen(outp, "r");
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  fclose(f);
  ck_assert_msg(strstr(line, " path=- ") != NULL, "stdout: %s", line);
  er_assert_content(target, "untouched\n");
  unsetenv("OCAML_RUNTIME_EVENTS_START");
  er_rmdir(dir);
}
END_TEST

/* Ring files are private whatever the umask. */
START_TEST(test_mode_with_umask_0) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  mode_t masks[] = {0, 022, 077};
  for (size_t i = 0; i < sizeof masks / sizeof masks[0]; i++) {
    mode_t old = umask(masks[i]);
    ck_assert_int_eq(eventring_start(), 0);
    umask(old);
    struct stat st;
    ck_assert_int_eq(stat(eventring_path(), &st), 0);
    ck_assert_int_eq(st.st_mode & 07777, 0600);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(st.st_uid, geteuid());
    ck_assert_int_eq(eventring_stop(), 0);
  }
  er_rmdir(dir);
}
END_TEST

/* ------------------------------------------------------------------ */
/* A setuid program ignores the environment.                            */

struct prog_out {
  long euid;
  char rc[16];
  char path[PATH_MAX];
  char words[32];
};

/* Runs `prog mode` in `cwd` and parses its line. */
static struct prog_out run_setuid_prog(const char *prog, const char *mode,
                                       const char *cwd) {
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(p[0]);
    dup2(p[1], STDOUT_FILENO);
    if (chdir(cwd) != 0) _exit(126);
    execl(prog, prog, mode, (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  char buf[PATH_MAX + 128];
  size_t n = 0;
  ssize_t k;
  double deadline = er_now() + RUN_TIMEOUT;
  while (n + 1 < sizeof buf && (k = read(p[0], buf + n, sizeof buf - 1 - n)) > 0)
    n += (size_t)k;
  buf[n] = '\0';
  close(p[0]);
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert(er_now() < deadline);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s %s: status %d",
                prog, mode, st);
  struct prog_out o;
  memset(&o, 0, sizeof o);
  ck_assert_msg(sscanf(buf, "euid=%ld rc=%15s path=%4095s words=%31s", &o.euid,
                       o.rc, o.path, o.words) == 4,
                "%s %s said: %s", prog, mode, buf);
  return o;
}

static void copy_file(const char *from, const char *to, mode_t mode) {
  int in = open(from, O_RDONLY);
  ck_assert_int_ge(in, 0);
  int out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0700);
  ck_assert_int_ge(out, 0);
  char buf[65536];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0)
    ck_assert_int_eq(write(out, buf, (size_t)n), n);
  close(in);
  ck_assert_int_eq(close(out), 0);
  ck_assert_int_eq(chmod(to, mode), 0);
}

START_TEST(test_setuid_ignores_environment) {
  NEED_TRACING();
  const char *prog = er_prog_path("fault_setuid");
  if (!prog) ER_SKIP("EVENTRING_TEST_PROGS has no fault_setuid");
  if (geteuid() != 0) ER_SKIP("needs root to install a setuid program");
  char bin[64];
  snprintf(bin, sizeof bin, "%s", er_tmpdir());
  struct statvfs vfs;
  ck_assert_int_eq(statvfs(bin, &vfs), 0);
  if (vfs.f_flag & ST_NOSUID) ER_SKIP("the temp dir is mounted nosuid");
  ck_assert_int_eq(chmod(bin, 0755), 0);
  /* The attacker's chosen directory, and a working directory the setuid
   * program (euid nobody) may write in. */
  char tdir[64], cwd[64];
  snprintf(tdir, sizeof tdir, "%s", er_tmpdir());
  snprintf(cwd, sizeof cwd, "%s", er_tmpdir());
  ck_assert_int_eq(chmod(tdir, 01777), 0);
  ck_assert_int_eq(chown(cwd, NOBODY, NOBODY), 0);

  char suid[PATH_MAX], plain[PATH_MAX];
  snprintf(suid, sizeof suid, "%s/suid", bin);
  snprintf(plain, sizeof plain, "%s/plain", bin);
  copy_file(prog, plain, 0755);
  copy_file(prog, suid, 0755);
  ck_assert_int_eq(chown(suid, NOBODY, NOBODY), 0);
  ck_assert_int_eq(chmod(suid, 04755), 0); /* after chown, which clears it */

  setenv("OCAML_RUNTIME_EVENTS_DIR", tdir, 1);
  setenv("OCAML_RUNTIME_EVENTS_START", "1", 1);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  setenv("OCAMLRUNPARAM", "e=10", 1);
  /* The same program without setuid obeys: traced from load, in tdir,
   * with 1024-word rings, file kept. */
  struct prog_out o = run_setuid_prog(plain, "env", cwd);
  ck_assert_int_eq(o.euid, 0);
  ck_assert_msg(strncmp(o.path, tdir, strlen(tdir)) == 0, "path %s", o.path);
  ck_assert_str_eq(o.words, "1024");
  ck_assert_int_eq(er_count_entries(tdir, ".events"), 1);
  ck_assert_int_eq(unlink(o.path), 0);

  /* Setuid: OCAML_RUNTIME_EVENTS_START is not seen; nothing anywhere. */
  o = run_setuid_prog(suid, "env", cwd);
  ck_assert_int_eq(o.euid, NOBODY);
  ck_assert_str_eq(o.path, "-");
  ck_assert_int_eq(er_count_entries(tdir, ".events"), 0);
  ck_assert_int_eq(er_count_entries(cwd, ".events"), 0);

  /* Setuid, starting by itself: not in tdir but in its working
   * directory, default ring size, and removed when it stops (PRESERVE is
   * not seen either). */
  o = run_setuid_prog(suid, "start", cwd);
  ck_assert_str_eq(o.rc, "0");
  ck_assert_msg(strncmp(o.path, "./", 2) == 0, "path %s", o.path);
  ck_assert_str_eq(o.words, "65536");
  ck_assert_int_eq(er_count_entries(tdir, ".events"), 0);
  ck_assert_int_eq(er_count_entries(cwd, ".events"), 0);

  /* The plain program starting by itself obeys every variable. */
  o = run_setuid_prog(plain, "start", cwd);
  ck_assert_str_eq(o.rc, "0");
  ck_assert_msg(strncmp(o.path, tdir, strlen(tdir)) == 0, "path %s", o.path);
  ck_assert_int_eq(er_count_entries(tdir, ".events"), 1);
  unlink(o.path);
  unsetenv("OCAML_RUNTIME_EVENTS_START");
  er_rmdir(bin);
  er_rmdir(tdir);
  er_rmdir(cwd);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Directories that cannot hold the file.                               */

START_TEST(test_directory_path_too_long) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  char keep[64];
  snprintf(keep, sizeof keep, "%s", dir);
  size_t n = PATH_MAX + 100;
  char *lng = malloc(n + 1);
  ck_assert_ptr_nonnull(lng);
  /* Longer than PATH_MAX as a whole. */
  int k = snprintf(lng, n + 1, "%s/", keep);
  for (size_t i = (size_t)k; i < n; i++) lng[i] = (i % 64 == 63) ? '/' : 'd';
  lng[n] = '\0';
  setenv("OCAML_RUNTIME_EVENTS_DIR", lng, 1);
  ck_assert_int_eq(eventring_start(), -ENAMETOOLONG);
  assert_untraced();
  /* Short enough alone, too long with "/<pid>.events" appended. */
  lng[PATH_MAX - 4] = '\0';
  setenv("OCAML_RUNTIME_EVENTS_DIR", lng, 1);
  ck_assert_int_eq(eventring_start(), -ENAMETOOLONG);
  assert_untraced();
  /* One component longer than NAME_MAX: the kernel's refusal. */
  k = snprintf(lng, n + 1, "%s/", keep);
  memset(lng + k, 'n', NAME_MAX + 1);
  lng[k + NAME_MAX + 1] = '\0';
  setenv("OCAML_RUNTIME_EVENTS_DIR", lng, 1);
  ck_assert_int_eq(eventring_start(), -ENAMETOOLONG);
  assert_untraced();
  free(lng);
  ck_assert_int_eq(er_count_entries(keep, ".events"), 0);
  er_rmdir(keep);
}
END_TEST

START_TEST(test_directory_not_a_directory) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  char keep[64], file[PATH_MAX];
  snprintf(keep, sizeof keep, "%s", dir);
  snprintf(file, sizeof file, "%s/plain", keep);
  er_write_text(file, "x", 0);
  setenv("OCAML_RUNTIME_EVENTS_DIR", file, 1);
  ck_assert_int_eq(eventring_start(), -ENOTDIR);
  assert_untraced();
  er_assert_content(file, "x");
  /* An empty value means the working directory, as unset does. */
  char old[PATH_MAX];
  ck_assert_ptr_nonnull(getcwd(old, sizeof old));
  ck_assert_int_eq(chdir(keep), 0);
  setenv("OCAML_RUNTIME_EVENTS_DIR", "", 1);
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_int_eq(er_count_entries(keep, ".events"), 1);
  ck_assert_int_eq(eventring_stop(), 0);
  ck_assert_int_eq(chdir(old), 0);
  er_rmdir(keep);
}
END_TEST

/* ------------------------------------------------------------------ */
/* OCAMLRUNPARAM: documented clamps, one warning line each.             */

struct param_case {
  const char *value;
  uint64_t words, domains;
  int warnings;
};

/* What the library promises (eventring.h): e in [1, 26], d in [1,
 * 4096], d lowered so that the rings stay within 64 GiB, each
 * adjustment one line; a value that is not a number: the default. */
static const struct param_case param_cases[] = {
    {"e=99", 1u << 26, 128, 1},
    {"d=0", 1u << 16, 1, 1},
    {"e=-1", 2, 128, 1},
    {"e=0", 2, 128, 1},
    {"e=1", 2, 128, 0},
    {"d=99999", 1u << 16, 4096, 1},
    {"e=abc", 1u << 16, 128, 1},
    {"d=-5", 1u << 16, 1, 1},
    {"e=1G", 1u << 26, 128, 1},
    {"e=99999999999999999999999", 1u << 16, 128, 1},
    /* A number times its multiplier past 2^63: still just "too large". */
    {"e=1099511627776G", 1u << 26, 128, 1},
    {"d=-1099511627776G", 1u << 16, 1, 1},
    {"e=12x", 1u << 16, 128, 1},
    {"e=0x10", 1u << 16, 128, 1},
    {"e=26,d=4096", 1u << 26, 128, 1},
    {"e=99,d=99999", 1u << 26, 128, 3},
    {"e=10,d=4096", 1024, 4096, 0},
};

START_TEST(test_param_clamps) {
  NEED_TRACING();
  const struct param_case *pc = &param_cases[_i];
  const char *dir = er_tmpdir();
  setenv("OCAMLRUNPARAM", pc->value, 1);
  struct er_capture cap;
  er_stderr_begin(&cap);
  int rc = eventring_start();
  char *err = er_stderr_end(&cap);
  ck_assert_msg(rc == 0, "%s: start %d (%s)", pc->value, rc,
                eventring_strerror(rc));
  int fd = open(eventring_path(), O_RDONLY);
  ck_assert_int_ge(fd, 0);
  uint64_t meta[ER_META_WORDS];
  ck_assert_int_eq(pread(fd, meta, sizeof meta, 0), sizeof meta);
  struct stat st;
  ck_assert_int_eq(fstat(fd, &st), 0);
  close(fd);
  ck_assert_int_eq(eventring_stop(), 0);
  ck_assert_msg(meta[ER_META_RING_SIZE_ELEMENTS] == pc->words &&
                    meta[ER_META_MAX_DOMAINS] == pc->domains,
                "%s: %" PRIu64 " words, %" PRIu64 " domains", pc->value,
                meta[ER_META_RING_SIZE_ELEMENTS], meta[ER_META_MAX_DOMAINS]);
  ck_assert_msg(er_count_lines(err) == pc->warnings,
                "%s: want %d warning line(s), got \"%s\"", pc->value,
                pc->warnings, err);
  for (const char *l = err; *l; l = strchr(l, '\n') + 1)
    ck_assert_msg(strncmp(l, "eventring: ", 11) == 0, "%s: line %s",
                  pc->value, l);
  /* Never a multi-terabyte file: the rings within 64 GiB, plus headers
   * and names; and on disk only the headers and the starter's ring. */
  ck_assert_uint_le((uint64_t)st.st_size, (UINT64_C(64) << 30) + (8u << 20));
  uint64_t ring_bytes = meta[ER_META_RING_SIZE_BYTES];
  ck_assert_uint_le((uint64_t)st.st_blocks * 512,
                    meta[ER_META_DATA_OFFSET] + ring_bytes + (1u << 20));
  free(err);
  er_rmdir(dir);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Oversized events and too many names.                                 */

static uint64_t ints_seen, ints_last, customs_ok, customs_bad, others,
    lost_total;
static int ints_gap;
static unsigned char big[EVENTRING_MAX_CUSTOM_BYTES];

static int on_int(void *d, int dom, uint64_t ts, int id, const char *name,
                  int64_t v) {
  (void)d, (void)dom, (void)ts, (void)id, (void)name;
  if (ints_seen && (uint64_t)v != ints_last + 1) ints_gap = 1;
  ints_seen++;
  ints_last = (uint64_t)v;
  return 1;
}
static int on_custom(void *d, int dom, uint64_t ts, int id, const char *name,
                     const void *b, size_t len) {
  (void)d, (void)dom, (void)ts, (void)id, (void)name;
  if (len == sizeof big && memcmp(b, big, len) == 0) customs_ok++;
  else customs_bad++;
  return 1;
}
static int on_other(void *d, int dom, uint64_t ts, int k) {
  (void)d, (void)dom, (void)ts, (void)k;
  others++;
  return 1;
}
static int on_life(void *d, int dom, uint64_t ts, int k, int64_t v, int h) {
  (void)d, (void)dom, (void)ts, (void)k, (void)v, (void)h;
  others++;
  return 1;
}
static int on_lost(void *d, int dom, uint64_t n) {
  (void)d, (void)dom;
  lost_total += n;
  return 1;
}

/* In a 1024-word ring, the largest custom event (1023 words) again and
 * again, between small events: each needs the whole ring, padding
 * included, and must neither loop nor spill (OCaml 5 looped here). */
START_TEST(test_largest_event_in_smallest_ring) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  setenv("OCAMLRUNPARAM", "e=10,d=1", 1);
  for (size_t i = 0; i < sizeof big; i++) big[i] = (unsigned char)(i * 13 + 5);
  int cid = eventring_register("big.custom", EVENTRING_TYPE_CUSTOM);
  int iid = eventring_register("big.seq", EVENTRING_TYPE_INT);
  ck_assert_int_ge(cid, 0);
  ck_assert_int_ge(iid, 0);
  ck_assert_int_eq(eventring_start(), 0);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", eventring_path());
  /* A cursor on our own file follows along: the ring holds one big event
   * at a time, so it is read right after each is written. */
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open(&c, NULL, 0), 0);
  eventring_callbacks *cb = eventring_callbacks_create();
  eventring_callbacks_set_user_int(cb, on_int);
  eventring_callbacks_set_user_custom(cb, on_custom);
  eventring_callbacks_set_runtime_begin(cb, on_other);
  eventring_callbacks_set_lifecycle(cb, on_life);
  eventring_callbacks_set_lost_events(cb, on_lost);
  uint64_t delivered = 0;
  int n;
#define DRAIN()                                                     \
  while ((n = eventring_cursor_poll(c, cb, NULL, 0)) > 0)           \
    delivered += (uint64_t)n;                                       \
  ck_assert_int_eq(n, 0)
  DRAIN();
  alarm(10); /* an endless loop fails the test instead of hanging it */
  int64_t seq = 0;
  const int rounds = 200;
  for (int round = 0; round < rounds; round++) {
    ck_assert_int_eq(eventring_write_custom(cid, big, sizeof big), 0);
    DRAIN();
    ck_assert_uint_eq(customs_ok, (uint64_t)round + 1);
    for (int k = 0; k < round % 7; k++) eventring_write_int(iid, seq++);
    eventring_begin(EVENTRING_PHASE_MINOR);
    ck_assert_int_eq(eventring_write_custom(cid, big, sizeof big + 1),
                     EVENTRING_E_TOOBIG);
    ck_assert_int_eq(eventring_write_custom(cid, big, SIZE_MAX),
                     EVENTRING_E_TOOBIG);
    DRAIN();
  }
  ck_assert_int_eq(eventring_stop(), 0);
  alarm(0);
  DRAIN();
#undef DRAIN
  eventring_callbacks_free(cb);
  eventring_cursor_free(c);

  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(f.max_domains, 1);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_le(r->tail - r->head, 1024);
  uint64_t written = r->written;
  rf_close(&f);

  ck_assert_uint_eq(customs_bad, 0);
  ck_assert_uint_eq(customs_ok, (uint64_t)rounds);
  ck_assert_int_eq(ints_gap, 0);
  ck_assert_uint_eq(ints_seen, (uint64_t)seq);
  ck_assert_uint_eq(ints_last, (uint64_t)seq - 1);
  /* Read as it went, nothing was lost; every event is accounted for. */
  ck_assert_uint_eq(lost_total, 0);
  ck_assert_uint_eq(delivered, written);
  ck_assert_uint_eq(delivered, customs_ok + ints_seen + others);
  er_rmdir(dir);
}
END_TEST

/* Id 8191 is the last name slot; an 8193rd name is refused, and nothing
 * is written past the table (the file's size and the slot contents). */
START_TEST(test_register_8193) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  setenv("OCAMLRUNPARAM", "e=10,d=1", 1);
  ck_assert_int_eq(eventring_start(), 0);
  char path[PATH_MAX], name[32];
  snprintf(path, sizeof path, "%s", eventring_path());
  for (int i = 0; i < EVENTRING_MAX_USER_EVENTS; i++) {
    snprintf(name, sizeof name, "n.%d", i);
    ck_assert_int_eq(eventring_register(name, EVENTRING_TYPE_INT), i);
  }
  ck_assert_int_eq(eventring_register("n.8192", EVENTRING_TYPE_INT),
                   EVENTRING_E_TOOMANY);
  ck_assert_int_eq(eventring_register("n.8193", EVENTRING_TYPE_UNIT),
                   EVENTRING_E_TOOMANY);
  eventring_write_int(EVENTRING_MAX_USER_EVENTS - 1, 42);
  eventring_write_int(EVENTRING_MAX_USER_EVENTS, 43);  /* ignored */
  ck_assert_int_eq(eventring_write_custom(EVENTRING_MAX_USER_EVENTS, "x", 1),
                   EVENTRING_E_INVAL);
  ck_assert_int_eq(eventring_stop(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(f.size, f.meta[ER_META_CUSTOM_EVENTS_OFFSET] +
                                ER_NAME_SLOTS * ER_NAME_SLOT_BYTES);
  ck_assert_str_eq(rf_user_name(&f, 8191), "n.8191");
  ck_assert_str_eq(rf_user_name(&f, 0), "n.0");
  ck_assert_uint_eq(rf_count(&f, 0, 1, ER_UEV_INT, 8191), 1);
  ck_assert_uint_eq(rf_count(&f, 0, 1, ER_UEV_INT, -1), 1);
  rf_close(&f);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_planted(void) {
  TCase *tc = er_tcase("planted");
  tcase_add_test(tc, test_planted_symlink);
  tcase_add_test(tc, test_planted_file);
  tcase_add_test(tc, test_planted_link_env_start);
  tcase_add_test(tc, test_mode_with_umask_0);
  tcase_add_test(tc, test_setuid_ignores_environment);
  return tc;
}

static TCase *tc_paths(void) {
  TCase *tc = er_tcase("paths");
  tcase_add_test(tc, test_directory_path_too_long);
  tcase_add_test(tc, test_directory_not_a_directory);
  tcase_add_loop_test(tc, test_param_clamps, 0,
                      (int)(sizeof param_cases / sizeof param_cases[0]));
  return tc;
}

static TCase *tc_limits(void) {
  TCase *tc = er_tcase("limits");
  tcase_add_test(tc, test_largest_event_in_smallest_ring);
  tcase_add_test(tc, test_register_8193);
  return tc;
}

ER_TEST_MAIN("hostile_env", tc_planted, tc_paths, tc_limits)
