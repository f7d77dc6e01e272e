/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "base/log.h"
#include "blkmodel/names.h"
#include "bus/bus-internal.h"

/*
 * What the publisher does when the bus stops taking its messages.
 *
 * dbus-daemon keeps counting a message against its sender's
 * max_incoming_bytes for as long as any recipient has not read it, and stops
 * reading from a sender at that limit.  One subscriber that never reads
 * therefore wedges us after max_incoming_bytes of signals (10 MB: ~20,000
 * Uevents; the system bus's 127 MiB: ~270,000): from then on the bus reads
 * nothing from us, method replies included, until that subscriber reads or
 * goes (bench/RESULTS-slow-subscriber.md).  No queue of ours can get a reply
 * past that.  What we can do is not make it worse: stop piling up signals
 * that nobody will get soon (sd-bus fails at ~393k queued messages and then
 * loses a method reply; draining a long queue is quadratic), keep reading
 * uevents so the model and the event log stay true, and once the bus takes
 * messages again, tell subscribers in one signal what they did not get, so
 * that they resync with GetEvents and GetManagedObjects.
 */

/* The back-pressure's marks (manager.c): above HIGH, uevents and a rescan wait until the queue is
 * down to LOW.  The socket's own buffer is small (bus/loop.c), so a reply waits behind at most HIGH
 * messages and that buffer, which a bus that reads takes in milliseconds: the numbers are there. */
#define BACKLOG_HIGH 64
#define BACKLOG_LOW 16
/* Past HIGH and not down to LOW again this long: the bus reads from us too slowly to let uevents go
 * on, or not at all. */
#define BACKLOG_STUCK_MS BUS_STUCK_MSEC
/* Whatever the time: well below sd-bus's ~393k, where a method reply would be lost. */
#define BACKLOG_HARD_MAX 65536
#define BACKLOG_TICK_MS 250

struct Backlog {
        Publisher *p;
        uv_timer_t timer;
        bool ticking;
        BacklogState state;
        uint64_t dropped, first_seqnum, last_seqnum;
        sd_bus_slot *slot;
};

static const sd_bus_vtable backlog_vtable[] = {
                SD_BUS_VTABLE_START(0),
                SD_BUS_SIGNAL_WITH_ARGS("SignalsDropped",
                                        SD_BUS_ARGS("t", signals, "t", first_seqnum, "t", last_seqnum), 0),
                SD_BUS_VTABLE_END,
};

static uint64_t now_ms(void)
{
        return uv_hrtime() / 1000000;
}

static void emit_marker(Backlog *b, uint64_t dropped, uint64_t first_seqnum, uint64_t last_seqnum)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;
        int r;

        /* In order with the signals around it (hold.c): a subscriber learns of the gap where it is. */
        r = sd_bus_message_new_signal(b->p->bus, &s, BLKMODEL_MANAGER_PATH, BLKMODEL_IFACE_MANAGER,
                                      "SignalsDropped");
        if (r >= 0)
                r = sd_bus_message_append(s, "ttt", dropped, first_seqnum, last_seqnum);
        if (r >= 0)
                bus_send_in_order(b->p, s, 64, 0);
        else if (!bus_gone_error(r))
                log_warning_errno(r, "Cannot send SignalsDropped: %m");
}

BacklogStep backlog_state_update(BacklogState *s, uint64_t queued, uint64_t now_ms)
{
        if (s->shedding) {
                if (queued > s->peak)
                        s->peak = queued;
                if (queued > BACKLOG_LOW)
                        return BACKLOG_STEADY;
                s->shedding = s->waiting = false;
                return BACKLOG_SHED_STOP;
        }
        /* Past HIGH, uevents and a rescan wait until the queue is down to LOW (manager.c), so that is
         * the time to watch.  A queue that came down from HIGH but stops between the marks, because
         * the bus took a few messages and then nothing, holds them as long as one above HIGH: watching
         * only the time above HIGH, such a queue was never called stuck, and uevents waited for as
         * long as the subscriber that held the bus did not read (seen once in ten runs of
         * bench/slow-subscriber.py on the system bus's limits: the storm was read only after the
         * subscriber went, 100 s). */
        /* Draining a burst of ours: each message the bus took starts the 2 s again. */
        if (s->burst_low > 0 && queued < s->burst_low) {
                s->burst_low = queued;
                s->waiting_since_ms = now_ms;
        }
        if (queued <= BACKLOG_LOW) {
                s->waiting = false;
                s->burst_low = 0;
        } else if (queued > BACKLOG_HIGH && !s->waiting) {
                s->waiting = true;
                s->waiting_since_ms = now_ms;
        }
        if (queued > BACKLOG_HARD_MAX || (s->waiting && now_ms - s->waiting_since_ms >= BACKLOG_STUCK_MS)) {
                s->shedding = true;
                s->peak = queued;
                return BACKLOG_SHED_START;
        }
        return BACKLOG_STEADY;
}

void backlog_state_burst(BacklogState *s, uint64_t queued, uint64_t now_ms)
{
        if (s->shedding || queued <= BACKLOG_HIGH)
                return;
        s->burst_low = queued;
        s->waiting = true;
        s->waiting_since_ms = now_ms;
}

