/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <signal.h>
#include <systemd/sd-daemon.h>

#include "base/log-ratelimit.h"
#include "base/log.h"
#include "base/turn.h"
#include "common/time-util.h"
#include "common/util.h"
#include "manager.h"
#include "sysfs/scan.h"

static void manager_stop(Manager *m, int exit_code);
static void check_backpressure(Manager *m);

/* ---- live's ops: what changed, to the publisher ---- */

static void on_object_added(void *userdata, Kobject *k, ObjDir *d)
{
        Manager *m = userdata;
        if (m->publisher)
                publisher_object_added(m->publisher, k, d);
        check_backpressure(m);
}

static void on_object_removed(void *userdata, Kobject *k)
{
        Manager *m = userdata;
        if (m->publisher)
                publisher_object_removed(m->publisher, k);
        check_backpressure(m);
}

static void on_interfaces_changed(void *userdata, Kobject *k, char *const *interfaces, bool added, ObjDir *d)
{
        Manager *m = userdata;
        if (m->publisher)
                publisher_interfaces_changed(m->publisher, k, interfaces, added, d);
        check_backpressure(m);
}

static void on_properties_changed(void *userdata, Kobject *k, const char *interface, char *const *changed,
                                  char *const *invalidated, ObjDir *d)
{
        Manager *m = userdata;
        if (m->publisher)
                publisher_properties_changed(m->publisher, k, interface, changed, invalidated, d);
        check_backpressure(m);
}

static void on_bus_drain_check(uv_prepare_t *h)
{
        Manager *m = h->data;
        uint64_t queued = publisher_queued(m->publisher);

        if (publisher_congested(m->publisher, true))
                return;
        (void) uv_prepare_stop(&m->drain_watch);
        m->paused_for_bus = false;
        if (m->uevents)
                uevent_source_resume(m->uevents);
        live_hold(m->live, false);
        log_debug("Bus write queue at %" PRIu64 " messages; uevents and rescans go on.", queued);
}

/* The uevent socket was read empty: what it held when the waiting calls came is read, and applied but
 * for the uevents queued behind a change event's burst. */
static void settle_mark_read(Manager *m)
{
        for (size_t i = 0; i < m->n_settle_waiters; i++) {
                SettleWaiter *w = &m->settle_waiters[i];
                if (!w->read)
                        *w = (SettleWaiter){w->msg, true, live_events_queued(m->live)};
        }
}

/* Answers the calls whose events are all applied: their signals are on their way. */
static void settle_answer(Manager *m)
{
        uint64_t applied = live_events_applied(m->live);
        size_t kept = 0;

        for (size_t i = 0; i < m->n_settle_waiters; i++) {
                SettleWaiter *w = &m->settle_waiters[i];
                if (w->read && applied >= w->queued) {
                        publisher_settled(m->publisher, w->msg);
                        sd_bus_message_unref(w->msg);
                } else
                        m->settle_waiters[kept++] = *w;
        }
        m->n_settle_waiters = kept;
        if (kept == 0) {
                m->settle_waiters = mfree(m->settle_waiters);
                m->n_settle_waiters_allocated = 0;
                (void) uv_check_stop(&m->settle_check);
        }
}

/* After each turn's I/O, while events the calls wait for are applied. */
static void on_settle_check(uv_check_t *h)
{
        settle_answer(h->data);
}

/*
 * Manager.Settle(): answered once what the kernel had queued when the call came is applied, after its
 * signals.  Not by reading it all here: the queue is read and applied a slice of the loop at a time
 * as always, so that other calls are answered meanwhile (300 loop devices detached or attached at
 * once, then a settle, held the loop 170-200 ms).  While uevents wait for a bus that is behind, so
 * does the call; its answer goes out behind every signal queued before it.  Takes over msg's
 * reference.
 */
