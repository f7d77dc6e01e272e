/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "manager.h"

/* The Manager interface at the root path (SPEC §5). */

extern const char bus_manager_introspection_xml[];

/* Handles a call on the root path other than Introspect and GetManagedObjects; 0 if not ours. */
int bus_manager_dispatch(Manager *m, sd_bus_message *msg, sd_bus_error *error);

typedef struct EventRecord EventRecord;
/* The Manager.Uevent signal for one logged event. */
int bus_manager_emit_uevent(Manager *m, const EventRecord *e);
/* PropertiesChanged for EventsLost. */
int bus_manager_emit_events_lost(Manager *m);

/* Is msg a call of interface.member (or of member, when the caller named no interface)? */
bool bus_is_call(sd_bus_message *msg, const char *interface, const char *member);

/* sd-bus checks argument types only for vtable methods; our handlers check their own.
 * 0 if msg carries exactly signature, else an InvalidArgs error. */
int bus_check_signature(sd_bus_message *msg, const char *signature, sd_bus_error *error);

/* 0 if the caller may use privileged methods; else an AccessDenied error. */
int bus_check_privileged(Manager *m, sd_bus_message *msg, sd_bus_error *error);
