/* Threads get domain slots of their own, give them back at exit, and can bind to a chosen slot. */
#include <pthread.h>
#include <semaphore.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"

#define NTHREADS 4
#define PER_THREAD 200

/* A traced run of one test: its fresh directory and a copy of its ring
 * file's path, which outlives eventring_stop(). */
struct traced {
  char dir[64];
  char *path;
};

static int seq_id;

/* Starts tracing in a fresh directory with PRESERVE set and, when
 * `register_seq`, registers the user int "domains.seq" as seq_id. */
static void traced_start(struct traced *t, int register_seq) {
  snprintf(t->dir, sizeof t->dir, "%s", er_tmpdir());
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_ptr_nonnull(eventring_path());
  t->path = strdup(eventring_path());
  ck_assert_ptr_nonnull(t->path);
  if (!register_seq) return;
  seq_id = eventring_register("domains.seq", EVENTRING_TYPE_INT);
  ck_assert_int_ge(seq_id, 0);
}

/* Closes the file read and removes the run's directory. */
static void traced_end(struct traced *t, struct rf_file *f) {
  rf_close(f);
  free(t->path);
  er_rmdir(t->dir);
}

static void assert_lifecycle(const struct rf_event *e, unsigned kind,
                             uint64_t data) {
  ck_assert_msg(!e->is_user && e->type == ER_EV_LIFECYCLE && e->id == kind,
                "domain %d pos %llu: expected lifecycle %u, got user=%d "
                "type=%u id=%u", e->domain, (unsigned long long)e->pos, kind,
                e->is_user, e->type, e->id);
  ck_assert_uint_ge(e->npayload, 1);
  ck_assert_uint_eq(e->payload[0], data);
}

static void assert_int(const struct rf_event *e, int id, int64_t value) {
  ck_assert_msg(e->is_user && e->type == ER_UEV_INT && e->id == (unsigned)id,
                "domain %d pos %llu: expected user int %d, got user=%d "
                "type=%u id=%u", e->domain, (unsigned long long)e->pos, id,
                e->is_user, e->type, e->id);
  ck_assert_int_eq((int64_t)e->payload[0], value);
}

/* Events of one ring must be contiguous (no padding in these small runs)
 * and their timestamps must never go backwards. */
static void assert_ring_order(const struct rf_ring *r) {
  for (size_t i = 1; i < r->nevents; i++) {
    ck_assert_uint_eq(r->events[i].pos,
                      r->events[i - 1].pos + r->events[i - 1].len);
    ck_assert_uint_ge(r->events[i].ts, r->events[i - 1].ts);
  }
}

/* ------------------------------------------------------------------ */
/* Concurrent threads each get their own ring.                          */
static pthread_barrier_t all_have_slots;

struct worker {
  int index;
  int id_before; /* eventring_domain_id() before the first event */
  int id_after;  /* ... and after it */
};

static void *concurrent_worker(void *arg) {
  struct worker *w = arg;
  w->id_before = eventring_domain_id();
  eventring_write_int(seq_id, (int64_t)w->index * 1000000);
  w->id_after = eventring_domain_id();
  /* Every thread holds its slot before any writes on or exits, so that no
   * two of them can share a slot by taking turns. */
  pthread_barrier_wait(&all_have_slots);
  for (int s = 1; s < PER_THREAD; s++)
    eventring_write_int(seq_id, (int64_t)w->index * 1000000 + s);
  return NULL;
}

