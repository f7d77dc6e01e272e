/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * trigger and settle, both measured by blkmodeld's own seqnums.
 *
 * trigger --settle notes LastSeqnum and subscribes to Uevent before it writes anything; it is done
 * when, for each block object it triggered, a Uevent with a higher seqnum, that object and that
 * action has arrived: the daemon sends it after applying the event, so the model then shows it.
 *
 * settle asks the daemon: Manager.Settle() reads what the kernel has queued, applies it and answers
 * after the Uevent signals it sent, with the last seqnum.  rescan, its kin for what changes without a
 * uevent: Manager.Rescan() answers once it has read sysfs again and signalled every difference.
 */

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-events.h"
#include "bus-model.h"
#include "bus-wait.h"
#include "json-util.h"
#include "model.h"
#include "output.h"

#include "common/time-util.h"
#include "common/util.h"

#define SETTLE_TIMEOUT_DEFAULT (120 * USEC_PER_SEC)

static uint64_t settle_deadline(const Ctl *ctl)
{
        uint64_t t = ctl->timeout_set ? ctl->timeout_usec : SETTLE_TIMEOUT_DEFAULT;

        return t == USEC_INFINITY ? USEC_INFINITY : now_usec() + t;
}

static int get_last_seqnum(const Ctl *ctl, sd_bus *bus, uint64_t *ret)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(freep) char *source = NULL;
        int r;

        /* A daemon that reads no uevents never sees the ones triggered: said now, not at the timeout. */
        r = sd_bus_get_property_string(bus, BLKMODEL_BUS_NAME, BLKMODEL_MANAGER_PATH, BLKMODEL_IFACE_MANAGER,
                                       BLKMODEL_PROP_UEVENT_SOURCE, &error, &source);
        if (r < 0)
                return bus_report_error(ctl, &error, r, "Failed to reach blkmodeld");
        if (streq(source, "none"))
                return ctl_fail("blkmodeld reads no uevents (UeventSource none): --settle would never end");

        r = sd_bus_get_property_trivial(bus, BLKMODEL_BUS_NAME, BLKMODEL_MANAGER_PATH,
                                        BLKMODEL_IFACE_MANAGER, BLKMODEL_PROP_LAST_SEQNUM, &error, 't', ret);
        if (r < 0)
                return bus_report_error(ctl, &error, r, "Failed to reach blkmodeld");
        return EXIT_OK;
}

typedef struct Watch {
        bool daemon_gone;
        uint64_t arrivals;
        uint64_t last_arrival; /* CLOCK_MONOTONIC µs */
        /* trigger --settle: the block objects still waited for, and the action and seqnum they need. */
        char **pending;
        size_t n_pending;
        const char *action;
        uint64_t after;
} Watch;

static void watch_done(Watch *w)
{
        w->pending = strv_free(w->pending);
}

static int on_uevent(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        _cleanup_(bus_event_done) BusEvent ev = {};
        Watch *w = userdata;

        w->arrivals++;
        w->last_arrival = now_usec();
        if (bus_message_read_event_fields(m, &ev) < 0 || ev.seqnum <= w->after ||
            !streq_ptr(ev.action, w->action))
                return 0;
        for (size_t i = 0; i < w->n_pending; i++)
                if (streq(w->pending[i], ev.object)) {
                        free(w->pending[i]);
                        w->pending[i] = w->pending[--w->n_pending];
                        w->pending[w->n_pending] = NULL;
                        break;
                }
        return 0;
}

static int on_owner(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        Watch *w = userdata;

        w->daemon_gone = true;
        return 0;
}

static int watch_start(const Ctl *ctl, sd_bus *bus, Watch *w)
{
        int r;

        /* Subscribed before anything is asked or written: no signal can slip past. */
        r = sd_bus_match_signal(bus, NULL, BLKMODEL_BUS_NAME, BLKMODEL_MANAGER_PATH, BLKMODEL_IFACE_MANAGER,
                                BLKMODEL_SIGNAL_UEVENT, on_uevent, w);
        if (r >= 0)
                r = bus_match_daemon_owner(bus, on_owner, w);
        if (r < 0)
                return ctl_fail("Failed to subscribe to signals: %s", strerror(-r));
        return EXIT_OK;
}

/*
 * Dispatches what the bus has and returns 0 if that was anything, so that the caller looks at what
 * changed; else waits for more until until.  -ETIMEDOUT, -EINTR (a signal), or 0.
 */
static int watch_step(sd_bus *bus, int sigfd, uint64_t until)
{
        bool any = false;
        int r;

        while ((r = sd_bus_process(bus, NULL)) > 0)
                any = true;
        if (r < 0)
                return r;
        if (any)
                return 0;
        r = bus_wait_event(bus, sigfd, until);
        if (r == 1)
                return -EINTR;
        return r;
}

