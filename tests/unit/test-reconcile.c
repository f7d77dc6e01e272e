/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "common/time-util.h"
#include "common/util.h"
#include "fixture.h"
#include "model/kobject.h"
#include "sysfs/reconcile.h"
#include "sysfs/scan.h"
#include "sysfs/sysfs.h"
#include "tests.h"

/* What reconcile_all() reported, one line per diff: "add DEVPATH PATH" or "remove DEVPATH PATH". */
typedef struct Diffs {
        Model *model;
        char **lines;
        size_t n;
        bool consistent; /* each diff came after the model had it applied */
        /* The kernel tearing this device down while a rescan runs: after it is asked about twice,
         * its directory goes and its remove is read (awaited). */
        const Fixture *f;
        const char *torn_down;
        unsigned asked;
        unsigned calls; /* of the awaited hook, for any device */
} Diffs;

static void on_diff(void *userdata, const char *action, const char *devpath, const char *object_path,
                    Kobject *k)
{
        Diffs *d = userdata;
        _cleanup_(freep) char *line = NULL;

        if (streq(action, "add")) {
                if (!k || !k->linked || !streq(k->devpath, devpath) || !streq(k->path, object_path) ||
                    model_find_devpath(d->model, devpath) != k)
                        d->consistent = false;
        } else if (streq(action, "remove")) {
                if (k || model_find_devpath(d->model, devpath) || model_find_path(d->model, object_path))
                        d->consistent = false;
        } else
                d->consistent = false;

        if (asprintf(&line, "%s %s %s", action, devpath, object_path) < 0 ||
            strv_extend(&d->lines, &d->n, line) < 0)
                abort();
}

static bool teardown_awaited(void *userdata, const char *devpath)
{
        Diffs *d = userdata;

        d->calls++;
        if (!d->torn_down || !streq(devpath, d->torn_down))
                return false;
        if (++d->asked < 2)
                return false;
        CHECK(fixture_remove(d->f, devpath) == 0);
        return true;
}

/* reconcile_all() with teardown_awaited() asked. */
static int reconcile_awaiting(const Sysfs *s, Model *m, Diffs *d)
{
        _cleanup_(reconcile_freep) Reconcile *r = NULL;
        int k;

        k = reconcile_new(s, m, on_diff, d, &r);
        if (k < 0)
                return k;
        reconcile_set_awaited(r, teardown_awaited);
        while ((k = reconcile_step(r)) > 0)
                ;
        return k < 0 ? k : reconcile_changes(r);
}

static void diffs_clear(Diffs *d)
{
        d->lines = strv_free(d->lines);
        d->n = 0;
}

static bool diffs_are(const Diffs *d, const char *const *expected)
{
        size_t n = 0;

        while (expected[n])
                n++;
        if (n == d->n) {
                size_t i = 0;
                while (i < n && streq(expected[i], d->lines[i]))
                        i++;
                if (i == n)
                        return true;
        }
        fprintf(stderr, "  reported:\n");
        for (size_t i = 0; i < d->n; i++)
                fprintf(stderr, "    %s\n", d->lines[i]);
        fprintf(stderr, "  expected:\n");
        for (size_t i = 0; i < n; i++)
                fprintf(stderr, "    %s\n", expected[i]);
        return false;
}

#define SDA_PATH "/org/blkmodel1/block/sda"
#define SDA_LUN "/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0"
#define VDX "/devices/virtual/block/vdx"
#define VDX_PATH "/org/blkmodel1/block/vdx"
#define VDX_ELSEWHERE "/devices/platform/host9/block/vdx"
#define VDY "/devices/virtual/block/vdy"
#define VDY_PATH "/org/blkmodel1/block/vdy"

