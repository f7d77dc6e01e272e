/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <unistd.h>
#include <uv.h>

#include "common/util.h"
#include "fail-read.h"
#include "fixture.h"
#include "live/live.h"
#include "sysfs/scan.h"
#include "tests.h"

/*
 * The live layer alone: sysfs changed as the kernel would change it, the uevent handed in as the
 * source would hand it, and a LiveOps table that writes down every call it gets.  Each call is one
 * line, so that a test says exactly which calls, with what, in which order.
 */

typedef struct Recorder {
        char **lines;
        size_t n;
        Model *model;
        uint64_t last_seqnum;
        bool consistent;     /* every call saw the model as the LiveOps comments promise */
        Live *hold_at_event; /* held at the next event, as the manager's back-pressure does */
} Recorder;

static Recorder rec = {.consistent = true};

/* What the publisher does with an announcement's ObjDir: every attribute of the interfaces it names
 * (NULL: all) read through it, as InterfacesAdded sends them. */
static void read_as_published(Kobject *k, ObjDir *d, char *const *interfaces)
{
        const char *value;
        Iface iface;

        if (!d)
                return;
        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                bool named = !interfaces;
                for (char *const *n = interfaces; n && *n && !named; n++)
                        named = streq(*n, iface.name);
                for (size_t j = 0; named && iface.attrs && j < iface.attrs->n_attrs; j++)
                        (void) objdir_read_attr(d, &iface, &iface.attrs->attrs[j], &value);
        }
}

static void record(const char *fmt, ...) _printf_(1, 2);
static void record(const char *fmt, ...)
{
        _cleanup_(freep) char *line = NULL;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&line, fmt, ap);
        va_end(ap);
        if (k < 0 || strv_extend(&rec.lines, &rec.n, line) < 0)
                abort();
}

static char *join(char *const *l)
{
        size_t len = 1;
        char *s, *q;

        for (char *const *p = l; p && *p; p++)
                len += strlen(*p) + 1;
        s = q = malloc(len);
        if (!s)
                abort();
        *q = 0;
        for (char *const *p = l; p && *p; p++)
                q = stpcpy(stpcpy(q, p == l ? "" : ","), *p);
        return s;
}

static void op_object_added(void *userdata, Kobject *k, ObjDir *d)
{
        read_as_published(k, d, NULL);
        if (!k->linked || model_find_path(rec.model, k->path) != k)
                rec.consistent = false;
        record("added %s", k->path);
}

static void op_object_removed(void *userdata, Kobject *k)
{
        /* About to leave; what was below it has left already. */
        if (!k->linked || k->first_child)
                rec.consistent = false;
        record("removed %s", k->path);
}

static void op_interfaces_changed(void *userdata, Kobject *k, char *const *interfaces, bool added, ObjDir *d)
{
        if (added)
                read_as_published(k, d, interfaces);
        _cleanup_(freep) char *names = join(interfaces);
        record("interfaces %s %s %s", k->path, added ? "added" : "removed", names);
}

static void op_properties_changed(void *userdata, Kobject *k, const char *interface, char *const *changed,
                                  char *const *invalidated, ObjDir *d)
{
        _cleanup_(freep) char *c = join(changed), *i = join(invalidated);

        if (!k->linked)
                rec.consistent = false;
        record("properties %s %s changed=%s invalidated=%s", k->path, interface, c, i);
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
        /* Logged first, numbered without gaps, and carrying what it says. */
        if (e->seqnum != rec.last_seqnum + 1 || !streq_ptr(env_get(e, "ACTION"), e->action) ||
            !streq_ptr(env_get(e, "DEVPATH"), e->devpath) || !streq_ptr(env_get(e, "SUBSYSTEM"), "block"))
                rec.consistent = false;
        rec.last_seqnum = e->seqnum;
        record("event %s %s %s%s", e->action, e->devpath, e->object_path,
               streq_ptr(env_get(e, "BLKMODEL_SYNTHESIZED"), "1") ? " synthesized" : "");
        if (rec.hold_at_event)
                live_hold(TAKE_PTR(rec.hold_at_event), true);
}

static void op_events_lost(void *userdata, uint64_t total)
{
        record("lost %" PRIu64, total);
}

/* The socket: uevents the kernel has sent and the daemon not read yet, handed over when asked. */
static struct {
        Live *live;
        Uevent *unread[4];
        size_t n;
} sock;

static void op_read_uevents(void *userdata)
{
        for (size_t i = 0; i < sock.n; i++)
                live_on_uevent(NULL, TAKE_PTR(sock.unread[i]), sock.live);
        sock.n = 0;
}

static const LiveOps recording_ops = {
                .object_added = op_object_added,
                .object_removed = op_object_removed,
                .interfaces_changed = op_interfaces_changed,
                .properties_changed = op_properties_changed,
                .event = op_event,
                .events_lost = op_events_lost,
                .read_uevents = op_read_uevents,
};

static void recorded_clear(void)
{
        rec.lines = strv_free(rec.lines);
        rec.n = 0;
}

/* Were exactly these calls made, in this order?  Forgets them either way. */
static bool recorded(const char *const *expected)
{
        size_t n = 0, i = 0;
        bool same;

        while (expected[n])
                n++;
        if (n == rec.n)
                while (i < n && streq(expected[i], rec.lines[i]))
                        i++;
        same = n == rec.n && i == n;
        if (!same) {
                fprintf(stderr, "  calls:\n");
                for (size_t j = 0; j < rec.n; j++)
                        fprintf(stderr, "    %s\n", rec.lines[j]);
                fprintf(stderr, "  expected:\n");
                for (size_t j = 0; j < n; j++)
                        fprintf(stderr, "    %s\n", expected[j]);
        }
        recorded_clear();
        return same;
}

/* ---- uevents in the kernel's wire format ---- */

static void put(char *buf, size_t *n, const char *fmt, ...) _printf_(3, 4);
static void put(char *buf, size_t *n, const char *fmt, ...)
{
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vsnprintf(buf + *n, 8192 - *n, fmt, ap);
        va_end(ap);
        if (k < 0 || (size_t) k >= 8192 - *n)
                abort();
        *n += (size_t) k + 1; /* the NUL is the separator */
}

/* "ACTION@DEVPATH\0ACTION=…\0DEVPATH=…\0SUBSYSTEM=…\0SEQNUM=…\0" plus extra "KEY=value" entries. */
static Uevent *uevent(const char *action, const char *devpath, const char *subsystem,
                      const char *const *extra)
{
        static unsigned seqnum = 1000;
        char buf[8192];
        size_t n = 0;
        Uevent *u = NULL;

        put(buf, &n, "%s@%s", action, devpath);
        put(buf, &n, "ACTION=%s", action);
        put(buf, &n, "DEVPATH=%s", devpath);
        if (subsystem)
                put(buf, &n, "SUBSYSTEM=%s", subsystem);
        put(buf, &n, "SEQNUM=%u", ++seqnum);
        for (; extra && *extra; extra++)
                put(buf, &n, "%s", *extra);
        if (uevent_parse(buf, n, &u) < 0)
                abort(); /* a test bug: every datagram here is well-formed */
        return u;
}

/* The loop the Live runs on: change events are read at the end of the loop iteration they came in. */
static uv_loop_t *test_loop;

static void run_until_applied(Live *l)
{
        do
                (void) uv_run(test_loop, UV_RUN_NOWAIT);
        while (live_events_applied(l) < live_events_queued(l));
}

