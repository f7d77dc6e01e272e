/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * monitor and events: the Uevent signal stream and the retained events.
 *
 * monitor subscribes before it asks for anything, so an event is either in
 * the GetEvents reply, or in a signal that arrives after it, or both; the
 * seqnum (the daemon's own, strictly +1) removes the repeats and shows the
 * gaps, which it fills from GetEvents while the daemon still has them.
 */

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-events.h"
#include "bus-wait.h"
#include "event-output.h"
#include "json-util.h"
#include "output.h"

#include "common/time-util.h"
#include "common/util.h"

/* CLOCK_REALTIME in µs: when a signal arrived, as a user reads a clock. */
static uint64_t now_realtime_usec(void)
{
        return clock_nsec(CLOCK_REALTIME) / 1000;
}

/* *p = a copy of s, the old one freed; -ENOMEM leaves *p as it was. */
static int set_owner(char **p, const char *s)
{
        char *t = strdup(s);

        if (!t)
                return -ENOMEM;
        free(*p);
        *p = t;
        return 0;
}

typedef struct Monitor {
        Ctl *ctl;
        sd_bus *bus;
        /* The unique name of the daemon whose seqnums `last` counts: every call for events goes to it,
         * never to whichever owns the name by then (a newer daemon, whose NameOwnerChanged is still
         * queued and would replay its events again).  NULL: not known yet. */
        char *owner;
        bool have_last;
        uint64_t last; /* the highest seqnum dealt with */
        int failed;    /* an EXIT_* code when a write failed */
} Monitor;

/* A notice about the stream itself (a gap, a restart): a line on stderr, or with --json an object of
 * that type in the stream, with extra's fields and the message.  Takes extra. */
static void monitor_notice(Monitor *mon, const char *type, json_object *extra, const char *fmt, ...)
                _printf_(4, 5);
static void monitor_notice(Monitor *mon, const char *type, json_object *extra, const char *fmt, ...)
{
        _cleanup_(json_object_putp) json_object *j = NULL;
        _cleanup_(json_object_putp) json_object *e = extra;
        _cleanup_(freep) char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);

        if (!mon->ctl->json) {
                (void) fflush(stdout);
                fprintf(stderr, "blkmodelctl: %s\n", msg ?: type);
                return;
        }

        /* type and message first, as the man page shows a notice, then what the notice adds. */
        j = json_object_new_object();
        if (j) {
                json_object_object_add(j, "type", json_object_new_string(type));
                json_object_object_add(j, "message", json_object_new_string(msg ?: type));
                if (e) {
                        json_object_object_foreach(e, key, value)
                                json_object_object_add(j, key, json_object_get(value));
                }
                output_json(j, false);
        }
        (void) fflush(stdout);
}

static void monitor_notice_gap(Monitor *mon, uint64_t from, uint64_t to)
{
        json_object *j = json_object_new_object();

        if (j) {
                json_object_object_add(j, "from", json_object_new_uint64(from));
                json_object_object_add(j, "to", json_object_new_uint64(to));
        }
        if (from == to)
                monitor_notice(mon, "gap", j, "missed event %" PRIu64 "; the model may have changed unseen",
                               from);
        else
                monitor_notice(mon, "gap", j,
                               "missed events %" PRIu64 "-%" PRIu64 "; the model may have changed unseen",
                               from, to);
}

static void monitor_print(Monitor *mon, const BusEvent *ev)
{
        if (!event_action_wanted(mon->ctl, ev->action))
                return;

        if (mon->ctl->json) {
                _cleanup_(json_object_putp) json_object *j = event_to_json(ev);

                if (!j) {
                        mon->failed = ctl_fail("Out of memory");
                        return;
                }
                output_json(j, false);
        } else
                event_print_human(mon->ctl, ev);

        /* A reader on a pipe wants each event when it happens. */
        if (fflush(stdout) != 0)
                mon->failed = EXIT_FAIL;
}

typedef struct Replay {
        Monitor *mon;
        uint64_t upto; /* only events below this seqnum */
} Replay;

