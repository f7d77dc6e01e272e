/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/time-util.h"
#include "common/util.h"

/*
 * What a turn of the event loop spent its time on.  The layers mark the parts of their work that
 * can take long (an event applied, a slice of the warm-up, a D-Bus call); the loop watch
 * (loop-watch.h) names the longest part of a turn it logs as long, so that the log says what held
 * the callers, not only that something did.  A part begun inside another counts as that one's.
 * Loop thread only.
 */

typedef struct TurnPart {
        char what[192]; /* "" if nothing marked ran */
        uint64_t usec;  /* its wall time */
} TurnPart;

/* Begins a part named by the format, unless one is running: then this is that one's (and the name
 * is not even formatted).  Each begin has its end. */
void turn_part_begin(const char *format, ...) _printf_(1, 2);
/* Names the running part begun by this level anew (a D-Bus message once it is read). */
void turn_part_rename(const char *format, ...) _printf_(1, 2);
void turn_part_end(void);
static inline void turn_part_endp(_unused_ bool *part)
{
        turn_part_end();
}

/* Marks the rest of the enclosing block as a part. */
#define TURN_PART(...) TURN_PART_AS(TURN_PART_CAT(_turn_part_, __COUNTER__), __VA_ARGS__)
#define TURN_PART_AS(var, ...)                                                                              \
        _cleanup_(turn_part_endp) _unused_ bool var = (turn_part_begin(__VA_ARGS__), true)
#define TURN_PART_CAT(a, b) TURN_PART_CAT_(a, b)
#define TURN_PART_CAT_(a, b) a##b

/* The longest part ended since the last call, and forgets it. */
void turn_part_take_longest(TurnPart *ret);

/*
 * Work done in slices shares the turn it runs in.  Each slicer (the uevent burst, queued uevents,
 * the warm-up and the poll, a Rescan, a GetManagedObjects or Members reply, the bus's own messages)
 * had a budget of its own, 2-4 ms; a call waited for every slice of the turn it came in, and then
 * behind what that work sent.  Now one budget serves them all: a slice ends once the turn's work
 * passed TURN_WORK_USEC, but never before it had TURN_SLICE_MIN_USEC, so that every slicer goes on
 * in every turn.
 *
 * Measured (bench/real-kernel, 1,000 loop devices, a Peer.Ping every 5 ms, its worst reply, 2 runs
 * each, binaries alternating): detaching and attaching them all, 10.3-15.1 ms with each slicer's own
 * budget, 10.9-11.9 ms sharing 4 ms, 6.0-10.5 ms sharing 2 ms; the daemon's CPU per event and the
 * time to the last Uevent stayed as they were.
 */
#define TURN_WORK_USEC 2000
#define TURN_SLICE_MIN_USEC 500

/* A new turn of the loop begins (the loop watch, before the loop polls). */
void turn_next(void);
/* When a slice that began at start (now_usec(), the clock the turn's own marks are read on) ends. */
uint64_t turn_slice_end(uint64_t start);
/* Is that slice over now? */
bool turn_slice_over(uint64_t start);

/*
 * A signal's handler ran in this turn.  The signal interrupted the loop's wait for events, and libuv
 * (1.44) counts none of that wait as idle: it restarts its clock when epoll_wait returns EINTR.  The
 * loop watch cannot tell such a turn's own time from the wait, so it judges it by CPU time (each
 * SIGHUP was logged as the loop held for the second or so it had been idle).
 */
void turn_signalled(void);
/* Whether one ran since the last call, and forgets it. */
bool turn_take_signalled(void);
