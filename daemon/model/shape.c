/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "base/log.h"
#include "blkmodel/names.h"
#include "model/naming.h"
#include "model/shape.h"

/*
 * Rules by file name.  ATTR_VOLATILE: the value moves by itself, without any event (SPEC §4).  It is
 * read fresh at every Get, never announced (EmitsChangedSignal "false") and never polled: announcing
 * it would be a signal per poll.  ATTR_PRIVILEGED: others may read the file, but the kernel cuts what
 * they get (pci_read_config() gives readers without CAP_SYS_ADMIN 64 bytes of 256).
 */
static const struct {
        const char *file;
        const char *kind;  /* NULL: of every kind; a group's files are of none */
        const char *group; /* NULL: wherever it is; else only in this group directory */
        AttrFlags flag;
} file_rules[] = {
                /* I/O counters, zram's too. */
                {"stat", NULL, NULL, ATTR_VOLATILE},
                {"inflight", NULL, NULL, ATTR_VOLATILE},
                {"mm_stat", NULL, NULL, ATTR_VOLATILE},
                {"io_stat", NULL, NULL, ATTR_VOLATILE},
                {"bd_stat", NULL, NULL, ATTR_VOLATILE},
                {"debug_stat", NULL, NULL, ATTR_VOLATILE},
                /* An NVMe namespace's utilization: every read sends the drive an Identify. */
                {"nuse", NULL, NULL, ATTR_VOLATILE},
                /* The requests in flight on an NVMe multipath path (its hidden disk's); a SCSI device's
                 * queue_depth is a tunable. */
                {"queue_depth", BLKMODEL_KTYPE_DISK, NULL, ATTR_VOLATILE},
                /* md's md/: the progress of a resync, check or reshape; a RAID 5's stripes in use
                 * (drivers/md/md.c, raid5.c).  Not mismatch_cnt: what a check found is worth a signal. */
                {"sync_completed", NULL, "md", ATTR_VOLATILE},
                {"sync_speed", NULL, "md", ATTR_VOLATILE},
                {"resync_start", NULL, "md", ATTR_VOLATILE},
                {"reshape_position", NULL, "md", ATTR_VOLATILE},
                {"stripe_cache_active", NULL, "md", ATTR_VOLATILE},
                /* A backing device's bcache/ (struct cached_dev) and a cache device's (struct cache):
                 * dirty data, the writeback controller's rate, write counters (drivers/md/bcache/
                 * sysfs.c; writeback_rate_debug counts down to the next write in ms). */
                {"dirty_data", NULL, "bcache", ATTR_VOLATILE},
                {"writeback_rate", NULL, "bcache", ATTR_VOLATILE},
                {"writeback_rate_debug", NULL, "bcache", ATTR_VOLATILE},
                {"priority_stats", NULL, "bcache", ATTR_VOLATILE},
                {"written", NULL, "bcache", ATTR_VOLATILE},
                {"btree_written", NULL, "bcache", ATTR_VOLATILE},
                {"metadata_written", NULL, "bcache", ATTR_VOLATILE},
                /* A SCSI device's commands in flight and I/O counters (drivers/scsi/scsi_sysfs.c). */
                {"device_busy", BLKMODEL_KTYPE_DEVICE, NULL, ATTR_VOLATILE},
                {"iodone_cnt", NULL, NULL, ATTR_VOLATILE},
                {"ioerr_cnt", NULL, NULL, ATTR_VOLATILE},
                {"iorequest_cnt", NULL, NULL, ATTR_VOLATILE},
                {"iotmo_cnt", NULL, NULL, ATTR_VOLATILE},
                /* A USB device's URBs so far, and its clocks (drivers/usb/core/sysfs.c). */
                {"urbnum", BLKMODEL_KTYPE_DEVICE, NULL, ATTR_VOLATILE},
                {"connected_duration", NULL, "power", ATTR_VOLATILE},
                {"active_duration", NULL, "power", ATTR_VOLATILE},
                /* Runtime-PM and wakeup clocks and counters (drivers/base/power/sysfs.c; the usage
                 * counts, with CONFIG_PM_ADVANCED_DEBUG, move around every command of a SCSI disk). */
                {"runtime_active_time", NULL, NULL, ATTR_VOLATILE},
                {"runtime_suspended_time", NULL, NULL, ATTR_VOLATILE},
                {"runtime_usage", NULL, "power", ATTR_VOLATILE},
                {"runtime_active_kids", NULL, "power", ATTR_VOLATILE},
                {"wakeup_count", NULL, NULL, ATTR_VOLATILE},
                {"wakeup_active", NULL, NULL, ATTR_VOLATILE},
                {"wakeup_active_count", NULL, NULL, ATTR_VOLATILE},
                {"wakeup_abort_count", NULL, NULL, ATTR_VOLATILE},
                {"wakeup_expire_count", NULL, NULL, ATTR_VOLATILE},
                {"wakeup_total_time_ms", NULL, NULL, ATTR_VOLATILE},
                {"wakeup_max_time_ms", NULL, NULL, ATTR_VOLATILE},
                {"wakeup_last_time_ms", NULL, NULL, ATTR_VOLATILE},
                {"wakeup_prevent_sleep_time_ms", NULL, NULL, ATTR_VOLATILE},
                {"config", BLKMODEL_KTYPE_DEVICE, NULL, ATTR_PRIVILEGED},
};

