/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/log.h"
#include "common/util.h"
#include "sysfs/scan.h"

/* The kernel's own list of block devices, class/block: one link per device, named as the device. */

static const char *basename_of(const char *path)
{
        const char *s = strrchr(path, '/');
        return s ? s + 1 : path;
}

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
        if (!streq(basename_of(devpath), e->name)) {
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
