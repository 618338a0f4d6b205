/* test_untraced.c -- what linking eventring costs a process that never
 * traces (issue 14): nothing but reading the environment.
 *
 * The library's constructors must register no fork handler and create
 * one thread-specific key only, the thread-exit key (made at load so that
 * a first event in a signal handler need not make it: domain.c), which
 * holds no value in a thread without a slot, so that glibc runs no
 * destructor for it at the thread's exit; and nothing may write the
 * 1.5 MiB of domain slots, which then stay unallocated bss.  Starting
 * tracing and a first event register the handlers and write a slot,
 * which shows the checks can fail.
 *
 * pthread_atfork() and pthread_key_create() are interposed: this
 * program's own definitions, which the static library's calls resolve
 * to, count the calls and hand them to glibc's (__register_atfork(),
 * __pthread_key_create()), in builds without a sanitizer.  Which pages
 * of the slots are resident comes from mincore(), which reads none of
 * them.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "internal.h"

/* A sanitizer's runtime creates keys of its own before it can run
 * instrumented code such as ours: the calls are counted only without
 * one. */
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
extern void *__dso_handle;
extern int __register_atfork(void (*prepare)(void), void (*parent)(void),
                             void (*child)(void), void *dso);
extern int __pthread_key_create(pthread_key_t *key, void (*dtor)(void *));

/* Calls from anywhere in the process, constructors included; each test
 * runs in a child forked after them, which inherits the counts. */
static int atfork_calls, key_calls;

int pthread_atfork(void (*prepare)(void), void (*parent)(void),
                   void (*child)(void)) {
  atfork_calls++;
  return __register_atfork(prepare, parent, child, __dso_handle);
}

int pthread_key_create(pthread_key_t *key, void (*dtor)(void *)) {
  key_calls++;
  return __pthread_key_create(key, dtor);
}
#define HAVE_INTERPOSE 1
#endif

/* Resident pages strictly inside the slot array (the first and the last
 * may hold other variables). */
static size_t slot_pages_resident(void) {
  long page = sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)er_domains + (uintptr_t)page - 1) &
                 ~((uintptr_t)page - 1);
  uintptr_t hi = ((uintptr_t)(er_domains + ER_DOMAINS_LIMIT)) &
                 ~((uintptr_t)page - 1);
  size_t n = (hi - lo) / (size_t)page, resident = 0;
  unsigned char *vec = malloc(n);
  ck_assert_ptr_nonnull(vec);
  ck_assert_int_eq(mincore((void *)lo, hi - lo, vec), 0);
  for (size_t i = 0; i < n; i++) resident += vec[i] & 1;
  free(vec);
  return resident;
}

#ifdef HAVE_INTERPOSE
#define CALLS_EQ(calls, n) ck_assert_int_eq(calls, n)
#else
#define CALLS_EQ(calls, n) ((void)0)
#endif

START_TEST(test_nothing_at_load) {
  /* Check itself registers neither (the counts after start are exactly
   * the library's). */
  CALLS_EQ(atfork_calls, 0);
  CALLS_EQ(key_calls, 1);
  ck_assert_uint_eq(slot_pages_resident(), 0);
  /* Tracing: the handlers, and the starting thread's slot (the exit key
   * made already).  Slot 64 lies inside the array, on pages of its
   * own. */
  er_tmpdir();
  ck_assert_int_eq(eventring_start(), 0);
  CALLS_EQ(atfork_calls, 1);
  CALLS_EQ(key_calls, 1);
  ck_assert_int_eq(eventring_domain_bind(64), 0);
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_end(EVENTRING_PHASE_MINOR);
  ck_assert_uint_ge(slot_pages_resident(), 1);
  ck_assert_int_eq(eventring_stop(), 0);
  /* Once, whatever happens next. */
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_int_eq(eventring_stop(), 0);
  CALLS_EQ(atfork_calls, 1);
  CALLS_EQ(key_calls, 1);
}
END_TEST

/* A process that never traces may still bind a slot: its handlers and key
 * come with it. */
START_TEST(test_bind_arms) {
  ck_assert_int_eq(eventring_domain_bind(64), 0);
  CALLS_EQ(atfork_calls, 1);
  CALLS_EQ(key_calls, 1);
  ck_assert_int_eq(eventring_domain_id(), 64);
  ck_assert_uint_ge(slot_pages_resident(), 1);
  eventring_domain_release();
}
END_TEST

static TCase *tc_untraced(void) {
  TCase *tc = er_tcase("untraced");
  tcase_add_test(tc, test_nothing_at_load);
  tcase_add_test(tc, test_bind_arms);
  return tc;
}

ER_TEST_MAIN("untraced", tc_untraced)
