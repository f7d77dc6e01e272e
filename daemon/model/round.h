/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "model/kobject.h"

/*
 * A pass over the model's objects: every object with values (a kset has none) for the warm-up and
 * each poll round, or every object below one for a GetManagedObjects on the root or a kset.  The
 * objects are taken from the model's index a few at a time, as they are then handled, so that no
 * step holds the loop for long: at 10,000 disks x 4 taking all 91,000 at once held it 14-20 ms on
 * a slow VM.  Objects come and go meanwhile: each taken one is referenced, and the taking starts
 * over when the index moved its entries.
 */

typedef struct ModelRound {
        Kobject **objects;
        size_t n, n_allocated, pos; /* taken; handed out */
        size_t next_slot;           /* of model->by_path, while taking */
        unsigned resizes;           /* model->by_path's when the taking started */
        const Kobject *below;       /* only objects below it; NULL: every object */
        bool ksets;                 /* ksets too */
        bool taking;
} ModelRound;

/* Drops what the last round left and begins a new one over every object with values: nothing is
 * taken yet. */
void model_round_begin(ModelRound *r, Model *m);
/* The same over every object below top, ksets too (every object at all when top is NULL): what a
 * GetManagedObjects on top answers for.  top stays referenced meanwhile. */
void model_round_begin_below(ModelRound *r, Model *m, const Kobject *top);
/* Takes up to max more objects: 1 when all are taken, 0 when some are left, -ENOMEM. */
int model_round_take(ModelRound *r, Model *m, size_t max);
/* The next object taken, with its reference (the caller drops it), or NULL. */
Kobject *model_round_next(ModelRound *r);
/* Every object taken, with its reference, for who handles them by index: the round is left empty.
 * Only once all are taken and none was handed out. */
void model_round_hand_over(ModelRound *r, Kobject ***ret, size_t *ret_n);
/* Begun and not yet taken, or not all handed out. */
bool model_round_active(const ModelRound *r);
void model_round_release(ModelRound *r, Model *m);
