/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus-json.h"
#include "json-util.h"

#include "common/util.h"

/*
 * A basic value as read.  D-Bus has a dozen basic types; what JSON and text make of them depends
 * only on these five kinds, so one reader serves both.
 */
typedef enum BasicKind {
        BASIC_STRING, /* string, object path, signature */
        BASIC_BOOLEAN,
        BASIC_INTEGER, /* every integer type that int64_t holds, file descriptors too */
        BASIC_UINT64,
        BASIC_DOUBLE,
} BasicKind;

typedef struct BasicValue {
        BasicKind kind;
        union {
                const char *s; /* points into the message */
                bool b;
                int64_t i;
                uint64_t u;
                double d;
        };
} BasicValue;

static int read_basic(sd_bus_message *m, char type, BasicValue *ret)
{
        union {
                uint8_t u8;
                int16_t s16;
                uint16_t u16;
                int32_t s32;
                uint32_t u32;
                int64_t s64;
                uint64_t u64;
                double d;
                int b;
                const char *s;
        } v;
        BasicValue b;
        int r;

        r = sd_bus_message_read_basic(m, type, &v);
        if (r < 0)
                return r;

        switch (type) {
        case SD_BUS_TYPE_STRING:
        case SD_BUS_TYPE_OBJECT_PATH:
        case SD_BUS_TYPE_SIGNATURE:
                b = (BasicValue){.kind = BASIC_STRING, .s = v.s};
                break;
        case SD_BUS_TYPE_BOOLEAN:
                b = (BasicValue){.kind = BASIC_BOOLEAN, .b = v.b};
                break;
        case SD_BUS_TYPE_BYTE:
                b = (BasicValue){.kind = BASIC_INTEGER, .i = v.u8};
                break;
        case SD_BUS_TYPE_INT16:
                b = (BasicValue){.kind = BASIC_INTEGER, .i = v.s16};
                break;
        case SD_BUS_TYPE_UINT16:
                b = (BasicValue){.kind = BASIC_INTEGER, .i = v.u16};
                break;
        case SD_BUS_TYPE_INT32:
        case SD_BUS_TYPE_UNIX_FD:
                b = (BasicValue){.kind = BASIC_INTEGER, .i = v.s32};
                break;
        case SD_BUS_TYPE_UINT32:
                b = (BasicValue){.kind = BASIC_INTEGER, .i = v.u32};
                break;
        case SD_BUS_TYPE_INT64:
                b = (BasicValue){.kind = BASIC_INTEGER, .i = v.s64};
                break;
        case SD_BUS_TYPE_UINT64:
                b = (BasicValue){.kind = BASIC_UINT64, .u = v.u64};
                break;
        case SD_BUS_TYPE_DOUBLE:
                b = (BasicValue){.kind = BASIC_DOUBLE, .d = v.d};
                break;
        default:
                return -EBADMSG;
        }

        *ret = b;
        return 0;
}

static json_object *basic_to_json(const BasicValue *b)
{
        switch (b->kind) {
        case BASIC_STRING:
                return json_object_new_string(b->s);
        case BASIC_BOOLEAN:
                return json_object_new_boolean(b->b);
        case BASIC_INTEGER:
                return json_object_new_int64(b->i);
        case BASIC_UINT64:
                return json_object_new_uint64(b->u);
        case BASIC_DOUBLE:
                return json_object_new_double(b->d);
        }
        return NULL;
}

/* The text of a value: how a dict key of any basic type becomes a JSON object key. */
static char *basic_to_string(const BasicValue *b)
{
        char *s = NULL;
        int r = 0;

        switch (b->kind) {
        case BASIC_STRING:
                return strdup(b->s);
        case BASIC_BOOLEAN:
                return strdup(b->b ? "true" : "false");
        case BASIC_INTEGER:
                r = asprintf(&s, "%" PRIi64, b->i);
                break;
        case BASIC_UINT64:
                r = asprintf(&s, "%" PRIu64, b->u);
                break;
        case BASIC_DOUBLE:
                r = asprintf(&s, "%g", b->d);
                break;
        }
        return r < 0 ? NULL : s;
}

