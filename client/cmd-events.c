/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * events: the events the daemon retains, read page by page (GetEvents answers with as many as fit in
 * one message).  When the ones asked for have expired from the daemon's log, a warning says so and
 * the oldest retained follow: what is left is still worth seeing, and the exit status stays 0.
 */

#include <errno.h>
#include <inttypes.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-events.h"
#include "event-output.h"
#include "json-util.h"
#include "output.h"

#include "common/util.h"

typedef struct EventsList {
        Ctl *ctl;
        json_object *array;
        uint64_t last; /* the last seqnum seen */
} EventsList;

static int events_one(const BusEvent *ev, void *userdata)
{
        _cleanup_(json_object_putp) json_object *j = NULL;
        EventsList *el = userdata;

        el->last = ev->seqnum;
        if (!event_action_wanted(el->ctl, ev->action))
                return 0;
        if (!el->array) {
                event_print_human(el->ctl, ev);
                return 0;
        }

        j = event_to_json(ev);
        if (!j || json_object_array_add(el->array, j) < 0)
                return -ENOMEM;
        TAKE_PTR(j);
        return 0;
}

/* A call that failed.  The daemon the reading began with gone meanwhile: not "not running", as the
 * bus's error says (another may run by now), but gone during the reading. */
static int events_failed(Ctl *ctl, const char *owner, const sd_bus_error *error, int r)
{
        if (owner && bus_error_is_gone(error))
                return ctl_fail("blkmodeld stopped while its events were read; run events again (a new "
                                "daemon has seqnums of its own)");
        return bus_report_error(ctl, error, r, "Failed to get events");
}

int cmd_events(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(json_object_putp) json_object *array = NULL;
        EventsList el = {.ctl = ctl};
        uint64_t after = ctl->since_set ? ctl->since : 0;
        _cleanup_(freep) char *owner = NULL;
        sd_bus *bus = NULL;
        int r;

        r = ctl_bus(ctl, &bus);
        if (r != EXIT_OK)
                return r;
        /* Every page from one daemon: one that restarts meanwhile ends the reading (not running)
         * rather than mixing its successor's events, and a warning about a seqnum nobody typed, into
         * it.  No owner yet (a daemon the bus starts on the first call): the calls go to the name. */
        if (bus_get_daemon_owner(bus, &owner) == -ENOMEM)
                return ctl_fail("Out of memory");

        if (ctl->json) {
                array = json_object_new_array();
                if (!array)
                        return ctl_fail("Out of memory");
        }
        el.array = array;

        /* The log can wrap again between the warning and the next call: a few tries. */
        for (unsigned tries = 0;; tries++) {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                uint64_t oldest = 0;
                bool earlier;

                r = bus_get_events_from(bus, owner, after, UINT64_MAX, events_one, &el, &error);
                if (r >= 0)
                        break;
                if (r == -ENOMEM && !sd_bus_error_is_set(&error))
                        return ctl_fail("Out of memory");
                if (!sd_bus_error_has_name(&error, BLKMODEL_ERROR_EVENTS_EXPIRED) || tries >= 8)
                        return events_failed(ctl, owner, &error, r);

                earlier = bus_error_is_earlier_daemons(&error);
                sd_bus_error_free(&error);
                r = bus_get_seqnum_from(bus, owner, BLKMODEL_PROP_OLDEST_SEQNUM, &oldest, &error);
                if (r < 0)
                        return events_failed(ctl, owner, &error, r);
                if (earlier)
                        (void) ctl_warn("warning: seqnum %" PRIu64 " is older than this blkmodeld (kept from "
                                        "an earlier one?); showing from %" PRIu64 ", the oldest it retains",
                                        after, oldest);
                else if (after == 0)
                        (void) ctl_warn("warning: the first events up to %" PRIu64
                                        " have expired from blkmodeld's log; showing from %" PRIu64
                                        ", the oldest it retains",
                                        oldest - 1, oldest);
                else
                        (void) ctl_warn("warning: the events after %" PRIu64 " up to %" PRIu64
                                        " have expired from blkmodeld's log; showing from %" PRIu64
                                        ", the oldest it retains",
                                        after, oldest - 1, oldest);
                /* Whatever was printed so far is older than what comes now: nothing twice. */
                after = MAX(after, el.last);
                after = MAX(after, oldest - 1);
        }

        /* Nothing after a seqnum the daemon never reached: not one of its own (mistyped, or kept from
         * an earlier daemon whose clock ran ahead of this one's), and an empty answer would look like a
         * quiet log. */
        if (ctl->since_set && el.last == 0) {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                uint64_t last = 0;

                r = bus_get_seqnum_from(bus, owner, BLKMODEL_PROP_LAST_SEQNUM, &last, &error);
                if (r < 0)
                        return events_failed(ctl, owner, &error, r);
                if (after > last)
                        (void) ctl_warn("warning: seqnum %" PRIu64 " is ahead of blkmodeld's last (%" PRIu64
                                        "); not one of its seqnums",
                                        after, last);
        }

        if (array)
                output_json(array, true);
        return EXIT_OK;
}
