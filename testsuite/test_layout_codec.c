/* Tests the layout codec (runtime/layout.c): what writers plan, readers decode alike; headers that overflow or contradict themselves are refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "eventring.h"
#include "harness.h"
#include "internal.h"
#include "layout.h"
#include "ring_format.h"
#include "testlib.h"

/* Every field of two layouts, compared one by one so that a failure
 * names the field. */
#define SAME(a, b, f) ck_assert_msg((a)->f == (b)->f, #f ": %llu != %llu", \
                                    (unsigned long long)(a)->f,            \
                                    (unsigned long long)(b)->f)
static void same_layout(const struct er_layout *a, const struct er_layout *b) {
  SAME(a, b, max_domains); SAME(a, b, hdr_bytes); SAME(a, b, ring_bytes);
  SAME(a, b, ring_words); SAME(a, b, headers_off); SAME(a, b, data_off);
  SAME(a, b, custom_off); SAME(a, b, file_bytes); SAME(a, b, ext_bytes);
  SAME(a, b, flags); SAME(a, b, leases_off); SAME(a, b, names_off);
  SAME(a, b, n_names); SAME(a, b, name_bytes); SAME(a, b, program_off);
  SAME(a, b, wall_off); SAME(a, b, cmdline_off); SAME(a, b, threads_off);
  SAME(a, b, start_time_off); SAME(a, b, meta_off);
}

/* ---- Planned, written, decoded: the same layout. */

static const struct plan_case {
  const char *name;
  uint64_t flags;       /* ER_EXT_FLAG_* of the description */
  int program;          /* the description names a program */
  unsigned names;       /* slots in each of the three tables */
  unsigned domains, log2, align;
} plans[] = {
    /* ring.c's file: every section, 128 domains of 2^16 words. */
    {"live file", ER_EXT_FLAG_LEASES | ER_EXT_FLAG_THREADS |
                      ER_EXT_FLAG_WALLCLOCK | ER_EXT_FLAG_START_TIME |
                      ER_EXT_FLAG_PRESERVED | ER_EXT_FLAG_META,
     1, 3, 128, 16, 4096},
    {"instrumented", ER_EXT_FLAG_INSTRUMENTED | ER_EXT_FLAG_LEASES |
                         ER_EXT_FLAG_THREADS | ER_EXT_FLAG_WALLCLOCK,
     1, 3, 1, 1, 4096},
    /* snapshot.c's compact files. */
    {"compact", ER_EXT_FLAG_THREADS | ER_EXT_FLAG_WALLCLOCK, 1, 3, 3, 1, 64},
    {"compact, no threads", ER_EXT_FLAG_WALLCLOCK, 1, 2, 1, 5, 64},
    {"compact, nothing", 0, 0, 0, 1, 1, 64},
    /* The thread entries bring a program name, empty when none is given. */
    {"threads, no program", ER_EXT_FLAG_THREADS, 0, 1, 7, 3, 64},
    {"program only", 0, 1, 3, 2, 2, 4096},
    {"start time only", ER_EXT_FLAG_START_TIME, 0, 3, 2, 2, 4096},
    {"leases only", ER_EXT_FLAG_LEASES, 0, 1, 65536, 1, 65536},
    /* The writer's metadata, after whatever comes before it. */
    {"compact, metadata", ER_EXT_FLAG_THREADS | ER_EXT_FLAG_WALLCLOCK |
                              ER_EXT_FLAG_META, 1, 3, 3, 1, 64},
    {"metadata only", ER_EXT_FLAG_META, 0, 0, 1, 1, 64},
    {"metadata and start time", ER_EXT_FLAG_META | ER_EXT_FLAG_START_TIME, 1,
     2, 5, 2, 4096},
};

/* A labels' area holding service=api and zone=eu-1. */
static const unsigned char *two_labels(void) {
  static unsigned char area[ER_MD_LABEL_BYTES];
  memset(area, 0, sizeof area);
  ck_assert_int_eq(er_labels_set(area, sizeof area, "service", 7, "api", 3), 0);
  ck_assert_int_eq(er_labels_set(area, sizeof area, "zone", 4, "eu-1", 4), 0);
  return area;
}

