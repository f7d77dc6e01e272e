/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * blkmodelctl: main, global options and command dispatch.  Each command
 * family lives in its own cmd-*.c file.
 */

#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-model.h"
#include "output.h"

#include "common/time-util.h"
#include "common/util.h"

#ifndef BLKMODEL_VERSION
#define BLKMODEL_VERSION "unknown"
#endif

static const char *program = "blkmodelctl";

int ctl_fail(const char *fmt, ...)
{
        _cleanup_(freep) char *msg = NULL;
        va_list ap;
        int r;

        /* Whatever went to stdout so far must not interleave with this. */
        (void) fflush(stdout);
        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", program, fmt);
                return EXIT_FAIL;
        }
        /* One line, whatever a daemon's error message contains: scripts
         * read exactly one line of stderr per failure. */
        for (char *p = msg; *p; p++)
                if (*p == '\n' || *p == '\r')
                        *p = ' ';
        fprintf(stderr, "%s: %s\n", program, msg);
        return EXIT_FAIL;
}

static int ctl_usage(const char *verb, const char *fmt, ...) _printf_(2, 3);
static int ctl_usage(const char *verb, const char *fmt, ...)
{
        va_list ap;

        fprintf(stderr, "%s%s%s: ", program, verb ? " " : "", strempty(verb));
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, " (see '%s%s%s --help')\n", program, verb ? " " : "", strempty(verb));
        return EXIT_USAGE;
}

int ctl_bus(Ctl *ctl, sd_bus **ret)
{
        int r;

        if (!ctl->bus) {
                r = bus_open(ctl->bus_kind, ctl->address, NULL, &ctl->bus);
                if (r < 0) {
                        if (ctl->bus_kind == BUS_KIND_ADDRESS)
                                return ctl_fail("Failed to connect to bus at %s: %s", ctl->address,
                                                strerror(-r));
                        return ctl_fail("Failed to connect to the %s: %s", bus_kind_to_string(ctl->bus_kind),
                                        strerror(-r));
                }
                /* set and trigger may need polkit to ask the user. */
                if (isatty(STDIN_FILENO) == 1)
                        (void) sd_bus_set_allow_interactive_authorization(ctl->bus, true);
        }
        *ret = ctl->bus;
        return EXIT_OK;
}

int ctl_resolve(Ctl *ctl, const char *spec, sd_bus **ret_bus, char **ret_path)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus *bus = NULL;
        int r;

        r = ctl_bus(ctl, &bus);
        if (r != EXIT_OK)
                return r;

        r = bus_resolve(bus, spec, ret_path, &error);
        if (r < 0)
                return bus_report_resolve_error(&error, r, spec);
        *ret_bus = bus;
        return EXIT_OK;
}

enum {
        ARG_SYSTEM = 0x100,
        ARG_SESSION,
        ARG_ADDRESS,
        ARG_JSON,
        ARG_NO_LEGEND,
        ARG_VERSION,
        ARG_SINCE,
        ARG_ACTION,
        ARG_REMOVED,
        ARG_HELP = 'h',
        ARG_BYTES = 'b',
        ARG_PROPERTIES = 'p',
        ARG_TIMEOUT = 't',
};

/* Which command options a verb takes. */
enum {
        OPT_BYTES = 1 << 0,
        OPT_SINCE = 1 << 1,
        OPT_ACTION = 1 << 2,
        OPT_PROPERTIES = 1 << 3,
        OPT_TIMEOUT = 1 << 4,
        OPT_REMOVED = 1 << 5,
};

static const struct option options[] = {
                {"help", no_argument, NULL, ARG_HELP},
                {"version", no_argument, NULL, ARG_VERSION},
                {"system", no_argument, NULL, ARG_SYSTEM},
                {"session", no_argument, NULL, ARG_SESSION},
                {"user", no_argument, NULL, ARG_SESSION},
                {"address", required_argument, NULL, ARG_ADDRESS},
                {"json", no_argument, NULL, ARG_JSON},
                {"no-legend", no_argument, NULL, ARG_NO_LEGEND},
                {"bytes", no_argument, NULL, ARG_BYTES},
                {"since", required_argument, NULL, ARG_SINCE},
                {"action", required_argument, NULL, ARG_ACTION},
                {"properties", no_argument, NULL, ARG_PROPERTIES},
                {"timeout", required_argument, NULL, ARG_TIMEOUT},
                {"removed", no_argument, NULL, ARG_REMOVED},
                {},
};

typedef struct Verb {
        const char *name;
        int min_args;
        int max_args;
        unsigned options;
        int (*run)(Ctl *ctl, char **args, int n_args);
        const char *synopsis;
        const char *summary;
        const char *help;
} Verb;

