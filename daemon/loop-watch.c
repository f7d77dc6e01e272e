/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "base/log.h"
#include "common/time-util.h"
#include "common/util.h"
#include "loop-watch.h"

/*
 * One pread per turn: the thread's time waiting for a CPU.  Not its time on one, the first field: the
 * kernel brings that up to date only at a tick or a switch, so a turn read from it could gain or lose
 * a tick (4 ms here, which made a 5 ms turn 8).  CLOCK_THREAD_CPUTIME_ID is up to date when read.
 * The wait is added when the thread gets the CPU: the running thread reads all of it.
 */
static int read_run_delay(int fd, uint64_t *ret_queue_usec)
{
        char buf[96];
        unsigned long long run, delay;
        ssize_t n;

        n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n <= 0)
                return -EIO;
        buf[n] = '\0';
        if (sscanf(buf, "%llu %llu", &run, &delay) != 2)
                return -EIO;
        *ret_queue_usec = delay / 1000;
        return 0;
}

static void schedstat_close(LoopWatch *w)
{
        closep(&w->schedstat_fd);
        w->schedstat_fd = -1;
}

/* The clocks are read together: a thread preempted between reading the wall clock and schedstat
 * would count that wait in one turn and its wall time in the next, which then read as held that long
 * (a 5 ms turn as 20 on a busy machine).  So they are read again while the wall clock moved too far. */
#define CLOCK_READ_MAX_USEC 100
#define CLOCK_READ_TRIES 3

static void read_clock(LoopWatch *w, uv_loop_t *loop, LoopTurnClock *c)
{
        for (unsigned i = 0; i < CLOCK_READ_TRIES; i++) {
                uint64_t before = now_usec();

                c->idle_usec = uv_metrics_idle_time(loop) / 1000;
                c->cpu_usec = clock_nsec(CLOCK_THREAD_CPUTIME_ID) / 1000;
                c->queue_usec = 0;
                if (w->schedstat_fd >= 0 && read_run_delay(w->schedstat_fd, &c->queue_usec) < 0) {
                        /* Not half one account and half the other: CPU time only from now on. */
                        log_debug("No schedstat for the loop thread; long turns are told by CPU time only.");
                        schedstat_close(w);
                }
                c->wall_usec = now_usec();
                if (c->wall_usec - before <= CLOCK_READ_MAX_USEC)
                        break;
        }
}

/* signalled: a signal cut the wait for events short (turn_signalled()), which libuv then did not
 * count as idle; the turn is told by its CPU time. */
static LoopTurn turn_between(const LoopWatch *w, const LoopTurnClock *a, const LoopTurnClock *b,
                             bool signalled)
{
        uint64_t wall = b->wall_usec - a->wall_usec, idle = b->idle_usec - a->idle_usec;
        uint64_t busy = wall > idle ? wall - idle : 0;
        LoopTurn t = {.cpu_usec = b->cpu_usec - a->cpu_usec, .busy_usec = busy, .end_usec = b->wall_usec};

        if (w->schedstat_fd < 0 || signalled) {
                t.held_usec = t.busy_usec = t.cpu_usec;
                return t;
        }
        t.waiting_usec = b->queue_usec - a->queue_usec;
        t.held_usec = busy > t.waiting_usec ? busy - t.waiting_usec : 0;
        /* The clocks are read a few µs apart: never report less than the CPU time itself. */
        t.held_usec = MAX(t.held_usec, t.cpu_usec);
        return t;
}

/* Not the daemon's work, but callers waited through it: a slow reply is the machine's, and says so. */
static void waited_for_cpu(LoopWatch *w, const LoopTurn *t, uint64_t from)
{
        bool most = t->waiting_usec > w->most_waiting.waiting_usec;

        w->n_waited++;
        if (most)
                w->most_waiting = *t;
        log_full(most ? LOG_NOTICE : LOG_DEBUG,
                 "The event loop was ready to run but waited %" PRIu64 " ms for a CPU, in a turn busy %" PRIu64
                 " ms from %" PRIu64 ".%06" PRIu64 " s on CLOCK_MONOTONIC%s",
                 t->waiting_usec / 1000, t->busy_usec / 1000, from / 1000000, from % 1000000,
                 most ? "; the longest wait yet: the machine's other work held calls and signals." : ".");
}

