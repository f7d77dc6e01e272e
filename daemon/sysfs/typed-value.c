/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "sysfs/typed-value.h"
#include "base/hash.h"
#include "base/log.h"
#include "common/util.h"
#include "model/order.h"
#include "sysfs/values.h"

void typed_value_done(TypedValue *v)
{
        v->string = mfree(v->string);
        switch (v->strv_ownership) {
        case STRV_OWNED:
                v->strv = strv_free(v->strv);
                break;
        case STRV_STRINGS_BORROWED:
                v->strv = mfree(v->strv);
        }
        v->strv_ownership = STRV_OWNED;
}

static uint64_t read_number(ObjDir *d, const char *file)
{
        const char *v;
        uint64_t x;

        if (objdir_read(d, file, &v) < 0 || parse_u64(v, &x) < 0) {
                log_debug("%s/%s: unreadable, reported as 0.", d->k->devpath, file);
                return 0;
        }
        return x;
}

static int set_string(TypedValue *v, const char *s)
{
        v->string = strdup(s);
        return v->string ? 0 : -ENOMEM;
}

/* The objects' own paths, not copies: every reader uses the value within the turn it read it. */
static int set_paths(TypedValue *v, Kobject *const *l, size_t n)
{
        v->strv = malloc(sizeof(char *) * (n + 1));
        if (!v->strv)
                return -ENOMEM;
        v->strv_ownership = STRV_STRINGS_BORROWED;
        for (size_t i = 0; i < n; i++)
                v->strv[i] = l[i]->path;
        v->strv[n] = NULL;
        return 0;
}

static int read_children(ObjDir *d, TypedValue *v, KtypeId id)
{
        _cleanup_(freep) Kobject **l = NULL;
        size_t n;
        int r;

        r = kobject_children_sorted(d->k, id, &l, &n);
        return r < 0 ? r : set_paths(v, l, n);
}

static int read_members(ObjDir *d, Model *m, TypedValue *v)
{
        Kobject *const *l;
        size_t n;
        int r;

        r = kset_members_sorted(m, d->k, &l, &n);
        return r < 0 ? r : set_paths(v, l, n);
}

typedef struct LinkDir {
        const ObjDir *d;
        const Model *m;
        const char *source;
} LinkDir;

static const char *link_dir_lookup(const char *name, void *userdata)
{
        const LinkDir *ld = userdata;
        Kobject *o = model_find_name(ld->m, name);

        if (!o)
                log_debug("%s/%s%s: not a published block device, left out.", ld->d->k->devpath, ld->source,
                          name);
        return o ? o->path : NULL;
}

/* holders/ and slaves/ hold one link per stacked device, named by its kernel name. */
static int read_link_dir(ObjDir *d, const Model *m, TypedValue *v, const char *source)
{
        LinkDir ld = {.d = d, .m = m, .source = source};
        const char *names;

        if (objdir_read(d, source, &names) < 0)
                names = "";
        return parse_link_names(names, link_dir_lookup, &ld, &v->strv);
}

static int read_uevent(ObjDir *d, TypedValue *v)
{
        const char *text;

        if (!d->k->ktype->has_uevent || objdir_read(d, "uevent", &text) < 0)
                text = "";
        return parse_uevent_file(text, &v->strv);
}

static int read_dev(ObjDir *d, TypedValue *v, bool major)
{
        unsigned maj = 0, min = 0;
        const char *text;

        if (objdir_read(d, "dev", &text) < 0 || parse_dev(text, &maj, &min) < 0)
                log_debug("%s/dev: unreadable, %s reported as 0.", d->k->devpath, major ? "Major" : "Minor");
        v->number = major ? maj : min;
        return 0;
}

static int read_number_of_partition(ObjDir *d, TypedValue *v)
{
        _cleanup_(freep) char *partn = NULL;
        const char *text;
        uint64_t x;

        if (objdir_read(d, "uevent", &text) >= 0 && uevent_file_get(text, "PARTN", &partn) >= 0 &&
            parse_u64(partn, &x) >= 0)
                v->number = x;
        else
                v->number = read_number(d, "partition");
        if (v->number > UINT32_MAX)
                v->number = 0;
        return 0;
}

