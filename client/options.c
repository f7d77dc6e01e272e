/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* blkmodelctl's options: which verb takes which, their values checked before any bus is opened. */

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

#include "common/time-util.h"
#include "common/util.h"

#ifndef BLKMODEL_VERSION
#define BLKMODEL_VERSION "unknown"
#endif

enum {
        ARG_SYSTEM = 0x100,
        ARG_SESSION,
        ARG_ADDRESS,
        ARG_JSON,
        ARG_NO_LEGEND,
        ARG_VERSION,
        ARG_SINCE,
        ARG_REMOVED,
        ARG_WRITABLE,
        ARG_HELP = 'h',
        ARG_BYTES = 'b',
        ARG_PROPERTIES = 'p',
        ARG_TIMEOUT = 't',
        ARG_OUTPUT = 'o',
        ARG_OUTPUT_ALL = 'O',
        ARG_ALL = 'a',
        ARG_NOEMPTY = 'A',
        ARG_NOHEADINGS = 'n',
        ARG_JSON_SHORT = 'J',
        ARG_ACTION = 'c',
        ARG_SUBSYSTEM_MATCH = 's',
        ARG_SYSNAME_MATCH = 'y',
        ARG_SETTLE = 'w',
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
                {"noheadings", no_argument, NULL, ARG_NOHEADINGS},
                {"bytes", no_argument, NULL, ARG_BYTES},
                {"since", required_argument, NULL, ARG_SINCE},
                {"action", required_argument, NULL, ARG_ACTION},
                {"properties", no_argument, NULL, ARG_PROPERTIES},
                {"timeout", required_argument, NULL, ARG_TIMEOUT},
                {"removed", no_argument, NULL, ARG_REMOVED},
                {"output", required_argument, NULL, ARG_OUTPUT},
                {"output-all", no_argument, NULL, ARG_OUTPUT_ALL},
                {"all", no_argument, NULL, ARG_ALL},
                {"noempty", no_argument, NULL, ARG_NOEMPTY},
                {"attribute-walk", no_argument, NULL, ARG_ALL},
                {"subsystem-match", required_argument, NULL, ARG_SUBSYSTEM_MATCH},
                {"sysname-match", required_argument, NULL, ARG_SYSNAME_MATCH},
                {"settle", no_argument, NULL, ARG_SETTLE},
                {"writable", no_argument, NULL, ARG_WRITABLE},
                {},
};

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

bool ctl_action_list_is_valid(const char *list)
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

/* The OPT_* an option needs the verb to take; 0 for a global one. */
static unsigned option_needs(int c)
{
        switch (c) {
        case ARG_BYTES:
                return OPT_BYTES;
        case ARG_SINCE:
                return OPT_SINCE;
        case ARG_ACTION:
                return OPT_ACTION;
        case ARG_PROPERTIES:
                return OPT_PROPERTIES;
        case ARG_TIMEOUT:
                return OPT_TIMEOUT;
        case ARG_REMOVED:
                return OPT_REMOVED;
        case ARG_OUTPUT:
        case ARG_OUTPUT_ALL:
        case ARG_NOEMPTY:
                return OPT_OUTPUT;
        case ARG_ALL:
                return OPT_ALL;
        case ARG_SUBSYSTEM_MATCH:
        case ARG_SYSNAME_MATCH:
                return OPT_MATCH;
        case ARG_SETTLE:
                return OPT_SETTLE;
        case ARG_WRITABLE:
                return OPT_WRITABLE;
        }
        return 0;
}

/* Applies one option; returns EXIT_OK or EXIT_USAGE. */
static int apply_option(Ctl *ctl, const Verb *v, int c, const char *arg, const char *raw)
{
        const char *vname = v ? v->name : NULL;
        unsigned need = option_needs(c);

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
        case ARG_JSON_SHORT:
                ctl->json = true;
                break;
        case ARG_NO_LEGEND:
        case ARG_NOHEADINGS:
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
                /* trigger writes one action; monitor and events filter by several. */
                if (streq(vname, "trigger") ? !ctl_action_is_known(arg) : !ctl_action_list_is_valid(arg))
                        return ctl_usage(vname,
                                         "invalid --action '%s': expected %s of "
                                         "add,remove,change,move,online,offline,bind,unbind",
                                         arg, streq(vname, "trigger") ? "one" : "a list");
                ctl->actions = arg;
                break;
        case ARG_PROPERTIES:
                ctl->properties = true;
                break;
        case ARG_TIMEOUT:
                if (parse_timeout(arg, &ctl->timeout_usec) < 0)
                        return ctl_usage(vname, "invalid --timeout '%s': expected seconds", arg);
                ctl->timeout_set = true;
                break;
        case ARG_REMOVED:
                ctl->removed = true;
                break;
        case ARG_OUTPUT:
                if (isempty(arg))
                        return ctl_usage(vname, "--output needs a list of columns");
                ctl->columns = arg;
                break;
        case ARG_OUTPUT_ALL:
                ctl->all_columns = true;
                break;
        case ARG_ALL:
                ctl->all = true;
                break;
        case ARG_NOEMPTY:
                ctl->noempty = true;
                break;
        case ARG_SUBSYSTEM_MATCH:
        case ARG_SYSNAME_MATCH:
                if (isempty(arg))
                        return ctl_usage(vname, "option '%s' needs a pattern", raw);
                if ((c == ARG_SUBSYSTEM_MATCH
                                     ? strv_extend(&ctl->subsystem_match, &ctl->n_subsystem_match, arg)
                                     : strv_extend(&ctl->sysname_match, &ctl->n_sysname_match, arg)) < 0)
                        return ctl_fail("Out of memory");
                break;
        case ARG_SETTLE:
                ctl->settle = true;
                break;
        case ARG_WRITABLE:
                ctl->writable = true;
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

int parse_options(Ctl *ctl, const Verb *v, int argc, char *argv[], const char *optstring)
{
        int c, r, longindex = -1;

        while ((c = getopt_long(argc, argv, optstring, options, &longindex)) >= 0) {
                /* The option as given, for messages: argv[optind - 1] is its argument when that came
                 * as a word of its own ("-t 5"), or a bundle of several ("-bt"). */
                char raw[64];

                if (longindex >= 0)
                        (void) snprintf(raw, sizeof(raw), "--%s", options[longindex].name);
                else
                        (void) snprintf(raw, sizeof(raw), "-%c", c);
                longindex = -1;

                switch (c) {
                case ARG_HELP:
                        if (v)
                                help_verb(v);
                        else
                                help_main();
                        return EXIT_OK;
                case ARG_VERSION:
                        printf("blkmodelctl %s\n", BLKMODEL_VERSION);
                        return EXIT_OK;
                case '?':
                case ':':
                        return option_error(v, c, argv);
                default:
                        r = apply_option(ctl, v, c, optarg, raw);
                        if (r != EXIT_OK)
                                return r;
                }
        }
        return OPTIONS_GO_ON;
}
