/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The floor under the bus's part of a complete GetManagedObjects (bench/real-kernel): a bare
 * sd-bus service that answers it with a copy of blkmodeld's own reply, taken once, so that what a
 * reading costs against it is the marshalling of those values, dbus-daemon passing the message on
 * and the client reading every value — what no service sending this reply can take away.
 *
 *   reply-floor ADDRESS NAME ROOT RUNS
 *
 * Calls GetManagedObjects on ROOT of NAME (a running blkmodeld) and keeps the reply; prints one
 * line of JSON ({"captured": OBJECTS}) and waits for a line on stdin, while the caller stops that
 * service.  Then it takes NAME itself, answers GetManagedObjects on ROOT with a copy of what it
 * kept, and reads the whole tree RUNS times as bench/coldstart does (gmo_read_all(), every value,
 * from a second process with its own connection).  Last it prints one line of JSON: per run,
 * "call_s" (call sent → every value read) and "marshal_s" (the service copying the kept reply
 * into its answer: sd_bus_message_copy() reads each value and appends it, as a service builds
 * its reply from values it has).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gmo-parts.h"

#define MAX_RUNS 64

static sd_bus_message *kept;
static double marshal_s[MAX_RUNS];
static unsigned n_marshal;

static int on_call(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        uint64_t t0;
        int r;

        if (!sd_bus_message_is_method_call(m, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"))
                return 0;
        t0 = bench_now_ns();
        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = sd_bus_message_rewind(kept, true);
        if (r >= 0)
                r = sd_bus_message_copy(reply, kept, true);
        if (r >= 0 && n_marshal < MAX_RUNS)
                marshal_s[n_marshal++] = (bench_now_ns() - t0) / 1e9;
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        sd_bus_message_unref(reply);
        return r < 0 ? r : 1;
}

/* The client: its own connection, RUNS readings; each run's seconds written to fd. */
static int client(const char *address, const char *name, const char *root, int runs, int fd)
{
        sd_bus *bus = NULL;
        int r = bench_bus_open(address, &bus);

        if (r < 0) {
                fprintf(stderr, "reply-floor: client cannot connect: %s\n", strerror(-r));
                return 1;
        }
        for (int i = 0; i < runs; i++) {
                GmoStats st;
                char *err = NULL;
                uint64_t t0 = bench_now_ns();
                double t;

                r = gmo_read_all(bus, name, root, 64, 600 * 1000000ULL, NULL, NULL, &st, &err);
                t = (bench_now_ns() - t0) / 1e9;
                if (r < 0 || st.gmo_refused > 0) {
                        fprintf(stderr, "reply-floor: reading %s: %s\n", root,
                                r < 0 ? (err ?: strerror(-r)) : "refused");
                        return 1;
                }
                if (write(fd, &t, sizeof(t)) != sizeof(t))
                        return 1;
        }
        return 0;
}

static unsigned long count_objects(sd_bus_message *m)
{
        unsigned long n = 0;

        if (sd_bus_message_rewind(m, true) < 0 ||
            sd_bus_message_enter_container(m, 'a', "{oa{sa{sv}}}") <= 0)
                return 0;
        while (sd_bus_message_skip(m, "{oa{sa{sv}}}") > 0)
                n++;
        return n;
}

int main(int argc, char *argv[])
{
        const char *address, *name, *root;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus *bus = NULL;
        int runs, pipefd[2], status, r;
        double call_s[MAX_RUNS];
        unsigned n_calls = 0;
        char line[64];
        pid_t pid;

        if (argc != 5 || (runs = atoi(argv[4])) < 1 || runs > MAX_RUNS) {
                fprintf(stderr, "usage: %s ADDRESS NAME ROOT RUNS (1…%d)\n", argv[0], MAX_RUNS);
                return 2;
        }
        address = argv[1], name = argv[2], root = argv[3];
        r = bench_bus_open(address, &bus);
        if (r >= 0)
                r = sd_bus_call_method(bus, name, root, "org.freedesktop.DBus.ObjectManager",
                                       "GetManagedObjects", &error, &kept, NULL);
        if (r < 0) {
                fprintf(stderr, "reply-floor: GetManagedObjects on %s of %s: %s\n", root, name,
                        error.message ?: strerror(-r));
                return 1;
        }
        printf("{\"captured\": %lu}\n", count_objects(kept));
        fflush(stdout);
        if (!fgets(line, sizeof(line), stdin))
                return 1;

        r = sd_bus_add_object(bus, NULL, root, on_call, NULL);
        if (r >= 0)
                r = sd_bus_request_name(bus, name, 0);
        if (r < 0 || pipe(pipefd) < 0) {
                fprintf(stderr, "reply-floor: serving %s as %s: %s\n", root, name,
                        strerror(r < 0 ? -r : errno));
                return 1;
        }
        fflush(stdout);
        pid = fork();
        if (pid < 0)
                return 1;
        if (pid == 0) {
                close(pipefd[0]);
                _exit(client(address, name, root, runs, pipefd[1]));
        }
        close(pipefd[1]);
        /* Serve until the client has written its last time and closed the pipe. */
        for (;;) {
                r = sd_bus_process(bus, NULL);
                if (r < 0) {
                        fprintf(stderr, "reply-floor: %s\n", strerror(-r));
                        return 1;
                }
                if (r > 0)
                        continue;
                struct pollfd p[2] = {
                                {.fd = sd_bus_get_fd(bus), .events = sd_bus_get_events(bus)},
                                {.fd = pipefd[0], .events = POLLIN},
                };
                if (poll(p, 2, -1) < 0 && errno != EINTR)
                        return 1;
                if (p[1].revents & (POLLIN | POLLHUP)) {
                        ssize_t k = read(pipefd[0], &call_s[n_calls], sizeof(double));
                        if (k <= 0)
                                break;
                        if (k == sizeof(double) && ++n_calls == MAX_RUNS)
                                break;
                }
        }
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
            n_calls != (unsigned) runs || n_marshal != (unsigned) runs) {
                fprintf(stderr, "reply-floor: the client failed (%u of %d readings, %u replies)\n", n_calls,
                        runs, n_marshal);
                return 1;
        }
        printf("{\"runs\": [");
        for (unsigned i = 0; i < n_calls; i++)
                printf("%s{\"call_s\": %.6f, \"marshal_s\": %.6f}", i ? ", " : "", call_s[i], marshal_s[i]);
        printf("]}\n");
        sd_bus_flush_close_unref(bus);
        return 0;
}
