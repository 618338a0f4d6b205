/* OCAML_RUNTIME_EVENTS_START starts tracing at program load, and the environment sets the ring's shape. */
#include <sys/wait.h>

#include "eventring.h"
#include "cases.h"
#include "harness.h"
#include "ring_format.h"
#include "testlib.h"

/* One run of progs/envstart: its pid, exit status and captured output. */
struct run {
  pid_t pid;
  int status;
  char *out, *err;
};

/* Runs progs/envstart with the current environment.  When `squat_dir` is
 * set, the child first creates a regular file where its ring file would
 * go (its pid survives exec), holding "squatter". */
static void run_envstart(struct run *r, const char *squat_dir) {
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  ck_assert_ptr_nonnull(progs);
  char prog[PATH_MAX];
  snprintf(prog, sizeof prog, "%s/envstart", progs);
  FILE *out, *err;
  pid_t pid = er_fork_captured(&out, &err);
  if (pid == 0) {
    if (squat_dir) {
      char path[PATH_MAX];
      er_ring_path(path, sizeof path, squat_dir);
      int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
      if (fd < 0 || write(fd, "squatter", 8) != 8) _exit(126);
      close(fd);
    }
    execl(prog, prog, (char *)NULL);
    _exit(127);
  }
  r->pid = pid;
  ck_assert_int_eq(waitpid(pid, &r->status, 0), pid);
  r->out = er_read_stream(out);
  r->err = er_read_stream(err);
}

static void assert_exit0(const struct run *r) {
  ck_assert_msg(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0,
                "envstart status 0x%x, stderr: %s", r->status, r->err);
}

/* Skips unless the helper programs were built (make check sets this). */
#define NEED_PROGS()                                  \
  do {                                                \
    if (!er_env_dir("EVENTRING_TEST_PROGS"))          \
      ER_SKIP("EVENTRING_TEST_PROGS is not set");     \
  } while (0)

static void setup_env(char *dir, size_t n, int preserve) {
  snprintf(dir, n, "%s", er_tmpdir());
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_START", "1", 1), 0);
  if (preserve)
    ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
}

/* Decodes the file a run left and checks its one ring holds ring_start,
 * the program's events and ring_stop. */
static void check_run_file(const char *dir, const struct run *r,
                           uint64_t ring_words) {
  char path[PATH_MAX];
  er_ring_path_for(path, sizeof path, dir, r->pid);
  char want[PATH_MAX + 32];
  snprintf(want, sizeof want, "active=1 path=%s\n", path);
  ck_assert_str_eq(r->out, want);
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(f.ring_words, ring_words);
  ck_assert(f.has_ext);
  ck_assert_uint_eq(f.ext[ER_EXT_PID], (uint64_t)r->pid);
  const struct rf_ring *ring = &f.rings[0];
  ck_assert_uint_eq(ring->nevents, 1 + 1 + 10 + 1 + 1 + 1);
  const struct rf_event *e = ring->events;
  ck_assert(!e[0].is_user && e[0].type == ER_EV_LIFECYCLE &&
            e[0].id == EVENTRING_LIFECYCLE_RING_START);
  ck_assert_uint_eq(e[0].payload[0], (uint64_t)r->pid);
  ck_assert(!e[1].is_user && e[1].type == ER_EV_BEGIN &&
            e[1].id == EVENTRING_PHASE_MAJOR);
  for (int v = 1; v <= 10; v++) {
    ck_assert(e[1 + v].is_user && e[1 + v].type == ER_UEV_INT);
    ck_assert_int_eq((int64_t)e[1 + v].payload[0], v);
    ck_assert_str_eq(rf_user_name(&f, e[1 + v].id), "envstart.val");
  }
  ck_assert(!e[12].is_user && e[12].type == ER_EV_COUNTER &&
            e[12].id == EVENTRING_COUNTER_MINOR_ALLOCATED);
  ck_assert_uint_eq(e[12].payload[0], 42);
  ck_assert(!e[13].is_user && e[13].type == ER_EV_END &&
            e[13].id == EVENTRING_PHASE_MAJOR);
  ck_assert(!e[14].is_user && e[14].type == ER_EV_LIFECYCLE &&
            e[14].id == EVENTRING_LIFECYCLE_RING_STOP);
  for (uint64_t d = 1; d < f.max_domains; d++)
    ck_assert_uint_eq(f.rings[d].nevents, 0);
  rf_close(&f);
}

/* Counts the lines of `err` and checks each begins with "eventring:". */
static void assert_one_warning(const char *err) {
  ck_assert_msg(er_count_lines(err) == 1, "stderr: [%s]", err);
  ck_assert_msg(strncmp(err, "eventring:", 10) == 0, "stderr: [%s]", err);
}

