/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <uv.h>

#include "uevent/uevent.h"

/*
 * Where uevents come from: the kernel's NETLINK_KOBJECT_UEVENT socket
 * (group 1), or a Unix datagram socket carrying the same wire format (tests,
 * replay).  Each source owns one socket and one uv_poll_t on it, reads
 * datagrams, checks who sent them, parses them with uevent_parse() and hands
 * each good event to the handler.  Bad datagrams are dropped with a
 * (rate-limited) log line and counted.
 *
 * Every callback runs from the libuv loop.  Any of them may call
 * uevent_source_pause(), _resume() or _free() on its own source.
 */

typedef struct UeventSource UeventSource;

/* Called once per accepted event.  Ownership of u passes to the handler (free it with uevent_free()). */
typedef void (*UeventSourceHandler)(UeventSource *s, Uevent *u, void *userdata);

/*
 * Called when events were lost: the kernel dropped some (netlink ENOBUFS),
 * or a well-formed one could not be taken in (ENOMEM).  The model may now be
 * wrong; the caller rescans.  Reading continues after the call.
 */
typedef void (*UeventSourceLostHandler)(UeventSource *s, void *userdata);

/*
 * Called when a read found the socket empty.  After a loss this is the moment to rescan: the
 * kernel reports an overrun once (ENOBUFS) and then drops silently until the queue has drained,
 * so a rescan before that point could miss what was dropped after it.
 */
typedef void (*UeventSourceDrainedHandler)(UeventSource *s, void *userdata);
void uevent_source_set_drained_handler(UeventSource *s, UeventSourceDrainedHandler drained);
/* Makes sure the handler hears "drained" once the socket has been read empty, even if nothing comes
 * any more (or when the source stops reading for good); false if it never will (no source, or dead). */
bool uevent_source_watch_drained(UeventSource *s);

/*
 * The kernel's uevent netlink socket.
 *
 * fd: -1 to open and bind our own; otherwise a socket received from systemd
 * (sd_listen_fds(), a .socket unit with ListenNetlink=kobject-uevent 1),
 * which must be AF_NETLINK/NETLINK_KOBJECT_UEVENT; it is subscribed to group
 * 1 and given SO_PASSCRED if it isn't already.
 *
 * rcvbuf_bytes: the receive buffer to ask for; 0 means 128 MiB for our own
 * socket and "leave as configured" (ReceiveBuffer=) for a handed-over one.
 * SO_RCVBUFFORCE is tried first (needs CAP_NET_ADMIN), then SO_RCVBUF,
 * which the kernel caps at net.core.rmem_max.
 *
 * On success the source owns the fd and closes it when freed; on failure
 * the caller still owns a handed-over fd.  lost may be NULL.
 */
int uevent_source_new_netlink(uv_loop_t *loop, int fd, int rcvbuf_bytes, UeventSourceHandler handler,
                              UeventSourceLostHandler lost, void *userdata, UeventSource **ret);

/*
 * A Unix datagram socket bound at path (created mode 0600).  A stale socket
 * left at path is replaced; a live one (someone still bound) gives
 * -EADDRINUSE, anything that isn't a socket -EEXIST.  Only datagrams whose
 * SCM_CREDENTIALS name our effective uid or root are accepted.  The socket
 * file is removed when the source is freed, if it is still ours.
 */
int uevent_source_new_socket(uv_loop_t *loop, const char *path, UeventSourceHandler handler,
                             UeventSourceLostHandler lost, void *userdata, UeventSource **ret);

/*
 * Back-pressure: stop reading (events queue up in the socket, and on
 * netlink the kernel reports an overflow as ENOBUFS later), then resume.
 * Both are idempotent and cheap.
 */
void uevent_source_pause(UeventSource *s);
void uevent_source_resume(UeventSource *s);

/*
 * Reads and hands over every event queued now, without waiting for the
 * loop: at start-up the events that arrived during the scan are applied
 * before the bus name is taken.  Stops early if a handler pauses the source.
 */
void uevent_source_drain(UeventSource *s);

/* Datagrams dropped as truncated, malformed or unauthorized since creation. */
uint64_t uevent_source_dropped(const UeventSource *s);

/*
 * Stops reading at once and closes the handle; memory and fd are released
 * in libuv's close callback, so the loop must run once more.  No callback
 * is called after this returns.  NULL is accepted.
 */
void uevent_source_free(UeventSource *s);
