/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>
#include <uv.h>

#include "live/live.h"

/*
 * The model on D-Bus: every kobject an object, its attributes properties,
 * the Manager, and the signals that keep a caching client exact.  One
 * fallback handler below the root path serves every kobject: sd-bus
 * vtables keep per-object and per-property state, which at 100,000 objects
 * with dozens of attributes each would cost more than the whole model
 * (SPEC §9).  An object costs nothing beyond the model: its interfaces
 * follow from its ktype and its interned shape.
 */

typedef struct Publisher Publisher;
typedef void (*PublisherDisconnected)(void *userdata);
/* Manager.Settle(): answer msg (with publisher_settled()) once every uevent the kernel had queued
 * when it came is applied and signalled, now or later. */
typedef void (*PublisherSettle)(void *userdata, sd_bus_message *msg);

typedef struct PublisherConfig {
        uv_loop_t *loop;
        sd_bus *bus; /* connected; the publisher takes a reference */
        const Sysfs *sysfs;
        Model *model;
        Live *live;
        EventLog *events;
        const char *uevent_source; /* the UeventSource property: "netlink", a socket path, "none" */
        size_t message_max;        /* the largest message the bus takes */
        PublisherDisconnected disconnected;
        PublisherSettle settle;
        void *userdata;
} PublisherConfig;

/* dbus-daemon's default largest message on the system bus, and the protocol's own limit. */
#define BUS_SYSTEM_MESSAGE_MAX ((size_t) 32 << 20)
#define BUS_MESSAGE_MAX ((size_t) 128 << 20)
/* The protocol's largest array: GetManagedObjects' reply is one. */
#define BUS_ARRAY_MAX ((size_t) 64 << 20)
/* The least message limit --max-message-size takes: below it even a small object's GetManagedObjects
 * would be refused (a reply's header may take 1 KiB of it). */
#define BUS_MESSAGE_MIN ((size_t) 4096)

/* Registers every object and attaches the connection to the loop. */
int publisher_new(const PublisherConfig *c, Publisher **ret);
/* NULL is fine. */
Publisher *publisher_free(Publisher *p);

/* Takes the bus name: call once the model is complete. */
int publisher_take_name(Publisher *p);
void publisher_release_name(Publisher *p);
/* Messages waiting to be written. */
uint64_t publisher_queued(Publisher *p);
/* Should the uevent source wait for the bus?  True while the write queue is long and the bus takes
 * from it; paused: the source waits already, and goes on once the queue is short again.  False while
 * the bus has stopped reading from us and the publisher drops signals instead (bus/backlog.c). */
bool publisher_congested(Publisher *p, bool paused);

/* What live announces (LiveOps), sent as signals. */
/* d: the values live read for k just now (NULL: none), read through rather than again (live.h). */
void publisher_object_added(Publisher *p, Kobject *k, ObjDir *d);
void publisher_object_removed(Publisher *p, Kobject *k);
void publisher_interfaces_changed(Publisher *p, Kobject *k, char *const *interfaces, bool added, ObjDir *d);
void publisher_properties_changed(Publisher *p, Kobject *k, const char *interface, char *const *changed,
                                  char *const *invalidated, ObjDir *d);
void publisher_uevent(Publisher *p, const EventRecord *e);
/* The answer to a Settle(): the last seqnum, sent after every signal queued before it. */
void publisher_settled(Publisher *p, sd_bus_message *msg);
/* A Settle() still waiting when the daemon exits: told so. */
void publisher_refuse_exiting(sd_bus_message *msg);
void publisher_events_lost(Publisher *p);
