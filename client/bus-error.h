/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include <systemd/sd-bus.h>

#include "blkmodelctl.h"

/* True if the error says that nobody owns org.blkmodel1. */
bool bus_error_is_not_running(const sd_bus_error *error);
/* True if the daemon a call was addressed to is gone: not running by then, or gone without answering
 * (NoReply) while it was asked. */
bool bus_error_is_gone(const sd_bus_error *error);

/* "blkmodeld is not running on the system bus (start blkmodeld.service, or use --address=...)": what
 * to do about it depends on the bus.  Caller frees; NULL when out of memory. */
char *bus_not_running_message(const Ctl *ctl);

/*
 * Prints the one-line failure message for a failed call: the daemon's message and the D-Bus error
 * name, or that blkmodeld is not running on this bus and what to do, or what (strerror) for a local
 * failure.  Returns EXIT_FAIL.
 */
int bus_report_error(const Ctl *ctl, const sd_bus_error *error, int r, const char *what);

/* The failure of bus_resolve(): "No such object: SPEC (...NoSuchObject)". */
int bus_report_resolve_error(const Ctl *ctl, const sd_bus_error *error, int r, const char *spec);