static void feed(Live *l, const char *action, const char *devpath, const char *subsystem,
                 const char *const *extra)
{
        /* As the source calls it: the handler owns the event; then the loop turns until what it
         * queued is applied (a slice a turn: on a busy machine, one event may fill a slice). */
        live_on_uevent(NULL, uevent(action, devpath, subsystem, extra), l);
        run_until_applied(l);
}

/* ---- the fixture's names ---- */

#define BLOCK "/org/blkmodel1/block"
#define DEVICES "/org/blkmodel1/devices"
#define SDA_PATH BLOCK "/sda"
#define SR0_PATH BLOCK "/sr0"
#define CCISS_PATH BLOCK "/cciss_21c0d0"
#define LOOP0_PATH BLOCK "/loop0"
#define KSET_BLOCK_MEMBERS "properties " BLOCK " org.blkmodel1.Kset changed= invalidated=Members"
#define KSET_DEVICES_MEMBERS "properties " DEVICES " org.blkmodel1.Kset changed= invalidated=Members"
#define VDY "/devices/virtual/block/vdy"
#define VDZ "/devices/virtual/block/vdz"
#define VDW "/devices/virtual/block/vdw"

static void run_loop(uv_loop_t *loop)
{
        for (int i = 0; i < 4; i++)
                (void) uv_run(loop, UV_RUN_NOWAIT);
}

static bool all_recorded(const Model *m)
{
        for (Kobject *k = m->block_kset->first_member; k; k = k->next_member)
                if (live_object_value_bytes(k) == 0)
                        return false;
        return true;
}

/* Writes sda's size and feeds its change event: were the event and exactly Size and size told? */
static bool sda_size_change_told(const Fixture *f, Live *l, const char *value)
{
        if (fixture_write(f, FIXTURE_SDA "/size", value) < 0)
                return false;
        feed(l, "change", FIXTURE_SDA, "block", NULL);
        return recorded((const char *const[]){
                        "properties " SDA_PATH " org.blkmodel1.Disk changed=Size,size invalidated=",
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        NULL,
        });
}

/* A client reads k and what is below it, as GetManagedObjects does. */
static void client_reads(Live *l, const Sysfs *s, Kobject *k)
{
        ObjDir d = OBJDIR_INIT(s, k);

        for (Kobject *c = k->first_child; c; c = c->next_sibling)
                client_reads(l, s, c);
        live_record_reading(l, k, &d);
        objdir_done(&d);
}

/* What a client was sent (a GetManagedObjects, while the warm-up waits for it) is an object's first
 * reading: a change from it is announced alone, not as a change of everything. */
static void test_client_reading(Live *l, const Fixture *f, Model *m, const Sysfs *s)
{
        Kobject *sda = model_find_name(m, "sda");
        _cleanup_(freep) char *was = NULL;
        ObjDir d;
        const char *v;

        CHECK(sda && live_object_value_bytes(sda) == 0);
        if (!sda)
                return;
        live_warmup_hold(l);
        /* The disk's value as the client got it, read before the file changes. */
        d = OBJDIR_INIT(s, sda);
        CHECK(objdir_read(&d, "size", &v) == 0);
        CHECK(asprintf(&was, "%s\n", v) > 0);
        for (Kobject *c = sda->first_child; c; c = c->next_sibling)
                client_reads(l, s, c);
        live_record_reading(l, sda, &d);
        objdir_done(&d);
        CHECK(live_object_value_bytes(sda) > 0);

        CHECK(sda_size_change_told(f, l, "1953525000\n"));
        CHECK(sda_size_change_told(f, l, was));
        live_warmup_release(l);
}

/* A change event that alters nothing re-reads a few values (so does the poll): what the object's
 * size estimate says is still what its last whole reading found.  Adding those values again at
 * every re-reading grew the estimate each poll round, until GetManagedObjects was refused as too
 * large for the bus. */
static bool recorded_line(const char *prefix)
{
        for (size_t i = 0; i < rec.n; i++)
                if (startswith(rec.lines[i], prefix))
                        return true;
        return false;
}

/* A file gone with no event, found by a reply's reading while a GetManagedObjects reply is built (it
 * holds the warm-up): the disk is re-listed once that reply is out, not amid it. */
static void test_relist_after_reply(Live *l, const Fixture *f, Model *m, const Sysfs *s, uv_loop_t *loop)
{
        Kobject *sda = model_find_name(m, "sda");
        const char *v;
        ObjDir d;

        CHECK(sda && live_object_value_bytes(sda) > 0);
        if (!sda)
                return;
        recorded_clear();
        CHECK(fixture_remove(f, FIXTURE_SDA "/ext_range") == 0);
        live_warmup_hold(l);
        d = OBJDIR_INIT(s, sda);
        CHECK(objdir_read(&d, "ext_range", &v) == -ENOENT); /* as the reply read it */
        live_record_reading(l, sda, &d);
        objdir_done(&d);
        run_loop(loop);
        CHECK(rec.n == 0);
        live_warmup_release(l);
        run_loop(loop);
        CHECK(recorded_line("interfaces " SDA_PATH " removed org.blkmodel1.Disk"));
        CHECK(recorded_line("interfaces " SDA_PATH " added org.blkmodel1.Disk"));
        recorded_clear();

        /* Re-listed: a reply reads no gone file any more, and nothing more is told. */
        d = OBJDIR_INIT(s, sda);
        live_record_reading(l, sda, &d);
        objdir_done(&d);
        run_loop(loop);
        CHECK(rec.n == 0);
}

static void test_estimate_steady(Live *l, Model *m)
{
        Kobject *sda = model_find_name(m, "sda");
        size_t was = sda ? live_object_value_bytes(sda) : 0;

        CHECK(was > 0);
        for (int i = 0; i < 3; i++) {
                feed(l, "change", FIXTURE_SDA, "block", NULL);
                CHECK(recorded((const char *const[]){"event change " FIXTURE_SDA " " SDA_PATH, NULL}));
        }
        CHECK(sda && live_object_value_bytes(sda) == was);
}

