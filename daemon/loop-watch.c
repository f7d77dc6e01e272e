/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <time.h>

#include "base/log.h"
#include "loop-watch.h"

static uint64_t thread_cpu_usec(void)
{
        struct timespec t;

        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) < 0)
                return 0;
        return (uint64_t) t.tv_sec * 1000000 + (uint64_t) t.tv_nsec / 1000;
}

/* Runs at every turn, right before the loop polls: what the last turn cost is known here. */
static void on_prepare(uv_prepare_t *h)
{
        LoopWatch *w = h->data;
        uint64_t now = thread_cpu_usec(), turn = now - w->turn_start_usec;

        w->turn_start_usec = now;
        if (turn <= w->threshold_usec)
                return;
        w->n_long++;
        if (turn > w->longest_usec) {
                w->longest_usec = turn;
                log_warning("The event loop worked %" PRIu64 " ms without a break, the longest yet: calls "
                            "and signals waited that long.",
                            turn / 1000);
        } else
                log_debug("The event loop worked %" PRIu64 " ms without a break.", turn / 1000);
}

int loop_watch_start(uv_loop_t *loop, LoopWatch *w, uint64_t threshold_usec)
{
        int r;

        *w = (LoopWatch){.threshold_usec = threshold_usec, .turn_start_usec = thread_cpu_usec()};
        r = uv_prepare_init(loop, &w->prepare);
        if (r < 0)
                return r;
        w->prepare.data = w;
        r = uv_prepare_start(&w->prepare, on_prepare);
        if (r < 0) {
                uv_close((uv_handle_t *) &w->prepare, NULL);
                return r;
        }
        uv_unref((uv_handle_t *) &w->prepare);
        return 0;
}

void loop_watch_stop(LoopWatch *w)
{
        /* Only the longest yet is a warning as it happens: the count, for whoever reads the log after. */
        if (w->n_long > 0)
                log_warning("Turns of the event loop over %" PRIu64 " ms: %" PRIu64 ", the longest %" PRIu64 " ms.",
                            w->threshold_usec / 1000, w->n_long, w->longest_usec / 1000);
        if (!uv_is_closing((uv_handle_t *) &w->prepare))
                uv_close((uv_handle_t *) &w->prepare, NULL);
}
