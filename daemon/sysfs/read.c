/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include "common/utf8.h"
#include "common/util.h"
#include "sysfs/read.h"
#include "sysfs/values.h"

static char *heap_strndup(const char *s, size_t n, void *userdata)
{
        return strndup(s, n);
}

static int copy_out(const char *s, size_t n, SysfsStrndup dup, void *userdata, char **ret)
{
        *ret = dup(s, n, userdata);
        return *ret ? 0 : -ENOMEM;
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
        return dup(escaped, utf8_escape_into(buf, len, escaped), userdata);
}

/* len bytes as published, whole, copied by dup. */
static char *text_copy(const char *buf, size_t len, SysfsStrndup dup, void *userdata)
{
        /* Nearly every value is plain text: copied once, straight into its final home (for a
         * GetManagedObjects on a worker, its batch's pool: no malloc, no arena lock). */
        if (utf8_is_valid_n(buf, len))
                return dup(buf, len, userdata);
        return value_escape_copy(buf, len, dup, userdata);
}

/* The value of len bytes read, as published, copied by dup. */
static char *value_copy(const char *buf, size_t len, SysfsStrndup dup, void *userdata)
{
        if (len > 0 && buf[len - 1] == '\n')
                len--;
        return text_copy(buf, len, dup, userdata);
}

char *sysfs_value_dup(const char *buf, size_t len, SysfsStrndup dup, void *userdata)
{
        return value_copy(buf, len, dup, userdata);
}

char *sysfs_value_escape(const char *buf, size_t len)
{
        return value_copy(buf, len, heap_strndup, NULL);
}

static bool is_fifo(int fd)
{
        struct stat st;

        return fstat(fd, &st) >= 0 && S_ISFIFO(st.st_mode);
}

static int read_fd(int fd, SysfsStrndup dup, void *userdata, char **ret)
{
        char buf[SYSFS_VALUE_MAX];
        size_t len = 0;

        while (len < sizeof(buf)) {
                ssize_t k = read(fd, buf + len, sizeof(buf) - len);
                if (k < 0) {
                        int r = -errno;

                        if (r == -EINTR)
                                continue;
                        /* A FIFO with no writer, opened non-blocking: nothing to read.  Anything else
                         * answering EAGAIN (a driver's show()) failed to read, as with any errno. */
                        if (r == -EAGAIN && is_fifo(fd))
                                break;
                        return r;
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
        _cleanup_(closep) int fd = -EBADF;

        fd = sysfs_openat_beneath(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY, true);
        if (fd == -EACCES) {
                /* kernfs refuses to open write-only attributes (remove, rescan) for reading:
                 * they have no value to show. */
                int mode = sysfs_file_mode(dirfd, name);
                if (mode >= 0 && !(mode & 0444))
                        return copy_out("", 0, dup, userdata, ret);
                if (mode >= 0)
                        fd = sysfs_openat_overriding(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY);
        }
        if (fd < 0)
                return fd;
        /* Elsewhere (a fixture) root opens a mode-000 file all the same (CAP_DAC_OVERRIDE): a file
         * without read permission bits reads as "" for everyone, as on kernfs (doc/model.md).  On
         * kernfs, and without the override, the open above refused it already: no fstat for each
         * of the 200,000 files. */
        struct stat st;
        if (!kernfs && !sysfs_opens_check_modes() && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            !(st.st_mode & 0444))
                return copy_out("", 0, dup, userdata, ret);
        return read_fd(fd, dup, userdata, ret);
}

int sysfs_read_attr(int dirfd, const char *name, bool kernfs, char **ret)
{
        return read_attr(dirfd, name, kernfs, heap_strndup, NULL, ret);
}

char *sysfs_link_names_join(const SysfsEntry *e, size_t n)
{
        size_t size = 1;
        char *s, *p;

        for (size_t i = 0; i < n; i++)
                size += strlen(e[i].name) + 1;
        s = p = malloc(size);
        if (!s)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                /* The kernel puts only links there: anything else names no device sitting on this one. */
                if (e[i].type != SYSFS_ENTRY_LINK)
                        continue;
                if (p > s)
                        *p++ = LINK_NAMES_SEPARATOR;
                p = stpcpy(p, e[i].name);
        }
        *p = 0;
        return s;
}

static int read_link_names(int dirfd, const char *name, SysfsStrndup dup, void *userdata, char **ret)
{
        SysfsEntry *e = NULL;
        size_t n = 0;
        _cleanup_(freep) char *s = NULL;
        int fd = sysfs_open_subdir(dirfd, name);

        if (fd >= 0) {
                if (sysfs_list(fd, &e, &n) < 0)
                        n = 0;
                (void) close(fd);
        }
        s = sysfs_link_names_join(e, n);
        sysfs_entries_free(e, n);
        if (!s)
                return -ENOMEM;
        *ret = dup == heap_strndup ? TAKE_PTR(s) : dup(s, strlen(s), userdata);
        return *ret ? 0 : -ENOMEM;
}

/* A link's target's basename, published as values are, but whole: a newline at its end is part of
 * the name, not a line's end. */
static char *link_basename_copy(const char *target, SysfsStrndup dup, void *userdata)
{
        const char *slash = strrchr(target, '/'), *base = slash ? slash + 1 : target;

        return text_copy(base, strlen(base), dup, userdata);
}

char *sysfs_link_basename_escape(const char *target)
{
        return link_basename_copy(target, heap_strndup, NULL);
}

static int read_link_basename(int dirfd, const char *name, SysfsStrndup dup, void *userdata, char **ret)
{
        _cleanup_(freep) char *target = NULL;

        *ret = link_basename_copy(sysfs_readlink(dirfd, name, &target) >= 0 ? target : "", dup, userdata);
        return *ret ? 0 : -ENOMEM;
}

bool sysfs_source_is_attr(const char *source)
{
        size_t l = strlen(source);

        return l < 2 || (source[l - 1] != '/' && source[l - 1] != '@');
}

int sysfs_read_source_dup(int dirfd, const char *source, bool kernfs, SysfsStrndup dup, void *userdata,
                          char **ret)
{
        size_t l = strlen(source);
        char name[NAME_MAX + 1];

        if (sysfs_source_is_attr(source))
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

int sysfs_read_attr_at(const Sysfs *s, const char *relpath, char **ret)
{
        while (*relpath == '/')
                relpath++;
        return sysfs_read_attr(s->root_fd, relpath, s->kernfs, ret);
}
