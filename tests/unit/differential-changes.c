/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <sys/stat.h>

#include "differential.h"

/*
 * What happens to a machine's block devices, as the kernel changes sysfs: disks (on no hardware,
 * on hardware that has one already, on new hardware) and partitions appearing and going, attribute
 * values changing (to anything a file can hold), attribute files and groups appearing and going.
 * Each change queues the events the kernel would send (pend()); they reach the daemon late or not
 * at all.  Every change goes through tree_touch(), so that the next chain starts from the pristine
 * tree again.  differential-layout.c has the changes to how things hang together.
 */

/* Where a new disk can appear: on no hardware, beside a disk on its hardware, on new hardware. */
static const struct {
        const char *name, *devpath, *device;
        unsigned major, minor;
} slots[] = {
                {"vda", VIRT "/vda", NULL, 252, 0},
                {"vdb", VIRT "/vdb", NULL, 252, 16},
                {"sdb", SDA_LUN "/block/sdb", SDA_LUN, 8, 16},
                {"nvme0n2", NVME0 "/nvme0n2", NVME0, 259, 8},
                {"sdc", PLATFORM_LUN "/block/sdc", PLATFORM_LUN, 8, 32},
};

/* Hardware whose attributes change without a block event. */
static const char *const device_dirs[] = {
                SDA_LUN, SR0_LUN, NVME0, C0D0, "/devices/pci0000:00/0000:00:1f.2", "/devices/pci0000:00",
};

static const char *const values[] = {
                "0\n",
                "1\n",
                "4096\n",
                "18446744073709551615\n",
                "-1\n",
                "",
                "\n",
                "none\n",
                "write back\n",
                "0:0\n",
                "[none] mq-deadline kyber \n",
                "bad \xff\xfe\n",
                "tab\tctrl\x01\n",
                "no newline",
};

static const char *const new_files[] = {"new_attr", "zz_top", "0lead", "dash-name", "Size", "with space"};
static const char *const new_groups[] = {"integrity", "newgroup", "power", "weird-group", "9lives"};

/* ---- the tree as class/block lists it ---- */

static void devs_done(Devs *d)
{
        tree_devs_free(d->d, d->n);
}

/* A random block device: disks only, partitions only, or either (kind 'd', 'p', 0); NULL if none. */
const TreeDev *pick_dev(const Devs *d, Rng *rng, char kind)
{
        size_t n = 0, i;

        for (i = 0; i < d->n; i++)
                n += kind == 0 || (kind == 'p') == d->d[i].partition;
        if (n == 0)
                return NULL;
        n = rng_below(rng, (unsigned) n);
        for (i = 0; i < d->n; i++)
                if ((kind == 0 || (kind == 'p') == d->d[i].partition) && n-- == 0)
                        return &d->d[i];
        return NULL;
}

static const char *pick(Rng *rng, const char *const *l, size_t n)
{
        return l[rng_below(rng, (unsigned) n)];
}

char *sub(const char *dir, const char *name)
{
        char *p = path_join(dir, name);
        if (!p)
                abort();
        return p;
}

/* Every link in class/block, block and dev/block that points to devpath or below: gone, as
 * device_del() takes them. */
void unlink_farms(World *w, const char *devpath)
{
        static const char *const farms[] = {"class/block", "block", "dev/block"};
        Fixture f = {.root = w->tree.root};

        for (size_t i = 0; i < ELEMENTSOF(farms); i++) {
                _cleanup_(strv_freep) char **links = tree_list(&w->tree, farms[i], 'l');
                tree_touch(&w->tree, farms[i]);
                for (char **l = links; *l; l++) {
                        _cleanup_(freep) char *rel = sub(farms[i], *l),
                                              *to = tree_link_devpath(&w->tree, rel);
                        const char *rest = to ? startswith(to, devpath) : NULL;
                        if (rest && (*rest == 0 || *rest == '/'))
                                (void) fixture_remove(&f, rel);
                }
        }
}

void mkdir_p(World *w, const char *rel)
{
        _cleanup_(freep) char *p = tree_path(&w->tree, rel);

        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = 0;
                (void) mkdir(p, 0755);
                *s = '/';
        }
        (void) mkdir(p, 0755);
}

void write_str(World *w, const char *rel, const char *value)
{
        (void) tree_write(&w->tree, rel, value, strlen(value));
}

void chmod_rel(World *w, const char *rel, mode_t mode)
{
        _cleanup_(freep) char *p = tree_path(&w->tree, rel);
        (void) chmod(p, mode);
}

/* ---- the changes ---- */

