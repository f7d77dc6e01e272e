/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * FNV-1a, 64 bit: fast on the short strings we hash (paths, attribute
 * values), and chainable, so that several pieces make one hash.
 */

#define FNV1A_INIT UINT64_C(0xcbf29ce484222325)

static inline uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
        for (size_t i = 0; i < n; i++) {
                h ^= ((const uint8_t *) p)[i];
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}