START_TEST(test_threads_get_own_rings) {
  struct traced t;
  traced_start(&t, 1);
  int main_id = eventring_domain_id();
  ck_assert_int_eq(main_id, 0);

  pthread_t th[NTHREADS];
  struct worker w[NTHREADS];
  ck_assert_int_eq(pthread_barrier_init(&all_have_slots, NULL, NTHREADS), 0);
  for (int i = 0; i < NTHREADS; i++) {
    w[i] = (struct worker){.index = i + 1};
    ck_assert_int_eq(pthread_create(&th[i], NULL, concurrent_worker, &w[i]),
                     0);
  }
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  ck_assert_int_eq(eventring_stop(), 0);

  /* The slots are exactly 1..NTHREADS (0 is the main thread's), each
   * taken by one thread. */
  int seen[NTHREADS + 1] = {0};
  for (int i = 0; i < NTHREADS; i++) {
    ck_assert_int_eq(w[i].id_before, -1);
    ck_assert_int_ge(w[i].id_after, 1);
    ck_assert_int_le(w[i].id_after, NTHREADS);
    ck_assert_int_eq(seen[w[i].id_after], 0);
    seen[w[i].id_after] = 1;
  }

  struct rf_file f;
  er_open_ring(t.path, &f);
  uint64_t pid = (uint64_t)getpid();
  const struct rf_ring *r0 = &f.rings[0];
  ck_assert_uint_ge(r0->nevents, 2);
  assert_lifecycle(&r0->events[0], EVENTRING_LIFECYCLE_RING_START, pid);
  const struct rf_event *last = &r0->events[r0->nevents - 1];
  ck_assert(!last->is_user && last->type == ER_EV_LIFECYCLE &&
            last->id == EVENTRING_LIFECYCLE_RING_STOP);

  for (int i = 0; i < NTHREADS; i++) {
    const struct rf_ring *r = &f.rings[w[i].id_after];
    ck_assert_uint_eq(r->nevents, PER_THREAD + 2);
    ck_assert_uint_eq(r->head, 0);
    assert_lifecycle(&r->events[0], EVENTRING_LIFECYCLE_DOMAIN_SPAWN, pid);
    for (int s = 0; s < PER_THREAD; s++)
      assert_int(&r->events[1 + s], seq_id,
                 (int64_t)w[i].index * 1000000 + s);
    assert_lifecycle(&r->events[PER_THREAD + 1],
                     EVENTRING_LIFECYCLE_DOMAIN_TERMINATE, pid);
    assert_ring_order(r);
  }
  /* No other ring was touched. */
  for (uint64_t d = NTHREADS + 1; d < f.max_domains; d++)
    ck_assert_uint_eq(f.rings[d].nevents, 0);
  ck_assert_str_eq(rf_user_name(&f, (unsigned)seq_id), "domains.seq");
  traced_end(&t, &f);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Slot reuse: a new thread takes the lowest free slot and continues    */
/* its ring.                                                            */

struct phased {
  int base;          /* values written are base + 0 .. base + 9 */
  int id;            /* slot after the first event */
  sem_t *hold;       /* when set, waited on before exiting */
  sem_t *have_slot;  /* when set, posted once the slot is taken */
};

static void *phased_worker(void *arg) {
  struct phased *p = arg;
  for (int i = 0; i < 10; i++) {
    eventring_write_int(seq_id, p->base + i);
    if (i == 0) {
      p->id = eventring_domain_id();
      if (p->have_slot) sem_post(p->have_slot);
    }
  }
  if (p->hold) sem_wait(p->hold);
  return NULL;
}

START_TEST(test_slot_reuse) {
  struct traced t;
  traced_start(&t, 1);

  /* X and Y hold slots 1 and 2 together; X exits while Y stays, so the
   * lowest free slot is X's, and Z must take it rather than slot 3. */
  sem_t x_slot, y_slot, x_hold, y_hold;
  sem_init(&x_slot, 0, 0);
  sem_init(&x_hold, 0, 0);
  sem_init(&y_slot, 0, 0);
  sem_init(&y_hold, 0, 0);
  struct phased x = {.base = 1000, .have_slot = &x_slot, .hold = &x_hold};
  struct phased y = {.base = 2000, .have_slot = &y_slot, .hold = &y_hold};
  struct phased z = {.base = 3000};
  pthread_t tx, ty, tz;
  ck_assert_int_eq(pthread_create(&tx, NULL, phased_worker, &x), 0);
  sem_wait(&x_slot);
  ck_assert_int_eq(pthread_create(&ty, NULL, phased_worker, &y), 0);
  sem_wait(&y_slot);
  sem_post(&x_hold);
  pthread_join(tx, NULL);
  ck_assert_int_eq(pthread_create(&tz, NULL, phased_worker, &z), 0);
  pthread_join(tz, NULL);
  sem_post(&y_hold);
  pthread_join(ty, NULL);
  ck_assert_int_eq(eventring_stop(), 0);

  ck_assert_int_eq(x.id, 1);
  ck_assert_int_eq(y.id, 2);
  ck_assert_int_eq(z.id, 1);

  struct rf_file f;
  er_open_ring(t.path, &f);
  uint64_t pid = (uint64_t)getpid();
  const struct rf_ring *r = &f.rings[1];
  /* spawn, X's ten, terminate, spawn, Z's ten, terminate. */
  ck_assert_uint_eq(r->nevents, 24);
  assert_lifecycle(&r->events[0], EVENTRING_LIFECYCLE_DOMAIN_SPAWN, pid);
  for (int i = 0; i < 10; i++) assert_int(&r->events[1 + i], seq_id, 1000 + i);
  assert_lifecycle(&r->events[11], EVENTRING_LIFECYCLE_DOMAIN_TERMINATE, pid);
  assert_lifecycle(&r->events[12], EVENTRING_LIFECYCLE_DOMAIN_SPAWN, pid);
  for (int i = 0; i < 10; i++)
    assert_int(&r->events[13 + i], seq_id, 3000 + i);
  assert_lifecycle(&r->events[23], EVENTRING_LIFECYCLE_DOMAIN_TERMINATE, pid);
  /* The second occupant wrote on from where the first left off. */
  ck_assert_uint_eq(r->head, 0);
  ck_assert_uint_eq(r->events[12].pos, r->events[11].pos + r->events[11].len);
  ck_assert_uint_eq(r->tail, r->events[23].pos + r->events[23].len);
  ck_assert_uint_eq(r->written, 24);
  assert_ring_order(r);

  const struct rf_ring *r2 = &f.rings[2];
  ck_assert_uint_eq(r2->nevents, 12);
  for (int i = 0; i < 10; i++)
    assert_int(&r2->events[1 + i], seq_id, 2000 + i);
  ck_assert_uint_eq(f.rings[3].nevents, 0);
  traced_end(&t, &f);
}
END_TEST

/* ------------------------------------------------------------------ */
/* eventring_domain_bind.                                               */

static sem_t bound, checked;

struct binder {
  int bind_rc, id_after_bind, id_after_release;
};

static void *bind5_worker(void *arg) {
  struct binder *b = arg;
  b->bind_rc = eventring_domain_bind(5);
  b->id_after_bind = eventring_domain_id();
  for (int i = 0; i < 10; i++) eventring_write_int(seq_id, 500 + i);
  sem_post(&bound);
  /* Keep the slot until the other thread has tried to take it. */
  sem_wait(&checked);
  eventring_domain_release();
  b->id_after_release = eventring_domain_id();
  return NULL;
}

struct intruder {
  int busy_rc, neg_rc, max_rc, huge_rc, id_after_fail;
  int bind6_rc, id_after_bind6;
};

static void *intruder_worker(void *arg) {
  struct intruder *t = arg;
  t->busy_rc = eventring_domain_bind(5);
  t->neg_rc = eventring_domain_bind(-1);
  t->max_rc = eventring_domain_bind(128); /* the default d=128 */
  t->huge_rc = eventring_domain_bind(1 << 20);
  t->id_after_fail = eventring_domain_id();
  t->bind6_rc = eventring_domain_bind(6);
  t->id_after_bind6 = eventring_domain_id();
  eventring_write_int(seq_id, 600);
  return NULL;
}

START_TEST(test_bind) {
  struct traced t;
  traced_start(&t, 1);
  sem_init(&bound, 0, 0);
  sem_init(&checked, 0, 0);

  struct binder b = {0};
  struct intruder in = {0};
  pthread_t tb, tt;
  ck_assert_int_eq(pthread_create(&tb, NULL, bind5_worker, &b), 0);
  sem_wait(&bound);
  ck_assert_int_eq(pthread_create(&tt, NULL, intruder_worker, &in), 0);
  pthread_join(tt, NULL);
  sem_post(&checked);
  pthread_join(tb, NULL);
  ck_assert_int_eq(eventring_stop(), 0);

  ck_assert_int_eq(b.bind_rc, 0);
  ck_assert_int_eq(b.id_after_bind, 5);
  ck_assert_int_eq(b.id_after_release, -1);
  ck_assert_int_eq(in.busy_rc, EVENTRING_E_BUSY);
  ck_assert_int_eq(in.neg_rc, EVENTRING_E_INVAL);
  ck_assert_int_eq(in.max_rc, EVENTRING_E_INVAL);
  ck_assert_int_eq(in.huge_rc, EVENTRING_E_INVAL);
  ck_assert_int_eq(in.id_after_fail, -1);
  ck_assert_int_eq(in.bind6_rc, 0);
  ck_assert_int_eq(in.id_after_bind6, 6);

  struct rf_file f;
  er_open_ring(t.path, &f);
  ck_assert_uint_eq(f.max_domains, 128);
  uint64_t pid = (uint64_t)getpid();
  /* Ring 5 holds the binder's ten ints in order, ending with the
   * domain_terminate that release wrote; nothing of the intruder. */
  const struct rf_ring *r5 = &f.rings[5];
  ck_assert_uint_eq(rf_count(&f, 5, 1, ER_UEV_INT, seq_id), 10);
  size_t k = 0;
  for (size_t i = 0; i < r5->nevents; i++)
    if (r5->events[i].is_user) assert_int(&r5->events[i], seq_id, 500 + k++);
  ck_assert_uint_ge(r5->nevents, 11);
  assert_lifecycle(&r5->events[r5->nevents - 1],
                   EVENTRING_LIFECYCLE_DOMAIN_TERMINATE, pid);
  const struct rf_ring *r6 = &f.rings[6];
  ck_assert_uint_eq(rf_count(&f, 6, 1, ER_UEV_INT, seq_id), 1);
  ck_assert_uint_eq(rf_count(&f, -1, 1, ER_UEV_INT, seq_id), 11);
  int found600 = 0;
  for (size_t i = 0; i < r6->nevents; i++)
    if (r6->events[i].is_user) {
      assert_int(&r6->events[i], seq_id, 600);
      found600 = 1;
    }
  ck_assert(found600);
  traced_end(&t, &f);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Control from a thread that holds no slot: a thread that never        */
/* emitted, or gave its slot back, may pause, resume and stop.          */

struct control {
  int stop_rc;
  int id_before;
};

static void *controller(void *arg) {
  struct control *c = arg;
  c->id_before = eventring_domain_id();
  eventring_pause();
  eventring_resume();
  c->stop_rc = eventring_stop();
  return NULL;
}

START_TEST(test_control_without_slot) {
  struct traced t;
  traced_start(&t, 1);
  eventring_write_int(seq_id, 1);
  struct control c = {.stop_rc = 1};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, controller, &c), 0);
  pthread_join(th, NULL);
  ck_assert_int_eq(c.id_before, -1);
  ck_assert_int_eq(c.stop_rc, 0);
  ck_assert_ptr_null(eventring_path());

  struct rf_file f;
  er_open_ring(t.path, &f);
  ck_assert_uint_eq(rf_count(&f, -1, 1, ER_UEV_INT, seq_id), 1);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_LIFECYCLE,
                             EVENTRING_LIFECYCLE_RING_PAUSE), 1);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_LIFECYCLE,
                             EVENTRING_LIFECYCLE_RING_RESUME), 1);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_LIFECYCLE,
                             EVENTRING_LIFECYCLE_RING_STOP), 1);
  traced_end(&t, &f);
}
END_TEST

/* The same from the starting thread after it gave its slot back. */
START_TEST(test_stop_after_release) {
  struct traced t;
  traced_start(&t, 0);
  eventring_domain_release();
  ck_assert_int_eq(eventring_domain_id(), -1);
  ck_assert_int_eq(eventring_stop(), 0);
  struct rf_file f;
  er_open_ring(t.path, &f);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_LIFECYCLE,
                             EVENTRING_LIFECYCLE_RING_STOP), 1);
  traced_end(&t, &f);
}
END_TEST

static TCase *tc_domains(void) {
  TCase *tc = er_tcase("domains");
  tcase_add_test(tc, test_threads_get_own_rings);
  tcase_add_test(tc, test_slot_reuse);
  tcase_add_test(tc, test_bind);
  tcase_add_test(tc, test_control_without_slot);
  tcase_add_test(tc, test_stop_after_release);
  return tc;
}

ER_TEST_MAIN("domains", tc_domains)
