/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The environment of one benchmark uevent, shared by bare-emitter.c and
 * uevent-send.c so that the bare signal and the daemon's carry the same
 * bytes: ten pairs, what the kernel sends for a loop device plus BENCH_T
 * (the sender's CLOCK_MONOTONIC ns, for the latency measurement).
 */
#pragma once

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"

#define BENCH_ENV_N 10

typedef struct BenchEnv {
        const char *keys[BENCH_ENV_N];
        const char *values[BENCH_ENV_N];
        char seqnum[24], t[24], devname[64];
} BenchEnv;

/* Fills e; its strings point into e and into action/devpath, which must outlive it. */
static inline void bench_env_fill(BenchEnv *e, const char *action, const char *devpath, uint64_t seqnum,
                                  uint64_t t_ns)
{
        const char *slash = strrchr(devpath, '/');
        int i = 0;

        snprintf(e->seqnum, sizeof(e->seqnum), "%" PRIu64, seqnum);
        snprintf(e->t, sizeof(e->t), "%" PRIu64, t_ns);
        snprintf(e->devname, sizeof(e->devname), "%s", slash ? slash + 1 : devpath);
#define PAIR(k, v) (e->keys[i] = (k), e->values[i] = (v), i++)
        PAIR("ACTION", action);
        PAIR("DEVPATH", devpath);
        PAIR("SUBSYSTEM", "block");
        PAIR("MAJOR", "7");
        PAIR("MINOR", "0");
        PAIR("DEVNAME", e->devname);
        PAIR("DEVTYPE", "disk");
        PAIR("DISKSEQ", "9");
        PAIR("SEQNUM", e->seqnum);
        PAIR("BENCH_T", e->t);
#undef PAIR
}

/* Sleeps until start + i / rate seconds: an absolute schedule does not drift. */
static inline void bench_pace(uint64_t start_ns, uint64_t i, uint64_t rate)
{
        uint64_t due = start_ns + i * 1000000000ULL / rate;
        struct timespec ts = {
                .tv_sec = (time_t) (due / 1000000000ULL),
                .tv_nsec = (long) (due % 1000000000ULL),
        };

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}
