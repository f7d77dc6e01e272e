/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <blkmodel/names.h>

#include "bus-wait.h"

#include "common/time-util.h"

int bus_signalfd_open(void)
{
        sigset_t mask;
        int fd;

        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGINT);
        (void) sigaddset(&mask, SIGTERM);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        return fd < 0 ? -errno : fd;
}

int bus_wait_event(sd_bus *bus, int sigfd, uint64_t deadline)
{
        struct pollfd p[2] = {};
        uint64_t until = deadline, t = USEC_INFINITY, now;
        int events, fd, timeout_ms, r;

        fd = sd_bus_get_fd(bus);
        if (fd < 0)
                return fd;
        events = sd_bus_get_events(bus);
        if (events < 0)
                return events;
        r = sd_bus_get_timeout(bus, &t);
        if (r < 0)
                return r;
        if (t < until)
                until = t;

        now = now_usec();
        if (until == USEC_INFINITY)
                timeout_ms = -1;
        else if (until <= now)
                timeout_ms = 0;
        else {
                uint64_t ms = (until - now + 999) / 1000;
                timeout_ms = ms > INT32_MAX ? INT32_MAX : (int) ms;
        }

        p[0] = (struct pollfd){.fd = fd, .events = (short) events};
        p[1] = (struct pollfd){.fd = sigfd, .events = POLLIN};
        r = poll(p, sigfd >= 0 ? 2 : 1, timeout_ms);
        if (r < 0)
                return errno == EINTR ? 0 : -errno;

        if (sigfd >= 0 && (p[1].revents & POLLIN)) {
                struct signalfd_siginfo si;

                /* Consumed, not looked at: SIGINT and SIGTERM both end the wait. */
                (void) read(sigfd, &si, sizeof(si));
                return 1;
        }
        if (r == 0 && deadline != USEC_INFINITY && now_usec() >= deadline)
                return -ETIMEDOUT;
        return 0;
}

int bus_match_daemon_owner(sd_bus *bus, sd_bus_message_handler_t callback, void *userdata)
{
        /* arg0: only blkmodeld's name, not every name on the bus. */
        return sd_bus_add_match(bus, NULL,
                                "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                                "interface='org.freedesktop.DBus',member='NameOwnerChanged',"
                                "arg0='" BLKMODEL_BUS_NAME "'",
                                callback, userdata);
}
