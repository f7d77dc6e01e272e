/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* dump: the whole model. */

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-model.h"
#include "json-util.h"
#include "model.h"
#include "output.h"

#include "common/util.h"

/* Prints s with every line after its first indented by one more level of json-c's pretty form. */
static void print_indented(const char *s)
{
        for (const char *nl; (nl = strchr(s, '\n')); s = nl + 1)
                printf("%.*s\n  ", (int) (nl - s), s);
        fputs(s, stdout);
}

int cmd_dump(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(json_object_putp) json_object *model = NULL;
        _cleanup_(freep) const char **paths = NULL;
        sd_bus *bus = NULL;
        size_t n = 0;
        int r;

        r = ctl_bus(ctl, &bus);
        if (r != EXIT_OK)
                return r;

        /* GetManagedObjects carries every property, raw attributes too (in parts when too large). */
        r = bus_load_model(bus, BLKMODEL_ROOT_PATH, NULL, NULL, &model, &error);
        if (r < 0)
                return bus_report_error(ctl, &error, r, "Failed to get the model");

        /*
         * The daemon's reply follows its hash tables: put it in the model's own order.  One object
         * at a time, as output_json() would print the whole: a copy of the whole model in order and
         * its text would double what the client holds (an object path needs no JSON escaping).
         */
        paths = model_ordered_paths(model, &n);
        if (!paths)
                return ctl_fail("Out of memory");
        fputs("{\n", stdout);
        for (size_t i = 0; i < n; i++) {
                _cleanup_(json_object_putp) json_object *o = model_ordered_object(model, paths[i]);

                if (!o)
                        return ctl_fail("Out of memory");
                printf("%s  \"%s\": ", i > 0 ? ",\n" : "", paths[i]);
                print_indented(json_object_to_json_string_ext(o, OUTPUT_JSON_PRETTY));
        }
        fputs(n > 0 ? "\n}\n" : "}\n", stdout);
        return EXIT_OK;
}