static int read_basic_json(sd_bus_message *m, char type, json_object **ret)
{
        BasicValue b;
        json_object *j;
        int r;

        r = read_basic(m, type, &b);
        if (r < 0)
                return r;
        j = basic_to_json(&b);
        if (!j)
                return -ENOMEM;

        *ret = j;
        return 0;
}

int bus_message_read_dict(sd_bus_message *m, const char *contents, DictEntryReader read_entry,
                          void *userdata)
{
        char entry[SD_BUS_MAXIMUM_SIGNATURE_LENGTH + 1];
        size_t len = strlen(contents);
        int r;

        /* sd-bus wants the entry's own signature, contents without its braces: with NULL it
         * answers -ENXIO at the end of the array instead of 0. */
        if (len < 2 || len - 2 >= sizeof(entry))
                return -EBADMSG;
        memcpy(entry, contents + 1, len - 2);
        entry[len - 2] = '\0';

        r = sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, contents);
        if (r < 0)
                return r;

        for (;;) {
                r = sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, entry);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;

                r = read_entry(m, userdata);
                if (r < 0)
                        return r;

                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }

        return sd_bus_message_exit_container(m);
}

/* One entry of any dict into the object userdata, the key (of any basic type) as text. */
static int read_json_dict_entry(sd_bus_message *m, void *userdata)
{
        _cleanup_(json_object_putp) json_object *value = NULL;
        _cleanup_(freep) char *key = NULL;
        json_object *obj = userdata;
        BasicValue k;
        char type;
        int r;

        r = sd_bus_message_peek_type(m, &type, NULL);
        if (r < 0)
                return r;
        if (r == 0)
                return -EBADMSG;
        r = read_basic(m, type, &k);
        if (r < 0)
                return r;
        key = basic_to_string(&k);
        if (!key)
                return -ENOMEM;
        r = bus_message_read_json(m, &value);
        if (r < 0)
                return r;
        if (json_object_object_add(obj, key, value) < 0)
                return -ENOMEM;
        TAKE_PTR(value);
        return 0;
}

static int read_dict_json(sd_bus_message *m, const char *contents, json_object **ret)
{
        _cleanup_(json_object_putp) json_object *obj = NULL;
        int r;

        obj = json_object_new_object();
        if (!obj)
                return -ENOMEM;

        r = bus_message_read_dict(m, contents, read_json_dict_entry, obj);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(obj);
        return 0;
}

static int read_sequence_json(sd_bus_message *m, char type, const char *contents, json_object **ret)
{
        _cleanup_(json_object_putp) json_object *arr = NULL;
        int r;

        r = sd_bus_message_enter_container(m, type, contents);
        if (r < 0)
                return r;

        arr = json_object_new_array();
        if (!arr)
                return -ENOMEM;

        for (;;) {
                _cleanup_(json_object_putp) json_object *item = NULL;

                r = sd_bus_message_peek_type(m, NULL, NULL);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;

                r = bus_message_read_json(m, &item);
                if (r < 0)
                        return r;
                if (json_object_array_add(arr, item) < 0)
                        return -ENOMEM;
                TAKE_PTR(item);
        }

        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(arr);
        return 0;
}

static int read_variant_json(sd_bus_message *m, const char *contents, json_object **ret)
{
        _cleanup_(json_object_putp) json_object *j = NULL;
        int r;

        r = sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, contents);
        if (r < 0)
                return r;
        r = bus_message_read_json(m, &j);
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(j);
        return 0;
}

int bus_message_read_json(sd_bus_message *m, json_object **ret)
{
        const char *contents;
        char type;
        int r;

        r = sd_bus_message_peek_type(m, &type, &contents);
        if (r < 0)
                return r;
        if (r == 0)
                return -ENXIO;

        switch (type) {
        case SD_BUS_TYPE_ARRAY:
                if (contents[0] == SD_BUS_TYPE_DICT_ENTRY_BEGIN)
                        return read_dict_json(m, contents, ret);
                return read_sequence_json(m, type, contents, ret);
        case SD_BUS_TYPE_STRUCT:
                return read_sequence_json(m, type, contents, ret);
        case SD_BUS_TYPE_VARIANT:
                return read_variant_json(m, contents, ret);
        default:
                return read_basic_json(m, type, ret);
        }
}
