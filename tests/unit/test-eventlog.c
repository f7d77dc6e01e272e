/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uevent/eventlog.h"
#include "tests.h"

/* A record whose devpath names its number, so content can be checked after wrap-around. */
static EventRecord *make(unsigned i)
{
        char devpath[64], seq[32];
        char *keys[] = { "ACTION", "DEVPATH", "SEQNUM" };
        char *values[] = { "change", devpath, seq };
        EventRecord *r = NULL;

        snprintf(devpath, sizeof(devpath), "/devices/virtual/block/loop%u", i);
        snprintf(seq, sizeof(seq), "%u", 1000 + i);
        if (event_record_new("change", devpath, "/org/blkmodel1/block/loop0", 3, keys, values, &r) < 0)
                abort();
        return r;
}

static void test_record(void)
{
        char key[] = "MAJOR", value[] = "7";
        char *keys[] = { key }, *values[] = { value };
        EventRecord *r = (EventRecord *) 0x1;

        /* Refusals leave ret alone. */
        CHECK(event_record_new(NULL, "/d", "/", 0, NULL, NULL, &r) == -EINVAL);
        CHECK(event_record_new("add", NULL, "/", 0, NULL, NULL, &r) == -EINVAL);
        CHECK(event_record_new("add", "/d", NULL, 0, NULL, NULL, &r) == -EINVAL);
        CHECK(event_record_new("add", "/d", "/", 1, NULL, values, &r) == -EINVAL);
        CHECK(event_record_new("add", "/d", "/", 1, keys, NULL, &r) == -EINVAL);
        {
                char *nul_values[] = { NULL };
                CHECK(event_record_new("add", "/d", "/", 1, keys, nul_values, &r) == -EINVAL);
        }
        CHECK(r == (EventRecord *) 0x1);

        /* No variables at all is fine. */
        r = NULL;
        CHECK(event_record_new("add", "/d", "/", 0, NULL, NULL, &r) == 0);
        CHECK(r && r->n_env == 0 && r->seqnum == 0);
        r = event_record_free(r);
        CHECK(r == NULL);
        CHECK(event_record_free(NULL) == NULL);

        /* Copies, not references. */
        CHECK(event_record_new("add", "/devices/x", "/org/blkmodel1/block/x", 1, keys, values, &r) == 0);
        key[0] = 'X';
        value[0] = '9';
        if (r) {
                CHECK_STREQ(r->action, "add");
                CHECK_STREQ(r->devpath, "/devices/x");
                CHECK_STREQ(r->object_path, "/org/blkmodel1/block/x");
                CHECK(r->n_env == 1);
                CHECK_STREQ(r->env_keys[0], "MAJOR");
                CHECK_STREQ(r->env_values[0], "7");
                event_record_free(r);
        }
}

static void test_basics(void)
{
        EventLog *l = (EventLog *) 0x1;
        size_t first = 77, count = 77;
        const EventRecord *r;

        CHECK(eventlog_new(0, 1, &l) == -EINVAL);
        CHECK(eventlog_new(3, 0, &l) == -EINVAL);
        CHECK(l == (EventLog *) 0x1);
        CHECK(eventlog_free(NULL) == NULL);

        CHECK(eventlog_new(3, 1, &l) == 0);
        CHECK(eventlog_capacity(l) == 3);

        /* Empty: nothing to give, nothing expired. */
        CHECK(eventlog_size(l) == 0);
        CHECK(eventlog_last_seqnum(l) == 0);
        CHECK(eventlog_oldest_seqnum(l) == 1);
        CHECK(eventlog_since(l, 0, &first, &count) == 0);
        CHECK(count == 0);
        CHECK(eventlog_since(l, 42, &first, &count) == 0);
        CHECK(count == 0);
        CHECK(eventlog_get(l, 0) == NULL);

        /* Numbering starts at 1 and the record learns its number. */
        {
                EventRecord *rec = make(1);
                CHECK(eventlog_append(l, rec) == 1);
                CHECK(rec->seqnum == 1);
                /* Still ours to read right after the append. */
                CHECK_STREQ(rec->devpath, "/devices/virtual/block/loop1");
        }
        CHECK(eventlog_append(l, make(2)) == 2);
        CHECK(eventlog_size(l) == 2);
        CHECK(eventlog_last_seqnum(l) == 2);
        CHECK(eventlog_oldest_seqnum(l) == 1);

        CHECK(eventlog_since(l, 0, &first, &count) == 0);
        CHECK(first == 0 && count == 2);
        r = eventlog_get(l, first);
        CHECK(r && r->seqnum == 1);
        CHECK(eventlog_since(l, 1, &first, &count) == 0);
        CHECK(first == 1 && count == 1);
        r = eventlog_get(l, first);
        CHECK(r && r->seqnum == 2);
        CHECK_STREQ(r ? r->devpath : NULL, "/devices/virtual/block/loop2");
        CHECK(eventlog_since(l, 2, &first, &count) == 0);
        CHECK(count == 0);
        CHECK(eventlog_since(l, 3, &first, &count) == 0);
        CHECK(count == 0);

        /* Fill past capacity: 3, 4, 5 remain. */
        CHECK(eventlog_append(l, make(3)) == 3);
        CHECK(eventlog_append(l, make(4)) == 4);
        CHECK(eventlog_append(l, make(5)) == 5);
        CHECK(eventlog_size(l) == 3);
        CHECK(eventlog_last_seqnum(l) == 5);
        CHECK(eventlog_oldest_seqnum(l) == 3);
        for (size_t i = 0; i < 3; i++) {
                r = eventlog_get(l, i);
                CHECK(r && r->seqnum == 3 + i);
        }
        CHECK(eventlog_get(l, 3) == NULL);
        CHECK(eventlog_get(l, SIZE_MAX) == NULL);

        /* after = oldest - 1 is the last one that still gets everything. */
        CHECK(eventlog_since(l, 2, &first, &count) == 0);
        CHECK(first == 0 && count == 3);
        first = count = 77;
        CHECK(eventlog_since(l, 1, &first, &count) == -ESTALE);
        CHECK(eventlog_since(l, 0, &first, &count) == -ESTALE);
        CHECK(first == 77 && count == 77);
        CHECK(eventlog_since(l, 4, &first, &count) == 0);
        CHECK(first == 2 && count == 1);
        r = eventlog_get(l, first);
        CHECK(r && r->seqnum == 5);
        CHECK_STREQ(r ? r->devpath : NULL, "/devices/virtual/block/loop5");
        CHECK(eventlog_since(l, UINT64_MAX, &first, &count) == 0);
        CHECK(count == 0);

        CHECK(eventlog_free(l) == NULL);
}

