/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A string-keyed open-addressing hash table whose values carry their own keys: a slot is the
 * value's pointer and nothing else, and key_of(value) gives its key (a kobject's path, a shape's
 * key).  8 bytes a slot, no allocation per entry: the model's three indexes of 91,000 objects are
 * 3 MiB at half load, not 6 (issue 12: RSS per object).  A value's key must not change while it
 * is in the table.
 */

typedef const char *(*HashmapKeyOf)(const void *value);

typedef struct Hashmap {
        void **slots;
        HashmapKeyOf key_of;
        size_t n_buckets; /* a power of two, or 0 */
        size_t n_entries;
        size_t n_tombstones;
        unsigned resizes; /* every put may move all entries; while this stays, none moved */
} Hashmap;

void hashmap_init(Hashmap *h, HashmapKeyOf key_of);
/* Empties the table; it stays usable, with the same key_of. */
void hashmap_deinit(Hashmap *h);

/* For a set of strings: each value is its own key. */
const char *hashmap_key_self(const void *value);

/* 0 on success, -EEXIST if the value's key is present, -ENOMEM. */
int hashmap_put(Hashmap *h, void *value);
void *hashmap_get(const Hashmap *h, const char *key);
/* Removes the entry only if it is this value (not another with an equal key); returns the value
 * or NULL. */
void *hashmap_remove(Hashmap *h, const void *value);
size_t hashmap_size(const Hashmap *h);

/* Iteration: *i starts at 0; returns NULL when done.  It may go on across puts and removes (a
 * put may be seen or not) as long as resizes is unchanged: else entries moved, and it starts over. */
void *hashmap_iterate(const Hashmap *h, size_t *i);
