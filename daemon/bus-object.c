/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>

#include "bus-manager.h"
#include "bus-object.h"
#include "live.h"
#include "log.h"
#include "names.h"
#include "sysfs.h"
#include "common/util.h"

#define IFACE_PROPERTIES "org.freedesktop.DBus.Properties"
#define IFACE_INTROSPECTABLE "org.freedesktop.DBus.Introspectable"
#define IFACE_OBJECT_MANAGER "org.freedesktop.DBus.ObjectManager"
#define IFACE_PEER "org.freedesktop.DBus.Peer"

#define INTROSPECT_DOCTYPE                                                                                  \
        "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n"                \
        "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n"

/* Files that several properties derive from (Major and Minor from dev; Uevent and Number from uevent;
 * Scheduler and Schedulers from scheduler): read once per object per request. */
static const char *const shared_files[] = {"dev", "uevent", "scheduler"};

/* An object's directory, opened on first use: one open per object per request. */
typedef struct ObjDir {
        Manager *manager;
        Kobject *k;
        int fd;
        char *shared[ELEMENTSOF(shared_files)];
} ObjDir;

static int objdir_fd(ObjDir *d)
{
        if (d->fd == -1)
                d->fd = sysfs_open_dir(&d->manager->sysfs, d->k->devpath);
        return d->fd;
}

static void objdir_done(ObjDir *d)
{
        if (d->fd >= 0)
                close(d->fd);
        d->fd = -1;
        for (size_t i = 0; i < ELEMENTSOF(shared_files); i++)
                d->shared[i] = mfree(d->shared[i]);
}

static int objdir_read(ObjDir *d, const char *file, char **ret)
{
        size_t i;
        int fd, r;

        for (i = 0; i < ELEMENTSOF(shared_files); i++)
                if (streq(file, shared_files[i]))
                        break;
        if (i < ELEMENTSOF(shared_files) && d->shared[i]) {
                *ret = strdup(d->shared[i]);
                return *ret ? 0 : -ENOMEM;
        }
        fd = objdir_fd(d);
        if (fd < 0)
                return fd;
        r = sysfs_read_attr(fd, file, ret);
        if (r >= 0 && i < ELEMENTSOF(shared_files))
                d->shared[i] = strdup(*ret); /* a failed copy only costs a read later */
        return r;
}

/* ---- typed properties ------------------------------------------------------------------------- */

typedef int (*TypedGetter)(ObjDir *d, sd_bus_message *reply);

typedef struct TypedProperty {
        const char *name;
        const char *signature;
        TypedGetter get;
        /* What its value derives from: an attribute file, or one of the SOURCE_* below; NULL if only
         * the model's structure (announced separately) decides it. */
        const char *source;
        /* EmitsChangedSignal, if not "true". */
        const char *emits;
        bool writable;
} TypedProperty;

#define SOURCE_UEVENT "uevent"
#define SOURCE_HOLDERS "holders/"
#define SOURCE_SLAVES "slaves/"

static int read_u64(ObjDir *d, const char *file, uint64_t *ret)
{
        _cleanup_(freep) char *v = NULL;
        char *end;
        int r;

        r = objdir_read(d, file, &v);
        if (r < 0)
                return r;
        errno = 0;
        unsigned long long x = strtoull(v, &end, 10);
        if (errno != 0 || end == v || *end != 0 || v[0] == '-')
                return -EBADMSG;
        *ret = x;
        return 0;
}

static uint64_t read_u64_or_zero(ObjDir *d, const char *file)
{
        uint64_t x = 0;
        int r = read_u64(d, file, &x);
        if (r < 0) {
                log_debug_errno(r, "%s/%s: unreadable, reported as 0: %m", d->k->devpath, file);
                return 0;
        }
        return x;
}

static int get_dev(ObjDir *d, unsigned *ret_major, unsigned *ret_minor)
{
        _cleanup_(freep) char *v = NULL;
        unsigned maj, min;
        char extra;
        int r;

        r = objdir_read(d, "dev", &v);
        if (r < 0)
                return r;
        if (sscanf(v, "%u:%u%c", &maj, &min, &extra) != 2)
                return -EBADMSG;
        *ret_major = maj;
        *ret_minor = min;
        return 0;
}

static int prop_major(ObjDir *d, sd_bus_message *reply)
{
        unsigned maj = 0, min = 0;
        if (get_dev(d, &maj, &min) < 0)
                log_debug("%s/dev: unreadable, Major reported as 0.", d->k->devpath);
        return sd_bus_message_append(reply, "u", maj);
}

static int prop_minor(ObjDir *d, sd_bus_message *reply)
{
        unsigned maj = 0, min = 0;
        if (get_dev(d, &maj, &min) < 0)
                log_debug("%s/dev: unreadable, Minor reported as 0.", d->k->devpath);
        return sd_bus_message_append(reply, "u", min);
}

/* sysfs counts in 512-byte sectors whatever the device's block size. */
static uint64_t sectors_to_bytes(uint64_t s)
{
        return s > UINT64_MAX / 512 ? UINT64_MAX : s * 512;
}

static int prop_size(ObjDir *d, sd_bus_message *reply)
{
        return sd_bus_message_append(reply, "t", sectors_to_bytes(read_u64_or_zero(d, "size")));
}

static int prop_start(ObjDir *d, sd_bus_message *reply)
{
        return sd_bus_message_append(reply, "t", sectors_to_bytes(read_u64_or_zero(d, "start")));
}

static int prop_read_only(ObjDir *d, sd_bus_message *reply)
{
        return sd_bus_message_append(reply, "b", read_u64_or_zero(d, "ro") != 0);
}

static int prop_removable(ObjDir *d, sd_bus_message *reply)
{
        return sd_bus_message_append(reply, "b", read_u64_or_zero(d, "removable") != 0);
}