static const Verb verbs[] = {
                {"list", 0, 0, OPT_BYTES, cmd_list, "[--bytes]",
                 "List block devices like lsblk: NAME MAJ:MIN SIZE RO TYPE SCHEDULER.",
                 "Partitions and stacked devices (dm, md: the holders) are indented under\n"
                 "the devices they sit on; a device stacked on several appears under each.\n"
                 "\n"
                 "  -b --bytes          Print SIZE in bytes instead of 1K, 1.5G ...\n"},
                {"tree", 0, 1, 0, cmd_tree, "[OBJECT]",
                 "Show the kobject hierarchy: name, ktype, kset and the device link.",
                 "Without OBJECT the whole model (the block and devices ksets), else the\n"
                 "hierarchy below OBJECT.\n"},
                {"show", 1, 1, 0, cmd_show, "OBJECT",
                 "Show every property of an object, grouped by interface.",
                 "The model's typed properties (CamelCase) are listed apart from the raw\n"
                 "sysfs attributes of each interface.\n"},
                {"get", 2, 2, 0, cmd_get, "OBJECT ATTR", "Print one attribute or typed property.",
                 "ATTR is a sysfs attribute file name (read_ahead_kb, power/control), its\n"
                 "D-Bus member name, or a typed property (Size, Scheduler). Arrays print\n"
                 "one item per line, dictionaries KEY=VALUE per line.\n"},
                {"set", 3, 3, 0, cmd_set, "OBJECT ATTR VALUE",
                 "Write an attribute (or Queue.Scheduler) through blkmodeld.",
                 "The daemon writes the value to sysfs and publishes what the kernel\n"
                 "stored; --json prints that value. Use -- before a VALUE that starts\n"
                 "with '-'.\n"},
                {"monitor", 0, 0, OPT_SINCE | OPT_ACTION | OPT_PROPERTIES, cmd_monitor,
                 "[--since=SEQ] [--action=LIST] [--properties]",
                 "Print Uevent signals as they come, like udevadm monitor.",
                 "  --since=SEQ         First replay the retained events after SEQ, then\n"
                 "                      continue live with no gap and no repeat\n"
                 "  --action=LIST       Only these actions (comma-separated: add,remove,...)\n"
                 "  -p --properties     Print each event's environment too\n"
                 "\n"
                 "Missed events (a seqnum gap) are fetched with GetEvents; events that\n"
                 "expired from the daemon's window and daemon restarts are reported.\n"
                 "With --json, one JSON object per line; notices have \"type\" != \"event\".\n"
                 "Stop with Ctrl-C.\n"},
                {"wait", 1, 1, OPT_TIMEOUT | OPT_REMOVED, cmd_wait, "OBJECT [--timeout=SEC] [--removed]",
                 "Wait until OBJECT exists (or, with --removed, is gone).",
                 "  -t --timeout=SEC    Give up after SEC seconds (exit status 1); default:\n"
                 "                      wait forever\n"
                 "  --removed           Wait for the object to be gone\n"
                 "\n"
                 "Race-free: the signals are subscribed to before the first look. If\n"
                 "blkmodeld is not running yet, waits for it to start.\n"},
                {"events", 0, 0, OPT_SINCE | OPT_ACTION | OPT_PROPERTIES, cmd_events,
                 "[--since=SEQ] [--action=LIST] [--properties]",
                 "Print the events the daemon retains (after SEQ).",
                 "  --since=SEQ         Only events with a seqnum above SEQ (default 0)\n"
                 "  --action=LIST       Only these actions (comma-separated)\n"
                 "  -p --properties     Print each event's environment too\n"},
                {"dump", 0, 0, 0, cmd_dump, "", "Print the whole model (GetManagedObjects) as JSON.", ""},
                {"trigger", 1, 2, 0, cmd_trigger, "OBJECT [ACTION]",
                 "Make the kernel emit a uevent for OBJECT (default ACTION: change).",
                 "ACTION is one of add, remove, change, move, online, offline, bind,\n"
                 "unbind. Privileged, like udevadm trigger.\n"},
};

static const Verb *verb_find(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, name))
                        return verbs + i;
        return NULL;
}

