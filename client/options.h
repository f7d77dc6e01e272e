/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "blkmodelctl.h"

/* What a verb is: its arguments, the options it takes, how it runs and how --help explains it. */
typedef struct Verb {
        const char *name;
        int min_args;
        int max_args;
        unsigned options; /* OPT_* */
        int (*run)(Ctl *ctl, char **args, int n_args);
        const char *synopsis;
        const char *summary;
        const char *help;
        bool value_last; /* the last argument is a VALUE, which may be empty; the others name things */
} Verb;

/* Which command options a verb takes. */
enum {
        OPT_BYTES = 1 << 0,
        OPT_SINCE = 1 << 1,
        OPT_ACTION = 1 << 2,
        OPT_PROPERTIES = 1 << 3,
        OPT_TIMEOUT = 1 << 4,
        OPT_REMOVED = 1 << 5,
        OPT_OUTPUT = 1 << 6,
        OPT_ALL = 1 << 7,
        OPT_MATCH = 1 << 8,
        OPT_SETTLE = 1 << 9,
        OPT_WRITABLE = 1 << 10,
};

/* parse_options(): every option was applied, the command line goes on. */
#define OPTIONS_GO_ON (-1)

/* The short options before the verb and after it. */
#define OPTIONS_GLOBAL "+:hnJ"
#define OPTIONS_VERB ":hbpt:o:naAJOc:s:y:w"

/*
 * Runs getopt over argv with optstring, applying each option to ctl as allowed before the verb
 * (v NULL) or after it.  Returns OPTIONS_GO_ON, or the exit code when an option ends the run:
 * --help (the verb's help once there is one), --version, or a usage error.
 */
int parse_options(Ctl *ctl, const Verb *v, int argc, char *argv[], const char *optstring);

/* Provided by blkmodelctl.c. */
void help_main(void);
void help_verb(const Verb *v);
