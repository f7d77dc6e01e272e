/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <signal.h>
#include <unistd.h>
#include <uv.h>

#include "common/util.h"
#include "fixture.h"
#include "manager.h"
#include "tests.h"

/*
 * The composition root's life cycle on a loop it does not own.  manager_free() must only start the
 * closing and return: the memory goes with the last close callback, when the loop's owner runs it.
 * An earlier manager_free() ran uv_run(UV_RUN_DEFAULT) itself, which never returns while any other
 * handle on the loop is active; the alarm turns such a hang into a failure.
 */

#define HANG_SECONDS 10

static void on_alarm(int sig)
{
        static const char msg[] = "test-manager: hung (manager_new/manager_free ran the loop?)\n";
        (void) !write(STDERR_FILENO, msg, sizeof(msg) - 1);
        _exit(1);
}

static unsigned ticks;

static void on_tick(uv_timer_t *t)
{
        ticks++;
}

static void count_handle(uv_handle_t *h, void *userdata)
{
        (*(unsigned *) userdata)++;
}

static unsigned n_handles(uv_loop_t *loop)
{
        unsigned n = 0;

        uv_walk(loop, count_handle, &n);
        return n;
}

static ManagerOptions options(const char *sysfs_root)
{
        return (ManagerOptions){
                        .bus_kind = BUS_KIND_SESSION,
                        .sysfs_root = sysfs_root,
                        .no_uevents = true,
                        .event_log_size = 16,
                        .poll_interval_ms = 0,
        };
}

int main(void)
{
        Fixture f = {};
        Manager *m = NULL;
        uv_loop_t loop;
        uv_timer_t timer;
        int r;

        if (signal(SIGALRM, on_alarm) == SIG_ERR)
                return 1;
        r = fixture_new(&f);
        CHECK(r == 0);
        if (r < 0)
                return tests_summary();

        CHECK(uv_loop_init(&loop) == 0);
        /* Someone else's handle, active for as long as the test likes: a repeating timer. */
        CHECK(uv_timer_init(&loop, &timer) == 0);
        CHECK(uv_timer_start(&timer, on_tick, 1000, 1000) == 0);

        alarm(HANG_SECONDS);
        ManagerOptions o = options(f.root);
        CHECK(manager_new(&o, &loop, &m) == 0);
        CHECK(m != NULL);
        if (m) {
                CHECK(m->model && m->live && m->events);
                CHECK(m->uevents == NULL);   /* no_uevents, and not started */
                CHECK(m->publisher == NULL); /* the bus is manager_start()'s */
                CHECK(n_handles(&loop) > 1);
        }
        /* Returns at once, without running the loop: the timer never fired. */
        manager_free(m);
        alarm(0);
        CHECK(ticks == 0);
        /* The manager's handles are closing, not closed: the loop still has them. */
        CHECK(n_handles(&loop) > 1);

        /* The owner closes its own handle and runs the loop once: everything is released (LSan
         * checks the memory), and the loop has nothing left. */
        uv_close((uv_handle_t *) &timer, NULL);
        alarm(HANG_SECONDS);
        CHECK(uv_run(&loop, UV_RUN_DEFAULT) == 0);
        alarm(0);
        CHECK(n_handles(&loop) == 0);
        CHECK(ticks == 0);

        /* A failed manager_new() (no sysfs there) cleans up the same way: an error, nothing kept,
         * and the loop's owner runs the loop to let the handles go. */
        CHECK(uv_timer_init(&loop, &timer) == 0);
        CHECK(uv_timer_start(&timer, on_tick, 1000, 1000) == 0);
        o = options("/nonexistent/blkmodel-test-sys");
        m = NULL;
        alarm(HANG_SECONDS);
        CHECK(manager_new(&o, &loop, &m) == -ENOENT);
        alarm(0);
        CHECK(m == NULL);
        uv_close((uv_handle_t *) &timer, NULL);
        alarm(HANG_SECONDS);
        CHECK(uv_run(&loop, UV_RUN_DEFAULT) == 0);
        alarm(0);
        CHECK(n_handles(&loop) == 0);

        CHECK(uv_loop_close(&loop) == 0);
        fixture_done(&f);
        return tests_summary();
}
