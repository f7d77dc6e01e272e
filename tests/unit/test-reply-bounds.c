/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "base/log.h"
#include "blkmodel/names.h"
#include "bus/bus-internal.h"
#include "fixture.h"
#include "bus-pair.h"
#include "manager.h"
#include "sysfs/scan.h"
#include "tests.h"

/*
 * Every reply and signal the daemon sends only when its reckoned size is within the bus's limit
 * (--max-message-size less 1,024 for the header), against what sd-bus really marshals: the real
 * publisher on one end of a socket pair, the test's raw reads on the other.  For each message, its
 * body's real size S is read from the fixed header; then with the limit set so that S is a byte too
 * many the message must be refused (else its bound is below S: a bus would drop the daemon for a
 * message a little larger), and the least limit at which it goes says how far above S the bound is
 * (a message that fits refused).
 *
 * The sysfs fixture's sda gets attribute groups of random names and values, lengths 0..9 around every
 * alignment, long ones, and hundreds of files.  BLKMODEL_BOUNDS_SEED repeats a run;
 * BLKMODEL_BOUNDS_VERBOSE prints every check.
 */

#define HEADER_ROOM 1024
#define BIG ((size_t) 64 << 20)

typedef struct H {
        uv_loop_t loop;
        Fixture f;
        Manager *m;
        Publisher *p;
        sd_bus *ours, *peer;
        int raw;
        bool verbose;
        /* The largest over-estimate seen, in bytes and relative to the size, per kind of message. */
        struct Slack {
                const char *what;
                size_t max_bytes, at_size, n;
                double max_ratio;
        } slack[32];
        size_t n_slack;
} H;

typedef struct Msg {
        uint8_t type; /* 2 return, 3 error, 4 signal */
        uint32_t body;
        char *fields; /* the header's fields, raw */
        uint32_t n_fields;
} Msg;

static bool msg_has(const Msg *m, const char *s)
{
        return memmem(m->fields, m->n_fields, s, strlen(s)) != NULL;
}

/* Reads the next whole message off the raw end, running the daemon's loop meanwhile. */
static int read_msg(H *h, Msg *ret)
{
        uint8_t hdr[16];

        for (unsigned i = 0; i < 20000; i++) {
                struct pollfd pfd = {.fd = h->raw, .events = POLLIN};
                (void) uv_run(&h->loop, UV_RUN_NOWAIT);
                if (poll(&pfd, 1, 1) > 0)
                        break;
        }
        uint32_t body, fields;
        size_t rest;
        if (recv(h->raw, hdr, sizeof(hdr), MSG_WAITALL) != (ssize_t) sizeof(hdr) ||
            bus_pair_header(hdr, &body, &fields, &rest) < 0)
                return -1;
        char *buf = malloc(rest ? rest : 1);
        if (!buf)
                return -1;
        /* The daemon's loop writes what does not go at once. */
        size_t got = 0;
        for (unsigned i = 0; got < rest && i < 100000; i++) {
                ssize_t n = recv(h->raw, buf + got, rest - got, MSG_DONTWAIT);
                if (n > 0)
                        got += (size_t) n;
                else
                        (void) uv_run(&h->loop, UV_RUN_NOWAIT);
        }
        if (got != rest) {
                free(buf);
                return -1;
        }
        *ret = (Msg){.type = hdr[1], .body = body, .fields = buf, .n_fields = fields};
        return 0;
}

/* A request: a method call sent from the peer, or a signal the publisher is made to send. */
typedef struct Req {
        const char *what;
        const char *path, *iface, *member;
        const char *arg1, *arg2; /* s arguments, or NULL */
        uint64_t after;          /* GetEvents */
        void (*emit)(H *h, const struct Req *q);
        Kobject *k;
        char **names; /* PropertiesChanged, InterfacesAdded/Removed */
        const char *interface;
} Req;

