/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <linux/netlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "common/util.h"
#include "uevent/source-internal.h"

static int set_rcvbuf(int fd, int bytes)
{
        /* FORCE ignores net.core.rmem_max but needs CAP_NET_ADMIN; the fallback is capped by it. */
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes)) >= 0)
                return 0;
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes)) < 0)
                return -errno;
        return 0;
}

static int set_nonblock(int fd)
{
        int flags = fcntl(fd, F_GETFL);

        if (flags < 0)
                return -errno;
        if (!(flags & O_NONBLOCK) && fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

static int getsockopt_int(int fd, int level, int opt, int *ret)
{
        int v = 0;
        socklen_t l = sizeof(v);

        if (getsockopt(fd, level, opt, &v, &l) < 0)
                return -errno;
        if (l != sizeof(v))
                return -EIO;
        *ret = v;
        return 0;
}

/* A socket from systemd: check it is what the unit promised, and make it so where it is not. */
static int netlink_adopt(int fd, int rcvbuf_bytes)
{
        struct sockaddr_nl addr = {};
        socklen_t l = sizeof(addr);
        int v = 0, r;

        r = getsockopt_int(fd, SOL_SOCKET, SO_DOMAIN, &v);
        if (r < 0)
                return r;
        if (v != AF_NETLINK)
                return -EAFNOSUPPORT;
        r = getsockopt_int(fd, SOL_SOCKET, SO_PROTOCOL, &v);
        if (r < 0)
                return r;
        if (v != NETLINK_KOBJECT_UEVENT)
                return -EPROTONOSUPPORT;

        /* Credentials are how we tell the kernel's datagrams from others: we need them. */
        r = source_set_passcred(fd);
        if (r < 0)
                return r;
        r = set_nonblock(fd);
        if (r < 0)
                return r;

        if (getsockname(fd, (struct sockaddr *) &addr, &l) < 0)
                return -errno;
        if (!(addr.nl_groups & UEVENT_GROUP_KERNEL)) {
                int group = 1;

                if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)) < 0)
                        return -errno;
        }

        /*
         * Left alone unless asked: the unit's ReceiveBuffer= may be bigger
         * than what SO_RCVBUF (capped at rmem_max) could set, and we would
         * shrink it.
         */
        if (rcvbuf_bytes > 0) {
                r = set_rcvbuf(fd, rcvbuf_bytes);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int netlink_open(int rcvbuf_bytes, int *ret_fd)
{
        _cleanup_(closep) int fd = -1;
        struct sockaddr_nl addr = {
                        .nl_family = AF_NETLINK,
                        .nl_pid = 0, /* let the kernel pick our port */
                        .nl_groups = UEVENT_GROUP_KERNEL,
        };
        int r;

        fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
        if (fd < 0)
                return -errno;

        /* Before bind(): a datagram queued in between would come without credentials. */
        r = source_set_passcred(fd);
        if (r < 0)
                return r;

        r = set_rcvbuf(fd, rcvbuf_bytes > 0 ? rcvbuf_bytes : NETLINK_RCVBUF_DEFAULT);
        if (r < 0)
                return r;

        if (bind(fd, (struct sockaddr *) &addr, sizeof(addr)) < 0)
                return -errno;

        *ret_fd = TAKE_FD(fd);
        return 0;
}

int uevent_source_new_netlink(uv_loop_t *loop, int fd, int rcvbuf_bytes, UeventSourceHandler handler,
                              UeventSourceLostHandler lost, void *userdata, UeventSource **ret)
{
        _cleanup_(closep) int own_fd = -1;
        int rcvbuf = 0, r;

        assert(loop);
        assert(ret);

        if (!handler || rcvbuf_bytes < 0 || fd < -1)
                return -EINVAL;

        if (fd < 0) {
                r = netlink_open(rcvbuf_bytes, &own_fd);
                if (r < 0)
                        return r;
                fd = own_fd;
        } else {
                r = netlink_adopt(fd, rcvbuf_bytes);
                if (r < 0)
                        return r;
        }

        /* Linux reports twice what was set (the bookkeeping overhead). */
        if (getsockopt_int(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf) >= 0)
                log_debug("uevent source netlink: receive buffer %d bytes%s", rcvbuf,
                          own_fd < 0 ? " (socket from systemd)" : "");

        r = source_start(loop, UEVENT_SOURCE_NETLINK, fd, handler, lost, userdata, ret);
        if (r < 0)
                return r;

        /* The source owns it now. */
        own_fd = -1;
        return 0;
}
