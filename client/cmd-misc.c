/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* dump and trigger. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-model.h"
#include "output.h"

/* The whole model: GetManagedObjects has the typed properties, GetAll the raw attributes. */
static int dump_fetch_attributes(sd_bus *bus, json_object *model, sd_bus_error *error)
{
        size_t n = 0, max = 0;
        BusPropRequest *req = NULL;
        int r;

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
                        if (strcmp(iface, BLKMODEL_IFACE_KOBJECT) != 0)
                                req[n++] = (BusPropRequest){path, iface, NULL};
                }
        }
        r = bus_fetch_properties(bus, model, req, n, error);
        free(req);
        return r;
}

int cmd_dump(Ctl *ctl, char **args, int n_args)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        json_object *model = NULL;
        sd_bus *bus = NULL;
        int r;

        r = ctl_bus(ctl, &bus);
        if (r != EXIT_OK)
                return r;

        r = bus_get_managed_objects(bus, NULL, NULL, &model, &error);
        if (r >= 0)
                r = dump_fetch_attributes(bus, model, &error);
        if (r < 0)
                r = bus_report_error(&error, r, "Failed to get the model");
        else {
                output_json(model, true);
                r = EXIT_OK;
        }

        json_object_put(model);
        sd_bus_error_free(&error);
        return r;
}

int cmd_trigger(Ctl *ctl, char **args, int n_args)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *action = n_args > 1 ? args[1] : "change";
        char *path = NULL;
        sd_bus *bus = NULL;
        int r;

        r = ctl_resolve(ctl, args[0], &bus, &path);
        if (r != EXIT_OK)
                return r;

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, BLKMODEL_ROOT_PATH, BLKMODEL_IFACE_MANAGER,
                               BLKMODEL_METHOD_TRIGGER, &error, NULL, "os", path, action);
        if (r < 0) {
                char *what = NULL;

                if (asprintf(&what, "Failed to trigger '%s' on %s", action, args[0]) < 0)
                        what = NULL;
                r = bus_report_error(&error, r, what ? what : args[0]);
                free(what);
                goto finish;
        }

        if (ctl->json) {
                json_object *j = json_object_new_object();

                if (!j) {
                        r = ctl_fail("Out of memory");
                        goto finish;
                }
                json_object_object_add(j, "object", json_object_new_string(path));
                json_object_object_add(j, "action", json_object_new_string(action));
                output_json(j, true);
                json_object_put(j);
        }
        r = EXIT_OK;

finish:
        free(path);
        sd_bus_error_free(&error);
        return r;
}
