/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * wait: return when an object exists (or is gone).  The signals are
 * subscribed to before the first Resolve, so an object that appears
 * between the two is seen either by Resolve or by the signal; every signal
 * leads to a fresh Resolve, which also covers specs like "8:1" whose
 * object path cannot be known in advance.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-model.h"
#include "bus-wait.h"
#include "json-util.h"
#include "output.h"

#include "common/time-util.h"
#include "common/util.h"

typedef struct Waiter {
        Ctl *ctl;
        const char *spec;
        bool dirty;     /* something changed: look again */
        char *path;     /* the object, while it exists */
        bool no_daemon; /* the last look found no blkmodeld */
} Waiter;

static int on_change(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        Waiter *w = userdata;

        w->dirty = true;
        return 0;
}

static void waiter_done(Waiter *w)
{
        w->path = mfree(w->path);
}

/* Returns 1 when the wait is over, 0 to go on, or a negative errno after it reported the failure. */
static int waiter_check(Waiter *w)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(freep) char *path = NULL;
        int r;

        r = bus_resolve(w->ctl->bus, w->spec, &path, &error);
        w->no_daemon = r < 0 && bus_error_is_not_running(&error);
        if (r >= 0) {
                free(w->path);
                w->path = TAKE_PTR(path);
                return !w->ctl->removed;
        }
        if (sd_bus_error_has_name(&error, BLKMODEL_ERROR_NO_SUCH_OBJECT))
                return w->ctl->removed;
        if (w->no_daemon)
                return 0; /* wait for the daemon to come */
        (void) bus_report_resolve_error(w->ctl, &error, r, w->spec);
        return r;
}

int cmd_wait(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(waiter_done) Waiter w = {.ctl = ctl, .spec = args[0], .dirty = true};
        _cleanup_(json_object_putp) json_object *j = NULL;
        _cleanup_(closep) int sigfd = -1;
        uint64_t deadline = USEC_INFINITY;
        sd_bus *bus = NULL;
        int r;

        r = ctl_bus(ctl, &bus);
        if (r != EXIT_OK)
                return r;

        if (ctl->timeout_usec != USEC_INFINITY)
                deadline = now_usec() + ctl->timeout_usec;

        sigfd = bus_signalfd_open();
        if (sigfd < 0)
                return ctl_fail("Failed to watch signals: %s", strerror(-sigfd));

        /* Subscribe first (AddMatch is synchronous), then look. */
        r = sd_bus_match_signal(bus, NULL, BLKMODEL_BUS_NAME, BLKMODEL_ROOT_PATH,
                                "org.freedesktop.DBus.ObjectManager",
                                ctl->removed ? "InterfacesRemoved" : "InterfacesAdded", on_change, &w);
        if (r >= 0)
                r = bus_match_daemon_owner(bus, on_change, &w);
        if (r < 0)
                return ctl_fail("Failed to subscribe to signals: %s", strerror(-r));

        for (;;) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return ctl_fail("Lost the connection to the %s: %s",
                                        bus_kind_to_string(ctl->bus_kind), strerror(-r));
                if (r > 0)
                        continue;

                /* Look again only once the queue is drained: one Resolve per burst. */
                if (w.dirty) {
                        w.dirty = false;
                        r = waiter_check(&w);
                        if (r < 0)
                                return EXIT_FAIL;
                        if (r > 0)
                                break;
                        continue;
                }

                r = bus_wait_event(bus, sigfd, deadline);
                /* Say why nothing could appear, if that is why. */
                if (r == -ETIMEDOUT)
                        return ctl_fail("Timed out waiting for %s %s%s", w.spec,
                                        ctl->removed ? "to be removed" : "to appear",
                                        w.no_daemon ? " (blkmodeld is not running on this bus)" : "");
                if (r == 1)
                        return ctl_fail("Interrupted while waiting for %s", w.spec);
                if (r < 0)
                        return ctl_fail("Lost the connection to the %s: %s",
                                        bus_kind_to_string(ctl->bus_kind), strerror(-r));
        }

        if (!ctl->json)
                return EXIT_OK;

        j = json_object_new_object();
        if (!j)
                return ctl_fail("Out of memory");
        json_object_object_add(j, "spec", json_object_new_string(w.spec));
        json_object_object_add(j, "object", w.path ? json_object_new_string(w.path) : NULL);
        json_object_object_add(j, "present", json_object_new_boolean(!ctl->removed));
        output_json(j, true);
        return EXIT_OK;
}
