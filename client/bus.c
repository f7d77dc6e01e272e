/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus.h"

#include "common/time-util.h"

bool bus_error_is_not_running(const sd_bus_error *error)
{
        return sd_bus_error_has_names(error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER);
}

int bus_report_error(const sd_bus_error *error, int r, const char *what)
{
        if (sd_bus_error_is_set(error)) {
                if (bus_error_is_not_running(error))
                        return ctl_fail("blkmodeld is not running on this bus (%s)", error->name);
                if (error->message && error->message[0] != '\0') {
                        if (what)
                                return ctl_fail("%s: %s (%s)", what, error->message, error->name);
                        return ctl_fail("%s (%s)", error->message, error->name);
                }
                return ctl_fail("%s: %s", what ? what : "Call failed", error->name);
        }
        return ctl_fail("%s: %s", what ? what : "Call failed", strerror(r < 0 ? -r : r));
}

int bus_report_resolve_error(const sd_bus_error *error, int r, const char *spec)
{
        /* Our own wording, whatever the daemon's message says. */
        if (sd_bus_error_has_name(error, BLKMODEL_ERROR_NO_SUCH_OBJECT))
                return ctl_fail("No such object: %s (%s)", spec, error->name);
        return bus_report_error(error, r, spec);
}

int bus_resolve(sd_bus *bus, const char *spec, char **ret_path, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        const char *path;
        char *copy;
        int r;

        /* The root object is no kobject, so Resolve need not know it. */
        if (strcmp(spec, BLKMODEL_ROOT_PATH) == 0) {
                copy = strdup(spec);
                if (!copy)
                        return -ENOMEM;
                *ret_path = copy;
                return 0;
        }

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, BLKMODEL_ROOT_PATH, BLKMODEL_IFACE_MANAGER,
                               BLKMODEL_METHOD_RESOLVE, error, &reply, "s", spec);
        if (r < 0)
                return r;

        r = sd_bus_message_read(reply, "o", &path);
        if (r >= 0) {
                copy = strdup(path);
                r = copy ? 0 : -ENOMEM;
        }
        sd_bus_message_unref(reply);
        if (r < 0)
                return r;

        *ret_path = copy;
        return 0;
}

int bus_message_read_basic_string(sd_bus_message *m, char type, char **ret)
{
        union {
                uint8_t u8;
                int16_t s16;
                uint16_t u16;
                int32_t s32;
                uint32_t u32;
                int64_t s64;
                uint64_t u64;
                double d;
                int b;
                const char *s;
        } v;
        char *s = NULL;
        int r;

        r = sd_bus_message_read_basic(m, type, &v);
        if (r < 0)
                return r;

        switch (type) {
        case SD_BUS_TYPE_STRING:
        case SD_BUS_TYPE_OBJECT_PATH:
        case SD_BUS_TYPE_SIGNATURE:
                s = strdup(v.s);
                break;
        case SD_BUS_TYPE_BOOLEAN:
                s = strdup(v.b ? "true" : "false");
                break;
        case SD_BUS_TYPE_BYTE:
                r = asprintf(&s, "%u", v.u8);
                break;
        case SD_BUS_TYPE_INT16:
                r = asprintf(&s, "%d", v.s16);
                break;
        case SD_BUS_TYPE_UINT16:
                r = asprintf(&s, "%u", v.u16);
                break;
        case SD_BUS_TYPE_INT32:
        case SD_BUS_TYPE_UNIX_FD:
                r = asprintf(&s, "%" PRIi32, v.s32);
                break;
        case SD_BUS_TYPE_UINT32:
                r = asprintf(&s, "%" PRIu32, v.u32);
                break;
        case SD_BUS_TYPE_INT64:
                r = asprintf(&s, "%" PRIi64, v.s64);
                break;
        case SD_BUS_TYPE_UINT64:
                r = asprintf(&s, "%" PRIu64, v.u64);
                break;
        case SD_BUS_TYPE_DOUBLE:
                r = asprintf(&s, "%g", v.d);
                break;
        default:
                return -EBADMSG;
        }
        if (r < 0 || !s)
                return -ENOMEM;

        *ret = s;
        return 0;
}

