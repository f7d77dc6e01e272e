/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "blkmodel/names.h"
#include "common/util.h"
#include "model/iface.h"
#include "model/kobject.h"
#include "model/naming.h"
#include "model/order.h"
#include "model/round.h"
#include "model/shape.h"
#include "tests.h"

/* ---- an observer that writes down what it is told: "+path" for added, "-path" for removed ---- */

typedef struct Journal {
        char **lines;
        size_t n;
        bool consistent; /* every call saw the object as the header promises */
} Journal;

static void journal_clear(Journal *j)
{
        j->lines = strv_free(j->lines);
        j->n = 0;
}

static void journal_add(Journal *j, char sign, const Kobject *k)
{
        _cleanup_(freep) char *line = NULL;

        if (asprintf(&line, "%c%s", sign, k->path) < 0 || strv_extend(&j->lines, &j->n, line) < 0)
                abort();
}

static void on_added(Model *m, Kobject *k, void *userdata)
{
        Journal *j = userdata;

        /* Linked: in the indexes and the tree already. */
        if (!k->linked || model_find_path(m, k->path) != k || model_find_devpath(m, k->devpath) != k)
                j->consistent = false;
        journal_add(j, '+', k);
}

static void on_removed(Model *m, Kobject *k, void *userdata)
{
        Journal *j = userdata;

        /* About to go: still findable, and nothing below it is left. */
        if (!k->linked || model_find_path(m, k->path) != k || k->first_child || k->n_children != 0)
                j->consistent = false;
        journal_add(j, '-', k);
}

static const ModelObserver journal_observer = {
                .added = on_added,
                .removed = on_removed,
};

static bool journal_is(const Journal *j, const char *const *expected)
{
        size_t n = 0;

        while (expected[n])
                n++;
        if (n != j->n)
                goto differ;
        for (size_t i = 0; i < n; i++)
                if (!streq(expected[i], j->lines[i]))
                        goto differ;
        return true;

differ:
        fprintf(stderr, "  journal:");
        for (size_t i = 0; i < j->n; i++)
                fprintf(stderr, " %s", j->lines[i]);
        fprintf(stderr, "\n  expected:");
        for (size_t i = 0; i < n; i++)
                fprintf(stderr, " %s", expected[i]);
        fprintf(stderr, "\n");
        return false;
}

static size_t journal_index(const Journal *j, const char *line)
{
        for (size_t i = 0; i < j->n; i++)
                if (streq(j->lines[i], line))
                        return i;
        return SIZE_MAX;
}

/* Creates and links one object; what the model holds by itself is handed back borrowed, a
 * dependent-held object (a Device) with the caller's reference. */
static Kobject *add(Model *m, const Ktype *t, const char *name, Kobject *parent, Kobject *kset,
                    const char *devpath)
{
        Kobject *k = NULL;

        CHECK(kobject_new(m, t, name, parent, kset, devpath, &k) == 0);
        if (!k)
                abort();
        CHECK(k->n_ref == 1);
        CHECK(model_link(m, k) == 0);
        if (!t->held_by_dependents)
                kobject_unref(m, k);
        return k;
}

#define SDA "/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda"

/* The order of the members and of the children, kept up to date as they come and go, is the order
 * sorting them gives: after a few changes between readings (kept up to date) and after many (made
 * again). */
static void check_order(Model *m)
{
        _cleanup_(freep) Kobject **members = NULL;
        _cleanup_(freep) Kobject **children = NULL;
        Kobject *const *l = NULL;
        size_t n = 0;

        CHECK(kobject_children_sorted(m->block_kset, _KTYPE_MAX, &children, &n) == 0);
        members = malloc(sizeof(Kobject *) * (m->block_kset->n_members + 1));
        if (!members || !children)
                abort();
        /* The kset's members are its children here. */
        CHECK(n == m->block_kset->n_members);
        memcpy(members, children, sizeof(Kobject *) * n);
        CHECK(kset_members_sorted(m, m->block_kset, &l, &n) == 0);
        CHECK(n == m->block_kset->n_members && memcmp(l, members, sizeof(Kobject *) * n) == 0);
        CHECK(model_children_sorted(m, m->block_kset, &l, &n) == 0);
        CHECK(n == m->block_kset->n_children && memcmp(l, children, sizeof(Kobject *) * n) == 0);
}

static size_t changes_kept(const SortedList *slots, size_t n_slots, const Kobject *owner)
{
        for (size_t i = 0; i < n_slots; i++)
                if (slots[i].owner == owner)
                        return slots[i].changes;
        return SIZE_MAX; /* dropped */
}

static void test_members_order(void)
{
        enum { N = 600 };
        Kobject *disks[N] = {};
        unsigned seed = 12345;
        Model *m = NULL;

        CHECK(model_new(&m) == 0);
        if (!m)
                return;
        for (size_t round = 0; round < 40; round++) {
                /* Mostly a few changes between readings; every eighth round more than are kept. */
                size_t changes = round % 8 == 7 ? 400 : 1 + round % 5;
                for (size_t c = 0; c < changes; c++) {
                        size_t i;
                        seed = seed * 1103515245u + 12345u;
                        i = (seed >> 8) % N;
                        if (disks[i]) {
                                model_unlink(m, disks[i]);
                                disks[i] = NULL;
                        } else {
                                char name[16], devpath[64];
                                /* Names out of order with the indexes, and sharing prefixes. */
                                snprintf(name, sizeof(name), "sd%zx", (i * 7919) % N);
                                snprintf(devpath, sizeof(devpath), "/devices/virtual/block/%s", name);
                                disks[i] = add(m, &ktype_disk, name, m->block_kset, m->block_kset, devpath);
                        }
                }
                size_t want = round == 0 ? SIZE_MAX : changes > 256 ? SIZE_MAX : changes;
                CHECK(changes_kept(m->sorted_members, ELEMENTSOF(m->sorted_members), m->block_kset) == want);
                CHECK(changes_kept(m->sorted_children, ELEMENTSOF(m->sorted_children), m->block_kset) ==
                      want);
                check_order(m);
        }
        /* An object's kept children go with it: a new object at its address must not find them. */
        for (size_t i = 0; i < N; i++)
                if (disks[i]) {
                        Kobject *const *l = NULL;
                        size_t n = 0;
                        char devpath[64];
                        snprintf(devpath, sizeof(devpath), "/devices/virtual/block/%s/queue",
                                 disks[i]->name);
                        add(m, &ktype_queue, "queue", disks[i], NULL, devpath);
                        CHECK(model_children_sorted(m, disks[i], &l, &n) == 0 && n == 1);
                        const Kobject *gone = disks[i];
                        model_unlink(m, disks[i]);
                        disks[i] = NULL;
                        CHECK(changes_kept(m->sorted_children, ELEMENTSOF(m->sorted_children), gone) ==
                              SIZE_MAX);
                        break;
                }
        for (size_t i = 0; i < N; i++)
                if (disks[i])
                        model_unlink(m, disks[i]);
        check_order(m);
        model_free(m);
}

