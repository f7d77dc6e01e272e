/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "blkmodel/names.h"
#include "bus/bus-internal.h"
#include "tests.h"
#include "bus-pair.h"

/*
 * When the publisher calls the bus stuck (bus/backlog.c): the decision alone, driven with queue
 * lengths and times.  The marks are 64 (uevents and a rescan wait above it) and 16 (they go on at or
 * below it); stuck means 2 s without getting from one to the other.  tests/integration/
 * test-slow-subscriber.py has the whole thing against a real dbus-daemon, where a queue that stops
 * between the marks cannot be made to happen on purpose; the last tests here have the backlog itself
 * on a connection whose peer reads only when told to.
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

/*
 * The backlog on a real connection: a socket pair, the publisher's end with a small send buffer, the
 * peer reading only when told to, so that the publisher's write queue is exactly as long as the test
 * makes it.  The timer runs on a loop of the test's own.
 */
typedef struct Conn {
        uv_loop_t loop;
        sd_bus *ours, *peer;
        Publisher p;
        Backlog *b;
        unsigned n_markers;
        uint64_t marker[3]; /* the last SignalsDropped's arguments */
} Conn;

static int on_peer_message(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
        Conn *c = userdata;

        if (sd_bus_message_is_signal(m, BLKMODEL_IFACE_MANAGER, "SignalsDropped") &&
            sd_bus_message_read(m, "ttt", &c->marker[0], &c->marker[1], &c->marker[2]) >= 0)
                c->n_markers++;
        return 0;
}

static uint64_t queued(Conn *c)
{
        return publisher_queued(&c->p);
}

static int conn_open(Conn *c, sd_bus_slot **filter)
{

        *c = (Conn){};
        /* SO_SNDBUF the kernel's least: a few signals fill it, the rest waits in sd-bus's write queue. */
        if (uv_loop_init(&c->loop) < 0 || bus_pair_open(SOCK_NONBLOCK, 4096, &c->ours, &c->peer, NULL) < 0)
                return -1;
        if (sd_bus_add_filter(c->peer, filter, on_peer_message, c) < 0)
                return -1;
        c->p.bus = c->ours;
        return backlog_new(&c->p, &c->loop, &c->b);
}

static void conn_close(Conn *c, sd_bus_slot *filter)
{
        backlog_free(c->b);
        (void) uv_run(&c->loop, UV_RUN_DEFAULT);
        (void) uv_loop_close(&c->loop);
        sd_bus_slot_unref(filter);
        sd_bus_flush_close_unref(c->peer);
        sd_bus_close_unref(c->ours);
}

static void on_enough(uv_timer_t *t)
{
        uv_stop(t->loop);
}

/* Runs the loop, with the backlog's timer, for ms. */
static void run_for(Conn *c, uint64_t ms)
{
        uv_timer_t t;

        /* The loop's clock is as old as its last turn: the backlog's timer, started since, counts from
         * there too. */
        uv_update_time(&c->loop);
        (void) uv_timer_init(&c->loop, &t);
        (void) uv_timer_start(&t, on_enough, ms, 0);
        (void) uv_run(&c->loop, UV_RUN_DEFAULT);
        uv_close((uv_handle_t *) &t, NULL);
        (void) uv_run(&c->loop, UV_RUN_NOWAIT);
}

/* Signals, as signals.c sends them, until the write queue is longer than HIGH; whether all went. */
static bool fill(Conn *c)
{
        static const char filler[1024] = {[0 ... 1022] = 'x'};

        while (queued(c) <= 64) {
                if (!backlog_admit(c->b, NULL) ||
                    sd_bus_emit_signal(c->ours, "/test", "org.blkmodel1.Test", "Filler", "s", filler) < 0)
                        return false;
        }
        return true;
}

/* The peer reads everything; the publisher writes what it had queued. */
static void drain(Conn *c)
{
        for (unsigned i = 0; i < 100000 && (queued(c) > 0 || sd_bus_process(c->peer, NULL) > 0); i++) {
                (void) sd_bus_process(c->ours, NULL);
                while (sd_bus_process(c->peer, NULL) > 0)
                        ;
        }
}

/* Shedding started by the timer while the queue stood still; whether it did. */
static bool shed(Conn *c)
{
        if (!fill(c))
                return false;
        /* The look right after a send (manager.c's check_backpressure): uevents would wait now. */
        if (!backlog_congested(c->b, false))
                return false;
        /* As the drain check asks while uevents wait: congested until it sheds 2 s on, then not,
         * although the queue is as long (uevents are read and not told). */
        for (unsigned i = 0; i < 40; i++) {
                run_for(c, 250);
                if (!backlog_congested(c->b, true))
                        return queued(c) > 64;
        }
        return false;
}

static void test_marker_says_what_was_dropped(void)
{
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *filter = NULL;
        EventRecord e1 = {.seqnum = 7}, e2 = {.seqnum = 9};
        Conn c;

        if (conn_open(&c, &filter) < 0) {
                CHECK(!"cannot open a connection pair");
                return;
        }
        CHECK(shed(&c));
        CHECK(!backlog_admit(c.b, NULL));
        CHECK(!backlog_admit(c.b, &e1));
        CHECK(!backlog_admit(c.b, NULL));
        CHECK(!backlog_admit(c.b, &e2));
        drain(&c);
        CHECK(queued(&c) == 0);
        /* The timer sees the drain; the marker goes, then signals again. */
        run_for(&c, 400);
        CHECK(backlog_admit(c.b, NULL));
        drain(&c);
        CHECK(c.n_markers == 1);
        CHECK(c.marker[0] == 4 && c.marker[1] == 7 && c.marker[2] == 9);
        conn_close(&c, filter);
        filter = NULL;
}

