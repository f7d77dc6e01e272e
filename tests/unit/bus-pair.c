/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/socket.h>
#include <unistd.h>

#include <systemd/sd-id128.h>

#include "bus-pair.h"

int bus_pair_open(int flags, int sndbuf, sd_bus **ret_ours, sd_bus **ret_peer, int *ret_raw)
{
        sd_bus *ours = NULL, *peer = NULL;
        sd_id128_t id;
        int fds[2], raw = -1;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0, fds) < 0)
                return -1;
        if (sndbuf > 0)
                (void) setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
        if (sd_bus_new(&ours) < 0 || sd_bus_set_fd(ours, fds[0], fds[0]) < 0)
                goto fail;
        fds[0] = -1; /* ours' now: closed with it */
        if (sd_bus_start(ours) < 0 || sd_id128_randomize(&id) < 0 || sd_bus_new(&peer) < 0 ||
            sd_bus_set_fd(peer, fds[1], fds[1]) < 0)
                goto fail;
        raw = fds[1];
        fds[1] = -1; /* peer's now */
        if (sd_bus_set_server(peer, 1, id) < 0 || sd_bus_start(peer) < 0)
                goto fail;
        /* The authentication goes back and forth: both ends are driven by hand, no loop runs yet. */
        for (unsigned i = 0; i < 1000 && !(sd_bus_is_ready(ours) > 0 && sd_bus_is_ready(peer) > 0); i++) {
                (void) sd_bus_process(ours, NULL);
                (void) sd_bus_process(peer, NULL);
        }
        if (sd_bus_is_ready(ours) <= 0 || sd_bus_is_ready(peer) <= 0)
                goto fail;
        *ret_ours = ours;
        *ret_peer = peer;
        if (ret_raw)
                *ret_raw = raw;
        return 0;
fail:
        for (unsigned i = 0; i < 2; i++)
                if (fds[i] >= 0)
                        (void) close(fds[i]);
        sd_bus_close_unref(ours);
        sd_bus_close_unref(peer);
        return -1;
}

static uint32_t le32(const uint8_t *b)
{
        return (uint32_t) b[0] | (uint32_t) b[1] << 8 | (uint32_t) b[2] << 16 | (uint32_t) b[3] << 24;
}

int bus_pair_header(const uint8_t hdr[16], uint32_t *ret_body, uint32_t *ret_fields, size_t *ret_rest)
{
        uint32_t body = le32(hdr + 4), fields = le32(hdr + 12);

        if (hdr[0] != 'l')
                return -1;
        *ret_body = body;
        *ret_fields = fields;
        *ret_rest = ((16 + (size_t) fields + 7) & ~(size_t) 7) - 16 + body;
        return 0;
}
