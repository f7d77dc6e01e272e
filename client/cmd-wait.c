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
#include <unistd.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-model.h"
#include "bus-wait.h"
#include "output.h"

#include "common/time-util.h"

#define NAME_OWNER_CHANGED_MATCH                                                                            \
        "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"                         \
        "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='" BLKMODEL_BUS_NAME "'"

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

/* Returns 1 when the wait is over, 0 to go on, or -1 after it stored the
 * exit code of a failure (already reported) in ret_exit. */
static int waiter_check(Waiter *w, int *ret_exit)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        char *path = NULL;
        int r;

        r = bus_resolve(w->ctl->bus, w->spec, &path, &error);
        w->no_daemon = r < 0 && bus_error_is_not_running(&error);
        if (r >= 0) {
                free(w->path);
                w->path = path;
                r = !w->ctl->removed;
        } else if (sd_bus_error_has_name(&error, BLKMODEL_ERROR_NO_SUCH_OBJECT)) {
                r = w->ctl->removed;
        } else if (bus_error_is_not_running(&error)) {
                r = 0; /* wait for the daemon to come */
        } else {
                *ret_exit = bus_report_resolve_error(&error, r, w->spec);
                r = -1;
        }
        sd_bus_error_free(&error);
        return r;
}

int cmd_wait(Ctl *ctl, char **args, int n_args)
{
        Waiter w = {.ctl = ctl, .spec = args[0]};
        uint64_t deadline = USEC_INFINITY;
        int sigfd = -1, r, code = EXIT_FAIL;
        sd_bus *bus = NULL;

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
                r = sd_bus_add_match(bus, NULL, NAME_OWNER_CHANGED_MATCH, on_change, &w);
        if (r < 0) {
                code = ctl_fail("Failed to subscribe to signals: %s", strerror(-r));
                goto finish;
        }

        w.dirty = true;
        for (;;) {
                r = sd_bus_process(bus, NULL);
                if (r < 0) {
                        code = ctl_fail("Lost the connection to the %s: %s",
                                        bus_kind_to_string(ctl->bus_kind), strerror(-r));
                        goto finish;
                }
                if (r > 0)
                        continue;

                /* Look again only once the queue is drained: one Resolve per burst. */
                if (w.dirty) {
                        w.dirty = false;
                        r = waiter_check(&w, &code);
                        if (r < 0)
                                goto finish;
                        if (r > 0)
                                break;
                        continue;
                }

                r = bus_wait_event(bus, sigfd, deadline);
                if (r == -ETIMEDOUT) {
                        /* Say why nothing could appear, if that is why. */
                        code = ctl_fail("Timed out waiting for %s %s%s", w.spec,
                                        ctl->removed ? "to be removed" : "to appear",
                                        w.no_daemon ? " (blkmodeld is not running on this bus)" : "");
                        goto finish;
                }
                if (r == 1) {
                        code = ctl_fail("Interrupted while waiting for %s", w.spec);
                        goto finish;
                }
                if (r < 0) {
                        code = ctl_fail("Lost the connection to the %s: %s",
                                        bus_kind_to_string(ctl->bus_kind), strerror(-r));
                        goto finish;
                }
        }

        if (ctl->json) {
                json_object *j = json_object_new_object();

                if (!j) {
                        code = ctl_fail("Out of memory");
                        goto finish;
                }
                json_object_object_add(j, "spec", json_object_new_string(w.spec));
                json_object_object_add(j, "object", w.path ? json_object_new_string(w.path) : NULL);
                json_object_object_add(j, "present", json_object_new_boolean(!ctl->removed));
                output_json(j, true);
                json_object_put(j);
        }
        code = EXIT_OK;

finish:
        free(w.path);
        if (sigfd >= 0)
                close(sigfd);
        return code;
}
