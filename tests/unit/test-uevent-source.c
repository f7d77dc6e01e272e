/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/loop.h>
#include <linux/netlink.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#include "base/turn.h"
#include "tests.h"
#include "uevent/source-internal.h"

/* The devpath of the socket tests' made-up events: nothing on sysfs is touched there. */
#define LOOP0 "/devices/virtual/block/loop0"

/*
 * The netlink tests make the kernel send events by writing to a uevent file: that of a loop device
 * the test creates for itself (LOOP_CTL_ADD, on an index nobody uses) and deletes at exit, never
 * somebody's loop0.
 */
static int loop_index = -1;
static char loop_devpath[64], loop_uevent[96];

typedef struct Ctx {
        UeventSource *source;
        unsigned received; /* every event handed to us */
        unsigned lost;
        char last_devpath[256];
        char want_uuid[40]; /* netlink: count only our own synthetic events in `matched` */
        unsigned matched;
        bool free_on_receive;
        bool pause_on_receive;
        unsigned slow_usec; /* the handler takes this long, as an add that reads a whole disk */
        unsigned drained;
} Ctx;

static void on_event(UeventSource *s, Uevent *u, void *userdata)
{
        Ctx *c = userdata;
        const char *uuid = uevent_get(u, "SYNTH_UUID");

        c->received++;
        snprintf(c->last_devpath, sizeof(c->last_devpath), "%s", u->devpath);
        if (c->want_uuid[0] && uuid && strcmp(uuid, c->want_uuid) == 0)
                c->matched++;
        uevent_free(u);

        if (c->free_on_receive) {
                uevent_source_free(s);
                c->source = NULL;
        }
        if (c->pause_on_receive)
                uevent_source_pause(s);
        if (c->slow_usec)
                (void) usleep(c->slow_usec);
}

static void on_drained(UeventSource *s, void *userdata)
{
        Ctx *c = userdata;

        c->drained++;
}

static void on_lost(UeventSource *s, void *userdata)
{
        Ctx *c = userdata;

        c->lost++;
}

static void on_timer(uv_timer_t *t)
{
        *(bool *) t->data = true;
}

/* Runs the loop until *counter >= want or timeout_ms pass.  Returns whether the count was reached. */
static bool run_until(uv_loop_t *loop, const unsigned *counter, unsigned want, unsigned timeout_ms)
{
        uv_timer_t timer;
        bool timed_out = false;

        uv_timer_init(loop, &timer);
        timer.data = &timed_out;
        uv_timer_start(&timer, on_timer, timeout_ms, 0);
        while (*counter < want && !timed_out)
                uv_run(loop, UV_RUN_ONCE);
        uv_close((uv_handle_t *) &timer, NULL);
        uv_run(loop, UV_RUN_NOWAIT);
        return *counter >= want;
}

/* Lets the loop run for ms milliseconds, for checks that something does *not* happen. */
static void run_for(uv_loop_t *loop, unsigned ms)
{
        unsigned never = 0;

        (void) run_until(loop, &never, 1, ms);
}

/* Lets pending close callbacks run. */
static void settle(uv_loop_t *loop)
{
        for (int i = 0; i < 4; i++)
                uv_run(loop, UV_RUN_NOWAIT);
}

static unsigned count_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        unsigned n = 0;

        if (!d)
                return 0;
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

/* Test paths are short (a mkdtemp() directory and a name); anything else is a test bug. */
static void set_sun_path(struct sockaddr_un *addr, const char *path)
{
        size_t l = strlen(path);

        if (l >= sizeof(addr->sun_path))
                abort();
        memcpy(addr->sun_path, path, l + 1);
}

