/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The reading floor of bench/real-kernel and bench/scale.py: what the kernel alone takes to open
 * and read the attribute files a complete GetManagedObjects of blkmodeld reports, measured in the
 * same run as the daemon and lsblk, as a reference no daemon that reads every value live can beat.
 *
 *   read-floor [--threads N] [--repeat R] ROOT < DIRS
 *
 * DIRS (stdin) lists directories, one per line, relative to ROOT (a sysfs root: /sys, or a
 * fixture's DIR/sys); bench/read_floor.py makes the list the daemon would read.  One pass: each
 * directory is opened (O_DIRECTORY) and listed with getdents64, and every regular file in it
 * (d_type DT_REG; DT_UNKNOWN is asked with fstatat) is opened relative to it
 * (O_RDONLY|O_CLOEXEC|O_NOFOLLOW), read once (up to 4096 bytes: kernfs hands over a whole
 * attribute in one read) and closed.  Nothing else: no parsing, no copying, no allocation.
 *
 * The directories are shared out over N threads (default 1; the main thread is one of them) by
 * an atomic index, one directory at a time.  --repeat R makes R passes (default 1).
 *
 * --ring reads as the daemon does on kernfs (daemon/sysfs/read-many.h): each thread has an io_uring,
 * and a directory's files are opened (openat2 into a direct descriptor), read and closed as linked
 * chains, up to 64 per io_uring_enter, sent straight to the kernel's io-wq threads (which count in
 * the CPU time: they are the process's).  A file the ring could not open is not read again: that
 * is the daemon's way for a write-only file, not the floor's.
 *
 * Prints one line of JSON: threads, repeat, dirs (listed in DIRS), dirs_failed (could not be
 * opened or listed), files (regular files found), failed (of those, could not be opened or read:
 * kernfs refuses to open write-only attributes, some attributes fail their read with EIO), bytes
 * (read), wall_s and cpu_s of the median pass by wall time (the lower median for an even R;
 * CPU time is CLOCK_PROCESS_CPUTIME_ID: all threads), and every pass's wall_s in passes_wall_s.
 * Counts are those of the median pass.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DENTS_BUF (64 * 1024)
#define READ_BUF 4096

typedef struct Counts {
        uint64_t dirs_failed, files, failed, bytes;
} Counts;

typedef struct Pass {
        int root_fd;
        char **dirs;
        size_t n_dirs;
        atomic_size_t next;
} Pass;

#define RING_CHAINS 64
#define ELEMENTS(x) (sizeof(x) / sizeof((x)[0]))

typedef struct Ring {
        struct io_uring ring;
        char bufs[RING_CHAINS][READ_BUF];
        int fds[RING_CHAINS];
        char names[RING_CHAINS][NAME_MAX + 1];
        size_t n;
        /* Directories whose files are queued: closed once those are read.  Chains go across
         * directories, as the daemon's across the objects of a batch: one wait per directory
         * (a dozen files) made a single thread wait on its io-wq worker 3,300 times a pass. */
        int dirs[RING_CHAINS + 1];
        size_t n_dirs;
} Ring;

typedef struct Worker {
        Pass *pass;
        pthread_t thread;
        char *dents;   /* DENTS_BUF bytes, for getdents64 */
        bool use_ring; /* --ring */
        Ring *ring;    /* made by the thread of the pass, which is its one issuer */
        Counts counts;
        int error; /* pthread_create's, if it failed */
} Worker;

static void read_file(int dir_fd, const char *name, Counts *c)
{
        char buf[READ_BUF];
        ssize_t n;
        int fd;

        c->files++;
        fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
                c->failed++;
                return;
        }
        n = read(fd, buf, sizeof buf);
        if (n < 0)
                c->failed++;
        else
                c->bytes += (uint64_t) n;
        (void) close(fd);
}

static int ring_new(Ring **ret)
{
        struct io_uring_params p = {.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN |
                                             IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN};
        Ring *t = calloc(1, sizeof(Ring));
        int r;

        if (!t)
                return -ENOMEM;
        r = io_uring_queue_init_params(RING_CHAINS * 3, &t->ring, &p);
        if (r >= 0)
                r = io_uring_register_files_sparse(&t->ring, RING_CHAINS);

        if (r < 0) {
                free(t);
                return r;
        }
        *ret = t;
        return 0;
}

