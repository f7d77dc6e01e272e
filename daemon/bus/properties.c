/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/log.h"
#include "bus/bus-internal.h"
#include "bus/errors.h"
#include "sysfs/prefetch.h"
#include "sysfs/typed-value.h"

static int append_object_paths(sd_bus_message *m, char *const *paths)
{
        int r = sd_bus_message_open_container(m, 'a', "o");
        for (char *const *p = paths; r >= 0 && p && *p; p++)
                r = sd_bus_message_append_basic(m, 'o', *p);
        return r < 0 ? r : sd_bus_message_close_container(m);
}

static int append_pairs(sd_bus_message *m, char *const *pairs)
{
        int r = sd_bus_message_open_container(m, 'a', "{ss}");
        for (char *const *p = pairs; r >= 0 && p && p[0] && p[1]; p += 2)
                r = sd_bus_message_append(m, "{ss}", p[0], p[1]);
        return r < 0 ? r : sd_bus_message_close_container(m);
}

static int append_typed_value(sd_bus_message *m, const TypedValue *v)
{
        const char *sig = v->signature;

        if (streq(sig, "u"))
                return sd_bus_message_append(m, "u", (uint32_t) v->number);
        if (streq(sig, "t"))
                return sd_bus_message_append(m, "t", v->number);
        if (streq(sig, "b"))
                return sd_bus_message_append(m, "b", (int) (v->number != 0));
        if (streq(sig, "s") || streq(sig, "o"))
                return sd_bus_message_append_basic(m, sig[0], v->string);
        if (streq(sig, "as"))
                return sd_bus_message_append_strv(m, v->strv);
        if (streq(sig, "ao"))
                return append_object_paths(m, v->strv);
        if (streq(sig, "a{ss}"))
                return append_pairs(m, v->strv);
        return -EINVAL;
}

/* Where a typed value marshalled at off ends. */
static size_t wire_typed_end(size_t off, const TypedValue *v)
{
        const char *sig = v->signature;

        switch (sig[0]) {
        case 'u':
        case 'b':
                return wire_align(off, 4) + 4;
        case 't':
                return wire_align(off, 8) + 8;
        case 's':
        case 'o':
                return wire_string_end(off, strempty(v->string));
        }
        /* as, ao, a{ss}: the length, then the elements at their alignment (a dict entry's is 8). */
        off = wire_align(off, 4) + 4;
        if (streq(sig, "a{ss}")) {
                off = wire_align(off, 8);
                for (char *const *p = v->strv; p && p[0] && p[1]; p += 2)
                        off = wire_string_end(wire_string_end(wire_align(off, 8), p[0]), p[1]);
        } else
                for (char *const *p = v->strv; p && *p; p++)
                        off = wire_string_end(off, *p);
        return off;
}

static int append_typed(Publisher *p, ObjDir *d, const PropertyInfo *info, sd_bus_message *m, size_t *bound)
{
        TypedValue v;
        int r;

        r = typed_value_read(d, p->model, info, &v);
        if (r >= 0 && d->resource_error < 0) { /* read as 0 or "": not what sysfs holds */
                typed_value_done(&v);
                r = d->resource_error;
        }
        if (r < 0)
                return r;
        if (bound)
                *bound += wire_align(wire_typed_end(wire_entry_head(info->name, info->signature), &v), 8);
        r = sd_bus_message_open_container(m, 'v', info->signature);
        if (r >= 0)
                r = append_typed_value(m, &v);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        typed_value_done(&v);
        return r;
}

