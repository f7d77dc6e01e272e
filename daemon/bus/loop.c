/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <poll.h>
#include <sys/socket.h>

#include "base/log.h"
#include "base/turn.h"
#include "bus/errors.h"
#include "bus/loop.h"
#include "common/time-util.h"
#include "common/util.h"

/* Enough rounds to drain a burst; level-triggered polling brings us back for the rest (and sd-bus's
 * timeout of 0 for what it has read already).  Not for longer than a slice of the turn: a burst of
 * heavy calls (a reading in parts asks 64 at a time) is spread over turns like the rest of our work. */
#define PROCESS_ROUNDS_MAX 64

/*
 * The socket's send buffer.  Whatever we send waits there in order, a method reply behind every
 * signal sent before it, and as root sd-bus makes it take 16 MiB.  Kept small, the rest waits in
 * sd-bus's write queue, whose length the back-pressure watches (bus/backlog.c), so that a reply is
 * never behind more than both bounds.  One write of a large message then copies about this much,
 * more only while the bus reads as fast as we write (a reply of 26 MB went out in one system call of
 * 61-82 ms with 16 MiB; with 256 KiB, 36 and 73 ms in 2 of 13 tries).
 * 1,000 loop devices, storms of 3,000 changes, a ping every 5 ms, its worst reply (median of 10
 * storms, longest): 16 MiB and a queue of 1,024: 11.6, 25.1 ms; 64 KiB and 64: 8.3, 10.8 ms.
 * 64 KiB and 1,024 was worse than either (30 ms, median of 6): the queue is the rest of the bound.
 */
#define BUS_SNDBUF (64 * 1024)

struct BusLoop {
        uv_loop_t *loop;
        sd_bus *bus;
        uv_poll_t poll;
        uv_timer_t timer;
        uv_prepare_t prepare;
        sd_bus_slot *naming; /* names each message's part of the turn (base/turn.h) */
        int poll_events;     /* what the poll handle waits for now; -1 = stopped */
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
        uint64_t start = now_usec();

        /* Shared with the turn's other slices (base/turn.h), but always one round. */
        for (unsigned i = 0; i < PROCESS_ROUNDS_MAX && !l->dead && (i == 0 || !turn_slice_over(start));
             i++) {
                TURN_PART("D-Bus I/O"); /* until a message is read: name_message() */
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

/* A filter sees every message read, before it is dispatched. */
static int name_message(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
        turn_part_rename("the D-Bus %s %s.%s on %s from %s",
                         sd_bus_message_is_method_call(m, NULL, NULL) ? "call" : "message",
                         strna(sd_bus_message_get_interface(m)), strna(sd_bus_message_get_member(m)),
                         strna(sd_bus_message_get_path(m)), strna(sd_bus_message_get_sender(m)));
        return 0;
}

static void on_poll(uv_poll_t *h, int status, int events)
{
        bus_loop_process(h->data);
}

static void on_timer(uv_timer_t *h)
{
        bus_loop_process(h->data);
}

static void on_prepare(uv_prepare_t *h)
{
        BusLoop *l = h->data;
        uint64_t until;
        int events, want = 0, r;

        if (l->dead)
                return;
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
        uint64_t now = now_usec();
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
        /* Only ever lowered, which needs no privilege; at worst the kernel's default stays. */
        if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int){BUS_SNDBUF}, sizeof(int)) < 0)
                log_debug_errno(-errno, "Cannot bound the bus socket's send buffer, leaving it: %m");

        r = uv_poll_init(loop, &l->poll, fd);
        if (r < 0) {
                sd_bus_unref(l->bus);
                free(l);
                return r;
        }
        /* Without it a long turn is still logged, only not named. */
        r = sd_bus_add_filter(bus, &l->naming, name_message, l);
        if (r < 0)
                log_debug_errno(r, "Cannot name the bus's messages in the loop's long turns: %m");
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
                sd_bus_slot_unref(l->naming);
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

/* What a call that comes while we exit gets, rather than UnknownObject for an object that was there. */
static int refuse_call(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
        if (!sd_bus_message_is_method_call(m, NULL, NULL))
                return 0;
        bus_reply_exiting(m);
        return 1;
}

void bus_flush_bounded(sd_bus *bus, const bool *released)
{
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *refusing = NULL;
        uint64_t queued, least = UINT64_MAX, moved = now_usec();
        int r;

        (void) sd_bus_add_filter(bus, &refusing, refuse_call, NULL);
        for (;;) {
                if (sd_bus_get_n_queued_write(bus, &queued) < 0)
                        return;
                if (queued == 0 && (!released || *released))
                        return;
                if (queued == 0) {
                        /* Only the reply to ReleaseName awaited: as long as a stuck bus, at most. */
                        if (now_usec() - moved >= BUS_STUCK_MSEC * USEC_PER_MSEC)
                                return;
                } else if (queued < least) {
                        least = queued;
                        moved = now_usec();
                } else if (now_usec() - moved >= BUS_STUCK_MSEC * USEC_PER_MSEC) {
                        log_warning("The bus took none of our messages for %d s; %" PRIu64 " not sent.",
                                    BUS_STUCK_MSEC / 1000, queued);
                        return;
                }
                /* Writes what the socket takes and reads one message; 0 when there was nothing to do. */
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return;
                if (r == 0 && sd_bus_wait(bus, 100 * USEC_PER_MSEC) < 0)
                        return;
        }
}
