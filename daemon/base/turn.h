/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

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
