/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * wait: return when an object exists (or is gone).  The signals are
 * subscribed to before the first Resolve, so an object that appears
 * between the two is seen either by Resolve or by the signal.  A signal
 * that names the object settles the wait by itself, even when the object
 * is back (or gone again) by the time Resolve could look; any other leads
 * to a fresh Resolve, which also covers specs only the daemon can follow
 * (sda/queue, /sys/block/sda, links).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-model.h"
#include "bus-wait.h"
#include "json-util.h"
#include "output.h"

#include "common/time-util.h"
#include "common/util.h"

typedef struct Waiter {
        Ctl *ctl;
        const char *spec;
        bool dirty;     /* something changed: look again */
        bool done;      /* a signal named the object as added (or removed) */
        char *path;     /* the object, while it exists */
        bool no_daemon; /* the last look found no blkmodeld */
        /* --removed, before any look found the object: the objects removed meanwhile, which the
         * spec may have named (the look that follows tells). */
        char **gone;
        size_t n_gone;
        bool oom; /* one of them could not be kept */
} Waiter;

static int on_change(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        Waiter *w = userdata;

        w->dirty = true;
        return 0;
}

/* What of an added object a spec can name without the daemon's help (see Resolve). */
typedef struct Added {
        const char *name, *devpath, *ktype;
        uint32_t major, minor;
} Added;

static int read_added(sd_bus_message *m, Added *a)
{
        const char *iface, *prop;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sa{sv}}");
        while (r > 0 && (r = sd_bus_message_enter_container(m, 'e', "sa{sv}")) > 0) {
                r = sd_bus_message_read(m, "s", &iface);
                if (r >= 0)
                        r = sd_bus_message_enter_container(m, 'a', "{sv}");
                while (r > 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                        r = sd_bus_message_read(m, "s", &prop);
                        if (r < 0)
                                break;
                        bool kobject = streq(iface, BLKMODEL_IFACE_KOBJECT);
                        bool device = streq(iface, BLKMODEL_IFACE_DISK) ||
                                      streq(iface, BLKMODEL_IFACE_PARTITION);
                        if (kobject && streq(prop, BLKMODEL_PROP_NAME))
                                r = sd_bus_message_read(m, "v", "s", &a->name);
                        else if (kobject && streq(prop, BLKMODEL_PROP_DEVPATH))
                                r = sd_bus_message_read(m, "v", "s", &a->devpath);
                        else if (kobject && streq(prop, BLKMODEL_PROP_KTYPE))
                                r = sd_bus_message_read(m, "v", "s", &a->ktype);
                        else if (device && streq(prop, BLKMODEL_PROP_MAJOR))
                                r = sd_bus_message_read(m, "v", "u", &a->major);
                        else if (device && streq(prop, BLKMODEL_PROP_MINOR))
                                r = sd_bus_message_read(m, "v", "u", &a->minor);
                        else
                                r = sd_bus_message_skip(m, "v");
                        if (r >= 0)
                                r = sd_bus_message_exit_container(m);
                }
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        return r;
}

/* Does the spec name the added object as Resolve would: its path, devpath, device number, or as a
 * disk or partition its kernel name or /dev node? */
static bool added_is(const char *spec, const char *path, const Added *a)
{
        const char *sys = startswith(spec, "/sys"), *dev = startswith(spec, "/dev/");
        unsigned major, minor;
        char end;

        if (streq(spec, path) || (a->devpath && (streq(spec, a->devpath) || streq_ptr(sys, a->devpath))))
                return true;
        if (!a->ktype || !(streq(a->ktype, "disk") || streq(a->ktype, "partition")))
                return false;
        if (sscanf(spec, "%u:%u%c", &major, &minor, &end) == 2)
                return major == a->major && minor == a->minor;
        if (!a->name)
                return false;
        if (streq(spec, a->name))
                return true;
        if (!dev)
                return false;
        /* /dev/cciss/c0d0 is cciss!c0d0 in sysfs. */
        _cleanup_(freep) char *name = kernel_name_of(dev);
        return name && streq(name, a->name);
}

static int on_added(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        Waiter *w = userdata;
        Added a = {};
        const char *path;

        w->dirty = true;
        if (sd_bus_message_read(m, "o", &path) < 0 || read_added(m, &a) < 0 || !added_is(w->spec, path, &a))
                return 0;
        /* It existed, whatever comes after this signal. */
        char *copy = strdup(path);
        if (copy) {
                free(w->path);
                w->path = copy;
                w->done = true;
        }
        return 0;
}

static int on_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        _cleanup_(strv_freep) char **ifaces = NULL;
        Waiter *w = userdata;
        const char *path;

        w->dirty = true;
        if (sd_bus_message_read(m, "o", &path) < 0 || sd_bus_message_read_strv(m, &ifaces) < 0)
                return 0;
        if (!strv_contains(ifaces, BLKMODEL_IFACE_KOBJECT))
                return 0;
        /* The object found earlier is gone, whatever comes after this signal (the same name back). */
        if (streq_ptr(w->path, path))
                w->done = true;
        /* Not looked for yet (the signal came before the first Resolve was sent, or while there was no
         * daemon): if the look finds the object at this path, it is back, and this was its removal. */
        else if (!w->path && strv_extend(&w->gone, &w->n_gone, path) < 0)
                w->oom = true;
        return 0;
}

