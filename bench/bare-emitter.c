/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The reference of bench/uevent-throughput.py: what the cheapest possible
 * blkmodeld would do per uevent, i.e. build and send one
 * org.blkmodel1.Manager.Uevent(t s s o a{ss}) signal on /org/blkmodel1,
 * with nothing else.
 *
 *   bare-emitter ADDRESS COUNT [RATE]
 *
 * RATE 0 or absent: as fast as the bus takes them.  Otherwise RATE signals
 * per second on an absolute schedule (the latency reference).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-bus.h>

#include "bus-open.h"
#include "uevent-env.h"

/* The daemon's back-pressure marks (daemon/bus/backlog.c) and its socket's send buffer
 * (daemon/bus/loop.c), so both sides queue alike. */
#define WRITE_QUEUE_HIGH 64
#define WRITE_QUEUE_LOW 16
#define SNDBUF (64 * 1024)

#define DEVPATH "/devices/virtual/block/loop0"
#define OBJECT "/org/blkmodel1/block/loop0"

static int send_one(sd_bus *bus, uint64_t seqnum)
{
        __attribute__((cleanup(sd_bus_message_unrefp))) sd_bus_message *m = NULL;
        BenchEnv e;
        int r;

        bench_env_fill(&e, "change", DEVPATH, seqnum, bench_now_ns());
        r = sd_bus_message_new_signal(bus, &m, "/org/blkmodel1/Manager", "org.blkmodel1.Manager", "Uevent");
        if (r >= 0)
                r = sd_bus_message_append(m, "tsso", seqnum, "change", DEVPATH, OBJECT);
        /* Appended pair by pair, as the daemon does (daemon/bus-manager.c append_event). */
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "{ss}");
        for (int i = 0; r >= 0 && i < BENCH_ENV_N; i++)
                r = sd_bus_message_append(m, "{ss}", e.keys[i], e.values[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r < 0 ? r : sd_bus_send(bus, m, NULL);
}

/*
 * sd_bus_send() only queues once the socket is full, and a long queue is
 * drained quadratically and overflows at ~393k (NOTES.md): past HIGH, let
 * sd_bus_process() write until the queue is down to LOW.
 */
static int drain(sd_bus *bus)
{
        uint64_t queued;
        int r;

        r = sd_bus_get_n_queued_write(bus, &queued);
        if (r < 0 || queued <= WRITE_QUEUE_HIGH)
                return r;
        for (;;) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return r;
                r = sd_bus_get_n_queued_write(bus, &queued);
                if (r < 0 || queued <= WRITE_QUEUE_LOW)
                        return r;
                if (r == 0) {
                        r = sd_bus_wait(bus, UINT64_MAX);
                        if (r < 0 && r != -EINTR)
                                return r;
                }
        }
}

int main(int argc, char **argv)
{
        __attribute__((cleanup(sd_bus_flush_close_unrefp))) sd_bus *bus = NULL;
        uint64_t count, rate = 0, start;
        const char *unique;
        int r;

        if (argc < 3 || argc > 4) {
                fprintf(stderr, "usage: %s ADDRESS COUNT [RATE]\n", argv[0]);
                return 2;
        }
        count = strtoull(argv[2], NULL, 10);
        if (argc == 4)
                rate = strtoull(argv[3], NULL, 10);

        r = bench_bus_open(argv[1], &bus);
        /*
         * Waits for the Hello reply: until then sd-bus only queues, and a
         * paced run would stamp signals that sit in the queue.
         */
        if (r >= 0)
                r = sd_bus_get_unique_name(bus, &unique);
        if (r >= 0 && setsockopt(sd_bus_get_fd(bus), SOL_SOCKET, SO_SNDBUF, &(int){SNDBUF}, sizeof(int)) < 0)
                r = -errno;
        if (r < 0) {
                fprintf(stderr, "bare-emitter: cannot connect: %s\n", strerror(-r));
                return 1;
        }

        start = bench_now_ns();
        for (uint64_t i = 0; i < count; i++) {
                if (rate > 0)
                        bench_pace(start, i, rate);
                r = send_one(bus, i + 1);
                if (r >= 0)
                        r = drain(bus);
                if (r < 0) {
                        fprintf(stderr, "bare-emitter: signal %" PRIu64 ": %s\n", i + 1, strerror(-r));
                        return 1;
                }
        }
        r = sd_bus_flush(bus);
        if (r < 0) {
                fprintf(stderr, "bare-emitter: flush: %s\n", strerror(-r));
                return 1;
        }
        return 0;
}
