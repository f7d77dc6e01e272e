/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <malloc.h>

#include "base/log-ratelimit.h"
#include "base/log.h"
#include "base/turn.h"
#include "blkmodel/names.h"
#include "bus/bus-internal.h"
#include "bus/errors.h"
#include "model/round.h"

bool bus_object_is_manager(const Kobject *k)
{
        return k->ktype->id == KTYPE_KSET || k->ktype->id == KTYPE_DISK || k->ktype->id == KTYPE_DEVICE;
}

typedef int (*ObjectFunc)(Publisher *p, Kobject *k, void *userdata);

/* Calls f for every object below top (NULL: every object), parents before children. */
static int foreach_below(Publisher *p, Kobject *top, ObjectFunc f, void *userdata)
{
        Kobject *k;
        int r;

        for (k = top->first_child; k; k = k->next_sibling) {
                if ((r = f(p, k, userdata)) < 0)
                        return r;
                if ((r = foreach_below(p, k, f, userdata)) < 0)
                        return r;
        }
        return 0;
}

typedef struct Reply {
        sd_bus_message *m;
        size_t bound, limit;
        bool privileged;
} Reply;

/*
 * The objects' files are read ahead on the thread pool (sysfs/prefetch.h), this many objects per
 * batch, this many batches at a time: workers read while the loop appends what they read.  The loop
 * appends in order, so a batch that reads slowly (a directory of 60 files among ones of 20) holds up
 * the ones behind it; with only a few queued the pool then runs dry while the loop waits.  Enough
 * batches that every worker always has one: 1,000 loop devices on 2 CPUs, 3 batches 1.20 s and 12
 * 0.99 s in one run (1 batch, no overlap: 1.5 s); 16 of 32 no better, 32 of 32 worse (the workers
 * then crowd out the loop, which appends alone at the end).  At most 384 objects' values wait.
 */
#define GMO_BATCH_OBJECTS 32
#define GMO_BATCHES 12

typedef struct GmoBatch {
        uv_work_t work;
        Prefetch *prefetch;
        Publisher *publisher;
        BusGmo *gmo;  /* NULL once the reply is gone: the batch then frees itself when read */
        size_t first; /* the index in gmo->objects of its first object */
        uint64_t keeps; /* live_records_changed() when it was made, before its reading began */
        bool read;
} GmoBatch;

/* A GetManagedObjects reply being built, in the order the calls came. */
struct BusGmo {
        sd_bus_message *call;
        Reply reply;
        Kobject *top;      /* a reference; NULL: the root */
        ModelRound taking; /* below the root or a kset: the objects, taken in slices */
        Kobject **objects; /* references: what there was when its building began (or its taking ended) */
        size_t n_objects, n_allocated, pos;
        size_t estimated, estimate;     /* the reply is started once every object's size is estimated */
        GmoBatch *batches[GMO_BATCHES]; /* oldest first */
        size_t n_batches, prefetched;   /* objects before prefetched are in a batch or appended */
        /* Objects whose values were read ahead, and of those the ones read again at their turn: their
         * record changed after their batch was made (an event's reading), and the batch's values may be
         * older than it, a change the reply would tell undone. */
        size_t n_ahead, n_again;
        /* A kset with thousands of members being appended (the block kset, in the root's reply): its
         * Members in slices, as Get's are (members-reply.c).  A reference; NULL: none. */
        Kobject *kset;
        size_t kset_iface; /* the index of the interface Members is in */
        MembersSnapshot *members;
        size_t members_pos, members_off;
        bool begun; /* the first in line, its objects taken or being taken, signals held (hold.c) */
        BusGmo *next;
};

/* Opens k's {oa{sa{sv}}} entry in the reply. */
static int entry_open(Reply *reply, const Kobject *k)
{
        int r;

        r = sd_bus_message_open_container(reply->m, 'e', "oa{sa{sv}}");
        if (r >= 0)
                r = sd_bus_message_append_basic(reply->m, 'o', k->path);
        reply->bound += wire_dict_head(k->path);
        return r;
}