/* Sends q with the limit max; 1 if it went (its body's size in *ret_body), 0 if refused, -1 else. */
static int attempt(H *h, const Req *q, size_t max, uint32_t *ret_body)
{
        Msg m;
        int r;

        h->p->message_max = max;
        if (q->emit)
                q->emit(h, q);
        else {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *c = NULL;
                r = sd_bus_message_new_method_call(h->peer, &c, NULL, q->path, q->iface, q->member);
                if (r >= 0 && q->member && streq(q->member, "GetEvents"))
                        r = sd_bus_message_append(c, "t", q->after);
                if (r >= 0 && q->arg1)
                        r = sd_bus_message_append(c, "s", q->arg1);
                if (r >= 0 && q->arg2)
                        r = sd_bus_message_append(c, "s", q->arg2);
                if (r >= 0)
                        r = sd_bus_send(h->peer, c, &(uint64_t){0}); /* a cookie: a reply is expected */
                if (r < 0 || sd_bus_flush(h->peer) < 0)
                        return -1;
        }
        if (read_msg(h, &m) < 0)
                return -1;
        if (m.type == 3) {
                r = msg_has(&m, "LimitsExceeded") ? 0 : -1;
                if (r < 0)
                        fprintf(stderr, "%s: an error other than LimitsExceeded\n", q->what);
        } else if (m.type == 4 && msg_has(&m, "SignalsDropped"))
                r = 0;
        else
                r = 1;
        *ret_body = m.body;
        free(m.fields);
        return r;
}

static struct Slack *slack_of(H *h, const char *what)
{
        for (size_t i = 0; i < h->n_slack; i++)
                if (streq(h->slack[i].what, what))
                        return &h->slack[i];
        if (h->n_slack == ELEMENTSOF(h->slack))
                return &h->slack[0];
        h->slack[h->n_slack] = (struct Slack){.what = what};
        return &h->slack[h->n_slack++];
}

/*
 * The check: sent whole on a large bus; refused when its real size is a byte too many; and sent with
 * a limit tolerance bytes above its size (tolerance 0: 64 bytes and 5% of the size, for
 * GetManagedObjects, whose estimate comes first).  Verbose, the least limit it is sent with is
 * searched for, and the largest over-estimate of each kind printed at the end.
 */
static void check_req(H *h, const Req *q, size_t tolerance)
{
        uint32_t size = 0, other;
        int r;

        r = attempt(h, q, BIG, &size);
        CHECK(r == 1);
        if (r != 1) {
                fprintf(stderr, "%s: not sent on a large bus\n", q->what);
                return;
        }
        r = attempt(h, q, (size_t) size - 1 + HEADER_ROOM, &other);
        CHECK(r == 0);
        if (r != 0) {
                fprintf(stderr, "%s: a body of %u bytes sent with a limit of %u: its bound is below it\n", q->what,
                        size, size - 1);
                return;
        }
        if (tolerance == 0)
                tolerance = 64 + size / 20;
        if (!h->verbose) {
                r = attempt(h, q, (size_t) size + tolerance + HEADER_ROOM, &other);
                CHECK(r == 1);
                if (r != 1)
                        fprintf(stderr, "%s %s: %u bytes refused with a limit of %zu\n", q->what,
                                q->path ? q->path : "", size, size + tolerance);
                return;
        }
        /* The least limit at which it goes: the bound. */
        size_t lo = (size_t) size, hi = BIG - HEADER_ROOM; /* refused at lo - 1, sent at hi */
        if (attempt(h, q, lo + HEADER_ROOM, &other) == 1)
                hi = lo;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                r = attempt(h, q, mid + HEADER_ROOM, &other);
                CHECK(r >= 0);
                if (r < 0)
                        return;
                if (r == 1)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        size_t over = hi - size;
        struct Slack *s = slack_of(h, q->what);
        s->n++;
        if (over > s->max_bytes) {
                s->max_bytes = over;
                s->at_size = size;
        }
        if ((double) over / size > s->max_ratio)
                s->max_ratio = (double) over / size;
        if (h->verbose)
                fprintf(stderr, "%s %s: %u bytes, bound %zu (+%zu)\n", q->what, q->path ? q->path : "",
                        size, hi, over);
        {
                CHECK(over <= tolerance);
                if (over > tolerance)
                        fprintf(stderr, "%s %s: %u bytes refused up to a limit of %zu (+%zu)\n", q->what,
                                q->path ? q->path : "", size, hi - 1, over);
        }
}

/* ---- the fixture ---- */

static unsigned rnd(unsigned n)
{
        return n ? (unsigned) random() % n : 0;
}

static void random_name(char *buf, size_t len)
{
        for (size_t i = 0; i < len; i++)
                buf[i] = (char) ('a' + rnd(26));
        buf[len] = 0;
}