static void settle(Manager *m, sd_bus_message *msg)
{
        log_debug("Settle() from %s: answered once the uevents queued now are applied%s.",
                  strna(sd_bus_message_get_sender(msg)),
                  m->paused_for_bus ? "; they wait for the bus to take what is queued for it" : "");
        if (GREEDY_REALLOC(m->settle_waiters, m->n_settle_waiters_allocated, m->n_settle_waiters + 1) < 0) {
                log_ratelimit_error("Out of memory: Settle() is answered at once.");
                publisher_settled(m->publisher, msg);
                sd_bus_message_unref(msg);
                return;
        }
        m->settle_waiters[m->n_settle_waiters++] = (SettleWaiter){.msg = msg};
        /* Paused for the bus, the source reports "drained" once it has resumed and read its queue. */
        if (!uevent_source_watch_drained(m->uevents))
                settle_mark_read(m);
        (void) uv_check_start(&m->settle_check, on_settle_check);
}

static void on_settle(void *userdata, sd_bus_message *msg)
{
        settle(userdata, msg);
}

/* Back-pressure: while sd-bus's write queue is long, stop reading uevents (the kernel keeps them) and
 * hold a rescan and the uevents queued behind a change.  Every reply waits behind what is queued, and
 * NOTES.md: sd-bus drains a long write queue quadratically and fails past ~393k messages.  Not while
 * the bus has stopped reading from us: then the publisher drops signals instead, and the model stays
 * current. */
static void check_backpressure(Manager *m)
{
        if (m->paused_for_bus || !m->publisher || !publisher_congested(m->publisher, false))
                return;
        log_debug("Bus write queue at %" PRIu64 " messages; uevents and rescans wait.",
                  publisher_queued(m->publisher));
        m->paused_for_bus = true;
        if (m->uevents)
                uevent_source_pause(m->uevents);
        live_hold(m->live, true);
        (void) uv_prepare_start(&m->drain_watch, on_bus_drain_check);
}

static void on_event(void *userdata, const EventRecord *e)
{
        Manager *m = userdata;

        if (!m->publisher)
                return;
        publisher_uevent(m->publisher, e);
        check_backpressure(m);
}

static void on_events_lost(void *userdata, uint64_t total)
{
        Manager *m = userdata;
        if (m->publisher)
                publisher_events_lost(m->publisher);
}

/* A rescan reads what the kernel has sent before it makes up a difference.  Not while paused for the
 * bus: what waits in the socket waits on, as the rescan does then anyway. */
static void on_read_uevents(void *userdata)
{
        Manager *m = userdata;

        if (m->uevents && !m->paused_for_bus)
                uevent_source_drain(m->uevents);
}

/* The queue was applied in an idle callback: the loop may sleep next, before the check after its I/O
 * runs, with the calls waiting for what was just applied unanswered (for the poll's next round, or for
 * ever with --poll-interval=0). */
static void on_events_applied(void *userdata)
{
        Manager *m = userdata;

        if (m->n_settle_waiters > 0)
                settle_answer(m);
}

static const LiveOps live_ops = {
                .object_added = on_object_added,
                .object_removed = on_object_removed,
                .interfaces_changed = on_interfaces_changed,
                .properties_changed = on_properties_changed,
                .event = on_event,
                .events_lost = on_events_lost,
                .read_uevents = on_read_uevents,
                .events_applied = on_events_applied,
};

/* ---- signals ---- */

static void on_sigterm(uv_signal_t *h, int signum)
{
        Manager *m = h->data;
        turn_signalled();
        log_info("Got %s, exiting.", signum == SIGTERM ? "SIGTERM" : "SIGINT");
        manager_stop(m, 0);
}

static void on_sighup(uv_signal_t *h, int signum)
{
        Manager *m = h->data;
        int r;

        turn_signalled();
        log_info("Got SIGHUP, rescanning %s.", m->sysfs.root);
        r = live_rescan_start(m->live, NULL, NULL);
        if (r < 0)
                log_error_errno(r, "Cannot rescan: %m");
}

static void on_bus_disconnected(void *userdata)
{
        Manager *m = userdata;
        log_error("The bus went away; exiting.");
        manager_stop(m, 1);
}

/* ---- the service manager's watchdog ---- */

