/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The publisher's state and the helpers its files share; nobody outside bus/ sees this. */

#include "bus/loop.h"
#include "bus/publisher.h"
#include "common/util.h"
#include "model/iface.h"
#include "model/order.h"
#include "sysfs/objdir.h"
#include "sysfs/prefetch.h"

#define IFACE_PROPERTIES "org.freedesktop.DBus.Properties"
#define IFACE_INTROSPECTABLE "org.freedesktop.DBus.Introspectable"
#define IFACE_OBJECT_MANAGER "org.freedesktop.DBus.ObjectManager"
/* The longest interface or member name D-Bus allows. */
#define DBUS_NAME_MAX 255

typedef struct Backlog Backlog;
typedef struct Authorization Authorization;
typedef struct BusWrite BusWrite;
typedef struct BusGmo BusGmo;
typedef struct BusMembers BusMembers;

struct Publisher {
        sd_bus *bus;
        BusLoop *bus_loop;
        const Sysfs *sysfs;
        Model *model;
        Live *live;
        EventLog *events;
        const char *uevent_source;
        size_t message_max;
        bool name_taken;
        sd_bus_slot *release_slot; /* the ReleaseName call, while its reply is awaited */
        bool name_released;        /* its reply came */
        sd_bus_slot *object_slot, *manager_slot, *manager_names_slot, *enumerator_slot, *object_manager_slot;
        sd_bus_slot *callers_slot; /* NameOwnerChanged of a connection that left: bus_gmo_forget() */
        Backlog *backlog;
        Authorization *authorizations; /* privileged calls waiting for the bus or polkit */
        Hashmap uids;                  /* callers' uids by unique name (authorize.c) */
        uv_loop_t *loop;
        BusWrite *writes;        /* Set's writes on the thread pool (write.c) */
        BusGmo *gmos;            /* GetManagedObjects replies being built (managed-objects.c) */
        /* Signals, and replies that follow them, waiting for the reply being built (hold.c). */
        struct {
                sd_bus_message **m;
                size_t n, n_allocated, bytes;
                uint64_t first_seqnum; /* of the first Uevent held; 0: none */
                bool on;
        } held;
        uv_idle_t *gmo_idle;     /* its own allocation: it goes in its close callback */
        BusMembers *members;     /* large ksets' Members being appended (members-reply.c) */
        uv_idle_t *members_idle; /* as gmo_idle */
        unsigned n_authorizations;
        unsigned n_lookups; /* of them, reads that wait only for their caller's uid */
        Hashmap introspect_cache; /* the interfaces' XML by ktype and shape (introspect.c) */
        size_t introspect_sweep_at; /* its size at which the XML of shapes no object has goes */
        /* introspect.c: the child nodes' XML of objects with hundreds of children or more, four at most */
        struct KeptChildren {
                const Kobject *k; /* not referenced: tree_changes tells whether it is the same object */
                uint64_t tree_changes;
                char *xml;
                size_t len;
        } kept_children[4];
        unsigned kept_children_next;
        PublisherDisconnected disconnected;
        PublisherSettle settle;
        void *userdata;
};

/* The largest body a reply that grows with the model (GetManagedObjects, GetEvents) may have: the
 * bus's message limit, or the protocol's array limit, less room for the reply's header (serial,
 * signature, and the destination and sender, each at most 255 bytes). */
static inline size_t bus_reply_body_max(const Publisher *p)
{
        return MIN(p->message_max, BUS_ARRAY_MAX) - 1024;
}

/* ---- signals.c ---- */

/* Sends a signal built (r: how building it went) unless its body, bound bytes at most, is larger than
 * the bus takes: then SignalsDropped (e: its Uevent, if any), with a log line; a failure is logged. */
void bus_send_signal(Publisher *p, sd_bus_message *s, int r, size_t bound, const EventRecord *e,
                     const char *what, const char *path);

/* ---- hold.c ---- */

/* From now until bus_hold_release(): a GetManagedObjects reply's building began. */
void bus_hold_begin(Publisher *p);
/* Sends what waited, in order (call it right after the reply); holding stops. */
void bus_hold_release(Publisher *p);
/* Sends m, a signal, now or, while a reply is built, right after it (bytes: about its size; seqnum: a
 * Uevent's, else 0). */
void bus_send_in_order(Publisher *p, sd_bus_message *m, size_t bytes, uint64_t seqnum);
/* The seqnum of the last Uevent told: sent, or not sent while the bus was stuck (SignalsDropped tells
 * it), but not one still held.  LastSeqnum, and where GetEvents stops. */
