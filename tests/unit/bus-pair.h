/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

/*
 * Two sd-bus connections over a socket pair, both ready: ours, a client as the daemon's is, and peer,
 * a server standing in for the bus, so that a test sees every message the daemon sends (and can read
 * the raw bytes from *ret_raw, the peer's end).  flags: more socket() flags (SOCK_NONBLOCK); sndbuf,
 * when positive, ours' SO_SNDBUF.  0, or -1 with nothing left open.
 */
int bus_pair_open(int flags, int sndbuf, sd_bus **ret_ours, sd_bus **ret_peer, int *ret_raw);
