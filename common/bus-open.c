/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bus-open.h"
#include "common/util.h"

const char *bus_kind_to_string(BusKind kind)
{
        switch (kind) {
        case BUS_KIND_SYSTEM:
                return "system bus";
        case BUS_KIND_SESSION:
                return "session bus";
        case BUS_KIND_ADDRESS:
                return "bus";
        }
        return "bus";
}

static int bus_open_address(const char *address, sd_bus **ret)
{
        _cleanup_(sd_bus_unrefp) sd_bus *bus = NULL;
        const char *unique;
        int r;

        if (!address)
                return -EINVAL;
        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        r = sd_bus_set_address(bus, address);
        if (r < 0)
                return r;
        r = sd_bus_set_bus_client(bus, true);
        if (r < 0)
                return r;
        r = sd_bus_start(bus);
        if (r < 0)
                return r;
        /* A TCP address connects in the background: wait for the bus's Hello, so that one that
         * cannot be reached is said here, not as the first call's failure (the daemon's: "Cannot
         * take the name"). */
        r = sd_bus_get_unique_name(bus, &unique);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(bus);
        return 0;
}

int bus_open(BusKind kind, const char *address, const char *description, sd_bus **ret)
{
        _cleanup_(sd_bus_unrefp) sd_bus *bus = NULL;
        int r = -EINVAL;

        switch (kind) {
        case BUS_KIND_SYSTEM:
                r = sd_bus_open_system(&bus);
                break;
        case BUS_KIND_SESSION:
                r = sd_bus_open_user(&bus);
                break;
        case BUS_KIND_ADDRESS:
                r = bus_open_address(address, &bus);
                break;
        }
        if (r < 0)
                return r;
        if (description)
                (void) sd_bus_set_description(bus, description);
        *ret = TAKE_PTR(bus);
        return 0;
}

char *bus_open_error(BusKind kind, const char *address, int r)
{
        const char *runtime = getenv("XDG_RUNTIME_DIR");
        char *text = NULL;
        int n = -1;

        switch (kind) {
        case BUS_KIND_ADDRESS:
                n = asprintf(&text, "Failed to connect to the bus at %s: %s", strna(address), strerror(-r));
                break;
        case BUS_KIND_SESSION:
                /* sd-bus's -ENOMEDIUM: nothing says where a session bus would be. */
                if (r == -ENOMEDIUM || (isempty(getenv("DBUS_SESSION_BUS_ADDRESS")) && r == -ENOENT))
                        n = asprintf(&text,
                                     "No session bus: $DBUS_SESSION_BUS_ADDRESS is not set and there is "
                                     "no %s/bus (run in a login session or under dbus-run-session, or use "
                                     "--system or --address=ADDRESS)",
                                     isempty(runtime) ? "$XDG_RUNTIME_DIR" : runtime);
                else
                        n = asprintf(&text,
                                     "Failed to connect to the session bus: %s (use --address=ADDRESS "
                                     "to name one)",
                                     strerror(-r));
                break;
        case BUS_KIND_SYSTEM:
                if (r == -ENOENT || r == -ECONNREFUSED)
                        n = asprintf(&text,
                                     "Failed to connect to the system bus: %s (is dbus.service running? "
                                     "or use --session or --address=ADDRESS)",
                                     strerror(-r));
                else
                        n = asprintf(&text, "Failed to connect to the system bus: %s", strerror(-r));
                break;
        }
        return n < 0 ? NULL : text;
}