uint64_t bus_told_seqnum(Publisher *p);
/* The reply to call (types and the values as sd_bus_message_append()'s; NULL: none), sent as
 * bus_send_in_order() sends a signal: for an answer that promises the signals before it went out. */
int bus_reply_in_order(Publisher *p, sd_bus_message *call, const char *types, ...);
/* The same for an error reply. */
int bus_reply_error_in_order(Publisher *p, sd_bus_message *call, const sd_bus_error *e);

/* ---- object.c ---- */

/* A reply the bus would drop the daemon for is not sent (D-Bus has no way to ask the limit:
 * --max-message-size says it): LimitsExceeded, saying what was asked (a property, an interface, a
 * method), how large it was, and what to call instead; with a log line. */
int bus_refuse_reply(Publisher *p, const char *what, const char *path, size_t bytes, const char *instead,
                     sd_bus_error *error);

/* ---- backlog.c ---- */

/* Registers the SignalsDropped signal on the Manager; the timer runs on loop. */
int backlog_new(Publisher *p, uv_loop_t *loop, Backlog **ret);
/* NULL is fine; the memory goes with the timer's close callback. */
void backlog_free(Backlog *b);
/* Call before sending any signal (e: the Uevent's event, else NULL): false while the bus has stopped
 * reading from us, and the signal is counted instead of sent. */
bool backlog_admit(Backlog *b, const EventRecord *e);
/* A signal admitted but larger than the bus takes, so not sent (e: its Uevent, or NULL): told at once
 * with SignalsDropped. */
void backlog_oversized(Backlog *b, const EventRecord *e);
bool backlog_congested(Backlog *b, bool paused);
/* Many messages were just queued at once by us (the signals held for a reply): a bus that drains them
 * is not stuck however long that takes, only one that stops draining. */
void backlog_burst(Backlog *b);

/* The decision alone, apart from the bus and the clock (tests/unit/test-backlog.c): one look at the
 * write queue's length at now_ms. */
typedef struct BacklogState {
        bool shedding;
        bool waiting;          /* the queue passed HIGH and has not been down to LOW since */
        uint64_t waiting_since_ms;
        uint64_t peak;         /* while shedding: the longest the queue was */
        uint64_t burst_low;    /* since a burst of ours: the shortest the queue was; 0: none */
} BacklogState;
typedef enum BacklogStep {
        BACKLOG_STEADY,
        BACKLOG_SHED_START, /* from now on signals are counted, not sent */
        BACKLOG_SHED_STOP,  /* the queue drained: send SignalsDropped, then signals again */
} BacklogStep;
BacklogStep backlog_state_update(BacklogState *s, uint64_t queued, uint64_t now_ms);
/* A burst of ours took the queue to queued at now_ms. */
void backlog_state_burst(BacklogState *s, uint64_t queued, uint64_t now_ms);

/*
 * ---- wire sizes: what the D-Bus marshalling makes of a value, for bounds on a reply's size ----
 * Offsets count from an 8-aligned origin.  Every dict entry starts 8-aligned, so an entry's size
 * follows from its own content, and the sum of the entries' sizes rounded up to 8 is where the next
 * entry starts: exact, but for the padding after the last one of an array.
 */
static inline size_t wire_align(size_t off, size_t alignment)
{
        return (off + alignment - 1) / alignment * alignment;
}

/* An array of dict entries (or structs) that starts a body: its 4-byte length, padded to 8. */
#define WIRE_DICT_ARRAY_HEAD ((size_t) 8)

/* s, o: a 4-byte length, the bytes, a NUL. */
static inline size_t wire_string_end(size_t off, const char *s)
{
        return wire_align(off, 4) + 4 + strlen(s) + 1;
}

/* {sv}: the key and the variant's signature; the value follows, at its own alignment. */
static inline size_t wire_entry_head(const char *key, const char *signature)
{
        return wire_string_end(0, key) + 1 + strlen(signature) + 1;
}

/* {oa{sa{sv}}}, {sa{sv}}: the key, the array's length, and the padding to its first entry. */
static inline size_t wire_dict_head(const char *key)
{
        return wire_align(wire_align(wire_string_end(0, key), 4) + 4, 8);
}

/* ---- properties.c ---- */

/*
 * The appenders.  bound, if not NULL, grows by at least the bytes appended (alignment and
 * padding included, reckoned as above), so that a reply can be refused before it passes the bus's
 * message limit.
 */

