/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/log-ratelimit.h"

static struct {
        uv_loop_t *loop; /* NULL: not attached, nothing limited */
        uv_timer_t timer;
        uint64_t interval_ms;
        uint64_t timer_due;    /* when the timer ends a window, on the loop's clock; 0: not started */
        LogRatelimit *pending; /* windows with suppressed lines, to be told at their end */
} state;

static void on_window_end(uv_timer_t *t);

/* Tells what rl's window did not log, and closes the window; rl is off the pending list. */
static void tell(LogRatelimit *rl)
{
        log_internal(rl->level, 0, "Suppressed %" PRIu64 " similar message%s: %s", rl->suppressed,
                     rl->suppressed == 1 ? "" : "s", rl->first ?: "(no memory for its text)");
        rl->first = mfree(rl->first);
        rl->suppressed = 0;
        rl->open = false;
        rl->next = NULL;
}

static void unlink_pending(LogRatelimit *rl)
{
        for (LogRatelimit **i = &state.pending; *i; i = &(*i)->next)
                if (*i == rl) {
                        *i = rl->next;
                        return;
                }
}

/* The timer runs at due at the latest: the earliest end of the pending windows. */
static void arm(uint64_t due)
{
        uint64_t now = uv_now(state.loop);

        if (state.timer_due != 0 && state.timer_due <= due)
                return;
        state.timer_due = due;
        (void) uv_timer_start(&state.timer, on_window_end, due > now ? due - now : 0, 0);
}

static void on_window_end(uv_timer_t *t)
{
        uint64_t now = uv_now(t->loop), next = 0;

        state.timer_due = 0;
        for (LogRatelimit **i = &state.pending; *i;) {
                LogRatelimit *rl = *i;
                uint64_t end = rl->begin_ms + state.interval_ms;

                if (end <= now) {
                        *i = rl->next;
                        tell(rl);
                        continue;
                }
                if (next == 0 || end < next)
                        next = end;
                i = &rl->next;
        }
        if (next != 0)
                arm(next);
}

void log_ratelimit_internal(LogRatelimit *rl, int level, int error, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        if (!state.loop || log_max_level >= LOG_DEBUG) {
                log_internalv(level, error, fmt, ap);
                va_end(ap);
                return;
        }

        uint64_t now = uv_now(state.loop);
        if (!rl->open || now - rl->begin_ms >= state.interval_ms) {
                /* Ended, but its timer has not run yet: its summary comes before the new window's. */
                if (rl->suppressed > 0) {
                        unlink_pending(rl);
                        tell(rl);
                }
                rl->open = true;
                rl->begin_ms = now;
                rl->logged = 0;
        }
        if (rl->logged < LOG_RATELIMIT_BURST) {
                rl->logged++;
                log_internalv(level, error, fmt, ap);
        } else if (rl->suppressed++ == 0) {
                char buf[LOG_LINE_MAX];

                log_format(buf, sizeof(buf), error, fmt, ap);
                rl->first = strdup(buf);
                rl->level = level;
                rl->next = state.pending;
                state.pending = rl;
                arm(rl->begin_ms + state.interval_ms);
        }
        va_end(ap);
}

void log_ratelimit_done(LogRatelimit *rl)
{
        if (rl->suppressed > 0) {
                unlink_pending(rl);
                tell(rl);
        }
        rl->first = mfree(rl->first);
}

void log_ratelimit_attach(uv_loop_t *loop, uint64_t interval_ms)
{
        if (state.loop || interval_ms == 0 || uv_timer_init(loop, &state.timer) < 0)
                return;
        /* Never what keeps the loop running. */
        uv_unref((uv_handle_t *) &state.timer);
        state.loop = loop;
        state.interval_ms = interval_ms;
        state.timer_due = 0;
}

void log_ratelimit_detach(void)
{
        if (!state.loop)
                return;
        while (state.pending) {
                LogRatelimit *rl = state.pending;
                state.pending = rl->next;
                tell(rl);
        }
        uv_close((uv_handle_t *) &state.timer, NULL);
        state.loop = NULL;
}
