/* metrics.c -- `eventring metrics`: a Prometheus exporter for ring files.
 *
 *   eventring metrics --listen ADDR:PORT --pid PID [--dir DIR]
 *   eventring metrics --listen ADDR:PORT --dir DIR
 *   eventring metrics --listen ADDR:PORT -- CMD ARGS...
 *
 * serves the text exposition format (version 0.0.4) on /metrics while
 * reading the rings continuously.  Two threads share the state under one
 * mutex: the main thread reads (polls the cursors), and libmicrohttpd's
 * own thread answers requests by rendering a snapshot.  The HTTP side,
 * and what keeps scrapes answered whatever other clients do, is
 * metrics_http.c's.
 *
 * Sources.  --pid and -- CMD go through source.c like every subcommand
 * (tool_source_read follows the writer until it is gone, then the
 * exporter ends: with a command, with the command's exit status).  A
 * command's whole tree is read (src->multi, procs.c): each of its
 * processes gets a target at its first event (target_of).  The
 * callbacks then take the mutex for each event, because source.c polls
 * with no limit.  --dir alone is metrics_dir.c's, which polls in
 * batches under the mutex.
 *
 * The files split the jobs: what the events add up to and the series
 * listed from it are analysis/'s metricset.c, the text of a scrape is
 * render/'s exposition.c, the HTTP server metrics_http.c; this file
 * reads the options and the sources and feeds the events in.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"

#define HELP_REF "eventring metrics --help"
/* The defaults of --push-interval, --push-timeout and --queue-size. */
#define PUSH_INTERVAL_NS 15000000000ULL
#define PUSH_TIMEOUT_NS 10000000000ULL
#define QUEUE_SAMPLES 100000

static void help(void) {
  printf(
      "Usage: eventring metrics OUTPUT --pid PID [--dir DIR]\n"
      "   or: eventring metrics OUTPUT --dir DIR\n"
      "   or: eventring metrics OUTPUT -- COMMAND [ARG]...\n"
      "where OUTPUT is --listen ADDR:PORT, --remote-write URL or both.\n"
      "Serve the events of running processes (a COMMAND's whole process\n"
      "tree) as Prometheus metrics on\n"
      "http://ADDR:PORT/metrics, or push them to a Prometheus remote-write\n"
      "receiver: GC pause and phase time histograms, the\n"
      "runtime counters, user events, lost and read events.\n"
      "\n"
      "Options:\n"
      "  --listen ADDR:PORT  the address to serve on, e.g. 127.0.0.1:9464\n"
      "                      or [::1]:9464 (port 0: any free port)\n"
      "  --remote-write URL  push the same series every --push-interval to\n"
      "                      a remote-write receiver, e.g. http://prom:9090"
      "/api/v1/write\n"
      "  --push-interval DURATION\n"
      "                      how often the series are pushed (default 15s)\n"
      "  --push-timeout DURATION\n"
      "                      the longest a push request may take "
      "(default 10s)\n"
      "  --queue-size N      samples kept while the receiver is away "
      "(default\n"
      "                      100000); what does not fit is dropped and "
      "counted\n"
      "  --exemplars FILE    follow the JSON log of eventring watch (--log FILE\n"
      "                      --log-format json): each snapshot taken for a\n"
      "                      pause, phase or span becomes the exemplar of its\n"
      "                      histogram bucket, scraped (OpenMetrics) or "
      "pushed\n"
      "  --label NAME=VALUE  a label every series gets, scraped or pushed\n"
      "                      (repeatable; host=NAME replaces the host's "
      "name)\n"
      "  --pid PID           follow the ring file of process PID until it "
      "exits\n"
      "  --dir DIR           with --pid: where that file is; alone: follow\n"
      "                      every PID.events file that appears in DIR\n"
      "  --keep SECONDS      with --dir alone: how long a process's series\n"
      "                      stay after its file is gone (default 60)\n"
      "  --header-timeout SECONDS\n"
      "                      a connection that has not sent a request's\n"
      "                      headers this long after it opened (or after "
      "its\n"
      "                      previous request) is closed (default 10)\n"
      "  --ocaml50           number phases as OCaml 5.0-5.2 did\n"
      "  --ocaml53           number phases as OCaml 5.3+ does (default:\n"
      "                      inferred from the file)\n"
      "  --domain N|NAME, --event GLOB, --kind KIND\n"
      "                      with --pid or COMMAND: export only those "
      "events\n"
      "                      (see eventring(1), FILTERS)\n"
      "  -h, --help          print this help and exit\n"
      "\n"
      "Runs until the process (or COMMAND) exits, or with --dir alone until\n"
      "interrupted.  Exit status: 0 success (COMMAND's status when one is "
      "run),\n"
      "1 unreadable input, no libmicrohttpd or (--remote-write) no remote\n"
      "write in this build, 2 bad usage.\n"
      "Every series has the labels host (this machine's name), pid and\n"
      "program, those given with --label, and ocaml_version and the labels\n"
      "its process's ring file records (EVENTRING_LABELS), a --label of\n"
      "the same name winning.\n");
}

