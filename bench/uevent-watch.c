/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's uevents and blkmodeld's Uevent signals side by side (bench/real-kernel).
 *
 *   uevent-watch ADDRESS DISKS_FILE [--min-kernel N] [--quiet-ms MS]  [--idle-s S]
 *                [--pid PID] [--settle-ms MS]
 *
 * Listens to the kernel's uevent netlink socket (group 1, as the daemon does; 128 MiB buffer) and
 * subscribes to org.blkmodel1.Manager.Uevent.  An event is "ours" when its DEVPATH is one of the
 * disk devpaths in DISKS_FILE (one per line) or below one.  Signals are matched to kernel events
 * by the kernel's SEQNUM in the signal's env.  Every signal's own seqnum (the daemon's counter)
 * must be one more than the previous one's.
 *
 * Prints "ready" once both are listening.  The driver then makes the kernel emit events and writes
 * "done" to stdin.  It ends when, after "done", at least N of our kernel events were seen, every
 * one of them has its signal, and no new one came for MS ms (default 1000) -- or when nothing new
 * arrived for S s (default 30): then what is missing is reported.  Output: one line of JSON.
 * The model's own signals for our objects (PropertiesChanged below /org/blkmodel1/block,
 * InterfacesAdded/Removed) are counted too, with the time of the last one: a change's Uevent goes
 * out at once, the re-read and its PropertiesChanged follow.
 * Times are CLOCK_MONOTONIC ns (Python's time.monotonic_ns()).  With --pid, the CPU time of that
 * process (the daemon) is read whenever a signal makes every kernel event so far matched (and at
 * least N were seen): "cpu_at_last_s"; and again once nothing new came for --settle-ms (default
 * 200): "cpu_settled_s" at "t_cpu_settled", the daemon's CPU once its deferred work is done too.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gmo-parts.h"

/* ---- kernel seqnum -> times ---- */

typedef struct Slot {
        uint64_t seqnum; /* 0: empty */
        uint64_t t_kernel, t_signal;
        unsigned n_signals;
} Slot;

typedef struct Table {
        Slot *slots;
        size_t cap, n;
} Table;

static Slot *table_get(Table *t, uint64_t seqnum)
{
        if ((t->n + 1) * 2 > t->cap) {
                Table nt = {.cap = t->cap ? t->cap * 2 : 8192};
                nt.slots = calloc(nt.cap, sizeof(Slot));
                if (!nt.slots)
                        abort();
                for (size_t i = 0; i < t->cap; i++)
                        if (t->slots[i].seqnum) {
                                size_t j = (t->slots[i].seqnum * 0x9E3779B97F4A7C15ULL) & (nt.cap - 1);
                                while (nt.slots[j].seqnum)
                                        j = (j + 1) & (nt.cap - 1);
                                nt.slots[j] = t->slots[i];
                                nt.n++;
                        }
                free(t->slots);
                *t = nt;
        }
        size_t j = (seqnum * 0x9E3779B97F4A7C15ULL) & (t->cap - 1);
        while (t->slots[j].seqnum && t->slots[j].seqnum != seqnum)
                j = (j + 1) & (t->cap - 1);
        if (!t->slots[j].seqnum) {
                t->slots[j].seqnum = seqnum;
                t->n++;
        }
        return &t->slots[j];
}

/* ---- our devpaths ---- */

static char **disks;
static size_t n_disks;

static int is_ours(const char *devpath)
{
        /* /devices/virtual/block/loopN[/...]: the disk part is the first four components. */
        char buf[512];
        const char *p = devpath;
        for (int i = 0; i < 4 && p; i++)
                p = strchr(p + 1, '/');
        size_t len = p ? (size_t) (p - devpath) : strlen(devpath);
        if (len >= sizeof buf)
                return 0;
        memcpy(buf, devpath, len);
        buf[len] = 0;
        const char *key = buf;
        return bsearch(&key, disks, n_disks, sizeof(char *), bench_cmp_str) != NULL;
}

/* The model's signals: PropertiesChanged below /org/blkmodel1/block, InterfacesAdded/Removed. */
static int is_our_object(const char *path)
{
        static const char prefix[] = "/org/blkmodel1/block/";
        char buf[512];

        if (strncmp(path, prefix, sizeof prefix - 1) != 0)
                return 0;
        const char *name = path + sizeof prefix - 1, *end = strchr(name, '/');
        size_t len = end ? (size_t) (end - name) : strlen(name);
        /* Our disks are loopN: the encoded path element is the name itself. */
        if (len + 24 >= sizeof buf)
                return 0;
        snprintf(buf, sizeof buf, "/devices/virtual/block/%.*s", (int) len, name);
        const char *key = buf;
        return bsearch(&key, disks, n_disks, sizeof(char *), bench_cmp_str) != NULL;
}

/* ---- the daemon's CPU time ---- */

static int daemon_pid;
static uint64_t min_kernel_events;

/* Sum of the run times of all threads of pid (schedstat), seconds; -1 when unknown. */
static double cpu_of(int pid)
{
        char path[64];
        double total = 0;
        DIR *d;
        struct dirent *de;

        snprintf(path, sizeof path, "/proc/%d/task", pid);
        d = opendir(path);
        if (!d)
                return -1;
        while ((de = readdir(d))) {
                char tpath[400];
                unsigned long long run;
                FILE *f;
                if (de->d_name[0] == '.')
                        continue;
                snprintf(tpath, sizeof tpath, "%s/%s/schedstat", path, de->d_name);
                f = fopen(tpath, "re");
                if (!f)
                        continue;
                if (fscanf(f, "%llu", &run) == 1)
                        total += (double) run / 1e9;
                fclose(f);
        }
        closedir(d);
        return total;
}

/* ---- state ---- */

typedef struct State {
        Table t;
        uint64_t kernel_ours, signals_total, signals_ours, matched, dup_signals, unmatched_signals,
                        synthesized_ours;
        uint64_t gaps, seq_first, seq_last, seq_prev;
        uint64_t t_last_kernel, t_first_kernel, t_last_signal, t_first_signal, t_last_progress;
        uint64_t kernel_enobufs;
        double cpu_at_last; /* the daemon's CPU when the last signal made everything matched */
        double cpu_settled; /* the daemon's CPU settle_ns after the last progress */
        uint64_t t_cpu_settled, t_progress_at_cpu;
        uint64_t model_signals_ours, t_last_model, props_changed_ours, ifaces_added_ours, ifaces_removed_ours;
        uint64_t actions_kernel[8], actions_signal[8];
        int error;
} State;

static const char *const ACTIONS[] = {"add", "remove", "change", "move", "online", "offline", "bind", "unbind"};

static int action_index(const char *a)
{
        for (int i = 0; i < 8; i++)
                if (strcmp(a, ACTIONS[i]) == 0)
                        return i;
        return -1;
}

static int on_uevent(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        State *s = userdata;
        uint64_t t = bench_now_ns(), seqnum, kseq = 0;
        const char *action, *devpath, *object, *key, *value;
        int r, synthesized = 0;

        r = sd_bus_message_read(m, "tsso", &seqnum, &action, &devpath, &object);
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'a', "{ss}");
        while (r >= 0 && (r = sd_bus_message_read(m, "{ss}", &key, &value)) > 0) {
                if (strcmp(key, "SEQNUM") == 0)
                        kseq = strtoull(value, NULL, 10);
                else if (strcmp(key, "BLKMODEL_SYNTHESIZED") == 0)
                        synthesized = 1;
        }
        if (r < 0) {
                s->error = r;
                return 0;
        }
        if (s->signals_total == 0)
                s->seq_first = seqnum;
        else if (seqnum != s->seq_prev + 1)
                s->gaps += seqnum > s->seq_prev ? seqnum - s->seq_prev - 1 : 1;
        s->seq_prev = s->seq_last = seqnum;
        s->signals_total++;
        if (!is_ours(devpath))
                return 0;
        s->signals_ours++;
        int ai = action_index(action);
        if (ai >= 0)
                s->actions_signal[ai]++;
        if (!s->t_first_signal)
                s->t_first_signal = t;
        s->t_last_signal = t;
        s->t_last_progress = t;
        if (!kseq || synthesized) {
                s->synthesized_ours++;
                return 0;
        }
        Slot *sl = table_get(&s->t, kseq);
        sl->n_signals++;
        if (sl->n_signals > 1)
                s->dup_signals++;
        else {
                sl->t_signal = t;
                if (sl->t_kernel)
                        s->matched++;
        }
        if (daemon_pid > 0 && s->matched == s->kernel_ours && s->kernel_ours >= min_kernel_events)
                s->cpu_at_last = cpu_of(daemon_pid);
        return 0;
}

