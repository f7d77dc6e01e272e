/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>

#include "base/log.h"
#include "base/turn.h"
#include "common/time-util.h"
#include "live/live-internal.h"

/*
 * The warm-up's and the poll's objects, read on the thread pool and compared on the loop: calls no
 * longer wait behind a slice of reading (at 1,000 x 4, with polling on: 6-10 % less time per
 * Introspect, the 99th percentile of a ping 1.8 ms instead of 2.3), and on kernfs the reading goes
 * through io_uring (sysfs/read-many.h), about 40 % less CPU per file.  A batch holds the next
 * objects' files until this many; the comparing goes in slices of the loop like the rest.
 */
#define READ_AHEAD_FILES 256

struct ReadBatch {
        uv_work_t work;
        Live *live; /* NULL: its reader stopped meanwhile, and the batch frees itself once read */
        RoundReader *reader;
        Prefetch *prefetch;
        uint64_t read_usec; /* the process's CPU time while the worker read it */
        uint64_t n_keeps;   /* the live layer's count of changed records when the reading began */
        bool read;          /* back from the worker */
        bool worked;        /* the worker ran it (not cancelled): the modes and values are read */
};

static ReadBatch *batch_free(ReadBatch *b)
{
        if (b) {
                prefetch_free(b->prefetch);
                free(b);
        }
        return NULL;
}

bool reader_busy(const RoundReader *rr)
{
        return rr->batch && !rr->batch->read;
}

bool reader_pending(const RoundReader *rr)
{
        return rr->applied < rr->n;
}

static void release_objects(Live *l, RoundReader *rr)
{
        for (size_t i = rr->applied; i < rr->n; i++)
                kobject_unref(l->model, rr->objects[i]);
        rr->n = rr->applied = 0;
}

/*
 * An object takes the shape first made of the same names, with that object's file modes
 * (sysfs/scan.h): a stat of every file at the start would cost several times the listing.  The
 * warm-up has the worker read each object's modes beside its values.
 */
static int add_modes(Prefetch *p, Kobject *k)
{
        Iface iface;
        int r = 0, n = 0;

        for (size_t i = 0; r >= 0 && i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                for (size_t j = 0; r >= 0 && iface.attrs && j < iface.attrs->n_attrs; j++, n++)
                        r = prefetch_add_mode_attr(p, &iface, &iface.attrs->attrs[j]);
        }
        return r < 0 ? r : n;
}

/* Have object i's files the modes its shape says?  Yes where unknown: a file gone, or k shaped anew
 * since (which read the modes). */
static bool modes_as_shaped(Kobject *k, Prefetch *p, size_t i)
{
        char buf[IFACE_RELPATH_MAX];
        const PrefetchMode *modes;
        size_t n, m = 0;
        Iface iface;

        modes = prefetch_modes(p, i, &n);
        for (size_t x = 0; x < kobject_n_ifaces(k); x++) {
                kobject_iface(k, x, &iface);
                for (size_t j = 0; iface.attrs && j < iface.attrs->n_attrs; j++, m++) {
                        const Attr *a = &iface.attrs->attrs[j];
                        const char *rel = iface_attr_relpath_in(&iface, a, buf);

                        if (m >= n || !rel || !streq(modes[m].file, rel))
                                return true;
                        if (modes[m].mode >= 0 && attr_flags_of_mode(modes[m].mode) != a->mode_flags)
                                return false;
                }
        }
        return true;
}

bool reader_compare(Live *l, RoundReader *rr, uint64_t start)
{
        ReadBatch *b = rr->batch;

        assert(!reader_busy(rr));
        bool ahead = b && b->worked;

        while (rr->applied < rr->n && !turn_slice_over(start)) {
                size_t i = rr->applied++;
                Kobject *k = rr->objects[i];

                if (k->linked && rr->check_modes && ahead && !modes_as_shaped(k, b->prefetch, i)) {
                        log_debug("%s: file modes other than its shape's, read anew.", k->devpath);
                        (void) changes_reread(l, k);
                } else if (rr->wants(k)) {
                        _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(l->sysfs, k);
                        /* Unless another reading changed k's record since the batch's began (an
                         * event's): the batch's values may be older than that one's, and would be
                         * announced as a change back.  Another object's says nothing of k's: under
                         * churn, dropping the rest of the batch at any change read most objects
                         * twice (as GetManagedObjects' read-ahead did, 2-3 times as long). */
                        if (ahead && live_record_changed_since(k, b->n_keeps)) {
                                rr->n_again++;
                        } else if (ahead) {
                                rr->n_ahead++;
                                prefetch_hand_over(b->prefetch, i, &d);
                        }
                        (void) changes_refresh_in(l, k, rr->how(l, k), &d);
                }
                kobject_unref(l->model, k);
        }
        rr->spent += now_usec() - start;
        if (reader_pending(rr))
                return false;
        rr->batch = batch_free(rr->batch);
        release_objects(l, rr);
        return true;
}

