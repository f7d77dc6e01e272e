/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "event-output.h"
#include "output.h"

#include "common/util.h"

/* A daemon's seqnums start from the wall clock in µs (org.blkmodel1(5)): 16 digits until the year 2286,
 * so that no column moves as they grow. */
#define SEQNUM_WIDTH 16
/* "HH:MM:SS.uuuuuu" */
#define TIME_WIDTH 15
/* The longest action: offline. */
#define ACTION_WIDTH 7

bool event_action_wanted(const Ctl *ctl, const char *action)
{
        const char *p = ctl->actions;
        size_t n = strlen(action);

        if (!p)
                return true;
        for (;;) {
                size_t k = strcspn(p, ",");

                if (k == n && startswith(p, action))
                        return true;
                if (p[k] == '\0')
                        return false;
                p += k + 1;
        }
}

static const char *action_colour(const char *action)
{
        if (streq(action, "add") || streq(action, "online") || streq(action, "bind"))
                return ANSI_GREEN;
        if (streq(action, "remove") || streq(action, "offline") || streq(action, "unbind"))
                return ANSI_RED;
        return ANSI_YELLOW;
}

json_object *event_to_json(const BusEvent *ev)
{
        json_object *j = json_object_new_object();

        if (!j)
                return NULL;
        json_object_object_add(j, "type", json_object_new_string("event"));
        json_object_object_add(j, "seqnum", json_object_new_uint64(ev->seqnum));
        json_object_object_add(j, "timestamp",
                               ev->realtime_usec ? json_object_new_uint64(ev->realtime_usec) : NULL);
        json_object_object_add(j, "action", json_object_new_string(ev->action));
        json_object_object_add(j, "devpath", json_object_new_string(ev->devpath));
        json_object_object_add(j, "object", json_object_new_string(ev->object));
        json_object_object_add(j, "env", json_object_get(ev->env));
        return j;
}

/* Local time of day to the µs, or "-" when the event carries no time. */
static void format_time(uint64_t usec, char buf[static TIME_WIDTH + 1])
{
        time_t t = (time_t) (usec / 1000000);
        struct tm tm;

        if (usec == 0 || !localtime_r(&t, &tm) || strftime(buf, TIME_WIDTH + 1, "%H:%M:%S", &tm) != 8) {
                strcpy(buf, "-");
                return;
        }
        snprintf(buf + 8, TIME_WIDTH + 1 - 8, ".%06u", (unsigned) (usec % 1000000));
}

void event_print_human(const Ctl *ctl, const BusEvent *ev)
{
        char when[TIME_WIDTH + 1];

        format_time(ev->realtime_usec, when);
        printf("%*" PRIu64 " %-*s %s%-*s%s %s\n", SEQNUM_WIDTH, ev->seqnum, TIME_WIDTH, when,
               output_colour(ctl->colour, action_colour(ev->action)), ACTION_WIDTH, ev->action,
               output_colour(ctl->colour, ANSI_RESET), ev->devpath);
        if (ctl->properties) {
                /* Escaped as show's values are: a datagram's value must neither drive the terminal
                 * nor fake a KEY=VALUE line of its own. */
                if (json_object_object_length(ev->env) > 0)
                        output_value_ext(stdout, ev->env, 0, true);
                printf("\n");
        }
}
