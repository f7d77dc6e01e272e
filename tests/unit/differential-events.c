/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "differential.h"

/*
 * The steps of a sequence: a change to the tree, the kernel's events for the changes so far
 * (oldest first, late, and some never), events nobody should send (for ksets, queues, hardware,
 * paths that are no block device or do not exist), lost events, the loop turning, a rescan.
 */

void world_log(World *w, const char *fmt, ...)
{
        char *line = NULL;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&line, fmt, ap);
        va_end(ap);
        if (k < 0 || strv_consume(&w->log, &w->n_log, line) < 0)
                abort();
}

static void put(char *buf, size_t *n, const char *fmt, ...) _printf_(3, 4);
static void put(char *buf, size_t *n, const char *fmt, ...)
{
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vsnprintf(buf + *n, UEVENT_SIZE_MAX - *n, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t) k < UEVENT_SIZE_MAX - *n)
                *n += (size_t) k + 1; /* the NUL is the separator */
}

/* In the kernel's wire format, parsed as the source parses it; NULL (and counted) when the parser
 * refuses it: the source drops those. */
static Uevent *uevent_make(World *w, const char *action, const char *devpath, const char *subsystem,
                           const char *devpath_old, const char *extra)
{
        static uint64_t kernel_seqnum = 5000;
        char buf[UEVENT_SIZE_MAX];
        size_t n = 0;
        Uevent *u = NULL;

        put(buf, &n, "%s@%s", action, devpath);
        put(buf, &n, "ACTION=%s", action);
        put(buf, &n, "DEVPATH=%s", devpath);
        if (subsystem)
                put(buf, &n, "SUBSYSTEM=%s", subsystem);
        if (devpath_old)
                put(buf, &n, "DEVPATH_OLD=%s", devpath_old);
        put(buf, &n, "SEQNUM=%" PRIu64, ++kernel_seqnum);
        if (extra)
                put(buf, &n, "%s", extra);
        if (uevent_parse(buf, n, &u) < 0) {
                w->n_unparsable++;
                return NULL;
        }
        return u;
}

void pend(World *w, const char *action, const char *devpath, const char *devpath_old)
{
        /* What the kernel adds to a change: some say what moved (RESIZE), some that more may have
         * (a dm table's DM_COOKIE). */
        static const char *const extras[] = {NULL,         NULL, NULL, "RESIZE=1", "DISK_MEDIA_CHANGE=1",
                                             "DM_COOKIE=1"};
        Uevent *u = uevent_make(w, action, devpath, "block", devpath_old,
                                streq(action, "change") ? extras[w->n_pending % ELEMENTSOF(extras)] : NULL);
        Uevent **t;

        if (!u)
                return;
        t = realloc(w->pending, sizeof(Uevent *) * (w->n_pending + 1));
        if (!t)
                abort();
        w->pending = t;
        w->pending[w->n_pending++] = u;
}

static void log_event(World *w, const Uevent *u)
{
        const char *extra = "";

        for (size_t i = 0; i < u->n_env; i++)
                if (streq(u->env_keys[i], "SYNTH_UUID") || streq(u->env_keys[i], "RESIZE") ||
                    streq(u->env_keys[i], "DISK_MEDIA_CHANGE") || startswith(u->env_keys[i], "DM_"))
                        extra = u->env_keys[i];
        world_log(w, "event: %s@%s SUBSYSTEM=%s%s%s%s%s", uevent_action_to_string(u->action), u->devpath,
                  u->subsystem ? u->subsystem : "(none)", u->devpath_old ? " DEVPATH_OLD=" : "",
                  u->devpath_old ? u->devpath_old : "", *extra ? " " : "", extra);
}

/* The kernel's events reach the daemon: the oldest few (all that fit if all), or some out of turn. */
static void deliver_pending(World *w, Rng *rng, Step *st, bool all)
{
        size_t room = STEP_EVENTS_MAX - st->n_events, n, first = 0;

        if (w->n_pending == 0)
                return;
        n = MIN(w->n_pending, room);
        if (!all && n > 0) {
                n = 1 + rng_below(rng, (unsigned) n);
                first = rng_percent(rng, 10) ? rng_below(rng, (unsigned) w->n_pending) : 0;
        }
        if (first + n > w->n_pending)
                n = w->n_pending - first;
        st->kind = STEP_UEVENT;
        for (size_t i = 0; i < n; i++) {
                st->events[st->n_events++] = w->pending[first + i];
                log_event(w, w->pending[first + i]);
        }
        memmove(w->pending + first, w->pending + first + n, (w->n_pending - first - n) * sizeof(Uevent *));
        w->n_pending -= n;
}