#ifndef EVENTRING_HAVE_MICROHTTPD

int tool_metrics(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      help();
      return tool_output_finish();
    }
  tool_error("metrics: this eventring was built without libmicrohttpd "
             "(Debian: libmicrohttpd-dev; install it, configure and build "
             "again)");
  return TOOL_EXIT_INPUT;
}

#else /* EVENTRING_HAVE_MICROHTTPD */

#include <arpa/inet.h>
#include <unistd.h>

/* The state metrics_dir.c shares; with a command's tree, a target per
 * process of `tree` (procs.c's src->procs), made when its first event
 * comes, by_proc[i] that of src->procs[i]. */
static struct metrics_state M = {.lock = PTHREAD_MUTEX_INITIALIZER};
static int lock_per_event; /* single source: callbacks take the lock */
static struct tool_source *tree;
static struct metrics_target **by_proc;
static int nby_proc;

static void lock_ev(void) {
  if (lock_per_event) pthread_mutex_lock(&M.lock);
}
static void unlock_ev(void) {
  if (lock_per_event) pthread_mutex_unlock(&M.lock);
}

/* ------------------------------------------------------------------ */
/* Callbacks: `data` is the target, or with a command's tree, NULL and  */
/* the target that of the process whose event it is (target_of).        */

/* The target of the event being delivered: `data`, or that of the
 * tree's process src->proc, made (and listed, under the lock) at its
 * first event.  NULL when out of memory: the event is then not counted. */
static struct metrics_target *target_of(void *data) {
  if (!tree) return data;
  const struct tool_source *src = tree;
  int i = src->proc;
  if (i < 0 || i >= src->nprocs) return NULL;
  if (i < nby_proc && by_proc[i]) return by_proc[i];
  if (i >= nby_proc) {
    int n = src->nprocs + 16;
    struct metrics_target **v = realloc(by_proc, (size_t)n * sizeof *v);
    if (!v) return NULL;
    memset(v + nby_proc, 0, (size_t)(n - nby_proc) * sizeof *v);
    by_proc = v;
    nby_proc = n;
  }
  const struct tool_proc *p = src->procs[i];
  /* Named after the program that writes the file: an exec'd program is
   * a process of its own, named after its new image. */
  char prog[64];
  snprintf(prog, sizeof prog, "%s", p->name);
  if (!prog[0]) tool_process_name(p->pid, prog, sizeof prog);
  if (!prog[0] && i == 0) snprintf(prog, sizeof prog, "%s", src->name);
  /* A tree's cursors are source.c's, which set the numbering itself. */
  struct metrics_target *t =
      metrics_target_new(p->cursor, 0, p->path, p->pid, prog, -1);
  if (!t) return NULL;
  pthread_mutex_lock(&M.lock);
  t->next = M.set.targets;
  M.set.targets = t;
  pthread_mutex_unlock(&M.lock);
  by_proc[i] = t;
  return t;
}

/* Each callback hands its event to metricset.c under the lock. */
#define FEED(call)                                                     \
  do {                                                                 \
    struct metrics_target *t = target_of(data);                        \
    if (t) {                                                           \
      lock_ev();                                                       \
      call;                                                            \
      unlock_ev();                                                     \
    }                                                                  \
    return 1;                                                          \
  } while (0)

static int on_begin(void *data, int domain, uint64_t ts, int phase) {
  FEED(metrics_on_begin(t, domain, ts, phase));
}

static int on_end(void *data, int domain, uint64_t ts, int phase) {
  FEED(metrics_on_end(t, domain, ts, phase));
}

static int on_counter(void *data, int domain, uint64_t ts, int counter,
                      uint64_t value) {
  (void)ts;
  FEED(metrics_on_counter(t, domain, counter, value));
}

static int on_alloc(void *data, int domain, uint64_t ts,
                    const uint64_t *buckets) {
  (void)domain, (void)ts, (void)buckets;
  FEED(metrics_on_other(t));
}

