/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/log-ratelimit.h"
#include "base/log.h"
#include "blkmodel/names.h"
#include "bus/bus-internal.h"
#include "bus/errors.h"
#include "model/order.h"

static void on_disconnected(BusLoop *loop, void *userdata)
{
        Publisher *p = userdata;

        if (p->disconnected)
                p->disconnected(p->userdata);
}

static void on_idle_closed(uv_handle_t *h)
{
        free(h);
}

/* Its own allocation, freed by its close callback. */
static int idle_new(Publisher *p, uv_idle_t **ret)
{
        uv_idle_t *h = calloc(1, sizeof(uv_idle_t));
        int r;

        if (!h)
                return -ENOMEM;
        r = uv_idle_init(p->loop, h);
        if (r < 0) {
                free(h);
                return r;
        }
        h->data = p;
        *ret = h;
        return 0;
}

/* A unique name gone from the bus: a caller that left, whose replies nobody will read.  The replies
 * built over many turns are dropped: GetManagedObjects, and Members of a kset with thousands. */
static int on_caller_left(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) >= 0 && name[0] == ':' &&
            isempty(new_owner)) {
                bus_gmo_forget(userdata, name);
                bus_members_forget(userdata, name);
        }
        return 0;
}

static int publisher_register(Publisher *p)
{
        int r;

        /* Only the bus sends as org.freedesktop.DBus; asked for before any call can be queued. */
        r = sd_bus_add_match_async(p->bus, &p->callers_slot,
                                   "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                                   "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg2=''",
                                   on_caller_left, NULL, p);
        if (r < 0)
                return r;
        r = sd_bus_add_fallback(p->bus, &p->object_slot, BLKMODEL_ROOT_PATH, bus_object_handler, p);
        if (r < 0)
                return r;
        /* A managed object below the ObjectManager, as udisks2 has it: an ObjectManager client sees
         * it and its signals. */
        r = sd_bus_add_object_vtable(p->bus, &p->manager_slot, BLKMODEL_MANAGER_PATH, BLKMODEL_IFACE_MANAGER,
                                     bus_manager_vtable, p);
        if (r < 0)
                return r;
        r = sd_bus_add_object(p->bus, &p->manager_names_slot, BLKMODEL_MANAGER_PATH,
                              bus_refuse_overlong_name, NULL);
        if (r < 0)
                return r;
        /* For sd-bus's introspection of the root: its children are the two ksets (and the Manager,
         * which sd-bus knows). */
        r = sd_bus_add_node_enumerator(p->bus, &p->enumerator_slot, BLKMODEL_ROOT_PATH,
                                       bus_object_enumerator, p);
        if (r < 0)
                return r;
        /* Makes sd-bus list the ObjectManager interface on the root; GetManagedObjects is ours. */
        return sd_bus_add_object_manager(p->bus, &p->object_manager_slot, BLKMODEL_ROOT_PATH);
}

int publisher_new(const PublisherConfig *c, Publisher **ret)
{
        Publisher *p;
        int r;

        p = calloc(1, sizeof(Publisher));
        if (!p)
                return -ENOMEM;
        bus_uids_init(p);
        bus_introspect_cache_init(p);
        p->bus = sd_bus_ref(c->bus);
        p->loop = c->loop;
        p->sysfs = c->sysfs;
        p->model = c->model;
        p->live = c->live;
        p->events = c->events;
        p->uevent_source = c->uevent_source;
        p->message_max = c->message_max;
        p->disconnected = c->disconnected;
        p->settle = c->settle;
        p->userdata = c->userdata;

        r = publisher_register(p);
        if (r < 0) {
                publisher_free(p);
                return log_error_errno(r, "Cannot publish the objects: %m");
        }
        r = backlog_new(p, c->loop, &p->backlog);
        if (r < 0) {
                publisher_free(p);
                return log_error_errno(r, "Cannot publish the objects: %m");
        }
        r = idle_new(p, &p->gmo_idle);
        if (r >= 0)
                r = idle_new(p, &p->members_idle);
        if (r < 0) {
                publisher_free(p);
                return r;
        }
        r = bus_loop_attach(c->loop, p->bus, on_disconnected, p, &p->bus_loop);
        if (r < 0) {
                publisher_free(p);
                return log_error_errno(r, "Cannot attach the bus to the event loop: %m");
        }
        *ret = p;
        return 0;
}

Publisher *publisher_free(Publisher *p)
{
        if (!p)
                return NULL;
        publisher_release_name(p); /* cancels the replies being built too */
        /* Their slots belong to the bus: gone before it is. */
        bus_authorizations_cancel(p);
        bus_members_cancel(p);
        if (p->gmo_idle)
                uv_close((uv_handle_t *) p->gmo_idle, on_idle_closed);
        if (p->members_idle)
                uv_close((uv_handle_t *) p->members_idle, on_idle_closed);
        bus_writes_orphan(p);
        bus_uids_forget(p);
        bus_loop_free(p->bus_loop);
        sd_bus_slot_unref(p->object_slot);
        sd_bus_slot_unref(p->manager_slot);
        sd_bus_slot_unref(p->manager_names_slot);
        sd_bus_slot_unref(p->enumerator_slot);
        sd_bus_slot_unref(p->object_manager_slot);
        sd_bus_slot_unref(p->callers_slot);
        backlog_free(p->backlog);
        bus_introspect_cache_clear(p);
        /* Blocks, but only here, at exit: queued signals and replies still go out. */
        bus_flush_bounded(p->bus, p->release_slot ? &p->name_released : NULL);
        sd_bus_slot_unref(p->release_slot);
        sd_bus_close_unref(p->bus);
        free(p);
        return NULL;
}