static void add_disk(World *w, const Devs *d, Rng *rng)
{
        size_t i = rng_below(rng, ELEMENTSOF(slots));
        const char *name = slots[i].name, *devpath = slots[i].devpath;
        Fixture f = {.root = w->tree.root};
        unsigned parts = rng_percent(rng, 50) ? rng_below(rng, 3) : 0;

        for (size_t j = 0; j < d->n; j++)
                if (streq(d->d[j].name, name))
                        return;
        world_log(w, "tree: disk %s appears at %s with %u partitions", name, devpath, parts);
        tree_touch(&w->tree, startswith(devpath, "/devices/platform") ? "devices/platform" : devpath);
        unlink_farms(w, devpath);
        if (slots[i].device && startswith(slots[i].device, "/devices/platform")) {
                _cleanup_(freep) char *ue = sub(slots[i].device, "uevent"),
                                      *vendor = sub(slots[i].device, "vendor");
                mkdir_p(w, slots[i].device);
                write_str(w, ue, "DEVTYPE=scsi_device\n");
                write_str(w, vendor, "ATA\n");
        }
        if (fixture_add_disk(&f, devpath, slots[i].major, slots[i].minor, 4096) < 0)
                abort();
        if (rng_percent(rng, 50))
                make_queue(w, devpath, rng);
        if (slots[i].device) {
                _cleanup_(freep) char *link = sub(devpath, "device");
                (void) fixture_link(&f, link, slots[i].device);
        }
        pend(w, "add", devpath, NULL);
        for (unsigned p = 1; p <= parts; p++) {
                _cleanup_(freep) char *pname = NULL, *pdev = NULL;
                if (asprintf(&pname, "%s%u", name, p) < 0)
                        abort();
                pdev = sub(devpath, pname);
                (void) fixture_add_partition(&f, devpath, pname, slots[i].major, slots[i].minor + p, p,
                                             2048 * p, 2048);
                pend(w, "add", pdev, NULL);
        }
}

static void add_partition(World *w, const Devs *d, Rng *rng)
{
        const TreeDev *disk = pick_dev(d, rng, 'd');
        _cleanup_(freep) char *name = NULL, *devpath = NULL;
        unsigned n = 1 + rng_below(rng, 5), major = 0, minor = 0;
        Fixture f = {.root = w->tree.root};
        char last;

        if (!disk)
                return;
        last = disk->name[strlen(disk->name) - 1];
        if (asprintf(&name, "%s%s%u", disk->name, last >= '0' && last <= '9' ? "p" : "", n) < 0)
                abort();
        devpath = sub(disk->devpath, name);
        if (tree_exists(&w->tree, devpath))
                return;
        _cleanup_(freep) char *dev_rel = sub(disk->devpath, "dev"), *dev = tree_read(&w->tree, dev_rel);
        if (!dev || sscanf(dev, "%u:%u", &major, &minor) != 2)
                major = 259, minor = 100;
        world_log(w, "tree: partition %s appears on %s", name, disk->name);
        tree_touch(&w->tree, devpath);
        unlink_farms(w, devpath);
        (void) fixture_add_partition(&f, disk->devpath, name, major, minor + n, n, 2048 * n, 1024);
        pend(w, "add", devpath, NULL);
}

/* A block device goes as the kernel takes it: partitions first, each with its links, each with its
 * remove event. */
static void remove_dev(World *w, const Devs *d, Rng *rng, char kind)
{
        const TreeDev *dev = pick_dev(d, rng, kind);
        Fixture f = {.root = w->tree.root};

        if (!dev)
                return;
        world_log(w, "tree: %s %s goes", dev->partition ? "partition" : "disk", dev->devpath);
        tree_touch(&w->tree, dev->devpath);
        for (size_t i = 0; !dev->partition && i < d->n; i++) {
                const char *rest = startswith(d->d[i].devpath, dev->devpath);
                if (rest && *rest == '/') {
                        unlink_farms(w, d->d[i].devpath);
                        pend(w, "remove", d->d[i].devpath, NULL);
                        if (strv_extend(&w->gone, &w->n_gone, d->d[i].devpath) < 0)
                                abort();
                }
        }
        unlink_farms(w, dev->devpath);
        (void) fixture_remove(&f, dev->devpath);
        pend(w, "remove", dev->devpath, NULL);
        if (strv_extend(&w->gone, &w->n_gone, dev->devpath) < 0)
                abort();
}

/* An object directory of a block device: its own, its queue's, its scheduler's, or one of its
 * groups'. */
static char *pick_object_dir(World *w, const TreeDev *dev, Rng *rng)
{
        _cleanup_(strv_freep) char **dirs = tree_list(&w->tree, dev->devpath, 'd');
        size_t n = strv_length(dirs);
        const char *name;

        switch (rng_below(rng, 4)) {
        case 0:
                return sub(dev->devpath, "queue");
        case 1:
                return sub(dev->devpath, "queue/iosched");
        case 2:
                if (n == 0)
                        break;
                name = dirs[rng_below(rng, (unsigned) n)];
                /* Partitions are objects of their own; the rest are groups, mq/ or link dirs. */
                return sub(dev->devpath, name);
        }
        return strdup(dev->devpath);
}

