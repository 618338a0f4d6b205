/* jsonc.h -- json-c for the tests that read JSON, loaded with dlopen so
 * that no test needs a link flag: er_jc() is NULL when libjson-c.so.5 is
 * not installed (the test then skips, or checks less, and says so). */
#ifndef EVENTRING_TEST_JSONC_H
#define EVENTRING_TEST_JSONC_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

/* The functions of json-c the tests call, as json.h declares them (with
 * void * for its types). */
struct er_jc {
  void *(*tokener_new)(void);
  void (*tokener_free)(void *);
  void (*tokener_set_flags)(void *, int);
  void *(*tokener_parse_ex)(void *, const char *, int);
  int (*tokener_get_error)(void *);
  size_t (*tokener_get_parse_end)(void *);
  int (*object_put)(void *);
  int (*object_get_type)(void *);
  int (*object_object_get_ex)(void *, const char *, void **);
  const char *(*object_get_string)(void *);
  int64_t (*object_get_int64)(void *);
};

/* json-c's JSON_TOKENER_STRICT and its json_type values (json.h). */
#define ER_JC_STRICT 0x01
enum {
  ER_JC_DOUBLE = 2,
  ER_JC_INT = 3,
  ER_JC_OBJECT = 4,
  ER_JC_STRING = 6
};

static inline const struct er_jc *er_jc(void) {
  static struct er_jc jc;
  static int loaded = -1;
  if (loaded < 0) {
    static const char *const names[] = {
        "json_tokener_new",          "json_tokener_free",
        "json_tokener_set_flags",    "json_tokener_parse_ex",
        "json_tokener_get_error",    "json_tokener_get_parse_end",
        "json_object_put",           "json_object_get_type",
        "json_object_object_get_ex", "json_object_get_string",
        "json_object_get_int64"};
    void *h = dlopen("libjson-c.so.5", RTLD_NOW | RTLD_LOCAL);
    void **f = (void **)&jc;
    size_t n = sizeof names / sizeof names[0], i = 0;
    while (h && i < n && (f[i] = dlsym(h, names[i])) != NULL) i++;
    loaded = h && i == n;
  }
  return loaded ? &jc : NULL;
}

#endif
