/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "manager.h"

/* The Manager interface at the root path (SPEC §5). */

extern const char bus_manager_introspection_xml[];

/* Handles a call on the root path other than Introspect and GetManagedObjects; 0 if not ours. */
int bus_manager_dispatch(Manager *m, sd_bus_message *msg, sd_bus_error *error);

/* 0 if the caller may use privileged methods; else an AccessDenied error. */
int bus_check_privileged(Manager *m, sd_bus_message *msg, sd_bus_error *error);