static int on_model(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        State *s = userdata;
        uint64_t t = bench_now_ns();
        const char *member = sd_bus_message_get_member(m), *path = sd_bus_message_get_path(m);

        if (!member || !path)
                return 0;
        if (strcmp(member, "InterfacesAdded") == 0 || strcmp(member, "InterfacesRemoved") == 0) {
                if (sd_bus_message_read_basic(m, 'o', &path) < 0)
                        return 0;
        }
        if (!is_our_object(path))
                return 0;
        s->model_signals_ours++;
        if (member[0] == 'P')
                s->props_changed_ours++;
        else if (strcmp(member, "InterfacesAdded") == 0)
                s->ifaces_added_ours++;
        else
                s->ifaces_removed_ours++;
        s->t_last_model = t;
        s->t_last_progress = t;
        return 0;
}

static void on_kernel(State *s, const char *buf, size_t len)
{
        uint64_t t = bench_now_ns(), seqnum = 0;
        const char *devpath = NULL, *action = NULL;

        if (len < 32 || !memchr(buf, '@', len) || strncmp(buf, "libudev", 7) == 0)
                return;
        for (size_t off = strlen(buf) + 1; off < len; off += strlen(buf + off) + 1) {
                const char *kv = buf + off;
                if (strncmp(kv, "SEQNUM=", 7) == 0)
                        seqnum = strtoull(kv + 7, NULL, 10);
                else if (strncmp(kv, "DEVPATH=", 8) == 0)
                        devpath = kv + 8;
                else if (strncmp(kv, "ACTION=", 7) == 0)
                        action = kv + 7;
        }
        if (!seqnum || !devpath || !is_ours(devpath))
                return;
        s->kernel_ours++;
        if (action) {
                int ai = action_index(action);
                if (ai >= 0)
                        s->actions_kernel[ai]++;
        }
        if (!s->t_first_kernel)
                s->t_first_kernel = t;
        s->t_last_kernel = t;
        s->t_last_progress = t;
        Slot *sl = table_get(&s->t, seqnum);
        sl->t_kernel = t;
        if (sl->n_signals > 0)
                s->matched++;
}

