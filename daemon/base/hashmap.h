/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A string-keyed open-addressing hash table.  Keys are borrowed: the
 * caller keeps each key alive (usually it lives inside the value) until the
 * entry is removed.  Sized for hundreds of thousands of objects: 16 bytes
 * per slot, no allocation per entry.
 */

typedef struct HashmapEntry {
        const char *key;
        void *value;
} HashmapEntry;

typedef struct Hashmap {
        HashmapEntry *entries;
        size_t n_buckets; /* a power of two, or 0 */
        size_t n_entries;
        size_t n_tombstones;
} Hashmap;

void hashmap_init(Hashmap *h);
void hashmap_deinit(Hashmap *h);

/* 0 on success, -EEXIST if the key is present, -ENOMEM. */
int hashmap_put(Hashmap *h, const char *key, void *value);
void *hashmap_get(const Hashmap *h, const char *key);
/* Removes the entry only if it maps key to value; returns the value or NULL. */
void *hashmap_remove_value(Hashmap *h, const char *key, void *value);
size_t hashmap_size(const Hashmap *h);

/* Iteration: *i starts at 0; returns NULL when done. */
void *hashmap_iterate(const Hashmap *h, size_t *i, const char **ret_key);
