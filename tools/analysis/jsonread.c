/* jsonread.c -- the JSON reader of analysis.h: a recursive descent over
 * the text, with the position of the first error in its message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"


static void parse_error(struct json_parser *ps, const char *what) {
  if (ps->failed) return;
  ps->failed = 1;
  if (!strcmp(what, "out of memory")) {
    snprintf(ps->err, ps->errsize, "out of memory");
    return;
  }
  size_t line = 1, col = 1;
  for (const char *q = ps->s; q < ps->p && q < ps->end; q++) {
    if (*q == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  snprintf(ps->err, ps->errsize, "line %zu, column %zu: %s", line, col, what);
}

static void skip_ws(struct json_parser *ps) {
  while (ps->p < ps->end &&
         (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
    ps->p++;
}

static int literal(struct json_parser *ps, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n)) return 0;
  ps->p += n;
  return 1;
}

static int hex4(struct json_parser *ps, unsigned *out) {
  if (ps->end - ps->p < 4) return 0;
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = *ps->p++;
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return 0;
  }
  *out = v;
  return 1;
}

/* The text that string() checks without keeping it. */
static char checked[] = "";

/* A string, at its opening quote: malloc'd, or with `keep` 0 only checked
 * (the static `checked`); NULL after parse_error(). */
static char *string(struct json_parser *ps, int keep) {
  ps->p++; /* the quote */
  char *out = checked, *o = NULL;
  if (keep) {
    /* The unescaped text is never longer than the escaped one. */
    const char *q = ps->p;
    while (q < ps->end && *q != '"')
      q += *q == '\\' && q + 1 < ps->end ? 2 : 1;
    out = o = malloc((size_t)(q - ps->p) + 1);
    if (!out) {
      parse_error(ps, "out of memory");
      return NULL;
    }
  }
#define PUT(ch) (o ? (void)(*o++ = (char)(ch)) : (void)0)
  for (;;) {
    if (ps->p >= ps->end) {
      parse_error(ps, "unterminated string");
      break;
    }
    unsigned char c = (unsigned char)*ps->p++;
    if (c == '"') {
      PUT('\0');
      return out;
    }
    if (c < 0x20) {
      ps->p--;
      parse_error(ps, "control character in a string");
      break;
    }
    if (c != '\\') {
      PUT(c);
      continue;
    }
    if (ps->p >= ps->end) {
      parse_error(ps, "unterminated string");
      break;
    }
    char e = *ps->p++;
    const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
    const char *k = strchr(from, e);
    if (e && k) {
      PUT(to[k - from]);
      continue;
    }
    unsigned u;
    if (e != 'u' || !hex4(ps, &u)) {
      parse_error(ps, "bad escape in a string");
      break;
    }
    if (u >= 0xd800 && u < 0xdc00) {
      unsigned lo;
      if (!literal(ps, "\\u") || !hex4(ps, &lo) || lo < 0xdc00 ||
          lo >= 0xe000) {
        parse_error(ps, "unpaired surrogate in a string");
        break;
      }
      u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
    }
    /* UTF-8; the escaped form took at least as many bytes. */
    if (u < 0x80) {
      PUT(u);
    } else if (u < 0x800) {
      PUT(0xc0 | u >> 6);
      PUT(0x80 | (u & 0x3f));
    } else if (u < 0x10000) {
      PUT(0xe0 | u >> 12);
      PUT(0x80 | ((u >> 6) & 0x3f));
      PUT(0x80 | (u & 0x3f));
    } else {
      PUT(0xf0 | u >> 18);
      PUT(0x80 | ((u >> 12) & 0x3f));
      PUT(0x80 | ((u >> 6) & 0x3f));
      PUT(0x80 | (u & 0x3f));
    }
  }
#undef PUT
  if (keep) free(out);
  return NULL;
}

