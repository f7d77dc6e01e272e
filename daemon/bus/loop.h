/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>
#include <uv.h>

/*
 * sd-bus driven from libuv: the only place that knows both.  One poll
 * handle on the bus fd, one timer for sd-bus's timeouts, and a prepare
 * handle that re-arms both before every loop iteration, since the events
 * sd-bus wants change with every message it queues or parses.
 */

typedef struct BusLoop BusLoop;
typedef void (*BusLoopDisconnected)(BusLoop *l, void *userdata);

int bus_loop_attach(uv_loop_t *loop, sd_bus *bus, BusLoopDisconnected on_disconnect, void *userdata,
                    BusLoop **ret);
/* Detaches; the memory goes in the handles' close callbacks. NULL is fine. */
void bus_loop_free(BusLoop *l);

/*
 * sd-bus writes a message with one sendmsg() of as much as the socket takes, and as root it makes the
 * socket take 16 MiB: a GetManagedObjects reply of 26 MB went out in one system call of 61-82 ms, the
 * loop stopped for all of it.  Called before such a message is sent, this lets the socket take a few
 * hundred KiB until sd-bus's write queue is empty again, so that the rest goes out over the next
 * turns as the bus reads (26 MB: the longest turn 6 ms in 11 of 13 tries).  One write can still run
 * long while the bus reads as fast as we write (36 and 73 ms in the other two).  Only for large
 * messages: with the socket bounded, a storm's signals wait in sd-bus's queue for the turns in between,
 * and a ping behind them waited 20 ms instead of 12 (median of 7 storms each).
 */
void bus_loop_bound_writes(BusLoop *l);
