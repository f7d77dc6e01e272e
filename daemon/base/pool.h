/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/*
 * Memory that lives and dies together — a disk's directory listings, one read-ahead batch's file
 * names and values — carved out of a few 16 KiB blocks and freed at once.  As separate
 * allocations they were thousands of small chunks: helper threads contended with the loop thread
 * for the one malloc arena's lock for each (daemon/main.c), and the few allocations made meanwhile
 * that outlive them landed between them and pinned their pages (a GetManagedObjects at 1,000 x 4
 * left 0.8 MiB more RSS behind; 0.35 MiB from a pool).  Not thread-safe: one thread at a time.
 */
typedef struct PoolBlock PoolBlock;

typedef struct Pool {
        PoolBlock *blocks; /* the newest first */
} Pool;

/* size bytes aligned for any type; NULL when out of memory. */
void *pool_alloc(Pool *p, size_t size);
/* A copy of the n bytes at s, NUL-terminated (not aligned); NULL when out of memory. */
char *pool_strndup(Pool *p, const char *s, size_t n);
char *pool_strdup(Pool *p, const char *s);
void pool_free(Pool *p);