static int entry_close(Reply *reply)
{
        int r;

        r = sd_bus_message_close_container(reply->m);
        /* The estimate said it would fit, the values read say otherwise: stop before the bus drops us. */
        if (r >= 0 && reply->bound > reply->limit)
                return -E2BIG;
        return r;
}

static int append_managed_object(Publisher *p, Kobject *k, ObjDir *d, Reply *reply)
{
        int r;

        r = entry_open(reply, k);
        if (r >= 0)
                r = bus_append_object(p, reply->m, k, d, reply->privileged, &reply->bound);
        return r < 0 ? r : entry_close(reply);
}

/* Does k's reply entry take several slices?  A kset with thousands of members. */
static bool object_in_slices(const Kobject *k, size_t *ret_iface)
{
        Iface iface;

        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                if (bus_members_in_slices(k, &iface, NULL)) {
                        *ret_iface = i;
                        return true;
                }
        }
        return false;
}

/* Opens k's entry and appends it up to its Members, which gmo_kset_go_on() appends in slices. */
static int gmo_kset_open(Publisher *p, BusGmo *g, Kobject *k, ObjDir *d, size_t members_iface)
{
        Reply *reply = &g->reply;
        Iface iface;
        int r;

        r = entry_open(reply, k);
        if (r >= 0)
                r = sd_bus_message_open_container(reply->m, 'a', "{sa{sv}}");
        if (r >= 0)
                r = bus_append_ifaces(p, reply->m, k, d, reply->privileged, 0, members_iface, &reply->bound);
        kobject_iface(k, members_iface, &iface);
        if (r >= 0)
                r = sd_bus_message_open_container(reply->m, 'e', "sa{sv}");
        if (r >= 0)
                r = sd_bus_message_append_basic(reply->m, 's', iface.name);
        reply->bound += wire_dict_head(iface.name);
        if (r >= 0)
                r = sd_bus_message_open_container(reply->m, 'a', "{sv}");
        if (r >= 0)
                r = bus_members_open(p, reply->m, k, true, &g->members);
        if (r < 0)
                return r;
        g->kset = kobject_ref(k);
        g->kset_iface = members_iface;
        g->members_pos = 0;
        /* As wire_typed_end() reckons an ao: its length, then the paths. */
        g->members_off = wire_align(wire_entry_head(BLKMODEL_PROP_MEMBERS, "ao"), 4) + 4;
        return 0;
}

/* Appends the kset's members for a slice; when all are in, closes its entry.  0 while members are
 * left for the next slice; 1 when the entry is done. */
static int gmo_kset_go_on(Publisher *p, BusGmo *g, uint64_t start)
{
        _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(p->sysfs, g->kset);
        Reply *reply = &g->reply;
        int r;

        r = bus_members_append(reply->m, g->members, &g->members_pos, turn_slice_end(start),
                               &g->members_off);
        if (r <= 0)
                return r;
        reply->bound += wire_align(g->members_off, 8);
        r = bus_members_close(p, reply->m, g->kset, true, reply->privileged, &reply->bound);
        if (r >= 0)
                r = sd_bus_message_close_container(reply->m); /* a{sv} */
        if (r >= 0)
                r = sd_bus_message_close_container(reply->m); /* {sa{sv}} */
        if (r >= 0)
                r = bus_append_ifaces(p, reply->m, g->kset, &d, reply->privileged, g->kset_iface + 1,
                                      kobject_n_ifaces(g->kset), &reply->bound);
        if (r >= 0)
                r = sd_bus_message_close_container(reply->m); /* a{sa{sv}} */
        if (r >= 0)
                r = entry_close(reply);
        g->members = members_snapshot_free(p->model, g->members);
        kobject_unref(p->model, g->kset);
        g->kset = NULL;
        return r < 0 ? r : 1;
}

