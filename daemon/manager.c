/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <systemd/sd-daemon.h>

#include "bus-object.h"
#include "eventlog.h"
#include "live.h"
#include "log.h"
#include "loop.h"
#include "manager.h"
#include "names.h"
#include "scan.h"
#include "uevent-source.h"
#include "common/util.h"

static void on_object_added(Model *model, Kobject *k, void *userdata)
{
        Manager *m = userdata;
        int r;

        if (!m->announce)
                return;
        r = bus_object_emit_added(m, k);
        if (r < 0)
                log_warning_errno(r, "Cannot announce %s: %m", k->path);
}

static void on_object_removed(Model *model, Kobject *k, void *userdata)
{
        Manager *m = userdata;
        int r;

        (void) hashmap_remove_value(&m->stacked, k->path, k);
        if (!m->announce)
                return;
        r = bus_object_emit_removed(m, k);
        if (r < 0)
                log_warning_errno(r, "Cannot announce the removal of %s: %m", k->path);
}

static const ModelObserver manager_observer = {
                .added = on_object_added,
                .removed = on_object_removed,
};

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
        hashmap_init(&m->stacked);

        r = eventlog_new(o->event_log_size, &m->events);
        if (r < 0) {
                free(m);
                return r;
        }

        r = sysfs_open(o->sysfs_root, &m->sysfs);
        if (r < 0) {
                log_error_errno(r, "Cannot open the sysfs root %s: %m", o->sysfs_root);
                manager_free(m);
                return r;
        }
        r = model_new(&m->sysfs, &m->model);
        if (r < 0) {
                manager_free(m);
                return r;
        }
        model_set_observer(m->model, &manager_observer, m);
        *ret = m;
        return 0;
}

static void on_handle_close(uv_handle_t *h)
{
}

/* Closes every loop handle we own, so that the loop can finish; idempotent. */
static void close_handles(Manager *m)
{
        uv_handle_t *handles[] = {
                        (uv_handle_t *) &m->sigterm, (uv_handle_t *) &m->sigint,
                        (uv_handle_t *) &m->sighup,  (uv_handle_t *) &m->drain_watch,
                        (uv_handle_t *) &m->warmup,  (uv_handle_t *) &m->poll_timer,
        };

        if (m->handles_ready) {
                live_warmup_stop(m);
                live_poll_stop(m);
                for (size_t i = 0; i < ELEMENTSOF(handles); i++)
                        if (!uv_is_closing(handles[i]))
                                uv_close(handles[i], on_handle_close);
                m->handles_ready = false;
                m->drain_watch_ready = false;
        }
        uevent_source_free(m->uevents);
        m->uevents = NULL;
        bus_loop_free(m->bus_loop);
        m->bus_loop = NULL;
}

Manager *manager_free(Manager *m)
{
        if (!m)
                return NULL;
        m->announce = false;
        close_handles(m);
        /* The handles live in m: their close callbacks must have run before it is freed. */
        (void) uv_run(m->loop, UV_RUN_DEFAULT);
        model_free(m->model);
        sd_bus_flush_close_unref(m->bus);
        eventlog_free(m->events);
        hashmap_deinit(&m->stacked);
        sysfs_close(&m->sysfs);
        free(m);
        return NULL;
}

static int bus_connect(Manager *m)
{
        int r = -EINVAL;

        switch (m->options.bus_kind) {
        case BUS_SYSTEM:
                r = sd_bus_open_system_with_description(&m->bus, "blkmodeld");
                break;
        case BUS_SESSION:
                r = sd_bus_open_user_with_description(&m->bus, "blkmodeld");
                break;
        case BUS_ADDRESS:
                r = sd_bus_new(&m->bus);
                if (r < 0)
                        break;
                r = sd_bus_set_address(m->bus, m->options.address);
                if (r >= 0)
                        r = sd_bus_set_bus_client(m->bus, true);
                if (r >= 0)
                        r = sd_bus_set_description(m->bus, "blkmodeld");
                if (r >= 0)
                        r = sd_bus_start(m->bus);
                break;
        }
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the bus: %m");
        return 0;
}

static void on_bus_disconnected(BusLoop *l, void *userdata)
{
        Manager *m = userdata;
        log_error("The bus went away; exiting.");
        manager_stop(m, 1);
}

static void on_sigterm(uv_signal_t *h, int signum)
{
        Manager *m = h->data;
        log_info("Got %s, exiting.", signum == SIGTERM ? "SIGTERM" : "SIGINT");
        manager_stop(m, 0);
}

static void on_sighup(uv_signal_t *h, int signum)
{
        Manager *m = h->data;
        int r;

        log_info("Got SIGHUP, rescanning %s.", m->sysfs.root);
        r = manager_rescan(m);
        if (r < 0)
                log_error_errno(r, "Rescan failed: %m");
}

