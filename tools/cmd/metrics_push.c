/* metrics_push.c -- `eventring metrics --remote-write URL`: the series
 * the scrape endpoint serves, pushed to a Prometheus remote-write
 * receiver every --push-interval.
 *
 * Two threads of their own, so that neither the reading of the rings
 * nor each other waits on the network.  The collector wakes every
 * interval, lists the series under the state's lock (as a scrape does,
 * the exemplars of --exemplars FILE read first) into one request body
 * (render/'s remotewrite.c: protobuf, snappy, exemplars included) and
 * queues it.  The sender posts the queue's oldest request, each within
 * --push-timeout; a request that fails (no connection, no answer in
 * time, a 5xx or 429 status) is tried again after a back-off that
 * doubles from BACKOFF_MIN_NS to BACKOFF_MAX_NS, and a 2xx resets it.
 * A 4xx other than 429 means the receiver will never take that request:
 * its samples are counted as rejected and it goes.
 *
 * The queue is bounded in samples (--queue-size).  While the receiver is
 * away it fills; a new request that does not fit pushes out the oldest
 * ones (never the one being sent), and what goes is counted in
 * eventring_remote_write_dropped_samples_total, so that samples
 * collected = sent + rejected + dropped + queued at every moment.  A
 * request larger than the whole queue is dropped at once.
 *
 * Requests carry strictly increasing timestamps (a millisecond apart at
 * least), so that a receiver never sees two samples of a series at one
 * time.  When the exporter ends, a last collection is queued and the
 * queue sent until it is empty or a request fails.
 */
#include "cmd/cmd.h"

#if defined(EVENTRING_HAVE_MICROHTTPD) && defined(EVENTRING_HAVE_REMOTE_WRITE)

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BACKOFF_MIN_NS 100000000ULL   /* 0.1 s */
#define BACKOFF_MAX_NS 5000000000ULL  /* 5 s */

/* One request's body, as queued. */
struct batch {
  struct batch *next;
  char *body;
  size_t len;
  uint64_t nsamples;
};

struct metrics_push {
  struct metrics_state *m;
  struct tool_http_url url;
  char url_text[1100];
  uint64_t interval_ns, timeout_ns, queue_max;
  struct metrics_push_stats stats; /* __atomic */
  /* The queue and the threads' state, under `lock`. */
  pthread_mutex_t lock;
  pthread_cond_t wake; /* CLOCK_MONOTONIC: a request queued, or stop */
  struct batch *head, *tail;
  struct batch *sending; /* the head, while the sender posts it */
  uint64_t queued;
  int stop, collector_done;
  int64_t last_ms; /* the latest request's timestamp */
  pthread_t collector, sender;
  int collector_started, sender_started;
};

static void add(uint64_t *counter, uint64_t n) {
  __atomic_add_fetch(counter, n, __ATOMIC_RELAXED);
}

static void set_queued(struct metrics_push *p) {
  __atomic_store_n(&p->stats.queued, p->queued, __ATOMIC_RELAXED);
}

/* Sleeps on p->wake until `deadline` (tool_now_ns()).  Needs p->lock. */
static void wait_until(struct metrics_push *p, uint64_t deadline) {
  struct timespec ts = {(time_t)(deadline / 1000000000u),
                        (long)(deadline % 1000000000u)};
  pthread_cond_timedwait(&p->wake, &p->lock, &ts);
}

/* Frees the queue's oldest request.  Needs p->lock. */
static void pop(struct metrics_push *p) {
  struct batch *b = p->head;
  p->head = b->next;
  if (!p->head) p->tail = NULL;
  p->queued -= b->nsamples;
  set_queued(p);
  free(b->body);
  free(b);
}

/* Queues `b`, pushing out the oldest requests that keep it from fitting
 * (not the one being sent), or dropping it when it still does not. */
static void enqueue(struct metrics_push *p, struct batch *b) {
  pthread_mutex_lock(&p->lock);
  struct batch **bp = &p->head, *prev = NULL;
  while (p->queued + b->nsamples > p->queue_max && *bp) {
    struct batch *old = *bp;
    if (old == p->sending) {
      prev = old;
      bp = &old->next;
      continue;
    }
    *bp = old->next;
    if (p->tail == old) p->tail = prev;
    p->queued -= old->nsamples;
    add(&p->stats.dropped, old->nsamples);
    free(old->body);
    free(old);
  }
  if (p->queued + b->nsamples > p->queue_max) {
    add(&p->stats.dropped, b->nsamples);
    free(b->body);
    free(b);
  } else {
    if (p->tail) p->tail->next = b;
    else p->head = b;
    p->tail = b;
    p->queued += b->nsamples;
    pthread_cond_broadcast(&p->wake);
  }
  set_queued(p);
  pthread_mutex_unlock(&p->lock);
}

/* Lists the series now into a request and queues it.  Runs in the
 * collector's thread, with p->lock not held. */
static void collect(struct metrics_push *p) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
  if (ms <= p->last_ms) ms = p->last_ms + 1;
  p->last_ms = ms;
  struct batch *b = calloc(1, sizeof *b);
  size_t n = 0;
  pthread_mutex_lock(&p->m->lock);
  if (p->m->exemplars) metrics_exemplars_poll(p->m->exemplars, &p->m->set);
  int rc = b ? remote_write_encode(&p->m->set, ms, &b->body, &b->len, &n)
             : -1;
  pthread_mutex_unlock(&p->m->lock);
  if (rc < 0) {
    free(b);
    tool_error("metrics: out of memory: a remote-write request was not "
               "made");
    return;
  }
  b->nsamples = n;
  add(&p->stats.collected, n);
  enqueue(p, b);
}

