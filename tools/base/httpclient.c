/* httpclient.c -- a small HTTP/1.1 client for POST requests to http://
 * URLs (the remote write of `eventring metrics`): one connection per
 * request, closed after the response's status line, every step bounded
 * by one deadline.  No TLS, no redirects, no proxies: a receiver behind
 * https is reached through a local proxy.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base.h"

int tool_http_url_parse(const char *url, struct tool_http_url *u) {
  static const char scheme[] = "http://";
  memset(u, 0, sizeof *u);
  if (strncmp(url, scheme, sizeof scheme - 1) != 0) return -1;
  const char *h = url + sizeof scheme - 1;
  const char *slash = strchr(h, '/');
  size_t hl = slash ? (size_t)(slash - h) : strlen(h);
  const char *hend = h + hl, *port = NULL;
  if (*h == '[') {
    const char *close = memchr(h, ']', hl);
    if (!close) return -1;
    if (close + 1 < hend) {
      if (close[1] != ':') return -1;
      port = close + 2;
    }
    h++;
    hl = (size_t)(close - h);
  } else {
    const char *colon = memchr(h, ':', hl);
    if (colon) {
      port = colon + 1;
      hl = (size_t)(colon - h);
    }
  }
  if (!hl || hl >= sizeof u->host) return -1;
  memcpy(u->host, h, hl);
  if (port) {
    size_t pl = (size_t)(hend - port);
    if (!pl || pl >= sizeof u->port || strspn(port, "0123456789") < pl)
      return -1;
    memcpy(u->port, port, pl);
    if (atoi(u->port) < 1 || atoi(u->port) > 65535) return -1;
  } else {
    snprintf(u->port, sizeof u->port, "80");
  }
  const char *path = slash ? slash : "/";
  if (strlen(path) >= sizeof u->path || strpbrk(path, " \r\n")) return -1;
  snprintf(u->path, sizeof u->path, "%s", path);
  return 0;
}

/* Milliseconds left before `deadline` (tool_now_ns()), at least 0. */
static int ms_left(uint64_t deadline) {
  uint64_t now = tool_now_ns();
  return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

/* Waits for `events` on `fd` until `deadline`.  Returns 0, or -1 with
 * errno ETIMEDOUT. */
static int wait_fd(int fd, short events, uint64_t deadline) {
  for (;;) {
    struct pollfd p = {fd, events, 0};
    int left = ms_left(deadline);
    int r = left ? poll(&p, 1, left) : 0;
    if (r > 0) return 0;
    if (r == 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    if (errno != EINTR) return -1;
  }
}

/* A socket connected to `u`'s address, non-blocking, or -1 (errno). */
static int connect_to(const struct tool_http_url *u, uint64_t deadline) {
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  if (getaddrinfo(u->host, u->port, &hints, &res) != 0) {
    errno = EHOSTUNREACH;
    return -1;
  }
  int fd = -1, err = ECONNREFUSED;
  for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      err = errno;
      continue;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    int e = errno;
    if (e == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) == 0) {
      socklen_t l = sizeof e;
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l) == 0 && e == 0) break;
    } else if (e == EINPROGRESS) {
      e = errno;
    }
    err = e;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) errno = err;
  return fd;
}

static int send_all(int fd, const char *p, size_t n, uint64_t deadline) {
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w > 0) {
      p += w;
      n -= (size_t)w;
    } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (wait_fd(fd, POLLOUT, deadline) < 0) return -1;
    } else {
      return -1;
    }
  }
  return 0;
}

int tool_http_post(const struct tool_http_url *u, const char *headers,
                   const void *body, size_t len, uint64_t timeout_ns,
                   char *err, size_t err_size) {
  uint64_t deadline = tool_now_ns() + timeout_ns;
  int fd = connect_to(u, deadline);
  if (fd < 0) {
    snprintf(err, err_size, "cannot connect: %s", strerror(errno));
    return -1;
  }
  char head[2048];
  int hn = snprintf(head, sizeof head,
                    "POST %s HTTP/1.1\r\nHost: %s:%s\r\n"
                    "User-Agent: eventring/%s\r\nConnection: close\r\n"
                    "Content-Length: %zu\r\n%s\r\n",
                    u->path, u->host, u->port, EVENTRING_VERSION, len,
                    headers ? headers : "");
  int status = -1;
  if (hn < 0 || (size_t)hn >= sizeof head) {
    snprintf(err, err_size, "request headers too long");
  } else if (send_all(fd, head, (size_t)hn, deadline) < 0 ||
             send_all(fd, body, len, deadline) < 0) {
    snprintf(err, err_size, "cannot send: %s", strerror(errno));
  } else {
    /* The status line is all we need: "HTTP/1.1 204 No Content". */
    char line[256];
    size_t got = 0;
    while (got < sizeof line - 1 && !memchr(line, '\n', got)) {
      ssize_t r = recv(fd, line + got, sizeof line - 1 - got, 0);
      if (r > 0) {
        got += (size_t)r;
      } else if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (wait_fd(fd, POLLIN, deadline) < 0) break;
      } else {
        if (r == 0) errno = ECONNRESET;
        break;
      }
    }
    line[got] = '\0';
    int code;
    if (memchr(line, '\n', got) && sscanf(line, "HTTP/1.%*d %3d", &code) == 1)
      status = code;
    else if (got)
      snprintf(err, err_size, "not an HTTP response");
    else
      snprintf(err, err_size, "no response: %s", strerror(errno));
  }
  close(fd);
  return status;
}
