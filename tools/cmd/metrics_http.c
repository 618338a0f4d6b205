/* metrics_http.c -- the HTTP side of `eventring metrics` (metrics.c):
 * the listening socket, libmicrohttpd's server, and what keeps scrapes
 * answered whatever other clients do.
 *
 * The HTTP protocol is entirely libmicrohttpd's, in its own thread; we
 * only open the listening socket ourselves, so that it is bound to
 * exactly the address given, port 0 works (the port chosen is printed)
 * and a bind error is reported precisely.  A scrape renders the page
 * with the caller's function (which takes its own lock), in the format
 * its Accept header prefers (accepts_openmetrics()).
 *
 * Limits.  One client address may hold PER_IP_LIMIT connections
 * (libmicrohttpd closes the next ones at once), all of them together
 * CONNECTION_LIMIT (bounded by the descriptors we have), and a
 * connection idle for CONNECTION_TIMEOUT seconds is closed.  That idle
 * timer restarts at every byte received, so a client sending its
 * headers one byte at a time would hold its connections for ever, and
 * PER_IP_LIMIT of them would lock every scrape from its address out.
 * So a request also has a deadline to complete its headers
 * (--header-timeout, counted from the connection's opening or from the
 * end of its previous request): a sweeper thread of ours shuts down the
 * socket of a connection past it, and libmicrohttpd, reading the end of
 * the stream, closes the connection.  The sweeper shuts down its own
 * duplicate of the socket's descriptor, made when the connection opened
 * and closed when libmicrohttpd says it closed, so it can never reach
 * another socket that reused the number.  The server waits with epoll
 * where there is one, which unlike select() takes descriptors above
 * 1023.
 */
#include "cmd/cmd.h"

#ifdef EVENTRING_HAVE_MICROHTTPD

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* HTTP connections: from one address, in all, and seconds of idleness
 * before one is closed (the header comment says why). */
#define PER_IP_LIMIT 16
#define CONNECTION_LIMIT 512
#define CONNECTION_TIMEOUT 5
/* The longest the sweeper sleeps with no deadline nearer. */
#define SWEEP_MAX_NS 1000000000ULL

/* A connection, from libmicrohttpd's opening to its closing. */
struct conn {
  struct conn *prev, *next;
  int fd;             /* our duplicate of its socket */
  uint64_t deadline;  /* CLOCK_MONOTONIC ns to complete the headers */
  int in_request;     /* headers complete, the request is answered */
  int cut;            /* shut down by the sweeper */
};

struct metrics_http {
  struct MHD_Daemon *daemon;
  metrics_render_fn render;
  void *render_arg;
  uint64_t header_ns;
  /* The connections and the sweeper's state, under `lock`. */
  pthread_mutex_t lock;
  pthread_cond_t wake; /* a new deadline, or stop */
  struct conn *conns;
  int stop;
  pthread_t sweeper;
  int sweeper_started;
};

static void http_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  char line[512];
  vsnprintf(line, sizeof line, fmt, ap);
  line[strcspn(line, "\n")] = '\0';
  tool_error("metrics: %s", line);
}

/* ------------------------------------------------------------------ */
/* Deadlines.                                                          */

/* libmicrohttpd's thread: a connection opened or closed. */
static void on_connection(void *cls, struct MHD_Connection *c,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
  struct metrics_http *h = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct conn *k = calloc(1, sizeof *k);
    int fd = info && k ? fcntl(info->connect_fd, F_DUPFD_CLOEXEC, 3) : -1;
    if (fd < 0) {
      /* No way to hold it to a deadline (no memory or no descriptor
       * left): it goes at once, in this thread, where its descriptor is
       * certainly still its own. */
      free(k);
      if (info) shutdown(info->connect_fd, SHUT_RDWR);
      *socket_context = NULL;
      return;
    }
    k->fd = fd;
    k->deadline = tool_now_ns() + h->header_ns;
    pthread_mutex_lock(&h->lock);
    k->next = h->conns;
    if (h->conns) h->conns->prev = k;
    h->conns = k;
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->lock);
    *socket_context = k;
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    struct conn *k = *socket_context;
    if (!k) return;
    pthread_mutex_lock(&h->lock);
    if (k->prev) k->prev->next = k->next;
    else h->conns = k->next;
    if (k->next) k->next->prev = k->prev;
    pthread_mutex_unlock(&h->lock);
    close(k->fd);
    free(k);
    *socket_context = NULL;
  }
}

static struct conn *conn_of(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *info =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info ? info->socket_context : NULL;
}

/* libmicrohttpd's thread: a request was answered (or failed); the next
 * one on the connection has its own deadline. */
