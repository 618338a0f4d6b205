/* Tests the JSON reader of `eventring diff` (tools/analysis/jsonread.c): every kind of value, escapes and surrogate pairs to UTF-8, 64-bit counts kept exact, errors with their line and column (truncated text, bad numbers, trailing text, nesting too deep), and the same document walked one value at a time (json_reader), skipped values checked as strictly. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "testlib.h"

/* A unit test of the tool's own object: compiled in. */
#include "../tools/analysis/jsonread.c"

/* json_reader_skip() over the whole of `text`: json_reader_end()'s
 * result, the message in `err`. */
static int skip_all(const char *text, char *err, size_t size) {
  struct json_reader r;
  json_reader_init(&r, text, strlen(text), err, size);
  json_reader_skip(&r);
  return json_reader_end(&r);
}

static struct json_value *parse_ok(const char *text) {
  char err[128] = "";
  struct json_value *v = json_parse(text, strlen(text), err, sizeof err);
  ck_assert_msg(v != NULL, "%s: %s", text, err);
  ck_assert_msg(skip_all(text, err, sizeof err) == 0, "skip %s: %s", text,
                err);
  return v;
}

static void parse_fails(const char *text, const char *want) {
  char err[128] = "", skipped[128] = "";
  struct json_value *v = json_parse(text, strlen(text), err, sizeof err);
  ck_assert_msg(v == NULL, "%s parsed", text);
  ck_assert_msg(strstr(err, want), "%s: error '%s', expected '%s'", text, err,
                want);
  /* Skipping finds the same error at the same place. */
  ck_assert_int_eq(skip_all(text, skipped, sizeof skipped), -1);
  ck_assert_str_eq(skipped, err);
}

START_TEST(test_values) {
  struct json_value *v = parse_ok(
      " {\"a\": [1, -2.5e1, true, false, null, \"x\"], \"b\": {}, \"c\": []}\n");
  ck_assert_int_eq(v->type, JSON_OBJECT);
  ck_assert_uint_eq(v->n, 3);
  const struct json_value *a = json_get(v, "a");
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(a->type, JSON_ARRAY);
  ck_assert_uint_eq(a->n, 6);
  uint64_t u;
  ck_assert(json_u64(&a->v[0], &u) && u == 1);
  ck_assert(a->v[1].type == JSON_NUMBER && a->v[1].num == -25);
  ck_assert(!json_u64(&a->v[1], &u));
  ck_assert_int_eq(a->v[2].type, JSON_TRUE);
  ck_assert_int_eq(a->v[3].type, JSON_FALSE);
  ck_assert_int_eq(a->v[4].type, JSON_NULL);
  ck_assert_str_eq(a->v[5].str, "x");
  ck_assert_int_eq(json_get(v, "b")->type, JSON_OBJECT);
  ck_assert_uint_eq(json_get(v, "c")->n, 0);
  ck_assert_ptr_null(json_get(v, "d"));
  ck_assert_ptr_null(json_get(a, "a")); /* not an object */
  json_free(v);
}
END_TEST

/* Counts above 2^53, which a double would round, stay exact up to
 * 2^64 - 1; beyond it, or fractional, or negative, they are no count. */
START_TEST(test_u64) {
  struct json_value *v = parse_ok(
      "[9007199254740993, 18446744073709551615, 18446744073709551616, 1.0, "
      "-1, 0]");
  uint64_t u;
  ck_assert(json_u64(&v->v[0], &u));
  ck_assert_uint_eq(u, UINT64_C(9007199254740993));
  ck_assert(json_u64(&v->v[1], &u));
  ck_assert_uint_eq(u, UINT64_MAX);
  ck_assert(!json_u64(&v->v[2], &u));
  ck_assert(!json_u64(&v->v[3], &u));
  ck_assert(!json_u64(&v->v[4], &u));
  ck_assert(json_u64(&v->v[5], &u) && u == 0);
  json_free(v);
}
END_TEST

/* \" \\ \/ \b \f \n \r \t, \u00XX as stats writes bytes above 127, and
 * a surrogate pair (U+1F600) to its four UTF-8 bytes. */
START_TEST(test_strings) {
  struct json_value *v = parse_ok(
      "[\"q\\\"b\\\\s\\/\\b\\f\\n\\r\\t\", \"\\u00e9\\u0041\", "
      "\"\\ud83d\\ude00\", \"\\u20ac\"]");
  ck_assert_str_eq(v->v[0].str, "q\"b\\s/\b\f\n\r\t");
  ck_assert_str_eq(v->v[1].str, "\xc3\xa9" "A");
  ck_assert_str_eq(v->v[2].str, "\xf0\x9f\x98\x80");
  ck_assert_str_eq(v->v[3].str, "\xe2\x82\xac");
  json_free(v);
}
END_TEST

