/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* dump and trigger. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-model.h"
#include "json-util.h"
#include "output.h"

#include "common/util.h"

/* The whole model: GetManagedObjects has the typed properties, GetAll the raw attributes. */
static int dump_fetch_attributes(sd_bus *bus, json_object *model, sd_bus_error *error)
{
        _cleanup_(freep) BusPropRequest *req = NULL;
        size_t n = 0, max = 0;

        json_object_object_foreach(model, p0, obj0) {
                (void) p0;
                max += (size_t) json_object_object_length(obj0);
        }
        req = calloc(max + 1, sizeof(BusPropRequest));
        if (!req)
                return -ENOMEM;
        json_object_object_foreach(model, path, obj) {
                json_object_object_foreach(obj, iface, props) {
                        (void) props;
                        /* Kobject has no raw attributes. */
                        if (!streq(iface, BLKMODEL_IFACE_KOBJECT))
                                req[n++] = (BusPropRequest){path, iface, NULL};
                }
        }
        return bus_fetch_properties(bus, model, req, n, error);
}

int cmd_dump(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(json_object_putp) json_object *model = NULL;
        sd_bus *bus = NULL;
        int r;

        r = ctl_bus(ctl, &bus);
        if (r != EXIT_OK)
                return r;

        r = bus_get_managed_objects(bus, NULL, NULL, &model, &error);
        if (r >= 0)
                r = dump_fetch_attributes(bus, model, &error);
        if (r < 0)
                return bus_report_error(&error, r, "Failed to get the model");

        output_json(model, true);
        return EXIT_OK;
}

int cmd_trigger(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(json_object_putp) json_object *j = NULL;
        const char *action = n_args > 1 ? args[1] : "change";
        _cleanup_(freep) char *path = NULL;
        sd_bus *bus = NULL;
        int r;

        r = ctl_resolve(ctl, args[0], &bus, &path);
        if (r != EXIT_OK)
                return r;

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, BLKMODEL_MANAGER_PATH, BLKMODEL_IFACE_MANAGER,
                               BLKMODEL_METHOD_TRIGGER, &error, NULL, "os", path, action);
        if (r < 0) {
                _cleanup_(freep) char *what = NULL;

                if (asprintf(&what, "Failed to trigger '%s' on %s", action, args[0]) < 0)
                        what = NULL;
                return bus_report_error(&error, r, what ?: args[0]);
        }

        if (!ctl->json)
                return EXIT_OK;

        j = json_object_new_object();
        if (!j)
                return ctl_fail("Out of memory");
        json_object_object_add(j, "object", json_object_new_string(path));
        json_object_object_add(j, "action", json_object_new_string(action));
        output_json(j, true);
        return EXIT_OK;
}