/* Sends one datagram to path, optionally with explicit credentials and a passed fd.  Returns 0 or -errno. */
static int send_to(const char *path, const void *buf, size_t len, const struct ucred *cred, int pass_fd)
{
        union {
                struct cmsghdr h;
                uint8_t b[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int))];
        } control;
        struct sockaddr_un addr = {.sun_family = AF_UNIX};
        struct iovec iov = {.iov_base = (void *) buf, .iov_len = len};
        struct msghdr m = {
                        .msg_name = &addr,
                        .msg_namelen = sizeof(addr),
                        .msg_iov = &iov,
                        .msg_iovlen = 1,
        };
        struct cmsghdr *cm;
        size_t clen = 0;
        int fd, r = 0;

        memset(&control, 0, sizeof(control));
        set_sun_path(&addr, path);
        if (cred || pass_fd >= 0) {
                m.msg_control = &control;
                m.msg_controllen = sizeof(control);
                cm = CMSG_FIRSTHDR(&m);
                if (cred) {
                        cm->cmsg_level = SOL_SOCKET;
                        cm->cmsg_type = SCM_CREDENTIALS;
                        cm->cmsg_len = CMSG_LEN(sizeof(struct ucred));
                        memcpy(CMSG_DATA(cm), cred, sizeof(struct ucred));
                        clen += CMSG_SPACE(sizeof(struct ucred));
                        cm = CMSG_NXTHDR(&m, cm);
                }
                if (pass_fd >= 0) {
                        cm->cmsg_level = SOL_SOCKET;
                        cm->cmsg_type = SCM_RIGHTS;
                        cm->cmsg_len = CMSG_LEN(sizeof(int));
                        memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
                        clen += CMSG_SPACE(sizeof(int));
                }
                m.msg_controllen = clen;
        }

        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* Never block: the receiver is this very thread. */
        if (sendmsg(fd, &m, MSG_DONTWAIT) < 0)
                r = -errno;
        close(fd);
        return r;
}

static const char valid_event[] = "add@" LOOP0 "\0ACTION=add\0DEVPATH=" LOOP0 "\0SUBSYSTEM=block\0"
                                  "MAJOR=7\0MINOR=0\0DEVNAME=loop0\0DEVTYPE=disk\0SEQNUM=1";
static const char marker_event[] = "change@/devices/virtual/block/marker\0ACTION=change\0"
                                   "DEVPATH=/devices/virtual/block/marker\0SUBSYSTEM=block\0SEQNUM=2";

static int send_valid(const char *path)
{
        return send_to(path, valid_event, sizeof(valid_event), NULL, -1);
}

static int send_marker(const char *path)
{
        return send_to(path, marker_event, sizeof(marker_event), NULL, -1);
}

static char tmpdir[] = "/tmp/test-uevent-source-XXXXXX";

static void make_path(char *buf, size_t size, const char *name)
{
        snprintf(buf, size, "%s/%s", tmpdir, name);
}

/* recvmsg(), as the source calls it (linked with --wrap=recvmsg): fails the next
 * recvmsg_failures calls with recvmsg_errno, as a system short of memory may. */
ssize_t __real_recvmsg(int fd, struct msghdr *m, int flags);
ssize_t __wrap_recvmsg(int fd, struct msghdr *m, int flags);
static unsigned recvmsg_failures, recvmsg_failed;
static int recvmsg_errno;
static bool recvmsg_consume; /* the failing call takes the datagram, as a kernel may */

ssize_t __wrap_recvmsg(int fd, struct msghdr *m, int flags)
{
        if (recvmsg_failures > 0) {
                if (recvmsg_consume)
                        (void) __real_recvmsg(fd, m, flags);
                recvmsg_failures--;
                recvmsg_failed++;
                errno = recvmsg_errno;
                return -1;
        }
        return __real_recvmsg(fd, m, flags);
}

static void test_socket_receive_short_of_memory(uv_loop_t *loop)
{
        static const int errors[] = {ENOMEM, EMFILE};
        char path[256];

        make_path(path, sizeof(path), "short.sock");
        for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
                Ctx c = {};

                CHECK(uevent_source_new_socket(loop, path, on_event, on_lost, &c, &c.source) == 0);
                if (!c.source)
                        return;
                /* Told as lost (a Rescan follows), and the events after it still come: the source
                 * had ended for good on the first such error. */
                recvmsg_errno = errors[i];
                recvmsg_failures = 1;
                CHECK(send_valid(path) == 0);
                CHECK(run_until(loop, &c.lost, 1, 2000));
                CHECK(send_marker(path) == 0);
                CHECK(run_until(loop, &c.received, 2, 2000));
                CHECK(c.lost == 1);
                CHECK(strcmp(c.last_devpath, "/devices/virtual/block/marker") == 0);
                recvmsg_failures = 0;
                uevent_source_free(c.source);
                settle(loop);
        }
}

/* Short for a while: tried again after a rest, not at every turn of the loop (a busy CPU and a loss
 * told each time, 13,700 a second), and told lost once. */
static void test_socket_receive_short_for_a_while(uv_loop_t *loop)
{
        char path[256];
        Ctx c = {};

        make_path(path, sizeof(path), "short.sock");
        CHECK(uevent_source_new_socket(loop, path, on_event, on_lost, &c, &c.source) == 0);
        if (!c.source)
                return;
        recvmsg_errno = ENOMEM;
        recvmsg_failures = UINT_MAX;
        recvmsg_failed = 0;
        CHECK(send_valid(path) == 0);
        run_for(loop, 500);
        CHECK(c.lost == 1);
        CHECK(recvmsg_failed >= 2 && recvmsg_failed <= 10);
        recvmsg_failures = 0;
        CHECK(run_until(loop, &c.received, 1, 2000));
        CHECK(c.lost == 1);
        uevent_source_free(c.source);
        settle(loop);
}