static void test_new_model(void)
{
        Model *m = NULL;

        CHECK(model_new(&m) == 0);
        if (!m)
                return;
        /* The two ksets are there from the start, at their well-known paths. */
        CHECK(m->n_objects == 2);
        CHECK(model_find_path(m, BLKMODEL_BLOCK_PATH) == m->block_kset);
        CHECK(model_find_path(m, BLKMODEL_DEVICES_PATH) == m->devices_kset);
        CHECK(model_find_devpath(m, "/block") == m->block_kset);
        CHECK(model_find_devpath(m, "/devices") == m->devices_kset);
        CHECK(m->block_kset->ktype == &ktype_kset);
        CHECK(m->block_kset->n_ref == 1);
        /* Ksets are not block devices: the name index has disks and partitions only. */
        CHECK(model_find_name(m, "block") == NULL);
        model_free(m);
}

static void test_link_unlink(void)
{
        Journal j = {.consistent = true};
        Model *m = NULL;
        Kobject *sda, *sda1, *sda2, *queue, *iosched, *held;

        CHECK(model_new(&m) == 0);
        if (!m)
                return;
        model_set_observer(m, &journal_observer, &j);

        sda = add(m, &ktype_disk, "sda", m->block_kset, m->block_kset, SDA);
        sda2 = add(m, &ktype_partition, "sda2", sda, m->block_kset, SDA "/sda2");
        queue = add(m, &ktype_queue, "queue", sda, NULL, SDA "/queue");
        iosched = add(m, &ktype_elevator, "iosched", queue, NULL, SDA "/queue/iosched");
        sda1 = add(m, &ktype_partition, "sda1", sda, m->block_kset, SDA "/sda1");

        /* Added: once each, in link order, with the object itself. */
        CHECK(journal_is(&j,
                         (const char *const[]){"+/org/blkmodel1/block/sda", "+/org/blkmodel1/block/sda/sda2",
                                               "+/org/blkmodel1/block/sda/queue",
                                               "+/org/blkmodel1/block/sda/queue/iosched",
                                               "+/org/blkmodel1/block/sda/sda1", NULL}));
        CHECK(m->n_objects == 7);

        /* A child holds its parent: the model's reference plus one per child. */
        CHECK(sda->n_ref == 1 + 3);
        CHECK(queue->n_ref == 1 + 1);
        CHECK(sda1->n_ref == 1);
        CHECK(m->block_kset->n_ref == 1 + 1);
        CHECK(sda->n_children == 3);
        CHECK(sda1->parent == sda);

        /* The indexes: every object by path and devpath, block devices also by name. */
        CHECK(model_find_path(m, "/org/blkmodel1/block/sda/sda1") == sda1);
        CHECK(model_find_devpath(m, SDA "/queue/iosched") == iosched);
        CHECK(model_find_name(m, "sda") == sda);
        CHECK(model_find_name(m, "sda2") == sda2);
        CHECK(model_find_name(m, "queue") == NULL);
        CHECK(model_find_name(m, "iosched") == NULL);
        CHECK(kobject_find_child(sda, "sda1") == sda1);
        CHECK(kobject_find_child(sda, "sda3") == NULL);
        CHECK(kobject_find_child(queue, "iosched") == iosched);
        CHECK(kobject_find_child_type(sda, KTYPE_QUEUE) == queue);
        CHECK(kobject_find_child_type(sda, KTYPE_DEVICE) == NULL);
        CHECK(kobject_find_child_type(queue, KTYPE_ELEVATOR) == iosched);

        /* Kset membership: disks and partitions are members of block, queues of nothing. */
        CHECK(m->block_kset->n_members == 3);
        {
                /* Sorted by name. */
                Kobject *const *l = NULL, *const *again = NULL;
                size_t n = 0;
                CHECK(kset_members_sorted(m, m->block_kset, &l, &n) == 0);
                CHECK(n == 3 && l[0] == sda && l[1] == sda1 && l[2] == sda2);
                /* Kept from one asking to the next, and brought up to date when a member comes or goes. */
                CHECK(kset_members_sorted(m, m->block_kset, &again, &n) == 0);
                CHECK(again == l && n == 3);
                Kobject *sda0 = add(m, &ktype_partition, "sda0", sda, m->block_kset, SDA "/sda0");
                CHECK(kset_members_sorted(m, m->block_kset, &l, &n) == 0);
                CHECK(n == 4 && l[0] == sda && l[1] == sda0 && l[2] == sda1 && l[3] == sda2);
                CHECK(kset_members_sorted(m, m->devices_kset, &again, &n) == 0);
                CHECK(n == 0);
                /* A snapshot outlives changes: who left reads as NULL, who came is not in it. */
                MembersSnapshot *snap = NULL, *devices_snap = NULL;
                CHECK(kset_members_snapshot(m, m->block_kset, &snap) == 0);
                CHECK(kset_members_snapshot(m, m->devices_kset, &devices_snap) == 0);
                model_unlink(m, sda0);
                CHECK(kset_members_sorted(m, m->block_kset, &l, &n) == 0);
                CHECK(n == 3 && l[0] == sda && l[1] == sda1 && l[2] == sda2);
                Kobject *sda3 = add(m, &ktype_partition, "sda3", sda, m->block_kset, SDA "/sda3");
                CHECK(snap && members_snapshot_size(snap) == 4);
                CHECK(snap && members_snapshot_get(snap, 0) == sda && !members_snapshot_get(snap, 1));
                CHECK(snap && members_snapshot_get(snap, 2) == sda1 &&
                      members_snapshot_get(snap, 3) == sda2);
                CHECK(devices_snap && members_snapshot_size(devices_snap) == 0);
                snap = members_snapshot_free(m, snap);
                devices_snap = members_snapshot_free(m, devices_snap);
                CHECK(!m->members_snapshots);
                model_unlink(m, sda3);
                journal_clear(&j);
        }
        {
                /* Members leave between lookups and in between each other, in an order that is not
                 * their addresses' (what the snapshot sorts its departed by): each reads as NULL from
                 * then on, whoever looked up what before. */
                Kobject *p[5];
                size_t by_address[5], order[] = {2, 4, 0, 3, 1};
                bool left[5] = {};
                MembersSnapshot *snap = NULL;
                char name[16], devpath[sizeof(SDA) + 16];
                for (size_t i = 0; i < 5; i++) {
                        snprintf(name, sizeof(name), "sda%zu", i + 5);
                        snprintf(devpath, sizeof(devpath), SDA "/%s", name);
                        p[i] = add(m, &ktype_partition, name, sda, m->block_kset, devpath);
                        by_address[i] = i;
                }
                for (size_t i = 0; i < 5; i++)
                        for (size_t k = i + 1; k < 5; k++)
                                if ((uintptr_t) p[by_address[k]] < (uintptr_t) p[by_address[i]]) {
                                        size_t t = by_address[i];
                                        by_address[i] = by_address[k];
                                        by_address[k] = t;
                                }
                CHECK(kset_members_snapshot(m, m->block_kset, &snap) == 0);
                /* sda, sda1, sda2, sda5 … sda9 */
                CHECK(snap && members_snapshot_size(snap) == 8);
                for (size_t step = 0; snap && step < 5; step++) {
                        size_t gone = by_address[order[step]];
                        model_unlink(m, p[gone]);
                        left[gone] = true;
                        /* Looked up after each but the third: two leave between lookups. */
                        if (step == 2)
                                continue;
                        for (size_t i = 0; i < 5; i++)
                                CHECK(members_snapshot_get(snap, 3 + i) == (left[i] ? NULL : p[i]));
                        CHECK(members_snapshot_get(snap, 0) == sda && members_snapshot_get(snap, 1) == sda1 &&
                              members_snapshot_get(snap, 2) == sda2);
                }
                snap = members_snapshot_free(m, snap);
                journal_clear(&j);
        }
        CHECK(m->devices_kset->n_members == 0);

        /* Children sorted by name, all or of one kind. */
        {
                _cleanup_(freep) Kobject **l = NULL;
                size_t n = 0;
                CHECK(kobject_children_sorted(sda, _KTYPE_MAX, &l, &n) == 0);
                CHECK(n == 3);
                if (n == 3) {
                        CHECK(l[0] == queue);
                        CHECK(l[1] == sda1);
                        CHECK(l[2] == sda2);
                }
        }
        {
                _cleanup_(freep) Kobject **l = NULL;
                size_t n = 0;
                CHECK(kobject_children_sorted(sda, KTYPE_PARTITION, &l, &n) == 0);
                CHECK(n == 2);
                if (n == 2) {
                        CHECK(l[0] == sda1);
                        CHECK(l[1] == sda2);
                }
        }
        {
                _cleanup_(freep) Kobject **l = NULL;
                size_t n = 99;
                CHECK(kobject_children_sorted(sda, KTYPE_DEVICE, &l, &n) == 0);
                CHECK(n == 0);
                CHECK(l != NULL);
        }
        {
                _cleanup_(freep) Kobject **l = NULL;
                size_t n = 99;
                CHECK(kobject_children_sorted(iosched, _KTYPE_MAX, &l, &n) == 0);
                CHECK(n == 0);
        }

        /* A taken path: refused, nothing changes, nobody is told. */
        journal_clear(&j);
        {
                Kobject *dup = NULL;
                CHECK(kobject_new(m, &ktype_partition, "sda1", sda, m->block_kset, SDA "/other", &dup) == 0);
                CHECK(model_link(m, dup) == -EEXIST);
                CHECK(!dup->linked);
                CHECK(model_find_path(m, dup->path) == sda1);
                CHECK(model_find_devpath(m, SDA "/other") == NULL);
                kobject_unref(m, dup);
        }
        /* A taken devpath under a free path: refused, and the path index is left as it was. */
        {
                Kobject *dup = NULL;
                CHECK(kobject_new(m, &ktype_disk, "sdz", m->block_kset, m->block_kset, SDA, &dup) == 0);
                CHECK(model_link(m, dup) == -EEXIST);
                CHECK(model_find_path(m, "/org/blkmodel1/block/sdz") == NULL);
                CHECK(model_find_name(m, "sdz") == NULL);
                CHECK(model_find_devpath(m, SDA) == sda);
                kobject_unref(m, dup);
        }
        /* A taken kernel name (path and devpath free): refused, both other indexes rolled back. */
        {
                Kobject *dup = NULL;
                CHECK(kobject_new(m, &ktype_disk, "sda1", m->block_kset, m->block_kset,
                                  "/devices/virtual/block/sda1", &dup) == 0);
                CHECK(model_link(m, dup) == -EEXIST);
                CHECK(model_find_path(m, "/org/blkmodel1/block/sda1") == NULL);
                CHECK(model_find_devpath(m, "/devices/virtual/block/sda1") == NULL);
                CHECK(model_find_name(m, "sda1") == sda1);
                kobject_unref(m, dup);
        }
        CHECK(j.n == 0);
        CHECK(m->n_objects == 7);
        CHECK(m->block_kset->n_members == 3);
        CHECK(sda->n_children == 3);

        /* Unlinking a partition: it alone goes, and its disk forgets it. */
        model_unlink(m, sda2);
        CHECK(journal_is(&j, (const char *const[]){"-/org/blkmodel1/block/sda/sda2", NULL}));
        CHECK(sda->n_children == 2);
        CHECK(sda->n_ref == 1 + 2);
        CHECK(m->block_kset->n_members == 2);
        CHECK(model_find_name(m, "sda2") == NULL);
        CHECK(model_find_devpath(m, SDA "/sda2") == NULL);

        /* Unlinking the disk: everything below goes first, each object after its own children. */
        journal_clear(&j);
        held = kobject_ref(sda1);
        model_unlink(m, sda);
        CHECK(j.n == 4);
        CHECK(journal_index(&j, "-/org/blkmodel1/block/sda") == 3);
        CHECK(journal_index(&j, "-/org/blkmodel1/block/sda/queue/iosched") <
              journal_index(&j, "-/org/blkmodel1/block/sda/queue"));
        CHECK(journal_index(&j, "-/org/blkmodel1/block/sda/sda1") < 3);
        CHECK(journal_index(&j, "-/org/blkmodel1/block/sda/queue") < 3);
        CHECK(m->n_objects == 2);
        CHECK(m->block_kset->n_members == 0);
        CHECK(m->block_kset->n_children == 0);
        CHECK(model_find_name(m, "sda") == NULL);
        CHECK(model_find_path(m, "/org/blkmodel1/block/sda/sda1") == NULL);

        /* A reference keeps an unlinked object, and through it its parent: no use after free. */
        CHECK(!held->linked);
        CHECK(held->n_ref == 1);
        CHECK(held->parent->n_ref == 1);
        CHECK_STREQ(held->parent->name, "sda");
        /* Unlinking again is a no-op, and nobody is told twice. */
        journal_clear(&j);
        model_unlink(m, held);
        CHECK(j.n == 0);
        /* The disk still holds the block kset until the last reference to its partition goes. */
        CHECK(m->block_kset->n_ref == 2);
        kobject_unref(m, held);
        CHECK(m->block_kset->n_ref == 1);

        CHECK(j.consistent);
        model_free(m);
        journal_clear(&j);
}

