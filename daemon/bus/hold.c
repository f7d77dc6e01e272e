/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>

#include "base/log-ratelimit.h"
#include "base/log.h"
#include "blkmodel/names.h"
#include "bus/bus-internal.h"
#include "bus/errors.h"
#include "uevent/eventlog.h"

/*
 * Signals wait while a GetManagedObjects reply is built.
 *
 * A large reply is built in slices while the loop serves everyone else, so a change made meanwhile
 * is in it or not as its object's slice came after it or before.  A service that answers at once
 * sends a reply holding every change told before it, and ObjectManager clients count on that: GDBus's
 * DBusObjectManagerClient, resyncing after the name changed owner, applies the signals as they come
 * and then the reply over them, and so kept a disk removed meanwhile, or a disk's Partitions without
 * the partition added meanwhile, for good.  So from the moment a reply's building begins until it is
 * sent, every signal, and every reply that promises its signals went out first (Settle, Rescan, Set),
 * waits here in order, and goes out right after the reply.  One reply is built at a time (the next
 * begins only once this one is sent), so nothing waits longer than one reply's building.
 */

/* What may wait: past it everything held goes out at once, and the reply being built tells less than
 * the signals before it (the signals, applied after the reply as org.blkmodel1(5) says, still make
 * the model).  Seldom reached: uevents wait once 64 signals are held (backlog_congested()). */
#define HOLD_BYTES_MAX ((size_t) 16 << 20)
/* Half what the backlog calls stuck at once (BACKLOG_HARD_MAX): released together, they are a burst
 * the bus may drain (backlog_burst()). */
#define HOLD_MESSAGES_MAX ((size_t) 32768)

static void send_now(Publisher *p, sd_bus_message *m)
{
        int r = sd_bus_send(p->bus, m, NULL);

        if (r >= 0 || bus_gone_error(r))
                return;
        if (sd_bus_message_is_signal(m, NULL, NULL)) {
                log_warning_errno(r, "Cannot send %s on %s: %m", sd_bus_message_get_member(m),
                                  sd_bus_message_get_path(m));
                /* No subscriber can tell that a signal never went (sendmsg()'s ENOBUFS when the kernel
                 * is short of memory): SignalsDropped sends them to resync, as for one too large.  Not
                 * for SignalsDropped itself, which would only ask for another. */
                if (p->backlog && !sd_bus_message_is_signal(m, BLKMODEL_IFACE_MANAGER, "SignalsDropped"))
                        backlog_oversized(p->backlog, NULL);
        } else /* a reply: any caller can ask for one */
                log_ratelimit_warning_errno(r, "Cannot send a reply to %s: %m",
                                            strna(sd_bus_message_get_destination(m)));
}

void bus_hold_begin(Publisher *p)
{
        p->held.on = true;
}

void bus_hold_release(Publisher *p)
{
        /* Off first: a SignalsDropped asked for by a send that fails here (send_now()) goes at once. */
        p->held.on = false;
        for (size_t i = 0; i < p->held.n; i++) {
                send_now(p, p->held.m[i]);
                sd_bus_message_unref(p->held.m[i]);
        }
        if (p->held.n > 0 && p->backlog)
                backlog_burst(p->backlog);
        p->held.m = mfree(p->held.m);
        p->held.n = p->held.n_allocated = p->held.bytes = 0;
        p->held.first_seqnum = 0;
        p->held.on = false;
}

void bus_send_in_order(Publisher *p, sd_bus_message *m, size_t bytes, uint64_t seqnum)
{
        if (p->held.on && (p->held.bytes + bytes > HOLD_BYTES_MAX || p->held.n >= HOLD_MESSAGES_MAX)) {
                log_info("%zu signals (%zu bytes) held while a GetManagedObjects reply is built sent "
                         "before it: more may not wait; that reply may tell less than they did.",
                         p->held.n, p->held.bytes);
                bus_hold_release(p);
        }
        if (p->held.on && GREEDY_REALLOC(p->held.m, p->held.n_allocated, p->held.n + 1) < 0)
                bus_hold_release(p);
        if (!p->held.on) {
                send_now(p, m);
                return;
        }
        p->held.m[p->held.n++] = sd_bus_message_ref(m);
        p->held.bytes += bytes;
        if (seqnum > 0 && p->held.first_seqnum == 0)
                p->held.first_seqnum = seqnum;
}

int bus_reply_in_order(Publisher *p, sd_bus_message *call, const char *types, ...)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        va_list ap;
        int r;

        /* As sd_bus_reply_method_return(): none for a call sent with NO_REPLY_EXPECTED. */
        if (!sd_bus_message_get_expect_reply(call))
                return 0;
        r = sd_bus_message_new_method_return(call, &reply);
        if (r < 0)
                return r;
        if (types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(reply, types, ap);
                va_end(ap);
                if (r < 0)
                        return r;
        }
        bus_send_in_order(p, reply, 64, 0);
        return 0;
}

int bus_reply_error_in_order(Publisher *p, sd_bus_message *call, const sd_bus_error *e)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        if (!sd_bus_message_get_expect_reply(call))
                return 0;
        r = sd_bus_message_new_method_error(call, &reply, e);
        if (r < 0)
                return r;
        bus_send_in_order(p, reply, 64, 0);
        return 0;
}

uint64_t bus_told_seqnum(Publisher *p)
{
        /* A client that read LastSeqnum, or GetEvents up to it, then got the held Uevents would see
         * them twice. */
        return p->held.first_seqnum > 0 ? p->held.first_seqnum - 1 : eventlog_last_seqnum(p->events);
}