static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode code) {
  (void)state, (void)code;
  struct metrics_http *h = cls;
  struct conn *k = conn_of(c);
  if (!k) return;
  pthread_mutex_lock(&h->lock);
  k->in_request = 0;
  k->deadline = tool_now_ns() + h->header_ns;
  pthread_mutex_unlock(&h->lock);
}

/* The sweeper: shuts down every connection past its deadline, and
 * sleeps until the nearest one. */
static void *sweep(void *arg) {
  struct metrics_http *h = arg;
  pthread_mutex_lock(&h->lock);
  while (!h->stop) {
    uint64_t now = tool_now_ns(), next = now + SWEEP_MAX_NS;
    for (struct conn *k = h->conns; k; k = k->next) {
      if (k->in_request || k->cut) continue;
      if (now >= k->deadline) {
        shutdown(k->fd, SHUT_RDWR);
        k->cut = 1;
      } else if (k->deadline < next) {
        next = k->deadline;
      }
    }
    struct timespec ts = {(time_t)(next / 1000000000u),
                          (long)(next % 1000000000u)};
    pthread_cond_timedwait(&h->wake, &h->lock, &ts);
  }
  pthread_mutex_unlock(&h->lock);
  return NULL;
}

/* ------------------------------------------------------------------ */
/* Requests.                                                           */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status,
                             const char *type, char *body, size_t len,
                             enum MHD_ResponseMemoryMode mode) {
  struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
  if (!r) {
    if (mode == MHD_RESPMEM_MUST_FREE) free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  enum MHD_Result ret = MHD_queue_response(conn, status, r);
  MHD_destroy_response(r);
  return ret;
}

/* The weight (0 to 1000) that Accept header `a` gives to media type
 * `type` ("application/openmetrics-text"), or to "* / *" style ranges that
 * cover it when `wild`: the largest q of the ranges naming it. */
static int accept_q(const char *a, const char *type, const char *wild) {
  int best = 0;
  while (*a) {
    size_t n = strcspn(a, ","), tn = strcspn(a, ";,");
    const char *r = a + strspn(a, " \t");
    tn -= (size_t)(r - a);
    while (tn && (r[tn - 1] == ' ' || r[tn - 1] == '\t')) tn--;
    if ((tn == strlen(type) && !strncasecmp(r, type, tn)) ||
        (wild && tn == strlen(wild) && !strncmp(r, wild, tn))) {
      int q = 1000;
      const char *p = r;
      while ((p = memchr(p, ';', (size_t)(a + n - p))) != NULL) {
        p++;
        p += strspn(p, " \t");
        if ((p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
          double v = strtod(p + 2, NULL);
          q = v <= 0 ? 0 : v >= 1 ? 1000 : (int)(v * 1000 + 0.5);
        }
      }
      if (q > best) best = q;
    }
    a += n;
    if (*a) a++;
  }
  return best;
}

/* Whether a scraper whose Accept header is `a` (NULL: none) gets the
 * OpenMetrics text format: when it names it with a weight above 0 and
 * not below the weight of the text format 0.0.4, as Prometheus's own
 * header does (OpenMetrics 1.0.0 first, text/plain at q=0.5). */
static int accepts_openmetrics(const char *a) {
  if (!a) return 0;
  int om = accept_q(a, "application/openmetrics-text", NULL);
  int text = accept_q(a, "text/plain", "*/*");
  return om > 0 && om >= text;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version,
                                  const char *upload_data,
                                  size_t *upload_data_size, void **state) {
  (void)version, (void)upload_data, (void)state;
  struct metrics_http *h = cls;
  static const char text[] = "text/plain; charset=utf-8";
  struct conn *k = conn_of(conn);
  if (k) {
    /* The headers are complete: the deadline no longer applies. */
    pthread_mutex_lock(&h->lock);
    k->in_request = 1;
    pthread_mutex_unlock(&h->lock);
  }
  if (*upload_data_size) {
    /* A body we do not want: take it and answer at the end. */
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
    static char msg[] = "only GET and HEAD\n";
    return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, text, msg,
                 sizeof msg - 1, MHD_RESPMEM_PERSISTENT);
  }
  if (!strcmp(url, "/")) {
    static char msg[] = "eventring metrics: see /metrics\n";
    return reply(conn, MHD_HTTP_OK, text, msg, sizeof msg - 1,
                 MHD_RESPMEM_PERSISTENT);
  }
  if (strcmp(url, "/metrics") != 0) {
    static char msg[] = "not found: see /metrics\n";
    return reply(conn, MHD_HTTP_NOT_FOUND, text, msg, sizeof msg - 1,
                 MHD_RESPMEM_PERSISTENT);
  }
  char *buf = NULL;
  size_t len = 0;
  FILE *o = open_memstream(&buf, &len);
  if (!o) return MHD_NO;
  int om = accepts_openmetrics(
      MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept"));
  h->render(o, om, h->render_arg);
  if (fclose(o) != 0) {
    free(buf);
    return MHD_NO;
  }
  return reply(conn, MHD_HTTP_OK,
               om ? "application/openmetrics-text; version=1.0.0; "
                    "charset=utf-8"
                  : "text/plain; version=0.0.4; charset=utf-8",
               buf, len, MHD_RESPMEM_MUST_FREE);
}

/* ------------------------------------------------------------------ */
/* The listening socket and the server.                                 */

int metrics_http_listen(const char *arg, int *usage, char *shown,
                        size_t shown_size) {
  char host[256];
  const char *port;
  *usage = 1;
  if (arg[0] == '[') {
    const char *close = strchr(arg, ']');
    if (!close || close[1] != ':' || (size_t)(close - arg - 1) >= sizeof host)
      return -1;
    memcpy(host, arg + 1, (size_t)(close - arg - 1));
    host[close - arg - 1] = '\0';
    port = close + 2;
  } else {
    const char *colon = strrchr(arg, ':');
    if (!colon || (size_t)(colon - arg) >= sizeof host) return -1;
    memcpy(host, arg, (size_t)(colon - arg));
    host[colon - arg] = '\0';
    port = colon + 1;
  }
  if (!*host || !*port || strspn(port, "0123456789") != strlen(port) ||
      strlen(port) > 5 || atoi(port) > 65535)
    return -1;
  *usage = 0;
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  int g = getaddrinfo(host, port, &hints, &res);
  if (g != 0) {
    tool_error("metrics: --listen %s: %s", arg, gai_strerror(g));
    return -1;
  }
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int err = errno;
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (res->ai_family == AF_INET6)
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 64) < 0) {
      err = errno;
      close(fd);
      fd = -1;
    }
  }
  if (fd < 0) {
    tool_error("metrics: cannot listen on %s: %s", arg, strerror(err));
    freeaddrinfo(res);
    return -1;
  }
  /* The address really bound, with the port chosen for port 0. */
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char h[INET6_ADDRSTRLEN] = "?", p[16] = "?";
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
    getnameinfo((struct sockaddr *)&ss, sl, h, sizeof h, p, sizeof p,
                NI_NUMERICHOST | NI_NUMERICSERV);
  snprintf(shown, shown_size, res->ai_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
           h, p);
  freeaddrinfo(res);
  return fd;
}

