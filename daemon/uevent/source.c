/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/netlink.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/log.h"
#include "base/turn.h"
#include "common/util.h"
#include "uevent/source-internal.h"

static const char *source_name(const UeventSource *s)
{
        switch (s->kind) {
        case UEVENT_SOURCE_NETLINK:
                return "netlink";
        case UEVENT_SOURCE_SOCKET:
                return s->path;
        }
        return "?";
}

static void on_poll(uv_poll_t *handle, int status, int events);

static void on_close(uv_handle_t *handle)
{
        UeventSource *s = handle->data;
        struct stat st;

        if (--s->open_handles > 0)
                return;

        /* The handle is gone from the loop; only now may the fd go. */
        if (s->fd >= 0)
                (void) close(s->fd);

        /* Remove the socket file only if it is still the one we bound, not a successor's. */
        if (s->path && lstat(s->path, &st) >= 0 && S_ISSOCK(st.st_mode) && st.st_dev == s->path_dev &&
            st.st_ino == s->path_ino)
                (void) unlink(s->path);

        free(s->path);
        free(s);
}

/* Starts or stops the poll handle to match what the flags want. */
static void update_polling(UeventSource *s)
{
        bool want = !s->paused && !s->closing && !s->dead && !s->resting;
        int r;

        if (want == s->polling)
                return;

        if (want) {
                r = uv_poll_start(&s->poll, UV_READABLE, on_poll);
                if (r < 0) {
                        /* Only possible for a misuse of libuv; nothing will come from this source. */
                        log_error("uevent source %s: cannot poll: %s", source_name(s), uv_strerror(r));
                        s->dead = true;
                        return;
                }
        } else
                (void) uv_poll_stop(&s->poll);
        s->polling = want;
}

_printf_(2, 3) static void log_drop(UeventSource *s, const char *fmt, ...)
{
        _cleanup_(freep) char *msg = NULL;
        va_list ap;
        int r;

        s->dropped++;
        if (LOG_WARNING > log_max_level)
                return;
        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        log_ratelimit_internal(&s->drop_log, LOG_WARNING, 0, "uevent source %s: dropped datagram: %s",
                               source_name(s), r < 0 ? "(out of memory)" : msg);
}

static void report_lost(UeventSource *s, const char *why)
{
        log_warning("uevent source %s: events lost (%s)", source_name(s), why);
        if (s->lost)
                s->lost(s, s->userdata);
}

/* Closes every descriptor a sender slipped into a SCM_RIGHTS message: we never want them. */
static void close_passed_fds(struct msghdr *m)
{
        for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
                size_t n;
                const uint8_t *data;

                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0))
                        continue;
                n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                data = CMSG_DATA(c);
                for (size_t i = 0; i < n; i++) {
                        int fd;

                        memcpy(&fd, data + i * sizeof(int), sizeof(int));
                        (void) close(fd);
                }
        }
}

static const struct ucred *find_ucred(struct msghdr *m)
{
        for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
                    c->cmsg_len == CMSG_LEN(sizeof(struct ucred)))
                        return (const struct ucred *) CMSG_DATA(c);
        return NULL;
}

/*
 * Reads and processes one datagram.  Returns 1 if one was consumed
 * (delivered, ignored or dropped), 0 if the socket is empty, -ENOBUFS if
 * the kernel reported lost events, another negative errno on a read error.
 */
