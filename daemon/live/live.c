/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "base/log.h"
#include "base/turn.h"
#include "live/live-internal.h"

int live_push_ref(Kobject ***list, size_t *n, size_t *max, Kobject *k)
{
        if (GREEDY_REALLOC(*list, *max, *n + 1) < 0)
                return -ENOMEM;
        (*list)[(*n)++] = kobject_ref(k);
        return 0;
}

static void queue_added(Live *l, Kobject *k)
{
        if (live_push_ref(&l->added, &l->n_added, &l->n_added_max, k) < 0)
                log_error("Out of memory: %s will not be announced.", k->path);
}

static void note_member_change(Live *l, Kobject *k)
{
        if (k->kset == l->model->block_kset)
                l->members_changed[0] = true;
        else if (k->kset == l->model->devices_kset)
                l->members_changed[1] = true;
}

static void on_object_added(Model *m, Kobject *k, void *userdata)
{
        Live *l = userdata;

        if (!l->announce)
                return;
        /* Its children are not linked yet: it is announced once whole, at the next flush. */
        queue_added(l, k);
        note_member_change(l, k);
}

static void on_object_removed(Model *m, Kobject *k, void *userdata)
{
        Live *l = userdata;

        stacking_forget(l, k);
        rescan_note_gone(l, k);
        changes_forget(k);
        apply_forget(l, k);
        if (!l->announce)
                return;
        l->ops->object_removed(l->userdata, k);
        note_member_change(l, k);
}

void live_attr_unreadable(Live *l, Kobject *k, ObjDir *d, const Iface *iface, const Attr *a)
{
        if (k->linked && objdir_attr_gone(d, iface, a))
                (void) changes_reread(l, k);
}

static const char *relist_key(const void *k)
{
        return ((const Kobject *) k)->path;
}

static void on_relist_idle(uv_idle_t *h)
{
        Live *l = h->data;
        uint64_t start = now_usec();
        Hashmap todo;
        bool over = false;
        Kobject *k;
        size_t i = 0;

        /* A GetManagedObjects reply being built (in slices) holds the warm-up: its signals would go
         * out before it.  live_warmup_release() starts this again. */
        if (l->warm_holds > 0) {
                (void) uv_idle_stop(h);
                return;
        }
        /* Taken out first: a re-listing that finds another file gone puts its object back in the set,
         * for a later turn.  What this slice has no room for goes back too. */
        todo = l->relist;
        hashmap_init(&l->relist, relist_key);
        while ((k = hashmap_iterate(&todo, &i))) {
                if (over) {
                        if (hashmap_get(&l->relist, k->path) || hashmap_put(&l->relist, k) < 0)
                                kobject_unref(l->model, k);
                        continue;
                }
                if (k->linked)
                        (void) changes_reread(l, k);
                kobject_unref(l->model, k);
                over = turn_slice_over(start);
        }
        hashmap_deinit(&todo);
        if (hashmap_size(&l->relist) == 0)
                (void) uv_idle_stop(h);
}

void live_relist_later(Live *l, Kobject *k)
{
        Kobject *queued = hashmap_get(&l->relist, k->path);

        if (!k->linked || queued == k)
                return;
        /* Another object of that path, gone since: this one is what the path names now. */
        if (queued) {
                (void) hashmap_remove(&l->relist, queued);
                kobject_unref(l->model, queued);
        }
        if (hashmap_put(&l->relist, k) < 0) {
                log_error("Out of memory: %s keeps a file gone from its directory until its next reading.",
                          k->path);
                return;
        }
        kobject_ref(k);
        live_relist_go_on(l);
}

void live_relist_go_on(Live *l)
{
        if (l->warm_holds == 0 && hashmap_size(&l->relist) > 0)
                (void) uv_idle_start(&l->relist_idle, on_relist_idle);
}

static void relist_done(Live *l)
{
        Kobject *k;
        size_t i = 0;

        while ((k = hashmap_iterate(&l->relist, &i)))
                kobject_unref(l->model, k);
        hashmap_deinit(&l->relist);
}

static const ModelObserver live_observer = {
                .added = on_object_added,
                .removed = on_object_removed,
};