static int on_lifecycle(void *data, int domain, uint64_t ts, int kind,
                        int64_t value, int has_data) {
  (void)ts, (void)value, (void)has_data;
  FEED(metrics_on_lifecycle(t, domain, kind));
}

static int on_user_unit(void *data, int domain, uint64_t ts, int id,
                        const char *name) {
  (void)domain, (void)ts;
  FEED(metrics_on_user_unit(t, id, name));
}

static int on_user_int(void *data, int domain, uint64_t ts, int id,
                       const char *name, int64_t value) {
  (void)ts;
  FEED(metrics_on_user_int(t, domain, id, name, value));
}

static int on_user_span(void *data, int domain, uint64_t ts, int id,
                        const char *name, int is_end) {
  FEED(metrics_on_user_span(t, domain, ts, id, name, is_end));
}

static int on_user_custom(void *data, int domain, uint64_t ts, int id,
                          const char *name, const void *bytes, size_t len) {
  (void)domain, (void)ts, (void)id, (void)name, (void)bytes, (void)len;
  FEED(metrics_on_other(t));
}

static int on_lost(void *data, int domain, uint64_t count) {
  FEED(metrics_on_lost(t, domain, count));
}
#undef FEED

static eventring_callbacks *make_callbacks(void) {
  static const struct tool_handlers handlers = {
      on_begin,     on_end,      on_counter,   on_alloc,       on_lifecycle,
      on_user_unit, on_user_int, on_user_span, on_user_custom, on_lost,
      NULL /* thread-switch markers: not shown */, NULL};
  return tool_callbacks_new(&handlers);
}

/* A scrape's page (metrics_http.c calls it in the server's thread). */
static void render_locked(FILE *o, int openmetrics, void *arg) {
  (void)arg;
  pthread_mutex_lock(&M.lock);
  if (M.exemplars) metrics_exemplars_poll(M.exemplars, &M.set);
  exposition_write(o, &M.set, openmetrics);
  pthread_mutex_unlock(&M.lock);
}

/* ------------------------------------------------------------------ */
/* The labels of every series: host, then --label's in their order.     */

#define MAX_LABELS (TOOL_MAX_LABELS + 1)
static struct metrics_label labels[MAX_LABELS];
static int nlabels;
static char hostname[256];

static void labels_reset(void) {
  if (gethostname(hostname, sizeof hostname) != 0) hostname[0] = '\0';
  hostname[sizeof hostname - 1] = '\0';
  labels[0] = (struct metrics_label){"host", hostname};
  nlabels = 1;
}

/* --label NAME=VALUE: tool_labels_add()'s, then made the series'
 * labels in labels_finish(). */
static struct tool_labels given;

/* A host whose name is unknown has no host label. */
static void labels_finish(void) {
  for (int i = 0; i < given.n; i++) {
    if (!strcmp(given.name[i], "host"))
      labels[0].value = given.value[i];
    else
      labels[nlabels++] = (struct metrics_label){given.name[i],
                                                 given.value[i]};
  }
  if (!labels[0].value[0]) {
    memmove(labels, labels + 1, (size_t)(nlabels - 1) * sizeof *labels);
    nlabels--;
  }
}