static int replay_one(const BusEvent *ev, void *userdata)
{
        Replay *rp = userdata;
        Monitor *mon = rp->mon;

        if (ev->seqnum >= rp->upto)
                return 0;
        if (mon->have_last && ev->seqnum <= mon->last)
                return 0;
        if (mon->have_last && ev->seqnum > mon->last + 1)
                monitor_notice_gap(mon, mon->last + 1, ev->seqnum - 1);
        monitor_print(mon, ev);
        mon->have_last = true;
        mon->last = ev->seqnum;
        return 0;
}

/*
 * Prints the retained events after `after` and below `upto` that were not
 * printed yet.  Returns 0, 1 if they had expired, 2 if `after` is older than
 * the daemon (kept from an earlier one), or a negative error (already
 * reported).
 */
static int monitor_replay(Monitor *mon, uint64_t after, uint64_t upto)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        Replay rp = {.mon = mon, .upto = upto};
        int r;

        /* Page by page up to what the daemon had when asked (upto - 1), or all it has. */
        r = bus_get_events_from(mon->bus, mon->owner, after, upto == UINT64_MAX ? UINT64_MAX : upto - 1,
                                replay_one, &rp, &error);
        if (r >= 0)
                return 0;
        if (bus_error_is_earlier_daemons(&error))
                return 2;
        if (sd_bus_error_has_name(&error, BLKMODEL_ERROR_EVENTS_EXPIRED))
                return 1;
        /* It is gone; NameOwnerChanged tells the rest. */
        if (bus_error_is_gone(&error))
                return 0;
        (void) bus_report_error(mon->ctl, &error, r, "Failed to get events");
        return -EIO;
}

static uint64_t monitor_oldest(Monitor *mon)
{
        uint64_t oldest = 0;

        if (bus_get_seqnum_from(mon->bus, mon->owner, BLKMODEL_PROP_OLDEST_SEQNUM, &oldest, NULL) < 0)
                return 0;
        return oldest;
}

/* Events after `after` expired (earlier: it is older than the daemon, kept from an earlier one): say so
 * and go on from the oldest retained. */
static int monitor_expired(Monitor *mon, uint64_t after, bool earlier)
{
        uint64_t oldest = monitor_oldest(mon);
        json_object *j = json_object_new_object();

        if (j) {
                json_object_object_add(j, "after", json_object_new_uint64(after));
                json_object_object_add(j, "oldest", json_object_new_uint64(oldest));
        }
        if (earlier)
                monitor_notice(mon, "expired", j,
                               "seqnum %" PRIu64 " is older than this blkmodeld (kept from an earlier one?; "
                               "oldest retained: %" PRIu64 "); resync with 'blkmodelctl dump'",
                               after, oldest);
        else if (after == 0)
                monitor_notice(mon, "expired", j,
                               "the first events have expired (oldest retained: %" PRIu64
                               "); resync with 'blkmodelctl dump'",
                               oldest);
        else
                monitor_notice(mon, "expired", j,
                               "events after %" PRIu64 " have expired (oldest retained: %" PRIu64
                               "); resync with 'blkmodelctl dump'",
                               after, oldest);

        mon->have_last = oldest > 0;
        mon->last = oldest > 0 ? oldest - 1 : 0;
        return monitor_replay(mon, mon->last, UINT64_MAX) < 0 ? -EIO : 0;
}

