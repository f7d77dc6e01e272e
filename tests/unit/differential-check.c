/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "differential.h"
#include "model/iface.h"

/*
 * A client that believes every LiveOps call, as a caching D-Bus client believes InterfacesAdded,
 * InterfacesRemoved and PropertiesChanged (the publisher turns each call into one signal and reads
 * the values at the call, as this does).  It holds every value that is announced when it changes
 * (EmitsChangedSignal true or const); at the end it must hold what the model says.  On the way, each
 * call must make sense for what the client knows.
 */

typedef struct ClientIface {
        char *name;
        char **props; /* name, value, name, value …, NULL-terminated */
        size_t n;
} ClientIface;

struct ClientObject {
        char *path;
        ClientIface *ifaces;
        size_t n_ifaces;
};

void checker_problem(Checker *c, const char *fmt, ...)
{
        char *line = NULL;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&line, fmt, ap);
        va_end(ap);
        if (k < 0 || strv_consume(&c->problems, &c->n_problems, line) < 0)
                abort();
}

static char *strdup_or_die(const char *s)
{
        char *p = strdup(s);
        if (!p)
                abort();
        return p;
}

static char *read_property(const Checker *c, ObjDir *d, const Iface *iface, const char *member,
                           PropertyEmits *emits)
{
        return property_value(c->model, d, iface, member, emits);
}

static void iface_snapshot(const Checker *c, ObjDir *d, const Iface *iface, ClientIface *ret)
{
        ClientIface ci = {.name = strdup_or_die(iface->name)};
        PropertyEmits e;

        for (const PropertyInfo *p = iface->properties; p->name; p++) {
                char *v = read_property(c, d, iface, p->name, &e);
                if (property_held(e) &&
                    (strv_extend(&ci.props, &ci.n, p->name) < 0 || strv_consume(&ci.props, &ci.n, v) < 0))
                        abort();
                if (!property_held(e))
                        free(v);
        }
        for (size_t i = 0; iface->attrs && i < iface->attrs->n_attrs; i++) {
                const char *m = iface->attrs->attrs[i].member;
                char *v = read_property(c, d, iface, m, &e);
                if (property_held(e) &&
                    (strv_extend(&ci.props, &ci.n, m) < 0 || strv_consume(&ci.props, &ci.n, v) < 0))
                        abort();
                if (!property_held(e))
                        free(v);
        }
        *ret = ci;
}

static void client_iface_done(ClientIface *ci)
{
        free(ci->name);
        strv_free(ci->props);
}

static ClientIface *client_iface(ClientObject *o, const char *name)
{
        for (size_t i = 0; i < o->n_ifaces; i++)
                if (streq(o->ifaces[i].name, name))
                        return &o->ifaces[i];
        return NULL;
}

static void client_add_iface(const Checker *c, ClientObject *o, ObjDir *d, const Iface *iface)
{
        ClientIface *t = realloc(o->ifaces, sizeof(ClientIface) * (o->n_ifaces + 1));

        if (!t)
                abort();
        o->ifaces = t;
        iface_snapshot(c, d, iface, &o->ifaces[o->n_ifaces++]);
}

static void client_object_free(ClientObject *o)
{
        for (size_t i = 0; i < o->n_ifaces; i++)
                client_iface_done(&o->ifaces[i]);
        free(o->ifaces);
        free(o->path);
        free(o);
}

/* InterfacesAdded of the whole object, or GetManagedObjects' entry for it. */
/* given: the values the daemon read for k and sends (NULL: read them). */
static void client_add(Checker *c, Kobject *k, ObjDir *given)
{
        _cleanup_(objdir_donep) ObjDir own = OBJDIR_INIT(c->sysfs, k);
        ObjDir *d = given ?: &own;
        ClientObject *o = calloc(1, sizeof(ClientObject));
        Iface iface;

        if (!o)
                abort();
        o->path = strdup_or_die(k->path);
        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                client_add_iface(c, o, d, &iface);
        }
        if (hashmap_put(&c->client, o) < 0)
                abort();
}

static const char *client_object_path(const void *o)
{
        return ((const ClientObject *) o)->path;
}

void checker_init(Checker *c, const Sysfs *s, Model *m)
{
        *c = (Checker){.sysfs = s, .model = m};
        hashmap_init(&c->client, client_object_path);
}

void checker_done(Checker *c)
{
        ClientObject *o;
        size_t i = 0;

        while ((o = hashmap_iterate(&c->client, &i)))
                client_object_free(o);
        hashmap_deinit(&c->client);
        strv_free(c->problems);
        *c = (Checker){};
}

