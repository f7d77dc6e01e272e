/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "blkmodel/names.h"
#include "bus/errors.h"
#include "common/util.h"

/* Messages quote what the caller sent, which may be a megabyte: echoing it back whole doubled the cost
 * of such a call, and the bus carried it twice.  Cut on a character boundary, so it stays UTF-8. */
#define MESSAGE_MAX 512

static void clip(char *msg)
{
        static const char ellipsis[] = "…";
        size_t n = strlen(msg);

        if (n <= MESSAGE_MAX)
                return;
        n = MESSAGE_MAX - (sizeof(ellipsis) - 1);
        while (n > 0 && ((unsigned char) msg[n] & 0xc0) == 0x80)
                n--;
        memcpy(msg + n, ellipsis, sizeof(ellipsis));
}

_printf_(4, 0) static int set_va(sd_bus_error *error, const char *name, int errnum, const char *fmt,
                                 va_list ap)
{
        _cleanup_(freep) char *msg = NULL;
        int r;

        if (vasprintf(&msg, fmt, ap) < 0)
                return -ENOMEM;
        clip(msg);
        r = sd_bus_error_set(error, name, msg);
        return errnum ? -errnum : r;
}

/* sd_bus_error_setf, clipped: returns the errno sd-bus maps name to. */
_printf_(3, 4) static int setf(sd_bus_error *error, const char *name, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = set_va(error, name, 0, fmt, ap);
        va_end(ap);
        return r;
}

#define DEFINE_FORMATTED(func, name, errnum)                                                                \
        int func(sd_bus_error *error, const char *fmt, ...)                                                 \
        {                                                                                                   \
                va_list ap;                                                                                 \
                int r;                                                                                      \
                va_start(ap, fmt);                                                                          \
                r = set_va(error, name, errnum, fmt, ap);                                                   \
                va_end(ap);                                                                                 \
                return r;                                                                                   \
        }

DEFINE_FORMATTED(bus_error_invalid_args, SD_BUS_ERROR_INVALID_ARGS, EINVAL)
DEFINE_FORMATTED(bus_error_access_denied, SD_BUS_ERROR_ACCESS_DENIED, EACCES)
DEFINE_FORMATTED(bus_error_interactive_authorization_required,
                 SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED, EACCES)
DEFINE_FORMATTED(bus_error_limits_exceeded, SD_BUS_ERROR_LIMITS_EXCEEDED, ENOBUFS)

int bus_error_unknown_object(sd_bus_error *error, const char *path)
{
        return setf(error, SD_BUS_ERROR_UNKNOWN_OBJECT, "No object %s.", path);
}

int bus_error_unknown_interface(sd_bus_error *error, const char *path, const char *interface)
{
        return setf(error, SD_BUS_ERROR_UNKNOWN_INTERFACE, "Object %s has no interface '%s'.", path,
                    interface);
}

int bus_error_unknown_property(sd_bus_error *error, const char *interface, const char *property)
{
        return setf(error, SD_BUS_ERROR_UNKNOWN_PROPERTY, "Interface %s has no property '%s'.", interface,
                    property);
}

int bus_error_read_only(sd_bus_error *error, const char *what)
{
        return setf(error, SD_BUS_ERROR_PROPERTY_READ_ONLY, "%s is read-only.", what);
}

int bus_error_exiting(sd_bus_error *error)
{
        return setf(error, SD_BUS_ERROR_SERVICE_UNKNOWN, "blkmodeld is exiting.");
}

void bus_reply_exiting(sd_bus_message *call)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

        (void) bus_error_exiting(&error);
        (void) sd_bus_reply_method_error(call, &error);
}

int bus_error_no_such_object(sd_bus_error *error, const char *spec)
{
        return setf(error, BLKMODEL_ERROR_NO_SUCH_OBJECT, "No such object: %s", spec);
}

int bus_error_events_expired(sd_bus_error *error, uint64_t after, uint64_t first, uint64_t oldest)
{
        /* Clients tell the two apart by the message's first word (org.blkmodel1(5)). */
        if (after != 0 && after + 1 < first)
                return setf(error, BLKMODEL_ERROR_EVENTS_EXPIRED,
                            "Seqnum %" PRIu64 " is from before this daemon started (its first is %" PRIu64
                            "); resynchronize with GetManagedObjects.",
                            after, first);
        if (after == 0)
                return setf(error, BLKMODEL_ERROR_EVENTS_EXPIRED,
                            "Events from the first (%" PRIu64 ") are no longer retained (oldest is %" PRIu64
                            "); resynchronize with GetManagedObjects.",
                            first, oldest);
        return setf(error, BLKMODEL_ERROR_EVENTS_EXPIRED,
                    "Events after %" PRIu64 " are no longer retained (oldest is %" PRIu64
                    "); resynchronize with GetManagedObjects.",
                    after, oldest);
}

int bus_error_read_failed(sd_bus_error *error, const char *devpath, const char *file, int r)
{
        return setf(error, BLKMODEL_ERROR_READ_FAILED, "Reading %s/%s failed: %s", devpath, file,
                    strerror(-r));
}

int bus_error_unread(sd_bus_error *error, const char *path, int r)
{
        return setf(error, BLKMODEL_ERROR_READ_FAILED, "Reading the values of %s failed: %s", path,
                    strerror(-r));
}

int bus_error_write_failed(sd_bus_error *error, const char *value, const char *devpath, const char *file,
                           int r)
{
        return setf(error, BLKMODEL_ERROR_WRITE_FAILED, "Writing '%s' to %s/%s failed: %s", value, devpath,
                    file, strerror(-r));
}

int bus_error_errno(sd_bus_error *error, int r, const char *what)
{
        return sd_bus_error_set_errnof(error, r, "%s: %s", what, strerror(-r));
}

/* "about 33 MiB, more than one message may carry (32 MiB)": in the limit's unit, a limit set with
 * --max-message-size may be KiB; the size rounded up and the limit down, so the first is the larger. */
void bus_sizes_text(size_t bytes, size_t limit, char *buf, size_t n)
{
        unsigned shift = limit >= ((size_t) 1 << 20) ? 20 : limit >= 1024 ? 10 : 0;
        const char *unit = shift == 20 ? "MiB" : shift == 10 ? "KiB" : "bytes";
        size_t one = (size_t) 1 << shift;

        snprintf(buf, n, "about %zu %s, more than one message may carry (%zu %s)",
                 (bytes + one - 1) >> shift, unit, limit >> shift, unit);
}