/* dir: the group's directory, NULL for the kind's own attributes. */
static AttrFlags file_rule_flags(const char *file, const char *kind, const char *dir)
{
        AttrFlags flags = 0;

        for (size_t i = 0; i < ELEMENTSOF(file_rules); i++) {
                const char *only_kind = file_rules[i].kind, *only_group = file_rules[i].group;
                if (streq(file, file_rules[i].file) && (!only_kind || streq(kind, only_kind)) &&
                    (!only_group || (dir && streq(dir, only_group))))
                        flags |= file_rules[i].flag;
        }
        return flags;
}

static const char *attr_set_key_of(const void *s)
{
        return ((const AttrSet *) s)->key;
}

static const char *shape_key_of(const void *s)
{
        return ((const Shape *) s)->key;
}

static const char *shape_names_key_of(const void *s)
{
        return ((const Shape *) s)->names_key;
}

void shape_registry_init(ShapeRegistry *r)
{
        hashmap_init(&r->attr_sets, attr_set_key_of);
        hashmap_init(&r->shapes, shape_key_of);
        hashmap_init(&r->by_names, shape_names_key_of);
        r->exact = false;
}

void shape_registry_deinit(ShapeRegistry *r)
{
        /* Every object has dropped its shape before the registry goes. */
        hashmap_deinit(&r->attr_sets);
        hashmap_deinit(&r->shapes);
        hashmap_deinit(&r->by_names);
}

static char *join(const char *const *names, size_t n, const char *sep)
{
        size_t len = 1;
        char *s, *q;

        for (size_t i = 0; i < n; i++)
                len += strlen(names[i]) + strlen(sep);
        s = malloc(len);
        if (!s)
                return NULL;
        q = s;
        for (size_t i = 0; i < n; i++)
                q = stpcpy(stpcpy(q, i ? sep : ""), names[i]);
        *q = 0;
        return s;
}

/* Of two files (or group directories) whose names map to one D-Bus name, the one of that very name
 * comes first and keeps it (SPEC §4: a property is named as its file, a name D-Bus refuses is what
 * is sanitized); else the first by name, as qsort is not stable. */
static int same_name_cmp(const char *x, const char *y, const char *name)
{
        bool x_exact = streq(x, name), y_exact = streq(y, name);

        if (x_exact != y_exact)
                return x_exact ? -1 : 1;
        return strcmp(x, y);
}

static int attr_cmp(const void *a, const void *b)
{
        const Attr *x = a, *y = b;
        int c = strcmp(x->member, y->member);

        return c != 0 ? c : same_name_cmp(x->file, y->file, x->member);
}

static bool is_reserved(const PropertyInfo *reserved, const char *member)
{
        for (; reserved && reserved->name; reserved++)
                if (streq(reserved->name, member))
                        return true;
        return false;
}

static void attr_set_free(AttrSet *s)
{
        for (size_t i = 0; i < s->n_attrs; i++) {
                free(s->attrs[i].file);
                free(s->attrs[i].member);
        }
        free(s->attrs);
        free(s->key);
        free(s);
}

