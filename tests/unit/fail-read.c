/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fail-read.h"

ssize_t __real_read(int fd, void *buf, size_t n);
ssize_t __wrap_read(int fd, void *buf, size_t n);

static const char *failing_suffix;
static int failing_errno;

void fail_reads(const char *suffix, int error)
{
        failing_suffix = suffix;
        failing_errno = error;
}

ssize_t __wrap_read(int fd, void *buf, size_t n)
{
        char link[64], target[4096];
        ssize_t k;

        if (failing_suffix) {
                snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
                k = readlink(link, target, sizeof(target) - 1);
                if (k > 0) {
                        size_t len = (size_t) k, suffix = strlen(failing_suffix);

                        if (len >= suffix && memcmp(target + len - suffix, failing_suffix, suffix) == 0) {
                                errno = failing_errno;
                                return -1;
                        }
                }
        }
        return __real_read(fd, buf, n);
}
