/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <time.h>

#define USEC_PER_SEC UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define USEC_INFINITY UINT64_MAX

/* A clock's time in ns; 0 if it cannot be read (a CPU-time clock of a thread that is gone). */
static inline uint64_t clock_nsec(clockid_t id)
{
        struct timespec ts;

        if (clock_gettime(id, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
}

static inline uint64_t now_nsec(void)
{
        return clock_nsec(CLOCK_MONOTONIC);
}

/* CLOCK_MONOTONIC in µs: the clock sd-bus's timeouts use. */
static inline uint64_t now_usec(void)
{
        return now_nsec() / 1000;
}