/* Sorts by member and drops what cannot be published; logs each one left out. */
static int attr_set_fill(AttrSet *s, const char *const *files, const unsigned *mode_flags, size_t n,
                         const PropertyInfo *reserved, const char *kind, const char *dir, const char *what)
{
        size_t k = 0;
        int r;

        for (size_t i = 0; i < n; i++) {
                char *member;

                r = member_name_from_file(files[i], &member);
                if (r == -ENAMETOOLONG) {
                        log_warning("%s: attribute name '%s' is too long for D-Bus, not published.", what,
                                    files[i]);
                        continue;
                }
                if (r < 0)
                        return r;
                if (is_reserved(reserved, member)) {
                        log_warning("%s: attribute '%s' collides with the typed property %s, not published.",
                                    what, files[i], member);
                        free(member);
                        continue;
                }
                s->attrs[k].member = member;
                s->attrs[k].file = strdup(files[i]);
                s->n_attrs = ++k;
                if (!s->attrs[k - 1].file)
                        return -ENOMEM;
                s->attrs[k - 1].mode_flags = mode_flags[i];
                s->attrs[k - 1].flags |= file_rule_flags(files[i], kind, dir) | mode_flags[i];
        }
        qsort(s->attrs, k, sizeof(Attr), attr_cmp);

        /* Two files with one member ("a-b", "a_b"): the one attr_cmp() puts first keeps it. */
        size_t w = 0;
        for (size_t i = 0; i < k; i++) {
                if (w > 0 && streq(s->attrs[w - 1].member, s->attrs[i].member)) {
                        log_warning("%s: attributes '%s' and '%s' share the property name %s; '%s' is not "
                                    "published.",
                                    what, s->attrs[w - 1].file, s->attrs[i].file, s->attrs[i].member,
                                    s->attrs[i].file);
                        free(s->attrs[i].file);
                        free(s->attrs[i].member);
                        continue;
                }
                s->attrs[w++] = s->attrs[i];
        }
        s->n_attrs = w;
        return 0;
}

unsigned attr_flags_of_mode(int mode)
{
        unsigned flags = 0;

        if (mode < 0)
                return 0;
        if (mode & 0222)
                flags |= ATTR_WRITABLE;
        if ((mode & 0222) && !(mode & 0444))
                flags |= ATTR_WRITE_ONLY;
        if ((mode & 0444) && !(mode & 0004))
                flags |= ATTR_PRIVILEGED;
        return flags;
}

static int attr_set_get(ShapeRegistry *r, const char *const *files, size_t n, const PropertyInfo *reserved,
                        const char *kind, const char *dir, ShapeModeReader mode_of, void *userdata,
                        const char *what, AttrSet **ret)
{
        _cleanup_(freep) char *names = NULL, *key = NULL, *modes = NULL;
        _cleanup_(freep) unsigned *mode_flags = calloc(n ? n : 1, sizeof(unsigned));
        AttrSet *s;
        int k;

        /* The key includes the kind (which names are reserved depends on it), a group's directory
         * (its files' modes may differ from another group's of the same names), and what each
         * file's mode makes of it, a digit a file.  Its parts are joined by '/', the one character
         * no name has: with ':' the group x:y's file a and the group x's file y:a made one key. */
        modes = malloc(n + 1);
        if (!mode_flags || !modes)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                _cleanup_(freep) char *rel = dir ? path_join(dir, files[i]) : NULL;
                int mode = mode_of ? mode_of(rel ?: files[i], userdata) : 0;

                /* Out of descriptors or memory says nothing of the file: taken as no write bit, a
                 * Rescan under fd pressure told every attribute read-only (InterfacesRemoved and
                 * InterfacesAdded) until the next one.  The caller keeps what was published. */
                if (errno_is_resource(mode))
                        return mode;
                mode_flags[i] = attr_flags_of_mode(mode);
                modes[i] = (char) ('0' + mode_flags[i]);
        }
        modes[n] = '\0';
        names = join(files, n, "/");
        if (!names || asprintf(&key, "%s/%s/%s/%s", kind, strempty(dir), names, modes) < 0)
                return -ENOMEM;

        s = hashmap_get(&r->attr_sets, key);
        if (s) {
                s->n_ref++;
                *ret = s;
                return 0;
        }

        s = calloc(1, sizeof(AttrSet));
        if (!s)
                return -ENOMEM;
        s->attrs = calloc(n ? n : 1, sizeof(Attr));
        if (!s->attrs) {
                free(s);
                return -ENOMEM;
        }
        k = attr_set_fill(s, files, mode_flags, n, reserved, kind, dir, what);
        if (k < 0) {
                attr_set_free(s);
                return k;
        }
        s->n_ref = 1;
        s->key = TAKE_PTR(key);
        k = hashmap_put(&r->attr_sets, s);
        if (k < 0) {
                attr_set_free(s);
                return k;
        }
        *ret = s;
        return 0;
}

static void attr_set_unref(ShapeRegistry *r, AttrSet *s)
{
        if (!s || --s->n_ref > 0)
                return;
        hashmap_remove(&r->attr_sets, s);
        attr_set_free(s);
}

const Attr *attr_set_find(const AttrSet *s, const char *member)
{
        size_t lo = 0, hi = s->n_attrs;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                int c = strcmp(member, s->attrs[mid].member);
                if (c == 0)
                        return &s->attrs[mid];
                if (c < 0)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        return NULL;
}