void live_flush(Live *l)
{
        static const char *const members[] = {"Members", NULL};
        Kobject *ksets[2] = {l->model->block_kset, l->model->devices_kset};

        /* In link order, so parents before children; each with what it has now.  One reading makes
         * both the record and InterfacesAdded, as for GetManagedObjects: the record holds exactly
         * what clients got.  (Separate readings, the record could hold a value no client ever got,
         * whose change would then never be announced: an iosched directory written file by file
         * while the poll found it did that.) */
        for (size_t i = 0; i < l->n_added; i++) {
                Kobject *k = l->added[i];
                _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(l->sysfs, k);

                live_record_reading(l, k, &d);
                if (k->linked && l->announce)
                        l->ops->object_added(l->userdata, k, &d);
                kobject_unref(l->model, k);
        }
        l->n_added = 0;

        /* Thousands of paths: Members is invalidated, not sent (its annotation says so). */
        for (size_t i = 0; i < ELEMENTSOF(ksets); i++)
                if (l->members_changed[i]) {
                        l->members_changed[i] = false;
                        if (l->announce)
                                l->ops->properties_changed(l->userdata, ksets[i], ksets[i]->ktype->interface,
                                                           NULL, (char **) members, NULL);
                }
}

int live_publish_event(Live *l, const char *action, const char *devpath, const char *object_path,
                       size_t n_env, char *const *keys, char *const *values)
{
        EventRecord *rec = NULL;
        int r;

        r = event_record_new(action, devpath, object_path, n_env, keys, values, &rec);
        if (r < 0)
                return log_error_errno(r, "Cannot record the %s event of %s: %m", action, devpath);
        (void) eventlog_append(l->events, rec);
        /* Valid until the log wraps past it: no append happens before the callback returns. */
        l->ops->event(l->userdata, rec);
        return 0;
}

void live_on_lost(UeventSource *s, void *userdata)
{
        Live *l = userdata;

        l->events_lost++;
        log_warning("Kernel uevents were lost (%" PRIu64
                    " times so far); rescanning %s once the socket is drained.",
                    l->events_lost, l->sysfs->root);
        l->ops->events_lost(l->userdata, l->events_lost);
        l->resync_pending = true;
}

void live_on_drained(UeventSource *s, void *userdata)
{
        Live *l = userdata;
        int r;

        if (!l->resync_pending)
                return;
        l->resync_pending = false;
        log_info("Rescanning after lost events.");
        r = live_rescan_start(l, NULL, NULL);
        if (r < 0)
                log_error_errno(r, "Cannot rescan after lost events: %m");
}

void live_hold(Live *l, bool hold)
{
        l->held = hold;
        rescan_held(l);
        apply_held(l);
}

uint64_t live_records_changed(const Live *l)
{
        return l->n_keeps;
}

bool live_record_changed_since(const Kobject *k, uint64_t n)
{
        return k->observer_changed > n;
}

uint64_t live_events_queued(const Live *l)
{
        return l->n_queued;
}

uint64_t live_events_applied(const Live *l)
{
        return l->n_queued - (l->n_queue - l->queue_pos);
}

uint64_t live_events_lost(const Live *l)
{
        return l->events_lost;
}

void live_object_before_write(Live *l, Kobject *k)
{
        /* Reading the disk's queued changes may replace k: an iosched object whose queue's scheduler
         * was switched meanwhile goes with the reading of the queue.  k must outlive that. */
        kobject_ref(k);
        live_read_queued_changes_of(l, k);
        /* Without a reading from before, the announcement after would have to list everything. */
        if (k->linked && !changes_recorded(k))
                (void) changes_refresh(l, k, REFRESH_RECORD);
        kobject_unref(l->model, k);
}

void live_object_after_write(Live *l, Kobject *k)
{
        /* Nobody else announces it: what the kernel stored is read back and announced (and a
         * scheduler switch replaces the iosched object). */
        (void) changes_refresh(l, k, REFRESH_ALL);
        live_flush(l);
}

static void on_handle_closed(uv_handle_t *h)
{
        Live *l = h->data;

        if (--l->n_open_handles == 0)
                free(l);
}

