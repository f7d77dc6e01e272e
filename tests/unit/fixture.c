/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "fixture.h"

#ifndef FIXTURE_PYTHON
#define FIXTURE_PYTHON "/usr/bin/python3"
#endif

static char *fixture_path(const Fixture *f, const char *rel)
{
        while (*rel == '/')
                rel++;
        return path_join(f->root, rel);
}

const char *fixture_tmpdir(void)
{
        const char *d = getenv("BLKMODEL_TEST_TMPDIR");
        struct statvfs st;

        if (d)
                return d;
        /* Room for large trees: a container's /dev/shm may have 64 MB. */
        if (access("/dev/shm", W_OK) == 0 && statvfs("/dev/shm", &st) == 0 &&
            (uint64_t) st.f_bavail * st.f_frsize >= UINT64_C(1) << 30 && st.f_favail >= 1000000)
                return "/dev/shm";
        return "/tmp";
}

int fixture_new(Fixture *ret)
{
        return fixture_new_in(fixture_tmpdir(), ret);
}

int fixture_new_in(const char *tmpdir, Fixture *ret)
{
        _cleanup_(freep) char *dir = path_join(tmpdir, "blkmodel-unit-XXXXXX"), *root = NULL, *cmd = NULL;
        const char *script = getenv("BLKMODEL_MKSYSFS");
        int status;

        /* The script's place is compiled in; the environment may point elsewhere (an installed
         * fuzzer run away from the source tree). */
        if (!script)
                script = FIXTURE_MKSYSFS;
        if (!dir)
                return -ENOMEM;
        if (!mkdtemp(dir))
                return -errno;
        if (asprintf(&cmd, "'%s' '%s' '%s' >/dev/null", FIXTURE_PYTHON, script, dir) < 0)
                return -ENOMEM;
        status = system(cmd);
        if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                Fixture partial = {.dir = TAKE_PTR(dir), .root = NULL};
                fixture_done(&partial);
                return -EIO;
        }
        root = path_join(dir, "sys");
        if (!root)
                return -ENOMEM;
        *ret = (Fixture){.dir = TAKE_PTR(dir), .root = TAKE_PTR(root)};
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

static int rm_rf(const char *path)
{
        struct stat st;

        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(st.st_mode))
                return unlink(path) < 0 ? -errno : 0;
        /* Depth first, never through a link: the tree is full of links to its own directories. */
        return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 ? -errno : 0;
}

void fixture_done(Fixture *f)
{
        if (f->dir)
                (void) rm_rf(f->dir);
        free(f->dir);
        free(f->root);
        *f = (Fixture){};
}

/* A new file gets mode; an old one keeps its own. */
static int write_mode(const Fixture *f, const char *rel, const char *value, mode_t mode)
{
        _cleanup_(freep) char *p = fixture_path(f, rel);
        size_t l = strlen(value);
        int fd;
        ssize_t k;

        if (!p)
                return -ENOMEM;
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (fd >= 0 && fchmod(fd, mode) < 0) {
                close(fd);
                return -errno;
        }
        if (fd < 0)
                return -errno;
        k = write(fd, value, l);
        if (k < 0)
                k = -errno;
        close(fd);
        if (k < 0)
                return (int) k;
        return (size_t) k == l ? 0 : -EIO;
}

int fixture_write(const Fixture *f, const char *rel, const char *value)
{
        _cleanup_(freep) char *p = fixture_path(f, rel);
        struct stat st;

        if (!p)
                return -ENOMEM;
        return write_mode(f, rel, value, lstat(p, &st) >= 0 ? st.st_mode & 07777 : 0644);
}

/* mkdir -p of the directory that holds path. */
static int mkdir_parents(const char *path)
{
        _cleanup_(freep) char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *slash = strchr(p + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = 0;
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *slash = '/';
        }
        return 0;
}

int fixture_mkdir(const Fixture *f, const char *rel)
{
        _cleanup_(freep) char *p = fixture_path(f, rel);

        if (!p)
                return -ENOMEM;
        return mkdir(p, 0755) < 0 ? -errno : 0;
}

