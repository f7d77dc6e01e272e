/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/log.h"
#include "live/live-internal.h"
#include "sysfs/reconcile.h"
#include "sysfs/values.h"

/* What the kernel would have sent: ACTION, DEVPATH, SUBSYSTEM, the uevent file, and our mark. */
int live_synthesize(Live *l, const char *action, const char *devpath, const char *object_path, Kobject *k)
{
        _cleanup_(strv_freep) char **keys = NULL, **values = NULL, **pairs = NULL;
        _cleanup_(freep) char *text = NULL, *rel = NULL;
        size_t n_keys = 0, n_values = 0;
        int r;

        r = strv_extend(&keys, &n_keys, "ACTION");
        if (r >= 0)
                r = strv_extend(&values, &n_values, action);
        if (r >= 0)
                r = strv_extend(&keys, &n_keys, "DEVPATH");
        if (r >= 0)
                r = strv_extend(&values, &n_values, devpath);
        if (r >= 0)
                r = strv_extend(&keys, &n_keys, "SUBSYSTEM");
        if (r >= 0)
                r = strv_extend(&values, &n_values, "block");
        if (r >= 0 && k && k->ktype->has_uevent) {
                rel = path_join(k->devpath, "uevent");
                if (rel && sysfs_read_attr_at(l->sysfs, rel, &text) >= 0 &&
                    parse_uevent_file(text, &pairs) >= 0)
                        for (char **p = pairs; r >= 0 && p[0] && p[1]; p += 2) {
                                r = strv_extend(&keys, &n_keys, p[0]);
                                if (r >= 0)
                                        r = strv_extend(&values, &n_values, p[1]);
                        }
        }
        if (r >= 0)
                r = strv_extend(&keys, &n_keys, SYNTHESIZED_KEY);
        if (r >= 0)
                r = strv_extend(&values, &n_values, "1");
        if (r < 0)
                return log_error_errno(r, "Cannot make up the %s event of %s: %m", action, devpath);
        return live_publish_event(l, action, devpath, object_path, n_keys, keys, values);
}

static void on_reconcile_diff(void *userdata, const char *action, const char *devpath,
                              const char *object_path, Kobject *k)
{
        Live *l = userdata;

        /* The object is announced before its event. */
        live_flush(l);
        if (k)
                (void) changes_refresh(l, k, REFRESH_RECORD);
        (void) live_synthesize(l, action, devpath, object_path, k);
}

int live_rescan(Live *l)
{
        _cleanup_(freep) Kobject **members = NULL;
        size_t n = 0;
        int r, changes;

        r = reconcile_all(l->sysfs, l->model, on_reconcile_diff, l);
        live_flush(l);
        if (r < 0)
                return r;
        changes = r;

        /* Whatever stayed may still have changed while we were not listening. */
        r = kset_members_sorted(l->model->block_kset, &members, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                Kobject *k = members[i];

                if (!changes_recorded(k)) {
                        /* Never read: nothing to compare with; remember it for next time. */
                        (void) changes_refresh(l, k, REFRESH_RECORD);
                        continue;
                }
                r = changes_reread(l, k);
                live_flush(l);
                if (r > 0) {
                        changes++;
                        (void) live_synthesize(l, "change", k->devpath, k->path, k);
                }
        }
        return changes;
}