static void on_watchdog(uv_timer_t *h)
{
        (void) sd_notify(false, "WATCHDOG=1");
}

/* A timer on the loop itself: pings stop when the loop stops turning, which is what systemd's
 * watchdog is to find out. */
static int watchdog_start(Manager *m)
{
        uint64_t usec, ms;
        int r;

        r = sd_watchdog_enabled(false, &usec);
        if (r < 0)
                return log_warning_errno(r, "Ignoring the watchdog settings from the service manager: %m");
        if (r == 0)
                return 0;
        /* Half the timeout, as sd_watchdog_enabled(3) advises. */
        ms = MAX(usec / 2 / 1000, (uint64_t) 1);
        r = uv_timer_start(&m->watchdog, on_watchdog, ms, ms);
        if (r < 0)
                return log_warning_errno(r, "Cannot start the watchdog timer: %s", uv_strerror(r));
        log_debug("Pinging the service manager's watchdog every %" PRIu64 " ms.", ms);
        return 0;
}

/* ---- life cycle ---- */

static void on_handle_closed(uv_handle_t *h)
{
        Manager *m = h->data;

        if (--m->n_open_handles == 0)
                free(m);
}

static int handles_init(Manager *m)
{
        int r;

        r = uv_prepare_init(m->loop, &m->drain_watch);
        if (r < 0)
                return r;
        m->drain_watch.data = m;
        m->n_open_handles++;

        r = uv_timer_init(m->loop, &m->watchdog);
        if (r < 0)
                return r;
        m->watchdog.data = m;
        m->n_open_handles++;

        uv_signal_t *signals[] = {&m->sigterm, &m->sigint, &m->sighup};
        for (size_t i = 0; i < ELEMENTSOF(signals); i++) {
                r = uv_signal_init(m->loop, signals[i]);
                if (r < 0)
                        return r;
                signals[i]->data = m;
                m->n_open_handles++;
        }
        r = uv_check_init(m->loop, &m->settle_check);
        if (r < 0)
                return r;
        m->settle_check.data = m;
        m->n_open_handles++;

        r = uv_signal_start(&m->sigterm, on_sigterm, SIGTERM);
        if (r >= 0)
                r = uv_signal_start(&m->sigint, on_sigterm, SIGINT);
        if (r >= 0)
                r = uv_signal_start(&m->sighup, on_sighup, SIGHUP);
        return r;
}

/*
 * Where this daemon's seqnums start: the wall clock in µs.  An earlier
 * daemon, started before, numbered at most one event per µs since then
 * (none comes near), so its seqnums are all below ours, and one a client
 * kept from it is refused by GetEvents as expired instead of naming our
 * events.  Only a clock set back between the two defeats that.
 */
static uint64_t first_seqnum(void)
{
        return MAX(clock_nsec(CLOCK_REALTIME) / 1000, (uint64_t) 1);
}

/* Before the first thread starts, so that every thread reads the fixture as kernfs would. */
static void drop_dac_override(const char *root)
{
        int r = sysfs_drop_dac_override();

        if (r < 0)
                log_warning_errno(r,
                                  "%s is not the kernel's sysfs, and cannot give up CAP_DAC_OVERRIDE (%m): "
                                  "telling files without read permission by an fstat() each.",
                                  root);
        else if (r > 0)
                log_debug("%s is not the kernel's sysfs: gave up CAP_DAC_OVERRIDE, so that opens refuse "
                          "files without read permission as kernfs does.",
                          root);
}