static void test_devices(void)
{
        Journal j = {.consistent = true};
        Model *m = NULL;
        Kobject *host, *lun, *sdb, *sdc, *other;

        CHECK(model_new(&m) == 0);
        if (!m)
                return;
        model_set_observer(m, &journal_observer, &j);

        /* As the scan builds them: each Device comes with the caller's reference, the model takes none. */
        host = add(m, &ktype_device, "host0", m->devices_kset, m->devices_kset, "/devices/host0");
        CHECK(host->n_ref == 1);
        lun = add(m, &ktype_device, "0:0:0:0", host, m->devices_kset, "/devices/host0/0:0:0:0");
        CHECK(host->n_ref == 2);
        kobject_unref(m, host); /* the LUN holds it now */
        CHECK(host->linked);
        CHECK(m->devices_kset->n_members == 2);

        sdb = add(m, &ktype_disk, "sdb", m->block_kset, m->block_kset, "/devices/host0/0:0:0:0/block/sdb");
        sdb->device = kobject_ref(lun);
        sdc = add(m, &ktype_disk, "sdc", m->block_kset, m->block_kset, "/devices/host0/0:0:0:0/block/sdc");
        sdc->device = kobject_ref(lun);
        kobject_unref(m, lun); /* the disks hold it now */
        CHECK(lun->n_ref == 2);

        /* An unrelated Device, held by the test: stays whatever the disks do. */
        other = add(m, &ktype_device, "other", m->devices_kset, m->devices_kset, "/devices/other");

        /* One of two users goes: the Device stays. */
        journal_clear(&j);
        model_unlink(m, sdb);
        CHECK(journal_is(&j, (const char *const[]){"-/org/blkmodel1/block/sdb", NULL}));
        CHECK(lun->linked);
        CHECK(lun->n_ref == 1);

        /* The last user goes: the Device leaves with it, then its parent, which only it held. */
        journal_clear(&j);
        model_unlink(m, sdc);
        CHECK(journal_is(&j, (const char *const[]){"-/org/blkmodel1/block/sdc",
                                                   "-/org/blkmodel1/devices/host0/_30_3a0_3a0_3a0",
                                                   "-/org/blkmodel1/devices/host0", NULL}));
        CHECK(model_find_devpath(m, "/devices/host0") == NULL);
        CHECK(model_find_devpath(m, "/devices/host0/0:0:0:0") == NULL);
        CHECK(model_find_devpath(m, "/devices/other") == other);
        CHECK(m->devices_kset->n_members == 1);
        CHECK(m->devices_kset->n_children == 1);
        CHECK(m->n_objects == 3);

        /* The holder's last reference: out of the model and freed. */
        journal_clear(&j);
        kobject_unref(m, other);
        CHECK(journal_is(&j, (const char *const[]){"-/org/blkmodel1/devices/other", NULL}));
        CHECK(m->n_objects == 2);
        CHECK(m->devices_kset->n_members == 0);

        /* model_free() lets the Devices of the disks still there go too (LSan checks). */
        host = add(m, &ktype_device, "host1", m->devices_kset, m->devices_kset, "/devices/host1");
        sdb = add(m, &ktype_disk, "sdd", m->block_kset, m->block_kset, "/devices/host1/block/sdd");
        sdb->device = host;

        CHECK(j.consistent);
        model_free(m);
        journal_clear(&j);
}

