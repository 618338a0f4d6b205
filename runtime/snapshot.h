/* snapshot.h -- compact ring files: the flight recorder's output (internal).
 *
 * A compact file is a ring file of format version 1 (ring_format.h) that
 * holds a given set of events rather than a live process's rings: only
 * domains 0 .. the highest one given anything, each ring's events laid
 * out from its index 0 in the order given, every ring sized to the
 * smallest power of two that holds the fullest one, and the extension
 * block with the name tables, the writer's pid and its program name.  Any
 * reader of ring files reads it, OCaml 5's included; doc/FORMAT.md
 * ("Compact files") says what it holds.
 *
 * Use: er_snap_new(), then the events of each domain in order -- raw
 * (er_snap_event) or by reading a cursor through to the tail it finds
 * (er_snap_read_cursor) -- and the losses (er_snap_lost), the names and
 * the writer, then er_snap_write() into a descriptor.  Callers: the
 * public eventring_snapshot() (snapshot_api.c) and the `eventring` command's
 * snapshot and watch subcommands, which link the static library.
 */
#ifndef EVENTRING_SNAPSHOT_H
#define EVENTRING_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "eventring.h"

#if defined(__GNUC__) || defined(__clang__)
#define ER_SNAP_HIDDEN __attribute__((visibility("hidden")))
#else
#define ER_SNAP_HIDDEN
#endif

struct er_snap;

/* A snapshot with no event, the OCaml 5.3+ name tables built in, no pid
 * and no program name; NULL when out of memory. */
ER_SNAP_HIDDEN struct er_snap *er_snap_new(void);
ER_SNAP_HIDDEN void er_snap_free(struct er_snap *s);

/* The writer recorded in the extension block: `pid` (0: unknown) and
 * `program` (NULL or empty: none; cut to 63 bytes).  Returns 0 or
 * -ENOMEM. */
ER_SNAP_HIDDEN int er_snap_set_writer(struct er_snap *s, pid_t pid,
                                      const char *program);

/* Sets label `name` to `value` in the file's metadata (ER_EXT_FLAG_META),
 * over a label of that name that the source records.  Returns 0,
 * -EINVAL for a name that is not [a-zA-Z_][a-zA-Z0-9_]* or a value that
 * is empty or holds a control character, or -ENOSPC past 16 labels or
 * their bytes (ring_format.h). */
ER_SNAP_HIDDEN int er_snap_label(struct er_snap *s, const char *name,
                                 const char *value);

/* Appends one event of domain `domain` (0 .. 65535): `len` words, a
 * header word whose length field is `len`, the timestamp and the
 * payload, as the format lays them out.  Returns 0, EVENTRING_E_INVAL for
 * a domain out of range or a length that is not the header's (or is
 * under 2 or over 1023), or -ENOMEM. */
ER_SNAP_HIDDEN int er_snap_event(struct er_snap *s, int domain,
                                 const uint64_t *ev, unsigned len);

/* Counts `count` events of `domain` as lost: a reader of the file is told
 * of them before the domain's first event.  Returns 0,
 * EVENTRING_E_INVAL or -ENOMEM. */
ER_SNAP_HIDDEN int er_snap_lost(struct er_snap *s, int domain,
                                uint64_t count);

/* Counts `before` events of `domain` as overwritten before the copy
 * began: the events given are a window of the run, and a reader of the
 * file is told so (eventring_window_fn), not of a loss.  Returns 0,
 * EVENTRING_E_INVAL or -ENOMEM. */
ER_SNAP_HIDDEN int er_snap_window(struct er_snap *s, int domain,
                                  uint64_t before);

/* The name of user event `id`, for its name slot.  Returns 0,
 * EVENTRING_E_INVAL (id out of range) or -ENOMEM. */
ER_SNAP_HIDDEN int er_snap_user_name(struct er_snap *s, int id,
                                     const char *name);

/* Reads with `c` (one poll: each ring from where the cursor stands to the
 * tail the poll finds) and adds every event it delivers, re-encoded, with
 * the names of user events; what the cursor reports lost is added as
 * lost, so an event overwritten while it was copied is counted, never
 * kept torn, and what had been overwritten before the cursor first
 * looked is the window's start (er_snap_window).  Then takes the file's phase numbering and name tables from
 * the cursor.  Returns the number of events added, or a negative error
 * (the cursor's, or -ENOMEM); the events read before an error are kept. */
ER_SNAP_HIDDEN long er_snap_read_cursor(struct er_snap *s,
                                        eventring_cursor *c);

/* The cursor's phase numbering and name tables into `s` (the names of
 * user events are given one by one, with er_snap_user_name).  For a
 * caller that adds events itself from a cursor's file.  Returns 0 or
 * -ENOMEM. */
ER_SNAP_HIDDEN int er_snap_names_from_cursor(struct er_snap *s,
                                             eventring_cursor *c);