int tool_metrics(int argc, char **argv) {
  enum {
    OPT_LISTEN = TOOL_OPT_OWN,
    OPT_KEEP,
    OPT_HEADER_TIMEOUT,
    OPT_REMOTE_WRITE,
    OPT_PUSH_INTERVAL,
    OPT_PUSH_TIMEOUT,
    OPT_QUEUE_SIZE,
    OPT_LABEL,
    OPT_EXEMPLARS
  };
  /* The source options but --follow, which is always on. */
  static const struct option longopts[] = {
      {"listen", required_argument, NULL, OPT_LISTEN},
      {"dir", required_argument, NULL, TOOL_OPT_DIR},
      {"pid", required_argument, NULL, TOOL_OPT_PID},
      {"keep", required_argument, NULL, OPT_KEEP},
      {"header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT},
      {"remote-write", required_argument, NULL, OPT_REMOTE_WRITE},
      {"push-interval", required_argument, NULL, OPT_PUSH_INTERVAL},
      {"push-timeout", required_argument, NULL, OPT_PUSH_TIMEOUT},
      {"queue-size", required_argument, NULL, OPT_QUEUE_SIZE},
      {"label", required_argument, NULL, OPT_LABEL},
      {"exemplars", required_argument, NULL, OPT_EXEMPLARS},
      {"ocaml50", no_argument, NULL, TOOL_OPT_OCAML50},
      {"ocaml53", no_argument, NULL, TOOL_OPT_OCAML53},
      {"help", no_argument, NULL, 'h'},
      TOOL_FILTER_OPTIONS,
      {NULL, 0, NULL, 0},
  };
  struct tool_source src;
  memset(&src, 0, sizeof src);
  const char *listen_arg = NULL, *push_url = NULL, *exemplars_arg = NULL;
  double keep_s = 60, header_s = METRICS_HEADER_TIMEOUT;
  uint64_t push_ns = PUSH_INTERVAL_NS, push_timeout_ns = PUSH_TIMEOUT_NS;
  uint64_t queue_size = QUEUE_SAMPLES;
  struct tool_http_url url;
  int c;
  labels_reset();
  while ((c = tool_getopt(argc, argv, ":h", longopts)) != -1) {
    if (c == OPT_LISTEN) {
      listen_arg = optarg;
    } else if (c == OPT_REMOTE_WRITE) {
      push_url = optarg;
      if (tool_http_url_parse(optarg, &url) < 0)
        return tool_usage_error(HELP_REF, "invalid --remote-write '%s' "
                                "(http://HOST[:PORT]/PATH, e.g. "
                                "http://127.0.0.1:9090/api/v1/write; for "
                                "https, a local proxy)",
                                optarg);
    } else if (c == OPT_PUSH_INTERVAL || c == OPT_PUSH_TIMEOUT) {
      char why[128];
      uint64_t *ns = c == OPT_PUSH_INTERVAL ? &push_ns : &push_timeout_ns;
      if (tool_parse_duration(optarg, ns, why, sizeof why) < 0 || *ns < 1000000)
        return tool_usage_error(HELP_REF, "invalid --%s '%s' (%s)",
                                c == OPT_PUSH_INTERVAL ? "push-interval"
                                                       : "push-timeout",
                                optarg, *ns < 1000000 ? "1ms at least" : why);
    } else if (c == OPT_QUEUE_SIZE) {
      char *end;
      errno = 0;
      unsigned long long q = strtoull(optarg, &end, 10);
      if (end == optarg || *end || errno || optarg[0] == '-' || q < 1 ||
          q > (1ULL << 40))
        return tool_usage_error(HELP_REF, "invalid --queue-size '%s' "
                                "(samples, 1 at least)", optarg);
      queue_size = q;
    } else if (c == OPT_EXEMPLARS) {
      exemplars_arg = optarg;
    } else if (c == OPT_LABEL) {
      char why[256];
      if (tool_labels_add(&given, optarg, metrics_reserved_labels, why,
                          sizeof why) < 0)
        return tool_usage_error(HELP_REF, "--label: %s", why);
    } else if (c == OPT_KEEP) {
      char *end;
      errno = 0;
      keep_s = strtod(optarg, &end);
      if (end == optarg || *end || errno || !(keep_s >= 0) || keep_s > 1e6)
        return tool_usage_error(HELP_REF, "invalid --keep '%s' (seconds)",
                                optarg);
    } else if (c == OPT_HEADER_TIMEOUT) {
      char *end;
      errno = 0;
      header_s = strtod(optarg, &end);
      if (end == optarg || *end || errno || !(header_s > 0) || header_s > 1e6)
        return tool_usage_error(HELP_REF,
                                "invalid --header-timeout '%s' (seconds, "
                                "above 0)",
                                optarg);
    } else {
      int rc = tool_source_other(&src, c, argv, HELP_REF, help);
      if (rc >= 0) return rc;
    }
  }
  if (!listen_arg && !push_url)
    return tool_usage_error(HELP_REF, "--listen ADDR:PORT or --remote-write "
                            "URL is required");
#ifndef EVENTRING_HAVE_REMOTE_WRITE
  if (push_url) {
    tool_error("metrics: this eventring was built without remote write "
               "(Debian: protobuf-c-compiler, libprotobuf-c-dev and "
               "libsnappy-dev; install them, configure and build again)");
    return TOOL_EXIT_INPUT;
  }
#endif
  if (optind < argc)
    return tool_usage_error(HELP_REF, "unexpected argument '%s' (ring files "
                            "are followed with --pid or --dir)",
                            argv[optind]);
  int dir_mode = src.dir && !src.pid_arg;
  /* The figures are live: a time window has no meaning for them.  The
   * other filters choose what is exported, by the source layer, which
   * --dir alone does not read through. */
  if (tool_filter_has_time(&src)) {
    tool_filter_free(&src);
    return tool_usage_error(HELP_REF, "--since, --until and --last are not "
                            "for a live exporter (--domain, --event and "
                            "--kind are)");
  }
  if (dir_mode && src.filter) {
    tool_filter_free(&src);
    return tool_usage_error(HELP_REF, "--domain, --event and --kind need "
                            "--pid or a COMMAND, not --dir alone");
  }
  M.numbering = tool_source_numbering(&src);

  labels_finish();
  M.set.common = labels;
  M.set.ncommon = nlabels;

  /* Listen first: a port in use is reported before a command is run. */
  int usage = 0;
  char shown[INET6_ADDRSTRLEN + 16];
  int fd = listen_arg ? metrics_http_listen(listen_arg, &usage, shown,
                                            sizeof shown)
                      : -1;
  if (listen_arg && fd < 0) {
    if (usage)
      return tool_usage_error(HELP_REF, "invalid --listen '%s' (ADDR:PORT, "
                              "e.g. 127.0.0.1:9464 or [::1]:9464)",
                              listen_arg);
    return TOOL_EXIT_INPUT;
  }

  eventring_callbacks *cb = make_callbacks();
  if (cb && exemplars_arg &&
      !(M.exemplars = metrics_exemplars_new(exemplars_arg))) {
    eventring_callbacks_free(cb);
    cb = NULL;
  }
  if (!cb) {
    if (fd >= 0) close(fd);
    tool_error("out of memory");
    return TOOL_EXIT_INPUT;
  }
  int rc;
  struct metrics_http *server = NULL;
  struct metrics_push *push = NULL;
  if (!dir_mode) {
    /* --pid or a command: source.c opens it (and says what is wrong); a
     * command with every process of its tree, as stats reads it. */
    src.follow = 1;
    src.multi = tool_source_command_given();
    rc = tool_source_open(&src, 0, argv + optind, HELP_REF);
    if (rc != TOOL_EXIT_OK) goto done;
    lock_per_event = 1;
    if (src.multi) tree = &src;
    struct metrics_target *t =
        src.multi ? NULL
                  : metrics_target_new(src.cursor, 0, src.path, src.pid,
                                       src.name, M.numbering);
    if (!t && !src.multi) {
      tool_error("out of memory");
      tool_source_close(&src);
      rc = TOOL_EXIT_INPUT;
      goto done;
    }
    M.set.targets = t;
  }
  if (push_url) {
#ifdef EVENTRING_HAVE_REMOTE_WRITE
    push = metrics_push_start(&M, push_url, &url, push_ns, push_timeout_ns,
                              queue_size);
#endif
    if (!push) {
      tool_error("metrics: cannot start pushing to %s", push_url);
      rc = TOOL_EXIT_INPUT;
      if (!dir_mode) tool_source_close(&src);
      goto done;
    }
    tool_error("pushing metrics to %s every %g s", push_url,
               (double)push_ns / 1e9);
  }
  if (listen_arg) {
    server = metrics_http_start(fd, header_s, render_locked, NULL);
    if (!server) {
      tool_error("metrics: cannot start the HTTP server on %s", shown);
      rc = TOOL_EXIT_INPUT;
      metrics_push_stop(push);
      push = NULL;
      if (!dir_mode) tool_source_close(&src);
      goto done;
    }
    fd = -1; /* the server's now */
    tool_error("serving metrics on http://%s/metrics", shown);
  }

  if (dir_mode) {
    rc = metrics_follow_dir(&M, src.dir, (uint64_t)(keep_s * 1e9), cb);
  } else {
    rc = tool_source_read(&src, cb, tree ? NULL : M.set.targets);
    /* The server and the pusher (its last push) stop before the cursor
     * goes. */
    metrics_http_stop(server);
    server = NULL;
    metrics_push_stop(push);
    push = NULL;
    tool_source_close(&src);
    tree = NULL;
    free(by_proc);
  }

done:
  if (server) metrics_http_stop(server);
  metrics_push_stop(push);
  if (fd >= 0) close(fd);
  while (M.set.targets) {
    struct metrics_target *t = M.set.targets;
    M.set.targets = t->next;
    metrics_target_free(t);
  }
  eventring_callbacks_free(cb);
  metrics_exemplars_free(M.exemplars);
  M.exemplars = NULL;
  tool_labels_free(&given);
  return rc;
}

#endif /* EVENTRING_HAVE_MICROHTTPD */