static int read_scheduler(ObjDir *d, TypedValue *v, bool all)
{
        const char *text;

        if (objdir_read(d, "scheduler", &text) < 0)
                text = "";
        return parse_scheduler(text, all ? &v->strv : NULL, all ? NULL : &v->string);
}

static int child_path(ObjDir *d, TypedValue *v, KtypeId id)
{
        Kobject *c = kobject_find_child_type(d->k, id);
        return set_string(v, c ? c->path : "/");
}

/* The basename of a link of the object's directory ("subsystem@" → "scsi"), "" when there is none. */
static int read_link_name(ObjDir *d, TypedValue *v, const char *source)
{
        const char *name;

        return set_string(v, objdir_read(d, source, &name) >= 0 ? name : "");
}

static int read_value(ObjDir *d, Model *m, PropertyId id, TypedValue *v)
{
        const Kobject *k = d->k;

        switch (id) {
        case PROP_NAME:
                return set_string(v, k->name);
        case PROP_DEVPATH:
                return set_string(v, k->devpath);
        case PROP_PARENT:
                return set_string(v, k->parent ? k->parent->path : "/");
        case PROP_KSET:
                return set_string(v, k->kset ? k->kset->path : "/");
        case PROP_KTYPE:
                return set_string(v, k->ktype->name);
        case PROP_UEVENT:
                return read_uevent(d, v);
        case PROP_MAJOR:
        case PROP_MINOR:
                return read_dev(d, v, id == PROP_MAJOR);
        case PROP_SIZE:
                v->number = sectors_to_bytes(read_number(d, "size"));
                return 0;
        case PROP_START:
                v->number = sectors_to_bytes(read_number(d, "start"));
                return 0;
        case PROP_READ_ONLY:
                v->number = read_number(d, "ro") != 0;
                return 0;
        case PROP_REMOVABLE:
                v->number = read_number(d, "removable") != 0;
                return 0;
        case PROP_PARTITIONS:
                return read_children(d, v, KTYPE_PARTITION);
        case PROP_HOLDERS:
                return read_link_dir(d, m, v, PROPERTY_SOURCE_HOLDERS);
        case PROP_SLAVES:
                return read_link_dir(d, m, v, PROPERTY_SOURCE_SLAVES);
        case PROP_QUEUE:
                return child_path(d, v, KTYPE_QUEUE);
        case PROP_ELEVATOR:
                return child_path(d, v, KTYPE_ELEVATOR);
        case PROP_DEVICE:
                return set_string(v, k->device ? k->device->path : "/");
        case PROP_NUMBER:
                return read_number_of_partition(d, v);
        case PROP_SCHEDULER:
                return read_scheduler(d, v, false);
        case PROP_SCHEDULERS:
                return read_scheduler(d, v, true);
        case PROP_MEMBERS:
                return read_members(d, m, v);
        case PROP_SUBSYSTEM:
                return read_link_name(d, v, PROPERTY_SOURCE_SUBSYSTEM);
        case PROP_DRIVER:
                return read_link_name(d, v, PROPERTY_SOURCE_DRIVER);
        case _PROP_MAX:
                break;
        }
        return -EINVAL;
}

int typed_value_read(ObjDir *d, Model *m, const PropertyInfo *p, TypedValue *ret)
{
        TypedValue v = {.signature = p->signature};
        int r;

        r = read_value(d, m, p->id, &v);
        if (r < 0) {
                typed_value_done(&v);
                return r;
        }
        *ret = v;
        return 0;
}

uint64_t typed_value_hash(const TypedValue *v, uint64_t h)
{
        h = fnv1a(&v->number, sizeof(v->number), h);
        if (v->string)
                h = fnv1a(v->string, strlen(v->string) + 1, h);
        for (char **s = v->strv; s && *s; s++)
                h = fnv1a(*s, strlen(*s) + 1, h);
        return h;
}

size_t typed_value_size(const TypedValue *v)
{
        /* Each string: a 4-byte length, the bytes, a NUL, padding. */
        size_t n = 8;

        if (v->string)
                n += 8 + strlen(v->string);
        for (char **s = v->strv; s && *s; s++)
                n += 8 + strlen(*s);
        return n;
}