int manager_new(const ManagerOptions *o, uv_loop_t *loop, Manager **ret)
{
        Manager *m;
        int r;

        m = calloc(1, sizeof(Manager));
        if (!m)
                return -ENOMEM;
        m->options = *o;
        m->loop = loop;
        m->sysfs.root_fd = -1;

        r = handles_init(m);
        if (r < 0) {
                log_error("Cannot set up the event loop: %s", uv_strerror(r));
                manager_free(m);
                return r;
        }
        r = eventlog_new(o->event_log_size, first_seqnum(), &m->events);
        if (r >= 0)
                log_info("Numbering events from %" PRIu64, eventlog_first_seqnum(m->events));
        if (r >= 0) {
                r = sysfs_open(o->sysfs_root, &m->sysfs);
                if (r < 0)
                        log_error_errno(r, "Cannot open the sysfs root %s: %m", o->sysfs_root);
        }
        if (r >= 0 && !m->sysfs.kernfs)
                drop_dac_override(o->sysfs_root);
        if (r >= 0)
                r = model_new(&m->model);
        if (r >= 0) {
                LiveConfig c = {
                                .loop = loop,
                                .sysfs = &m->sysfs,
                                .model = m->model,
                                .events = m->events,
                                .poll_interval_ms = o->poll_interval_ms,
                                .ops = &live_ops,
                                .userdata = m,
                };
                r = live_new(&c, &m->live);
        }
        if (r < 0) {
                manager_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

void manager_free(Manager *m)
{
        unsigned n;

        if (!m)
                return;
        uv_handle_t *handles[] = {
                (uv_handle_t *) &m->drain_watch,
                (uv_handle_t *) &m->watchdog,
                (uv_handle_t *) &m->sigterm,
                (uv_handle_t *) &m->sigint,
                (uv_handle_t *) &m->sighup,
                (uv_handle_t *) &m->settle_check,
        };
        uevent_source_free(m->uevents);
        m->uevents = NULL;
        for (size_t i = 0; i < m->n_settle_waiters; i++) {
                publisher_refuse_exiting(m->settle_waiters[i].msg);
                sd_bus_message_unref(m->settle_waiters[i].msg);
        }
        m->settle_waiters = mfree(m->settle_waiters);
        m->n_settle_waiters = m->n_settle_waiters_allocated = 0;
        m->publisher = publisher_free(m->publisher);
        live_free(m->live);
        m->live = NULL;
        model_free(m->model);
        eventlog_free(m->events);
        sysfs_close(&m->sysfs);

        /* The handles live in m: it goes with the last close callback. */
        n = m->n_open_handles;
        if (n == 0) {
                free(m);
                return;
        }
        for (size_t i = 0; i < n; i++)
                uv_close(handles[i], on_handle_closed);
}

static const char *uevent_source_name(const ManagerOptions *o)
{
        if (o->no_uevents)
                return "none";
        if (o->uevent_socket)
                return o->uevent_socket;
        return "netlink";
}

/* Systemd may hand us the kernel's uevent socket (blkmodeld-uevent.socket): no CAP_NET_ADMIN, and it
 * works under PrivateNetwork=.  The fd, or -1 for none: we open our own then. */
static int passed_netlink_fd(void)
{
        int n = sd_listen_fds(true);

        if (n < 0)
                log_warning_errno(n,
                                  "Cannot take the sockets the service manager passed, opening our own: %m");
        if (n <= 0)
                return -1;
        for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + n; fd++)
                if (sd_is_socket(fd, AF_NETLINK, SOCK_RAW, -1) > 0)
                        return fd;
        log_warning("Got %d sockets from the service manager, none of them netlink; opening our own.", n);
        return -1;
}

/* The source's handlers: to live, and the end of the queue to the Settle() calls too. */
static void on_uevent(UeventSource *s, Uevent *u, void *userdata)
{
        Manager *m = userdata;
        live_on_uevent(s, u, m->live);
}

static void on_uevents_lost(UeventSource *s, void *userdata)
{
        Manager *m = userdata;
        live_on_lost(s, m->live);
}

static void on_uevents_drained(UeventSource *s, void *userdata)
{
        Manager *m = userdata;
        live_on_drained(s, m->live);
        settle_mark_read(m);
        /* Found empty by a look between turns, with nothing left to apply, the loop may sleep until
         * the next event: the check after its I/O would answer only then. */
        settle_answer(m);
}

static int open_uevent_source(Manager *m)
{
        int r;

        if (m->options.no_uevents)
                return 0;
        if (m->options.uevent_socket)
                r = uevent_source_new_socket(m->loop, m->options.uevent_socket, on_uevent, on_uevents_lost, m,
                                             &m->uevents);
        else
                r = uevent_source_new_netlink(m->loop, passed_netlink_fd(), m->options.uevent_rcvbuf,
                                              on_uevent, on_uevents_lost, m, &m->uevents);
        if (r < 0)
                return log_error_errno(r, "Cannot listen to uevents on %s: %m",
                                       uevent_source_name(&m->options));
        uevent_source_set_drained_handler(m->uevents, on_uevents_drained);
        return 0;
}

static int publish(Manager *m)
{
        _cleanup_(sd_bus_unrefp) sd_bus *bus = NULL;
        int r;

        r = bus_open(m->options.bus_kind, m->options.address, "blkmodeld", &bus);
        if (r < 0) {
                _cleanup_(freep) char *text = bus_open_error(m->options.bus_kind, m->options.address, r);
                log_error("%s", text ?: "Failed to connect to the bus");
                return r;
        }
        PublisherConfig c = {
                        .loop = m->loop,
                        .bus = bus,
                        .sysfs = &m->sysfs,
                        .model = m->model,
                        .live = m->live,
                        .events = m->events,
                        .uevent_source = uevent_source_name(&m->options),
                        .message_max = m->options.message_max > 0 ? m->options.message_max
                                       : m->options.bus_kind == BUS_KIND_SYSTEM ? BUS_SYSTEM_MESSAGE_MAX
                                                                                : BUS_MESSAGE_MAX,
                        .disconnected = on_bus_disconnected,
                        .settle = on_settle,
                        .userdata = m,
        };
        return publisher_new(&c, &m->publisher);
}

/* SIGTERM and SIGINT wait during the start (a scan of 10,000 disks takes seconds), blocked, so that
 * one that came is obeyed before the name: clients saw the name come and go at once, and the service
 * manager READY=1 and STOPPING=1. */
static bool stop_asked_during_start(const sigset_t *before)
{
        sigset_t pending;
        bool asked = sigpending(&pending) == 0 &&
                     (sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1);

        if (asked)
                log_info("Asked to stop during the start; exiting without taking the name.");
        else
                (void) pthread_sigmask(SIG_SETMASK, before, NULL);
        return asked;
}

int manager_start(Manager *m)
{
        sigset_t stop, before;
        int r;

        sigemptyset(&stop);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGINT);
        (void) pthread_sigmask(SIG_BLOCK, &stop, &before);

        /* Listening starts before the scan, so that nothing happening during it is missed. */
        r = open_uevent_source(m);
        if (r < 0)
                return r;

        /* Everything is published before the name is taken: a client that sees the name sees it all. */
        r = scan_all(&m->sysfs, m->model);
        if (r < 0)
                return r;
        log_info("Found %d disks, %zu objects below %s.", r, m->model->n_objects, m->sysfs.root);

        r = publish(m);
        if (r < 0)
                return r;

        /* What arrived during the scan is applied before the name is taken (adding what exists is
         * harmless). */
        if (m->uevents)
                uevent_source_drain(m->uevents);

        if (stop_asked_during_start(&before)) {
                manager_stop(m, 0);
                return 0;
        }
        r = publisher_take_name(m->publisher);
        if (r < 0)
                return r;
        r = live_start(m->live);
        if (r < 0)
                return log_error_errno(r, "Cannot start recording attribute values: %m");

        (void) sd_notify(false, "READY=1\nSTATUS=Publishing the block device model.");
        (void) watchdog_start(m);
        return 0;
}

/* Releases the name and stops the loop. */
static void manager_stop(Manager *m, int exit_code)
{
        m->exit_code = exit_code;
        (void) sd_notify(false, "STOPPING=1");
        live_stop(m->live);
        if (m->publisher)
                publisher_release_name(m->publisher);
        uevent_source_free(m->uevents);
        m->uevents = NULL;
        uv_stop(m->loop);
}