bool attr_set_has_flag(const AttrSet *s, unsigned flag)
{
        for (size_t i = 0; s && i < s->n_attrs; i++)
                if (s->attrs[i].flags & flag)
                        return true;
        return false;
}

const Group *shape_find_group(const Shape *s, const char *interface)
{
        for (size_t i = 0; i < s->n_groups; i++)
                if (streq(s->groups[i].interface, interface))
                        return &s->groups[i];
        return NULL;
}

static void shape_free(ShapeRegistry *r, Shape *s)
{
        for (size_t i = 0; i < s->n_groups; i++) {
                free(s->groups[i].dir);
                free(s->groups[i].interface);
                attr_set_unref(r, s->groups[i].attrs);
        }
        free(s->groups);
        attr_set_unref(r, s->attrs);
        if (s->names_key)
                hashmap_remove(&r->by_names, s);
        free(s->names_key);
        free(s->key);
        free(s);
}

static int group_cmp(const void *a, const void *b)
{
        const Group *x = a, *y = b;
        int c = strcmp(x->interface, y->interface);

        return c != 0 ? c
                      : same_name_cmp(x->dir, y->dir, x->interface + strlen(BLKMODEL_IFACE_GROUP_PREFIX));
}

/* Every name a builder holds, in order: "disk/2/ro/size/1/power/1/control".  A file name never holds
 * a '/', and the counts say where each list ends, so two different builders never share a key. */
static char *names_key_of(const ShapeBuilder *b, const char *kind)
{
        size_t len = strlen(kind) + 48; /* the two counts */
        char *key, *q;

        for (size_t i = 0; i < b->n_files; i++)
                len += strlen(b->files[i]) + 1;
        for (size_t g = 0; g < b->n_groups; g++) {
                len += strlen(b->groups[g].dir) + 48;
                for (size_t i = 0; i < b->groups[g].n_files; i++)
                        len += strlen(b->groups[g].files[i]) + 1;
        }
        key = malloc(len);
        if (!key)
                return NULL;
        q = key + sprintf(key, "%s/%zu", kind, b->n_files);
        for (size_t i = 0; i < b->n_files; i++)
                q = stpcpy(stpcpy(q, "/"), b->files[i]);
        q += sprintf(q, "/%zu", b->n_groups);
        for (size_t g = 0; g < b->n_groups; g++) {
                q += sprintf(q, "/%s/%zu", b->groups[g].dir, b->groups[g].n_files);
                for (size_t i = 0; i < b->groups[g].n_files; i++)
                        q = stpcpy(stpcpy(q, "/"), b->groups[g].files[i]);
        }
        return key;
}

/* A group directory's interface: 1 and *ret filled, 0 if its name cannot be published, or -errno. */
static int group_build(ShapeRegistry *r, const BuilderGroup *bg, ShapeModeReader mode_of, void *userdata,
                       const char *what, Group *ret)
{
        _cleanup_(freep) char *element = NULL, *interface = NULL, *dir = NULL;
        int k;

        k = member_name_from_file(bg->dir, &element);
        /* D-Bus caps an interface name at 255 bytes, the prefix included. */
        if (k >= 0 && strlen(BLKMODEL_IFACE_GROUP_PREFIX) + strlen(element) > 255)
                k = -ENAMETOOLONG;
        if (k == -ENAMETOOLONG) {
                log_warning("%s: group directory name '%s' is too long for D-Bus, not published.", what,
                            bg->dir);
                return 0;
        }
        if (k < 0)
                return k;
        if (asprintf(&interface, BLKMODEL_IFACE_GROUP_PREFIX "%s", element) < 0) {
                interface = NULL;
                return -ENOMEM;
        }
        dir = strdup(bg->dir);
        if (!dir)
                return -ENOMEM;
        k = attr_set_get(r, bg->files, bg->n_files, NULL, "group", bg->dir, mode_of, userdata, what,
                         &ret->attrs);
        if (k < 0)
                return k;
        ret->interface = TAKE_PTR(interface);
        ret->dir = TAKE_PTR(dir);
        return 1;
}

