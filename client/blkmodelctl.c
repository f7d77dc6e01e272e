/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * blkmodelctl: main, global options and command dispatch.  Each command
 * family lives in its own cmd-*.c file.
 */

#include <errno.h>
#include <getopt.h>
#include <limits.h>
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
#include "options.h"
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

int ctl_warn(const char *fmt, ...)
{
        va_list ap;

        (void) fflush(stdout);
        fprintf(stderr, "%s: ", program);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return 0;
}

int ctl_usage(const char *verb, const char *fmt, ...)
{
        va_list ap;

        fprintf(stderr, "%s%s%s: ", program, verb ? " " : "", strempty(verb));
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, " (see '%s%s%s --help')\n", program, verb ? " " : "", strempty(verb));
        return EXIT_USAGE;
}

/* Why no connection could be made, in words that say what to do. */
static int ctl_report_connect(const Ctl *ctl, int r)
{
        _cleanup_(freep) char *text = bus_open_error(ctl->bus_kind, ctl->address, r);

        return ctl_fail("%s", text ?: "Failed to connect to the bus");
}

int ctl_bus(Ctl *ctl, sd_bus **ret)
{
        int r;

        if (!ctl->bus) {
                r = bus_open(ctl->bus_kind, ctl->address, NULL, &ctl->bus);
                if (r < 0)
                        return ctl_report_connect(ctl, r);
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
                return bus_report_resolve_error(ctl, &error, r, spec);
        *ret_bus = bus;
        return EXIT_OK;
}

static const Verb verbs[] = {
                {"list", 0, INT_MAX, OPT_BYTES | OPT_OUTPUT | OPT_ALL, cmd_list,
                 "[DEVICE...] [-o COLUMNS] [-O] [-n] [-a|-A] [-J] [-b]",
                 "List block devices like lsblk, with its columns.",
                 "Partitions and stacked devices (dm, md: the holders) are indented under\n"
                 "the devices they sit on; a device stacked on several appears under each.\n"
                 "With DEVICE arguments, only those devices and what sits on them.\n"
                 "\n"
                 "  -o --output=LIST    The columns to show (lsblk's names; +LIST adds to\n"
                 "                      the default ones)\n"
                 "  -O --output-all     Every column\n"
                 "  -n --noheadings     Print no headings (as --no-legend)\n"
                 "  -a --all            Show every device: lsblk's rule hides loop devices\n"
                 "                      of 0 bytes with no backing file (unattached ones)\n"
                 "  -A --noempty        Hide every device of 0 bytes\n"
                 "  -J --json           JSON with lsblk's keys (as --json)\n"
                 "  -b --bytes          Print sizes in bytes instead of 1K, 1.5G ...\n"
                 "\n"
                 "Columns: ALIGNMENT DISC-ALN DAX DISC-GRAN DISC-MAX DISC-ZERO HCTL HOTPLUG\n"
                 "KNAME LOG-SEC MAJ:MIN MIN-IO MODEL NAME OPT-IO PATH PHY-SEC PKNAME RA RAND\n"
                 "REV RM RO ROTA RQ-SIZE SCHED SERIAL SIZE START STATE SUBSYSTEMS TRAN TYPE\n"
                 "VENDOR WSAME ZONED ZONE-SZ ZONE-WGRAN ZONE-APP ZONE-NR ZONE-OMAX ZONE-AMAX\n"
                 "(each as in lsblk(8)) and OBJECT, the D-Bus object.\n"},
                {"tree", 0, 1, 0, cmd_tree, "[block|devices|OBJECT]",
                 "Show the kobject hierarchy: name, ktype, kset and the device link.",
                 "Without an argument the whole model (the block and devices ksets); with\n"
                 "block or devices that kset; else the hierarchy below OBJECT.\n"},
                {"show", 1, 1, OPT_WRITABLE, cmd_show, "OBJECT [--writable]",
                 "Show every property of an object, grouped by interface.",
                 "The model's typed properties (CamelCase) are listed apart from the raw\n"
                 "sysfs attributes of each interface.\n"
                 "\n"
                 "  --writable          Only the properties blkmodeld publishes as writable:\n"
                 "                      what set can write\n"},
                {"info", 1, 1, OPT_ALL, cmd_info, "[-a] OBJECT",
                 "Show an object like udevadm info; -a walks up the device chain.",
                 "  -a --attribute-walk Print the object and each ancestor up its device\n"
                 "                      chain (KERNEL, SUBSYSTEM, DRIVER and each ATTR, then\n"
                 "                      KERNELS, SUBSYSTEMS, DRIVERS and ATTRS of the parents)\n"
                 "                      in udev rule syntax, as udevadm info -a does\n"},
                {"get", 2, 2, 0, cmd_get, "OBJECT ATTR", "Print one attribute or typed property.",
                 "ATTR is an attribute by its path relative to the object's sysfs directory\n"
                 "(read_ahead_kb, queue/scheduler, device/model, loop/backing_file,\n"
                 "power/control), its D-Bus member name, or a typed property (Size,\n"
                 "Scheduler). queue/ and other child kobjects, and device/ (the hardware),\n"
                 "are followed to their objects; GROUP/FILE is the group's interface.\n"
                 "Arrays print one item per line, dictionaries KEY=VALUE per line.\n"},
                {"set", 3, 3, 0, cmd_set, "OBJECT ATTR VALUE",
                 "Write an attribute (or Queue.Scheduler) through blkmodeld.",
                 "ATTR as for get. The daemon writes the value to sysfs and publishes what\n"
                 "the kernel stored; --json prints that value. Use -- before a VALUE that\n"
                 "starts with '-'.\n",
                 .value_last = true},
                {"monitor", 0, 0, OPT_SINCE | OPT_ACTION | OPT_PROPERTIES, cmd_monitor,
                 "[--since=SEQ] [--action=LIST] [--properties]",
                 "Print Uevent signals as they come, like udevadm monitor.",
                 "  --since=SEQ         First replay the retained events after SEQ, then\n"
                 "                      continue live with no gap and no repeat\n"
                 "  -c --action=LIST    Only these actions (comma-separated: add,remove,...)\n"
                 "  -p --properties     Print each event's environment too\n"
                 "\n"
                 "Each line: SEQNUM, the time the signal arrived, ACTION, DEVPATH. Missed\n"
                 "events (a seqnum gap) are fetched with GetEvents; events that expired from\n"
                 "the daemon's window and daemon restarts are reported. With --json, one\n"
                 "JSON object per line; notices have \"type\" != \"event\". Stop with Ctrl-C.\n"},
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
                 "  -c --action=LIST    Only these actions (comma-separated)\n"
                 "  -p --properties     Print each event's environment too\n"
                 "\n"
                 "GetEvents carries no time, so the time column is '-'. When the events\n"
                 "after SEQ have expired, a warning says so and the oldest retained follow.\n"},
                {"dump", 0, 0, 0, cmd_dump, "", "Print the whole model as JSON, in model order.", ""},
                {"trigger", 0, INT_MAX, OPT_ACTION | OPT_MATCH | OPT_SETTLE | OPT_TIMEOUT, cmd_trigger,
                 "[--action=A] [--subsystem-match=S] [--sysname-match=N] [--settle] [OBJECT...]",
                 "Make the kernel emit uevents, like udevadm trigger (privileged).",
                 "Without OBJECT, every disk and partition; with --subsystem-match, only\n"
                 "the objects of those subsystems (block: disks and partitions; others:\n"
                 "hardware devices).\n"
                 "\n"
                 "  -c --action=ACTION  add, remove, change (default), move, online, offline,\n"
                 "                      bind or unbind\n"
                 "  -s --subsystem-match=SUBSYSTEM\n"
                 "                      Only objects of SUBSYSTEM (block, scsi, pci ...)\n"
                 "  -y --sysname-match=PATTERN\n"
                 "                      Only objects whose name matches PATTERN (a glob)\n"
                 "  -w --settle         Return only once blkmodeld has signalled the Uevent of\n"
                 "                      every block object triggered\n"
                 "  -t --timeout=SEC    How long --settle waits (default 120)\n"},
                {"settle", 0, 0, OPT_TIMEOUT, cmd_settle, "[--timeout=SEC]",
                 "Wait until blkmodeld has applied and signalled every queued uevent.",
                 "Settled: the daemon's Settle() has read its uevent socket empty, applied\n"
                 "what it read and sent its Uevent signals. Says nothing about udev: use\n"
                 "udevadm settle for that.\n"
                 "\n"
                 "  -t --timeout=SEC    Give up after SEC seconds (exit status 1; default 120)\n"},
                {"rescan", 0, 0, OPT_TIMEOUT, cmd_rescan, "[--timeout=SEC]",
                 "Make blkmodeld read sysfs again now (privileged).",
                 "For what changes without a uevent (blockdev --setro, a scheduler set with\n"
                 "echo), which the daemon's poll would find later. Returns once the daemon\n"
                 "has signalled every difference.\n"
                 "\n"
                 "  -t --timeout=SEC    Give up after SEC seconds (exit status 1; default 120)\n"},
};