static void test_uevents(Live *l, const Fixture *f, Model *m, EventLog *log)
{
        uint64_t seq;

        /* A new partition: the partition whole, then what changed because of it, then the event. */
        CHECK(fixture_add_partition(f, FIXTURE_SDA, "sda4", 8, 4, 4, 218103808, 2048) == 0);
        feed(l, "add", FIXTURE_SDA "/sda4", "block",
             (const char *const[]){"MAJOR=8", "MINOR=4", "DEVNAME=sda4", "DEVTYPE=partition", "PARTN=4",
                                   NULL});
        CHECK(recorded((const char *const[]){
                        "added " SDA_PATH "/sda4",
                        KSET_BLOCK_MEMBERS,
                        "properties " SDA_PATH " org.blkmodel1.Disk changed=Partitions invalidated=",
                        "event add " FIXTURE_SDA "/sda4 " SDA_PATH "/sda4",
                        NULL,
        }));
        CHECK(model_find_name(m, "sda4") != NULL);
        CHECK(eventlog_last_seqnum(log) == rec.last_seqnum);
        /* The new partition has a first reading, so that its first change can be told. */
        CHECK(model_find_name(m, "sda4") && live_object_value_bytes(model_find_name(m, "sda4")) > 0);

        /* An add for what the model has already (the scan saw it first): only the event. */
        feed(l, "add", FIXTURE_SDA "/sda4", "block", NULL);
        CHECK(recorded((const char *const[]){"event add " FIXTURE_SDA "/sda4 " SDA_PATH "/sda4", NULL}));

        /* A size change: exactly the typed Size and the raw size, on the disk's own interface. */
        CHECK(fixture_write(f, FIXTURE_SDA "/size", "1953525168\n") == 0);
        feed(l, "change", FIXTURE_SDA, "block", (const char *const[]){"DISK_MEDIA_CHANGE=1", NULL});
        CHECK(recorded((const char *const[]){
                        "properties " SDA_PATH " org.blkmodel1.Disk changed=Size,size invalidated=",
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        NULL,
        }));
        /* A change that changed nothing: only the event. */
        feed(l, "change", FIXTURE_SDA, "block", NULL);
        CHECK(recorded((const char *const[]){"event change " FIXTURE_SDA " " SDA_PATH, NULL}));

        /* A synthetic change (udevadm trigger: the kernel adds SYNTH_UUID) changed nothing in sysfs:
         * it costs no reading, only its event.  What really changed comes with its own event. */
        CHECK(fixture_write(f, FIXTURE_SDA "/size", "1953525000\n") == 0);
        feed(l, "change", FIXTURE_SDA, "block", (const char *const[]){"SYNTH_UUID=0", NULL});
        CHECK(recorded((const char *const[]){"event change " FIXTURE_SDA " " SDA_PATH, NULL}));
        feed(l, "add", FIXTURE_SDA, "block", (const char *const[]){"SYNTH_UUID=0", NULL});
        CHECK(recorded((const char *const[]){"event add " FIXTURE_SDA " " SDA_PATH, NULL}));
        CHECK(fixture_write(f, FIXTURE_SDA "/size", "1953525168\n") == 0);

        /* A burst of changes of one object in one loop iteration: every event, one reading. */
        CHECK(fixture_write(f, FIXTURE_SDA "/size", "1953525000\n") == 0);
        for (int i = 0; i < 3; i++)
                live_on_uevent(NULL, uevent("change", FIXTURE_SDA, "block", NULL), l);
        /* Queued: nothing yet, then the reading and the three events. */
        CHECK(rec.n == 0);
        run_until_applied(l);
        CHECK(recorded((const char *const[]){
                        "properties " SDA_PATH " org.blkmodel1.Disk changed=Size,size invalidated=",
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        NULL,
        }));
        CHECK(sda_size_change_told(f, l, "1953525168\n"));

        /* Held by the bus's back-pressure at the first event's signal: the rest of the burst waits,
         * also in the slice that told it, until let go. */
        CHECK(fixture_write(f, FIXTURE_SDA "/size", "1953525000\n") == 0);
        for (int i = 0; i < 3; i++)
                live_on_uevent(NULL, uevent("change", FIXTURE_SDA, "block", NULL), l);
        rec.hold_at_event = l;
        for (int i = 0; i < 50; i++)
                (void) uv_run(test_loop, UV_RUN_NOWAIT);
        CHECK(recorded((const char *const[]){
                        "properties " SDA_PATH " org.blkmodel1.Disk changed=Size,size invalidated=",
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        NULL,
        }));
        live_hold(l, false);
        run_until_applied(l);
        CHECK(recorded((const char *const[]){
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        NULL,
        }));
        CHECK(sda_size_change_told(f, l, "1953525168\n"));

        /* The partition goes: it leaves, its disk says so, and the event names the object it was. */
        CHECK(fixture_remove_block_device(f, FIXTURE_SDA "/sda4", 8, 4) == 0);
        feed(l, "remove", FIXTURE_SDA "/sda4", "block", NULL);
        CHECK(recorded((const char *const[]){
                        "removed " SDA_PATH "/sda4",
                        KSET_BLOCK_MEMBERS,
                        "properties " SDA_PATH " org.blkmodel1.Disk changed=Partitions invalidated=",
                        "event remove " FIXTURE_SDA "/sda4 " SDA_PATH "/sda4",
                        NULL,
        }));
        CHECK(model_find_name(m, "sda4") == NULL);

        /* A remove for what the model never had: the event alone, about no object. */
        feed(l, "remove", FIXTURE_SDA "/sda4", "block", NULL);
        CHECK(recorded((const char *const[]){"event remove " FIXTURE_SDA "/sda4 /", NULL}));

        /* Not a block device: no call at all, nothing logged. */
        seq = eventlog_last_seqnum(log);
        feed(l, "add", "/devices/virtual/net/lo", "net", NULL);
        feed(l, "change", FIXTURE_SDA, "scsi_disk", NULL);
        feed(l, "change", FIXTURE_SDA, NULL, NULL);
        CHECK(rec.n == 0);
        recorded_clear();
        CHECK(eventlog_last_seqnum(log) == seq);

        /* A whole disk goes: everything below it first, then the disk, then the hardware only it sat
         * on, each after what sat on it; the ksets' members once each; the event last.  The disk is
         * held meanwhile, as a round of the poll or a queue of changes would: its hardware goes with
         * it all the same (it stayed published until the holder let go). */
        Kobject *sr0 = kobject_ref(model_find_devpath(m, FIXTURE_SR0));
        CHECK(fixture_remove_block_device(f, FIXTURE_SR0, 11, 0) == 0);
        feed(l, "remove", FIXTURE_SR0, "block", NULL);
        CHECK(recorded((const char *const[]){
                        "removed " SR0_PATH "/queue/iosched",
                        "removed " SR0_PATH "/queue",
                        "removed " SR0_PATH,
                        "removed " DEVICES
                        "/pci0000_3a00/_30000_3a00_3a1f_2e2/ata2/host1/target1_3a0_3a0/_31_3a0_3a0_3a0",
                        "removed " DEVICES "/pci0000_3a00/_30000_3a00_3a1f_2e2/ata2/host1/target1_3a0_3a0",
                        "removed " DEVICES "/pci0000_3a00/_30000_3a00_3a1f_2e2/ata2/host1",
                        "removed " DEVICES "/pci0000_3a00/_30000_3a00_3a1f_2e2/ata2",
                        KSET_BLOCK_MEMBERS,
                        KSET_DEVICES_MEMBERS,
                        "event remove " FIXTURE_SR0 " " SR0_PATH,
                        NULL,
        }));
        CHECK(model_find_devpath(m, FIXTURE_SR0_LUN) == NULL);
        CHECK(model_find_devpath(m, FIXTURE_AHCI) != NULL); /* sda still sits on it */
        kobject_unref(m, sr0);
        (void) uv_run(test_loop, UV_RUN_NOWAIT);
        CHECK(rec.n == 0);

        /* A change for a disk whose add was lost: it comes whole, then the event. */
        CHECK(fixture_add_disk(f, VDY, 252, 16, 4096) == 0);
        feed(l, "change", VDY, "block", NULL);
        CHECK(recorded((const char *const[]){
                        "added " BLOCK "/vdy",
                        "added " BLOCK "/vdy/queue",
                        KSET_BLOCK_MEMBERS,
                        "event change " VDY " " BLOCK "/vdy",
                        NULL,
        }));

        /* A partition whose disk is unknown brings its disk along, with every partition. */
        CHECK(fixture_remove_block_device(f, VDY, 252, 16) == 0);
        feed(l, "remove", VDY, "block", NULL);
        recorded_clear();
        CHECK(fixture_add_disk(f, VDY, 252, 16, 4096) == 0);
        CHECK(fixture_add_partition(f, VDY, "vdy1", 252, 17, 1, 2048, 1024) == 0);
        CHECK(fixture_add_partition(f, VDY, "vdy2", 252, 18, 2, 3072, 1024) == 0);
        feed(l, "add", VDY "/vdy2", "block", NULL);
        CHECK(rec.n == 6);
        if (rec.n == 6) {
                CHECK_STREQ(rec.lines[0], "added " BLOCK "/vdy");
                /* Its children, in link order. */
                CHECK(streq(rec.lines[1], "added " BLOCK "/vdy/queue") ||
                      startswith(rec.lines[1], "added " BLOCK "/vdy/vdy"));
                CHECK(startswith(rec.lines[2], "added " BLOCK "/vdy/"));
                CHECK(startswith(rec.lines[3], "added " BLOCK "/vdy/"));
                CHECK_STREQ(rec.lines[4], KSET_BLOCK_MEMBERS);
                CHECK_STREQ(rec.lines[5], "event add " VDY "/vdy2 " BLOCK "/vdy/vdy2");
        }
        recorded_clear();
        CHECK(model_find_name(m, "vdy1") != NULL);
}

