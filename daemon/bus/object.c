/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/log-ratelimit.h"
#include "base/log.h"
#include "blkmodel/names.h"
#include "bus/bus-internal.h"
#include "bus/errors.h"
#include "sysfs/values.h"

/* Values are at most a page: kernfs takes nothing longer in one write. */
#define VALUE_MAX 4095

int bus_refuse_reply(Publisher *p, const char *what, const char *path, size_t bytes, const char *instead,
                     sd_bus_error *error)
{
        char sizes[128];

        bus_sizes_text(bytes, bus_reply_body_max(p), sizes, sizeof(sizes));
        log_ratelimit_warning("%s of %s refused: %s.", what, path, sizes);
        return bus_error_limits_exceeded(error, "%s of %s is %s: %s", what, path, sizes, instead);
}

/*
 * Appended as an iovec: sd_bus_message_append_basic() checks a string's UTF-8 byte by byte, three
 * quarters of an Introspect's CPU for 5 KiB of XML.  The XML is made of the cached part (checked
 * when cached), the object path (checked by sd-bus) and children's path elements ([A-Za-z0-9_]).
 */
static int method_introspect(Publisher *p, sd_bus_message *msg, Kobject *k, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(freep) char *xml = NULL;
        struct iovec iov;
        int r;

        r = bus_introspect(p, sd_bus_message_get_path(msg), k, &xml, &iov.iov_len);
        if (r < 0)
                return r;
        if (4 + iov.iov_len + 1 > bus_reply_body_max(p))
                return bus_refuse_reply(p, "Introspect", k->path, 4 + iov.iov_len + 1,
                                        "GetManagedObjects (in parts) lists its children.", error);
        iov.iov_base = xml;
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_append_string_iovec(reply, &iov, 1);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        return r < 0 ? r : 1;
}

/* The object a call is about, looked up again when its answer comes later. */
static int object_of(Publisher *p, sd_bus_message *msg, Kobject **ret, sd_bus_error *error)
{
        const char *path = sd_bus_message_get_path(msg);
        Kobject *k = path ? model_find_path(p->model, path) : NULL;

        if (!k)
                return bus_error_unknown_object(error, strempty(path));
        *ret = k;
        return 0;
}

static const Attr *privileged_attr(const Iface *iface, const char *property)
{
        const Attr *a = iface->attrs ? attr_set_find(iface->attrs, property) : NULL;
        return a && (a->flags & ATTR_PRIVILEGED) ? a : NULL;
}

static int access_denied_read(const Kobject *k, const Iface *iface, const Attr *a, sd_bus_error *error)
{
        _cleanup_(freep) char *rel = iface_attr_relpath(iface, a);

        return bus_error_access_denied(error, "%s/%s is for root only: others may not read it.", k->devpath,
                                       rel ? rel : a->file);
}

/* A Get or Set whose file failed: one gone since the listing is dropped from the object's interfaces
 * for the next call (live_attr_unreadable()); this one's answer is the failure. */
static void attr_failed(Publisher *p, Kobject *k, ObjDir *d, const Iface *iface, const char *property)
{
        const Attr *a = iface->attrs ? attr_set_find(iface->attrs, property) : NULL;

        if (a)
                live_attr_unreadable(p->live, k, d, iface, a);
}

/* privileged: the caller is root or the daemon's own user, so may read what others may not. */
static int get_property(Publisher *p, sd_bus_message *msg, Kobject *k, const char *interface,
                        const char *property, bool privileged, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(p->sysfs, k);
        const Attr *a;
        size_t bound = 0;
        Iface iface;
        int r;

        if (!kobject_find_iface(k, interface, &iface))
                return bus_error_unknown_interface(error, k->path, interface);
        a = privileged_attr(&iface, property);
        if (a && !privileged)
                return access_denied_read(k, &iface, a, error);
        if (bus_members_in_slices(k, &iface, property))
                return bus_reply_members(p, msg, k, false, privileged);
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = bus_append_property(p, &d, &iface, property, reply, false, &bound, error);
        if (r < 0 && sd_bus_error_is_set(error))
                attr_failed(p, k, &d, &iface, property);
        else if (r < 0 && errno_is_resource(r))
                return bus_error_unread(error, k->path, r);
        if (r < 0)
                return r;
        if (r == 0)
                return bus_error_unknown_property(error, interface, property);
        if (bound > bus_reply_body_max(p))
                return bus_refuse_reply(p, property, k->path, bound, "no message can carry it.", error);
        /* Before the warm-up has read an object, the values a Get or GetAll sends are its first
         * reading, as GetManagedObjects' are: a change made between this reading and the warm-up's
         * would otherwise be what the warm-up records, and never told to a client that keeps what it
         * got (a GDBusProxy GetAlls when it is made; 30 of 300 queues written right after such a
         * reading were never announced). */
        live_record_reading(p->live, k, &d);
        return sd_bus_send(NULL, reply, NULL);
}

