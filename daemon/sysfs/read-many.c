/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"
#include "common/time-util.h"
#include "common/util.h"
#include "sysfs/read-many.h"

/* Chains in flight at once: the ring's direct-descriptor slots and value buffers. */
#define RING_CHAINS 64

typedef struct Ring {
        struct io_uring ring;
        char (*bufs)[SYSFS_VALUE_MAX];
        bool broken; /* a wait failed with chains in flight: their buffers may still be written */
} Ring;

typedef enum RingOp {
        RING_OPEN,
        RING_READ,
        RING_CLOSE,
} RingOp;

/* One ring per thread, made on its first reading: a ring has one issuer, and two workers read at
 * once.  The key frees it when the thread ends. */
static pthread_key_t ring_key;
static pthread_once_t ring_key_once = PTHREAD_ONCE_INIT;
static bool ring_key_ok;
static __thread Ring *thread_ring;
static __thread bool thread_ring_tried;

static void ring_free(void *p)
{
        Ring *t = p;

        if (t->broken)
                return; /* leaked on purpose: the kernel may still write into it */
        io_uring_queue_exit(&t->ring);
        free(t->bufs);
        free(t);
}

static void ring_key_create(void)
{
        ring_key_ok = pthread_key_create(&ring_key, ring_free) == 0;
}

static int ring_new(Ring **ret)
{
        /* The reading thread is the only issuer and waits for every chain it queued: the
         * completions' work waits for that wait too (DEFER_TASKRUN), rather than waking the thread
         * for each of the three requests of every chain (bench/read-floor --ring on the files of
         * 1,000 loops, 2 threads: 20-25 % less time; a cold start: 4 % less time, 8 % less CPU). */
        struct io_uring_params p = {.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN |
                                             IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN};
        _cleanup_(freep) Ring *t = calloc(1, sizeof(Ring));
        int r;

        if (!t)
                return -ENOMEM;
        r = io_uring_queue_init_params(RING_CHAINS * 3, &t->ring, &p);
        /* Before 6.1, which knows all the flags: only what they save is lost. */
        if (r == -EINVAL) {
                p = (struct io_uring_params){.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN};
                r = io_uring_queue_init_params(RING_CHAINS * 3, &t->ring, &p);
        }
        if (r == -EINVAL) {
                p = (struct io_uring_params){};
                r = io_uring_queue_init_params(RING_CHAINS * 3, &t->ring, &p);
        }
        if (r < 0)
                return r;
        r = io_uring_register_files_sparse(&t->ring, RING_CHAINS);
        if (r >= 0) {
                t->bufs = malloc(RING_CHAINS * sizeof(*t->bufs));
                r = t->bufs ? pthread_setspecific(ring_key, t) : -ENOMEM;
                r = r > 0 ? -r : r;
        }
        if (r < 0) {
                free(t->bufs);
                io_uring_queue_exit(&t->ring);
                return r;
        }
        *ret = TAKE_PTR(t);
        return 0;
}

/* This thread's ring, or NULL: it has none, or it broke. */
static Ring *ring_get(void)
{
        int r;

        if (thread_ring_tried)
                return thread_ring && !thread_ring->broken ? thread_ring : NULL;
        thread_ring_tried = true;
        (void) pthread_once(&ring_key_once, ring_key_create);
        r = ring_key_ok ? ring_new(&thread_ring) : -ENOMEM;
        if (r < 0)
                log_debug_errno(r, "No io_uring for reading sysfs on this thread, reading file by file: %m");
        return thread_ring;
}

static void queue_chain(Ring *t, unsigned k, int dirfd, const char *name)
{
        /* As sysfs_read_attr() opens: beneath the object's directory, no links, never blocking. */
        static struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW,
                                      .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
                                                 RESOLVE_NO_SYMLINKS};
        struct io_uring_sqe *s;

        /* On kernfs an open and a read go to the kernel's io-wq workers whatever we ask (kernfs
         * files are not FMODE_NOWAIT): sent there at once, rather than after a failed try. */
        s = io_uring_get_sqe(&t->ring);
        io_uring_prep_openat2_direct(s, dirfd, name, &how, k);
        s->flags |= IOSQE_IO_LINK | IOSQE_ASYNC;
        io_uring_sqe_set_data64(s, (uint64_t) k << 2 | RING_OPEN);
        s = io_uring_get_sqe(&t->ring);
        io_uring_prep_read(s, (int) k, t->bufs[k], SYSFS_VALUE_MAX, 0);
        /* A hard link: the slot is closed even when the read fails. */
        s->flags |= IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK;
        io_uring_sqe_set_data64(s, (uint64_t) k << 2 | RING_READ);
        s = io_uring_get_sqe(&t->ring);
        io_uring_prep_close_direct(s, k);
        io_uring_sqe_set_data64(s, (uint64_t) k << 2 | RING_CLOSE);
}

