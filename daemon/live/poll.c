/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/log.h"
#include "live/live-internal.h"

/* Objects whose values are recorded per loop iteration during warm-up. */
#define WARMUP_BATCH 32
/* Queues re-read per tick: a round over 10,000 disks is spread over the interval, not one stall. */
#define POLL_SLICE 256

/* References: an event may remove any of them before its turn. */
static int collect(Live *l, bool queues, Kobject ***ret, size_t *ret_n)
{
        Kobject *kset = l->model->block_kset, **list;
        size_t n = 0;

        list = calloc(kset->n_members + 1, sizeof(Kobject *));
        if (!list)
                return -ENOMEM;
        for (Kobject *k = kset->first_member; k; k = k->next_member) {
                Kobject *o = queues ? kobject_find_child_type(k, KTYPE_QUEUE) : k;
                if (o)
                        list[n++] = kobject_ref(o);
        }
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

/* ---- warm-up: a first reading of every disk and partition, so that a change can be told ---- */

static void on_warmup(uv_idle_t *h)
{
        Live *l = h->data;

        for (unsigned i = 0; i < WARMUP_BATCH && l->warm_pos < l->n_warm; i++) {
                Kobject *k = l->warm[l->warm_pos++];
                /* Removed meanwhile, or already read by an event: nothing to do. */
                if (k->linked && !changes_recorded(k))
                        (void) changes_refresh(l, k, REFRESH_RECORD);
                kobject_unref(l->model, k);
        }
        if (l->warm_pos == l->n_warm) {
                log_debug("Recorded the values of %zu disks and partitions.", l->n_warm);
                poll_warmup_stop(l);
        }
}

int poll_warmup_start(Live *l)
{
        int r;

        r = collect(l, false, &l->warm, &l->n_warm);
        if (r < 0)
                return r;
        l->warm_pos = 0;
        return uv_idle_start(&l->warmup, on_warmup);
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
        uint64_t interval = l->poll_interval_ms, next;

        if (l->poll_pos >= l->n_polled) {
                release(l, &l->polled, &l->n_polled, &l->poll_pos);
                if (collect(l, true, &l->polled, &l->n_polled) < 0) {
                        log_error("Out of memory while polling attributes; trying again later.");
                        (void) uv_timer_start(&l->poll_timer, on_poll_tick, interval, 0);
                        return;
                }
        }
        for (unsigned i = 0; i < POLL_SLICE && l->poll_pos < l->n_polled; i++) {
                Kobject *q = l->polled[l->poll_pos++];
                /* The first reading of a queue only records (at most once per round). */
                if (q->linked)
                        (void) changes_refresh(l, q, changes_recorded(q) ? REFRESH_WATCHED : REFRESH_RECORD);
                kobject_unref(l->model, q);
        }
        next = interval / (l->n_polled / POLL_SLICE + 1);
        (void) uv_timer_start(&l->poll_timer, on_poll_tick, next > 0 ? next : 1, 0);
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
