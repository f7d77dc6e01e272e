/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/turn.h"
#include "common/time-util.h"

static struct {
        unsigned depth;
        TurnPart running; /* its usec: when it began */
        TurnPart longest;
        uint64_t work_start; /* when this turn's first part or slice began; 0: none yet */
        bool signalled;
} turn;

static void name_running(const char *format, va_list ap) _printf_(1, 0);
static void name_running(const char *format, va_list ap)
{
        (void) vsnprintf(turn.running.what, sizeof(turn.running.what), format, ap);
}

void turn_part_begin(const char *format, ...)
{
        va_list ap;

        if (turn.depth++ > 0)
                return;
        va_start(ap, format);
        name_running(format, ap);
        va_end(ap);
        turn.running.usec = now_usec();
        if (turn.work_start == 0)
                turn.work_start = turn.running.usec;
}

void turn_part_rename(const char *format, ...)
{
        va_list ap;

        if (turn.depth != 1)
                return;
        va_start(ap, format);
        name_running(format, ap);
        va_end(ap);
}

void turn_part_end(void)
{
        uint64_t took;

        if (turn.depth == 0 || --turn.depth > 0)
                return;
        took = now_usec() - turn.running.usec;
        if (took >= turn.longest.usec) {
                memcpy(turn.longest.what, turn.running.what, sizeof(turn.longest.what));
                turn.longest.usec = took;
        }
}

void turn_part_take_longest(TurnPart *ret)
{
        *ret = turn.longest;
        turn.longest = (TurnPart){};
}

void turn_next(void)
{
        turn.work_start = 0;
}

void turn_signalled(void)
{
        turn.signalled = true;
}

bool turn_take_signalled(void)
{
        bool s = turn.signalled;

        turn.signalled = false;
        return s;
}

uint64_t turn_slice_end(uint64_t start)
{
        if (turn.work_start == 0 || turn.work_start > start)
                turn.work_start = start;
        return MAX(turn.work_start + TURN_WORK_USEC, start + TURN_SLICE_MIN_USEC);
}

bool turn_slice_over(uint64_t start)
{
        return now_usec() >= turn_slice_end(start);
}
