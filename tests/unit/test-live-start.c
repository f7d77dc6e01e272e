/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <uv.h>

#include "common/util.h"
#include "fixture.h"
#include "live/live.h"
#include "sysfs/scan.h"
#include "tests.h"

/*
 * The live layer around its start, each case on a live layer of its own over the standard fixture:
 * what the clients read at the name is what a change is told against, not a reading taken before
 * it; a rescan before the warm-up has read an object tells every value; a directory gone before its
 * remove event changes no value that was "" already, but a partition's remove read after its disk's
 * directory went still tells the disk's Partitions.  The calls are kept as lines, as test-live
 * keeps them.
 */

#define LOOP0_PATH "/org/blkmodel1/block/loop0"
#define NVME0N1_PATH "/org/blkmodel1/block/nvme0n1"
#define SDA_PATH "/org/blkmodel1/block/sda"

static char **lines;
static size_t n_lines;

static void line(const char *fmt, ...) _printf_(1, 2);
static void line(const char *fmt, ...)
{
        char *s = NULL;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (k < 0 || strv_consume(&lines, &n_lines, s) < 0)
                abort();
}

static void lines_clear(void)
{
        lines = strv_free(lines);
        n_lines = 0;
}

static void op_object(void *userdata, Kobject *k)
{
        line("object %s", k->path);
}

static void op_object_added(void *userdata, Kobject *k, ObjDir *d)
{
        op_object(userdata, k);
}

static void op_interfaces(void *userdata, Kobject *k, char *const *interfaces, bool added, ObjDir *d)
{
        line("interfaces %s", k->path);
}

static void op_properties(void *userdata, Kobject *k, const char *interface, char *const *changed,
                          char *const *invalidated, ObjDir *d)
{
        /* "properties PATH IFACE ,a,b,": each name between commas, to be looked for as ",name,". */
        size_t len = 2;
        char *list, *q;

        for (char *const *c = changed; c && *c; c++)
                len += strlen(*c) + 1;
        q = list = malloc(len);
        if (!list)
                abort();
        q = stpcpy(q, ",");
        for (char *const *c = changed; c && *c; c++)
                q = stpcpy(stpcpy(q, *c), ",");
        line("properties %s %s %s", k->path, interface, list);
        free(list);
}

static void op_event(void *userdata, const EventRecord *e)
{
        line("event %s %s", e->action, e->devpath);
}

static void op_lost(void *userdata, uint64_t total)
{
}

static const LiveOps ops = {
                .object_added = op_object_added,
                .object_removed = op_object,
                .interfaces_changed = op_interfaces,
                .properties_changed = op_properties,
                .event = op_event,
                .events_lost = op_lost,
};

/* Was property (of interface, on path) said to change? */
static bool said(const char *path, const char *interface, const char *property)
{
        _cleanup_(freep) char *head = NULL, *name = NULL;

        if (asprintf(&head, "properties %s %s ", path, interface) < 0 ||
            asprintf(&name, ",%s,", property) < 0)
                abort();
        for (size_t i = 0; i < n_lines; i++) {
                const char *list = startswith(lines[i], head);
                if (list && strstr(list, name))
                        return true;
        }
        return false;
}

/* Where a line was kept, exactly as given; -1 if it was not (the lines are then printed). */
static ssize_t line_at(const char *expected)
{
        for (size_t i = 0; i < n_lines; i++)
                if (streq(lines[i], expected))
                        return (ssize_t) i;
        fprintf(stderr, "  no line \"%s\" in:\n", expected);
        for (size_t i = 0; i < n_lines; i++)
                fprintf(stderr, "    %s\n", lines[i]);
        return -1;
}

/* How many lines of properties of path were kept. */
static size_t properties_of(const char *path)
{
        _cleanup_(freep) char *head = NULL;
        size_t n = 0;

        if (asprintf(&head, "properties %s ", path) < 0)
                abort();
        for (size_t i = 0; i < n_lines; i++)
                n += !!startswith(lines[i], head);
        return n;
}

typedef struct Instance {
        Sysfs sysfs;
        Model *model;
        EventLog *log;
        Live *live;
        uv_loop_t *loop;
} Instance;