START_TEST(test_errors) {
  parse_fails("", "line 1, column 1: unexpected end");
  parse_fails("{\"phases\": [\n", "line 2, column 1: unexpected end");
  parse_fails("{\"a\" 1}", "expected ':'");
  parse_fails("{\"a\": 1 \"b\": 2}", "expected ',' or '}'");
  parse_fails("[1 2]", "expected ',' or ']'");
  parse_fails("{1: 2}", "expected a key");
  parse_fails("[01]", "bad number");
  parse_fails("[1.]", "bad number");
  parse_fails("[-]", "bad number");
  parse_fails("[1e]", "bad number");
  parse_fails("[\"abc]", "unterminated string");
  parse_fails("[\"a\tb\"]", "control character");
  parse_fails("[\"\\x\"]", "bad escape");
  parse_fails("[\"\\ud83d\"]", "unpaired surrogate");
  parse_fails("{} {}", "line 1, column 4: text after the end");
  parse_fails("[tru]", "expected a value");
  char deep[2 * JSON_DEPTH_MAX + 8];
  size_t n = 0;
  for (int i = 0; i <= JSON_DEPTH_MAX + 1; i++) deep[n++] = '[';
  deep[n] = '\0';
  parse_fails(deep, "nested too deep");
  /* JSON_DEPTH_MAX levels are fine. */
  n = 0;
  for (int i = 0; i < JSON_DEPTH_MAX; i++) deep[n++] = '[';
  for (int i = 0; i < JSON_DEPTH_MAX; i++) deep[n++] = ']';
  deep[n] = '\0';
  json_free(parse_ok(deep));
}
END_TEST

/* A document walked one value at a time: members, elements, a value as a
 * tree, scalars, skipped values; and errors inside the walk. */
START_TEST(test_reader) {
  const char *text =
      "{\"skip\": {\"x\": [1, \"s\", {}]}, \"list\": [[7, 18446744073709551615],"
      " {\"k\": \"v\"}], \"n\": null, \"a_key_longer_than_eight\": 1}";
  char err[128], key[8];
  struct json_reader r;
  json_reader_init(&r, text, strlen(text), err, sizeof err);
  ck_assert_int_eq(json_reader_peek(&r), '{');
  ck_assert_int_eq(json_reader_enter(&r), 1);
  ck_assert_int_eq(json_reader_next(&r, key, sizeof key), 1);
  ck_assert_str_eq(key, "skip");
  ck_assert_int_eq(json_reader_skip(&r), 1);
  ck_assert_int_eq(json_reader_next(&r, key, sizeof key), 1);
  ck_assert_str_eq(key, "list");
  ck_assert_int_eq(json_reader_enter(&r), 1);
  ck_assert_int_eq(json_reader_next(&r, NULL, 0), 1);
  ck_assert_int_eq(json_reader_enter(&r), 1);
  struct json_value v;
  ck_assert_int_eq(json_reader_next(&r, NULL, 0), 1);
  ck_assert_int_eq(json_reader_scalar(&r, &v), 1);
  ck_assert(v.type == JSON_NUMBER && v.is_u64 && v.u64 == 7);
  ck_assert_int_eq(json_reader_next(&r, NULL, 0), 1);
  ck_assert_int_eq(json_reader_scalar(&r, &v), 1);
  ck_assert(v.is_u64 && v.u64 == UINT64_MAX);
  ck_assert_int_eq(json_reader_next(&r, NULL, 0), 0); /* ] */
  ck_assert_int_eq(json_reader_next(&r, NULL, 0), 1);
  struct json_value *t = json_reader_value(&r);
  ck_assert_ptr_nonnull(t);
  ck_assert_str_eq(json_get(t, "k")->str, "v");
  json_free(t);
  ck_assert_int_eq(json_reader_next(&r, NULL, 0), 0); /* ] */
  ck_assert_int_eq(json_reader_next(&r, key, sizeof key), 1);
  ck_assert_str_eq(key, "n");
  ck_assert_int_eq(json_reader_scalar(&r, &v), 1);
  ck_assert_int_eq(v.type, JSON_NULL);
  ck_assert_int_eq(json_reader_next(&r, key, sizeof key), 1);
  ck_assert_str_eq(key, "a_key_l"); /* cut to the buffer */
  ck_assert_int_eq(json_reader_skip(&r), 1);
  ck_assert_int_eq(json_reader_next(&r, key, sizeof key), 0); /* } */
  ck_assert_int_eq(json_reader_end(&r), 0);

  /* A string where a scalar is expected; a missing comma; trailing
   * text: each an error that stops the walk. */
  json_reader_init(&r, "[\"s\"]", 5, err, sizeof err);
  json_reader_enter(&r);
  ck_assert_int_eq(json_reader_next(&r, NULL, 0), 1);
  ck_assert_int_eq(json_reader_scalar(&r, &v), 0);
  ck_assert_int_eq(json_reader_next(&r, NULL, 0), 0);
  ck_assert_int_eq(json_reader_end(&r), -1);
  ck_assert_msg(strstr(err, "column 2: expected a number"), "%s", err);
  json_reader_init(&r, "[1 2]", 5, err, sizeof err);
  json_reader_enter(&r);
  ck_assert_int_eq(json_reader_next(&r, NULL, 0), 1);
  ck_assert_int_eq(json_reader_skip(&r), 1);
  ck_assert_int_eq(json_reader_next(&r, NULL, 0), 0);
  ck_assert_int_eq(json_reader_failed(&r), 1);
  ck_assert_msg(strstr(err, "column 4: expected ',' or ']'"), "%s", err);
  json_reader_init(&r, "{} x", 4, err, sizeof err);
  ck_assert_int_eq(json_reader_enter(&r), 1);
  ck_assert_int_eq(json_reader_next(&r, key, sizeof key), 0);
  ck_assert_int_eq(json_reader_failed(&r), 0);
  ck_assert_int_eq(json_reader_end(&r), -1);
  ck_assert_msg(strstr(err, "text after the end"), "%s", err);
}
END_TEST

static TCase *tc_jsonread(void) {
  TCase *tc = er_tcase("jsonread");
  tcase_add_test(tc, test_values);
  tcase_add_test(tc, test_u64);
  tcase_add_test(tc, test_strings);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_reader);
  return tc;
}

ER_TEST_MAIN("jsonread", tc_jsonread)
