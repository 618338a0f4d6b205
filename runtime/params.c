/* params.c -- the parameters of a ring file, read from the environment.
 *
 * OCaml 5 reads the ring's size (e=) and, in eventring, the number of
 * domain slots (d=) from OCAMLRUNPARAM, or CAMLRUNPARAM when it is unset;
 * OCAML_RUNTIME_EVENTS_PRESERVE keeps the file after tracing stops;
 * EVENTRING_RECORD_CMDLINE makes it record the arguments (cmdline.c);
 * EVENTRING_LABELS gives the operator's labels (name=value,...).  A
 * value that cannot be used is replaced and a warning says by what, so
 * that a typo never keeps a program from running.  Read at every start,
 * under er_st.lock.  (OCAML_RUNTIME_EVENTS_DIR is read where the path is
 * made, ring.c; OCAML_RUNTIME_EVENTS_START at program start, init.c.)
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "layout.h"

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

/* EVENTRING_LABELS=name=value,name2=value2 into `area`: an item that
 * cannot be used is left out with a warning that says why. */
static void read_labels(unsigned char *area, size_t bytes) {
  memset(area, 0, bytes);
  const char *p = secure_getenv("EVENTRING_LABELS");
  while (p && *p) {
    size_t n = strcspn(p, ",");
    const char *eq = memchr(p, '=', n);
    size_t name_n = eq ? (size_t)(eq - p) : 0;
    /* A long item is shown cut, so that the reason fits in the line. */
    int shown = n > 64 ? 64 : (int)n;
    const char *more = n > 64 ? "..." : "";
    int r = n == 0 ? 0 : !eq ? -1 :
        er_labels_set(area, bytes, p, name_n, eq + 1, n - name_n - 1);
    if (r == -1)
      er_warn("ignoring EVENTRING_LABELS item '%.*s%s': not name=value",
              shown, p, more);
    else if (r == -EINVAL && !er_label_name_ok(p, name_n))
      er_warn("ignoring EVENTRING_LABELS item '%.*s%s': a label name is "
              "letters, digits and '_', not starting with a digit or __",
              shown, p, more);
    else if (r == -EINVAL)
      er_warn("ignoring EVENTRING_LABELS item '%.*s%s': the value is empty "
              "or holds a control character", shown, p, more);
    else if (r == -ENOSPC)
      er_warn("ignoring EVENTRING_LABELS item '%.*s%s': the labels exceed "
              "%d bytes or %d labels", shown, p, more, ER_MD_LABEL_BYTES,
              ER_EXT_MAX_LABELS);
    p += n;
    if (*p == ',') p++;
  }
}

/* Reads e= and d=.  Other options, with or without a value, are OCaml's
 * business and are skipped. */
void er_params_read(struct er_params *out) {
  unsigned log2 = ER_LOG2_DEFAULT, max_domains = ER_DOMAINS_DEFAULT;
  const char *p = secure_getenv("OCAMLRUNPARAM");
  if (!p) p = secure_getenv("CAMLRUNPARAM");
  while (p && *p) {
    size_t n = strcspn(p, ",");
    if (n >= 2 && p[1] == '=') {
      if (p[0] == 'e')
        log2 = clamp_param('e', p, n, ER_LOG2_MIN, ER_LOG2_MAX,
                           ER_LOG2_DEFAULT);
      else if (p[0] == 'd')
        max_domains = clamp_param('d', p, n, 1, ER_DOMAINS_LIMIT,
                                  ER_DOMAINS_DEFAULT);
    }
    p += n;
    if (*p == ',') p++;
  }
  /* The file is sparse, but a multi-terabyte apparent size breaks backup
   * tools and quotas: lower d until it fits. */
  uint64_t ring_bytes = UINT64_C(8) << log2;
  if ((uint64_t)max_domains * ring_bytes > ER_MAX_FILE_BYTES) {
    unsigned fit = (unsigned)(ER_MAX_FILE_BYTES / ring_bytes);
    er_warn("%u domains of 2^%u-word rings exceed 64 GiB; using %u domains",
            max_domains, log2, fit);
    max_domains = fit;
  }
  out->log2 = log2;
  out->max_domains = max_domains;
  out->preserve = secure_getenv("OCAML_RUNTIME_EVENTS_PRESERVE") != NULL;
  /* Anything but unset, empty or "0" asks for it, as EVENTRING_READ_PREAD
   * is read: a privacy default is not turned off by an empty value. */
  const char *rc = secure_getenv("EVENTRING_RECORD_CMDLINE");
  out->record_cmdline = rc && *rc && strcmp(rc, "0") != 0;
  read_labels(out->labels, sizeof out->labels);
}