static int read_basic_json(sd_bus_message *m, char type, json_object **ret)
{
        union {
                uint8_t u8;
                int16_t s16;
                uint16_t u16;
                int32_t s32;
                uint32_t u32;
                int64_t s64;
                uint64_t u64;
                double d;
                int b;
                const char *s;
        } v;
        json_object *j = NULL;
        int r;

        r = sd_bus_message_read_basic(m, type, &v);
        if (r < 0)
                return r;

        switch (type) {
        case SD_BUS_TYPE_STRING:
        case SD_BUS_TYPE_OBJECT_PATH:
        case SD_BUS_TYPE_SIGNATURE:
                j = json_object_new_string(v.s);
                break;
        case SD_BUS_TYPE_BOOLEAN:
                j = json_object_new_boolean(v.b);
                break;
        case SD_BUS_TYPE_BYTE:
                j = json_object_new_int(v.u8);
                break;
        case SD_BUS_TYPE_INT16:
                j = json_object_new_int(v.s16);
                break;
        case SD_BUS_TYPE_UINT16:
                j = json_object_new_int(v.u16);
                break;
        case SD_BUS_TYPE_INT32:
        case SD_BUS_TYPE_UNIX_FD:
                j = json_object_new_int(v.s32);
                break;
        case SD_BUS_TYPE_UINT32:
                j = json_object_new_int64(v.u32);
                break;
        case SD_BUS_TYPE_INT64:
                j = json_object_new_int64(v.s64);
                break;
        case SD_BUS_TYPE_UINT64:
                j = json_object_new_uint64(v.u64);
                break;
        case SD_BUS_TYPE_DOUBLE:
                j = json_object_new_double(v.d);
                break;
        default:
                return -EBADMSG;
        }
        if (!j)
                return -ENOMEM;

        *ret = j;
        return 0;
}

/* Reads one entry of a dict: its key, then its value, both whole. */
typedef int (*DictEntryReader)(sd_bus_message *m, void *userdata);

/*
 * Walks a D-Bus dict, the array of contents ("{sv}", "{oa{sa{sv}}}", …), calling read_entry inside
 * each entry.  Every dict in a reply, however deeply nested, is read through here, so the
 * container bookkeeping is written once.
 */
static int read_dict(sd_bus_message *m, const char *contents, DictEntryReader read_entry, void *userdata)
{
        char entry[SD_BUS_MAXIMUM_SIGNATURE_LENGTH + 1];
        size_t len = strlen(contents);
        int r;

        /* sd-bus wants the entry's own signature, contents without its braces: with NULL it
         * answers -ENXIO at the end of the array instead of 0. */
        if (len < 2 || len - 2 >= sizeof(entry))
                return -EBADMSG;
        memcpy(entry, contents + 1, len - 2);
        entry[len - 2] = '\0';

        r = sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, contents);
        if (r < 0)
                return r;

        for (;;) {
                r = sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, entry);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;

                r = read_entry(m, userdata);
                if (r < 0)
                        return r;

                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }

        return sd_bus_message_exit_container(m);
}

/* One entry of any dict into the object userdata, the key (of any basic type) as text. */
static int read_json_dict_entry(sd_bus_message *m, void *userdata)
{
        json_object *obj = userdata, *value = NULL;
        char *key = NULL;
        char type;
        int r;

        r = sd_bus_message_peek_type(m, &type, NULL);
        if (r <= 0)
                return r < 0 ? r : -EBADMSG;
        r = bus_message_read_basic_string(m, type, &key);
        if (r < 0)
                return r;
        r = bus_message_read_json(m, &value);
        if (r < 0) {
                free(key);
                return r;
        }
        r = json_object_object_add(obj, key, value);
        free(key);
        if (r < 0) {
                json_object_put(value);
                return -ENOMEM;
        }
        return 0;
}

static int read_dict_json(sd_bus_message *m, const char *contents, json_object **ret)
{
        json_object *obj;
        int r;

        obj = json_object_new_object();
        if (!obj)
                return -ENOMEM;

        r = read_dict(m, contents, read_json_dict_entry, obj);
        if (r < 0) {
                json_object_put(obj);
                return r;
        }

        *ret = obj;
        return 0;
}

static int read_sequence_json(sd_bus_message *m, char type, const char *contents, json_object **ret)
{
        json_object *arr;
        int r;

        r = sd_bus_message_enter_container(m, type, contents);
        if (r < 0)
                return r;

        arr = json_object_new_array();
        if (!arr)
                return -ENOMEM;

        for (;;) {
                json_object *item = NULL;

                r = sd_bus_message_peek_type(m, NULL, NULL);
                if (r < 0)
                        goto fail;
                if (r == 0)
                        break;

                r = bus_message_read_json(m, &item);
                if (r < 0)
                        goto fail;
                if (json_object_array_add(arr, item) < 0) {
                        json_object_put(item);
                        r = -ENOMEM;
                        goto fail;
                }
        }

        r = sd_bus_message_exit_container(m);
        if (r < 0)
                goto fail;

        *ret = arr;
        return 0;

fail:
        json_object_put(arr);
        return r;
}

