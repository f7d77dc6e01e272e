/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/log-ratelimit.h"
#include "base/log.h"
#include "common/util.h"
#include "fd-limit.h"
#include "loop-watch.h"
#include "manager.h"

/* SPEC §9: the loop never stalls more than this. */
#define LOOP_TURN_MAX_USEC (20 * 1000)

/*
 * libuv's thread pool has 4 helpers unless told otherwise.  With more helpers than CPUs, one is often
 * preempted while it holds the pool's lock, and the loop thread, handing over the next batch of a
 * GetManagedObjects, sleeps until it runs again.  On 2 CPUs, 1,000 x 4 fixture, five calls a run
 * (perf trace of the loop thread), sleeps of 2-6 ms: 3-16 a run with 4 helpers, 0-4 with 2; the
 * calls took the same (medians 0.638 / 0.641 s), and so did a cold start on 1,000 real loop devices
 * (0.654 / 0.659 s).  A value set by the user stays.
 */
static void size_thread_pool(void)
{
        char n[16];

        (void) snprintf(n, sizeof(n), "%u", MAX(MIN(uv_available_parallelism(), 4u), 1u));
        (void) setenv("UV_THREADPOOL_SIZE", n, 0 /* a value set by the user stays */);
}

static void help(void)
{
        printf("blkmodeld [OPTIONS...]\n\n"
               "Mirror the kernel's block device kobject hierarchy onto D-Bus.\n\n"
               "  -h --help                 Show this help\n"
               "     --version              Show the version\n"
               "     --system               Publish on the system bus (default)\n"
               "     --session              Publish on the session bus\n"
               "     --address=ADDR         Publish on the bus at ADDR\n"
               "     --sysfs-root=DIR       Read sysfs from DIR (default: /sys)\n"
               "     --uevent-socket=PATH   Read uevents from a datagram socket at PATH\n"
               "     --no-uevents           Do not listen to uevents\n"
               "     --event-log-size=N     Retain the last N events for GetEvents (default: 4096)\n"
               "     --poll-interval=MSEC   Re-read watched attributes every MSEC ms (default: 2000, 0: "
               "never)\n"
               "     --max-message-size=BYTES\n"
               "                            The largest message the bus takes (default: 32 MiB on the\n"
               "                            system bus, 128 MiB elsewhere): larger replies are refused\n"
               "     --log-level=LEVEL      err, warning, notice, info or debug (default: info)\n");
}

enum {
        ARG_VERSION = 0x100,
        ARG_SYSTEM,
        ARG_SESSION,
        ARG_ADDRESS,
        ARG_SYSFS_ROOT,
        ARG_UEVENT_SOCKET,
        ARG_NO_UEVENTS,
        ARG_EVENT_LOG_SIZE,
        ARG_POLL_INTERVAL,
        ARG_MAX_MESSAGE_SIZE,
        ARG_LOG_LEVEL,
        ARG_UEVENT_RCVBUF,
};

