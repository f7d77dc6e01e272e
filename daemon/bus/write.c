/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>

#include "base/log.h"
#include "base/turn.h"
#include "bus/bus-internal.h"
#include "bus/errors.h"

/*
 * A Set's write, on libuv's thread pool: writing a queue's scheduler freezes the queue until its
 * requests drain, which on a busy disk takes long, and the loop must go on serving everyone else.
 * The worker only writes; reading back what the kernel stored and answering happen on the loop,
 * where the model lives.  The object may be gone by then: it is looked up again by path.
 */

struct BusWrite {
        uv_work_t work;
        Publisher *publisher; /* NULL once the publisher went: then nobody is answered */
        sd_bus_message *msg;
        int dirfd;
        char *devpath, *rel, *value;
        int result;
        BusWrite *prev, *next;
};

static BusWrite *write_free(BusWrite *w)
{
        if (w->publisher) {
                if (w->prev)
                        w->prev->next = w->next;
                else
                        w->publisher->writes = w->next;
                if (w->next)
                        w->next->prev = w->prev;
        }
        sd_bus_message_unref(w->msg);
        if (w->dirfd >= 0)
                (void) close(w->dirfd);
        free(w->devpath);
        free(w->rel);
        free(w->value);
        free(w);
        return NULL;
}

static void on_write(uv_work_t *work)
{
        BusWrite *w = work->data;
        w->result = sysfs_write_attr(w->dirfd, w->rel, w->value);
}

static void on_written(uv_work_t *work, int status)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        BusWrite *w = work->data;
        Publisher *p = w->publisher;
        Kobject *k;
        int r;
        TURN_PART("the reply to a write of %s/%s", w->devpath, w->rel);

        if (!p) {
                write_free(w);
                return;
        }
        if (status < 0)
                w->result = -ECANCELED;
        if (w->result >= 0)
                log_info("%s/%s set to '%s'.", w->devpath, w->rel, w->value);
        /* What the kernel stored is read back and announced, as any other change is; after a write it
         * refused too: a failed scheduler switch falls back to the old one or to none, a store may
         * have taken part of the value (a short write), and a caching client would hold the old
         * value until the poll.  The reply goes after the signals, even if a reply being built holds
         * them. */
        k = model_find_path(p->model, sd_bus_message_get_path(w->msg));
        if (k)
                live_object_after_write(p->live, k);
        if (w->result < 0) {
                (void) bus_error_write_failed(&error, w->value, w->devpath, w->rel, w->result);
                r = bus_reply_error_in_order(p, w->msg, &error);
        } else
                r = bus_reply_in_order(p, w->msg, NULL);
        if (r < 0)
                log_warning_errno(r, "Cannot answer a Set of %s/%s: %m", w->devpath, w->rel);
        write_free(w);
}

int bus_write_start(Publisher *p, sd_bus_message *msg, Kobject *k, int dirfd, const char *rel, const char *value)
{
        BusWrite *w;
        int r;

        _cleanup_(closep) int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        w = calloc(1, sizeof(BusWrite));
        if (!w)
                return -ENOMEM;
        w->dirfd = TAKE_FD(fd);
        w->devpath = strdup(k->devpath);
        w->rel = strdup(rel);
        w->value = strdup(value);
        w->msg = sd_bus_message_ref(msg);
        w->publisher = p;
        w->next = p->writes;
        if (w->next)
                w->next->prev = w;
        p->writes = w;
        if (!w->devpath || !w->rel || !w->value) {
                write_free(w);
                return -ENOMEM;
        }
        live_object_before_write(p->live, k);
        w->work.data = w;
        r = uv_queue_work(p->loop, &w->work, on_write, on_written);
        if (r < 0) {
                write_free(w);
                return r;
        }
        return 1;
}

void bus_writes_orphan(Publisher *p)
{
        /* In flight on the thread pool: their completion frees them, answering nobody. */
        for (BusWrite *w = p->writes; w; w = w->next)
                w->publisher = NULL;
        p->writes = NULL;
}