int main(void)
{
        Fixture f = {};
        Sysfs s = {.root_fd = -1};
        Diffs d = {.consistent = true};
        Model *m = NULL;
        size_t n_before;
        int r;

        r = fixture_new(&f);
        CHECK(r == 0);
        if (r < 0)
                return tests_summary();
        /* sda with two partitions rather than three: the case the layering issue names. */
        CHECK(fixture_remove_block_device(&f, FIXTURE_SDA "/sda3", 8, 3) == 0);

        CHECK(sysfs_open(f.root, &s) == 0);
        CHECK(model_new(&m) == 0);
        if (!m || s.root_fd < 0)
                goto out;
        d.model = m;
        CHECK(scan_all(&s, m) == 7);
        CHECK(model_find_name(m, "sda3") == NULL);

        /* Nothing changed: nothing to report. */
        CHECK(reconcile_all(&s, m, on_diff, &d) == 0);
        CHECK(d.n == 0);

        /* A disk with two partitions goes (directory and links): three block devices, partitions
         * first; its queue and scheduler go along unreported. */
        n_before = m->n_objects;
        CHECK(model_find_devpath(m, FIXTURE_SDA "/queue/iosched") != NULL);
        CHECK(fixture_remove_block_device(&f, FIXTURE_SDA "/sda1", 8, 1) == 0);
        CHECK(fixture_remove_block_device(&f, FIXTURE_SDA "/sda2", 8, 2) == 0);
        CHECK(fixture_remove_block_device(&f, FIXTURE_SDA, 8, 0) == 0);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 3);
        /* The partitions by number, as the kernel drops them, the disk last. */
        CHECK(diffs_are(&d, (const char *const[]){"remove " FIXTURE_SDA "/sda1 " SDA_PATH "/sda1",
                                                  "remove " FIXTURE_SDA "/sda2 " SDA_PATH "/sda2",
                                                  "remove " FIXTURE_SDA " " SDA_PATH, NULL}));
        CHECK(model_find_devpath(m, FIXTURE_SDA "/queue") == NULL);
        CHECK(model_find_devpath(m, FIXTURE_SDA "/queue/iosched") == NULL);
        /* Its hardware went with its last user; what sr0 sits on stays. */
        CHECK(model_find_devpath(m, SDA_LUN) == NULL);
        CHECK(model_find_devpath(m, "/devices/pci0000:00/0000:00:1f.2/ata1") == NULL);
        CHECK(model_find_devpath(m, FIXTURE_AHCI) != NULL);
        CHECK(model_find_devpath(m, FIXTURE_SR0_LUN) != NULL);
        CHECK(m->n_objects < n_before - 5);
        diffs_clear(&d);

        /* And again: it is gone for good, nothing more to say. */
        CHECK(reconcile_all(&s, m, on_diff, &d) == 0);
        CHECK(d.n == 0);

        /* Partitions come and go in the kernel's order, by number, whatever order they were made or
         * listed in: vdy2 before vdy10. */
        CHECK(fixture_add_disk(&f, VDY, 252, 16, 4096) == 0);
        CHECK(fixture_add_partition(&f, VDY, "vdy10", 252, 26, 10, 4096, 1024) == 0);
        CHECK(fixture_add_partition(&f, VDY, "vdy2", 252, 18, 2, 3072, 1024) == 0);
        CHECK(fixture_add_partition(&f, VDY, "vdy1", 252, 17, 1, 2048, 1024) == 0);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 4);
        CHECK(diffs_are(&d,
                        (const char *const[]){"add " VDY " " VDY_PATH, "add " VDY "/vdy1 " VDY_PATH "/vdy1",
                                              "add " VDY "/vdy2 " VDY_PATH "/vdy2",
                                              "add " VDY "/vdy10 " VDY_PATH "/vdy10", NULL}));
        diffs_clear(&d);
        CHECK(fixture_remove_block_device(&f, VDY "/vdy10", 252, 26) == 0);
        CHECK(fixture_remove_block_device(&f, VDY "/vdy1", 252, 17) == 0);
        CHECK(fixture_remove_block_device(&f, VDY "/vdy2", 252, 18) == 0);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 3);
        CHECK(diffs_are(&d, (const char *const[]){"remove " VDY "/vdy1 " VDY_PATH "/vdy1",
                                                  "remove " VDY "/vdy2 " VDY_PATH "/vdy2",
                                                  "remove " VDY "/vdy10 " VDY_PATH "/vdy10", NULL}));
        diffs_clear(&d);
        CHECK(fixture_remove_block_device(&f, VDY, 252, 16) == 0);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 1);
        diffs_clear(&d);

        /* A new disk with one partition: two adds, the disk first. */
        CHECK(fixture_add_disk(&f, VDX, 252, 0, 4096) == 0);
        CHECK(fixture_add_partition(&f, VDX, "vdx1", 252, 1, 1, 2048, 1024) == 0);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 2);
        CHECK(diffs_are(&d, (const char *const[]){"add " VDX " " VDX_PATH,
                                                  "add " VDX "/vdx1 " VDX_PATH "/vdx1", NULL}));
        CHECK(model_find_devpath(m, VDX "/queue") != NULL);
        CHECK(model_find_name(m, "vdx1") && model_find_name(m, "vdx1")->parent == model_find_name(m, "vdx"));
        diffs_clear(&d);

        /* A partition added to a disk the model has: one add. */
        CHECK(fixture_add_partition(&f, VDX, "vdx2", 252, 2, 2, 3072, 1024) == 0);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 1);
        CHECK(diffs_are(&d, (const char *const[]){"add " VDX "/vdx2 " VDX_PATH "/vdx2", NULL}));
        diffs_clear(&d);

        /* A partition being torn down: device_del() has dropped its links and not yet sent its remove
         * nor deleted its directory.  It is left to its remove, which comes while the rescan waits:
         * nothing made up (the event, applied later, takes it out of the model). */
        CHECK(fixture_remove(&f, "class/block/vdx1") == 0);
        CHECK(fixture_remove(&f, "dev/block/252:1") == 0);
        d.f = &f;
        d.torn_down = VDX "/vdx1";
        CHECK(reconcile_awaiting(&s, m, &d) == 0);
        CHECK(d.n == 0);
        CHECK(d.asked >= 2);
        CHECK(model_find_name(m, "vdx1") != NULL);
        d.torn_down = NULL;
        /* Its event never read (lost): the next rescan finds the directory gone. */
        CHECK(reconcile_all(&s, m, on_diff, &d) == 1);
        CHECK(diffs_are(&d, (const char *const[]){"remove " VDX "/vdx1 " VDX_PATH "/vdx1", NULL}));
        diffs_clear(&d);
        CHECK(fixture_add_partition(&f, VDX, "vdx1", 252, 1, 1, 2048, 1024) == 0);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 1);
        diffs_clear(&d);

        /* Links gone and the directory there for good (a tree, not the kernel): after the wait for a
         * teardown, gone, as for a fresh start. */
        CHECK(fixture_remove(&f, "class/block/vdx1") == 0);
        CHECK(fixture_remove(&f, "dev/block/252:1") == 0);
        uint64_t t0 = now_usec();
        CHECK(reconcile_all(&s, m, on_diff, &d) == 1);
        CHECK(now_usec() - t0 >= 100 * USEC_PER_MSEC);
        CHECK(diffs_are(&d, (const char *const[]){"remove " VDX "/vdx1 " VDX_PATH "/vdx1", NULL}));
        diffs_clear(&d);
        CHECK(fixture_remove(&f, VDX "/vdx1") == 0);
        CHECK(fixture_add_partition(&f, VDX, "vdx1", 252, 1, 1, 2048, 1024) == 0);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 1);
        diffs_clear(&d);

        /* A partition gone from a disk that stays: one remove, the disk untouched. */
        CHECK(fixture_remove_block_device(&f, VDX "/vdx1", 252, 1) == 0);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 1);
        CHECK(diffs_are(&d, (const char *const[]){"remove " VDX "/vdx1 " VDX_PATH "/vdx1", NULL}));
        CHECK(model_find_name(m, "vdx") != NULL);
        diffs_clear(&d);

        /* A name reused at once (detached and attached again under another devpath): the old one goes
         * before the new one comes, so the name is free when it is needed. */
        CHECK(fixture_remove_block_device(&f, VDX "/vdx2", 252, 2) == 0);
        CHECK(fixture_remove_block_device(&f, VDX, 252, 0) == 0);
        CHECK(fixture_add_disk(&f, VDX_ELSEWHERE, 252, 0, 8192) == 0);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 3);
        CHECK(diffs_are(&d, (const char *const[]){"remove " VDX "/vdx2 " VDX_PATH "/vdx2",
                                                  "remove " VDX " " VDX_PATH,
                                                  "add " VDX_ELSEWHERE " " VDX_PATH, NULL}));
        CHECK(model_find_name(m, "vdx") && streq(model_find_name(m, "vdx")->devpath, VDX_ELSEWHERE));
        diffs_clear(&d);

        /* A request queue that goes while its disk stays (a fixture can do that, a kernel only for a
         * moment in del_gendisk()): a disk's Queue is constant, so the disk goes and comes back without
         * it, and again when the queue comes back. */
        CHECK(fixture_remove(&f, VDX_ELSEWHERE "/queue") == 0);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 2);
        CHECK(diffs_are(&d, (const char *const[]){"remove " VDX_ELSEWHERE " " VDX_PATH,
                                                  "add " VDX_ELSEWHERE " " VDX_PATH, NULL}));
        CHECK(model_find_devpath(m, VDX_ELSEWHERE "/queue") == NULL);
        diffs_clear(&d);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 0);
        CHECK(fixture_mkdir(&f, VDX_ELSEWHERE "/queue") == 0);
        CHECK(fixture_write(&f, VDX_ELSEWHERE "/queue/scheduler", "[none] mq-deadline \n") == 0);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 2);
        CHECK(model_find_devpath(m, VDX_ELSEWHERE "/queue") != NULL);
        diffs_clear(&d);

        /* A `device` link the scan does not follow (out of /devices, into another disk): no hardware,
         * now and at every rescan after, rather than a disk replaced at each. */
        CHECK(fixture_link(&f, VDX_ELSEWHERE "/device", "class/block") == 0);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 0);
        CHECK(fixture_link(&f, VDX_ELSEWHERE "/device", FIXTURE_SR0) == 0);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 0);
        CHECK(fixture_link(&f, VDX_ELSEWHERE "/device", FIXTURE_SR0 "/queue") == 0);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 0);
        CHECK(d.n == 0);
        CHECK(model_find_name(m, "vdx") && !model_find_name(m, "vdx")->device);
        CHECK(fixture_remove(&f, VDX_ELSEWHERE "/device") == 0);

        /* A dangling class/block entry is no block device: nothing reported, nothing lost. */
        CHECK(fixture_link(&f, "class/block/ghost", "devices/virtual/block/ghost") == 0);
        n_before = m->n_objects;
        CHECK(reconcile_all(&s, m, on_diff, &d) == 0);
        CHECK(d.n == 0);
        CHECK(m->n_objects == n_before);

        /* Nothing gone: the socket is not read for any device (it was, for every partition, each
         * reading every queued uevent). */
        d.calls = 0;
        CHECK(reconcile_awaiting(&s, m, &d) == 0);
        CHECK(d.calls == 0);

        /* The kernel's order in del_gendisk(): the queue's directory goes first, then the link and the
         * remove.  A rescan in between waits for a teardown, and the remove, read meanwhile, tells it:
         * nothing made up (it told a remove and an add of the disk, re-added without its queue: a
         * SIGHUP storm over loop devices being deleted, on the real kernel). */
        CHECK(fixture_remove(&f, VDX_ELSEWHERE "/queue") == 0);
        d.f = &f;
        d.torn_down = VDX_ELSEWHERE;
        d.asked = 0;
        CHECK(reconcile_awaiting(&s, m, &d) == 0);
        CHECK(d.n == 0);
        CHECK(d.asked >= 2);
        CHECK(model_find_devpath(m, VDX_ELSEWHERE "/queue") != NULL);
        d.torn_down = NULL;
        /* Its remove applied (here by the next rescan, which finds it gone). */
        CHECK(fixture_remove_block_device(&f, VDX_ELSEWHERE, 252, 0) == 0);
        CHECK(reconcile_all(&s, m, on_diff, &d) == 1);
        CHECK(diffs_are(&d, (const char *const[]){"remove " VDX_ELSEWHERE " " VDX_PATH, NULL}));
        diffs_clear(&d);

        /* Without a callback the count is the same. */
        CHECK(fixture_remove_block_device(&f, FIXTURE_LOOP0, 7, 0) == 0);
        CHECK(reconcile_all(&s, m, NULL, NULL) == 1);
        CHECK(model_find_name(m, "loop0") == NULL);

        /* A `device` link into another block device's directory, met by the scan before that device:
         * no hardware, and the other device is there all the same (class/block says what is a block
         * device, whatever files the directory has). */
        CHECK(fixture_link(&f, FIXTURE_CCISS "/device", FIXTURE_NVME0N1) == 0);
        CHECK(fixture_remove(&f, FIXTURE_NVME0N1 "/dev") == 0);
        Model *again = NULL;
        CHECK(model_new(&again) == 0);
        CHECK(again && scan_all(&s, again) > 0);
        CHECK(again && model_find_name(again, "nvme0n1") &&
              model_find_name(again, "nvme0n1")->ktype->id == KTYPE_DISK);
        CHECK(again && model_find_name(again, "cciss!c0d0") &&
              !model_find_name(again, "cciss!c0d0")->device);
        model_free(again);

        /* No class/block at all: an error, and the model is left alone. */
        CHECK(fixture_remove(&f, "class/block") == 0);
        n_before = m->n_objects;
        CHECK(reconcile_all(&s, m, on_diff, &d) == -ENOENT);
        CHECK(d.n == 0);
        CHECK(m->n_objects == n_before);

        CHECK(d.consistent);

out:
        diffs_clear(&d);
        model_free(m);
        sysfs_close(&s);
        fixture_done(&f);
        return tests_summary();
}
