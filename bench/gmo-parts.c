/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* GetManagedObjects of a whole tree, in parts when the service refuses one reply: gmo-parts.h. */
#include "gmo-parts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bench_cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int bench_read_lines(const char *file, const char *trailing, char ***ret, size_t *ret_n)
{
        FILE *f = fopen(file, "re");
        char **lines = NULL, *line = NULL;
        size_t len = 0, n_lines = 0, cap = 0;
        ssize_t n;
        int r = 0;

        if (!f)
                return -errno;
        while ((n = getline(&line, &len, f)) > 0) {
                while (n > 0 && (line[n - 1] == '\n' || strchr(trailing, line[n - 1])))
                        line[--n] = 0;
                if (n == 0)
                        continue;
                if (n_lines == cap) {
                        char **p = realloc(lines, (cap = cap ? cap * 2 : 1024) * sizeof(char *));
                        if (!p) {
                                r = -ENOMEM;
                                break;
                        }
                        lines = p;
                }
                lines[n_lines] = strdup(line);
                if (!lines[n_lines++]) {
                        r = -ENOMEM;
                        break;
                }
        }
        free(line);
        fclose(f);
        if (r < 0) {
                while (n_lines > 0)
                        free(lines[--n_lines]);
                free(lines);
                return r;
        }
        qsort(lines, n_lines, sizeof(char *), bench_cmp_str);
        *ret = lines;
        *ret_n = n_lines;
        return 0;
}

typedef enum ReqKind { REQ_GMO, REQ_CHILDREN, REQ_SELF, REQ_GETALL } ReqKind;

typedef struct Req {
        ReqKind kind;
        char *path;
        char *iface; /* REQ_GETALL */
} Req;

typedef struct Reader {
        sd_bus *bus;
        const char *dest;
        uint64_t timeout;
        GmoObjectFunc on_object;
        void *userdata;
        GmoStats *stats;
        Req *queue;
        size_t head, n, cap;
        unsigned in_flight, max_in_flight;
        int error;
        char *error_text;
} Reader;

typedef struct Call {
        Reader *reader;
        Req req;
} Call;

static int push(Reader *rd, ReqKind kind, const char *path, const char *iface)
{
        if (rd->n == rd->cap) {
                size_t cap = rd->cap ? rd->cap * 2 : 256;
                Req *q = realloc(rd->queue, cap * sizeof(Req));
                if (!q)
                        return -ENOMEM;
                rd->queue = q;
                rd->cap = cap;
        }
        Req *q = &rd->queue[rd->n++];
        q->kind = kind;
        q->path = strdup(path);
        q->iface = iface ? strdup(iface) : NULL;
        if (!q->path || (iface && !q->iface))
                return -ENOMEM;
        return 0;
}

static void fail(Reader *rd, int r, const char *what, const char *path, const sd_bus_error *e)
{
        if (rd->error)
                return;
        rd->error = r < 0 ? r : -EIO;
        if (asprintf(&rd->error_text, "%s %s: %s%s%s", what, path,
                     e && e->name ? e->name : strerror(-rd->error), e && e->message ? ": " : "",
                     e && e->message ? e->message : "") < 0)
                rd->error_text = NULL;
}

/* Reads every basic value below the current position, entering every container; counts them in
 * *values when given. */
static int read_values(sd_bus_message *m, uint64_t *values)
{
        int depth = 0, r;

        for (;;) {
                char type;
                const char *contents;

                r = sd_bus_message_peek_type(m, &type, &contents);
                if (r < 0)
                        return r;
                if (r == 0) {
                        if (depth == 0)
                                return 0;
                        r = sd_bus_message_exit_container(m);
                        if (r < 0)
                                return r;
                        depth--;
                        continue;
                }
                if (type == SD_BUS_TYPE_ARRAY || type == SD_BUS_TYPE_VARIANT || type == SD_BUS_TYPE_STRUCT ||
                    type == SD_BUS_TYPE_DICT_ENTRY) {
                        r = sd_bus_message_enter_container(m, type, contents);
                        if (r < 0)
                                return r;
                        depth++;
                        continue;
                }
                union {
                        uint64_t u64;
                        const char *s;
                        int b;
                        double d;
                } v;
                r = sd_bus_message_read_basic(m, type, &v);
                if (r < 0)
                        return r;
                if (values)
                        (*values)++;
        }
}