/* What a change event finds in the directory: groups and attribute files that came or went. */
/* Opens of name in directory rel of the fixture while fn runs (inotify). */
static int opens_during(const Fixture *f, const char *rel, const char *name, void (*fn)(Live *l, const Fixture *f),
                        Live *l)
{
        _cleanup_(freep) char *dir = path_join(f->root, rel);
        _Alignas(struct inotify_event) char buf[4096];
        int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), n = 0;
        ssize_t k;

        CHECK(fd >= 0);
        if (fd < 0)
                return -1;
        CHECK(inotify_add_watch(fd, dir, IN_OPEN) >= 0);
        fn(l, f);
        while ((k = read(fd, buf, sizeof(buf))) > 0)
                for (char *p = buf; p < buf + k;) {
                        const struct inotify_event *e = (const struct inotify_event *) p;
                        n += e->len > 0 && streq(e->name, name);
                        p += sizeof(*e) + e->len;
                }
        close(fd);
        return n;
}

static void add_sda9(Live *l, const Fixture *f)
{
        feed(l, "add", FIXTURE_SDA "/sda9", "block",
             (const char *const[]){"MAJOR=8", "MINOR=9", "DEVNAME=sda9", "DEVTYPE=partition", "PARTN=9", NULL});
}

static void change_sda(Live *l, const Fixture *f)
{
        feed(l, "change", FIXTURE_SDA, "block", NULL);
}

/* One reading serves the change record and the signal that sends the values: an added partition, or
 * a disk whose directory gained a group, has each file opened once. */
static void test_read_once(Live *l, const Fixture *f)
{
        CHECK(fixture_add_partition(f, FIXTURE_SDA, "sda9", 8, 9, 9, 218112000, 2048) == 0);
        CHECK(opens_during(f, FIXTURE_SDA "/sda9", "size", add_sda9, l) == 1);
        CHECK(fixture_mkdir(f, FIXTURE_SDA "/integrity") == 0);
        CHECK(fixture_write(f, FIXTURE_SDA "/integrity/format", "none\n") == 0);
        CHECK(opens_during(f, FIXTURE_SDA, "size", change_sda, l) == 1);
        CHECK(opens_during(f, FIXTURE_SDA "/integrity", "format", change_sda, l) == 1);
        recorded_clear();

        CHECK(fixture_remove(f, FIXTURE_SDA "/integrity") == 0);
        change_sda(l, f);
        CHECK(fixture_remove_block_device(f, FIXTURE_SDA "/sda9", 8, 9) == 0);
        feed(l, "remove", FIXTURE_SDA "/sda9", "block", NULL);
        CHECK(model_find_name(rec.model, "sda9") == NULL);
        recorded_clear();
}

static void test_shape_changes(Live *l, const Fixture *f)
{
        /* A new group: its interface comes, nothing else is said. */
        CHECK(fixture_mkdir(f, FIXTURE_SDA "/integrity") == 0);
        CHECK(fixture_write(f, FIXTURE_SDA "/integrity/format", "none\n") == 0);
        feed(l, "change", FIXTURE_SDA, "block", NULL);
        CHECK(recorded((const char *const[]){
                        "interfaces " SDA_PATH " added org.blkmodel1.Group.integrity",
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        NULL,
        }));

        /* A value in it changes: on that interface alone. */
        CHECK(fixture_write(f, FIXTURE_SDA "/integrity/format", "T10-DIF-TYPE1-CRC\n") == 0);
        feed(l, "change", FIXTURE_SDA, "block", NULL);
        CHECK(recorded((const char *const[]){
                        "properties " SDA_PATH " org.blkmodel1.Group.integrity changed=format invalidated=",
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        NULL,
        }));

        /* A new attribute file: D-Bus has no way to add one property, so the interface goes and comes. */
        CHECK(fixture_write(f, FIXTURE_SDA "/new_attr", "1\n") == 0);
        feed(l, "change", FIXTURE_SDA, "block", NULL);
        CHECK(recorded((const char *const[]){
                        "interfaces " SDA_PATH " removed org.blkmodel1.Disk",
                        "interfaces " SDA_PATH " added org.blkmodel1.Disk",
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        NULL,
        }));

        /* The group goes: its interface goes. */
        CHECK(fixture_remove(f, FIXTURE_SDA "/integrity") == 0);
        feed(l, "change", FIXTURE_SDA, "block", NULL);
        CHECK(recorded((const char *const[]){
                        "interfaces " SDA_PATH " removed org.blkmodel1.Group.integrity",
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        NULL,
        }));
}

/* A scheduler written through us: what the kernel stored is announced, and the kernel's new iosched
 * directory is a new kobject even under the same name. */
static void test_scheduler_write(Live *l, const Fixture *f, Model *m)
{
        Kobject *q = model_find_devpath(m, FIXTURE_SDA "/queue"), *before, *after;

        CHECK(q != NULL);
        if (!q)
                return;
        before = kobject_find_child_type(q, KTYPE_ELEVATOR);
        CHECK(before != NULL);
        live_object_before_write(l, q);
        CHECK(rec.n == 0);
        CHECK(fixture_write(f, FIXTURE_SDA "/queue/scheduler", "none mq-deadline kyber [bfq] \n") == 0);
        CHECK(fixture_remove(f, FIXTURE_SDA "/queue/iosched") == 0);
        CHECK(fixture_mkdir(f, FIXTURE_SDA "/queue/iosched") == 0);
        CHECK(fixture_write(f, FIXTURE_SDA "/queue/iosched/low_latency", "1\n") == 0);
        live_object_after_write(l, q);
        /* The new iosched first, then the queue in one signal (Elevator names the same path). */
        CHECK(recorded((const char *const[]){
                        "removed " SDA_PATH "/queue/iosched",
                        "added " SDA_PATH "/queue/iosched",
                        "properties " SDA_PATH
                        "/queue org.blkmodel1.Queue changed=Scheduler,scheduler invalidated=",
                        NULL,
        }));
        after = kobject_find_child_type(q, KTYPE_ELEVATOR);
        CHECK(after != NULL);
        CHECK(after && after->shape && attr_set_find(after->shape->attrs, "low_latency") != NULL);

        /* The same value written again: nothing to say. */
        live_object_before_write(l, q);
        live_object_after_write(l, q);
        CHECK(rec.n == 0);
}

/* A write to an iosched attribute while a change event of its disk waits in the queue, and the scheduler
 * was switched meanwhile (by echo, a udev rule): reading the queued change before the write replaces the
 * iosched object the write is for.  Under ASan, a use of the old object after that is a failure. */
