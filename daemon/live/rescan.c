/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/log.h"
#include "base/turn.h"
#include "live/live-internal.h"
#include "model/order.h"
#include "sysfs/read.h"
#include "sysfs/reconcile.h"
#include "sysfs/values.h"

/* A kset with this many children has them taken one a step (Rescan.kset); fewer are pushed at once,
 * sorted on their own, and take none of the model's few kept orders (model/order.h). */
#define KSET_CHILDREN_ONE_A_STEP 512

typedef struct RescanWaiter {
        LiveRescanDone done;
        void *userdata;
} RescanWaiter;

typedef struct Rescan {
        Reconcile *reconcile; /* first: block devices and what follows them */
        /* Then every object read again, depth first: what is still to be visited, the next on top
         * (references: an event may remove any of them before its turn). */
        Kobject **stack;
        size_t n_stack, n_stack_max;
        /* A kset's children are taken one a step, in name order, when the stack is back to where
         * it was when the kset came off it: the block kset has one per disk, and referencing 10,000
         * at once was a step of 4.6-6.8 ms, on top of the slice it ended.  A reference; NULL: none. */
        Kobject *kset;
        char *kset_after; /* the name of the child taken last; NULL before the first */
        size_t kset_base;
        int changes;
        /* The uevents queued when it began (live_events_queued()): applied before its first step,
         * or it would make up events for what they announce. */
        uint64_t events_before;
        RescanWaiter *waiters;
        size_t n_waiters;
} Rescan;

typedef struct GoneUevent {
        char *devpath;
        char **pairs;
} GoneUevent;

void rescan_note_gone(Live *l, const Kobject *k)
{
        char **pairs = NULL;

        if (!l->reconciling || changes_kept_uevent(k, &pairs) < 0 || !pairs)
                return;
        if (GREEDY_REALLOC(l->gone, l->n_gone_max, l->n_gone + 1) < 0 ||
            !(l->gone[l->n_gone].devpath = strdup(k->devpath))) {
                strv_free(pairs);
                return; /* its remove says less, that is all */
        }
        l->gone[l->n_gone++].pairs = pairs;
}

static void gone_clear(Live *l)
{
        for (size_t i = 0; i < l->n_gone; i++) {
                free(l->gone[i].devpath);
                strv_free(l->gone[i].pairs);
        }
        l->gone = mfree(l->gone);
        l->n_gone = l->n_gone_max = 0;
}

/* What was noted of devpath when it went (NULL if nothing): the caller frees it. */
static char **gone_take(Live *l, const char *devpath)
{
        for (size_t i = 0; i < l->n_gone; i++)
                if (streq(l->gone[i].devpath, devpath)) {
                        char **pairs = l->gone[i].pairs;
                        free(l->gone[i].devpath);
                        l->gone[i] = l->gone[--l->n_gone];
                        return pairs;
                }
        return NULL;
}

/* What the kernel would have sent: ACTION, DEVPATH, SUBSYSTEM, the uevent file (for a remove, what the
 * object's record held of it), and our mark. */
static int live_synthesize(Live *l, const char *action, const char *devpath, const char *object_path,
                           Kobject *k)
{
        _cleanup_(strv_freep) char **keys = NULL, **values = NULL, **pairs = NULL;
        _cleanup_(freep) char *text = NULL, *rel = NULL;
        size_t n_keys = 0, n_values = 0;
        int r;

        r = strv_extend(&keys, &n_keys, "ACTION");
        if (r >= 0)
                r = strv_extend(&values, &n_values, action);
        if (r >= 0)
                r = strv_extend(&keys, &n_keys, "DEVPATH");
        if (r >= 0)
                r = strv_extend(&values, &n_values, devpath);
        if (r >= 0)
                r = strv_extend(&keys, &n_keys, "SUBSYSTEM");
        if (r >= 0)
                r = strv_extend(&values, &n_values, "block");
        if (!k && streq(action, "remove"))
                pairs = gone_take(l, devpath);
        if (r >= 0 && k && k->ktype->has_uevent) {
                rel = path_join(k->devpath, "uevent");
                if (rel && sysfs_read_attr_at(l->sysfs, rel, &text) >= 0)
                        (void) parse_uevent_file(text, &pairs);
        }
        for (char **p = pairs; r >= 0 && p && p[0] && p[1]; p += 2) {
                /* The env is a map (a key once): ours win over a file that names them too. */
                if (streq(p[0], "ACTION") || streq(p[0], "DEVPATH") || streq(p[0], "SUBSYSTEM") ||
                    streq(p[0], SYNTHESIZED_KEY))
                        continue;
                r = strv_extend(&keys, &n_keys, p[0]);
                if (r >= 0)
                        r = strv_extend(&values, &n_values, p[1]);
        }
        if (r >= 0)
                r = strv_extend(&keys, &n_keys, SYNTHESIZED_KEY);
        if (r >= 0)
                r = strv_extend(&values, &n_values, "1");
        if (r < 0)
                return log_error_errno(r, "Cannot make up the %s event of %s: %m", action, devpath);
        return live_publish_event(l, action, devpath, object_path, n_keys, keys, values);
}

