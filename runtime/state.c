/* state.c -- the process's tracing state (internal.h): er_st, the domain
 * slots, the per-thread words, and arming.  The bottom of the runtime's
 * layers (doc/LAYERS.md): every other file uses these and this file uses
 * none of theirs (testsuite/test_runtime_layers.sh lists the layers).
 */
#include "internal.h"

struct er_state er_st = {
    .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1, .free_epoch = 1};

/* Zero in the image and left so until a thread takes a slot: the array
 * is 1.5 MiB of bss, and a process that never traces must not pay for
 * it, so nothing writes a slot that no thread takes (a slot's `id` is
 * stored when a thread takes it). */
struct er_domain er_domains[ER_DOMAINS_LIMIT];

__thread struct er_domain *er_tls_self
    __attribute__((tls_model("initial-exec")));
__thread unsigned er_tls_locking __attribute__((tls_model("initial-exec")));

/* A program linked with the static library gets only the objects whose
 * symbols it uses.  Every part of the runtime uses er_st, so this
 * reference brings init.c's object along with it: its constructor
 * starts tracing from the environment, its destructor stops it.  A data
 * reference only: nothing here calls init.c (testsuite/
 * test_runtime_layers.sh knows it as an anchor). */
extern const char er_init_anchor;
__attribute__((used)) static const char *const init_anchor = &er_init_anchor;

/* What er_arm() runs once (er_arm_with()); 1 once it has run (atomic:
 * the destructor reads it without the lock).  arm_action is stored at
 * load, so it lives in .data: a process that never traces touches no
 * page of bss (testsuite/install-check.sh). */
static void (*arm_action)(void) __attribute__((section(".data")));
static int armed;
static pthread_once_t arm_once = PTHREAD_ONCE_INIT;

void er_arm_with(void (*action)(void)) { arm_action = action; }

static void arm(void) {
  if (arm_action) arm_action();
  /* Pairs with the acquire load in er_armed(). */
  er_istore_rel(&armed, 1);
}

void er_arm(void) { pthread_once(&arm_once, arm); }

int er_armed(void) { return er_iload_acq(&armed); }
