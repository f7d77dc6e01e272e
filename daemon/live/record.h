/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the live layer remembers of an object's values, to tell which of them an event or the poll
 * changed: one slot per value, in a fixed order the caller defines.  A slot is as few bytes as say
 * what the value was: a number, or a string of up to RECORD_SHORT_MAX bytes, is kept as it is (its
 * change is never missed; most sysfs values are "0", "128", "none"), a longer one as a 64-bit
 * fingerprint.  A slot's encoding depends on its kind: slots are only compared with the same slot of
 * another reading.  That is about half of what a fingerprint per value costs (issue 12: RSS per object).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RECORD_SHORT_MAX 8

typedef struct ChangeRecord {
        uint32_t n_slots;
        uint32_t size;        /* bytes in slots[] */
        uint32_t value_bytes; /* what the values would take in a message (an estimate for sizes) */
        uint8_t slots[];
} ChangeRecord;

/* One slot of a record: its encoded bytes, compared as they are. */
typedef struct RecordSlot {
        const uint8_t *bytes;
        size_t size;
} RecordSlot;

/* A record being filled: room for n slots of the largest size, given back by record_finish(). */
int record_new(size_t n_slots, ChangeRecord **ret);
void record_put_string(ChangeRecord *r, const char *value);
void record_put_number(ChangeRecord *r, uint64_t number);
void record_put_fingerprint(ChangeRecord *r, uint64_t fingerprint);
/* A value that moves all the time (stat, inflight): never announced, nothing to keep. */
void record_put_volatile(ChangeRecord *r);
void record_put_slot(ChangeRecord *r, RecordSlot slot);
/* Shrinks r to what it holds; r stays valid when the shrink fails. */
ChangeRecord *record_finish(ChangeRecord *r);

/* Reads the slots in order: start at 0, then pass what the last call returned. */
RecordSlot record_next(const ChangeRecord *r, size_t *offset);
RecordSlot record_slot_at(const ChangeRecord *r, size_t index);

bool record_slot_equal(RecordSlot a, RecordSlot b);
bool record_equal(const ChangeRecord *a, const ChangeRecord *b);
