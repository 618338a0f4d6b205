/* Tests that malformed ring files give a clear negative error from open or poll, never a crash, a hang or SIGBUS; a file cut (and grown again) under a cursor is truncated, not malformed. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "consumer_cb.h"
#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "testlib.h"
/* tool_ring_error(), the eventring command's message for an error. */
#include "../tools/input/input.h"

/* Each case starts from a real file -- one eventring writes here (2
 * domains, 1024-word rings) or OCaml 5.2's ocaml5-basic vector -- changes
 * a few bytes or its size, writes the variant to a file and reads it with
 * every callback set.  The case passes when open or some poll returns the
 * expected error; every case runs in its own process (a Check loop test)
 * under alarm(10), and a crash or a timeout prints the case's name. */

enum base { OWN, OCAML };

/* A file image being mutated, with the base file's layout. */
struct img {
  unsigned char *b;
  size_t size;
  uint64_t hdr_off, hdr_bytes, data_off, ring_words, custom_off;
  /* Ring positions (words) of events in domain 0 of the base. */
  uint64_t pos_start, pos_int, pos_custom, pos_begin, pos_counter, pos_stop;
  unsigned custom_words; /* payload words of that custom event */
  unsigned int_id;       /* user id of that int event */
  int ours;              /* eventring's file: head lives in the pairs */
};

/* The bases, made once by the fixture before the cases fork. */
static char base_dir[64];
static char base_path[2][PATH_MAX];
static int have_ocaml;

static uint64_t *word(struct img *m, uint64_t off) {
  ck_assert_uint_le(off + 8, m->size);
  return (uint64_t *)(m->b + off);
}
static uint64_t *meta(struct img *m, int i) { return word(m, 8 * (uint64_t)i); }
static uint64_t *ext(struct img *m, int i) { return word(m, 64 + 8 * (uint64_t)i); }
static uint64_t *rhdr(struct img *m, int dom, int i) {
  return word(m, m->hdr_off + (uint64_t)dom * m->hdr_bytes + 8 * (uint64_t)i);
}
static uint64_t *rword(struct img *m, int dom, uint64_t pos) {
  return word(m, m->data_off + (uint64_t)dom * m->ring_words * 8 +
                     8 * (pos & (m->ring_words - 1)));
}
/* Replaces the length field of the event header at `pos`. */
static void set_len(struct img *m, uint64_t pos, unsigned len) {
  uint64_t *h = rword(m, 0, pos);
  *h = (*h & ~(UINT64_C(0x3ff) << 54)) | ((uint64_t)len << 54);
}
static void set_hdr(struct img *m, uint64_t pos, unsigned len, int user,
                    unsigned type, unsigned id) {
  *rword(m, 0, pos) = ER_HDR(len, user, type, id);
}

/* ---- The cases. */

#define MUT(name) static void name(struct img *m)

MUT(version0) { *meta(m, ER_META_VERSION) = 0; }
MUT(version2) { *meta(m, ER_META_VERSION) = 2; }
MUT(domains0) { *meta(m, ER_META_MAX_DOMAINS) = 0; }
MUT(domains_huge) { *meta(m, ER_META_MAX_DOMAINS) = UINT64_C(1) << 40; }
MUT(domains_max) { *meta(m, ER_META_MAX_DOMAINS) = UINT64_MAX; }
MUT(domains_too_many) { *meta(m, ER_META_MAX_DOMAINS) += 1; }
MUT(ring_not_pow2) {
  *meta(m, ER_META_RING_SIZE_ELEMENTS) = 1000;
  *meta(m, ER_META_RING_SIZE_BYTES) = 8000;
}
MUT(ring_zero) {
  *meta(m, ER_META_RING_SIZE_ELEMENTS) = 0;
  *meta(m, ER_META_RING_SIZE_BYTES) = 0;
}
MUT(ring_2e40) {
  *meta(m, ER_META_RING_SIZE_ELEMENTS) = UINT64_C(1) << 40;
  *meta(m, ER_META_RING_SIZE_BYTES) = UINT64_C(1) << 43;
}
MUT(ring_2e63) {
  *meta(m, ER_META_RING_SIZE_ELEMENTS) = UINT64_C(1) << 63;
  *meta(m, ER_META_RING_SIZE_BYTES) = 0; /* 2^66 wrapped */
}
MUT(ring_bytes_plus8) { *meta(m, ER_META_RING_SIZE_BYTES) += 8; }
MUT(ring_bytes_half) { *meta(m, ER_META_RING_SIZE_BYTES) /= 2; }
MUT(ring_bigger_than_file) {
  *meta(m, ER_META_RING_SIZE_ELEMENTS) *= 4;
  *meta(m, ER_META_RING_SIZE_BYTES) *= 4;
}
MUT(hdr_size_72) { *meta(m, ER_META_RING_HEADER_SIZE) = 72; }
MUT(hdr_size_0) { *meta(m, ER_META_RING_HEADER_SIZE) = 0; }
MUT(hdr_size_84) { *meta(m, ER_META_RING_HEADER_SIZE) = 84; }
MUT(hdr_size_huge) { *meta(m, ER_META_RING_HEADER_SIZE) = UINT64_C(1) << 62; }
MUT(hdr_size_grown) { *meta(m, ER_META_RING_HEADER_SIZE) += 4096; }
MUT(headers_at_0) { *meta(m, ER_META_HEADERS_OFFSET) = 0; }
MUT(headers_unaligned) { *meta(m, ER_META_HEADERS_OFFSET) += 1; }
MUT(headers_2e63) { *meta(m, ER_META_HEADERS_OFFSET) = UINT64_C(1) << 63; }
MUT(headers_over_data) {
  *meta(m, ER_META_HEADERS_OFFSET) = *meta(m, ER_META_DATA_OFFSET) - 8;
}
MUT(data_unaligned) { *meta(m, ER_META_DATA_OFFSET) += 4; }
MUT(data_on_headers) {
  *meta(m, ER_META_DATA_OFFSET) = *meta(m, ER_META_HEADERS_OFFSET);
}
MUT(data_beyond_file) { *meta(m, ER_META_DATA_OFFSET) = m->size + 4096; }
MUT(data_2e63) { *meta(m, ER_META_DATA_OFFSET) = UINT64_C(1) << 63; }
MUT(data_wraps) { *meta(m, ER_META_DATA_OFFSET) = UINT64_MAX - 7; }
MUT(custom_unaligned) { *meta(m, ER_META_CUSTOM_EVENTS_OFFSET) += 1; }
MUT(custom_on_data) {
  *meta(m, ER_META_CUSTOM_EVENTS_OFFSET) = *meta(m, ER_META_DATA_OFFSET);
}
MUT(custom_at_eof) { *meta(m, ER_META_CUSTOM_EVENTS_OFFSET) = m->size; }
MUT(custom_near_eof) {
  *meta(m, ER_META_CUSTOM_EVENTS_OFFSET) =
      m->size - ER_NAME_SLOTS * ER_NAME_SLOT_BYTES + 8;
}
MUT(custom_2e63) { *meta(m, ER_META_CUSTOM_EVENTS_OFFSET) = UINT64_C(1) << 63; }
MUT(custom_wraps) { *meta(m, ER_META_CUSTOM_EVENTS_OFFSET) = UINT64_MAX - 7; }
MUT(all_offsets_equal) {
  uint64_t o = *meta(m, ER_META_HEADERS_OFFSET);
  *meta(m, ER_META_DATA_OFFSET) = o;
  *meta(m, ER_META_CUSTOM_EVENTS_OFFSET) = o;
}
/* Overflow of max_domains * ring bytes rather than of an offset. */
MUT(domains_times_ring_overflow) {
  *meta(m, ER_META_MAX_DOMAINS) = 65536;
  *meta(m, ER_META_RING_SIZE_ELEMENTS) = UINT64_C(1) << 32;
  *meta(m, ER_META_RING_SIZE_BYTES) = UINT64_C(1) << 35;
}

