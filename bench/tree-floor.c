/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The floor under `busctl tree` (bench/scale.py): a bare sd-bus service that answers Introspect for
 * the same object paths as blkmodeld, with replies made before the first call, so that what
 * `busctl tree` takes against it is busctl, dbus-daemon and one round trip per object — what no
 * service publishing these objects can take away.
 *
 *   tree-floor ADDRESS NAME PATHS same SOURCE
 *       Serves, as NAME, every path of the file PATHS (one per line, as `busctl tree --list`
 *       prints them) with the XML that SOURCE (blkmodeld's bus name) returns for it, fetched
 *       once at start: busctl's and dbus-daemon's cost with our XML, our own cost removed.
 *
 *   tree-floor ADDRESS NAME PATHS children
 *       Serves every path with only its child nodes (<node name="..."/>), computed from PATHS:
 *       the least XML that lets busctl walk the tree.
 *
 *   tree-floor ADDRESS NAME PATHS lean SOURCE
 *       As `same`, with SOURCE's XML cut to what no publisher of these objects can leave out: every
 *       interface, method, signal, property and child node stays; the DOCTYPE, the standard
 *       interfaces every object has anyway (Peer, Introspectable, Properties), the annotations and
 *       the whitespace between elements go. What `busctl tree` takes against it is the floor for
 *       any service that lists every attribute as a property.
 *
 * Prints one line of JSON ({"paths": N, "xml_bytes": B}) once the name is taken, then serves
 * until stdin closes or SIGTERM.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmo-parts.h"

typedef struct Node {
        char *path;
        char *xml;
        size_t xml_len;
} Node;

static Node *nodes;
static size_t n_nodes;
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
        stop = 1;
}

static int node_compare(const void *a, const void *b)
{
        return strcmp(((const Node *) a)->path, ((const Node *) b)->path);
}

static Node *node_find(const char *path)
{
        Node key = {.path = (char *) path};
        return bsearch(&key, nodes, n_nodes, sizeof(Node), node_compare);
}

static int read_paths(const char *file)
{
        char **paths;
        int r = bench_read_lines(file, "", &paths, &n_nodes);

        if (r < 0)
                return r;
        /* Sorted as bench_cmp_str sorts them: node_compare's order. */
        nodes = calloc(n_nodes, sizeof(Node));
        if (!nodes)
                return -ENOMEM;
        for (size_t i = 0; i < n_nodes; i++)
                nodes[i].path = paths[i];
        free(paths);
        return 0;
}

static int xml_append(Node *n, const char *s)
{
        size_t len = strlen(s);
        char *p = realloc(n->xml, n->xml_len + len + 1);

        if (!p)
                return -ENOMEM;
        memcpy(p + n->xml_len, s, len + 1);
        n->xml = p;
        n->xml_len += len;
        return 0;
}