static int append_manager(Publisher *p, Reply *reply)
{
        int r;

        r = sd_bus_message_open_container(reply->m, 'e', "oa{sa{sv}}");
        if (r >= 0)
                r = sd_bus_message_append(reply->m, "o", BLKMODEL_MANAGER_PATH);
        reply->bound += wire_dict_head(BLKMODEL_MANAGER_PATH);
        if (r >= 0)
                r = bus_manager_append_object(p, reply->m, &reply->bound);
        if (r >= 0)
                r = sd_bus_message_close_container(reply->m);
        return r;
}

static int refuse(Publisher *p, Kobject *top, size_t bytes, size_t limit, sd_bus_error *error)
{
        const char *where = top ? top->path : BLKMODEL_ROOT_PATH;
        char sizes[128];

        bus_sizes_text(bytes, limit, sizes, sizeof(sizes));
        /* As often as clients ask (blkmodelctl, on a model too large for one reply, at every run). */
        log_ratelimit_warning("GetManagedObjects on %s refused: %s.", where, sizes);
        if (!top)
                return bus_error_limits_exceeded(
                                error,
                                "The objects below %s are %s: call GetManagedObjects on %s and "
                                "on %s for their parts.",
                                where, sizes, p->model->block_kset->path, p->model->devices_kset->path);
        return bus_error_limits_exceeded(
                        error,
                        "The objects below %s are %s: call GetManagedObjects on each of its "
                        "children (Introspect lists them) for their parts.",
                        where, sizes);
}

static int collect(Publisher *p, Kobject *k, void *userdata)
{
        BusGmo *g = userdata;

        if (GREEDY_REALLOC(g->objects, g->n_allocated, g->n_objects + 1) < 0)
                return -ENOMEM;
        g->objects[g->n_objects++] = kobject_ref(k);
        return 0;
}

static void on_gmo_idle(uv_idle_t *h);

/* The first in line begins: from now on it answers for every change, and the signals that tell them
 * wait for it (hold.c). */
static int gmo_begin(Publisher *p, BusGmo *g)
{
        g->begun = true;
        bus_hold_begin(p);
        if (g->top && !g->top->linked) {
                /* Gone while the call waited its turn, maybe back under its name (its InterfacesAdded
                 * already sent): the object there is now, as a call made now would find. */
                Kobject *now = model_find_path(p->model, g->top->path);

                if (!now)
                        return -ENOENT;
                kobject_unref(p->model, g->top);
                g->top = kobject_ref(now);
        }
        if (!g->top || g->top->ktype->id == KTYPE_KSET) {
                model_round_begin_below(&g->taking, p->model, g->top);
                return 0;
        }
        /* A disk's or a device's few objects: at once, in as little room (it was room for every object in
         * the model, 730 KB at 10,000 x 4, for each of a reading in parts' calls). */
        return foreach_below(p, g->top, collect, g);
}

static void batch_free(GmoBatch *b)
{
        prefetch_free(b->prefetch);
        free(b);
}

static void on_batch_work(uv_work_t *w)
{
        GmoBatch *b = w->data;

        prefetch_read(b->prefetch);
}

static void on_batch_read(uv_work_t *w, int status)
{
        GmoBatch *b = w->data;

        if (!b->gmo) {
                batch_free(b);
                return;
        }
        /* Also when cancelled (status < 0): then nothing was read, and the loop reads for itself. */
        b->read = true;
        (void) uv_idle_start(b->publisher->gmo_idle, on_gmo_idle);
}

