/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "blkmodel/names.h"
#include "common/util.h"
#include "sysfs/resolve.h"
#include "sysfs/values.h"

#define SPEC_MAX 4096

/* Follows "a/b/c" below k, one child name per element. */
static int walk(Kobject *k, const char *rest, Kobject **ret)
{
        while (k && rest && *rest) {
                const char *e = strchrnul(rest, '/');
                _cleanup_(freep) char *name = strndup(rest, (size_t) (e - rest));
                if (!name)
                        return -ENOMEM;
                if (*name)
                        k = kobject_find_child(k, name);
                rest = *e ? e + 1 : NULL;
        }
        if (!k)
                return -ENOENT;
        *ret = k;
        return 0;
}

/* "sda1", "sda/queue", "cciss!c0d0p1". */
static int resolve_name_path(const Model *m, const char *s, Kobject **ret)
{
        const char *e = strchrnul(s, '/');
        _cleanup_(freep) char *name = strndup(s, (size_t) (e - s));
        if (!name)
                return -ENOMEM;
        return walk(model_find_name(m, name), *e ? e + 1 : NULL, ret);
}

/* Only digits, a colon, digits: the only form that becomes a link name below dev/block. */
static bool parse_majmin(const char *s, size_t len)
{
        unsigned maj, min;
        char buf[32];

        if (len == 0 || len >= sizeof(buf))
                return false;
        memcpy(buf, s, len);
        buf[len] = 0;
        return parse_dev(buf, &maj, &min) == 0;
}

/* "8:1" or "8:1/queue": through the kernel's dev/block/MAJ:MIN link. */
static int resolve_majmin(const Sysfs *sysfs, const Model *m, const char *s, Kobject **ret)
{
        _cleanup_(freep) char *linkname = NULL, *target = NULL, *devpath = NULL;
        const char *e = strchrnul(s, '/');
        int fd, r;

        if (!parse_majmin(s, (size_t) (e - s)))
                return -ENOENT;
        linkname = strndup(s, (size_t) (e - s));
        if (!linkname)
                return -ENOMEM;
        fd = sysfs_open_dir(sysfs, "dev/block");
        if (fd < 0)
                return -ENOENT;
        r = sysfs_readlink(fd, linkname, &target);
        close(fd);
        if (r < 0)
                return -ENOENT;
        r = sysfs_resolve_relative("/dev/block", target, &devpath);
        if (r < 0)
                return -ENOENT;
        return walk(model_find_devpath(m, devpath), *e ? e + 1 : NULL, ret);
}

/* The path the kernel gives an open directory (/proc/self/fd), or NULL. */
static char *fd_path(int fd)
{
        char proc[64], buf[SPEC_MAX + 1];
        ssize_t n;

        (void) snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        n = readlink(proc, buf, sizeof(buf) - 1);
        if (n <= 0 || n >= (ssize_t) sizeof(buf) - 1)
                return NULL;
        buf[n] = 0;
        return strdup(buf);
}

/*
 * Any other directory below the sysfs root, with its links followed as sysfs follows them
 * (/sys/block/sda/device, sda/holders/dm-0, as udevadm info -p takes them): opened beneath the
 * root, so no link and no ".." leads out, and named by the path the kernel gives the directory.
 */
static int resolve_through_links(const Sysfs *sysfs, const Model *m, const char *rel, Kobject **ret)
{
        _cleanup_(closep) int fd = -EBADF;
        _cleanup_(freep) char *root = NULL, *dir = NULL;
        const char *devpath;
        Kobject *k;

        while (*rel == '/')
                rel++;
        if (!*rel)
                return -ENOENT;
        fd = sysfs_openat_beneath(sysfs->root_fd, rel, O_PATH | O_DIRECTORY, false);
        if (fd < 0)
                return -ENOENT;
        root = fd_path(sysfs->root_fd);
        dir = fd_path(fd);
        if (!root || !dir)
                return -ENOENT;
        /* Without openat2 a link may have led out: then the path is not below the root. */
        devpath = startswith(dir, streq(root, "/") ? "" : root);
        k = devpath && devpath[0] == '/' ? model_find_devpath(m, devpath) : NULL;
        if (!k)
                return -ENOENT;
        *ret = k;
        return 0;
}

/* A path below the sysfs root: "/devices/…", "/block/sda/queue", "/class/block/sda1", "/dev/block/8:1",
 * or any other way there through sysfs's links. */
static int resolve_sysfs_path(const Sysfs *sysfs, const Model *m, const char *p, Kobject **ret)
{
        _cleanup_(freep) char *clean = NULL;
        const char *rest;
        Kobject *k;
        size_t l;

        /* Trailing slashes are how shells complete directories. */
        clean = strdup(p);
        if (!clean)
                return -ENOMEM;
        l = strlen(clean);
        while (l > 1 && clean[l - 1] == '/')
                clean[--l] = 0;

        k = model_find_devpath(m, clean);
        if (k) {
                *ret = k;
                return 0;
        }
        if (streq(clean, "/block") || streq(clean, "/class/block")) {
                *ret = m->block_kset;
                return 0;
        }
        if ((rest = startswith(clean, "/block/")) || (rest = startswith(clean, "/class/block/"))) {
                if (resolve_name_path(m, rest, ret) == 0)
                        return 0;
        } else if ((rest = startswith(clean, "/dev/block/"))) {
                if (resolve_majmin(sysfs, m, rest, ret) == 0)
                        return 0;
        }
        return resolve_through_links(sysfs, m, clean, ret);
}