static int append_object_list(sd_bus_message *reply, Kobject **l, size_t n)
{
        int r = sd_bus_message_open_container(reply, 'a', "o");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(reply, "o", l[i]->path);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int prop_partitions(ObjDir *d, sd_bus_message *reply)
{
        _cleanup_(freep) Kobject **l = NULL;
        size_t n;
        int r;

        r = kobject_children_sorted(d->k, KTYPE_PARTITION, &l, &n);
        if (r < 0)
                return r;
        return append_object_list(reply, l, n);
}

/* holders/ and slaves/ hold one link per stacked device, named by its kernel name. */
static int append_link_dir(ObjDir *d, sd_bus_message *reply, const char *dir)
{
        SysfsEntry *e = NULL;
        size_t n = 0;
        int fd, subfd, r;

        r = sd_bus_message_open_container(reply, 'a', "o");
        if (r < 0)
                return r;
        fd = objdir_fd(d);
        subfd = fd >= 0 ? sysfs_open_subdir(fd, dir) : fd;
        if (subfd >= 0) {
                r = sysfs_list(subfd, &e, &n);
                close(subfd);
                if (r < 0)
                        n = 0;
        }
        for (size_t i = 0; i < n; i++) {
                Kobject *k = model_find_name(d->manager->model, e[i].name);
                if (!k) {
                        log_debug("%s/%s/%s: not a published block device, left out.", d->k->devpath, dir,
                                  e[i].name);
                        continue;
                }
                r = sd_bus_message_append(reply, "o", k->path);
                if (r < 0)
                        break;
        }
        sysfs_entries_free(e, n);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int prop_holders(ObjDir *d, sd_bus_message *reply)
{
        return append_link_dir(d, reply, "holders");
}

static int prop_slaves(ObjDir *d, sd_bus_message *reply)
{
        return append_link_dir(d, reply, "slaves");
}

static int append_child_path(ObjDir *d, sd_bus_message *reply, KtypeId id)
{
        Kobject *c = kobject_find_child_type(d->k, id);
        return sd_bus_message_append(reply, "o", c ? c->path : "/");
}

static int prop_queue(ObjDir *d, sd_bus_message *reply)
{
        return append_child_path(d, reply, KTYPE_QUEUE);
}

static int prop_elevator(ObjDir *d, sd_bus_message *reply)
{
        return append_child_path(d, reply, KTYPE_ELEVATOR);
}

static int prop_device(ObjDir *d, sd_bus_message *reply)
{
        return sd_bus_message_append(reply, "o", d->k->device ? d->k->device->path : "/");
}

/* Parses a uevent file's KEY=value lines; calls f for each. */
static int uevent_file_foreach(ObjDir *d,
                               int (*f)(const char *key, size_t key_len, const char *value, void *u),
                               void *u)
{
        _cleanup_(freep) char *v = NULL;
        char *line, *save = NULL;
        int r;

        if (d->k->ktype->id != KTYPE_DISK && d->k->ktype->id != KTYPE_PARTITION &&
            d->k->ktype->id != KTYPE_DEVICE)
                return 0;
        r = objdir_read(d, "uevent", &v);
        if (r < 0) {
                log_debug_errno(r, "%s/uevent: unreadable: %m", d->k->devpath);
                return 0;
        }
        for (line = strtok_r(v, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *eq = strchr(line, '=');
                if (!eq || eq == line)
                        continue;
                r = f(line, (size_t) (eq - line), eq + 1, u);
                if (r != 0)
                        return r;
        }
        return 0;
}

typedef struct FindKey {
        const char *key;
        uint64_t value;
        bool found;
} FindKey;

static int find_u64_key(const char *key, size_t key_len, const char *value, void *u)
{
        FindKey *f = u;
        char *end;

        if (strlen(f->key) != key_len || strncmp(key, f->key, key_len) != 0)
                return 0;
        errno = 0;
        unsigned long long x = strtoull(value, &end, 10);
        if (errno == 0 && end != value && *end == 0) {
                f->value = x;
                f->found = true;
        }
        return 1;
}

static int prop_number(ObjDir *d, sd_bus_message *reply)
{
        FindKey f = {.key = "PARTN"};

        (void) uevent_file_foreach(d, find_u64_key, &f);
        if (!f.found)
                f.value = read_u64_or_zero(d, "partition");
        return sd_bus_message_append(reply, "u", (uint32_t) (f.value > UINT32_MAX ? 0 : f.value));
}

/* "none [mq-deadline] kyber bfq": the bracketed one is active. */
static int parse_scheduler(ObjDir *d, char ***ret_all, char **ret_active)
{
        _cleanup_(freep) char *v = NULL;
        _cleanup_(strv_freep) char **all = NULL;
        char *tok, *save = NULL, *active = NULL;
        size_t n = 0;
        int r;

        r = objdir_read(d, "scheduler", &v);
        if (r < 0)
                return r;
        for (tok = strtok_r(v, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
                size_t l = strlen(tok);
                bool bracketed = l >= 2 && tok[0] == '[' && tok[l - 1] == ']';
                if (bracketed) {
                        tok[l - 1] = 0;
                        tok++;
                }
                r = strv_extend(&all, &n, tok);
                if (r < 0)
                        return r;
                if (bracketed && !active)
                        active = all[n - 1];
        }
        if (!active && n == 1)
                active = all[0];
        if (ret_active) {
                *ret_active = strdup(active ? active : "");
                if (!*ret_active)
                        return -ENOMEM;
        }
        if (ret_all)
                *ret_all = TAKE_PTR(all);
        return 0;
}

static int prop_scheduler(ObjDir *d, sd_bus_message *reply)
{
        _cleanup_(freep) char *active = NULL;
        if (parse_scheduler(d, NULL, &active) < 0)
                return sd_bus_message_append(reply, "s", "");
        return sd_bus_message_append(reply, "s", active);
}

static int prop_schedulers(ObjDir *d, sd_bus_message *reply)
{
        _cleanup_(strv_freep) char **all = NULL;
        if (parse_scheduler(d, &all, NULL) < 0)
                all = NULL;
        return sd_bus_message_append_strv(reply, all);
}

static int prop_members(ObjDir *d, sd_bus_message *reply)
{
        _cleanup_(freep) Kobject **l = NULL;
        size_t n;
        int r;

        r = kset_members_sorted(d->k, &l, &n);
        if (r < 0)
                return r;
        return append_object_list(reply, l, n);
}

static const TypedProperty disk_properties[] = {
                {"Major", "u", prop_major, "dev"},
                {"Minor", "u", prop_minor, "dev"},
                {"Size", "t", prop_size, "size"},
                {"ReadOnly", "b", prop_read_only, "ro"},
                {"Removable", "b", prop_removable, "removable"},
                {"Partitions", "ao", prop_partitions},
                {"Holders", "ao", prop_holders, SOURCE_HOLDERS},
                {"Slaves", "ao", prop_slaves, SOURCE_SLAVES},
                {"Queue", "o", prop_queue, .emits = "const"},
                {"Device", "o", prop_device, .emits = "const"},
                {},
};

static const TypedProperty partition_properties[] = {
                {"Major", "u", prop_major, "dev"},
                {"Minor", "u", prop_minor, "dev"},
                {"Size", "t", prop_size, "size"},
                {"ReadOnly", "b", prop_read_only, "ro"},
                {"Number", "u", prop_number, SOURCE_UEVENT},
                {"Start", "t", prop_start, "start"},
                {"Holders", "ao", prop_holders, SOURCE_HOLDERS},
                {},
};

static const TypedProperty queue_properties[] = {
                {"Scheduler", "s", prop_scheduler, "scheduler", .writable = true},
                {"Schedulers", "as", prop_schedulers, "scheduler"},
                {"Elevator", "o", prop_elevator},
                {},
};

static const TypedProperty kset_properties[] = {
                /* Thousands of paths per disk added: announced by name only, InterfacesAdded/Removed say the
                   rest. */
                {"Members", "ao", prop_members, .emits = "invalidates"},
                {},
};

static const TypedProperty no_properties[] = {{}};

/* ---- interfaces of an object ----------------------------------------------------------------- */

typedef enum IfaceKind {
        IFACE_KOBJECT,
        IFACE_KIND, /* Kset, Disk, Partition, Queue, Elevator, Device */
        IFACE_GROUP,
} IfaceKind;

typedef struct Iface {
        IfaceKind kind;
        const char *name;
        const TypedProperty *typed;
        const AttrSet *attrs; /* raw attributes, or NULL */
        const char *attr_dir; /* group directory, or NULL */
} Iface;

static const char *kind_interface(const Kobject *k, const TypedProperty **ret_typed)
{
        switch (k->ktype->id) {
        case KTYPE_KSET:
                *ret_typed = kset_properties;
                return BLKMODEL_IFACE_KSET;
        case KTYPE_DISK:
                *ret_typed = disk_properties;
                return BLKMODEL_IFACE_DISK;
        case KTYPE_PARTITION:
                *ret_typed = partition_properties;
                return BLKMODEL_IFACE_PARTITION;
        case KTYPE_QUEUE:
                *ret_typed = queue_properties;
                return BLKMODEL_IFACE_QUEUE;
        case KTYPE_ELEVATOR:
                *ret_typed = no_properties;
                return BLKMODEL_IFACE_ELEVATOR;
        case KTYPE_DEVICE:
                *ret_typed = no_properties;
                return BLKMODEL_IFACE_DEVICE;
        case _KTYPE_MAX:
                break;
        }
        *ret_typed = no_properties;
        return NULL;
}

static size_t object_n_ifaces(const Kobject *k)
{
        return 2 + (k->shape ? k->shape->n_groups : 0);
}

/* The i-th interface of an object: Kobject, its kind, then its groups. */
static bool object_iface(const Kobject *k, size_t i, Iface *ret)
{
        if (i == 0) {
                *ret = (Iface){.kind = IFACE_KOBJECT,
                               .name = BLKMODEL_IFACE_KOBJECT,
                               .typed = no_properties};
                return true;
        }
        if (i == 1) {
                const TypedProperty *typed;
                const char *name = kind_interface(k, &typed);
                *ret = (Iface){.kind = IFACE_KIND,
                               .name = name,
                               .typed = typed,
                               .attrs = k->shape ? k->shape->attrs : NULL};
                return name != NULL;
        }
        if (!k->shape || i - 2 >= k->shape->n_groups)
                return false;
        const Group *g = &k->shape->groups[i - 2];
        *ret = (Iface){.kind = IFACE_GROUP,
                       .name = g->interface,
                       .typed = no_properties,
                       .attrs = g->attrs,
                       .attr_dir = g->dir};
        return true;
}

static bool object_find_iface(const Kobject *k, const char *name, Iface *ret)
{
        for (size_t i = 0; i < object_n_ifaces(k); i++)
                if (object_iface(k, i, ret) && streq(ret->name, name))
                        return true;
        return false;
}

/* ---- Kobject interface ----------------------------------------------------------------------- */

static const char *const kobject_property_names[] = {"Name", "DevPath", "Parent", "Kset", "Ktype", "Uevent"};

static int append_uevent_pair(const char *key, size_t key_len, const char *value, void *u)
{
        _cleanup_(freep) char *k = strndup(key, key_len);
        if (!k)
                return -ENOMEM;
        int r = sd_bus_message_append((sd_bus_message *) u, "{ss}", k, value);
        return r < 0 ? r : 0;
}

static int append_kobject_property(ObjDir *d, sd_bus_message *reply, const char *name)
{
        Kobject *k = d->k;
        int r;

        if (streq(name, "Name"))
                return sd_bus_message_append(reply, "s", k->name);
        if (streq(name, "DevPath"))
                return sd_bus_message_append(reply, "s", k->devpath);
        if (streq(name, "Parent"))
                return sd_bus_message_append(reply, "o", k->parent ? k->parent->path : "/");
        if (streq(name, "Kset"))
                return sd_bus_message_append(reply, "o", k->kset ? k->kset->path : "/");
        if (streq(name, "Ktype"))
                return sd_bus_message_append(reply, "s", k->ktype->name);
        if (streq(name, "Uevent")) {
                r = sd_bus_message_open_container(reply, 'a', "{ss}");
                if (r < 0)
                        return r;
                r = uevent_file_foreach(d, append_uevent_pair, reply);
                if (r < 0)
                        return r;
                return sd_bus_message_close_container(reply);
        }
        return -ENOENT;
}

static const char *kobject_property_signature(const char *name)
{
        if (streq(name, "Parent") || streq(name, "Kset"))
                return "o";
        if (streq(name, "Uevent"))
                return "a{ss}";
        return "s";
}

/* ---- raw attributes --------------------------------------------------------------------------- */

static int read_attr(ObjDir *d, const Iface *iface, const Attr *a, char **ret)
{
        _cleanup_(freep) char *rel = NULL;
        const char *file = a->file;

        if (iface->attr_dir) {
                rel = path_join(iface->attr_dir, a->file);
                if (!rel)
                        return -ENOMEM;
                file = rel;
        }
        return objdir_read(d, file, ret);
}

/* ---- one property, one interface, one object ---------------------------------------------------- */

static int append_variant(ObjDir *d, const Iface *iface, const char *member, sd_bus_message *reply,
                          bool lenient, sd_bus_error *error)
{
        int r;

        if (iface->kind == IFACE_KOBJECT) {
                for (size_t i = 0; i < ELEMENTSOF(kobject_property_names); i++)
                        if (streq(member, kobject_property_names[i])) {
                                r = sd_bus_message_open_container(reply, 'v',
                                                                  kobject_property_signature(member));
                                if (r >= 0)
                                        r = append_kobject_property(d, reply, member);
                                if (r >= 0)
                                        r = sd_bus_message_close_container(reply);
                                return r < 0 ? r : 1;
                        }
                return 0;
        }

        for (const TypedProperty *p = iface->typed; p->name; p++)
                if (streq(p->name, member)) {
                        r = sd_bus_message_open_container(reply, 'v', p->signature);
                        if (r >= 0)
                                r = p->get(d, reply);
                        if (r >= 0)
                                r = sd_bus_message_close_container(reply);
                        return r < 0 ? r : 1;
                }

        const Attr *a = iface->attrs ? attr_set_find(iface->attrs, member) : NULL;
        if (!a)
                return 0;

        _cleanup_(freep) char *value = NULL;
        r = read_attr(d, iface, a, &value);
        if (r < 0) {
                /* In GetAll one bad file must not hide every other value. */
                if (!lenient)
                        return sd_bus_error_setf(error, BLKMODEL_ERROR_READ_FAILED,
                                                 "Reading %s/%s%s%s failed: %s", d->k->devpath,
                                                 strempty(iface->attr_dir), iface->attr_dir ? "/" : "",
                                                 a->file, strerror(-r));
                log_debug_errno(r, "%s/%s: unreadable, reported as empty: %m", d->k->devpath, a->file);
        }
        r = sd_bus_message_append(reply, "v", "s", value ? value : "");
        return r < 0 ? r : 1;
}

static int append_dict_entry(ObjDir *d, const Iface *iface, const char *member, sd_bus_message *reply)
{
        int r;

        r = sd_bus_message_open_container(reply, 'e', "sv");
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "s", member);
        if (r < 0)
                return r;
        r = append_variant(d, iface, member, reply, true, NULL);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* with_attributes: the raw attribute properties too (GetAll), or only Kobject's and the typed ones. */
static int append_iface_properties(ObjDir *d, const Iface *iface, sd_bus_message *reply, bool with_attributes)
{
        int r;

        r = sd_bus_message_open_container(reply, 'a', "{sv}");
        if (r < 0)
                return r;
        if (iface->kind == IFACE_KOBJECT)
                for (size_t i = 0; i < ELEMENTSOF(kobject_property_names); i++) {
                        r = append_dict_entry(d, iface, kobject_property_names[i], reply);
                        if (r < 0)
                                return r;
                }
        for (const TypedProperty *p = iface->typed; p->name; p++) {
                r = append_dict_entry(d, iface, p->name, reply);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; with_attributes && iface->attrs && i < iface->attrs->n_attrs; i++) {
                r = append_dict_entry(d, iface, iface->attrs->attrs[i].member, reply);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

int bus_object_append_all(Manager *m, sd_bus_message *reply, Kobject *k)
{
        ObjDir d = {.manager = m, .k = k, .fd = -1};
        Iface iface;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "{sa{sv}}");
        for (size_t i = 0; r >= 0 && i < object_n_ifaces(k); i++) {
                if (!object_iface(k, i, &iface))
                        continue;
                r = sd_bus_message_open_container(reply, 'e', "sa{sv}");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "s", iface.name);
                if (r >= 0)
                        r = append_iface_properties(&d, &iface, reply, false);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        objdir_done(&d);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

size_t bus_object_size_estimate(const Kobject *k)
{
        /* What bus_object_append_all() appends, measured from above on kernel-shaped trees (1.1-1.3x
         * the real size): D-Bus pads dict entries to 8 bytes and prefixes strings with their length. */
        size_t n = 16 + strlen(k->path);
        Iface iface;

        /* Kobject: six names, the strings, and the uevent file's few short lines (read at Get time);
         * a PCI device's (DRIVER, PCI_ID, MODALIAS …) are the longest. */
        n += 6 * 24 + strlen(k->name) + strlen(k->devpath) + (k->parent ? strlen(k->parent->path) : 1) +
             (k->kset ? strlen(k->kset->path) : 1) + 16;
        if (k->uevent_bytes > 0)
                n += k->uevent_bytes;
        else if (k->ktype->id == KTYPE_DISK || k->ktype->id == KTYPE_PARTITION)
                n += 224;
        else if (k->ktype->id == KTYPE_DEVICE)
                n += 384;
        for (size_t i = 0; i < object_n_ifaces(k); i++)
                if (object_iface(k, i, &iface)) {
                        n += 16 + strlen(iface.name);
                        for (const TypedProperty *p = iface.typed; p->name; p++)
                                n += 24 + strlen(p->name);
                }
        for (Kobject *c = k->first_child; c; c = c->next_sibling)
                n += 8 + strlen(c->path); /* Partitions, Queue, Elevator */
        for (Kobject *c = k->first_member; c; c = c->next_member)
                n += 8 + strlen(c->path); /* Members */
        if (k->ktype->id == KTYPE_DISK || k->ktype->id == KTYPE_PARTITION)
                n += 64; /* Holders, Slaves: mostly empty, a few paths on stacked devices */
        if (k->ktype->id == KTYPE_QUEUE)
                n += 128; /* Schedulers */
        return n;
}

int bus_object_append_interface_names(Manager *m, sd_bus_message *reply, Kobject *k)
{
        Iface iface;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "s");
        for (size_t i = 0; r >= 0 && i < object_n_ifaces(k); i++)
                if (object_iface(k, i, &iface))
                        r = sd_bus_message_append(reply, "s", iface.name);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

/* ---- Introspect -------------------------------------------------------------------------------- */

static const char standard_interfaces_xml[] =
                " <interface name=\"org.freedesktop.DBus.Peer\">\n"
                "  <method name=\"Ping\"/>\n"
                "  <method name=\"GetMachineId\">\n"
                "   <arg type=\"s\" name=\"machine_uuid\" direction=\"out\"/>\n"
                "  </method>\n"
                " </interface>\n"
                " <interface name=\"org.freedesktop.DBus.Introspectable\">\n"
                "  <method name=\"Introspect\">\n"
                "   <arg name=\"data\" type=\"s\" direction=\"out\"/>\n"
                "  </method>\n"
                " </interface>\n"
                " <interface name=\"org.freedesktop.DBus.Properties\">\n"
                "  <method name=\"Get\">\n"
                "   <arg name=\"interface_name\" direction=\"in\" type=\"s\"/>\n"
                "   <arg name=\"property_name\" direction=\"in\" type=\"s\"/>\n"
                "   <arg name=\"value\" direction=\"out\" type=\"v\"/>\n"
                "  </method>\n"
                "  <method name=\"GetAll\">\n"
                "   <arg name=\"interface_name\" direction=\"in\" type=\"s\"/>\n"
                "   <arg name=\"props\" direction=\"out\" type=\"a{sv}\"/>\n"
                "  </method>\n"
                "  <method name=\"Set\">\n"
                "   <arg name=\"interface_name\" direction=\"in\" type=\"s\"/>\n"
                "   <arg name=\"property_name\" direction=\"in\" type=\"s\"/>\n"
                "   <arg name=\"value\" direction=\"in\" type=\"v\"/>\n"
                "  </method>\n"
                "  <signal name=\"PropertiesChanged\">\n"
                "   <arg type=\"s\" name=\"interface_name\"/>\n"
                "   <arg type=\"a{sv}\" name=\"changed_properties\"/>\n"
                "   <arg type=\"as\" name=\"invalidated_properties\"/>\n"
                "  </signal>\n"
                " </interface>\n";

/* A kset answers GetManagedObjects for its part of the model; the signals come from the root. */
static const char kset_object_manager_xml[] =
        " <interface name=\"org.freedesktop.DBus.ObjectManager\">\n"
        "  <method name=\"GetManagedObjects\">\n"
        "   <arg type=\"a{oa{sa{sv}}}\" name=\"object_paths_interfaces_and_properties\" direction=\"out\"/>\n"
        "  </method>\n"
        " </interface>\n";

static const char object_manager_xml[] =
                " <interface name=\"org.freedesktop.DBus.ObjectManager\">\n"
                "  <method name=\"GetManagedObjects\">\n"
                "   <arg type=\"a{oa{sa{sv}}}\" name=\"object_paths_interfaces_and_properties\" "
                "direction=\"out\"/>\n"
                "  </method>\n"
                "  <signal name=\"InterfacesAdded\">\n"
                "   <arg type=\"o\" name=\"object_path\"/>\n"
                "   <arg type=\"a{sa{sv}}\" name=\"interfaces_and_properties\"/>\n"
                "  </signal>\n"
                "  <signal name=\"InterfacesRemoved\">\n"
                "   <arg type=\"o\" name=\"object_path\"/>\n"
                "   <arg type=\"as\" name=\"interfaces\"/>\n"
                "  </signal>\n"
                " </interface>\n";

/* "true" is the default of EmitsChangedSignal: left out, which keeps `busctl tree` over 100,000
 * objects from parsing megabytes of annotations. */
static void xml_property(FILE *f, const char *name, const char *signature, bool writable, const char *emits)
{
        const char *access = writable ? "readwrite" : "read";

        if (!emits || streq(emits, "true")) {
                fprintf(f, "  <property name=\"%s\" type=\"%s\" access=\"%s\"/>\n", name, signature, access);
                return;
        }
        fprintf(f,
                "  <property name=\"%s\" type=\"%s\" access=\"%s\">\n"
                "   <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"%s\"/>\n"
                "  </property>\n",
                name, signature, access, emits);
}

static void xml_iface(FILE *f, const Iface *iface)
{
        fprintf(f, " <interface name=\"%s\">\n", iface->name);
        if (iface->kind == IFACE_KOBJECT)
                for (size_t i = 0; i < ELEMENTSOF(kobject_property_names); i++)
                        /* A kobject's identity never changes; a rename is remove+add. */
                        xml_property(f, kobject_property_names[i],
                                     kobject_property_signature(kobject_property_names[i]), false,
                                     streq(kobject_property_names[i], "Uevent") ? "true" : "const");
        for (const TypedProperty *p = iface->typed; p->name; p++)
                xml_property(f, p->name, p->signature, p->writable, p->emits);
        for (size_t i = 0; iface->attrs && i < iface->attrs->n_attrs; i++) {
                const Attr *a = &iface->attrs->attrs[i];
                xml_property(f, a->member, "s", a->flags & ATTR_WRITABLE,
                             a->flags & ATTR_VOLATILE ? "false" : "true");
        }
        fputs(" </interface>\n", f);
}

static void learn_modes(ObjDir *d, const Iface *iface);

static int introspect(Manager *m, const char *path, Kobject *k, char **ret)
{
        _cleanup_(freep) Kobject **children = NULL;
        size_t n_children = 0, size = 0;
        char *buf = NULL;
        FILE *f;
        int r = 0;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        fputs(INTROSPECT_DOCTYPE, f);
        fprintf(f, "<node name=\"%s\">\n", path);
        fputs(standard_interfaces_xml, f);
        if (!k) {
                /* The root: the Manager and the object manager; children are the two ksets. */
                fputs(object_manager_xml, f);
                fputs(bus_manager_introspection_xml, f);
                fprintf(f, " <node name=\"block\"/>\n <node name=\"devices\"/>\n");
        } else {
                ObjDir d = {.manager = m, .k = k, .fd = -1};
                Iface iface;
                for (size_t i = 0; i < object_n_ifaces(k); i++)
                        if (object_iface(k, i, &iface)) {
                                learn_modes(&d, &iface);
                                xml_iface(f, &iface);
                        }
                if (k->ktype->id == KTYPE_KSET)
                        fputs(kset_object_manager_xml, f);
                objdir_done(&d);
                r = kobject_children_sorted(k, _KTYPE_MAX, &children, &n_children);
                for (size_t i = 0; r >= 0 && i < n_children; i++)
                        fprintf(f, " <node name=\"%s\"/>\n", strrchr(children[i]->path, '/') + 1);
        }
        fputs("</node>\n", f);
        if (fclose(f) != 0 || r < 0) {
                free(buf);
                return r < 0 ? r : -ENOMEM;
        }
        *ret = buf;
        return 0;
}

/* ---- method dispatch --------------------------------------------------------------------------- */

static int method_introspect(Manager *m, sd_bus_message *msg, Kobject *k, sd_bus_error *error)
{
        _cleanup_(freep) char *xml = NULL;
        int r;

        r = introspect(m, sd_bus_message_get_path(msg), k, &xml);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, "s", xml);
}

static int method_get(Manager *m, sd_bus_message *msg, Kobject *k, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        ObjDir d = {.manager = m, .k = k, .fd = -1};
        const char *interface, *property;
        Iface iface;
        int r;

        r = sd_bus_message_read(msg, "ss", &interface, &property);
        if (r < 0)
                return r;
        if (!object_find_iface(k, interface, &iface))
                return sd_bus_error_setf(error, SD_BUS_ERROR_UNKNOWN_INTERFACE,
                                         "Object %s has no interface '%s'.", k->path, interface);
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = append_variant(&d, &iface, property, reply, false, error);
        objdir_done(&d);
        if (r < 0)
                return r;
        if (r == 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_UNKNOWN_PROPERTY,
                                         "Interface %s has no property '%s'.", interface, property);
        return sd_bus_send(NULL, reply, NULL);
}

static int method_get_all(Manager *m, sd_bus_message *msg, Kobject *k, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        ObjDir d = {.manager = m, .k = k, .fd = -1};
        const char *interface;
        Iface iface;
        int r;

        r = sd_bus_message_read(msg, "s", &interface);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        if (!object_find_iface(k, interface, &iface))
                return sd_bus_error_setf(error, SD_BUS_ERROR_UNKNOWN_INTERFACE,
                                         "Object %s has no interface '%s'.", k->path, interface);
        r = append_iface_properties(&d, &iface, reply, true);
        objdir_done(&d);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* ---- writes ------------------------------------------------------------------------------------ */

/* An attribute's file, relative to the object's directory. */
static char *attr_relpath(const Iface *iface, const Attr *a)
{
        return iface->attr_dir ? path_join(iface->attr_dir, a->file) : strdup(a->file);
}

static void learn_modes(ObjDir *d, const Iface *iface)
{
        AttrSet *set = (AttrSet *) iface->attrs; /* shared, and only ever learned once */
        int fd;

        if (!set || set->modes_learned || (fd = objdir_fd(d)) < 0)
                return;
        for (size_t i = 0; i < set->n_attrs; i++) {
                _cleanup_(freep) char *rel = attr_relpath(iface, &set->attrs[i]);
                int mode = rel ? sysfs_file_mode(fd, rel) : -ENOMEM;
                if (mode >= 0 && (mode & 0222))
                        set->attrs[i].flags |= ATTR_WRITABLE;
        }
        set->modes_learned = true;
}

/* NOTES.md: an unknown name makes the kernel request_module("%s-iosched") first; allow only listed ones. */
static int check_scheduler(ObjDir *d, const char *value, sd_bus_error *error)
{
        _cleanup_(strv_freep) char **all = NULL;
        int r;

        r = parse_scheduler(d, &all, NULL);
        if (r < 0)
                return sd_bus_error_setf(error, BLKMODEL_ERROR_READ_FAILED,
                                         "Reading %s/scheduler failed: %s", d->k->devpath, strerror(-r));
        for (char **s = all; s && *s; s++)
                if (streq(*s, value))
                        return 0;
        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                 "'%s' is not an I/O scheduler %s offers (see Schedulers).", value,
                                 d->k->path);
}

static int method_set(Manager *m, sd_bus_message *msg, Kobject *k, sd_bus_error *error)
{
        _cleanup_(freep) char *rel = NULL;
        ObjDir d = {.manager = m, .k = k, .fd = -1};
        const char *interface, *property, *value;
        const Attr *a = NULL;
        bool scheduler;
        Iface iface;
        int fd, r;

        r = sd_bus_message_read(msg, "ss", &interface, &property);
        if (r < 0)
                return r;
        if (!object_find_iface(k, interface, &iface))
                return sd_bus_error_setf(error, SD_BUS_ERROR_UNKNOWN_INTERFACE,
                                         "Object %s has no interface '%s'.", k->path, interface);

        /* Names come from the model, never from the caller: the file is the one the scan found. */
        scheduler = k->ktype->id == KTYPE_QUEUE && iface.kind == IFACE_KIND && streq(property, "Scheduler");
        if (!scheduler) {
                bool known = false;
                for (size_t i = 0; iface.kind == IFACE_KOBJECT && i < ELEMENTSOF(kobject_property_names);
                     i++)
                        known = known || streq(kobject_property_names[i], property);
                for (const TypedProperty *p = iface.typed; !known && p->name; p++)
                        known = streq(p->name, property);
                if (known)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_PROPERTY_READ_ONLY,
                                                 "Property %s.%s is read-only.", interface, property);
                a = iface.attrs ? attr_set_find(iface.attrs, property) : NULL;
                if (!a)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_UNKNOWN_PROPERTY,
                                                 "Interface %s has no property '%s'.", interface, property);
        }

        r = sd_bus_message_enter_container(msg, 'v', "s");
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "%s.%s takes a string.",
                                         interface, property);
        r = sd_bus_message_read(msg, "s", &value);
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(msg);
        if (r < 0)
                return r;

        rel = scheduler ? strdup("scheduler") : attr_relpath(&iface, a);
        if (!rel)
                return -ENOMEM;
        fd = objdir_fd(&d);
        if (fd < 0) {
                r = sd_bus_error_setf(error, SD_BUS_ERROR_UNKNOWN_OBJECT, "%s is gone: %s", k->path,
                                      strerror(-fd));
                goto out;
        }
        r = sysfs_file_mode(fd, rel);
        if (r < 0 || !(r & 0222)) {
                r = sd_bus_error_setf(error, SD_BUS_ERROR_PROPERTY_READ_ONLY, "%s/%s is not writable.",
                                      k->devpath, rel);
                goto out;
        }
        r = bus_check_privileged(m, msg, error);
        if (r < 0)
                goto out;
        if (strlen(value) >= 4096) {
                r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Values are at most 4095 bytes.");
                goto out;
        }
        scheduler = k->ktype->id == KTYPE_QUEUE && streq(rel, "scheduler");
        if (scheduler) {
                r = check_scheduler(&d, value, error);
                if (r < 0)
                        goto out;
        }

        /* Without a reading from before, the announcement after would have to list everything. */
        if (!k->value_hashes)
                (void) bus_object_refresh(m, k, BUS_REFRESH_RECORD);

        r = sysfs_write_attr(fd, rel, value);
        if (r < 0) {
                r = sd_bus_error_setf(error, BLKMODEL_ERROR_WRITE_FAILED, "Writing '%s' to %s/%s failed: %s",
                                      value, k->devpath, rel, strerror(-r));
                goto out;
        }
        log_info("%s/%s set to '%s'.", k->devpath, rel, value);

        /* sd-bus would not announce it either: what the kernel stored is read back and announced
         * (and a scheduler switch replaces the iosched object). */
        (void) bus_object_refresh(m, k, BUS_REFRESH_ALL);
        r = sd_bus_reply_method_return(msg, NULL);
out:
        objdir_done(&d);
        return r;
}

/* Calls f for every object below top (NULL: every object), parents before children. */
static int foreach_below(Manager *m, Kobject *top, int (*f)(Manager *m, Kobject *k, void *u), void *u)
{
        Kobject *k;
        size_t i = 0;
        int r;

        if (!top) {
                while ((k = hashmap_iterate(&m->model->by_path, &i, NULL)))
                        if ((r = f(m, k, u)) < 0)
                                return r;
                return 0;
        }
        for (k = top->first_child; k; k = k->next_sibling) {
                if ((r = f(m, k, u)) < 0)
                        return r;
                if ((r = foreach_below(m, k, f, u)) < 0)
                        return r;
        }
        return 0;
}

static int add_estimate(Manager *m, Kobject *k, void *u)
{
        *(size_t *) u += bus_object_size_estimate(k);
        return 0;
}

static int append_managed_object(Manager *m, Kobject *k, void *u)
{
        sd_bus_message *reply = u;
        int r;

        r = sd_bus_message_open_container(reply, 'e', "oa{sa{sv}}");
        if (r >= 0)
                r = sd_bus_message_append(reply, "o", k->path);
        if (r >= 0)
                r = bus_object_append_all(m, reply, k);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

/*
 * The root answers for every object; a kset for the objects below it, so that a model too large
 * for one message (10,000 disks with their partitions, queues and hardware) can still be read
 * whole in two calls, on /org/blkmodel1/block and /org/blkmodel1/devices.
 */
static int method_get_managed_objects(Manager *m, sd_bus_message *msg, Kobject *top, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *where = top ? top->path : BLKMODEL_ROOT_PATH;
        /* D-Bus caps an array at 64 MiB, and dbus-daemon's system bus a message at 32 MiB by default;
         * a bus drops a connection that sends more.  Refuse instead. */
        size_t estimate = 64, limit = m->options.bus_kind == BUS_SYSTEM ? BUS_SYSTEM_MESSAGE_MAX : BUS_ARRAY_MAX;
        int r;

        (void) foreach_below(m, top, add_estimate, &estimate);
        if (estimate > limit) {
                log_warning("GetManagedObjects on %s refused: about %zu MiB, more than one message may carry (%zu MiB).",
                            where, estimate >> 20, limit >> 20);
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "The objects below %s are about %zu MiB, more than one message may carry "
                                         "(%zu MiB): call GetManagedObjects on %s and on %s for their parts.",
                                         where, estimate >> 20, limit >> 20, m->model->block_kset->path,
                                         m->model->devices_kset->path);
        }
        log_debug("GetManagedObjects on %s: at most %zu bytes.", where, estimate);

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "{oa{sa{sv}}}");
        if (r >= 0)
                r = foreach_below(m, top, append_managed_object, reply);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        r = sd_bus_send(NULL, reply, NULL);
        /* Building it scattered thousands of small allocations over the heap: give the pages back. */
        reply = sd_bus_message_unref(reply);
        (void) malloc_trim(0);
        return r;
}

static int object_handler(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        Manager *m = userdata;
        const char *path = sd_bus_message_get_path(msg);
        Kobject *k = NULL;
        bool root;

        if (!path)
                return 0;
        root = streq(path, BLKMODEL_ROOT_PATH);
        if (!root) {
                k = model_find_path(m->model, path);
                /* Left to sd-bus, a path below a fallback gets "unknown property" instead. */
                if (!k)
                        return sd_bus_reply_method_errorf(msg, SD_BUS_ERROR_UNKNOWN_OBJECT, "No object %s.",
                                                          path);
        }

        if (bus_is_call(msg, IFACE_INTROSPECTABLE, "Introspect"))
                return bus_check_signature(msg, "", error) ?: method_introspect(m, msg, k, error);
        if (root) {
                if (bus_is_call(msg, IFACE_OBJECT_MANAGER, "GetManagedObjects"))
                        return bus_check_signature(msg, "", error)
                                               ?: method_get_managed_objects(m, msg, NULL, error);
                /* The Manager interface and its properties. */
                return bus_manager_dispatch(m, msg, error);
        }
        if (k->ktype->id == KTYPE_KSET && bus_is_call(msg, IFACE_OBJECT_MANAGER, "GetManagedObjects"))
                return bus_check_signature(msg, "", error) ?: method_get_managed_objects(m, msg, k, error);
        if (bus_is_call(msg, IFACE_PROPERTIES, "Get"))
                return bus_check_signature(msg, "ss", error) ?: method_get(m, msg, k, error);
        if (bus_is_call(msg, IFACE_PROPERTIES, "GetAll"))
                return bus_check_signature(msg, "s", error) ?: method_get_all(m, msg, k, error);
        if (bus_is_call(msg, IFACE_PROPERTIES, "Set"))
                return bus_check_signature(msg, "ssv", error) ?: method_set(m, msg, k, error);
        return 0;
}

/* ---- change detection ------------------------------------------------------------------------ */

/*
 * Which properties did an event change?  The values are not kept (SPEC §9: an object costs
 * what its shape costs), only a 64-bit fingerprint per value.  Slots: every attribute of the
 * kind interface and of each group, in interface order, then the uevent file and the holders/
 * and slaves/ listings, which the typed and Kobject properties derive from.
 */
enum { SLOT_UEVENT, SLOT_HOLDERS, SLOT_SLAVES, _SLOT_EXTRA };

static uint64_t fingerprint(const void *p, size_t n, uint64_t h)
{
        /* FNV-1a: collisions among one attribute's successive values are not a practical worry. */
        for (size_t i = 0; i < n; i++) {
                h ^= ((const uint8_t *) p)[i];
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

#define FINGERPRINT_INIT UINT64_C(0xcbf29ce484222325)
#define FINGERPRINT_UNREADABLE UINT64_C(1)
#define FINGERPRINT_VOLATILE UINT64_C(0)

static size_t n_slots(const Kobject *k)
{
        size_t n = _SLOT_EXTRA;
        Iface iface;

        for (size_t i = 1; i < object_n_ifaces(k); i++)
                if (object_iface(k, i, &iface) && iface.attrs)
                        n += iface.attrs->n_attrs;
        return n;
}

static uint64_t fingerprint_file(ObjDir *d, const Iface *iface, const Attr *a)
{
        _cleanup_(freep) char *v = NULL;

        if (a->flags & ATTR_VOLATILE)
                return FINGERPRINT_VOLATILE;
        if (read_attr(d, iface, a, &v) < 0)
                return FINGERPRINT_UNREADABLE;
        return fingerprint(v, strlen(v) + 1, FINGERPRINT_INIT);
}

static uint64_t fingerprint_uevent(ObjDir *d)
{
        _cleanup_(freep) char *v = NULL;

        if (d->k->ktype->id != KTYPE_DISK && d->k->ktype->id != KTYPE_PARTITION &&
            d->k->ktype->id != KTYPE_DEVICE)
                return FINGERPRINT_INIT;
        if (objdir_read(d, "uevent", &v) < 0)
                return FINGERPRINT_UNREADABLE;

        /* Its a{ss} size, for GetManagedObjects' estimate: per line an 8-aligned entry of two
         * length-prefixed, NUL-terminated strings. */
        size_t bytes = 8;
        for (const char *line = v; *line;) {
                size_t l = strcspn(line, "\n");
                bytes += 8 + 4 + l + 1 + 4 + 1;
                line += l + (line[l] == '\n');
        }
        d->k->uevent_bytes = (uint16_t) (bytes < UINT16_MAX ? bytes : UINT16_MAX);
        return fingerprint(v, strlen(v) + 1, FINGERPRINT_INIT);
}

static uint64_t fingerprint_link_dir(ObjDir *d, const char *dir)
{
        SysfsEntry *e = NULL;
        size_t n = 0;
        uint64_t h = FINGERPRINT_INIT;
        int fd, subfd;

        if (d->k->ktype->id != KTYPE_DISK && d->k->ktype->id != KTYPE_PARTITION)
                return h;
        fd = objdir_fd(d);
        subfd = fd >= 0 ? sysfs_open_subdir(fd, dir) : fd;
        if (subfd < 0)
                return h;
        if (sysfs_list(subfd, &e, &n) >= 0)
                for (size_t i = 0; i < n; i++)
                        h = fingerprint(e[i].name, strlen(e[i].name) + 1, h);
        close(subfd);
        sysfs_entries_free(e, n);
        return h;
}

/*
 * Attributes that change without an event and that users change: a scheduler or read-ahead set
 * with echo.  Re-read every --poll-interval; kept to two per queue, since at 10,000 disks every
 * extra one costs 5,000 reads a second.
 */
static const char *const watched_queue_files[] = {"scheduler", "read_ahead_kb", NULL};

static bool is_watched(const Kobject *k, const Iface *iface, const Attr *a)
{
        if (k->ktype->id != KTYPE_QUEUE || iface->kind != IFACE_KIND)
                return false;
        for (const char *const *w = watched_queue_files; *w; w++)
                if (streq(*w, a->file))
                        return true;
        return false;
}

/* Fills ret; what `how` does not re-read is copied from old (which it then requires). */
static void fingerprint_object(ObjDir *d, BusRefresh how, const uint64_t *old, uint64_t *ret)
{
        size_t s = 0, n = n_slots(d->k) - _SLOT_EXTRA;
        bool keep_attrs = how == BUS_REFRESH_LINKS || how == BUS_REFRESH_WATCHED;
        Iface iface;

        for (size_t i = 1; i < object_n_ifaces(d->k); i++) {
                if (!object_iface(d->k, i, &iface) || !iface.attrs)
                        continue;
                for (size_t j = 0; j < iface.attrs->n_attrs; j++, s++) {
                        const Attr *a = &iface.attrs->attrs[j];
                        bool read = !keep_attrs ||
                                    (how == BUS_REFRESH_WATCHED && is_watched(d->k, &iface, a));
                        ret[s] = read ? fingerprint_file(d, &iface, a) : old[s];
                }
        }
        assert(s == n);
        ret[n + SLOT_UEVENT] = keep_attrs ? old[n + SLOT_UEVENT] : fingerprint_uevent(d);
        if (how == BUS_REFRESH_WATCHED) {
                ret[n + SLOT_HOLDERS] = old[n + SLOT_HOLDERS];
                ret[n + SLOT_SLAVES] = old[n + SLOT_SLAVES];
                return;
        }
        ret[n + SLOT_HOLDERS] = fingerprint_link_dir(d, "holders");
        ret[n + SLOT_SLAVES] = fingerprint_link_dir(d, "slaves");
}

/* Did a queue's scheduler file change between two readings?  Its iosched kobject then changed too. */
static bool scheduler_changed(const Kobject *k, const uint64_t *old, const uint64_t *now)
{
        Iface iface;

        if (k->ktype->id != KTYPE_QUEUE || !object_iface(k, 1, &iface) || !iface.attrs)
                return false;
        /* The kind interface's attributes come first among the slots. */
        for (size_t j = 0; j < iface.attrs->n_attrs; j++)
                if (streq(iface.attrs->attrs[j].file, "scheduler"))
                        return old[j] != now[j];
        return false;
}

static int emit_properties_changed(Manager *m, ObjDir *d, const Iface *iface, char *const *changed,
                                   char *const *invalidated)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;
        int r;

        r = sd_bus_message_new_signal(m->bus, &s, d->k->path, IFACE_PROPERTIES, "PropertiesChanged");
        if (r >= 0)
                r = sd_bus_message_append(s, "s", iface->name);
        if (r >= 0)
                r = sd_bus_message_open_container(s, 'a', "{sv}");
        for (size_t i = 0; r >= 0 && changed && changed[i]; i++)
                r = append_dict_entry(d, iface, changed[i], s);
        if (r >= 0)
                r = sd_bus_message_close_container(s);
        if (r >= 0)
                r = sd_bus_message_append_strv(s, (char **) invalidated);
        if (r >= 0)
                r = sd_bus_send(m->bus, s, NULL);
        return r;
}

static bool typed_source_changed(const TypedProperty *p, const Iface *iface, const bool *attr_changed,
                                 const bool *extra_changed)
{
        if (!p->source)
                return false;
        if (streq(p->source, SOURCE_UEVENT))
                return extra_changed[SLOT_UEVENT];
        if (streq(p->source, SOURCE_HOLDERS))
                return extra_changed[SLOT_HOLDERS];
        if (streq(p->source, SOURCE_SLAVES))
                return extra_changed[SLOT_SLAVES];
        for (size_t j = 0; iface->attrs && j < iface->attrs->n_attrs; j++)
                if (streq(iface->attrs->attrs[j].file, p->source))
                        return attr_changed[j];
        return false;
}

/* Emits PropertiesChanged for every property that derives from a changed slot; returns how many. */
/* Is the interface, with the same attributes, also in shape s?  (Shapes and attribute sets are interned.) */
static bool iface_same_in(const Iface *iface, const Shape *s)
{
        const Group *g;

        switch (iface->kind) {
        case IFACE_KOBJECT:
                return true;
        case IFACE_KIND:
                return s && s->attrs == iface->attrs;
        case IFACE_GROUP:
                g = s ? shape_find_group(s, iface->name) : NULL;
                return g && g->attrs == iface->attrs;
        }
        return false;
}

/* only_same_in: if not NULL, announce only interfaces that stay the same in that shape. */
static int emit_changes(Manager *m, ObjDir *d, const uint64_t *old, const uint64_t *now,
                        const Shape *only_same_in)
{
        size_t s = 0, n = n_slots(d->k) - _SLOT_EXTRA;
        bool extra_changed[_SLOT_EXTRA];
        int count = 0, r;

        for (size_t i = 0; i < _SLOT_EXTRA; i++)
                extra_changed[i] = !old || old[n + i] != now[n + i];

        for (size_t i = 0; i < object_n_ifaces(d->k); i++) {
                _cleanup_(strv_freep) char **changed = NULL;
                _cleanup_(freep) bool *attr_changed = NULL;
                size_t n_changed = 0, n_attrs;
                Iface iface;

                if (!object_iface(d->k, i, &iface))
                        continue;
                n_attrs = iface.attrs ? iface.attrs->n_attrs : 0;
                attr_changed = calloc(n_attrs + 1, sizeof(bool));
                if (!attr_changed)
                        return -ENOMEM;
                if (iface.kind != IFACE_KOBJECT)
                        for (size_t j = 0; j < n_attrs; j++, s++)
                                attr_changed[j] = !(iface.attrs->attrs[j].flags & ATTR_VOLATILE) &&
                                                  (!old || old[s] != now[s]);
                if (only_same_in && !iface_same_in(&iface, only_same_in))
                        continue;

                if (iface.kind == IFACE_KOBJECT && extra_changed[SLOT_UEVENT]) {
                        r = strv_extend(&changed, &n_changed, "Uevent");
                        if (r < 0)
                                return r;
                }
                for (const TypedProperty *p = iface.typed; p->name; p++)
                        if (typed_source_changed(p, &iface, attr_changed, extra_changed)) {
                                r = strv_extend(&changed, &n_changed, p->name);
                                if (r < 0)
                                        return r;
                        }
                for (size_t j = 0; j < n_attrs; j++)
                        if (attr_changed[j]) {
                                r = strv_extend(&changed, &n_changed, iface.attrs->attrs[j].member);
                                if (r < 0)
                                        return r;
                        }
                if (n_changed == 0)
                        continue;
                r = emit_properties_changed(m, d, &iface, changed, NULL);
                if (r < 0)
                        return r;
                count += (int) n_changed;
        }
        return count;
}

static int refresh(Manager *m, Kobject *k, BusRefresh how, const Shape *only_same_in)
{
        ObjDir d = {.manager = m, .k = k, .fd = -1};
        _cleanup_(freep) uint64_t *now = NULL;
        size_t n = n_slots(k);
        bool have_old = k->value_hashes && k->n_value_hashes == n;
        int r = 0;

        bool switched;

        if ((how == BUS_REFRESH_LINKS || how == BUS_REFRESH_WATCHED) && !have_old)
                how = BUS_REFRESH_ALL; /* nothing to keep: read everything once */
        now = calloc(n, sizeof(uint64_t));
        if (!now)
                return -ENOMEM;
        fingerprint_object(&d, how, k->value_hashes, now);
        switched = have_old && how != BUS_REFRESH_RECORD && scheduler_changed(k, k->value_hashes, now);

        /* Without an earlier reading every property may have changed: say so rather than miss one. */
        if (how != BUS_REFRESH_RECORD && m->announce && k->linked &&
            (!have_old || memcmp(k->value_hashes, now, n * sizeof(uint64_t)) != 0))
                r = emit_changes(m, &d, have_old ? k->value_hashes : NULL, now, only_same_in);
        objdir_done(&d);

        /* Stacked devices are few; live.c re-reads their links when a neighbour comes or goes. */
        if (now[n - _SLOT_EXTRA + SLOT_HOLDERS] != FINGERPRINT_INIT ||
            now[n - _SLOT_EXTRA + SLOT_SLAVES] != FINGERPRINT_INIT) {
                if (k->linked && !hashmap_get(&m->stacked, k->path))
                        (void) hashmap_put(&m->stacked, k->path, k);
        } else
                (void) hashmap_remove_value(&m->stacked, k->path, k);

        free(k->value_hashes);
        k->value_hashes = TAKE_PTR(now);
        k->n_value_hashes = n;

        if (switched)
                live_scheduler_switched(m, k);
        return r;
}

int bus_object_refresh(Manager *m, Kobject *k, BusRefresh how)
{
        return refresh(m, k, how, NULL);
}

/* InterfacesAdded or InterfacesRemoved for the interfaces of k that are not the same in other. */
static int emit_interfaces_not_in(Manager *m, Kobject *k, const Shape *other, bool added)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;
        ObjDir d = {.manager = m, .k = k, .fd = -1};
        size_t n = 0;
        Iface iface;
        int r;

        r = sd_bus_message_new_signal(m->bus, &s, BLKMODEL_ROOT_PATH, IFACE_OBJECT_MANAGER,
                                      added ? "InterfacesAdded" : "InterfacesRemoved");
        if (r >= 0)
                r = sd_bus_message_append(s, "o", k->path);
        if (r >= 0)
                r = sd_bus_message_open_container(s, 'a', added ? "{sa{sv}}" : "s");
        for (size_t i = 0; r >= 0 && i < object_n_ifaces(k); i++) {
                if (!object_iface(k, i, &iface) || iface_same_in(&iface, other))
                        continue;
                n++;
                if (!added) {
                        r = sd_bus_message_append(s, "s", iface.name);
                        continue;
                }
                r = sd_bus_message_open_container(s, 'e', "sa{sv}");
                if (r >= 0)
                        r = sd_bus_message_append(s, "s", iface.name);
                if (r >= 0)
                        r = append_iface_properties(&d, &iface, s, false);
                if (r >= 0)
                        r = sd_bus_message_close_container(s);
        }
        objdir_done(&d);
        if (r >= 0)
                r = sd_bus_message_close_container(s);
        if (r >= 0 && n > 0)
                r = sd_bus_send(m->bus, s, NULL);
        return r;
}

int bus_object_reshape(Manager *m, Kobject *k, Shape *shape)
{
        Shape *old = k->shape;
        int r, changed;

        if (shape == old) {
                shape_unref(&m->model->shapes, shape);
                return bus_object_refresh(m, k, BUS_REFRESH_ALL);
        }

        /* What stays is compared as usual; what goes is announced gone, what comes with its values. */
        changed = refresh(m, k, BUS_REFRESH_ALL, shape);
        if (m->announce && k->linked) {
                r = emit_interfaces_not_in(m, k, shape, false);
                if (r < 0)
                        log_warning_errno(r, "%s: cannot announce removed interfaces: %m", k->path);
        }
        k->shape = shape;
        if (m->announce && k->linked) {
                r = emit_interfaces_not_in(m, k, old, true);
                if (r < 0)
                        log_warning_errno(r, "%s: cannot announce new interfaces: %m", k->path);
        }
        shape_unref(&m->model->shapes, old);
        (void) refresh(m, k, BUS_REFRESH_RECORD, NULL);
        return changed < 0 ? changed : changed + 1;
}

int bus_object_emit_property_changed(Manager *m, Kobject *k, const char *property, bool with_value)
{
        ObjDir d = {.manager = m, .k = k, .fd = -1};
        char *names[] = {(char *) property, NULL};
        Iface iface;
        int r;

        if (!m->announce || !k->linked || !object_iface(k, 1, &iface))
                return 0;
        r = emit_properties_changed(m, &d, &iface, with_value ? names : NULL, with_value ? NULL : names);
        objdir_done(&d);
        return r;
}

int bus_object_register(Manager *m)
{
        return sd_bus_add_fallback(m->bus, NULL, BLKMODEL_ROOT_PATH, object_handler, m);
}

int bus_object_emit_added(Manager *m, Kobject *k)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;
        int r;

        r = sd_bus_message_new_signal(m->bus, &s, BLKMODEL_ROOT_PATH, IFACE_OBJECT_MANAGER,
                                      "InterfacesAdded");
        if (r >= 0)
                r = sd_bus_message_append(s, "o", k->path);
        if (r >= 0)
                r = bus_object_append_all(m, s, k);
        if (r >= 0)
                r = sd_bus_send(m->bus, s, NULL);
        return r;
}

int bus_object_emit_removed(Manager *m, Kobject *k)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;
        int r;

        r = sd_bus_message_new_signal(m->bus, &s, BLKMODEL_ROOT_PATH, IFACE_OBJECT_MANAGER,
                                      "InterfacesRemoved");
        if (r >= 0)
                r = sd_bus_message_append(s, "o", k->path);
        if (r >= 0)
                r = bus_object_append_interface_names(m, s, k);
        if (r >= 0)
                r = sd_bus_send(m->bus, s, NULL);
        return r;
}
