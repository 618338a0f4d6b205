/* Tests how OCAMLRUNPARAM / CAMLRUNPARAM size the rings and the domain slots. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eventring.h"
#include "cases.h"
#include "harness.h"
#include "ring_format.h"

/* What one start with a given environment produced. */
struct outcome {
  int rc;             /* eventring_start()'s result */
  uint64_t meta[8];   /* the file's metadata header (when rc == 0) */
  uint64_t size;      /* the file's apparent size */
  uint64_t blocks;    /* bytes really allocated */
  char err[1024];     /* what went to stderr (truncated) */
};

/* Starts tracing with OCAMLRUNPARAM / CAMLRUNPARAM set as given (NULL
 * unsets), records the outcome and stops again.  Only the metadata header
 * is read: files of some of these sizes are too large to read whole. */
static struct outcome run_with(const char *ocamlrunparam,
                               const char *camlrunparam) {
  struct outcome o;
  memset(&o, 0, sizeof o);
  const char *dir = er_tmpdir();
  if (ocamlrunparam) setenv("OCAMLRUNPARAM", ocamlrunparam, 1);
  if (camlrunparam) setenv("CAMLRUNPARAM", camlrunparam, 1);
  struct er_capture cap;
  er_stderr_begin(&cap);
  o.rc = eventring_start();
  char *captured = er_stderr_end(&cap);
  snprintf(o.err, sizeof o.err, "%s", captured);
  free(captured);
  if (o.rc == 0) {
    const char *path = eventring_path();
    ck_assert_ptr_nonnull(path);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pread(fd, o.meta, sizeof o.meta, 0), sizeof o.meta);
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    o.size = (uint64_t)st.st_size;
    o.blocks = (uint64_t)st.st_blocks * 512;
    close(fd);
    /* The metadata must describe the file that is there. */
    ck_assert_uint_eq(o.size, o.meta[ER_META_CUSTOM_EVENTS_OFFSET] +
                                  ER_NAME_SLOTS * ER_NAME_SLOT_BYTES);
    ck_assert_uint_eq(o.meta[ER_META_RING_SIZE_BYTES],
                      8 * o.meta[ER_META_RING_SIZE_ELEMENTS]);
    ck_assert_int_eq(eventring_stop(), 0);
  } else {
    /* A refused start leaves no file behind. */
    char path[PATH_MAX];
    ck_assert_int_eq(access(er_ring_path(path, sizeof path, dir), F_OK), -1);
  }
  er_rmdir(dir);
  return o;
}

static void expect(const struct outcome *o, uint64_t words, uint64_t domains,
                   int warnings) {
  ck_assert_msg(o->rc == 0, "start failed: %d (%s)", o->rc,
                eventring_strerror(o->rc));
  ck_assert_uint_eq(o->meta[ER_META_RING_SIZE_ELEMENTS], words);
  ck_assert_uint_eq(o->meta[ER_META_MAX_DOMAINS], domains);
  ck_assert_msg(er_count_lines(o->err) == warnings,
                "want %d stderr line(s), got: \"%s\"", warnings, o->err);
}

/* An environment and the rings it must give: ring words, domain slots
 * and stderr lines. */