/* More disks on one Device than its count holds (an NVMe controller with 65,536 namespaces): no
 * abort, and the Device goes when the last disk has. */
static void test_device_of_many_disks(void)
{
        Model *m = NULL;
        Kobject *ctrl, **disks;
        enum { N = UINT16_MAX + 1 };

        CHECK(model_new(&m) == 0);
        disks = calloc(N, sizeof(Kobject *));
        CHECK(disks);
        if (!m || !disks)
                return;
        ctrl = add(m, &ktype_device, "nvme0", m->devices_kset, m->devices_kset, "/devices/nvme0");
        for (unsigned i = 0; i < N; i++) {
                char name[32], devpath[64];

                (void) snprintf(name, sizeof(name), "nvme0n%u", i + 1);
                (void) snprintf(devpath, sizeof(devpath), "/devices/nvme0/%s", name);
                /* As the scan links a disk: its device set first. */
                CHECK(kobject_new(m, &ktype_disk, name, m->block_kset, m->block_kset, devpath, &disks[i]) == 0);
                if (!disks[i])
                        abort();
                disks[i]->device = kobject_ref(ctrl);
                CHECK(model_link(m, disks[i]) == 0);
                kobject_unref(m, disks[i]);
        }
        kobject_unref(m, ctrl);
        for (unsigned i = 0; i < N; i++)
                model_unlink(m, disks[i]);
        /* Its count saturated, it went with the last reference its disks held. */
        CHECK(model_find_devpath(m, "/devices/nvme0") == NULL);
        free(disks);
        model_free(m);
}