static void *collector(void *arg) {
  struct metrics_push *p = arg;
  pthread_mutex_lock(&p->lock);
  uint64_t next = tool_now_ns() + p->interval_ns;
  while (!p->stop) {
    uint64_t now = tool_now_ns();
    if (now < next) {
      wait_until(p, next);
      continue;
    }
    pthread_mutex_unlock(&p->lock);
    collect(p);
    pthread_mutex_lock(&p->lock);
    next += p->interval_ns;
    if (next <= now) next = now + p->interval_ns;
  }
  pthread_mutex_unlock(&p->lock);
  /* The last values, for the sender's last round. */
  collect(p);
  pthread_mutex_lock(&p->lock);
  p->collector_done = 1;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

static void *sender(void *arg) {
  struct metrics_push *p = arg;
  static const char headers[] =
      "Content-Type: application/x-protobuf\r\n"
      "Content-Encoding: snappy\r\n"
      "X-Prometheus-Remote-Write-Version: 0.1.0\r\n";
  uint64_t backoff = 0, retry_at = 0;
  int failing = 0;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    if (!p->head) {
      if (p->collector_done) break;
      pthread_cond_wait(&p->wake, &p->lock);
      continue;
    }
    if (!p->stop && tool_now_ns() < retry_at) {
      wait_until(p, retry_at);
      continue;
    }
    struct batch *b = p->sending = p->head;
    pthread_mutex_unlock(&p->lock);
    char err[256] = "";
    int status = tool_http_post(&p->url, headers, b->body, b->len,
                                p->timeout_ns, err, sizeof err);
    pthread_mutex_lock(&p->lock);
    p->sending = NULL;
    if (status >= 200 && status < 300) {
      add(&p->stats.sent, b->nsamples);
      pop(p);
      backoff = 0;
      retry_at = 0;
      if (failing)
        tool_error("metrics: remote write to %s works again", p->url_text);
      failing = 0;
    } else if (status >= 400 && status < 500 && status != 429) {
      tool_error("metrics: %s refused a remote-write request (HTTP %d): "
                 "its %llu samples are dropped",
                 p->url_text, status, (unsigned long long)b->nsamples);
      add(&p->stats.rejected, b->nsamples);
      pop(p);
    } else {
      add(&p->stats.failed, 1);
      if (!failing) {
        if (status >= 0) snprintf(err, sizeof err, "HTTP %d", status);
        tool_error("metrics: remote write to %s failed (%s): trying again, "
                   "%llu samples queued at most",
                   p->url_text, err, (unsigned long long)p->queue_max);
      }
      failing = 1;
      if (p->stop) break; /* ending: what is left is not sent */
      backoff = backoff ? 2 * backoff : BACKOFF_MIN_NS;
      if (backoff > BACKOFF_MAX_NS) backoff = BACKOFF_MAX_NS;
      retry_at = tool_now_ns() + backoff;
    }
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

struct metrics_push *metrics_push_start(struct metrics_state *m,
                                        const char *url,
                                        const struct tool_http_url *u,
                                        uint64_t interval_ns,
                                        uint64_t timeout_ns,
                                        uint64_t queue_samples) {
  struct metrics_push *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->m = m;
  p->url = *u;
  snprintf(p->url_text, sizeof p->url_text, "%s", url);
  p->interval_ns = interval_ns;
  p->timeout_ns = timeout_ns;
  p->queue_max = queue_samples;
  pthread_mutex_init(&p->lock, NULL);
  tool_cond_init_monotonic(&p->wake);
  pthread_mutex_lock(&m->lock);
  m->set.push = &p->stats;
  pthread_mutex_unlock(&m->lock);
  /* The threads leave SIGINT, SIGTERM and SIGHUP to the reader. */
  sigset_t old;
  tool_block_stop_signals(&old);
  p->sender_started = pthread_create(&p->sender, NULL, sender, p) == 0;
  p->collector_started =
      p->sender_started && pthread_create(&p->collector, NULL, collector,
                                          p) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (!p->collector_started) {
    pthread_mutex_lock(&p->lock);
    p->stop = p->collector_done = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    metrics_push_stop(p);
    return NULL;
  }
  return p;
}

void metrics_push_stop(struct metrics_push *p) {
  if (!p) return;
  pthread_mutex_lock(&p->lock);
  p->stop = 1;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  if (p->collector_started) pthread_join(p->collector, NULL);
  if (p->sender_started) pthread_join(p->sender, NULL);
  pthread_mutex_lock(&p->m->lock);
  p->m->set.push = NULL;
  pthread_mutex_unlock(&p->m->lock);
  while (p->head) pop(p);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->lock);
  free(p);
}

#elif defined(EVENTRING_HAVE_MICROHTTPD)

/* Without remote write, metrics.c refuses --remote-write and never has a
 * pusher to stop. */
void metrics_push_stop(struct metrics_push *p) { (void)p; }

#endif
