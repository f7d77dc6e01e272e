/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

/*
 * Every D-Bus error the daemon answers with, named and worded in one
 * place.  Each sets error and returns the negative errno sd-bus expects
 * from a handler (-EINVAL, -EACCES …), so handlers can "return bus_error_…".
 */

int bus_error_invalid_args(sd_bus_error *error, const char *fmt, ...) _sd_printf_(2, 3);
int bus_error_unknown_object(sd_bus_error *error, const char *path);
int bus_error_unknown_interface(sd_bus_error *error, const char *path, const char *interface);
int bus_error_unknown_property(sd_bus_error *error, const char *interface, const char *property);
int bus_error_read_only(sd_bus_error *error, const char *what);
/* What a call still unanswered when the daemon exits gets, as one that comes then: ServiceUnknown,
 * "blkmodeld is exiting.", rather than the bus's NoReply once the connection closes. */
int bus_error_exiting(sd_bus_error *error);
void bus_reply_exiting(sd_bus_message *call);
int bus_error_access_denied(sd_bus_error *error, const char *fmt, ...) _sd_printf_(2, 3);
/* polkit would ask for a password, but the caller did not allow interactive authorization. */
int bus_error_interactive_authorization_required(sd_bus_error *error, const char *fmt, ...)
                _sd_printf_(2, 3);
int bus_error_limits_exceeded(sd_bus_error *error, const char *fmt, ...) _sd_printf_(2, 3);
/* "about 33 MiB, more than one message may carry (32 MiB)", for a LimitsExceeded message. */
void bus_sizes_text(size_t bytes, size_t limit, char *buf, size_t n);
/* blkmodel's own (SPEC §3): org.blkmodel1.Error.<Name> */
int bus_error_no_such_object(sd_bus_error *error, const char *spec);
int bus_error_events_expired(sd_bus_error *error, uint64_t after, uint64_t first, uint64_t oldest);
/* r: the negative errno of the read or write; devpath/file: what was read or written. */
int bus_error_read_failed(sd_bus_error *error, const char *devpath, const char *file, int r);
/* A reply that could not read its values for want of descriptors or memory (ObjDir.resource_error):
 * ReadFailed, rather than values read as "" or 0. */
int bus_error_unread(sd_bus_error *error, const char *path, int r);
int bus_error_write_failed(sd_bus_error *error, const char *value, const char *devpath, const char *file,
                           int r);
/* Anything else that failed with an errno: the generic mapping sd-bus knows. */
int bus_error_errno(sd_bus_error *error, int r, const char *what);