/* What the first readers would otherwise sort in a turn of their own, done while nobody waits yet: at
 * 10,000 disks the first GetAll of /block sorted its 50,000 members, the first Introspect of it its
 * 10,000 children.  From then on the model keeps both in order as they change (model/order.h). */
static void prepare_readers(Publisher *p)
{
        Kobject *const *members;
        size_t n_members;

        (void) kset_members_sorted(p->model, p->model->block_kset, &members, &n_members);
        (void) kset_members_sorted(p->model, p->model->devices_kset, &members, &n_members);
        bus_introspect_prepare(p);
}

int publisher_take_name(Publisher *p)
{
        int r;

        prepare_readers(p);
        r = sd_bus_request_name(p->bus, BLKMODEL_BUS_NAME, 0);
        if (r == -EEXIST)
                return log_error_errno(r, "Cannot take the name " BLKMODEL_BUS_NAME
                                          ": another connection owns it (is blkmodeld already running "
                                          "on this bus?)");
        if (r == -EACCES || r == -EPERM)
                return log_error_errno(r, "Cannot take the name " BLKMODEL_BUS_NAME
                                          ": the bus's policy does not let this user own it (on the "
                                          "system bus only root may)");
        if (r < 0)
                return log_error_errno(r, "Cannot take the name " BLKMODEL_BUS_NAME ": %m");
        p->name_taken = true;
        return 0;
}

static int on_name_released(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
        Publisher *p = userdata;

        p->name_released = true;
        return 0;
}

void publisher_release_name(Publisher *p)
{
        /* The replies being built are not finished (their callers are told the daemon exits), and the
         * signals they held go out before the name goes: a subscriber matching the name (blkmodelctl
         * monitor) would get none of them after. */
        bus_gmo_cancel(p);
        bus_hold_release(p);
        if (!p->name_taken)
                return;
        p->name_taken = false;
        if (sd_bus_is_open(p->bus) > 0)
                /* Not a call that waits for its reply: queued behind our signals, it waited 25 s
                 * on a bus that had stopped reading from us.  Its reply comes after every call the
                 * bus routed to us by the name: the exit's flush reads up to it. */
                (void) sd_bus_release_name_async(p->bus, &p->release_slot, BLKMODEL_BUS_NAME,
                                                 on_name_released, p);
}

uint64_t publisher_queued(Publisher *p)
{
        uint64_t queued = 0;

        (void) sd_bus_get_n_queued_write(p->bus, &queued);
        return queued;
}

bool publisher_congested(Publisher *p, bool paused)
{
        return backlog_congested(p->backlog, paused);
}

void publisher_uevent(Publisher *p, const EventRecord *e)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;
        int r;

        /* Not sent is not lost: the event is in the log, and SignalsDropped will say which. */
        if (!backlog_admit(p->backlog, e))
                return;

        r = sd_bus_message_new_signal(p->bus, &s, BLKMODEL_MANAGER_PATH, BLKMODEL_IFACE_MANAGER, "Uevent");
        if (r >= 0)
                r = bus_append_event(s, e);
        bus_send_signal(p, s, r, bus_event_bound(e), e, "Uevent", e->devpath);
}

void publisher_settled(Publisher *p, sd_bus_message *msg)
{
        /* Settled means every signal up to that seqnum went out: after those a reply being built holds. */
        int r = bus_reply_in_order(p, msg, "t", eventlog_last_seqnum(p->events));
        if (r < 0)
                log_ratelimit_warning_errno(r, "Cannot answer Settle(): %m");
}

void publisher_refuse_exiting(sd_bus_message *msg)
{
        bus_reply_exiting(msg);
}

void publisher_events_lost(Publisher *p)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;
        int r;

        if (!backlog_admit(p->backlog, NULL))
                return;
        /* Built here, not by sd_bus_emit_properties_changed(), which sends at once: it goes in order with
         * the other signals (hold.c). */
        r = sd_bus_message_new_signal(p->bus, &s, BLKMODEL_MANAGER_PATH, IFACE_PROPERTIES,
                                      "PropertiesChanged");
        if (r >= 0)
                r = sd_bus_message_append(s, "sa{sv}as", BLKMODEL_IFACE_MANAGER, 1, "EventsLost", "t",
                                          live_events_lost(p->live), 0);
        bus_send_signal(p, s, r, 128, NULL, "PropertiesChanged", BLKMODEL_MANAGER_PATH);
}
