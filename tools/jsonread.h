/* jsonread.h -- a small JSON reader, for `eventring diff`, which compares
 * saved `eventring stats --json` outputs.
 *
 * The whole document is parsed into a tree (RFC 8259: objects, arrays,
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

/* The member `key` of object `obj`, or NULL (also when obj is not an
 * object). */
const struct json_value *json_get(const struct json_value *obj,
                                  const char *key);

/* The value as an unsigned 64-bit integer: 1 and *out, or 0 when it is
 * not one (absent, null, negative, fractional). */
int json_u64(const struct json_value *v, uint64_t *out);

#endif /* EVENTRING_TOOL_JSONREAD_H */