static void number(struct json_parser *ps, struct json_value *v) {
  const char *start = ps->p;
  if (ps->p < ps->end && *ps->p == '-') ps->p++;
  const char *digits = ps->p;
  while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
  size_t nd = (size_t)(ps->p - digits);
  if (nd == 0 || (nd > 1 && *digits == '0')) {
    parse_error(ps, "bad number");
    return;
  }
  int whole = 1;
  if (ps->p < ps->end && *ps->p == '.') {
    whole = 0;
    ps->p++;
    const char *f = ps->p;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    if (ps->p == f) {
      parse_error(ps, "bad number");
      return;
    }
  }
  if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
    whole = 0;
    ps->p++;
    if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-')) ps->p++;
    const char *x = ps->p;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    if (ps->p == x) {
      parse_error(ps, "bad number");
      return;
    }
  }
  char buf[64];
  size_t n = (size_t)(ps->p - start);
  if (n >= sizeof buf) n = sizeof buf - 1; /* a double needs no more */
  memcpy(buf, start, n);
  buf[n] = '\0';
  v->type = JSON_NUMBER;
  v->num = strtod(buf, NULL);
  if (whole && *start != '-' && nd <= 20) {
    uint64_t u = 0;
    int over = 0;
    for (const char *d = digits; d < ps->p; d++) {
      unsigned k = (unsigned)(*d - '0');
      if (u > (UINT64_MAX - k) / 10) over = 1;
      u = u * 10 + k;
    }
    if (!over) {
      v->u64 = u;
      v->is_u64 = 1;
    }
  }
}

static void value(struct json_parser *ps, struct json_value *v, int depth,
                  int keep);

/* An array or object, at its opening bracket, into `v`; with `keep` 0
 * only checked, allocating nothing. */
static void container(struct json_parser *ps, struct json_value *v, int depth,
                      int object, int keep) {
  char close = object ? '}' : ']';
  v->type = object ? JSON_OBJECT : JSON_ARRAY;
  ps->p++;
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == close) {
    ps->p++;
    return;
  }
  size_t cap = 0;
  struct json_value scratch;
  for (;;) {
    if (keep && v->n == cap) {
      cap = cap ? 2 * cap : 8;
      struct json_value *nv = realloc(v->v, cap * sizeof *nv);
      if (nv) v->v = nv;
      char **nk = object ? realloc(v->key, cap * sizeof *nk) : NULL;
      if (nk) v->key = nk;
      if (!nv || (object && !nk)) {
        parse_error(ps, "out of memory");
        return;
      }
    }
    struct json_value *e = keep ? &v->v[v->n] : &scratch;
    memset(e, 0, sizeof *e);
    skip_ws(ps);
    if (object) {
      if (ps->p >= ps->end || *ps->p != '"') {
        parse_error(ps, "expected a key (a string)");
        return;
      }
      char *k = string(ps, keep);
      if (!k) return;
      if (keep) {
        v->key[v->n] = k;
        v->n++; /* owned from here on, freed with the container */
      }
      skip_ws(ps);
      if (ps->p >= ps->end || *ps->p != ':') {
        parse_error(ps, "expected ':'");
        return;
      }
      ps->p++;
      value(ps, e, depth + 1, keep);
    } else {
      if (keep) v->n++;
      value(ps, e, depth + 1, keep);
    }
    if (ps->failed) return;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ps->p++;
      continue;
    }
    if (ps->p < ps->end && *ps->p == close) {
      ps->p++;
      return;
    }
    parse_error(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
    return;
  }
}

/* A value into `v`; with `keep` 0 only checked (a scalar is still read
 * into `v`, a string or container is not kept). */
static void value(struct json_parser *ps, struct json_value *v, int depth,
                  int keep) {
  memset(v, 0, sizeof *v);
  if (depth > JSON_DEPTH_MAX) {
    parse_error(ps, "nested too deep");
    return;
  }
  skip_ws(ps);
  if (ps->p >= ps->end) {
    parse_error(ps, "unexpected end of the text");
    return;
  }
  char c = *ps->p;
  if (c == '{' || c == '[') {
    container(ps, v, depth, c == '{', keep);
  } else if (c == '"') {
    char *str = string(ps, keep);
    if (str) v->type = JSON_STRING;
    if (keep) v->str = str;
  } else if (c == '-' || (c >= '0' && c <= '9')) {
    number(ps, v);
  } else if (literal(ps, "true")) {
    v->type = JSON_TRUE;
  } else if (literal(ps, "false")) {
    v->type = JSON_FALSE;
  } else if (literal(ps, "null")) {
    v->type = JSON_NULL;
  } else {
    parse_error(ps, "expected a value");
  }
}

static void free_inner(struct json_value *v) {
  for (size_t i = 0; i < v->n; i++) {
    free_inner(&v->v[i]);
    if (v->key) free(v->key[i]);
  }
  free(v->v);
  free(v->key);
  free(v->str);
}

void json_free(struct json_value *v) {
  if (!v) return;
  free_inner(v);
  free(v);
}