/* Each path's parent gets a <node name="last element"/> for it. */
static int make_children_xml(void)
{
        static const char head[] =
                "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n"
                "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n<node>\n";
        char buf[4096];

        for (size_t i = 0; i < n_nodes; i++)
                if (xml_append(&nodes[i], head) < 0)
                        return -ENOMEM;
        for (size_t i = 0; i < n_nodes; i++) {
                const char *path = nodes[i].path, *slash = strrchr(path, '/');
                Node *parent;

                if (strcmp(path, "/") == 0)
                        continue;
                snprintf(buf, sizeof(buf), "%.*s", slash == path ? 1 : (int) (slash - path), path);
                parent = node_find(buf);
                if (!parent)
                        continue; /* busctl found it through its parent: not in this file */
                snprintf(buf, sizeof(buf), " <node name=\"%s\"/>\n", slash + 1);
                if (xml_append(parent, buf) < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n_nodes; i++)
                if (xml_append(&nodes[i], "</node>\n") < 0)
                        return -ENOMEM;
        return 0;
}

static int fetch_source_xml(sd_bus *bus, const char *source)
{
        for (size_t i = 0; i < n_nodes; i++) {
                sd_bus_error error = SD_BUS_ERROR_NULL;
                sd_bus_message *reply = NULL;
                const char *xml;
                int r;

                r = sd_bus_call_method(bus, source, nodes[i].path, "org.freedesktop.DBus.Introspectable",
                                       "Introspect", &error, &reply, NULL);
                if (r >= 0)
                        r = sd_bus_message_read(reply, "s", &xml);
                if (r < 0) {
                        fprintf(stderr, "tree-floor: Introspect %s on %s: %s\n", nodes[i].path, source,
                                error.message ? error.message : strerror(-r));
                        return r;
                }
                nodes[i].xml = strdup(xml);
                nodes[i].xml_len = strlen(xml);
                sd_bus_message_unref(reply);
                if (!nodes[i].xml)
                        return -ENOMEM;
        }
        return 0;
}

static bool skip_prefix(const char **p, const char *prefix)
{
        size_t len = strlen(prefix);

        if (strncmp(*p, prefix, len) != 0)
                return false;
        *p += len;
        return true;
}

/* SOURCE's XML without what `lean` leaves out (see the top): a filter over its text, which
 * blkmodeld writes one element per line. */
static int make_lean(Node *n)
{
        static const char *const standard[] = {
                "<interface name=\"org.freedesktop.DBus.Peer\">",
                "<interface name=\"org.freedesktop.DBus.Introspectable\">",
                "<interface name=\"org.freedesktop.DBus.Properties\">",
        };
        char *out = malloc(n->xml_len + 1), *o = out;
        const char *p = n->xml;

        if (!out)
                return -ENOMEM;
        while (*p) {
                const char *end;
                bool std = false;

                while (*p == ' ' || *p == '\n')
                        p++;
                if (!*p)
                        break;
                if (skip_prefix(&p, "<!DOCTYPE")) {
                        end = strchr(p, '>');
                        p = end ? end + 1 : p + strlen(p);
                        continue;
                }
                for (size_t i = 0; i < sizeof(standard) / sizeof(standard[0]); i++)
                        if (strncmp(p, standard[i], strlen(standard[i])) == 0)
                                std = true;
                if (std) {
                        end = strstr(p, "</interface>");
                        p = end ? end + strlen("</interface>") : p + strlen(p);
                        continue;
                }
                if (strncmp(p, "<annotation ", 12) == 0) {
                        end = strstr(p, "/>");
                        p = end ? end + 2 : p + strlen(p);
                        continue;
                }
                end = strchr(p, '\n');
                if (!end)
                        end = p + strlen(p);
                memcpy(o, p, end - p);
                o += end - p;
                p = end;
        }
        *o = '\0';
        free(n->xml);
        n->xml = out;
        n->xml_len = o - out;
        return 0;
}

static int on_message(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
        Node *n;

        if (!sd_bus_message_is_method_call(m, "org.freedesktop.DBus.Introspectable", "Introspect"))
                return 0;
        n = node_find(sd_bus_message_get_path(m));
        if (!n)
                return 0; /* sd-bus answers UnknownObject */
        return sd_bus_reply_method_return(m, "s", n->xml);
}

int main(int argc, char *argv[])
{
        struct sigaction sa = {.sa_handler = on_signal};
        sd_bus *bus = NULL;
        size_t bytes = 0;
        bool same, lean;
        int r;

        lean = argc == 6 && strcmp(argv[4], "lean") == 0;
        same = lean || (argc == 6 && strcmp(argv[4], "same") == 0);
        if (!same && !(argc == 5 && strcmp(argv[4], "children") == 0)) {
                fprintf(stderr, "usage: %s ADDRESS NAME PATHS same|lean SOURCE\n"
                                "       %s ADDRESS NAME PATHS children\n", argv[0], argv[0]);
                return 2;
        }
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        r = read_paths(argv[3]);
        if (r < 0 || n_nodes == 0) {
                fprintf(stderr, "tree-floor: no paths in %s: %s\n", argv[3], strerror(r < 0 ? -r : ENOENT));
                return 1;
        }
        r = bench_bus_open(argv[1], &bus);
        if (r < 0) {
                fprintf(stderr, "tree-floor: cannot connect to %s: %s\n", argv[1], strerror(-r));
                return 1;
        }
        r = same ? fetch_source_xml(bus, argv[5]) : make_children_xml();
        for (size_t i = 0; r >= 0 && lean && i < n_nodes; i++)
                r = make_lean(&nodes[i]);
        if (r < 0)
                return 1;
        for (size_t i = 0; i < n_nodes; i++)
                bytes += nodes[i].xml_len;
        r = sd_bus_add_fallback(bus, NULL, "/", on_message, NULL);
        if (r >= 0)
                r = sd_bus_request_name(bus, argv[2], 0);
        if (r < 0) {
                fprintf(stderr, "tree-floor: serving %s: %s\n", argv[2], strerror(-r));
                return 1;
        }
        printf("{\"paths\": %zu, \"xml_bytes\": %zu}\n", n_nodes, bytes);
        fflush(stdout);

        while (!stop) {
                struct pollfd p[2] = {
                        {.fd = sd_bus_get_fd(bus), .events = sd_bus_get_events(bus)},
                        {.fd = STDIN_FILENO, .events = POLLIN},
                };
                char c;

                r = sd_bus_process(bus, NULL);
                if (r < 0) {
                        fprintf(stderr, "tree-floor: %s\n", strerror(-r));
                        return 1;
                }
                if (r > 0)
                        continue;
                if (poll(p, 2, -1) < 0 && errno != EINTR)
                        return 1;
                if ((p[1].revents & (POLLIN | POLLHUP)) && read(STDIN_FILENO, &c, 1) <= 0)
                        break;
        }
        sd_bus_flush_close_unref(bus);
        return 0;
}
