/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/hashmap.h"

/* A tombstone keeps probe chains intact after a removal. */
static const char tombstone[] = "";
#define TOMBSTONE (tombstone)

static uint64_t string_hash(const char *s)
{
        uint64_t h = fnv1a(s, strlen(s), FNV1A_INIT);
        /* Fold the high bits in: probing uses the low ones. */
        return h ^ (h >> 29);
}

void hashmap_init(Hashmap *h)
{
        *h = (Hashmap){};
}

void hashmap_deinit(Hashmap *h)
{
        free(h->entries);
        *h = (Hashmap){};
}

static size_t probe(const Hashmap *h, const char *key, uint64_t hash, bool *ret_found);

static int resize(Hashmap *h, size_t n_buckets)
{
        HashmapEntry *old = h->entries;
        size_t old_n = h->n_buckets;

        h->entries = calloc(n_buckets, sizeof(HashmapEntry));
        if (!h->entries) {
                h->entries = old;
                return -ENOMEM;
        }
        h->n_buckets = n_buckets;
        h->n_tombstones = 0;

        for (size_t i = 0; i < old_n; i++) {
                bool found;
                if (!old[i].key || old[i].key == TOMBSTONE)
                        continue;
                size_t j = probe(h, old[i].key, string_hash(old[i].key), &found);
                h->entries[j] = old[i];
        }
        free(old);
        return 0;
}

/* Returns the slot holding key, or the first free slot for it. */
static size_t probe(const Hashmap *h, const char *key, uint64_t hash, bool *ret_found)
{
        size_t mask = h->n_buckets - 1, i = hash & mask, first_free = SIZE_MAX;

        for (;;) {
                const HashmapEntry *e = &h->entries[i];
                if (!e->key) {
                        *ret_found = false;
                        return first_free != SIZE_MAX ? first_free : i;
                }
                if (e->key == TOMBSTONE) {
                        if (first_free == SIZE_MAX)
                                first_free = i;
                } else if (strcmp(e->key, key) == 0) {
                        *ret_found = true;
                        return i;
                }
                i = (i + 1) & mask;
        }
}

int hashmap_put(Hashmap *h, const char *key, void *value)
{
        bool found;
        size_t i;
        int r;

        if ((h->n_entries + h->n_tombstones + 1) * 4 >= h->n_buckets * 3) {
                size_t n = h->n_buckets ? h->n_buckets : 16;
                while ((h->n_entries + 1) * 2 >= n)
                        n *= 2;
                r = resize(h, n);
                if (r < 0)
                        return r;
        }

        i = probe(h, key, string_hash(key), &found);
        if (found)
                return -EEXIST;
        if (h->entries[i].key == TOMBSTONE)
                h->n_tombstones--;
        h->entries[i] = (HashmapEntry){.key = key, .value = value};
        h->n_entries++;
        return 0;
}

void *hashmap_get(const Hashmap *h, const char *key)
{
        bool found;
        size_t i;

        if (h->n_entries == 0)
                return NULL;
        i = probe(h, key, string_hash(key), &found);
        return found ? h->entries[i].value : NULL;
}

void *hashmap_remove_value(Hashmap *h, const char *key, void *value)
{
        bool found;
        size_t i;

        if (h->n_entries == 0)
                return NULL;
        i = probe(h, key, string_hash(key), &found);
        if (!found || h->entries[i].value != value)
                return NULL;
        h->entries[i] = (HashmapEntry){.key = TOMBSTONE};
        h->n_entries--;
        h->n_tombstones++;
        return value;
}

size_t hashmap_size(const Hashmap *h)
{
        return h->n_entries;
}

void *hashmap_iterate(const Hashmap *h, size_t *i, const char **ret_key)
{
        for (; *i < h->n_buckets; (*i)++) {
                const HashmapEntry *e = &h->entries[*i];
                if (e->key && e->key != TOMBSTONE) {
                        (*i)++;
                        if (ret_key)
                                *ret_key = e->key;
                        return e->value;
                }
        }
        return NULL;
}
