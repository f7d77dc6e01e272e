/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel stand-in of bench/uevent-throughput.py: writes COUNT uevents in
 * the kernel's wire format (ACTION@DEVPATH\0KEY=VALUE\0...) to blkmodeld's
 * --uevent-socket.
 *
 *   uevent-send SOCKET COUNT RATE ACTION DEVPATH FIRST_SEQNUM
 *
 * RATE 0: as fast as the socket takes them.  The socket blocks while the
 * daemon's receive queue is full, which is exactly the flow control wanted:
 * nothing is lost, the sender just waits.  Otherwise RATE per second on an
 * absolute schedule, each stamped with BENCH_T just before it is sent.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "uevent-env.h"

int main(int argc, char **argv)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        uint64_t count, rate, seqnum, retries = 0, start;
        const char *action, *devpath;
        char buf[4096];
        int fd;

        if (argc != 7) {
                fprintf(stderr, "usage: %s SOCKET COUNT RATE ACTION DEVPATH FIRST_SEQNUM\n", argv[0]);
                return 2;
        }
        if (strlen(argv[1]) >= sizeof(sa.sun_path)) {
                fprintf(stderr, "uevent-send: socket path too long\n");
                return 2;
        }
        strcpy(sa.sun_path, argv[1]);
        count = strtoull(argv[2], NULL, 10);
        rate = strtoull(argv[3], NULL, 10);
        action = argv[4];
        devpath = argv[5];
        seqnum = strtoull(argv[6], NULL, 10);

        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                fprintf(stderr, "uevent-send: %s: %s\n", argv[1], strerror(errno));
                return 1;
        }

        start = bench_now_ns();
        for (uint64_t i = 0; i < count; i++) {
                BenchEnv e;
                size_t len;
                int n;

                if (rate > 0)
                        bench_pace(start, i, rate);
                bench_env_fill(&e, action, devpath, seqnum + i, bench_now_ns());
                n = snprintf(buf, sizeof(buf), "%s@%s", action, devpath);
                len = (size_t) n + 1; /* keep the NUL: it ends the header */
                for (int k = 0; k < BENCH_ENV_N && len < sizeof(buf); k++) {
                        n = snprintf(buf + len, sizeof(buf) - len, "%s=%s", e.keys[k], e.values[k]);
                        len += (size_t) n + 1;
                }
                if (len > sizeof(buf)) {
                        fprintf(stderr, "uevent-send: ACTION or DEVPATH too long\n");
                        return 2;
                }

                /* Blocking socket: EAGAIN/ENOBUFS are not expected, but if they come, wait and retry. */
                while (send(fd, buf, len, 0) < 0) {
                        if (errno != EINTR && errno != EAGAIN && errno != ENOBUFS) {
                                fprintf(stderr, "uevent-send: send: %s\n", strerror(errno));
                                return 1;
                        }
                        retries++;
                        if (errno != EINTR)
                                usleep(50);
                }
        }

        double secs = (double) (bench_now_ns() - start) / 1e9;
        printf("{\"sent\": %" PRIu64 ", \"retries\": %" PRIu64 ", \"seconds\": %.6f}\n", count, retries, secs);
        close(fd);
        return 0;
}