static const struct param_case {
  const char *name;
  const char *ocamlrunparam, *camlrunparam; /* NULL: unset */
  uint64_t words, domains;
  int warnings;
} param_cases[] = {
    {"defaults", NULL, NULL, 1u << 16, 128, 0},
    {"ring_size_e10", "e=10", NULL, 1024, 128, 0},
    {"ring_size_e12", "e=12", NULL, 4096, 128, 0},
    {"domains_d4", "d=4", NULL, 1u << 16, 4, 0},
    {"domains_d1", "e=11,d=1", NULL, 2048, 1, 0},
    {"other_letters_ignored", "s=4M,v=0x400,b", NULL, 1u << 16, 128, 0},
    {"other_letters_around", "s=4M,v=0x400,b,e=11,l=8M,d=3,o=120", NULL, 2048,
     3, 0},
    {"camlrunparam", NULL, "e=11,d=2", 2048, 2, 0},
    /* OCAMLRUNPARAM wins over CAMLRUNPARAM when both are set. */
    {"ocamlrunparam_wins", "e=12", "e=11,d=2", 4096, 128, 0},
    /* Small rings are honoured, as OCaml 5 honours them (test_small_rings
     * writes in them); e=0 is clamped to 1, with a warning. */
    {"small_e9", "e=9", NULL, 512, 128, 0},
    {"small_e1", "e=1", NULL, 2, 128, 0},
    {"clamped_e0", "e=0", NULL, 2, 128, 1},
    /* A value that is not a number gives one warning line and the
     * default. */
    {"bad_e", "e=abc", NULL, 1u << 16, 128, 1},
    {"bad_d", "d=lots", NULL, 1u << 16, 128, 1},
};

START_TEST(test_param_case) {
  const struct param_case *k = &param_cases[_i];
  struct outcome o = run_with(k->ocamlrunparam, k->camlrunparam);
  expect(&o, k->words, k->domains, k->warnings);
  if (k->warnings)
    ck_assert_msg(strstr(o.err, "eventring") != NULL, "warning: %s", o.err);
}
END_TEST

/* e= outside [1,26] is clamped; whether a clamp is also worth a warning
 * is the library's choice, but there is at most one line. */
START_TEST(test_clamped) {
  struct outcome o = run_with("e=99", NULL);
  ck_assert_msg(o.rc == 0, "e=99: %d (%s)", o.rc, eventring_strerror(o.rc));
  ck_assert_uint_eq(o.meta[ER_META_RING_SIZE_ELEMENTS], (uint64_t)1 << 26);
  ck_assert_int_le(er_count_lines(o.err), 1);
  ck_assert_uint_ge(o.meta[ER_META_MAX_DOMAINS], 1);
  ck_assert_uint_lt(o.size, (uint64_t)1 << 40);
  o = run_with("d=5000", NULL);
  ck_assert_int_eq(o.rc, 0);
  ck_assert_uint_eq(o.meta[ER_META_MAX_DOMAINS], 4096);
  ck_assert_int_le(er_count_lines(o.err), 1);
}
END_TEST

/* A negative value gives one line and either the default or the clamp;
 * an empty one, one line and the default. */
START_TEST(test_bad_values_warn) {
  struct outcome o = run_with("e=-1", NULL);
  ck_assert_int_eq(o.rc, 0);
  ck_assert(o.meta[ER_META_RING_SIZE_ELEMENTS] == 2 ||
            o.meta[ER_META_RING_SIZE_ELEMENTS] == 1u << 16);
  ck_assert_int_eq(er_count_lines(o.err), 1);
  o = run_with("e=", NULL);
  ck_assert_int_eq(o.rc, 0);
  ck_assert_uint_eq(o.meta[ER_META_RING_SIZE_ELEMENTS], 1u << 16);
  ck_assert_int_eq(er_count_lines(o.err), 1);
}
END_TEST

/* e=26 with d=4096 asks for 2 TiB of rings.  The library may lower d or
 * refuse; either way it must not create a file of a terabyte or more, and
 * the file must stay sparse: blocks for the one ring in use (the library
 * reserves a ring's blocks when a thread takes its slot), the headers and
 * the names, not for the rest. */
START_TEST(test_huge_request) {
  struct outcome o = run_with("e=26,d=4096", NULL);
  fflush(stdout);
  printf("e=26,d=4096: start returned %d (%s); max_domains %llu, ring words "
         "%llu, file size %llu, allocated %llu, stderr \"%s\"\n",
         o.rc, eventring_strerror(o.rc),
         (unsigned long long)o.meta[ER_META_MAX_DOMAINS],
         (unsigned long long)o.meta[ER_META_RING_SIZE_ELEMENTS],
         (unsigned long long)o.size, (unsigned long long)o.blocks, o.err);
  fflush(stdout);
  if (o.rc == 0) {
    ck_assert_uint_lt(o.size, (uint64_t)1 << 40);
    ck_assert_uint_lt(o.blocks, (UINT64_C(8) << 26) + (UINT64_C(16) << 20));
    ck_assert_uint_eq(o.meta[ER_META_RING_SIZE_ELEMENTS], (uint64_t)1 << 26);
  } else {
    ck_assert_int_lt(o.rc, 0);
    ck_assert_int_ge(er_count_lines(o.err), 0);
  }
}
END_TEST