static const Verb *verb_find(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, name))
                        return verbs + i;
        return NULL;
}

void help_main(void)
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
                                  : v->options == 0         ? "[OBJECT]"
                                                            : "[OPTIONS]";
                _cleanup_(freep) char *line = NULL;

                /* Short of memory, the name alone will do; asprintf() leaves line undefined then. */
                if (asprintf(&line, "%s %s", v->name, syn) < 0)
                        line = NULL;
                printf("  %-24s %s\n", line ?: v->name, v->summary);
        }
        printf("\n"
               "OBJECT is anything Manager.Resolve accepts: sda1, /dev/sda1, 8:1,\n"
               "/sys/block/sda/queue, sda/queue/iosched, a devpath or an object path,\n"
               "or a device node or a link to one (/dev/disk/by-id/...).\n\n"
               "Options:\n"
               "  -h --help           Show this help (COMMAND --help or help COMMAND: the\n"
               "                      command's)\n"
               "     --version        Show the version\n"
               "     --system         Talk to blkmodeld on the system bus (default)\n"
               "     --session --user Talk to blkmodeld on the session bus\n"
               "     --address=ADDR   Talk to blkmodeld on the bus at ADDR\n"
               "  -J --json           Print JSON (monitor: one object per line)\n"
               "  -n --no-legend      Print no column headings\n\n"
               "Exit status: 0 success, 1 failure, 2 usage error. See blkmodelctl(1).\n");
}

