/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>
#include <uv.h>

#include "base/hashmap.h"
#include "common/util.h"
#include "sysfs/listing-ahead.h"

/* How far helpers list ahead of the caller: enough that the caller never waits, few enough that
 * the listings waiting meanwhile are a few hundred KiB on the real kernel. */
#define LEAD 64
#define HELPERS_MAX 3

typedef enum SlotState {
        SLOT_FREE, /* nobody is listing it */
        SLOT_LISTING,
        SLOT_LISTED,
        SLOT_TAKEN,
} SlotState;

typedef struct Slot {
        SlotState state;
        int error;
        bool partition; /* not listed: inside another block device's directory, or a partition */
        char *devpath;  /* NULL: class/block's entry is no usable link */
        DirListing listing;
} Slot;

struct ListingAhead {
        Sysfs root;   /* the root fd is a copy: helpers never share the caller's */
        int class_fd; /* class/block, whose links the helpers read */
        const BlockDev *devs;
        size_t n;
        Slot *slots;
        size_t next;  /* the first slot nobody claimed */
        size_t taken; /* slots before it are the caller's */
        bool stopping;
        uv_mutex_t lock;
        uv_cond_t listed; /* a helper listed a slot: the caller may be waiting for it */
        uv_cond_t moved;  /* the caller took a slot, or stops: a helper may go on */
        uv_thread_t helpers[HELPERS_MAX];
        size_t n_helpers;
        Hashmap ancestors; /* hardware devpaths some slot lists (or listed) with its disk */
        char **ancestor_keys;
        size_t n_ancestor_keys;
};

/* With the lock held: the next slot to list, or n. */
static size_t claim(ListingAhead *a)
{
        size_t i = a->next;

        if (i < a->n) {
                a->slots[i].state = SLOT_LISTING;
                a->next++;
        }
        return i;
}

/* Is devpath for the caller to list (true), or did another slot take it already?  The lock is not
 * held. */
static bool take_ancestor(ListingAhead *a, const char *devpath)
{
        bool mine = false;
        char *key;

        uv_mutex_lock(&a->lock);
        if (!hashmap_get(&a->ancestors, devpath)) {
                key = strdup(devpath);
                /* The list owns the key (or freed it), the map borrows it. */
                if (strv_consume(&a->ancestor_keys, &a->n_ancestor_keys, key) >= 0)
                        mine = hashmap_put(&a->ancestors, key) >= 0;
        }
        uv_mutex_unlock(&a->lock);
        return mine;
}

/* Lists the hardware above the disk that no other slot did, up to where one did: each ancestor is
 * listed once, by the first slot to reach it.  The scan lists whatever is missing itself (a device
 * another slot listed, one whose listing failed), so this only has to be right about what it lists. */
static void list_ancestors(ListingAhead *a, const char *devpath, DirListing *l)
{
        _cleanup_(freep) char *p = NULL;
        const char *rest;

        if (!l->device_link || sysfs_resolve_relative(devpath, l->device_link, &p) < 0)
                return;
        rest = startswith(p, devpath);
        if (rest && (*rest == 0 || *rest == '/'))
                return;
        while (startswith(p, "/devices/") && take_ancestor(a, p) &&
               listing_add_ancestor(&a->root, l, p) >= 0)
                *strrchr(p, '/') = 0;
}

/* Is devpath's parent directory a block device class/block lists by name?  Then devpath is one of
 * its partitions, which the disk's own listing brings: two thirds of class/block on 1,000 disks × 2
 * partitions, opened for nothing before.  The caller checks that the disk did bring it. */
static bool inside_block_device(const ListingAhead *a, const char *devpath)
{
        const char *end = strrchr(devpath, '/'), *start = end;

        while (start && start > devpath && start[-1] != '/')
                start--;
        return start && start < end && block_devs_find(a->devs, a->n, start, end - start);
}

/* Resolves and lists slot i without the lock, then files it under the lock (held again on return). */
static void list_slot(ListingAhead *a, size_t i)
{
        char *devpath = NULL;
        DirListing l = {};
        bool partition = false;
        int fd, r;

        uv_mutex_unlock(&a->lock);
        r = block_dev_resolve(a->class_fd, a->devs[i].name, a->devs[i].type, &devpath);
        if (r >= 0 && inside_block_device(a, devpath))
                partition = true;
        else if (r >= 0) {
                r = fd = sysfs_open_dir(&a->root, devpath);
                if (fd >= 0) {
                        partition = sysfs_has_file(fd, "partition");
                        r = partition ? 0 : listing_read(fd, KTYPE_DISK, true, &l);
                        (void) close(fd);
                }
        }
        if (r >= 0 && !partition)
                list_ancestors(a, devpath, &l);
        uv_mutex_lock(&a->lock);
        a->slots[i] = (Slot){.state = SLOT_LISTED,
                             .error = r < 0 ? r : 0,
                             .partition = partition,
                             .devpath = devpath,
                             .listing = l};
        uv_cond_signal(&a->listed);
}