int bus_message_read_json(sd_bus_message *m, json_object **ret)
{
        const char *contents;
        json_object *j = NULL;
        char type;
        int r;

        r = sd_bus_message_peek_type(m, &type, &contents);
        if (r < 0)
                return r;
        if (r == 0)
                return -ENXIO;

        switch (type) {
        case SD_BUS_TYPE_ARRAY:
                if (contents[0] == SD_BUS_TYPE_DICT_ENTRY_BEGIN)
                        return read_dict_json(m, contents, ret);
                return read_sequence_json(m, type, contents, ret);

        case SD_BUS_TYPE_STRUCT:
                return read_sequence_json(m, type, contents, ret);

        case SD_BUS_TYPE_VARIANT:
                r = sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, contents);
                if (r < 0)
                        return r;
                r = bus_message_read_json(m, &j);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0) {
                        json_object_put(j);
                        return r;
                }
                *ret = j;
                return 0;

        default:
                return read_basic_json(m, type, ret);
        }
}

/*
 * What each level of a{oa{sa{sv}}} hands down to the next: where this level's entries go, and
 * the caller's property filter, applied only at the innermost a{sv}.
 */
typedef struct ModelReader {
        json_object *into;
        BusPropertyFilter filter;
        void *userdata;
        const char *iface; /* while reading a{sv}: the interface the properties belong to */
} ModelReader;

/* A new empty object at parent[key]; NULL when out of memory. */
static json_object *json_add_object(json_object *parent, const char *key)
{
        json_object *child = json_object_new_object();

        if (!child || json_object_object_add(parent, key, child) < 0) {
                json_object_put(child);
                return NULL;
        }
        return child;
}

/* One {sv}: kept in into if the filter wants it, skipped unread otherwise. */
static int read_property_entry(sd_bus_message *m, void *userdata)
{
        ModelReader *mr = userdata;
        json_object *value = NULL;
        const char *name;
        int r;

        r = sd_bus_message_read_basic(m, SD_BUS_TYPE_STRING, &name);
        if (r < 0)
                return r;

        if (mr->filter && !mr->filter(mr->iface, name, mr->userdata))
                return sd_bus_message_skip(m, "v");

        r = bus_message_read_json(m, &value);
        if (r < 0)
                return r;
        if (json_object_object_add(mr->into, name, value) < 0) {
                json_object_put(value);
                return -ENOMEM;
        }
        return 0;
}

/* Reads a{sv} into obj, keeping the properties the filter wants. */
static int read_properties(sd_bus_message *m, const char *iface, BusPropertyFilter filter, void *userdata,
                           json_object *obj)
{
        ModelReader mr = {.into = obj, .filter = filter, .userdata = userdata, .iface = iface};

        return read_dict(m, "{sv}", read_property_entry, &mr);
}

/* One {sa{sv}}: an interface and its properties, into into[iface]. */
static int read_interface_entry(sd_bus_message *m, void *userdata)
{
        ModelReader *mr = userdata;
        json_object *props;
        const char *iface;
        int r;

        r = sd_bus_message_read_basic(m, SD_BUS_TYPE_STRING, &iface);
        if (r < 0)
                return r;

        props = json_add_object(mr->into, iface);
        if (!props)
                return -ENOMEM;

        return read_properties(m, iface, mr->filter, mr->userdata, props);
}

/* One {oa{sa{sv}}}: an object and its interfaces, into into[path]. */
static int read_object_entry(sd_bus_message *m, void *userdata)
{
        ModelReader *mr = userdata, ifaces = *mr;
        const char *path;
        int r;

        r = sd_bus_message_read_basic(m, SD_BUS_TYPE_OBJECT_PATH, &path);
        if (r < 0)
                return r;

        ifaces.into = json_add_object(mr->into, path);
        if (!ifaces.into)
                return -ENOMEM;

        return read_dict(m, "{sa{sv}}", read_interface_entry, &ifaces);
}

