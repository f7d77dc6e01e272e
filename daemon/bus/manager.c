/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <limits.h>

#include "blkmodel/names.h"
#include "bus/bus-internal.h"
#include "bus/errors.h"
#include "sysfs/resolve.h"
#include "uevent/uevent.h"

/* The Manager interface (SPEC §5): fixed, so a static vtable; sd-bus introspects it. */

/* The largest GetEvents reply, or less on a bus that takes less.  Built in one turn of the loop: 4 MiB
 * (7,600 events with 180-byte values) held it 35-43 ms, over SPEC §9's 20; 1 MiB takes a quarter,
 * and a client pages through the log with a call every 1,900 events or so. */
#define GET_EVENTS_REPLY_MAX ((size_t) 1 << 20)

static int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
        return sd_bus_message_append(reply, "s", BLKMODEL_VERSION);
}

static int property_get_sysfs_root(sd_bus *bus, const char *path, const char *interface,
                                   const char *property, sd_bus_message *reply, void *userdata,
                                   sd_bus_error *error)
{
        Publisher *p = userdata;
        return sd_bus_message_append(reply, "s", p->sysfs->root);
}

static int property_get_uevent_source(sd_bus *bus, const char *path, const char *interface,
                                      const char *property, sd_bus_message *reply, void *userdata,
                                      sd_bus_error *error)
{
        Publisher *p = userdata;
        return sd_bus_message_append(reply, "s", p->uevent_source);
}

static int property_get_last_seqnum(sd_bus *bus, const char *path, const char *interface,
                                    const char *property, sd_bus_message *reply, void *userdata,
                                    sd_bus_error *error)
{
        Publisher *p = userdata;
        return sd_bus_message_append(reply, "t", bus_told_seqnum(p));
}

static int property_get_oldest_seqnum(sd_bus *bus, const char *path, const char *interface,
                                      const char *property, sd_bus_message *reply, void *userdata,
                                      sd_bus_error *error)
{
        Publisher *p = userdata;
        return sd_bus_message_append(reply, "t", eventlog_oldest_seqnum(p->events));
}

static int property_get_events_lost(sd_bus *bus, const char *path, const char *interface,
                                    const char *property, sd_bus_message *reply, void *userdata,
                                    sd_bus_error *error)
{
        Publisher *p = userdata;
        return sd_bus_message_append(reply, "t", live_events_lost(p->live));
}

static int property_get_object_count(sd_bus *bus, const char *path, const char *interface,
                                     const char *property, sd_bus_message *reply, void *userdata,
                                     sd_bus_error *error)
{
        Publisher *p = userdata;
        return sd_bus_message_append(reply, "u", (uint32_t) p->model->n_objects);
}

static int method_resolve(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        Publisher *p = userdata;
        const char *spec;
        Kobject *k;
        int r;

        r = sd_bus_message_read(msg, "s", &spec);
        if (r < 0)
                return r;
        if (streq(spec, BLKMODEL_MANAGER_PATH))
                return sd_bus_reply_method_return(msg, "o", spec);
        r = resolve_spec(p->sysfs, p->model, spec, &k);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return bus_error_no_such_object(error, spec);
        return sd_bus_reply_method_return(msg, "o", k ? k->path : BLKMODEL_ROOT_PATH);
}

typedef struct RescanCall {
        Publisher *p;
        sd_bus_message *msg;
} RescanCall;

/* The reply waits for the rescan, which runs in slices while the loop serves everyone else. */
static void rescan_done(int result, void *userdata)
{
        _cleanup_(freep) RescanCall *c = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = c->msg;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

        if (result < 0) {
                /* Cancelled: the daemon exits. */
                if (result == -ECANCELED)
                        (void) bus_error_exiting(&error);
                else
                        (void) bus_error_errno(&error, result, "Rescan failed");
                (void) sd_bus_reply_method_error(msg, &error);
                return;
        }
        /* Done means every difference was told: after the signals, even those a reply being built holds. */
        (void) bus_reply_in_order(c->p, msg, NULL);
}

static int rescan_authorized(Publisher *p, sd_bus_message *msg, sd_bus_error *error)
{
        RescanCall *c;
        int r;

        c = malloc(sizeof(RescanCall));
        if (!c)
                return -ENOMEM;
        *c = (RescanCall){p, sd_bus_message_ref(msg)};
        r = live_rescan_start(p->live, rescan_done, c);
        if (r < 0) {
                sd_bus_message_unref(msg);
                free(c);
                return bus_error_errno(error, r, "Rescan failed");
        }
        return 1;
}

static int method_rescan(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        return bus_authorize(userdata, msg, BLKMODEL_ACTION_RESCAN, NULL, rescan_authorized, error);
}

int bus_append_event(sd_bus_message *m, const EventRecord *e)
{
        int r;

        r = sd_bus_message_append(m, "tsso", e->seqnum, e->action, e->devpath, e->object_path);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'a', "{ss}");
        for (size_t i = 0; r >= 0 && i < e->n_env; i++)
                r = sd_bus_message_append(m, "{ss}", e->env_keys[i], e->env_values[i]);
        return r < 0 ? r : sd_bus_message_close_container(m);
}