static void test_elevator_write_while_queued(Live *l, const Fixture *f, Model *m)
{
        Kobject *q = model_find_devpath(m, FIXTURE_SDA "/queue"), *e, *now;

        CHECK(q != NULL);
        if (!q)
                return;
        e = kobject_find_child_type(q, KTYPE_ELEVATOR);
        CHECK(e != NULL);
        if (!e)
                return;
        /* Queued: a change event waits for the end of the turn it came in. */
        live_on_uevent(NULL,
                       uevent("change", FIXTURE_SDA, "block", (const char *const[]){"DM_COOKIE=1", NULL}),
                       l);
        CHECK(live_events_applied(l) < live_events_queued(l));
        CHECK(fixture_write(f, FIXTURE_SDA "/queue/scheduler", "none [mq-deadline] kyber bfq \n") == 0);
        CHECK(fixture_remove(f, FIXTURE_SDA "/queue/iosched") == 0);
        CHECK(fixture_mkdir(f, FIXTURE_SDA "/queue/iosched") == 0);
        CHECK(fixture_write(f, FIXTURE_SDA "/queue/iosched/read_expire", "500\n") == 0);
        live_object_before_write(l, e); /* e may be gone after this */
        now = kobject_find_child_type(q, KTYPE_ELEVATOR);
        CHECK(now != NULL);
        CHECK(now && now->shape && attr_set_find(now->shape->attrs, "read_expire") != NULL);
        run_until_applied(l);
        recorded_clear();
}

/* A change of sda that reads it whole, with its queue and iosched (keys beyond a plain change's). */
static void feed_whole_change(Live *l)
{
        feed(l, "change", FIXTURE_SDA, "block", (const char *const[]){"DM_COOKIE=1", NULL});
}

/*
 * The iosched object is the one the queue's reading of its scheduler file says there is, whenever the
 * directory was listed.  A scheduler switch is no one step: the kernel changes what `scheduler` says,
 * then removes the old iosched directory and adds the new one (elv_change_done()), so a reading can
 * find the file and the directory of two different moments.  The next reading of the queue must put
 * the object right, even when the file reads as before (test-uevents.py's switcher: Elevator left
 * naming a removed iosched under Scheduler "none").
 */
static void test_elevator_follows_scheduler(Live *l, const Fixture *f, Model *m, const Sysfs *s)
{
        Kobject *q = model_find_devpath(m, FIXTURE_SDA "/queue"), *e;
        ObjDir d;
        const char *v;

        CHECK(q != NULL);
        if (!q)
                return;
        CHECK(kobject_find_child_type(q, KTYPE_ELEVATOR) != NULL);
        recorded_clear();

        /* A reply read "none"; the kernel switched to bfq before its reading was recorded: the
         * scheduler switch it tells finds bfq's iosched, which is the kernel's. */
        CHECK(fixture_write(f, FIXTURE_SDA "/queue/scheduler", "[none] mq-deadline kyber bfq \n") == 0);
        CHECK(fixture_remove(f, FIXTURE_SDA "/queue/iosched") == 0);
        d = OBJDIR_INIT(s, q);
        CHECK(objdir_read(&d, "scheduler", &v) == 0);
        CHECK(fixture_write(f, FIXTURE_SDA "/queue/scheduler", "none mq-deadline kyber [bfq] \n") == 0);
        CHECK(fixture_mkdir(f, FIXTURE_SDA "/queue/iosched") == 0);
        CHECK(fixture_write(f, FIXTURE_SDA "/queue/iosched/low_latency", "1\n") == 0);
        live_record_reading(l, q, &d);
        objdir_done(&d);
        CHECK(recorded((const char *const[]){
                        "removed " SDA_PATH "/queue/iosched",
                        "added " SDA_PATH "/queue/iosched",
                        "properties " SDA_PATH
                        "/queue org.blkmodel1.Queue changed=Scheduler,scheduler invalidated=",
                        NULL,
        }));
        /* Switched back to "none", as the record has it: the next change's reading of the queue finds
         * the file as before, and the iosched gone. */
        CHECK(fixture_write(f, FIXTURE_SDA "/queue/scheduler", "[none] mq-deadline kyber bfq \n") == 0);
        CHECK(fixture_remove(f, FIXTURE_SDA "/queue/iosched") == 0);
        feed_whole_change(l);
        CHECK(kobject_find_child_type(q, KTYPE_ELEVATOR) == NULL);
        CHECK(recorded((const char *const[]){
                        "removed " SDA_PATH "/queue/iosched",
                        "properties " SDA_PATH "/queue org.blkmodel1.Queue changed=Elevator invalidated=",
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        NULL,
        }));

        /* The kernel's order: `scheduler` says mq-deadline before its iosched directory is added.  A
         * reading between the two finds no directory; the next one, the file unchanged, adds it. */
        CHECK(fixture_write(f, FIXTURE_SDA "/queue/scheduler", "none [mq-deadline] kyber bfq \n") == 0);
        feed_whole_change(l);
        CHECK(kobject_find_child_type(q, KTYPE_ELEVATOR) == NULL);
        CHECK(recorded((const char *const[]){
                        "properties " SDA_PATH
                        "/queue org.blkmodel1.Queue changed=Scheduler,scheduler invalidated=",
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        NULL,
        }));
        CHECK(fixture_mkdir(f, FIXTURE_SDA "/queue/iosched") == 0);
        CHECK(fixture_write(f, FIXTURE_SDA "/queue/iosched/read_expire", "500\n") == 0);
        feed_whole_change(l);
        e = kobject_find_child_type(q, KTYPE_ELEVATOR);
        CHECK(e && e->shape && attr_set_find(e->shape->attrs, "read_expire") != NULL);
        CHECK(recorded((const char *const[]){
                        "added " SDA_PATH "/queue/iosched",
                        "properties " SDA_PATH "/queue org.blkmodel1.Queue changed=Elevator invalidated=",
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        NULL,
        }));
}

/* A scheduler file that fails to read says nothing of a switch: the iosched stays (it had been
 * removed, and Elevator told "/", on a passing EIO).  The first reading after it reads the iosched
 * anew, as a switch may have come meanwhile. */
static void test_scheduler_unreadable(Live *l, const Fixture *f, Model *m)
{
        Kobject *q = model_find_devpath(m, FIXTURE_SDA "/queue"), *e;

        CHECK(q != NULL);
        if (!q)
                return;
        e = kobject_find_child_type(q, KTYPE_ELEVATOR);
        CHECK(e != NULL);
        recorded_clear();
        fail_reads("/queue/scheduler", EIO);
        feed_whole_change(l);
        fail_reads(NULL, 0);
        CHECK(kobject_find_child_type(q, KTYPE_ELEVATOR) == e);
        CHECK(recorded((const char *const[]){
                        "properties " SDA_PATH
                        "/queue org.blkmodel1.Queue changed=Scheduler,Schedulers,scheduler invalidated=",
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        NULL,
        }));
        feed_whole_change(l);
        e = kobject_find_child_type(q, KTYPE_ELEVATOR);
        CHECK(e && e->shape && attr_set_find(e->shape->attrs, "read_expire") != NULL);
        CHECK(recorded((const char *const[]){
                        "removed " SDA_PATH "/queue/iosched",
                        "added " SDA_PATH "/queue/iosched",
                        "properties " SDA_PATH
                        "/queue org.blkmodel1.Queue changed=Scheduler,Schedulers,scheduler invalidated=",
                        "event change " FIXTURE_SDA " " SDA_PATH,
                        NULL,
        }));
}