/* a{sv}: every property, every value. */
static int read_props(Reader *rd, sd_bus_message *m)
{
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *name;
                rd->stats->properties++;
                r = sd_bus_message_read_basic(m, 's', &name);
                if (r >= 0)
                        r = read_values(m, &rd->stats->values);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int read_gmo(Reader *rd, sd_bus_message *m)
{
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{oa{sa{sv}}}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "oa{sa{sv}}")) > 0) {
                const char *path;
                r = sd_bus_message_read_basic(m, 'o', &path);
                if (r < 0)
                        return r;
                rd->stats->objects++;
                if (rd->on_object)
                        rd->on_object(path, rd->userdata);
                r = sd_bus_message_enter_container(m, 'a', "{sa{sv}}");
                if (r < 0)
                        return r;
                while ((r = sd_bus_message_enter_container(m, 'e', "sa{sv}")) > 0) {
                        const char *iface;
                        rd->stats->interfaces++;
                        r = sd_bus_message_read_basic(m, 's', &iface);
                        if (r >= 0)
                                r = read_props(rd, m);
                        if (r >= 0)
                                r = sd_bus_message_exit_container(m);
                        if (r < 0)
                                return r;
                }
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

int gmo_read_reply(sd_bus_message *m, GmoStats *stats)
{
        Reader rd = {.stats = stats};

        return read_gmo(&rd, m);
}

/* Pulls attribute values out of Introspect XML: every name="..." of each <tag. */
static int xml_names(Reader *rd, const char *xml, const char *tag, const char *path, ReqKind kind)
{
        size_t tl = strlen(tag);
        const char *p = xml;
        int r;

        while ((p = strstr(p, tag))) {
                const char *end = strchr(p, '>');
                if (!end)
                        break;
                if (!(p[tl] == ' ' || p[tl] == '\t' || p[tl] == '\n')) {
                        p += tl;
                        continue;
                }
                const char *n = strstr(p, "name=\"");
                if (n && n < end) {
                        n += 6;
                        const char *q = strchr(n, '"');
                        if (!q)
                                break;
                        char *name = strndup(n, q - n);
                        if (!name)
                                return -ENOMEM;
                        /* The root <node> may carry the introspected path itself: not a child. */
                        if (kind != REQ_GETALL && (name[0] == '/' || name[0] == 0)) {
                                free(name);
                                p = end;
                                continue;
                        }
                        if (kind == REQ_GETALL) {
                                if (strncmp(name, "org.freedesktop.DBus.", 21) != 0) {
                                        r = push(rd, REQ_GETALL, path, name);
                                        if (r < 0) {
                                                free(name);
                                                return r;
                                        }
                                }
                        } else {
                                char *child;
                                if (asprintf(&child, "%s%s%s", path, strcmp(path, "/") == 0 ? "" : "/",
                                             name) < 0) {
                                        free(name);
                                        return -ENOMEM;
                                }
                                r = push(rd, REQ_GMO, child, NULL);
                                if (r >= 0)
                                        r = push(rd, REQ_SELF, child, NULL);
                                free(child);
                                if (r < 0) {
                                        free(name);
                                        return r;
                                }
                        }
                        free(name);
                }
                p = end;
        }
        return 0;
}

static void pump(Reader *rd);

static bool is_leaf_error(const sd_bus_error *e)
{
        return sd_bus_error_has_name(e, SD_BUS_ERROR_UNKNOWN_METHOD) ||
               sd_bus_error_has_name(e, SD_BUS_ERROR_UNKNOWN_INTERFACE) ||
               sd_bus_error_has_name(e, SD_BUS_ERROR_UNKNOWN_OBJECT);
}

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        Call *c = userdata;
        Reader *rd = c->reader;
        const sd_bus_error *e = sd_bus_message_get_error(m);
        int r = 0;

        rd->in_flight--;
        switch (c->req.kind) {
        case REQ_GMO:
                if (e) {
                        if (sd_bus_error_has_name(e, SD_BUS_ERROR_LIMITS_EXCEEDED)) {
                                rd->stats->gmo_refused++;
                                r = push(rd, REQ_CHILDREN, c->req.path, NULL);
                        } else if (!is_leaf_error(e))
                                fail(rd, -EIO, "GetManagedObjects", c->req.path, e);
                        break;
                }
                r = read_gmo(rd, m);
                break;
        case REQ_CHILDREN:
        case REQ_SELF: {
                const char *xml;
                if (e) {
                        fail(rd, -EIO, "Introspect", c->req.path, e);
                        break;
                }
                r = sd_bus_message_read_basic(m, 's', &xml);
                if (r >= 0 && c->req.kind == REQ_CHILDREN)
                        r = xml_names(rd, xml, "<node", c->req.path, REQ_GMO);
                else if (r >= 0) {
                        rd->stats->objects++;
                        if (rd->on_object)
                                rd->on_object(c->req.path, rd->userdata);
                        r = xml_names(rd, xml, "<interface", c->req.path, REQ_GETALL);
                }
                break;
        }
        case REQ_GETALL:
                if (e) {
                        fail(rd, -EIO, "GetAll", c->req.path, e);
                        break;
                }
                rd->stats->interfaces++;
                r = read_props(rd, m);
                break;
        }
        if (r < 0)
                fail(rd, r, "reading the reply for", c->req.path, NULL);
        free(c->req.path);
        free(c->req.iface);
        free(c);
        pump(rd);
        return 0;
}

