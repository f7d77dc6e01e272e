/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "live.h"
#include "bus-manager.h"
#include "bus-object.h"
#include "eventlog.h"
#include "log.h"
#include "names.h"
#include "reconcile.h"
#include "scan.h"
#include "common/util.h"

/* NOTES.md: sd-bus drains a long write queue quadratically and fails past ~393k messages. */
#define WRITE_QUEUE_HIGH 1024
#define WRITE_QUEUE_LOW 256
/* Objects whose values are recorded per loop iteration during warm-up. */
#define WARMUP_BATCH 32
/* The env key that marks an event we made up from a rescan rather than got from the kernel. */
#define SYNTHESIZED_KEY "BLKMODEL_SYNTHESIZED"

/* ---- the Uevent signal and the event log -------------------------------------------------------- */

static int publish_event(Manager *m, const char *action, const char *devpath, const char *object_path,
                         size_t n_env, char *const *keys, char *const *values)
{
        EventRecord *rec = NULL;
        int r;

        r = event_record_new(action, devpath, object_path, n_env, keys, values, &rec);
        if (r < 0)
                return log_error_errno(r, "Cannot record the %s event of %s: %m", action, devpath);
        (void) eventlog_append(m->events, rec);
        r = bus_manager_emit_uevent(m, rec);
        if (r < 0)
                log_warning_errno(r, "Cannot send the Uevent signal for %s: %m", devpath);
        live_check_backpressure(m);
        return 0;
}

/* ---- keeping holders/ and slaves/ right on both sides of a link ---------------------------------- */

/*
 * A dm or md device appearing, changing its table or going away changes the holders/ of the
 * devices below it and the slaves/ of those above.  Re-read the links of the devices that had
 * some at their last reading (m->stacked: few) and of those the event's object links to now.
 */
static void refresh_links_of_named(Manager *m, Kobject *k, const char *dir)
{
        _cleanup_(freep) char *rel = path_join(k->devpath, dir);
        SysfsEntry *e = NULL;
        size_t n = 0;
        int fd;

        if (!rel)
                return;
        fd = sysfs_open_dir(m->model->sysfs, rel);
        if (fd < 0)
                return;
        if (sysfs_list(fd, &e, &n) >= 0)
                for (size_t i = 0; i < n; i++) {
                        Kobject *other = model_find_name(m->model, e[i].name);
                        if (other && other != k)
                                (void) bus_object_refresh(m, other, BUS_REFRESH_LINKS);
                }
        close(fd);
        sysfs_entries_free(e, n);
}

/* was_stacked: the event's object had holders/ or slaves/ links before the event (or is gone). */
static void refresh_stacked(Manager *m, Kobject *k, bool was_stacked)
{
        _cleanup_(freep) Kobject **l = NULL;
        bool is_stacked = k && hashmap_get(&m->stacked, k->path);
        size_t n = 0, i = 0;
        const char *key;
        Kobject *s;

        /* Most events are about devices with no stacking at all: nothing to look at. */
        if (!was_stacked && !is_stacked)
                return;
        if (is_stacked) {
                refresh_links_of_named(m, k, "holders");
                refresh_links_of_named(m, k, "slaves");
        }
        if (!was_stacked)
                return;
        /* Links it had may be gone: those at the other end need a look.  Refreshing changes the set:
         * work on a copy. */
        l = calloc(hashmap_size(&m->stacked) + 1, sizeof(Kobject *));
        if (!l)
                return;
        while ((s = hashmap_iterate(&m->stacked, &i, &key)))
                l[n++] = kobject_ref(s);
        for (i = 0; i < n; i++) {
                if (l[i]->linked && l[i] != k)
                        (void) bus_object_refresh(m, l[i], BUS_REFRESH_LINKS);
                kobject_unref(m->model, l[i]);
        }
}