static int on_uevent(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        _cleanup_(bus_event_done) BusEvent ev = {};
        Monitor *mon = userdata;
        int r;

        r = bus_message_read_event_fields(m, &ev);
        if (r < 0) {
                monitor_notice(mon, "malformed", NULL, "ignoring a malformed Uevent signal: %s",
                               strerror(-r));
                return 0;
        }
        /* When it arrived: the bus's own timestamp where it gives one, else now. */
        if (sd_bus_message_get_realtime_usec(m, &ev.realtime_usec) < 0 || ev.realtime_usec == 0)
                ev.realtime_usec = now_realtime_usec();

        if (mon->have_last && ev.seqnum <= mon->last)
                return 0; /* printed from GetEvents already */

        if (mon->have_last && ev.seqnum > mon->last + 1) {
                /* Fill the hole while the daemon still remembers it: what has expired from its log is
                 * a gap, what it still retains is shown (the log may wrap again meanwhile: a few tries). */
                r = 0;
                for (unsigned tries = 0; mon->last + 1 < ev.seqnum; tries++) {
                        uint64_t from = mon->last, oldest;

                        r = monitor_replay(mon, from, ev.seqnum);
                        if (r <= 0 || tries >= 8)
                                break;
                        oldest = monitor_oldest(mon);
                        if (oldest <= from + 1 || oldest >= ev.seqnum)
                                break;
                        monitor_notice_gap(mon, from + 1, oldest - 1);
                        mon->last = oldest - 1;
                }
                if (r >= 0 && mon->last + 1 < ev.seqnum)
                        monitor_notice_gap(mon, mon->last + 1, ev.seqnum - 1);
        }

        monitor_print(mon, &ev);
        mon->have_last = true;
        mon->last = ev.seqnum;
        return 0;
}

/* Count from `owner`'s first seqnum, printing what it did so far. */
static void monitor_new_daemon(Monitor *mon, const char *owner)
{
        if (set_owner(&mon->owner, owner) < 0) {
                mon->failed = ctl_fail("Out of memory");
                return;
        }
        mon->have_last = false;
        mon->last = 0;
        if (monitor_replay(mon, 0, UINT64_MAX) == 1)
                (void) monitor_expired(mon, 0, false);
}

static int on_name_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        Monitor *mon = userdata;
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0)
                return 0;
        if (!streq(name, BLKMODEL_BUS_NAME))
                return 0;

        if (isempty(new_owner)) {
                monitor_notice(mon, "daemon-stopped", NULL, "blkmodeld stopped; waiting for it to return");
                return 0;
        }

        /* The daemon this monitor asked already (one the bus started for its first call, or that
         * started just before it asked): its seqnums are counted, its events shown. */
        if (mon->owner && streq(mon->owner, new_owner))
                return 0;

        /* A new daemon counts from a start of its own: show what it did so far, asking it and no later
         * one (gone already, it has nothing more to show than its signals still queued here). */
        monitor_notice(mon, "daemon-started", NULL, "blkmodeld %s; its seqnums start anew",
                       isempty(old_owner) ? "started" : "was replaced");
        monitor_new_daemon(mon, new_owner);
        return 0;
}

static int monitor_subscribe(Monitor *mon)
{
        int r;

        r = sd_bus_match_signal(mon->bus, NULL, BLKMODEL_BUS_NAME, BLKMODEL_MANAGER_PATH,
                                BLKMODEL_IFACE_MANAGER, BLKMODEL_SIGNAL_UEVENT, on_uevent, mon);
        if (r < 0)
                return r;
        return bus_match_daemon_owner(mon->bus, on_name_owner_changed, mon);
}

/* The daemon's LastSeqnum, asked in a way that also starts it if the bus
 * can activate it, and that tells a daemon which is not there; then which
 * daemon that is (mon->owner), and its LastSeqnum again from it. */
static int monitor_check_daemon(Monitor *mon, uint64_t *ret_last)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t last;
        int r;

        r = sd_bus_get_property_trivial(mon->bus, BLKMODEL_BUS_NAME, BLKMODEL_MANAGER_PATH,
                                        BLKMODEL_IFACE_MANAGER, BLKMODEL_PROP_LAST_SEQNUM, &error, 't',
                                        &last);
        if (r < 0)
                return bus_report_error(mon->ctl, &error, r, "Failed to reach blkmodeld");

        mon->owner = mfree(mon->owner);
        r = bus_get_daemon_owner(mon->bus, &mon->owner);
        if (r == -ENOMEM)
                return ctl_fail("Out of memory");
        /* No owner by now: the calls go to the name, as before; else the owner's own LastSeqnum. */
        if (r >= 0)
                (void) bus_get_seqnum_from(mon->bus, mon->owner, BLKMODEL_PROP_LAST_SEQNUM, &last, NULL);
        *ret_last = last;
        return EXIT_OK;
}

