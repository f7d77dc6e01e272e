/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <sys/stat.h>

#include "differential.h"

/*
 * Changes to how things hang together, the kernel's and some no kernel makes: a scheduler switch
 * (queue/iosched replaced), a queue directory coming or going, a `device` link moving (to other
 * hardware, to nowhere, into another block device), a disk renamed, dm or md stacking on a device
 * or leaving it, class/block entries that are no block devices.
 */

static const struct {
        const char *name;
        const char *tunables[4];
} schedulers[] = {
                {"none", {NULL}},
                {"mq-deadline", {"read_expire", "write_expire", "fifo_batch", NULL}},
                {"kyber", {"read_lat_nsec", "write_lat_nsec", NULL}},
                {"bfq", {"low_latency", "slice_idle", NULL}},
};

/* Hardware a `device` link can point to: real, new, not there, not hardware, the disk itself. */
static const char *const device_targets[] = {
                SDA_LUN,
                SR0_LUN,
                NVME0,
                C0D0,
                PLATFORM_LUN,
                "/devices/nowhere/gone",
                "/class/block",
                VIRT "/loop0",
                SDA_LUN "/block/sda/sda1",
                SDA_LUN "/block/sda/queue",
                NULL,
};

/* The iosched directory of a scheduler, with its tunables; "none" has none. */
static void make_iosched(World *w, const char *queue, size_t sched)
{
        _cleanup_(freep) char *dir = sub(queue, "iosched");
        Fixture f = {.root = w->tree.root};

        (void) fixture_remove(&f, dir);
        if (sched == 0)
                return;
        mkdir_p(w, dir);
        for (const char *const *t = schedulers[sched].tunables; *t; t++) {
                _cleanup_(freep) char *file = sub(dir, *t);
                write_str(w, file, "16\n");
                chmod_rel(w, file, 0644);
        }
}

void make_queue(World *w, const char *disk, Rng *rng)
{
        _cleanup_(freep) char *queue = sub(disk, "queue"), *lbs = sub(queue, "logical_block_size"),
                              *ra = sub(queue, "read_ahead_kb"), *sched = sub(queue, "scheduler");
        size_t s = rng_below(rng, ELEMENTSOF(schedulers));
        char text[128];

        mkdir_p(w, queue);
        write_str(w, lbs, "512\n");
        write_str(w, ra, "128\n");
        chmod_rel(w, ra, 0644);
        text[0] = 0;
        for (size_t i = 0; i < ELEMENTSOF(schedulers); i++)
                snprintf(text + strlen(text), sizeof(text) - strlen(text), i == s ? "[%s] " : "%s ",
                         schedulers[i].name);
        strcat(text, "\n");
        write_str(w, sched, text);
        chmod_rel(w, sched, 0644);
        make_iosched(w, queue, s);
}

void switch_scheduler(World *w, const Devs *d, Rng *rng)
{
        const TreeDev *disk = pick_dev(d, rng, 'd');
        _cleanup_(freep) char *queue = NULL, *file = NULL, *text = NULL;
        char now[128];
        size_t to;

        if (!disk)
                return;
        queue = sub(disk->devpath, "queue");
        file = sub(queue, "scheduler");
        text = tree_read(&w->tree, file);
        if (!text)
                return;
        to = rng_below(rng, ELEMENTSOF(schedulers));
        tree_touch(&w->tree, queue);
        if (rng_percent(rng, 20)) {
                /* The scheduler's directory comes or goes while the file says nothing of it. */
                world_log(w, "tree: %s/iosched replaced by %s's, scheduler file unchanged", queue,
                          schedulers[to].name);
                make_iosched(w, queue, to);
        } else {
                /* As the kernel writes it: every name, the active one in brackets, a space after each. */
                now[0] = 0;
                for (size_t i = 0; i < ELEMENTSOF(schedulers); i++)
                        snprintf(now + strlen(now), sizeof(now) - strlen(now), i == to ? "[%s] " : "%s ",
                                 schedulers[i].name);
                strcat(now, "\n");
                world_log(w, "tree: %s switches to %s", queue, schedulers[to].name);
                write_str(w, file, now);
                make_iosched(w, queue, to);
        }
        /* The kernel sends nothing for a switch; a udev rule's change event may follow. */
        if (rng_percent(rng, 30))
                pend(w, "change", disk->devpath, NULL);
}

void queue_comes_or_goes(World *w, const Devs *d, Rng *rng)
{
        const TreeDev *disk = pick_dev(d, rng, 'd');
        _cleanup_(freep) char *queue = NULL;
        Fixture f = {.root = w->tree.root};

        if (!disk)
                return;
        queue = sub(disk->devpath, "queue");
        tree_touch(&w->tree, queue);
        if (tree_is_dir(&w->tree, queue)) {
                world_log(w, "tree: %s vanishes", queue);
                (void) fixture_remove(&f, queue);
        } else {
                world_log(w, "tree: %s appears", queue);
                make_queue(w, disk->devpath, rng);
        }
        if (rng_percent(rng, 30))
                pend(w, "change", disk->devpath, NULL);
}

