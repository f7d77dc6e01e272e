/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "common/util.h"
#include "sysfs/listing.h"
#include "sysfs/shape-check.h"

static bool attr_set_has_file(const AttrSet *a, const char *file)
{
        for (size_t i = 0; a && i < a->n_attrs; i++)
                if (streq(a->attrs[i].file, file))
                        return true;
        return false;
}

/* Its files, as the scan takes them (builder_add_files()): what is below them is no group's. */
static bool group_unchanged(int dirfd, const Group *g)
{
        _cleanup_(closep) int fd = sysfs_open_subdir(dirfd, g->dir);
        SysfsEntry *e = NULL;
        size_t n = 0, files = 0;
        bool same = true;

        if (fd < 0 || sysfs_list(fd, &e, &n) < 0)
                return false;
        for (size_t i = 0; same && i < n; i++)
                if (e[i].type == SYSFS_ENTRY_FILE && !streq(e[i].name, "uevent")) {
                        same = attr_set_has_file(g->attrs, e[i].name);
                        files++;
                }
        sysfs_entries_free(e, n);
        return same && files == (g->attrs ? g->attrs->n_attrs : 0);
}

bool shape_check_unchanged(const Sysfs *s, const Kobject *k)
{
        _cleanup_(closep) int fd = -1;
        SysfsEntry *e = NULL;
        size_t n = 0, files = 0, dirs = 0, expected_dirs;
        bool same = true;

        if (!k->shape)
                return false;
        fd = sysfs_open_dir(s, k->devpath);
        if (fd < 0 || sysfs_list(fd, &e, &n) < 0)
                return false;
        expected_dirs = k->shape->n_groups;
        for (Kobject *c = k->first_child; c; c = c->next_sibling)
                if (!listing_kind_handles(k->ktype->id, c->name))
                        expected_dirs++;
        for (size_t i = 0; same && i < n; i++) {
                const char *name = e[i].name;
                if (e[i].type == SYSFS_ENTRY_FILE) {
                        if (streq(name, "uevent"))
                                continue;
                        same = attr_set_has_file(k->shape->attrs, name);
                        files++;
                } else if (e[i].type == SYSFS_ENTRY_DIR) {
                        if (listing_kind_handles(k->ktype->id, name))
                                continue;
                        bool group = false;
                        for (size_t g = 0; g < k->shape->n_groups && !group; g++)
                                group = streq(k->shape->groups[g].dir, name);
                        same = group || kobject_find_child(k, name);
                        dirs++;
                }
        }
        sysfs_entries_free(e, n);
        if (!same || files != (k->shape->attrs ? k->shape->attrs->n_attrs : 0) || dirs != expected_dirs)
                return false;
        for (size_t g = 0; g < k->shape->n_groups; g++)
                if (!group_unchanged(fd, &k->shape->groups[g]))
                        return false;
        return true;
}
