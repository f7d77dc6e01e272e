/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer entry point for Manager.Resolve's parser, resolve_spec(), against the model of the
 * standard fixture (tests/fixtures/mksysfs.py: SATA, NVMe, cciss, loop, md, dm), built once on the
 * first call.  A client string is the input: whatever it is, the answer is an object of the model,
 * "nothing", or "cannot name anything" — and what it names, its own path and devpath name too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "blkmodel/names.h"
#include "common/util.h"
#include "fixture.h"
#include "fuzz.h"
#include "model/kobject.h"
#include "sysfs/resolve.h"
#include "sysfs/scan.h"
#include "sysfs/sysfs.h"

#define SPEC_MAX 4096 /* resolve.c's limit */

static Fixture fixture;
static Sysfs sysfs = {.root_fd = -1};
static Model *model;

static void teardown(void)
{
        model = model_free(model);
        sysfs_close(&sysfs);
        fixture_done(&fixture);
}

static void setup_once(void)
{
        if (model)
                return;
        /* The scan's notes about the fixture's odd corners would drown the fuzzer's output. */
        log_set_max_level(LOG_ERR);
        REQUIRE(fixture_new(&fixture) == 0);
        REQUIRE(sysfs_open(fixture.root, &sysfs) == 0);
        REQUIRE(model_new(&model) == 0);
        REQUIRE(scan_all(&sysfs, model) == 7);
        atexit(teardown);
}

static Kobject *resolve_ok(const char *spec)
{
        Kobject *k = (Kobject *) 0x1;

        REQUIRE(resolve_spec(&sysfs, model, spec, &k) == 0);
        return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        Kobject *const untouched = (Kobject *) 0x1;
        _cleanup_(freep) char *spec = NULL;
        Kobject *k = untouched;
        size_t l;
        int r;

        setup_once();
        if (size > SPEC_MAX + 16)
                return 0;
        /* A D-Bus string has no NUL: the spec is what comes before one. */
        spec = strndup((const char *) data, size);
        if (!spec)
                return 0;
        l = strlen(spec);

        r = resolve_spec(&sysfs, model, spec, &k);
        REQUIRE(r == 0 || r == -ENOENT || r == -EINVAL || r == -ENOMEM);
        if (l == 0 || l > SPEC_MAX)
                REQUIRE(r == -EINVAL);
        if (r < 0) {
                REQUIRE(k == untouched);
                return 0;
        }

        /* The root path is the only spec that names no object. */
        REQUIRE((k == NULL) == streq(spec, BLKMODEL_ROOT_PATH));
        if (!k)
                return 0;
        /* Something the model has, linked and findable... */
        REQUIRE(k->linked);
        REQUIRE(model_find_path(model, k->path) == k);
        REQUIRE(model_find_devpath(model, k->devpath) == k);
        /* ...that its object path and devpath name as well. */
        REQUIRE(resolve_ok(k->path) == k);
        REQUIRE(resolve_ok(k->devpath) == k);
        /* A disk or partition is also found by its kernel name. */
        if (ktype_is_block_device(k->ktype))
                REQUIRE(resolve_ok(k->name) == k);
        return 0;
}
