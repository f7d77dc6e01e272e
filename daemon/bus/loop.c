/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include "base/log.h"
#include "bus/loop.h"
#include "common/util.h"

/* Enough rounds to drain a burst; level-triggered polling brings us back for the rest (and sd-bus's
 * timeout of 0 for what it has read already).  Not for longer than a slice: a burst of heavy calls
 * (a reading in parts asks 64 at a time) is spread over turns like the rest of our work. */
#define PROCESS_ROUNDS_MAX 64
#define PROCESS_SLICE_NSEC (4 * 1000 * 1000)

/* The send buffer while a large message goes out: one write copies at most about this much. */
#define BOUNDED_SNDBUF (256 * 1024)

struct BusLoop {
        uv_loop_t *loop;
        sd_bus *bus;
        uv_poll_t poll;
        uv_timer_t timer;
        uv_prepare_t prepare;
        int poll_events; /* what the poll handle waits for now; -1 = stopped */
        int sndbuf;      /* the socket's own send buffer while bounded (bus_loop_bound_writes()), or 0 */
        bool dead;
        unsigned n_open_handles;
        BusLoopDisconnected on_disconnect;
        void *userdata;
};

static void bus_loop_disconnected(BusLoop *l)
{
        if (l->dead)
                return;
        l->dead = true;
        /* sd-bus has closed its fd already: libuv must stop watching it right now. */
        uv_poll_stop(&l->poll);
        uv_timer_stop(&l->timer);
        l->poll_events = -1;
        if (l->on_disconnect)
                l->on_disconnect(l, l->userdata);
}

static void bus_loop_process(BusLoop *l)
{
        uint64_t start = uv_hrtime();

        for (unsigned i = 0; i < PROCESS_ROUNDS_MAX && !l->dead && uv_hrtime() - start < PROCESS_SLICE_NSEC;
             i++) {
                int r = sd_bus_process(l->bus, NULL);
                if (r < 0) {
                        log_error_errno(r, "Lost the bus connection: %m");
                        bus_loop_disconnected(l);
                        return;
                }
                if (r == 0)
                        break;
        }
        if (!l->dead && !sd_bus_is_open(l->bus))
                bus_loop_disconnected(l);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
        bus_loop_process(h->data);
}

static void on_timer(uv_timer_t *h)
{
        bus_loop_process(h->data);
}

void bus_loop_bound_writes(BusLoop *l)
{
        socklen_t len = sizeof(l->sndbuf);
        int fd = sd_bus_get_fd(l->bus), v = BOUNDED_SNDBUF;

        if (l->dead || l->sndbuf > 0 || fd < 0)
                return;
        if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &l->sndbuf, &len) < 0 || l->sndbuf <= 2 * v ||
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)) < 0)
                l->sndbuf = 0;
}

static void unbound_writes(BusLoop *l)
{
        /* The kernel reports twice what was set (its bookkeeping's share).  sd-bus, as root, forced
         * its size past net.core.wmem_max: so do we, or settle for the maximum. */
        int fd = sd_bus_get_fd(l->bus), v = l->sndbuf / 2;

        l->sndbuf = 0;
        if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)) < 0)
                (void) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
}

static void on_prepare(uv_prepare_t *h)
{
        BusLoop *l = h->data;
        uint64_t until, queued;
        int events, want = 0, r;

        if (l->dead)
                return;
        if (l->sndbuf > 0 && sd_bus_get_n_queued_write(l->bus, &queued) >= 0 && queued == 0)
                unbound_writes(l);

        events = sd_bus_get_events(l->bus);
        if (events < 0) {
                bus_loop_disconnected(l);
                return;
        }
        if (events & POLLIN)
                want |= UV_READABLE;
        if (events & POLLOUT)
                want |= UV_WRITABLE;
        if (want != l->poll_events) {
                if (want == 0)
                        uv_poll_stop(&l->poll);
                else if ((r = uv_poll_start(&l->poll, want, on_poll)) < 0) {
                        log_error("Cannot watch the bus connection: %s", uv_strerror(r));
                        bus_loop_disconnected(l);
                        return;
                }
                l->poll_events = want;
        }

        r = sd_bus_get_timeout(l->bus, &until);
        if (r < 0 || until == UINT64_MAX) {
                uv_timer_stop(&l->timer);
                return;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t now = (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
        /* 0 means "process now": the read queue holds a message a synchronous call parked there. */
        uint64_t ms = until > now ? (until - now + 999) / 1000 : 0;
        uv_timer_start(&l->timer, on_timer, ms, 0);
}

int bus_loop_attach(uv_loop_t *loop, sd_bus *bus, BusLoopDisconnected on_disconnect, void *userdata,
                    BusLoop **ret)
{
        BusLoop *l;
        int fd, r;

        fd = sd_bus_get_fd(bus);
        if (fd < 0)
                return fd;
        l = calloc(1, sizeof(BusLoop));
        if (!l)
                return -ENOMEM;
        l->loop = loop;
        l->bus = sd_bus_ref(bus);
        l->on_disconnect = on_disconnect;
        l->userdata = userdata;
        l->poll_events = -1;

        r = uv_poll_init(loop, &l->poll, fd);
        if (r < 0) {
                sd_bus_unref(l->bus);
                free(l);
                return r;
        }
        uv_timer_init(loop, &l->timer);
        uv_prepare_init(loop, &l->prepare);
        l->poll.data = l->timer.data = l->prepare.data = l;
        l->n_open_handles = 3;
        uv_prepare_start(&l->prepare, on_prepare);
        *ret = l;
        return 0;
}

static void on_close(uv_handle_t *h)
{
        BusLoop *l = h->data;
        if (--l->n_open_handles == 0) {
                sd_bus_unref(l->bus);
                free(l);
        }
}

void bus_loop_free(BusLoop *l)
{
        if (!l)
                return;
        l->dead = true;
        uv_close((uv_handle_t *) &l->poll, on_close);
        uv_close((uv_handle_t *) &l->timer, on_close);
        uv_close((uv_handle_t *) &l->prepare, on_close);
}