int checker_start(Checker *c, Live *l)
{
        Kobject *k;
        size_t i = 0;

        /* As GetManagedObjects does: what the client was sent is the reading a change is told from. */
        while ((k = hashmap_iterate(&c->model->by_path, &i))) {
                _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(c->sysfs, k);

                client_add(c, k, &d);
                live_record_reading(l, k, &d);
        }
        c->started = true;
        return 0;
}

/* ---- the calls ---- */

static void op_object_added(void *userdata, Kobject *k, ObjDir *d)
{
        Checker *c = userdata;

        c->n_calls++;
        if (!c->started)
                checker_problem(c, "%s: announced before the start", k->path);
        if (!k->linked || model_find_path(c->model, k->path) != k)
                checker_problem(c, "%s: announced, but not in the model", k->path);
        if (hashmap_get(&c->client, k->path)) {
                checker_problem(c, "%s: announced twice", k->path);
                return;
        }
        if (k->parent && !hashmap_get(&c->client, k->parent->path))
                checker_problem(c, "%s: announced before its parent %s", k->path, k->parent->path);
        client_add(c, k, d);
}

static void op_object_removed(void *userdata, Kobject *k)
{
        Checker *c = userdata;
        ClientObject *o = hashmap_get(&c->client, k->path), *other;
        size_t i = 0;

        c->n_calls++;
        if (!k->linked || k->first_child)
                checker_problem(c, "%s: removed with its children still there, or not linked", k->path);
        if (!o) {
                checker_problem(c, "%s: removed, but never announced", k->path);
                return;
        }
        while ((other = hashmap_iterate(&c->client, &i))) {
                const char *rest = startswith(other->path, k->path);
                if (rest && *rest == '/')
                        checker_problem(c, "%s: removed before %s, which is below it", k->path, other->path);
        }
        (void) hashmap_remove(&c->client, o);
        client_object_free(o);
}

static void op_interfaces_changed(void *userdata, Kobject *k, char *const *interfaces, bool added, ObjDir *given)
{
        _cleanup_(objdir_donep) ObjDir own = OBJDIR_INIT(((Checker *) userdata)->sysfs, k);
        ObjDir *d = given ?: &own;
        Checker *c = userdata;
        ClientObject *o = hashmap_get(&c->client, k->path);
        Iface iface;

        c->n_calls++;
        if (!o) {
                checker_problem(c, "%s: interfaces changed on an object never announced", k->path);
                return;
        }
        for (char *const *n = interfaces; n && *n; n++) {
                ClientIface *ci = client_iface(o, *n);
                if (added && !kobject_find_iface(k, *n, &iface))
                        checker_problem(c, "%s: interface %s added, but the object has none", k->path, *n);
                else if (added && ci)
                        checker_problem(c, "%s: interface %s added twice", k->path, *n);
                else if (added)
                        client_add_iface(c, o, d, &iface);
                else if (!ci)
                        checker_problem(c, "%s: interface %s removed, but never announced", k->path, *n);
                else {
                        client_iface_done(ci);
                        o->n_ifaces--;
                        if (ci != &o->ifaces[o->n_ifaces])
                                *ci = o->ifaces[o->n_ifaces];
                }
        }
}

static void set_prop(ClientIface *ci, const char *name, char *value)
{
        for (size_t i = 0; i + 1 < ci->n; i += 2)
                if (streq(ci->props[i], name)) {
                        free(ci->props[i + 1]);
                        ci->props[i + 1] = value;
                        return;
                }
        if (strv_extend(&ci->props, &ci->n, name) < 0 || strv_consume(&ci->props, &ci->n, value) < 0)
                abort();
}

static const char *client_value(const ClientIface *ci, const char *name)
{
        for (size_t i = 0; i + 1 < ci->n; i += 2)
                if (streq(ci->props[i], name))
                        return ci->props[i + 1];
        return NULL;
}

static void op_properties_changed(void *userdata, Kobject *k, const char *interface, char *const *changed,
                                  char *const *invalidated, ObjDir *given)
{
        _cleanup_(objdir_donep) ObjDir own = OBJDIR_INIT(((Checker *) userdata)->sysfs, k);
        ObjDir *d = given ?: &own;
        Checker *c = userdata;
        ClientObject *o = hashmap_get(&c->client, k->path);
        ClientIface *ci = o ? client_iface(o, interface) : NULL;
        PropertyEmits e;
        Iface iface;

        c->n_calls++;
        if (!k->linked || !ci || !kobject_find_iface(k, interface, &iface)) {
                checker_problem(c,
                                "%s: properties of %s changed, but the client has no such object or "
                                "interface",
                                k->path, interface);
                return;
        }
        for (char *const *n = changed; n && *n; n++) {
                char *v = read_property(c, d, &iface, *n, &e);
                if (!v || e != PROPERTY_EMITS_TRUE) {
                        checker_problem(c, "%s: %s.%s announced, but it %s", k->path, interface, *n,
                                        v ? "is not announced when it changes" : "does not exist");
                        free(v);
                        continue;
                }
                if (client_value(ci, *n) && streq(client_value(ci, *n), v))
                        checker_problem(c, "%s: %s.%s announced, but it is '%.200s' still", k->path,
                                        interface, *n, v);
                set_prop(ci, *n, v);
        }
        for (char *const *n = invalidated; n && *n; n++) {
                const PropertyInfo *p = interface_find_property(interface, *n);
                if (!p || p->emits != PROPERTY_EMITS_INVALIDATES)
                        checker_problem(c,
                                        "%s: %s.%s invalidated, but it is not invalidated when it changes",
                                        k->path, interface, *n);
        }
}