int bus_get_managed_objects(sd_bus *bus, BusPropertyFilter filter, void *userdata, json_object **ret,
                            sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        ModelReader mr = {.filter = filter, .userdata = userdata};
        int r;

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, BLKMODEL_ROOT_PATH,
                               "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", error, &reply,
                               NULL);
        if (r < 0)
                return r;

        mr.into = json_object_new_object();
        if (!mr.into)
                r = -ENOMEM;
        else
                r = read_dict(reply, "{oa{sa{sv}}}", read_object_entry, &mr);
        sd_bus_message_unref(reply);
        if (r < 0) {
                json_object_put(mr.into);
                return r;
        }

        *ret = mr.into;
        return 0;
}

int bus_get_all(sd_bus *bus, const char *path, const char *iface, json_object **ret, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        json_object *props;
        int r;

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, path, "org.freedesktop.DBus.Properties", "GetAll",
                               error, &reply, "s", iface);
        if (r < 0)
                return r;

        props = json_object_new_object();
        if (!props) {
                sd_bus_message_unref(reply);
                return -ENOMEM;
        }

        r = read_properties(reply, iface, NULL, NULL, props);
        sd_bus_message_unref(reply);
        if (r < 0) {
                json_object_put(props);
                return r;
        }

        *ret = props;
        return 0;
}

/* Calls in flight at once: enough to hide the round trips, few enough for any bus's limits. */
#define FETCH_IN_FLIGHT 128

typedef struct Fetch {
        json_object *model;
        const BusPropRequest *req;
        size_t in_flight;
        int error; /* the first failure other than a vanished object */
        sd_bus_error bus_error;
} Fetch;

typedef struct FetchCall {
        Fetch *fetch;
        const BusPropRequest *req;
} FetchCall;

/* model[path][iface], created if missing. */
static json_object *model_iface(json_object *model, const char *path, const char *iface)
{
        json_object *obj, *props;

        if (!json_object_object_get_ex(model, path, &obj)) {
                obj = json_object_new_object();
                if (!obj || json_object_object_add(model, path, obj) < 0) {
                        json_object_put(obj);
                        return NULL;
                }
        }
        if (!json_object_object_get_ex(obj, iface, &props)) {
                props = json_object_new_object();
                if (!props || json_object_object_add(obj, iface, props) < 0) {
                        json_object_put(props);
                        return NULL;
                }
        }
        return props;
}

static int on_fetch_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
        FetchCall *c = userdata;
        Fetch *f = c->fetch;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        json_object *props, *value = NULL;
        int r = 0;

        f->in_flight--;
        if (e) {
                /* The object went away between GetManagedObjects and now, or has no such attribute here
                 * (only SCSI devices have a type): it is simply not there. */
                if (!sd_bus_error_has_names(e, SD_BUS_ERROR_UNKNOWN_OBJECT, SD_BUS_ERROR_UNKNOWN_PROPERTY) &&
                    f->error == 0) {
                        f->error = -sd_bus_error_get_errno(e) ?: -EIO;
                        sd_bus_error_copy(&f->bus_error, e);
                }
                goto done;
        }
        props = model_iface(f->model, c->req->path, c->req->iface);
        if (!props)
                r = -ENOMEM;
        else if (!c->req->prop)
                r = read_properties(reply, c->req->iface, NULL, NULL, props);
        else {
                r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_VARIANT, NULL);
                if (r >= 0)
                        r = bus_message_read_json(reply, &value);
                if (r >= 0 && json_object_object_add(props, c->req->prop, value) < 0) {
                        json_object_put(value);
                        r = -ENOMEM;
                }
        }
        if (r < 0 && f->error == 0)
                f->error = r;
done:
        free(c);
        return 0;
}

int bus_fetch_properties(sd_bus *bus, json_object *model, const BusPropRequest *req, size_t n,
                         sd_bus_error *error)
{
        Fetch f = {.model = model, .bus_error = SD_BUS_ERROR_NULL};
        size_t sent = 0;
        int r = 0;

        while ((sent < n || f.in_flight > 0) && f.error == 0) {
                while (sent < n && f.in_flight < FETCH_IN_FLIGHT) {
                        FetchCall *c = malloc(sizeof(FetchCall));

                        if (!c) {
                                r = -ENOMEM;
                                goto out;
                        }
                        *c = (FetchCall){.fetch = &f, .req = &req[sent]};
                        if (req[sent].prop)
                                r = sd_bus_call_method_async(bus, NULL, BLKMODEL_BUS_NAME, req[sent].path,
                                                             "org.freedesktop.DBus.Properties", "Get",
                                                             on_fetch_reply, c, "ss", req[sent].iface,
                                                             req[sent].prop);
                        else
                                r = sd_bus_call_method_async(bus, NULL, BLKMODEL_BUS_NAME, req[sent].path,
                                                             "org.freedesktop.DBus.Properties", "GetAll",
                                                             on_fetch_reply, c, "s", req[sent].iface);
                        if (r < 0) {
                                free(c);
                                goto out;
                        }
                        sent++;
                        f.in_flight++;
                }
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        goto out;
                if (r == 0) {
                        r = sd_bus_wait(bus, USEC_INFINITY);
                        if (r < 0)
                                goto out;
                }
        }
        r = f.error;
        if (r < 0 && error)
                sd_bus_error_move(error, &f.bus_error);
out:
        /* Replies still due would name f, which is about to go: drain them first. */
        while (f.in_flight > 0 && sd_bus_process(bus, NULL) >= 0)
                if (f.in_flight > 0)
                        (void) sd_bus_wait(bus, USEC_INFINITY);
        sd_bus_error_free(&f.bus_error);
        return r < 0 ? r : 0;
}

