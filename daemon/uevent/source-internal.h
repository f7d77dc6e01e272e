/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the uevent source's three files share: the source itself and how it starts. */

#include <stdbool.h>
#include <sys/types.h>

#include "base/log-ratelimit.h"
#include "uevent/source.h"

/* At most this many datagrams per poll callback, and for at most a slice of the turn (base/turn.h):
 * a burst must not starve the bus (an add reads a whole disk; 256 of them stalled the loop for most
 * of a second). */
#define READ_BURST_MAX 256

/* As udevd and systemd-udevd-kernel.socket: enough for a coldplug of thousands of disks. */
#define NETLINK_RCVBUF_DEFAULT (128 * 1024 * 1024)

/* The kernel's uevent multicast group, as a bind()/nl_groups mask. */
#define UEVENT_GROUP_KERNEL 1U

/*
 * POLLERR callbacks that neither carried an error nor yielded a datagram.
 * libuv stops the handle on POLLERR; we restart it, but an error that never
 * clears would make that a busy loop, so past this many in a row we give up.
 */
#define ERROR_SPIN_MAX 16

/* A receive that failed for want of memory or descriptors is not tried again before this: trying at
 * every turn of the loop kept a CPU busy and told a loss each time (13,700 a second). */
#define RESOURCE_REST_MS 100

typedef enum UeventSourceKind {
        UEVENT_SOURCE_NETLINK,
        UEVENT_SOURCE_SOCKET,
} UeventSourceKind;

struct UeventSource {
        uv_poll_t poll; /* poll.data points back here */
        /* A burst cut short by its budget goes on at the next turn of the loop: the socket may be empty
         * by then, and an empty socket never wakes the poll, so only this can tell that it is drained. */
        uv_idle_t more;
        uv_timer_t rest; /* the pause after a receive short of memory or descriptors */
        unsigned open_handles; /* the memory goes with the last close callback */
        UeventSourceKind kind;
        int fd;

        bool polling; /* the uv_poll_t is started */
        bool paused;  /* the owner asked us not to read */
        bool closing; /* uevent_source_free() was called; wait for the close callback */
        bool dead;    /* a read error that won't clear: stay stopped */
        bool resting; /* short of memory or descriptors: the rest timer runs */
        /* A receive failed for want of resources since a datagram was last read or the socket found
         * empty: its loss was told. */
        bool short_of_resources;
        unsigned error_spins;

        char *path; /* socket kind: the file we bound, and its identity, to unlink only our own */
        dev_t path_dev;
        ino_t path_ino;
        uid_t uid; /* socket kind: our euid, allowed to send besides root */

        UeventSourceHandler handler;
        UeventSourceLostHandler lost;
        UeventSourceDrainedHandler drained;
        void *userdata;

        uint64_t dropped;
        /* A sender that may write at all (root, or our uid) could still flood us with garbage. */
        LogRatelimit drop_log;

        /*
         * One datagram.  uevent_parse() refuses anything longer than
         * UEVENT_SIZE_MAX, so a bigger one is truncated here, flagged
         * MSG_TRUNC and dropped: the bound is the format's, not a guess.
         */
        uint8_t buf[UEVENT_SIZE_MAX];
};

/*
 * Allocates the source around an fd that is ready to read, registers it
 * with the loop and starts polling.  On failure fd is not closed.
 */
int source_start(uv_loop_t *loop, UeventSourceKind kind, int fd, UeventSourceHandler handler,
                 UeventSourceLostHandler lost, void *userdata, UeventSource **ret);

/* SO_PASSCRED: every datagram carries its sender's credentials, for the checks in source.c. */
int source_set_passcred(int fd);