static void announce_partitions_changed(Manager *m, Kobject *disk)
{
        if (disk && disk->ktype->id == KTYPE_DISK && disk->linked && !disk->unlinking)
                (void) bus_object_emit_property_changed(m, disk, "Partitions", true);
}

/* ---- applying one event --------------------------------------------------------------------------- */

static Kobject *add_from_sysfs(Manager *m, const char *devpath)
{
        _cleanup_(freep) char *parent = NULL;
        const char *slash = strrchr(devpath, '/');
        Kobject *k = NULL, *disk;
        bool is_partition;
        int fd, r;

        fd = sysfs_open_dir(m->model->sysfs, devpath);
        if (fd < 0) {
                log_debug_errno(fd, "%s: gone before it could be read: %m", devpath);
                return NULL;
        }
        is_partition = sysfs_has_file(fd, "partition");
        close(fd);

        if (!is_partition) {
                r = scan_add_disk(m->model, devpath, &k);
                if (r < 0) {
                        log_warning_errno(r, "%s: cannot add the disk: %m", devpath);
                        return NULL;
                }
                return k;
        }

        parent = slash ? strndup(devpath, (size_t) (slash - devpath)) : NULL;
        if (!parent)
                return NULL;
        disk = model_find_devpath(m->model, parent);
        if (!disk) {
                /* Its disk's add was lost (or is still queued): the disk brings its partitions along. */
                r = scan_add_disk(m->model, parent, &disk);
                if (r < 0) {
                        log_warning_errno(r, "%s: cannot add the disk of partition %s: %m", parent, devpath);
                        return NULL;
                }
                return model_find_devpath(m->model, devpath);
        }
        if (disk->ktype->id != KTYPE_DISK)
                return NULL;
        r = scan_add_partition(m->model, disk, slash + 1, &k);
        if (r < 0) {
                log_warning_errno(r, "%s: cannot add the partition: %m", devpath);
                return NULL;
        }
        announce_partitions_changed(m, disk);
        return k;
}

/* Records the new object's values (and its partitions'), so that the next change compares against them. */
static void record_values(Manager *m, Kobject *k)
{
        (void) bus_object_refresh(m, k, BUS_REFRESH_RECORD);
        for (Kobject *c = k->first_child; c; c = c->next_sibling)
                if (c->ktype->id == KTYPE_PARTITION)
                        (void) bus_object_refresh(m, c, BUS_REFRESH_RECORD);
}

static void remove_object(Manager *m, Kobject *k)
{
        bool partition = k->ktype->id == KTYPE_PARTITION;
        Kobject *disk = partition ? kobject_ref(k->parent) : NULL;

        model_unlink(m->model, k);
        if (disk) {
                announce_partitions_changed(m, disk);
                kobject_unref(m->model, disk);
        }
}

/* A change may bring or take attribute files and groups, not only values. */
static int reread(Manager *m, Kobject *k)
{
        Shape *shape = NULL;
        int r;

        r = scan_shape(m->model, k, &shape);
        if (r < 0) {
                log_debug_errno(r, "%s: cannot re-read the directory: %m", k->devpath);
                return bus_object_refresh(m, k, BUS_REFRESH_ALL);
        }
        return bus_object_reshape(m, k, shape);
}