static int append_attr(ObjDir *d, const Iface *iface, const Attr *a, sd_bus_message *m, bool lenient,
                       size_t *bound, sd_bus_error *error)
{
        const char *value = "";
        int r;

        r = objdir_read_attr(d, iface, a, &value);
        if (errno_is_resource(r)) /* nothing learnt of the file: no "" for it */
                return r;
        if (r < 0) {
                _cleanup_(freep) char *rel = iface_attr_relpath(iface, a);
                if (!lenient)
                        return bus_error_read_failed(error, d->k->devpath, rel ? rel : a->file, r);
                log_debug_errno(r, "%s/%s: unreadable, reported as empty: %m", d->k->devpath, rel ? rel : a->file);
                value = "";
        }
        if (bound)
                *bound += wire_align(wire_string_end(wire_entry_head(a->member, "s"), value), 8);
        r = sd_bus_message_open_container(m, 'v', "s");
        if (r >= 0)
                r = sd_bus_message_append_basic(m, 's', value);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

int bus_append_property(Publisher *p, ObjDir *d, const Iface *iface, const char *member, sd_bus_message *m,
                        bool lenient, size_t *bound, sd_bus_error *error)
{
        const Attr *a;
        int r;

        for (const PropertyInfo *info = iface->properties; info->name; info++)
                if (streq(info->name, member)) {
                        r = append_typed(p, d, info, m, bound);
                        return r < 0 ? r : 1;
                }

        a = iface->attrs ? attr_set_find(iface->attrs, member) : NULL;
        if (!a)
                return 0;
        r = append_attr(d, iface, a, m, lenient, bound, error);
        return r < 0 ? r : 1;
}

/* One {sv} of a whole interface's dictionary: a typed property (info) or an attribute (a). */
static int append_dict_entry(Publisher *p, ObjDir *d, const Iface *iface, const PropertyInfo *info,
                             const Attr *a, sd_bus_message *m, size_t *bound)
{
        int r;

        r = sd_bus_message_open_container(m, 'e', "sv");
        if (r >= 0)
                r = sd_bus_message_append_basic(m, 's', info ? info->name : a->member);
        if (r >= 0)
                r = info ? append_typed(p, d, info, m, bound)
                         : append_attr(d, iface, a, m, true, bound, NULL);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

/* Does a caller (privileged or not) see this attribute?  What is appended and what is read ahead. */
static bool attr_shown(const Attr *a, bool privileged)
{
        return privileged || !(a->flags & ATTR_PRIVILEGED);
}

int bus_append_iface_entries(Publisher *p, ObjDir *d, const Iface *iface, sd_bus_message *m, bool privileged,
                             const char *skip, size_t *bound)
{
        int r = 0;

        for (const PropertyInfo *info = iface->properties; r >= 0 && info->name; info++)
                if (!streq_ptr(info->name, skip))
                        r = append_dict_entry(p, d, iface, info, NULL, m, bound);
        for (size_t i = 0; r >= 0 && iface->attrs && i < iface->attrs->n_attrs; i++)
                if (attr_shown(&iface->attrs->attrs[i], privileged))
                        r = append_dict_entry(p, d, iface, NULL, &iface->attrs->attrs[i], m, bound);
        return r;
}

int bus_append_iface_properties(Publisher *p, ObjDir *d, const Iface *iface, sd_bus_message *m,
                                bool privileged, size_t *bound)
{
        int r;

        r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r >= 0)
                r = bus_append_iface_entries(p, d, iface, m, privileged, NULL, bound);
        return r < 0 ? r : sd_bus_message_close_container(m);
}

int bus_append_ifaces(Publisher *p, sd_bus_message *m, Kobject *k, ObjDir *d, bool privileged, size_t first,
                      size_t end, size_t *bound)
{
        Iface iface;
        int r = 0;

        for (size_t i = first; r >= 0 && i < end; i++) {
                kobject_iface(k, i, &iface);
                r = sd_bus_message_open_container(m, 'e', "sa{sv}");
                if (r >= 0)
                        r = sd_bus_message_append_basic(m, 's', iface.name);
                if (bound)
                        *bound += wire_dict_head(iface.name);
                if (r >= 0)
                        r = bus_append_iface_properties(p, d, &iface, m, privileged, bound);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
        }
        return r;
}

/* Values guessed for an object never read yet: most attribute values are a few characters. */
#define GUESSED_VALUE_BYTES 12
#define GUESSED_UEVENT_BYTES 256
#define GUESSED_VOLATILE_BYTES 64

/* The keys and signatures as they will be marshalled, the values as the last reading found them
 * (their padding included). */
size_t bus_object_size_estimate(const Kobject *k)
{
        size_t n = wire_dict_head(k->path), values = live_object_value_bytes(k), guessed = 0;
        Iface iface;

        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                n += wire_dict_head(iface.name);
                for (const PropertyInfo *p = iface.properties; p->name; p++)
                        n += wire_align(wire_entry_head(p->name, p->signature), 4);
                for (size_t j = 0; iface.attrs && j < iface.attrs->n_attrs; j++) {
                        const Attr *a = &iface.attrs->attrs[j];
                        n += wire_align(wire_entry_head(a->member, "s"), 4);
                        /* A reading keeps nothing of stat and inflight: their length is a guess. */
                        if (a->flags & ATTR_VOLATILE)
                                n += GUESSED_VOLATILE_BYTES;
                        else
                                guessed += GUESSED_VALUE_BYTES;
                }
        }
        /* The values at the last reading, the typed ones' too (their paths: Parent, Partitions, ...,
         * counted again they made a device's subtree a fifth larger than it is, and refused it near
         * the limit); before one, a guess. */
        if (values > 0)
                return n + values;
        n += guessed + (k->ktype->has_uevent ? GUESSED_UEVENT_BYTES : 0);
        n += strlen(k->name) + strlen(k->devpath) + (k->parent ? strlen(k->parent->path) : 1) +
             (k->kset ? strlen(k->kset->path) : 1);
        for (Kobject *c = k->first_child; c; c = c->next_sibling)
                n += 8 + strlen(c->path); /* Partitions, Queue, Elevator */
        for (Kobject *c = k->first_member; c; c = c->next_member)
                n += 8 + strlen(c->path); /* Members */
        return n;
}

