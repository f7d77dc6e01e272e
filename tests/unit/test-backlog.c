/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus/bus-internal.h"
#include "tests.h"

/*
 * When the publisher calls the bus stuck (bus/backlog.c): the decision alone, driven with queue
 * lengths and times.  The marks are 64 (uevents and a rescan wait above it) and 16 (they go on at or
 * below it); stuck means 2 s without getting from one to the other.  tests/integration/
 * test-slow-subscriber.py has the whole thing against a real dbus-daemon, where a queue that stops
 * between the marks cannot be made to happen on purpose.
 */

/* Feeds (time, queued) pairs; returns the time of the first step that is not STEADY, with *step. */
static uint64_t run(BacklogState *s, const uint64_t (*looks)[2], size_t n, BacklogStep *step)
{
        for (size_t i = 0; i < n; i++) {
                BacklogStep k = backlog_state_update(s, looks[i][1], looks[i][0]);
                if (k != BACKLOG_STEADY) {
                        *step = k;
                        return looks[i][0];
                }
        }
        *step = BACKLOG_STEADY;
        return 0;
}

#define RUN(s, looks, step) run(s, looks, ELEMENTSOF(looks), step)

static void test_a_bus_that_reads(void)
{
        /* Past HIGH, then down to LOW within the 2 s: a bus that is behind, not stuck. */
        static const uint64_t looks[][2] = {
                {1000, 10}, {1100, 65}, {1500, 300}, {2500, 40}, {2900, 16}, {5000, 16}, {9000, 60},
        };
        BacklogState s = {};
        BacklogStep step;

        CHECK(RUN(&s, looks, &step) == 0 && step == BACKLOG_STEADY);
        CHECK(!s.shedding && !s.waiting);
}

static void test_stuck_above_high(void)
{
        static const uint64_t looks[][2] = {
                {1000, 65}, {2000, 70}, {2999, 70}, {3000, 70},
        };
        BacklogState s = {};
        BacklogStep step;

        CHECK(RUN(&s, looks, &step) == 3000 && step == BACKLOG_SHED_START);
        CHECK(s.shedding && s.peak == 70);
}

static void test_stuck_between_the_marks(void)
{
        /* The bus took some of the queue, then nothing: uevents still wait (not down to LOW), so the
         * bus is as stuck as above HIGH.  Counting only the time above HIGH never shed here. */
        static const uint64_t looks[][2] = {
                {1000, 80}, {1250, 40}, {1500, 40}, {2000, 40}, {2750, 40}, {3000, 40}, {3250, 40},
        };
        BacklogState s = {};
        BacklogStep step;

        CHECK(RUN(&s, looks, &step) == 3000 && step == BACKLOG_SHED_START);
}

static void test_between_the_marks_without_passing_high(void)
{
        /* Nothing waits for a queue that never passed HIGH. */
        static const uint64_t looks[][2] = {
                {1000, 40}, {5000, 40}, {9000, 64},
        };
        BacklogState s = {};
        BacklogStep step;

        CHECK(RUN(&s, looks, &step) == 0 && step == BACKLOG_STEADY);
        CHECK(!s.waiting);
}

static void test_shedding_ends_at_low(void)
{
        static const uint64_t looks[][2] = {
                {1000, 100}, {3000, 100}, /* shed */
        };
        static const uint64_t drain[][2] = {
                {3250, 500}, {3500, 17}, {3750, 16},
        };
        static const uint64_t again[][2] = {
                {4000, 65}, {5999, 65}, {6000, 65},
        };
        BacklogState s = {};
        BacklogStep step;

        CHECK(RUN(&s, looks, &step) == 3000 && step == BACKLOG_SHED_START);
        /* The queue still grows with method replies; signals stop only at LOW. */
        CHECK(RUN(&s, drain, &step) == 3750 && step == BACKLOG_SHED_STOP);
        CHECK(s.peak == 500 && !s.shedding && !s.waiting);
        /* A new wait starts from its own beginning. */
        CHECK(RUN(&s, again, &step) == 6000 && step == BACKLOG_SHED_START);
}

static void test_hard_max_at_once(void)
{
        BacklogState s = {};

        CHECK(backlog_state_update(&s, 65536, 1000) == BACKLOG_STEADY);
        CHECK(backlog_state_update(&s, 65537, 1001) == BACKLOG_SHED_START);
}

int main(void)
{
        test_a_bus_that_reads();
        test_stuck_above_high();
        test_stuck_between_the_marks();
        test_between_the_marks_without_passing_high();
        test_shedding_ends_at_low();
        test_hard_max_at_once();
        return tests_summary();
}
