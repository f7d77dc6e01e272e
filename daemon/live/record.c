/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
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

bool record_slot_number(RecordSlot s, uint64_t *ret)
{
        uint64_t v = 0;

        if (s.size == 0 || s.bytes[0] < SLOT_SHORT || s.bytes[0] > SLOT_SHORT + sizeof(uint64_t))
                return false;
        for (size_t i = s.bytes[0] - SLOT_SHORT; i > 0; i--)
                v = (v << 8) | s.bytes[i];
        *ret = v;
        return true;
}

bool record_slot_string(RecordSlot s, char ret[RECORD_SHORT_MAX + 1])
{
        size_t n;

        if (s.size == 0 || s.bytes[0] >= SLOT_VOLATILE)
                return false;
        if (s.bytes[0] < SLOT_SHORT) {
                ret[0] = (char) s.bytes[0];
                ret[1] = 0;
                return true;
        }
        n = s.bytes[0] - SLOT_SHORT;
        if (n > RECORD_SHORT_MAX)
                return false;
        memcpy(ret, s.bytes + 1, n);
        ret[n] = 0;
        return true;
}

bool record_slot_equal(RecordSlot a, RecordSlot b)
{
        return a.size == b.size && memcmp(a.bytes, b.bytes, a.size) == 0;
}

bool record_equal(const ChangeRecord *a, const ChangeRecord *b)
{
        return a->n_slots == b->n_slots && a->size == b->size && memcmp(a->slots, b->slots, a->size) == 0;
}

/*
 * A packed record with a base is a list of differences: for each slot that differs from the base's,
 * how many slots before it are the base's (a LEB128 number, one byte below 128), then the slot.
 * The slots after the last difference are the base's.
 */
static size_t put_run(uint8_t *out, size_t run)
{
        size_t n = 0;

        do {
                uint8_t b = run & 0x7f;
                run >>= 7;
                if (out)
                        out[n] = (uint8_t) (b | (run ? 0x80 : 0));
                n++;
        } while (run);
        return n;
}

static size_t get_run(const uint8_t *in, size_t *offset)
{
        size_t run = 0;

        for (unsigned shift = 0;; shift += 7) {
                uint8_t b = in[(*offset)++];
                run |= (size_t) (b & 0x7f) << shift;
                if (!(b & 0x80))
                        return run;
        }
}

/* Writes r's differences from base to out (NULL: only counts them); returns their size. */
static size_t differences(const ChangeRecord *r, const PackedRecord *base, uint8_t *out)
{
        size_t n = 0, run = 0, r_offset = 0, base_offset = 0;

        for (size_t i = 0; i < r->n_slots; i++) {
                RecordSlot s = record_next(r, &r_offset);
                size_t base_size = slot_size(base->bytes + base_offset);

                if (record_slot_equal(s, (RecordSlot){base->bytes + base_offset, base_size})) {
                        run++;
                } else {
                        n += put_run(out ? out + n : NULL, run);
                        if (out)
                                memcpy(out + n, s.bytes, s.size);
                        n += s.size;
                        run = 0;
                }
                base_offset += base_size;
        }
        return n;
}

static int packed_new(const ChangeRecord *r, const PackedRecord *base, size_t size, PackedRecord **ret)
{
        PackedRecord *p = malloc(offsetof(PackedRecord, bytes) + size);

        if (!p)
                return -ENOMEM;
        /* Member by member: the struct's tail padding may lie beyond a short allocation. */
        p->base = base;
        p->n_slots = r->n_slots;
        p->value_bytes = r->value_bytes;
        p->size = (uint32_t) size;
        p->shared = false;
        if (base)
                (void) differences(r, base, p->bytes);
        else
                memcpy(p->bytes, r->slots, size);
        *ret = p;
        return 0;
}

int record_pack(const ChangeRecord *r, const PackedRecord *base, PackedRecord **ret)
{
        size_t size;

        if (!base || base->n_slots != r->n_slots)
                return packed_new(r, NULL, r->size, ret);
        assert(!base->base);
        size = differences(r, base, NULL);
        if (size == 0 && r->value_bytes == base->value_bytes) {
                *ret = (PackedRecord *) base;
                return 0;
        }
        if (size >= r->size)
                return packed_new(r, NULL, r->size, ret);
        return packed_new(r, base, size, ret);
}

int record_template(const ChangeRecord *r, PackedRecord **ret)
{
        int k = packed_new(r, NULL, r->size, ret);

        if (k >= 0)
                (*ret)->shared = true;
        return k;
}

/* Appends the slot at *offset in bytes to r, and moves *offset past it. */
static void copy_slot(ChangeRecord *r, const uint8_t *bytes, size_t *offset)
{
        size_t n = slot_size(bytes + *offset);

        record_put_slot(r, (RecordSlot){bytes + *offset, n});
        *offset += n;
}

int record_unpack(const PackedRecord *p, ChangeRecord **ret)
{
        size_t offset = 0, base_offset = 0, slot = 0;
        ChangeRecord *r;
        int k;

        k = record_new(p->n_slots, &r);
        if (k < 0)
                return k;
        if (!p->base) {
                memcpy(r->slots, p->bytes, p->size);
                r->size = p->size;
        } else
                while (slot < p->n_slots) {
                        /* After the last difference, the rest is the base's. */
                        size_t run = offset < p->size ? get_run(p->bytes, &offset) : p->n_slots - slot;
                        for (; run > 0; run--, slot++)
                                copy_slot(r, p->base->bytes, &base_offset);
                        if (slot == p->n_slots)
                                break;
                        copy_slot(r, p->bytes, &offset);
                        base_offset += slot_size(p->base->bytes + base_offset);
                        slot++;
                }
        r->value_bytes = p->value_bytes;
        *ret = r;
        return 0;
}

void record_packed_free(PackedRecord *p)
{
        if (p && !p->shared)
                free(p);
}

void record_template_free(PackedRecord *t)
{
        free(t);
}
