/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <uv.h>

/*
 * Watches the event loop for turns that keep it from answering: a turn's own work, measured as the
 * loop thread's CPU time from one turn's start to the next's, so that waiting in epoll_wait and
 * being preempted on a busy machine do not count.  SPEC §9: the loop never stalls more than 20 ms;
 * a turn that took longer is logged (a warning when it is the longest yet, else at debug level),
 * so that a user can see whether a slow reply was the daemon's doing.
 */

typedef struct LoopWatch {
        uv_prepare_t prepare;
        uint64_t threshold_usec;
        uint64_t turn_start_usec; /* the loop thread's CPU time when the current turn began */
        uint64_t n_long;          /* turns over the threshold */
        uint64_t longest_usec;    /* the longest turn over the threshold, or 0 */
} LoopWatch;

/* Starts watching loop from its next turn on; the watch does not keep the loop alive. */
int loop_watch_start(uv_loop_t *loop, LoopWatch *w, uint64_t threshold_usec);
/* Logs how many turns passed the threshold, if any, and closes the handle: w must live until the loop
 * has run its close callbacks. */
void loop_watch_stop(LoopWatch *w);