/* The same, with room in the name tables for the ids below `max_phase`
 * and `max_counter` (the events' ids, whose names may be unknown), and
 * the source's command line, slot holders, wall clock, OCaml version and
 * labels. */
ER_SNAP_HIDDEN int er_snap_source_from_cursor(struct er_snap *s,
                                              eventring_cursor *c,
                                              unsigned max_phase,
                                              unsigned max_counter);

/* Where an encoder (below) puts the events it re-encodes instead of a
 * snapshot: `event` gets each event's words as er_snap_event() would,
 * `user_name` the name of a user event before its event, `lost` each
 * loss, `window` the events of a ring overwritten before the encoder's
 * cursor first looked at it (NULL: they go to `lost`); each returns 0,
 * or a negative error that ends the poll. */
struct er_snap_sink {
  int (*event)(void *arg, int domain, const uint64_t *ev, unsigned len);
  int (*user_name)(void *arg, int id, const char *name);
  int (*lost)(void *arg, int domain, uint64_t count);
  void *arg;
  int (*window)(void *arg, int domain, uint64_t before);
};

/* The re-encoding of er_snap_read_cursor() for a caller that keeps the
 * events itself (the watch subcommand's windows): poll a cursor with
 * er_snap_encoder_callbacks(e) and er_snap_encoder_data(e), and every
 * event goes to `sink` (which must outlive the encoder) as it would go
 * into a snapshot.  er_snap_encoder_error() returns the sink's error
 * that ended the last poll early, or 0, and clears it.  NULL when out of
 * memory. */
struct er_snap_encoder;
ER_SNAP_HIDDEN struct er_snap_encoder *er_snap_encoder_new(
    const struct er_snap_sink *sink);
ER_SNAP_HIDDEN void er_snap_encoder_free(struct er_snap_encoder *e);
ER_SNAP_HIDDEN const eventring_callbacks *er_snap_encoder_callbacks(
    const struct er_snap_encoder *e);
ER_SNAP_HIDDEN void *er_snap_encoder_data(struct er_snap_encoder *e);
ER_SNAP_HIDDEN int er_snap_encoder_error(struct er_snap_encoder *e);

/* What a written file holds. */
struct er_snap_stats {
  uint64_t events;   /* events, every domain */
  uint64_t lost;     /* events lost while copied, every domain */
  uint64_t before;   /* events overwritten before the copy began */
  uint64_t from, to; /* the first and last events' timestamps (events) */
  unsigned domains;  /* domains with an event or a loss */
  unsigned max_domains; /* rings in the file */
  uint64_t bytes;    /* the file's size */
};

/* The size er_snap_write() would give the file now, or, with `words`
 * > 0, once `words` more words were added to the ring of `domain`: for a
 * writer that bounds its files' size.  Names and writer given later may
 * change it. */
ER_SNAP_HIDDEN uint64_t er_snap_bytes(const struct er_snap *s, int domain,
                                      unsigned words);

/* Writes the compact file into `fd`, from its current offset on, in one
 * pass (so a pipe will do); a regular file gets holes instead of runs of
 * zeros (the empty name slots), and is truncated to the file's size.
 * Fills *st when it is not NULL.  Returns 0 or a negated errno value:
 * -EFBIG, before anything is written, when a regular file would end
 * past the file size limit (RLIMIT_FSIZE: no SIGXFSZ is raised). */
ER_SNAP_HIDDEN int er_snap_write(struct er_snap *s, int fd,
                                 struct er_snap_stats *st);

/* `name` made safe as a part of a file name ('/', spaces and bytes that
 * are not printable ASCII become '_'; "unknown" when NULL or empty), in at
 * most size - 1 bytes: for er_snap_default_name() and the names of
 * `eventring watch`'s snapshots. */
ER_SNAP_HIDDEN void er_snap_file_part(const char *name, char *out,
                                      size_t size);

/* The name a snapshot gets when none is given, PROGRAM-PID-TIME.EXT, TIME
 * being `when` in UTC to the millisecond (20261124T031500.123Z) and
 * PROGRAM `program` made safe as a part of a file name ('/', spaces and
 * bytes that are not printable ASCII become '_'; "unknown" when NULL or
 * empty), into `buf`; with `seq` > 1, PROGRAM-PID-TIME-SEQ.EXT, the
 * name to try when the ones before it are taken.  One definition for
 * `eventring snapshot` and the OCaml package's
 * Runtime_events_snapshot.write_default, so that both name a process's
 * snapshots alike.  Returns 0, or -ENAMETOOLONG when it does not fit. */
ER_SNAP_HIDDEN int er_snap_default_name(char *buf, size_t size,
                                        const char *program, pid_t pid,
                                        const struct timespec *when, int seq,
                                        const char *ext);

#endif /* EVENTRING_SNAPSHOT_H */
