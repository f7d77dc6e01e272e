/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include "sysfs/objdir.h"

/*
 * The value of one of the model's typed properties (common/interfaces.h),
 * read from sysfs and the model as it is now.  One reader for all who need
 * a value: the bus appends it to a message, the live layer fingerprints it
 * to tell whether it changed.
 */

typedef struct TypedValue {
        const char *signature; /* the property's: "u", "t", "b", "s", "o", "as", "ao" or "a{ss}" */
        uint64_t number;       /* u, t, b */
        char *string;          /* s, o */
        char **strv;           /* as, ao; a{ss} as key, value, key, value … */
        /* What of strv is the model's: nothing, or its strings (the objects' own paths). */
        enum { STRV_OWNED, STRV_STRINGS_BORROWED } strv_ownership;
} TypedValue;

void typed_value_done(TypedValue *v);

/*
 * Reads the property p of d's object.  What sysfs does not give (an unreadable or malformed file)
 * reads as 0, "" or empty, as doc/model.md says; only -ENOMEM fails.  Object paths may be borrowed
 * from the model (strv_ownership): use the value before the model changes, and take strv only when
 * it is STRV_OWNED.
 */
int typed_value_read(ObjDir *d, Model *m, const PropertyInfo *p, TypedValue *ret);

/* A fingerprint of the value, to compare with an earlier reading. */
uint64_t typed_value_hash(const TypedValue *v, uint64_t seed);
/* Roughly the bytes the value takes in a D-Bus message. */
size_t typed_value_size(const TypedValue *v);