static size_t random_value_len(void)
{
        switch (rnd(10)) {
        case 0:
                return 100 + rnd(400);
        case 1:
                return 1000 + rnd(3000);
        default:
                return rnd(10);
        }
}

/* A group of n files below sda, named g<name>; names of 1..12 bytes, values of random lengths. */
static void add_group(H *h, const char *name, size_t n)
{
        char dir[256], rel[512], file[16];

        (void) snprintf(dir, sizeof(dir), "%s/%s", FIXTURE_SDA, name);
        CHECK(fixture_mkdir(&h->f, dir) == 0);
        for (size_t i = 0; i < n; i++) {
                random_name(file, 1 + rnd(12));
                size_t len = random_value_len();
                char *v = malloc(len + 2);
                memset(v, '0' + (char) rnd(10), len);
                v[len] = '\n';
                v[len + 1] = 0;
                (void) snprintf(rel, sizeof(rel), "%s/%s", dir, file);
                (void) fixture_write(&h->f, rel, v); /* a name drawn twice: the same file */
                free(v);
        }
}

/* New values, of new lengths, for every file of sda's groups (the names stay). */
static void rewrite_groups(H *h)
{
        Kobject *k = model_find_devpath(h->m->model, FIXTURE_SDA);
        Iface iface;
        char rel[1024];

        for (size_t i = 0; k && i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                if (!iface.attr_dir || !iface.attrs)
                        continue;
                for (size_t j = 0; j < iface.attrs->n_attrs; j++) {
                        size_t len = random_value_len();
                        char *v = malloc(len + 2);
                        memset(v, 'x', len);
                        v[len] = '\n';
                        v[len + 1] = 0;
                        (void) snprintf(rel, sizeof(rel), "%s/%s/%s", FIXTURE_SDA, iface.attr_dir,
                                        iface.attrs->attrs[j].file);
                        (void) fixture_write(&h->f, rel, v);
                        free(v);
                }
        }
}

static int h_open(H *h)
{
        if (uv_loop_init(&h->loop) < 0 || fixture_new(&h->f) < 0)
                return -1;
        /* Groups whose interface names end at every alignment, and one of hundreds of files. */
        for (size_t len = 1; len <= 9; len++) {
                char name[16];
                random_name(name, len);
                add_group(h, name, 1 + rnd(12));
        }
        add_group(h, "many", 300 + rnd(200));

        ManagerOptions o = {.bus_kind = BUS_KIND_SESSION,
                            .sysfs_root = h->f.root,
                            .no_uevents = true,
                            .event_log_size = 64,
                            .poll_interval_ms = 0};
        if (manager_new(&o, &h->loop, &h->m) < 0 || scan_all(&h->m->sysfs, h->m->model) < 0)
                return -1;

        if (bus_pair_open(0, 0, &h->ours, &h->peer, &h->raw) < 0)
                return -1;

        PublisherConfig c = {.loop = &h->loop,
                             .bus = h->ours,
                             .sysfs = &h->m->sysfs,
                             .model = h->m->model,
                             .live = h->m->live,
                             .events = h->m->events,
                             .uevent_source = "none",
                             .message_max = BIG};
        if (publisher_new(&c, &h->p) < 0)
                return -1;
        h->m->publisher = h->p;
        /* The refusals' warnings, hundreds of them, are the test's doing. */
        log_set_max_level(LOG_ERR);
        return 0;
}

static void h_close(H *h)
{
        sd_bus_close_unref(h->peer);
        manager_free(h->m);
        (void) uv_run(&h->loop, UV_RUN_DEFAULT);
        (void) uv_loop_close(&h->loop);
        sd_bus_unref(h->ours);
        fixture_done(&h->f);
}

/* ---- the messages ---- */

static void emit_added(H *h, const Req *q)
{
        publisher_object_added(h->p, q->k, NULL);
}

static void emit_removed(H *h, const Req *q)
{
        publisher_object_removed(h->p, q->k);
}

static void emit_ifaces_added(H *h, const Req *q)
{
        publisher_interfaces_changed(h->p, q->k, q->names, true, NULL);
}

static void emit_ifaces_removed(H *h, const Req *q)
{
        publisher_interfaces_changed(h->p, q->k, q->names, false, NULL);
}

static void emit_changed(H *h, const Req *q)
{
        publisher_properties_changed(h->p, q->k, q->interface, q->names, NULL, NULL);
}