static int parse_unsigned(const char *s, uint64_t max, uint64_t *ret)
{
        uint64_t v;
        if (parse_u64(s, &v) < 0 || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* 0 to run, 1 to exit successfully (--help), negative on a usage error. */
static int parse_argv(int argc, char *argv[], ManagerOptions *o)
{
        static const struct option options[] = {
                        {"help", no_argument, NULL, 'h'},
                        {"version", no_argument, NULL, ARG_VERSION},
                        {"system", no_argument, NULL, ARG_SYSTEM},
                        {"session", no_argument, NULL, ARG_SESSION},
                        {"address", required_argument, NULL, ARG_ADDRESS},
                        {"sysfs-root", required_argument, NULL, ARG_SYSFS_ROOT},
                        {"uevent-socket", required_argument, NULL, ARG_UEVENT_SOCKET},
                        {"no-uevents", no_argument, NULL, ARG_NO_UEVENTS},
                        {"event-log-size", required_argument, NULL, ARG_EVENT_LOG_SIZE},
                        {"poll-interval", required_argument, NULL, ARG_POLL_INTERVAL},
                        {"max-message-size", required_argument, NULL, ARG_MAX_MESSAGE_SIZE},
                        {"log-level", required_argument, NULL, ARG_LOG_LEVEL},
                        /* Not in --help: lets tests make the kernel overflow the socket on purpose. */
                        {"uevent-rcvbuf", required_argument, NULL, ARG_UEVENT_RCVBUF},
                        {},
        };
        uint64_t v;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 1;
                case ARG_VERSION:
                        printf("blkmodeld %s\n", BLKMODEL_VERSION);
                        return 1;
                case ARG_SYSTEM:
                        o->bus_kind = BUS_KIND_SYSTEM;
                        break;
                case ARG_SESSION:
                        o->bus_kind = BUS_KIND_SESSION;
                        break;
                case ARG_ADDRESS:
                        if (isempty(optarg)) {
                                log_error("Invalid --address '': expected a D-Bus address (unix:path=...).");
                                return -EINVAL;
                        }
                        o->bus_kind = BUS_KIND_ADDRESS;
                        o->address = optarg;
                        break;
                case ARG_SYSFS_ROOT:
                        o->sysfs_root = optarg;
                        break;
                case ARG_UEVENT_SOCKET:
                        o->uevent_socket = optarg;
                        break;
                case ARG_NO_UEVENTS:
                        o->no_uevents = true;
                        break;
                case ARG_EVENT_LOG_SIZE:
                        /* Bounded: a client can ask for every retained event at once. */
                        if (parse_unsigned(optarg, 1U << 20, &v) < 0 || v == 0) {
                                log_error("Invalid --event-log-size '%s': expected 1…1048576.", optarg);
                                return -EINVAL;
                        }
                        o->event_log_size = (size_t) v;
                        break;
                case ARG_UEVENT_RCVBUF:
                        if (parse_unsigned(optarg, 1U << 30, &v) < 0) {
                                log_error("Invalid --uevent-rcvbuf '%s': expected bytes, 0…1073741824.",
                                          optarg);
                                return -EINVAL;
                        }
                        o->uevent_rcvbuf = (int) v;
                        break;
                case ARG_MAX_MESSAGE_SIZE:
                        /* A bus configured smaller than its default drops a connection that sends more:
                         * the daemon cannot ask the bus, so it is told. */
                        if (parse_unsigned(optarg, BUS_MESSAGE_MAX, &v) < 0 || v < BUS_MESSAGE_MIN) {
                                log_error("Invalid --max-message-size '%s': expected bytes, %zu…%zu.",
                                          optarg, BUS_MESSAGE_MIN, BUS_MESSAGE_MAX);
                                return -EINVAL;
                        }
                        o->message_max = (size_t) v;
                        break;
                case ARG_POLL_INTERVAL:
                        if (parse_unsigned(optarg, 3600U * 1000U, &v) < 0) {
                                log_error("Invalid --poll-interval '%s': expected milliseconds, 0…3600000.",
                                          optarg);
                                return -EINVAL;
                        }
                        o->poll_interval_ms = (unsigned) v;
                        break;
                case ARG_LOG_LEVEL:
                        r = log_level_from_string(optarg);
                        if (r < 0) {
                                log_error("Invalid --log-level '%s': expected err, warning, notice, info "
                                          "or debug.",
                                          optarg);
                                return -EINVAL;
                        }
                        log_set_max_level(r);
                        break;
                case '?':
                        return -EINVAL;
                }

        if (optind < argc) {
                log_error("Unexpected argument '%s'; see --help.", argv[optind]);
                return -EINVAL;
        }
        if (o->uevent_socket && o->no_uevents) {
                log_error("--uevent-socket and --no-uevents exclude each other.");
                return -EINVAL;
        }
        return 0;
}

/*
 * The kernel grows a process's descriptor table when an fd past its end is taken, and while the
 * process has more than one thread it first waits for an RCU grace period: 10-24 ms here, in whichever
 * thread took the fd.  The loop thread took one (dup of the sysfs root during a GetManagedObjects on
 * 1,000 loop devices: a turn of 21 ms, all of it asleep).  Grown now, with one thread, it costs
 * nothing, and a table never shrinks.  The daemon's grew to 256 in the runs looked at; this leaves room.
 */
#define FD_TABLE_RESERVED 1024

static void reserve_fd_table(void)
{
        struct rlimit limit;
        int n = FD_TABLE_RESERVED, fd, high;

        if (getrlimit(RLIMIT_NOFILE, &limit) >= 0 && limit.rlim_cur < (rlim_t) n)
                n = (int) limit.rlim_cur;
        fd = open("/", O_PATH | O_CLOEXEC);
        if (fd < 0)
                return;
        high = n > fd + 1 ? fcntl(fd, F_DUPFD_CLOEXEC, n - 1) : -1;
        if (high >= 0)
                close(high);
        close(fd);
}

/* The window of the lines clients can cause (base/log-ratelimit.h); a test's is shorter. */
static uint64_t log_ratelimit_interval(void)
{
        const char *env = secure_getenv("BLKMODEL_LOG_RATELIMIT_INTERVAL_MS");
        uint64_t v;

        if (!env)
                return LOG_RATELIMIT_INTERVAL_MS;
        if (parse_unsigned(env, 3600000, &v) < 0) {
                log_warning("$BLKMODEL_LOG_RATELIMIT_INTERVAL_MS=%s is not 0…3600000 ms; ignored.", env);
                return LOG_RATELIMIT_INTERVAL_MS;
        }
        return v;
}

/*
 * The descriptors uv_loop_init() takes (libuv 1.44): the epoll instance, the pipe libuv's signal
 * handling locks with (made once a process: it abort()s when it cannot, SIGABRT and no message,
 * which RLIMIT_NOFILE 4 or 5 gives), the loop's own signal pipe and its eventfd.  With fewer left the
 * start is refused before it, saying why.
 */
#define LOOP_INIT_FDS 6

static int check_loop_descriptors(void)
{
        struct rlimit limit;
        int r;

        r = fd_limit_available(LOOP_INIT_FDS);
        if (r < 0)
                return log_error_errno(r, "Cannot create the event loop: %m");
        if (r < LOOP_INIT_FDS) {
                if (getrlimit(RLIMIT_NOFILE, &limit) < 0)
                        limit.rlim_cur = RLIM_INFINITY;
                return log_error_errno(-EMFILE,
                                       "Cannot create the event loop: it takes %d descriptors, "
                                       "RLIMIT_NOFILE %ju leaves %d: %m",
                                       LOOP_INIT_FDS, (uintmax_t) limit.rlim_cur, r);
        }
        return 0;
}

int main(int argc, char *argv[])
{
        ManagerOptions o = {
                        .bus_kind = BUS_KIND_SYSTEM,
                        .sysfs_root = "/sys",
                        .event_log_size = 4096,
                        .poll_interval_ms = 2000,
        };
        _cleanup_(freep) char *socket_path = NULL, *cwd = NULL;
        uv_loop_t loop;
        Manager *m = NULL;
        LoopWatch watch;
        bool watching = false;
        int r;

        /* First: a message of parse_argv() must not go into whatever took descriptor 2. */
        if (fd_stdio_ensure() < 0)
                return 1;
        r = parse_argv(argc, argv, &o);
        if (r != 0)
                return r > 0 ? 0 : 2;
        /* Before the first descriptor it opens, and before the first thread (fd-limit.h). */
        fd_limit_raise();
        /* Absolute, as UeventSource shows it: one place whatever the caller's directory, and never
         * "none", which is --no-uevents. */
        if (o.uevent_socket && o.uevent_socket[0] != '/') {
                cwd = getcwd(NULL, 0);
                socket_path = cwd ? path_join(cwd, o.uevent_socket) : NULL;
                if (!socket_path) {
                        log_error("Cannot make --uevent-socket=%s absolute: %m", o.uevent_socket);
                        return 1;
                }
                o.uevent_socket = socket_path;
        }

        /* A client that disappears mid-reply must not kill us. */
        signal(SIGPIPE, SIG_IGN);
        /* A GetManagedObjects reply is megabytes of growing buffers: from mmap, so that they go back to
         * the system when freed.  glibc would otherwise raise the threshold after the first one and take
         * the next from the heap, which the model's small allocations then pin. */
        (void) mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        /* The thread pool's workers (GetManagedObjects' read-ahead, Set's writes) allocate values the
         * loop frees: with an arena per thread, each worker kept its own heap pages, 0.7 MiB more
         * RSS after one reply at 1,000 x 4.  Their few small allocations per file share the one. */
        (void) mallopt(M_ARENA_MAX, 1);
        size_thread_pool();
        /* Before the first thread. */
        reserve_fd_table();

        if (check_loop_descriptors() < 0)
                return 1;
        r = uv_loop_init(&loop);
        if (r < 0) {
                log_error("Cannot create the event loop: %s", uv_strerror(r));
                return 1;
        }
        log_ratelimit_attach(&loop, log_ratelimit_interval());
        r = manager_new(&o, &loop, &m);
        if (r >= 0)
                r = manager_start(m);
        if (r >= 0) {
                /* From the first turn after the start: the start itself is one long piece of work
                 * that nobody waits on, since the name is taken at its end. */
                watching = loop_watch_start(&loop, &watch, LOOP_TURN_MAX_USEC) >= 0;
                uv_run(&loop, UV_RUN_DEFAULT);
                r = m->exit_code == 0 ? 0 : -EIO;
        }
        if (watching)
                loop_watch_stop(&watch);
        manager_free(m);
        /* What was suppressed and not yet told is told now. */
        log_ratelimit_detach();
        /* Let close callbacks run so that nothing leaks. */
        uv_run(&loop, UV_RUN_DEFAULT);
        (void) uv_loop_close(&loop);
        return r < 0 ? 1 : 0;
}