/* The target relative to the directory that holds the link: as many ".." as that directory has
 * elements beyond what both share, then the rest of the target. */
static char *relative_target(const char *link_rel, const char *target_rel)
{
        size_t common = 0, ups = 0;
        char *out, *q;

        while (*link_rel == '/')
                link_rel++;
        while (*target_rel == '/')
                target_rel++;
        for (size_t i = 0; link_rel[i] && link_rel[i] == target_rel[i]; i++)
                if (link_rel[i] == '/')
                        common = i + 1;
        for (const char *c = link_rel + common; *c; c++)
                ups += *c == '/';

        out = malloc(ups * 3 + strlen(target_rel + common) + 1);
        if (!out)
                return NULL;
        q = out;
        for (size_t i = 0; i < ups; i++)
                q = stpcpy(q, "../");
        strcpy(q, target_rel + common);
        return out;
}

int fixture_link(const Fixture *f, const char *rel, const char *target_rel)
{
        _cleanup_(freep) char *p = fixture_path(f, rel), *target = relative_target(rel, target_rel);

        if (!p || !target)
                return -ENOMEM;
        if (unlink(p) < 0 && errno != ENOENT)
                return -errno;
        return symlink(target, p) < 0 ? -errno : 0;
}

int fixture_remove(const Fixture *f, const char *rel)
{
        _cleanup_(freep) char *p = fixture_path(f, rel);

        if (!p)
                return -ENOMEM;
        return rm_rf(p);
}

/* Modes as the kernel gives them: one attribute has one mode wherever it appears, and the daemon
 * relies on that (model/shape.h). */
#define RO 0444
#define RW 0644

typedef struct FileValue {
        const char *name;
        char *value; /* NULL: out of memory */
        mode_t mode;
} FileValue;

static void file_values_free(FileValue *files, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(files[i].value);
}

static int write_files(const Fixture *f, const char *dir, const FileValue *files, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                _cleanup_(freep) char *rel = path_join(dir, files[i].name);
                int r = rel && files[i].value ? write_mode(f, rel, files[i].value, files[i].mode) : -ENOMEM;
                if (r < 0)
                        return r;
        }
        return 0;
}

static const char *basename_of(const char *path)
{
        const char *s = strrchr(path, '/');
        return s ? s + 1 : path;
}

static int farm_links(const Fixture *f, const char *devpath, const char *name, unsigned major,
                      unsigned minor, bool disk)
{
        _cleanup_(freep) char *class_link = path_join("class/block", name), *dev_link = NULL,
                              *block_link = path_join("block", name);
        int r;

        if (!class_link || !block_link || asprintf(&dev_link, "dev/block/%u:%u", major, minor) < 0)
                return -ENOMEM;
        r = fixture_link(f, class_link, devpath);
        if (r >= 0)
                r = fixture_link(f, dev_link, devpath);
        if (r >= 0 && disk)
                r = fixture_link(f, block_link, devpath);
        return r;
}

static char *strdupf(const char *fmt, ...) _printf_(1, 2);
static char *strdupf(const char *fmt, ...)
{
        va_list ap;
        char *s;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&s, fmt, ap);
        va_end(ap);
        return k < 0 ? NULL : s;
}