static void helper_run(void *userdata)
{
        ListingAhead *a = userdata;

        uv_mutex_lock(&a->lock);
        while (!a->stopping && a->next < a->n) {
                if (a->next >= a->taken + LEAD) {
                        uv_cond_wait(&a->moved, &a->lock);
                        continue;
                }
                list_slot(a, claim(a));
        }
        uv_mutex_unlock(&a->lock);
}

int listing_ahead_take(ListingAhead *a, size_t i, char **ret_devpath, DirListing *ret)
{
        Slot *slot = &a->slots[i];
        int r;

        uv_mutex_lock(&a->lock);
        for (;;) {
                if (slot->state == SLOT_LISTED)
                        break;
                /* Nobody got to it yet (a->next is i), or a helper is at it: list the next one here
                 * rather than wait (listing is most of the work, the helpers are behind). */
                if (slot->state == SLOT_FREE || (a->next < a->n && a->next < i + LEAD))
                        list_slot(a, claim(a));
                else
                        uv_cond_wait(&a->listed, &a->lock);
        }
        r = slot->error < 0 ? slot->error : !slot->partition;
        *ret_devpath = slot->devpath;
        *ret = slot->listing;
        *slot = (Slot){.state = SLOT_TAKEN};
        a->taken = i + 1;
        uv_cond_broadcast(&a->moved);
        uv_mutex_unlock(&a->lock);
        return r;
}

ListingAhead *listing_ahead_free(ListingAhead *a)
{
        if (!a)
                return NULL;
        uv_mutex_lock(&a->lock);
        a->stopping = true;
        uv_cond_broadcast(&a->moved);
        uv_mutex_unlock(&a->lock);
        for (size_t i = 0; i < a->n_helpers; i++)
                (void) uv_thread_join(&a->helpers[i]);
        for (size_t i = 0; i < a->n; i++) {
                listing_done(&a->slots[i].listing);
                free(a->slots[i].devpath);
        }
        free(a->slots);
        hashmap_deinit(&a->ancestors);
        strv_free(a->ancestor_keys);
        uv_cond_destroy(&a->moved);
        uv_cond_destroy(&a->listed);
        uv_mutex_destroy(&a->lock);
        (void) close(a->root.root_fd);
        (void) close(a->class_fd);
        free(a);
        /* What the helpers allocated is free now: give their heap's pages back. */
        (void) malloc_trim(0);
        return NULL;
}

int listing_ahead_start(const Sysfs *s, const BlockDev *devs, size_t n, ListingAhead **ret)
{
        unsigned cpus = uv_available_parallelism();
        ListingAhead *a;

        a = calloc(1, sizeof(ListingAhead));
        if (!a)
                return -ENOMEM;
        a->slots = calloc(n ? n : 1, sizeof(Slot));
        a->root = (Sysfs){.root_fd = fcntl(s->root_fd, F_DUPFD_CLOEXEC, 3), .kernfs = s->kernfs};
        int r = !a->slots ? -ENOMEM : a->root.root_fd < 0 ? -errno : 0;
        a->class_fd = r < 0 ? -EBADF : sysfs_open_dir(s, "class/block");
        if (r >= 0 && a->class_fd < 0)
                r = a->class_fd;
        if (r < 0) {
                if (a->root.root_fd >= 0)
                        (void) close(a->root.root_fd);
                if (a->class_fd >= 0)
                        (void) close(a->class_fd);
                free(a->slots);
                free(a);
                return r;
        }
        a->devs = devs;
        a->n = n;
        hashmap_init(&a->ancestors, hashmap_key_self);
        /* The mutex and conditions of a glibc system cannot fail to initialise. */
        (void) uv_mutex_init(&a->lock);
        (void) uv_cond_init(&a->listed);
        (void) uv_cond_init(&a->moved);

        /* A helper per CPU beside the caller's; one helper fewer is only slower. */
        for (size_t i = 0; i + 1 < cpus && i < HELPERS_MAX && n > 1; i++) {
                if (uv_thread_create(&a->helpers[a->n_helpers], helper_run, a) < 0)
                        break;
                a->n_helpers++;
        }
        *ret = a;
        return 0;
}
