/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <stdio.h>

#include "base/log-ratelimit.h"
#include "base/log.h"
#include "blkmodel/names.h"
#include "bus/bus-internal.h"
#include "common/utf8.h"
#include "model/order.h"

/*
 * The XML goes without a DOCTYPE and without whitespace between its elements: neither is required,
 * busctl's parser allocates a token for each run of whitespace, and dbus-daemon reads a message 2 KiB
 * per system call.  At 1,000 x 4 busctl tree took a quarter less time for it (3.72 -> 2.82 s, median
 * of 6).  busctl introspect and gdbus introspect print it laid out all the same.
 */
static const char standard_interfaces_xml[] =
                "<interface name=\"org.freedesktop.DBus.Peer\">"
                "<method name=\"Ping\"/>"
                "<method name=\"GetMachineId\">"
                "<arg type=\"s\" name=\"machine_uuid\" direction=\"out\"/>"
                "</method>"
                "</interface>"
                "<interface name=\"org.freedesktop.DBus.Introspectable\">"
                "<method name=\"Introspect\">"
                "<arg name=\"data\" type=\"s\" direction=\"out\"/>"
                "</method>"
                "</interface>"
                "<interface name=\"org.freedesktop.DBus.Properties\">"
                "<method name=\"Get\">"
                "<arg name=\"interface_name\" direction=\"in\" type=\"s\"/>"
                "<arg name=\"property_name\" direction=\"in\" type=\"s\"/>"
                "<arg name=\"value\" direction=\"out\" type=\"v\"/>"
                "</method>"
                "<method name=\"GetAll\">"
                "<arg name=\"interface_name\" direction=\"in\" type=\"s\"/>"
                "<arg name=\"props\" direction=\"out\" type=\"a{sv}\"/>"
                "</method>"
                "<method name=\"Set\">"
                "<arg name=\"interface_name\" direction=\"in\" type=\"s\"/>"
                "<arg name=\"property_name\" direction=\"in\" type=\"s\"/>"
                "<arg name=\"value\" direction=\"in\" type=\"v\"/>"
                "</method>"
                "<signal name=\"PropertiesChanged\">"
                "<arg type=\"s\" name=\"interface_name\"/>"
                "<arg type=\"a{sv}\" name=\"changed_properties\"/>"
                "<arg type=\"as\" name=\"invalidated_properties\"/>"
                "</signal>"
                "</interface>";

/* A kset, a disk or a device answers GetManagedObjects for its part of the model; the signals come
 * from the root. */
static const char kset_object_manager_xml[] =
                "<interface name=\"org.freedesktop.DBus.ObjectManager\">"
                "<method name=\"GetManagedObjects\">"
                "<arg type=\"a{oa{sa{sv}}}\" name=\"object_paths_interfaces_and_properties\" "
                "direction=\"out\"/>"
                "</method>"
                "</interface>";

/* Whether an annotation gives the file's name: where it is not the member's, and XML can carry it
 * (UTF-8 without control characters; else the member alone stands for it). */
static bool xml_file_annotated(const char *member, const char *file)
{
        if (!file || streq(file, member) || !utf8_is_valid(file))
                return false;
        for (const char *c = file; *c; c++)
                if (char_is_control(*c))
                        return false;
        return true;
}

static void xml_file_annotation(FILE *f, const char *file)
{
        static const char *const entities[256] = {
                ['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;", ['\''] = "&apos;",
        };

        fputs("<annotation name=\"" BLKMODEL_ANNOTATION_FILE "\" value=\"", f);
        for (const char *c = file; *c; c++)
                if (entities[(unsigned char) *c])
                        fputs(entities[(unsigned char) *c], f);
                else
                        fputc(*c, f);
        fputs("\"/>", f);
}

/* access: a file with no read bit (remove, rescan) is "write", as D-Bus has it.  "true" is the
 * default of EmitsChangedSignal: left out, which keeps `busctl tree` over 100,000 objects from
 * parsing megabytes of annotations.  file: the attribute's file name, NULL for a typed property. */
static void xml_property(FILE *f, const char *name, const char *signature, const char *access,
                         PropertyEmits emits, const char *file)
{
        bool file_annotated = xml_file_annotated(name, file);

        fprintf(f, "<property name=\"%s\" type=\"%s\" access=\"%s\"", name, signature, access);
        if (emits == PROPERTY_EMITS_TRUE && !file_annotated) {
                fputs("/>", f);
                return;
        }
        fputs(">", f);
        if (emits != PROPERTY_EMITS_TRUE)
                fprintf(f, "<annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" "
                           "value=\"%s\"/>",
                        property_emits_to_string(emits));
        if (file_annotated)
                xml_file_annotation(f, file);
        fputs("</property>", f);
}

static const char *attr_access(const Attr *a)
{
        if (a->flags & ATTR_WRITE_ONLY)
                return "write";
        return a->flags & ATTR_WRITABLE ? "readwrite" : "read";
}

