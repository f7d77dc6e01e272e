/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/log.h"
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
#define MEMBERS_SLICE_USEC 2000

struct BusMembers {
        sd_bus_message *call, *reply;
        Kobject *kset;
        MembersSnapshot *members;
        size_t pos;
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

/* Closes what bus_reply_members() opened and sends the reply; GetAll's other properties (a kset has
 * none but Members on the kernels we know) go after Members, as GetAll of a small kset has them. */
static int members_finish(Publisher *p, BusMembers *b)
{
        _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(p->sysfs, b->kset);
        Iface iface;
        int r;

        r = sd_bus_message_close_container(b->reply); /* ao */
        if (r >= 0)
                r = sd_bus_message_close_container(b->reply); /* v */
        if (r >= 0 && b->whole_interface) {
                r = sd_bus_message_close_container(b->reply); /* {sv} */
                if (r >= 0 && kobject_find_iface(b->kset, BLKMODEL_IFACE_KSET, &iface))
                        r = bus_append_iface_entries(p, &d, &iface, b->reply, b->privileged,
                                                     BLKMODEL_PROP_MEMBERS, NULL);
                if (r >= 0)
                        r = sd_bus_message_close_container(b->reply); /* a{sv} */
        }
        return r < 0 ? r : sd_bus_send(NULL, b->reply, NULL);
}

static void on_members_idle(uv_idle_t *h)
{
        Publisher *p = h->data;
        BusMembers *b = p->members;
        uint64_t start = uv_hrtime() / 1000;
        int r = 0;

        if (!b) {
                (void) uv_idle_stop(h);
                return;
        }
        while (b->pos < members_snapshot_size(b->members) && r >= 0) {
                Kobject *k = members_snapshot_get(b->members, b->pos++);

                if (k)
                        r = sd_bus_message_append_basic(b->reply, 'o', k->path);
                if (b->pos % 256 == 0 && uv_hrtime() / 1000 - start >= MEMBERS_SLICE_USEC)
                        break;
        }
        if (r >= 0 && b->pos < members_snapshot_size(b->members))
                return;
        if (r >= 0)
                r = members_finish(p, b);
        if (r < 0) {
                log_debug_errno(r, "Members of %s: %m", b->kset->path);
                (void) sd_bus_reply_method_errno(b->call, r, NULL);
        }
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
        r = kset_members_snapshot(p->model, kset, &b->members);
        if (r >= 0)
                r = sd_bus_message_new_method_return(call, &b->reply);
        if (r >= 0 && whole_interface) {
                r = sd_bus_message_open_container(b->reply, 'a', "{sv}");
                if (r >= 0)
                        r = sd_bus_message_open_container(b->reply, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append_basic(b->reply, 's', BLKMODEL_PROP_MEMBERS);
        }
        if (r >= 0)
                r = sd_bus_message_open_container(b->reply, 'v', "ao");
        if (r >= 0)
                r = sd_bus_message_open_container(b->reply, 'a', "o");
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

void bus_members_cancel(Publisher *p)
{
        while (p->members) {
                BusMembers *b = p->members;
                p->members = b->next;
                members_free(p, b);
        }
}