static int open_netlink(void)
{
        struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = 1};
        int fd, bytes = 128 << 20, one = 1;

        fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
        if (fd < 0)
                return -errno;
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) < 0)
                (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
        (void) setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                int e = errno;
                close(fd);
                return -e;
        }
        return fd;
}

static int load_disks(const char *file)
{
        return bench_read_lines(file, "/", &disks, &n_disks);
}

int main(int argc, char *argv[])
{
        const char *address, *disks_file;
        uint64_t min_kernel = 0, quiet_ns = 1000000000ULL, settle_ns = 200000000ULL, idle_ns = 30000000000ULL;
        State s = {};
        sd_bus *bus = NULL;
        int nl, r, done = 0;
        uint64_t t_done = 0;

        if (argc < 3) {
                fprintf(stderr, "usage: %s ADDRESS DISKS_FILE [--min-kernel N] [--quiet-ms MS] [--idle-s S]\n",
                        argv[0]);
                return 2;
        }
        address = argv[1];
        disks_file = argv[2];
        for (int i = 3; i + 1 < argc; i += 2) {
                if (strcmp(argv[i], "--min-kernel") == 0)
                        min_kernel = strtoull(argv[i + 1], NULL, 10);
                else if (strcmp(argv[i], "--quiet-ms") == 0)
                        quiet_ns = strtoull(argv[i + 1], NULL, 10) * 1000000ULL;
                else if (strcmp(argv[i], "--settle-ms") == 0)
                        settle_ns = strtoull(argv[i + 1], NULL, 10) * 1000000ULL;
                else if (strcmp(argv[i], "--pid") == 0)
                        daemon_pid = atoi(argv[i + 1]);
                else if (strcmp(argv[i], "--idle-s") == 0)
                        idle_ns = strtoull(argv[i + 1], NULL, 10) * 1000000000ULL;
                else {
                        fprintf(stderr, "uevent-watch: unknown option %s\n", argv[i]);
                        return 2;
                }
        }
        min_kernel_events = min_kernel;
        r = load_disks(disks_file);
        if (r < 0) {
                fprintf(stderr, "uevent-watch: %s: %s\n", disks_file, strerror(-r));
                return 1;
        }
        nl = open_netlink();
        if (nl < 0) {
                fprintf(stderr, "uevent-watch: netlink: %s\n", strerror(-nl));
                return 1;
        }
        r = bench_bus_open(address, &bus);
        if (r >= 0)
                r = sd_bus_add_match(bus, NULL,
                                     "type='signal',path='/org/blkmodel1/Manager',"
                                     "interface='org.blkmodel1.Manager',member='Uevent'",
                                     on_uevent, &s);
        if (r >= 0)
                r = sd_bus_add_match(bus, NULL,
                                     "type='signal',interface='org.freedesktop.DBus.Properties',"
                                     "member='PropertiesChanged',path_namespace='/org/blkmodel1/block'",
                                     on_model, &s);
        if (r >= 0)
                r = sd_bus_add_match(bus, NULL,
                                     "type='signal',interface='org.freedesktop.DBus.ObjectManager',"
                                     "path='/org/blkmodel1'",
                                     on_model, &s);
        if (r < 0) {
                fprintf(stderr, "uevent-watch: cannot connect or subscribe: %s\n", strerror(-r));
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        s.t_last_progress = bench_now_ns();

        static char buf[16384];
        for (;;) {
                /* Drain both sources. */
                for (;;) {
                        ssize_t n = recv(nl, buf, sizeof buf - 1, MSG_DONTWAIT);
                        if (n < 0) {
                                if (errno == ENOBUFS) {
                                        s.kernel_enobufs++;
                                        continue;
                                }
                                break;
                        }
                        buf[n] = 0;
                        on_kernel(&s, buf, (size_t) n);
                }
                while ((r = sd_bus_process(bus, NULL)) > 0)
                        ;
                if (r < 0) {
                        fprintf(stderr, "uevent-watch: bus: %s\n", strerror(-r));
                        s.error = r;
                        break;
                }
                uint64_t now = bench_now_ns();
                if (daemon_pid > 0 && s.kernel_ours > 0 && s.t_progress_at_cpu != s.t_last_progress &&
                    now - s.t_last_progress >= settle_ns) {
                        s.cpu_settled = cpu_of(daemon_pid);
                        s.t_cpu_settled = now;
                        s.t_progress_at_cpu = s.t_last_progress;
                }
                if (done && s.kernel_ours >= min_kernel && s.matched == s.kernel_ours &&
                    now - s.t_last_progress >= quiet_ns)
                        break;
                if (done && now - (s.t_last_progress > t_done ? s.t_last_progress : t_done) >= idle_ns)
                        break;

                struct pollfd pfd[3] = {
                        {.fd = sd_bus_get_fd(bus), .events = (short) sd_bus_get_events(bus)},
                        {.fd = nl, .events = POLLIN},
                        {.fd = done ? -1 : STDIN_FILENO, .events = POLLIN},
                };
                uint64_t until;
                int ms = 100;
                if (sd_bus_get_timeout(bus, &until) >= 0 && until != UINT64_MAX) {
                        uint64_t nowus = bench_now_ns() / 1000;
                        int w = until > nowus ? (int) ((until - nowus) / 1000) : 0;
                        if (w < ms)
                                ms = w;
                }
                if (poll(pfd, 3, ms) < 0 && errno != EINTR)
                        break;
                if (pfd[2].revents) {
                        char line[256];
                        ssize_t n = read(STDIN_FILENO, line, sizeof line - 1);
                        if (n <= 0 || (line[n] = 0, strstr(line, "done"))) {
                                done = 1;
                                t_done = bench_now_ns();
                        }
                }
        }

        uint64_t missing = 0, missing_first = 0;
        for (size_t i = 0; i < s.t.cap; i++) {
                Slot *sl = &s.t.slots[i];
                if (sl->seqnum && sl->t_kernel && !sl->n_signals) {
                        missing++;
                        if (!missing_first || sl->seqnum < missing_first)
                                missing_first = sl->seqnum;
                }
                if (sl->seqnum && !sl->t_kernel && sl->n_signals)
                        s.unmatched_signals++;
        }
        printf("{\"kernel_ours\": %" PRIu64 ", \"signals_total\": %" PRIu64 ", \"signals_ours\": %" PRIu64
               ", \"matched\": %" PRIu64 ", \"missing\": %" PRIu64 ", \"missing_first_seqnum\": %" PRIu64
               ", \"dup_signals\": %" PRIu64 ", \"unmatched_signals\": %" PRIu64 ", \"synthesized_ours\": %" PRIu64
               ", \"gaps\": %" PRIu64 ", \"seq_first\": %" PRIu64 ", \"seq_last\": %" PRIu64
               ", \"t_first_kernel\": %" PRIu64 ", \"t_last_kernel\": %" PRIu64 ", \"t_first_signal\": %" PRIu64
               ", \"t_last_signal\": %" PRIu64 ", \"t_done\": %" PRIu64 ", \"kernel_enobufs\": %" PRIu64
               ", \"error\": %d, \"cpu_at_last_s\": %.6f, \"model_signals_ours\": %" PRIu64
               ", \"props_changed_ours\": %" PRIu64 ", \"ifaces_added_ours\": %" PRIu64
               ", \"ifaces_removed_ours\": %" PRIu64 ", \"t_last_model\": %" PRIu64
               ", \"cpu_settled_s\": %.6f, \"t_cpu_settled\": %" PRIu64 ", \"actions_kernel\": {",
               s.kernel_ours, s.signals_total, s.signals_ours, s.matched, missing, missing_first, s.dup_signals,
               s.unmatched_signals, s.synthesized_ours, s.gaps, s.seq_first, s.seq_last, s.t_first_kernel,
               s.t_last_kernel, s.t_first_signal, s.t_last_signal, t_done, s.kernel_enobufs, s.error, s.cpu_at_last, s.model_signals_ours,
               s.props_changed_ours, s.ifaces_added_ours, s.ifaces_removed_ours, s.t_last_model, s.cpu_settled,
               s.t_cpu_settled);
        for (int i = 0, first = 1; i < 8; i++)
                if (s.actions_kernel[i]) {
                        printf("%s\"%s\": %" PRIu64, first ? "" : ", ", ACTIONS[i], s.actions_kernel[i]);
                        first = 0;
                }
        printf("}, \"actions_signal\": {");
        for (int i = 0, first = 1; i < 8; i++)
                if (s.actions_signal[i]) {
                        printf("%s\"%s\": %" PRIu64, first ? "" : ", ", ACTIONS[i], s.actions_signal[i]);
                        first = 0;
                }
        printf("}}\n");
        fflush(stdout);
        sd_bus_flush_close_unref(bus);
        return 0;
}