/* Scheduler is written through the queue's scheduler file, which a bio-based device's queue (md, zram)
 * has not: there a Set is refused, and busctl and GDBus are told so beforehand. */
static const char *typed_access(const Iface *iface, const PropertyInfo *p)
{
        const Attr *file;

        if (!p->writable)
                return "read";
        if (!streq(p->name, BLKMODEL_PROP_SCHEDULER))
                return "readwrite";
        file = iface->attrs ? attr_set_find(iface->attrs, "scheduler") : NULL;
        return file && (file->flags & ATTR_WRITABLE) ? "readwrite" : "read";
}

static void xml_iface(FILE *f, const Iface *iface)
{
        fprintf(f, "<interface name=\"%s\">", iface->name);
        if (iface->attr_dir &&
            xml_file_annotated(startswith(iface->name, BLKMODEL_IFACE_GROUP_PREFIX), iface->attr_dir))
                xml_file_annotation(f, iface->attr_dir);
        for (const PropertyInfo *p = iface->properties; p->name; p++)
                xml_property(f, p->name, p->signature, typed_access(iface, p), p->emits, NULL);
        for (size_t i = 0; iface->attrs && i < iface->attrs->n_attrs; i++) {
                const Attr *a = &iface->attrs->attrs[i];
                /* Only root may read a privileged one: its changes are announced by name only. */
                xml_property(f, a->member, "s", attr_access(a),
                             a->flags & ATTR_VOLATILE     ? PROPERTY_EMITS_FALSE
                             : a->flags & ATTR_PRIVILEGED ? PROPERTY_EMITS_INVALIDATES
                                                          : PROPERTY_EMITS_TRUE,
                             a->file);
        }
        fputs("</interface>", f);
}

/* The interfaces part of an object's XML depends only on its ktype and its interned shape: built once
 * for all the objects that share them (busctl tree asks for every one). */
typedef struct CachedXml {
        char *key;
        Shape *shape; /* a reference: the key is its address, which must not be reused */
        char *xml;
} CachedXml;

static const char *cached_xml_key(const void *c)
{
        return ((const CachedXml *) c)->key;
}

void bus_introspect_cache_init(Publisher *p)
{
        hashmap_init(&p->introspect_cache, cached_xml_key);
}

static int interfaces_xml(Kobject *k, char **ret)
{
        size_t size = 0;
        char *buf = NULL;
        Iface iface;
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        fputs(standard_interfaces_xml, f);
        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                xml_iface(f, &iface);
        }
        if (bus_object_is_manager(k))
                fputs(kset_object_manager_xml, f);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        return 0;
}

static void cache_free_one(Publisher *p, void *entry)
{
        CachedXml *c = entry;

        shape_unref(&p->model->shapes, c->shape);
        free(c->key);
        free(c->xml);
        free(c);
}

/* The XML of shapes the cache alone holds goes once the cache has doubled since the last sweep: the
 * cache stays within twice the shapes in use, however many a long life of changing directories made
 * (the code review's loop: 12 KB more a shape, each introspected once, kept to the exit). */
#define INTROSPECT_SWEEP_MIN 64

static void cache_sweep(Publisher *p)
{
        CachedXml *c;
        size_t i = 0, dropped = 0;

        if (hashmap_size(&p->introspect_cache) < MAX(p->introspect_sweep_at, INTROSPECT_SWEEP_MIN))
                return;
        /* A kset has no directory shape: its XML, one per ktype, is no shape's to drop. */
        while ((c = hashmap_iterate(&p->introspect_cache, &i)))
                if (c->shape && c->shape->n_ref == 1) {
                        (void) hashmap_remove(&p->introspect_cache, c);
                        cache_free_one(p, c);
                        dropped++;
                }
        p->introspect_sweep_at = 2 * hashmap_size(&p->introspect_cache);
        log_debug("Dropped the introspection XML of %zu shapes no object has, kept %zu.", dropped,
                  hashmap_size(&p->introspect_cache));
}

static const char *cached_interfaces_xml(Publisher *p, Kobject *k)
{
        _cleanup_(freep) char *key = NULL;
        CachedXml *c;

        if (asprintf(&key, "%d:%p", (int) k->ktype->id, (void *) k->shape) < 0)
                return NULL;
        c = hashmap_get(&p->introspect_cache, key);
        if (c)
                return c->xml;
        cache_sweep(p);
        c = calloc(1, sizeof(CachedXml));
        if (!c || interfaces_xml(k, &c->xml) < 0) {
                free(c);
                return NULL;
        }
        /* Names from sysfs are sanitized into D-Bus member names, so this holds; checked once here
         * because the reply's string is not checked again (method_introspect()). */
        if (!utf8_is_valid(c->xml)) {
                /* Not cached: each Introspect of such an object comes here again. */
                log_ratelimit_error("The introspection XML of %s is not UTF-8; not served.", k->path);
                free(c->xml);
                free(c);
                return NULL;
        }
        c->key = TAKE_PTR(key);
        c->shape = shape_ref(k->shape);
        if (hashmap_put(&p->introspect_cache, c) < 0) {
                cache_free_one(p, c);
                return NULL;
        }
        return c->xml;
}

