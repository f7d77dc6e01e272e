/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-bus.h>

#include "common/bus-open.h"
#include "common/util.h"

/* Exit codes of SPEC §7. */
#define EXIT_OK 0
#define EXIT_FAIL 1
#define EXIT_USAGE 2

/*
 * Everything the command line decided, plus the connection.  One per
 * process; commands read it and never change the options.
 */
typedef struct Ctl {
        BusKind bus_kind;
        const char *address;

        bool json;
        bool legend;
        bool colour;
        bool utf8;

        /* Command options; each command reads the ones it declared. */
        bool bytes;
        bool properties;
        bool removed;
        bool since_set;
        uint64_t since;
        const char *actions;   /* comma-separated, NULL = all; trigger: exactly one */
        uint64_t timeout_usec; /* USEC_INFINITY = forever */
        bool timeout_set;
        const char *columns; /* list -o */
        bool all_columns;    /* list -O */
        bool all;            /* list -a: empty devices too; info -a: the attribute walk */
        bool noempty;        /* list -A: no empty device at all */
        bool settle;         /* trigger --settle */
        bool writable;       /* show --writable */
        char **subsystem_match;
        size_t n_subsystem_match;
        char **sysname_match;
        size_t n_sysname_match;

        sd_bus *bus;
} Ctl;

/* Frees what the options allocated and closes the bus. */
void ctl_done(Ctl *ctl);

/* Connects on first use, so that usage errors never need a bus. */
int ctl_bus(Ctl *ctl, sd_bus **ret);

/*
 * ctl_bus(), then Manager.Resolve(spec) into an object path (the caller frees it).  A failure is
 * reported here, in the words every command uses; returns EXIT_OK or the exit code.
 */
int ctl_resolve(Ctl *ctl, const char *spec, sd_bus **ret_bus, char **ret_path);

/*
 * One line on stderr, "blkmodelctl: ...".  Returns EXIT_FAIL so that
 * callers can write "return ctl_fail(...)".
 */
int ctl_fail(const char *fmt, ...) _printf_(1, 2);

/* A usage error of verb (NULL: before one): one line, exit status EXIT_USAGE. */
int ctl_usage(const char *verb, const char *fmt, ...) _printf_(2, 3);

/* A warning, "blkmodelctl: ..." on stderr; the command goes on.  Returns 0. */
int ctl_warn(const char *fmt, ...) _printf_(1, 2);

/* add, remove, change, move, online, offline, bind or unbind. */
bool ctl_action_is_known(const char *action);
/* A comma-separated list of them. */
bool ctl_action_list_is_valid(const char *list);

/* The commands: args are the positional arguments after the verb. */
int cmd_list(Ctl *ctl, char **args, int n_args);
int cmd_tree(Ctl *ctl, char **args, int n_args);
int cmd_show(Ctl *ctl, char **args, int n_args);
int cmd_get(Ctl *ctl, char **args, int n_args);
int cmd_set(Ctl *ctl, char **args, int n_args);
int cmd_monitor(Ctl *ctl, char **args, int n_args);
int cmd_events(Ctl *ctl, char **args, int n_args);
int cmd_wait(Ctl *ctl, char **args, int n_args);
int cmd_dump(Ctl *ctl, char **args, int n_args);
int cmd_trigger(Ctl *ctl, char **args, int n_args);
int cmd_settle(Ctl *ctl, char **args, int n_args);
int cmd_rescan(Ctl *ctl, char **args, int n_args);
int cmd_info(Ctl *ctl, char **args, int n_args);
