/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * Kernel uevents in the netlink wire format, `ACTION@DEVPATH\0KEY=VALUE\0...`.
 *
 * Parsing is pure: no I/O, no logging, no global state, so the same code
 * serves the netlink socket, the replay socket and the fuzzer.  The rules a
 * datagram must meet are listed above uevent_parse() in uevent.c.
 */

/* Limits enforced by uevent_parse(); exported so that readers size their buffers by them. */
#define UEVENT_SIZE_MIN 32       /* as sd-device: no real event is shorter */
#define UEVENT_SIZE_MAX 8192     /* the kernel sends at most ~PATH_MAX of header + 2048 of variables */
#define UEVENT_VARS_MAX 128      /* the kernel's UEVENT_NUM_ENVP is 64 */
#define UEVENT_KEY_LEN_MAX 64    /* longest key, without "=" */
#define UEVENT_ACTION_LEN_MAX 32 /* longest action name we even look at */

/* In the kernel's order (enum kobject_action), so the values read naturally in a debugger. */
typedef enum UeventAction {
        UEVENT_ADD,
        UEVENT_REMOVE,
        UEVENT_CHANGE,
        UEVENT_MOVE,
        UEVENT_ONLINE,
        UEVENT_OFFLINE,
        UEVENT_BIND,
        UEVENT_UNBIND,
        _UEVENT_ACTION_MAX,
} UeventAction;

/*
 * One parsed event.  It is a single allocation: every string and both
 * arrays point into it, so they live exactly as long as the Uevent and must
 * not be freed or kept past uevent_free().  Copy what must outlive it.
 */
typedef struct Uevent {
        UeventAction action;
        char *devpath;          /* "/devices/...", the kernel's DEVPATH; never NULL */
        char *subsystem;        /* SUBSYSTEM, or NULL if absent */
        char *devpath_old;      /* a move's DEVPATH_OLD (a synthetic move has none); else NULL */
        uint64_t kernel_seqnum; /* SEQNUM, or 0 if absent */
        size_t n_env;           /* number of variables; always >= 2 (ACTION, DEVPATH) */
        /* All KEY=VALUE variables in wire order, ACTION, DEVPATH, SUBSYSTEM and SEQNUM included; a
         * repeated key once, at its first place with its last value. */
        char **env_keys;
        char **env_values;
} Uevent;

/*
 * Parses one datagram.  Returns 0 and stores a new Uevent in *ret, or a
 * negative errno and leaves *ret untouched:
 *   -EMSGSIZE    shorter than UEVENT_SIZE_MIN or longer than UEVENT_SIZE_MAX
 *   -EPROTO      udev's re-broadcast format ("libudev\0" header), not the kernel's
 *   -EBADMSG     any other violation of the format rules
 *   -EOPNOTSUPP  well-formed, but an action this code does not know (a newer
 *                kernel's); callers log it and ignore the event
 *   -ENOMEM
 */
int uevent_parse(const void *buf, size_t len, Uevent **ret);
/* After -EBADMSG: the rule the datagram broke, for a log line (this thread's last parse). */
const char *uevent_parse_malformed(void);

/* The value of KEY, or NULL if the event has no such variable. */
const char *uevent_get(const Uevent *u, const char *key);

/* Accepts NULL; returns NULL. */
Uevent *uevent_free(Uevent *u);

static inline void uevent_freep(Uevent **u)
{
        uevent_free(*u);
}

/* "add", "remove", ...; NULL for a value outside the enum. */
const char *uevent_action_to_string(UeventAction a);
/* The UeventAction for the kernel's name, or -EINVAL for an unknown one. */
int uevent_action_from_string(const char *s);
