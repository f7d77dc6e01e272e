/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>

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

/* A class/block entry: a link to the device's directory, which must carry the same name. */
int block_dev_read_entry(const Sysfs *s, int classfd, const SysfsEntry *e, BlockDev *ret)
{
        _cleanup_(freep) char *target = NULL, *devpath = NULL, *name = NULL;
        int fd, r;

        if (e->type != SYSFS_ENTRY_LINK) {
                log_warning("class/block/%s is not a link, skipped.", e->name);
                return -ENOLINK;
        }
        r = sysfs_readlink(classfd, e->name, &target);
        if (r >= 0)
                r = sysfs_resolve_relative("/class/block", target, &devpath);
        if (r < 0)
                return log_warning_errno(r, "class/block/%s: unusable link, skipped: %m", e->name);
        if (!streq(path_basename(devpath), e->name)) {
                log_warning("class/block/%s points to %s, a different name; skipped.", e->name, devpath);
                return -EXDEV;
        }
        fd = sysfs_open_dir(s, devpath);
        if (fd < 0)
                return log_warning_errno(fd, "class/block/%s: cannot open %s, skipped: %m", e->name,
                                         devpath);
        ret->partition = sysfs_has_file(fd, "partition");
        (void) close(fd);
        name = strdup(e->name);
        if (!name)
                return -ENOMEM;
        ret->name = TAKE_PTR(name);
        ret->devpath = TAKE_PTR(devpath);
        return 0;
}

int scan_list_block_devs(const Sysfs *s, BlockDev **ret, size_t *ret_n)
{
        _cleanup_(closep) int fd = -1;
        SysfsEntry *e = NULL;
        BlockDev *l;
        size_t n = 0, k = 0;
        int r;

        fd = sysfs_open_dir(s, "class/block");
        if (fd < 0)
                return fd;
        r = sysfs_list(fd, &e, &n);
        if (r < 0)
                return r;
        l = calloc(n + 1, sizeof(BlockDev));
        if (!l) {
                sysfs_entries_free(e, n);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                r = block_dev_read_entry(s, fd, &e[i], &l[k]);
                if (r == -ENOMEM) {
                        sysfs_entries_free(e, n);
                        block_devs_free(l, k);
                        return r;
                }
                if (r >= 0)
                        k++;
        }
        sysfs_entries_free(e, n);
        *ret = l;
        *ret_n = k;
        return 0;
}

/* The kernel's own list of block devices: class/block/NAME links to the device's directory. */
bool class_block_lists(const Sysfs *s, const char *devpath)
{
        _cleanup_(freep) char *target = NULL, *resolved = NULL, *rel = NULL;
        _cleanup_(closep) int fd = -1;

        /* The scan asks this of every hardware directory it publishes: most names have no link. */
        rel = path_join("class/block", path_basename(devpath));
        fd = rel ? sysfs_openat_beneath(s->root_fd, rel, O_PATH | O_NOFOLLOW, false) : -ENOMEM;
        if (fd < 0)
                return false;
        (void) close(TAKE_FD(fd));

        fd = sysfs_open_dir(s, "class/block");
        return fd >= 0 && sysfs_readlink(fd, path_basename(devpath), &target) >= 0 &&
               sysfs_resolve_relative("/class/block", target, &resolved) >= 0 && streq(resolved, devpath);
}

bool scan_block_device_present(const Sysfs *s, const char *devpath)
{
        _cleanup_(closep) int fd = sysfs_open_dir(s, devpath);

        return fd >= 0 && class_block_lists(s, devpath);
}
