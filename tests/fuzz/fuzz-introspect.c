/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer entry point for blkmodelctl's reading of an Introspect reply, introspect_parse() (its
 * own small XML reader), and of what `show`/`get`/`set` look up in it, introspect_find_property().
 * The reply is the daemon's, but the XML carries the names of sysfs files and directories, and the
 * reader must not crash or misplace anything whatever the text.
 *
 * The input is the XML, optionally followed by a NUL and an ATTR to look up (as `get DEV ATTR`).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "blkmodel/names.h"
#include "client/introspect.h"
#include "common/util.h"
#include "fuzz.h"

/* What a lookup found is one of the introspection's own properties, of one of its interfaces. */
static void check_found(const Introspection *in, const IntrospectInterface *f, const IntrospectProperty *p)
{
        REQUIRE(f >= in->interfaces && f < in->interfaces + in->n_interfaces);
        REQUIRE(p >= f->properties && p < f->properties + f->n_properties);
}

/* Every property of a model interface is found by its D-Bus name, and a group's also as
 * GROUP/NAME: the name comes first, so it is found as itself, never as a look-alike file. */
static void check_lookups(const Introspection *in)
{
        for (size_t i = 0; i < in->n_interfaces; i++) {
                const IntrospectInterface *f = in->interfaces + i;
                const char *group = startswith(f->name, BLKMODEL_IFACE_GROUP_PREFIX);

                if (!introspect_interface_is_model(f->name))
                        continue;
                for (size_t j = 0; j < f->n_properties; j++) {
                        const IntrospectProperty *p = f->properties + j;
                        const IntrospectInterface *gf = NULL;
                        const IntrospectProperty *gp = NULL;

                        if (!*p->name || strchr(p->name, '/'))
                                continue;
                        REQUIRE(introspect_find_property(in, p->name, &gf, &gp) == 0);
                        check_found(in, gf, gp);
                        REQUIRE(streq(gp->name, p->name));

                        if (!group || strchr(group, '/'))
                                continue;
                        _cleanup_(freep) char *attr = NULL;
                        REQUIRE(asprintf(&attr, "%s/%s", group, p->name) >= 0);
                        REQUIRE(introspect_find_property(in, attr, &gf, &gp) == 0);
                        check_found(in, gf, gp);
                        REQUIRE(streq(gp->name, p->name));
                        REQUIRE(startswith(gf->name, BLKMODEL_IFACE_GROUP_PREFIX));
                }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_(freep) char *xml = NULL;
        const char *attr = NULL;
        Introspection in = {.n_children = 4242};
        int r;

        /* A D-Bus string has no NUL: what follows the first one is the attribute looked up. */
        xml = malloc(size + 1);
        if (!xml)
                return 0;
        memcpy(xml, data, size);
        xml[size] = 0;
        if (strlen(xml) < size)
                attr = xml + strlen(xml) + 1;

        r = introspect_parse(xml, &in);
        REQUIRE(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r < 0) {
                REQUIRE(in.n_children == 4242 && !in.interfaces && !in.children);
                return 0;
        }

        REQUIRE(strv_length(in.children) == in.n_children);
        for (size_t i = 0; i < in.n_children; i++)
                REQUIRE(in.children[i][0] != '/');
        for (size_t i = 0; i < in.n_interfaces; i++) {
                const IntrospectInterface *f = in.interfaces + i;

                REQUIRE(f->name);
                (void) introspect_interface_dir(f);
                for (size_t j = 0; j < f->n_properties; j++) {
                        const IntrospectProperty *p = f->properties + j;

                        REQUIRE(p->name && p->type);
                        REQUIRE(p->readable || p->writable);
                        REQUIRE(introspect_property_file(p));
                }
        }
        check_lookups(&in);

        if (attr) {
                const IntrospectInterface *f = NULL;
                const IntrospectProperty *p = NULL;

                r = introspect_find_property(&in, attr, &f, &p);
                REQUIRE(r == 0 || r == -ENOENT || r == -ENOMEM);
                if (r == 0)
                        check_found(&in, f, p);
        }

        introspection_done(&in);
        return 0;
}
