/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "common/time-util.h"
#include "common/util.h"
#include "loop-watch.h"
#include "tests.h"

/* The watch counts a turn's own work and its sleeps in system calls, not the time the loop waited
 * for events or, runnable, for a CPU. */

static uint64_t cpu_usec(void)
{
        return clock_nsec(CLOCK_THREAD_CPUTIME_ID) / 1000;
}

static void on_work(uv_timer_t *t)
{
        uint64_t start = cpu_usec(), want = *(uint64_t *) t->data;

        while (cpu_usec() - start < want)
                ;
}

/* 5 ms of work a turn, 20 turns.  Timed on CLOCK_MONOTONIC: reading the thread's CPU clock would
 * bring the kernel's account up to date, as the daemon's own work does not. */
static void on_idle_work(uv_idle_t *h)
{
        unsigned *n = h->data;
        uint64_t start = uv_hrtime();

        while (uv_hrtime() - start < 5000 * 1000)
                ;
        if (++*n == 20)
                (void) uv_idle_stop(h);
}

/* The work in two marked parts, the second nested in the first: the turn names the first. */
static void on_marked_work(uv_timer_t *t)
{
        TURN_PART("test work of %d ms", (int) (*(uint64_t *) t->data / 1000));
        TURN_PART("a part nested in it");
        on_work(t);
}

/* A short marked part, then unmarked work. */
static void on_partly_marked_work(uv_timer_t *t)
{
        {
                TURN_PART("a short part");
        }
        on_work(t);
}

static void on_sleep(uv_timer_t *t)
{
        (void) nanosleep(&(struct timespec){.tv_nsec = 40 * 1000 * 1000}, NULL);
}

/* Is process pid asleep in epoll_wait, as a polling loop is?  /proc/PID/syscall names the system call
 * a blocked task is in. */
static bool polling(pid_t pid)
{
        char path[64], buf[128];
        long nr;
        FILE *f;

        (void) snprintf(path, sizeof(path), "/proc/%d/syscall", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return false;
        bool got = fgets(buf, sizeof(buf), f) && sscanf(buf, "%ld", &nr) == 1;
        (void) fclose(f);
        return got && (nr == SYS_epoll_pwait || nr == SYS_epoll_pwait2
#ifdef SYS_epoll_wait
                       || nr == SYS_epoll_wait
#endif
                      );
}

/*
 * The child of the wake-up check, on its parent's CPU: real-time, then tells ready; on go waits till
 * the parent's loop polls, then holds the CPU 40 ms, through the parent's wake-up.  Exits 2 where it
 * may not be real-time (nothing to show), 1 when the loop never polled.
 */
static int run_realtime_hog(int go, int ready)
{
        pid_t parent = getppid();
        char c;

        if (sched_setscheduler(0, SCHED_FIFO, &(struct sched_param){.sched_priority = 1}) < 0) {
                (void) write(ready, "x", 1);
                return 2;
        }
        if (write(ready, "x", 1) != 1 || read(go, &c, 1) != 1)
                return 1;
        for (unsigned i = 0; !polling(parent); i++) {
                if (i == 5000) /* a second */
                        return 1;
                (void) nanosleep(&(struct timespec){.tv_nsec = 200 * 1000}, NULL);
        }
        uint64_t start = uv_hrtime();
        while (uv_hrtime() - start < 40 * 1000 * 1000)
                ;
        return 0;
}

/* Runs one timer callback, due in ms (plus the turns around it), and returns. */
static void run_one_in(uv_loop_t *loop, uv_timer_cb cb, uint64_t *work_usec, uint64_t ms)
{
        uv_timer_t t;

        CHECK(uv_timer_init(loop, &t) == 0);
        t.data = work_usec;
        CHECK(uv_timer_start(&t, cb, ms, 0) == 0);
        (void) uv_run(loop, UV_RUN_DEFAULT);
        uv_close((uv_handle_t *) &t, NULL);
        (void) uv_run(loop, UV_RUN_DEFAULT);
}

/* The test's own steps between two runs of the loop (a fork, a wait for a child) are in the next
 * turn the watch measures, as the daemon's work would be: run that turn now, with no work, so that
 * the turn a check looks at holds the loop's work alone. */
static void settle_between_turns(uv_loop_t *loop)
{
        uint64_t none = 0;

        run_one_in(loop, on_work, &none, 0);
}

static void run_one(uv_loop_t *loop, uv_timer_cb cb, uint64_t *work_usec)
{
        run_one_in(loop, cb, work_usec, 1);
}

/*
 * The VM's host takes a CPU away now and then without telling the guest (no steal time in
 * /proc/stat on this kind of machine; bench/hiccup has seen one CPU gone for 20 to 77 ms): the loop
 * thread then neither runs nor waits on a runqueue, and the watch counts that time as held, as it
 * counts a sleep in a system call, which it cannot tell apart.  A real-time thread on the loop's
 * CPU, due every millisecond, preempts every ordinary process there at once: only a CPU that is gone
 * makes it late by more than PAUSE_USEC.
 */
#define PAUSE_USEC 2000
#define HOG_TRIES 5

typedef struct PauseWatch {
        int cpu;
        pthread_t thread;
        atomic_bool stop;
        _Atomic uint64_t late_usec; /* the latest wake-up since the last pause_watch_take() */
} PauseWatch;

static void *watch_pauses(void *userdata)
{
        PauseWatch *pw = userdata;
        uint64_t due = now_usec();

        while (!atomic_load(&pw->stop)) {
                due += 1000;
                (void) clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME,
                                       &(struct timespec){.tv_sec = due / 1000000, .tv_nsec = due % 1000000 * 1000},
                                       NULL);
                uint64_t now = now_usec(), late = now > due ? now - due : 0;
                if (late > atomic_load(&pw->late_usec))
                        atomic_store(&pw->late_usec, late);
                due = now;
        }
        return NULL;
}

