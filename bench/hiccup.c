/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hiccup [--asleep] SECONDS [THREADS]: THREADS threads (default: one per CPU) read CLOCK_MONOTONIC
 * for SECONDS and report every gap of over 20 ms, and whether every thread saw it at the same moment.
 *
 * A gap that all threads see at once is a pause of the whole machine, one that a thread sees alone is
 * its CPU taken away: on a VM whose host does not report steal time, the guest counts either as CPU
 * time of whatever thread was running.  From inside
 * blkmodeld such a pause looks like a loop turn of the daemon's own work ("33 ms (0 asleep)" in its
 * log) and like a stall of every ping; run this beside a benchmark, or before one, to know how often
 * the machine itself stops.
 *
 * By default each thread reads the clock in a busy loop, which keeps every CPU busy: not during a
 * measurement.  With --asleep each thread is bound to its own CPU and wakes every 2 ms, at real-time
 * priority where it may, so that a busy CPU delays it by no more than a switch; it costs under 1 %
 * of one CPU and may run beside a benchmark (bench/scale.py and bench/real-kernel do).  SECONDS 0: until
 * SIGTERM or SIGINT.  Each gap is printed with its start on CLOCK_MONOTONIC, to be matched with
 * what the benchmark saw then.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
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
#define ASLEEP_PERIOD_NSEC (2 * 1000 * 1000ULL)

typedef struct Gap {
        uint64_t start, length;
} Gap;

typedef struct Watcher {
        pthread_t thread;
        unsigned cpu;
        bool asleep;
        uint64_t until;
        Gap gaps[GAPS_MAX];
        size_t n_gaps;
        uint64_t worst;
} Watcher;

static volatile sig_atomic_t stopping;

static void on_stop(int sig)
{
        stopping = 1;
}

static void note(Watcher *w, uint64_t prev, uint64_t t)
{
        uint64_t gap = t - prev;

        if (gap > w->worst)
                w->worst = gap;
        if (gap > GAP_REPORTED_NSEC && w->n_gaps < GAPS_MAX)
                w->gaps[w->n_gaps++] = (Gap){prev, gap};
}

/* On its own CPU, above every ordinary thread where allowed: late only when the machine is. */
static void bind_and_raise(const Watcher *w)
{
        struct sched_param p = {.sched_priority = 1};
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(w->cpu, &set);
        (void) pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
        (void) pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
}

static void *watch(void *userdata)
{
        Watcher *w = userdata;
        uint64_t prev = bench_now_ns(), next = prev, t;

        if (w->asleep)
                bind_and_raise(w);
        while (!stopping && prev < w->until) {
                if (w->asleep) {
                        next += ASLEEP_PERIOD_NSEC;
                        struct timespec ts = {.tv_sec = next / 1000000000ULL, .tv_nsec = next % 1000000000ULL};
                        (void) clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
                }
                t = bench_now_ns();
                note(w, prev, t);
                prev = t;
                if (next < t)
                        next = t; /* woken late: the next period from now */
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
        bool asleep = argc > 1 && strcmp(argv[1], "--asleep") == 0;
        unsigned seconds, n;
        uint64_t begin;
        sigset_t mask, old;
        Watcher *w;
        int r;

        argv += asleep;
        argc -= asleep;
        if (argc < 2 || argc > 3) {
                fprintf(stderr, "usage: hiccup [--asleep] SECONDS [THREADS]\n");
                return 2;
        }
        seconds = (unsigned) strtoul(argv[1], NULL, 10);
        n = argc > 2 ? (unsigned) strtoul(argv[2], NULL, 10) : (unsigned) (cpus > 0 ? cpus : 1);
        if (n == 0) {
                fprintf(stderr, "THREADS must be positive.\n");
                return 2;
        }
        w = calloc(n, sizeof(Watcher));
        if (!w) {
                fprintf(stderr, "Out of memory.\n");
                return 1;
        }
        /* The watchers never take the stop signal: it interrupts nobody's sleep but main's. */
        (void) signal(SIGTERM, on_stop);
        (void) signal(SIGINT, on_stop);
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        (void) pthread_sigmask(SIG_BLOCK, &mask, &old);
        begin = bench_now_ns();
        for (unsigned i = 0; i < n; i++) {
                w[i].cpu = i % (unsigned) (cpus > 0 ? cpus : 1);
                w[i].asleep = asleep;
                w[i].until = seconds ? begin + (uint64_t) seconds * 1000000000ULL : UINT64_MAX;
                r = pthread_create(&w[i].thread, NULL, watch, &w[i]);
                if (r != 0) {
                        fprintf(stderr, "Cannot start a thread: %s\n", strerror(r));
                        return 1;
                }
        }
        (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
        for (unsigned i = 0; i < n; i++)
                pthread_join(w[i].thread, NULL);

        for (unsigned i = 0; i < n; i++) {
                printf("thread %u: worst gap %.1f ms, %zu over %llu ms\n", i, w[i].worst / 1e6, w[i].n_gaps,
                       (unsigned long long) (GAP_REPORTED_NSEC / 1000000));
                for (size_t j = 0; j < w[i].n_gaps; j++)
                        printf("  %.1f ms at %.3f s (monotonic %llu ns)%s\n", w[i].gaps[j].length / 1e6,
                               (w[i].gaps[j].start - begin) / 1e9, (unsigned long long) w[i].gaps[j].start,
                               n > 1 && seen_by_all(w, n, i, &w[i].gaps[j]) ? ", every thread at once" : "");
        }
        free(w);
        return 0;
}
