/* A thread's first event made in a signal handler calls nothing that is not async-signal-safe: no pthread_once, no allocation, no strerror, no stdio formatting. */
/* This program defines the functions in question (the library is linked
 * statically, so its calls come here), and each notes a call made while
 * a handler of this program runs on the calling thread; allocations are
 * seen through malloc() and calloc() themselves, or the sanitizers'
 * allocation hook in those builds.  The first event is forced inside the
 * handler: a new thread raises the signal at itself before it has emitted
 * anything; what the allocator handed out meanwhile is measured around
 * it too.  The program makes 40 thread-specific keys of its own before
 * tracing starts, as a large host does: a key made after those has
 * values that glibc keeps in a block it allocates at a thread's first
 * pthread_setspecific().  And the ring's reservation is made to fail in
 * one case, so that the warning it prints is formatted in the handler. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/syscall.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
/* The sanitizers' runtime has it (sanitizer/allocator_interface.h, a
 * header not every installation ships). */
int __sanitizer_install_malloc_and_free_hooks(
    void (*malloc_hook)(const volatile void *, size_t),
    void (*free_hook)(const volatile void *));
#define SANITIZED 1
#endif

/* What was called inside a handler, one bit per function. */
enum { PTHREAD_ONCE = 1, ALLOC = 2, STRERROR = 4, PRINTF = 8 };
static volatile sig_atomic_t called_in_handler;
static __thread int in_handler;
/* Makes this thread's ring reservation fail with ENOSPC. */
static __thread int fail_reserve;

static void note(int what) {
  if (in_handler) __atomic_fetch_or(&called_in_handler, what, __ATOMIC_RELAXED);
}

/* The real functions, looked up before any handler runs. */
static int (*real_once)(pthread_once_t *, void (*)(void));
static char *(*real_strerror)(int);
static int (*real_vsnprintf)(char *, size_t, const char *, va_list);

__attribute__((no_sanitize_thread))
int pthread_once(pthread_once_t *once, void (*fn)(void)) {
  note(PTHREAD_ONCE);
  if (!real_once) *(void **)&real_once = dlsym(RTLD_NEXT, "pthread_once");
  return real_once(once, fn);
}

char *strerror(int err) {
  note(STRERROR);
  if (!real_strerror) *(void **)&real_strerror = dlsym(RTLD_NEXT, "strerror");
  return real_strerror(err);
}

int vsnprintf(char *buf, size_t n, const char *fmt, va_list ap) {
  note(PRINTF);
  if (!real_vsnprintf)
    *(void **)&real_vsnprintf = dlsym(RTLD_NEXT, "vsnprintf");
  return real_vsnprintf(buf, n, fmt, ap);
}

int snprintf(char *buf, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vsnprintf(buf, n, fmt, ap);
  va_end(ap);
  return r;
}

#ifdef SANITIZED
static void on_alloc(const volatile void *p, size_t n) {
  (void)p;
  (void)n;
  note(ALLOC);
}
static void on_free(const volatile void *p) { (void)p; }
#else
/* glibc calls these through its own PLT too (pthread_setspecific's
 * calloc among them), and they are glibc's allocator underneath. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
void *malloc(size_t n) {
  note(ALLOC);
  return __libc_malloc(n);
}
void *calloc(size_t k, size_t n) {
  note(ALLOC);
  return __libc_calloc(k, n);
}
void *realloc(void *p, size_t n) {
  note(ALLOC);
  return __libc_realloc(p, n);
}
#endif

int posix_fallocate(int fd, off_t off, off_t len) {
  if (fail_reserve) return ENOSPC;
  if (syscall(SYS_fallocate, fd, 0, off, len) == 0) return 0;
  return errno;
}

static int val_id;

static void handler(int sig) {
  (void)sig;
  in_handler = 1;
  eventring_write_int(val_id, 5);
  in_handler = 0;
}

/* Bytes the allocator handed out while the handler ran, seen from the
 * thread: glibc's own calls to calloc() (pthread_setspecific()'s among
 * them) bypass the definitions above, but not its counts. */
static size_t allocated_in_handler;

static size_t allocated(void) {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

static void *first_event_in_handler(void *arg) {
  fail_reserve = arg != NULL;
  size_t before = allocated();
  raise(SIGUSR1);
  allocated_in_handler = allocated() - before;
  return NULL;
}

static char *setup(void) {
  *(void **)&real_once = dlsym(RTLD_NEXT, "pthread_once");
  *(void **)&real_strerror = dlsym(RTLD_NEXT, "strerror");
  *(void **)&real_vsnprintf = dlsym(RTLD_NEXT, "vsnprintf");
  ck_assert(real_once && real_strerror && real_vsnprintf);
#ifdef SANITIZED
  __sanitizer_install_malloc_and_free_hooks(on_alloc, on_free);
#endif
  /* A host's own keys, made before it starts tracing. */
  for (int i = 0; i < 40; i++) {
    pthread_key_t k;
    ck_assert_int_eq(pthread_key_create(&k, NULL), 0);
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
  er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  val_id = eventring_register("first.val", EVENTRING_TYPE_INT);
  ck_assert_int_ge(val_id, 0);
  ck_assert_int_eq(eventring_start(), 0);
  return strdup(eventring_path());
}

/* The calls made in the handler, named. */
static const char *named(int calls) {
  static char buf[128];
  snprintf(buf, sizeof buf, "%s%s%s%s", calls & PTHREAD_ONCE ? " pthread_once" : "",
           calls & ALLOC ? " malloc/calloc" : "", calls & STRERROR ? " strerror" : "",
           calls & PRINTF ? " vsnprintf" : "");
  return buf;
}

START_TEST(test_first_event_in_handler) {
  char *path = setup();
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, first_event_in_handler, NULL), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  int calls = called_in_handler;
  ck_assert_msg(calls == 0, "called in the handler:%s", named(calls));
  ck_assert_uint_eq(allocated_in_handler, 0);
  ck_assert_int_eq(eventring_stop(), 0);
  /* The event was written, in the thread's own slot. */
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(rf_count(&f, 1, 1, ER_UEV_INT, val_id), 1);
  rf_close(&f);
  free(path);
}
END_TEST

START_TEST(test_first_event_in_handler_warns) {
  char *path = setup();
  struct er_capture c;
  er_stderr_begin(&c);
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, first_event_in_handler, path), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  char *said = er_stderr_end(&c);
  int calls = called_in_handler;
  ck_assert_msg(calls == 0, "called in the handler:%s", named(calls));
  ck_assert_uint_eq(allocated_in_handler, 0);
  /* The same line as ever, formatted in the handler. */
  char want[PATH_MAX + 128];
  snprintf(want, sizeof want,
           "eventring: domain 1 is not traced: cannot reserve its ring in "
           "%s: No space left on device\n", path);
  ck_assert_str_eq(said, want);
  free(said);
  ck_assert_int_eq(eventring_stop(), 0);
  /* Not written: counted in the extension block, with the thread's
   * domain_terminate at its exit. */
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(f.ext[ER_EXT_DROPPED], 2);
  rf_close(&f);
  free(path);
}
END_TEST

static TCase *tc_first(void) {
  TCase *tc = er_tcase("first_event");
  tcase_add_test(tc, test_first_event_in_handler);
  tcase_add_test(tc, test_first_event_in_handler_warns);
  return tc;
}

ER_TEST_MAIN("signal_first_event", tc_first)