static void change_attr(World *w, const Devs *d, Rng *rng)
{
        const TreeDev *dev = pick_dev(d, rng, 0);
        _cleanup_(freep) char *dir = NULL, *file = NULL, *long_value = NULL;
        _cleanup_(strv_freep) char **files = NULL;
        const char *value;
        size_t len;

        if (rng_percent(rng, 20) || !dev)
                dir = strdup(pick(rng, device_dirs, ELEMENTSOF(device_dirs)));
        else
                dir = pick_object_dir(w, dev, rng);
        files = tree_list(&w->tree, dir, 'f');
        if (!files[0])
                return;
        file = sub(dir, files[rng_below(rng, (unsigned) strv_length(files))]);
        switch (rng_below(rng, 8)) {
        case 0:
                /* Longer than a sysfs value can be. */
                long_value = malloc(5001);
                if (!long_value)
                        abort();
                memset(long_value, 'x', 5000);
                long_value[5000] = 0;
                value = long_value, len = 5000;
                break;
        case 1:
                value = "a\0b\n", len = 4;
                break;
        case 2:
                value = "MAJOR=1\nMINOR=2\nDEVNAME=x\nDEVTYPE=disk\nDISKSEQ=77\nPARTN=3\n=\nNOEQ\nK=\xff\n";
                len = strlen(value);
                break;
        default:
                value = pick(rng, values, ELEMENTSOF(values));
                len = strlen(value);
        }
        world_log(w, "tree: %s := %zu bytes '%.20s'", file, len, value);
        (void) tree_write(&w->tree, file, value, len);
        if (dev && rng_percent(rng, 70) && startswith(dir, dev->devpath))
                pend(w, "change", dev->devpath, NULL);
}

static void reshape(World *w, const Devs *d, Rng *rng)
{
        const TreeDev *dev = pick_dev(d, rng, 0);
        _cleanup_(freep) char *dir = NULL, *path = NULL;
        Fixture f = {.root = w->tree.root};

        if (!dev)
                return;
        dir = rng_percent(rng, 70) ? strdup(dev->devpath) : pick_object_dir(w, dev, rng);
        if (!tree_is_dir(&w->tree, dir))
                return;
        switch (rng_below(rng, 4)) {
        case 0:
                path = sub(dir, pick(rng, new_files, ELEMENTSOF(new_files)));
                world_log(w, "tree: file %s appears", path);
                write_str(w, path, "1\n");
                break;
        case 1: {
                _cleanup_(strv_freep) char **files = tree_list(&w->tree, dir, 'f');
                size_t n = strv_length(files);
                /* What makes a partition one, and the uevent file, stay: no kernel takes those away. */
                if (n == 0)
                        return;
                path = sub(dir, files[rng_below(rng, (unsigned) n)]);
                if (streq(strrchr(path, '/'), "/partition") || streq(strrchr(path, '/'), "/uevent"))
                        return;
                world_log(w, "tree: file %s goes", path);
                tree_touch(&w->tree, path);
                (void) fixture_remove(&f, path);
                break;
        }
        case 2: {
                _cleanup_(freep) char *file = NULL;
                path = sub(dir, pick(rng, new_groups, ELEMENTSOF(new_groups)));
                file = sub(path, rng_percent(rng, 80) ? "format" : "uevent");
                world_log(w, "tree: directory %s appears with %s", path, strrchr(file, '/') + 1);
                tree_touch(&w->tree, path);
                mkdir_p(w, path);
                write_str(w, file, "none\n");
                break;
        }
        case 3: {
                _cleanup_(strv_freep) char **dirs = tree_list(&w->tree, dir, 'd');
                size_t n = strv_length(dirs);
                if (n == 0)
                        return;
                path = sub(dir, dirs[rng_below(rng, (unsigned) n)]);
                /* A kobject going is a change of its own (a partition, a queue, a scheduler). */
                _cleanup_(freep) char *part = sub(path, "partition"), *queue = sub(dir, "queue");
                if (tree_exists(&w->tree, part) || streq(path, queue) || strstr(path, "/queue/iosched"))
                        return;
                world_log(w, "tree: directory %s goes", path);
                tree_touch(&w->tree, path);
                (void) fixture_remove(&f, path);
                break;
        }
        }
        if (rng_percent(rng, 60))
                pend(w, "change", dev->devpath, NULL);
}

void world_change(World *w, Rng *rng)
{
        Devs d = {};

        if (tree_block_devs(&w->tree, &d.d, &d.n) < 0)
                abort();
        switch (rng_below(rng, 14)) {
        case 0:
        case 1:
                add_disk(w, &d, rng);
                break;
        case 2:
                add_partition(w, &d, rng);
                break;
        case 3:
                remove_dev(w, &d, rng, 'p');
                break;
        case 4:
                remove_dev(w, &d, rng, 'd');
                break;
        case 5:
        case 6:
                change_attr(w, &d, rng);
                break;
        case 7:
                reshape(w, &d, rng);
                break;
        case 8:
                switch_scheduler(w, &d, rng);
                break;
        case 9:
                queue_comes_or_goes(w, &d, rng);
                break;
        case 10:
                move_device_link(w, &d, rng);
                break;
        case 11:
                rename_disk(w, &d, rng);
                break;
        case 12:
                stack(w, &d, rng);
                break;
        case 13:
                odd_class_entry(w, rng);
                break;
        }
        devs_done(&d);
}
