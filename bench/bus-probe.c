/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Small D-Bus probes for bench/real-kernel and bench/scale.py; bare sd-bus, so that what is
 * measured is the service and the bus.
 *
 *   bus-probe ping ADDRESS DEST INTERVAL_US
 *       Calls org.freedesktop.DBus.Peer.Ping on DEST every INTERVAL_US (on a fixed grid; a reply
 *       later than the next tick is followed by the next ping at once), until SIGINT/SIGTERM or
 *       stdin closes.  Prints "ready" after the first reply, then at the end one line of JSON:
 *       {"samples": [[t_send_ns, rtt_ns], ...], "errors": N}.  A ping of a service whose event
 *       loop is busy waits for the loop: the worst reply time is the longest stall a client saw.
 *
 *   bus-probe call ADDRESS DEST PATH INTERFACE METHOD COUNT
 *       COUNT synchronous calls without arguments; one line of JSON with the wall time and the
 *       size of the last reply's first string argument (Introspect XML), if any.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmo-parts.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
        stop = 1;
}

static int cmd_ping(const char *address, const char *dest, uint64_t interval_ns)
{
        sd_bus *bus = NULL;
        uint64_t (*samples)[2] = NULL, n = 0, cap = 0, errors = 0, next;
        struct sigaction sa = {.sa_handler = on_signal};
        int r;

        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        r = bench_bus_open(address, &bus);
        if (r < 0) {
                fprintf(stderr, "bus-probe: cannot connect to %s: %s\n", address, strerror(-r));
                return 1;
        }
        r = sd_bus_call_method(bus, dest, "/", "org.freedesktop.DBus.Peer", "Ping", NULL, NULL, NULL);
        if (r < 0) {
                fprintf(stderr, "bus-probe: Ping %s: %s\n", dest, strerror(-r));
                return 1;
        }
        printf("ready\n");
        fflush(stdout);

        next = bench_now_ns();
        while (!stop) {
                struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
                sd_bus_error error = SD_BUS_ERROR_NULL;
                uint64_t t0, t1;

                /* stdin closing ends it too (the driver died). */
                if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLIN))) {
                        char c;
                        if (read(STDIN_FILENO, &c, 1) <= 0)
                                break;
                }
                t0 = bench_now_ns();
                r = sd_bus_call_method(bus, dest, "/", "org.freedesktop.DBus.Peer", "Ping", &error, NULL, NULL);
                t1 = bench_now_ns();
                sd_bus_error_free(&error);
                if (r < 0) {
                        if (r == -EINTR && stop)
                                break;
                        errors++;
                }
                if (n == cap) {
                        cap = cap ? cap * 2 : 4096;
                        samples = realloc(samples, cap * sizeof(*samples));
                        if (!samples)
                                return 1;
                }
                samples[n][0] = t0;
                samples[n][1] = t1 - t0;
                n++;
                next += interval_ns;
                if (next <= t1)
                        next = t1; /* late: ping again at once, then on the grid from here */
                else {
                        struct timespec ts = {.tv_sec = next / 1000000000ULL, .tv_nsec = next % 1000000000ULL};
                        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !stop)
                                ;
                }
        }
        printf("{\"errors\": %" PRIu64 ", \"samples\": [", errors);
        for (uint64_t i = 0; i < n; i++)
                printf("%s[%" PRIu64 ", %" PRIu64 "]", i ? ", " : "", samples[i][0], samples[i][1]);
        printf("]}\n");
        fflush(stdout);
        sd_bus_flush_close_unref(bus);
        return 0;
}

static int cmd_call(const char *address, const char *dest, const char *path, const char *iface, const char *method,
                    long count)
{
        sd_bus *bus = NULL;
        size_t size = 0;
        uint64_t t0, t1;
        int r;

        r = bench_bus_open(address, &bus);
        if (r < 0) {
                fprintf(stderr, "bus-probe: cannot connect to %s: %s\n", address, strerror(-r));
                return 1;
        }
        t0 = bench_now_ns();
        for (long i = 0; i < count; i++) {
                sd_bus_error error = SD_BUS_ERROR_NULL;
                sd_bus_message *reply = NULL;
                r = sd_bus_call_method(bus, dest, path, iface, method, &error, &reply, NULL);
                if (r < 0) {
                        fprintf(stderr, "bus-probe: %s.%s on %s: %s\n", iface, method, path,
                                error.message ? error.message : strerror(-r));
                        return 1;
                }
                if (i == count - 1) {
                        const char *s;
                        char type;
                        if (sd_bus_message_peek_type(reply, &type, NULL) > 0 && type == 's' &&
                            sd_bus_message_read_basic(reply, 's', &s) >= 0)
                                size = strlen(s);
                }
                sd_bus_message_unref(reply);
        }
        t1 = bench_now_ns();
        printf("{\"count\": %ld, \"seconds\": %.6f, \"reply_string_bytes\": %zu}\n", count, (t1 - t0) / 1e9, size);
        sd_bus_flush_close_unref(bus);
        return 0;
}

int main(int argc, char *argv[])
{
        if (argc == 5 && strcmp(argv[1], "ping") == 0)
                return cmd_ping(argv[2], argv[3], strtoull(argv[4], NULL, 10) * 1000ULL);
        if (argc == 8 && strcmp(argv[1], "call") == 0)
                return cmd_call(argv[2], argv[3], argv[4], argv[5], argv[6], atol(argv[7]));
        fprintf(stderr,
                "usage: %s ping ADDRESS DEST INTERVAL_US\n"
                "       %s call ADDRESS DEST PATH INTERFACE METHOD COUNT\n",
                argv[0], argv[0]);
        return 2;
}
