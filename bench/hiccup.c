/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hiccup SECONDS [THREADS]: THREADS threads (default: one per CPU) read CLOCK_MONOTONIC in a busy loop
 * for SECONDS and report every gap of over 20 ms, and whether every thread saw it at the same moment.
 *
 * A gap that all threads see at once is a pause of the whole machine: on a VM whose host does not
 * report steal time, the guest counts it as CPU time of whatever thread was running.  From inside
 * blkmodeld such a pause looks like a loop turn of the daemon's own work ("33 ms (0 asleep)" in its
 * log) and like a stall of every ping; run this beside a benchmark, or before one, to know how often
 * the machine itself stops.  It keeps every CPU busy: not during a measurement.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#define GAP_REPORTED_NSEC (20 * 1000 * 1000ULL)
#define GAPS_MAX 1024
/* Two threads' gaps are one pause if they begin this close together. */
#define SAME_PAUSE_NSEC (2 * 1000 * 1000ULL)

typedef struct Gap {
        uint64_t start, length;
} Gap;

typedef struct Watcher {
        pthread_t thread;
        uint64_t until;
        Gap gaps[GAPS_MAX];
        size_t n_gaps;
        uint64_t worst;
} Watcher;

static void *watch(void *userdata)
{
        Watcher *w = userdata;
        uint64_t prev = bench_now_ns(), t;

        while ((t = bench_now_ns()) < w->until) {
                uint64_t gap = t - prev;
                if (gap > w->worst)
                        w->worst = gap;
                if (gap > GAP_REPORTED_NSEC && w->n_gaps < GAPS_MAX)
                        w->gaps[w->n_gaps++] = (Gap){prev, gap};
                prev = t;
        }
        return NULL;
}

/* Whether every other watcher has a gap beginning within SAME_PAUSE_NSEC of g. */
static bool seen_by_all(const Watcher *w, size_t n, size_t self, const Gap *g)
{
        for (size_t i = 0; i < n; i++) {
                bool found = false;
                if (i == self)
                        continue;
                for (size_t j = 0; j < w[i].n_gaps && !found; j++) {
                        uint64_t a = w[i].gaps[j].start;
                        found = (a > g->start ? a - g->start : g->start - a) <= SAME_PAUSE_NSEC;
                }
                if (!found)
                        return false;
        }
        return true;
}

int main(int argc, char **argv)
{
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        unsigned seconds, n;
        uint64_t begin;
        Watcher *w;
        int r;

        if (argc < 2 || argc > 3) {
                fprintf(stderr, "usage: %s SECONDS [THREADS]\n", argv[0]);
                return 2;
        }
        seconds = (unsigned) strtoul(argv[1], NULL, 10);
        n = argc > 2 ? (unsigned) strtoul(argv[2], NULL, 10) : (unsigned) (cpus > 0 ? cpus : 1);
        if (seconds == 0 || n == 0) {
                fprintf(stderr, "SECONDS and THREADS must be positive.\n");
                return 2;
        }
        w = calloc(n, sizeof(Watcher));
        if (!w) {
                fprintf(stderr, "Out of memory.\n");
                return 1;
        }
        begin = bench_now_ns();
        for (unsigned i = 0; i < n; i++) {
                w[i].until = begin + (uint64_t) seconds * 1000000000ULL;
                r = pthread_create(&w[i].thread, NULL, watch, &w[i]);
                if (r != 0) {
                        fprintf(stderr, "Cannot start a thread: %s\n", strerror(r));
                        return 1;
                }
        }
        for (unsigned i = 0; i < n; i++)
                pthread_join(w[i].thread, NULL);

        for (unsigned i = 0; i < n; i++) {
                printf("thread %u: worst gap %.1f ms, %zu over %llu ms\n", i, w[i].worst / 1e6, w[i].n_gaps,
                       (unsigned long long) (GAP_REPORTED_NSEC / 1000000));
                for (size_t j = 0; j < w[i].n_gaps; j++)
                        printf("  %.1f ms at %.3f s%s\n", w[i].gaps[j].length / 1e6,
                               (w[i].gaps[j].start - begin) / 1e9,
                               n > 1 && seen_by_all(w, n, i, &w[i].gaps[j]) ? ", every thread at once" : "");
        }
        free(w);
        return 0;
}