int shape_get(ShapeRegistry *r, const ShapeBuilder *b, const char *kind, const PropertyInfo *reserved,
              ShapeModeReader mode_of, void *userdata, bool exact, const char *what, Shape **ret)
{
        _cleanup_(freep) char *key = NULL, *names_key = NULL;
        Shape *s;
        int k;

        names_key = names_key_of(b, kind);
        if (!names_key)
                return -ENOMEM;
        s = exact || r->exact ? NULL : hashmap_get(&r->by_names, names_key);
        if (s) {
                s->n_ref++;
                *ret = s;
                return 0;
        }

        s = calloc(1, sizeof(Shape));
        if (!s)
                return -ENOMEM;
        s->n_ref = 1;
        s->groups = calloc(b->n_groups ? b->n_groups : 1, sizeof(Group));
        if (!s->groups) {
                free(s);
                return -ENOMEM;
        }

        k = attr_set_get(r, b->files, b->n_files, reserved, kind, NULL, mode_of, userdata, what, &s->attrs);
        if (k < 0)
                goto fail;

        for (size_t i = 0; i < b->n_groups; i++) {
                k = group_build(r, &b->groups[i], mode_of, userdata, what, &s->groups[s->n_groups]);
                if (k < 0)
                        goto fail;
                s->n_groups += (size_t) k;
        }
        qsort(s->groups, s->n_groups, sizeof(Group), group_cmp);
        for (size_t i = 1; i < s->n_groups; i++)
                if (streq(s->groups[i].interface, s->groups[i - 1].interface)) {
                        log_warning("%s: groups '%s' and '%s' share an interface name; '%s' is not "
                                    "published.",
                                    what, s->groups[i - 1].dir, s->groups[i].dir, s->groups[i].dir);
                        free(s->groups[i].dir);
                        free(s->groups[i].interface);
                        attr_set_unref(r, s->groups[i].attrs);
                        memmove(&s->groups[i], &s->groups[i + 1], (s->n_groups - i - 1) * sizeof(Group));
                        s->n_groups--;
                        i--;
                }

        /* The shape's identity: its attribute sets, which are interned already, so pointers suffice. */
        size_t len = 32 * (s->n_groups + 1) + 1;
        for (size_t i = 0; i < s->n_groups; i++)
                len += strlen(s->groups[i].dir) + 2;
        key = malloc(len);
        if (!key) {
                k = -ENOMEM;
                goto fail;
        }
        char *q = key + sprintf(key, "%p", (void *) s->attrs);
        for (size_t i = 0; i < s->n_groups; i++)
                q += sprintf(q, ";%s=%p", s->groups[i].dir, (void *) s->groups[i].attrs);

        Shape *existing = hashmap_get(&r->shapes, key);
        if (existing) {
                shape_free(r, s);
                s = existing;
                s->n_ref++;
        } else {
                s->key = TAKE_PTR(key);
                k = hashmap_put(&r->shapes, s);
                if (k < 0)
                        goto fail;
        }
        /* Another listing that makes the same shape (groups whose names clash) stays on this slow
         * path: a shape remembers only the first. */
        if (!s->names_key) {
                s->names_key = TAKE_PTR(names_key);
                if (hashmap_put(&r->by_names, s) < 0)
                        names_key = TAKE_PTR(s->names_key); /* freed on return */
        }
        *ret = s;
        return 0;

fail:
        shape_free(r, s);
        return k;
}

Shape *shape_ref(Shape *s)
{
        if (s)
                s->n_ref++;
        return s;
}

void shape_unref(ShapeRegistry *r, Shape *s)
{
        if (!s || --s->n_ref > 0)
                return;
        hashmap_remove(&r->shapes, s);
        shape_free(r, s);
}

void shape_builder_done(ShapeBuilder *b)
{
        free(b->files);
        for (size_t i = 0; i < b->n_groups; i++)
                free(b->groups[i].files);
        free(b->groups);
        *b = (ShapeBuilder){};
}

int shape_builder_add_file(ShapeBuilder *b, const char *name)
{
        if (GREEDY_REALLOC(b->files, b->n_files_allocated, b->n_files + 1) < 0)
                return -ENOMEM;
        b->files[b->n_files++] = name;
        return 0;
}

int shape_builder_add_group(ShapeBuilder *b, const char *dir)
{
        if (GREEDY_REALLOC(b->groups, b->n_groups_allocated, b->n_groups + 1) < 0)
                return -ENOMEM;
        b->groups[b->n_groups++] = (BuilderGroup){.dir = dir};
        return 0;
}

int shape_builder_add_group_file(ShapeBuilder *b, const char *name)
{
        BuilderGroup *g;

        if (b->n_groups == 0)
                return -EINVAL;
        g = &b->groups[b->n_groups - 1];
        if (GREEDY_REALLOC(g->files, g->n_allocated, g->n_files + 1) < 0)
                return -ENOMEM;
        g->files[g->n_files++] = name;
        return 0;
}