/* The environment is read again at every start. */
START_TEST(test_reread_at_each_start) {
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  uint64_t meta[8];
  setenv("OCAMLRUNPARAM", "e=10", 1);
  ck_assert_int_eq(eventring_start(), 0);
  int fd = open(path, O_RDONLY);
  ck_assert_int_eq(pread(fd, meta, sizeof meta, 0), sizeof meta);
  close(fd);
  ck_assert_uint_eq(meta[ER_META_RING_SIZE_ELEMENTS], 1024);
  ck_assert_int_eq(eventring_stop(), 0);
  setenv("OCAMLRUNPARAM", "e=12,d=5", 1);
  ck_assert_int_eq(eventring_start(), 0);
  fd = open(path, O_RDONLY);
  ck_assert_int_eq(pread(fd, meta, sizeof meta, 0), sizeof meta);
  close(fd);
  ck_assert_uint_eq(meta[ER_META_RING_SIZE_ELEMENTS], 4096);
  ck_assert_uint_eq(meta[ER_META_MAX_DOMAINS], 5);
  ck_assert_int_eq(eventring_stop(), 0);
  er_rmdir(dir);
}
END_TEST

/* The smallest ring holds the largest event, and the next event, which
 * cannot fit beside it, evicts it: read while tracing runs, the ring holds
 * only the big event (ring_start and the padding before it were
 * overwritten); after the stop, only ring_stop after one word of padding. */
START_TEST(test_small_ring_decodes) {
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1); /* read at start */
  setenv("OCAMLRUNPARAM", "e=10,d=2", 1);
  int id = eventring_register("big", EVENTRING_TYPE_CUSTOM);
  ck_assert_int_eq(eventring_start(), 0);
  static unsigned char buf[EVENTRING_MAX_CUSTOM_BYTES];
  memset(buf, 'q', sizeof buf);
  ck_assert_int_eq(eventring_write_custom(id, buf, sizeof buf), 0);

  /* Only this thread writes, so the live file is quiescent here. */
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(f.ring_words, 1024);
  ck_assert_uint_eq(f.max_domains, 2);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_eq(r->nevents, 1);
  ck_assert_uint_eq(r->events[0].len, 1023);
  ck_assert_uint_eq(r->events[0].custom_len, sizeof buf);
  ck_assert_uint_eq(r->events[0].pos, 1024);
  ck_assert_uint_eq(r->tail, 2047);
  ck_assert_uint_eq(r->written, 2);
  ck_assert_uint_eq(r->evicted, 1);
  rf_close(&f);

  ck_assert_int_eq(eventring_stop(), 0);
  er_open_ring(path, &f);
  r = &f.rings[0];
  ck_assert_uint_eq(r->nevents, 1);
  ck_assert_uint_eq(r->events[0].id, EVENTRING_LIFECYCLE_RING_STOP);
  ck_assert_uint_eq(r->events[0].pos, 2048);
  ck_assert_uint_eq(r->tail, 2051);
  ck_assert_uint_eq(r->written, 3);
  ck_assert_uint_eq(r->evicted, 2);
  rf_close(&f);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_params(void) {
  TCase *tc = er_tcase("params");
  ER_ADD_CASES(tc, test_param_case, param_cases);
  ER_ADD_TESTS(tc, test_clamped, test_bad_values_warn, test_huge_request,
               test_reread_at_each_start, test_small_ring_decodes);
  return tc;
}

ER_TEST_MAIN("params", tc_params)