/* Runs n ≤ RING_CHAINS chains; their results in res_open and res_read (left as they are: none came). */
static void run_chains(Ring *t, const int *dirfds, ObjDirValue *const *values, size_t n, int *res_open,
                       int *res_read)
{
        size_t want = 3 * n, got = 0;
        int r;

        for (size_t k = 0; k < n; k++)
                queue_chain(t, (unsigned) k, dirfds[k], values[k]->file);
        do
                r = io_uring_submit_and_wait(&t->ring, (unsigned) want);
        while (r == -EINTR);
        while (r >= 0 && got < want) {
                struct io_uring_cqe *c;

                r = io_uring_wait_cqe(&t->ring, &c);
                if (r == -EINTR) {
                        r = 0;
                        continue;
                }
                if (r < 0)
                        break;
                size_t k = (size_t) (c->user_data >> 2);
                if ((c->user_data & 3) == RING_OPEN)
                        res_open[k] = c->res;
                else if ((c->user_data & 3) == RING_READ)
                        res_read[k] = c->res;
                io_uring_cqe_seen(&t->ring, c);
                got++;
        }
        if (r < 0) {
                /* Never seen, and no telling what of the chains is still queued or running: this
                 * thread reads file by file from now on, and the rest of these chains so too. */
                log_warning_errno(r, "Reading sysfs through io_uring failed, reading file by file: %m");
                t->broken = true;
        }
}

/* Reads n ≤ RING_CHAINS files through the ring; once it broke, each the one-by-one way. */
static void read_chains(Ring *t, const int *dirfds, ObjDirValue *const *values, size_t n, SysfsStrndup dup,
                        void *userdata)
{
        int res_open[RING_CHAINS], res_read[RING_CHAINS];

        for (size_t k = 0; k < n; k++)
                res_open[k] = res_read[k] = -ECANCELED;
        if (!t->broken)
                run_chains(t, dirfds, values, n, res_open, res_read);
        for (size_t k = 0; k < n; k++) {
                ObjDirValue *v = values[k];

                if (res_open[k] >= 0 && res_read[k] >= 0 && res_read[k] < SYSFS_VALUE_MAX) {
                        v->value = sysfs_value_dup(t->bufs[k], (size_t) res_read[k], dup, userdata);
                        v->error = v->value ? 0 : -ENOMEM;
                } else if (res_open[k] >= 0 && res_read[k] < 0 && res_read[k] != -ECANCELED) {
                        v->value = NULL;
                        v->error = res_read[k]; /* as read() failed: EIO from a driver's show() */
                } else
                        /* Refused for reading (a write-only attribute reads as ""), as long as the
                         * buffer, or not run (the ring broke): as sysfs_read_attr() has it. */
                        v->error = sysfs_read_source_dup(dirfds[k], v->file, true, dup, userdata, &v->value);
        }
}

int sysfs_read_many(const int *dirfds, ObjDirValue *const *values, size_t n, SysfsStrndup dup,
                    void *userdata)
{
        int chain_fds[RING_CHAINS];
        ObjDirValue *chain_values[RING_CHAINS];
        size_t m = 0;
        Ring *t = ring_get();

        if (!t)
                return -EOPNOTSUPP;
        for (size_t i = 0; i < n; i++) {
                if (!sysfs_source_is_attr(values[i]->file)) {
                        values[i]->error = sysfs_read_source_dup(dirfds[i], values[i]->file, true, dup,
                                                                 userdata, &values[i]->value);
                        continue;
                }
                chain_fds[m] = dirfds[i];
                chain_values[m++] = values[i];
                if (m == RING_CHAINS) {
                        read_chains(t, chain_fds, chain_values, m, dup, userdata);
                        m = 0;
                }
        }
        if (m > 0)
                read_chains(t, chain_fds, chain_values, m, dup, userdata);
        return 0;
}

/* The least a round trip into the kernel costs here: a system call that does nothing, the fastest of
 * a few rounds, so that a round the thread lost its CPU in does not count. */
static uint64_t syscall_cost_ns(void)
{
        uint64_t best = UINT64_MAX;

        for (unsigned round = 0; round < 5; round++) {
                uint64_t start = now_nsec();

                for (unsigned i = 0; i < 200; i++)
                        (void) syscall(SYS_getppid); /* glibc caches getpid(), not this */
                best = MIN(best, (now_nsec() - start) / 200);
        }
        return best;
}

/* $BLKMODEL_SYSFS_IO_URING decides only when it is 1 or 0. */
static bool env_decides(const char *env)
{
        return env && (streq(env, "1") || streq(env, "0"));
}

bool sysfs_ring_pays(const char *env, uint64_t syscall_ns)
{
        if (env_decides(env))
                return streq(env, "1");
        return syscall_ns >= IO_URING_PAYS_FROM_NS;
}

static bool ring_pays;

static void decide_ring_pays(void)
{
        const char *env = secure_getenv("BLKMODEL_SYSFS_IO_URING");
        uint64_t ns = env_decides(env) ? 0 : syscall_cost_ns();

        ring_pays = sysfs_ring_pays(env, ns);
        if (env_decides(env)) {
                log_info("Reading sysfs %s, as $BLKMODEL_SYSFS_IO_URING says.",
                         ring_pays ? "through io_uring" : "file by file");
                return;
        }
        if (env)
                log_warning("$BLKMODEL_SYSFS_IO_URING=%s is neither 1 nor 0; ignored.", env);
        log_info("A system call costs %" PRIu64 " ns here: reading sysfs %s (io_uring pays from %u ns).", ns,
                 ring_pays ? "through io_uring" : "file by file", IO_URING_PAYS_FROM_NS);
}

bool sysfs_read_many_pays(void)
{
        static pthread_once_t once = PTHREAD_ONCE_INIT;

        (void) pthread_once(&once, decide_ring_pays);
        return ring_pays;
}
