/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blkmodel/names.h>

#include "introspect.h"
#include "model.h"

/* A minimal reader for the XML sd-bus and dbus-daemon write: tags with
 * double-quoted attributes, comments and a DOCTYPE; no entities in names. */
static char *xml_attr(const char *tag, size_t len, const char *attr)
{
        size_t alen = strlen(attr);

        for (size_t i = 0; i + alen + 2 <= len; i++) {
                if ((i == 0 || tag[i - 1] == ' ' || tag[i - 1] == '\t' || tag[i - 1] == '\n') &&
                    strncmp(tag + i, attr, alen) == 0 && tag[i + alen] == '=' && tag[i + alen + 1] == '"') {
                        const char *v = tag + i + alen + 2;
                        const char *end = memchr(v, '"', len - (size_t) (v - tag));

                        if (!end)
                                return NULL;
                        return strndup(v, (size_t) (end - v));
                }
        }
        return NULL;
}

static bool xml_tag_is(const char *tag, size_t len, const char *name)
{
        size_t n = strlen(name);

        return len >= n && strncmp(tag, name, n) == 0 &&
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
                }
                free(f->properties);
                free(f->name);
        }
        free(in->interfaces);
        *in = (Introspection){};
}

int introspect_parse(const char *xml, Introspection *ret)
{
        Introspection in = {};
        IntrospectInterface *cur = NULL;
        const char *p = xml;
        int r = 0;

        while ((p = strchr(p, '<'))) {
                const char *tag = p + 1, *end;
                size_t len;

                if (strncmp(p, "<!--", 4) == 0) {
                        end = strstr(p, "-->");
                        if (!end)
                                break;
                        p = end + 3;
                        continue;
                }
                end = strchr(tag, '>');
                if (!end) {
                        r = -EBADMSG;
                        goto fail;
                }
                len = (size_t) (end - tag);
                p = end + 1;

                if (xml_tag_is(tag, len, "interface")) {
                        IntrospectInterface *a;
                        char *name = xml_attr(tag, len, "name");

                        if (!name) {
                                r = -EBADMSG;
                                goto fail;
                        }
                        a = reallocarray(in.interfaces, in.n_interfaces + 1, sizeof(*a));
                        if (!a) {
                                free(name);
                                r = -ENOMEM;
                                goto fail;
                        }
                        in.interfaces = a;
                        cur = in.interfaces + in.n_interfaces++;
                        *cur = (IntrospectInterface){.name = name};
                } else if (xml_tag_is(tag, len, "/interface")) {
                        cur = NULL;
                } else if (cur && xml_tag_is(tag, len, "property")) {
                        IntrospectProperty *a;
                        char *name = xml_attr(tag, len, "name");
                        char *type = xml_attr(tag, len, "type");
                        char *access = xml_attr(tag, len, "access");
                        bool writable = access && strstr(access, "write");

                        free(access);
                        if (!name || !type) {
                                free(name);
                                free(type);
                                r = -EBADMSG;
                                goto fail;
                        }
                        a = reallocarray(cur->properties, cur->n_properties + 1, sizeof(*a));
                        if (!a) {
                                free(name);
                                free(type);
                                r = -ENOMEM;
                                goto fail;
                        }
                        cur->properties = a;
                        cur->properties[cur->n_properties++] = (IntrospectProperty){
                                        .name = name,
                                        .type = type,
                                        .writable = writable,
                        };
                }
        }

        *ret = in;
        return 0;

fail:
        introspection_done(&in);
        return r;
}

int introspect_object(sd_bus *bus, const char *path, Introspection *ret, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        const char *xml;
        int r;

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, path, "org.freedesktop.DBus.Introspectable",
                               "Introspect", error, &reply, NULL);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "s", &xml);
        if (r >= 0)
                r = introspect_parse(xml, ret);
        sd_bus_message_unref(reply);
        return r;
}

bool introspect_interface_is_model(const char *iface)
{
        return strncmp(iface, BLKMODEL_IFACE_PREFIX, strlen(BLKMODEL_IFACE_PREFIX)) == 0;
}

/* Lower rank is searched first. */
static int interface_rank(const char *iface)
{
        if (strcmp(iface, BLKMODEL_IFACE_DISK) == 0 || strcmp(iface, BLKMODEL_IFACE_PARTITION) == 0 ||
            strcmp(iface, BLKMODEL_IFACE_QUEUE) == 0 || strcmp(iface, BLKMODEL_IFACE_ELEVATOR) == 0 ||
            strcmp(iface, BLKMODEL_IFACE_DEVICE) == 0)
                return 0;
        if (strcmp(iface, BLKMODEL_IFACE_KOBJECT) == 0)
                return 1;
        if (strcmp(iface, BLKMODEL_IFACE_KSET) == 0 || strcmp(iface, BLKMODEL_IFACE_MANAGER) == 0)
                return 2;
        if (introspect_interface_is_model(iface))
                return 3;
        return -1;
}

static bool find_in(const Introspection *in, const char *iface_name, const char *member,
                    const IntrospectInterface **ret_iface, const IntrospectProperty **ret_prop)
{
        for (int rank = 0; rank <= 3; rank++)
                for (size_t i = 0; i < in->n_interfaces; i++) {
                        const IntrospectInterface *f = in->interfaces + i;

                        if (iface_name ? strcmp(f->name, iface_name) != 0 : interface_rank(f->name) != rank)
                                continue;
                        for (size_t j = 0; j < f->n_properties; j++)
                                if (strcmp(f->properties[j].name, member) == 0) {
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
        const char *slash = strchr(attr, '/');
        char *member = NULL, *iface = NULL;
        bool found;

        if (slash) {
                /* GROUP/FILE: an attribute group's file, e.g. power/control. */
                char *group = strndup(attr, (size_t) (slash - attr)), *g;

                if (!group)
                        return -ENOMEM;
                g = model_sanitize_member(group);
                free(group);
                member = model_sanitize_member(slash + 1);
                if (!g || !member || asprintf(&iface, "%s%s", BLKMODEL_IFACE_GROUP_PREFIX, g) < 0) {
                        free(g);
                        free(member);
                        return -ENOMEM;
                }
                free(g);
                found = find_in(in, iface, member, ret_iface, ret_prop);
                free(iface);
                free(member);
                return found ? 0 : -ENOENT;
        }

        /* The exact name first, so typed properties win over look-alikes. */
        if (find_in(in, NULL, attr, ret_iface, ret_prop))
                return 0;

        member = model_sanitize_member(attr);
        if (!member)
                return -ENOMEM;
        found = find_in(in, NULL, member, ret_iface, ret_prop);
        free(member);
        return found ? 0 : -ENOENT;
}
