/* cmd.h -- the top layer of the `eventring` command (cmd/): one file per
 * subcommand, each reading through input/ and writing through render/.
 *   dump.c     `eventring dump`, every event as a line;
 *   ctf.c      `eventring ctf`, a CTF trace for babeltrace2;
 *   trace.c    `eventring trace`, a trace for Perfetto (render/);
 *   latency.c, stats.c  `eventring latency` and `eventring stats`;
 *   diff.c     `eventring diff`, two runs compared;
 *   report.c   `eventring report`, an HTML page of charts;
 *   metrics.c  `eventring metrics`, a Prometheus exporter that
 *              metrics_http.c serves, metrics_dir.c feeds with the
 *              files of a directory and metrics_push.c pushes,
 *              metrics_exemplars.c adds watch's snapshots to;
 *   snapshot.c `eventring snapshot`, what the rings hold now (it runs
 *              ctf.c's or trace.c's subcommand on the file it writes);
 *   watch.c    `eventring watch`, the windows around triggers;
 *   record.c   `eventring record`, every event in rotated files;
 *   control.c  `eventring pause` and `eventring resume`.
 * A new subcommand reuses the layers below and adds a file here.
 */
#ifndef EVENTRING_TOOLS_CMD_H
#define EVENTRING_TOOLS_CMD_H

#include "render/render.h"

/* ================================================================== */
/* Subcommands (argv[0] is the name; each returns its exit status)      */
/* ================================================================== */

int tool_dump(int argc, char **argv);
int tool_ctf(int argc, char **argv);
int tool_trace(int argc, char **argv);
int tool_latency(int argc, char **argv);
int tool_stats(int argc, char **argv);
int tool_diff(int argc, char **argv);
int tool_report(int argc, char **argv);
int tool_metrics(int argc, char **argv);
int tool_snapshot(int argc, char **argv);
int tool_watch(int argc, char **argv);
int tool_record(int argc, char **argv);
int tool_pause(int argc, char **argv);
int tool_resume(int argc, char **argv);

/* ================================================================== */
/* metrics_http.c                                                       */
/* ================================================================== */

/* The HTTP side of `eventring metrics` (metrics_http.c),
 * for metrics.c. */

#include <stddef.h>
#include <stdio.h>

/* Writes the page of a scrape to `o`, in the OpenMetrics text format
 * when `openmetrics` (the scraper asked for it), else in the text format
 * 0.0.4; called in the server's thread, so it takes whatever lock the
 * data it reads needs. */
typedef void (*metrics_render_fn)(FILE *o, int openmetrics, void *arg);

struct metrics_http;

/* The default of --header-timeout, in seconds. */
#define METRICS_HEADER_TIMEOUT 10.0

/* Parses HOST:PORT or [HOST]:PORT and opens a listening socket bound to
 * exactly that address; the address bound (with the port chosen for
 * port 0) goes to `shown`.  Returns the socket, or -1 after printing one
 * line (*usage set, and nothing printed, when the argument itself is
 * wrong). */
int metrics_http_listen(const char *arg, int *usage, char *shown,
                        size_t shown_size);

/* Starts serving /metrics on listening socket `fd` (which becomes the
 * server's), rendered by `render`, with `header_timeout_s` seconds for a
 * request to complete its headers.  Returns the server, or NULL (then
 * `fd` is still the caller's). */
struct metrics_http *metrics_http_start(int fd, double header_timeout_s,
                                        metrics_render_fn render, void *arg);

/* Stops the server and frees it; NULL is ignored. */
void metrics_http_stop(struct metrics_http *h);

/* ================================================================== */
/* metrics_dir.c                                                        */
/* ================================================================== */

#include <pthread.h>

/* The exporter's series and the lock that the reader, the server and
 * the pusher share (metrics.c's). */
struct metrics_state {
  pthread_mutex_t lock;
  struct metrics_set set; /* set.targets under lock */
  int numbering;          /* EVENTRING_NUMBERING_* of the cursors */
  /* --exemplars FILE, or NULL: polled under lock before each listing
   * (a scrape's, a push's). */
  struct metrics_exemplars *exemplars;
};

/* Follows every ring file of `dir` into `m` until a signal comes (each
 * event through `cb`, whose data is the file's target); a file's series
 * stay `keep_ns` after it is gone.  Returns 128 + the signal, or the exit
 * status of a directory that cannot be read. */
int metrics_follow_dir(struct metrics_state *m, const char *dir,
                       uint64_t keep_ns, const eventring_callbacks *cb);

/* ================================================================== */
/* metrics_exemplars.c                                                  */
/* ================================================================== */

/* The snapshots of `eventring watch --log FILE --log-format json` as
 * exemplars of the histograms (metrics --exemplars FILE). */
struct metrics_exemplars;

/* Follows the log `path` (which need not exist yet); NULL when out of
 * memory. */
struct metrics_exemplars *metrics_exemplars_new(const char *path);
/* Says how many lines were skipped, if any, and frees `x`; NULL is
 * ignored. */
void metrics_exemplars_free(struct metrics_exemplars *x);
/* Reads what the log gained since the last call, without waiting, and
 * attaches its snapshots to the histograms of `set`, whose lock the
 * caller holds. */
void metrics_exemplars_poll(struct metrics_exemplars *x,
                            struct metrics_set *set);

/* ================================================================== */
/* metrics_push.c (built with EVENTRING_HAVE_REMOTE_WRITE)              */
/* ================================================================== */

struct metrics_push;

/* Starts pushing the series of `m` to `u` (parsed from `url`) every
 * `interval_ns`, each request within `timeout_ns`, at most
 * `queue_samples` samples waiting; the pusher's counts are listed with
 * the series from then on.  Returns the pusher, or NULL when no thread
 * could be started. */
struct metrics_push *metrics_push_start(struct metrics_state *m,
                                        const char *url,
                                        const struct tool_http_url *u,
                                        uint64_t interval_ns,
                                        uint64_t timeout_ns,
                                        uint64_t queue_samples);

/* Queues a last collection, sends the queue until it is empty or a
 * request fails, and frees the pusher; NULL is ignored.  Needs the
 * targets of `m` still there. */
void metrics_push_stop(struct metrics_push *p);

#endif /* EVENTRING_TOOLS_CMD_H */
