/* warn.c -- the library's warnings: one line each on standard error.
 *
 * A warning may be printed where only async-signal-safe calls are
 * allowed: by a thread's first event in a signal handler (its ring
 * cannot be reserved), or in a forked child's handler.  So it is
 * formatted here, into a buffer on the stack, with no stdio, no locale
 * and no allocation, and written with one write(2), which also keeps it
 * from being interleaved with the host's output.  Errno values are
 * described the same way (er_errno_text()).
 */
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* A line being built; text past `end` is cut. */
struct line {
  char *at, *end;
};

static void put(struct line *l, const char *s, size_t n) {
  size_t room = (size_t)(l->end - l->at);
  if (n > room) n = room;
  memcpy(l->at, s, n);
  l->at += n;
}

static void put_unsigned(struct line *l, unsigned long long v, unsigned base,
                         int negative) {
  char digits[24];
  char *p = digits + sizeof digits;
  do {
    *--p = "0123456789abcdef"[v % base];
    v /= base;
  } while (v);
  if (negative) *--p = '-';
  put(l, p, (size_t)(digits + sizeof digits - p));
}

/* The conversions the library's warnings use: %s (and %.*s), %c, %d,
 * %i, %u and %x, with the length modifiers l, ll and z, and %%; any
 * other is copied as it stands.  The format attribute of er_warn() has
 * the compiler check the arguments against them. */
static void format(struct line *l, const char *fmt, va_list ap) {
  while (*fmt) {
    const char *pct = strchr(fmt, '%');
    if (!pct) pct = fmt + strlen(fmt);
    put(l, fmt, (size_t)(pct - fmt));
    if (!*pct) break;
    const char *spec = pct + 1;
    int precision = -1;
    if (spec[0] == '.' && spec[1] == '*') {
      precision = va_arg(ap, int);
      spec += 2;
    }
    int longs = 0, size = 0;
    while (*spec == 'l') longs++, spec++;
    if (*spec == 'z') size = 1, spec++;
    switch (*spec) {
    case 's': {
      const char *s = va_arg(ap, const char *);
      if (!s) s = "(null)";
      put(l, s, precision >= 0 ? strnlen(s, (size_t)precision) : strlen(s));
      break;
    }
    case 'c': {
      char c = (char)va_arg(ap, int);
      put(l, &c, 1);
      break;
    }
    case 'd':
    case 'i': {
      long long v = size ? (long long)va_arg(ap, ssize_t)
                    : longs >= 2 ? va_arg(ap, long long)
                    : longs ? va_arg(ap, long) : va_arg(ap, int);
      put_unsigned(l, v < 0 ? 0ull - (unsigned long long)v
                            : (unsigned long long)v, 10, v < 0);
      break;
    }
    case 'u':
    case 'x': {
      unsigned long long v = size ? va_arg(ap, size_t)
                             : longs >= 2 ? va_arg(ap, unsigned long long)
                             : longs ? va_arg(ap, unsigned long)
                             : va_arg(ap, unsigned);
      put_unsigned(l, v, *spec == 'x' ? 16 : 10, 0);
      break;
    }
    case '%':
      put(l, "%", 1);
      break;
    default:
      /* Not one of ours: the text as it stands, and nothing consumed. */
      put(l, pct, (size_t)(spec - pct) + (*spec != '\0'));
      break;
    }
    if (!*spec) break;
    fmt = spec + 1;
  }
}

void er_warn(const char *fmt, ...) {
  char buf[512];
  /* One byte kept for the newline, however long the text. */
  struct line l = {buf, buf + sizeof buf - 1};
  put(&l, "eventring: ", 11);
  va_list ap;
  va_start(ap, fmt);
  format(&l, fmt, ap);
  va_end(ap);
  *l.at++ = '\n';
  ssize_t w = write(STDERR_FILENO, buf, (size_t)(l.at - buf));
  (void)w;
}

const char *er_errno_text(int err) {
  /* glibc's table, untranslated (strerror() goes through the locale and
   * may format into a buffer of its own). */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
  const char *s = strerrordesc_np(err);
  if (s) return s;
#else
  (void)err;
#endif
  return "unknown error";
}
