/* control.c -- starting, pausing and stopping tracing; the environment;
 * user event registration; fork; the probes' entry points.
 *
 * Every control operation holds er_st.lock, so they are serialised with
 * each other, with slot changes and with fork (taken in the prepare
 * handler).  Probes never take it except on a thread's first event.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "writer.h"

/* The flag the inlined probes test (eventring.h).  Stored only under the
 * lock; loaded by probes with no ordering, because it only decides whether
 * to go and look: er_enter() checks `live` with acquire order. */
int eventring__on;

struct er_state er_st = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

/* Registered user events: the table is append-only; `user_count` is
 * stored with release order after the entry is complete, so a probe that
 * loads it with acquire order may use every id below it. */
struct user_event {
  char name[ER_NAME_SLOT_BYTES];
  int type;
};
static struct user_event users[EVENTRING_MAX_USER_EVENTS];
static int user_count;
/* Open-addressing index of `users` by name: slot holds id + 1, 0 = empty. */
#define USER_INDEX_SIZE (2 * EVENTRING_MAX_USER_EVENTS)
static uint16_t user_index[USER_INDEX_SIZE];

/* ------------------------------------------------------------------ */
/* The environment.                                                     */

/* Parses one OCAMLRUNPARAM value: decimal, optional sign, optional k/M/G
 * multiplier as OCaml accepts.  Returns 0 on success. */
static int parse_value(const char *s, size_t n, long long *out) {
  char buf[32];
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, s, n);
  buf[n] = 0;
  char *end;
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (end == buf || errno) return -1;
  long long mul = 1;
  if (*end == 'k') mul = 1LL << 10, end++;
  else if (*end == 'M') mul = 1LL << 20, end++;
  else if (*end == 'G') mul = 1LL << 30, end++;
  if (*end) return -1;
  /* A product too large for the type saturates: the caller clamps it. */
  if (__builtin_mul_overflow(v, mul, out)) *out = v < 0 ? LLONG_MIN : LLONG_MAX;
  return 0;
}

static unsigned clamp_param(char letter, const char *item, size_t n,
                            long long lo, long long hi, unsigned dflt) {
  long long v;
  if (parse_value(item + 2, n - 2, &v) != 0) {
    er_warn("ignoring OCAMLRUNPARAM %c=%.*s: not a number; using %u", letter,
            (int)(n - 2), item + 2, dflt);
    return dflt;
  }
  if (v < lo || v > hi) {
    long long c = v < lo ? lo : hi;
    er_warn("OCAMLRUNPARAM %c=%lld is out of range [%lld, %lld]; using %lld",
            letter, v, lo, hi, c);
    return (unsigned)c;
  }
  return (unsigned)v;
}

/* Reads e= (log2 of the ring size in words) and d= (domain slots) from
 * OCAMLRUNPARAM, or CAMLRUNPARAM when it is unset.  Other options, with
 * or without a value, are OCaml's business and are skipped. */
static void read_params(unsigned *log2, unsigned *max_domains) {
  *log2 = ER_LOG2_DEFAULT;
  *max_domains = ER_DOMAINS_DEFAULT;
  const char *p = secure_getenv("OCAMLRUNPARAM");
  if (!p) p = secure_getenv("CAMLRUNPARAM");
  while (p && *p) {
    size_t n = strcspn(p, ",");
    if (n >= 2 && p[1] == '=') {
      if (p[0] == 'e')
        *log2 = clamp_param('e', p, n, ER_LOG2_MIN, ER_LOG2_MAX,
                            ER_LOG2_DEFAULT);
      else if (p[0] == 'd')
        *max_domains = clamp_param('d', p, n, 1, ER_DOMAINS_LIMIT,
                                   ER_DOMAINS_DEFAULT);
    }
    p += n;
    if (*p == ',') p++;
  }
  /* The file is sparse, but a multi-terabyte apparent size breaks backup
   * tools and quotas: lower d until it fits. */
  uint64_t ring_bytes = UINT64_C(8) << *log2;
  if ((uint64_t)*max_domains * ring_bytes > ER_MAX_FILE_BYTES) {
    unsigned fit = (unsigned)(ER_MAX_FILE_BYTES / ring_bytes);
    er_warn("%u domains of 2^%u-word rings exceed 64 GiB; using %u domains",
            *max_domains, *log2, fit);
    *max_domains = fit;
  }
}

/* ------------------------------------------------------------------ */
/* Start and stop.                                                      */

static void emit_lifecycle(int kind, uint64_t data) {
  er_emit(1, 0, ER_EV_LIFECYCLE, (unsigned)kind, &data, 1);
}