/* A rename changes the object path: the old object goes, the new one comes, the event names the new. */
static void test_move(Live *l, const Fixture *f, Model *m)
{
        _cleanup_(freep) char *from = path_join(f->root, VDZ), *to = path_join(f->root, VDW);

        CHECK(from && to && rename(from, to) == 0);
        CHECK(fixture_remove(f, "class/block/vdz") == 0);
        CHECK(fixture_remove(f, "block/vdz") == 0);
        CHECK(fixture_link(f, "class/block/vdw", VDW) == 0);
        CHECK(fixture_link(f, "block/vdw", VDW) == 0);
        CHECK(fixture_link(f, "dev/block/252:32", VDW) == 0);
        feed(l, "move", VDW, "block", (const char *const[]){"DEVPATH_OLD=" VDZ, NULL});
        CHECK(recorded((const char *const[]){
                        "removed " BLOCK "/vdz/queue",
                        "removed " BLOCK "/vdz",
                        "added " BLOCK "/vdw",
                        "added " BLOCK "/vdw/queue",
                        KSET_BLOCK_MEMBERS,
                        "event move " VDW " " BLOCK "/vdw",
                        NULL,
        }));
        CHECK(model_find_name(m, "vdz") == NULL);
        CHECK(model_find_name(m, "vdw") != NULL);
}

/* A move that names as its new devpath what it removes as the old one (root can send anything): the
 * object goes, and nothing refers to it after. */
static void test_move_onto_itself(Live *l, const Fixture *f, Model *m)
{
        CHECK(fixture_remove(f, "class/block/vdw") == 0);
        feed(l, "move", VDW, "block", (const char *const[]){"DEVPATH_OLD=" VDW, NULL});
        CHECK(recorded((const char *const[]){
                        "removed " BLOCK "/vdw/queue",
                        "removed " BLOCK "/vdw",
                        KSET_BLOCK_MEMBERS,
                        "event move " VDW " " BLOCK "/vdw",
                        NULL,
        }));
        CHECK(model_find_name(m, "vdw") == NULL);
}

static void test_rescan(Live *l, const Fixture *f, Model *m, uv_loop_t *loop)
{
        /* Changed behind our back: a partition added, one removed, a size changed, no event for any. */
        CHECK(fixture_add_partition(f, FIXTURE_SDA, "sda5", 8, 5, 5, 218105856, 2048) == 0);
        /* A uevent file naming the keys the daemon sets itself: the event's env stays a map. */
        CHECK(fixture_write(f, FIXTURE_SDA "/sda5/uevent",
                            "MAJOR=8\nMINOR=5\nDEVNAME=sda5\nDEVTYPE=partition\nACTION=bogus\nDISKSEQ=1\n"
                            "DEVPATH=/elsewhere\nSUBSYSTEM=other\nPARTN=5\nBLKMODEL_SYNTHESIZED=0\n") == 0);
        CHECK(fixture_remove_block_device(f, FIXTURE_CCISS "/cciss!c0d0p1", 104, 1) == 0);
        CHECK(fixture_write(f, FIXTURE_LOOP0 "/size", "4194304\n") == 0);

        /* Each difference becomes an event marked as made up, after what it announces. */
        CHECK(live_rescan(l) == 5);
        CHECK(recorded((const char *const[]){
                        "removed " CCISS_PATH "/cciss_21c0d0p1",
                        KSET_BLOCK_MEMBERS,
                        "event remove " FIXTURE_CCISS "/cciss!c0d0p1 " CCISS_PATH
                        "/cciss_21c0d0p1 synthesized",
                        "added " SDA_PATH "/sda5",
                        KSET_BLOCK_MEMBERS,
                        "event add " FIXTURE_SDA "/sda5 " SDA_PATH "/sda5 synthesized",
                        "properties " CCISS_PATH " org.blkmodel1.Disk changed=Partitions invalidated=",
                        "event change " FIXTURE_CCISS " " CCISS_PATH " synthesized",
                        "properties " LOOP0_PATH " org.blkmodel1.Disk changed=Size,size invalidated=",
                        "event change " FIXTURE_LOOP0 " " LOOP0_PATH " synthesized",
                        "properties " SDA_PATH " org.blkmodel1.Disk changed=Partitions invalidated=",
                        "event change " FIXTURE_SDA " " SDA_PATH " synthesized",
                        NULL,
        }));
        CHECK(model_find_name(m, "sda5") != NULL);
        CHECK(model_find_name(m, "cciss!c0d0p1") == NULL);

        /* In line again: a second rescan finds nothing. */
        CHECK(live_rescan(l) == 0);
        CHECK(rec.n == 0);

        /* A partition gone and one new whose events the kernel has sent, unread still: the rescan
         * reads them first and leaves both to them, or each would be told twice (made up, and the
         * kernel's after it, the remove as of no object). */
        CHECK(fixture_remove_block_device(f, FIXTURE_SDA "/sda5", 8, 5) == 0);
        CHECK(fixture_add_partition(f, FIXTURE_SDA, "sda7", 8, 7, 7, 218109952, 2048) == 0);
        sock.live = l;
        sock.unread[sock.n++] = uevent("remove", FIXTURE_SDA "/sda5", "block",
                                       (const char *const[]){"DEVTYPE=partition", NULL});
        sock.unread[sock.n++] = uevent("add", FIXTURE_SDA "/sda7", "block",
                                       (const char *const[]){"DEVTYPE=partition", NULL});
        CHECK(live_rescan(l) == 0);
        run_until_applied(l);
        CHECK(recorded((const char *const[]){
                        "removed " SDA_PATH "/sda5",
                        KSET_BLOCK_MEMBERS,
                        "properties " SDA_PATH " org.blkmodel1.Disk changed=Partitions invalidated=",
                        "event remove " FIXTURE_SDA "/sda5 " SDA_PATH "/sda5",
                        "added " SDA_PATH "/sda7",
                        KSET_BLOCK_MEMBERS,
                        "properties " SDA_PATH " org.blkmodel1.Disk changed=Partitions invalidated=",
                        "event add " FIXTURE_SDA "/sda7 " SDA_PATH "/sda7",
                        NULL,
        }));
        CHECK(live_rescan(l) == 0);
        CHECK(rec.n == 0);

        /* Lost events: said at once; the rescan waits until the socket is drained, and then runs in
         * slices as the loop turns. */
        CHECK(fixture_write(f, FIXTURE_LOOP0 "/ro", "1\n") == 0);
        live_on_lost(NULL, l);
        CHECK(recorded((const char *const[]){"lost 1", NULL}));
        CHECK(live_events_lost(l) == 1);
        live_on_drained(NULL, l);
        CHECK(rec.n == 0);
        for (int i = 0; i < 100000 && rec.n < 2; i++)
                (void) uv_run(loop, UV_RUN_NOWAIT);
        CHECK(recorded((const char *const[]){
                        "properties " LOOP0_PATH " org.blkmodel1.Disk changed=ReadOnly,ro invalidated=",
                        "event change " FIXTURE_LOOP0 " " LOOP0_PATH " synthesized",
                        NULL,
        }));
        /* Drained again without a loss: no rescan. */
        CHECK(fixture_write(f, FIXTURE_LOOP0 "/ro", "0\n") == 0);
        live_on_drained(NULL, l);
        run_loop(loop);
        CHECK(rec.n == 0);
}

static const EventRecord *logged_event(EventLog *log, const char *action, const char *devpath)
{
        size_t first = 0, count = 0;
        const EventRecord *e = NULL;

        CHECK(eventlog_since(log, 0, &first, &count) == 0);
        for (size_t i = first; i < first + count; i++) {
                const EventRecord *r = eventlog_get(log, i);
                if (r && streq(r->action, action) && streq(r->devpath, devpath))
                        e = r;
        }
        return e;
}

/* The event a synthesized add carries: the uevent file's variables, then the mark.  A synthesized
 * remove, made after the files went: what the object's record held of them, in the kernel's order. */
