/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Cold start of a D-Bus service to its first complete GetManagedObjects (bench/real-kernel).
 *
 *   coldstart [--expect FILE] [--timeout SEC] [--in-flight N] ADDRESS BUSNAME ROOT -- CMD [ARG...]
 *
 * Subscribes to NameOwnerChanged for BUSNAME, then spawns CMD (t0 is taken just before fork()),
 * waits until BUSNAME has an owner, then reads the whole tree below ROOT with GetManagedObjects
 * (in parts when the service refuses one reply with LimitsExceeded, see gmo-parts.h), again and
 * again until every object path listed in FILE (one per line) was in one reading.  Then it prints
 * one line of JSON with times since t0 (name, first reading, complete reading) and the service's
 * CPU time and memory at that moment (the owner of BUSNAME: /proc/PID/stat utime+stime of all
 * threads, the sum of /proc/PID/task/TID/schedstat run times, VmRSS and VmHWM).  The service keeps
 * running until stdin says "stop" or closes; then it gets SIGTERM (SIGKILL after 30 s), and a
 * second line of JSON gives its exit status.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gmo-parts.h"

typedef struct Expect {
        char **paths;
        unsigned char *seen;
        size_t n, n_seen;
} Expect;

static void on_object(const char *path, void *userdata)
{
        Expect *e = userdata;
        char **hit;

        if (e->n == 0)
                return;
        hit = bsearch(&path, e->paths, e->n, sizeof(char *), bench_cmp_str);
        if (hit && !e->seen[hit - e->paths]) {
                e->seen[hit - e->paths] = 1;
                e->n_seen++;
        }
}

static int load_expect(const char *file, Expect *e)
{
        int r = bench_read_lines(file, " ", &e->paths, &e->n);

        if (r < 0)
                return r;
        e->seen = calloc(e->n + 1, 1);
        return e->seen ? 0 : -ENOMEM;
}

typedef struct Owner {
        const char *name;
        int owned;
} Owner;

static int on_name_owner(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        Owner *o = userdata;
        const char *name, *old, *new;

        if (sd_bus_message_read(m, "sss", &name, &old, &new) >= 0 && strcmp(name, o->name) == 0 && new[0])
                o->owned = 1;
        return 0;
}

typedef struct ProcStats {
        double cpu_ticks_s; /* utime+stime, seconds (clock-tick resolution) */
        double cpu_sched_s; /* sum of the threads' schedstat run time, seconds */
        long rss_kib, hwm_kib;
        int threads;
} ProcStats;

static int proc_stats(pid_t pid, ProcStats *s)
{
        char path[64], buf[4096];
        FILE *f;
        DIR *d;
        struct dirent *de;

        *s = (ProcStats){};
        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        if (fgets(buf, sizeof buf, f)) {
                char *p = strrchr(buf, ')');
                unsigned long utime = 0, stime = 0;
                /* After ") ": state(3) ... utime is field 14, stime 15 (1-based). */
                if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) == 2)
                        s->cpu_ticks_s = (double) (utime + stime) / (double) sysconf(_SC_CLK_TCK);
        }
        fclose(f);
        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(buf, sizeof buf, f)) {
                if (strncmp(buf, "VmRSS:", 6) == 0)
                        s->rss_kib = strtol(buf + 6, NULL, 10);
                else if (strncmp(buf, "VmHWM:", 6) == 0)
                        s->hwm_kib = strtol(buf + 6, NULL, 10);
        }
        fclose(f);
        snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                char tpath[320];
                unsigned long long run = 0;
                if (de->d_name[0] == '.')
                        continue;
                snprintf(tpath, sizeof tpath, "/proc/%d/task/%s/schedstat", (int) pid, de->d_name);
                f = fopen(tpath, "re");
                if (!f)
                        continue;
                if (fscanf(f, "%llu", &run) == 1)
                        s->cpu_sched_s += (double) run / 1e9;
                fclose(f);
                s->threads++;
        }
        closedir(d);
        return 0;
}

