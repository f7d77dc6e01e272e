/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blkmodel/names.h>

#include "introspect.h"

#include "common/util.h"

/* A minimal reader for the XML sd-bus and dbus-daemon write: tags with
 * double-quoted attributes, comments and a DOCTYPE; entities only in values
 * (xml_unescape). */
static char *xml_attr(const char *tag, size_t len, const char *attr)
{
        size_t alen = strlen(attr);

        for (size_t i = 0; i + alen + 2 <= len; i++) {
                if ((i == 0 || tag[i - 1] == ' ' || tag[i - 1] == '\t' || tag[i - 1] == '\n') &&
                    startswith(tag + i, attr) && tag[i + alen] == '=' && tag[i + alen + 1] == '"') {
                        const char *v = tag + i + alen + 2;
                        const char *end = memchr(v, '"', len - (size_t) (v - tag));

                        if (!end)
                                return NULL;
                        return strndup(v, (size_t) (end - v));
                }
        }
        return NULL;
}

/* The five entities XML predefines, in place; anything else is left as it is. */
static char *xml_unescape(char *s)
{
        static const struct {
                const char *entity;
                char c;
        } entities[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
        char *w = s;

        if (!s)
                return NULL;
        for (const char *r = s; *r;) {
                size_t i;

                for (i = 0; *r == '&' && i < ELEMENTSOF(entities); i++)
                        if (startswith(r, entities[i].entity))
                                break;
                if (*r == '&' && i < ELEMENTSOF(entities)) {
                        *w++ = entities[i].c;
                        r += strlen(entities[i].entity);
                } else
                        *w++ = *r++;
        }
        *w = 0;
        return s;
}

static bool xml_tag_is(const char *tag, size_t len, const char *name)
{
        size_t n = strlen(name);

        return len >= n && startswith(tag, name) &&
               (len == n || tag[n] == ' ' || tag[n] == '/' || tag[n] == '\t' || tag[n] == '\n');
}

void introspection_done(Introspection *in)
{
        if (!in)
                return;
        for (size_t i = 0; i < in->n_interfaces; i++) {
                IntrospectInterface *f = in->interfaces + i;

                for (size_t j = 0; j < f->n_properties; j++) {
                        free(f->properties[j].name);
                        free(f->properties[j].type);
                        free(f->properties[j].file);
                }
                free(f->properties);
                free(f->name);
                free(f->dir);
        }
        free(in->interfaces);
        strv_free(in->children);
        *in = (Introspection){};
}

/* Appends the interface an <interface> tag names; *ret points to it until the next one. */
static int introspection_add_interface(Introspection *in, const char *tag, size_t len,
                                       IntrospectInterface **ret)
{
        _cleanup_(freep) char *name = NULL;
        IntrospectInterface *a;

        name = xml_attr(tag, len, "name");
        if (!name)
                return -EBADMSG;
        a = reallocarray(in->interfaces, in->n_interfaces + 1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        in->interfaces = a;
        a[in->n_interfaces] = (IntrospectInterface){.name = TAKE_PTR(name)};
        *ret = &a[in->n_interfaces++];
        return 0;
}

/* Appends the property a <property> tag describes. */
static int interface_add_property(IntrospectInterface *f, const char *tag, size_t len)
{
        _cleanup_(freep) char *name = NULL, *type = NULL, *access = NULL;
        IntrospectProperty *a;

        name = xml_attr(tag, len, "name");
        type = xml_attr(tag, len, "type");
        access = xml_attr(tag, len, "access");
        if (!name || !type)
                return -EBADMSG;
        a = reallocarray(f->properties, f->n_properties + 1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        f->properties = a;
        a[f->n_properties++] = (IntrospectProperty){
                        .name = TAKE_PTR(name),
                        .type = TAKE_PTR(type),
                        .readable = !access || !streq(access, "write"),
                        .writable = access && strstr(access, "write"),
        };
        return 0;
}

/* <annotation name="org.blkmodel1.File" value="..."/> inside a property (prop) or an interface. */
static int add_file_annotation(IntrospectInterface *f, IntrospectProperty *prop, const char *tag, size_t len)
{
        _cleanup_(freep) char *name = xml_attr(tag, len, "name"), *value = NULL;
        char **slot = prop ? &prop->file : &f->dir;

        if (!streq_ptr(name, BLKMODEL_ANNOTATION_FILE))
                return 0;
        value = xml_unescape(xml_attr(tag, len, "value"));
        if (!value)
                return -EBADMSG;
        free(*slot);
        *slot = TAKE_PTR(value);
        return 0;
}

const char *introspect_property_file(const IntrospectProperty *p)
{
        return p->file ?: p->name;
}

const char *introspect_interface_dir(const IntrospectInterface *f)
{
        return f->dir ?: startswith(f->name, BLKMODEL_IFACE_GROUP_PREFIX);
}

int introspect_parse(const char *xml, Introspection *ret)
{
        _cleanup_(introspection_done) Introspection in = {};
        IntrospectInterface *cur = NULL;
        bool in_property = false; /* inside <property>...</property>: annotations are the last one's */
        const char *p = xml;
        int r;

        while ((p = strchr(p, '<'))) {
                const char *tag = p + 1, *end;
                size_t len;

                if (startswith(p, "<!--")) {
                        end = strstr(p, "-->");
                        if (!end)
                                break;
                        p = end + 3;
                        continue;
                }
                end = strchr(tag, '>');
                if (!end)
                        return -EBADMSG;
                len = (size_t) (end - tag);
                p = end + 1;

                if (!cur && xml_tag_is(tag, len, "node")) {
                        _cleanup_(freep) char *name = xml_attr(tag, len, "name");

                        /* The outer <node> names the object itself, if anything: only relative names are
                         * children. */
                        if (name && name[0] != '/') {
                                r = strv_consume(&in.children, &in.n_children, TAKE_PTR(name));
                                if (r < 0)
                                        return r;
                        }
                } else if (xml_tag_is(tag, len, "interface")) {
                        r = introspection_add_interface(&in, tag, len, &cur);
                        if (r < 0)
                                return r;
                        in_property = false; /* an unclosed <property> was the last interface's */
                } else if (xml_tag_is(tag, len, "/interface")) {
                        cur = NULL;
                        in_property = false;
                } else if (cur && xml_tag_is(tag, len, "property")) {
                        r = interface_add_property(cur, tag, len);
                        if (r < 0)
                                return r;
                        in_property = tag[len - 1] != '/';
                } else if (xml_tag_is(tag, len, "/property"))
                        in_property = false;
                else if (cur && xml_tag_is(tag, len, "annotation")) {
                        IntrospectProperty *prop = NULL;

                        if (in_property) /* then there is one: the last */
                                prop = &cur->properties[cur->n_properties - 1];
                        r = add_file_annotation(cur, prop, tag, len);
                        if (r < 0)
                                return r;
                }
        }

        *ret = in;
        in = (Introspection){};
        return 0;
}

int introspect_object(sd_bus *bus, const char *path, Introspection *ret, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *xml;
        int r;

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, path, "org.freedesktop.DBus.Introspectable",
                               "Introspect", error, &reply, NULL);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "s", &xml);
        if (r < 0)
                return r;
        return introspect_parse(xml, ret);
}

bool introspect_has_interface(const Introspection *in, const char *iface)
{
        for (size_t i = 0; i < in->n_interfaces; i++)
                if (streq(in->interfaces[i].name, iface))
                        return true;
        return false;
}

bool introspect_interface_is_model(const char *iface)
{
        return startswith(iface, BLKMODEL_IFACE_PREFIX);
}

/* Lower rank is searched first. */
static int interface_rank(const char *iface)
{
        if (streq(iface, BLKMODEL_IFACE_DISK) || streq(iface, BLKMODEL_IFACE_PARTITION) ||
            streq(iface, BLKMODEL_IFACE_QUEUE) || streq(iface, BLKMODEL_IFACE_ELEVATOR) ||
            streq(iface, BLKMODEL_IFACE_DEVICE))
                return 0;
        if (streq(iface, BLKMODEL_IFACE_KOBJECT))
                return 1;
        if (streq(iface, BLKMODEL_IFACE_KSET) || streq(iface, BLKMODEL_IFACE_MANAGER))
                return 2;
        if (introspect_interface_is_model(iface))
                return 3;
        return -1;
}

/* Does prop answer to name: as its D-Bus name, or (by_file) as its file's name? */
static bool property_is(const IntrospectProperty *prop, const char *name, bool by_file)
{
        return streq(by_file ? introspect_property_file(prop) : prop->name, name);
}

/* Does f answer to group: as the group's directory or as its interface name's end? */
static bool group_is(const IntrospectInterface *f, const char *group)
{
        const char *element = startswith(f->name, BLKMODEL_IFACE_GROUP_PREFIX);

        return element && (streq(element, group) || streq(introspect_interface_dir(f), group));
}

static bool find_in(const Introspection *in, const char *group, const char *name, bool by_file,
                    const IntrospectInterface **ret_iface, const IntrospectProperty **ret_prop)
{
        for (int rank = 0; rank <= 3; rank++)
                for (size_t i = 0; i < in->n_interfaces; i++) {
                        const IntrospectInterface *f = in->interfaces + i;

                        bool wanted = group ? rank == 0 && group_is(f, group) : interface_rank(f->name) == rank;

                        if (!wanted)
                                continue;
                        for (size_t j = 0; j < f->n_properties; j++)
                                if (property_is(&f->properties[j], name, by_file)) {
                                        *ret_iface = f;
                                        *ret_prop = f->properties + j;
                                        return true;
                                }
                }
        return false;
}

int introspect_find_property(const Introspection *in, const char *attr,
                             const IntrospectInterface **ret_iface, const IntrospectProperty **ret_prop)
{
        _cleanup_(freep) char *group = NULL;
        const char *slash = strchr(attr, '/'), *name = attr;

        if (slash) {
                group = strndup(attr, (size_t) (slash - attr));
                if (!group)
                        return -ENOMEM;
                name = slash + 1;
        }
        /* The D-Bus name first, so typed properties win over look-alikes; then the file's name,
         * exactly as the daemon's introspection gives it (never a look-alike: set must write the
         * file named, not another that sanitizes to the same name). */
        if (find_in(in, group, name, false, ret_iface, ret_prop) ||
            find_in(in, group, name, true, ret_iface, ret_prop))
                return 0;
        return -ENOENT;
}