static void help_main(void)
{
        printf("%s [OPTIONS] COMMAND ...\n\n"
               "Query and watch the Linux block kobject model that blkmodeld publishes\n"
               "on D-Bus as %s.\n\n"
               "Commands:\n",
               program, BLKMODEL_BUS_NAME);
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++) {
                const Verb *v = verbs + i;
                /* Long synopses are for COMMAND --help; keep this one screen wide. */
                const char *syn = strlen(v->synopsis) <= 17 ? v->synopsis
                                  : v->min_args > 0         ? "OBJECT [OPTIONS]"
                                                            : "[OPTIONS]";
                _cleanup_(freep) char *line = NULL;

                /* Short of memory, the name alone will do; asprintf() leaves line undefined then. */
                if (asprintf(&line, "%s %s", v->name, syn) < 0)
                        line = NULL;
                printf("  %-24s %s\n", line ?: v->name, v->summary);
        }
        printf("\n"
               "OBJECT is anything Manager.Resolve accepts: sda1, /dev/sda1, 8:1,\n"
               "/sys/block/sda/queue, sda/queue/iosched, a devpath or an object path.\n\n"
               "Options:\n"
               "  -h --help           Show this help (COMMAND --help: the command's)\n"
               "     --version        Show the version\n"
               "     --system         Talk to blkmodeld on the system bus (default)\n"
               "     --session        Talk to blkmodeld on the session bus\n"
               "     --address=ADDR   Talk to blkmodeld on the bus at ADDR\n"
               "     --json           Print JSON (monitor: one object per line)\n"
               "     --no-legend      Print no column headings\n\n"
               "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

static void help_verb(const Verb *v)
{
        printf("%s [OPTIONS] %s%s%s\n\n%s\n", program, v->name, isempty(v->synopsis) ? "" : " ", v->synopsis,
               v->summary);
        if (!isempty(v->help))
                printf("\n%s", v->help);
        printf("\nGlobal options (%s --help): --system, --session, --address=ADDR,\n"
               "--json, --no-legend.\n",
               program);
}

static const char *const known_actions[] = {
                "add", "remove", "change", "move", "online", "offline", "bind", "unbind", NULL,
};

static bool action_is_known(const char *a, size_t n)
{
        for (const char *const *k = known_actions; *k; k++)
                if (strlen(*k) == n && startswith(a, *k))
                        return true;
        return false;
}

bool ctl_action_is_known(const char *action)
{
        return action_is_known(action, strlen(action));
}

static bool action_list_is_valid(const char *list)
{
        const char *p = list;

        for (;;) {
                size_t n = strcspn(p, ",");

                if (!action_is_known(p, n))
                        return false;
                if (p[n] == '\0')
                        return true;
                p += n + 1;
        }
}

static int parse_u64(const char *s, uint64_t *ret)
{
        char *end;
        unsigned long long v;

        if (isempty(s) || s[0] == '-' || s[0] == '+')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0 || *end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_timeout(const char *s, uint64_t *ret)
{
        char *end;
        double d;

        if (streq(s, "infinity")) {
                *ret = USEC_INFINITY;
                return 0;
        }
        errno = 0;
        d = strtod(s, &end);
        if (errno != 0 || end == s || *end != '\0' || !isfinite(d) || d < 0 || d > 1e9)
                return -EINVAL;
        *ret = (uint64_t) (d * USEC_PER_SEC);
        return 0;
}

/* Applies one option; returns EXIT_OK or EXIT_USAGE. */
static int apply_option(Ctl *ctl, const Verb *v, int c, const char *arg, const char *raw)
{
        const char *vname = v ? v->name : NULL;
        unsigned need = 0;

        switch (c) {
        case ARG_BYTES:
                need = OPT_BYTES;
                break;
        case ARG_SINCE:
                need = OPT_SINCE;
                break;
        case ARG_ACTION:
                need = OPT_ACTION;
                break;
        case ARG_PROPERTIES:
                need = OPT_PROPERTIES;
                break;
        case ARG_TIMEOUT:
                need = OPT_TIMEOUT;
                break;
        case ARG_REMOVED:
                need = OPT_REMOVED;
                break;
        }
        if (need && (!v || !(v->options & need)))
                return ctl_usage(vname, "option '%s' is not valid here", raw);

        switch (c) {
        case ARG_SYSTEM:
                ctl->bus_kind = BUS_KIND_SYSTEM;
                break;
        case ARG_SESSION:
                ctl->bus_kind = BUS_KIND_SESSION;
                break;
        case ARG_ADDRESS:
                ctl->bus_kind = BUS_KIND_ADDRESS;
                ctl->address = arg;
                break;
        case ARG_JSON:
                ctl->json = true;
                break;
        case ARG_NO_LEGEND:
                ctl->legend = false;
                break;
        case ARG_BYTES:
                ctl->bytes = true;
                break;
        case ARG_SINCE:
                if (parse_u64(arg, &ctl->since) < 0)
                        return ctl_usage(vname, "invalid --since '%s': expected a seqnum", arg);
                ctl->since_set = true;
                break;
        case ARG_ACTION:
                if (!action_list_is_valid(arg))
                        return ctl_usage(vname,
                                         "invalid --action '%s': expected a list of "
                                         "add,remove,change,move,online,offline,bind,unbind",
                                         arg);
                ctl->actions = arg;
                break;
        case ARG_PROPERTIES:
                ctl->properties = true;
                break;
        case ARG_TIMEOUT:
                if (parse_timeout(arg, &ctl->timeout_usec) < 0)
                        return ctl_usage(vname, "invalid --timeout '%s': expected seconds", arg);
                break;
        case ARG_REMOVED:
                ctl->removed = true;
                break;
        default:
                return ctl_usage(vname, "unhandled option '%s'", raw);
        }
        return EXIT_OK;
}

/* getopt with opterr off: turn its '?' and ':' into one usage line. */
static int option_error(const Verb *v, int c, char **argv)
{
        const char *vname = v ? v->name : NULL;
        const char *raw = argv[optind - 1];

        if (c == ':')
                return ctl_usage(vname, "option '%s' needs an argument", raw);
        if (optopt && optopt < 0x100)
                return ctl_usage(vname, "invalid option '-%c'", optopt);
        return ctl_usage(vname, "unrecognized option '%s'", raw);
}

/* parse_options(): every option was applied, the command line goes on. */
#define OPTIONS_GO_ON (-1)

/*
 * Runs getopt over argv with optstring, applying each option to ctl as allowed before the verb
 * (v NULL) or after it.  Returns OPTIONS_GO_ON, or the exit code when an option ends the run:
 * --help (the verb's help once there is one), --version, or a usage error.
 */
static int parse_options(Ctl *ctl, const Verb *v, int argc, char *argv[], const char *optstring)
{
        int c, r;

        while ((c = getopt_long(argc, argv, optstring, options, NULL)) >= 0) {
                switch (c) {
                case ARG_HELP:
                        if (v)
                                help_verb(v);
                        else
                                help_main();
                        return EXIT_OK;
                case ARG_VERSION:
                        printf("%s %s\n", program, BLKMODEL_VERSION);
                        return EXIT_OK;
                case '?':
                case ':':
                        return option_error(v, c, argv);
                default:
                        r = apply_option(ctl, v, c, optarg, argv[optind - 1]);
                        if (r != EXIT_OK)
                                return r;
                }
        }
        return OPTIONS_GO_ON;
}

static void ctl_done(Ctl *ctl)
{
        /* Closing would drop what is still queued to be sent: flush first. */
        ctl->bus = sd_bus_flush_close_unref(ctl->bus);
}

int main(int argc, char *argv[])
{
        _cleanup_(ctl_done) Ctl ctl = {
                        .bus_kind = BUS_KIND_SYSTEM,
                        .legend = true,
                        .timeout_usec = USEC_INFINITY,
        };
        const Verb *v;
        int r, n_args;

        (void) setlocale(LC_CTYPE, "");
        opterr = 0;

        /* Global options up to the verb ("+": stop at the first non-option). */
        r = parse_options(&ctl, NULL, argc, argv, "+:h");
        if (r != OPTIONS_GO_ON)
                return r;

        if (optind >= argc)
                return ctl_usage(NULL, "missing command");

        if (streq(argv[optind], "help")) {
                if (optind + 1 >= argc) {
                        help_main();
                        return EXIT_OK;
                }
                v = verb_find(argv[optind + 1]);
                if (!v)
                        return ctl_usage(NULL, "unknown command '%s'", argv[optind + 1]);
                help_verb(v);
                return EXIT_OK;
        }

        v = verb_find(argv[optind]);
        if (!v)
                return ctl_usage(NULL, "unknown command '%s'", argv[optind]);

        /* The verb's own options, and the global ones again, anywhere after it. */
        argc -= optind;
        argv += optind;
        optind = 0;
        r = parse_options(&ctl, v, argc, argv, ":hbpt:");
        if (r != OPTIONS_GO_ON)
                return r;

        if (ctl.bus_kind == BUS_KIND_ADDRESS && isempty(ctl.address))
                return ctl_usage(NULL, "--address needs a bus address");

        n_args = argc - optind;
        if (n_args < v->min_args)
                return ctl_usage(v->name, "missing argument: expected %s", v->synopsis);
        if (n_args > v->max_args)
                return ctl_usage(v->name, "unexpected argument '%s'", argv[optind + v->max_args]);
        if (streq(v->name, "trigger") && n_args == 2 && !ctl_action_is_known(argv[optind + 1]))
                return ctl_usage(v->name, "unknown action '%s'", argv[optind + 1]);

        ctl.colour = output_want_colour(STDOUT_FILENO);
        ctl.utf8 = output_want_utf8();

        r = v->run(&ctl, argv + optind, n_args);

        if (fflush(stdout) != 0 && r == EXIT_OK)
                r = ctl_fail("Failed to write output: %s", strerror(errno));
        return r;
}
