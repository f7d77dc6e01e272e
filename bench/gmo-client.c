/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The GetManagedObjects client of bench/scale.py: a bare sd-bus program, so
 * that what is measured is the daemon and the bus, not a binding.
 *
 *   gmo-client ADDRESS [RUNS]
 *
 * Per run it prints one line of JSON: "call" = seconds from sending the call
 * to having the whole reply in memory (sd-bus has read and validated the
 * header); "walk" = seconds to read every value of the reply (what any real
 * client must do once); the object, interface, property and value counts (the
 * basic values inside the properties' variants).
 *
 * When the daemon refuses the root's reply with LimitsExceeded (more than
 * one message may carry), the model is read in parts as the error says
 * (gmo-parts.h: each child's GetManagedObjects and the child itself with
 * GetAll, pipelined) and "call" is the time from the first call to the last
 * reply, every value read ("walk" is then 0, "mode" is "parts").
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "gmo-parts.h"

int main(int argc, char *argv[])
{
        sd_bus *bus = NULL;
        int runs, r;

        if (argc < 2) {
                fprintf(stderr, "usage: %s ADDRESS [RUNS]\n", argv[0]);
                return 2;
        }
        runs = argc > 2 ? atoi(argv[2]) : 1;

        r = bench_bus_open(argv[1], &bus);
        if (r < 0) {
                fprintf(stderr, "cannot connect to %s: %s\n", argv[1], strerror(-r));
                return 1;
        }
        for (int i = 0; i < runs; i++) {
                sd_bus_error error = SD_BUS_ERROR_NULL;
                sd_bus_message *reply = NULL;
                GmoStats st = {};
                double t0, t1, t2;

                t0 = bench_now_ns() / 1e9;
                r = sd_bus_call_method(bus, "org.blkmodel1", "/org/blkmodel1",
                                       "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", &error,
                                       &reply, NULL);
                t1 = bench_now_ns() / 1e9;
                if (r < 0 && sd_bus_error_has_name(&error, SD_BUS_ERROR_LIMITS_EXCEEDED)) {
                        char *err = NULL;
                        r = gmo_read_all(bus, "org.blkmodel1", "/org/blkmodel1", 64, 600 * 1000000ULL, NULL,
                                         NULL, &st, &err);
                        t2 = bench_now_ns() / 1e9;
                        if (r < 0) {
                                fprintf(stderr, "GetManagedObjects in parts: %s\n",
                                        err ? err : strerror(-r));
                                return 1;
                        }
                        printf("{\"mode\": \"parts\", \"call\": %.6f, \"walk\": 0, \"refused_after\": %.6f, "
                               "\"objects\": %lu, \"interfaces\": %lu, \"properties\": %lu, "
                               "\"values\": %lu, \"gmo_calls\": %lu, \"gmo_refused\": %lu, "
                               "\"introspect_calls\": %lu, \"getall_calls\": %lu, \"refusal\": \"%s\"}\n",
                               t2 - t0, t1 - t0, (unsigned long) st.objects, (unsigned long) st.interfaces,
                               (unsigned long) st.properties, (unsigned long) st.values,
                               (unsigned long) st.gmo_calls, (unsigned long) st.gmo_refused,
                               (unsigned long) st.introspect_calls, (unsigned long) st.getall_calls,
                               error.message ? error.message : "");
                        fflush(stdout);
                        sd_bus_error_free(&error);
                        continue;
                }
                if (r < 0) {
                        fprintf(stderr, "GetManagedObjects: %s\n",
                                error.message ? error.message : strerror(-r));
                        return 1;
                }
                r = gmo_read_reply(reply, &st);
                t2 = bench_now_ns() / 1e9;
                if (r < 0) {
                        fprintf(stderr, "reading the reply: %s\n", strerror(-r));
                        return 1;
                }
                printf("{\"mode\": \"whole\", \"call\": %.6f, \"walk\": %.6f, \"values\": %lu, "
                       "\"objects\": %lu, \"interfaces\": %lu, \"properties\": %lu}\n",
                       t1 - t0, t2 - t1, (unsigned long) st.values, (unsigned long) st.objects,
                       (unsigned long) st.interfaces, (unsigned long) st.properties);
                fflush(stdout);
                sd_bus_message_unref(reply);
                sd_bus_error_free(&error);
        }
        sd_bus_flush_close_unref(bus);
        return 0;
}
