/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdint.h>

#include "base/log.h"
#include "common/util.h"
#include "sysfs/class-block.h"

/* class/block is the kernel's list of block devices: one link per disk and partition, named as the
 * device, to its directory below devices/. */

void block_devs_free(BlockDev *l, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(l[i].name);
                free(l[i].devpath);
        }
        free(l);
}

int block_dev_resolve(int classfd, const char *entry, SysfsEntryType type, char **ret_devpath)
{
        _cleanup_(freep) char *target = NULL, *devpath = NULL;
        int r;

        if (type != SYSFS_ENTRY_LINK) {
                log_warning("class/block/%s is not a link, skipped.", entry);
                return -ENOLINK;
        }
        r = sysfs_readlink(classfd, entry, &target);
        if (r >= 0)
                r = sysfs_resolve_relative("/class/block", target, &devpath);
        /* Gone since the directory was listed: a device removed meanwhile, not a broken link. */
        if (r == -ENOENT)
                return log_debug_errno(r, "class/block/%s: gone since the listing.", entry);
        if (r < 0)
                return log_warning_errno(r, "class/block/%s: unusable link, skipped: %m", entry);
        if (!streq(path_basename(devpath), entry)) {
                log_warning("class/block/%s points to %s, a different name; skipped.", entry, devpath);
                return -EXDEV;
        }
        *ret_devpath = TAKE_PTR(devpath);
        return 0;
}

int block_dev_is_partition(const Sysfs *s, const char *devpath)
{
        int fd = sysfs_open_dir(s, devpath);
        bool partition;

        if (fd < 0)
                return fd;
        partition = sysfs_has_file(fd, "partition");
        (void) close(fd);
        return partition;
}

/* A class/block entry as block_dev_resolve() finds it, opened (does it open as a directory, is it a
 * partition); logged and negative when unusable. */
static int read_entry(const Sysfs *s, int classfd, const char *entry, SysfsEntryType type, BlockDev *ret)
{
        _cleanup_(freep) char *devpath = NULL, *name = NULL;
        int r;

        r = block_dev_resolve(classfd, entry, type, &devpath);
        if (r < 0)
                return r;
        r = block_dev_is_partition(s, devpath);
        if (r < 0)
                return log_warning_errno(r, "class/block/%s: cannot open %s, skipped: %m", entry, devpath);
        ret->partition = r;
        name = strdup(entry);
        if (!name)
                return -ENOMEM;
        ret->name = TAKE_PTR(name);
        ret->devpath = TAKE_PTR(devpath);
        return 0;
}

struct BlockDevReader {
        const Sysfs *sysfs;
        int fd;
        SysfsDir *dir;
};

BlockDevReader *block_dev_reader_free(BlockDevReader *r)
{
        if (!r)
                return NULL;
        sysfs_closedir(r->dir);
        if (r->fd >= 0)
                (void) close(r->fd);
        free(r);
        return NULL;
}

int block_dev_reader_open(const Sysfs *s, BlockDevReader **ret)
{
        _cleanup_(block_dev_reader_freep) BlockDevReader *r = NULL;
        int k;

        r = calloc(1, sizeof(BlockDevReader));
        if (!r)
                return -ENOMEM;
        *r = (BlockDevReader){.sysfs = s, .fd = -1};
        r->fd = sysfs_open_dir(s, "class/block");
        if (r->fd < 0)
                return r->fd;
        k = sysfs_opendir(r->fd, &r->dir);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(r);
        return 0;
}

int block_dev_reader_next(BlockDevReader *r, size_t max, BlockDev **devs, size_t *n, size_t *n_max)
{
        for (size_t i = 0; i < max; i++) {
                SysfsEntryType type;
                const char *entry;
                int k;

                k = sysfs_readdir(r->dir, &entry, &type);
                if (k <= 0)
                        return k;
                if (GREEDY_REALLOC(*devs, *n_max, *n + 1) < 0)
                        return -ENOMEM;
                k = read_entry(r->sysfs, r->fd, entry, type, &(*devs)[*n]);
                if (errno_is_resource(k)) /* an entry unread is no entry gone */
                        return k;
                if (k >= 0)
                        (*n)++;
        }
        return 1;
}

static int block_dev_cmp(const void *a, const void *b)
{
        return strcmp(((const BlockDev *) a)->name, ((const BlockDev *) b)->name);
}

int scan_list_block_names(const Sysfs *s, BlockDev **ret, size_t *ret_n)
{
        _cleanup_(block_dev_reader_freep) BlockDevReader *r = NULL;
        BlockDev *l = NULL;
        size_t n = 0, n_max = 0;
        SysfsEntryType type;
        const char *entry;
        int k;

        k = block_dev_reader_open(s, &r);
        while (k >= 0 && (k = sysfs_readdir(r->dir, &entry, &type)) > 0) {
                k = GREEDY_REALLOC(l, n_max, n + 1);
                if (k >= 0) {
                        l[n] = (BlockDev){.name = strdup(entry), .type = type};
                        k = l[n].name ? 0 : -ENOMEM;
                        n += k >= 0;
                }
        }
        if (k < 0) {
                block_devs_free(l, n);
                return k;
        }
        if (n > 1)
                qsort(l, n, sizeof(BlockDev), block_dev_cmp);
        *ret = l;
        *ret_n = n;
        return 0;
}

const BlockDev *block_devs_find(const BlockDev *l, size_t n, const char *name, size_t len)
{
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strncmp(l[mid].name, name, len);
                if (c == 0)
                        c = l[mid].name[len] != 0; /* longer: after name */
                if (c == 0)
                        return &l[mid];
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* The kernel's own list of block devices: class/block/NAME links to the device's directory. */
int class_block_check(const Sysfs *s, const char *devpath)
{
        _cleanup_(freep) char *target = NULL, *resolved = NULL, *rel = NULL;
        _cleanup_(closep) int fd = -1;
        int r;

        /* The scan asks this of every hardware directory it publishes: most names have no link. */
        rel = path_join("class/block", path_basename(devpath));
        fd = rel ? sysfs_openat_beneath(s->root_fd, rel, O_PATH | O_NOFOLLOW, false) : -ENOMEM;
        if (fd < 0)
                return errno_is_resource(fd) ? fd : 0;
        (void) close(TAKE_FD(fd));

        fd = sysfs_open_dir(s, "class/block");
        if (fd < 0)
                return errno_is_resource(fd) ? fd : 0;
        r = sysfs_readlink(fd, path_basename(devpath), &target);
        if (r < 0)
                return errno_is_resource(r) ? r : 0;
        r = sysfs_resolve_relative("/class/block", target, &resolved);
        if (r < 0)
                return r == -ENOMEM ? r : 0;
        return streq(resolved, devpath);
}

bool class_block_lists(const Sysfs *s, const char *devpath)
{
        return class_block_check(s, devpath) > 0;
}

int scan_block_device_check(const Sysfs *s, const char *devpath)
{
        _cleanup_(closep) int fd = sysfs_open_dir(s, devpath);

        if (fd < 0)
                return errno_is_resource(fd) ? fd : 0;
        return class_block_check(s, devpath);
}

bool scan_block_device_present(const Sysfs *s, const char *devpath)
{
        return scan_block_device_check(s, devpath) > 0;
}