void help_verb(const Verb *v)
{
        printf("%s [OPTIONS] %s%s%s\n\n%s\n", program, v->name, isempty(v->synopsis) ? "" : " ", v->synopsis,
               v->summary);
        if (!isempty(v->help))
                printf("\n%s", v->help);
        printf("\nGlobal options (%s --help): --system, --session, --address=ADDR,\n"
               "--json, --no-legend. See blkmodelctl(1).\n",
               program);
}

void ctl_done(Ctl *ctl)
{
        ctl->subsystem_match = strv_free(ctl->subsystem_match);
        ctl->sysname_match = strv_free(ctl->sysname_match);
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
        r = parse_options(&ctl, NULL, argc, argv, OPTIONS_GLOBAL);
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
        r = parse_options(&ctl, v, argc, argv, OPTIONS_VERB);
        if (r != OPTIONS_GO_ON)
                return r;

        if (ctl.bus_kind == BUS_KIND_ADDRESS && isempty(ctl.address))
                return ctl_usage(NULL, "--address needs a bus address");

        n_args = argc - optind;
        if (n_args < v->min_args)
                return ctl_usage(v->name, "missing argument: expected %s", v->synopsis);
        if (n_args > v->max_args)
                return ctl_usage(v->name, "unexpected argument '%s'", argv[optind + v->max_args]);
        /* An empty OBJECT or ATTR names nothing (and wait would wait for it for ever). */
        for (int i = 0; i < n_args - (v->value_last ? 1 : 0); i++)
                if (isempty(argv[optind + i]))
                        return ctl_usage(v->name, "empty argument: expected %s", v->synopsis);

        ctl.colour = output_want_colour(STDOUT_FILENO);
        ctl.utf8 = output_want_utf8();

        r = v->run(&ctl, argv + optind, n_args);

        if (fflush(stdout) != 0 && r == EXIT_OK)
                r = ctl_fail("Failed to write output: %s", strerror(errno));
        return r;
}