/* The extension block. */
MUT(ext_version2) { *ext(m, ER_EXT_VERSION_W) = 2; }
MUT(ext_size_huge) { *ext(m, ER_EXT_SIZE) = UINT64_C(1) << 62; }
MUT(ext_size_max) { *ext(m, ER_EXT_SIZE) = UINT64_MAX; }
MUT(ext_size_0) { *ext(m, ER_EXT_SIZE) = 0; }
MUT(ext_size_past_headers) {
  *ext(m, ER_EXT_SIZE) = m->hdr_off; /* 64 + size > headers_offset */
}
MUT(ext_phases_9000) { *ext(m, ER_EXT_N_PHASES) = 9000; }
MUT(ext_counters_max) { *ext(m, ER_EXT_N_COUNTERS) = UINT64_MAX; }
MUT(ext_lifecycle_2e62) { *ext(m, ER_EXT_N_LIFECYCLE) = UINT64_C(1) << 62; }
MUT(ext_names_offset_0) { *ext(m, ER_EXT_NAMES_OFFSET) = 0; }
/* Past the block: beyond the program name, the wall clock words, the
 * command line, the thread entries and the writer's metadata that follow
 * the tables too. */
MUT(ext_names_offset_past) {
  *ext(m, ER_EXT_NAMES_OFFSET) +=
      64 + ER_EXT_PROGRAM_BYTES + ER_EXT_WALL_WORDS * 8 +
      ER_EXT_CMDLINE_BYTES +
      *meta(m, ER_META_MAX_DOMAINS) * ER_EXT_THREAD_BYTES +
      (*ext(m, ER_EXT_FLAGS) & ER_EXT_FLAG_META ? ER_EXT_META_BYTES : 0);
}
MUT(ext_names_offset_2e63) { *ext(m, ER_EXT_NAMES_OFFSET) = UINT64_C(1) << 63; }
MUT(ext_names_offset_max) { *ext(m, ER_EXT_NAMES_OFFSET) = UINT64_MAX - 47; }
MUT(ext_slot_0) { *ext(m, ER_EXT_NAME_SLOT) = 0; }
MUT(ext_slot_1000) { *ext(m, ER_EXT_NAME_SLOT) = 1000; }
MUT(ext_slot_max) { *ext(m, ER_EXT_NAME_SLOT) = UINT64_MAX; }
MUT(ext_numbering_99) { *ext(m, ER_EXT_PHASE_NUMBERING) = 99; }
MUT(ext_phase_name_no_nul) {
  uint64_t off = *ext(m, ER_EXT_NAMES_OFFSET);
  memset(m->b + off, 'A', *ext(m, ER_EXT_NAME_SLOT));
}
MUT(ext_counter_name_no_nul) {
  uint64_t off = *ext(m, ER_EXT_NAMES_OFFSET) +
                 (*ext(m, ER_EXT_N_PHASES) + 3) * *ext(m, ER_EXT_NAME_SLOT);
  memset(m->b + off, 'C', *ext(m, ER_EXT_NAME_SLOT));
}
/* A table shorter than the ids the rings use: begin(minor) is out of it. */
MUT(ext_few_phases) { *ext(m, ER_EXT_N_PHASES) = 5; }
MUT(ext_few_counters) { *ext(m, ER_EXT_N_COUNTERS) = 2; }

/* Ring headers.  An eventring reader takes head from the newest of the
 * (head, evicted) pairs (ring_format.h), an OCaml 5 reader from word 0:
 * set_head() moves both, as a writer would. */
