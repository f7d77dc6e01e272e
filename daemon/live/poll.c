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

/*
 * A slice's files are read on the thread pool and the loop only compares: calls no longer wait
 * behind a slice of reading (at 1,000 x 4, with polling on: 6-10 % less time per Introspect, the
 * 99th percentile of a ping 1.8 ms instead of 2.3), and on kernfs the reading goes through io_uring
 * (sysfs/read-many.h), about 40 % less CPU per file.  A slice reads the watched files of objects
 * until this many (every file of an object not recorded yet); the comparing goes in slices of the
 * loop like the rest, and the CPU budget counts the reading's time too.
 */
#define POLL_BATCH_FILES 256

typedef struct PollBatch {
        uv_work_t work;
        Live *live; /* NULL: the poll stopped meanwhile, and the batch frees itself once read */
        Prefetch *prefetch;
        uint64_t read_usec; /* the reading's wall time, on the worker */
        uint64_t n_keeps;   /* the live layer's count of changed records when the reading began */
        bool read;          /* back from the worker */
        bool usable;        /* what it read may be handed over */
} PollBatch;

static void on_poll_tick(uv_timer_t *t);

static PollBatch *poll_batch_free(PollBatch *b)
{
        if (b) {
                prefetch_free(b->prefetch);
                free(b);
        }
        return NULL;
}

static Refresh poll_how(const Kobject *k)
{
        /* The first reading of an object only records (at most once per round). */
        return changes_recorded(k) ? REFRESH_WATCHED : REFRESH_RECORD;
}