/* Once the caller's uid is known: the object may have gone meanwhile. */
static int get_as(Publisher *p, sd_bus_message *msg, bool privileged, sd_bus_error *error)
{
        const char *interface, *property;
        Kobject *k = NULL;
        int r;

        r = object_of(p, msg, &k, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "ss", &interface, &property);
        if (r < 0)
                return r;
        return get_property(p, msg, k, interface, property, privileged, error);
}

/* The arguments are read once here (sd-bus checks each string's UTF-8, a megabyte costs milliseconds)
 * and again only for a privileged attribute, whose name is short. */
static int method_get(Publisher *p, sd_bus_message *msg, Kobject *k, sd_bus_error *error)
{
        const char *interface, *property;
        Iface iface;
        int r;

        r = sd_bus_message_read(msg, "ss", &interface, &property);
        if (r < 0)
                return r;
        /* Only a privileged attribute needs to know who asks: everything else is everyone's. */
        if (kobject_find_iface(k, interface, &iface) && privileged_attr(&iface, property)) {
                r = sd_bus_message_rewind(msg, true);
                if (r < 0)
                        return r;
                return bus_with_caller(p, msg, get_as, error);
        }
        return get_property(p, msg, k, interface, property, false, error);
}

static int get_all_properties(Publisher *p, sd_bus_message *msg, Kobject *k, const char *interface,
                              bool privileged, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(p->sysfs, k);
        size_t bound = WIRE_DICT_ARRAY_HEAD; /* the a{sv}'s length and the padding to its first entry */
        Iface iface;
        int r;

        if (!kobject_find_iface(k, interface, &iface))
                return bus_error_unknown_interface(error, k->path, interface);
        if (bus_members_in_slices(k, &iface, NULL))
                return bus_reply_members(p, msg, k, true, privileged);
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = bus_append_iface_properties(p, &d, &iface, reply, privileged, &bound);
        if (r < 0 && errno_is_resource(r))
                return bus_error_unread(error, k->path, r);
        if (r < 0)
                return r;
        if (bound > bus_reply_body_max(p))
                return bus_refuse_reply(p, interface, k->path, bound, "Get its properties one by one.",
                                        error);
        live_record_reading(p->live, k, &d); /* as get_property() does */
        return sd_bus_send(NULL, reply, NULL);
}

static int get_all_as(Publisher *p, sd_bus_message *msg, bool privileged, sd_bus_error *error)
{
        const char *interface;
        Kobject *k = NULL;
        int r;

        r = object_of(p, msg, &k, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "s", &interface);
        if (r < 0)
                return r;
        return get_all_properties(p, msg, k, interface, privileged, error);
}

static int method_get_all(Publisher *p, sd_bus_message *msg, Kobject *k, sd_bus_error *error)
{
        const char *interface;
        Iface iface;
        int r;

        r = sd_bus_message_read(msg, "s", &interface);
        if (r < 0)
                return r;
        if (kobject_find_iface(k, interface, &iface) && attr_set_has_flag(iface.attrs, ATTR_PRIVILEGED)) {
                r = sd_bus_message_rewind(msg, true);
                if (r < 0)
                        return r;
                return bus_with_caller(p, msg, get_all_as, error);
        }
        return get_all_properties(p, msg, k, interface, false, error);
}

/* GetManagedObjects: what the caller may read decides what each dictionary holds. */
static int get_managed_objects_as(Publisher *p, sd_bus_message *msg, bool privileged, sd_bus_error *error)
{
        const char *path = sd_bus_message_get_path(msg);
        Kobject *top = NULL;
        int r;

        if (!streq(path, BLKMODEL_ROOT_PATH)) {
                r = object_of(p, msg, &top, error);
                if (r < 0)
                        return r;
        }
        return bus_method_get_managed_objects(p, msg, top, privileged, error);
}

/* NOTES.md: an unknown name makes the kernel request_module("%s-iosched") first; allow only listed ones. */
static int check_scheduler(ObjDir *d, const char *value, sd_bus_error *error)
{
        _cleanup_(strv_freep) char **all = NULL;
        const char *text;
        int r;

        r = objdir_read(d, "scheduler", &text);
        if (r >= 0)
                r = parse_scheduler(text, &all, NULL);
        if (r < 0)
                return bus_error_read_failed(error, d->k->devpath, "scheduler", r);
        for (char **s = all; *s; s++)
                if (streq(*s, value))
                        return 0;
        return bus_error_invalid_args(error, "'%s' is not an I/O scheduler %s offers (see Schedulers).",
                                      value, d->k->path);
}

