/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>

#include <blkmodel/names.h>

#include "bus-events.h"
#include "bus-json.h"

void bus_event_done(BusEvent *ev)
{
        if (!ev)
                return;
        json_object_put(ev->env);
        ev->env = NULL;
}

int bus_message_read_event_fields(sd_bus_message *m, BusEvent *ret)
{
        BusEvent ev = {};
        int r;

        r = sd_bus_message_read(m, "tsso", &ev.seqnum, &ev.action, &ev.devpath, &ev.object);
        if (r < 0)
                return r;
        r = sd_bus_message_peek_type(m, NULL, NULL);
        if (r < 0)
                return r;
        if (r == 0)
                return -EBADMSG;
        r = bus_message_read_json(m, &ev.env);
        if (r < 0)
                return r;
        if (!json_object_is_type(ev.env, json_type_object)) {
                json_object_put(ev.env);
                return -EBADMSG;
        }

        *ret = ev;
        return 0;
}

int bus_get_events(sd_bus *bus, uint64_t after, BusEventCallback cb, void *userdata, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, BLKMODEL_ROOT_PATH, BLKMODEL_IFACE_MANAGER,
                               BLKMODEL_METHOD_GET_EVENTS, error, &reply, "t", after);
        if (r < 0)
                return r;

        r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_ARRAY, "(tssoa{ss})");
        if (r < 0)
                goto finish;
        for (;;) {
                BusEvent ev = {};

                r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_STRUCT, "tssoa{ss}");
                if (r < 0)
                        goto finish;
                if (r == 0)
                        break;
                r = bus_message_read_event_fields(reply, &ev);
                if (r < 0)
                        goto finish;
                r = sd_bus_message_exit_container(reply);
                if (r >= 0)
                        r = cb(&ev, userdata);
                bus_event_done(&ev);
                if (r < 0)
                        goto finish;
        }
        r = sd_bus_message_exit_container(reply);
        if (r > 0)
                r = 0;

finish:
        sd_bus_message_unref(reply);
        return r;
}