static void set_pair(struct img *m, int dom, uint64_t pseq, uint64_t head,
                     uint64_t evicted) {
  ck_assert(m->ours);
  int slot = (int)(pseq % ER_RING_NPAIRS);
  *rhdr(m, dom, ER_RING_PAIRS + 2 * slot) = head;
  *rhdr(m, dom, ER_RING_PAIRS + 2 * slot + 1) = evicted;
  *rhdr(m, dom, ER_RING_PSEQ) = pseq;
}
static void set_head(struct img *m, int dom, uint64_t head, uint64_t evicted) {
  *rhdr(m, dom, ER_RING_HEAD) = head;
  if (m->ours) set_pair(m, dom, 1, head, evicted);
}
MUT(head_after_tail) { set_head(m, 0, *rhdr(m, 0, ER_RING_TAIL) + 3, 0); }
MUT(tail_far_ahead) {
  *rhdr(m, 0, ER_RING_TAIL) = *rhdr(m, 0, ER_RING_HEAD) + m->ring_words + 1;
}
MUT(tail_max) { *rhdr(m, 0, ER_RING_TAIL) = UINT64_MAX; }
MUT(head_max) { set_head(m, 0, UINT64_MAX, 0); }
/* An unused domain whose header claims 30 words of zeros: a zero header
 * is an event of length 0. */
MUT(unused_ring_zeros) { *rhdr(m, 1, ER_RING_TAIL) = 30; }
/* Head mid-event: what it points at is not a header. */
MUT(head_mid_event) {
  set_head(m, 0, m->pos_int + 1, 1);
  /* The int's timestamp word, seen as a header: length 0. */
  *rword(m, 0, m->pos_int + 1) = 0;
}
/* eventring's (head, evicted) pairs (ring_format.h) with values that do
 * not fit the ring: no error is required (a reader cannot tell them from
 * a writer's race), only no crash and no hang. */
MUT(pseq_max) { *rhdr(m, 0, ER_RING_PSEQ) = UINT64_MAX; }
MUT(pair_past_tail) {
  set_pair(m, 0, 1, *rhdr(m, 0, ER_RING_TAIL) + 100, 5);
}
MUT(pair_evicted_huge) {
  set_head(m, 0, m->pos_int, UINT64_MAX);
}
MUT(pair_behind_head) {
  *rhdr(m, 0, ER_RING_HEAD) = m->pos_int;
  set_pair(m, 0, 7, 0, 3);
}
MUT(written_zero) { *rhdr(m, 0, ER_RING_WRITTEN) = 0; }
/* Counts that cannot be true.  Positions moved by 2^62 words (a multiple
 * of the ring's size, so every event stays where it is) with a plausible
 * count before head: no writer gets that far. */
MUT(positions_2e62) {
  uint64_t far = UINT64_C(1) << 62;
  *rhdr(m, 0, ER_RING_TAIL) += far;
  set_head(m, 0, far, far / 4);
}
/* More events before head than the ring's writer ever wrote. */
MUT(evicted_over_written) {
  set_head(m, 0, m->pos_int, *rhdr(m, 0, ER_RING_WRITTEN) + 1);
}
/* eventring's extension block with OCaml 5's 80-byte ring headers: the
 * pairs would be read from the next domain's header. */
MUT(hdr_size_80_with_ext) { *meta(m, ER_META_RING_HEADER_SIZE) = 80; }

/* Events. */
MUT(event_len_0) { set_len(m, m->pos_int, 0); }
MUT(event_len_1) { set_len(m, m->pos_int, 1); }
MUT(event_len_1023) { set_len(m, m->pos_int, 1023); }
MUT(last_event_past_tail) { set_len(m, m->pos_stop, 4); }
MUT(padding_past_tail) {
  set_hdr(m, m->pos_stop, 500, 0, ER_EV_INTERNAL, 0);
}
/* Domain 1 made to hold one event across the ring's end. */
MUT(event_straddles_end) {
  uint64_t p = m->ring_words - 4;
  set_head(m, 1, p, 0);
  *rhdr(m, 1, ER_RING_TAIL) = p + 8;
  *rword(m, 1, p) = ER_HDR(8, 0, ER_EV_COUNTER, 0);
  *rword(m, 1, p + 1) = 12345;
}
MUT(runtime_type_7) { set_hdr(m, m->pos_int, 3, 0, 7, 0); }
MUT(runtime_type_15) { set_hdr(m, m->pos_int, 3, 0, 15, 0); }
MUT(user_type_5) { set_hdr(m, m->pos_int, 3, 1, 5, m->int_id); }
MUT(user_type_15) { set_hdr(m, m->pos_int, 3, 1, 15, m->int_id); }
MUT(lifecycle_id_8) { set_hdr(m, m->pos_start, 3, 0, ER_EV_LIFECYCLE, 8); }
MUT(lifecycle_id_9) { set_hdr(m, m->pos_start, 3, 0, ER_EV_LIFECYCLE, 9); }
MUT(lifecycle_id_max) {
  set_hdr(m, m->pos_start, 3, 0, ER_EV_LIFECYCLE, 0x1fff);
}
MUT(lifecycle_len_4) { set_len(m, m->pos_start, 4); }
MUT(begin_len_3) { set_len(m, m->pos_begin, 3); }
MUT(counter_len_2) { set_len(m, m->pos_counter, 2); }
MUT(int_len_2) { set_len(m, m->pos_int, 2); }
MUT(int_as_unit) { set_hdr(m, m->pos_int, 3, 1, ER_UEV_UNIT, m->int_id); }
MUT(int_as_span) { set_hdr(m, m->pos_int, 3, 1, ER_UEV_SPAN_END, m->int_id); }
MUT(int_as_alloc) { set_hdr(m, m->pos_int, 3, 0, ER_EV_ALLOC, 0); }
MUT(phase_id_max) { set_hdr(m, m->pos_begin, 2, 0, ER_EV_BEGIN, 0x1fff); }
MUT(counter_id_max) {
  set_hdr(m, m->pos_counter, 3, 0, ER_EV_COUNTER, 0x1fff);
}
MUT(user_name_no_nul) {
  memset(m->b + m->custom_off + (uint64_t)m->int_id * ER_NAME_SLOT_BYTES, 'x',
         ER_NAME_SLOT_BYTES);
}
MUT(user_name_last_slot_no_nul) {
  memset(m->b + m->custom_off + (ER_NAME_SLOTS - 1) * ER_NAME_SLOT_BYTES, 'y',
         ER_NAME_SLOT_BYTES);
  set_hdr(m, m->pos_int, 3, 1, ER_UEV_INT, ER_NAME_SLOTS - 1);
}
static void set_pad(struct img *m, unsigned char pad) {
  uint64_t last = m->pos_custom + 2 + m->custom_words - 1;
  unsigned char *w = (unsigned char *)rword(m, 0, last);
  w[7] = pad;
}
MUT(custom_pad_8) { set_pad(m, 8); }
MUT(custom_pad_255) { set_pad(m, 255); }
MUT(custom_no_payload) {
  set_hdr(m, m->pos_custom, 2, 1, ER_UEV_CUSTOM, 1);
}