/* Queues batches for the objects after the last one queued, as many as may be in flight. */
static void gmo_prefetch(Publisher *p, BusGmo *g)
{
        /* After a batch that could not be queued the loop read on by itself: never read ahead what
         * it appended already, or a batch's first object would not be the one it is handed to. */
        if (g->n_batches == 0 && g->prefetched < g->pos)
                g->prefetched = g->pos;
        while (g->n_batches < GMO_BATCHES && g->prefetched < g->n_objects) {
                GmoBatch *b = calloc(1, sizeof(GmoBatch));
                int r = b ? prefetch_new(p->sysfs, &b->prefetch) : -ENOMEM;

                for (size_t i = g->prefetched;
                     r >= 0 && i < g->n_objects && i - g->prefetched < GMO_BATCH_OBJECTS; i++)
                        r = bus_prefetch_object(b->prefetch, g->objects[i], g->reply.privileged);
                if (r >= 0) {
                        *b = (GmoBatch){.work.data = b,
                                        .prefetch = b->prefetch,
                                        .publisher = p,
                                        .gmo = g,
                                        .first = g->prefetched,
                                        .keeps = live_records_changed(p->live)};
                        r = uv_queue_work(p->loop, &b->work, on_batch_work, on_batch_read);
                }
                if (r < 0) {
                        /* Not read ahead: the loop reads these objects itself, as it always could. */
                        log_debug_errno(r, "GetManagedObjects: cannot read ahead: %m");
                        if (b)
                                batch_free(b);
                        return;
                }
                g->batches[g->n_batches++] = b;
                g->prefetched += prefetch_n_objects(b->prefetch);
        }
}

/* Hands the values read ahead for object i to d: 1 if it did, 0 if not read ahead (or too old), -EAGAIN
 * while its batch is being read.  The objects before i are appended: their batches go.
 *
 * Too old: the object's record changed since its batch was made, by a reading that may have come after
 * the batch's.  Only that object's: under churn (100 events/s) some record changes between nearly any
 * batch's making and its turn, and a reply that dropped the whole batch then (as it once did) read
 * nearly every object twice, on the worker and again on the loop, 2,000 objects 2-3 times as long. */
static int gmo_take_prefetched(Publisher *p, BusGmo *g, size_t i, ObjDir *d)
{
        GmoBatch *b;

        while (g->n_batches > 0 && i >= g->batches[0]->first + prefetch_n_objects(g->batches[0]->prefetch)) {
                assert(g->batches[0]->read);
                batch_free(g->batches[0]);
                memmove(g->batches, g->batches + 1, --g->n_batches * sizeof(GmoBatch *));
        }
        b = g->n_batches > 0 ? g->batches[0] : NULL;
        if (!b || i < b->first)
                return 0;
        if (!b->read)
                return -EAGAIN;
        if (live_record_changed_since(g->objects[i], b->keeps)) {
                g->n_again++;
                return 0;
        }
        g->n_ahead++;
        prefetch_hand_over(b->prefetch, i - b->first, d);
        return 1;
}

static BusGmo *gmo_free(Publisher *p, BusGmo *g)
{
        for (size_t i = 0; i < g->n_batches; i++) {
                if (g->batches[i]->read)
                        batch_free(g->batches[i]);
                else
                        g->batches[i]->gmo = NULL; /* on a worker: it frees itself when read */
        }
        model_round_release(&g->taking, p->model);
        members_snapshot_free(p->model, g->members);
        kobject_unref(p->model, g->kset);
        for (size_t i = g->pos; i < g->n_objects; i++)
                kobject_unref(p->model, g->objects[i]);
        free(g->objects);
        kobject_unref(p->model, g->top);
        sd_bus_message_unref(g->reply.m);
        sd_bus_message_unref(g->call);
        free(g);
        return NULL;
}