/* False where the thread may not be real-time: then a pause cannot be told from the loop's work. */
static bool pause_watch_start(PauseWatch *pw)
{
        pthread_attr_t attr;
        cpu_set_t one;
        bool ok;

        CPU_ZERO(&one);
        CPU_SET(pw->cpu, &one);
        CHECK(pthread_attr_init(&attr) == 0);
        CHECK(pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED) == 0);
        CHECK(pthread_attr_setschedpolicy(&attr, SCHED_FIFO) == 0);
        CHECK(pthread_attr_setschedparam(&attr, &(struct sched_param){.sched_priority = 1}) == 0);
        CHECK(pthread_attr_setaffinity_np(&attr, sizeof(one), &one) == 0);
        ok = pthread_create(&pw->thread, &attr, watch_pauses, pw) == 0;
        (void) pthread_attr_destroy(&attr);
        if (!ok)
                printf("# no real-time thread here: a pause of the machine reads as the loop's work\n");
        return ok;
}

static void pause_watch_stop(PauseWatch *pw)
{
        atomic_store(&pw->stop, true);
        CHECK(pthread_join(pw->thread, NULL) == 0);
}

typedef struct HogTry {
        LoopTurn longest;
        uint64_t n_long, n_waited; /* the watch's counts before the try */
        uint64_t late_usec;        /* the CPU's longest pause during the try */
} HogTry;

/* One turn of 12 ms of work while a process spins on the same CPU. */
static HogTry try_beside_a_hog(uv_loop_t *loop, LoopWatch *w, PauseWatch *pw)
{
        uint64_t work = 12 * 1000;

        pid_t hog = fork();
        CHECK(hog >= 0);
        if (hog == 0)
                for (;;)
                        ;
        settle_between_turns(loop);
        HogTry t = {.n_long = w->n_long, .n_waited = w->n_waited};
        w->longest = w->most_waiting = (LoopTurn){};
        atomic_store(&pw->late_usec, 0);
        run_one(loop, on_work, &work);
        t.late_usec = atomic_load(&pw->late_usec);
        (void) kill(hog, SIGKILL);
        (void) waitpid(hog, NULL, 0);
        t.longest = w->longest;
        return t;
}

/*
 * Three slicers ready at once, as the uevent burst, deferred changes and a Rescan can be, which took
 * 4 ms each with budgets of their own: they share the turn (base/turn.h) rather than take 12 ms of
 * it, and each goes on in every turn.
 */
#define SLICERS 3
#define SLICER_TURNS 20

typedef struct Slicers {
        uv_idle_t idle[SLICERS];
        uv_prepare_t turns; /* counts the turns: after the watch's, which began each one */
        unsigned turn;
        /* Each slicer's units of work and µs on a CPU, turn by turn: its CPU time, not its wall
         * time, so that tests running beside this one, taking the CPU away mid-slice, do not count
         * as its work. */
        unsigned units[SLICER_TURNS + 1][SLICERS];
        uint64_t work[SLICER_TURNS + 1][SLICERS];
} Slicers;

static void on_slicer(uv_idle_t *h)
{
        Slicers *s = h->data;
        size_t me = (size_t) (h - s->idle);
        uint64_t start = uv_hrtime() / 1000, cpu_start = cpu_usec();

        do {
                uint64_t unit = uv_hrtime();
                while (uv_hrtime() - unit < 100 * 1000)
                        ;
                s->units[s->turn][me]++;
        } while (!turn_slice_over(start));
        s->work[s->turn][me] += cpu_usec() - cpu_start;
}

