/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <inttypes.h>

#include "base/log.h"
#include "base/turn.h"
#include "live/live-internal.h"

/*
 * The poll takes no more than POLL_CPU_PERCENT of the time.  At scale a round over every watched
 * attribute takes longer than --poll-interval: detection latency grows with the number of disks, the
 * CPU spent does not.  Both the warm-up and the poll read on the thread pool (read-ahead.c).
 */
#define POLL_CPU_PERCENT 5
#define POLL_REST_PER_SLICE (100 / POLL_CPU_PERCENT + 1)

/* Takes the round's objects until the slice that began at start is spent: 1 when all are taken, 0
 * when the next slice goes on, -ENOMEM. */
static int round_take(Live *l, ModelRound *r, uint64_t start)
{
        int k;

        while ((k = model_round_take(r, l->model, 256)) == 0)
                if (turn_slice_over(start))
                        break;
        return k;
}

/*
 * ---- warm-up: a first reading of every object, so that a change can be told ----
 * What the clients read before it is unknown: a change on an object not read yet is announced
 * with every property, rather than missed.
 */

static bool warmup_wants(const Kobject *k)
{
        /* Removed meanwhile, or already read by an event or a reading of a client's: nothing to do. */
        return k->linked && !changes_recorded(k);
}

static Refresh warmup_how(const Live *l, const Kobject *k)
{
        return REFRESH_RECORD;
}

static void on_warmup(uv_idle_t *h)
{
        Live *l = h->data;
        RoundReader *rr = &l->warm_reader;
        uint64_t start = now_usec();
        int r;
        TURN_PART("a slice of the warm-up");

        if (reader_busy(rr) || l->rescan) {
                (void) uv_idle_stop(h); /* until the batch is back, or the rescan done: warmup_go_on() */
                return;
        }
        if (reader_pending(rr)) {
                (void) reader_compare(l, rr, start);
                return;
        }
        r = round_take(l, &l->warm, start);
        if (r < 0) {
                /* Then polling records each object at its first reading instead. */
                log_error("Out of memory while listing the objects to read first; left to the poll.");
                poll_warmup_stop(l);
                return;
        }
        if (r == 0)
                return;
        r = reader_read_ahead(l, rr, start);
        if (r > 0)
                (void) uv_idle_stop(h);
        else if (r < 0)
                (void) reader_compare(l, rr, start);
        else if (!model_round_active(&l->warm)) {
                log_debug("Recorded the values of %zu objects; %zu read ahead, %zu read again as their records "
                          "changed meanwhile.",
                          l->warm.n, l->warm_reader.n_ahead, l->warm_reader.n_again);
                poll_warmup_stop(l);
        }
}

/* Goes on, unless a reading of a client's or a rescan holds the warm-up, or a batch is still on a
 * worker. */
static void warmup_go_on(Live *l)
{
        if (l->warm_holds == 0 && !l->rescan && !reader_busy(&l->warm_reader) &&
            (model_round_active(&l->warm) || reader_pending(&l->warm_reader)))
                (void) uv_idle_start(&l->warmup, on_warmup);
}

int poll_warmup_start(Live *l)
{
        l->warm_reader = (RoundReader){.round = &l->warm,
                                       .wants = warmup_wants,
                                       .how = warmup_how,
                                       .on_read = warmup_go_on,
                                       .check_modes = true};
        model_round_begin(&l->warm, l->model);
        warmup_go_on(l);
        return 0;
}

void live_warmup_hold(Live *l)
{
        if (l->warm_holds++ == 0)
                (void) uv_idle_stop(&l->warmup);
}

void live_warmup_release(Live *l)
{
        assert(l->warm_holds > 0);
        l->warm_holds--;
        warmup_go_on(l);
        live_relist_go_on(l);
}

void poll_warmup_stop(Live *l)
{
        (void) uv_idle_stop(&l->warmup);
        reader_stop(l, &l->warm_reader);
        model_round_release(&l->warm, l->model);
}

/* ---- polling what changes without an event ---- */

static bool poll_wants(const Kobject *k)
{
        return k->linked && changes_watched(k);
}

/*
 * A round reads every object's tunables, and a third of the objects whole, a different third each
 * round: what is set by hand (a scheduler, read-ahead) is found within a round of about 0.6 of a
 * whole reading's length, and what the kernel changes silently (ro, a partition's size) within three.
 * At 1,000 loop disks x 2 a round over every value took 16.4-17.2 s, one over the tunables alone
 * 7.3-8.7 s.  Where a round of that kind would still fit in the interval three times over, every
 * object is read whole: below that scale every change is found within the interval (SPEC §6), as
 * the budget allows.
 */
#define POLL_WHOLE_EVERY 3

static Refresh poll_how(const Live *l, const Kobject *k)
{
        uint64_t mixed;

        /* The first reading of an object only records (at most once per round). */
        if (!changes_recorded(k))
                return REFRESH_RECORD;
        if (l->poll_all_whole)
                return REFRESH_WATCHED;
        /* Which third: the object's address, mixed, is as good as any number of its own. */
        mixed = ((uint64_t) (uintptr_t) k >> 4) * UINT64_C(0x9E3779B97F4A7C15);
        return ((mixed >> 32) + l->poll_rounds) % POLL_WHOLE_EVERY == 0 ? REFRESH_WATCHED : REFRESH_TUNABLES;
}