static void test_capacity_one(void)
{
        size_t first, count;
        EventLog *l = NULL;

        CHECK(eventlog_new(1, 1, &l) == 0);
        if (!l)
                return;
        for (unsigned i = 1; i <= 10; i++) {
                EventRecord *rec = make(i);

                CHECK(eventlog_append(l, rec) == i);
                /* The one just appended is readable until the next append. */
                CHECK(rec->seqnum == i && eventlog_get(l, 0) == rec);
        }
        CHECK(eventlog_oldest_seqnum(l) == 10);
        CHECK(eventlog_since(l, 9, &first, &count) == 0 && first == 0 && count == 1);
        CHECK(eventlog_since(l, 8, &first, &count) == -ESTALE);
        eventlog_free(l);
}

/*
 * A daemon's counter starts where no earlier daemon's reached: an `after`
 * below its first (one kept from an earlier daemon) is refused as expired,
 * even before any event, while 0 still means "from the first".
 */
static void test_first_seqnum(void)
{
        const uint64_t base = UINT64_C(1796680000000000);
        size_t first = 77, count = 77;
        EventLog *l = NULL;

        CHECK(eventlog_new(2, base, &l) == 0);
        if (!l)
                return;
        CHECK(eventlog_last_seqnum(l) == base - 1);
        CHECK(eventlog_oldest_seqnum(l) == base);
        CHECK(eventlog_since(l, 0, &first, &count) == 0 && count == 0);
        CHECK(eventlog_since(l, base - 1, &first, &count) == 0 && count == 0);
        CHECK(eventlog_since(l, 5, &first, &count) == -ESTALE);
        CHECK(eventlog_since(l, base - 2, &first, &count) == -ESTALE);

        CHECK(eventlog_append(l, make(1)) == base);
        CHECK(eventlog_since(l, 0, &first, &count) == 0 && first == 0 && count == 1);
        CHECK(eventlog_since(l, base - 1, &first, &count) == 0 && first == 0 && count == 1);
        CHECK(eventlog_since(l, 1, &first, &count) == -ESTALE);

        /* Once the first is evicted, 0 has expired like any other `after` before the window. */
        CHECK(eventlog_append(l, make(2)) == base + 1);
        CHECK(eventlog_append(l, make(3)) == base + 2);
        CHECK(eventlog_oldest_seqnum(l) == base + 1);
        CHECK(eventlog_since(l, 0, &first, &count) == -ESTALE);
        CHECK(eventlog_since(l, base, &first, &count) == 0 && first == 0 && count == 2);
        eventlog_free(l);
}

/* Long run against a model of what must be there; ASan catches any leaked or double-freed eviction. */
static void test_wraparound(void)
{
        const size_t cap = 97;
        EventLog *l = NULL;
        unsigned bad = 0;

        CHECK(eventlog_new(cap, 1, &l) == 0);
        if (!l)
                return;

        for (unsigned i = 1; i <= 20000; i++) {
                uint64_t oldest, last, after;
                size_t first, count;
                int r;

                if (eventlog_append(l, make(i)) != i)
                        bad++;
                last = eventlog_last_seqnum(l);
                oldest = eventlog_oldest_seqnum(l);
                if (last != i || oldest != (i > cap ? i - cap + 1 : 1) ||
                    eventlog_size(l) != (i < cap ? i : cap))
                        bad++;

                /* A pseudo-random `after` anywhere near the window. */
                after = (uint64_t) ((i * 2654435761u) % (cap + 40));
                after = after > last ? last : last - after;
                r = eventlog_since(l, after, &first, &count);
                if (after + 1 < oldest) {
                        if (r != -ESTALE)
                                bad++;
                        continue;
                }
                if (r != 0 || count != last - after) {
                        bad++;
                        continue;
                }
                for (size_t k = 0; k < count; k++) {
                        const EventRecord *rec = eventlog_get(l, first + k);
                        char want[64];

                        snprintf(want, sizeof(want), "/devices/virtual/block/loop%llu",
                                 (unsigned long long) (after + 1 + k));
                        if (!rec || rec->seqnum != after + 1 + k || strcmp(rec->devpath, want) != 0)
                                bad++;
                }
        }
        CHECK(bad == 0);
        CHECK(eventlog_size(l) == cap);
        eventlog_free(l);
}

int main(void)
{
        test_record();
        test_basics();
        test_capacity_one();
        test_first_seqnum();
        test_wraparound();

        return tests_summary();
}
