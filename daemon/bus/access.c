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

/* Root, or the daemon's own uid (a session daemon's user).  Asked of the bus, not of /proc: no pid races. */
int bus_check_privileged(Publisher *p, sd_bus_message *msg, sd_bus_error *error)
{
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        uid_t euid;
        int r;

        r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID, &creds);
        if (r >= 0)
                r = sd_bus_creds_get_euid(creds, &euid);
        if (r < 0)
                return bus_error_errno(error, r, "Cannot determine the caller's identity");
        if (euid != 0 && euid != geteuid())
                return bus_error_access_denied(error, "%s.%s() is for root only.",
                                               strempty(sd_bus_message_get_interface(msg)),
                                               strempty(sd_bus_message_get_member(msg)));
        return 0;
}