void bus_introspect_cache_clear(Publisher *p)
{
        CachedXml *c;
        size_t i = 0;

        while ((c = hashmap_iterate(&p->introspect_cache, &i)))
                cache_free_one(p, c);
        hashmap_deinit(&p->introspect_cache);
        for (size_t j = 0; j < ELEMENTSOF(p->kept_children); j++)
                free(p->kept_children[j].xml);
}

#define CHILD_HEAD "<node name=\""
#define CHILD_TAIL "\"/>"
#define NODE_TAIL "</node>"

/*
 * Objects with hundreds of children or more (the block kset; a SCSI host with thousands of targets)
 * keep their children's lines while the model's tree is as it was, and the model keeps their children
 * in order (model/order.h): at 10,000 disks, sorting the block kset's 10,000 children held the loop
 * 9-17 ms at each Introspect, and busctl tree and a reading in parts each make one.
 */
#define CHILDREN_KEPT_FROM 512

/* The <node/> lines of k's children, sorted by name.  Measured, then copied: a memstream and a printf
 * per child were a fifth of an Introspect. */
static int children_xml(Model *m, Kobject *k, char **ret, size_t *ret_len)
{
        _cleanup_(freep) Kobject **own = NULL;
        Kobject *const *children;
        size_t n_children = 0, len = 0;
        char *buf, *q;
        int r;

        if (k->n_children >= CHILDREN_KEPT_FROM)
                r = model_children_sorted(m, k, &children, &n_children);
        else {
                r = kobject_children_sorted(k, _KTYPE_MAX, &own, &n_children);
                children = own;
        }
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_children; i++)
                len += strlen(CHILD_HEAD) + strlen(strrchr(children[i]->path, '/') + 1) + strlen(CHILD_TAIL);
        q = buf = malloc(len + 1);
        if (!buf)
                return -ENOMEM;
        *q = 0;
        for (size_t i = 0; i < n_children; i++)
                q = stpcpy(stpcpy(stpcpy(q, CHILD_HEAD), strrchr(children[i]->path, '/') + 1), CHILD_TAIL);
        assert((size_t) (q - buf) == len);
        *ret = buf;
        *ret_len = len;
        return 0;
}

static const char *kept_children_xml(Publisher *p, Kobject *k, size_t *ret_len)
{
        struct KeptChildren *slot = NULL;

        for (size_t i = 0; i < ELEMENTSOF(p->kept_children); i++) {
                struct KeptChildren *c = &p->kept_children[i];
                if (c->xml && c->k == k && c->tree_changes == p->model->tree_changes) {
                        *ret_len = c->len;
                        return c->xml;
                }
                if (!slot && (!c->xml || c->tree_changes != p->model->tree_changes))
                        slot = c;
        }
        if (!slot)
                slot = &p->kept_children[p->kept_children_next++ % ELEMENTSOF(p->kept_children)];
        free(slot->xml);
        *slot = (struct KeptChildren){};
        if (children_xml(p->model, k, &slot->xml, &slot->len) < 0)
                return NULL;
        slot->k = k;
        slot->tree_changes = p->model->tree_changes;
        *ret_len = slot->len;
        return slot->xml;
}

void bus_introspect_prepare(Publisher *p)
{
        size_t i = 0, len;
        Kobject *k;

        while ((k = hashmap_iterate(&p->model->by_path, &i)))
                if (k->n_children >= CHILDREN_KEPT_FROM)
                        (void) kept_children_xml(p, k, &len);
}

int bus_introspect(Publisher *p, const char *path, Kobject *k, char **ret, size_t *ret_len)
{
        _cleanup_(freep) char *own_children = NULL;
        const char *ifaces, *children;
        size_t children_len, len;
        char *buf, *q;
        int r;

        ifaces = cached_interfaces_xml(p, k);
        if (!ifaces)
                return -ENOMEM;
        if (k->n_children >= CHILDREN_KEPT_FROM) {
                children = kept_children_xml(p, k, &children_len);
                if (!children)
                        return -ENOMEM;
        } else {
                r = children_xml(p->model, k, &own_children, &children_len);
                if (r < 0)
                        return r;
                children = own_children;
        }

        len = strlen("<node name=\"\">") + strlen(path) + strlen(ifaces) +
              children_len + strlen(NODE_TAIL);
        q = buf = malloc(len + 1);
        if (!buf)
                return -ENOMEM;
        q = stpcpy(stpcpy(stpcpy(q, "<node name=\""), path), "\">");
        q = stpcpy(q, ifaces);
        q = mempcpy(q, children, children_len);
        q = stpcpy(q, NODE_TAIL);
        assert((size_t) (q - buf) == len);
        *ret = buf;
        *ret_len = len;
        return 0;
}
