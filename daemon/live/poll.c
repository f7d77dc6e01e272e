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

/* Every object with values (a kset has none), as references: an event may remove any of them
 * before its turn. */
static int collect(Live *l, Kobject ***ret, size_t *ret_n)
{
        Kobject **list, *k;
        size_t n = 0, i = 0;

        list = calloc(l->model->n_objects + 1, sizeof(Kobject *));
        if (!list)
                return -ENOMEM;
        while ((k = hashmap_iterate(&l->model->by_path, &i)))
                if (k->ktype->id != KTYPE_KSET)
                        list[n++] = kobject_ref(k);
        *ret = list;
        *ret_n = n;
        return 0;
}

static void release(Live *l, Kobject ***list, size_t *n, size_t *pos)
{
        for (size_t i = *pos; i < *n; i++)
                kobject_unref(l->model, (*list)[i]);
        *list = mfree(*list);
        *n = *pos = 0;
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

        while (l->warm_pos < l->n_warm && now_usec(l) - start < SLICE_USEC) {
                Kobject *k = l->warm[l->warm_pos++];
                /* Removed meanwhile, or already read by an event: nothing to do. */
                if (k->linked && !changes_recorded(k))
                        (void) changes_refresh(l, k, REFRESH_RECORD);
                kobject_unref(l->model, k);
        }
        if (l->warm_pos == l->n_warm) {
                log_debug("Recorded the values of %zu objects.", l->n_warm);
                poll_warmup_stop(l);
        }
}

int poll_warmup_start(Live *l)
{
        int r;

        r = collect(l, &l->warm, &l->n_warm);
        if (r < 0)
                return r;
        l->warm_pos = 0;
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
        if (--l->warm_holds == 0 && l->warm_pos < l->n_warm)
                (void) uv_idle_start(&l->warmup, on_warmup);
}

void poll_warmup_stop(Live *l)
{
        (void) uv_idle_stop(&l->warmup);
        release(l, &l->warm, &l->n_warm, &l->warm_pos);
}

/* ---- polling what changes without an event ---- */

static void on_poll_tick(uv_timer_t *t)
{
        Live *l = t->data;
        uint64_t start = now_usec(l), spent, interval = (uint64_t) l->poll_interval_ms * 1000, next;

        if (l->poll_pos >= l->n_polled) {
                release(l, &l->polled, &l->n_polled, &l->poll_pos);
                /* Which objects have watched values is asked in the slices: over every object at once
                 * it kept the loop 16 ms at 10,000 x 4, where collecting alone takes 3 ms. */
                if (collect(l, &l->polled, &l->n_polled) < 0) {
                        log_error("Out of memory while polling attributes; trying again later.");
                        (void) uv_timer_start(&l->poll_timer, on_poll_tick, l->poll_interval_ms, 0);
                        return;
                }
                l->poll_round_start = start;
        }
        while (l->poll_pos < l->n_polled && now_usec(l) - start < SLICE_USEC) {
                Kobject *k = l->polled[l->poll_pos++];
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
        if (l->poll_pos >= l->n_polled) {
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
        release(l, &l->polled, &l->n_polled, &l->poll_pos);
}