/* Rests long enough after a slice that took spent µs to stay within the CPU budget. */
static void poll_rest(Live *l, uint64_t spent)
{
        uint64_t interval = (uint64_t) l->poll_interval_ms * 1000, next = spent * POLL_REST_PER_SLICE;

        /* Rest long enough to stay within the CPU budget, with room in it for the loop's own wake-ups:
         * a slice per 21 of rest, 4.55 %.  With 20 (4.76 %) the whole idle daemon measured 4.75-4.85 %
         * on one VM, and 4.90-5.05 % at 10,000 x 4 on one whose syscalls cost twice as much; with 21
         * there, 4.76-4.80 %.  A finished round waits for its interval. */
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

/* Compares the batch's objects with their records, for one slice of the loop at most: true when all
 * are done.  Without a batch (it could not be read ahead) each object is read here. */
static bool poll_compare(Live *l, PollBatch *b, uint64_t start)
{
        /* Another reading changed a record since the batch's began (or since its last slice of
         * comparing): its values may be older than that one's, and would be announced as a change
         * back.  The batch's objects left are read again here. */
        if (b && b->n_keeps != l->n_keeps)
                b->usable = false;
        bool ahead = b && b->usable;

        while (l->poll_applied < l->n_poll_objects && now_usec(l) - start < SLICE_USEC) {
                size_t i = l->poll_applied++;
                Kobject *k = l->poll_objects[i];

                if (k->linked && changes_watched(k)) {
                        _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(l->sysfs, k);
                        if (ahead)
                                prefetch_hand_over(b->prefetch, i, &d);
                        (void) changes_refresh_in(l, k, poll_how(k), &d);
                }
                kobject_unref(l->model, k);
        }
        if (b)
                b->n_keeps = l->n_keeps;
        return l->poll_applied == l->n_poll_objects;
}

static void poll_objects_release(Live *l)
{
        for (size_t i = l->poll_applied; i < l->n_poll_objects; i++)
                kobject_unref(l->model, l->poll_objects[i]);
        l->n_poll_objects = l->poll_applied = 0;
}

static void on_poll_work(uv_work_t *w)
{
        PollBatch *b = w->data;
        uint64_t start = uv_hrtime();

        prefetch_read(b->prefetch);
        b->read_usec = (uv_hrtime() - start) / 1000;
}

/* The comparing of a batch, in slices of the loop, then the rest. */
static void poll_go_on(Live *l, uint64_t start)
{
        bool done = poll_compare(l, l->poll_batch, start);

        l->poll_spent += now_usec(l) - start;
        if (!done) {
                (void) uv_timer_start(&l->poll_timer, on_poll_tick, 0, 0);
                return;
        }
        l->poll_batch = poll_batch_free(l->poll_batch);
        poll_objects_release(l);
        poll_rest(l, l->poll_spent);
        l->poll_spent = 0;
}

static void on_poll_read(uv_work_t *w, int status)
{
        PollBatch *b = w->data;

        if (!b->live) {
                poll_batch_free(b);
                return;
        }
        /* Also when cancelled: then nothing was read, and the loop reads for itself. */
        b->read = true;
        b->usable = status >= 0;
        b->live->poll_spent += b->read_usec;
        poll_go_on(b->live, now_usec(b->live));
}

/* Takes the next objects with watched files until a batch's worth, and queues their reading: false
 * if it could not (the loop then reads them itself). */
static bool poll_read_ahead(Live *l, uint64_t start)
{
        PollBatch *b = calloc(1, sizeof(PollBatch));
        size_t files = 0;
        Kobject *k;
        int r = b ? prefetch_new(l->sysfs, &b->prefetch) : -ENOMEM;

        while (r >= 0 && files < POLL_BATCH_FILES && now_usec(l) - start < SLICE_USEC &&
               (k = model_round_next(&l->polled))) {
                if (!k->linked || !changes_watched(k)) {
                        kobject_unref(l->model, k);
                        continue;
                }
                r = live_push_ref(&l->poll_objects, &l->n_poll_objects, &l->n_poll_objects_max, k);
                kobject_unref(l->model, k);
                if (r >= 0)
                        r = changes_read_ahead(b->prefetch, k, poll_how(k));
                if (r > 0)
                        files += r;
        }
        if (r >= 0 && l->n_poll_objects == 0) {
                poll_batch_free(b); /* the round's last objects had nothing to read */
                return true;
        }
        if (r >= 0) {
                *b = (PollBatch){.work.data = b, .live = l, .prefetch = b->prefetch, .n_keeps = l->n_keeps};
                r = uv_queue_work(l->loop, &b->work, on_poll_work, on_poll_read);
        }
        if (r < 0) {
                log_debug_errno(r, "Polling: cannot read ahead: %m");
                poll_batch_free(b);
                return false;
        }
        l->poll_batch = b;
        return true;
}

static void on_poll_tick(uv_timer_t *t)
{
        Live *l = t->data;
        uint64_t start = now_usec(l);

        /* A slice whose comparing goes on (once its batch is read, if it has one). */
        if (l->poll_batch || l->poll_applied < l->n_poll_objects) {
                if (!l->poll_batch || l->poll_batch->read)
                        poll_go_on(l, start);
                return;
        }
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
        if (!poll_read_ahead(l, start)) {
                /* Read here, as the objects taken so far are. */
                poll_go_on(l, start);
                return;
        }
        if (l->poll_batch) {
                l->poll_spent += now_usec(l) - start;
                return; /* on_poll_read() goes on */
        }
        poll_rest(l, now_usec(l) - start);
}

void poll_start(Live *l)
{
        if (l->poll_interval_ms > 0)
                (void) uv_timer_start(&l->poll_timer, on_poll_tick, l->poll_interval_ms, 0);
}

void poll_stop(Live *l)
{
        (void) uv_timer_stop(&l->poll_timer);
        if (l->poll_batch) {
                if (l->poll_batch->read)
                        poll_batch_free(l->poll_batch);
                else
                        l->poll_batch->live = NULL; /* on a worker: it frees itself when read */
                l->poll_batch = NULL;
        }
        poll_objects_release(l);
        free(l->poll_objects);
        l->poll_objects = NULL;
        l->n_poll_objects_max = 0;
        l->poll_spent = 0;
        model_round_release(&l->polled, l->model);
}
