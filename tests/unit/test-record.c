/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdint.h>

#include "common/util.h"
#include "live/record.h"
#include "tests.h"

/* One record of the given strings (NULL: a volatile value). */
static ChangeRecord *strings(size_t n, const char *const *values)
{
        ChangeRecord *r = NULL;

        CHECK(record_new(n, &r) == 0);
        for (size_t i = 0; i < n; i++)
                if (values[i])
                        record_put_string(r, values[i]);
                else
                        record_put_volatile(r);
        return record_finish(r);
}

static bool same_string(const char *a, const char *b)
{
        _cleanup_(freep) ChangeRecord *x = strings(1, &a), *y = strings(1, &b);

        return record_equal(x, y) && record_slot_equal(record_slot_at(x, 0), record_slot_at(y, 0));
}

static bool same_number(uint64_t a, uint64_t b)
{
        _cleanup_(freep) ChangeRecord *x = NULL, *y = NULL;

        CHECK(record_new(1, &x) == 0 && record_new(1, &y) == 0);
        record_put_number(x, a);
        record_put_number(y, b);
        return record_equal(x, y);
}

static void test_values_compare_exactly(void)
{
        /* Short values are kept as they are: every change is seen, also between look-alikes. */
        CHECK(same_string("0", "0"));
        CHECK(!same_string("0", "1"));
        CHECK(!same_string("", "0"));
        CHECK(!same_string("é", "è"));                 /* two bytes, not one character */
        CHECK(!same_string("\x81", "\x82"));           /* one byte above 0x7f */
        CHECK(!same_string("\x01", ""));               /* the one-byte form against an empty value */
        CHECK(!same_string("12345678", "12345679"));   /* the longest kept as it is */
        CHECK(!same_string("123456789", "123456780")); /* the shortest fingerprinted */
        CHECK(same_string("a long scheduler list", "a long scheduler list"));
        CHECK(!same_string("[mq-deadline] none", "mq-deadline [none]"));

        CHECK(same_number(0, 0));
        CHECK(!same_number(0, 1));
        CHECK(!same_number(255, 256));
        CHECK(!same_number(UINT64_MAX, UINT64_MAX - 1));
        CHECK(same_number(UINT64_MAX, UINT64_MAX));
}

static void test_slots_in_order(void)
{
        const char *const values[] = {"1", NULL, "none", "a value longer than eight bytes", "", "9"};
        _cleanup_(freep) ChangeRecord *r = strings(ELEMENTSOF(values), values), *copy = NULL;
        size_t offset = 0;

        CHECK(r->n_slots == ELEMENTSOF(values));
        /* 1 + 1 + (1 + 4) + (1 + 8) + 1 + 1 bytes, where fingerprints took 6 × 8. */
        CHECK(r->size == 18);

        /* Walking it slot by slot and copying each gives the same record. */
        CHECK(record_new(r->n_slots, &copy) == 0);
        for (size_t i = 0; i < r->n_slots; i++) {
                RecordSlot s = record_next(r, &offset);
                CHECK(record_slot_equal(s, record_slot_at(r, i)));
                record_put_slot(copy, s);
        }
        CHECK(offset == r->size);
        copy = record_finish(copy);
        CHECK(record_equal(r, copy));

        /* One value changed: that slot differs, its neighbours do not. */
        const char *const changed[] = {"1", NULL, "mq-deadline", "a value longer than eight bytes", "", "9"};
        _cleanup_(freep) ChangeRecord *c = strings(ELEMENTSOF(changed), changed);
        CHECK(!record_equal(r, c));
        for (size_t i = 0; i < r->n_slots; i++)
                CHECK(record_slot_equal(record_slot_at(r, i), record_slot_at(c, i)) == (i != 2));
}

int main(void)
{
        test_values_compare_exactly();
        test_slots_in_order();
        return tests_summary();
}