/* Truncations. */
static void cut(struct img *m, uint64_t size) {
  ck_assert_uint_le(size, m->size);
  m->size = size;
}
MUT(size_0) { cut(m, 0); }
MUT(size_10) { cut(m, 10); }
MUT(size_63) { cut(m, 63); }
MUT(size_64) { cut(m, 64); }
MUT(size_100) { cut(m, 100); }
MUT(size_4096) { cut(m, 4096); }
MUT(size_headers) { cut(m, m->hdr_off + 8); }
MUT(size_data) { cut(m, m->data_off + 16); }
MUT(size_custom) { cut(m, m->custom_off); }
MUT(size_custom_plus_100) { cut(m, m->custom_off + 100); }
MUT(size_names_minus_8) {
  cut(m, m->custom_off + ER_NAME_SLOTS * ER_NAME_SLOT_BYTES - 8);
}
MUT(size_names_minus_1) {
  cut(m, m->custom_off + ER_NAME_SLOTS * ER_NAME_SLOT_BYTES - 1);
}

#define ANY 1 /* no error required: only no crash and no hang */
/* The events of the bases. */
#define OWN_EVENTS (1 + 5 + 1 + 3 + 1)
#define OCAML_EVENTS 690

struct mcase {
  const char *name;
  enum base base;
  void (*mut)(struct img *);
  int want, want2; /* accepted results (want2 0: only want) */
  int skipped;     /* bad events skipped (the others read on) */
};

#define C_OWN(f, w) {#f, OWN, f, w, 0, 0}
#define C_OCAML(f, w) {"ocaml/" #f, OCAML, f, w, 0, 0}
/* Cases of bad events whose length is sane: each is skipped and counted
 * (eventring_cursor_malformed), and the rest of the file is read. */
#define S_OWN(f, n) {#f, OWN, f, OWN_EVENTS - (n), 0, n}
#define S_OCAML(f, n) {"ocaml/" #f, OCAML, f, OCAML_EVENTS - (n), 0, n}
#define CORRUPT EVENTRING_E_CORRUPT
#define TRUNCATED EVENTRING_E_TRUNCATED

