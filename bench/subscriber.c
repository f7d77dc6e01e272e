/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one subscriber of bench/uevent-throughput.py: a bare sd-bus program
 * with a match on org.blkmodel1.Manager.Uevent, so that the receiving side
 * costs the same whichever process emits the signals.
 *
 *   subscriber ADDRESS COUNT [IDLE_TIMEOUT_SEC]
 *
 * It prints "ready" once the match is installed (the driver starts the
 * emitter only then), counts COUNT signals, checks that their seqnums are
 * gap-free, and prints one line of JSON.  "rate" is measured from the first
 * to the last signal, so start-up of either side is not part of it.  When a
 * signal carries BENCH_T (the sender's CLOCK_MONOTONIC ns), the latency
 * sent -> received is recorded; both ends are on this machine, so the
 * clocks agree.  It gives up after IDLE_TIMEOUT_SEC (default 20) without a
 * signal and reports what it got (the driver treats a short count as a
 * failure).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-bus.h>

#include "bus-open.h"
#include "clock.h"

typedef struct State {
        uint64_t want, count;
        uint64_t first_seqnum, last_seqnum, gaps;
        uint64_t t_first, t_last; /* ns, CLOCK_MONOTONIC */
        uint64_t *lat;            /* ns, one per signal that carried BENCH_T */
        uint64_t n_lat;
        int error;
} State;

static int on_uevent(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        State *s = userdata;
        /* Taken first: everything after is the subscriber's own cost, not the path's. */
        uint64_t t = bench_now_ns();
        uint64_t seqnum, sent = 0;
        const char *action, *devpath, *object, *key, *value;
        int r;

        r = sd_bus_message_read(m, "tsso", &seqnum, &action, &devpath, &object);
        if (r < 0)
                goto fail;

        /*
         * Walking the env costs the same in every run; it must be done to
         * find BENCH_T, and any real client reads the env anyway.
         */
        r = sd_bus_message_enter_container(m, 'a', "{ss}");
        if (r < 0)
                goto fail;
        while ((r = sd_bus_message_read(m, "{ss}", &key, &value)) > 0)
                if (strcmp(key, "BENCH_T") == 0)
                        sent = strtoull(value, NULL, 10);
        if (r < 0)
                goto fail;

        if (s->count == 0) {
                s->first_seqnum = seqnum;
                s->t_first = t;
        } else if (seqnum != s->last_seqnum + 1)
                s->gaps++;
        s->last_seqnum = seqnum;
        s->t_last = t;
        if (sent > 0 && sent <= t)
                s->lat[s->n_lat++] = t - sent;
        s->count++;
        return 0;

fail:
        s->error = r;
        return 0;
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array, in microseconds. */
static double pct_us(const uint64_t *v, uint64_t n, double p)
{
        uint64_t i = (uint64_t) (p / 100.0 * (double) n + 0.999999);
        if (i == 0)
                i = 1;
        if (i > n)
                i = n;
        return (double) v[i - 1] / 1000.0;
}

int main(int argc, char **argv)
{
        sd_bus *bus = NULL;
        State s = {};
        uint64_t idle_ns = 20ULL * 1000000000ULL, last_activity;
        int r;

        if (argc < 3 || argc > 4) {
                fprintf(stderr, "usage: %s ADDRESS COUNT [IDLE_TIMEOUT_SEC]\n", argv[0]);
                return 2;
        }
        s.want = strtoull(argv[2], NULL, 10);
        if (argc == 4)
                idle_ns = strtoull(argv[3], NULL, 10) * 1000000000ULL;
        s.lat = calloc(s.want + 1, sizeof(uint64_t));
        if (s.want == 0 || !s.lat) {
                fprintf(stderr, "bad COUNT or out of memory\n");
                return 2;
        }

        r = bench_bus_open(argv[1], &bus);
        /* Synchronous: when it returns, the bus daemon routes the signal to us. */
        if (r >= 0)
                r = sd_bus_add_match(bus, NULL,
                                     "type='signal',path='/org/blkmodel1/Manager',"
                                     "interface='org.blkmodel1.Manager',member='Uevent'",
                                     on_uevent, &s);
        if (r < 0) {
                fprintf(stderr, "subscriber: cannot connect or subscribe: %s\n", strerror(-r));
                return 1;
        }
        printf("ready\n");
        fflush(stdout);

        last_activity = bench_now_ns();
        while (s.count < s.want && s.error == 0) {
                r = sd_bus_process(bus, NULL);
                if (r < 0) {
                        fprintf(stderr, "subscriber: %s\n", strerror(-r));
                        break;
                }
                if (r > 0) {
                        last_activity = bench_now_ns();
                        continue;
                }
                if (bench_now_ns() - last_activity > idle_ns)
                        break;
                r = sd_bus_wait(bus, 1000000);
                if (r < 0 && r != -EINTR) {
                        fprintf(stderr, "subscriber: %s\n", strerror(-r));
                        break;
                }
        }

        double secs = (double) (s.t_last - s.t_first) / 1e9;
        struct rusage ru;
        /* Our own CPU: on a small machine the subscriber competes with what it measures. */
        (void) getrusage(RUSAGE_SELF, &ru);
        double cpu = (double) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     (double) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
        printf("{\"count\": %" PRIu64 ", \"first_seqnum\": %" PRIu64 ", \"last_seqnum\": %" PRIu64
               ", \"gaps\": %" PRIu64 ", \"seconds\": %.6f, \"rate\": %.1f, \"error\": %d"
               ", \"cpu\": %.3f",
               s.count, s.first_seqnum, s.last_seqnum, s.gaps, secs,
               s.count > 1 && secs > 0 ? (double) (s.count - 1) / secs : 0.0, s.error, cpu);
        if (s.n_lat > 0) {
                qsort(s.lat, s.n_lat, sizeof(uint64_t), cmp_u64);
                printf(", \"latency_n\": %" PRIu64
                       ", \"p50_us\": %.1f, \"p90_us\": %.1f, \"p99_us\": %.1f, \"max_us\": %.1f",
                       s.n_lat, pct_us(s.lat, s.n_lat, 50), pct_us(s.lat, s.n_lat, 90),
                       pct_us(s.lat, s.n_lat, 99), (double) s.lat[s.n_lat - 1] / 1000.0);
        }
        printf("}\n");

        free(s.lat);
        sd_bus_flush_close_unref(bus);
        return s.count == s.want && s.gaps == 0 && s.error == 0 ? 0 : 1;
}