/*
 * A spec that is a file outside the model (/dev/disk/by-id/..., /dev/mapper/..., any link to a node)
 * can begin to name the object without any signal: udev makes its links after the kernel's uevent,
 * which the daemon has already applied and announced.  Such a spec is looked at again every
 * WAIT_PATH_POLL_USEC while it names nothing.
 */
#define WAIT_PATH_POLL_USEC (250 * USEC_PER_MSEC)

static bool spec_is_local_path(const char *spec)
{
        return spec[0] == '/' && !startswith(spec, BLKMODEL_ROOT_PATH "/") && !streq(spec, BLKMODEL_ROOT_PATH) &&
               !startswith(spec, "/sys/") && !startswith(spec, "/devices/");
}

static void waiter_done(Waiter *w)
{
        w->path = mfree(w->path);
        w->gone = strv_free(w->gone);
}

/* Returns 1 when the wait is over, 0 to go on, or a negative errno after it reported the failure. */
static int waiter_check(Waiter *w)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(freep) char *path = NULL;
        int r;

        r = bus_resolve(w->ctl->bus, w->spec, &path, &error);
        w->no_daemon = r < 0 && bus_error_is_not_running(&error);
        if (r >= 0) {
                /* Found where an object was removed since wait subscribed: that was its removal. */
                bool was_gone = strv_contains(w->gone, path);

                w->gone = strv_free(w->gone);
                w->n_gone = 0;
                free(w->path);
                w->path = TAKE_PTR(path);
                return !w->ctl->removed || was_gone;
        }
        if (sd_bus_error_has_name(&error, BLKMODEL_ERROR_NO_SUCH_OBJECT))
                return w->ctl->removed;
        if (w->no_daemon)
                return 0; /* wait for the daemon to come */
        (void) bus_report_resolve_error(w->ctl, &error, r, w->spec);
        return r;
}

int cmd_wait(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(waiter_done) Waiter w = {.ctl = ctl, .spec = args[0], .dirty = true};
        _cleanup_(json_object_putp) json_object *j = NULL;
        _cleanup_(closep) int sigfd = -1;
        uint64_t deadline = USEC_INFINITY;
        sd_bus *bus = NULL;
        int r;

        r = ctl_bus(ctl, &bus);
        if (r != EXIT_OK)
                return r;

        if (ctl->timeout_usec != USEC_INFINITY)
                deadline = now_usec() + ctl->timeout_usec;

        sigfd = bus_signalfd_open();
        if (sigfd < 0)
                return ctl_fail("Failed to watch signals: %s", strerror(-sigfd));

        /* Subscribe first (AddMatch is synchronous), then look. */
        r = sd_bus_match_signal(bus, NULL, BLKMODEL_BUS_NAME, BLKMODEL_ROOT_PATH,
                                "org.freedesktop.DBus.ObjectManager",
                                ctl->removed ? "InterfacesRemoved" : "InterfacesAdded",
                                ctl->removed ? on_removed : on_added, &w);
        if (r >= 0)
                r = bus_match_daemon_owner(bus, on_change, &w);
        if (r < 0)
                return ctl_fail("Failed to subscribe to signals: %s", strerror(-r));

        for (;;) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return ctl_fail("Lost the connection to the %s: %s",
                                        bus_kind_to_string(ctl->bus_kind), strerror(-r));
                if (w.done)
                        break;
                if (w.oom)
                        return ctl_fail("Out of memory");
                if (r > 0)
                        continue;

                /* Look again only once the queue is drained: one Resolve per burst. */
                if (w.dirty) {
                        w.dirty = false;
                        r = waiter_check(&w);
                        if (r < 0)
                                return EXIT_FAIL;
                        if (r > 0)
                                break;
                        continue;
                }

                /* A file not there yet is no signal's business: look again now and then. */
                uint64_t until = deadline;
                bool poll_path = !ctl->removed && spec_is_local_path(w.spec);
                if (poll_path)
                        until = MIN(deadline, now_usec() + WAIT_PATH_POLL_USEC);
                r = bus_wait_event(bus, sigfd, until);
                if (r == -ETIMEDOUT && until != deadline && now_usec() < deadline) {
                        w.dirty = true;
                        continue;
                }
                /* Say why nothing could appear, if that is why. */
                if (r == -ETIMEDOUT)
                        return ctl_fail("Timed out waiting for %s %s%s", w.spec,
                                        ctl->removed ? "to be removed" : "to appear",
                                        w.no_daemon ? " (blkmodeld is not running on this bus)" : "");
                if (r == 1)
                        return ctl_fail("Interrupted while waiting for %s", w.spec);
                if (r < 0)
                        return ctl_fail("Lost the connection to the %s: %s",
                                        bus_kind_to_string(ctl->bus_kind), strerror(-r));
        }

        if (!ctl->json)
                return EXIT_OK;

        j = json_object_new_object();
        if (!j)
                return ctl_fail("Out of memory");
        json_object_object_add(j, "spec", json_object_new_string(w.spec));
        json_object_object_add(j, "object", w.path ? json_object_new_string(w.path) : NULL);
        json_object_object_add(j, "present", json_object_new_boolean(!ctl->removed));
        output_json(j, true);
        return EXIT_OK;
}
