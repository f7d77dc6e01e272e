/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "bus/publisher.h"
#include "common/bus-open.h"
#include "live/live.h"
#include "model/kobject.h"
#include "sysfs/sysfs.h"
#include "uevent/eventlog.h"
#include "uevent/source.h"

/*
 * The composition root: the daemon's parts, who owns them, the order in
 * which they start, and the wires between them (live's ops to the
 * publisher, the uevent source to live, back-pressure from the bus to the
 * source).  Nothing here knows how any part works inside.
 */

typedef struct ManagerOptions {
        BusKind bus_kind;
        const char *address;
        const char *sysfs_root;
        const char *uevent_socket;
        bool no_uevents;
        int uevent_rcvbuf; /* netlink receive buffer in bytes; 0: the default (tests shrink it) */
        size_t event_log_size;
        unsigned poll_interval_ms;
        size_t message_max; /* the largest message the bus takes; 0: the bus kind's default */
} ManagerOptions;

/* A Settle() call waiting for the events the kernel had queued when it came. */
typedef struct SettleWaiter {
        sd_bus_message *msg;
        bool read;       /* the uevent socket has been read empty since the call */
        uint64_t queued; /* then: the uevents queued (live_events_queued()) */
} SettleWaiter;

typedef struct Manager {
        ManagerOptions options;
        uv_loop_t *loop;
        uv_signal_t sigterm, sigint, sighup;
        uv_prepare_t drain_watch; /* runs while uevents are paused for a long bus write queue */
        uv_timer_t watchdog;      /* WATCHDOG=1 to systemd, while the loop turns */
        unsigned n_open_handles;
        bool paused_for_bus;
        SettleWaiter *settle_waiters; /* Settle() calls waiting for the uevents to be applied */
        size_t n_settle_waiters, n_settle_waiters_allocated;
        uv_check_t settle_check; /* runs while some wait */
        int exit_code;

        Sysfs sysfs;
        Model *model;
        EventLog *events;
        UeventSource *uevents;
        Live *live;
        Publisher *publisher;
} Manager;

int manager_new(const ManagerOptions *o, uv_loop_t *loop, Manager **ret);
/* Stops what still runs; the memory goes with the last libuv close callback, so the loop must run
 * once more.  NULL is fine. */
void manager_free(Manager *m);
/* Opens sources, scans, publishes, takes the name, notifies READY=1, starts the watchdog pings. */
int manager_start(Manager *m);
