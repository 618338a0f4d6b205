/* labels.c -- the `--label NAME=VALUE` pairs of watch (its JSON log
 * lines) and metrics (every series): one syntax, one set of messages.
 * A NAME is what Prometheus accepts as a label name, [a-zA-Z_][a-zA-Z0-9_]*
 * not starting with __ (its own), so that the labels of a log line and
 * of a series may be the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

static int name_ok(const char *s, size_t n) {
  if (!n || (n >= 2 && s[0] == '_' && s[1] == '_')) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i && c >= '0' && c <= '9')) return 0;
  }
  return 1;
}

int tool_labels_add(struct tool_labels *l, const char *arg,
                    const char *const *reserved, char *why, size_t size) {
  const char *eq = strchr(arg, '=');
  size_t n = eq ? (size_t)(eq - arg) : 0;
  if (!eq || !name_ok(arg, n)) {
    snprintf(why, size, "'%s' is not NAME=VALUE (NAME: a letter or _, then "
             "letters, digits or _, not starting with __)", arg);
    return -1;
  }
  for (int i = 0; reserved && reserved[i]; i++)
    if (strlen(reserved[i]) == n && !strncmp(reserved[i], arg, n)) {
      snprintf(why, size, "'%.*s' is a label of its own (the names taken "
               "are:", (int)n, arg);
      for (int k = 0; reserved[k]; k++) {
        size_t len = strlen(why);
        snprintf(why + len, size - len, " %s", reserved[k]);
      }
      size_t len = strlen(why);
      snprintf(why + len, size - len, ")");
      return -1;
    }
  for (int i = 0; i < l->n; i++)
    if (strlen(l->name[i]) == n && !strncmp(l->name[i], arg, n)) {
      snprintf(why, size, "'%.*s' given twice", (int)n, arg);
      return -1;
    }
  if (l->n == TOOL_MAX_LABELS) {
    snprintf(why, size, "too many labels (%d at most)", TOOL_MAX_LABELS);
    return -1;
  }
  char *name = strndup(arg, n), *value = strdup(eq + 1);
  if (!name || !value) {
    free(name);
    free(value);
    snprintf(why, size, "out of memory");
    return -1;
  }
  l->name[l->n] = name;
  l->value[l->n++] = value;
  return 0;
}

void tool_labels_free(struct tool_labels *l) {
  for (int i = 0; i < l->n; i++) {
    free(l->name[i]);
    free(l->value[i]);
  }
  l->n = 0;
}