/* The file a Set writes, relative to the object's directory; names come from the model, never from
 * the caller: the file is one the scan found. */
static int writable_file(Kobject *k, const Iface *iface, const char *interface, const char *property,
                         char **ret, bool *ret_privileged, sd_bus_error *error)
{
        const Attr *a = NULL;
        char *rel;

        if (k->ktype->id == KTYPE_QUEUE && iface->kind == IFACE_KIND &&
            streq(property, BLKMODEL_PROP_SCHEDULER)) {
                /* A bio-based device's queue (md, zram) has none: nothing it lists, as for a name
                 * the file does not list. */
                if (!iface->attrs || !attr_set_find(iface->attrs, "scheduler"))
                        return bus_error_invalid_args(error, "%s has no I/O scheduler to choose (no scheduler file).",
                                                      k->path);
                rel = strdup("scheduler");
        } else {
                for (const PropertyInfo *p = iface->properties; p->name; p++)
                        if (streq(p->name, property)) {
                                _cleanup_(freep) char *what = NULL;
                                if (asprintf(&what, "Property %s.%s", interface, property) < 0)
                                        return -ENOMEM;
                                return bus_error_read_only(error, what);
                        }
                a = iface->attrs ? attr_set_find(iface->attrs, property) : NULL;
                if (!a)
                        return bus_error_unknown_property(error, interface, property);
                rel = iface_attr_relpath(iface, a);
        }
        if (!rel)
                return -ENOMEM;
        *ret = rel;
        *ret_privileged = a && (a->flags & ATTR_PRIVILEGED);
        return 0;
}

static int read_string_variant(sd_bus_message *msg, const char *interface, const char *property,
                               const char **ret, sd_bus_error *error)
{
        int r;

        r = sd_bus_message_enter_container(msg, 'v', "s");
        if (r < 0)
                return bus_error_invalid_args(error, "%s.%s takes a string.", interface, property);
        r = sd_bus_message_read(msg, "s", ret);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(msg);
}

static int method_set_authorized(Publisher *p, sd_bus_message *msg, sd_bus_error *error);

/* What others may not read, they may not write: root and the daemon's own user only, no polkit. */
static int set_privileged_known(Publisher *p, sd_bus_message *msg, bool privileged, sd_bus_error *error)
{
        if (!privileged)
                return bus_error_access_denied(error,
                                               "%s: the attribute is for root only: others may not read "
                                               "or write it.",
                                               strempty(sd_bus_message_get_path(msg)));
        return method_set_authorized(p, msg, error);
}

/* authorized: the second time through, once bus_authorize() has let the caller in. */
static int method_set(Publisher *p, sd_bus_message *msg, Kobject *k, bool authorized, sd_bus_error *error)
{
        _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(p->sysfs, k);
        _cleanup_(freep) char *rel = NULL;
        const char *interface, *property, *value;
        bool privileged_file = false;
        Iface iface;
        int fd, r;

        r = sd_bus_message_read(msg, "ss", &interface, &property);
        if (r < 0)
                return r;
        if (!kobject_find_iface(k, interface, &iface))
                return bus_error_unknown_interface(error, k->path, interface);
        r = writable_file(k, &iface, interface, property, &rel, &privileged_file, error);
        if (r < 0)
                return r;
        r = read_string_variant(msg, interface, property, &value, error);
        if (r < 0)
                return r;

        fd = objdir_fd(&d);
        if (fd < 0)
                return bus_error_unknown_object(error, k->path);
        r = sysfs_file_mode(fd, rel);
        /* A file gone since the last reading is no read-only one: the client may well try again. */
        if (r < 0) {
                r = bus_error_write_failed(error, value, k->devpath, rel, r);
                attr_failed(p, k, &d, &iface, property);
                return r;
        }
        if (!(r & 0222)) {
                _cleanup_(freep) char *what = NULL;
                if (asprintf(&what, "%s/%s", k->devpath, rel) < 0)
                        return -ENOMEM;
                return bus_error_read_only(error, what);
        }
        if (strlen(value) > VALUE_MAX)
                return bus_error_invalid_args(error, "Values are at most %d bytes.", VALUE_MAX);
        /* sysfs hands no empty write to the attribute's store: it would succeed and store nothing. */
        if (isempty(value))
                return bus_error_invalid_args(error, "An empty value writes nothing to %s/%s.", k->devpath,
                                              rel);
        if (k->ktype->id == KTYPE_QUEUE && streq(rel, "scheduler")) {
                r = check_scheduler(&d, value, error);
                if (r < 0)
                        return r;
        }
        /* Checked last: a call that cannot succeed fails without a password prompt. */
        if (!authorized && privileged_file) {
                r = sd_bus_message_rewind(msg, true);
                return r < 0 ? r : bus_with_caller(p, msg, set_privileged_known, error);
        }
        if (!authorized) {
                const char *details[] = {"object", k->path, "attribute", rel, "value", value, NULL};
                return bus_authorize(p, msg, BLKMODEL_ACTION_SET_ATTRIBUTE, details, method_set_authorized,
                                     error);
        }

        r = bus_write_start(p, msg, k, fd, rel, value);
        if (r < 0)
                return bus_error_write_failed(error, value, k->devpath, rel, r);
        return r;
}