static int read_one(UeventSource *s)
{
        union {
                struct cmsghdr header;
                uint8_t buf[CMSG_SPACE(sizeof(struct ucred))];
        } control;
        union {
                struct sockaddr sa;
                struct sockaddr_nl nl;
                struct sockaddr_un un;
        } sender;
        struct iovec iov = {
                        .iov_base = s->buf,
                        .iov_len = sizeof(s->buf),
        };
        struct msghdr m = {
                        .msg_name = &sender,
                        .msg_namelen = sizeof(sender),
                        .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = &control,
                        .msg_controllen = sizeof(control),
        };
        const struct ucred *cred;
        Uevent *u = NULL;
        ssize_t n;
        int r;

        memset(&control, 0, sizeof(control));
        memset(&sender, 0, sizeof(sender));

        n = recvmsg(s->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                        return 0;
                if (errno == EINTR)
                        return 1;
                return -errno;
        }

        close_passed_fds(&m);

        if (m.msg_flags & MSG_TRUNC) {
                log_drop(s, "longer than %d bytes", UEVENT_SIZE_MAX);
                return 1;
        }
        if (m.msg_flags & MSG_CTRUNC) {
                log_drop(s, "control data truncated");
                return 1;
        }

        cred = find_ucred(&m);
        if (!cred) {
                log_drop(s, "no sender credentials");
                return 1;
        }

        switch (s->kind) {
        case UEVENT_SOURCE_NETLINK:
                /* Only the kernel: port 0, multicast to group 1 (unicast has nl_groups 0), uid 0. */
                if (m.msg_namelen < sizeof(struct sockaddr_nl) || sender.nl.nl_family != AF_NETLINK) {
                        log_drop(s, "no netlink sender address");
                        return 1;
                }
                if (sender.nl.nl_pid != 0) {
                        log_drop(s, "sent by netlink port %" PRIu32 ", not the kernel", sender.nl.nl_pid);
                        return 1;
                }
                if (sender.nl.nl_groups != UEVENT_GROUP_KERNEL) {
                        log_drop(s, "sent to netlink groups 0x%" PRIx32 ", not the kernel's group",
                                 sender.nl.nl_groups);
                        return 1;
                }
                if (cred->uid != 0) {
                        log_drop(s, "sent by uid %u, not the kernel", (unsigned) cred->uid);
                        return 1;
                }
                break;
        case UEVENT_SOURCE_SOCKET:
                if (cred->uid != 0 && cred->uid != s->uid) {
                        log_drop(s, "sent by uid %u (pid %d), not permitted", (unsigned) cred->uid,
                                 (int) cred->pid);
                        return 1;
                }
                break;
        }

        r = uevent_parse(s->buf, (size_t) n, &u);
        switch (r) {
        case 0:
                s->handler(s, u, s->userdata);
                return 1;
        case -EOPNOTSUPP:
                /* A newer kernel's action: nothing we can mirror, but an event a client will not see, so
                 * said where the operator looks.  Well-formed: the header is "[a-z_]+@/...". */
                log_drop(s, "action '%.*s' unknown to this daemon",
                         (int) strcspn((const char *) s->buf, "@"), (const char *) s->buf);
                return 1;
        case -ENOMEM:
                /* A good event we could not take in: that is a lost event, not a bad one. */
                report_lost(s, "out of memory");
                return 1;
        case -EMSGSIZE:
                log_drop(s, "%zd bytes, not %d to %d", n, UEVENT_SIZE_MIN, UEVENT_SIZE_MAX);
                return 1;
        case -EPROTO:
                log_drop(s, "udev's format, not the kernel's");
                return 1;
        default:
                log_drop(s, "malformed uevent (%s), %zd bytes",
                         r == -EBADMSG ? uevent_parse_malformed() : strerror(-r), n);
                return 1;
        }
}

static void on_more(uv_idle_t *handle);

static void on_rested(uv_timer_t *timer)
{
        UeventSource *s = timer->data;

        s->resting = false;
        update_polling(s);
        /* Whoever waits for "drained" hears it once the socket is read again. */
        (void) uevent_source_watch_drained(s);
}

static void start_rest(UeventSource *s)
{
        s->resting = true;
        update_polling(s);
        (void) uv_timer_start(&s->rest, on_rested, RESOURCE_REST_MS, 0);
}

/* Reads until the socket is empty, at most READ_BURST_MAX datagrams. Returns true if anything happened. */
static bool read_burst(UeventSource *s)
{
        uint64_t start = now_usec();
        bool progress = false, drained = false;

        for (unsigned i = 0; i < READ_BURST_MAX && (i == 0 || !turn_slice_over(start)); i++) {
                int r;

                /* A callback may have paused or freed us. */
                if (s->paused || s->closing || s->dead || s->resting)
                        break;

                r = read_one(s);
                if (r == 0) {
                        /* Nothing left that a failed receive may have left behind: the next one is
                         * another loss, told again. */
                        s->short_of_resources = false;
                        drained = true;
                        if (s->drained)
                                s->drained(s, s->userdata);
                        break;
                }
                progress = true;
                if (r == -ENOBUFS) {
                        /* The kernel dropped events; the queue behind the error is intact, keep reading. */
                        report_lost(s, "receive buffer overrun");
                        continue;
                }
                if (errno_is_resource(r)) {
                        /* Out of memory or descriptors while receiving: whether the datagram was taken
                         * is not said, so it counts as lost (a Rescan follows; once until a datagram
                         * comes again), and reading goes on after a rest.  Ending the source here
                         * stopped every later event. */
                        if (!s->short_of_resources)
                                report_lost(s, strerror(-r));
                        s->short_of_resources = true;
                        start_rest(s);
                        break;
                }
                if (r < 0) {
                        log_error("uevent source %s: read failed, no more events from it: %s",
                                  source_name(s), strerror(-r));
                        s->dead = true;
                        update_polling(s);
                        /* Nothing more will come: whoever waits for the end of the queue has it. */
                        if (s->drained)
                                s->drained(s, s->userdata);
                        break;
                }
                s->short_of_resources = false;
        }

        if (!drained && !s->paused && !s->closing && !s->dead && !s->resting)
                (void) uv_idle_start(&s->more, on_more);
        return progress;
}