static const char *env_get(const EventRecord *e, const char *key)
{
        for (size_t i = 0; i < e->n_env; i++)
                if (streq(e->env_keys[i], key))
                        return e->env_values[i];
        return NULL;
}

static void op_event(void *userdata, const EventRecord *e)
{
        Checker *c = userdata;
        Kobject *k;

        if (e->seqnum != c->last_seqnum + 1)
                checker_problem(c, "event %" PRIu64 " after %" PRIu64 ": a gap", e->seqnum, c->last_seqnum);
        c->last_seqnum = e->seqnum;
        if (!streq_ptr(env_get(e, "ACTION"), e->action) || !streq_ptr(env_get(e, "DEVPATH"), e->devpath) ||
            !streq_ptr(env_get(e, "SUBSYSTEM"), "block"))
                checker_problem(c, "event %" PRIu64 " (%s %s): its environment says otherwise", e->seqnum,
                                e->action, e->devpath);
        if (!c->started || streq(e->object_path, "/"))
                return;
        /* On add the object is published when the signal arrives; on remove it is gone. */
        k = model_find_path(c->model, e->object_path);
        if (k && !hashmap_get(&c->client, k->path))
                checker_problem(c, "event %" PRIu64 " (%s %s) names %s, never announced", e->seqnum,
                                e->action, e->devpath, e->object_path);
        if (!k && hashmap_get(&c->client, e->object_path))
                checker_problem(c, "event %" PRIu64 " (%s %s) names %s, gone but not announced gone",
                                e->seqnum, e->action, e->devpath, e->object_path);
        if (!k && !streq(e->action, "remove") && !streq(e->action, "move"))
                checker_problem(c, "event %" PRIu64 " (%s %s) names %s, which is not in the model",
                                e->seqnum, e->action, e->devpath, e->object_path);
}

static void op_events_lost(void *userdata, uint64_t total)
{
        Checker *c = userdata;

        if (total != ++c->lost)
                checker_problem(c, "%" PRIu64 " losses said, %" PRIu64 " happened", total, c->lost);
}

const LiveOps checker_ops = {
                .object_added = op_object_added,
                .object_removed = op_object_removed,
                .interfaces_changed = op_interfaces_changed,
                .properties_changed = op_properties_changed,
                .event = op_event,
                .events_lost = op_events_lost,
};

/* ---- at the end: the client's view against the model ---- */

void checker_compare_client(Checker *c, const Kobject *k, const Value *values, size_t n)
{
        ClientObject *o = hashmap_get(&c->client, k->path);
        const ClientIface *ci = NULL;
        size_t n_ifaces = 0;

        if (!o) {
                checker_problem(c, "%s: in the model, never announced", k->path);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                const char *held;
                if (i == 0 || values[i].iface != values[i - 1].iface) {
                        n_ifaces++;
                        ci = client_iface(o, values[i].iface);
                        if (!ci)
                                checker_problem(c, "%s: interface %s never announced", k->path,
                                                values[i].iface);
                }
                if (!ci || !property_held(values[i].emits))
                        continue;
                held = client_value(ci, values[i].name);
                if (!held)
                        checker_problem(c, "%s: %s.%s never told", k->path, values[i].iface, values[i].name);
                else if (!streq(held, values[i].value))
                        checker_problem(c, "%s: the client holds %s.%s = '%.200s', it is '%.200s'", k->path,
                                        values[i].iface, values[i].name, held, values[i].value);
        }
        if (o->n_ifaces != kobject_n_ifaces(k))
                checker_problem(c, "%s: the client knows %zu interfaces, the model has %zu", k->path,
                                o->n_ifaces, kobject_n_ifaces(k));
}

void checker_client_leftovers(Checker *c)
{
        ClientObject *o;
        size_t i = 0;

        while ((o = hashmap_iterate(&c->client, &i)))
                if (!model_find_path(c->model, o->path))
                        checker_problem(c, "%s: the client holds it, the model does not", o->path);
}

void checker_clear_problems(Checker *c)
{
        c->problems = strv_free(c->problems);
        c->n_problems = 0;
}
