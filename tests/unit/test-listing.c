/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <unistd.h>

#include "common/util.h"
#include "fixture.h"
#include "sysfs/class-block.h"
#include "sysfs/listing-ahead.h"
#include "tests.h"

#define SDA_LUN "/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0"

static bool has_entry(const DirListing *l, const char *name, SysfsEntryType type)
{
        const SysfsEntry *e = listing_entry(l, name);
        return e && e->type == type;
}

/* A disk's deep listing: everything the scan publishes with it, and nothing it handles otherwise. */
static void test_disk(const Fixture *f)
{
        const DirListing *sda1, *queue, *iosched, *power;
        DirListing l;
        Sysfs s;

        CHECK(sysfs_open(f->root, &s) == 0);
        CHECK(listing_read_at(&s, FIXTURE_SDA, KTYPE_DISK, true, &l) == 0);
        CHECK(has_entry(&l, "size", SYSFS_ENTRY_FILE));
        CHECK(has_entry(&l, "device", SYSFS_ENTRY_LINK));
        CHECK_STREQ(l.device_link, "../.."); /* as the link says it, resolved by the scan */
        for (size_t i = 1; i < l.n_entries; i++)
                CHECK(strcmp(l.entries[i - 1].name, l.entries[i].name) < 0);

        /* holders, slaves and mq are the disk's own business, not groups: never listed. */
        CHECK(!listing_subdir(&l, "holders") && !listing_subdir(&l, "slaves") && !listing_subdir(&l, "mq"));
        power = listing_subdir(&l, "power");
        CHECK(power && !listing_is_kobject(power) && power->n_subdirs == 0);

        sda1 = listing_subdir(&l, "sda1");
        CHECK(sda1 && listing_is_kobject(sda1));
        CHECK(has_entry(sda1, "partition", SYSFS_ENTRY_FILE));
        CHECK(listing_subdir(sda1, "power") && listing_subdir(sda1, "trace"));
        CHECK(!listing_subdir(sda1, "holders"));

        queue = listing_subdir(&l, "queue");
        CHECK(queue && has_entry(queue, "scheduler", SYSFS_ENTRY_FILE));
        iosched = listing_subdir(queue, "iosched");
        CHECK(iosched && iosched->n_entries > 0);
        listing_done(&l);

        /* Shallow: only what the disk's own shape needs (its groups, and its partitions to tell
         * them from groups), nothing below them, no link read. */
        CHECK(listing_read_at(&s, FIXTURE_SDA, KTYPE_DISK, false, &l) == 0);
        CHECK(!listing_subdir(&l, "queue"));
        sda1 = listing_subdir(&l, "sda1");
        CHECK(sda1 && sda1->n_subdirs == 0);
        CHECK(!l.device_link);
        listing_done(&l);

        CHECK(listing_read_at(&s, "/devices/virtual/block/gone", KTYPE_DISK, true, &l) == -ENOENT);
        sysfs_close(&s);
}

/* Every class/block device through the helpers: links resolved, disks listed, partitions told apart
 * (inside their disks, not listed), and each hardware ancestor listed with exactly one disk (the
 * first to reach it). */
static void test_ahead(const Fixture *f)
{
        _cleanup_(listing_ahead_freep) ListingAhead *a = NULL;
        BlockDev *devs = NULL;
        size_t n = 0, disks = 0, partitions = 0, lun_listed = 0, ahci_listed = 0;
        Sysfs s;

        CHECK(sysfs_open(f->root, &s) == 0);
        CHECK(scan_list_block_names(&s, &devs, &n) == 0);
        CHECK(n == 13);
        for (size_t i = 0; i + 1 < n; i++)
                CHECK(strcmp(devs[i].name, devs[i + 1].name) < 0);
        CHECK(block_devs_find(devs, n, "sda1x", 4) &&
              streq(block_devs_find(devs, n, "sda1x", 4)->name, "sda1"));
        CHECK(!block_devs_find(devs, n, "sd", 2) && !block_devs_find(devs, n, "sda10", 5));

        CHECK(listing_ahead_start(&s, devs, n, &a) == 0);
        sysfs_close(&s); /* the helpers have their own root */
        for (size_t i = 0; i < n; i++) {
                DirListing l = {};
                int r = listing_ahead_take(a, i, &devs[i].devpath, &l);

                CHECK(r >= 0);
                CHECK(devs[i].devpath && startswith(devs[i].devpath, "/devices/"));
                CHECK(devs[i].devpath && streq(path_basename(devs[i].devpath), devs[i].name));
                if (r == 0) {
                        partitions++;
                        CHECK(l.n_entries == 0);
                        continue;
                }
                disks++;
                CHECK(has_entry(&l, "uevent", SYSFS_ENTRY_FILE));
                for (size_t j = 0; j < l.n_ancestors; j++) {
                        CHECK(startswith(l.ancestors[j].name, "/devices/"));
                        CHECK(l.ancestors[j].n_entries > 0);
                }
                if (streq(devs[i].name, "sda"))
                        CHECK(listing_ancestor(&l, SDA_LUN));
                lun_listed += !!listing_ancestor(&l, SDA_LUN);
                ahci_listed += !!listing_ancestor(&l, FIXTURE_AHCI); /* above sda and sr0 */
                listing_done(&l);
        }
        CHECK(disks == 7 && partitions == 6);
        CHECK(lun_listed == 1 && ahci_listed == 1);
        a = listing_ahead_free(a);
        block_devs_free(devs, n);
}