/* Applies the event to the model; returns the object it is about, NULL if none (yet or any more). */
static Kobject *apply(Manager *m, const Uevent *u, char **ret_path)
{
        Kobject *k = model_find_devpath(m->model, u->devpath);

        switch (u->action) {
        case UEVENT_ADD:
                /* An add for what we have is harmless: the scan may have seen it first. */
                if (k) {
                        (void) bus_object_refresh(m, k, BUS_REFRESH_ALL);
                        return k;
                }
                k = add_from_sysfs(m, u->devpath);
                if (k)
                        record_values(m, k);
                return k;

        case UEVENT_REMOVE:
                if (!k)
                        return NULL;
                *ret_path = strdup(k->path);
                remove_object(m, k);
                return NULL;

        case UEVENT_MOVE: {
                /* A rename changes the object path: the old object goes, the new one comes. */
                Kobject *old = u->devpath_old ? model_find_devpath(m->model, u->devpath_old) : NULL;
                if (old)
                        remove_object(m, old);
                if (k)
                        return k;
                k = add_from_sysfs(m, u->devpath);
                if (k)
                        record_values(m, k);
                return k;
        }

        case UEVENT_CHANGE:
        case UEVENT_ONLINE:
        case UEVENT_OFFLINE:
        case UEVENT_BIND:
        case UEVENT_UNBIND:
                if (!k) {
                        /* A change for something we never saw: its add was lost. */
                        k = add_from_sysfs(m, u->devpath);
                        if (k)
                                record_values(m, k);
                        return k;
                }
                (void) reread(m, k);
                return k;

        case _UEVENT_ACTION_MAX:
                break;
        }
        return NULL;
}

void live_on_uevent(UeventSource *s, Uevent *u, void *userdata)
{
        _cleanup_(freep) char *gone_path = NULL;
        Manager *m = userdata;
        const char *action = uevent_action_to_string(u->action);
        Kobject *k;

        if (!streq_ptr(u->subsystem, "block")) {
                uevent_free(u);
                return;
        }
        log_debug("uevent %s %s", action, u->devpath);

        /* Whether the object was stacked is known only before the event changes it. */
        Kobject *before = model_find_devpath(m->model, u->devpath_old ? u->devpath_old : u->devpath);
        bool was_stacked = before && hashmap_get(&m->stacked, before->path);

        k = apply(m, u, &gone_path);
        refresh_stacked(m, k, was_stacked);
        (void) publish_event(m, action, u->devpath,
                             k           ? k->path
                             : gone_path ? gone_path
                                         : "/",
                             u->n_env, u->env_keys, u->env_values);
        uevent_free(u);
}

void live_scheduler_switched(Manager *m, Kobject *queue)
{
        Kobject *old = kobject_find_child_type(queue, KTYPE_ELEVATOR), *now = NULL;
        int r;

        /* The kernel replaced the directory: a new kobject, even when the same name comes back. */
        if (old)
                model_unlink(m->model, old);
        r = scan_add_elevator(m->model, queue, &now);
        if (r < 0)
                log_warning_errno(r, "%s/iosched: cannot read the new scheduler: %m", queue->devpath);
        if (old || now)
                (void) bus_object_emit_property_changed(m, queue, "Elevator", true);
}

/* ---- self-healing ----------------------------------------------------------------------------------- */

typedef struct SynthEnv {
        char **keys, **values;
        size_t n, n_values;
} SynthEnv;

static void synth_env_done(SynthEnv *e)
{
        strv_free(e->keys);
        strv_free(e->values);
}

static int synth_env_add(SynthEnv *e, const char *key, const char *value)
{
        int r = strv_extend(&e->keys, &e->n, key);
        if (r < 0)
                return r;
        return strv_extend(&e->values, &e->n_values, value);
}

/* What the kernel would have sent: ACTION, DEVPATH, SUBSYSTEM, the uevent file, and our mark. */
static int synthesize(Manager *m, const char *action, const char *devpath, const char *object_path,
                      Kobject *k)
{
        _cleanup_(freep) char *uevent = NULL;
        SynthEnv e = {};
        int r;

        r = synth_env_add(&e, "ACTION", action);
        if (r >= 0)
                r = synth_env_add(&e, "DEVPATH", devpath);
        if (r >= 0)
                r = synth_env_add(&e, "SUBSYSTEM", "block");
        if (r >= 0 && k) {
                _cleanup_(freep) char *rel = path_join(k->devpath, "uevent");
                if (rel && sysfs_read_attr_at(m->model->sysfs, rel, &uevent) >= 0) {
                        char *save = NULL;
                        for (char *line = strtok_r(uevent, "\n", &save); r >= 0 && line;
                             line = strtok_r(NULL, "\n", &save)) {
                                char *eq = strchr(line, '=');
                                if (!eq || eq == line)
                                        continue;
                                *eq = 0;
                                r = synth_env_add(&e, line, eq + 1);
                        }
                }
        }
        if (r >= 0)
                r = synth_env_add(&e, SYNTHESIZED_KEY, "1");
        if (r >= 0)
                r = publish_event(m, action, devpath, object_path, e.n, e.keys, e.values);
        synth_env_done(&e);
        return r;
}