static void shed_start(Backlog *b, uint64_t queued, uint64_t now)
{
        b->dropped = b->first_seqnum = b->last_seqnum = 0;
        log_warning("The bus has not taken our messages for %" PRIu64 " ms (%" PRIu64
                    " queued): a subscriber that does not read, or a bus too busy to keep up, holds them "
                    "up. Sending no signals until "
                    "the queue drains; GetEvents and GetManagedObjects have everything.",
                    b->state.waiting ? now - b->state.waiting_since_ms : 0, queued);
}

static void shed_stop(Backlog *b, uint64_t queued)
{
        /* Shedding started by the timer or the drain check, and the queue drained before any signal
         * came: no gap, and a SignalsDropped(0, 0, 0) would send subscribers to resync for nothing. */
        if (b->dropped == 0) {
                log_info("The bus takes our messages again (%" PRIu64 " queued, %" PRIu64
                         " at most); no signal came meanwhile.",
                         queued, b->state.peak);
                return;
        }
        log_info("The bus takes our messages again (%" PRIu64 " queued, %" PRIu64 " at most); %" PRIu64
                 " signals were not sent, Uevents %" PRIu64 "..%" PRIu64 ".",
                 queued, b->state.peak, b->dropped, b->first_seqnum, b->last_seqnum);
        /* Before anything else goes out: a subscriber learns of the gap before it sees newer signals. */
        emit_marker(b, b->dropped, b->first_seqnum, b->last_seqnum);
}

static void backlog_tick(uv_timer_t *t);

static void update(Backlog *b)
{
        uint64_t queued = publisher_queued(b->p), now = now_ms();

        switch (backlog_state_update(&b->state, queued, now)) {
        case BACKLOG_SHED_START:
                shed_start(b, queued, now);
                break;
        case BACKLOG_SHED_STOP:
                shed_stop(b, queued);
                break;
        case BACKLOG_STEADY:
                break;
        }

        /* The loop may sleep while the bus reads nothing: a timer notices that, and the drain. */
        bool want = b->state.shedding || b->state.waiting;
        if (want && !b->ticking)
                (void) uv_timer_start(&b->timer, backlog_tick, BACKLOG_TICK_MS, BACKLOG_TICK_MS);
        else if (!want && b->ticking)
                (void) uv_timer_stop(&b->timer);
        b->ticking = want;
}

static void backlog_tick(uv_timer_t *t)
{
        update(t->data);
}

bool backlog_admit(Backlog *b, const EventRecord *e)
{
        update(b);
        if (!b->state.shedding)
                return true;
        b->dropped++;
        if (e) {
                if (b->first_seqnum == 0)
                        b->first_seqnum = e->seqnum;
                b->last_seqnum = e->seqnum;
        }
        return false;
}

void backlog_oversized(Backlog *b, const EventRecord *e)
{
        /* Admitted, so not shedding: the bus reads, and a subscriber learns of the gap now. */
        emit_marker(b, 1, e ? e->seqnum : 0, e ? e->seqnum : 0);
}

bool backlog_congested(Backlog *b, bool paused)
{
        /* Asked right after a send and while the source waits: this is where a queue that stopped
         * moving is first seen, since no signal may come after it. */
        update(b);
        /* While shedding, waiting would only let the kernel's queue overflow and the model go stale. */
        if (b->state.shedding)
                return false;
        /* Signals held for a reply being built count too (hold.c): they all join the queue at once when
         * it is sent, and uevents that went on meanwhile made thousands of them, which a bus with a few
         * subscribers took seconds to drain, and was then called stuck.  Not for being stuck: a long
         * building is not a bus that does not read. */
        return publisher_queued(b->p) + b->p->held.n > (paused ? BACKLOG_LOW : BACKLOG_HIGH);
}

void backlog_burst(Backlog *b)
{
        /* 20,000 Sets pipelined during a 15 s building under ASan: their PropertiesChanged and replies,
         * released at once, took five reading subscribers' bus 3.9 s to drain, and it was called stuck. */
        backlog_state_burst(&b->state, publisher_queued(b->p), now_ms());
        update(b);
}

int backlog_new(Publisher *p, uv_loop_t *loop, Backlog **ret)
{
        Backlog *b;
        int r;

        b = calloc(1, sizeof(Backlog));
        if (!b)
                return -ENOMEM;
        b->p = p;
        /* A second vtable of the Manager interface: sd-bus introspects its members with the first's. */
        r = sd_bus_add_object_vtable(p->bus, &b->slot, BLKMODEL_MANAGER_PATH, BLKMODEL_IFACE_MANAGER,
                                     backlog_vtable, b);
        if (r < 0) {
                free(b);
                return r;
        }
        (void) uv_timer_init(loop, &b->timer);
        b->timer.data = b;
        *ret = b;
        return 0;
}

static void on_timer_closed(uv_handle_t *h)
{
        free(h->data);
}

void backlog_free(Backlog *b)
{
        if (!b)
                return;
        b->slot = sd_bus_slot_unref(b->slot);
        uv_close((uv_handle_t *) &b->timer, on_timer_closed);
}