static void test_names(void)
{
        Model *m = NULL;
        Kobject *k = NULL;

        CHECK(model_new(&m) == 0);
        if (!m)
                return;
        /* A name no D-Bus string can carry is refused before anything is made. */
        CHECK(kobject_new(m, &ktype_disk, "sd\xff", m->block_kset, m->block_kset, "/devices/x/sd\xff", &k) ==
              -EILSEQ);
        CHECK(k == NULL);
        CHECK(kobject_new(m, &ktype_disk, "sdx", m->block_kset, m->block_kset, "/devices/\xc0\xaf", &k) ==
              -EILSEQ);
        CHECK(k == NULL);
        CHECK(m->block_kset->n_ref == 1);

        /* Object paths are encoded, so that every sysfs name round-trips. */
        CHECK(kobject_new(m, &ktype_disk, "cciss!c0d0", m->block_kset, m->block_kset,
                          "/devices/c0d0/block/cciss!c0d0", &k) == 0);
        if (k) {
                CHECK_STREQ(k->path, "/org/blkmodel1/block/cciss_21c0d0");
                CHECK_STREQ(k->name, "cciss!c0d0");
                CHECK(model_link(m, k) == 0);
                CHECK(model_find_name(m, "cciss!c0d0") == k);
                kobject_unref(m, k);
        }
        CHECK(kobject_new(m, &ktype_disk, "dm-0", m->block_kset, m->block_kset,
                          "/devices/virtual/block/dm-0", &k) == 0);
        if (k) {
                CHECK_STREQ(k->path, "/org/blkmodel1/block/dm_2d0");
                kobject_unref(m, k); /* never linked: freed here */
        }
        model_free(m);

        /* Member names: sanitized, lossy on purpose, always valid or refused as too long. */
        static const struct {
                const char *file, *member;
        } members[] = {
                        {"size", "size"}, {"queue-depth", "queue_depth"}, {"0", "_0"},
                        {"9p", "_9p"},    {"cciss!c0d0", "cciss_c0d0"},   {"\xc3\xa9", "_"},
                        {"", "_"},
        };
        for (size_t i = 0; i < ELEMENTSOF(members); i++) {
                _cleanup_(freep) char *member = NULL;
                CHECK(member_name_from_file(members[i].file, &member) == 0);
                CHECK_STREQ(member, members[i].member);
                CHECK(member && member_name_is_valid(member));
        }
        char name[MEMBER_NAME_MAX + 2];
        memset(name, 'a', sizeof(name));
        name[MEMBER_NAME_MAX] = 0;
        CHECK(member_name_is_valid(name));
        name[0] = '1'; /* the '_' in front makes it one too long */
        {
                char *member = NULL;
                CHECK(member_name_from_file(name, &member) == -ENAMETOOLONG);
                CHECK(member == NULL);
        }
        name[0] = 'a';
        name[MEMBER_NAME_MAX] = 'a';
        name[MEMBER_NAME_MAX + 1] = 0;
        CHECK(!member_name_is_valid(name));
        CHECK(!member_name_is_valid("a-b"));
        CHECK(!member_name_is_valid("a b"));
        CHECK(member_name_is_valid("_0"));
}

/* ---- shapes ---- */

typedef struct ModeCalls {
        unsigned n;
        const char *chmodded; /* this file has mode chmod_mode */
        int chmod_mode;
} ModeCalls;

/* "ro" and everything in a power group are writable, the rest read-only. */
static int fake_mode(const char *relpath, void *userdata)
{
        ModeCalls *c = userdata;

        c->n++;
        if (c->chmodded && streq(relpath, c->chmodded))
                return c->chmod_mode;
        if (streq(relpath, "ro") || startswith(relpath, "power/"))
                return 0644;
        if (streq(relpath, "missing"))
                return -ENOENT;
        return 0444;
}

static void builder_fill(ShapeBuilder *b, const char *const *files, const char *group,
                         const char *const *group_files)
{
        for (; files && *files; files++)
                CHECK(shape_builder_add_file(b, *files) == 0);
        if (group) {
                CHECK(shape_builder_add_group(b, group) == 0);
                for (; group_files && *group_files; group_files++)
                        CHECK(shape_builder_add_group_file(b, *group_files) == 0);
        }
}

