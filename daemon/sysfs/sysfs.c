/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "common/utf8.h"
#include "common/util.h"
#include "sysfs/sysfs.h"

/* Read and written from the loop and from workers (Set's writes, prefetches): atomic. */
static bool have_openat2 = true;

int sysfs_openat_beneath(int dirfd, const char *path, int flags, bool no_symlinks)
{
        if (__atomic_load_n(&have_openat2, __ATOMIC_RELAXED)) {
                struct open_how how = {
                                .flags = (uint64_t) flags | O_CLOEXEC,
                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
                                           (no_symlinks ? RESOLVE_NO_SYMLINKS : 0),
                };
                int fd = (int) syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
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

static bool on_kernfs(int fd)
{
        struct statfs sfs;

        return fstatfs(fd, &sfs) >= 0 && sfs.f_type == SYSFS_MAGIC;
}

int sysfs_open(const char *root, Sysfs *ret)
{
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        char *r = strdup(root);
        if (!r) {
                close(fd);
                return -ENOMEM;
        }
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

/* 1 with the next raw entry, 0 at the end, negative errno. */
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

/* Escapes len bytes of buf (its trailing newline already off) into out, which holds len * 4 + 1;
 * returns the length written, without the NUL it ends with. */
static size_t value_escape_into(const char *buf, size_t len, char *out)
{
        const unsigned char *s = (const unsigned char *) buf;
        char *q = out;

        for (size_t i = 0; i < len;) {
                size_t n;
                if (utf8_valid_prefix(s + i, len - i, &n)) {
                        memcpy(q, s + i, n);
                        q += n;
                        i += n;
                } else {
                        q += sprintf(q, "\\x%02x", s[i]);
                        i++;
                }
        }
        *q = 0;
        return (size_t) (q - out);
}

static char *heap_strndup(const char *s, size_t n, void *userdata)
{
        return strndup(s, n);
}

/* Out of line: its buffer is four pages of stack that a worker reading plain text never touches,
 * and whose pages would stay resident in each of them if the common path's callees ran below it. */
static __attribute__((noinline)) char *value_escape_copy(const char *buf, size_t len, SysfsStrndup dup,
                                                         void *userdata)
{
        _cleanup_(freep) char *heap = NULL;
        char stack[SYSFS_VALUE_MAX * 4 + 1], *escaped = stack;

        if (len > SYSFS_VALUE_MAX) {
                escaped = heap = malloc(len * 4 + 1);
                if (!heap)
                        return NULL;
        }
        return dup(escaped, value_escape_into(buf, len, escaped), userdata);
}

/* The value of len bytes read, as published, copied by dup. */
static char *value_copy(const char *buf, size_t len, SysfsStrndup dup, void *userdata)
{
        if (len > 0 && buf[len - 1] == '\n')
                len--;
        /* Nearly every value is plain text: copied once, straight into its final home (for a
         * GetManagedObjects on a worker, its batch's pool: no malloc, no arena lock). */
        if (utf8_is_valid_n(buf, len))
                return dup(buf, len, userdata);
        return value_escape_copy(buf, len, dup, userdata);
}

char *sysfs_value_escape(const char *buf, size_t len)
{
        return value_copy(buf, len, heap_strndup, NULL);
}

static int read_fd(int fd, SysfsStrndup dup, void *userdata, char **ret)
{
        char buf[SYSFS_VALUE_MAX];
        size_t len = 0;

        while (len < sizeof(buf)) {
                ssize_t k = read(fd, buf + len, sizeof(buf) - len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        /* A FIFO with no writer, opened non-blocking: nothing to read. */
                        if (errno == EAGAIN)
                                break;
                        return -errno;
                }
                if (k == 0)
                        break;
                len += (size_t) k;
                /* kernfs hands over a whole attribute in one read, and a file ends where a read
                 * comes up short: no second read() just to see 0. */
                if (len < sizeof(buf))
                        break;
        }
        *ret = value_copy(buf, len, dup, userdata);
        return *ret ? 0 : -ENOMEM;
}

static int read_attr(int dirfd, const char *name, bool kernfs, SysfsStrndup dup, void *userdata, char **ret)
{
        int fd, r;

        fd = sysfs_openat_beneath(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY, true);
        if (fd == -EACCES) {
                /* kernfs refuses to open write-only attributes (remove, rescan) for reading:
                 * they have no value to show. */
                int mode = sysfs_file_mode(dirfd, name);
                if (mode >= 0 && !(mode & 0444)) {
                        *ret = dup("", 0, userdata);
                        return *ret ? 0 : -ENOMEM;
                }
        }
        if (fd < 0)
                return fd;
        /* Elsewhere (a fixture) root opens a mode-000 file all the same (CAP_DAC_OVERRIDE): a file
         * without read permission bits reads as "" for everyone, as on kernfs (doc/model.md).  On
         * kernfs the open above refused it already: no fstat for each of the 150,000 files. */
        struct stat st;
        if (!kernfs && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && !(st.st_mode & 0444)) {
                close(fd);
                *ret = dup("", 0, userdata);
                return *ret ? 0 : -ENOMEM;
        }
        r = read_fd(fd, dup, userdata, ret);
        close(fd);
        return r;
}

int sysfs_read_attr(int dirfd, const char *name, bool kernfs, char **ret)
{
        return read_attr(dirfd, name, kernfs, heap_strndup, NULL, ret);
}

static int read_link_names(int dirfd, const char *name, SysfsStrndup dup, void *userdata, char **ret)
{
        SysfsEntry *e = NULL;
        size_t n = 0, size = 1;
        _cleanup_(freep) char *s = NULL;
        char *p;
        int fd = sysfs_open_subdir(dirfd, name);

        if (fd >= 0) {
                if (sysfs_list(fd, &e, &n) < 0)
                        n = 0;
                (void) close(fd);
        }
        for (size_t i = 0; i < n; i++)
                size += strlen(e[i].name) + 1;
        s = p = malloc(size);
        for (size_t i = 0; s && i < n; i++)
                p = stpcpy(stpcpy(p, e[i].name), i + 1 < n ? "\n" : "");
        sysfs_entries_free(e, n);
        if (!s)
                return -ENOMEM;
        *p = 0;
        *ret = dup == heap_strndup ? TAKE_PTR(s) : dup(s, (size_t) (p - s), userdata);
        return *ret ? 0 : -ENOMEM;
}

static int read_link_basename(int dirfd, const char *name, SysfsStrndup dup, void *userdata, char **ret)
{
        _cleanup_(freep) char *target = NULL;
        const char *base = "", *slash;

        if (sysfs_readlink(dirfd, name, &target) >= 0) {
                slash = strrchr(target, '/');
                base = slash ? slash + 1 : target;
        }
        *ret = dup(base, strlen(base), userdata);
        return *ret ? 0 : -ENOMEM;
}

int sysfs_read_source_dup(int dirfd, const char *source, bool kernfs, SysfsStrndup dup, void *userdata,
                          char **ret)
{
        size_t l = strlen(source);
        char name[NAME_MAX + 1];

        if (l < 2 || (source[l - 1] != '/' && source[l - 1] != '@'))
                return read_attr(dirfd, source, kernfs, dup, userdata, ret);
        if (l - 1 > NAME_MAX)
                return -ENAMETOOLONG;
        memcpy(name, source, l - 1);
        name[l - 1] = 0;
        return source[l - 1] == '/' ? read_link_names(dirfd, name, dup, userdata, ret)
                                    : read_link_basename(dirfd, name, dup, userdata, ret);
}

int sysfs_read_source(int dirfd, const char *source, bool kernfs, char **ret)
{
        return sysfs_read_source_dup(dirfd, source, kernfs, heap_strndup, NULL, ret);
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

int sysfs_read_attr_at(const Sysfs *s, const char *relpath, char **ret)
{
        while (*relpath == '/')
                relpath++;
        return sysfs_read_attr(s->root_fd, relpath, s->kernfs, ret);
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
