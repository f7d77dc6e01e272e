/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <uv.h>

#include "base/log.h"
#include "differential.h"
#include "sysfs/scan.h"

/*
 * The differential test: what the live layer makes of any sequence of changes and events must be
 * what a fresh scan of the same tree gives, once a rescan has run; and a client that believed every
 * LiveOps call on the way must hold exactly that model.  A sequence is a random mix of the kernel's
 * changes to sysfs (with their events late, out of order or lost), events nobody should send, lost
 * events, rescans in slices while events arrive, and the loop turning.
 *
 *   test-differential [--count=N] [--seed=S] [--only=I] [--chain=C] [--steps=MAX] [--verify-every=K]
 *                     [--whole-fixture] [--verbose]
 *
 * Sequences run in chains of C on one live layer, as a daemon runs for long; each chain starts from
 * the standard fixture and a fresh scan.  Sequence I of seed S always does the same after the ones
 * before it in its chain: a failure prints the seed, I and the chain's steps, and --seed=S --only=I
 * runs that chain up to I again (with --verbose, with the daemon's debug log).  --whole-fixture keeps
 * every attribute file of the fixture (slower).  The first steps come before the warm-up has read
 * everything, as a client's first call can: the client's readings at the start are the first ones
 * the live layer keeps, as GetManagedObjects' are.
 */

typedef struct Options {
        unsigned count;
        uint64_t seed;
        long only;
        unsigned chain;
        bool whole;
        unsigned max_steps;
        unsigned verify_every;
        bool verbose;
} Options;

typedef struct Stats {
        unsigned sequences, steps, events, changes, rescans;
} Stats;

static uint64_t sequence_seed(uint64_t seed, unsigned i)
{
        Rng r = {seed ^ (UINT64_C(0x5851f42d4c957f2d) * (i + 1))};
        return rng_next(&r);
}

static void on_rescan_done(int result, void *userdata)
{
        *(int *) userdata = result < 0 ? result : 1;
}

/* The rescan a drained source started runs in slices: to its end, then one more. */
static int rescan_to_the_end(Live *l, uv_loop_t *loop)
{
        int r = live_rescan(l), done = 0;

        if (r != -EBUSY)
                return r;
        r = live_rescan_start(l, on_rescan_done, &done);
        if (r < 0)
                return r;
        while (!done)
                (void) uv_run(loop, UV_RUN_NOWAIT);
        return done < 0 ? done : live_rescan(l);
}

static void apply(Live *l, uv_loop_t *loop, Step *st, Stats *stats)
{
        int r;

        switch (st->kind) {
        case STEP_UEVENT:
                for (size_t i = 0; i < st->n_events; i++) {
                        /* As the source calls it: the handler owns the event. */
                        live_on_uevent(NULL, TAKE_PTR(st->events[i]), l);
                        stats->events++;
                }
                st->n_events = 0;
                break;
        case STEP_LOST:
                live_on_lost(NULL, l);
                break;
        case STEP_DRAINED:
                live_on_drained(NULL, l);
                break;
        case STEP_LOOP:
                for (unsigned i = 0; i < st->turns; i++)
                        (void) uv_run(loop, UV_RUN_NOWAIT);
                break;
        case STEP_RESCAN:
                r = live_rescan(l);
                if (r < 0 && r != -EBUSY)
                        fprintf(stderr, "live_rescan: %s\n", strerror(-r));
                stats->rescans++;
                break;
        case STEP_NOTHING:
                stats->changes++;
                break;
        }
}

/* One live layer on one model, kept across the sequences of a chain, as a daemon runs for long. */
typedef struct Instance {
        Model *model;
        EventLog *log;
        Live *live;
        Checker checker;
        bool started;
} Instance;

static void instance_new(Instance *in, const Sysfs *s, uv_loop_t *loop)
{
        *in = (Instance){};
        if (model_new(&in->model) < 0 || eventlog_new(64, 1, &in->log) < 0)
                abort();
        checker_init(&in->checker, s, in->model);
        LiveConfig config = {
                        .loop = loop,
                        .sysfs = (Sysfs *) s,
                        .model = in->model,
                        .events = in->log,
                        .ops = &checker_ops,
                        .userdata = &in->checker,
        };
        if (live_new(&config, &in->live) < 0 || scan_all(s, in->model) < 0)
                abort();
}