/* r: the handle's init; counted open when it succeeded, for live_free() to close. */
static int open_handle(Live *l, uv_handle_t *h, int r)
{
        if (r < 0)
                return r;
        h->data = l;
        l->n_open_handles++;
        return 0;
}

int live_new(const LiveConfig *c, Live **ret)
{
        Live *l;
        int r;

        l = calloc(1, sizeof(Live));
        if (!l)
                return -ENOMEM;
        l->loop = c->loop;
        l->sysfs = c->sysfs;
        l->model = c->model;
        l->events = c->events;
        l->poll_interval_ms = c->poll_interval_ms;
        l->ops = c->ops;
        l->userdata = c->userdata;
        changes_init(l);
        stacking_init(l);
        apply_init(l);
        hashmap_init(&l->relist, relist_key);

        r = open_handle(l, (uv_handle_t *) &l->warmup, uv_idle_init(l->loop, &l->warmup));
        if (r >= 0)
                r = open_handle(l, (uv_handle_t *) &l->poll_timer, uv_timer_init(l->loop, &l->poll_timer));
        if (r >= 0)
                r = open_handle(l, (uv_handle_t *) &l->rescan_idle, uv_idle_init(l->loop, &l->rescan_idle));
        if (r >= 0)
                r = open_handle(l, (uv_handle_t *) &l->queue_idle, uv_idle_init(l->loop, &l->queue_idle));
        if (r >= 0)
                r = open_handle(l, (uv_handle_t *) &l->relist_idle, uv_idle_init(l->loop, &l->relist_idle));
        if (r < 0) {
                if (l->n_open_handles == 0)
                        free(l);
                else
                        live_free(l);
                return r;
        }
        model_set_observer(l->model, &live_observer, l);
        *ret = l;
        return 0;
}

void live_free(Live *l)
{
        Kobject *k;
        size_t i = 0;

        if (!l)
                return;
        /* Nobody is left to hear about them. */
        apply_done(l);
        live_stop(l);
        model_set_observer(l->model, NULL, NULL);
        for (size_t j = 0; j < l->n_added; j++)
                kobject_unref(l->model, l->added[j]);
        l->added = mfree(l->added);
        l->n_added = 0;
        while ((k = hashmap_iterate(&l->model->by_path, &i)))
                changes_forget(k);
        relist_done(l);
        changes_done(l);
        stacking_done(l);

        /* The handles live in l: it goes with the last close callback.  Those open, in open_handle()'s
         * order. */
        uv_handle_t *handles[] = {(uv_handle_t *) &l->warmup, (uv_handle_t *) &l->poll_timer,
                                  (uv_handle_t *) &l->rescan_idle, (uv_handle_t *) &l->queue_idle,
                                  (uv_handle_t *) &l->relist_idle};
        unsigned n = l->n_open_handles;

        for (unsigned j = 0; j < n && j < ELEMENTSOF(handles); j++)
                uv_close(handles[j], on_handle_closed);
}

int live_start(Live *l)
{
        Kobject *k;
        size_t i = 0;
        int r;

        /* A reading taken before the start (an event applied before the name was taken, a rescan) is
         * older than what the clients read at the name: compared with it, a later reading would
         * announce what they hold already, or miss a value that went back.  The warm-up reads again. */
        while ((k = hashmap_iterate(&l->model->by_path, &i)))
                changes_forget(k);
        l->announce = true;
        /* The warm-up checks the modes of what is there now; what comes later has its own read. */
        l->model->shapes.exact = true;
        r = poll_warmup_start(l);
        if (r < 0)
                return r;
        poll_start(l);
        return 0;
}

void live_stop(Live *l)
{
        size_t dropped;

        rescan_cancel(l);
        /* What came before the stop, for a slice of a turn: all of a storm's backlog took seconds
         * (14 s for 80,000 uevents), the name held and every caller waiting, for a model freed next. */
        dropped = apply_at_exit(l);
        if (dropped > 0)
                log_info("Exiting with %zu uevents read but not applied; a start reads sysfs afresh.", dropped);
        l->announce = false;
        poll_warmup_stop(l);
        poll_stop(l);
}