/* What one event takes in a message at most, as marshalled from an 8-aligned offset (a signal's body,
 * an element of GetEvents' array): the seqnum, the strings with their length, NUL and padding, the
 * array's length, each env entry aligned to 8, the padding to the next 8.  Reckoned entry by entry,
 * not as a flat 18 bytes an entry: a key and a value of some lengths take 20, and a rescan's event
 * of a uevent file's hundreds of lines passed the bus's limit by more than the header's room. */
size_t bus_event_bound(const EventRecord *e)
{
        size_t n = 8;

        n = wire_string_end(n, e->action);
        n = wire_string_end(n, e->devpath);
        n = wire_string_end(n, e->object_path);
        n = wire_align(wire_align(n, 4) + 4, 8);
        for (size_t i = 0; i < e->n_env; i++)
                n = wire_string_end(wire_string_end(wire_align(n, 8), e->env_keys[i]), e->env_values[i]);
        return wire_align(n, 8);
}

static int method_get_events(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Publisher *p = userdata;
        size_t first, n, max = MIN(GET_EVENTS_REPLY_MAX, bus_reply_body_max(p));
        uint64_t after, told, from;
        int r;

        r = sd_bus_message_read(msg, "t", &after);
        if (r < 0)
                return r;
        r = eventlog_since(p->events, after, &first, &n);
        if (r == -ESTALE)
                return bus_error_events_expired(error, after, eventlog_first_seqnum(p->events),
                                                eventlog_oldest_seqnum(p->events));
        if (r < 0)
                return bus_error_errno(error, r, "Cannot list the events");
        /* Not those whose Uevents wait for a reply being built: they come as signals, once. */
        told = bus_told_seqnum(p);
        from = eventlog_oldest_seqnum(p->events) + first;
        n = told < from ? 0 : MIN(n, (size_t) (told - from + 1));

        /* As many whole events as fit well below any bus's message limit (a log of 2^20 events would
         * pass it); the client asks again after the last seqnum it got. */
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(tssoa{ss})");
        for (size_t i = 0, bytes = WIRE_DICT_ARRAY_HEAD; r >= 0 && i < n; i++) {
                const EventRecord *e = eventlog_get(p->events, first + i);

                bytes += bus_event_bound(e);
                if (bytes > max) {
                        char what[64];

                        if (i > 0)
                                break;
                        (void) snprintf(what, sizeof(what), "Event %" PRIu64, e->seqnum);
                        return bus_refuse_reply(p, what, e->devpath, bytes,
                                                "GetEvents after it goes on, GetManagedObjects has the model.",
                                                error);
                }
                r = sd_bus_message_open_container(reply, 'r', "tssoa{ss}");
                if (r >= 0)
                        r = bus_append_event(reply, e);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
}

static int trigger_authorized(Publisher *p, sd_bus_message *msg, sd_bus_error *error);

/* authorized: the second time through, once bus_authorize() has let the caller in. */
static int trigger(Publisher *p, sd_bus_message *msg, bool authorized, sd_bus_error *error)
{
        _cleanup_(closep) int fd = -1;
        const char *path, *action;
        Kobject *k;
        int r;

        r = sd_bus_message_read(msg, "os", &path, &action);
        if (r < 0)
                return r;
        if (isempty(action))
                action = "change";
        /* The kernel takes "ACTION [UUID [KEY=VALUE…]]"; we pass the known action names only. */
        if (uevent_action_from_string(action) < 0)
                return bus_error_invalid_args(error, "Unknown uevent action '%s'.", action);
        k = model_find_path(p->model, path);
        if (!k)
                return bus_error_no_such_object(error, path);
        if (!k->ktype->has_uevent)
                return bus_error_invalid_args(error, "%s is a %s: it has no uevent file to trigger.", path,
                                              k->ktype->name);
        /* Checked before the authorization, as Set does: a call that cannot succeed fails without a
         * password prompt.  A directory gone (or a link now, never followed) since the last reading:
         * as for Set.  A device directory without a uevent file (a class's glue directory): no
         * kobject the kernel would send an event for. */
        fd = sysfs_open_dir(p->sysfs, k->devpath);
        if (fd < 0)
                return bus_error_write_failed(error, action, k->devpath, "uevent", fd);
        if (sysfs_file_mode(fd, "uevent") == -ENOENT)
                return bus_error_invalid_args(error, "%s has no uevent file to trigger.", path);
        if (!authorized) {
                const char *details[] = {"object", k->path, "action", action, NULL};
                return bus_authorize(p, msg, BLKMODEL_ACTION_TRIGGER, details, trigger_authorized, error);
        }

        r = sysfs_write_attr(fd, "uevent", action);
        if (r < 0)
                return bus_error_write_failed(error, action, k->devpath, "uevent", r);
        return sd_bus_reply_method_return(msg, NULL);
}

/* Trigger once more, now authorized: the object may have gone meanwhile. */
static int trigger_authorized(Publisher *p, sd_bus_message *msg, sd_bus_error *error)
{
        return trigger(p, msg, true, error);
}

static int method_trigger(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        return trigger(userdata, msg, false, error);
}

/* The value of the Manager's string property member, or NULL for another. */
static const char *manager_string_property(const Publisher *p, const char *member)
{
        if (streq(member, "Version"))
                return BLKMODEL_VERSION;
        if (streq(member, "SysfsRoot"))
                return p->sysfs->root;
        if (streq(member, "UeventSource"))
                return p->uevent_source;
        return NULL;
}

/* What the {sv} of a Manager property takes, padding to the next entry included. */
static size_t manager_entry_bound(const Publisher *p, const char *member, const char *signature)
{
        size_t off = wire_entry_head(member, signature);
        const char *s;

        switch (signature[0]) {
        case 't':
                return wire_align(wire_align(off, 8) + 8, 8);
        case 'u':
        case 'b':
                return wire_align(wire_align(off, 4) + 4, 8);
        case 's':
                s = manager_string_property(p, member);
                if (s)
                        return wire_align(wire_string_end(off, s), 8);
                break;
        }
        /* A property added to the vtable and not here: room enough for a path. */
        return 64 + strlen(member) + PATH_MAX;
}

int bus_manager_append_object(Publisher *p, sd_bus_message *m, size_t *bound)
{
        int r;

        /* The a{sa{sv}} of GetManagedObjects: what GetAll of the vtable's properties gives. */
        r = sd_bus_message_open_container(m, 'a', "{sa{sv}}");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'e', "sa{sv}");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", BLKMODEL_IFACE_MANAGER);
        if (bound)
                *bound += wire_dict_head(BLKMODEL_IFACE_MANAGER);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "{sv}");
        for (const sd_bus_vtable *v = bus_manager_vtable; r >= 0 && v->type != _SD_BUS_VTABLE_END; v++) {
                if (v->type != _SD_BUS_VTABLE_PROPERTY)
                        continue;
                r = sd_bus_message_open_container(m, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", v->x.property.member);
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'v', v->x.property.signature);
                if (r >= 0)
                        r = v->x.property.get(p->bus, BLKMODEL_MANAGER_PATH, BLKMODEL_IFACE_MANAGER,
                                              v->x.property.member, m, p, NULL);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (bound)
                        *bound += manager_entry_bound(p, v->x.property.member, v->x.property.signature);
        }
        for (int i = 0; r >= 0 && i < 3; i++)
                r = sd_bus_message_close_container(m);
        return r;
}

