/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdio.h>
#include <string.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"

#include "common/util.h"

bool bus_error_is_not_running(const sd_bus_error *error)
{
        return sd_bus_error_has_names(error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER);
}

bool bus_error_is_gone(const sd_bus_error *error)
{
        return bus_error_is_not_running(error) || sd_bus_error_has_name(error, SD_BUS_ERROR_NO_REPLY);
}

char *bus_not_running_message(const Ctl *ctl)
{
        char *s = NULL;
        int r = -1;

        switch (ctl->bus_kind) {
        case BUS_KIND_SYSTEM:
                r = asprintf(&s, "blkmodeld is not running on the system bus (start blkmodeld.service, or "
                                 "use --session or --address=ADDRESS)");
                break;
        case BUS_KIND_SESSION:
                r = asprintf(&s, "blkmodeld is not running on the session bus (start it with 'blkmodeld "
                                 "--session', or use --system or --address=ADDRESS)");
                break;
        case BUS_KIND_ADDRESS:
                r = asprintf(&s,
                             "blkmodeld is not running on the bus at %s (start it with 'blkmodeld "
                             "--address=%s')",
                             ctl->address, ctl->address);
                break;
        }
        return r < 0 ? NULL : s;
}

int bus_report_error(const Ctl *ctl, const sd_bus_error *error, int r, const char *what)
{
        if (sd_bus_error_is_set(error)) {
                if (bus_error_is_not_running(error)) {
                        _cleanup_(freep) char *msg = bus_not_running_message(ctl);

                        return ctl_fail("%s: %s", msg ?: "blkmodeld is not running on this bus",
                                        error->name);
                }
                if (!isempty(error->message)) {
                        if (what)
                                return ctl_fail("%s: %s (%s)", what, error->message, error->name);
                        return ctl_fail("%s (%s)", error->message, error->name);
                }
                return ctl_fail("%s: %s", what ?: "Call failed", error->name);
        }
        return ctl_fail("%s: %s", what ?: "Call failed", strerror(r < 0 ? -r : r));
}

int bus_report_resolve_error(const Ctl *ctl, const sd_bus_error *error, int r, const char *spec)
{
        /* Our own wording, whatever the daemon's message says. */
        if (sd_bus_error_has_name(error, BLKMODEL_ERROR_NO_SUCH_OBJECT))
                return ctl_fail("No such object: %s (%s)", spec, error->name);
        return bus_report_error(ctl, error, r, spec);
}
