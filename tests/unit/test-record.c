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
        return r;
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
        CHECK(record_equal(r, copy));

        /* One value changed: that slot differs, its neighbours do not. */
        const char *const changed[] = {"1", NULL, "mq-deadline", "a value longer than eight bytes", "", "9"};
        _cleanup_(freep) ChangeRecord *c = strings(ELEMENTSOF(changed), changed);
        CHECK(!record_equal(r, c));
        for (size_t i = 0; i < r->n_slots; i++)
                CHECK(record_slot_equal(record_slot_at(r, i), record_slot_at(c, i)) == (i != 2));
}

/* Packed against base, then unpacked: the same record, and as many bytes as expected. */
static void check_round_trip(const ChangeRecord *r, const PackedRecord *base, size_t packed_size, bool is_base)
{
        PackedRecord *p = NULL;
        _cleanup_(freep) ChangeRecord *back = NULL;

        CHECK(record_pack(r, base, &p) == 0);
        if (!p)
                return;
        CHECK((p == base) == is_base);
        CHECK(p->size == packed_size);
        CHECK(record_unpack(p, &back) == 0);
        CHECK(back && record_equal(r, back) && back->value_bytes == r->value_bytes);
        record_packed_free(p);
}

static void test_packed_against_a_template(void)
{
        /* 200 slots: a run of equal ones longer than one LEB128 byte holds. */
        const char *values[200];
        ChangeRecord *recs[5];
        PackedRecord *t = NULL;

        for (size_t i = 0; i < ELEMENTSOF(values); i++)
                values[i] = i % 3 == 0 ? "none" : i % 3 == 1 ? "a value longer than eight bytes" : "0";
        recs[0] = strings(ELEMENTSOF(values), values);
        recs[0]->value_bytes = 1234;
        CHECK(record_template(recs[0], &t) == 0);
        if (!t)
                return;
        CHECK(t->shared && t->size == recs[0]->size);

        /* The template's own values: the template itself, no copy. */
        check_round_trip(recs[0], t, t->size, true);

        /* One differing slot after 150 equal ones: a two-byte run, then its 1 + 4 bytes. */
        values[150] = "mq-deadline";
        recs[1] = strings(ELEMENTSOF(values), values);
        recs[1]->value_bytes = 1234;
        check_round_trip(recs[1], t, 2 + 9, false);

        /* The first and the last slot differ: run 0 + "kyber", run 198 (two bytes) + "1". */
        values[150] = "none";
        values[0] = "kyber";
        values[199] = "1";
        recs[2] = strings(ELEMENTSOF(values), values);
        recs[2]->value_bytes = 1234;
        check_round_trip(recs[2], t, 1 + 6 + 2 + 1, false);

        /* Equal slots, another size estimate: a record of its own, with nothing but the estimate. */
        recs[3] = strings(ELEMENTSOF(values), values);
        recs[3]->value_bytes = 99;
        check_round_trip(recs[3], t, 1 + 6 + 2 + 1, false);

        /* Another number of slots, or no template: kept whole. */
        recs[4] = strings(3, values);
        check_round_trip(recs[4], t, recs[4]->size, false);
        check_round_trip(recs[1], NULL, recs[1]->size, false);

        /* Every slot differs: the differences would be larger than the record, so it is kept whole. */
        for (size_t i = 0; i < ELEMENTSOF(values); i++)
                values[i] = "7";
        _cleanup_(freep) ChangeRecord *all = strings(ELEMENTSOF(values), values);
        check_round_trip(all, t, all->size, false);

        for (size_t i = 0; i < ELEMENTSOF(recs); i++)
                free(recs[i]);
        record_template_free(t);
}

int main(void)
{
        test_values_compare_exactly();
        test_slots_in_order();
        test_packed_against_a_template();
        return tests_summary();
}