static void on_reconcile_diff(void *userdata, const char *action, const char *devpath,
                              const char *object_path, Kobject *k)
{
        Live *l = userdata;

        /* The object is announced before its event. */
        live_flush(l);
        if (k)
                (void) changes_refresh(l, k, REFRESH_RECORD);
        (void) live_synthesize(l, action, devpath, object_path, k);
}

/* The kernel's event for a difference may be unread in the socket still, or queued: read the socket
 * (queuing what it holds, not applying it amid a step) and leave the difference to the event. */
static bool event_awaited(void *userdata, const char *devpath)
{
        Live *l = userdata;

        if (l->ops->read_uevents) {
                l->queue_only = true;
                l->ops->read_uevents(l->userdata);
                l->queue_only = false;
        }
        return apply_queued_names(l, devpath);
}

static void on_rescan_idle(uv_idle_t *h);

/* A request nobody waits for still asks for a fresh look. */
static void rescan_ignore(int result, void *userdata)
{
}

static void rescan_free(Live *l, Rescan *s)
{
        reconcile_free(s->reconcile);
        kobject_unref(l->model, s->kset);
        free(s->kset_after);
        for (size_t i = 0; i < s->n_stack; i++)
                kobject_unref(l->model, s->stack[i]);
        free(s->stack);
        free(s->waiters);
        free(s);
}

static int push(Rescan *s, Kobject *k)
{
        return live_push_ref(&s->stack, &s->n_stack, &s->n_stack_max, k);
}

/* Depth first, each level sorted by name: a disk before its partitions, and the same order every
 * time.  One object's children a step: listing all 91,000 objects at once stalled the loop 30 ms. */
static int push_children(Rescan *s, Kobject *k)
{
        _cleanup_(freep) Kobject **children = NULL;
        size_t n = 0;
        int r;

        r = kobject_children_sorted(k, _KTYPE_MAX, &children, &n);
        for (size_t i = n; r >= 0 && i > 0; i--)
                r = push(s, children[i - 1]);
        return r;
}

/* Pushes the kset's next child, found by name: children that came or went meanwhile are taken or
 * passed over as the order now has them, and none is held that the model may have freed. */
static int push_next_kset_child(Live *l, Rescan *s)
{
        Kobject *next;
        int r;

        r = model_child_after(l->model, s->kset, s->kset_after, &next);
        if (r < 0)
                return r;
        if (!next) {
                kobject_unref(l->model, TAKE_PTR(s->kset));
                s->kset_after = mfree(s->kset_after);
                return 1;
        }
        char *name = strdup(next->name);
        if (!name)
                return -ENOMEM;
        free(s->kset_after);
        s->kset_after = name;
        r = push(s, next);
        return r < 0 ? r : 1;
}

/* Whatever stayed may still have changed while we were not listening. */
static void reread_one(Live *l, Rescan *s, Kobject *k)
{
        bool known;
        int r;

        if (!k->linked)
                return;
        /* Never read (by a client or the warm-up): nobody holds a value to tell a change from, and
         * only a difference known as one gets a made-up event. */
        known = changes_recorded(k);
        r = changes_reread(l, k);
        live_flush(l);
        if (!known || r <= 0)
                return;
        /* Counted whatever it is (a queue's read_ahead_kb too); only a block device has events. */
        s->changes++;
        if (ktype_is_block_device(k->ktype))
                (void) live_synthesize(l, "change", k->devpath, k->path, k);
}

/* One unit of work: 1 while there is more, 0 when done, negative errno. */
static int rescan_step(Live *l, Rescan *s)
{
        int r;

        if (s->reconcile) {
                l->reconciling = true;
                r = reconcile_step(s->reconcile);
                l->reconciling = false;
                gone_clear(l); /* each remove it made up has taken its own */
                live_flush(l);
                if (r != 0)
                        return r;
                s->changes += reconcile_changes(s->reconcile);
                s->reconcile = reconcile_free(s->reconcile);
                /* The ksets are not read again, only what is below them; block first. */
                r = push(s, l->model->devices_kset);
                if (r >= 0)
                        r = push(s, l->model->block_kset);
                return r < 0 ? r : 1;
        }
        if (s->kset && s->n_stack == s->kset_base)
                return push_next_kset_child(l, s);
        if (s->n_stack > 0) {
                Kobject *k = s->stack[--s->n_stack];
                if (k->ktype->id == KTYPE_KSET && k->n_children >= KSET_CHILDREN_ONE_A_STEP && !s->kset) {
                        s->kset = k; /* the stack's reference */
                        s->kset_base = s->n_stack;
                        return 1;
                }
                /* Gone meanwhile: so are its children, as the signals already said. */
                r = k->linked ? push_children(s, k) : 0;
                if (r >= 0 && k->ktype->id != KTYPE_KSET)
                        reread_one(l, s, k);
                kobject_unref(l->model, k);
                return r < 0 ? r : 1;
        }
        return 0;
}

