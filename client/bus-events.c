/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-events.h"
#include "bus-json.h"
#include "json-util.h"

#include "common/util.h"

void bus_event_done(BusEvent *ev)
{
        if (!ev)
                return;
        json_object_put(ev->env);
        ev->env = NULL;
}

int bus_message_read_event_fields(sd_bus_message *m, BusEvent *ret)
{
        _cleanup_(json_object_putp) json_object *env = NULL;
        const char *action, *devpath, *object;
        uint64_t seqnum;
        int r;

        r = sd_bus_message_read(m, "tsso", &seqnum, &action, &devpath, &object);
        if (r < 0)
                return r;
        r = sd_bus_message_peek_type(m, NULL, NULL);
        if (r < 0)
                return r;
        if (r == 0)
                return -EBADMSG;
        r = bus_message_read_json(m, &env);
        if (r < 0)
                return r;
        if (!json_object_is_type(env, json_type_object))
                return -EBADMSG;

        *ret = (BusEvent){
                        .seqnum = seqnum,
                        .action = action,
                        .devpath = devpath,
                        .object = object,
                        .env = TAKE_PTR(env),
        };
        return 0;
}

bool bus_error_is_earlier_daemons(const sd_bus_error *error)
{
        /* The daemon's message says which of the two kinds of EventsExpired it is (org.blkmodel1(5)). */
        return sd_bus_error_has_name(error, BLKMODEL_ERROR_EVENTS_EXPIRED) && error->message &&
               startswith(error->message, "Seqnum ");
}

int bus_get_daemon_owner(sd_bus *bus, char **ret)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *owner;
        char *s;
        int r;

        r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "GetNameOwner", NULL, &reply, "s", BLKMODEL_BUS_NAME);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "s", &owner);
        if (r < 0)
                return r;
        s = strdup(owner);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int bus_get_seqnum_from(sd_bus *bus, const char *dest, const char *property, uint64_t *ret,
                        sd_bus_error *error)
{
        return sd_bus_get_property_trivial(bus, dest ?: BLKMODEL_BUS_NAME, BLKMODEL_MANAGER_PATH,
                                           BLKMODEL_IFACE_MANAGER, property, error, 't', ret);
}

/* One GetEvents call; the seqnum of the last event in *last, untouched if there was none. */
static int get_events_page(sd_bus *bus, const char *dest, uint64_t after, BusEventCallback cb, void *userdata,
                           uint64_t *last, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_call_method(bus, dest, BLKMODEL_MANAGER_PATH, BLKMODEL_IFACE_MANAGER,
                               BLKMODEL_METHOD_GET_EVENTS, error, &reply, "t", after);
        if (r < 0)
                return r;

        r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_ARRAY, "(tssoa{ss})");
        if (r < 0)
                return r;
        for (;;) {
                _cleanup_(bus_event_done) BusEvent ev = {};

                r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_STRUCT, "tssoa{ss}");
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                r = bus_message_read_event_fields(reply, &ev);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        return r;
                /* A daemon that went backwards would have us page forever. */
                if (ev.seqnum <= after || ev.seqnum <= *last)
                        return -EBADMSG;
                *last = ev.seqnum;
                r = cb(&ev, userdata);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_exit_container(reply);
        return r < 0 ? r : 0;
}

/* An event larger than one message on this bus may carry is refused when it would come first: the
 * refusal names it ("Event N of DEVPATH is ..."), and asking after it goes on (org.blkmodel1(5)). */
static bool refused_as_too_large(const sd_bus_error *error, uint64_t after, uint64_t *ret_seqnum)
{
        uint64_t seqnum;
        int end = 0;

        if (!sd_bus_error_has_name(error, SD_BUS_ERROR_LIMITS_EXCEEDED) || !error->message ||
            sscanf(error->message, "Event %" SCNu64 " of %n", &seqnum, &end) != 1 || end == 0 ||
            seqnum <= after)
                return false;
        *ret_seqnum = seqnum;
        return true;
}

int bus_get_events_from(sd_bus *bus, const char *dest, uint64_t after, uint64_t until, BusEventCallback cb,
                        void *userdata, sd_bus_error *error)
{
        int r;

        dest = dest ?: BLKMODEL_BUS_NAME;
        if (until == UINT64_MAX) {
                r = bus_get_seqnum_from(bus, dest, BLKMODEL_PROP_LAST_SEQNUM, &until, error);
                if (r < 0)
                        return r;
        }
        while (after < until) {
                uint64_t last = 0;

                r = get_events_page(bus, dest, after, cb, userdata, &last, error);
                if (r < 0 && refused_as_too_large(error, after, &last)) {
                        (void) ctl_warn("warning: event %" PRIu64 " is skipped, too large for this bus: %s",
                                        last, error->message);
                        sd_bus_error_free(error);
                        after = last;
                        continue;
                }
                if (r < 0)
                        return r;
                if (last == 0)
                        break; /* nothing more retained */
                after = last;
        }
        return 0;
}
