/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"
#include "uevent-source.h"

/*
 * The live model: kernel uevents applied to the model, each followed by its
 * Manager.Uevent signal (the object is published before its "add" and gone
 * before its "remove"), and the self-healing rescan that runs after a loss,
 * on SIGHUP and on Rescan(), emitting a synthesized event per difference.
 */

/* UeventSource callbacks; userdata is the Manager. */
void live_on_uevent(UeventSource *s, Uevent *u, void *userdata);
void live_on_lost(UeventSource *s, void *userdata);
/* The rescan after a loss runs here, when the socket has been read empty. */
void live_on_drained(UeventSource *s, void *userdata);

/* A queue's scheduler was switched: its iosched kobject is replaced (or gone under "none"). */
void live_scheduler_switched(Manager *m, Kobject *queue);

/* Rescans sysfs and announces every difference; returns their number. */
int live_reconcile(Manager *m);

/* Records the current values of every disk and partition, a few per loop iteration, so
 * that the first change event of each can be told apart from what was there. */
int live_warmup_start(Manager *m);
void live_warmup_stop(Manager *m);

/* Re-reads the attributes that change without an event (a scheduler set with echo) once every
 * --poll-interval, a slice of queues at a time; 0 disables it. */
void live_poll_start(Manager *m);
void live_poll_stop(Manager *m);

/* Back-pressure: called after each signal; pauses the uevent source while sd-bus's
 * write queue is long, and resumes it once the queue drains. */
void live_check_backpressure(Manager *m);
