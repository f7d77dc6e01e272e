/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/log.h"
#include "common/util.h"
#include "uevent/source-internal.h"

/*
 * Makes room for our socket at the path: nothing there, or a socket that
 * nobody is bound to any more (connect() is refused).  Never removes a
 * file that isn't a socket, nor a live daemon's socket.
 */
static int socket_path_clear(const struct sockaddr_un *addr, socklen_t addr_len)
{
        _cleanup_(closep) int probe = -1;
        struct stat st;

        if (lstat(addr->sun_path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISSOCK(st.st_mode))
                return -EEXIST;

        probe = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (probe < 0)
                return -errno;
        if (connect(probe, (const struct sockaddr *) addr, addr_len) >= 0)
                return -EADDRINUSE;
        if (errno != ECONNREFUSED)
                return -errno;

        if (unlink(addr->sun_path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int uevent_source_new_socket(uv_loop_t *loop, const char *path, UeventSourceHandler handler,
                             UeventSourceLostHandler lost, void *userdata, UeventSource **ret)
{
        _cleanup_(closep) int fd = -1;
        _cleanup_(freep) char *path_copy = NULL;
        struct sockaddr_un addr = {
                        .sun_family = AF_UNIX,
        };
        socklen_t addr_len;
        UeventSource *s;
        struct stat st;
        size_t l;
        int r;

        assert(loop);
        assert(ret);

        if (!handler || !path)
                return -EINVAL;

        /* A filesystem path only; an abstract name ("\0...") has no owner to check and no mode. */
        l = strlen(path);
        if (l == 0)
                return -EINVAL;
        if (l >= sizeof(addr.sun_path))
                return -ENAMETOOLONG;
        memcpy(addr.sun_path, path, l + 1);
        addr_len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + l + 1);

        path_copy = strdup(path);
        if (!path_copy)
                return -ENOMEM;

        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;

        /* Before bind(), so that no datagram is ever queued without credentials. */
        r = source_set_passcred(fd);
        if (r < 0)
                return r;

        r = socket_path_clear(&addr, addr_len);
        if (r < 0)
                return r;

        if (bind(fd, (struct sockaddr *) &addr, addr_len) < 0)
                return -errno;

        /*
         * Remember what we bound, so we never unlink a successor's socket.
         * 0600 keeps other users from even sending; root and our uid may
         * send, as the credentials check wants.  The check is what counts:
         * the window before chmod() only lets through datagrams it drops.
         */
        if (lstat(path, &st) < 0 || chmod(path, 0600) < 0) {
                r = -errno;
                (void) unlink(path);
                return r;
        }

        r = source_start(loop, UEVENT_SOURCE_SOCKET, fd, handler, lost, userdata, &s);
        if (r < 0) {
                (void) unlink(path);
                return r;
        }
        fd = -1;

        s->path = TAKE_PTR(path_copy);
        s->path_dev = st.st_dev;
        s->path_ino = st.st_ino;

        *ret = s;
        return 0;
}