/* Set once more, now authorized: the object may have gone, or its files changed, meanwhile. */
static int method_set_authorized(Publisher *p, sd_bus_message *msg, sd_bus_error *error)
{
        const char *path = sd_bus_message_get_path(msg);
        Kobject *k = model_find_path(p->model, path);

        if (!k)
                return bus_error_unknown_object(error, path);
        return method_set(p, msg, k, true, error);
}

int bus_refuse_overlong_name(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        const char *interface = NULL, *property = NULL;
        int r;

        if (bus_is_call(msg, IFACE_PROPERTIES, "GetAll"))
                r = sd_bus_message_read(msg, "s", &interface);
        else if (bus_is_call(msg, IFACE_PROPERTIES, "Get") || bus_is_call(msg, IFACE_PROPERTIES, "Set"))
                r = sd_bus_message_read(msg, "ss", &interface, &property);
        else
                return 0;
        if (r >= 0 && strlen(interface) > DBUS_NAME_MAX)
                return bus_error_unknown_interface(error, sd_bus_message_get_path(msg), interface);
        if (r >= 0 && property && strlen(property) > DBUS_NAME_MAX)
                return bus_error_unknown_property(error, interface, property);
        r = sd_bus_message_rewind(msg, true);
        return r < 0 ? r : 0;
}

int bus_object_handler(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        Publisher *p = userdata;
        const char *path = sd_bus_message_get_path(msg);
        Kobject *k = NULL;

        /* The Manager is sd-bus's to serve: its vtable, and an error for what it lacks. */
        if (!path || streq(path, BLKMODEL_MANAGER_PATH))
                return 0;
        if (streq(path, BLKMODEL_ROOT_PATH)) {
                /* sd-bus serves the rest of the root: Introspect, Peer. */
                if (bus_is_call(msg, IFACE_OBJECT_MANAGER, "GetManagedObjects"))
                        return bus_check_signature(msg, "", error)
                                               ?: bus_with_caller(p, msg, get_managed_objects_as, error);
                return bus_refuse_overlong_name(msg, userdata, error);
        }

        k = model_find_path(p->model, path);
        /* Left to sd-bus, a path below a fallback gets "unknown property" instead. */
        if (!k)
                return bus_error_unknown_object(error, path);

        if (bus_is_call(msg, IFACE_INTROSPECTABLE, "Introspect"))
                return bus_check_signature(msg, "", error) ?: method_introspect(p, msg, k, error);
        if (bus_object_is_manager(k) && bus_is_call(msg, IFACE_OBJECT_MANAGER, "GetManagedObjects"))
                return bus_check_signature(msg, "", error)
                                       ?: bus_with_caller(p, msg, get_managed_objects_as, error);
        if (bus_is_call(msg, IFACE_PROPERTIES, "Get"))
                return bus_check_signature(msg, "ss", error) ?: method_get(p, msg, k, error);
        if (bus_is_call(msg, IFACE_PROPERTIES, "GetAll"))
                return bus_check_signature(msg, "s", error) ?: method_get_all(p, msg, k, error);
        if (bus_is_call(msg, IFACE_PROPERTIES, "Set"))
                return bus_check_signature(msg, "ssv", error) ?: method_set(p, msg, k, false, error);
        return 0;
}

int bus_object_enumerator(sd_bus *bus, const char *prefix, void *userdata, char ***ret, sd_bus_error *error)
{
        Publisher *p = userdata;
        _cleanup_(strv_freep) char **l = NULL;
        size_t n = 0;
        int r;

        /* Only the root is left to sd-bus to introspect; below it we answer ourselves. */
        if (streq(prefix, BLKMODEL_ROOT_PATH)) {
                r = strv_extend(&l, &n, p->model->block_kset->path);
                if (r >= 0)
                        r = strv_extend(&l, &n, p->model->devices_kset->path);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}
