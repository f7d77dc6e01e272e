/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The well-behaved client of bench/slow-subscriber.py: while a stuck
 * subscriber sits on the bus, can everyone else still reach blkmodeld?
 *
 *   prober ADDRESS SECONDS [CALL_TIMEOUT_MS]
 *
 * Every 10 ms it calls org.freedesktop.DBus.Peer.Ping and
 * Properties.Get(Manager, LastSeqnum) on org.blkmodel1, each with at most
 * one call of its kind in flight (so that a stalled daemon does not run
 * into dbus-daemon's 128 pending replies per connection), and records each
 * call's latency, timeouts and errors.  It also subscribes to every signal
 * of the Manager and reads them as fast as they come, counting Uevent
 * seqnum gaps and SignalsDropped markers; at the end it asks GetEvents for
 * every seqnum it missed, to show whether the retained log fills the gaps.
 * Prints "ready" once subscribed, then one line of JSON.  Per-second
 * worst latencies go to stderr as "T SECONDS MAX_MS SIGNALS" lines.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "bus-open.h"
#include "clock.h"

#define _cleanup_(f) __attribute__((cleanup(f)))
#define TICK_NS (10ULL * 1000000ULL)
#define GAPS_MAX 4096

typedef struct Call {
        const char *name;
        sd_bus_slot *slot;
        uint64_t sent_ns;
} Call;

typedef struct State {
        uint64_t calls, timeouts, errors, max_ns, over_100ms, over_1s;
        uint64_t *lat;
        uint64_t n_lat, lat_cap;
        uint64_t signals, uevents, last_seqnum, gaps, missed, markers, announced;
        uint64_t gap_after[GAPS_MAX], gap_count[GAPS_MAX];
        uint64_t n_gaps_kept;
        uint64_t second_max_ns, second_signals;
        char last_error[256];
} State;

static State s;

static void record(uint64_t ns)
{
        if (s.n_lat == s.lat_cap) {
                s.lat_cap = s.lat_cap ? 2 * s.lat_cap : 4096;
                s.lat = realloc(s.lat, s.lat_cap * sizeof(uint64_t));
                if (!s.lat)
                        abort();
        }
        s.lat[s.n_lat++] = ns;
        if (ns > s.max_ns)
                s.max_ns = ns;
        if (ns > s.second_max_ns)
                s.second_max_ns = ns;
        if (ns > 100ULL * 1000000ULL)
                s.over_100ms++;
        if (ns > 1000ULL * 1000000ULL)
                s.over_1s++;
}

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        Call *c = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);

        record(bench_now_ns() - c->sent_ns);
        c->slot = sd_bus_slot_unref(c->slot);
        if (e) {
                if (sd_bus_error_has_name(e, SD_BUS_ERROR_TIMEOUT) ||
                    sd_bus_error_has_name(e, SD_BUS_ERROR_NO_REPLY))
                        s.timeouts++;
                else {
                        s.errors++;
                        snprintf(s.last_error, sizeof(s.last_error), "%s: %s", e->name, e->message);
                }
        }
        return 0;
}

static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        uint64_t seqnum;

        s.signals++;
        s.second_signals++;
        if (sd_bus_message_is_signal(m, "org.blkmodel1.Manager", "SignalsDropped")) {
                uint64_t dropped, first, last;

                s.markers++;
                /* The Uevents the daemon did not send: a gap no later Uevent may reveal. */
                if (sd_bus_message_read(m, "ttt", &dropped, &first, &last) >= 0 && first > 0 &&
                    first > s.last_seqnum && s.n_gaps_kept < GAPS_MAX) {
                        s.announced += last - first + 1;
                        s.gap_after[s.n_gaps_kept] = first - 1;
                        s.gap_count[s.n_gaps_kept++] = last - first + 1;
                        s.last_seqnum = last;
                }
                return 0;
        }
        if (!sd_bus_message_is_signal(m, "org.blkmodel1.Manager", "Uevent"))
                return 0;
        if (sd_bus_message_read(m, "t", &seqnum) < 0)
                return 0;
        s.uevents++;
        if (s.last_seqnum > 0 && seqnum != s.last_seqnum + 1) {
                s.gaps++;
                if (seqnum > s.last_seqnum) {
                        s.missed += seqnum - s.last_seqnum - 1;
                        if (s.n_gaps_kept < GAPS_MAX) {
                                s.gap_after[s.n_gaps_kept] = s.last_seqnum;
                                s.gap_count[s.n_gaps_kept++] = seqnum - s.last_seqnum - 1;
                        }
                }
        }
        s.last_seqnum = seqnum;
        return 0;
}

static int call(sd_bus *bus, Call *c, uint64_t timeout_us)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        if (strcmp(c->name, "Ping") == 0)
                r = sd_bus_message_new_method_call(bus, &m, "org.blkmodel1", "/org/blkmodel1/Manager",
                                                   "org.freedesktop.DBus.Peer", "Ping");
        else {
                r = sd_bus_message_new_method_call(bus, &m, "org.blkmodel1", "/org/blkmodel1/Manager",
                                                   "org.freedesktop.DBus.Properties", "Get");
                if (r >= 0)
                        r = sd_bus_message_append(m, "ss", "org.blkmodel1.Manager", "LastSeqnum");
        }
        if (r < 0)
                return r;
        c->sent_ns = bench_now_ns();
        s.calls++;
        return sd_bus_call_async(bus, &c->slot, m, on_reply, c, timeout_us);
}

