/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus-json.h"
#include "json-util.h"

#include "common/util.h"

int bus_message_read_basic_string(sd_bus_message *m, char type, char **ret)
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
        char *s = NULL;
        int r;

        r = sd_bus_message_read_basic(m, type, &v);
        if (r < 0)
                return r;

        switch (type) {
        case SD_BUS_TYPE_STRING:
        case SD_BUS_TYPE_OBJECT_PATH:
        case SD_BUS_TYPE_SIGNATURE:
                s = strdup(v.s);
                break;
        case SD_BUS_TYPE_BOOLEAN:
                s = strdup(v.b ? "true" : "false");
                break;
        case SD_BUS_TYPE_BYTE:
                r = asprintf(&s, "%u", v.u8);
                break;
        case SD_BUS_TYPE_INT16:
                r = asprintf(&s, "%d", v.s16);
                break;
        case SD_BUS_TYPE_UINT16:
                r = asprintf(&s, "%u", v.u16);
                break;
        case SD_BUS_TYPE_INT32:
        case SD_BUS_TYPE_UNIX_FD:
                r = asprintf(&s, "%" PRIi32, v.s32);
                break;
        case SD_BUS_TYPE_UINT32:
                r = asprintf(&s, "%" PRIu32, v.u32);
                break;
        case SD_BUS_TYPE_INT64:
                r = asprintf(&s, "%" PRIi64, v.s64);
                break;
        case SD_BUS_TYPE_UINT64:
                r = asprintf(&s, "%" PRIu64, v.u64);
                break;
        case SD_BUS_TYPE_DOUBLE:
                r = asprintf(&s, "%g", v.d);
                break;
        default:
                return -EBADMSG;
        }
        if (r < 0 || !s)
                return -ENOMEM;

        *ret = s;
        return 0;
}

static int read_basic_json(sd_bus_message *m, char type, json_object **ret)
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
        json_object *j = NULL;
        int r;

        r = sd_bus_message_read_basic(m, type, &v);
        if (r < 0)
                return r;

        switch (type) {
        case SD_BUS_TYPE_STRING:
        case SD_BUS_TYPE_OBJECT_PATH:
        case SD_BUS_TYPE_SIGNATURE:
                j = json_object_new_string(v.s);
                break;
        case SD_BUS_TYPE_BOOLEAN:
                j = json_object_new_boolean(v.b);
                break;
        case SD_BUS_TYPE_BYTE:
                j = json_object_new_int(v.u8);
                break;
        case SD_BUS_TYPE_INT16:
                j = json_object_new_int(v.s16);
                break;
        case SD_BUS_TYPE_UINT16:
                j = json_object_new_int(v.u16);
                break;
        case SD_BUS_TYPE_INT32:
        case SD_BUS_TYPE_UNIX_FD:
                j = json_object_new_int(v.s32);
                break;
        case SD_BUS_TYPE_UINT32:
                j = json_object_new_int64(v.u32);
                break;
        case SD_BUS_TYPE_INT64:
                j = json_object_new_int64(v.s64);
                break;
        case SD_BUS_TYPE_UINT64:
                j = json_object_new_uint64(v.u64);
                break;
        case SD_BUS_TYPE_DOUBLE:
                j = json_object_new_double(v.d);
                break;
        default:
                return -EBADMSG;
        }
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
        char type;
        int r;

        r = sd_bus_message_peek_type(m, &type, NULL);
        if (r < 0)
                return r;
        if (r == 0)
                return -EBADMSG;
        r = bus_message_read_basic_string(m, type, &key);
        if (r < 0)
                return r;
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