static void instance_start(Instance *in, World *w)
{
        world_log(w, "start");
        if (live_start(in->live) < 0)
                abort();
        (void) checker_start(&in->checker, in->live);
        in->started = true;
}

static void instance_free(Instance *in, uv_loop_t *loop)
{
        /* Live goes with its close callbacks: the loop runs once more before the model goes. */
        live_free(in->live);
        for (int i = 0; i < 4; i++)
                (void) uv_run(loop, UV_RUN_NOWAIT);
        model_free(in->model);
        eventlog_free(in->log);
        checker_done(&in->checker);
}

/* One sequence on a running instance; returns the number of problems found. */
static size_t run_sequence(Instance *in, World *w, const Sysfs *s, uv_loop_t *loop, const Options *o,
                           unsigned index, bool last_of_chain, Stats *stats)
{
        Rng rng = {sequence_seed(o->seed, index)};
        Checker *c = &in->checker;
        Model *fresh = NULL;
        unsigned n_steps = 1 + rng_below(&rng, o->max_steps), before_start = 0;
        Step st;
        int r;

        world_log(w, "-- sequence %u", index);
        /* Events can arrive between the scan and the name: applied before anything is announced. */
        if (!in->started && rng_percent(&rng, 20))
                before_start = MIN(1 + rng_below(&rng, 4), n_steps);
        for (unsigned i = 0; i < n_steps; i++) {
                if (!in->started && i == before_start)
                        instance_start(in, w);
                if (world_step(w, &rng, &st) < 0)
                        abort();
                apply(in->live, loop, &st, stats);
                step_done(&st);
                stats->steps++;
        }
        if (!in->started)
                instance_start(in, w);
        world_flush(w, &rng, &st);
        apply(in->live, loop, &st, stats);
        step_done(&st);

        world_log(w, "final rescan");
        r = rescan_to_the_end(in->live, loop);
        if (r < 0)
                checker_problem(c, "the final rescan failed: %s", strerror(-r));
        if (model_new(&fresh) < 0 || scan_all(s, fresh) < 0)
                abort();
        checker_compare(c, fresh);
        model_free(fresh);

        /* In line now: a second rescan finds nothing and says nothing.  It reads everything once
         * more: at the end of a chain, and now and then. */
        if (last_of_chain || rng_percent(&rng, 25)) {
                uint64_t calls = c->n_calls, last = c->last_seqnum;
                world_log(w, "second rescan");
                r = live_rescan(in->live);
                if (r != 0 || c->n_calls != calls || c->last_seqnum != last)
                        checker_problem(c,
                                        "a second rescan returned %d, made %" PRIu64 " calls and %" PRIu64
                                        " events",
                                        r, c->n_calls - calls, c->last_seqnum - last);
        }
        if (eventlog_last_seqnum(in->log) != c->last_seqnum)
                checker_problem(c, "the log's last event is %" PRIu64 ", the last one announced %" PRIu64,
                                eventlog_last_seqnum(in->log), c->last_seqnum);
        return c->n_problems;
}

static void report(const World *w, const Checker *c, const Options *o, unsigned index, unsigned first)
{
        fprintf(stderr,
                "\nSequence %u of seed %" PRIu64
                ", in the chain from sequence %u (run it again: --seed=%" PRIu64 " --only=%u --chain=%u):\n",
                index, o->seed, first, o->seed, index, o->chain);
        for (size_t i = 0; i < w->n_log; i++)
                fprintf(stderr, "  %s\n", w->log[i]);
        fprintf(stderr, "found:\n");
        for (size_t i = 0; i < c->n_problems && i < 40; i++)
                fprintf(stderr, "  %s\n", c->problems[i]);
        if (c->n_problems > 40)
                fprintf(stderr, "  … and %zu more\n", c->n_problems - 40);
}

/* Sequences first..last on one instance; stops at the first that fails.  Returns how many failed. */
static unsigned run_chain(World *w, const Sysfs *s, uv_loop_t *loop, const Options *o, unsigned first,
                          unsigned last, Stats *stats)
{
        Instance in;
        unsigned failed = 0;

        instance_new(&in, s, loop);
        for (unsigned i = first; i <= last; i++) {
                stats->sequences++;
                if (run_sequence(&in, w, s, loop, o, i, i == last, stats) == 0)
                        continue;
                report(w, &in.checker, o, i, first);
                failed++;
                break; /* what follows would only repeat it */
        }
        instance_free(&in, loop);
        if (world_reset(w) < 0)
                abort();
        return failed;
}