static void on_reconcile_diff(void *userdata, const char *action, const char *devpath,
                              const char *object_path, Kobject *k)
{
        Manager *m = userdata;

        if (k)
                (void) bus_object_refresh(m, k, BUS_REFRESH_RECORD);
        (void) synthesize(m, action, devpath, object_path, k);
}

int live_reconcile(Manager *m)
{
        _cleanup_(freep) Kobject **members = NULL;
        size_t n = 0;
        int r, changes;

        r = reconcile_all(m->model, on_reconcile_diff, m);
        if (r < 0)
                return r;
        changes = r;

        /* Whatever stayed may still have changed while we were not listening. */
        r = kset_members_sorted(m->model->block_kset, &members, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                Kobject *k = members[i];
                if (!k->value_hashes) {
                        /* Never read: nothing to compare with; remember it for next time. */
                        (void) bus_object_refresh(m, k, BUS_REFRESH_RECORD);
                        continue;
                }
                r = reread(m, k);
                if (r > 0) {
                        changes++;
                        (void) synthesize(m, "change", k->devpath, k->path, k);
                }
        }
        return changes;
}

void live_on_lost(UeventSource *s, void *userdata)
{
        Manager *m = userdata;

        m->events_lost++;
        log_warning("Kernel uevents were lost (%" PRIu64 " times so far); rescanning %s once the socket is drained.",
                    m->events_lost, m->sysfs.root);
        (void) bus_manager_emit_events_lost(m);
        m->resync_pending = true;
}

void live_on_drained(UeventSource *s, void *userdata)
{
        Manager *m = userdata;
        int r;

        if (!m->resync_pending)
                return;
        m->resync_pending = false;
        r = live_reconcile(m);
        if (r < 0)
                log_error_errno(r, "Rescan after lost events failed: %m");
        else
                log_info("Rescan after lost events: %d differences.", r);
}

/* ---- back-pressure ------------------------------------------------------------------------------------ */

static void on_bus_drain_check(uv_prepare_t *h)
{
        Manager *m = h->data;
        uint64_t queued = 0;

        if (m->bus && sd_bus_get_n_queued_write(m->bus, &queued) >= 0 && queued > WRITE_QUEUE_LOW)
                return;
        uv_prepare_stop(&m->drain_watch);
        m->paused_for_bus = false;
        if (m->uevents)
                uevent_source_resume(m->uevents);
        log_debug("Bus write queue drained to %" PRIu64 "; reading uevents again.", queued);
}

void live_check_backpressure(Manager *m)
{
        uint64_t queued = 0;

        if (m->paused_for_bus || !m->uevents || !m->bus || !m->drain_watch_ready)
                return;
        if (sd_bus_get_n_queued_write(m->bus, &queued) < 0 || queued <= WRITE_QUEUE_HIGH)
                return;
        log_debug("Bus write queue at %" PRIu64 " messages; pausing uevents.", queued);
        m->paused_for_bus = true;
        uevent_source_pause(m->uevents);
        uv_prepare_start(&m->drain_watch, on_bus_drain_check);
}

/* ---- polling what changes without an event ------------------------------------------------------ */

/* Queues re-read per tick: a round over 10,000 disks is spread over the interval, not one stall. */
#define POLL_SLICE 256