static const struct mcase cases[] = {
    C_OWN(version0, EVENTRING_E_VERSION),
    C_OWN(version2, EVENTRING_E_VERSION),
    C_OCAML(version0, EVENTRING_E_VERSION),
    C_OCAML(version2, EVENTRING_E_VERSION),
    C_OWN(domains0, CORRUPT),
    C_OWN(domains_huge, CORRUPT),
    C_OWN(domains_max, CORRUPT),
    C_OWN(domains_too_many, CORRUPT),
    C_OCAML(domains_too_many, CORRUPT),
    C_OWN(ring_not_pow2, CORRUPT),
    C_OWN(ring_zero, CORRUPT),
    C_OWN(ring_2e40, CORRUPT),
    C_OWN(ring_2e63, CORRUPT),
    C_OWN(ring_bytes_plus8, CORRUPT),
    C_OWN(ring_bytes_half, CORRUPT),
    C_OWN(ring_bigger_than_file, CORRUPT),
    C_OCAML(ring_bigger_than_file, CORRUPT),
    C_OWN(hdr_size_72, CORRUPT),
    C_OWN(hdr_size_0, CORRUPT),
    C_OWN(hdr_size_84, CORRUPT),
    C_OWN(hdr_size_huge, CORRUPT),
    C_OWN(hdr_size_grown, CORRUPT),
    C_OCAML(hdr_size_72, CORRUPT),
    C_OCAML(hdr_size_grown, CORRUPT),
    C_OWN(headers_at_0, CORRUPT),
    C_OWN(headers_unaligned, CORRUPT),
    C_OWN(headers_2e63, CORRUPT),
    C_OWN(headers_over_data, CORRUPT),
    C_OWN(data_unaligned, CORRUPT),
    C_OWN(data_on_headers, CORRUPT),
    C_OWN(data_beyond_file, CORRUPT),
    C_OWN(data_2e63, CORRUPT),
    C_OWN(data_wraps, CORRUPT),
    C_OCAML(data_on_headers, CORRUPT),
    C_OWN(custom_unaligned, CORRUPT),
    C_OWN(custom_on_data, CORRUPT),
    C_OWN(custom_at_eof, CORRUPT),
    C_OWN(custom_near_eof, TRUNCATED),
    C_OWN(custom_2e63, CORRUPT),
    C_OWN(custom_wraps, CORRUPT),
    C_OCAML(custom_at_eof, CORRUPT),
    C_OWN(all_offsets_equal, CORRUPT),
    C_OWN(domains_times_ring_overflow, CORRUPT),
    {"ext_version2", OWN, ext_version2, EVENTRING_E_VERSION, CORRUPT, 0},
    C_OWN(ext_size_huge, CORRUPT),
    C_OWN(ext_size_max, CORRUPT),
    C_OWN(ext_size_0, CORRUPT),
    C_OWN(ext_size_past_headers, CORRUPT),
    C_OWN(ext_phases_9000, CORRUPT),
    C_OWN(ext_counters_max, CORRUPT),
    C_OWN(ext_lifecycle_2e62, CORRUPT),
    C_OWN(ext_names_offset_0, CORRUPT),
    C_OWN(ext_names_offset_past, CORRUPT),
    C_OWN(ext_names_offset_2e63, CORRUPT),
    C_OWN(ext_names_offset_max, CORRUPT),
    C_OWN(ext_slot_0, CORRUPT),
    C_OWN(ext_slot_1000, CORRUPT),
    C_OWN(ext_slot_max, CORRUPT),
    C_OWN(ext_numbering_99, CORRUPT),
    C_OWN(ext_phase_name_no_nul, CORRUPT),
    C_OWN(ext_counter_name_no_nul, CORRUPT),
    S_OWN(ext_few_phases, 2),
    S_OWN(ext_few_counters, 1),
    C_OWN(head_after_tail, CORRUPT),
    C_OWN(tail_far_ahead, CORRUPT),
    C_OWN(tail_max, CORRUPT),
    C_OWN(head_max, CORRUPT),
    C_OCAML(head_after_tail, CORRUPT),
    C_OCAML(tail_far_ahead, CORRUPT),
    C_OCAML(tail_max, CORRUPT),
    C_OWN(unused_ring_zeros, CORRUPT),
    C_OCAML(unused_ring_zeros, CORRUPT),
    C_OWN(head_mid_event, CORRUPT),
    C_OWN(pseq_max, ANY),
    C_OWN(pair_past_tail, ANY),
    C_OWN(pair_evicted_huge, CORRUPT),
    C_OWN(pair_behind_head, ANY),
    C_OWN(written_zero, ANY),
    C_OWN(positions_2e62, CORRUPT),
    C_OWN(evicted_over_written, CORRUPT),
    C_OWN(hdr_size_80_with_ext, CORRUPT),
    C_OWN(event_len_0, CORRUPT),
    C_OWN(event_len_1, CORRUPT),
    C_OWN(event_len_1023, CORRUPT),
    C_OWN(last_event_past_tail, CORRUPT),
    C_OWN(padding_past_tail, CORRUPT),
    C_OWN(event_straddles_end, CORRUPT),
    C_OCAML(event_len_0, CORRUPT),
    C_OCAML(event_len_1023, CORRUPT),
    C_OCAML(event_straddles_end, CORRUPT),
    S_OWN(runtime_type_7, 1),
    S_OWN(runtime_type_15, 1),
    S_OWN(user_type_5, 1),
    S_OWN(user_type_15, 1),
    S_OCAML(runtime_type_7, 1),
    S_OCAML(user_type_5, 1),
    S_OWN(lifecycle_id_8, 1),
    S_OWN(lifecycle_id_9, 1),
    S_OWN(lifecycle_id_max, 1),
    S_OCAML(lifecycle_id_9, 1),
    C_OWN(lifecycle_len_4, CORRUPT),
    C_OWN(begin_len_3, CORRUPT),
    C_OWN(counter_len_2, CORRUPT),
    C_OWN(int_len_2, CORRUPT),
    S_OWN(int_as_unit, 1),
    S_OWN(int_as_span, 1),
    S_OWN(int_as_alloc, 1),
    S_OWN(phase_id_max, 1),
    S_OWN(counter_id_max, 1),
    S_OWN(user_name_no_nul, 5),
    S_OWN(user_name_last_slot_no_nul, 1),
    S_OCAML(user_name_no_nul, 103),
    S_OWN(custom_pad_8, 1),
    S_OWN(custom_pad_255, 1),
    C_OWN(custom_no_payload, CORRUPT),
    S_OCAML(custom_pad_8, 1),
    C_OWN(size_0, EVENTRING_E_NOTRINGFILE),
    C_OWN(size_10, TRUNCATED),
    C_OWN(size_63, TRUNCATED),
    C_OWN(size_64, TRUNCATED),
    C_OWN(size_100, TRUNCATED),
    C_OWN(size_4096, TRUNCATED),
    C_OWN(size_headers, TRUNCATED),
    C_OWN(size_data, TRUNCATED),
    C_OWN(size_custom, TRUNCATED),
    C_OWN(size_custom_plus_100, TRUNCATED),
    C_OWN(size_names_minus_8, TRUNCATED),
    C_OWN(size_names_minus_1, TRUNCATED),
    C_OCAML(size_64, TRUNCATED),
    C_OCAML(size_4096, TRUNCATED),
    C_OCAML(size_data, TRUNCATED),
    C_OCAML(size_custom, TRUNCATED),
    C_OCAML(size_names_minus_1, TRUNCATED),
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* ---- Reading a variant. */

static const char *current_case;

/* A crash or the alarm names the case before the default action. */
static void on_fatal(int sig) {
  char msg[256];
  int n = snprintf(msg, sizeof msg, "\nmalformed case '%s': %s\n",
                   current_case ? current_case : "?",
                   sig == SIGALRM ? "timed out (endless loop?)"
                                  : strsignal(sig));
  if (n > 0) (void)!write(STDERR_FILENO, msg, (size_t)n);
  signal(sig, SIG_DFL);
  raise(sig);
}

static void guard(const char *name) {
  current_case = name;
  const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    signal(sigs[i], on_fatal);
  alarm(10);
}

/* The callbacks touch every byte they are given, so that a sanitizer sees
 * any read out of bounds. */
static volatile uint64_t sink;

static void touch_name(const char *name) {
  for (const char *p = name; *p; p++) sink += (unsigned char)*p;
}
static int cb_phase(void *d, int dom, uint64_t ts, int phase) {
  (void)d;
  sink += (uint64_t)dom + ts + (uint64_t)phase;
  return 1;
}
static int cb_counter(void *d, int dom, uint64_t ts, int k, uint64_t v) {
  (void)d;
  sink += (uint64_t)dom + ts + (uint64_t)k + v;
  return 1;
}
static int cb_alloc(void *d, int dom, uint64_t ts, const uint64_t *b) {
  (void)d;
  for (int i = 0; i < EVENTRING_ALLOC_BUCKETS; i++) sink += b[i];
  sink += (uint64_t)dom + ts;
  return 1;
}
static int cb_life(void *d, int dom, uint64_t ts, int k, int64_t v, int has) {
  (void)d;
  sink += (uint64_t)dom + ts + (uint64_t)k + (uint64_t)v + (uint64_t)has;
  return 1;
}
static int cb_unit(void *d, int dom, uint64_t ts, int id, const char *name) {
  (void)d;
  touch_name(name);
  sink += (uint64_t)dom + ts + (uint64_t)id;
  return 1;
}
static int cb_int(void *d, int dom, uint64_t ts, int id, const char *name,
                  int64_t v) {
  (void)d;
  touch_name(name);
  sink += (uint64_t)dom + ts + (uint64_t)id + (uint64_t)v;
  return 1;
}
static int cb_span(void *d, int dom, uint64_t ts, int id, const char *name,
                   int is_end) {
  (void)d;
  touch_name(name);
  sink += (uint64_t)dom + ts + (uint64_t)id + (uint64_t)is_end;
  return 1;
}
static int cb_custom(void *d, int dom, uint64_t ts, int id, const char *name,
                     const void *bytes, size_t len) {
  (void)d;
  touch_name(name);
  const unsigned char *b = bytes;
  for (size_t i = 0; i < len; i++) sink += b[i];
  sink += (uint64_t)dom + ts + (uint64_t)id;
  return 1;
}
static int cb_lost(void *d, int dom, uint64_t n) {
  (void)d;
  sink += (uint64_t)dom + n;
  return 1;
}

static eventring_callbacks *all_callbacks(void) {
  static const struct tool_handlers h = {.runtime_begin = cb_phase,
      .runtime_end = cb_phase, .runtime_counter = cb_counter, .alloc = cb_alloc,
      .lifecycle = cb_life, .user_unit = cb_unit, .user_int = cb_int,
      .user_span = cb_span, .user_custom = cb_custom, .lost_events = cb_lost};
  return er_callbacks(&h);
}

/* The malformed events the last read_file() skipped, over all domains. */
static uint64_t skipped;

/* Opens `path` and polls it until a poll returns 0 or an error (at most
 * 1000 polls).  Returns the first error, or the count of events read when
 * there was none (>= 0). */
static int read_file(const char *path) {
  skipped = 0;
  eventring_cursor *c = NULL;
  int rc = eventring_cursor_open_file(&c, path);
  if (rc < 0) {
    ck_assert_ptr_null(c);
    return rc;
  }
  ck_assert_int_eq(rc, 0);
  ck_assert_ptr_nonnull(c);
  eventring_callbacks *cb = all_callbacks();
  int result = 0;
  for (int i = 0; i < 1000; i++) {
    int r = eventring_cursor_poll(c, cb, NULL, 64);
    if (r < 0) {
      result = r;
      /* The cursor stays usable: later polls return a count or an error,
       * and a bad ring is not read again. */
      for (int k = 0; k < 3; k++) (void)eventring_cursor_poll(c, cb, NULL, 0);
      break;
    }
    if (r == 0) break;
    result += r;
  }
  for (int d = 0; d < eventring_cursor_max_domains(c); d++) {
    uint64_t n;
    ck_assert_int_eq(eventring_cursor_malformed(c, d, &n), 0);
    skipped += n;
  }
  eventring_callbacks_free(cb);
  eventring_cursor_free(c);
  return result;
}

/* Reads a whole file into memory. */
static unsigned char *slurp(const char *path, size_t *size) {
  int fd = open(path, O_RDONLY);
  ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
  struct stat st;
  ck_assert_int_eq(fstat(fd, &st), 0);
  unsigned char *b = malloc((size_t)st.st_size);
  ck_assert_ptr_nonnull(b);
  size_t got = 0;
  while (got < (size_t)st.st_size) {
    ssize_t n = read(fd, b + got, (size_t)st.st_size - got);
    ck_assert_int_gt(n, 0);
    got += (size_t)n;
  }
  close(fd);
  *size = got;
  return b;
}

/* Writes `size` bytes of `b` to a new file, sparsely (zero pages are left
 * as holes: the OCaml base is 17 MB, nearly all zeros). */
static void write_sparse(const char *path, const unsigned char *b,
                         size_t size) {
  unlink(path);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  ck_assert_msg(fd >= 0, "create %s: %s", path, strerror(errno));
  ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
  static const unsigned char zero[4096];
  for (size_t off = 0; off < size; off += 4096) {
    size_t n = size - off < 4096 ? size - off : 4096;
    if (memcmp(b + off, zero, n) == 0) continue;
    ck_assert_int_eq(pwrite(fd, b + off, n, (off_t)off), (ssize_t)n);
  }
  close(fd);
}

/* Loads base `which` and finds its layout and landmark events. */
static void load_base(enum base which, struct img *m) {
  memset(m, 0, sizeof *m);
  struct rf_file f;
  er_open_ring(base_path[which], &f);
  m->b = slurp(base_path[which], &m->size);
  m->hdr_off = f.meta[ER_META_HEADERS_OFFSET];
  m->hdr_bytes = f.meta[ER_META_RING_HEADER_SIZE];
  m->data_off = f.meta[ER_META_DATA_OFFSET];
  m->ring_words = f.ring_words;
  m->custom_off = f.meta[ER_META_CUSTOM_EVENTS_OFFSET];
  m->ours = f.has_ext;
  const struct rf_ring *r = &f.rings[0];
  int found = 0;
  for (size_t i = 0; i < r->nevents; i++) {
    const struct rf_event *e = &r->events[i];
#define FIRST(cond, field, bit)                                          \
  if ((cond) && !(found & (bit))) {                                      \
    m->field = e->pos;                                                   \
    found |= (bit);                                                      \
  }
    FIRST(!e->is_user && e->type == ER_EV_LIFECYCLE && e->id == 0, pos_start, 1)
    FIRST(e->is_user && e->type == ER_UEV_INT, pos_int, 2)
    FIRST(e->is_user && e->type == ER_UEV_CUSTOM && e->custom_len > 0,
          pos_custom, 4)
    FIRST(!e->is_user && e->type == ER_EV_BEGIN, pos_begin, 8)
    FIRST(!e->is_user && e->type == ER_EV_COUNTER, pos_counter, 16)
    FIRST(!e->is_user && e->type == ER_EV_LIFECYCLE && e->id == 1, pos_stop, 32)
#undef FIRST
    if (e->is_user && e->type == ER_UEV_INT && e->pos == m->pos_int)
      m->int_id = e->id;
    if (e->is_user && e->type == ER_UEV_CUSTOM && e->pos == m->pos_custom)
      m->custom_words = e->len - 2;
  }
  ck_assert_int_eq(found, 63);
  /* Every landmark is in a ring that has not wrapped. */
  ck_assert_uint_eq(r->head, 0);
  ck_assert_uint_lt(r->tail, m->ring_words);
  rf_close(&f);
}

/* The fixture: an eventring file with two domains, 1024-word rings and
 * one event of each landmark kind, and the OCaml vector, unpacked. */
static void make_bases(void) {
  snprintf(base_dir, sizeof base_dir, "%s", er_tmpdir());
  setenv("OCAMLRUNPARAM", "e=10,d=2", 1);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  int id_int = eventring_register("m.int", EVENTRING_TYPE_INT);
  int id_custom = eventring_register("m.custom", EVENTRING_TYPE_CUSTOM);
  ck_assert_int_eq(eventring_start(), 0);
  snprintf(base_path[OWN], PATH_MAX, "%s", eventring_path());
  for (int i = 0; i < 5; i++) eventring_write_int(id_int, i);
  eventring_write_custom(id_custom, "twenty bytes of text", 20);
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, 77);
  eventring_end(EVENTRING_PHASE_MINOR);
  ck_assert_int_eq(eventring_stop(), 0);
  unsetenv("OCAMLRUNPARAM");
  unsetenv("OCAML_RUNTIME_EVENTS_PRESERVE");

  const char *data = er_env_dir("EVENTRING_TEST_DATA");
  have_ocaml = 0;
  if (data) {
    have_ocaml = er_unpack_vector(base_dir, "ocaml5-basic", base_path[OCAML]);
  }
}

