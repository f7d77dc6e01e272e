/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <uv.h>

#include "base/turn.h"

/*
 * Watches the event loop for turns that keep it from answering.  SPEC §9: the loop never stalls more
 * than 20 ms; a turn that took longer is logged (a warning when it is the longest yet, else at debug
 * level), so that a user can see whether a slow reply was the daemon's doing.
 *
 * A turn is measured from one turn's start to the next's, less the time the loop waited in
 * epoll_wait for something to do and the time the thread was ready but waited for a CPU (a busy
 * machine's doing, not ours).  What is left is its own work and the time it slept inside a system
 * call: a sysfs read that waits on a kernel lock holds every caller as long as work does.  Without
 * /proc/thread-self/schedstat (a kernel without CONFIG_SCHED_INFO), only its CPU time is counted;
 * so it is for a turn in which a signal came (base/turn.h: turn_signalled()).
 * One blind spot: a wake-up's wait for a CPU is in libuv's time in epoll_wait and in schedstat's
 * waiting both, so on a busy machine a turn that slept in a system call reads short by that wait.
 *
 * The line says when the turn ran, on CLOCK_MONOTONIC (to be laid beside a trace, or beside
 * bench/hiccup's account of the machine's own pauses), and which marked part of the daemon's work
 * (base/turn.h) took the most of it.
 *
 * A turn whose stretch passed the threshold only with its waits for a CPU, or whose wake-up waited
 * that long for one, is told apart, as a notice when it waited the longest yet: callers waited that
 * long too, but for the machine's other work.
 */

typedef struct LoopTurnClock {
        uint64_t wall_usec;  /* CLOCK_MONOTONIC */
        uint64_t idle_usec;  /* time spent waiting in epoll_wait, as libuv counts it */
        uint64_t cpu_usec;   /* the loop thread's CPU time */
        uint64_t queue_usec; /* the time it was runnable but waited for a CPU (schedstat) */
} LoopTurnClock;

typedef struct LoopTurn {
        uint64_t held_usec;    /* what callers waited for: cpu + asleep */
        uint64_t cpu_usec;     /* of which on a CPU */
        uint64_t waiting_usec; /* not counted: runnable, waiting for a CPU */
        uint64_t busy_usec;    /* wall time not spent in epoll_wait */
        uint64_t end_usec;     /* CLOCK_MONOTONIC */
        TurnPart part;         /* its longest marked part */
} LoopTurn;

typedef struct LoopWatch {
        uv_prepare_t prepare;
        uint64_t threshold_usec;
        int schedstat_fd;    /* /proc/thread-self/schedstat of the loop thread, or -1 */
        LoopTurnClock start; /* when the current turn began */
        LoopTurn longest;    /* the longest turn yet, by what callers waited */
        uint64_t n_long;     /* turns over the threshold */
        /* Of the turns over the threshold only with their waits for a CPU, the one that waited most. */
        LoopTurn most_waiting;
        uint64_t n_waited; /* such turns */
} LoopWatch;

/* Starts watching loop from its next turn on, from the loop's thread; the watch does not keep the
 * loop alive. */
int loop_watch_start(uv_loop_t *loop, LoopWatch *w, uint64_t threshold_usec);
/* Logs how many turns passed the threshold, if any, and closes the handle: w must live until the loop
 * has run its close callbacks. */
void loop_watch_stop(LoopWatch *w);
