/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/log.h"
#include "fd-limit.h"

/* What a child gets back: the soft limit the daemon was started with.  Written once, before the
 * first thread; read in a child after fork(). */
static struct rlimit child_limit;

static void child_limit_restore(void)
{
        /* In a child of a process that may have threads: one system call, nothing else. */
        (void) setrlimit(RLIMIT_NOFILE, &child_limit);
}

/* fs.nr_open: the most descriptors the kernel gives a process, and the highest it lets a hard limit
 * be set to.  Negative errno when it cannot be read. */
static int read_nr_open(rlim_t *ret)
{
        _cleanup_(closep) int fd = -EBADF;
        char buf[32];
        uint64_t v;
        ssize_t n;

        fd = open("/proc/sys/fs/nr_open", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
        if (parse_u64(buf, &v) < 0 || v == 0)
                return -EINVAL;
        *ret = (rlim_t) v;
        return 0;
}

int fd_stdio_ensure(void)
{
        for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++) {
                int n;

                if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
                        continue;
                /* The lowest free number: fd, those below it being open.  Without /dev/null (a bare
                 * chroot), a descriptor that reads and writes nothing holds the place. */
                n = open("/dev/null", O_RDWR | O_NOCTTY);
                if (n < 0)
                        n = open("/", O_PATH);
                if (n < 0)
                        return -errno;
                if (n != fd) {
                        close(n);
                        return -EBADF;
                }
        }
        return 0;
}

void fd_limit_raise(void)
{
        struct rlimit old, want;
        rlim_t nr_open = 0;
        int r;

        if (getrlimit(RLIMIT_NOFILE, &old) < 0) {
                log_debug_errno(-errno, "Cannot read RLIMIT_NOFILE, leaving it as it is: %m");
                return;
        }
        if (old.rlim_cur >= old.rlim_max) {
                log_debug("RLIMIT_NOFILE: the soft limit is the hard one already, %ju.",
                          (uintmax_t) old.rlim_cur);
                return;
        }

        /* Registered first: no child may ever get the raised limit. */
        child_limit = old;
        r = pthread_atfork(NULL, NULL, child_limit_restore);
        if (r != 0) {
                log_debug_errno(-r,
                                "Cannot register the limit children get back, leaving RLIMIT_NOFILE "
                                "at %ju: %m",
                                (uintmax_t) old.rlim_cur);
                return;
        }

        want = (struct rlimit){.rlim_cur = old.rlim_max, .rlim_max = old.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &want) < 0) {
                r = -errno;
                /* The kernel refuses any hard limit over fs.nr_open, even one kept as it was (the
                 * sysctl lowered since): no descriptor past it can be had, so both go down to it. */
                if (r == -EPERM && read_nr_open(&nr_open) >= 0 && nr_open > old.rlim_cur &&
                    nr_open < old.rlim_max) {
                        want = (struct rlimit){.rlim_cur = nr_open, .rlim_max = nr_open};
                        r = setrlimit(RLIMIT_NOFILE, &want) < 0 ? -errno : 0;
                }
                if (r < 0) {
                        log_debug_errno(r, "Cannot raise RLIMIT_NOFILE's soft limit from %ju to %ju: %m",
                                        (uintmax_t) old.rlim_cur, (uintmax_t) old.rlim_max);
                        return;
                }
        }
        /* A child's hard limit is the one the daemon has now. */
        child_limit.rlim_max = want.rlim_max;
        log_debug("Raised RLIMIT_NOFILE's soft limit from %ju to %ju (hard limit %ju).",
                  (uintmax_t) old.rlim_cur, (uintmax_t) want.rlim_cur, (uintmax_t) want.rlim_max);
}

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