/* The bus itself went away: reconnect once a second until it is back. */
static int monitor_reconnect(Monitor *mon, int sigfd)
{
        int r;

        monitor_notice(mon, "disconnected", NULL, "lost the connection to the bus; reconnecting");
        mon->bus = mon->ctl->bus = sd_bus_close_unref(mon->bus);

        for (;;) {
                struct pollfd p = {.fd = sigfd, .events = POLLIN};

                r = poll(&p, 1, 1000);
                if (r > 0)
                        return 1;
                if (bus_open(mon->ctl->bus_kind, mon->ctl->address, NULL, &mon->bus) < 0)
                        continue;
                mon->ctl->bus = mon->bus;
                r = monitor_subscribe(mon);
                if (r < 0) {
                        mon->bus = mon->ctl->bus = sd_bus_close_unref(mon->bus);
                        continue;
                }
                break;
        }

        /* A new bus means a new daemon too: its seqnums are its own. */
        monitor_notice(mon, "reconnected", NULL, "reconnected to the bus");
        mon->owner = mfree(mon->owner);
        mon->have_last = false;

        /* A daemon there already started while we were away: what it did so far, as for one that
         * starts now (its NameOwnerChanged, if still to come, names the owner we know by then). */
        {
                _cleanup_(freep) char *owner = NULL;

                r = bus_get_daemon_owner(mon->bus, &owner);
                if (r == -ENOMEM)
                        mon->failed = ctl_fail("Out of memory");
                else if (r >= 0) {
                        monitor_notice(mon, "daemon-started", NULL,
                                       "blkmodeld is running on the bus; its seqnums start anew");
                        monitor_new_daemon(mon, owner);
                }
        }
        return 0;
}

static void monitor_done(Monitor *mon)
{
        mon->owner = mfree(mon->owner);
}

int cmd_monitor(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(closep) int sigfd = -1;
        _cleanup_(monitor_done) Monitor mon = {.ctl = ctl};
        uint64_t last = 0;
        int r;

        r = ctl_bus(ctl, &mon.bus);
        if (r != EXIT_OK)
                return r;

        sigfd = bus_signalfd_open();
        if (sigfd < 0)
                return ctl_fail("Failed to watch signals: %s", strerror(-sigfd));

        /* Subscribe first: whatever happens from now on reaches us. */
        r = monitor_subscribe(&mon);
        if (r < 0)
                return ctl_fail("Failed to subscribe to signals: %s", strerror(-r));

        /* Then make sure there is a daemon at all: one failure line now
         * beats waiting silently for one that may never come. */
        r = monitor_check_daemon(&mon, &last);
        if (r != EXIT_OK)
                return r;

        if (ctl->since_set) {
                uint64_t since = ctl->since;

                /* A seqnum the daemon never reached is not one of its own
                 * (mistyped, or from an earlier daemon whose clock ran ahead);
                 * taken as it is, it would hide every event up to it. */
                if (since > last) {
                        json_object *j = json_object_new_object();

                        if (j) {
                                json_object_object_add(j, "since", json_object_new_uint64(since));
                                json_object_object_add(j, "last", json_object_new_uint64(last));
                        }
                        monitor_notice(&mon, "future", j,
                                       "seqnum %" PRIu64 " is ahead of blkmodeld's last (%" PRIu64
                                       "); not one of its seqnums, going on from %" PRIu64,
                                       since, last, last);
                        since = last;
                }
                /* 0, which no event has, is "from the daemon's first". */
                mon.have_last = since > 0;
                mon.last = since;
                r = monitor_replay(&mon, since, UINT64_MAX);
                if (r > 0)
                        r = monitor_expired(&mon, since, r == 2);
                if (r < 0)
                        return EXIT_FAIL;
        }

        for (;;) {
                if (mon.failed)
                        return mon.failed;

                r = sd_bus_process(mon.bus, NULL);
                if (r > 0)
                        continue;
                if (r == 0)
                        r = bus_wait_event(mon.bus, sigfd, USEC_INFINITY);
                if (r == 1)
                        return EXIT_OK; /* SIGINT/SIGTERM: a normal end */
                if (r < 0 && monitor_reconnect(&mon, sigfd) == 1)
                        return EXIT_OK;
        }
}