/* The queued files, as chains: open into slot k, read, close. */
static void ring_flush(Ring *t, Counts *c)
{
        static struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW,
                                      .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
                                                 RESOLVE_NO_SYMLINKS};
        struct io_uring_cqe *cqe;
        unsigned want = 3 * (unsigned) t->n, got = 0;

        for (unsigned k = 0; k < t->n; k++) {
                struct io_uring_sqe *s = io_uring_get_sqe(&t->ring);
                io_uring_prep_openat2_direct(s, t->fds[k], t->names[k], &how, k);
                s->flags |= IOSQE_IO_LINK | IOSQE_ASYNC;
                io_uring_sqe_set_data64(s, 0);
                s = io_uring_get_sqe(&t->ring);
                io_uring_prep_read(s, (int) k, t->bufs[k], READ_BUF, 0);
                s->flags |= IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK;
                io_uring_sqe_set_data64(s, 1);
                s = io_uring_get_sqe(&t->ring);
                io_uring_prep_close_direct(s, k);
                io_uring_sqe_set_data64(s, 2);
        }
        if (want > 0 && io_uring_submit_and_wait(&t->ring, want) < 0) {
                fprintf(stderr, "read-floor: io_uring_submit_and_wait failed\n");
                exit(1);
        }
        while (got < want && io_uring_wait_cqe(&t->ring, &cqe) == 0) {
                if (cqe->user_data == 1) {
                        if (cqe->res < 0)
                                c->failed++;
                        else
                                c->bytes += (uint64_t) cqe->res;
                }
                io_uring_cqe_seen(&t->ring, cqe);
                got++;
        }
        t->n = 0;
        /* Only directories listed to their end are on the list: none has files still to come. */
        for (size_t i = 0; i < t->n_dirs; i++)
                (void) close(t->dirs[i]);
        t->n_dirs = 0;
}

static void ring_add(Ring *t, int dir_fd, const char *name, Counts *c)
{
        c->files++;
        t->fds[t->n] = dir_fd;
        snprintf(t->names[t->n++], sizeof(t->names[0]), "%s", name);
        if (t->n == RING_CHAINS)
                ring_flush(t, c);
}

static void read_dir(int root_fd, const char *dir, char *dents, Ring *ring, Counts *c)
{
        int fd = openat(root_fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0) {
                c->dirs_failed++;
                return;
        }
        for (;;) {
                ssize_t n = getdents64(fd, dents, DENTS_BUF);
                if (n < 0) {
                        c->dirs_failed++;
                        break;
                }
                if (n == 0)
                        break;
                for (ssize_t off = 0; off < n;) {
                        struct dirent64 *de = (struct dirent64 *) (dents + off);
                        off += de->d_reclen;
                        if (de->d_type == DT_UNKNOWN) {
                                struct stat st;
                                if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                                    !S_ISREG(st.st_mode))
                                        continue;
                        } else if (de->d_type != DT_REG)
                                continue;
                        if (ring)
                                ring_add(ring, fd, de->d_name, c);
                        else
                                read_file(fd, de->d_name, c);
                }
        }
        if (ring) {
                ring->dirs[ring->n_dirs++] = fd; /* closed when its files are read */
                if (ring->n_dirs == ELEMENTS(ring->dirs))
                        ring_flush(ring, c);
        } else
                (void) close(fd);
}

static void *worker_run(void *userdata)
{
        Worker *w = userdata;
        Pass *p = w->pass;

        w->counts = (Counts){};
        if (w->use_ring) {
                int r = ring_new(&w->ring);
                if (r < 0) {
                        fprintf(stderr, "read-floor: io_uring: %s\n", strerror(-r));
                        exit(1);
                }
        }
        for (;;) {
                size_t i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
                if (i >= p->n_dirs)
                        break;
                read_dir(p->root_fd, p->dirs[i], w->dents, w->ring, &w->counts);
        }
        if (w->ring) {
                ring_flush(w->ring, &w->counts);
                io_uring_queue_exit(&w->ring->ring);
                free(w->ring);
                w->ring = NULL;
        }
        return NULL;
}