static void gmo_finish(Publisher *p, BusGmo *g, int r)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

        if (r == -E2BIG)
                r = refuse(p, g->top, g->reply.bound, g->reply.limit, &error);
        else if (r == -ENOENT && g->top && !g->reply.m)
                r = bus_error_unknown_object(&error, g->top->path);
        else if (r < 0 && errno_is_resource(r))
                r = bus_error_unread(&error, g->top ? g->top->path : BLKMODEL_ROOT_PATH, r);
        if (r >= 0)
                r = sd_bus_message_close_container(g->reply.m);
        if (r >= 0) {
                log_debug("GetManagedObjects on %s: at most %zu bytes; %zu objects, %zu read ahead, "
                          "%zu read again as their records changed meanwhile.",
                          g->top ? g->top->path : BLKMODEL_ROOT_PATH, g->reply.bound, g->n_objects,
                          g->n_ahead, g->n_again);
                r = sd_bus_send(NULL, g->reply.m, NULL);
        } else if (sd_bus_error_is_set(&error))
                (void) sd_bus_reply_method_error(g->call, &error);
        else
                (void) sd_bus_reply_method_errno(g->call, r, NULL);
        if (r < 0)
                log_debug_errno(r, "GetManagedObjects failed: %m");
        bus_hold_release(p);
        p->gmos = g->next;
        gmo_free(p, g);
        live_warmup_release(p->live);
        /* Building it scattered thousands of small allocations over the heap: give the pages back. */
        if (!p->gmos)
                (void) malloc_trim(0);
}

static int gmo_start_reply(Publisher *p, BusGmo *g)
{
        int r;

        r = sd_bus_message_new_method_return(g->call, &g->reply.m);
        if (r >= 0)
                r = sd_bus_message_open_container(g->reply.m, 'a', "{oa{sa{sv}}}");
        /* The root's managed objects: the Manager, then every kobject. */
        if (r >= 0 && !g->top)
                r = append_manager(p, &g->reply);
        return r;
}

/* Takes the objects below the root or a kset in slices: at 10,000 disks x 4 taking all 91,000 in one
 * go held the loop 18-20 ms (before a refusal, as the root's is there).  0 while objects are left for
 * the next slice; 1 when all are taken. */
static int gmo_take(Publisher *p, BusGmo *g, uint64_t start)
{
        int r;

        while ((r = model_round_take(&g->taking, p->model, 256)) == 0)
                if (turn_slice_over(start))
                        return 0;
        if (r > 0)
                model_round_hand_over(&g->taking, &g->objects, &g->n_objects);
        return r;
}

/*
 * Estimates the reply's size, in slices like its building: at 10,000 disks × 4 partitions the estimate
 * alone (90,000 objects, their names scattered over the heap) took 50–60 ms in one go.  0 while
 * objects are left for the next slice; 1 when done and the reply is started; -E2BIG when the
 * reply would not fit in one message.
 */
static int gmo_estimate(Publisher *p, BusGmo *g, uint64_t start)
{
        while (g->estimated < g->n_objects) {
                Kobject *k = g->objects[g->estimated++];

                if (k->linked)
                        g->estimate += bus_object_size_estimate(k);
                if (g->estimated % 256 == 0 && turn_slice_over(start))
                        return 0;
        }
        if (g->estimate > g->reply.limit) {
                g->reply.bound = g->estimate;
                return -E2BIG;
        }
        log_debug("GetManagedObjects on %s: about %zu bytes.", g->top ? g->top->path : BLKMODEL_ROOT_PATH,
                  g->estimate);
        return gmo_start_reply(p, g) ?: 1;
}

