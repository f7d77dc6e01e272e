/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <systemd/sd-daemon.h>

#include "bus-object.h"
#include "log.h"
#include "loop.h"
#include "manager.h"
#include "names.h"
#include "reconcile.h"
#include "scan.h"
#include "util.h"

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

static void on_signal_close(uv_handle_t *h)
{
}

Manager *manager_free(Manager *m)
{
        if (!m)
                return NULL;
        m->announce = false;
        model_free(m->model);
        bus_loop_free(m->bus_loop);
        sd_bus_flush_close_unref(m->bus);
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

static int setup_signals(Manager *m)
{
        uv_signal_init(m->loop, &m->sigterm);
        uv_signal_init(m->loop, &m->sigint);
        uv_signal_init(m->loop, &m->sighup);
        m->sigterm.data = m->sigint.data = m->sighup.data = m;
        uv_signal_start(&m->sigterm, on_sigterm, SIGTERM);
        uv_signal_start(&m->sigint, on_sigterm, SIGINT);
        uv_signal_start(&m->sighup, on_sighup, SIGHUP);
        return 0;
}

int manager_start(Manager *m)
{
        int r;

        setup_signals(m);

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

        r = sd_bus_request_name(m->bus, BLKMODEL_BUS_NAME, 0);
        if (r < 0)
                return log_error_errno(r, "Cannot take the name " BLKMODEL_BUS_NAME ": %m");
        m->name_taken = true;
        m->announce = true;

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
        uv_close((uv_handle_t *) &m->sigterm, on_signal_close);
        uv_close((uv_handle_t *) &m->sigint, on_signal_close);
        uv_close((uv_handle_t *) &m->sighup, on_signal_close);
        bus_loop_free(m->bus_loop);
        m->bus_loop = NULL;
        uv_stop(m->loop);
}

int manager_rescan(Manager *m)
{
        int r = reconcile_all(m->model);
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
        return 0;
}

uint64_t manager_oldest_seqnum(const Manager *m)
{
        return 0;
}
