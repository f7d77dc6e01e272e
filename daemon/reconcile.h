/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "kobject.h"

/*
 * Brings the model in line with sysfs as it is now: removes what is gone,
 * adds what is new.  Every difference goes through model_link/model_unlink,
 * so the observer (the publisher) sees each one.  Returns the number of
 * differences, or negative errno if the tree could not be read at all.
 */
int reconcile_all(Model *m);