static int setup_handles(Manager *m)
{
        uv_prepare_init(m->loop, &m->drain_watch);
        uv_idle_init(m->loop, &m->warmup);
        uv_timer_init(m->loop, &m->poll_timer);
        m->drain_watch.data = m->warmup.data = m->poll_timer.data = m;
        m->drain_watch_ready = true;
        m->handles_ready = true;

        uv_signal_init(m->loop, &m->sigterm);
        uv_signal_init(m->loop, &m->sigint);
        uv_signal_init(m->loop, &m->sighup);
        m->sigterm.data = m->sigint.data = m->sighup.data = m;
        uv_signal_start(&m->sigterm, on_sigterm, SIGTERM);
        uv_signal_start(&m->sigint, on_sigterm, SIGINT);
        uv_signal_start(&m->sighup, on_sighup, SIGHUP);
        return 0;
}

/* Systemd may hand us the kernel's uevent socket (blkmodeld-uevent.socket): no CAP_NET_ADMIN, and
 * it works under PrivateNetwork=. */
static int passed_netlink_fd(void)
{
        int n = sd_listen_fds(true);

        if (n <= 0)
                return -1;
        for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + n; fd++)
                if (sd_is_socket(fd, AF_NETLINK, SOCK_RAW, -1) > 0)
                        return fd;
        log_warning("Got %d sockets from the service manager, none of them netlink; opening our own.", n);
        return -1;
}

static int open_uevent_source(Manager *m)
{
        int r;

        if (m->options.no_uevents)
                return 0;
        if (m->options.uevent_socket)
                r = uevent_source_new_socket(m->loop, m->options.uevent_socket, live_on_uevent, live_on_lost,
                                             m, &m->uevents);
        else
                r = uevent_source_new_netlink(m->loop, passed_netlink_fd(), m->options.uevent_rcvbuf,
                                              live_on_uevent, live_on_lost, m, &m->uevents);
        if (r < 0)
                return log_error_errno(r, "Cannot listen to uevents on %s: %m",
                                       manager_uevent_source_name(m));
        uevent_source_set_drained_handler(m->uevents, live_on_drained);
        return 0;
}

int manager_start(Manager *m)
{
        int r;

        setup_handles(m);

        /* Listening starts before the scan, so that nothing happening during it is missed. */
        r = open_uevent_source(m);
        if (r < 0)
                return r;

        /* Everything is published before the name is taken: a client that sees the name sees it all. */
        r = scan_all(m->model);
        if (r < 0)
                return r;
        log_info("Found %d disks, %zu objects below %s.", r, m->model->n_objects, m->sysfs.root);

        r = bus_connect(m);
        if (r < 0)
                return r;
        r = bus_object_register(m);
        if (r < 0)
                return log_error_errno(r, "Cannot publish the objects: %m");
        r = bus_loop_attach(m->loop, m->bus, on_bus_disconnected, m, &m->bus_loop);
        if (r < 0)
                return log_error_errno(r, "Cannot attach the bus to the event loop: %m");

        /* What arrived during the scan is applied before the name is taken (adding what exists is harmless).
         */
        if (m->uevents)
                uevent_source_drain(m->uevents);

        r = sd_bus_request_name(m->bus, BLKMODEL_BUS_NAME, 0);
        if (r < 0)
                return log_error_errno(r, "Cannot take the name " BLKMODEL_BUS_NAME ": %m");
        m->name_taken = true;
        m->announce = true;

        r = live_warmup_start(m);
        if (r < 0)
                return log_error_errno(r, "Cannot start recording attribute values: %m");
        live_poll_start(m);

        (void) sd_notify(false, "READY=1\nSTATUS=Publishing the block device model.");
        return 0;
}

void manager_stop(Manager *m, int exit_code)
{
        m->exit_code = exit_code;
        m->announce = false;
        (void) sd_notify(false, "STOPPING=1");
        if (m->name_taken && m->bus && sd_bus_is_open(m->bus) > 0) {
                (void) sd_bus_release_name(m->bus, BLKMODEL_BUS_NAME);
                m->name_taken = false;
        }
        close_handles(m);
        uv_stop(m->loop);
}

int manager_rescan(Manager *m)
{
        int r = live_reconcile(m);
        if (r >= 0)
                log_info("Rescan: %d differences.", r);
        return r;
}

const char *manager_uevent_source_name(const Manager *m)
{
        if (m->options.no_uevents)
                return "none";
        if (m->options.uevent_socket)
                return m->options.uevent_socket;
        return "netlink";
}

uint64_t manager_last_seqnum(const Manager *m)
{
        return eventlog_last_seqnum(m->events);
}

uint64_t manager_oldest_seqnum(const Manager *m)
{
        return eventlog_oldest_seqnum(m->events);
}
