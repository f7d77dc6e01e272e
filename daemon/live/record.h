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

/* A record being filled, with room for n slots of the largest size: a reading's, short-lived (what
 * an object keeps is packed). */
int record_new(size_t n_slots, ChangeRecord **ret);
void record_put_string(ChangeRecord *r, const char *value);
void record_put_number(ChangeRecord *r, uint64_t number);
void record_put_fingerprint(ChangeRecord *r, uint64_t fingerprint);
/* A value that moves all the time (stat, inflight): never announced, nothing to keep. */
void record_put_volatile(ChangeRecord *r);
void record_put_slot(ChangeRecord *r, RecordSlot slot);

/* Reads the slots in order: start at 0, then pass what the last call returned. */
RecordSlot record_next(const ChangeRecord *r, size_t *offset);
RecordSlot record_slot_at(const ChangeRecord *r, size_t index);

bool record_slot_equal(RecordSlot a, RecordSlot b);
/* A slot's value back, where the slot holds it whole (not a fingerprint): a number put with
 * record_put_number(), a string of up to RECORD_SHORT_MAX bytes put with record_put_string(). */
bool record_slot_number(RecordSlot s, uint64_t *ret);
bool record_slot_string(RecordSlot s, char ret[RECORD_SHORT_MAX + 1]);
bool record_equal(const ChangeRecord *a, const ChangeRecord *b);

/*
 * What an object keeps between readings: its record as the slots that differ from a template's,
 * the first record of its shape.  Siblings' values are mostly the same (1,000 queues differ in one
 * fingerprinted value, partitions in a few numbers, elevators in none), so the 9,128 records of the
 * 1,000 × 4 fixture take about 0.5 MiB of heap instead of 1.2 (issue 12: RSS after the warm-up).
 */
typedef struct PackedRecord {
        const struct PackedRecord *base; /* a template, or NULL: bytes[] are the slots themselves */
        uint32_t n_slots;
        uint32_t value_bytes;
        uint32_t size;  /* bytes in bytes[] */
        bool shared;    /* a template: the objects whose record equals it point at it */
        uint8_t bytes[];
} PackedRecord;

/* r against base (NULL, or a template of the same number of slots: else r is kept whole).  A record
 * that equals base is base itself. */
int record_pack(const ChangeRecord *r, const PackedRecord *base, PackedRecord **ret);
/* A template made of r, shared by whatever is packed against it. */
int record_template(const ChangeRecord *r, PackedRecord **ret);
/* The record back, for reading and comparing (free() it). */
int record_unpack(const PackedRecord *p, ChangeRecord **ret);
/* Frees p unless it is a template; record_template_free() frees those. */
void record_packed_free(PackedRecord *p);
void record_template_free(PackedRecord *t);
