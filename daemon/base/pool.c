/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"

/* Enough for a disk with its partitions, queue and groups on the real kernel, or about twenty
 * objects' values, in one block; below glibc's mmap threshold (daemon/main.c), so that a freed
 * block is whole pages of heap, which the next user takes or malloc_trim() gives back. */
#define POOL_BLOCK_BYTES (16 * 1024)

struct PoolBlock {
        PoolBlock *next;
        size_t used, size;
        alignas(max_align_t) char data[];
};

static void *take(Pool *p, size_t size, size_t align)
{
        PoolBlock *b = p->blocks;
        size_t at = b ? (b->used + align - 1) & ~(align - 1) : 0;

        if (!b || at > b->size || b->size - at < size) {
                size_t n = size > POOL_BLOCK_BYTES ? size : POOL_BLOCK_BYTES;

                b = malloc(sizeof(PoolBlock) + n);
                if (!b)
                        return NULL;
                *b = (PoolBlock){.next = p->blocks, .size = n};
                p->blocks = b;
                at = 0;
        }
        b->used = at + size;
        return b->data + at;
}

void *pool_alloc(Pool *p, size_t size)
{
        return take(p, size, alignof(max_align_t));
}

char *pool_strndup(Pool *p, const char *s, size_t n)
{
        char *t = take(p, n + 1, 1);

        if (!t)
                return NULL;
        memcpy(t, s, n);
        t[n] = 0;
        return t;
}

char *pool_strdup(Pool *p, const char *s)
{
        return pool_strndup(p, s, strlen(s));
}

void pool_free(Pool *p)
{
        while (p->blocks) {
                PoolBlock *b = p->blocks;
                p->blocks = b->next;
                free(b);
        }
}
