/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <string.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"

#include "common/util.h"

bool bus_error_is_not_running(const sd_bus_error *error)
{
        return sd_bus_error_has_names(error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER);
}

int bus_report_error(const sd_bus_error *error, int r, const char *what)
{
        if (sd_bus_error_is_set(error)) {
                if (bus_error_is_not_running(error))
                        return ctl_fail("blkmodeld is not running on this bus (%s)", error->name);
                if (!isempty(error->message)) {
                        if (what)
                                return ctl_fail("%s: %s (%s)", what, error->message, error->name);
                        return ctl_fail("%s (%s)", error->message, error->name);
                }
                return ctl_fail("%s: %s", what ?: "Call failed", error->name);
        }
        return ctl_fail("%s: %s", what ?: "Call failed", strerror(r < 0 ? -r : r));
}

int bus_report_resolve_error(const sd_bus_error *error, int r, const char *spec)
{
        /* Our own wording, whatever the daemon's message says. */
        if (sd_bus_error_has_name(error, BLKMODEL_ERROR_NO_SUCH_OBJECT))
                return ctl_fail("No such object: %s (%s)", spec, error->name);
        return bus_report_error(error, r, spec);
}