static void test_shapes(void)
{
        static const char *const disk_files[] = {"dev", "missing", "ro", "size", "stat", NULL};
        static const char *const power_files[] = {"control", "runtime_status", NULL};
        ShapeRegistry r;
        ShapeBuilder b = {}, b2 = {};
        ModeCalls calls = {};
        Shape *s1 = NULL, *s2 = NULL, *s3 = NULL, *s4 = NULL;
        const Attr *a;

        shape_registry_init(&r);

        /* A group file before any group is refused. */
        CHECK(shape_builder_add_group_file(&b, "x") == -EINVAL);

        builder_fill(&b, disk_files, "power", power_files);
        CHECK(shape_get(&r, &b, "disk", disk_properties, fake_mode, &calls, false, "sda", &s1) == 0);
        CHECK(s1 != NULL);
        if (!s1)
                goto out;
        CHECK(s1->n_ref == 1);
        CHECK(calls.n == 7);

        /* Attributes sorted by member, flags from the file's mode and kind. */
        CHECK(s1->attrs->n_attrs == 5);
        a = attr_set_find(s1->attrs, "ro");
        CHECK(a && a->flags == ATTR_WRITABLE);
        a = attr_set_find(s1->attrs, "size");
        CHECK(a && a->flags == 0);
        a = attr_set_find(s1->attrs, "stat");
        CHECK(a && a->flags == ATTR_VOLATILE);
        /* An unreadable mode is not a write bit. */
        a = attr_set_find(s1->attrs, "missing");
        CHECK(a && a->flags == 0);
        CHECK(attr_set_find(s1->attrs, "Size") == NULL);
        for (size_t i = 1; i < s1->attrs->n_attrs; i++)
                CHECK(strcmp(s1->attrs->attrs[i - 1].member, s1->attrs->attrs[i].member) < 0);
        CHECK(s1->n_groups == 1);
        CHECK(shape_find_group(s1, "org.blkmodel1.Group.power") == &s1->groups[0]);
        CHECK(shape_find_group(s1, "org.blkmodel1.Group.trace") == NULL);
        CHECK_STREQ(s1->groups[0].dir, "power");
        a = attr_set_find(s1->groups[0].attrs, "control");
        CHECK(a && (a->flags & ATTR_WRITABLE));

        /* The same files again: the same shape, shared, and no file is asked for its mode again. */
        builder_fill(&b2, disk_files, "power", power_files);
        CHECK(shape_get(&r, &b2, "disk", disk_properties, fake_mode, &calls, false, "sdb", &s2) == 0);
        CHECK(s2 == s1);
        CHECK(s1->n_ref == 2);
        CHECK(calls.n == 7);
        CHECK(hashmap_size(&r.shapes) == 1);
        CHECK(hashmap_size(&r.attr_sets) == 2);
        shape_builder_done(&b2);

        /* The same names with another mode (a chmod): only an exact look sees it, and makes a set of
         * its own for the kind's files; the group's set is shared still. */
        calls.chmodded = "size";
        calls.chmod_mode = 0400;
        builder_fill(&b2, disk_files, "power", power_files);
        CHECK(shape_get(&r, &b2, "disk", disk_properties, fake_mode, &calls, false, "sdb", &s4) == 0);
        CHECK(s4 == s1);
        shape_unref(&r, s4);
        CHECK(shape_get(&r, &b2, "disk", disk_properties, fake_mode, &calls, true, "sdb", &s4) == 0);
        CHECK(calls.n == 14);
        CHECK(s4 && s4 != s1);
        if (s4) {
                CHECK(s4->attrs != s1->attrs);
                CHECK(s4->groups[0].attrs == s1->groups[0].attrs);
                a = attr_set_find(s4->attrs, "size");
                CHECK(a && a->flags == ATTR_PRIVILEGED && a->mode_flags == ATTR_PRIVILEGED);
                a = attr_set_find(s4->attrs, "stat");
                CHECK(a && a->flags == ATTR_VOLATILE && a->mode_flags == 0);
                shape_unref(&r, s4);
        }
        /* Back as it was: an exact look finds the shared shape. */
        calls.chmodded = NULL;
        CHECK(shape_get(&r, &b2, "disk", disk_properties, fake_mode, &calls, true, "sdb", &s4) == 0);
        CHECK(s4 == s1);
        shape_unref(&r, s4);
        s4 = NULL;
        CHECK(hashmap_size(&r.shapes) == 1);
        CHECK(hashmap_size(&r.attr_sets) == 2);

        /* A mode that could not be read for want of descriptors or memory says nothing of the file:
         * no shape with "ro" (or a group's file) read-only, which a re-listing would tell clients
         * with InterfacesRemoved and InterfacesAdded; the error, and nothing made or kept. */
        static const char *const starved[] = {"ro", "power/control"};
        for (size_t i = 0; i < ELEMENTSOF(starved); i++)
                for (int e = 0; e < 2; e++) {
                        calls.chmodded = starved[i];
                        calls.chmod_mode = e ? -ENOMEM : -EMFILE;
                        s4 = NULL;
                        CHECK(shape_get(&r, &b2, "disk", disk_properties, fake_mode, &calls, true, "sdb", &s4) ==
                              calls.chmod_mode);
                        CHECK(s4 == NULL);
                        if (s4)
                                shape_unref(&r, s4);
                        CHECK(hashmap_size(&r.shapes) == 1);
                        CHECK(hashmap_size(&r.attr_sets) == 2);
                }
        calls.chmodded = NULL;
        s4 = NULL;
        shape_builder_done(&b2);

        /* The same files for another kind: reserved names differ per kind, so nothing is shared. */
        builder_fill(&b2, disk_files, "power", power_files);
        CHECK(shape_get(&r, &b2, "partition", partition_properties, fake_mode, &calls, false, "sda1", &s3) == 0);
        CHECK(s3 && s3 != s1);
        CHECK(s3 && s3->attrs != s1->attrs);
        CHECK(hashmap_size(&r.shapes) == 2);
        shape_builder_done(&b2);

        /* Typed property names are not shadowed: a file "Size" or "Major" is left out, "size" stays. */
        {
                static const char *const files[] = {"Major", "Partitions", "Size", "size", NULL};
                builder_fill(&b2, files, NULL, NULL);
                CHECK(shape_get(&r, &b2, "disk", disk_properties, NULL, NULL, false, "sdc", &s4) == 0);
                if (s4) {
                        CHECK(s4->attrs->n_attrs == 1);
                        CHECK(attr_set_find(s4->attrs, "size") != NULL);
                        CHECK(attr_set_find(s4->attrs, "Size") == NULL);
                        CHECK(attr_set_find(s4->attrs, "Major") == NULL);
                        shape_unref(&r, s4);
                        s4 = NULL;
                }
                shape_builder_done(&b2);
        }
        /* Reserved names are per interface: a group may have a "Size" file. */
        {
                static const char *const group_files[] = {"Size", NULL};
                builder_fill(&b2, NULL, "g", group_files);
                CHECK(shape_get(&r, &b2, "disk", disk_properties, NULL, NULL, false, "sdc", &s4) == 0);
                if (s4) {
                        CHECK(s4->n_groups == 1);
                        CHECK(s4->n_groups == 1 && attr_set_find(s4->groups[0].attrs, "Size") != NULL);
                        shape_unref(&r, s4);
                        s4 = NULL;
                }
                shape_builder_done(&b2);
        }

        /* Rules by file name that hold for one kind only: an NVMe path disk's queue_depth moves with
         * its I/O, a SCSI device's is a tunable; a device's PCI config is cut for users. */
        {
                static const char *const files[] = {"config", "queue_depth", NULL};
                static const struct {
                        const char *kind;
                        const PropertyInfo *reserved;
                        unsigned queue_depth, config;
                } kinds[] = {
                                {"disk", disk_properties, ATTR_VOLATILE, 0},
                                {"device", device_properties, 0, ATTR_PRIVILEGED},
                };
                for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                        builder_fill(&b2, files, NULL, NULL);
                        const char *kind = kinds[i].kind;
                        CHECK(shape_get(&r, &b2, kind, kinds[i].reserved, NULL, NULL, false, "x", &s4) == 0);
                        if (s4) {
                                a = attr_set_find(s4->attrs, "queue_depth");
                                CHECK(a && a->flags == kinds[i].queue_depth);
                                a = attr_set_find(s4->attrs, "config");
                                CHECK(a && a->flags == kinds[i].config);
                                shape_unref(&r, s4);
                                s4 = NULL;
                        }
                        shape_builder_done(&b2);
                }
        }

        /* Rules for one group directory: bcache's write counter, not a "written" file elsewhere. */
        {
                static const char *const files[] = {"dirty_data", "written", "writeback_percent", NULL};
                builder_fill(&b2, files, "bcache", files);
                CHECK(shape_builder_add_group(&b2, "other") == 0);
                CHECK(shape_builder_add_group_file(&b2, "written") == 0);
                CHECK(shape_get(&r, &b2, "disk", disk_properties, NULL, NULL, false, "x", &s4) == 0);
                CHECK(s4 && s4->n_groups == 2);
                if (s4 && s4->n_groups == 2) {
                        const Group *bcache = shape_find_group(s4, "org.blkmodel1.Group.bcache");
                        const Group *elsewhere = shape_find_group(s4, "org.blkmodel1.Group.other");
                        for (const char *const *f = files; *f; f++) {
                                a = attr_set_find(s4->attrs, *f);
                                CHECK(a && a->flags == 0);
                                a = bcache ? attr_set_find(bcache->attrs, *f) : NULL;
                                CHECK(a && a->flags == (streq(*f, "writeback_percent") ? 0 : ATTR_VOLATILE));
                        }
                        a = elsewhere ? attr_set_find(elsewhere->attrs, "written") : NULL;
                        CHECK(a && a->flags == 0);
                }
                if (s4)
                        shape_unref(&r, s4);
                s4 = NULL;
                shape_builder_done(&b2);
        }

        /* Two files, one member: one is published, never both; the file of that very name, else
         * the first by file name. */
        {
                static const char *const files[] = {"a_b", "a-b", "a.b", "c", "x-y", "x.y", NULL};
                builder_fill(&b2, files, NULL, NULL);
                CHECK(shape_get(&r, &b2, "device", device_properties, NULL, NULL, false, "dev", &s4) == 0);
                if (s4) {
                        CHECK(s4->attrs->n_attrs == 3);
                        a = attr_set_find(s4->attrs, "a_b");
                        CHECK(a && streq(a->file, "a_b"));
                        a = attr_set_find(s4->attrs, "x_y");
                        CHECK(a && streq(a->file, "x-y"));
                        CHECK(attr_set_find(s4->attrs, "c") != NULL);
                        shape_unref(&r, s4);
                        s4 = NULL;
                }
                shape_builder_done(&b2);
        }
        /* Two group directories, one interface name: one group, the directory of that very name. */
        {
                static const char *const files[] = {"x", NULL};
                builder_fill(&b2, NULL, "a-b", files);
                builder_fill(&b2, NULL, "a_b", files);
                CHECK(shape_get(&r, &b2, "device", device_properties, NULL, NULL, false, "dev", &s4) == 0);
                if (s4) {
                        CHECK(s4->n_groups == 1);
                        CHECK(shape_find_group(s4, "org.blkmodel1.Group.a_b") != NULL);
                        CHECK(streq(shape_find_group(s4, "org.blkmodel1.Group.a_b")->dir, "a_b"));
                        shape_unref(&r, s4);
                        s4 = NULL;
                }
                shape_builder_done(&b2);
        }
        /* Names past what D-Bus takes, and leading digits. */
        {
                char longname[MEMBER_NAME_MAX + 2];
                static const char *const group_files[] = {"27", "124", NULL};
                memset(longname, 'x', sizeof(longname) - 1);
                longname[sizeof(longname) - 1] = 0;
                CHECK(shape_builder_add_file(&b2, longname) == 0);
                CHECK(shape_builder_add_file(&b2, "ok") == 0);
                builder_fill(&b2, NULL, "msi_irqs", group_files);
                CHECK(shape_builder_add_group(&b2, longname) == 0);
                CHECK(shape_builder_add_group_file(&b2, "y") == 0);
                CHECK(shape_get(&r, &b2, "device", device_properties, NULL, NULL, false, "dev", &s4) == 0);
                if (s4) {
                        CHECK(s4->attrs->n_attrs == 1);
                        CHECK(s4->n_groups == 1);
                        CHECK(s4->n_groups == 1 && attr_set_find(s4->groups[0].attrs, "_27") != NULL);
                        CHECK(s4->n_groups == 1 && attr_set_find(s4->groups[0].attrs, "_124") != NULL);
                        shape_unref(&r, s4);
                        s4 = NULL;
                }
                shape_builder_done(&b2);
        }

        /* The same files in another group directory are another shape. */
        {
                builder_fill(&b2, disk_files, "trace", power_files);
                CHECK(shape_get(&r, &b2, "disk", disk_properties, fake_mode, &calls, false, "sdd", &s4) == 0);
                CHECK(s4 && s4 != s1);
                CHECK(s4 && s4->attrs == s1->attrs);
                /* Group files' modes are learnt per directory: trace/control is read-only here. */
                if (s4 && s4->n_groups == 1) {
                        a = attr_set_find(s4->groups[0].attrs, "control");
                        CHECK(a && !(a->flags & ATTR_WRITABLE));
                }
                shape_unref(&r, s4);
                s4 = NULL;
                shape_builder_done(&b2);
        }

        /* References: the shape and its sets go with the last one. */
        CHECK(shape_ref(s1) == s1);
        CHECK(s1->n_ref == 3);
        shape_unref(&r, s1);
        shape_unref(&r, s1);
        CHECK(hashmap_size(&r.shapes) == 2);
        shape_unref(&r, s2);
        shape_unref(&r, s3);
        CHECK(hashmap_size(&r.shapes) == 0);
        CHECK(hashmap_size(&r.attr_sets) == 0);
        shape_unref(&r, NULL);
        CHECK(shape_ref(NULL) == NULL);

