/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include <json-c/json.h>

#include "blkmodelctl.h"
#include "bus-events.h"

/*
 * One event as monitor and events print it, the same in both: for humans a line of fixed-width
 * columns (SEQNUM, the time it arrived or '-' where none is known, ACTION, DEVPATH), for JSON one
 * record { "type": "event", "seqnum", "timestamp" (µs since the epoch, or null), "action",
 * "devpath", "object", "env" }.
 */

/* Whether --action lets it through. */
bool event_action_wanted(const Ctl *ctl, const char *action);

json_object *event_to_json(const BusEvent *ev);

/* The line, and with --properties the environment and a blank line. */
void event_print_human(const Ctl *ctl, const BusEvent *ev);
