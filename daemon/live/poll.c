/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>

#include "base/log.h"
#include "live/live-internal.h"

/*
 * Reading in slices: no slice keeps the loop for longer than this (a client's call waits at most
 * that long), and the poll takes no more than POLL_CPU_PERCENT of the time.  At scale a round over
 * every watched attribute takes longer than --poll-interval: detection latency grows with the
 * number of disks, the CPU spent does not.
 */
#define SLICE_USEC 2000
#define POLL_CPU_PERCENT 5
#define POLL_REST_PER_SLICE (100 / POLL_CPU_PERCENT + 1)

static uint64_t now_usec(Live *l)
{
        return uv_hrtime() / 1000;
}

/* Takes the round's objects until the slice that began at start is spent: 1 when all are taken, 0
 * when the next slice goes on, -ENOMEM. */
static int round_take(Live *l, ModelRound *r, uint64_t start)
{
        int k;

        while ((k = model_round_take(r, l->model, 256)) == 0)
                if (now_usec(l) - start >= SLICE_USEC)
                        break;
        return k;
}

/*
 * ---- warm-up: a first reading of every object, so that a change can be told ----
 * What the clients read before it is unknown: a change on an object not read yet is announced
 * with every property, rather than missed.
 */

static void on_warmup(uv_idle_t *h)
{
        Live *l = h->data;
        uint64_t start = now_usec(l);
        int r = round_take(l, &l->warm, start);
        Kobject *k;

        if (r < 0) {
                /* Then polling records each object at its first reading instead. */
                log_error("Out of memory while listing the objects to read first; left to the poll.");
                poll_warmup_stop(l);
                return;
        }
        if (r == 0)
                return;
        while (now_usec(l) - start < SLICE_USEC && (k = model_round_next(&l->warm))) {
                /* Removed meanwhile, or already read by an event: nothing to do. */
                if (k->linked && !changes_recorded(k))
                        (void) changes_refresh(l, k, REFRESH_RECORD);
                kobject_unref(l->model, k);
        }
        if (!model_round_active(&l->warm)) {
                log_debug("Recorded the values of %zu objects.", l->warm.n);
                poll_warmup_stop(l);
        }
}

int poll_warmup_start(Live *l)
{
        model_round_begin(&l->warm, l->model);
        return l->warm_holds > 0 ? 0 : uv_idle_start(&l->warmup, on_warmup);
}

void live_warmup_hold(Live *l)
{
        if (l->warm_holds++ == 0)
                (void) uv_idle_stop(&l->warmup);
}

void live_warmup_release(Live *l)
{
        assert(l->warm_holds > 0);
        if (--l->warm_holds == 0 && model_round_active(&l->warm))
                (void) uv_idle_start(&l->warmup, on_warmup);
}

void poll_warmup_stop(Live *l)
{
        (void) uv_idle_stop(&l->warmup);
        model_round_release(&l->warm, l->model);
}

/* ---- polling what changes without an event ---- */

static void on_poll_tick(uv_timer_t *t)
{
        Live *l = t->data;
        uint64_t start = now_usec(l), spent, interval = (uint64_t) l->poll_interval_ms * 1000, next;
        Kobject *k;

        if (!model_round_active(&l->polled)) {
                model_round_begin(&l->polled, l->model);
                l->poll_round_start = start;
        }
        /* The objects are taken in the slices, and which of them have watched values is asked there:
         * over every object at once either kept the loop 14-16 ms at 10,000 x 4. */
        if (round_take(l, &l->polled, start) < 0) {
                log_error("Out of memory while polling attributes; trying again later.");
                model_round_release(&l->polled, l->model);
                (void) uv_timer_start(&l->poll_timer, on_poll_tick, l->poll_interval_ms, 0);
                return;
        }
        while (now_usec(l) - start < SLICE_USEC && (k = model_round_next(&l->polled))) {
                /* The first reading of an object only records (at most once per round). */
                if (k->linked && changes_watched(k))
                        (void) changes_refresh(l, k, changes_recorded(k) ? REFRESH_WATCHED : REFRESH_RECORD);
                kobject_unref(l->model, k);
        }

        /* Rest long enough to stay within the CPU budget, with room in it for the loop's own wake-ups:
         * a slice per 21 of rest, 4.55 %.  With 20 (4.76 %) the whole idle daemon measured 4.75-4.85 %
         * on one VM, and 4.90-5.05 % at 10,000 x 4 on one whose syscalls cost twice as much; with 21
         * there, 4.76-4.80 %.  A finished round waits for its interval. */
        spent = now_usec(l) - start;
        next = spent * POLL_REST_PER_SLICE;
        if (!model_round_active(&l->polled)) {
                uint64_t round = now_usec(l) - l->poll_round_start;
                if (round < interval)
                        next = MAX(next, interval - round);
        }
        /* A timer counts from the loop's clock, read before this slice ran: without the update the
         * rest would come out shorter by the slice (5.26 % instead of 5 %, as measured). */
        uv_update_time(l->loop);
        (void) uv_timer_start(&l->poll_timer, on_poll_tick, MAX((next + 999) / 1000, (uint64_t) 1), 0);
}

void poll_start(Live *l)
{
        if (l->poll_interval_ms > 0)
                (void) uv_timer_start(&l->poll_timer, on_poll_tick, l->poll_interval_ms, 0);
}

void poll_stop(Live *l)
{
        (void) uv_timer_stop(&l->poll_timer);
        model_round_release(&l->polled, l->model);
}