out:
        shape_builder_done(&b);
        shape_builder_done(&b2);
        shape_registry_deinit(&r);
}

/* Interfaces follow from the kind and the shape. */
static void test_ifaces(void)
{
        static const char *const files[] = {"size", NULL};
        static const char *const group_files[] = {"control", NULL};
        ShapeBuilder b = {};
        Model *m = NULL;
        Kobject *k = NULL;
        Iface iface;

        CHECK(model_new(&m) == 0);
        if (!m)
                return;
        CHECK(kobject_new(m, &ktype_disk, "sda", m->block_kset, m->block_kset, SDA, &k) == 0);
        if (!k) {
                model_free(m);
                return;
        }
        /* Without a shape: Kobject and the kind's interface, nothing else. */
        CHECK(kobject_n_ifaces(k) == 2);
        kobject_iface(k, 0, &iface);
        CHECK_STREQ(iface.name, BLKMODEL_IFACE_KOBJECT);
        CHECK(iface.kind == IFACE_KOBJECT);
        kobject_iface(k, 1, &iface);
        CHECK_STREQ(iface.name, BLKMODEL_IFACE_DISK);
        CHECK(iface.attrs == NULL);

        builder_fill(&b, files, "power", group_files);
        CHECK(shape_get(&m->shapes, &b, "disk", disk_properties, NULL, NULL, false, "sda", &k->shape) == 0);
        shape_builder_done(&b);
        CHECK(kobject_n_ifaces(k) == 3);
        CHECK(kobject_find_iface(k, "org.blkmodel1.Group.power", &iface));
        CHECK(iface.kind == IFACE_GROUP);
        CHECK_STREQ(iface.attr_dir, "power");
        CHECK(iface.properties && iface.properties->name == NULL);
        if (iface.attrs && iface.attrs->n_attrs == 1) {
                _cleanup_(freep) char *rel = iface_attr_relpath(&iface, &iface.attrs->attrs[0]);
                CHECK_STREQ(rel, "power/control");
        }
        CHECK(iface_same_in(&iface, k->shape));
        CHECK(!kobject_find_iface(k, "org.blkmodel1.Partition", &iface));
        CHECK(model_link(m, k) == 0);
        kobject_unref(m, k);
        /* The model drops the object's shape with it; the registry must end up empty. */
        model_free(m);
}