static int start_locked(void) {
  if (er_iload_rlx(&er_st.live)) return 0;
  unsigned log2, max_domains;
  read_params(&log2, &max_domains);
  er_barrier_init();
  er_clock_init();
  int r = er_file_create(log2, max_domains);
  if (r) return r;
  er_st.preserve = secure_getenv("OCAML_RUNTIME_EVENTS_PRESERVE") != NULL;

  int n = er_iload_rlx(&user_count);
  for (int i = 0; i < n; i++) er_file_write_name(i, users[i].name);
  /* Threads that kept their slot from an earlier file get a ring in this
   * one.  No probe reads these fields until `live` is published below. */
  for (unsigned i = 0; i < er_st.slots_hw; i++) {
    struct er_domain *d = &er_domains[i];
    if (d->owned && !d->retired) er_domain_bind_file(d);
  }
  /* Publishes the complete file to probes (pairs with their acquire). */
  er_istore_rel(&er_st.live, 1);
  /* The starter's ring begins with ring_start, as OCaml's domain 0 does,
   * even when the thread took its slot before. */
  struct er_domain *d = er_attach_locked(0);
  if (d) d->spawn_pending = 0;
  emit_lifecycle(EVENTRING_LIFECYCLE_RING_START, (uint64_t)er_st.pid);
  /* Started armed but paused (OCAML_RUNTIME_EVENTS_START=paused, or a
   * forked child of a paused parent): say so in the ring. */
  if (er_st.paused)
    emit_lifecycle(EVENTRING_LIFECYCLE_RING_PAUSE, 0);
  else
    er_istore_rel(&eventring__on, 1);
  er_store_rel(&er_st.ext[ER_EXT_PAUSED], er_st.paused);
  return 0;
}

/* Starts tracing and the thread that serves control from outside.  Not
 * for a forked child's handler: no thread may be created there (only
 * async-signal-safe calls are allowed), so a traced child has its own
 * file but no remote control until it starts tracing anew. */
static int start_with_watcher_locked(void) {
  int was_live = er_iload_rlx(&er_st.live);
  int r = start_locked();
  if (r == 0 && !was_live) er_remote_start(er_st.ext);
  return r;
}

static int stop_locked(void) {
  if (!er_iload_rlx(&er_st.live)) return EVENTRING_E_NOTSTARTED;
  emit_lifecycle(EVENTRING_LIFECYCLE_RING_STOP, 0);
  er_istore_rlx(&eventring__on, 0);
  er_istore_rlx(&er_st.live, 0);
  int stuck = er_stop_world();
  if (stuck)
    er_warn("a thread stayed inside a probe; leaving %s mapped", er_st.path);
  er_file_drop(!er_st.preserve, !stuck);
  er_st.paused = 0;
  return 0;
}

int eventring_start(void) {
#ifdef EVENTRING_DISABLED
  return EVENTRING_E_DISABLED;
#else
  pthread_mutex_lock(&er_st.lock);
  int r = start_with_watcher_locked();
  pthread_mutex_unlock(&er_st.lock);
  return r;
#endif
}

int eventring_stop(void) {
  er_remote_stop();
  pthread_mutex_lock(&er_st.lock);
  int r = stop_locked();
  pthread_mutex_unlock(&er_st.lock);
  return r;
}

void eventring_pause(void) {
  pthread_mutex_lock(&er_st.lock);
  if (er_iload_rlx(&er_st.live) && !er_st.paused) {
    er_st.paused = 1;
    er_istore_rlx(&eventring__on, 0);
    emit_lifecycle(EVENTRING_LIFECYCLE_RING_PAUSE, 0);
    er_store_rel(&er_st.ext[ER_EXT_PAUSED], 1);
  }
  pthread_mutex_unlock(&er_st.lock);
}

void eventring_resume(void) {
  pthread_mutex_lock(&er_st.lock);
  if (er_iload_rlx(&er_st.live) && er_st.paused) {
    er_st.paused = 0;
    emit_lifecycle(EVENTRING_LIFECYCLE_RING_RESUME, 0);
    er_istore_rel(&eventring__on, 1);
    er_store_rel(&er_st.ext[ER_EXT_PAUSED], 0);
  }
  pthread_mutex_unlock(&er_st.lock);
}

int eventring_is_active(void) { return er_iload_rlx(&eventring__on) != 0; }

const char *eventring_path(void) {
  return er_iload_acq(&er_st.live) ? er_st.path : NULL;
}

/* ------------------------------------------------------------------ */
/* User events.                                                         */

static unsigned hash_name(const char *s) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h % USER_INDEX_SIZE;
}