/* A file image of the planned layout: the metadata and the block. */
static uint64_t *image(const struct er_layout *l, const struct er_ext_desc *d) {
  uint64_t *m = calloc(1, (size_t)l->data_off);
  ck_assert_ptr_nonnull(m);
  m[ER_META_VERSION] = ER_FORMAT_VERSION;
  m[ER_META_MAX_DOMAINS] = l->max_domains;
  m[ER_META_RING_HEADER_SIZE] = l->hdr_bytes;
  m[ER_META_RING_SIZE_BYTES] = l->ring_bytes;
  m[ER_META_RING_SIZE_ELEMENTS] = l->ring_words;
  m[ER_META_HEADERS_OFFSET] = l->headers_off;
  m[ER_META_DATA_OFFSET] = l->data_off;
  m[ER_META_CUSTOM_EVENTS_OFFSET] = l->custom_off;
  er_ext_fill(m + ER_META_WORDS, d, l);
  m[ER_META_WORDS + ER_EXT_MAGIC_W] = ER_EXT_MAGIC;
  return m;
}

START_TEST(test_plan_decodes_alike) {
  const struct plan_case *t = &plans[_i];
  const char *tables[3][3] = {{"p0", "p1", "p2"}, {"c0", "c1", "c2"},
                              {"l0", "l1", "l2"}};
  struct er_ext_desc d = {
      .numbering = ER_PHASES_OCAML53,
      .flags = t->flags,
      .pid = 42,
      .start_time = 77,
      .program = t->program ? "prog" : NULL,
      .cmdline = "prog --flag",
      .tables = {tables[0], tables[1], tables[2]},
      .counts = {t->names, t->names, t->names},
      .ocaml_version = "4.14.2",
      .labels = two_labels()};
  struct er_layout plan, got;
  ck_assert_int_eq(er_ext_layout(&plan, &d, t->domains, UINT64_C(1) << t->log2,
                                 t->align),
                   0);
  /* What every writer's file has, whatever its sections. */
  ck_assert_uint_eq(plan.headers_off % 64, 0);
  ck_assert_uint_eq(plan.data_off % t->align, 0);
  ck_assert_uint_ge(plan.headers_off, ER_EXT_OFFSET + plan.ext_bytes);
  ck_assert_uint_eq(plan.names_off, ER_EXT_OFFSET + ER_EXT_WORDS * 8 +
                                        (plan.leases_off ? 128 : 0));
  ck_assert_uint_eq(plan.file_bytes,
                    plan.custom_off + ER_NAME_SLOTS * ER_NAME_SLOT_BYTES);
  ck_assert_int_eq(!!plan.program_off,
                   t->program || (t->flags & ER_EXT_FLAG_THREADS));
  ck_assert_int_eq(!!plan.wall_off, !!(t->flags & ER_EXT_FLAG_WALLCLOCK));
  ck_assert_int_eq(!!plan.threads_off, !!(t->flags & ER_EXT_FLAG_THREADS));
  ck_assert_int_eq(!!plan.meta_off, !!(t->flags & ER_EXT_FLAG_META));
  if (plan.meta_off) ck_assert_uint_eq(plan.meta_off % 8, 0);
  if (plan.start_time_off)
    ck_assert_uint_eq(plan.start_time_off,
                      ER_EXT_OFFSET + plan.ext_bytes - 8);

  uint64_t *m = image(&plan, &d);
  ck_assert_int_eq(er_layout_meta(&got, m, plan.file_bytes), 0);
  ck_assert_int_eq(er_layout_ext(&got, m + ER_META_WORDS, plan.file_bytes), 0);
  same_layout(&got, &plan);
  /* The sections hold what was given, where the layout says. */
  const char *b = (const char *)m;
  if (t->names) {
    ck_assert_str_eq(b + plan.names_off, "p0");
    ck_assert_str_eq(b + plan.names_off + t->names * ER_EXT_NAME_BYTES, "c0");
    ck_assert_str_eq(b + plan.names_off + 2 * t->names * ER_EXT_NAME_BYTES,
                     "l0");
  }
  if (plan.program_off)
    ck_assert_str_eq(b + plan.program_off, t->program ? "prog" : "");
  if (plan.cmdline_off) ck_assert_str_eq(b + plan.cmdline_off, "prog --flag");
  if (plan.wall_off)
    ck_assert_uint_eq(m[plan.wall_off / 8 + ER_WALL_GEN], 1);
  if (plan.start_time_off) ck_assert_uint_eq(m[plan.start_time_off / 8], 77);
  if (plan.meta_off) {
    ck_assert_str_eq(b + plan.meta_off + ER_MD_VERSION, "4.14.2");
    ck_assert_str_eq(b + plan.meta_off + ER_MD_LABELS, "service=api");
  }

  /* A cursor opens the whole file and finds the sections' contents. */
  if (plan.file_bytes <= (UINT64_C(64) << 20)) {
    uint64_t *whole = calloc(1, (size_t)plan.file_bytes);
    ck_assert_ptr_nonnull(whole);
    memcpy(whole, m, (size_t)plan.data_off);
    eventring_cursor *c;
    ck_assert_int_eq(er_cursor_open_image(&c, whole, (size_t)plan.file_bytes),
                     0);
    const char *prog = eventring_cursor_program(c);
    if (plan.program_off) ck_assert_str_eq(prog, t->program ? "prog" : "");
    else ck_assert_ptr_null(prog);
    const char *line = eventring_cursor_cmdline(c);
    if (plan.cmdline_off) ck_assert_str_eq(line, "prog --flag");
    else ck_assert_ptr_null(line);
    eventring_wallclock w;
    ck_assert_int_eq(eventring_cursor_wallclock(c, EVENTRING_WALLCLOCK_START,
                                                &w),
                     plan.wall_off ? 0 : EVENTRING_E_NOWALLCLOCK);
    ck_assert_int_eq(eventring_cursor_writer_pid(c), 42);
    const char *ver = eventring_cursor_ocaml_version(c), *n, *v;
    if (plan.meta_off) {
      ck_assert_str_eq(ver, "4.14.2");
      ck_assert_int_eq(eventring_cursor_label(c, 0, &n, &v), 1);
      ck_assert_str_eq(n, "service");
      ck_assert_str_eq(v, "api");
      ck_assert_int_eq(eventring_cursor_label(c, 1, &n, &v), 1);
      ck_assert_str_eq(n, "zone");
      ck_assert_str_eq(v, "eu-1");
    } else {
      ck_assert_ptr_null(ver);
    }
    ck_assert_int_eq(eventring_cursor_label(c, plan.meta_off ? 2 : 0, &n, &v),
                     0);
    ck_assert_int_eq(eventring_cursor_label(c, -1, &n, &v), EVENTRING_E_INVAL);
    eventring_cursor_free(c);
    free(whole);
  }
  free(m);
}
END_TEST

