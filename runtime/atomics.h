/* atomics.h -- the only place that knows how atomics are spelled.
 *
 * Two implementations of one small vocabulary: C11 <stdatomic.h> (the
 * default) and libatomic_ops (./configure --with-libatomic-ops, for
 * compilers without C11 atomics).  Every other file uses these macros, so
 * both builds share every other line.
 *
 * The macros operate on plain 64-bit words (uint64_t) and ints, because
 * most shared words live in a mapped file whose layout is fixed by the
 * format, and the probe flag is declared `int` in the public header.  Both
 * implementations access them as lock-free atomics of the same size.
 *
 * Orders used in eventring:
 *   rlx  no ordering, only atomicity (the value is a hint or owned)
 *   acq  later accesses stay after the load
 *   rel  earlier accesses stay before the store (or read-modify-write)
 */
#ifndef EVENTRING_ATOMICS_H
#define EVENTRING_ATOMICS_H

#include <stdint.h>

#ifdef EVENTRING_USE_LIBATOMIC_OPS

#include <atomic_ops.h>

_Static_assert(sizeof(AO_t) == sizeof(uint64_t), "AO_t must be 64-bit");

#define er_load_rlx(p) ((uint64_t)AO_load((volatile AO_t *)(p)))
#define er_load_acq(p) ((uint64_t)AO_load_acquire((volatile AO_t *)(p)))
#define er_store_rlx(p, v) AO_store((volatile AO_t *)(p), (AO_t)(v))
#define er_store_rel(p, v) AO_store_release((volatile AO_t *)(p), (AO_t)(v))
#define er_fetch_add(p, v)                                               \
  ((uint64_t)AO_fetch_and_add_full((volatile AO_t *)(p), (AO_t)(v)))
#define er_fetch_add_rel(p, v)                                           \
  ((uint64_t)AO_fetch_and_add_release((volatile AO_t *)(p), (AO_t)(v)))
#define er_cas(p, old, new)                                              \
  AO_compare_and_swap_full((volatile AO_t *)(p), (AO_t)(old), (AO_t)(new))

#define er_iload_rlx(p) ((int)AO_int_load((volatile unsigned *)(p)))
#define er_iload_acq(p) ((int)AO_int_load_acquire((volatile unsigned *)(p)))
#define er_istore_rlx(p, v) AO_int_store((volatile unsigned *)(p), (unsigned)(v))
#define er_istore_rel(p, v)                                              \
  AO_int_store_release((volatile unsigned *)(p), (unsigned)(v))

#define er_icas(p, old, new)                                             \
  AO_int_compare_and_swap_full((volatile unsigned *)(p), (unsigned)(old), \
                               (unsigned)(new))
/* libatomic_ops has no int fetch-or/and: a compare-and-swap loop. */
#define er_ifetch_or(p, v) er_ifetch_op_((volatile unsigned *)(p), (unsigned)(v), 1)
#define er_ifetch_and(p, v) er_ifetch_op_((volatile unsigned *)(p), (unsigned)(v), 0)
static inline int er_ifetch_op_(volatile unsigned *p, unsigned v, int or_) {
  unsigned old;
  do old = AO_int_load(p);
  while (!AO_int_compare_and_swap_full(p, old, or_ ? old | v : old & v));
  return (int)old;
}
#define er_fence() AO_nop_full()
#define er_fence_release() AO_nop_write()
#define er_fence_acquire() AO_nop_read()
#define er_compiler_barrier() AO_compiler_barrier()

#else /* C11 */

#include <stdatomic.h>

#define ER_A64(p) ((_Atomic uint64_t *)(p))
#define ER_AINT(p) ((_Atomic int *)(p))

#define er_load_rlx(p) atomic_load_explicit(ER_A64(p), memory_order_relaxed)
#define er_load_acq(p) atomic_load_explicit(ER_A64(p), memory_order_acquire)
#define er_store_rlx(p, v)                                               \
  atomic_store_explicit(ER_A64(p), (uint64_t)(v), memory_order_relaxed)
#define er_store_rel(p, v)                                               \
  atomic_store_explicit(ER_A64(p), (uint64_t)(v), memory_order_release)
#define er_fetch_add(p, v)                                               \
  atomic_fetch_add_explicit(ER_A64(p), (uint64_t)(v), memory_order_relaxed)
#define er_fetch_add_rel(p, v)                                           \
  atomic_fetch_add_explicit(ER_A64(p), (uint64_t)(v), memory_order_release)
/* Nonzero when *p was `old` and is now `new` (acquire and release). */
#define er_cas(p, old, new)                                              \
  er_cas_((_Atomic uint64_t *)(p), (uint64_t)(old), (uint64_t)(new))
static inline int er_cas_(_Atomic uint64_t *p, uint64_t old, uint64_t new_) {
  return atomic_compare_exchange_strong_explicit(p, &old, new_,
                                                 memory_order_acq_rel,
                                                 memory_order_acquire);
}

#define er_icas(p, old, new)                                             \
  er_icas_((_Atomic int *)(p), (int)(old), (int)(new))
static inline int er_icas_(_Atomic int *p, int old, int new_) {
  return atomic_compare_exchange_strong_explicit(p, &old, new_,
                                                 memory_order_acq_rel,
                                                 memory_order_acquire);
}
/* Relaxed read-modify-writes of an int, returning the old value. */
#define er_ifetch_or(p, v)                                               \
  atomic_fetch_or_explicit(ER_AINT(p), (int)(v), memory_order_relaxed)
#define er_ifetch_and(p, v)                                              \
  atomic_fetch_and_explicit(ER_AINT(p), (int)(v), memory_order_relaxed)
#define er_iload_rlx(p) atomic_load_explicit(ER_AINT(p), memory_order_relaxed)
#define er_iload_acq(p) atomic_load_explicit(ER_AINT(p), memory_order_acquire)
#define er_istore_rlx(p, v)                                              \
  atomic_store_explicit(ER_AINT(p), (int)(v), memory_order_relaxed)
#define er_istore_rel(p, v)                                              \
  atomic_store_explicit(ER_AINT(p), (int)(v), memory_order_release)

#define er_fence() atomic_thread_fence(memory_order_seq_cst)
#ifdef __SANITIZE_THREAD__
/* ThreadSanitizer does not model fences.  The only release fence orders
 * ring stores, which are all atomic, so it has nothing to report there;
 * keep the compiler ordering and leave out what it cannot check. */
#define er_fence_release() atomic_signal_fence(memory_order_seq_cst)
#else
#define er_fence_release() atomic_thread_fence(memory_order_release)
#endif
#ifdef __SANITIZE_THREAD__
#define er_fence_acquire() atomic_signal_fence(memory_order_seq_cst)
#else
#define er_fence_acquire() atomic_thread_fence(memory_order_acquire)
#endif
/* Orders the compiler only: the CPU is ordered by the other side's
 * membarrier(2) (see stw.h). */
#define er_compiler_barrier() atomic_signal_fence(memory_order_seq_cst)

#endif

#endif /* EVENTRING_ATOMICS_H */
