/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/log.h"
#include "base/turn.h"
#include "blkmodel/names.h"
#include "bus/bus-internal.h"
#include "bus/errors.h"
#include "model/order.h"

/*
 * A kset's Members, when it has thousands (the block kset has every disk and partition), appended in
 * slices while the loop serves everyone else: at 10,000 disks x 4 partitions a Get or GetAll of its
 * 50,000 paths held the loop 12-18 ms, most of it sd-bus copying the paths into a buffer that grows to
 * 2 MB.  The reply holds the members there were when the call came, as GetManagedObjects' does, but
 * those that went before it reached them: their objects may be freed by then.  The signals of what
 * came and went meanwhile may go before the reply (org.blkmodel1(5) tells clients the order to apply
 * them in).
 */

/* Fewer are appended at once: 4,096 paths take about a millisecond. */
#define MEMBERS_AT_ONCE 4096

struct BusMembers {
        sd_bus_message *call, *reply;
        Kobject *kset;
        MembersSnapshot *members;
        size_t pos, bound; /* bound: of the paths appended, as the bus marshals them */
        bool whole_interface; /* GetAll: Members is one entry of a{sv}; Get: the variant alone */
        bool privileged;
        BusMembers *next;
};

bool bus_members_in_slices(const Kobject *k, const Iface *iface, const char *property)
{
        return k->ktype->id == KTYPE_KSET && k->n_members > MEMBERS_AT_ONCE && iface->kind == IFACE_KIND &&
               (!property || streq(property, BLKMODEL_PROP_MEMBERS));
}

static BusMembers *members_free(Publisher *p, BusMembers *b)
{
        members_snapshot_free(p->model, b->members);
        kobject_unref(p->model, b->kset);
        sd_bus_message_unref(b->reply);
        sd_bus_message_unref(b->call);
        free(b);
        return NULL;
}

int bus_members_open(Publisher *p, sd_bus_message *m, Kobject *kset, bool entry, MembersSnapshot **ret)
{
        int r;

        r = kset_members_snapshot(p->model, kset, ret);
        if (r >= 0 && entry) {
                r = sd_bus_message_open_container(m, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append_basic(m, 's', BLKMODEL_PROP_MEMBERS);
        }
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "ao");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "o");
        return r;
}

int bus_members_append(sd_bus_message *m, MembersSnapshot *s, size_t *pos, uint64_t until_usec,
                       size_t *off)
{
        size_t n = members_snapshot_size(s);

        while (*pos < n) {
                Kobject *k = members_snapshot_get(s, (*pos)++);

                if (k) {
                        int r = sd_bus_message_append_basic(m, 'o', k->path);
                        if (r < 0)
                                return r;
                        if (off)
                                *off = wire_string_end(*off, k->path);
                }
                if (*pos % 256 == 0 && *pos < n && now_usec() >= until_usec)
                        return 0;
        }
        return 1;
}

/* The interface's other properties (a kset has none but Members on the kernels we know) go after
 * Members, as GetAll of a small kset has them. */
int bus_members_close(Publisher *p, sd_bus_message *m, Kobject *kset, bool entry, bool privileged,
                      size_t *bound)
{
        _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(p->sysfs, kset);
        Iface iface;
        int r;

        r = sd_bus_message_close_container(m); /* ao */
        if (r >= 0)
                r = sd_bus_message_close_container(m); /* v */
        if (r >= 0 && entry) {
                r = sd_bus_message_close_container(m); /* {sv} */
                if (r >= 0 && kobject_find_iface(kset, BLKMODEL_IFACE_KSET, &iface))
                        r = bus_append_iface_entries(p, &d, &iface, m, privileged, BLKMODEL_PROP_MEMBERS,
                                                     bound);
        }
        return r;
}

static void on_members_idle(uv_idle_t *h)
{
        Publisher *p = h->data;
        BusMembers *b = p->members;
        int r;
        TURN_PART("a slice of a Members reply");

        if (!b) {
                (void) uv_idle_stop(h);
                return;
        }
        r = bus_members_append(b->reply, b->members, &b->pos, turn_slice_end(now_usec()), &b->bound);
        if (r >= 0 && b->bound > bus_reply_body_max(p)) {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

                (void) bus_refuse_reply(p, BLKMODEL_PROP_MEMBERS, b->kset->path, b->bound,
                                        "Introspect lists the kset's children.", &error);
                (void) sd_bus_reply_method_error(b->call, &error);
                p->members = b->next;
                members_free(p, b);
                return;
        }
        if (r == 0)
                return;
        if (r > 0)
                r = bus_members_close(p, b->reply, b->kset, b->whole_interface, b->privileged, NULL);
        if (r >= 0 && b->whole_interface)
                r = sd_bus_message_close_container(b->reply); /* a{sv} */
        if (r >= 0)
                r = sd_bus_send(NULL, b->reply, NULL);
        if (r < 0) {
                log_debug_errno(r, "Members of %s: %m", b->kset->path);
                (void) sd_bus_reply_method_errno(b->call, r, NULL);
        } else
                log_debug("Members of %s sent to %s: %zu paths.", b->kset->path,
                          strna(sd_bus_message_get_sender(b->call)), members_snapshot_size(b->members));
        p->members = b->next;
        members_free(p, b);
}

int bus_reply_members(Publisher *p, sd_bus_message *call, Kobject *kset, bool whole_interface,
                      bool privileged)
{
        BusMembers *b, **tail;
        int r;

        b = calloc(1, sizeof(BusMembers));
        if (!b)
                return -ENOMEM;
        *b = (BusMembers){.call = sd_bus_message_ref(call),
                          .kset = kobject_ref(kset),
                          .whole_interface = whole_interface,
                          .privileged = privileged};
        /* Before the paths: Get's variant (its signature "ao", the array's length); GetAll's a{sv} and
         * the Members entry's key, signature and array length. */
        b->bound = whole_interface
                           ? WIRE_DICT_ARRAY_HEAD + wire_align(wire_entry_head(BLKMODEL_PROP_MEMBERS, "ao"), 4) + 4
                           : wire_align(1 + 2 + 1, 4) + 4;
        r = sd_bus_message_new_method_return(call, &b->reply);
        if (r >= 0 && whole_interface)
                r = sd_bus_message_open_container(b->reply, 'a', "{sv}");
        if (r >= 0)
                r = bus_members_open(p, b->reply, kset, whole_interface, &b->members);
        if (r < 0) {
                members_free(p, b);
                return r;
        }
        for (tail = &p->members; *tail; tail = &(*tail)->next)
                ;
        *tail = b;
        (void) uv_idle_start(p->members_idle, on_members_idle);
        return 1;
}

void bus_members_forget(Publisher *p, const char *sender)
{
        /* The first is the one being built: the idle handler takes the next in line at its next slice,
         * and stops itself when none is left. */
        for (BusMembers **at = &p->members; *at;)
                if (streq_ptr(sd_bus_message_get_sender((*at)->call), sender)) {
                        BusMembers *b = *at;

                        log_debug("Members of %s for %s dropped: the caller has left the bus.",
                                  b->kset->path, sender);
                        *at = b->next;
                        members_free(p, b);
                } else
                        at = &(*at)->next;
}

void bus_members_cancel(Publisher *p)
{
        while (p->members) {
                BusMembers *b = p->members;
                p->members = b->next;
                bus_reply_exiting(b->call);
                members_free(p, b);
        }
}