/* Settled: every uevent the kernel had queued when the call came is applied and its Uevent signalled;
 * the reply, sent after those signals on the same connection, carries the last seqnum. */
static int method_settle(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        Publisher *p = userdata;

        if (!p->settle) {
                publisher_settled(p, msg);
                return 1;
        }
        p->settle(p->userdata, sd_bus_message_ref(msg));
        return 1;
}

const sd_bus_vtable bus_manager_vtable[] = {
                SD_BUS_VTABLE_START(0),
                SD_BUS_METHOD_WITH_ARGS("GetEvents", SD_BUS_ARGS("t", after),
                                        SD_BUS_RESULT("a(tssoa{ss})", events), method_get_events,
                                        SD_BUS_VTABLE_UNPRIVILEGED),
                SD_BUS_METHOD_WITH_ARGS("Resolve", SD_BUS_ARGS("s", spec), SD_BUS_RESULT("o", object),
                                        method_resolve, SD_BUS_VTABLE_UNPRIVILEGED),
                /* Privileged, checked here (bus_authorize): sd-bus's own check runs only on untrusted
                 * connections and knows nothing of the daemon's own user. */
                SD_BUS_METHOD("Rescan", "", "", method_rescan, SD_BUS_VTABLE_UNPRIVILEGED),
                SD_BUS_METHOD_WITH_ARGS("Trigger", SD_BUS_ARGS("o", object, "s", action), SD_BUS_NO_RESULT,
                                        method_trigger, SD_BUS_VTABLE_UNPRIVILEGED),
                SD_BUS_METHOD_WITH_ARGS("Settle", SD_BUS_NO_ARGS, SD_BUS_RESULT("t", last_seqnum), method_settle,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("Uevent",
                                        SD_BUS_ARGS("t", seqnum, "s", action, "s", devpath, "o", object,
                                                    "a{ss}", env),
                                        0),
                SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
                SD_BUS_PROPERTY("SysfsRoot", "s", property_get_sysfs_root, 0, SD_BUS_VTABLE_PROPERTY_CONST),
                SD_BUS_PROPERTY("UeventSource", "s", property_get_uevent_source, 0,
                                SD_BUS_VTABLE_PROPERTY_CONST),
                SD_BUS_PROPERTY("LastSeqnum", "t", property_get_last_seqnum, 0, 0),
                SD_BUS_PROPERTY("OldestSeqnum", "t", property_get_oldest_seqnum, 0, 0),
                SD_BUS_PROPERTY("EventsLost", "t", property_get_events_lost, 0,
                                SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
                SD_BUS_PROPERTY("ObjectCount", "u", property_get_object_count, 0, 0),
                SD_BUS_VTABLE_END,
};