/* One property of iface as a variant: 1, or 0 if the interface has no such property.  lenient: an
 * unreadable attribute reads as "" (GetAll: one bad file must not hide the rest); otherwise it is a
 * ReadFailed error. */
int bus_append_property(Publisher *p, ObjDir *d, const Iface *iface, const char *member, sd_bus_message *m,
                        bool lenient, size_t *bound, sd_bus_error *error);
/* a{sv}: every property of the interface, equal to what GetAll returns; the attributes only root
 * may read (ATTR_PRIVILEGED) only if privileged. */
int bus_append_iface_properties(Publisher *p, ObjDir *d, const Iface *iface, sd_bus_message *m,
                                bool privileged, size_t *bound);
/* The {sv} entries alone, but the property named skip (NULL: none). */
int bus_append_iface_entries(Publisher *p, ObjDir *d, const Iface *iface, sd_bus_message *m, bool privileged,
                             const char *skip, size_t *bound);
/* Appends k's interfaces first to end (not included) as {sa{sv}} entries; bus_append_object() appends
 * them all in their a{sa{sv}}. */
int bus_append_ifaces(Publisher *p, sd_bus_message *m, Kobject *k, ObjDir *d, bool privileged, size_t first,
                      size_t end, size_t *bound);
/* a{sa{sv}}: every interface of k with every property, as GetManagedObjects and InterfacesAdded
 * carry it; read through d (NULL: a directory of its own). */
int bus_append_object(Publisher *p, sd_bus_message *m, Kobject *k, ObjDir *d, bool privileged,
                      size_t *bound);
/* About what bus_append_object() appends for k, read from nothing: GetManagedObjects' estimate. */
size_t bus_object_size_estimate(const Kobject *k);
/* Adds to b the object and the files bus_append_object() will read of it. */
int bus_prefetch_object(Prefetch *b, Kobject *k, bool privileged);
/* as: the names of k's interfaces. */
int bus_append_interface_names(sd_bus_message *m, Kobject *k, size_t *bound);

/* ---- managed-objects.c ---- */

/* Does k answer GetManagedObjects for what is below it?  Ksets, disks and devices do, so that a
 * model too big for one message can be read in parts. */
bool bus_object_is_manager(const Kobject *k);
/* ObjectManager.GetManagedObjects on the root (top NULL) or below an object. */
int bus_method_get_managed_objects(Publisher *p, sd_bus_message *msg, Kobject *top, bool privileged,
                                   sd_bus_error *error);
/* At exit: replies being built are dropped, their callers told bus_reply_exiting(). */
void bus_gmo_cancel(Publisher *p);
/* Replies being built or queued for a caller that has left: dropped, since nobody would read them (a
 * client that sent a hundred GetManagedObjects and went held everyone else's for minutes). */
void bus_gmo_forget(Publisher *p, const char *sender);

/* ---- members-reply.c ---- */

/* Is Get of property (NULL: GetAll) of k's interface iface answered by bus_reply_members()?  For a
 * kset with thousands of members. */
bool bus_members_in_slices(const Kobject *k, const Iface *iface, const char *property);
/* Answers call with kset's Members (whole_interface: GetAll of its interface), appended in slices.
 * 1 (answered later), or a negative errno. */
int bus_reply_members(Publisher *p, sd_bus_message *call, Kobject *kset, bool whole_interface,
                      bool privileged);
/* At exit: replies being built are dropped, their callers told bus_reply_exiting(). */
void bus_members_cancel(Publisher *p);
/* Replies being built or queued for a caller that has left: dropped, as bus_gmo_forget() drops its. */
void bus_members_forget(Publisher *p, const char *sender);
/*
 * The parts of such a reply, for GetManagedObjects too: bus_members_open() takes a snapshot of kset's
 * members and opens their array (with entry: as the Members entry of an a{sv}); bus_members_append()
 * appends from *pos on until the monotonic clock passes until_usec (0: the slice is over, 1: all are
 * in; *off, if given, follows the marshalled size); bus_members_close() closes what was opened, with
 * entry appending the interface's other properties after Members.
 */
int bus_members_open(Publisher *p, sd_bus_message *m, Kobject *kset, bool entry, MembersSnapshot **ret);
int bus_members_append(sd_bus_message *m, MembersSnapshot *s, size_t *pos, uint64_t until_usec,
                       size_t *off);
int bus_members_close(Publisher *p, sd_bus_message *m, Kobject *kset, bool entry, bool privileged,
                      size_t *bound);

/* ---- introspect.c ---- */