static int settle_fail(const Ctl *ctl, int r, const Watch *w, const char *what)
{
        if (w->daemon_gone)
                return ctl_fail("blkmodeld stopped while %s", what);
        if (r == -ETIMEDOUT)
                return ctl_fail("Timed out %s", what);
        if (r == -EINTR)
                return ctl_fail("Interrupted while %s", what);
        return ctl_fail("Lost the connection to the %s while %s: %s", bus_kind_to_string(ctl->bus_kind),
                        what, strerror(-r));
}

/* Calls a method of the Manager that answers once its work is done, and waits for that up to
 * --timeout: -ETIMEDOUT if the answer did not come by then. */
static int manager_call_done(const Ctl *ctl, sd_bus *bus, const char *method, sd_bus_error *error,
                             sd_bus_message **reply)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        uint64_t deadline = settle_deadline(ctl), now = now_usec();
        int r;

        r = sd_bus_message_new_method_call(bus, &m, BLKMODEL_BUS_NAME, BLKMODEL_MANAGER_PATH,
                                           BLKMODEL_IFACE_MANAGER, method);
        if (r >= 0)
                r = sd_bus_call(bus, m, deadline > now ? deadline - now : 1, error, reply);
        if (r == -ETIMEDOUT || sd_bus_error_has_name(error, SD_BUS_ERROR_TIMEOUT) ||
            sd_bus_error_has_name(error, SD_BUS_ERROR_NO_REPLY))
                return -ETIMEDOUT;
        return r;
}

int cmd_settle(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(json_object_putp) json_object *j = NULL;
        uint64_t last = 0;
        sd_bus *bus = NULL;
        int r;

        r = ctl_bus(ctl, &bus);
        if (r != EXIT_OK)
                return r;
        /* The daemon answers once what the kernel had queued is applied; its Uevents come first. */
        r = manager_call_done(ctl, bus, BLKMODEL_METHOD_SETTLE, &error, &reply);
        if (r >= 0)
                r = sd_bus_message_read(reply, "t", &last);
        if (r == -ETIMEDOUT)
                return ctl_fail("Timed out waiting for blkmodeld to settle");
        if (r < 0)
                return bus_report_error(ctl, &error, r, "Failed to settle");

        if (!ctl->json)
                return EXIT_OK;
        j = json_object_new_object();
        if (!j)
                return ctl_fail("Out of memory");
        json_object_object_add(j, "settled", json_object_new_boolean(true));
        json_object_object_add(j, "last_seqnum", json_object_new_uint64(last));
        output_json(j, true);
        return EXIT_OK;
}

int cmd_rescan(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(json_object_putp) json_object *j = NULL;
        sd_bus *bus = NULL;
        int r;

        r = ctl_bus(ctl, &bus);
        if (r != EXIT_OK)
                return r;
        /* The daemon answers once it has read sysfs again and signalled every difference. */
        r = manager_call_done(ctl, bus, BLKMODEL_METHOD_RESCAN, &error, &reply);
        if (r == -ETIMEDOUT)
                return ctl_fail("Timed out waiting for blkmodeld's rescan");
        if (r < 0)
                return bus_report_error(ctl, &error, r, "Failed to rescan");

        if (!ctl->json)
                return EXIT_OK;
        j = json_object_new_object();
        if (!j)
                return ctl_fail("Out of memory");
        json_object_object_add(j, "rescanned", json_object_new_boolean(true));
        output_json(j, true);
        return EXIT_OK;
}

static bool trigger_filter(const char *iface, const char *name, void *userdata)
{
        return (streq(iface, BLKMODEL_IFACE_KOBJECT) &&
                (streq(name, BLKMODEL_PROP_NAME) || streq(name, BLKMODEL_PROP_KTYPE))) ||
               (streq(iface, BLKMODEL_IFACE_DEVICE) && streq(name, BLKMODEL_PROP_SUBSYSTEM));
}

static bool matches_any(char *const *patterns, size_t n, const char *s)
{
        if (n == 0)
                return true;
        for (size_t i = 0; i < n; i++)
                if (fnmatch(patterns[i], s, 0) == 0)
                        return true;
        return false;
}