static void remove_bases(void) {
  if (!getenv("EVENTRING_TEST_KEEP")) er_rmdir(base_dir);
}

/* Sanity: both bases read cleanly, so that every error below comes from
 * the mutation. */
START_TEST(test_bases_are_valid) {
  guard("valid bases");
  ck_assert_int_eq(read_file(base_path[OWN]), OWN_EVENTS);
  ck_assert_uint_eq(skipped, 0);
  if (!have_ocaml) ER_SKIP("EVENTRING_TEST_DATA is not set");
  ck_assert_int_eq(read_file(base_path[OCAML]), OCAML_EVENTS);
  ck_assert_uint_eq(skipped, 0);
  alarm(0);
}
END_TEST

START_TEST(test_malformed_case) {
  const struct mcase *k = &cases[_i];
  guard(k->name);
  if (k->base == OCAML && !have_ocaml) ER_SKIP("EVENTRING_TEST_DATA is not set");
  struct img m;
  load_base(k->base, &m);
  k->mut(&m);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/case%d.events", base_dir, _i);
  write_sparse(path, m.b, m.size);
  free(m.b);
  int r = read_file(path);
  unlink(path);
  if (k->want == ANY) {
    printf("malformed case '%s': %d (no error required)\n", k->name, r);
  } else {
    ck_assert_msg(r == k->want || (k->want2 && r == k->want2),
                  "malformed case '%s': got %d (%s), want %d (%s)", k->name,
                  r, r < 0 ? eventring_strerror(r) : "events read", k->want,
                  k->want < 0 ? eventring_strerror(k->want) : "events read");
    /* An error case may skip a bad event before it finds the ring
     * broken; a case read to the end skips exactly its bad events. */
    ck_assert_msg(k->want < 0 || skipped == (uint64_t)k->skipped,
                  "malformed case '%s': %llu bad events skipped, want %d",
                  k->name, (unsigned long long)skipped, k->skipped);
  }
  alarm(0);
}
END_TEST