/* The XML of an object: the interfaces' part cached per ktype and shape, checked to be UTF-8 once. */
int bus_introspect(Publisher *p, const char *path, Kobject *k, char **ret, size_t *ret_len);
void bus_introspect_cache_init(Publisher *p);
/* Before the name is taken: the child nodes' XML of the objects with hundreds of children or more (the
 * block kset), whose sort is too long for a turn at their first Introspect. */
void bus_introspect_prepare(Publisher *p);
void bus_introspect_cache_clear(Publisher *p);

/* ---- object.c ---- */

/* The fallback handler below the root path: every kobject's methods. */
int bus_object_handler(sd_bus_message *msg, void *userdata, sd_bus_error *error);
/* Where sd-bus serves properties (the Manager, the root), its error quotes an unknown name whole: a
 * megabyte of name came back as a megabyte.  No D-Bus name is longer than DBUS_NAME_MAX, so a longer
 * one names nothing and is refused here, quoted short; anything else is rewound and left to sd-bus. */
int bus_refuse_overlong_name(sd_bus_message *msg, void *userdata, sd_bus_error *error);
/* The node enumerator: the children of prefix. */
int bus_object_enumerator(sd_bus *bus, const char *prefix, void *userdata, char ***ret, sd_bus_error *error);

/* ---- manager.c ---- */

extern const sd_bus_vtable bus_manager_vtable[];
/* The Manager's a{sa{sv}} for GetManagedObjects: every property, as GetAll has them. */
int bus_manager_append_object(Publisher *p, sd_bus_message *m, size_t *bound);
/* The tssoa{ss} of one event: the Uevent signal's arguments, one item of GetEvents. */
int bus_append_event(sd_bus_message *m, const EventRecord *e);
/* What bus_append_event() appends at most, alignment included. */
size_t bus_event_bound(const EventRecord *e);

/* ---- authorize.c ---- */

/* The privileged part of a call, run once its caller is authorized.  As a method handler: it
 * replies itself, or returns a negative errno with error set, and bus_authorize() replies that. */
typedef int (*BusAuthorized)(Publisher *p, sd_bus_message *msg, sd_bus_error *error);

/*
 * Runs authorized(p, msg, error) once msg's caller may do action (a polkit action id): at once for
 * root and the daemon's own user, else when polkit has said yes; a refusal is answered with
 * AccessDenied (or InteractiveAuthorizationRequired).  details (key, value, …, NULL; may be NULL) go
 * to polkit for its rules.  Returns what authorized() returned, 1 if the answer comes later, or a
 * negative errno with error set.  Never waits.
 */
int bus_authorize(Publisher *p, sd_bus_message *msg, const char *action, const char *const *details,
                  BusAuthorized authorized, sd_bus_error *error);
/* At exit: drops the calls still waiting, their callers told bus_reply_exiting(). */
void bus_authorizations_cancel(Publisher *p);

/* A read that depends on who asks: known(p, msg, privileged, error) runs once the caller's uid is
 * known (privileged: root or the daemon's own user), at once or later, as bus_authorize() does; no
 * polkit is asked.  Returns what known() returned, or 1 if the answer comes later. */
typedef int (*BusCallerKnown)(Publisher *p, sd_bus_message *msg, bool privileged, sd_bus_error *error);
int bus_with_caller(Publisher *p, sd_bus_message *msg, BusCallerKnown known, sd_bus_error *error);
/* Forgets the uids of callers remembered so far: at exit. */
void bus_uids_init(Publisher *p);
void bus_uids_forget(Publisher *p);

/* ---- write.c ---- */

/* Writes value to rel below the object's directory (dirfd) on libuv's thread pool, then reads back
 * what the kernel stored, announces it and answers msg.  1 (answered later), or negative errno. */
int bus_write_start(Publisher *p, sd_bus_message *msg, Kobject *k, int dirfd, const char *rel,
                    const char *value);
/* At exit: writes still in flight answer nobody (the bus tells NoReply): whether the write landed is
 * not known. */
void bus_writes_orphan(Publisher *p);

/* ---- access.c ---- */

/* Is msg a call of interface.member (or of member, when the caller named no interface)? */
bool bus_is_call(sd_bus_message *msg, const char *interface, const char *member);
/* sd-bus checks argument types only for vtable methods; our handlers check their own.
 * 0 if msg carries exactly signature, else an InvalidArgs error. */
int bus_check_signature(sd_bus_message *msg, const char *signature, sd_bus_error *error);

/* A send failed because the bus is gone: said once, by the exit that follows, not for each message. */
static inline bool bus_gone_error(int r)
{
        return r == -ENOTCONN || r == -ECONNRESET;
}
