/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "model/kobject.h"
#include "sysfs/sysfs.h"

/* Does the object's directory hold the files, groups and child directories its shape and the model
 * say, and each group's directory the files of its group?  A listing of each: what a plain change
 * event may have moved (md's array start adds files to md/, with a change of its disk). */
bool shape_check_unchanged(const Sysfs *s, const Kobject *k);