/*
 * /dev/disk/by-id/…, /dev/mapper/…, any link or node below /dev that lands on a block device:
 * its MAJ:MIN.  Followed with openat2(RESOLVE_BENEATH) from /dev, so neither the name nor any
 * link on the way can take us outside /dev; O_PATH opens no device.
 */
static int resolve_dev_node(const Sysfs *sysfs, const Model *m, const char *rest, Kobject **ret)
{
        _cleanup_(closep) int devfd = -1, fd = -1;
        char majmin[32];
        struct stat st;

        devfd = open("/dev", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (devfd < 0)
                return -ENOENT;
        fd = sysfs_openat_beneath(devfd, rest, O_PATH, false);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISBLK(st.st_mode))
                return -ENOENT;
        (void) snprintf(majmin, sizeof(majmin), "%u:%u", major(st.st_rdev), minor(st.st_rdev));
        return resolve_majmin(sysfs, m, majmin, ret);
}

int resolve_spec(const Sysfs *sysfs, const Model *m, const char *spec_in, Kobject **ret)
{
        _cleanup_(freep) char *squeezed = NULL;
        const char *rest, *spec = spec_in;
        size_t l = strlen(spec);

        if (l == 0 || l > SPEC_MAX)
                return -EINVAL;

        if (streq(spec, BLKMODEL_ROOT_PATH)) {
                *ret = NULL;
                return 0;
        }
        if (startswith(spec, BLKMODEL_ROOT_PATH "/")) {
                Kobject *k = model_find_path(m, spec);
                if (!k)
                        return -ENOENT;
                *ret = k;
                return 0;
        }
        /* "//sys//block/sda" is /sys/block/sda to the kernel and the shell (an object path has
         * no "//"). */
        if (strstr(spec, "//")) {
                squeezed = strdup(spec);
                if (!squeezed)
                        return -ENOMEM;
                path_squeeze_slashes(squeezed);
                spec = squeezed;
        }
        /* The configured root first, before /dev/: a fixture's may be below /dev/shm. */
        const char *root = sysfs->root;
        size_t rl = strlen(root);
        while (rl > 1 && root[rl - 1] == '/')
                rl--;
        if (rl > 1 && strncmp(spec, root, rl) == 0 && (spec[rl] == '/' || spec[rl] == 0))
                return resolve_sysfs_path(sysfs, m, spec[rl] ? spec + rl : "/", ret);
        if ((rest = startswith(spec, "/dev/"))) {
                /* /dev/cciss/c0d0 is the kernel's cciss!c0d0; /dev/block/8:1 is a MAJ:MIN link. */
                if (startswith(rest, "block/"))
                        return resolve_majmin(sysfs, m, rest + strlen("block/"), ret);
                _cleanup_(freep) char *name = kernel_name_of(rest);
                if (!name)
                        return -ENOMEM;
                Kobject *k = model_find_name(m, name);
                if (!k)
                        return resolve_dev_node(sysfs, m, rest, ret);
                *ret = k;
                return 0;
        }
        if ((rest = startswith(spec, "/sys/")))
                return resolve_sysfs_path(sysfs, m, rest - 1, ret);
        if (spec[0] == '/')
                return resolve_sysfs_path(sysfs, m, spec, ret);

        int r = resolve_majmin(sysfs, m, spec, ret);
        if (r != -ENOENT)
                return r;
        r = resolve_name_path(m, spec, ret);
        if (r != -ENOENT)
                return r;
        /* lsblk's NAME, and ours in `list`, writes cciss!c0d0 as cciss/c0d0: what a user copies. */
        if (strchr(spec, '/')) {
                _cleanup_(freep) char *name = kernel_name_of(spec);
                if (!name)
                        return -ENOMEM;
                Kobject *k = model_find_name(m, name);
                if (k) {
                        *ret = k;
                        return 0;
                }
        }
        /* The ksets by their names, as /sys/block and /sys/devices name them (a disk of that name
         * came first). */
        if (streq(spec, "block") || streq(spec, "devices")) {
                *ret = streq(spec, "block") ? m->block_kset : m->devices_kset;
                return 0;
        }
        /* "sda/device", "dm-0/slaves/sda": the name's directory, then its links. */
        _cleanup_(freep) char *below = NULL;
        if (asprintf(&below, "/class/block/%s", spec) < 0)
                return -ENOMEM;
        return resolve_through_links(sysfs, m, below, ret);
}