static void test_nothing_dropped_no_marker(void)
{
        /* Shedding started, then the bus took everything before a signal came: nothing was dropped,
         * and a SignalsDropped(0, 0, 0) would only send subscribers to resync for nothing. */
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *filter = NULL;
        Conn c;

        if (conn_open(&c, &filter) < 0) {
                CHECK(!"cannot open a connection pair");
                return;
        }
        CHECK(shed(&c));
        drain(&c);
        CHECK(queued(&c) == 0);
        run_for(&c, 400);
        /* Not shedding any more. */
        CHECK(backlog_admit(c.b, NULL));
        drain(&c);
        CHECK(c.n_markers == 0);
        if (c.n_markers > 0)
                fprintf(stderr, "SignalsDropped(%lu, %lu, %lu)\n", (unsigned long) c.marker[0],
                        (unsigned long) c.marker[1], (unsigned long) c.marker[2]);
        conn_close(&c, filter);
        filter = NULL;
}

static void test_a_burst_of_ours_drained_slowly(void)
{
        /* 19,222 released at once at 1000 and taken at 4,000 a second: 4.8 s above the marks, never
         * called stuck; and the same burst, once the bus stops taking any, is stuck 2 s after the last
         * message it took. */
        static const uint64_t draining[][2] = {
                {1250, 18000}, {2250, 14000}, {3250, 10000}, {4250, 6000}, {5250, 2000}, {5800, 16},
        };
        static const uint64_t stopping[][2] = {
                {1250, 18000}, {2250, 14000}, {3250, 14000}, {4249, 14000}, {4250, 14000},
        };
        BacklogState s = {};
        BacklogStep step;

        backlog_state_burst(&s, 19222, 1000);
        CHECK(RUN(&s, draining, &step) == 0 && step == BACKLOG_STEADY);
        CHECK(!s.waiting && s.burst_low == 0);

        s = (BacklogState){};
        backlog_state_burst(&s, 19222, 1000);
        CHECK(RUN(&s, stopping, &step) == 4250 && step == BACKLOG_SHED_START);

        /* Without the burst's rule, the draining one was called stuck at 3,250. */
        s = (BacklogState){};
        CHECK(RUN(&s, draining, &step) == 3250 && step == BACKLOG_SHED_START);

        /* A burst of a few is no burst. */
        s = (BacklogState){};
        backlog_state_burst(&s, 40, 1000);
        CHECK(!s.waiting && s.burst_low == 0);
}

/* sd_bus_send(), as the daemon calls it (linked with --wrap=sd_bus_send): fails the next
 * send_failures calls with ENOBUFS, as sendmsg() does when the kernel is short of memory. */
int __real_sd_bus_send(sd_bus *bus, sd_bus_message *m, uint64_t *cookie);
int __wrap_sd_bus_send(sd_bus *bus, sd_bus_message *m, uint64_t *cookie);
static unsigned send_failures;

int __wrap_sd_bus_send(sd_bus *bus, sd_bus_message *m, uint64_t *cookie)
{
        if (send_failures > 0) {
                send_failures--;
                return -ENOBUFS;
        }
        return __real_sd_bus_send(bus, m, cookie);
}

static void send_changed(Conn *c)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;

        CHECK(sd_bus_message_new_signal(c->ours, &s, "/test", "org.freedesktop.DBus.Properties",
                                        "PropertiesChanged") >= 0);
        CHECK(sd_bus_message_append(s, "sa{sv}as", "org.blkmodel1.Test", 0, 0) >= 0);
        bus_send_in_order(&c->p, s, 64, 0);
}

/* A signal the bus would not take is one no subscriber can tell it missed: SignalsDropped tells
 * them to resync.  One that fails in turn asks for no other. */
static void test_signal_not_sent_is_told(void)
{
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *filter = NULL;
        Conn c;

        if (conn_open(&c, &filter) < 0) {
                CHECK(!"cannot open a connection pair");
                return;
        }
        c.p.backlog = c.b;
        send_failures = 1;
        send_changed(&c);
        drain(&c);
        CHECK(c.n_markers == 1);
        CHECK(c.marker[0] == 1 && c.marker[1] == 0 && c.marker[2] == 0);

        /* Held for a reply being built, released: the same. */
        bus_hold_begin(&c.p);
        send_changed(&c);
        send_changed(&c);
        send_failures = 1;
        bus_hold_release(&c.p);
        drain(&c);
        CHECK(c.n_markers == 2);

        send_failures = 2;
        send_changed(&c);
        drain(&c);
        CHECK(send_failures == 0);
        CHECK(c.n_markers == 2);
        conn_close(&c, filter);
        filter = NULL;
}

int main(void)
{
        test_a_bus_that_reads();
        test_stuck_above_high();
        test_stuck_between_the_marks();
        test_between_the_marks_without_passing_high();
        test_shedding_ends_at_low();
        test_hard_max_at_once();
        test_a_burst_of_ours_drained_slowly();
        test_marker_says_what_was_dropped();
        test_nothing_dropped_no_marker();
        test_signal_not_sent_is_told();
        return tests_summary();
}