/* Two episodes, the socket found empty between them: each loss is told.  A failed receive that took
 * its datagram leaves nothing to read after the rest, and the second episode's loss went untold. */
static void test_socket_receive_short_twice(uv_loop_t *loop)
{
        char path[256];
        Ctx d = {};

        make_path(path, sizeof(path), "short.sock");
        CHECK(uevent_source_new_socket(loop, path, on_event, on_lost, &d, &d.source) == 0);
        if (!d.source)
                return;
        uevent_source_set_drained_handler(d.source, on_drained);
        recvmsg_errno = ENOMEM;
        recvmsg_consume = true;
        recvmsg_failures = 1;
        CHECK(send_valid(path) == 0);
        CHECK(run_until(loop, &d.lost, 1, 2000));
        CHECK(run_until(loop, &d.drained, 1, 2000)); /* after the rest, the socket is empty */
        recvmsg_failures = 1;
        CHECK(send_valid(path) == 0);
        run_for(loop, 300);
        CHECK(d.lost == 2);
        recvmsg_consume = false;
        recvmsg_failures = 0;
        uevent_source_free(d.source);
        settle(loop);
}

static void test_socket_basic(uv_loop_t *loop)
{
        static const char unknown[] = "teleport@" LOOP0 "\0ACTION=teleport\0DEVPATH=" LOOP0 "\0SEQNUM=3";
        static const char junk[] = "this is not a uevent at all, not even close";
        static const char udev[] = "libudev\0\xfe\xed\xca\xfe"
                                   "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
        char path[256], *big;
        Ctx c = {};
        struct stat st;

        make_path(path, sizeof(path), "basic.sock");
        CHECK(uevent_source_new_socket(loop, path, on_event, on_lost, &c, &c.source) == 0);
        if (!c.source)
                return;

        /* Only our uid and root may even open it. */
        CHECK(stat(path, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600);

        CHECK(send_valid(path) == 0);
        CHECK(run_until(loop, &c.received, 1, 2000));
        CHECK(strcmp(c.last_devpath, LOOP0) == 0);
        CHECK(uevent_source_dropped(c.source) == 0);

        /* Bad ones are dropped and counted, an unknown action too (a newer kernel's). */
        big = malloc(UEVENT_SIZE_MAX + 100);
        if (!big)
                abort();
        memset(big, 'A', UEVENT_SIZE_MAX + 100);
        CHECK(send_to(path, junk, sizeof(junk), NULL, -1) == 0);
        CHECK(send_to(path, valid_event, 20, NULL, -1) == 0);            /* too short */
        CHECK(send_to(path, big, UEVENT_SIZE_MAX + 100, NULL, -1) == 0); /* truncated */
        CHECK(send_to(path, udev, sizeof(udev), NULL, -1) == 0);
        CHECK(send_to(path, valid_event, sizeof(valid_event) - 1, NULL, -1) == 0); /* no final NUL */
        CHECK(send_to(path, "", 0, NULL, -1) == 0);
        CHECK(send_to(path, unknown, sizeof(unknown), NULL, -1) == 0);
        CHECK(send_marker(path) == 0);
        free(big);
        CHECK(run_until(loop, &c.received, 2, 2000));
        CHECK(c.received == 2);
        CHECK(strcmp(c.last_devpath, "/devices/virtual/block/marker") == 0);
        CHECK(uevent_source_dropped(c.source) == 7);
        CHECK(c.lost == 0);

        uevent_source_free(c.source);
        settle(loop);
        /* The socket file goes with the source. */
        CHECK(access(path, F_OK) < 0 && errno == ENOENT);
}

static void test_socket_credentials(uv_loop_t *loop)
{
        struct ucred other = {.pid = getpid(), .uid = 12345, .gid = 12345};
        struct ucred root = {.pid = getpid(), .uid = 0, .gid = 0};
        char path[256];
        unsigned fds_before;
        Ctx c = {};
        int devnull;

        make_path(path, sizeof(path), "creds.sock");
        CHECK(uevent_source_new_socket(loop, path, on_event, on_lost, &c, &c.source) == 0);
        if (!c.source)
                return;

        /* Root may claim any uid: that is how we get a foreign uid past the 0600 mode. */
        if (geteuid() == 0) {
                CHECK(send_to(path, valid_event, sizeof(valid_event), &other, -1) == 0);
                CHECK(send_to(path, valid_event, sizeof(valid_event), &root, -1) == 0);
                CHECK(run_until(loop, &c.received, 1, 2000));
                run_for(loop, 50);
                CHECK(c.received == 1);
                CHECK(uevent_source_dropped(c.source) == 1);
        } else
                printf("SKIP foreign-uid credentials check: not root\n");

        /* A descriptor smuggled along must not stay open in the daemon. */
        devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        CHECK(devnull >= 0);
        fds_before = count_fds();
        c.received = 0;
        CHECK(send_to(path, valid_event, sizeof(valid_event), NULL, devnull) == 0);
        CHECK(send_marker(path) == 0);
        CHECK(run_until(loop, &c.received, 1, 2000));
        run_for(loop, 50);
        CHECK(count_fds() == fds_before);
        close(devnull);

        uevent_source_free(c.source);
        settle(loop);
}

static void test_socket_pause(uv_loop_t *loop)
{
        char path[256];
        Ctx c = {};

        make_path(path, sizeof(path), "pause.sock");
        CHECK(uevent_source_new_socket(loop, path, on_event, on_lost, &c, &c.source) == 0);
        if (!c.source)
                return;

        uevent_source_pause(c.source);
        uevent_source_pause(c.source); /* idempotent */
        CHECK(send_valid(path) == 0);
        run_for(loop, 100);
        CHECK(c.received == 0);
        uevent_source_resume(c.source);
        uevent_source_resume(c.source);
        CHECK(run_until(loop, &c.received, 1, 2000));

        /* Pausing from inside the handler stops the burst at once. */
        c.received = 0;
        c.pause_on_receive = true;
        for (int i = 0; i < 3; i++)
                CHECK(send_valid(path) == 0);
        CHECK(run_until(loop, &c.received, 1, 2000));
        run_for(loop, 100);
        CHECK(c.received == 1);
        c.pause_on_receive = false;
        uevent_source_resume(c.source);
        CHECK(run_until(loop, &c.received, 3, 2000));
        CHECK(c.received == 3);

        uevent_source_free(c.source);
        settle(loop);
}

/* The last datagram of a burst uses up its time: nothing else will ever wake the poll, and yet
 * whoever waits to hear that the socket is empty (a rescan after lost events) must hear it. */
static void test_socket_drained_after_slow_burst(uv_loop_t *loop)
{
        char path[256];
        Ctx c = {.slow_usec = TURN_WORK_USEC + 1000};

        make_path(path, sizeof(path), "drained.sock");
        CHECK(uevent_source_new_socket(loop, path, on_event, on_lost, &c, &c.source) == 0);
        if (!c.source)
                return;
        uevent_source_set_drained_handler(c.source, on_drained);

        for (int i = 0; i < 3; i++)
                CHECK(send_valid(path) == 0);
        CHECK(run_until(loop, &c.received, 3, 2000));
        CHECK(run_until(loop, &c.drained, 1, 2000));
        CHECK(c.received == 3);

        /* After a pause, too, with the socket empty all along. */
        c.drained = 0;
        uevent_source_pause(c.source);
        uevent_source_resume(c.source);
        CHECK(run_until(loop, &c.drained, 1, 2000));

        uevent_source_free(c.source);
        settle(loop);
}

static void test_socket_free_in_handler(uv_loop_t *loop)
{
        char path[256];
        Ctx c = {};

        make_path(path, sizeof(path), "free.sock");
        CHECK(uevent_source_new_socket(loop, path, on_event, on_lost, &c, &c.source) == 0);
        if (!c.source)
                return;

        c.free_on_receive = true;
        for (int i = 0; i < 3; i++)
                CHECK(send_valid(path) == 0);
        CHECK(run_until(loop, &c.received, 1, 2000));
        run_for(loop, 100);
        /* No callback after free, and the close callback released everything (ASan would tell). */
        CHECK(c.received == 1);
        CHECK(c.source == NULL);
        settle(loop);
        CHECK(access(path, F_OK) < 0);
}

/* Sends 5 × rounds junk datagrams, each round read before the next: the socket queues only
 * net.unix.max_dgram_qlen (often 10) datagrams. */
static void drop_rounds(uv_loop_t *loop, Ctx *c, const char *path, const char *junk, size_t len,
                        unsigned rounds)
{
        uint64_t base = uevent_source_dropped(c->source);

        for (unsigned round = 0; round < rounds; round++) {
                for (int i = 0; i < 5; i++)
                        CHECK(send_to(path, junk, len, NULL, -1) == 0);
                for (int i = 0; i < 40 && uevent_source_dropped(c->source) < base + (round + 1) * 5; i++)
                        run_for(loop, 10);
        }
}

/* stderr into logpath: the saved stderr to give to stderr_back(), or -1. */
static int stderr_into(const char *logpath)
{
        int saved, logfd;

        fflush(stderr);
        saved = dup(STDERR_FILENO);
        logfd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        CHECK(saved >= 0 && logfd >= 0);
        if (saved < 0 || logfd < 0 || dup2(logfd, STDERR_FILENO) < 0) {
                if (saved >= 0)
                        close(saved);
                if (logfd >= 0)
                        close(logfd);
                return -1;
        }
        close(logfd);
        return saved;
}

static void stderr_back(int saved)
{
        fflush(stderr);
        CHECK(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);
}

/* A flood of garbage is counted in full but logged only a few times per window. */
static void test_socket_drop_flood(uv_loop_t *loop)
{
        static const char junk[] = "this is not a uevent at all, not even close";
        char path[256], logpath[256], line[512];
        unsigned logged = 0;
        int saved;
        Ctx c = {};
        FILE *f;

        make_path(path, sizeof(path), "flood.sock");
        make_path(logpath, sizeof(logpath), "flood.log");
        log_ratelimit_attach(loop, LOG_RATELIMIT_INTERVAL_MS);
        CHECK(uevent_source_new_socket(loop, path, on_event, on_lost, &c, &c.source) == 0);
        if (!c.source)
                goto out;
        saved = stderr_into(logpath);
        if (saved < 0)
                goto out;
        drop_rounds(loop, &c, path, junk, sizeof(junk), 5);
        stderr_back(saved);

        CHECK(uevent_source_dropped(c.source) == 25);
        f = fopen(logpath, "re");
        CHECK(f != NULL);
        if (f) {
                while (fgets(line, sizeof(line), f))
                        if (strstr(line, "dropped datagram"))
                                logged++;
                fclose(f);
        }
        CHECK(logged == 10);
        (void) unlink(logpath);
out:
        uevent_source_free(c.source);
        log_ratelimit_detach();
        settle(loop);
}

static bool log_has(const char *logpath, const char *what)
{
        char line[512];
        bool found = false;
        FILE *f = fopen(logpath, "re");

        while (f && !found && fgets(line, sizeof(line), f))
                found = strstr(line, what);
        if (f)
                fclose(f);
        return found;
}

/* What a window did not log is said when it ends, even if nothing comes after it, and at the end. */
static void test_socket_drop_summary(uv_loop_t *loop)
{
        static const char junk[] = "not a uevent";
        char path[256], logpath[256];
        int saved = -1;
        Ctx c = {};

        make_path(path, sizeof(path), "summary.sock");
        make_path(logpath, sizeof(logpath), "summary.log");
        /* Long enough for the 15 datagrams below to land in one window on a loaded machine. */
        log_ratelimit_attach(loop, 1500);
        CHECK(uevent_source_new_socket(loop, path, on_event, on_lost, &c, &c.source) == 0);
        if (!c.source)
                goto out;
        saved = stderr_into(logpath);
        if (saved < 0)
                goto out;
        drop_rounds(loop, &c, path, junk, sizeof(junk), 3);
        /* Nothing more comes: the window's end tells the 5 it did not log. */
        run_for(loop, 1800);
        fflush(stderr);
        CHECK(log_has(logpath, "Suppressed 5 similar messages: uevent source"));

        /* And a source freed within a window (a long one now) says what that one did not log. */
        log_ratelimit_detach();
        settle(loop);
        log_ratelimit_attach(loop, 60000);
        drop_rounds(loop, &c, path, junk, sizeof(junk), 4);
        CHECK(!log_has(logpath, "Suppressed 10 similar messages"));
        uevent_source_free(c.source);
        c.source = NULL;
        settle(loop);
        stderr_back(saved);
        saved = -1;
        CHECK(log_has(logpath, "Suppressed 10 similar messages: uevent source"));
        (void) unlink(logpath);
out:
        if (saved >= 0)
                stderr_back(saved);
        uevent_source_free(c.source);
        log_ratelimit_detach();
        settle(loop);
}

static void test_socket_paths(uv_loop_t *loop)
{
        UeventSource *s = (UeventSource *) 0x1, *s2 = NULL;
        struct sockaddr_un addr = {.sun_family = AF_UNIX};
        char path[256], longpath[200];
        Ctx c = {};
        int fd, r;

        /* A stale socket (nobody bound any more) is replaced. */
        make_path(path, sizeof(path), "stale.sock");
        set_sun_path(&addr, path);
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        CHECK(fd >= 0 && bind(fd, (struct sockaddr *) &addr, sizeof(addr)) == 0);
        close(fd);
        CHECK(access(path, F_OK) == 0);
        CHECK(uevent_source_new_socket(loop, path, on_event, on_lost, &c, &s2) == 0);
        CHECK(send_valid(path) == 0);
        CHECK(run_until(loop, &c.received, 1, 2000));

        /* A live one is not: a second daemon must not steal the first one's socket. */
        CHECK(uevent_source_new_socket(loop, path, on_event, on_lost, &c, &s) == -EADDRINUSE);
        CHECK(s == (UeventSource *) 0x1);

        /* If someone replaced our socket file, freeing must leave theirs alone. */
        CHECK(unlink(path) == 0);
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        CHECK(fd >= 0);
        close(fd);
        uevent_source_free(s2);
        settle(loop);
        CHECK(access(path, F_OK) == 0);

        /* Something that isn't a socket is never removed. */
        CHECK(uevent_source_new_socket(loop, path, on_event, on_lost, &c, &s) == -EEXIST);
        CHECK(access(path, F_OK) == 0);
        CHECK(unlink(path) == 0);

        memset(longpath, 'x', sizeof(longpath) - 1);
        longpath[0] = '/';
        longpath[sizeof(longpath) - 1] = 0;
        CHECK(uevent_source_new_socket(loop, longpath, on_event, on_lost, &c, &s) == -ENAMETOOLONG);
        CHECK(uevent_source_new_socket(loop, "", on_event, on_lost, &c, &s) == -EINVAL);
        CHECK(uevent_source_new_socket(loop, path, NULL, on_lost, &c, &s) == -EINVAL);
        make_path(path, sizeof(path), "no/such/dir.sock");
        r = uevent_source_new_socket(loop, path, on_event, on_lost, &c, &s);
        CHECK(r == -ENOENT);
        CHECK(s == (UeventSource *) 0x1);

        /* NULL is fine everywhere. */
        uevent_source_free(NULL);
        uevent_source_pause(NULL);
        uevent_source_resume(NULL);
        CHECK(uevent_source_dropped(NULL) == 0);
}

/* ---- netlink: needs root for some checks and a kernel that delivers uevents to us ---- */

static bool make_uuid(char *buf, size_t size)
{
        uint8_t b[16];
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

        if (fd < 0 || read(fd, b, sizeof(b)) != (ssize_t) sizeof(b)) {
                if (fd >= 0)
                        close(fd);
                return false;
        }
        close(fd);
        snprintf(buf, size, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                 b[15]);
        return true;
}

static void loop_remove(void)
{
        int fd;

        if (loop_index < 0)
                return;
        fd = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return;
        /* Busy for a moment while the kernel still sends its events. */
        for (int i = 0; i < 200; i++) {
                if (ioctl(fd, LOOP_CTL_REMOVE, loop_index) >= 0 || errno != EBUSY)
                        break;
                usleep(50 * 1000);
        }
        close(fd);
        loop_index = -1;
}

/* The lock tests/lib/loopdev.py takes (hold_sys_block()): the tests that compare the model of this
 * machine's /sys/block with the kernel's would see our loop device come and go.  Held until exit. */
static void hold_sys_block(void)
{
        const char *dir = access("/run/lock", F_OK) == 0 ? "/run/lock" : "/tmp";
        char path[64];
        int fd;

        snprintf(path, sizeof(path), "%s/blkmodel-tests-sys-block.lock", dir);
        fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0)
                (void) flock(fd, LOCK_EX);
}

