/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "common/util.h"
#include "sysfs/sysfs.h"

/* Read and written from the loop and from workers (Set's writes, prefetches): atomic. */
static bool have_openat2 = true;
/* Set by sysfs_drop_dac_override() before any thread starts, only read after. */
static bool opens_check_modes, may_raise_override;

/* How often an openat2() the kernel could not check for a concurrent rename (EAGAIN) is tried
 * again: each try takes microseconds; a rename storm that defeats this many is passed on. */
#define OPENAT2_EAGAIN_RETRIES 128u

#define DAC_OVERRIDE_CAPS ((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH))

/* A name that can only be an entry of the directory itself: one component, not "..". */
static bool one_entry(const char *path)
{
        return !strchr(path, '/') && !streq(path, "..") && !isempty(path);
}

int sysfs_openat_beneath(int dirfd, const char *path, int flags, bool no_symlinks)
{
        /* One entry, no link followed: O_NOFOLLOW confines it as RESOLVE_BENEATH would (a magic
         * link is a symlink too), and openat2's resolve checks cost 2-7 % of reading every
         * attribute at a cold start (bench/read-floor, one thread, the files of 1,000 loops).  Not
         * with O_PATH, which opens a symlink itself rather than refusing it. */
        if (no_symlinks && !(flags & O_PATH) && one_entry(path)) {
                int fd = openat(dirfd, path, flags | O_CLOEXEC | O_NOFOLLOW);
                return fd >= 0 ? fd : -errno;
        }
        if (__atomic_load_n(&have_openat2, __ATOMIC_RELAXED)) {
                struct open_how how = {
                                .flags = (uint64_t) flags | O_CLOEXEC,
                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
                                           (no_symlinks ? RESOLVE_NO_SYMLINKS : 0),
                };
                int fd;

                /* EAGAIN: a ".." was walked (a link of sysfs's, "../../devices/...") while something
                 * anywhere on the system renamed a file or changed a mount, so the kernel could not
                 * tell that it stayed beneath dirfd.  Nothing is wrong with the path: openat2(2) says
                 * to retry.  Not passed on as if the path were not there (Resolve of "sda/device"
                 * answered NoSuchObject while another program renamed files). */
                for (unsigned attempt = 0;; attempt++) {
                        fd = (int) syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
                        if (fd >= 0 || errno != EAGAIN || attempt >= OPENAT2_EAGAIN_RETRIES)
                                break;
                }
                if (fd >= 0)
                        return fd;
                if (errno != ENOSYS)
                        return -errno;
                __atomic_store_n(&have_openat2, false, __ATOMIC_RELAXED);
        }
        if (path[0] == '/' || strstr(path, ".."))
                return -EXDEV;
        int fd = openat(dirfd, path, flags | O_CLOEXEC | (no_symlinks ? O_NOFOLLOW : 0));
        return fd >= 0 ? fd : -errno;
}

