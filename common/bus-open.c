/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>

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