/* A live layer on a fresh scan of the tree, not started. */
static bool instance_new(Instance *in, const Fixture *f, uv_loop_t *loop)
{
        *in = (Instance){.sysfs = {.root_fd = -1}, .loop = loop};
        CHECK(sysfs_open(f->root, &in->sysfs) == 0);
        CHECK(model_new(&in->model) == 0);
        CHECK(eventlog_new(16, 1, &in->log) == 0);
        if (in->sysfs.root_fd < 0 || !in->model || !in->log)
                return false;
        LiveConfig c = {.loop = loop,
                        .sysfs = &in->sysfs,
                        .model = in->model,
                        .events = in->log,
                        .ops = &ops};
        CHECK(live_new(&c, &in->live) == 0);
        CHECK(in->live && scan_all(&in->sysfs, in->model) > 0);
        lines_clear();
        return in->live;
}

static void settle(uv_loop_t *loop)
{
        while (uv_loop_alive(loop))
                (void) uv_run(loop, UV_RUN_NOWAIT);
}

static void instance_free(Instance *in)
{
        /* Live goes with its close callbacks: the loop runs before the model goes. */
        live_free(in->live);
        settle(in->loop);
        model_free(in->model);
        eventlog_free(in->log);
        sysfs_close(&in->sysfs);
        lines_clear();
}

static void feed(Instance *in, const char *action, const char *devpath)
{
        char buf[512];
        int n = snprintf(buf, sizeof(buf), "%s@%s%cACTION=%s%cDEVPATH=%s%cSUBSYSTEM=block%cSEQNUM=1", action,
                         devpath, 0, action, 0, devpath, 0, 0);
        Uevent *u = NULL;

        if (n < 0 || (size_t) n >= sizeof(buf) || uevent_parse(buf, (size_t) n + 1, &u) < 0)
                abort();
        live_on_uevent(NULL, u, in->live);
        settle(in->loop);
}

/* A client reads an object, as a Get, GetAll or GetManagedObjects does. */
static void client_reads(Instance *in, const char *devpath)
{
        Kobject *k = model_find_devpath(in->model, devpath);
        ObjDir d = OBJDIR_INIT(&in->sysfs, k);

        live_record_reading(in->live, k, &d);
        objdir_done(&d);
}

/* A rescan before the warm-up has read an object: a change made without an event since a client read
 * it is told, with an event as any difference a rescan finds; of an object no client has read nothing
 * is told, as nobody holds a value of it (the reading is kept, for the next change). */
static void test_rescan_before_the_warm_up(const Fixture *f, uv_loop_t *loop)
{
        Instance in;

        if (!instance_new(&in, f, loop))
                goto out;
        CHECK(live_start(in.live) == 0);
        client_reads(&in, FIXTURE_NVME0N1);
        CHECK(fixture_write(f, FIXTURE_NVME0N1 "/size", "42\n") == 0);
        CHECK(fixture_write(f, FIXTURE_SDA "/size", "42\n") == 0);
        CHECK(live_rescan(in.live) == 1);
        CHECK(n_lines == 2);
        CHECK(said(NVME0N1_PATH, "org.blkmodel1.Disk", "Size"));
        CHECK(n_lines == 2 && streq(lines[1], "event change " FIXTURE_NVME0N1));
        CHECK(live_object_value_bytes(model_find_devpath(in.model, FIXTURE_SDA)) > 0);
out:
        instance_free(&in);
}

/* Readings taken before the start (a rescan there, events drained before the name) are no baseline:
 * a value read by the clients at the name that later goes back is told. */
static void test_readings_before_the_start(const Fixture *f, uv_loop_t *loop)
{
        Instance in;

        if (!instance_new(&in, f, loop))
                goto out;
        CHECK(live_rescan(in.live) == 0);
        CHECK(fixture_write(f, FIXTURE_LOOP0 "/ro", "1\n") == 0);
        CHECK(live_start(in.live) == 0);
        settle(loop);
        /* What the clients read at the name is 1; it goes back to 0. */
        CHECK(fixture_write(f, FIXTURE_LOOP0 "/ro", "0\n") == 0);
        CHECK(live_rescan(in.live) == 1);
        CHECK(said(LOOP0_PATH, "org.blkmodel1.Disk", "ReadOnly"));
        CHECK(said(LOOP0_PATH, "org.blkmodel1.Disk", "ro"));
        lines_clear();

        /* And what they read at the name is not told again. */
        CHECK(live_rescan(in.live) == 0);
        CHECK(n_lines == 0);
out:
        instance_free(&in);
}

/* While a client reads the whole model the warm-up waits, and goes on when the last reading is done:
 * a rescan tells the values of objects never read, and nothing once the warm-up has read them. */
