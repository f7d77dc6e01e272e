/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

/* Which bus to talk on: the daemon publishes there, blkmodelctl looks there. */
typedef enum BusKind {
        BUS_KIND_SYSTEM,
        BUS_KIND_SESSION,
        BUS_KIND_ADDRESS,
} BusKind;

/* "system bus", "session bus", "bus at ADDRESS"-style wording for messages. */
const char *bus_kind_to_string(BusKind kind);

/* Opens and starts a connection to the bus of that kind (address only for BUS_KIND_ADDRESS),
 * described as description in sd-bus's logs; negative errno on failure, *ret untouched. */
int bus_open(BusKind kind, const char *address, const char *description, sd_bus **ret);

/* Why bus_open() failed with r, in words that say what to do (the daemon and blkmodelctl take the same
 * --system, --session and --address options): a new string, NULL without memory. */
char *bus_open_error(BusKind kind, const char *address, int r);
