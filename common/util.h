/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Small helpers in the manner of systemd's, which are not public. */

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#undef MIN
#define MIN(a, b)                                                                                           \
        ({                                                                                                  \
                __typeof__(a) _a_ = (a);                                                                    \
                __typeof__(b) _b_ = (b);                                                                    \
                _a_ < _b_ ? _a_ : _b_;                                                                      \
        })
#undef MAX
#define MAX(a, b)                                                                                           \
        ({                                                                                                  \
                __typeof__(a) _a_ = (a);                                                                    \
                __typeof__(b) _b_ = (b);                                                                    \
                _a_ > _b_ ? _a_ : _b_;                                                                      \
        })

#define TAKE_PTR(p)                                                                                         \
        ({                                                                                                  \
                __typeof__(p) _p_ = (p);                                                                    \
                (p) = NULL;                                                                                 \
                _p_;                                                                                        \
        })

#define TAKE_FD(fd)                                                                                         \
        ({                                                                                                  \
                int _fd_ = (fd);                                                                            \
                (fd) = -1;                                                                                  \
                _fd_;                                                                                       \
        })

static inline void freep(void *p)
{
        free(*(void **) p);
}

static inline void closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                (void) close(*fd);
                errno = saved;
        }
}

/* An error that says nothing of the thing asked about: the process or the system ran out of
 * descriptors or memory.  What was published must not change on such an answer. */
static inline bool errno_is_resource(int r)
{
        r = r < 0 ? -r : r;
        return r == EMFILE || r == ENFILE || r == ENOMEM || r == ENOBUFS;
}

static inline bool streq(const char *a, const char *b)
{
        return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b)
{
        if (!a || !b)
                return a == b;
        return streq(a, b);
}

static inline const char *startswith(const char *s, const char *prefix)
{
        size_t l = strlen(prefix);
        return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}

/* free() that returns NULL, for p = mfree(p). */
static inline void *mfree(void *p)
{
        free(p);
        return NULL;
}

static inline bool isempty(const char *s)
{
        return !s || !*s;
}

static inline const char *strempty(const char *s)
{
        return s ? s : "";
}

static inline const char *strna(const char *s)
{
        return s ?: "n/a";
}

/* Frees a NULL-terminated string vector; returns NULL. */
char **strv_free(char **l);
static inline void strv_freep(char ***l)
{
        strv_free(*l);
}
size_t strv_length(char *const *l);
/* Is s one of l's strings (l may be NULL)? */
bool strv_contains(char *const *l, const char *s);

/* Makes room for need elements of size bytes in *p, which has room for *allocated: grows to twice
 * need (at least 16), so that n appends cost O(n) copies.  0, or -ENOMEM with *p as it was. */
/* A decimal unsigned number, nothing around it ("4096"; no sign, blank or "0x"): the one reading of
 * sysfs values, options and arguments.  -EBADMSG otherwise, -ERANGE past 2^64-1; *ret untouched then. */
int parse_u64(const char *v, uint64_t *ret);

int greedy_realloc(void **p, size_t *allocated, size_t need, size_t size);
#define GREEDY_REALLOC(array, allocated, need)                                                              \
        greedy_realloc((void **) &(array), &(allocated), (need), sizeof((array)[0]))

/* Appends a copy of s to a growable vector; -ENOMEM on failure. */
int strv_extend(char ***l, size_t *n, const char *s);
/* Appends s itself (takes ownership, frees it on failure). */
int strv_consume(char ***l, size_t *n, char *s);

char *path_join(const char *a, const char *b);
/* In place: each run of slashes one, and no trailing one but the root's ("//a//b/" is /a/b). */
char *path_squeeze_slashes(char *p);
/* A block device's kernel name writes its /dev name's '/' as '!': cciss!c0d0 is /dev/cciss/c0d0.
 * Each gives a new copy in the other form (NULL: out of memory). */
char *devnode_name_of(const char *kernel_name);
char *kernel_name_of(const char *devnode_name);

/* The last element of a path ("sda" of "/devices/…/block/sda"); the path itself without a '/'. */
static inline const char *path_basename(const char *path)
{
        const char *s = strrchr(path, '/');
        return s ? s + 1 : path;
}

/* All but the last element, allocated; "" without a '/'.  NULL on ENOMEM. */
static inline char *path_dirname(const char *path)
{
        const char *s = strrchr(path, '/');
        return s ? strndup(path, (size_t) (s - path)) : strdup("");
}
