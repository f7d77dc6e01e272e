/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The slow subscriber of bench/slow-subscriber.py: subscribes and then
 * never reads its socket again, as a hung or stopped client does.
 *
 *   stuck-subscriber ADDRESS [MATCH]
 *
 * MATCH defaults to every signal of org.blkmodel1.  Prints its unique name
 * once the match is in place, then sleeps until killed: sd-bus reads only
 * when asked to, so everything the bus routes here piles up in the socket
 * and then in the bus daemon's queue for this connection.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "bus-open.h"

int main(int argc, char **argv)
{
        sd_bus *bus = NULL;
        const char *match = "type='signal',sender='org.blkmodel1'", *name = NULL;
        int r;

        if (argc < 2 || argc > 3) {
                fprintf(stderr, "usage: %s ADDRESS [MATCH]\n", argv[0]);
                return 2;
        }
        if (argc == 3)
                match = argv[2];
        r = bench_bus_open(argv[1], &bus);
        /* Synchronous: once it returns, the bus routes the signals here. */
        if (r >= 0)
                r = sd_bus_add_match(bus, NULL, match, NULL, NULL);
        if (r >= 0)
                r = sd_bus_get_unique_name(bus, &name);
        if (r < 0) {
                fprintf(stderr, "stuck-subscriber: %s\n", strerror(-r));
                return 1;
        }
        printf("%s\n", name);
        fflush(stdout);
        for (;;)
                pause();
}