/* False (and the netlink tests skip) if we may not create loop devices. */
static bool loop_create(void)
{
        unsigned start = 1000 + (unsigned) getpid() % 99000;
        int fd;

        hold_sys_block();

        fd = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return false;
        for (unsigned i = start; i < start + 1000 && loop_index < 0; i++) {
                int r = ioctl(fd, LOOP_CTL_ADD, i);
                if (r >= 0)
                        loop_index = r;
                else if (errno != EEXIST)
                        break;
        }
        close(fd);
        if (loop_index < 0)
                return false;
        atexit(loop_remove);
        snprintf(loop_devpath, sizeof(loop_devpath), "/devices/virtual/block/loop%d", loop_index);
        snprintf(loop_uevent, sizeof(loop_uevent), "/sys/block/loop%d/uevent", loop_index);
        return true;
}

/* Asks the kernel for a synthetic "change" on our loop device tagged with uuid (SYNTH_UUID). */
static bool trigger(const char *uuid)
{
        char cmd[128];
        int fd, n;
        bool ok;

        n = snprintf(cmd, sizeof(cmd), "change %s BLKMODELTEST=1", uuid);
        fd = open(loop_uevent, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        ok = write(fd, cmd, (size_t) n) == n;
        close(fd);
        return ok;
}

static bool can_trigger(void)
{
        return loop_index >= 0 && access(loop_uevent, W_OK) == 0;
}

/*
 * Triggers count synthetic events, all tagged with a fresh uuid, while c's source is paused: they
 * wait on the socket together and reach the source as one burst when it resumes.  False if an
 * event could not be triggered (the source may be left paused).
 */
static bool trigger_burst(Ctx *c, int count)
{
        if (!make_uuid(c->want_uuid, sizeof(c->want_uuid)))
                return false;
        uevent_source_pause(c->source);
        for (int i = 0; i < count; i++)
                if (!trigger(c->want_uuid))
                        return false;
        uevent_source_resume(c->source);
        return true;
}

static bool fd_is_open(int fd)
{
        return fcntl(fd, F_GETFD) >= 0;
}

static void test_netlink_own(uv_loop_t *loop)
{
        Ctx c = {};

        CHECK(uevent_source_new_netlink(loop, -1, 0, on_event, on_lost, &c, &c.source) == 0);
        if (!c.source)
                return;

        if (!can_trigger() || !make_uuid(c.want_uuid, sizeof(c.want_uuid)) || !trigger(c.want_uuid))
                printf("SKIP netlink delivery: no loop device of our own to trigger\n");
        else if (!run_until(loop, &c.matched, 1, 3000))
                printf("SKIP netlink delivery: no uevent arrived (another network namespace?)\n");
        else {
                CHECK(c.matched == 1);
                CHECK(strcmp(c.last_devpath, loop_devpath) == 0 || c.received > 1);
                CHECK(uevent_source_dropped(c.source) == 0);
        }

        uevent_source_free(c.source);
        settle(loop);
}

static void test_netlink_handed_over(uv_loop_t *loop)
{
        struct sockaddr_nl addr = {.nl_family = AF_NETLINK}, self = {};
        socklen_t l = sizeof(self);
        UeventSource *s = (UeventSource *) 0x1;
        Ctx c = {};
        int fd, other, r;

        /* The wrong kinds of socket are refused, and stay the caller's. */
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        CHECK(uevent_source_new_netlink(loop, fd, 0, on_event, on_lost, &c, &s) == -EAFNOSUPPORT);
        CHECK(fd_is_open(fd));
        close(fd);
        fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        CHECK(uevent_source_new_netlink(loop, fd, 0, on_event, on_lost, &c, &s) == -EPROTONOSUPPORT);
        CHECK(fd_is_open(fd));
        close(fd);
        CHECK(s == (UeventSource *) 0x1);
        CHECK(uevent_source_new_netlink(loop, -2, 0, on_event, on_lost, &c, &s) == -EINVAL);
        CHECK(uevent_source_new_netlink(loop, -1, 0, NULL, on_lost, &c, &s) == -EINVAL);

        /*
         * As systemd might hand it over, minus what the unit may have left
         * out: blocking, no group, no SO_PASSCRED.  The source fixes all three.
         */
        fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
        CHECK(fd >= 0);
        CHECK(bind(fd, (struct sockaddr *) &addr, sizeof(addr)) == 0);
        CHECK(getsockname(fd, (struct sockaddr *) &self, &l) == 0);
        CHECK(uevent_source_new_netlink(loop, fd, 0, on_event, on_lost, &c, &c.source) == 0);
        if (!c.source) {
                close(fd);
                return;
        }
        CHECK(fcntl(fd, F_GETFL) & O_NONBLOCK);

        if (can_trigger() && make_uuid(c.want_uuid, sizeof(c.want_uuid)) && trigger(c.want_uuid)) {
                if (run_until(loop, &c.matched, 1, 3000))
                        CHECK(c.matched == 1);
                else
                        printf("SKIP handed-over netlink delivery: no uevent arrived\n");
        }

        /*
         * A user-space sender that unicasts a perfect-looking uevent to our
         * port (root may) is not the kernel: dropped.
         */
        other = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
        if (other >= 0 && geteuid() == 0) {
                struct sockaddr_nl to = {.nl_family = AF_NETLINK, .nl_pid = self.nl_pid};
                unsigned dropped = 0;

                r = (int) sendto(other, valid_event, sizeof(valid_event), 0, (struct sockaddr *) &to,
                                 sizeof(to));
                CHECK(r == (int) sizeof(valid_event));
                for (int i = 0; i < 40 && dropped == 0; i++) {
                        run_for(loop, 50);
                        dropped = (unsigned) uevent_source_dropped(c.source);
                }
                CHECK(dropped == 1);
        } else
                printf("SKIP netlink unicast spoof: not root\n");
        if (other >= 0)
                close(other);

        /* The source owned the fd: it is closed once the close callback ran. */
        uevent_source_free(c.source);
        settle(loop);
        CHECK(!fd_is_open(fd));
}

/*
 * A tiny receive buffer, a paused source and a burst of events: the kernel
 * drops some and says so with ENOBUFS, which libuv reports as POLLERR and
 * stops the handle.  The lost handler must run, and the source must keep
 * delivering afterwards.
 */
static void test_netlink_overrun(uv_loop_t *loop)
{
        char marker[40];
        Ctx c = {};

        if (!can_trigger()) {
                printf("SKIP netlink overrun: no loop device of our own to trigger\n");
                return;
        }

        CHECK(uevent_source_new_netlink(loop, -1, 1, on_event, on_lost, &c, &c.source) == 0);
        if (!c.source)
                return;
        if (!trigger_burst(&c, 64))
                goto out;

        if (!run_until(loop, &c.received, 1, 3000)) {
                printf("SKIP netlink overrun: no uevent arrived\n");
                goto out;
        }
        run_for(loop, 100);
        CHECK(c.lost >= 1);
        CHECK(c.matched >= 1 && c.matched < 64);

        /* Still alive after the POLLERR. */
        memcpy(marker, c.want_uuid, sizeof(marker));
        CHECK(make_uuid(c.want_uuid, sizeof(c.want_uuid)));
        c.matched = 0;
        CHECK(trigger(c.want_uuid));
        CHECK(run_until(loop, &c.matched, 1, 3000));
out:
        uevent_source_free(c.source);
        settle(loop);
}

/* One poll callback reads at most 256 datagrams (and for at most 4 ms), so a burst cannot starve the rest of
 * the loop. */
static void test_netlink_burst_cap(uv_loop_t *loop)
{
        Ctx c = {};

        if (!can_trigger()) {
                printf("SKIP netlink burst: no loop device of our own to trigger\n");
                return;
        }

        CHECK(uevent_source_new_netlink(loop, -1, 0, on_event, on_lost, &c, &c.source) == 0);
        if (!c.source)
                return;
        if (!trigger_burst(&c, 300))
                goto out;

        /* The first callback: exactly 256, however many more are queued. */
        for (int i = 0; i < 100 && c.received == 0; i++)
                uv_run(loop, UV_RUN_ONCE);
        if (c.received == 0) {
                printf("SKIP netlink burst: no uevent arrived\n");
                goto out;
        }
        /* At most 256; fewer when the burst's time ran out first (a loaded machine, a sanitizer). */
        CHECK(c.received > 0 && c.received <= READ_BURST_MAX);
        CHECK(run_until(loop, &c.matched, 300, 3000));
        CHECK(c.matched == 300);
        CHECK(c.lost == 0);
out:
        uevent_source_free(c.source);
        settle(loop);
}

int main(void)
{
        uv_loop_t loop;

        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }
        if (uv_loop_init(&loop) < 0)
                return 1;

        test_socket_basic(&loop);
        test_socket_credentials(&loop);
        test_socket_pause(&loop);
        test_socket_drained_after_slow_burst(&loop);
        test_socket_free_in_handler(&loop);
        test_socket_drop_flood(&loop);
        test_socket_drop_summary(&loop);
        test_socket_paths(&loop);
        test_socket_receive_short_of_memory(&loop);
        test_socket_receive_short_for_a_while(&loop);
        test_socket_receive_short_twice(&loop);

        /* Created before any netlink source listens: its own "add" reaches none of them. */
        if (!loop_create())
                printf("SKIP creating a loop device: %s\n", strerror(errno));
        test_netlink_own(&loop);
        test_netlink_handed_over(&loop);
        test_netlink_overrun(&loop);
        test_netlink_burst_cap(&loop);
        loop_remove();

        /* Everything was closed: the loop must have nothing left. */
        settle(&loop);
        CHECK(uv_loop_close(&loop) == 0);
        (void) rmdir(tmpdir);

        return tests_summary();
}