/* Things that are not ring files at all. */
START_TEST(test_not_regular_files) {
  guard("not regular files");
  char fifo[PATH_MAX];
  snprintf(fifo, sizeof fifo, "%s/fifo.events", base_dir);
  unlink(fifo);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  /* Nobody writes the FIFO: an open that waited for a writer would hang
   * until the alarm. */
  ck_assert_int_eq(read_file(fifo), EVENTRING_E_NOTRING);
  unlink(fifo);
  ck_assert_int_eq(read_file(base_dir), EVENTRING_E_NOTRING);
  ck_assert_int_eq(read_file("/dev/null"), EVENTRING_E_NOTRING);
  char missing[PATH_MAX];
  snprintf(missing, sizeof missing, "%s/missing.events", base_dir);
  ck_assert_int_eq(read_file(missing), -ENOENT);
  /* A file of another user: refused unless we are the superuser, who may
   * read it but finds no ring file in it. */
  int r = read_file("/etc/passwd");
  if (geteuid() != 0) ck_assert_int_eq(r, -EPERM);
  else ck_assert_int_lt(r, 0);
  eventring_cursor *c = (eventring_cursor *)&r;
  ck_assert_int_eq(eventring_cursor_open_file(&c, NULL), EVENTRING_E_INVAL);
  ck_assert_ptr_null(c);
  alarm(0);
}
END_TEST