/* One slice of the oldest reply being built: objects appended until the slice's time is spent. */
static void on_gmo_idle(uv_idle_t *h)
{
        Publisher *p = h->data;
        BusGmo *g = p->gmos;
        uint64_t start = now_usec();
        int r = 1;
        TURN_PART("a slice of the GetManagedObjects reply on %s",
                  g ? strna(sd_bus_message_get_path(g->call)) : "-");

        if (!g) {
                (void) uv_idle_stop(p->gmo_idle);
                return;
        }
        if (!g->begun && (r = gmo_begin(p, g)) < 0) {
                gmo_finish(p, g, r);
                return;
        }
        /* What comes before the next object, each part done or left for the next slice: taking the
         * objects, estimating the reply, a kset's members begun in an earlier slice. */
        if (g->taking.taking)
                r = gmo_take(p, g, start);
        if (r > 0 && !g->reply.m)
                r = gmo_estimate(p, g, start);
        if (r > 0 && g->kset)
                r = gmo_kset_go_on(p, g, start);
        if (r == 0)
                return; /* the next slice goes on */
        if (r < 0) {
                gmo_finish(p, g, r);
                return;
        }
        gmo_prefetch(p, g);
        while (g->pos < g->n_objects && r >= 0) {
                Kobject *k = g->objects[g->pos];
                _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(p->sysfs, k);
                size_t members_iface;
                bool members_left;

                if (gmo_take_prefetched(p, g, g->pos, &d) == -EAGAIN) {
                        /* Its batch is still being read: on_batch_read() starts the next slice. */
                        (void) uv_idle_stop(p->gmo_idle);
                        return;
                }
                g->pos++;
                /* Gone meanwhile: its InterfacesRemoved waits for this reply (hold.c). */
                members_left = false;
                if (k->linked && object_in_slices(k, &members_iface)) {
                        r = gmo_kset_open(p, g, k, &d, members_iface);
                        if (r >= 0)
                                r = gmo_kset_go_on(p, g, start);
                        members_left = r == 0;
                } else if (k->linked) {
                        r = append_managed_object(p, k, &d, &g->reply);
                        if (r >= 0)
                                live_record_reading(p->live, k, &d);
                }
                kobject_unref(p->model, k);
                if (members_left)
                        return; /* the next slices go on with them */
                gmo_prefetch(p, g);
                if (turn_slice_over(start))
                        break;
        }
        if (r < 0 || g->pos == g->n_objects)
                gmo_finish(p, g, r);
}

/* Takes *at out of the queue, unanswered. */
static void gmo_drop(Publisher *p, BusGmo **at)
{
        BusGmo *g = *at;

        if (g->begun)
                bus_hold_release(p);
        *at = g->next;
        gmo_free(p, g);
        live_warmup_release(p->live);
}

void bus_gmo_cancel(Publisher *p)
{
        while (p->gmos) {
                bus_reply_exiting(p->gmos->call);
                gmo_drop(p, &p->gmos);
        }
}

void bus_gmo_forget(Publisher *p, const char *sender)
{
        for (BusGmo **at = &p->gmos; *at;)
                if (streq_ptr(sd_bus_message_get_sender((*at)->call), sender)) {
                        log_debug("GetManagedObjects from %s dropped: the caller has left the bus.", sender);
                        gmo_drop(p, at);
                } else
                        at = &(*at)->next;
        if (p->gmos) /* the next in line, if the first went (it stops itself while its batch is read) */
                (void) uv_idle_start(p->gmo_idle, on_gmo_idle);
}

/*
 * The root answers for every object; a kset, a disk or a device for the objects below it, so that a
 * model too large for one message (10,000 disks with every attribute) can still be read whole, in
 * parts.  One reply at a time, in the order of the calls, built in slices while the loop serves everyone
 * else; the signals of what changes meanwhile wait for it (hold.c).  Its size is estimated first, in
 * the same slices: a reply that would not fit in one message is refused in its place.
 */
int bus_method_get_managed_objects(Publisher *p, sd_bus_message *msg, Kobject *top, bool privileged,
                                   sd_bus_error *error)
{
        /* D-Bus caps an array at 64 MiB, and dbus-daemon's system bus a message at 32 MiB by default; a bus
         * drops a connection that sends more.  Refuse instead. */
        size_t limit = bus_reply_body_max(p);
        BusGmo *g, **tail;

        g = calloc(1, sizeof(BusGmo));
        if (!g)
                return -ENOMEM;
        /* The a{oa{sa{sv}}}'s length and the padding to its first entry. */
        g->reply = (Reply){.bound = WIRE_DICT_ARRAY_HEAD, .limit = limit, .privileged = privileged};
        g->estimate = WIRE_DICT_ARRAY_HEAD;
        g->call = sd_bus_message_ref(msg);
        g->top = kobject_ref(top);
        for (tail = &p->gmos; *tail; tail = &(*tail)->next)
                ;
        *tail = g;
        live_warmup_hold(p->live);
        (void) uv_idle_start(p->gmo_idle, on_gmo_idle);
        return 1;
}