static void test_warm_up_waits_for_a_reading(const Fixture *f, uv_loop_t *loop)
{
        Instance in;

        if (!instance_new(&in, f, loop))
                goto out;
        live_warmup_hold(in.live);
        live_warmup_hold(in.live);
        CHECK(live_start(in.live) == 0);
        settle(loop);
        live_warmup_release(in.live);
        settle(loop);
        CHECK(live_object_value_bytes(model_find_devpath(in.model, FIXTURE_SDA)) == 0);
        CHECK(live_rescan(in.live) == 0);
        lines_clear();

        /* Everything read now: the next hold and release change nothing. */
        live_warmup_release(in.live);
        settle(loop);
        CHECK(live_rescan(in.live) == 0);
        CHECK(n_lines == 0);
out:
        instance_free(&in);
}

/* Gone before its remove event: its files read as nothing, which no value changed to.  Nothing is
 * said to change; its removal tells it. */
static void test_gone_before_its_remove(const Fixture *f, uv_loop_t *loop)
{
        Instance in;

        if (!instance_new(&in, f, loop))
                goto out;
        CHECK(live_start(in.live) == 0);
        settle(loop);
        lines_clear();
        CHECK(fixture_remove(f, FIXTURE_SDA) == 0);
        feed(&in, "change", FIXTURE_SDA);
        CHECK(!said(SDA_PATH, "org.blkmodel1.Disk", "Size"));
        CHECK(!said(SDA_PATH, "org.blkmodel1.Disk", "size"));
        for (size_t i = 0; i < n_lines; i++)
                CHECK(!startswith(lines[i], "properties "));
out:
        instance_free(&in);
}

/*
 * A disk torn down (an NVMe namespace detached, a USB disk pulled): the kernel removes each partition
 * and then the disk, each directory just after its remove event, so a partition's remove read late
 * finds its disk's directory gone as well.  The disk's Partitions comes from the model, not from its
 * files: it is told as when the directory is still there, between the partition's removal and its
 * Uevent, and no client holds a partition that went; its files, read as nothing, tell nothing.
 */
static void test_partitions_removed_after_their_disk_went(const Fixture *f, uv_loop_t *loop)
{
        static const char *const told = "properties " NVME0N1_PATH " org.blkmodel1.Disk ,Partitions,";
        Instance in;
        ssize_t gone, changed, event;

        if (!instance_new(&in, f, loop))
                goto out;
        CHECK(live_start(in.live) == 0);
        settle(loop);
        CHECK(fixture_remove_block_device(f, FIXTURE_NVME0N1 "/nvme0n1p1", 259, 1) == 0);
        CHECK(fixture_remove_block_device(f, FIXTURE_NVME0N1 "/nvme0n1p2", 259, 2) == 0);
        CHECK(fixture_remove_block_device(f, FIXTURE_NVME0N1, 259, 0) == 0);
        for (unsigned p = 1; p <= 2; p++) {
                _cleanup_(freep) char *devpath = NULL, *object = NULL, *uevent = NULL;

                if (asprintf(&devpath, FIXTURE_NVME0N1 "/nvme0n1p%u", p) < 0 ||
                    asprintf(&object, "object " NVME0N1_PATH "/nvme0n1p%u", p) < 0 ||
                    asprintf(&uevent, "event remove %s", devpath) < 0)
                        abort();
                lines_clear();
                feed(&in, "remove", devpath);
                gone = line_at(object);
                changed = line_at(told);
                event = line_at(uevent);
                CHECK(gone >= 0 && changed > gone && event > changed);
                CHECK(properties_of(NVME0N1_PATH) == 1);
        }
        lines_clear();
        feed(&in, "remove", FIXTURE_NVME0N1);
        CHECK(line_at("object " NVME0N1_PATH) >= 0);
        CHECK(properties_of(NVME0N1_PATH) == 0);
out:
        instance_free(&in);
}

int main(void)
{
        Fixture f = {};
        uv_loop_t loop;

        CHECK(fixture_new(&f) == 0);
        CHECK(uv_loop_init(&loop) == 0);
        if (f.root) {
                test_rescan_before_the_warm_up(&f, &loop);
                test_readings_before_the_start(&f, &loop);
                test_warm_up_waits_for_a_reading(&f, &loop);
                /* It takes nvme0n1 away. */
                test_partitions_removed_after_their_disk_went(&f, &loop);
                /* Last: it takes sda away. */
                test_gone_before_its_remove(&f, &loop);
        }
        CHECK(uv_loop_close(&loop) == 0);
        fixture_done(&f);
        return tests_summary();
}