struct json_value *json_parse(const char *text, size_t len, char *err,
                              size_t size) {
  struct json_parser ps = {text, text + len, text, err, size, 0};
  struct json_value *v = calloc(1, sizeof *v);
  if (!v) {
    snprintf(err, size, "out of memory");
    return NULL;
  }
  value(&ps, v, 0, 1);
  if (!ps.failed) {
    skip_ws(&ps);
    if (ps.p < ps.end) parse_error(&ps, "text after the end of the value");
  }
  if (ps.failed) {
    json_free(v);
    return NULL;
  }
  return v;
}

/* ------------------------------------------------------------------ */
/* The reader: one value at a time.                                     */

static struct json_parser *rp(struct json_reader *r) { return &r->ps; }

void json_reader_init(struct json_reader *r, const char *text, size_t len,
                      char *err, size_t size) {
  memset(r, 0, sizeof *r);
  struct json_parser ps = {text, text + len, text, err, size, 0};
  r->ps = ps;
  if (size) err[0] = '\0';
}

int json_reader_failed(struct json_reader *r) { return rp(r)->failed; }

int json_reader_peek(struct json_reader *r) {
  struct json_parser *ps = rp(r);
  if (ps->failed) return 0;
  skip_ws(ps);
  return ps->p < ps->end ? (unsigned char)*ps->p : 0;
}

int json_reader_enter(struct json_reader *r) {
  struct json_parser *ps = rp(r);
  int c = json_reader_peek(r);
  if (c != '{' && c != '[') {
    parse_error(ps, "expected an object or an array");
    return 0;
  }
  if (r->depth >= JSON_DEPTH_MAX) {
    parse_error(ps, "nested too deep");
    return 0;
  }
  ps->p++;
  r->object[r->depth] = c == '{';
  r->first[r->depth] = 1;
  r->depth++;
  return 1;
}

int json_reader_next(struct json_reader *r, char *key, size_t size) {
  struct json_parser *ps = rp(r);
  if (ps->failed || r->depth == 0) return 0;
  int d = r->depth - 1, object = r->object[d];
  char close = object ? '}' : ']';
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == close) {
    ps->p++;
    r->depth--;
    return 0;
  }
  if (!r->first[d]) {
    if (ps->p >= ps->end || *ps->p != ',') {
      parse_error(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
      return 0;
    }
    ps->p++;
    skip_ws(ps);
  }
  r->first[d] = 0;
  if (!object) return 1;
  if (ps->p >= ps->end || *ps->p != '"') {
    parse_error(ps, "expected a key (a string)");
    return 0;
  }
  char *k = string(ps, 1);
  if (!k) return 0;
  if (size) snprintf(key, size, "%s", k);
  free(k);
  skip_ws(ps);
  if (ps->p >= ps->end || *ps->p != ':') {
    parse_error(ps, "expected ':'");
    return 0;
  }
  ps->p++;
  return 1;
}

struct json_value *json_reader_value(struct json_reader *r) {
  struct json_parser *ps = rp(r);
  if (ps->failed) return NULL;
  struct json_value *v = calloc(1, sizeof *v);
  if (!v) {
    parse_error(ps, "out of memory");
    return NULL;
  }
  value(ps, v, r->depth, 1);
  if (ps->failed) {
    json_free(v);
    return NULL;
  }
  return v;
}

int json_reader_scalar(struct json_reader *r, struct json_value *v) {
  int c = json_reader_peek(r);
  if (c == '{' || c == '[' || c == '"') {
    memset(v, 0, sizeof *v);
    parse_error(rp(r), "expected a number, true, false or null");
    return 0;
  }
  value(rp(r), v, r->depth, 0);
  return !rp(r)->failed;
}

int json_reader_skip(struct json_reader *r) {
  struct json_value v;
  value(rp(r), &v, r->depth, 0);
  return !rp(r)->failed;
}

int json_reader_end(struct json_reader *r) {
  struct json_parser *ps = rp(r);
  if (ps->failed) return -1;
  skip_ws(ps);
  if (ps->p < ps->end) parse_error(ps, "text after the end of the value");
  return ps->failed ? -1 : 0;
}

void json_reader_error(struct json_reader *r, const char *what) {
  parse_error(rp(r), what);
}

const struct json_value *json_get(const struct json_value *obj,
                                  const char *key) {
  if (!obj || obj->type != JSON_OBJECT) return NULL;
  for (size_t i = 0; i < obj->n; i++)
    if (!strcmp(obj->key[i], key)) return &obj->v[i];
  return NULL;
}

int json_u64(const struct json_value *v, uint64_t *out) {
  if (!v || v->type != JSON_NUMBER || !v->is_u64) return 0;
  *out = v->u64;
  return 1;
}