static void usage(const char *argv0)
{
        fprintf(stderr,
                "usage: %s [--expect FILE] [--timeout SEC] [--in-flight N] ADDRESS BUSNAME ROOT -- CMD [ARG...]\n",
                argv0);
        exit(2);
}

int main(int argc, char *argv[])
{
        const char *expect_file = NULL, *address, *busname, *root;
        double timeout = 600;
        unsigned in_flight = 64;
        Expect expect = {};
        sd_bus *bus = NULL;
        Owner owner = {};
        char match[512];
        int i, r;

        for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0 && argv[i][2]; i++) {
                if (i + 1 >= argc)
                        usage(argv[0]);
                if (strcmp(argv[i], "--expect") == 0)
                        expect_file = argv[++i];
                else if (strcmp(argv[i], "--timeout") == 0)
                        timeout = atof(argv[++i]);
                else if (strcmp(argv[i], "--in-flight") == 0)
                        in_flight = (unsigned) atoi(argv[++i]);
                else
                        usage(argv[0]);
        }
        if (argc - i < 5 || strcmp(argv[i + 3], "--") != 0)
                usage(argv[0]);
        address = argv[i];
        busname = argv[i + 1];
        root = argv[i + 2];
        char **cmd = argv + i + 4;

        if (expect_file && (r = load_expect(expect_file, &expect)) < 0) {
                fprintf(stderr, "coldstart: %s: %s\n", expect_file, strerror(-r));
                return 1;
        }
        r = bench_bus_open(address, &bus);
        if (r < 0) {
                fprintf(stderr, "coldstart: cannot connect to %s: %s\n", address, strerror(-r));
                return 1;
        }
        owner.name = busname;
        snprintf(match, sizeof match,
                 "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
                 "member='NameOwnerChanged',arg0='%s'",
                 busname);
        r = sd_bus_add_match(bus, NULL, match, on_name_owner, &owner);
        if (r < 0) {
                fprintf(stderr, "coldstart: AddMatch: %s\n", strerror(-r));
                return 1;
        }
        {
                sd_bus_message *reply = NULL;
                r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "NameHasOwner", NULL, &reply, "s", busname);
                int has = 0;
                if (r >= 0)
                        (void) sd_bus_message_read(reply, "b", &has);
                sd_bus_message_unref(reply);
                if (has) {
                        fprintf(stderr, "coldstart: %s already has an owner\n", busname);
                        return 1;
                }
        }

        uint64_t t0 = bench_now_ns(), deadline = t0 + (uint64_t) (timeout * 1e9), t_name = 0;
        pid_t child = fork();
        if (child < 0) {
                perror("fork");
                return 1;
        }
        if (child == 0) {
                execvp(cmd[0], cmd);
                fprintf(stderr, "coldstart: exec %s: %s\n", cmd[0], strerror(errno));
                _exit(127);
        }

        /* The name. */
        while (!owner.owned) {
                int status;
                r = sd_bus_process(bus, NULL);
                if (r < 0) {
                        fprintf(stderr, "coldstart: bus: %s\n", strerror(-r));
                        goto kill_child;
                }
                if (owner.owned)
                        break;
                if (r > 0)
                        continue;
                if (waitpid(child, &status, WNOHANG) == child) {
                        fprintf(stderr, "coldstart: %s exited (status 0x%x) before taking %s\n", cmd[0], status,
                                busname);
                        return 1;
                }
                if (bench_now_ns() > deadline) {
                        fprintf(stderr, "coldstart: %s did not take %s in %.0f s\n", cmd[0], busname, timeout);
                        goto kill_child;
                }
                (void) sd_bus_wait(bus, 50000);
        }
        t_name = bench_now_ns();

        /* The owner's pid: CMD may be a wrapper (perf record). */
        uint32_t pid = (uint32_t) child;
        {
                sd_bus_message *reply = NULL;
                r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "GetConnectionUnixProcessID", NULL, &reply, "s",
                                       busname);
                if (r >= 0)
                        (void) sd_bus_message_read(reply, "u", &pid);
                sd_bus_message_unref(reply);
        }

        /* Read until complete. */
        uint64_t t_first = 0, t_complete = 0;
        unsigned readings = 0;
        GmoStats st = {}, first = {};
        for (;;) {
                char *err = NULL;
                memset(expect.seen, 0, expect.n);
                expect.n_seen = 0;
                r = gmo_read_all(bus, busname, root, in_flight, 600 * 1000000ULL, on_object, &expect, &st, &err);
                readings++;
                if (r < 0) {
                        fprintf(stderr, "coldstart: %s\n", err ? err : strerror(-r));
                        goto kill_child;
                }
                if (!t_first) {
                        t_first = bench_now_ns();
                        first = st;
                }
                if (expect.n_seen == expect.n) {
                        t_complete = bench_now_ns();
                        break;
                }
                if (bench_now_ns() > deadline) {
                        fprintf(stderr, "coldstart: still %zu of %zu expected objects missing after %.0f s\n",
                                expect.n - expect.n_seen, expect.n, timeout);
                        goto kill_child;
                }
                usleep(20000);
        }
        ProcStats ps;
        r = proc_stats((pid_t) pid, &ps);
        if (r < 0)
                fprintf(stderr, "coldstart: reading /proc/%u: %s\n", pid, strerror(-r));

        printf("{\"pid\": %u, \"name_s\": %.6f, \"first_gmo_s\": %.6f, \"complete_s\": %.6f, \"readings\": %u, "
               "\"first_objects\": %" PRIu64 ", \"objects\": %" PRIu64 ", \"interfaces\": %" PRIu64
               ", \"properties\": %" PRIu64 ", \"gmo_calls\": %" PRIu64 ", \"gmo_refused\": %" PRIu64
               ", \"introspect_calls\": %" PRIu64 ", \"getall_calls\": %" PRIu64
               ", \"expected\": %zu, \"cpu_ticks_s\": %.3f, \"cpu_sched_s\": %.6f, \"rss_kib\": %ld, "
               "\"hwm_kib\": %ld, \"threads\": %d}\n",
               pid, (t_name - t0) / 1e9, (t_first - t0) / 1e9, (t_complete - t0) / 1e9, readings, first.objects,
               st.objects, st.interfaces, st.properties, st.gmo_calls, st.gmo_refused, st.introspect_calls,
               st.getall_calls, expect.n, ps.cpu_ticks_s, ps.cpu_sched_s, ps.rss_kib, ps.hwm_kib, ps.threads);
        fflush(stdout);

        /* Keep it running until told. */
        {
                char line[256];
                while (fgets(line, sizeof line, stdin))
                        if (strncmp(line, "stop", 4) == 0)
                                break;
        }
        (void) kill((pid_t) pid, SIGTERM);
        if ((pid_t) pid != child)
                (void) kill(child, SIGTERM);
        for (int k = 0; k < 300; k++) {
                int status;
                if (waitpid(child, &status, WNOHANG) == child) {
                        printf("{\"exit\": %d, \"signal\": %d}\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                               WIFSIGNALED(status) ? WTERMSIG(status) : 0);
                        sd_bus_flush_close_unref(bus);
                        return 0;
                }
                usleep(100000);
        }
        (void) kill(child, SIGKILL);
        (void) waitpid(child, NULL, 0);
        printf("{\"exit\": -1, \"signal\": 9, \"killed\": true}\n");
        return 0;

kill_child:
        (void) kill(child, SIGTERM);
        usleep(500000);
        (void) kill(child, SIGKILL);
        (void) waitpid(child, NULL, 0);
        return 1;
}
