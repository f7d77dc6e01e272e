/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>

#include "base/log.h"
#include "live/live-internal.h"
#include "live/record.h"
#include "model/iface.h"

/*
 * What an object keeps of its last reading: its change record, packed against the first record of
 * its shape (live/record.h).  An object points at that template itself when its values are the
 * template's.
 */

/* The first record of each shape, which the later ones are packed against (live/record.h). */
typedef struct Template {
        PackedRecord *record;
        char key[]; /* the shape's key */
} Template;

/* Shapes come from the kernel's attribute sets: a few dozen on a real machine.  A bound anyway, so
 * that no sequence of directories grows the table without end. */
#define TEMPLATES_MAX 4096

static const char *template_key(const void *t)
{
        return ((const Template *) t)->key;
}

void changes_init(Live *l)
{
        hashmap_init(&l->templates, template_key);
}

void changes_done(Live *l)
{
        Template *t;
        size_t i = 0;

        while ((t = hashmap_iterate(&l->templates, &i))) {
                record_template_free(t->record);
                free(t);
        }
        hashmap_deinit(&l->templates);
}

static const PackedRecord *template_for(Live *l, const Kobject *k, const ChangeRecord *r)
{
        Template *t;
        size_t n;

        if (!k->shape)
                return NULL;
        t = hashmap_get(&l->templates, k->shape->key);
        if (t)
                return t->record;
        if (hashmap_size(&l->templates) >= TEMPLATES_MAX)
                return NULL;
        n = strlen(k->shape->key) + 1;
        t = malloc(offsetof(Template, key) + n);
        if (!t)
                return NULL;
        memcpy(t->key, k->shape->key, n);
        if (record_template(r, &t->record) < 0) {
                free(t);
                return NULL;
        }
        if (hashmap_put(&l->templates, t) < 0) {
                record_template_free(t->record);
                free(t);
                return NULL;
        }
        return t->record;
}

void changes_keep(Live *l, Kobject *k, const ChangeRecord *old, const ChangeRecord *now)
{
        PackedRecord *p;

        if (old && record_equal(old, now) && old->value_bytes == now->value_bytes)
                return;
        l->n_keeps++;
        changes_forget(k);
        k->observer_changed = l->n_keeps;
        /* Without memory for it, no reading: the next one announces everything rather than compare
         * with a stale one. */
        if (record_pack(now, template_for(l, k, now), &p) < 0) {
                log_error("%s: out of memory for its values' record.", k->devpath);
                return;
        }
        k->observer_data = p;
}

int changes_kept(const Kobject *k, ChangeRecord **ret)
{
        *ret = NULL;
        return k->observer_data ? record_unpack(k->observer_data, ret) : 0;
}

bool changes_recorded(const Kobject *k)
{
        return k->observer_data;
}

static int pair_add(char ***pairs, size_t *n, const char *key, const char *value)
{
        int r = strv_extend(pairs, n, key);
        return r < 0 ? r : strv_extend(pairs, n, value);
}

static int number_add(char ***pairs, size_t *n, const char *key, uint64_t value)
{
        char buf[24];

        (void) snprintf(buf, sizeof(buf), "%" PRIu64, value);
        return pair_add(pairs, n, key, buf);
}

int changes_kept_uevent(const Kobject *k, char ***ret)
{
        _cleanup_(strv_freep) char **pairs = NULL;
        _cleanup_(freep) ChangeRecord *rec = NULL;
        _cleanup_(freep) char *devname = NULL;
        uint64_t major = 0, minor = 0, partn = 0;
        char diskseq[RECORD_SHORT_MAX + 1] = "";
        size_t offset = 0, n = 0;
        Iface iface;
        int r;

        *ret = NULL;
        if (!ktype_is_block_device(k->ktype))
                return 0;
        r = changes_kept(k, &rec);
        if (r < 0 || !rec)
                return r;
        if (rec->n_slots != changes_n_slots(k))
                return 0; /* a reading of another shape: its slots say nothing of this one */

        /* In the record's order (changes.c): each interface's typed slots, then its attributes. */
        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                for (const PropertyInfo *p = iface.properties; p->name; p++) {
                        if (!slot_typed(p))
                                continue;
                        RecordSlot s = record_next(rec, &offset);
                        if (p->id == PROP_MAJOR)
                                (void) record_slot_number(s, &major);
                        else if (p->id == PROP_MINOR)
                                (void) record_slot_number(s, &minor);
                        else if (p->id == PROP_NUMBER)
                                (void) record_slot_number(s, &partn);
                }
                for (size_t j = 0; iface.attrs && j < iface.attrs->n_attrs; j++) {
                        RecordSlot s = record_next(rec, &offset);
                        if (iface.kind == IFACE_KIND && streq(iface.attrs->attrs[j].file, "diskseq"))
                                (void) record_slot_string(s, diskseq); /* a long one is a fingerprint */
                }
        }

        /* The kernel's DEVNAME of a block device is its /dev name (cciss/c0d0). */
        devname = devnode_name_of(k->name);
        if (!devname)
                return -ENOMEM;
        r = 0;
        if (major != 0 || minor != 0) { /* 0:0 is a dev file that could not be read */
                r = number_add(&pairs, &n, "MAJOR", major);
                if (r >= 0)
                        r = number_add(&pairs, &n, "MINOR", minor);
        }
        if (r >= 0)
                r = pair_add(&pairs, &n, "DEVNAME", devname);
        if (r >= 0)
                r = pair_add(&pairs, &n, "DEVTYPE", k->ktype->id == KTYPE_DISK ? "disk" : "partition");
        if (r >= 0 && k->ktype->id == KTYPE_DISK && diskseq[0])
                r = pair_add(&pairs, &n, "DISKSEQ", diskseq);
        if (r >= 0 && k->ktype->id == KTYPE_PARTITION && partn > 0)
                r = number_add(&pairs, &n, "PARTN", partn);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(pairs);
        return 0;
}

void changes_forget(Kobject *k)
{
        record_packed_free(k->observer_data);
        k->observer_data = NULL;
        k->observer_mark = 0;
}

/* The record was made, or found equal to, a reading whose values have this fingerprint: a reply that
 * read the same values has nothing to tell, until the record changes (changes_keep() forgets it). */
void changes_mark(Kobject *k, uint64_t fingerprint)
{
        if (k->observer_data)
                k->observer_mark = fingerprint;
}

bool changes_marked(const Kobject *k, uint64_t fingerprint)
{
        return k->observer_data && k->observer_mark == fingerprint;
}

size_t live_object_value_bytes(const Kobject *k)
{
        const PackedRecord *c = k->observer_data;
        return c ? c->value_bytes : 0;
}