static void test_synthesized_env(EventLog *log)
{
        const EventRecord *e = logged_event(log, "remove", FIXTURE_CCISS "/cciss!c0d0p1");

        CHECK(e != NULL);
        if (e) {
                static const char *const keys[] = {"ACTION",  "DEVPATH", "SUBSYSTEM", "MAJOR",
                                                   "MINOR",   "DEVNAME", "DEVTYPE",   "PARTN",
                                                   "BLKMODEL_SYNTHESIZED"};
                static const char *const values[] = {
                                "remove", FIXTURE_CCISS "/cciss!c0d0p1", "block", "104", "1", "cciss/c0d0p1",
                                "partition", "1", "1"};
                CHECK(e->n_env == ELEMENTSOF(keys));
                for (size_t i = 0; i < MIN(e->n_env, ELEMENTSOF(keys)); i++) {
                        CHECK_STREQ(e->env_keys[i], keys[i]);
                        CHECK_STREQ(e->env_values[i], values[i]);
                }
        }

        e = logged_event(log, "add", FIXTURE_SDA "/sda5");
        CHECK(e != NULL);
        if (!e)
                return;
        CHECK(e->n_env == 10);
        if (e->n_env != 10)
                return;
        static const char *const keys[] = {
                        "ACTION",  "DEVPATH", "SUBSYSTEM", "MAJOR", "MINOR",
                        "DEVNAME", "DEVTYPE", "DISKSEQ",   "PARTN", "BLKMODEL_SYNTHESIZED"};
        static const char *const values[] = {"add",  FIXTURE_SDA "/sda5", "block", "8", "5",
                                             "sda5", "partition",         "1",     "5", "1"};
        CHECK(e->n_env == ELEMENTSOF(keys));
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                CHECK_STREQ(e->env_keys[i], keys[i]);
                CHECK_STREQ(e->env_values[i], values[i]);
        }
}

/* A fixture and a Live over it on a loop of its own, recording into rec; nothing scanned yet. */
typedef struct Setup {
        Fixture f;
        Sysfs s;
        Model *m;
        EventLog *log;
        Live *l;
        uv_loop_t loop;
        bool loop_open;
} Setup;

static bool setup_begin(Setup *t, unsigned poll_interval_ms)
{
        *t = (Setup){.s = {.root_fd = -1}};
        rec.last_seqnum = 0;
        CHECK(fixture_new(&t->f) == 0);
        CHECK(uv_loop_init(&t->loop) == 0);
        t->loop_open = true;
        test_loop = &t->loop;
        if (!t->f.root)
                return false;
        CHECK(sysfs_open(t->f.root, &t->s) == 0);
        CHECK(model_new(&t->m) == 0);
        CHECK(eventlog_new(256, 1, &t->log) == 0);
        if (!t->m || !t->log || t->s.root_fd < 0)
                return false;
        rec.model = t->m;
        LiveConfig c = {
                        .loop = &t->loop,
                        .sysfs = &t->s,
                        .model = t->m,
                        .events = t->log,
                        .poll_interval_ms = poll_interval_ms,
                        .ops = &recording_ops,
        };
        CHECK(live_new(&c, &t->l) == 0);
        return t->l != NULL;
}

static void setup_end(Setup *t)
{
        /* Live goes with its close callbacks, and a batch still on a worker comes back: the loop runs
         * until nothing is left, before the model goes. */
        live_free(t->l);
        if (t->loop_open) {
                (void) uv_run(&t->loop, UV_RUN_DEFAULT);
                CHECK(uv_loop_close(&t->loop) == 0);
        }
        model_free(t->m);
        eventlog_free(t->log);
        sysfs_close(&t->s);
        recorded_clear();
        fixture_done(&t->f);
}

static size_t lines_with(const char *prefix, const char *text)
{
        size_t n = 0;

        for (size_t i = 0; i < rec.n; i++)
                n += startswith(rec.lines[i], prefix) && strstr(rec.lines[i], text);
        return n;
}

/* Turns the loop (a millisecond apart: the poll's interval) until a recorded line has both, for 5 s
 * at most. */
static void run_until_line(uv_loop_t *loop, const char *prefix, const char *text)
{
        for (int i = 0; i < 5000 && !lines_with(prefix, text); i++) {
                (void) uv_run(loop, UV_RUN_NOWAIT);
                usleep(1000);
        }
}

/*
 * The poll reads on the thread pool and compares on the loop.  A value written without an event is
 * announced; one read ahead before an event's reading changed the object is not compared with the
 * newer record, which would announce a change back (and forward again at the next round).
 */
static void test_poll(void)
{
        Setup t;
        char value[32];

        if (!setup_begin(&t, 1))
                goto out;
        Fixture *f = &t.f;
        Model *m = t.m;
        Live *l = t.l;
        uv_loop_t *loop = &t.loop;
        /* A tunable of the disk: the poll's, and read with the rest when an event moves the size. */
        CHECK(fixture_write(f, FIXTURE_SDA "/events_poll_msecs", "0\n") == 0);
        CHECK(scan_all(&t.s, m) > 0);
        CHECK(live_start(l) == 0);
        for (int i = 0; i < 100000 && !all_recorded(m); i++)
                (void) uv_run(loop, UV_RUN_NOWAIT);
        CHECK(all_recorded(m));
        recorded_clear();

        CHECK(fixture_write(f, FIXTURE_SDA "/queue/read_ahead_kb", "256\n") == 0);
        run_until_line(loop, "properties " SDA_PATH "/queue org.blkmodel1.Queue ", "read_ahead_kb");
        CHECK(lines_with("properties " SDA_PATH "/queue org.blkmodel1.Queue ", "read_ahead_kb") == 1);
        recorded_clear();

        /* Each turn: the poll queues a batch, a worker reads it, then the tunable and the size change
         * and their event is applied, before the batch's comparing (idle handles run before the
         * poll phase that brings the batch back).  Each change is told once, by the event. */
        for (int i = 1; i <= 100; i++) {
                (void) uv_run(loop, UV_RUN_NOWAIT);
                usleep(2000);
                snprintf(value, sizeof(value), "%d\n", i);
                CHECK(fixture_write(f, FIXTURE_SDA "/events_poll_msecs", value) == 0);
                snprintf(value, sizeof(value), "%d\n", 1000 + i);
                CHECK(fixture_write(f, FIXTURE_SDA "/size", value) == 0);
                feed(l, "change", FIXTURE_SDA, "block", NULL);
        }
        for (int i = 0; i < 50; i++) {
                (void) uv_run(loop, UV_RUN_NOWAIT);
                usleep(1000);
        }
        CHECK(lines_with("properties " SDA_PATH " org.blkmodel1.Disk ", "events_poll_msecs") == 100);
        CHECK(lines_with("event change ", SDA_PATH) == 100);
        CHECK(rec.consistent);
        recorded_clear();

        /* A rescan reads every object: while one runs (held here), the poll reads nothing, and the
         * rescan tells what changed; after it, the poll goes on. */
        CHECK(live_rescan_start(l, NULL, NULL) == 0);
        live_hold(l, true);
        CHECK(fixture_write(f, FIXTURE_SDA "/queue/read_ahead_kb", "512\n") == 0);
        for (int i = 0; i < 200; i++) {
                (void) uv_run(loop, UV_RUN_NOWAIT);
                usleep(1000);
        }
        CHECK(rec.n == 0);
        live_hold(l, false);
        run_until_line(loop, "properties " SDA_PATH "/queue org.blkmodel1.Queue ", "read_ahead_kb");
        CHECK(lines_with("properties " SDA_PATH "/queue org.blkmodel1.Queue ", "read_ahead_kb") == 1);
        recorded_clear();
        CHECK(fixture_write(f, FIXTURE_SDA "/queue/read_ahead_kb", "1024\n") == 0);
        run_until_line(loop, "properties " SDA_PATH "/queue org.blkmodel1.Queue ", "read_ahead_kb");
        CHECK(lines_with("properties " SDA_PATH "/queue org.blkmodel1.Queue ", "read_ahead_kb") == 1);
        recorded_clear();

out:
        setup_end(&t);
}

