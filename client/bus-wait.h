/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include <systemd/sd-bus.h>

/* SIGINT and SIGTERM as a file descriptor (blocked for the process). */
int bus_signalfd_open(void);

/*
 * Waits until the bus has work, a signal arrives on sigfd (returns 1), or
 * deadline (CLOCK_MONOTONIC µs, USEC_INFINITY = never) passes (-ETIMEDOUT).
 * Returns 0 when sd_bus_process() should run.
 */
int bus_wait_event(sd_bus *bus, int sigfd, uint64_t deadline);

/* NameOwnerChanged for blkmodeld's name, in a floating slot: it comes, goes or is replaced. */
int bus_match_daemon_owner(sd_bus *bus, sd_bus_message_handler_t callback, void *userdata);