int bus_append_object(Publisher *p, sd_bus_message *m, Kobject *k, ObjDir *dir, bool privileged,
                      size_t *bound)
{
        _cleanup_(objdir_donep) ObjDir own = OBJDIR_INIT(p->sysfs, k);
        int r;

        r = sd_bus_message_open_container(m, 'a', "{sa{sv}}");
        if (r >= 0)
                r = bus_append_ifaces(p, m, k, dir ?: &own, privileged, 0, kobject_n_ifaces(k), bound);
        return r < 0 ? r : sd_bus_message_close_container(m);
}

int bus_prefetch_object(Prefetch *b, Kobject *k, bool privileged)
{
        Iface iface;
        int r;

        r = prefetch_add_object(b, k->devpath);
        for (size_t i = 0; r >= 0 && i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                for (size_t j = 0; r >= 0 && iface.attrs && j < iface.attrs->n_attrs; j++) {
                        const Attr *a = &iface.attrs->attrs[j];
                        if (attr_shown(a, privileged))
                                r = prefetch_add_attr(b, &iface, a);
                }
                /* What typed properties derive from, where it is not an attribute too: uevent,
                 * the link directories (holders/) and links (subsystem@). */
                for (const PropertyInfo *info = iface.properties; r >= 0 && info->name; info++) {
                        if (!info->source)
                                continue;
                        if (streq(info->source, PROPERTY_SOURCE_UEVENT) && !k->ktype->has_uevent)
                                continue;
                        /* Most are an attribute of the interface, added above. */
                        const Attr *a = !iface.attr_dir && iface.attrs
                                                        ? attr_set_find(iface.attrs, info->source)
                                                        : NULL;
                        if (a && streq(a->file, info->source) && attr_shown(a, privileged))
                                continue;
                        r = prefetch_add_file_once(b, info->source);
                }
        }
        return r;
}

int bus_append_interface_names(sd_bus_message *m, Kobject *k, size_t *bound)
{
        Iface iface;
        int r;

        r = sd_bus_message_open_container(m, 'a', "s");
        for (size_t i = 0; r >= 0 && i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                r = sd_bus_message_append(m, "s", iface.name);
                if (bound)
                        *bound = wire_string_end(*bound, iface.name);
        }
        return r < 0 ? r : sd_bus_message_close_container(m);
}