/*
 * A kset of many children (the block kset at thousands of disks) has them taken one a step, by name,
 * while events go on: a disk removed before its turn is passed over (never touched: ASan would see),
 * one added is taken in its place in the order, and every change behind our back is still found.
 */
#define MANY 600

static void on_rescanned(int result, void *userdata)
{
        *(int *) userdata = result < 0 ? result : 1;
}

static void many_disk(char *buf, size_t size, unsigned i)
{
        snprintf(buf, size, "/devices/virtual/block/vd%03u", i);
}

static void test_rescan_many_children(void)
{
        char devpath[64], file[80], prefix[96];
        Setup t;

        if (!setup_begin(&t, 0))
                goto out;
        Model *m = t.m;
        Live *l = t.l;
        for (unsigned i = 0; i < MANY; i++) {
                many_disk(devpath, sizeof(devpath), i);
                CHECK(fixture_add_disk(&t.f, devpath, 252, i, 4096) == 0);
        }
        CHECK(scan_all(&t.s, m) > MANY);
        CHECK(live_start(l) == 0);
        for (int i = 0; i < 1000000 && !all_recorded(m); i++)
                (void) uv_run(&t.loop, UV_RUN_NOWAIT);
        CHECK(all_recorded(m));
        recorded_clear();

        /* Changed with no event: the first, a middle and the last disk. */
        static const unsigned changed[] = {0, MANY / 2, MANY - 1};
        for (size_t j = 0; j < ELEMENTSOF(changed); j++) {
                many_disk(devpath, sizeof(devpath), changed[j]);
                snprintf(file, sizeof(file), "%s/size", devpath);
                CHECK(fixture_write(&t.f, file, "8192\n") == 0);
        }
        int rescanned = 0;
        CHECK(live_rescan_start(l, on_rescanned, &rescanned) == 0);
        /* Until the rescan is at the first of them, in the block kset's children. */
        many_disk(devpath, sizeof(devpath), 0);
        snprintf(prefix, sizeof(prefix), "event change %s ", devpath);
        for (int i = 0; i < 1000000 && !lines_with(prefix, "synthesized"); i++)
                (void) uv_run(&t.loop, UV_RUN_NOWAIT);
        CHECK(lines_with(prefix, "synthesized") == 1);
        /* Meanwhile: the next disk and four before the last go, and one comes after them all. */
        for (unsigned i = 1; i < MANY - 1; i = i == 1 ? MANY - 5 : i + 1) {
                many_disk(devpath, sizeof(devpath), i);
                CHECK(fixture_remove_block_device(&t.f, devpath, 252, i) == 0);
                feed(l, "remove", devpath, "block", NULL);
        }
        CHECK(fixture_add_disk(&t.f, "/devices/virtual/block/vdzz", 252, MANY, 4096) == 0);
        feed(l, "add", "/devices/virtual/block/vdzz", "block", NULL);
        /* Changed after its add with no event: only the rescan, coming to it, can tell. */
        CHECK(fixture_write(&t.f, "/devices/virtual/block/vdzz/size", "8192\n") == 0);
        /* To the rescan's end: its last change can go out slices before it is done. */
        for (int i = 0; i < 1000000 && !rescanned; i++)
                (void) uv_run(&t.loop, UV_RUN_NOWAIT);
        CHECK(rescanned == 1);
        run_loop(&t.loop);

        for (size_t j = 0; j < ELEMENTSOF(changed); j++) {
                snprintf(prefix, sizeof(prefix), "properties " BLOCK "/vd%03u org.blkmodel1.Disk ",
                         changed[j]);
                CHECK(lines_with(prefix, "changed=Size,size") == 1);
                many_disk(devpath, sizeof(devpath), changed[j]);
                snprintf(prefix, sizeof(prefix), "event change %s ", devpath);
                CHECK(lines_with(prefix, "synthesized") == 1);
        }
        CHECK(lines_with("properties " BLOCK "/vdzz org.blkmodel1.Disk ", "changed=Size,size") == 1);
        CHECK(lines_with("event change /devices/virtual/block/vdzz ", "synthesized") == 1);
        CHECK(lines_with("event change ", "synthesized") == 4);
        CHECK(lines_with("event remove ", "/vd") == 5 && lines_with("event add ", "/vdzz") == 1);
        CHECK(model_find_name(m, "vd001") == NULL && model_find_name(m, "vd595") == NULL);
        CHECK(model_find_name(m, "vdzz") != NULL && model_find_name(m, "vd599") != NULL);
        CHECK(rec.consistent);
        recorded_clear();

        /* In line again. */
        CHECK(live_rescan(l) == 0);
        CHECK(rec.n == 0);

out:
        setup_end(&t);
}

static void test_live(void)
{
        Setup t;

        if (!setup_begin(&t, 0))
                goto out;
        Fixture *f = &t.f;
        Sysfs *s = &t.s;
        Model *m = t.m;
        EventLog *log = t.log;
        Live *l = t.l;
        uv_loop_t *loop = &t.loop;

        /* The scan before the start announces nothing. */
        CHECK(scan_all(s, m) == 7);
        CHECK(rec.n == 0);

        /* Nor does an event applied before the start (the manager drains those that came during the
         * scan): the object is in the model, published with everything else when the name is taken. */
        CHECK(fixture_add_disk(f, VDZ, 252, 32, 4096) == 0);
        feed(l, "add", VDZ, "block", NULL);
        CHECK(model_find_name(m, "vdz") != NULL);
        for (size_t i = 0; i < rec.n; i++)
                CHECK(!startswith(rec.lines[i], "added ") && !startswith(rec.lines[i], "properties "));
        recorded_clear();

        /* Started: the warm-up records every disk and partition as the loop runs, in time slices, so
         * as many iterations as a loaded machine needs. */
        CHECK(live_start(l) == 0);
        CHECK(!all_recorded(m));
        test_client_reading(l, f, m, s);
        for (int i = 0; i < 100000 && !all_recorded(m); i++)
                (void) uv_run(loop, UV_RUN_NOWAIT);
        CHECK(all_recorded(m));
        CHECK(rec.n == 0);

        test_estimate_steady(l, m);
        test_relist_after_reply(l, f, m, s, loop);
        test_uevents(l, f, m, log);
        test_shape_changes(l, f);
        test_read_once(l, f);
        test_scheduler_write(l, f, m);
        test_elevator_write_while_queued(l, f, m);
        test_elevator_follows_scheduler(l, f, m, s);
        test_scheduler_unreadable(l, f, m);
        test_move(l, f, m);
        test_move_onto_itself(l, f, m);
        test_rescan(l, f, m, loop);
        test_synthesized_env(log);

        /* Stopped: objects come and go unannounced, the disk's changed Partitions too. */
        live_stop(l);
        CHECK(fixture_add_partition(f, FIXTURE_SDA, "sda6", 8, 6, 6, 218107904, 2048) == 0);
        feed(l, "add", FIXTURE_SDA "/sda6", "block", NULL);
        for (size_t i = 0; i < rec.n; i++)
                CHECK(!startswith(rec.lines[i], "added ") && !startswith(rec.lines[i], "properties "));
        recorded_clear();
        CHECK(model_find_name(m, "sda6") != NULL);

        CHECK(rec.consistent);

out:
        setup_end(&t);
}

int main(void)
{
        test_live();
        test_poll();
        test_rescan_many_children();
        return tests_summary();
}