static void pump(Reader *rd)
{
        while (!rd->error && rd->in_flight < rd->max_in_flight && rd->head < rd->n) {
                Req q = rd->queue[rd->head++];
                sd_bus_message *m = NULL;
                Call *c;
                int r;

                switch (q.kind) {
                case REQ_GMO:
                        rd->stats->gmo_calls++;
                        r = sd_bus_message_new_method_call(rd->bus, &m, rd->dest, q.path,
                                                           "org.freedesktop.DBus.ObjectManager",
                                                           "GetManagedObjects");
                        break;
                case REQ_CHILDREN:
                case REQ_SELF:
                        rd->stats->introspect_calls++;
                        r = sd_bus_message_new_method_call(rd->bus, &m, rd->dest, q.path,
                                                           "org.freedesktop.DBus.Introspectable",
                                                           "Introspect");
                        break;
                default:
                        rd->stats->getall_calls++;
                        r = sd_bus_message_new_method_call(rd->bus, &m, rd->dest, q.path,
                                                           "org.freedesktop.DBus.Properties", "GetAll");
                        if (r >= 0)
                                r = sd_bus_message_append(m, "s", q.iface);
                        break;
                }
                c = calloc(1, sizeof(Call));
                if (r >= 0 && !c)
                        r = -ENOMEM;
                if (r >= 0) {
                        c->reader = rd;
                        c->req = q;
                        r = sd_bus_call_async(rd->bus, NULL, m, on_reply, c, rd->timeout);
                }
                sd_bus_message_unref(m);
                if (r < 0) {
                        free(c);
                        fail(rd, r, "sending a call to", q.path, NULL);
                        free(q.path);
                        free(q.iface);
                        return;
                }
                rd->in_flight++;
        }
}

int gmo_read_all(sd_bus *bus, const char *dest, const char *root, unsigned in_flight, uint64_t timeout_usec,
                 GmoObjectFunc on_object, void *userdata, GmoStats *stats, char **error_text)
{
        Reader rd = {
                        .bus = bus,
                        .dest = dest,
                        .timeout = timeout_usec,
                        .on_object = on_object,
                        .userdata = userdata,
                        .stats = stats,
                        .max_in_flight = in_flight ? in_flight : 1,
        };
        int r;

        *stats = (GmoStats){};
        r = push(&rd, REQ_GMO, root, NULL);
        if (r < 0)
                return r;
        pump(&rd);
        while (rd.in_flight > 0) {
                r = sd_bus_process(bus, NULL);
                if (r < 0) {
                        fail(&rd, r, "processing the bus for", root, NULL);
                        break;
                }
                if (r > 0)
                        continue;
                r = sd_bus_wait(bus, UINT64_MAX);
                if (r < 0 && r != -EINTR) {
                        fail(&rd, r, "waiting on the bus for", root, NULL);
                        break;
                }
        }
        /* Calls still in flight after a failure hold their Call: the process exits soon after. */
        for (size_t i = rd.head; i < rd.n; i++) {
                free(rd.queue[i].path);
                free(rd.queue[i].iface);
        }
        free(rd.queue);
        if (rd.error && error_text)
                *error_text = rd.error_text;
        else
                free(rd.error_text);
        return rd.error;
}