/* Only looks: what is queued is the poll's to read, one burst a turn of the loop. */
static void on_more(uv_idle_t *handle)
{
        UeventSource *s = handle->data;

        (void) uv_idle_stop(&s->more);
        if (s->paused || s->closing || s->dead || s->resting)
                return;
        if (recv(s->fd, NULL, 0, MSG_PEEK | MSG_DONTWAIT) >= 0)
                return;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
                s->short_of_resources = false; /* as in read_burst() */
                if (s->drained)
                        s->drained(s, s->userdata);
        } else if (errno == ENOBUFS) {
                /* Taking the error clears it: report it here, then look again. */
                report_lost(s, "receive buffer overrun");
                (void) uv_idle_start(&s->more, on_more);
        } else if (errno == EINTR)
                (void) uv_idle_start(&s->more, on_more);
}

static void on_poll(uv_poll_t *handle, int status, int events)
{
        UeventSource *s = handle->data;
        bool progress;

        if (s->closing)
                return;

        if (status < 0) {
                int err = 0;
                socklen_t l = sizeof(err);

                /*
                 * libuv turns POLLERR into UV_EBADF and stops the handle.  On
                 * netlink that is how a receive-buffer overrun shows up: the
                 * socket's pending error is ENOBUFS.  Fetching it clears it;
                 * then read what is queued and poll again.
                 */
                s->polling = false;
                if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
                        err = errno;

                progress = err != 0;
                if (err == ENOBUFS)
                        report_lost(s, "receive buffer overrun");
                else if (err != 0)
                        log_warning("uevent source %s: socket error: %s", source_name(s), strerror(err));

                if (!s->closing && read_burst(s))
                        progress = true;

                if (s->closing || s->dead)
                        return;
                if (progress)
                        s->error_spins = 0;
                else if (++s->error_spins > ERROR_SPIN_MAX) {
                        log_error("uevent source %s: poll keeps failing (%s), no more events from it",
                                  source_name(s), uv_strerror(status));
                        s->dead = true;
                        return;
                }
                update_polling(s);
                return;
        }

        (void) read_burst(s);
}

int source_start(uv_loop_t *loop, UeventSourceKind kind, int fd, UeventSourceHandler handler,
                 UeventSourceLostHandler lost, void *userdata, UeventSource **ret)
{
        UeventSource *s;
        int r;

        s = calloc(1, sizeof(UeventSource));
        if (!s)
                return -ENOMEM;

        s->kind = kind;
        s->fd = -1;
        s->handler = handler;
        s->lost = lost;
        s->userdata = userdata;
        s->uid = geteuid();

        /* Neither can fail. */
        (void) uv_idle_init(loop, &s->more);
        (void) uv_timer_init(loop, &s->rest);
        s->more.data = s->rest.data = s;
        s->open_handles = 2;
        r = uv_poll_init(loop, &s->poll, fd);
        if (r >= 0) {
                s->poll.data = s;
                s->open_handles = 3;
                r = uv_poll_start(&s->poll, UV_READABLE, on_poll);
        }
        if (r < 0) {
                /* Registered: the memory must wait for the close callbacks, the fd stays the caller's. */
                s->closing = true;
                if (s->open_handles == 3)
                        uv_close((uv_handle_t *) &s->poll, on_close);
                uv_close((uv_handle_t *) &s->more, on_close);
                uv_close((uv_handle_t *) &s->rest, on_close);
                return r;
        }
        s->polling = true;
        s->fd = fd;

        *ret = s;
        return 0;
}

void uevent_source_drain(UeventSource *s)
{
        /* read_burst() is bounded so that the loop stays responsive; here we want the queue empty. */
        for (unsigned i = 0; i < 1024 && read_burst(s); i++)
                ;
}

void uevent_source_set_drained_handler(UeventSource *s, UeventSourceDrainedHandler drained)
{
        s->drained = drained;
}

bool uevent_source_watch_drained(UeventSource *s)
{
        if (!s || s->closing || s->dead)
                return false;
        /* Paused, the resume looks. */
        if (!s->paused)
                (void) uv_idle_start(&s->more, on_more);
        return true;
}

void uevent_source_pause(UeventSource *s)
{
        if (!s || s->closing)
                return;
        s->paused = true;
        update_polling(s);
}

void uevent_source_resume(UeventSource *s)
{
        if (!s || s->closing)
                return;
        s->paused = false;
        update_polling(s);
        /* Whoever waits for "drained" must hear it even if nothing comes any more. */
        (void) uevent_source_watch_drained(s);
}

uint64_t uevent_source_dropped(const UeventSource *s)
{
        return s ? s->dropped : 0;
}

void uevent_source_free(UeventSource *s)
{
        if (!s || s->closing)
                return;

        /* uv_close() stops the poll at once; the fd and memory go in on_close(). */
        s->closing = true;
        s->polling = false;
        log_ratelimit_done(&s->drop_log);
        uv_close((uv_handle_t *) &s->poll, on_close);
        uv_close((uv_handle_t *) &s->more, on_close);
        uv_close((uv_handle_t *) &s->rest, on_close);
}

int source_set_passcred(int fd)
{
        int one = 1;

        if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0)
                return -errno;
        return 0;
}