static void emit_uevent(H *h, const Req *q)
{
        const EventRecord *e = eventlog_get(h->m->events, eventlog_size(h->m->events) - 1);
        publisher_uevent(h->p, e);
}

typedef void (*ObjectVisit)(H *h, Kobject *k);

static void foreach_object(H *h, Kobject *k, ObjectVisit f)
{
        f(h, k);
        for (Kobject *c = k->first_child; c; c = c->next_sibling)
                foreach_object(h, c, f);
}

/* The replies of one object: GetAll of each interface, Get of some properties, Introspect, and its
 * own GetManagedObjects if it answers one. */
static void check_object_replies(H *h, Kobject *k)
{
        Iface iface;

        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                check_req(h,
                          &(Req){.what = "GetAll", .path = k->path, .iface = IFACE_PROPERTIES,
                                 .member = "GetAll", .arg1 = iface.name},
                          64);
                for (const PropertyInfo *p = iface.properties; p->name; p++)
                        if (rnd(4) == 0)
                                check_req(h,
                                          &(Req){.what = "Get", .path = k->path, .iface = IFACE_PROPERTIES,
                                                 .member = "Get", .arg1 = iface.name, .arg2 = p->name},
                                          8 + DBUS_NAME_MAX + 8);
                for (size_t j = 0; iface.attrs && j < iface.attrs->n_attrs; j++)
                        if (rnd(16) == 0)
                                check_req(h,
                                          &(Req){.what = "Get", .path = k->path, .iface = IFACE_PROPERTIES,
                                                 .member = "Get", .arg1 = iface.name,
                                                 .arg2 = iface.attrs->attrs[j].member},
                                          8 + DBUS_NAME_MAX + 8);
        }
        check_req(h,
                  &(Req){.what = "Introspect", .path = k->path, .iface = IFACE_INTROSPECTABLE,
                         .member = "Introspect"},
                  1);
        if (bus_object_is_manager(k))
                check_req(h,
                          &(Req){.what = "GetManagedObjects", .path = k->path, .iface = IFACE_OBJECT_MANAGER,
                                 .member = "GetManagedObjects"},
                          0);
}

static void check_object_signals(H *h, Kobject *k)
{
        Iface iface;
        char *names[64];
        size_t n_names = 0;

        check_req(h, &(Req){.what = "InterfacesAdded", .path = k->path, .emit = emit_added, .k = k}, 64);
        check_req(h, &(Req){.what = "InterfacesRemoved", .path = k->path, .emit = emit_removed, .k = k}, 64);
        for (size_t i = 0; i < kobject_n_ifaces(k) && n_names < ELEMENTSOF(names) - 1; i++) {
                kobject_iface(k, i, &iface);
                if (rnd(2))
                        names[n_names++] = (char *) iface.name;
        }
        names[n_names] = NULL;
        if (n_names > 0) {
                check_req(h,
                          &(Req){.what = "InterfacesAdded (some)", .path = k->path, .emit = emit_ifaces_added,
                                 .k = k, .names = names},
                          64);
                check_req(h,
                          &(Req){.what = "InterfacesRemoved (some)", .path = k->path,
                                 .emit = emit_ifaces_removed, .k = k, .names = names},
                          64);
        }
        /* PropertiesChanged of a random part of each interface's properties. */
        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                size_t n = 0, cap = 16;
                char **changed = malloc(cap * sizeof(char *));

                kobject_iface(k, i, &iface);
                for (const PropertyInfo *p = iface.properties; changed && p->name; p++)
                        if (rnd(2)) {
                                if (n + 1 >= cap)
                                        changed = realloc(changed, (cap *= 2) * sizeof(char *));
                                changed[n++] = (char *) p->name;
                        }
                for (size_t j = 0; changed && iface.attrs && j < iface.attrs->n_attrs; j++)
                        if (rnd(3)) {
                                if (n + 1 >= cap)
                                        changed = realloc(changed, (cap *= 2) * sizeof(char *));
                                changed[n++] = (char *) iface.attrs->attrs[j].member;
                        }
                if (!changed)
                        continue;
                changed[n] = NULL;
                if (n > 0)
                        check_req(h,
                                  &(Req){.what = "PropertiesChanged", .path = k->path, .emit = emit_changed,
                                         .k = k, .interface = iface.name, .names = changed},
                                  64);
                free(changed);
        }
}