/* A file that shrinks under an open cursor: the next poll is an error
 * (EVENTRING_E_TRUNCATED), not SIGBUS, and so is every later one. */
static void shrink_case(enum base which, int nsizes) {
  const size_t sizes[] = {4096, 0, 64};
  struct img m;
  load_base(which, &m);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/shrink%d.events", base_dir, (int)which);
  for (int s = 0; s < nsizes; s++) {
    write_sparse(path, m.b, m.size);
    eventring_cursor *c = NULL;
    ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
    eventring_callbacks *cb = all_callbacks();
    ck_assert_int_eq(eventring_cursor_poll(c, cb, NULL, 2), 2);
    ck_assert_int_eq(truncate(path, (off_t)sizes[s]), 0);
    ck_assert_int_eq(eventring_cursor_poll(c, cb, NULL, 0),
                     EVENTRING_E_TRUNCATED);
    ck_assert_int_eq(eventring_cursor_poll(c, cb, NULL, 0),
                     EVENTRING_E_TRUNCATED);
    eventring_callbacks_free(cb);
    eventring_cursor_free(c);
  }
  /* A shrink of the last page only. */
  write_sparse(path, m.b, m.size);
  eventring_cursor *c = NULL;
  ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
  ck_assert_int_eq(truncate(path, (off_t)(m.size - 4096)), 0);
  eventring_callbacks *cb = all_callbacks();
  ck_assert_int_eq(eventring_cursor_poll(c, cb, NULL, 0),
                   EVENTRING_E_TRUNCATED);
  eventring_callbacks_free(cb);
  eventring_cursor_free(c);
  unlink(path);
  free(m.b);
}

/* A file cut and grown again between two polls, through the mapping and
 * through pread(2): zeros where the header was, or the same layout
 * written by another writer (another pid).  The events read are gone:
 * EVENTRING_E_TRUNCATED, never "malformed", and the tool's message says
 * the file was cut and grew again. */
static void regrow_case(enum base which) {
  struct img m;
  load_base(which, &m);
  char path[PATH_MAX], why[256];
  snprintf(path, sizeof path, "%s/regrow%d.events", base_dir, (int)which);
  for (int mode = 0; mode < 4; mode++) {
    int via_pread = mode & 1, other_writer = mode >> 1;
    if (other_writer && !m.ours) continue; /* OCaml's files name none */
    if (via_pread) setenv("EVENTRING_READ_PREAD", "1", 1);
    else unsetenv("EVENTRING_READ_PREAD");
    write_sparse(path, m.b, m.size);
    eventring_cursor *c = NULL;
    ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
    eventring_callbacks *cb = all_callbacks();
    ck_assert_int_eq(eventring_cursor_poll(c, cb, NULL, 2), 2);
    int fd = open(path, O_WRONLY | O_TRUNC);
    ck_assert_int_ge(fd, 0);
    if (other_writer) {
      unsigned char *b = malloc(m.size);
      memcpy(b, m.b, m.size);
      uint64_t pid;
      memcpy(&pid, b + 8 * (ER_META_WORDS + ER_EXT_PID), 8);
      pid++;
      memcpy(b + 8 * (ER_META_WORDS + ER_EXT_PID), &pid, 8);
      ck_assert_int_eq(pwrite(fd, b, m.size, 0), (ssize_t)m.size);
      free(b);
    } else {
      ck_assert_int_eq(ftruncate(fd, (off_t)m.size), 0);
    }
    close(fd);
    ck_assert_int_eq(eventring_cursor_poll(c, cb, NULL, 0),
                     EVENTRING_E_TRUNCATED);
    ck_assert_int_eq(eventring_cursor_poll(c, cb, NULL, 0),
                     EVENTRING_E_TRUNCATED);
    const char *msg = tool_ring_error(path, EVENTRING_E_TRUNCATED, why,
                                      sizeof why);
    ck_assert_msg(strstr(msg, "cut while it was read") &&
                      strstr(msg, "grown again"),
                  "%s", msg);
    eventring_callbacks_free(cb);
    eventring_cursor_free(c);
  }
  unsetenv("EVENTRING_READ_PREAD");
  unlink(path);
  free(m.b);
}

START_TEST(test_regrown_while_open) {
  guard("own file cut and grown again while open");
  regrow_case(OWN);
  if (!have_ocaml) ER_SKIP("EVENTRING_TEST_DATA is not set");
  guard("ocaml file cut and grown again while open");
  regrow_case(OCAML);
  alarm(0);
}
END_TEST

START_TEST(test_shrunk_while_open) {
  guard("own file shrunk while open");
  shrink_case(OWN, 3);
  if (!have_ocaml) ER_SKIP("EVENTRING_TEST_DATA is not set");
  guard("ocaml file shrunk while open");
  shrink_case(OCAML, 3);
  alarm(0);
}
END_TEST

static TCase *tc_malformed(void) {
  TCase *tc = er_tcase("malformed");
  tcase_add_unchecked_fixture(tc, make_bases, remove_bases);
  tcase_add_test(tc, test_bases_are_valid);
  tcase_add_loop_test(tc, test_malformed_case, 0, NCASES);
  tcase_add_test(tc, test_not_regular_files);
  tcase_add_test(tc, test_shrunk_while_open);
  tcase_add_test(tc, test_regrown_while_open);
  return tc;
}

ER_TEST_MAIN("consumer_malformed", tc_malformed)