struct metrics_http *metrics_http_start(int fd, double header_timeout_s,
                                        metrics_render_fn render, void *arg) {
  struct metrics_http *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->render = render;
  h->render_arg = arg;
  h->header_ns = (uint64_t)(header_timeout_s * 1e9);
  pthread_mutex_init(&h->lock, NULL);
  tool_cond_init_monotonic(&h->wake);
  /* The server's thread and the sweeper must leave SIGINT, SIGTERM and
   * SIGHUP to the reader, whose sleep they cut short; they inherit this
   * mask. */
  sigset_t old;
  tool_block_stop_signals(&old);
  /* A connection costs two descriptors (its socket and the sweeper's
   * duplicate): leave room for the ring files and the server's own, or
   * accept() fails and each failure is logged. */
  unsigned limit = CONNECTION_LIMIT;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    rlim_t room = rl.rlim_cur > 64 ? (rl.rlim_cur - 64) / 4 : 0;
    if (room < limit) limit = room > 8 ? (unsigned)room : 8;
  }
  h->sweeper_started = pthread_create(&h->sweeper, NULL, sweep, h) == 0;
  if (h->sweeper_started)
    h->daemon = MHD_start_daemon(
        MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
        on_request, h,
        /* First, so that it catches the messages about the others too. */
        MHD_OPTION_EXTERNAL_LOGGER, http_log, NULL,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
        MHD_OPTION_CONNECTION_LIMIT, limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)PER_IP_LIMIT,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_END);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (!h->daemon) {
    metrics_http_stop(h);
    return NULL;
  }
  return h;
}

void metrics_http_stop(struct metrics_http *h) {
  if (!h) return;
  /* The server first: its last notifications close our duplicates. */
  if (h->daemon) MHD_stop_daemon(h->daemon);
  if (h->sweeper_started) {
    pthread_mutex_lock(&h->lock);
    h->stop = 1;
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->sweeper, NULL);
  }
  pthread_cond_destroy(&h->wake);
  pthread_mutex_destroy(&h->lock);
  free(h);
}

#endif /* EVENTRING_HAVE_MICROHTTPD */