static void check_events(H *h)
{
        /* Events of env entries of every alignment; GetEvents of one and of all. */
        for (unsigned e = 0; e < 40; e++) {
                size_t n = rnd(4) ? rnd(20) : 100 + rnd(300);
                char **keys = calloc(n + 1, sizeof(char *)), **values = calloc(n + 1, sizeof(char *));
                EventRecord *rec = NULL;

                for (size_t i = 0; i < n; i++) {
                        keys[i] = malloc(16);
                        random_name(keys[i], 1 + rnd(12));
                        size_t len = rnd(8) ? rnd(10) : rnd(300);
                        values[i] = malloc(len + 1);
                        random_name(values[i], len);
                }
                char action[16];
                random_name(action, 1 + rnd(9));
                CHECK(event_record_new(action, FIXTURE_SDA, rnd(2) ? "/" : "/org/blkmodel1/block/sda", n, keys,
                                       values, &rec) == 0);
                if (rec)
                        (void) eventlog_append(h->m->events, rec);
                for (size_t i = 0; i < n; i++) {
                        free(keys[i]);
                        free(values[i]);
                }
                free(keys);
                free(values);
                check_req(h, &(Req){.what = "Uevent", .emit = emit_uevent}, 8);
                uint64_t last = eventlog_last_seqnum(h->m->events);
                check_req(h,
                          &(Req){.what = "GetEvents (one)", .path = BLKMODEL_MANAGER_PATH,
                                 .iface = BLKMODEL_IFACE_MANAGER, .member = "GetEvents", .after = last - 1},
                          8);
        }
        /* All retained: the reply is cut to whole events below the limit, so only whether the
         * limit is kept is checked (a byte too few must leave an event out, never be sent). */
        uint64_t oldest = eventlog_oldest_seqnum(h->m->events);
        uint32_t size = 0, other = 0;
        CHECK(attempt(h,
                      &(Req){.what = "GetEvents", .path = BLKMODEL_MANAGER_PATH, .iface = BLKMODEL_IFACE_MANAGER,
                             .member = "GetEvents", .after = oldest - 1},
                      BIG, &size) == 1);
        for (size_t max = 4096; max < size + HEADER_ROOM; max += 997) {
                int r = attempt(h,
                                &(Req){.what = "GetEvents", .path = BLKMODEL_MANAGER_PATH,
                                       .iface = BLKMODEL_IFACE_MANAGER, .member = "GetEvents", .after = oldest - 1},
                                max, &other);
                /* Refused only when the first event alone does not fit. */
                CHECK(r >= 0 && (r == 0 || other <= max - HEADER_ROOM));
                if (r == 1 && other > max - HEADER_ROOM)
                        fprintf(stderr, "GetEvents: %u bytes with a limit of %zu\n", other, max - HEADER_ROOM);
        }
}

int main(void)
{
        const char *seed_env = getenv("BLKMODEL_BOUNDS_SEED");
        unsigned seed = seed_env ? (unsigned) strtoul(seed_env, NULL, 0) : (unsigned) time(NULL);
        H h = {.raw = -1, .verbose = !!getenv("BLKMODEL_BOUNDS_VERBOSE")};

        fprintf(stderr, "seed %u\n", seed);
        srandom(seed);
        if (h_open(&h) < 0) {
                CHECK(!"cannot set up");
                return tests_summary();
        }
        Model *m = h.m->model;
        for (unsigned round = 0; round < 2; round++) {
                foreach_object(&h, m->block_kset, check_object_replies);
                foreach_object(&h, m->devices_kset, check_object_replies);
                foreach_object(&h, m->block_kset, check_object_signals);
                check_req(&h,
                          &(Req){.what = "GetManagedObjects", .path = BLKMODEL_ROOT_PATH,
                                 .iface = IFACE_OBJECT_MANAGER, .member = "GetManagedObjects"},
                          0);
                rewrite_groups(&h);
        }
        check_events(&h);
        for (size_t i = 0; i < h.n_slack; i++)
                fprintf(stderr, "%-26s %5zu checks: bound at most %zu bytes over (at a body of %zu), %.1f%%\n",
                        h.slack[i].what, h.slack[i].n, h.slack[i].max_bytes, h.slack[i].at_size,
                        100 * h.slack[i].max_ratio);
        h_close(&h);
        return tests_summary();
}