static Kobject *add_loop(Model *m, unsigned i)
{
        char name[32], devpath[64];

        snprintf(name, sizeof(name), "loop%u", i);
        snprintf(devpath, sizeof(devpath), "/devices/virtual/block/%s", name);
        return add(m, &ktype_disk, name, m->block_kset, m->block_kset, devpath);
}

/* A round takes every object with values once, a few at a time, while objects come and go: an
 * object removed after it was taken is still handed out (unlinked), and when the index moved its
 * entries the taking starts over rather than skip or repeat one. */
static bool round_holds(const ModelRound *r, const Kobject *k)
{
        for (size_t i = 0; i < r->n; i++)
                if (r->objects[i] == k)
                        return true;
        return false;
}

static void test_round(void)
{
        Model *m = NULL;
        ModelRound r = {};
        Kobject *k, *taken, *not_taken = NULL;
        size_t n_linked = 0, n_seen = 0, n_unlinked = 0;
        unsigned resizes;
        int t;

        CHECK(model_new(&m) == 0);
        if (!m)
                return;
        for (unsigned i = 0; i < 1000; i++)
                add_loop(m, i);

        model_round_begin(&r, m);
        CHECK(model_round_active(&r));
        CHECK(model_round_take(&r, m, 100) == 0);
        CHECK(r.n > 0 && r.n <= 100);
        resizes = m->by_path.resizes;
        /* Enough new objects for the index to grow: every entry moves. */
        for (unsigned i = 1000; i < 2000; i++)
                add_loop(m, i);
        CHECK(m->by_path.resizes != resizes);
        CHECK(model_round_take(&r, m, 100) == 0);
        CHECK(r.n > 0 && r.n <= 100); /* over again */

        /* One taken and one not go: the first is still handed out, the other not. */
        taken = r.objects[r.n - 1];
        for (size_t i = 0; !not_taken && (k = hashmap_iterate(&m->by_path, &i));)
                if (k->ktype->id != KTYPE_KSET && !round_holds(&r, k))
                        not_taken = k;
        CHECK(not_taken != NULL);
        model_unlink(m, taken);
        if (not_taken)
                model_unlink(m, not_taken);

        while ((t = model_round_take(&r, m, 100)) == 0)
                ;
        CHECK(t == 1);
        CHECK(model_round_take(&r, m, 100) == 1);
        while ((k = model_round_next(&r))) {
                CHECK(k->ktype->id != KTYPE_KSET);
                n_seen++;
                n_unlinked += !k->linked;
                kobject_unref(m, k);
        }
        CHECK(!model_round_active(&r));
        for (size_t i = 0; (k = hashmap_iterate(&m->by_path, &i));)
                n_linked += k->ktype->id != KTYPE_KSET;
        CHECK(n_linked == 1998);
        CHECK(n_seen == 1999);
        CHECK(n_unlinked == 1);

        /* Below a disk: its partitions and nothing else; below the block kset: every disk and
         * partition; below nothing: every object, the ksets too.  Handed over by index. */
        Kobject *loop7 = model_find_name(m, "loop7");
        CHECK(loop7 != NULL);
        if (loop7) {
                add(m, &ktype_partition, "loop7p1", loop7, m->block_kset,
                    "/devices/virtual/block/loop7/loop7p1");
                add(m, &ktype_partition, "loop7p2", loop7, m->block_kset,
                    "/devices/virtual/block/loop7/loop7p2");
        }
        const Kobject *tops[] = {loop7, m->block_kset, NULL};
        const size_t want[] = {2, 2000, hashmap_size(&m->by_path)};
        for (size_t j = 0; j < ELEMENTSOF(tops); j++) {
                Kobject **objects = NULL;
                size_t n = 0, n_ksets = 0;

                model_round_begin_below(&r, m, tops[j]);
                while (model_round_take(&r, m, 100) == 0)
                        ;
                model_round_hand_over(&r, &objects, &n);
                CHECK(!model_round_active(&r));
                CHECK(n == want[j]);
                for (size_t i = 0; i < n; i++) {
                        n_ksets += objects[i]->ktype->id == KTYPE_KSET;
                        if (tops[j] == loop7)
                                CHECK(objects[i]->parent == loop7);
                        kobject_unref(m, objects[i]);
                }
                CHECK(tops[j] ? n_ksets == 0 : n_ksets == 2);
                free(objects);
        }

        /* Released half way: the references go with it (the sanitizers' leak check). */
        model_round_begin(&r, m);
        CHECK(model_round_take(&r, m, 10) == 0);
        model_round_release(&r, m);
        CHECK(!model_round_active(&r));
        CHECK(r.objects == NULL);
        model_free(m);
}

int main(void)
{
        test_new_model();
        test_link_unlink();
        test_members_order();
        test_devices();
        test_device_of_many_disks();
        test_names();
        test_shapes();
        test_ifaces();
        test_round();
        return tests_summary();
}
