/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "common/util.h"
#include "fixture.h"
#include "model/kobject.h"
#include "sysfs/reconcile.h"
#include "sysfs/scan.h"
#include "sysfs/sysfs.h"
#include "tests.h"

#define DEEP_DISK "/devices/virtual/block/vdeep"
#define MID_DISK "/devices/virtual/block/vmid"

/*
 * A hardware chain deeper than the scan follows: whether it is published must not depend on the
 * order its disks come in.  vdeep's `device` link points 70 levels below /devices/chain, vmid's 55
 * levels down the same chain: a fresh scan (vdeep first, by name) publishes vdeep without its
 * hardware; adding vmid first, then vdeep, must do the same, and so must a Rescan.
 */
int main(void)
{
        _cleanup_(freep) char *deep = NULL, *mid = NULL;
        Fixture f = {};
        Sysfs s = {.root_fd = -1};
        Model *fresh = NULL, *live = NULL;
        Kobject *k;
        int r;

        r = fixture_new(&f);
        CHECK(r == 0);
        if (r < 0)
                return tests_summary();

        deep = strdup("/devices/chain");
        CHECK(deep && fixture_mkdir(&f, deep) == 0);
        for (unsigned i = 0; deep && i < 70; i++) {
                char *next = NULL, *uevent = NULL;
                CHECK(asprintf(&next, "%s/d%u", deep, i) >= 0);
                free(deep);
                deep = next;
                CHECK(fixture_mkdir(&f, deep) == 0);
                CHECK(asprintf(&uevent, "%s/uevent", deep) >= 0);
                CHECK(fixture_write(&f, uevent, "") == 0);
                free(uevent);
                if (i == 55)
                        mid = strdup(deep);
        }
        CHECK(mid && deep);
        if (!mid || !deep)
                goto out;
        CHECK(fixture_add_disk(&f, DEEP_DISK, 252, 0, 2048) == 0);
        CHECK(fixture_add_disk(&f, MID_DISK, 252, 1, 2048) == 0);
        CHECK(fixture_link(&f, DEEP_DISK "/device", deep) == 0);
        CHECK(fixture_link(&f, MID_DISK "/device", mid) == 0);

        CHECK(sysfs_open(f.root, &s) == 0);
        CHECK(model_new(&fresh) == 0);
        CHECK(model_new(&live) == 0);
        if (!fresh || !live || s.root_fd < 0)
                goto out;

        /* A fresh start. */
        CHECK(scan_all(&s, fresh) > 0);
        k = model_find_devpath(fresh, DEEP_DISK);
        CHECK(k && !k->device);
        k = model_find_devpath(fresh, MID_DISK);
        CHECK(k && k->device && streq(k->device->devpath, mid));
        CHECK(model_find_devpath(fresh, deep) == NULL);

        /* The same disks added one by one, the shallower first (their add events in that order). */
        CHECK(scan_add_block_device(&s, live, MID_DISK, &k) == 0);
        CHECK(scan_add_block_device(&s, live, DEEP_DISK, &k) == 0);
        k = model_find_devpath(live, DEEP_DISK);
        CHECK(k && !k->device);
        CHECK(model_find_devpath(live, deep) == NULL);

        /* And the rest of the tree: then a Rescan finds nothing to change, and the two agree. */
        CHECK(scan_all(&s, live) >= 0);
        CHECK(reconcile_all(&s, live, NULL, NULL) == 0);
        CHECK(live->n_objects == fresh->n_objects);
        k = model_find_devpath(live, DEEP_DISK);
        CHECK(k && !k->device);

out:
        model_free(live);
        model_free(fresh);
        sysfs_close(&s);
        fixture_done(&f);
        return tests_summary();
}