static double now_s(clockid_t clock)
{
        struct timespec ts;

        (void) clock_gettime(clock, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

typedef struct Result {
        double wall_s, cpu_s;
        Counts counts;
} Result;

/* One pass over all directories on n_workers threads (workers[0] is the calling thread). */
static int run_pass(Pass *p, Worker *workers, unsigned n_workers, Result *ret)
{
        double wall0, cpu0;
        int r = 0;

        atomic_store(&p->next, 0);
        wall0 = now_s(CLOCK_MONOTONIC);
        cpu0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
        for (unsigned i = 1; i < n_workers; i++)
                workers[i].error = pthread_create(&workers[i].thread, NULL, worker_run, &workers[i]);
        worker_run(&workers[0]);
        for (unsigned i = 1; i < n_workers; i++)
                if (workers[i].error == 0)
                        (void) pthread_join(workers[i].thread, NULL);
        ret->wall_s = now_s(CLOCK_MONOTONIC) - wall0;
        ret->cpu_s = now_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;

        ret->counts = (Counts){};
        for (unsigned i = 0; i < n_workers; i++) {
                Counts *c = &workers[i].counts;
                if (workers[i].error != 0)
                        r = -workers[i].error;
                ret->counts.dirs_failed += c->dirs_failed;
                ret->counts.files += c->files;
                ret->counts.failed += c->failed;
                ret->counts.bytes += c->bytes;
        }
        return r;
}

static int read_dirs(FILE *f, char ***ret, size_t *ret_n)
{
        char **dirs = NULL, *line = NULL;
        size_t n = 0, cap = 0, len = 0;
        ssize_t k;

        while ((k = getline(&line, &len, f)) > 0) {
                const char *s = line;
                while (k > 0 && (line[k - 1] == '\n' || line[k - 1] == ' '))
                        line[--k] = 0;
                if (k == 0)
                        continue;
                /* Relative to ROOT, whether or not the line starts with a slash ("/" is ROOT). */
                while (*s == '/')
                        s++;
                if (*s == 0)
                        s = ".";
                if (n == cap) {
                        char **d;
                        cap = cap ? cap * 2 : 1024;
                        d = realloc(dirs, cap * sizeof(char *));
                        if (!d)
                                return -ENOMEM;
                        dirs = d;
                }
                dirs[n] = strdup(s);
                if (!dirs[n])
                        return -ENOMEM;
                n++;
        }
        free(line);
        *ret = dirs;
        *ret_n = n;
        return 0;
}

static int cmp_wall(const void *a, const void *b)
{
        const Result *x = a, *y = b;

        return x->wall_s < y->wall_s ? -1 : x->wall_s > y->wall_s ? 1 : 0;
}

static void usage(const char *argv0)
{
        fprintf(stderr, "usage: %s [--threads N] [--repeat R] [--ring] ROOT < DIRS\n", argv0);
        exit(2);
}

int main(int argc, char *argv[])
{
        unsigned threads = 1, repeat = 1;
        bool ring = false;
        Pass pass = {};
        Worker *workers;
        Result *results, *sorted, *med;
        int i, r;

        for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
                if (strcmp(argv[i], "--ring") == 0) {
                        ring = true;
                        continue;
                }
                if (i + 1 >= argc)
                        usage(argv[0]);
                if (strcmp(argv[i], "--threads") == 0)
                        threads = (unsigned) atoi(argv[++i]);
                else if (strcmp(argv[i], "--repeat") == 0)
                        repeat = (unsigned) atoi(argv[++i]);
                else
                        usage(argv[0]);
        }
        if (argc - i != 1 || threads < 1 || threads > 1024 || repeat < 1 || repeat > 100000)
                usage(argv[0]);

        pass.root_fd = open(argv[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pass.root_fd < 0) {
                fprintf(stderr, "read-floor: %s: %s\n", argv[i], strerror(errno));
                return 1;
        }
        r = read_dirs(stdin, &pass.dirs, &pass.n_dirs);
        if (r < 0) {
                fprintf(stderr, "read-floor: reading the directory list: %s\n", strerror(-r));
                return 1;
        }

        workers = calloc(threads, sizeof(Worker));
        results = calloc(repeat, sizeof(Result));
        sorted = calloc(repeat, sizeof(Result));
        if (!workers || !results || !sorted) {
                fprintf(stderr, "read-floor: out of memory\n");
                return 1;
        }
        for (unsigned t = 0; t < threads; t++) {
                workers[t].pass = &pass;
                workers[t].dents = malloc(DENTS_BUF);
                if (!workers[t].dents) {
                        fprintf(stderr, "read-floor: out of memory\n");
                        return 1;
                }
                workers[t].use_ring = ring;
        }

        for (unsigned k = 0; k < repeat; k++) {
                r = run_pass(&pass, workers, threads, &results[k]);
                if (r < 0) {
                        fprintf(stderr, "read-floor: pthread_create: %s\n", strerror(-r));
                        return 1;
                }
        }
        memcpy(sorted, results, repeat * sizeof(Result));
        qsort(sorted, repeat, sizeof(Result), cmp_wall);
        med = &sorted[(repeat - 1) / 2];

        printf("{\"threads\": %u, \"ring\": %s, \"repeat\": %u, \"dirs\": %zu, \"dirs_failed\": %" PRIu64
               ", \"files\": %" PRIu64 ", \"failed\": %" PRIu64 ", \"bytes\": %" PRIu64
               ", \"wall_s\": %.6f, \"cpu_s\": %.6f, \"passes_wall_s\": [",
               threads, ring ? "true" : "false", repeat, pass.n_dirs, med->counts.dirs_failed,
               med->counts.files, med->counts.failed, med->counts.bytes, med->wall_s, med->cpu_s);
        for (unsigned k = 0; k < repeat; k++)
                printf("%s%.6f", k ? ", " : "", results[k].wall_s);
        printf("]}\n");

        for (unsigned t = 0; t < threads; t++)
                free(workers[t].dents);
        for (size_t k = 0; k < pass.n_dirs; k++)
                free(pass.dirs[k]);
        free(pass.dirs);
        free(workers);
        free(results);
        free(sorted);
        (void) close(pass.root_fd);
        return fflush(stdout) == 0 ? 0 : 1;
}
