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

int cmd_dump(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(json_object_putp) json_object *model = NULL, *ordered = NULL;
        sd_bus *bus = NULL;
        int r;

        r = ctl_bus(ctl, &bus);
        if (r != EXIT_OK)
                return r;

        /* GetManagedObjects carries every property, raw attributes too (in parts when too large). */
        r = bus_load_model(bus, BLKMODEL_ROOT_PATH, NULL, NULL, &model, &error);
        if (r < 0)
                return bus_report_error(ctl, &error, r, "Failed to get the model");

        /* The daemon's reply follows its hash tables: put it in the model's own order. */
        ordered = model_ordered(model);
        if (!ordered)
                return ctl_fail("Out of memory");
        output_json(ordered, true);
        return EXIT_OK;
}