static int rescan_begin(Live *l, Rescan **ret)
{
        Rescan *s;
        int r;

        r = sysfs_reopen_if_replaced(l->sysfs);
        if (r > 0)
                log_notice("%s was replaced; reading the new tree.", l->sysfs->root);
        s = calloc(1, sizeof(Rescan));
        if (!s)
                return -ENOMEM;
        r = reconcile_new(l->sysfs, l->model, on_reconcile_diff, l, &s->reconcile);
        if (r < 0) {
                free(s);
                return r;
        }
        reconcile_set_awaited(s->reconcile, event_awaited);
        s->events_before = l->n_queued;
        *ret = s;
        return 0;
}

static void rescan_run(Live *l)
{
        if (l->rescan && !l->held)
                (void) uv_idle_start(&l->rescan_idle, on_rescan_idle);
}

static void rescan_finish(Live *l, int result)
{
        Rescan *s = l->rescan;

        l->rescan = NULL;
        (void) uv_idle_stop(&l->rescan_idle);
        for (size_t i = 0; s && i < s->n_waiters; i++)
                s->waiters[i].done(result, s->waiters[i].userdata);
        if (s)
                rescan_free(l, s);

        /* Those who asked meanwhile may have changes this one had passed already: a fresh one. */
        if (l->n_next_waiters > 0) {
                RescanWaiter *w = TAKE_PTR(l->next_waiters);
                size_t n = l->n_next_waiters;
                int r;

                l->n_next_waiters = 0;
                r = rescan_begin(l, &l->rescan);
                if (r >= 0) {
                        l->rescan->waiters = w;
                        l->rescan->n_waiters = n;
                        rescan_run(l);
                        return;
                }
                for (size_t i = 0; i < n; i++)
                        w[i].done(r, w[i].userdata);
                free(w);
        }
        poll_after_rescan(l);
}

static void on_rescan_idle(uv_idle_t *h)
{
        Live *l = h->data;
        uint64_t start = now_usec();
        int r = 1;
        TURN_PART("a slice of a Rescan");

        /* Not applied here at once: with thousands queued, that held the loop (their own idle
         * handler applies them a slice a turn). */
        if (l->rescan && live_events_applied(l) < l->rescan->events_before)
                return;
        while (l->rescan && (r = rescan_step(l, l->rescan)) > 0) {
                if (l->held) /* live_hold() has stopped this handle */
                        return;
                if (turn_slice_over(start))
                        return;
        }
        if (!l->rescan)
                return;
        if (r < 0)
                log_error_errno(r, "Rescan failed: %m");
        else
                log_info("Rescan: %d difference%s.", l->rescan->changes, l->rescan->changes == 1 ? "" : "s");
        rescan_finish(l, r < 0 ? r : l->rescan->changes);
}

static int add_waiter(RescanWaiter **l, size_t *n, LiveRescanDone done, void *userdata)
{
        RescanWaiter *t;

        if (!done)
                return 0;
        t = realloc(*l, sizeof(RescanWaiter) * (*n + 1));
        if (!t)
                return -ENOMEM;
        t[(*n)++] = (RescanWaiter){done, userdata};
        *l = t;
        return 0;
}

int live_rescan_start(Live *l, LiveRescanDone done, void *userdata)
{
        int r;

        if (l->rescan) {
                r = add_waiter(&l->next_waiters, &l->n_next_waiters, done, userdata);
                /* Even with nobody waiting, something asked to look again. */
                if (r >= 0 && !done)
                        r = add_waiter(&l->next_waiters, &l->n_next_waiters, rescan_ignore, NULL);
                return r;
        }
        r = rescan_begin(l, &l->rescan);
        if (r < 0)
                return r;
        r = add_waiter(&l->rescan->waiters, &l->rescan->n_waiters, done, userdata);
        if (r < 0) {
                rescan_free(l, TAKE_PTR(l->rescan));
                return r;
        }
        rescan_run(l);
        return 0;
}

void rescan_held(Live *l)
{
        if (l->held)
                (void) uv_idle_stop(&l->rescan_idle);
        else
                rescan_run(l);
}

void rescan_cancel(Live *l)
{
        _cleanup_(freep) RescanWaiter *next = TAKE_PTR(l->next_waiters);
        size_t n = l->n_next_waiters;

        l->n_next_waiters = 0;
        if (l->rescan)
                rescan_finish(l, -ECANCELED);
        for (size_t i = 0; i < n; i++)
                next[i].done(-ECANCELED, next[i].userdata);
}

int live_rescan(Live *l)
{
        Rescan *s;
        int r;

        if (l->rescan)
                return -EBUSY;
        live_apply_queued(l);
        r = rescan_begin(l, &s);
        if (r < 0)
                return r;
        while ((r = rescan_step(l, s)) > 0)
                ;
        if (r >= 0)
                r = s->changes;
        rescan_free(l, s);
        return r;
}