void bus_event_done(BusEvent *ev)
{
        if (!ev)
                return;
        json_object_put(ev->env);
        ev->env = NULL;
}

int bus_message_read_event_fields(sd_bus_message *m, BusEvent *ret)
{
        BusEvent ev = {};
        int r;

        r = sd_bus_message_read(m, "tsso", &ev.seqnum, &ev.action, &ev.devpath, &ev.object);
        if (r < 0)
                return r;
        r = sd_bus_message_peek_type(m, NULL, NULL);
        if (r < 0)
                return r;
        if (r == 0)
                return -EBADMSG;
        r = bus_message_read_json(m, &ev.env);
        if (r < 0)
                return r;
        if (!json_object_is_type(ev.env, json_type_object)) {
                json_object_put(ev.env);
                return -EBADMSG;
        }

        *ret = ev;
        return 0;
}

int bus_signalfd_open(void)
{
        sigset_t mask;
        int fd;

        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        return fd < 0 ? -errno : fd;
}

int bus_wait_event(sd_bus *bus, int sigfd, uint64_t deadline)
{
        struct pollfd p[2] = {};
        uint64_t until = deadline, t = USEC_INFINITY, now;
        int events, fd, timeout_ms, r;

        fd = sd_bus_get_fd(bus);
        if (fd < 0)
                return fd;
        events = sd_bus_get_events(bus);
        if (events < 0)
                return events;
        r = sd_bus_get_timeout(bus, &t);
        if (r < 0)
                return r;
        if (t < until)
                until = t;

        now = now_usec();
        if (until == USEC_INFINITY)
                timeout_ms = -1;
        else if (until <= now)
                timeout_ms = 0;
        else {
                uint64_t ms = (until - now + 999) / 1000;
                timeout_ms = ms > INT32_MAX ? INT32_MAX : (int) ms;
        }

        p[0] = (struct pollfd){.fd = fd, .events = (short) events};
        p[1] = (struct pollfd){.fd = sigfd, .events = POLLIN};
        r = poll(p, sigfd >= 0 ? 2 : 1, timeout_ms);
        if (r < 0)
                return errno == EINTR ? 0 : -errno;

        if (sigfd >= 0 && (p[1].revents & POLLIN)) {
                struct signalfd_siginfo si;

                (void) read(sigfd, &si, sizeof(si));
                return 1;
        }
        if (r == 0 && deadline != USEC_INFINITY && now_usec() >= deadline)
                return -ETIMEDOUT;
        return 0;
}

int bus_get_events(sd_bus *bus, uint64_t after, BusEventCallback cb, void *userdata, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, BLKMODEL_ROOT_PATH, BLKMODEL_IFACE_MANAGER,
                               BLKMODEL_METHOD_GET_EVENTS, error, &reply, "t", after);
        if (r < 0)
                return r;

        r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_ARRAY, "(tssoa{ss})");
        if (r < 0)
                goto finish;
        for (;;) {
                BusEvent ev = {};

                r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_STRUCT, "tssoa{ss}");
                if (r < 0)
                        goto finish;
                if (r == 0)
                        break;
                r = bus_message_read_event_fields(reply, &ev);
                if (r < 0)
                        goto finish;
                r = sd_bus_message_exit_container(reply);
                if (r >= 0)
                        r = cb(&ev, userdata);
                bus_event_done(&ev);
                if (r < 0)
                        goto finish;
        }
        r = sd_bus_message_exit_container(reply);
        if (r > 0)
                r = 0;

finish:
        sd_bus_message_unref(reply);
        return r;
}
