/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/util.h"
#include "fd-limit.h"

/* Enough for what the start asks about. */
#define AVAILABLE_MAX 64

int fd_limit_available(unsigned max)
{
        int fds[AVAILABLE_MAX], r = 0;
        unsigned n = 0;

        max = MIN(max, (unsigned) AVAILABLE_MAX);
        for (; n < max; n++) {
                fds[n] = n == 0 ? open("/", O_PATH | O_CLOEXEC) : fcntl(fds[0], F_DUPFD_CLOEXEC, 0);
                if (fds[n] < 0) {
                        r = errno == EMFILE ? 0 : -errno;
                        break;
                }
        }
        for (unsigned i = 0; i < n; i++)
                close(fds[i]);
        return r < 0 ? r : (int) n;
}
