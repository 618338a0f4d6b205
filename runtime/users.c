/* users.c -- the registry of user events (eventring_register()).
 *
 * A name is given an id once for the life of the process; the id is what
 * a user event's header carries, and the name is written into the ring
 * file's name slot of that id (now, or when a file is created later).
 * The table is append-only and changes under er_st.lock; er_user_count
 * is stored with release order after the entry is complete, so a probe
 * that loads it with acquire order (er_user_id_ok()) may use every id
 * below it without the lock.
 */
#include <string.h>

#include "internal.h"

struct user_event {
  char name[ER_NAME_SLOT_BYTES];
  int type;
};
static struct user_event users[EVENTRING_MAX_USER_EVENTS];
int er_user_count;
/* Open-addressing index of `users` by name: slot holds id + 1, 0 = empty. */
#define USER_INDEX_SIZE (2 * EVENTRING_MAX_USER_EVENTS)
static uint16_t user_index[USER_INDEX_SIZE];

static unsigned hash_name(const char *s) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h % USER_INDEX_SIZE;
}

int eventring_register(const char *name, int type) {
  if (!name) return EVENTRING_E_INVAL;
  size_t n = strnlen(name, EVENTRING_MAX_NAME + 1);
  if (n == 0 || n > EVENTRING_MAX_NAME) return EVENTRING_E_NAMETOOLONG;
  if (type != EVENTRING_TYPE_UNIT && type != EVENTRING_TYPE_INT &&
      type != EVENTRING_TYPE_SPAN && type != EVENTRING_TYPE_CUSTOM)
    return EVENTRING_E_INVAL;

  er_lock();
  int r;
  unsigned h = hash_name(name);
  while (user_index[h] && strcmp(users[user_index[h] - 1].name, name) != 0)
    h = (h + 1) % USER_INDEX_SIZE;
  if (user_index[h]) {
    int id = user_index[h] - 1;
    r = users[id].type == type ? id : EVENTRING_E_EXISTS;
  } else if (er_user_count == EVENTRING_MAX_USER_EVENTS) {
    r = EVENTRING_E_TOOMANY;
  } else {
    r = er_user_count;
    memcpy(users[r].name, name, n + 1);
    users[r].type = type;
    user_index[h] = (uint16_t)(r + 1);
    if (er_iload_rlx(&er_st.live)) er_file_write_name(r, name);
    er_istore_rel(&er_user_count, r + 1);
  }
  er_unlock();
  return r;
}

void er_users_write_names(void) {
  int n = er_iload_rlx(&er_user_count);
  for (int i = 0; i < n; i++) er_file_write_name(i, users[i].name);
}
