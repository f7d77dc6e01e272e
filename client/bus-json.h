/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <json-c/json.h>
#include <systemd/sd-bus.h>

/* Reads one complete value of any type at the read pointer into JSON. */
int bus_message_read_json(sd_bus_message *m, json_object **ret);

/* Reads one entry of a dict: its key, then its value, both whole. */
typedef int (*DictEntryReader)(sd_bus_message *m, void *userdata);

/*
 * Walks a D-Bus dict, the array of contents ("{sv}", "{oa{sa{sv}}}", …), calling read_entry inside
 * each entry.  Every dict in a reply, however deeply nested, is read through here, so the
 * container bookkeeping is written once.
 */
int bus_message_read_dict(sd_bus_message *m, const char *contents, DictEntryReader read_entry,
                          void *userdata);
