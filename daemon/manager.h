/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <uv.h>

#include "hashmap.h"
#include "kobject.h"
#include "sysfs.h"

typedef struct BusLoop BusLoop;
typedef struct EventLog EventLog;
typedef struct UeventSource UeventSource;

typedef enum BusKind {
        BUS_SYSTEM,
        BUS_SESSION,
        BUS_ADDRESS,
} BusKind;

typedef struct ManagerOptions {
        BusKind bus_kind;
        const char *address;
        const char *sysfs_root;
        const char *uevent_socket;
        bool no_uevents;
        int uevent_rcvbuf; /* netlink receive buffer in bytes; 0: the default (tests shrink it) */
        size_t event_log_size;
        unsigned poll_interval_ms;
} ManagerOptions;

/* The daemon: one of these, owning everything else. */
typedef struct Manager {
        ManagerOptions options;
        uv_loop_t *loop;
        uv_signal_t sigterm, sigint, sighup;
        sd_bus *bus;
        BusLoop *bus_loop;
        Sysfs sysfs;
        Model *model;
        /* Before the name is taken nobody listens: no per-object signals then. */
        bool announce;
        bool name_taken;
        int exit_code;
        uint64_t events_lost;

        /* The live model (live.c). */
        UeventSource *uevents;
        EventLog *events;
        bool resync_pending; /* events were lost: rescan when the source is drained */
        Hashmap stacked; /* disks and partitions with holders/ or slaves/ links, by path */
        uv_prepare_t drain_watch;
        bool handles_ready;
        bool drain_watch_ready;
        bool paused_for_bus;
        uv_idle_t warmup;
        Kobject **warm;
        size_t n_warm, warm_pos;
        uv_timer_t poll_timer;
        Kobject **polled;
        size_t n_polled, poll_pos;
} Manager;

int manager_new(const ManagerOptions *o, uv_loop_t *loop, Manager **ret);
Manager *manager_free(Manager *m);
/* Opens sources, scans, publishes, takes the name, notifies READY=1. */
int manager_start(Manager *m);
/* Releases the name and stops the loop. */
void manager_stop(Manager *m, int exit_code);
int manager_rescan(Manager *m);

const char *manager_uevent_source_name(const Manager *m);
uint64_t manager_last_seqnum(const Manager *m);
uint64_t manager_oldest_seqnum(const Manager *m);