/* Devpaths an event can name: what the tree has and what it does not. */
static char **targets(World *w)
{
        static const char *const fixed[] = {
                        "/block",
                        "/devices",
                        "/class",
                        "/class/block",
                        "/devices/virtual",
                        "/devices/virtual/block",
                        "/devices/pci0000:00",
                        "/devices/pci0000:00/0000:00:1f.2",
                        "/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0",
                        "/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/scsi_disk/0:0:0:0",
                        "/devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0",
                        "/devices/virtual/bdi/8:0",
                        "/devices/virtual/block/ghost",
                        "/devices/virtual/block/vda/vda9",
                        "/devices/virtual/block/loop0/loop",
                        "/devices/virtual/block/loop0/",
                        "//devices/virtual/block/loop0",
                        "/devices/./virtual/block/loop0",
                        "/devices/virtual/block/../block/loop0",
                        "devices/virtual/block/loop0",
                        "/devices/virtual/block/loop0\xff",
                        "/block/sda",
                        "/class/block/sda1",
                        "/dev/block/8:0",
                        "/",
        };
        static const char *const below_disk[] = {"queue",   "queue/iosched", "mq/0",
                                                 "holders", "power",         "trace"};
        _cleanup_(strv_freep) char **l = NULL;
        TreeDev *d = NULL;
        size_t n = 0, n_devs = 0;

        for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
                if (strv_extend(&l, &n, fixed[i]) < 0)
                        abort();
        for (size_t i = 0; i < w->n_gone; i++)
                if (strv_extend(&l, &n, w->gone[i]) < 0)
                        abort();
        if (tree_block_devs(&w->tree, &d, &n_devs) < 0)
                abort();
        for (size_t i = 0; i < n_devs; i++) {
                /* The block devices themselves, three times as likely as the rest. */
                for (int k = 0; k < 3; k++)
                        if (strv_extend(&l, &n, d[i].devpath) < 0)
                                abort();
                for (size_t j = 0; !d[i].partition && j < ELEMENTSOF(below_disk); j++)
                        if (strv_consume(&l, &n, path_join(d[i].devpath, below_disk[j])) < 0)
                                abort();
        }
        tree_devs_free(d, n_devs);
        return TAKE_PTR(l);
}

/* Events nobody should send, or not now: any action, for anything, sometimes not SUBSYSTEM=block. */
static void hostile(World *w, Rng *rng, Step *st)
{
        static const char *const actions[] = {"add",     "remove", "change", "move", "online",
                                              "offline", "bind",   "unbind", "frob"};
        static const char *const subsystems[] = {NULL, "scsi", "bdi", "", "BLOCK"};
        _cleanup_(strv_freep) char **l = targets(w);
        size_t n = strv_length(l), count = 1 + rng_below(rng, 3);

        st->kind = STEP_UEVENT;
        for (size_t i = 0; i < count; i++) {
                const char *action = actions[rng_below(rng, ELEMENTSOF(actions))];
                const char *devpath = l[rng_below(rng, (unsigned) n)];
                const char *subsystem = rng_percent(rng, 85)
                                                        ? "block"
                                                        : subsystems[rng_below(rng, ELEMENTSOF(subsystems))];
                const char *old = streq(action, "move") && rng_percent(rng, 80)
                                                  ? l[rng_below(rng, (unsigned) n)]
                                                  : NULL;
                /* udevadm trigger's mark: nothing changed in sysfs, nothing is read again. */
                const char *extra = rng_percent(rng, 10)   ? "SYNTH_UUID=0"
                                    : rng_percent(rng, 10) ? "DM_NAME=x"
                                                           : NULL;
                Uevent *u = uevent_make(w, action, devpath, subsystem, old, extra);

                if (!u) {
                        world_log(w, "event refused by the parser: %s@%s", action, devpath);
                        continue;
                }
                st->events[st->n_events++] = u;
                log_event(w, u);
        }
}

int world_step(World *w, Rng *rng, Step *ret)
{
        unsigned r = rng_below(rng, 100);
        Step st = {};

        if (r < 40)
                world_change(w, rng);
        else if (r < 62 && w->n_pending > 0)
                deliver_pending(w, rng, &st, false);
        else if (r < 80)
                hostile(w, rng, &st);
        else if (r < 86) {
                st.kind = STEP_LOST;
                /* ENOBUFS: the kernel dropped what it could not queue. */
                if (rng_percent(rng, 50)) {
                        for (size_t i = 0; i < w->n_pending; i++)
                                uevent_free(w->pending[i]);
                        w->n_pending = 0;
                        world_log(w, "lost (the pending events with it)");
                } else
                        world_log(w, "lost");
        } else if (r < 92) {
                st.kind = STEP_DRAINED;
                world_log(w, "drained");
        } else if (r < 98) {
                st.kind = STEP_LOOP;
                st.turns = 1 + rng_below(rng, 30);
                world_log(w, "loop turns %u times", st.turns);
        } else {
                st.kind = STEP_RESCAN;
                world_log(w, "rescan");
        }
        *ret = st;
        return 0;
}

/* What is still pending at the end: read, or lost for good (and the rescan finds it). */
void world_flush(World *w, Rng *rng, Step *ret)
{
        Step st = {.kind = STEP_UEVENT};

        if (rng_percent(rng, 50))
                deliver_pending(w, rng, &st, true);
        else if (w->n_pending > 0)
                world_log(w, "the %zu pending events are never read", w->n_pending);
        for (size_t i = 0; i < w->n_pending; i++)
                uevent_free(w->pending[i]);
        w->n_pending = 0;
        *ret = st;
}

void step_done(Step *s)
{
        for (size_t i = 0; i < s->n_events; i++)
                uevent_free(s->events[i]);
        *s = (Step){};
}

int world_reset(World *w)
{
        for (size_t i = 0; i < w->n_pending; i++)
                uevent_free(w->pending[i]);
        w->pending = mfree(w->pending);
        w->n_pending = 0;
        w->gone = strv_free(w->gone);
        w->n_gone = 0;
        w->log = strv_free(w->log);
        w->n_log = 0;
        return tree_restore(&w->tree);
}
