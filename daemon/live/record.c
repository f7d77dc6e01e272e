/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "live/record.h"

/*
 * A slot's first byte says what follows:
 *   0x01–0x7f   nothing: the value is that one character (the commonest case, "0" and "1");
 *   0x80 + n    n bytes of the value (n ≤ RECORD_SHORT_MAX): a string's, or a number's from
 *               the lowest byte up;
 *   0xfe        nothing: a volatile value;
 *   0xff        an 8-byte fingerprint.
 * A slot therefore equals another exactly when their values do (up to the fingerprint's 2^-64).
 */
#define SLOT_SHORT 0x80u
#define SLOT_VOLATILE 0xfeu
#define SLOT_FINGERPRINT 0xffu
#define SLOT_MAX_SIZE (1 + sizeof(uint64_t))

static size_t slot_size(const uint8_t *s)
{
        if (*s < SLOT_SHORT || *s == SLOT_VOLATILE)
                return 1;
        if (*s == SLOT_FINGERPRINT)
                return SLOT_MAX_SIZE;
        return 1 + (*s - SLOT_SHORT);
}

int record_new(size_t n_slots, ChangeRecord **ret)
{
        ChangeRecord *r;

        if (n_slots > UINT32_MAX / SLOT_MAX_SIZE)
                return -ENOMEM;
        r = malloc(sizeof(ChangeRecord) + n_slots * SLOT_MAX_SIZE);
        if (!r)
                return -ENOMEM;
        *r = (ChangeRecord){.n_slots = (uint32_t) n_slots};
        *ret = r;
        return 0;
}

static uint8_t *slot_room(ChangeRecord *r)
{
        return r->slots + r->size;
}

void record_put_string(ChangeRecord *r, const char *value)
{
        size_t n = strlen(value);
        uint8_t *s = slot_room(r);

        if (n == 1 && (uint8_t) value[0] < SLOT_SHORT) {
                s[0] = (uint8_t) value[0];
                r->size += 1;
        } else if (n <= RECORD_SHORT_MAX) {
                s[0] = (uint8_t) (SLOT_SHORT + n);
                memcpy(s + 1, value, n);
                r->size += 1 + n;
        } else {
                record_put_fingerprint(r, fnv1a(value, n + 1, FNV1A_INIT));
        }
}

void record_put_number(ChangeRecord *r, uint64_t number)
{
        uint8_t *s = slot_room(r);
        size_t n = 0;

        for (; number > 0; number >>= 8)
                s[1 + n++] = (uint8_t) number;
        s[0] = (uint8_t) (SLOT_SHORT + n);
        r->size += 1 + n;
}

void record_put_fingerprint(ChangeRecord *r, uint64_t fingerprint)
{
        uint8_t *s = slot_room(r);

        s[0] = SLOT_FINGERPRINT;
        memcpy(s + 1, &fingerprint, sizeof(fingerprint));
        r->size += SLOT_MAX_SIZE;
}

void record_put_volatile(ChangeRecord *r)
{
        *slot_room(r) = SLOT_VOLATILE;
        r->size += 1;
}

void record_put_slot(ChangeRecord *r, RecordSlot slot)
{
        memcpy(slot_room(r), slot.bytes, slot.size);
        r->size += (uint32_t) slot.size;
}

ChangeRecord *record_finish(ChangeRecord *r)
{
        /* A copy, not a realloc: shrinking in place would leave a hole after every record that
         * only smaller allocations can fill, and records are replaced all the time (the poll). */
        ChangeRecord *copy = malloc(sizeof(ChangeRecord) + r->size);

        if (!copy)
                return r;
        memcpy(copy, r, sizeof(ChangeRecord) + r->size);
        free(r);
        return copy;
}

RecordSlot record_next(const ChangeRecord *r, size_t *offset)
{
        RecordSlot s = {r->slots + *offset, 0};

        assert(*offset < r->size);
        s.size = slot_size(s.bytes);
        *offset += s.size;
        return s;
}

RecordSlot record_slot_at(const ChangeRecord *r, size_t index)
{
        size_t offset = 0;
        RecordSlot s;

        assert(index < r->n_slots);
        do
                s = record_next(r, &offset);
        while (index-- > 0);
        return s;
}

bool record_slot_equal(RecordSlot a, RecordSlot b)
{
        return a.size == b.size && memcmp(a.bytes, b.bytes, a.size) == 0;
}

bool record_equal(const ChangeRecord *a, const ChangeRecord *b)
{
        return a->n_slots == b->n_slots && a->size == b->size && memcmp(a->slots, b->slots, a->size) == 0;
}