/* Without OBJECTs: the disks and partitions, and the hardware of a --subsystem-match, that match. */
static int trigger_enumerate(Ctl *ctl, sd_bus *bus, char ***targets, size_t *n)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(json_object_putp) json_object *model = NULL;
        _cleanup_(freep) const char **paths = NULL;
        size_t m = 0;
        int r;

        r = bus_load_model(bus, BLKMODEL_ROOT_PATH, trigger_filter, NULL, &model, &error);
        if (r < 0)
                return bus_report_error(ctl, &error, r, "Failed to get the model");
        paths = calloc((size_t) json_object_object_length(model) + 1, sizeof(char *));
        if (!paths)
                return ctl_fail("Out of memory");
        json_object_object_foreach(model, path, obj) {
                const char *ktype = model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_KTYPE);
                const char *sub = NULL;

                if (streq_ptr(ktype, BLKMODEL_KTYPE_DISK) || streq_ptr(ktype, BLKMODEL_KTYPE_PARTITION))
                        sub = "block";
                else if (streq_ptr(ktype, BLKMODEL_KTYPE_DEVICE) && ctl->n_subsystem_match > 0)
                        sub = model_string(obj, BLKMODEL_IFACE_DEVICE, BLKMODEL_PROP_SUBSYSTEM);
                if (isempty(sub) || !matches_any(ctl->subsystem_match, ctl->n_subsystem_match, sub) ||
                    !matches_any(ctl->sysname_match, ctl->n_sysname_match, model_name(model, path)))
                        continue;
                paths[m++] = path;
        }
        model_sort_paths(model, paths, m);
        for (size_t i = 0; i < m; i++)
                if (strv_extend(targets, n, paths[i]) < 0)
                        return ctl_fail("Out of memory");
        return EXIT_OK;
}

int cmd_trigger(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(json_object_putp) json_object *j = NULL;
        _cleanup_(strv_freep) char **targets = NULL;
        _cleanup_(closep) int sigfd = -1;
        const char *action = ctl->actions ?: "change";
        _cleanup_(watch_done) Watch w = {.action = action};
        size_t n = 0;
        sd_bus *bus = NULL;
        int r;

        r = ctl_bus(ctl, &bus);
        if (r != EXIT_OK)
                return r;

        for (int i = 0; i < n_args; i++) {
                char *path = NULL;

                r = ctl_resolve(ctl, args[i], &bus, &path);
                if (r != EXIT_OK)
                        return r;
                if (strv_consume(&targets, &n, path) < 0)
                        return ctl_fail("Out of memory");
        }
        if (n_args == 0) {
                r = trigger_enumerate(ctl, bus, &targets, &n);
                if (r != EXIT_OK)
                        return r;
        }

        if (ctl->settle) {
                sigfd = bus_signalfd_open();
                if (sigfd < 0)
                        return ctl_fail("Failed to watch signals: %s", strerror(-sigfd));
                r = watch_start(ctl, bus, &w);
                if (r == EXIT_OK)
                        r = get_last_seqnum(ctl, bus, &w.after);
                if (r != EXIT_OK)
                        return r;
        }

        for (size_t i = 0; i < n; i++) {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                _cleanup_(freep) char *what = NULL;

                r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, BLKMODEL_MANAGER_PATH, BLKMODEL_IFACE_MANAGER,
                                       BLKMODEL_METHOD_TRIGGER, &error, NULL, "os", targets[i], action);
                if (r < 0) {
                        if (asprintf(&what, "Failed to trigger '%s' on %s", action,
                                     i < (size_t) n_args ? args[i] : targets[i]) < 0)
                                what = NULL;
                        return bus_report_error(ctl, &error, r, what ?: targets[i]);
                }
                /* Only block objects' uevents come back as Uevent signals; the hardware's are not ours. */
                if (ctl->settle && (startswith(targets[i], BLKMODEL_BLOCK_PATH "/")) &&
                    strv_extend(&w.pending, &w.n_pending, targets[i]) < 0)
                        return ctl_fail("Out of memory");
        }

        if (ctl->settle) {
                uint64_t deadline = settle_deadline(ctl);

                while (w.n_pending > 0 && !w.daemon_gone) {
                        r = watch_step(bus, sigfd, deadline);
                        if (r < 0 && w.n_pending > 0) {
                                _cleanup_(freep) char *what = NULL;

                                if (asprintf(&what, "waiting for the uevents of %zu object(s), %s first",
                                             w.n_pending, w.pending[0]) < 0)
                                        what = NULL;
                                return settle_fail(ctl, r, &w, what ?: "waiting for uevents");
                        }
                }
                if (w.daemon_gone && w.n_pending > 0)
                        return settle_fail(ctl, 0, &w, "waiting for uevents");
        }

        if (!ctl->json)
                return EXIT_OK;
        j = json_object_new_object();
        if (!j)
                return ctl_fail("Out of memory");
        json_object_object_add(j, "action", json_object_new_string(action));
        json_object *objs = json_add_array(j, "objects");
        for (size_t i = 0; objs && i < n; i++)
                json_object_array_add(objs, json_object_new_string(targets[i]));
        json_object_object_add(j, "settled", json_object_new_boolean(ctl->settle));
        output_json(j, true);
        return EXIT_OK;
}