static void poll_release(Manager *m)
{
        for (size_t i = m->poll_pos; i < m->n_polled; i++)
                kobject_unref(m->model, m->polled[i]);
        free(m->polled);
        m->polled = NULL;
        m->n_polled = m->poll_pos = 0;
}

static int poll_round_begin(Manager *m)
{
        Kobject *kset = m->model->block_kset;
        size_t n = 0;

        poll_release(m);
        m->polled = calloc(kset->n_members + 1, sizeof(Kobject *));
        if (!m->polled)
                return -ENOMEM;
        for (Kobject *k = kset->first_member; k; k = k->next_member) {
                Kobject *q = k->ktype->id == KTYPE_DISK ? kobject_find_child_type(k, KTYPE_QUEUE) : NULL;
                if (q)
                        m->polled[n++] = kobject_ref(q);
        }
        m->n_polled = n;
        return 0;
}

static void on_poll_tick(uv_timer_t *t)
{
        Manager *m = t->data;
        uint64_t interval = m->options.poll_interval_ms, slices, next;

        if (m->poll_pos >= m->n_polled && poll_round_begin(m) < 0) {
                log_error("Out of memory while polling attributes; trying again later.");
                uv_timer_start(&m->poll_timer, on_poll_tick, interval, 0);
                return;
        }
        for (unsigned i = 0; i < POLL_SLICE && m->poll_pos < m->n_polled; i++) {
                Kobject *q = m->polled[m->poll_pos++];
                if (q->linked)
                        /* The first reading of a queue only records (at most once per round). */
                        (void) bus_object_refresh(
                                        m, q, q->value_hashes ? BUS_REFRESH_WATCHED : BUS_REFRESH_RECORD);
                kobject_unref(m->model, q);
        }
        slices = m->n_polled / POLL_SLICE + 1;
        next = interval / slices;
        uv_timer_start(&m->poll_timer, on_poll_tick, next > 0 ? next : 1, 0);
}

void live_poll_start(Manager *m)
{
        if (m->options.poll_interval_ms == 0)
                return;
        uv_timer_start(&m->poll_timer, on_poll_tick, m->options.poll_interval_ms, 0);
}

void live_poll_stop(Manager *m)
{
        uv_timer_stop(&m->poll_timer);
        poll_release(m);
}

/* ---- warm-up ------------------------------------------------------------------------------------------ */

static void warmup_release(Manager *m)
{
        for (size_t i = m->warm_pos; i < m->n_warm; i++)
                kobject_unref(m->model, m->warm[i]);
        free(m->warm);
        m->warm = NULL;
        m->n_warm = m->warm_pos = 0;
}

static void on_warmup(uv_idle_t *h)
{
        Manager *m = h->data;

        for (unsigned i = 0; i < WARMUP_BATCH && m->warm_pos < m->n_warm; i++) {
                Kobject *k = m->warm[m->warm_pos++];
                /* Removed meanwhile, or already read by an event: nothing to do. */
                if (k->linked && !k->value_hashes)
                        (void) bus_object_refresh(m, k, BUS_REFRESH_RECORD);
                kobject_unref(m->model, k);
        }
        if (m->warm_pos == m->n_warm) {
                log_debug("Recorded the values of %zu disks and partitions.", m->n_warm);
                live_warmup_stop(m);
        }
}

int live_warmup_start(Manager *m)
{
        Kobject *kset = m->model->block_kset;
        size_t n = 0;

        m->warm = calloc(kset->n_members + 1, sizeof(Kobject *));
        if (!m->warm)
                return -ENOMEM;
        /* References: an event may remove any of them before its turn. */
        for (Kobject *k = kset->first_member; k; k = k->next_member)
                m->warm[n++] = kobject_ref(k);
        m->n_warm = n;
        m->warm_pos = 0;
        uv_idle_start(&m->warmup, on_warmup);
        return 0;
}

void live_warmup_stop(Manager *m)
{
        uv_idle_stop(&m->warmup);
        warmup_release(m);
}