/* Runs at every turn, right before the loop polls: what the last turn cost is known here. */
static void on_prepare(uv_prepare_t *h)
{
        LoopWatch *w = h->data;
        LoopTurnClock now;
        LoopTurn t;

        read_clock(w, h->loop, &now);
        t = turn_between(w, &w->start, &now, turn_take_signalled());
        w->start = now;
        /* Every turn: a short turn's parts are not to be named in a later one, nor its work share
         * the next one's budget. */
        turn_part_take_longest(&t.part);
        turn_next();
        bool longest = t.held_usec > w->longest.held_usec;
        if (longest)
                w->longest = t;
        uint64_t from = t.end_usec - MIN(t.busy_usec, t.end_usec);
        if (t.held_usec <= w->threshold_usec) {
                /* Its work and waits together passed the threshold, or a wake-up alone waited that long
                 * (counted in epoll_wait's time by libuv, so not in the busy time): callers waited. */
                if (t.busy_usec > w->threshold_usec || t.waiting_usec > w->threshold_usec)
                        waited_for_cpu(w, &t, from);
                return;
        }
        w->n_long++;

        char part[sizeof(t.part.what) + 64] = "";
        /* A part under a millisecond says nothing of where the rest went. */
        if (t.part.usec >= 1000)
                (void) snprintf(part, sizeof(part), ", %" PRIu64 " ms of it in %s", t.part.usec / 1000,
                                t.part.what);
        log_full(longest ? LOG_WARNING : LOG_DEBUG,
                 "The event loop was held %" PRIu64 " ms without a break (%" PRIu64
                 " ms of it asleep in system calls), busy %" PRIu64 " ms from %" PRIu64 ".%06" PRIu64
                 " s on CLOCK_MONOTONIC%s%s",
                 t.held_usec / 1000, (t.held_usec - t.cpu_usec) / 1000, t.busy_usec / 1000, from / 1000000,
                 from % 1000000, part,
                 longest ? "; the longest yet: calls and signals waited that long." : ".");
}

int loop_watch_start(uv_loop_t *loop, LoopWatch *w, uint64_t threshold_usec)
{
        int r;

        *w = (LoopWatch){.threshold_usec = threshold_usec};
        /* Without it libuv does not count the time in epoll_wait; then only CPU time can be told. */
        if (uv_loop_configure(loop, UV_METRICS_IDLE_TIME) >= 0)
                w->schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
        else
                w->schedstat_fd = -1;
        if (w->schedstat_fd < 0)
                log_debug("Long turns of the loop are told by CPU time only: no schedstat or idle time.");
        read_clock(w, loop, &w->start);
        turn_part_take_longest(&(TurnPart){}); /* what ended before is in no turn it measures */
        r = uv_prepare_init(loop, &w->prepare);
        if (r < 0)
                goto fail;
        w->prepare.data = w;
        r = uv_prepare_start(&w->prepare, on_prepare);
        if (r < 0) {
                uv_close((uv_handle_t *) &w->prepare, NULL);
                goto fail;
        }
        uv_unref((uv_handle_t *) &w->prepare);
        return 0;
fail:
        schedstat_close(w);
        return r;
}

void loop_watch_stop(LoopWatch *w)
{
        /* Only the longest yet is a warning as it happens: the count, for whoever reads the log after. */
        if (w->n_long > 0)
                log_warning("Turns of the event loop over %" PRIu64 " ms: %" PRIu64 ", the longest %" PRIu64 " ms.",
                            w->threshold_usec / 1000, w->n_long, w->longest.held_usec / 1000);
        if (w->n_waited > 0)
                log_notice("Turns of the event loop over %" PRIu64
                           " ms only with their waits for a CPU: %" PRIu64 ", the longest wait %" PRIu64 " ms.",
                           w->threshold_usec / 1000, w->n_waited, w->most_waiting.waiting_usec / 1000);
        schedstat_close(w);
        if (!uv_is_closing((uv_handle_t *) &w->prepare))
                uv_close((uv_handle_t *) &w->prepare, NULL);
}