static void on_poll_tick(uv_timer_t *t);

/* After a batch: its time on the loop and on a worker (reader.spent) sets the rest. */
static void poll_rest(Live *l)
{
        uint64_t interval = (uint64_t) l->poll_interval_ms * 1000,
                 next = l->poll_reader.spent * POLL_REST_PER_SLICE;

        l->poll_reader.spent = 0;
        /* Rest long enough to stay within the CPU budget, with room in it for the loop's own wake-ups:
         * a slice per 21 of rest, 4.55 %.  With 20 (4.76 %) the whole idle daemon measured 4.75-4.85 %
         * on one VM, and 4.90-5.05 % at 10,000 x 4 on one whose syscalls cost twice as much; with 21
         * there, 4.76-4.80 %.  A finished round waits for its interval. */
        if (!model_round_active(&l->polled)) {
                uint64_t round = now_usec() - l->poll_round_start;
                log_debug("A poll round took %" PRIu64 " ms; %zu objects read ahead, %zu read again as their "
                          "records changed meanwhile.",
                          round / 1000, l->poll_reader.n_ahead, l->poll_reader.n_again);
                l->poll_reader.n_ahead = l->poll_reader.n_again = 0;
                if (round < interval)
                        next = MAX(next, interval - round);
                /* A round with every object whole takes up to POLL_WHOLE_EVERY times one with a third
                 * (the tunables are some of what the whole reads); the same after one with all. */
                l->poll_all_whole = round * (l->poll_all_whole ? 1 : POLL_WHOLE_EVERY) < interval;
        }
        /* A timer counts from the loop's clock, read before this slice ran: without the update the
         * rest would come out shorter by the slice (5.26 % instead of 5 %, as measured). */
        uv_update_time(l->loop);
        (void) uv_timer_start(&l->poll_timer, on_poll_tick, MAX((next + 999) / 1000, (uint64_t) 1), 0);
}

/* One slice of comparing; after the last one, the rest. */
static void poll_compare(Live *l, uint64_t start)
{
        RoundReader *rr = &l->poll_reader;

        if (!reader_compare(l, rr, start)) {
                (void) uv_timer_start(&l->poll_timer, on_poll_tick, 0, 0);
                return;
        }
        poll_rest(l);
}

static void poll_on_read(Live *l)
{
        if (!l->rescan) /* else poll_after_rescan() goes on */
                poll_compare(l, now_usec());
}

static void on_poll_tick(uv_timer_t *t)
{
        Live *l = t->data;
        RoundReader *rr = &l->poll_reader;
        uint64_t start = now_usec();
        int r;
        TURN_PART("a slice of the poll");

        /* A rescan reads every object: reading them for the poll meanwhile only took the CPU from it
         * and from the calls waiting for its slices. */
        if (reader_busy(rr) || l->rescan)
                return; /* poll_on_read() or poll_after_rescan() goes on */
        if (reader_pending(rr)) {
                poll_compare(l, start);
                return;
        }
        if (!model_round_active(&l->polled)) {
                model_round_begin(&l->polled, l->model);
                l->poll_round_start = start;
                l->poll_rounds++;
        }
        /* The objects are taken in the slices, and which of them have watched values is asked there:
         * over every object at once either kept the loop 14-16 ms at 10,000 x 4. */
        if (round_take(l, &l->polled, start) < 0) {
                log_error("Out of memory while polling attributes; trying again later.");
                model_round_release(&l->polled, l->model);
                (void) uv_timer_start(&l->poll_timer, on_poll_tick, l->poll_interval_ms, 0);
                return;
        }
        r = reader_read_ahead(l, rr, start);
        if (r > 0)
                return; /* poll_on_read() goes on */
        if (r < 0) {
                poll_compare(l, start);
                return;
        }
        poll_rest(l);
}

void poll_start(Live *l)
{
        l->poll_reader = (RoundReader){
                .round = &l->polled, .wants = poll_wants, .how = poll_how, .on_read = poll_on_read};
        if (l->poll_interval_ms > 0)
                (void) uv_timer_start(&l->poll_timer, on_poll_tick, l->poll_interval_ms, 0);
}

void poll_after_rescan(Live *l)
{
        warmup_go_on(l);
        /* A rescan may run before the start (events lost meanwhile): then poll_start() begins. */
        if (l->poll_reader.round && l->poll_interval_ms > 0 && !reader_busy(&l->poll_reader))
                (void) uv_timer_start(&l->poll_timer, on_poll_tick, 0, 0);
}

void poll_stop(Live *l)
{
        (void) uv_timer_stop(&l->poll_timer);
        reader_stop(l, &l->poll_reader);
        l->poll_reader = (RoundReader){};
        model_round_release(&l->polled, l->model);
}