void move_device_link(World *w, const Devs *d, Rng *rng)
{
        const TreeDev *disk = pick_dev(d, rng, 'd');
        _cleanup_(freep) char *link = NULL;
        Fixture f = {.root = w->tree.root};
        const char *to;

        if (!disk)
                return;
        link = sub(disk->devpath, "device");
        to = device_targets[rng_below(rng, ELEMENTSOF(device_targets))];
        tree_touch(&w->tree, link);
        if (rng_percent(rng, 10))
                to = disk->devpath; /* into the disk itself */
        if (to && streq(to, PLATFORM_LUN)) {
                _cleanup_(freep) char *ue = sub(PLATFORM_LUN, "uevent");
                tree_touch(&w->tree, "devices/platform");
                mkdir_p(w, PLATFORM_LUN);
                write_str(w, ue, "DEVTYPE=scsi_device\n");
        }
        world_log(w, "tree: %s -> %s", link, to ? to : "(none)");
        (void) fixture_remove(&f, link);
        if (to)
                (void) fixture_link(&f, link, to);
        if (rng_percent(rng, 30))
                pend(w, rng_percent(rng, 50) ? "change" : "move", disk->devpath, disk->devpath);
}

/* A virtual disk renamed (as dm and md can): its directory moves, its links follow, one move event. */
void rename_disk(World *w, const Devs *d, Rng *rng)
{
        const TreeDev *disk = pick_dev(d, rng, 'd');
        _cleanup_(freep) char *to = NULL, *from_abs = NULL, *to_abs = NULL, *dev_rel = NULL, *dev = NULL,
                              *dev_link = NULL, *class_link = NULL, *block_link = NULL;
        Fixture f = {.root = w->tree.root};
        const char *name = rng_percent(rng, 50) ? "vdr" : "vds";

        if (!disk || !startswith(disk->devpath, VIRT "/") || streq(disk->name, name))
                return;
        for (size_t i = 0; i < d->n; i++)
                if (streq(d->d[i].name, name) ||
                    (d->d[i].partition && startswith(d->d[i].devpath, disk->devpath)))
                        return; /* taken, or partitions that would keep the old name */
        to = sub(VIRT, name);
        from_abs = tree_path(&w->tree, disk->devpath);
        to_abs = tree_path(&w->tree, to);
        dev_rel = sub(disk->devpath, "dev");
        dev = tree_read(&w->tree, dev_rel);
        world_log(w, "tree: %s renamed %s", disk->devpath, name);
        tree_touch(&w->tree, disk->devpath);
        tree_touch(&w->tree, to);
        unlink_farms(w, disk->devpath);
        if (rename(from_abs, to_abs) < 0)
                abort();
        class_link = sub("class/block", name);
        block_link = sub("block", name);
        (void) fixture_link(&f, class_link, to);
        (void) fixture_link(&f, block_link, to);
        if (dev && asprintf(&dev_link, "dev/block/%s", dev) >= 0 && !strchr(dev, '/'))
                (void) fixture_link(&f, dev_link, to);
        if (strv_extend(&w->gone, &w->n_gone, disk->devpath) < 0)
                abort();
        pend(w, "move", to, disk->devpath);
}

/* dm or md sitting on a device, or no longer: holders/ below, slaves/ above. */
void stack(World *w, const Devs *d, Rng *rng)
{
        const TreeDev *lower = pick_dev(d, rng, 0), *upper = pick_dev(d, rng, 'd');
        _cleanup_(freep) char *holders = NULL, *slaves = NULL, *h = NULL, *s = NULL;
        Fixture f = {.root = w->tree.root};

        if (!lower || !upper || startswith(lower->devpath, upper->devpath))
                return;
        holders = sub(lower->devpath, "holders");
        slaves = sub(upper->devpath, "slaves");
        h = sub(holders, upper->name);
        s = sub(slaves, lower->name);
        tree_touch(&w->tree, holders);
        tree_touch(&w->tree, slaves);
        if (tree_exists(&w->tree, h)) {
                world_log(w, "tree: %s no longer on %s", upper->name, lower->name);
                (void) fixture_remove(&f, h);
                (void) fixture_remove(&f, s);
        } else {
                world_log(w, "tree: %s stacked on %s", upper->name, lower->name);
                mkdir_p(w, holders);
                mkdir_p(w, slaves);
                (void) fixture_link(&f, h, upper->devpath);
                (void) fixture_link(&f, s, lower->devpath);
        }
        if (rng_percent(rng, 70))
                pend(w, "change", upper->devpath, NULL);
}

/* What class/block should never hold: a link to nothing, a file, a link under another name. */
void odd_class_entry(World *w, Rng *rng)
{
        Fixture f = {.root = w->tree.root};

        tree_touch(&w->tree, "class/block");
        switch (rng_below(rng, 3)) {
        case 0:
                world_log(w, "tree: class/block/ghost dangles");
                (void) fixture_link(&f, "class/block/ghost", VIRT "/ghost");
                pend(w, "add", VIRT "/ghost", NULL);
                break;
        case 1:
                world_log(w, "tree: class/block/notalink is a file");
                write_str(w, "class/block/notalink", "x\n");
                break;
        case 2:
                world_log(w, "tree: class/block/alias points to loop0");
                (void) fixture_link(&f, "class/block/alias", VIRT "/loop0");
                pend(w, "add", VIRT "/loop0", NULL);
                break;
        }
}