/* How many of the seqnums we missed are still in the daemon's retained log. */
static void recover(sd_bus *bus, uint64_t *recovered, uint64_t *expired)
{
        for (uint64_t g = 0; g < s.n_gaps_kept; g++) {
                uint64_t after = s.gap_after[g], want = s.gap_count[g];

                while (want > 0) {
                        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
                        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                        uint64_t seqnum = 0, got = 0;
                        int r;

                        r = sd_bus_call_method(bus, "org.blkmodel1", "/org/blkmodel1/Manager",
                                               "org.blkmodel1.Manager", "GetEvents", &e, &reply, "t", after);
                        if (r < 0) {
                                *expired += want;
                                break;
                        }
                        if (sd_bus_message_enter_container(reply, 'a', "(tssoa{ss})") < 0)
                                break;
                        while (want > 0 && sd_bus_message_enter_container(reply, 'r', "tssoa{ss}") > 0) {
                                if (sd_bus_message_read(reply, "t", &seqnum) < 0 ||
                                    sd_bus_message_skip(reply, "sso") < 0 ||
                                    sd_bus_message_skip(reply, "a{ss}") < 0 ||
                                    sd_bus_message_exit_container(reply) < 0)
                                        break;
                                if (seqnum == after + 1) {
                                        got++;
                                        want--;
                                }
                                after = seqnum;
                        }
                        *recovered += got;
                        if (got == 0)
                                break;
                }
        }
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static double pct_ms(double p)
{
        uint64_t i;

        if (s.n_lat == 0)
                return 0;
        i = (uint64_t) (p / 100.0 * (double) s.n_lat + 0.999999);
        i = i == 0 ? 1 : i > s.n_lat ? s.n_lat : i;
        return (double) s.lat[i - 1] / 1e6;
}

int main(int argc, char **argv)
{
        sd_bus *bus = NULL;
        Call calls[] = {{.name = "Ping"}, {.name = "Get"}};
        uint64_t seconds, timeout_us = 5000000, start, next_tick, next_second, recovered = 0, expired = 0;
        int r;

        if (argc < 3 || argc > 4) {
                fprintf(stderr, "usage: %s ADDRESS SECONDS [CALL_TIMEOUT_MS]\n", argv[0]);
                return 2;
        }
        seconds = strtoull(argv[2], NULL, 10);
        if (argc == 4)
                timeout_us = strtoull(argv[3], NULL, 10) * 1000;

        r = bench_bus_open(argv[1], &bus);
        if (r >= 0)
                r = sd_bus_add_match(bus, NULL,
                                     "type='signal',path='/org/blkmodel1/Manager',"
                                     "interface='org.blkmodel1.Manager'",
                                     on_signal, NULL);
        if (r < 0) {
                fprintf(stderr, "prober: cannot connect or subscribe: %s\n", strerror(-r));
                return 1;
        }
        printf("ready\n");
        fflush(stdout);

        start = bench_now_ns();
        next_tick = start;
        next_second = start + 1000000000ULL;
        while (bench_now_ns() - start < seconds * 1000000000ULL) {
                uint64_t t = bench_now_ns();

                if (t >= next_tick) {
                        for (size_t i = 0; i < 2; i++)
                                if (!calls[i].slot && call(bus, &calls[i], timeout_us) < 0)
                                        s.errors++;
                        next_tick += TICK_NS;
                }
                if (t >= next_second) {
                        fprintf(stderr, "T %.0f %.1f %" PRIu64 "\n", (double) (t - start) / 1e9,
                                (double) s.second_max_ns / 1e6, s.second_signals);
                        s.second_max_ns = s.second_signals = 0;
                        next_second += 1000000000ULL;
                }
                /* A call still in flight counts towards the worst latency as it ages. */
                t = bench_now_ns();
                for (size_t i = 0; i < 2; i++)
                        if (calls[i].slot && t - calls[i].sent_ns > s.second_max_ns)
                                s.second_max_ns = t - calls[i].sent_ns;
                r = sd_bus_process(bus, NULL);
                if (r < 0) {
                        fprintf(stderr, "prober: %s\n", strerror(-r));
                        break;
                }
                if (r > 0)
                        continue;
                t = bench_now_ns();
                (void) sd_bus_wait(bus, next_tick > t ? (next_tick - t) / 1000 : 0);
        }
        /* What is still in flight at the end is as late as it got. */
        for (size_t i = 0; i < 2; i++)
                if (calls[i].slot) {
                        record(bench_now_ns() - calls[i].sent_ns);
                        calls[i].slot = sd_bus_slot_unref(calls[i].slot);
                }
        recover(bus, &recovered, &expired);

        qsort(s.lat, s.n_lat, sizeof(uint64_t), cmp_u64);
        printf("{\"calls\": %" PRIu64 ", \"timeouts\": %" PRIu64 ", \"errors\": %" PRIu64
               ", \"p50_ms\": %.2f, \"p99_ms\": %.2f, \"max_ms\": %.1f, \"over_100ms\": %" PRIu64
               ", \"over_1s\": %" PRIu64 ", \"signals\": %" PRIu64 ", \"uevents\": %" PRIu64
               ", \"last_seqnum\": %" PRIu64 ", \"gaps\": %" PRIu64 ", \"missed\": %" PRIu64
               ", \"markers\": %" PRIu64 ", \"announced\": %" PRIu64 ", \"recovered\": %" PRIu64
               ", \"expired\": %" PRIu64 ", \"last_error\": \"%s\"}\n",
               s.calls, s.timeouts, s.errors, pct_ms(50), pct_ms(99), (double) s.max_ns / 1e6, s.over_100ms,
               s.over_1s, s.signals, s.uevents, s.last_seqnum, s.gaps, s.missed, s.markers, s.announced,
               recovered, expired, s.last_error);
        free(s.lat);
        sd_bus_flush_close_unref(bus);
        return 0;
}
