/* jsonread.h -- a small JSON reader, for `eventring diff`, which compares
 * saved `eventring stats --json` outputs.
 *
 * A document is parsed into a tree, or read one value at a time by a
 * json_reader (RFC 8259 either way: objects, arrays,
 * strings with every escape, numbers, true, false, null), nested at most
 * JSON_DEPTH_MAX deep.  A number keeps its text's exact value as an
 * unsigned 64-bit integer when it is one (nanosecond counts exceed a
 * double's 53 bits), and as a double in any case.  Strings are kept as
 * UTF-8 without their escapes; a \u0000 ends the string early (names
 * never contain one).
 */
#ifndef EVENTRING_TOOL_JSONREAD_H
#define EVENTRING_TOOL_JSONREAD_H

#include <stddef.h>
#include <stdint.h>

#define JSON_DEPTH_MAX 64

enum json_type { JSON_NULL, JSON_FALSE, JSON_TRUE, JSON_NUMBER, JSON_STRING,
                 JSON_ARRAY, JSON_OBJECT };

struct json_value {
  enum json_type type;
  double num;           /* JSON_NUMBER */
  uint64_t u64;         /* JSON_NUMBER, when is_u64 */
  int is_u64;           /* a whole number in 0 .. 2^64 - 1, written so */
  char *str;            /* JSON_STRING */
  struct json_value *v; /* JSON_ARRAY, JSON_OBJECT: the n elements */
  char **key;           /* JSON_OBJECT: their keys */
  size_t n;
};

/* Parses `len` bytes at `text`.  Returns the tree (free it with
 * json_free), or NULL with a message such as "line 3, column 7: expected
 * ',' or '}'" or "out of memory" in `err` (`size` bytes). */
struct json_value *json_parse(const char *text, size_t len, char *err,
                              size_t size);
void json_free(struct json_value *v);

/* Reading a document one value at a time, for one too large to hold as
 * a tree: the caller walks its structure (json_reader_enter, then
 * json_reader_next for each member or element) and reads each value as
 * a tree, as a scalar, or skips it; nothing is allocated but the trees
 * asked for.  After an error every call returns 0 (or NULL), and the
 * message is in `err`, as json_parse() writes it. */
struct json_parser { /* internal to jsonread.c */
  const char *s, *end, *p;
  char *err;
  size_t errsize;
  int failed;
};
struct json_reader {
  struct json_parser ps;
  int depth; /* containers entered */
  unsigned char object[JSON_DEPTH_MAX], first[JSON_DEPTH_MAX];
};

/* Reads the `len` bytes at `text`; errors go to `err` (`size` bytes). */
void json_reader_init(struct json_reader *r, const char *text, size_t len,
                      char *err, size_t size);
/* The first byte of the next value ('{', '[', '"', a digit...), 0 at the
 * end of the text or after an error. */
int json_reader_peek(struct json_reader *r);
/* Enters the object or array that comes next: 1, or 0 after an error. */
int json_reader_enter(struct json_reader *r);
/* In the innermost container entered: 1 when a member (its key copied
 * into `key`, `size` bytes, cut if longer) or an element follows, which
 * the caller then reads or skips; 0 at its end (left) or after an
 * error. */
int json_reader_next(struct json_reader *r, char *key, size_t size);
/* The next value as a tree (json_free), or NULL after an error. */
struct json_value *json_reader_value(struct json_reader *r);
/* The next value, which must be a number, true, false or null, into `v`
 * without allocating: 1, or 0 after an error. */
int json_reader_scalar(struct json_reader *r, struct json_value *v);
/* Skips the next value, checking it, allocating nothing: 1, or 0. */
int json_reader_skip(struct json_reader *r);
/* Nonzero after an error. */
int json_reader_failed(struct json_reader *r);
/* Records an error of the caller's at the reader's position (the first
 * error only). */
void json_reader_error(struct json_reader *r, const char *what);
/* After the document: 0 when only white space follows it, else -1 with
 * the message in `err` (also for an earlier error). */
int json_reader_end(struct json_reader *r);

/* The member `key` of object `obj`, or NULL (also when obj is not an
 * object). */
const struct json_value *json_get(const struct json_value *obj,
                                  const char *key);

/* The value as an unsigned 64-bit integer: 1 and *out, or 0 when it is
 * not one (absent, null, negative, fractional). */
int json_u64(const struct json_value *v, uint64_t *out);

#endif /* EVENTRING_TOOL_JSONREAD_H */