/* What a run of envstart leaves behind. */
enum outcome {
  KEPT,    /* a ring file with the run's events, ring_words words a ring */
  REMOVED, /* it traced, and its exit took the file away */
  UNTRACED, /* it did not trace, and wrote nothing into the directory */
  SQUATTED, /* it did not trace, and left the file in its way as it was */
};

/* One environment envstart starts in, and what it must do there. */
static const struct env_case {
  const char *name;
  int preserve;       /* OCAML_RUNTIME_EVENTS_PRESERVE=1 */
  int no_start;       /* OCAML_RUNTIME_EVENTS_START unset */
  const char *var;    /* one more variable set, or NULL */
  const char *value;  /* its value; for OCAML_RUNTIME_EVENTS_DIR, a name
                         under the test's directory */
  int squat;          /* a regular file stands where the ring file goes */
  int warns;          /* one "eventring:" line on stderr, else none */
  enum outcome outcome;
  uint64_t ring_words;
} env_cases[] = {
    {"start_preserved", 1, 0, NULL, NULL, 0, 0, KEPT, 65536},
    {"start_removed_at_exit", 0, 0, NULL, NULL, 0, 0, REMOVED, 0},
    {"start_missing_dir", 1, 0, "OCAML_RUNTIME_EVENTS_DIR", "missing", 0, 1,
     UNTRACED, 0},
    {"start_file_exists", 0, 0, NULL, NULL, 1, 1, SQUATTED, 0},
    {"no_start_variable", 1, 1, NULL, NULL, 0, 0, UNTRACED, 0},
    /* OCAMLRUNPARAM's e= sets the ring size; other letters are ignored. */
    {"ocamlrunparam_size", 1, 0, "OCAMLRUNPARAM", "v=0x400,e=11,s=4M,b", 0, 0,
     KEPT, 2048},
    /* CAMLRUNPARAM is read when OCAMLRUNPARAM is unset. */
    {"camlrunparam_fallback", 1, 0, "CAMLRUNPARAM", "e=12", 0, 0, KEPT, 4096},
    /* A small size is honoured as OCaml 5 honours it (it was raised to
     * 2^10 words once): 2^7 words hold the run's 15 events. */
    {"small_ring_size_honoured", 1, 0, "OCAMLRUNPARAM", "e=7", 0, 0, KEPT,
     128},
    /* A value that is not a number: one warning, and the default size. */
    {"bad_value_warns", 1, 0, "OCAMLRUNPARAM", "e=big", 0, 1, KEPT, 65536},
};

START_TEST(test_env_case) {
  const struct env_case *c = &env_cases[_i];
  NEED_PROGS();
  char dir[64];
  setup_env(dir, sizeof dir, c->preserve);
  if (c->no_start) unsetenv("OCAML_RUNTIME_EVENTS_START");
  if (c->var && strcmp(c->var, "OCAML_RUNTIME_EVENTS_DIR") == 0) {
    char sub[128];
    snprintf(sub, sizeof sub, "%s/%s", dir, c->value);
    ck_assert_int_eq(setenv(c->var, sub, 1), 0);
  } else if (c->var) {
    ck_assert_int_eq(setenv(c->var, c->value, 1), 0);
  }
  struct run r;
  run_envstart(&r, c->squat ? dir : NULL);
  assert_exit0(&r);
  if (c->warns)
    assert_one_warning(r.err);
  else
    ck_assert_str_eq(r.err, "");
  char path[PATH_MAX], want[PATH_MAX + 32];
  er_ring_path_for(path, sizeof path, dir, r.pid);
  switch (c->outcome) {
  case KEPT:
    check_run_file(dir, &r, c->ring_words);
    ck_assert_int_eq(er_count_entries(dir, ""), 1);
    break;
  case REMOVED:
    /* It traced into the directory while it ran ... */
    snprintf(want, sizeof want, "active=1 path=%s\n", path);
    ck_assert_str_eq(r.out, want);
    /* ... and its exit took the file away. */
    ck_assert_int_eq(er_count_entries(dir, ""), 0);
    break;
  case UNTRACED:
    ck_assert_str_eq(r.out, "active=0 path=-\n");
    ck_assert_int_eq(er_count_entries(dir, ""), 0);
    break;
  case SQUATTED: {
    ck_assert_str_eq(r.out, "active=0 path=-\n");
    /* The file in the way is neither truncated nor removed. */
    char buf[32];
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    ck_assert_uint_eq(n, 8);
    ck_assert(memcmp(buf, "squatter", 8) == 0);
    break;
  }
  }
  free(r.out);
  free(r.err);
  er_rmdir(dir);
}
END_TEST

ER_CASES_MAIN("env_start", "env_start", test_env_case, env_cases)