static void on_slicers_turn(uv_prepare_t *h)
{
        Slicers *s = h->data;

        if (++s->turn < SLICER_TURNS)
                return;
        for (size_t i = 0; i < SLICERS; i++)
                (void) uv_idle_stop(&s->idle[i]);
        (void) uv_prepare_stop(h);
}

static void test_slicers_share_a_turn(uv_loop_t *loop)
{
        Slicers *s = calloc(1, sizeof(Slicers));
        unsigned over = 0;

        /* The arithmetic: the turn's work begins with its first slice; a later one has its minimum. */
        turn_next();
        CHECK(turn_slice_end(1000) == 1000 + TURN_WORK_USEC);
        CHECK(turn_slice_end(1000 + TURN_WORK_USEC - 200) ==
              1000 + TURN_WORK_USEC - 200 + TURN_SLICE_MIN_USEC);
        turn_next();
        CHECK(turn_slice_end(90000) == 90000 + TURN_WORK_USEC);

        for (size_t i = 0; i < SLICERS; i++) {
                CHECK(uv_idle_init(loop, &s->idle[i]) == 0);
                s->idle[i].data = s;
                CHECK(uv_idle_start(&s->idle[i], on_slicer) == 0);
        }
        CHECK(uv_prepare_init(loop, &s->turns) == 0);
        s->turns.data = s;
        CHECK(uv_prepare_start(&s->turns, on_slicers_turn) == 0);
        (void) uv_run(loop, UV_RUN_DEFAULT);
        for (size_t i = 0; i < SLICERS; i++)
                uv_close((uv_handle_t *) &s->idle[i], NULL);
        uv_close((uv_handle_t *) &s->turns, NULL);
        (void) uv_run(loop, UV_RUN_DEFAULT);

        for (unsigned t = 0; t < SLICER_TURNS; t++) {
                uint64_t sum = 0;
                for (size_t i = 0; i < SLICERS; i++) {
                        CHECK(s->units[t][i] >= 1); /* every slicer, every turn */
                        sum += s->work[t][i];
                }
                /* About the turn's budget and a minimum for each later slicer, not 3 x 4 ms. */
                over += sum > TURN_WORK_USEC + (SLICERS - 1) * TURN_SLICE_MIN_USEC + 500;
        }
        CHECK(over <= 2);
        free(s);
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
        CHECK(w.n_long == 0 && w.longest.held_usec < 20 * 1000);

        /* Counted as they are, not to the scheduler's tick: schedstat's time on a CPU lags by up to one
         * (4 ms at HZ=250), which made turns of 5 ms of work read as 8 or 9 when they came back to back,
         * as a Rescan's slices do, with no switch in between to bring it up to date. */
        uv_idle_t idle;
        unsigned n_turns = 0;
        CHECK(uv_idle_init(&loop, &idle) == 0);
        idle.data = &n_turns;
        w.longest = (LoopTurn){};
        CHECK(uv_idle_start(&idle, on_idle_work) == 0);
        (void) uv_run(&loop, UV_RUN_DEFAULT);
        uv_close((uv_handle_t *) &idle, NULL);
        (void) uv_run(&loop, UV_RUN_DEFAULT);
        /* Its time on a CPU, the one that decides what a turn held where no one else wants the CPU: never
         * more than its wall time (the clocks are read a few µs apart). */
        CHECK(w.longest.held_usec >= 1000 && w.longest.cpu_usec <= w.longest.busy_usec + 500);
        CHECK(w.n_long == 0);

        /* A turn that works 40 ms: one long turn, of at least that. */
        work = 40 * 1000;
        run_one(&loop, on_work, &work);
        CHECK(w.n_long == 1);
        CHECK(w.longest.held_usec >= 40 * 1000 && w.longest.held_usec < 1000 * 1000);

        CHECK(streq(w.longest.part.what, ""));

        /* Its parts marked (base/turn.h): the longest turn names its longest part, nested parts as
         * theirs. */
        w.longest = (LoopTurn){};
        work = 40 * 1000;
        run_one(&loop, on_marked_work, &work);
        CHECK(streq(w.longest.part.what, "test work of 40 ms"));
        CHECK(w.longest.part.usec >= 40 * 1000 && w.longest.part.usec <= w.longest.busy_usec);
        /* The clocks are read a few µs apart. */
        CHECK(w.longest.end_usec > 0 && w.longest.busy_usec + 1000 >= w.longest.held_usec);

        /* A part ends where its block does: the work after it is not named for it. */
        w.longest = (LoopTurn){};
        run_one(&loop, on_partly_marked_work, &work);
        CHECK(streq(w.longest.part.what, "a short part") && w.longest.part.usec < 20 * 1000);
        CHECK(w.n_long == 3);

        /* A shorter long turn is counted, and the longest stays. */
        LoopTurn longest = w.longest;
        work = 25 * 1000;
        run_one(&loop, on_work, &work);
        CHECK(w.n_long == 4 && w.longest.held_usec == longest.held_usec);

        /* Sleeping 40 ms inside a system call holds the loop as working does (a sysfs read waiting on
         * a kernel lock).  Told apart from waiting for a CPU only with schedstat: without it, the
         * watch counts CPU time alone.  Due at once, not after a poll: libuv counts a wake-up's wait
         * for a CPU as time in epoll_wait, and schedstat as waiting, so on a busy machine the turn
         * would read short by that wait (the watch's known blind spot: see loop-watch.h). */
        w.longest = (LoopTurn){};
        run_one_in(&loop, on_sleep, NULL, 0);
        if (w.schedstat_fd >= 0) {
                CHECK(w.n_long == 5);
                CHECK(w.longest.held_usec >= 35 * 1000 && w.longest.cpu_usec < 10 * 1000);
        } else
                CHECK(w.n_long == 4);

        /* 12 ms of work while another process keeps the same CPU busy: the turn takes about twice
         * that, half of it waiting to run, which is the machine's doing, not the loop's: told apart.
         * A try that the host paused is measured again (see PauseWatch): the pause is held time, as
         * the watch must count it, and a watch that did not tell the waits apart reads at least
         * 24 ms in every try. */
        cpu_set_t one;
        CPU_ZERO(&one);
        int cpu = sched_getcpu();
        CHECK(cpu >= 0);
        CPU_SET(cpu, &one);
        CHECK(sched_setaffinity(0, sizeof(one), &one) == 0);
        PauseWatch pauses = {.cpu = cpu};
        bool pauses_seen = pause_watch_start(&pauses);
        HogTry hogged;
        for (unsigned try = 1;; try++) {
                hogged = try_beside_a_hog(&loop, &w, &pauses);
                if (hogged.longest.held_usec < 20 * 1000 || !pauses_seen || hogged.late_usec < PAUSE_USEC ||
                    try == HOG_TRIES)
                        break;
                printf("# try %u: held %" PRIu64 " ms, the CPU taken away for %" PRIu64 " ms meanwhile\n", try,
                       hogged.longest.held_usec / 1000, hogged.late_usec / 1000);
        }
        pause_watch_stop(&pauses);
        CHECK(hogged.longest.cpu_usec >= 12 * 1000);
        if (w.schedstat_fd >= 0) {
                CHECK(hogged.longest.waiting_usec > 0);
                CHECK(hogged.longest.busy_usec < 20 * 1000 ||
                      (w.n_waited > hogged.n_waited && w.most_waiting.waiting_usec >= hogged.longest.waiting_usec));
        }
        CHECK(hogged.longest.held_usec < 20 * 1000);
        CHECK(w.n_long == hogged.n_long);
        uint64_t n_long = w.n_long, n_waited;

        /* A wake-up that waits: the loop's timer is due while a real-time process holds its CPU.  No
         * work of the loop's, but a caller would have waited as long. */
        int go[2], ready[2];
        CHECK(pipe(go) == 0 && pipe(ready) == 0);
        pid_t rt = fork();
        CHECK(rt >= 0);
        if (rt == 0)
                _exit(run_realtime_hog(go[0], ready[1]));
        /* Only once it is real-time: a child still waiting for its first run behind other work (a
         * parallel test suite) would spin as an ordinary process and take the CPU only in turns. */
        char c;
        CHECK(read(ready[0], &c, 1) == 1);
        settle_between_turns(&loop);
        n_long = w.n_long;
        n_waited = w.n_waited;
        w.most_waiting = (LoopTurn){}; /* the hog's turn above waited too, maybe longer */
        CHECK(write(go[1], "x", 1) == 1);
        work = 0;
        uv_update_time(&loop);                 /* due 10 ms from now, not from when the loop last ran */
        run_one_in(&loop, on_work, &work, 10); /* polling when the child starts to spin */
        int status;
        CHECK(waitpid(rt, &status, 0) == rt && WIFEXITED(status));
        CHECK(WEXITSTATUS(status) != 1); /* it saw the loop poll */
        if (w.schedstat_fd >= 0 && WEXITSTATUS(status) == 0) {
                CHECK(w.n_waited > n_waited);
                CHECK(w.most_waiting.waiting_usec >= 20 * 1000 && w.most_waiting.busy_usec < 20 * 1000);
        }
        CHECK(w.n_long == n_long);
        close(go[0]);
        close(go[1]);
        close(ready[0]);
        close(ready[1]);

        test_slicers_share_a_turn(&loop);

        /* The watch alone does not keep the loop running. */
        CHECK(uv_run(&loop, UV_RUN_NOWAIT) == 0);

        loop_watch_stop(&w);
        (void) uv_run(&loop, UV_RUN_DEFAULT);
        CHECK(uv_loop_close(&loop) == 0);
        return tests_summary();
}
