/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus/bus-internal.h"
#include "bus/errors.h"

bool bus_is_call(sd_bus_message *msg, const char *interface, const char *member)
{
        const char *i = sd_bus_message_get_interface(msg);
        /* D-Bus allows calls without an interface: then the member alone decides. */
        return streq_ptr(sd_bus_message_get_member(msg), member) && (!i || streq(i, interface));
}

int bus_check_signature(sd_bus_message *msg, const char *signature, sd_bus_error *error)
{
        if (sd_bus_message_has_signature(msg, signature))
                return 0;
        return bus_error_invalid_args(error, "Invalid arguments '%s' to %s(), expected '%s'.",
                                      strempty(sd_bus_message_get_signature(msg, true)),
                                      strempty(sd_bus_message_get_member(msg)), signature);
}
