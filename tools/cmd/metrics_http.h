/* metrics_http.h -- the HTTP side of `eventring metrics` (metrics_http.c),
 * for metrics.c. */
#ifndef EVENTRING_METRICS_HTTP_H
#define EVENTRING_METRICS_HTTP_H

#include <stddef.h>
#include <stdio.h>

/* Writes the page of a scrape to `o`; called in the server's thread, so
 * it takes whatever lock the data it reads needs. */
typedef void (*metrics_render_fn)(FILE *o, void *arg);

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

#endif /* EVENTRING_METRICS_HTTP_H */