int eventring_register(const char *name, int type) {
  if (!name) return EVENTRING_E_INVAL;
  size_t n = strnlen(name, EVENTRING_MAX_NAME + 1);
  if (n == 0 || n > EVENTRING_MAX_NAME) return EVENTRING_E_NAMETOOLONG;
  if (type != EVENTRING_TYPE_UNIT && type != EVENTRING_TYPE_INT &&
      type != EVENTRING_TYPE_SPAN && type != EVENTRING_TYPE_CUSTOM)
    return EVENTRING_E_INVAL;

  pthread_mutex_lock(&er_st.lock);
  int r;
  unsigned h = hash_name(name);
  while (user_index[h] && strcmp(users[user_index[h] - 1].name, name) != 0)
    h = (h + 1) % USER_INDEX_SIZE;
  if (user_index[h]) {
    int id = user_index[h] - 1;
    r = users[id].type == type ? id : EVENTRING_E_EXISTS;
  } else if (user_count == EVENTRING_MAX_USER_EVENTS) {
    r = EVENTRING_E_TOOMANY;
  } else {
    r = user_count;
    memcpy(users[r].name, name, n + 1);
    users[r].type = type;
    user_index[h] = (uint16_t)(r + 1);
    if (er_iload_rlx(&er_st.live)) er_file_write_name(r, name);
    er_istore_rel(&user_count, r + 1);
  }
  pthread_mutex_unlock(&er_st.lock);
  return r;
}

/* ------------------------------------------------------------------ */
/* Entry points of the inlined probes (eventring.h).                    */

void eventring__runtime(unsigned type, unsigned id) {
  er_emit(0, 0, type, id, NULL, 0);
}

void eventring__runtime1(unsigned type, unsigned id, uint64_t value) {
  er_emit(0, 0, type, id, &value, 1);
}

static int user_id_ok(int id) {
  return id >= 0 && id < er_iload_acq(&user_count);
}

void eventring__user(unsigned type, int id, int64_t value) {
  if (!user_id_ok(id)) return;
  uint64_t v = (uint64_t)value;
  /* Two copies, each with a constant payload size. */
  if (type == ER_UEV_INT)
    er_emit(0, 1, ER_UEV_INT, (unsigned)id, &v, 1);
  else
    er_emit(0, 1, type, (unsigned)id, NULL, 0);
}

int eventring__custom(int id, const void *bytes, size_t len) {
  if (len > EVENTRING_MAX_CUSTOM_BYTES) return EVENTRING_E_TOOBIG;
  if (!user_id_ok(id)) return EVENTRING_E_INVAL;
  return er_emit_custom(id, bytes, len);
}

/* ------------------------------------------------------------------ */
/* Fork, program start and exit.                                        */

pid_t eventring_fork(void) {
  pid_t pid = fork();
  if (pid > 0) eventring_lifecycle(EVENTRING_LIFECYCLE_FORK_PARENT, pid);
  return pid;
}

static void fork_prepare(void) { pthread_mutex_lock(&er_st.lock); }

static void fork_parent(void) { pthread_mutex_unlock(&er_st.lock); }

/* The child must not write into its parent's rings (they are shared
 * mappings) nor remove its parent's file.  It drops the mapping and, if
 * tracing was on, starts a file of its own.  Only async-signal-safe calls
 * are made on this path when tracing was off. */
static void fork_child(void) {
  /* The lock taken in fork_prepare() is held by this thread, the only one
   * of the child; it is released once the child's state is its own. */
  er_domains_after_fork();
  er_remote_after_fork();
  if (!er_iload_rlx(&er_st.live)) {
    pthread_mutex_unlock(&er_st.lock);
    return;
  }
  uint64_t parent = (uint64_t)er_st.pid;
  er_istore_rlx(&eventring__on, 0);
  er_istore_rlx(&er_st.live, 0);
  er_file_drop(0, 1);
  int r = start_locked();
  if (r == 0)
    emit_lifecycle(EVENTRING_LIFECYCLE_FORK_CHILD, parent);
  else
    er_warn("cannot trace forked child %ld: %s: %s", (long)getpid(),
            er_st.path, eventring_strerror(r));
  pthread_mutex_unlock(&er_st.lock);
}

__attribute__((constructor)) static void er_init(void) {
  er_domains_init();
  pthread_atfork(fork_prepare, fork_parent, fork_child);
#ifndef EVENTRING_DISABLED
  const char *start = secure_getenv("OCAML_RUNTIME_EVENTS_START");
  if (start) {
    /* "paused": armed, paying only the paused probe cost until resumed
     * (eventring_resume() or `eventring resume PID` from outside). */
    if (strcmp(start, "paused") == 0) er_st.paused = 1;
    int r = eventring_start();
    if (r < 0)
      er_warn("cannot start tracing: %s: %s; running untraced", er_st.path,
              eventring_strerror(r));
  }
#endif
}

__attribute__((destructor)) static void er_fini(void) {
  er_remote_stop();
  pthread_mutex_lock(&er_st.lock);
  stop_locked();
  pthread_mutex_unlock(&er_st.lock);
}
