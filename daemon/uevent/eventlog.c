/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "uevent/eventlog.h"

struct EventLog {
        EventRecord **ring; /* capacity slots; the oldest record at ring[head] */
        size_t capacity;
        size_t head;
        size_t n;             /* retained records */
        uint64_t first_seqnum;
        uint64_t last_seqnum; /* of the newest record ever appended; first_seqnum - 1 before */
};

/* Adds a to *total, or returns false if size_t would overflow. */
static bool size_add(size_t *total, size_t a)
{
        if (a > SIZE_MAX - *total)
                return false;
        *total += a;
        return true;
}

/* Copies s to *p and advances *p past its NUL. */
static char *stash(char **p, const char *s)
{
        size_t l = strlen(s) + 1;
        char *r = *p;

        memcpy(r, s, l);
        *p += l;
        return r;
}

int event_record_new(const char *action, const char *devpath, const char *object_path, size_t n_env,
                     char *const *env_keys, char *const *env_values, EventRecord **ret)
{
        EventRecord *r;
        size_t size = sizeof(EventRecord);
        char *p;

        assert(ret);

        if (!action || !devpath || !object_path)
                return -EINVAL;
        if (n_env > 0 && (!env_keys || !env_values))
                return -EINVAL;

        /*
         * One block for the struct, both arrays and every string: retained
         * events are many and small, and a single malloc per record keeps
         * both the allocator overhead and the eviction cost down.
         */
        if (n_env > (SIZE_MAX - size) / (2 * sizeof(char *)))
                return -ENOMEM;
        size += 2 * n_env * sizeof(char *);
        if (!size_add(&size, strlen(action) + 1) || !size_add(&size, strlen(devpath) + 1) ||
            !size_add(&size, strlen(object_path) + 1))
                return -ENOMEM;
        for (size_t i = 0; i < n_env; i++) {
                if (!env_keys[i] || !env_values[i])
                        return -EINVAL;
                if (!size_add(&size, strlen(env_keys[i]) + 1) || !size_add(&size, strlen(env_values[i]) + 1))
                        return -ENOMEM;
        }

        r = malloc(size);
        if (!r)
                return -ENOMEM;

        r->seqnum = 0;
        r->n_env = n_env;
        r->env_keys = (char **) (r + 1);
        r->env_values = r->env_keys + n_env;
        p = (char *) (r->env_values + n_env);
        r->action = stash(&p, action);
        r->devpath = stash(&p, devpath);
        r->object_path = stash(&p, object_path);
        for (size_t i = 0; i < n_env; i++) {
                r->env_keys[i] = stash(&p, env_keys[i]);
                r->env_values[i] = stash(&p, env_values[i]);
        }
        assert((size_t) (p - (char *) r) == size);

        *ret = r;
        return 0;
}

EventRecord *event_record_free(EventRecord *r)
{
        free(r);
        return NULL;
}

int eventlog_new(size_t capacity, uint64_t first_seqnum, EventLog **ret)
{
        EventLog *l;

        assert(ret);

        if (capacity == 0 || first_seqnum == 0)
                return -EINVAL;

        l = calloc(1, sizeof(EventLog));
        if (!l)
                return -ENOMEM;

        /*
         * All slots up front, so that append can never fail.  calloc() of a
         * large ring is backed by untouched zero pages until it fills.
         */
        l->ring = calloc(capacity, sizeof(EventRecord *));
        if (!l->ring) {
                free(l);
                return -ENOMEM;
        }
        l->capacity = capacity;
        l->first_seqnum = first_seqnum;
        l->last_seqnum = first_seqnum - 1;

        *ret = l;
        return 0;
}

EventLog *eventlog_free(EventLog *l)
{
        if (!l)
                return NULL;

        for (size_t i = 0; i < l->n; i++)
                event_record_free(l->ring[(l->head + i) % l->capacity]);
        free(l->ring);
        free(l);
        return NULL;
}

uint64_t eventlog_append(EventLog *l, EventRecord *rec)
{
        size_t slot;

        assert(l);
        assert(rec);

        if (l->n == l->capacity) {
                /* Full: the oldest slot becomes the newest. */
                slot = l->head;
                event_record_free(l->ring[slot]);
                l->head = (l->head + 1) % l->capacity;
        } else {
                slot = (l->head + l->n) % l->capacity;
                l->n++;
        }

        rec->seqnum = ++l->last_seqnum;
        l->ring[slot] = rec;
        return rec->seqnum;
}

uint64_t eventlog_first_seqnum(const EventLog *l)
{
        assert(l);
        return l->first_seqnum;
}

uint64_t eventlog_last_seqnum(const EventLog *l)
{
        assert(l);
        return l->last_seqnum;
}

uint64_t eventlog_oldest_seqnum(const EventLog *l)
{
        assert(l);

        /* Seqnums have no gaps, so the oldest follows from the newest. */
        return l->last_seqnum - l->n + 1;
}

size_t eventlog_size(const EventLog *l)
{
        assert(l);
        return l->n;
}

size_t eventlog_capacity(const EventLog *l)
{
        assert(l);
        return l->capacity;
}

int eventlog_since(const EventLog *l, uint64_t after, size_t *ret_first_index, size_t *ret_count)
{
        uint64_t oldest;

        assert(l);
        assert(ret_first_index);
        assert(ret_count);

        if (after == 0)
                after = l->first_seqnum - 1;
        if (after >= l->last_seqnum) {
                *ret_first_index = l->n;
                *ret_count = 0;
                return 0;
        }

        oldest = eventlog_oldest_seqnum(l);
        if (after + 1 < oldest)
                return -ESTALE;

        *ret_first_index = (size_t) (after + 1 - oldest);
        *ret_count = (size_t) (l->last_seqnum - after);
        return 0;
}

const EventRecord *eventlog_get(const EventLog *l, size_t i)
{
        assert(l);

        if (i >= l->n)
                return NULL;
        return l->ring[(l->head + i) % l->capacity];
}
