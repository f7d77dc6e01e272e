/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

/*
 * Two sd-bus connections over a socket pair, both ready: ours, a client as the daemon's is, and peer,
 * a server standing in for the bus, so that a test sees every message the daemon sends (and can read
 * the raw bytes from *ret_raw, the peer's end).  flags: more socket() flags (SOCK_NONBLOCK); sndbuf,
 * when positive, ours' SO_SNDBUF.  0, or -1 with nothing left open.
 */
int bus_pair_open(int flags, int sndbuf, sd_bus **ret_ours, sd_bus **ret_peer, int *ret_raw);

/* From a little-endian message's fixed 16-byte header, as read off the raw end: the body's length,
 * the header fields' length, and the bytes that follow the 16 (the fields, their padding to 8, the
 * body).  -1 if it is no such header. */
int bus_pair_header(const uint8_t hdr[16], uint32_t *ret_body, uint32_t *ret_fields, size_t *ret_rest);