static uint64_t process_cpu_usec(void)
{
        return clock_nsec(CLOCK_PROCESS_CPUTIME_ID) / 1000;
}

/* The budget counts the process's CPU while the batch is read, not the reading's wall time: on
 * kernfs the kernel's io-wq threads do the reading (they count as the process's), and a worker's
 * wall time holds its waits for a CPU, which made the poll rest too long (3.5 % of a CPU where 5 % was
 * allowed, its rounds a third longer at 1,000 x 4).  What else the daemon does meanwhile counts too:
 * the poll yields to it. */
static void on_batch_work(uv_work_t *w)
{
        ReadBatch *b = w->data;
        uint64_t start = process_cpu_usec();

        prefetch_read(b->prefetch);
        b->read_usec = process_cpu_usec() - start;
}

static void on_batch_read(uv_work_t *w, int status)
{
        ReadBatch *b = w->data;

        if (!b->live) {
                batch_free(b);
                return;
        }
        /* Also when cancelled: then nothing was read, and the loop reads for itself. */
        b->read = true;
        b->worked = status >= 0;
        b->reader->spent += b->read_usec;
        b->reader->on_read(b->live);
}

int reader_read_ahead(Live *l, RoundReader *rr, uint64_t start)
{
        ReadBatch *b = calloc(1, sizeof(ReadBatch));
        size_t files = 0;
        Kobject *k;
        int r = b ? prefetch_new(l->sysfs, &b->prefetch) : -ENOMEM;

        assert(!rr->batch && !reader_pending(rr));
        rr->n = rr->applied = 0;
        while (r >= 0 && files < READ_AHEAD_FILES && !turn_slice_over(start) &&
               (k = model_round_next(rr->round))) {
                /* Read by a client already, an object has its modes checked still. */
                bool wanted = rr->wants(k);
                if (!wanted && !(rr->check_modes && k->linked)) {
                        kobject_unref(l->model, k);
                        continue;
                }
                r = live_push_ref(&rr->objects, &rr->n, &rr->n_max, k);
                kobject_unref(l->model, k);
                if (r >= 0)
                        r = wanted ? changes_read_ahead(b->prefetch, k, rr->how(l, k))
                                   : prefetch_add_object(b->prefetch, k->devpath);
                if (r > 0)
                        files += r;
                if (r >= 0 && rr->check_modes)
                        r = add_modes(b->prefetch, k);
                if (r > 0)
                        files += r;
        }
        if (r >= 0 && rr->n == 0) {
                batch_free(b);
                return 0;
        }
        if (r >= 0) {
                *b = (ReadBatch){.work.data = b,
                                 .live = l,
                                 .reader = rr,
                                 .prefetch = b->prefetch,
                                 .n_keeps = l->n_keeps};
                r = uv_queue_work(l->loop, &b->work, on_batch_work, on_batch_read);
        }
        rr->spent += now_usec() - start;
        if (r < 0) {
                /* The objects taken are read by reader_compare() instead. */
                log_debug_errno(r, "Cannot read ahead on the thread pool: %m");
                batch_free(b);
                return r;
        }
        rr->batch = b;
        return 1;
}

void reader_stop(Live *l, RoundReader *rr)
{
        if (rr->batch) {
                if (rr->batch->read)
                        batch_free(rr->batch);
                else
                        rr->batch->live = NULL; /* on a worker: it frees itself when read */
                rr->batch = NULL;
        }
        release_objects(l, rr);
        rr->objects = mfree(rr->objects);
        rr->n_max = 0;
        rr->spent = 0;
}
