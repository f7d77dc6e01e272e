/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <time.h>
#include <uv.h>

#include "common/util.h"
#include "loop-watch.h"
#include "tests.h"

/* The watch counts a turn's own work, not the time the loop thread waited or slept. */

static uint64_t cpu_usec(void)
{
        struct timespec t;

        (void) clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        return (uint64_t) t.tv_sec * 1000000 + (uint64_t) t.tv_nsec / 1000;
}

static void on_work(uv_timer_t *t)
{
        uint64_t start = cpu_usec(), want = *(uint64_t *) t->data;

        while (cpu_usec() - start < want)
                ;
}

static void on_sleep(uv_timer_t *t)
{
        (void) nanosleep(&(struct timespec){.tv_nsec = 40 * 1000 * 1000}, NULL);
}

/* Runs one timer callback (plus the turns around it) and returns. */
static void run_one(uv_loop_t *loop, uv_timer_cb cb, uint64_t *work_usec)
{
        uv_timer_t t;

        CHECK(uv_timer_init(loop, &t) == 0);
        t.data = work_usec;
        CHECK(uv_timer_start(&t, cb, 1, 0) == 0);
        (void) uv_run(loop, UV_RUN_DEFAULT);
        uv_close((uv_handle_t *) &t, NULL);
        (void) uv_run(loop, UV_RUN_DEFAULT);
}

int main(void)
{
        uv_loop_t loop;
        LoopWatch w;
        uint64_t work;

        CHECK(uv_loop_init(&loop) == 0);
        CHECK(loop_watch_start(&loop, &w, 20 * 1000) == 0);

        /* Quick turns: nothing. */
        work = 1000;
        run_one(&loop, on_work, &work);
        CHECK(w.n_long == 0 && w.longest_usec == 0);

        /* A turn that works 40 ms: one long turn, of at least that. */
        work = 40 * 1000;
        run_one(&loop, on_work, &work);
        CHECK(w.n_long == 1);
        CHECK(w.longest_usec >= 40 * 1000 && w.longest_usec < 1000 * 1000);

        /* Sleeping 40 ms in a turn (as a preempted thread waits) is not the loop's work. */
        run_one(&loop, on_sleep, NULL);
        CHECK(w.n_long == 1);

        /* A shorter long turn is counted, and the longest stays. */
        uint64_t longest = w.longest_usec;
        work = 25 * 1000;
        run_one(&loop, on_work, &work);
        CHECK(w.n_long == 2 && w.longest_usec == longest);

        /* The watch alone does not keep the loop running. */
        CHECK(uv_run(&loop, UV_RUN_NOWAIT) == 0);

        loop_watch_stop(&w);
        (void) uv_run(&loop, UV_RUN_DEFAULT);
        CHECK(uv_loop_close(&loop) == 0);
        return tests_summary();
}