int fixture_add_partition(const Fixture *f, const char *disk_devpath, const char *name, unsigned major,
                          unsigned minor, unsigned partn, uint64_t start, uint64_t size)
{
        _cleanup_(freep) char *devpath = path_join(disk_devpath, name), *holders = NULL;
        FileValue files[] = {
                        {"uevent",
                         strdupf("MAJOR=%u\nMINOR=%u\nDEVNAME=%s\nDEVTYPE=partition\nDISKSEQ=1\nPARTN=%u\n",
                                 major, minor, name, partn),
                         RW},
                        {"alignment_offset", strdupf("0\n"), RO},
                        {"dev", strdupf("%u:%u\n", major, minor), RO},
                        {"discard_alignment", strdupf("0\n"), RO},
                        {"inflight", strdupf("%8d %8d\n", 0, 0), RO},
                        {"partition", strdupf("%u\n", partn), RO},
                        {"ro", strdupf("0\n"), RO},
                        {"size", strdupf("%" PRIu64 "\n", size), RO},
                        {"start", strdupf("%" PRIu64 "\n", start), RO},
                        {"stat", strdupf("0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"), RO},
        };
        int r;

        holders = devpath ? path_join(devpath, "holders") : NULL;
        r = holders ? fixture_mkdir(f, devpath) : -ENOMEM;
        if (r >= 0)
                r = fixture_mkdir(f, holders);
        if (r >= 0)
                r = write_files(f, devpath, files, ELEMENTSOF(files));
        if (r >= 0)
                r = farm_links(f, devpath, name, major, minor, false);
        file_values_free(files, ELEMENTSOF(files));
        return r;
}

int fixture_add_disk(const Fixture *f, const char *devpath, unsigned major, unsigned minor, uint64_t size)
{
        _cleanup_(freep) char *queue = NULL, *holders = NULL, *slaves = NULL, *full = NULL;
        const char *name = basename_of(devpath);
        FileValue files[] = {
                        {"uevent",
                         strdupf("MAJOR=%u\nMINOR=%u\nDEVNAME=%s\nDEVTYPE=disk\nDISKSEQ=9\n", major, minor,
                                 name),
                         RW},
                        {"dev", strdupf("%u:%u\n", major, minor), RO},
                        {"ext_range", strdupf("1\n"), RO},
                        {"inflight", strdupf("%8d %8d\n", 0, 0), RO},
                        {"range", strdupf("1\n"), RO},
                        {"removable", strdupf("0\n"), RO},
                        {"ro", strdupf("0\n"), RO},
                        {"size", strdupf("%" PRIu64 "\n", size), RO},
                        {"stat", strdupf("0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"), RO},
        };
        FileValue queue_files[] = {
                        {"logical_block_size", strdupf("512\n"), RO},
                        {"read_ahead_kb", strdupf("128\n"), RW},
                        {"rotational", strdupf("0\n"), RW},
                        {"scheduler", strdupf("none\n"), RW},
        };
        int r;

        queue = path_join(devpath, "queue");
        holders = path_join(devpath, "holders");
        slaves = path_join(devpath, "slaves");
        full = fixture_path(f, devpath);
        r = queue && holders && slaves && full ? mkdir_parents(full) : -ENOMEM;
        if (r >= 0)
                r = fixture_mkdir(f, devpath);
        if (r >= 0)
                r = fixture_mkdir(f, queue);
        if (r >= 0)
                r = fixture_mkdir(f, holders);
        if (r >= 0)
                r = fixture_mkdir(f, slaves);
        if (r >= 0)
                r = write_files(f, devpath, files, ELEMENTSOF(files));
        if (r >= 0)
                r = write_files(f, queue, queue_files, ELEMENTSOF(queue_files));
        if (r >= 0)
                r = farm_links(f, devpath, name, major, minor, true);
        file_values_free(files, ELEMENTSOF(files));
        file_values_free(queue_files, ELEMENTSOF(queue_files));
        return r;
}

int fixture_remove_block_device(const Fixture *f, const char *devpath, unsigned major, unsigned minor)
{
        _cleanup_(freep) char *class_link = path_join("class/block", basename_of(devpath)), *dev_link = NULL,
                              *block_link = path_join("block", basename_of(devpath));
        int r;

        if (!class_link || !block_link || asprintf(&dev_link, "dev/block/%u:%u", major, minor) < 0)
                return -ENOMEM;
        /* The links first, as the kernel's device_del() does before the directory goes. */
        r = fixture_remove(f, class_link);
        if (r >= 0)
                r = fixture_remove(f, dev_link);
        if (r >= 0)
                r = fixture_remove(f, block_link);
        if (r >= 0)
                r = fixture_remove(f, devpath);
        return r;
}