/* The live file of this process decodes to what its writer planned. */
START_TEST(test_live_file) {
  const char *dir = er_tmpdir();
  ck_assert_int_eq(eventring_start(), 0);
  struct er_layout got, plan;
  er_lock();
  ck_assert_int_eq(
      er_layout_read(&got, er_st.meta, er_st.ext, er_st.map_bytes), 0);
  er_unlock();
  ck_assert_uint_eq(got.max_domains, 128);
  ck_assert_uint_eq(got.ring_words, UINT64_C(1) << 16);
  ck_assert_uint_eq(got.data_off % 4096, 0);
  ck_assert_uint_ne(got.leases_off, 0);
  ck_assert_uint_ne(got.program_off, 0);
  ck_assert_uint_ne(got.wall_off, 0);
  ck_assert_uint_ne(got.cmdline_off, 0);
  ck_assert_uint_ne(got.threads_off, 0);
  ck_assert_uint_ne(got.meta_off, 0);
  ck_assert_ptr_eq(er_st.map + got.threads_off, (unsigned char *)er_st.threads);
  ck_assert_int_eq(er_layout_plan(&plan, got.flags, got.n_names, 128,
                                  UINT64_C(1) << 16, 4096),
                   0);
  same_layout(&got, &plan);
  /* And the file, read as any reader reads it, says the same. */
  char path[PATH_MAX];
  size_t len;
  uint64_t *w = (uint64_t *)er_slurp(er_ring_path(path, sizeof path, dir), &len);
  ck_assert_int_eq(er_layout_meta(&got, w, len), 0);
  ck_assert_int_eq(er_layout_ext(&got, w + ER_META_WORDS, len), 0);
  same_layout(&got, &plan);
  free(w);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

/* OCaml 5's files: no block, 80-byte headers right after the metadata,
 * nothing between the sections. */
START_TEST(test_ocaml5_files) {
  const char *name = er_vectors[_i];
  char path[PATH_MAX];
  ER_NEED_VECTOR(er_tmpdir(), name, path);
  size_t len;
  uint64_t *w = (uint64_t *)er_slurp(path, &len);
  struct er_layout l;
  ck_assert_int_eq(er_layout_meta(&l, w, len), 0);
  ck_assert_uint_eq(l.headers_off, 64);
  ck_assert_uint_eq(l.hdr_bytes, 80);
  ck_assert_uint_eq(l.data_off, 64 + l.max_domains * 80);
  ck_assert_uint_eq(l.custom_off, l.data_off + l.max_domains * l.ring_bytes);
  ck_assert_uint_eq(l.file_bytes, len);
  ck_assert_uint_eq(l.ext_bytes, 0);
  ck_assert_uint_ne(w[ER_META_WORDS + ER_EXT_MAGIC_W], ER_EXT_MAGIC);
  free(w);
}
END_TEST

/* ---- Metadata headers refused. */

/* A good header: 2 domains of 2^10 words, eventring's layout. */
static const uint64_t good_words[ER_META_WORDS] = {
    [ER_META_VERSION] = 1,          [ER_META_MAX_DOMAINS] = 2,
    [ER_META_RING_HEADER_SIZE] = 256, [ER_META_RING_SIZE_BYTES] = 8192,
    [ER_META_RING_SIZE_ELEMENTS] = 1024, [ER_META_HEADERS_OFFSET] = 2048,
    [ER_META_DATA_OFFSET] = 4096,
    [ER_META_CUSTOM_EVENTS_OFFSET] = 4096 + 2 * 8192};
static void good_meta(uint64_t *m) { memcpy(m, good_words, sizeof good_words); }
#define GOOD_SIZE (4096 + 2 * 8192 + 8192 * 128)

static const struct meta_case {
  const char *name;
  int word;        /* ER_META_* */
  uint64_t value;
  uint64_t size;   /* the file's; 0: GOOD_SIZE */
  int want;
} metas[] = {
    {"good", ER_META_VERSION, 1, 0, 0},
    {"zeros", ER_META_VERSION, 0, 1, EVENTRING_E_NOTRINGFILE},
    {"short, version 1", ER_META_VERSION, 1, 16, EVENTRING_E_TRUNCATED},
    {"short, other", ER_META_VERSION, 9, 16, EVENTRING_E_NOTRINGFILE},
    {"version 2", ER_META_VERSION, 2, 0, EVENTRING_E_VERSION},
    {"no domain", ER_META_MAX_DOMAINS, 0, 0, EVENTRING_E_CORRUPT},
    {"too many domains", ER_META_MAX_DOMAINS, 65537, 0, EVENTRING_E_CORRUPT},
    {"headers overlap the rings", ER_META_MAX_DOMAINS, 13, 0,
     EVENTRING_E_CORRUPT},
    {"header under 80", ER_META_RING_HEADER_SIZE, 72, 0, EVENTRING_E_CORRUPT},
    {"header unaligned", ER_META_RING_HEADER_SIZE, 260, 0,
     EVENTRING_E_CORRUPT},
    {"ring not a power of two", ER_META_RING_SIZE_ELEMENTS, 1000, 0,
     EVENTRING_E_CORRUPT},
    {"ring bytes disagree", ER_META_RING_SIZE_BYTES, 8200, 0,
     EVENTRING_E_CORRUPT},
    {"ring bytes 2^63", ER_META_RING_SIZE_BYTES, UINT64_C(1) << 63, 0,
     EVENTRING_E_CORRUPT},
    {"headers at 0", ER_META_HEADERS_OFFSET, 0, 0, EVENTRING_E_CORRUPT},
    {"headers wrap", ER_META_HEADERS_OFFSET, UINT64_MAX - 7, 0,
     EVENTRING_E_CORRUPT},
    {"data wraps", ER_META_DATA_OFFSET, UINT64_MAX - 7, 0,
     EVENTRING_E_CORRUPT},
    {"data before headers end", ER_META_DATA_OFFSET, 1024, 0,
     EVENTRING_E_CORRUPT},
    {"gap too wide", ER_META_DATA_OFFSET, 4096 + 65536 + 8, 0,
     EVENTRING_E_CORRUPT},
    {"names wrap", ER_META_CUSTOM_EVENTS_OFFSET, UINT64_MAX - 7, 0,
     EVENTRING_E_CORRUPT},
    {"names inside the rings", ER_META_CUSTOM_EVENTS_OFFSET, 4096 + 8192, 0,
     EVENTRING_E_CORRUPT},
    {"names past the end", ER_META_CUSTOM_EVENTS_OFFSET,
     4096 + 2 * 8192 + 4096, 0, EVENTRING_E_TRUNCATED},
    {"file cut", ER_META_VERSION, 1, GOOD_SIZE - 8, EVENTRING_E_TRUNCATED},
};

START_TEST(test_meta_refused) {
  const struct meta_case *t = &metas[_i];
  uint64_t m[ER_META_WORDS];
  good_meta(m);
  if (t->size == 1) memset(m, 0, sizeof m);
  else m[t->word] = t->value;
  struct er_layout l;
  int got = er_layout_meta(&l, m, t->size > 1 ? t->size : GOOD_SIZE);
  ck_assert_msg(got == t->want, "%s: %d, not %d", t->name, got, t->want);
  ck_assert_int_eq(er_check_meta(m, t->size > 1 ? t->size : GOOD_SIZE),
                   t->want);
  if (!got) ck_assert_uint_eq(l.file_bytes, GOOD_SIZE);
}
END_TEST

/* ---- Extension blocks refused, and sections left out. */

/* A good block for good_meta()'s header: 2 + 2 + 1 names, a program
 * name, the wall clock, the threads part and the start time. */
static void good_ext(uint64_t *x) {
  struct er_layout p;
  ck_assert_int_eq(er_layout_plan(&p,
                                  ER_EXT_FLAG_PROGRAM | ER_EXT_FLAG_WALLCLOCK |
                                      ER_EXT_FLAG_THREADS |
                                      ER_EXT_FLAG_START_TIME |
                                      ER_EXT_FLAG_META,
                                  5, 2, 1024, 64),
                   0);
  ck_assert_uint_le(p.headers_off, 2048); /* fits good_meta()'s */
  memset(x, 0, ER_EXT_WORDS * 8);
  x[ER_EXT_MAGIC_W] = ER_EXT_MAGIC;
  x[ER_EXT_VERSION_W] = ER_EXT_VERSION;
  x[ER_EXT_SIZE] = p.ext_bytes;
  x[ER_EXT_FLAGS] = p.flags;
  x[ER_EXT_NAMES_OFFSET] = p.names_off;
  x[ER_EXT_N_PHASES] = 2;
  x[ER_EXT_N_COUNTERS] = 2;
  x[ER_EXT_N_LIFECYCLE] = 1;
  x[ER_EXT_NAME_SLOT] = ER_EXT_NAME_BYTES;
}

/* What is left out: bits of the sections that decode to 0. */
enum { NONE = 0, PROG = 1, WALL = 2, THR = 4, START = 8, META = 16 };

static const struct ext_case {
  const char *name;
  int word;        /* ER_EXT_* */
  uint64_t value;  /* set; with `add`, added */
  int add;
  int want;        /* er_layout_ext()'s */
  int absent;      /* with 0: the sections left out */
} exts[] = {
    {"good", ER_EXT_PID, 1, 0, 0, NONE},
    {"size 2^62", ER_EXT_SIZE, UINT64_C(1) << 62, 0, EVENTRING_E_CORRUPT, 0},
    {"size wraps", ER_EXT_SIZE, UINT64_MAX, 0, EVENTRING_E_CORRUPT, 0},
    {"size past headers", ER_EXT_SIZE, 2048, 0, EVENTRING_E_CORRUPT, 0},
    {"size 0", ER_EXT_SIZE, 0, 0, EVENTRING_E_CORRUPT, 0},
    {"names before the block's words", ER_EXT_NAMES_OFFSET, 64, 0,
     EVENTRING_E_CORRUPT, 0},
    {"names wrap", ER_EXT_NAMES_OFFSET, UINT64_MAX - 47, 0,
     EVENTRING_E_CORRUPT, 0},
    {"names past the block", ER_EXT_NAMES_OFFSET, 2048, 0,
     EVENTRING_E_CORRUPT, 0},
    {"8193 phases", ER_EXT_N_PHASES, 8193, 0, EVENTRING_E_CORRUPT, 0},
    {"counters wrap", ER_EXT_N_COUNTERS, UINT64_MAX, 0, EVENTRING_E_CORRUPT,
     0},
    {"slot of 1", ER_EXT_NAME_SLOT, 1, 0, EVENTRING_E_CORRUPT, 0},
    {"slot of 257", ER_EXT_NAME_SLOT, 257, 0, EVENTRING_E_CORRUPT, 0},
    /* Optional sections: the block stays good without them. */
    {"block ends before the program", ER_EXT_SIZE,
     ER_EXT_WORDS * 8 + 5 * ER_EXT_NAME_BYTES + 8, 0, 0,
     PROG | WALL | THR | META},
    {"block ends before the wall clock", ER_EXT_SIZE,
     ER_EXT_WORDS * 8 + 5 * ER_EXT_NAME_BYTES + ER_EXT_PROGRAM_BYTES + 8, 0,
     0, WALL | THR | META},
    {"block ends in the thread entries", ER_EXT_SIZE, (uint64_t)-560, 1, 0,
     THR | META},
    {"block ends in the metadata", ER_EXT_SIZE, (uint64_t)-8, 1, 0, META},
    {"metadata over the start time", ER_EXT_SIZE, (uint64_t)-1, 1, 0, META},
    {"wall clock unaligned", ER_EXT_NAME_SLOT, ER_EXT_NAME_BYTES - 4, 0, 0,
     WALL | META},
    {"no flags", ER_EXT_FLAGS, 0, 0, 0, PROG | WALL | THR | START | META},
    /* A reader that predates a section reads the others where they were. */
    {"no metadata flag", ER_EXT_FLAGS, ~(uint64_t)ER_EXT_FLAG_META, 2, 0,
     META},
};

START_TEST(test_ext_refused) {
  const struct ext_case *t = &exts[_i];
  uint64_t m[ER_META_WORDS], x[ER_EXT_WORDS];
  good_meta(m);
  good_ext(x);
  if (t->add == 2) x[t->word] &= t->value;
  else if (t->add) x[t->word] += t->value;
  else x[t->word] = t->value;
  struct er_layout l;
  ck_assert_int_eq(er_layout_meta(&l, m, GOOD_SIZE), 0);
  int got = er_layout_ext(&l, x, GOOD_SIZE);
  ck_assert_msg(got == t->want, "%s: %d, not %d", t->name, got, t->want);
  if (got) return;
  ck_assert_msg(!l.program_off == !!(t->absent & PROG), "%s: program",
                t->name);
  ck_assert_msg(!l.wall_off == !!(t->absent & WALL), "%s: wall", t->name);
  ck_assert_msg(!l.threads_off == !!(t->absent & THR), "%s: threads",
                t->name);
  ck_assert_msg(!l.cmdline_off == !!(t->absent & THR), "%s: cmdline",
                t->name);
  ck_assert_msg(!l.start_time_off == !!(t->absent & START), "%s: start",
                t->name);
  ck_assert_msg(!l.meta_off == !!(t->absent & META), "%s: metadata",
                t->name);
  /* Whatever is there lies inside the block and before the headers. */
  uint64_t end = ER_EXT_OFFSET + l.ext_bytes;
  if (l.program_off) ck_assert_uint_le(l.program_off + 64, end);
  if (l.wall_off) ck_assert_uint_le(l.wall_off + 56, end);
  if (l.threads_off) ck_assert_uint_le(l.threads_off + 2 * 48, end);
  if (l.meta_off) {
    ck_assert_uint_eq(l.meta_off, l.threads_off + 2 * 48);
    ck_assert_uint_le(l.meta_off + ER_EXT_META_BYTES, end - 8);
  }
  ck_assert_uint_le(end, l.headers_off);
}
END_TEST

/* ---- Plans that do not fit in 64 bits. */

static const struct overflow_case {
  const char *name;
  uint64_t flags, n_names, domains, ring_words, align;
  int want;
} overflows[] = {
    {"fits", ER_EXT_FLAG_THREADS | ER_EXT_FLAG_PROGRAM, 3, 128, 1024, 4096, 0},
    {"names", 0, UINT64_MAX / 16, 1, 2, 64, -EOVERFLOW},
    {"thread entries", ER_EXT_FLAG_THREADS, 0, UINT64_MAX / 32, 2, 64,
     -EOVERFLOW},
    {"ring headers", 0, 0, UINT64_MAX / 128, 2, 64, -EOVERFLOW},
    {"ring words", 0, 0, 1, UINT64_C(1) << 61, 64, -EOVERFLOW},
    {"rings", 0, 0, 1 << 16, UINT64_C(1) << 45, 64, -EOVERFLOW},
    {"alignment not a power of two", 0, 0, 1, 2, 100, -EINVAL},
    {"alignment too large", 0, 0, 1, 2, 1 << 17, -EINVAL},
};

START_TEST(test_plan_overflow) {
  const struct overflow_case *t = &overflows[_i];
  struct er_layout l;
  int got = er_layout_plan(&l, t->flags, t->n_names, t->domains, t->ring_words,
                           t->align);
  ck_assert_msg(got == t->want, "%s: %d, not %d", t->name, got, t->want);
}
END_TEST

/* ---- The labels' area of the writer's metadata. */

/* Areas as readers find them: how many labels er_labels_check() counts,
 * -1 for a malformed area, which a cursor reads as no label at all. */
static const struct area_case {
  const char *name;
  const char *bytes;  /* the area's start; the rest is zeros */
  size_t len;
  int fill;           /* nonzero: the whole area is this byte */
  int want;
} areas[] = {
    {"empty", "", 0, 0, 0},
    {"one", "a=b", 4, 0, 1},
    {"two", "a=b\0c_1=x y=z", 14, 0, 2},
    {"an empty string ends the list", "a=b\0\0c=d", 9, 0, 1},
    {"no NUL before the end", NULL, 0, 'x', -1},
    {"name starts with a digit", "1a=b", 5, 0, -1},
    {"name with a dash", "a-b=c", 6, 0, -1},
    {"no =", "ab", 3, 0, -1},
    {"empty name", "=b", 3, 0, -1},
    {"empty value", "a=", 3, 0, -1},
    {"control character in the value", "a=\x01", 4, 0, -1},
    {"a bad label after a good one", "a=b\0c", 6, 0, -1},
};

/* A whole file (1 domain of 2 words) whose block holds only the writer's
 * metadata: `version` and the labels' `area`; its layout in *l. */
static uint64_t *meta_file(const char *version, const unsigned char *area,
                           struct er_layout *l) {
  struct er_ext_desc d = {.numbering = ER_PHASES_OCAML53,
                          .flags = ER_EXT_FLAG_META,
                          .pid = 1,
                          .ocaml_version = version,
                          .labels = area};
  ck_assert_int_eq(er_ext_layout(l, &d, 1, 2, 64), 0);
  uint64_t *whole = calloc(1, (size_t)l->file_bytes);
  ck_assert_ptr_nonnull(whole);
  uint64_t *m = image(l, &d);
  memcpy(whole, m, (size_t)l->data_off);
  free(m);
  return whole;
}

START_TEST(test_labels_area) {
  const struct area_case *t = &areas[_i];
  unsigned char area[ER_MD_LABEL_BYTES] = {0};
  if (t->fill) memset(area, t->fill, sizeof area);
  else memcpy(area, t->bytes, t->len);
  int got = er_labels_check(area, sizeof area);
  ck_assert_msg(got == t->want, "%s: %d, not %d", t->name, got, t->want);

  /* A file whose metadata holds the area: its version still reads, its
   * labels all or none. */
  struct er_layout l;
  uint64_t *whole = meta_file("5.2.0", area, &l);
  eventring_cursor *c;
  ck_assert_int_eq(er_cursor_open_image(&c, whole, (size_t)l.file_bytes), 0);
  ck_assert_str_eq(eventring_cursor_ocaml_version(c), "5.2.0");
  const char *n, *v;
  int i = 0;
  while (eventring_cursor_label(c, i, &n, &v) == 1) i++;
  ck_assert_msg(i == (t->want < 0 ? 0 : t->want), "%s: %d labels", t->name,
                i);
  eventring_cursor_free(c);
  free(whole);
}
END_TEST

/* A version the writer could not have written is not shown. */
START_TEST(test_bad_version) {
  unsigned char area[ER_MD_LABEL_BYTES] = {0};
  struct er_layout l;
  uint64_t *whole = meta_file("4.14\n", area, &l);
  eventring_cursor *c;
  ck_assert_int_eq(er_cursor_open_image(&c, whole, (size_t)l.file_bytes), 0);
  ck_assert_ptr_null(eventring_cursor_ocaml_version(c));
  eventring_cursor_free(c);
  /* And one that fills its 32 bytes without a NUL. */
  memset((char *)whole + l.meta_off + ER_MD_VERSION, '5',
         ER_EXT_OCAML_VERSION_BYTES);
  ck_assert_int_eq(er_cursor_open_image(&c, whole, (size_t)l.file_bytes), 0);
  ck_assert_ptr_null(eventring_cursor_ocaml_version(c));
  eventring_cursor_free(c);
  free(whole);
}
END_TEST

/* er_labels_set() in turn on one area: what each call returns, and the
 * area's labels after the last, "name=value" joined by commas. */
static const struct set_case {
  const char *name;
  const char *ops[20]; /* "name=value", NULL-terminated */
  int want_last;
  const char *want;
} sets[] = {
    {"two", {"a=1", "b=2", NULL}, 0, "a=1,b=2"},
    {"replaced", {"a=1", "b=2", "a=3", NULL}, 0, "b=2,a=3"},
    {"value with = and spaces", {"k=x = y", NULL}, 0, "k=x = y"},
    {"bad name", {"a=1", "a.b=2", NULL}, -EINVAL, "a=1"},
    {"name starts with a digit", {"9a=2", NULL}, -EINVAL, ""},
    {"name starts with __", {"__name__=x", NULL}, -EINVAL, ""},
    {"name _x", {"_x=1", NULL}, 0, "_x=1"},
    {"empty value", {"a=", NULL}, -EINVAL, ""},
    {"newline in the value", {"a=x\ny", NULL}, -EINVAL, ""},
    {"17 labels", {"a=1", "b=1", "c=1", "d=1", "e=1", "f=1", "g=1", "h=1",
                   "i=1", "j=1", "k=1", "l=1", "m=1", "n=1", "o=1", "p=1",
                   "q=1", NULL},
     -ENOSPC, "a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=1,j=1,k=1,l=1,m=1,n=1,o=1,p=1"},
    {"16 labels, one replaced", {"a=1", "b=1", "c=1", "d=1", "e=1", "f=1",
                                 "g=1", "h=1", "i=1", "j=1", "k=1", "l=1",
                                 "m=1", "n=1", "o=1", "p=1", "a=2", NULL},
     0, "b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=1,j=1,k=1,l=1,m=1,n=1,o=1,p=1,a=2"},
};

/* A value of `n` x's after "v=": fills n + 3 bytes of the area. */
static char *long_label(size_t n) {
  char *s = malloc(n + 3);
  ck_assert_ptr_nonnull(s);
  memcpy(s, "v=", 2);
  memset(s + 2, 'x', n);
  s[n + 2] = 0;
  return s;
}

static void joined(const unsigned char *area, char *out, size_t size) {
  size_t pos = 0;
  struct er_label lb;
  out[0] = 0;
  while (er_labels_next(area, ER_MD_LABEL_BYTES, &pos, &lb) == 1)
    snprintf(out + strlen(out), size - strlen(out), "%s%.*s=%.*s",
             out[0] ? "," : "", (int)lb.name_len, lb.name,
             (int)lb.value_len, lb.value);
}

static int set_one(unsigned char *area, const char *item) {
  const char *eq = strchr(item, '=');
  return er_labels_set(area, ER_MD_LABEL_BYTES, item, (size_t)(eq - item),
                       eq + 1, strlen(eq + 1));
}

START_TEST(test_labels_set) {
  const struct set_case *t = &sets[_i];
  unsigned char area[ER_MD_LABEL_BYTES] = {0};
  int last = 0;
  for (int k = 0; t->ops[k]; k++) last = set_one(area, t->ops[k]);
  ck_assert_msg(last == t->want_last, "%s: %d", t->name, last);
  char got[1024];
  joined(area, got, sizeof got);
  ck_assert_str_eq(got, t->want);
}
END_TEST

/* The area's bytes bound the labels: one that fills it exactly fits, a
 * byte more does not, and a replacement that would not fit keeps the
 * old label. */
START_TEST(test_labels_overflow) {
  unsigned char area[ER_MD_LABEL_BYTES] = {0};
  char *fits = long_label(ER_MD_LABEL_BYTES - 3);
  char *over = long_label(ER_MD_LABEL_BYTES - 2);
  ck_assert_int_eq(set_one(area, over), -ENOSPC);
  ck_assert_int_eq(er_labels_check(area, sizeof area), 0);
  ck_assert_int_eq(set_one(area, fits), 0);
  ck_assert_int_eq(er_labels_check(area, sizeof area), 1);
  ck_assert_int_eq(area[ER_MD_LABEL_BYTES - 1], 0);
  ck_assert_int_eq(set_one(area, "w=1"), -ENOSPC);
  ck_assert_int_eq(set_one(area, over), -ENOSPC);
  char got[1024];
  joined(area, got, sizeof got);
  ck_assert_str_eq(got, fits);
  free(fits);
  free(over);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static TCase *tc_codec(void) {
  TCase *tc = er_tcase("codec");
  tcase_add_loop_test(tc, test_plan_decodes_alike, 0, N(plans));
  tcase_add_test(tc, test_live_file);
  tcase_add_loop_test(tc, test_ocaml5_files, 0, ER_NVECTORS);
  tcase_add_loop_test(tc, test_meta_refused, 0, N(metas));
  tcase_add_loop_test(tc, test_ext_refused, 0, N(exts));
  tcase_add_loop_test(tc, test_plan_overflow, 0, N(overflows));
  tcase_add_loop_test(tc, test_labels_area, 0, N(areas));
  tcase_add_test(tc, test_bad_version);
  tcase_add_loop_test(tc, test_labels_set, 0, N(sets));
  tcase_add_test(tc, test_labels_overflow);
  return tc;
}

ER_TEST_MAIN("layout_codec", tc_codec)