/* The calling thread's effective set only: capset() never touches another thread's. */
static int set_dac_override(bool on, bool *ret_had)
{
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        if (ret_had)
                *ret_had = d[0].effective & DAC_OVERRIDE_CAPS;
        if (on)
                d[0].effective |= d[0].permitted & DAC_OVERRIDE_CAPS;
        else
                d[0].effective &= ~DAC_OVERRIDE_CAPS;
        return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

int sysfs_drop_dac_override(void)
{
        bool had = false;
        int r = set_dac_override(false, &had);

        if (r < 0)
                return r;
        opens_check_modes = true;
        may_raise_override = had;
        return had;
}

bool sysfs_opens_check_modes(void)
{
        return opens_check_modes;
}

int sysfs_openat_overriding(int dirfd, const char *name, int flags)
{
        int fd;

        if (!may_raise_override || set_dac_override(true, NULL) < 0)
                return -EACCES;
        fd = sysfs_openat_beneath(dirfd, name, flags, true);
        /* Dropping from the effective set needs no privilege: it cannot fail for want of one. */
        (void) set_dac_override(false, NULL);
        return fd;
}

static bool on_kernfs(int fd)
{
        struct statfs sfs;

        return fstatfs(fd, &sfs) >= 0 && sfs.f_type == SYSFS_MAGIC;
}

int sysfs_open(const char *root, Sysfs *ret)
{
        _cleanup_(freep) char *cwd = NULL;
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* Absolute: a replaced root is opened again by its path, and SysfsRoot is read by clients
         * with a working directory of their own. */
        if (root[0] != '/' && !(cwd = get_current_dir_name())) {
                int e = errno;
                close(fd);
                return -e;
        }
        char *r = cwd ? path_join(cwd, root) : strdup(root);
        if (!r) {
                close(fd);
                return -ENOMEM;
        }
        /* As clients compare it with paths: "/tmp/x//sys/" is /tmp/x/sys. */
        path_squeeze_slashes(r);
        *ret = (Sysfs){.root_fd = fd, .root = r, .kernfs = on_kernfs(fd)};
        return 0;
}

int sysfs_reopen_if_replaced(Sysfs *s)
{
        struct stat now, ours;
        int fd;

        if (stat(s->root, &now) < 0)
                return -errno;
        if (fstat(s->root_fd, &ours) >= 0 && ours.st_dev == now.st_dev && ours.st_ino == now.st_ino &&
            ours.st_nlink > 0)
                return 0;
        fd = open(s->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        (void) close(s->root_fd);
        s->root_fd = fd;
        s->kernfs = on_kernfs(fd);
        return 1;
}

void sysfs_close(Sysfs *s)
{
        if (s->root_fd >= 0)
                close(s->root_fd);
        free(s->root);
        *s = (Sysfs){.root_fd = -1};
}

int sysfs_open_dir(const Sysfs *s, const char *relpath)
{
        while (*relpath == '/')
                relpath++;
        if (!*relpath) {
                int fd = fcntl(s->root_fd, F_DUPFD_CLOEXEC, 3);
                return fd < 0 ? -errno : fd;
        }
        return sysfs_openat_beneath(s->root_fd, relpath, O_RDONLY | O_DIRECTORY, true);
}

int sysfs_open_subdir(int dirfd, const char *name)
{
        return sysfs_openat_beneath(dirfd, name, O_RDONLY | O_DIRECTORY, true);
}

static int entry_cmp(const void *a, const void *b)
{
        return strcmp(((const SysfsEntry *) a)->name, ((const SysfsEntry *) b)->name);
}

void sysfs_entries_free(SysfsEntry *e, size_t n)
{
        free(e); /* the names are in the same allocation */
}

/* What an entry is; negative errno when it vanished meanwhile. */
static int entry_type(int dirfd, const struct dirent64 *de)
{
        /* kernfs fills d_type; the stat is for trees on file systems that don't.
         * No stat per file otherwise: a scan of 10,000 disks lists a million. */
        unsigned char dt = de->d_type;
        struct stat st;

        if (dt == DT_UNKNOWN) {
                if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                dt = S_ISREG(st.st_mode)   ? DT_REG
                     : S_ISDIR(st.st_mode) ? DT_DIR
                     : S_ISLNK(st.st_mode) ? DT_LNK
                                           : DT_FIFO;
        }
        return dt == DT_REG   ? SYSFS_ENTRY_FILE
               : dt == DT_DIR ? SYSFS_ENTRY_DIR
               : dt == DT_LNK ? SYSFS_ENTRY_LINK
                              : SYSFS_ENTRY_OTHER;
}

/* Not glibc's DIR: fdopendir() on a copy of the fd costs a dup, three fcntl and an fstat per
 * directory, a third of the scan's system calls (31,500 directories for 1,000 disks). */
struct SysfsDir {
        int fd;
        size_t pos, len;
        _Alignas(struct dirent64) char buf[8192]; /* a sysfs directory at once; class/block in a few */
};

static void dir_init(SysfsDir *d, int dirfd)
{
        d->fd = dirfd;
        d->pos = d->len = 0;
}

int sysfs_opendir(int dirfd, SysfsDir **ret)
{
        SysfsDir *d;

        if (lseek(dirfd, 0, SEEK_SET) < 0)
                return -errno;
        d = malloc(sizeof(SysfsDir));
        if (!d)
                return -ENOMEM;
        dir_init(d, dirfd);
        *ret = d;
        return 0;
}

SysfsDir *sysfs_closedir(SysfsDir *d)
{
        return mfree(d);
}

/* 1 with the next raw entry, 0 at the end, negative errno.  Only a getdents64 that returns 0 ends a
 * directory: kernfs also stops short when a signal is pending (filldir64()), and a listing that took
 * a short read for the end lost files to every SIGHUP's rescan. */
static int next_entry(SysfsDir *d, struct dirent64 **ret)
{
        if (d->pos >= d->len) {
                ssize_t n = getdents64(d->fd, d->buf, sizeof(d->buf));
                if (n <= 0)
                        return n < 0 ? -errno : 0;
                d->pos = 0;
                d->len = (size_t) n;
        }
        *ret = (struct dirent64 *) (d->buf + d->pos);
        d->pos += (*ret)->d_reclen;
        return 1;
}

int sysfs_readdir(SysfsDir *d, const char **ret_name, SysfsEntryType *ret_type)
{
        struct dirent64 *de = NULL;
        int r, type;

        for (;;) {
                r = next_entry(d, &de);
                if (r <= 0)
                        return r;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                type = entry_type(d->fd, de);
                if (type < 0)
                        continue; /* vanished meanwhile */
                *ret_name = de->d_name;
                *ret_type = (SysfsEntryType) type;
                return 1;
        }
}

typedef struct ListedName {
        size_t offset; /* in the names */
        SysfsEntryType type;
} ListedName;

/* Doubles a buffer that starts out on the caller's stack (*heap NULL while it is still there). */
static int grow(void **buf, void **heap, size_t *allocated, size_t size)
{
        void *p = realloc(*heap, *allocated * 2 * size);

        if (!p)
                return -ENOMEM;
        if (!*heap)
                memcpy(p, *buf, *allocated * size);
        *heap = *buf = p;
        *allocated *= 2;
        return 0;
}

static void *heap_alloc(size_t size, void *userdata)
{
        return malloc(size);
}

/*
 * The entries and their names in one allocation, gathered on the stack: a scan lists 31,500
 * directories for 1,000 disks, and a malloc per name made the heap's lock the bottleneck once helper
 * threads listed beside the loop thread (issue 12).
 */
int sysfs_list_alloc(int dirfd, SysfsAlloc alloc, void *userdata, SysfsEntry **ret, size_t *ret_n)
{
        /* Enough for a queue directory; the stack's pages stay resident, so no more. */
        ListedName stack_listed[128];
        char stack_names[4096];
        _cleanup_(freep) void *heap_listed = NULL, *heap_names = NULL;
        ListedName *listed = stack_listed;
        char *names = stack_names;
        size_t n = 0, n_allocated = ELEMENTSOF(stack_listed), len = 0, len_allocated = sizeof(stack_names);
        SysfsEntryType type;
        const char *name;
        SysfsEntry *e;
        SysfsDir d;
        int r;

        dir_init(&d, dirfd);
        while ((r = sysfs_readdir(&d, &name, &type)) > 0) {
                size_t size = strlen(name) + 1;
                if (n == n_allocated &&
                    grow((void **) &listed, &heap_listed, &n_allocated, sizeof(ListedName)) < 0)
                        return -ENOMEM;
                while (len + size > len_allocated)
                        if (grow((void **) &names, &heap_names, &len_allocated, 1) < 0)
                                return -ENOMEM;
                memcpy(names + len, name, size);
                listed[n++] = (ListedName){.offset = len, .type = type};
                len += size;
        }
        if (r < 0)
                return r;

        e = alloc(n * sizeof(SysfsEntry) + len + 1, userdata);
        if (!e)
                return -ENOMEM;
        char *copy = memcpy((char *) (e + n), names, len);
        for (size_t i = 0; i < n; i++)
                e[i] = (SysfsEntry){.name = copy + listed[i].offset, .type = listed[i].type};
        if (n > 1)
                qsort(e, n, sizeof(SysfsEntry), entry_cmp);
        *ret = e;
        *ret_n = n;
        return 0;
}

int sysfs_list(int dirfd, SysfsEntry **ret, size_t *ret_n)
{
        return sysfs_list_alloc(dirfd, heap_alloc, NULL, ret, ret_n);
}

bool sysfs_has_file(int dirfd, const char *name)
{
        struct stat st;
        return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

int sysfs_file_mode(int dirfd, const char *name)
{
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        return (int) (st.st_mode & 07777);
}

int sysfs_write_attr(int dirfd, const char *name, const char *value)
{
        size_t l = strlen(value);
        ssize_t k;
        int fd;

        /* kernfs takes the whole value in the first write(), and nothing past a page. */
        if (l > 4096)
                return -E2BIG;
        /* O_TRUNC: a no-op on kernfs, but what a plain file (a fixture) needs to end up holding exactly
         * value. */
        fd = sysfs_openat_beneath(dirfd, name, O_WRONLY | O_TRUNC | O_NOCTTY | O_NONBLOCK, true);
        if (fd == -EACCES) {
                int mode = sysfs_file_mode(dirfd, name);
                if (mode >= 0 && (mode & 0222))
                        fd = sysfs_openat_overriding(dirfd, name,
                                                     O_WRONLY | O_TRUNC | O_NOCTTY | O_NONBLOCK);
        }
        if (fd < 0)
                return fd;
        k = write(fd, value, l);
        if (k < 0)
                k = -errno;
        close(fd);
        if (k < 0)
                return (int) k;
        return (size_t) k == l ? 0 : -EIO;
}

int sysfs_readlink(int dirfd, const char *name, char **ret)
{
        char buf[4096];
        ssize_t k = readlinkat(dirfd, name, buf, sizeof(buf) - 1);
        if (k < 0)
                return -errno;
        if ((size_t) k >= sizeof(buf) - 1)
                return -ENAMETOOLONG;
        buf[k] = 0;
        char *t = strdup(buf);
        if (!t)
                return -ENOMEM;
        *ret = t;
        return 0;
}

int sysfs_link_leads(const Sysfs *s, const char *relpath, char **ret_target)
{
        int fd;

        while (*relpath == '/')
                relpath++;
        *ret_target = NULL;
        (void) sysfs_readlink(s->root_fd, relpath, ret_target);
        /* O_PATH: no link refused, and nothing opened for reading. */
        fd = sysfs_openat_beneath(s->root_fd, relpath, O_PATH, false);
        if (fd >= 0) {
                (void) close(fd);
                return 1;
        }
        return fd == -ENOENT ? 0 : fd;
}

int sysfs_resolve_relative(const char *base_dir, const char *target, char **ret)
{
        size_t lb = strlen(base_dir), lt = strlen(target);
        char *out, *q;
        const char *p;

        /* Absolute link targets don't occur in sysfs; refusing them keeps us below the root. */
        if (target[0] == '/')
                return -EINVAL;

        out = malloc(lb + lt + 3);
        if (!out)
                return -ENOMEM;
        memcpy(out, base_dir, lb);
        q = out + lb;
        while (q > out && q[-1] == '/')
                q--;

        for (p = target; *p;) {
                const char *e = strchrnul(p, '/');
                size_t l = (size_t) (e - p);

                if (l == 0 || (l == 1 && p[0] == '.'))
                        ;
                else if (l == 2 && p[0] == '.' && p[1] == '.') {
                        if (q == out) {
                                free(out);
                                return -EINVAL;
                        }
                        while (q > out && q[-1] != '/')
                                q--;
                        if (q > out)
                                q--;
                } else {
                        *q++ = '/';
                        memcpy(q, p, l);
                        q += l;
                }
                p = *e ? e + 1 : e;
        }
        *q = 0;
        if (q == out) {
                free(out);
                return -EINVAL;
        }
        *ret = out;
        return 0;
}
