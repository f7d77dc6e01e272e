/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>
#include <uv.h>

/*
 * sd-bus driven from libuv: the only place that knows both.  One poll
 * handle on the bus fd, one timer for sd-bus's timeouts, and a prepare
 * handle that re-arms both before every loop iteration, since the events
 * sd-bus wants change with every message it queues or parses.  It also
 * keeps the socket's send buffer small (loop.c says why).
 */

typedef struct BusLoop BusLoop;
typedef void (*BusLoopDisconnected)(BusLoop *l, void *userdata);

int bus_loop_attach(uv_loop_t *loop, sd_bus *bus, BusLoopDisconnected on_disconnect, void *userdata,
                    BusLoop **ret);
/* Detaches; the memory goes in the handles' close callbacks. NULL is fine. */
void bus_loop_free(BusLoop *l);

/* How long a bus may take none of our messages before it is called stuck: the back-pressure then
 * sends no signals (bus/backlog.c), and the exit stops waiting for it. */
#define BUS_STUCK_MSEC 2000

/*
 * At exit: sends what is queued for as long as the bus takes some of it.  sd_bus_flush() waits for
 * ever on a bus that has stopped reading from us (a subscriber that does not read holds it): the
 * daemon ignored SIGTERM until systemd killed it.  A call that comes meanwhile is answered
 * ServiceUnknown, "blkmodeld is exiting".  Until *released (the bus's reply to ReleaseName; NULL:
 * no name held), it reads too: the calls queued to us before the name went get that answer, not the
 * bus's NoReply when we disconnect.
 */
void bus_flush_bounded(sd_bus *bus, const bool *released);