static int parse_options(int argc, char **argv, Options *o)
{
        static const struct option options[] = {
                        {"count", required_argument, NULL, 'c'},
                        {"seed", required_argument, NULL, 's'},
                        {"only", required_argument, NULL, 'o'},
                        {"steps", required_argument, NULL, 'n'},
                        {"verify-every", required_argument, NULL, 'v'},
                        {"verbose", no_argument, NULL, 'V'},
                        {"chain", required_argument, NULL, 'C'},
                        {"whole-fixture", no_argument, NULL, 'W'},
                        {},
        };
        int c;

        *o = (Options){.count = 1000, .only = -1, .chain = 10, .max_steps = 30, .verify_every = 10};
        if (getrandom(&o->seed, sizeof(o->seed), 0) != sizeof(o->seed))
                o->seed = (uint64_t) time(NULL);
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        o->count = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 's':
                        o->seed = strtoull(optarg, NULL, 0);
                        break;
                case 'o':
                        o->only = strtol(optarg, NULL, 10);
                        break;
                case 'n':
                        o->max_steps = MAX((unsigned) strtoul(optarg, NULL, 10), 1u);
                        break;
                case 'v':
                        o->verify_every = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'V':
                        o->verbose = true;
                        break;
                case 'W':
                        o->whole = true;
                        break;
                case 'C':
                        o->chain = MAX((unsigned) strtoul(optarg, NULL, 10), 1u);
                        break;
                default:
                        return -EINVAL;
                }
        return 0;
}

int main(int argc, char **argv)
{
        Options o;
        World w = {};
        Sysfs s = {.root_fd = -1};
        Stats stats = {};
        uv_loop_t loop;
        unsigned failed = 0;
        struct timespec t0, t1;
        int r;

        if (parse_options(argc, argv, &o) < 0) {
                fprintf(stderr,
                        "usage: %s [--count=N] [--seed=S] [--only=I] [--chain=C] [--steps=MAX] "
                        "[--verify-every=K] [--whole-fixture] [--verbose]\n",
                        argv[0]);
                return 2;
        }
        /* The hostile events make the daemon log plenty; that is what they are for. */
        log_set_max_level(o.verbose ? LOG_DEBUG : LOG_EMERG);
        printf("seed %" PRIu64 "\n", o.seed);
        fflush(stdout);

        r = tree_new(fixture_tmpdir(), o.whole, &w.tree);
        if (r < 0) {
                fprintf(stderr, "Cannot make the fixture: %s\n", strerror(-r));
                return 1;
        }
        if (sysfs_open(w.tree.root, &s) < 0 || uv_loop_init(&loop) < 0)
                abort();
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (unsigned first = 0, n_chains = 0; first < o.count && failed < 3; first += o.chain, n_chains++) {
                unsigned last = MIN(first + o.chain, o.count) - 1;

                /* --only=I: the chain that leads to I, up to I. */
                if (o.only >= 0) {
                        first = (unsigned) o.only - (unsigned) o.only % o.chain;
                        last = (unsigned) o.only;
                }
                failed += run_chain(&w, &s, &loop, &o, first, last, &stats);
                if (o.only >= 0)
                        break;
                /* Whatever the test changed, it put back: or the next chains would start elsewhere. */
                if (o.verify_every > 0 && (n_chains + 1) % o.verify_every == 0 && tree_verify(&w.tree) < 0) {
                        failed++;
                        break;
                }
        }
        if (failed == 0 && tree_verify(&w.tree) < 0)
                failed++;
        clock_gettime(CLOCK_MONOTONIC, &t1);

        printf("%u sequences (%u steps: %u tree changes, %u events applied, %u unparsable, %u rescans) in "
               "%.1f s; "
               "%u failed\n",
               stats.sequences, stats.steps, stats.changes, stats.events, w.n_unparsable, stats.rescans,
               (double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9, failed);
        sysfs_close(&s);
        (void) uv_loop_close(&loop);
        tree_done(&w.tree);
        return failed > 0 ? 1 : 0;
}