/* Devices that vanished between class/block's reading and their listing: the link's gone (no devpath)
 * or only the directory (its error); the others unharmed. */
static void test_vanished(const Fixture *f)
{
        _cleanup_(listing_ahead_freep) ListingAhead *a = NULL;
        _cleanup_(freep) char *link = NULL;
        BlockDev devs[] = {
                        {.name = (char *) "gone", .type = SYSFS_ENTRY_LINK},
                        {.name = (char *) "linked", .type = SYSFS_ENTRY_LINK},
                        {.name = (char *) "loop0", .type = SYSFS_ENTRY_LINK},
                        {.name = (char *) "sda", .type = SYSFS_ENTRY_LINK},
        };
        char *devpath;
        DirListing l;
        Sysfs s;

        CHECK(asprintf(&link, "%s/class/block/linked", f->root) > 0);
        CHECK(symlink("../../devices/virtual/block/linked", link) == 0);
        CHECK(sysfs_open(f->root, &s) == 0);
        CHECK(listing_ahead_start(&s, devs, ELEMENTSOF(devs), &a) == 0);
        CHECK(listing_ahead_take(a, 0, &devpath, &l) == -ENOENT);
        CHECK(!devpath);
        CHECK(listing_ahead_take(a, 1, &devpath, &l) == -ENOENT);
        CHECK(devpath && streq(devpath, "/devices/virtual/block/linked"));
        free(devpath);
        CHECK(listing_ahead_take(a, 2, &devpath, &l) == 1);
        free(devpath);
        listing_done(&l);
        CHECK(listing_ahead_take(a, 3, &devpath, &l) == 1);
        CHECK(devpath && streq(devpath, FIXTURE_SDA));
        free(devpath);
        CHECK(listing_subdir(&l, "sda1"));
        listing_done(&l);
        sysfs_close(&s);
        CHECK(unlink(link) == 0);
}

/* Stopped early (the start failed half-way): what nobody took is freed, helpers are joined. */
static void test_stopped_early(const Fixture *f)
{
        BlockDev devs[] = {
                        {.name = (char *) "loop0", .type = SYSFS_ENTRY_LINK},
                        {.name = (char *) "nvme0n1", .type = SYSFS_ENTRY_LINK},
                        {.name = (char *) "sda", .type = SYSFS_ENTRY_LINK},
                        {.name = (char *) "sr0", .type = SYSFS_ENTRY_LINK},
        };
        ListingAhead *a = NULL;
        char *devpath;
        DirListing l;
        Sysfs s;

        CHECK(sysfs_open(f->root, &s) == 0);
        CHECK(listing_ahead_start(&s, devs, ELEMENTSOF(devs), &a) == 0);
        CHECK(listing_ahead_take(a, 0, &devpath, &l) == 1);
        free(devpath);
        listing_done(&l);
        a = listing_ahead_free(a);
        CHECK(!a);
        sysfs_close(&s);
}

int main(void)
{
        Fixture f = {};

        CHECK(fixture_new(&f) == 0);
        test_disk(&f);
        test_ahead(&f);
        test_vanished(&f);
        test_stopped_early(&f);
        fixture_done(&f);
        return tests_summary();
}
