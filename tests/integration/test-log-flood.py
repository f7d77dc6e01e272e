# SPDX-License-Identifier: LGPL-2.1-or-later
"""No client can flood the daemon's log.  A call whose caller left before the daemon learnt its uid is
refused with an info line each: 305 of them in one audit run, and nothing bounded them, nor the
warning of each GetManagedObjects too large to send.  A line a client can cause is logged at most
LOG_RATELIMIT_BURST times per window at its call site; at the window's end one line tells how many
more there were, with the text of the first of them.  The window is shortened here through
$BLKMODEL_LOG_RATELIMIT_INTERVAL_MS."""
import os
import re
import signal
import time
import unittest

from gi.repository import Gio, GLib

import blkmodeltest as bt

BURST = 10  # LOG_RATELIMIT_BURST (daemon/base/log-ratelimit.h)
# 30 times the burst; the daemon refuses them all within about 0.1 s of the window's 2 s (ASan).
CALLERS = 300
INTERVAL_MS = 2000
AHCI = bt.path_of("devices", "pci0000:00", "0000:00:1f.2")  # root-only config: a read that asks the uid
REFUSED = re.compile(r"^<6>Refused a call by (:\S+): Cannot determine the caller's identity", re.M)
SUPPRESSED_REFUSED = re.compile(
    r"^<6>Suppressed (\d+) similar messages?: Refused a call by (:\S+): Cannot determine the caller's "
    r"identity", re.M)
GMO_REFUSED = re.compile(r"^<4>GetManagedObjects on /org/blkmodel1 refused", re.M)
SUPPRESSED_GMO = re.compile(r"^<4>Suppressed (\d+) similar messages?: GetManagedObjects on "
                            r"/org/blkmodel1 refused", re.M)



class LogFlood(unittest.TestCase):
    def setUp(self):
        self.dir = bt.make_fixture()
        self.dm = None

    def tearDown(self):
        if self.dm:
            self.dm.stop()

    def start(self, *args):
        self.dm = bt.Daemon(os.path.join(self.dir, "sys"), extra_args=("--log-level=info",) + args,
                            env={"BLKMODEL_LOG_RATELIMIT_INTERVAL_MS": str(INTERVAL_MS)})

    def wait_for(self, cond, what, timeout=60):
        if not bt.wait_until(lambda: cond(self.dm.output()), every=0.05, timeout=timeout):
            self.fail("%s: not seen in %d s; the log's end:\n%s" % (what, timeout, self.dm.output()[-3000:]))

    def callers_leave(self, n):
        """n callers, each on its own connection, send a read that needs their uid and leave; all
        queued for the daemon before it reads one (stopped meanwhile), so each is refused.  Their
        unique names."""
        names = []
        self.dm.proc.send_signal(signal.SIGSTOP)
        try:
            for _ in range(n):
                c = bt.connect()
                names.append(c.get_unique_name())
                c.call(bt.BUS_NAME, AHCI, bt.PROPS, "GetAll", GLib.Variant("(s)", (bt.DEVICE,)), None,
                       Gio.DBusCallFlags.NONE, -1, None, None, None)
                c.flush_sync(None)
                c.close_sync(None)
        finally:
            self.dm.proc.send_signal(signal.SIGCONT)
        return names

    def refusals(self):
        out = self.dm.output()
        return REFUSED.findall(out), [(int(m.group(1)), m.group(2)) for m in SUPPRESSED_REFUSED.finditer(out)]

    def told(self):
        """Refusals told: logged, or counted in a summary."""
        logged, suppressed = self.refusals()
        return len(logged) + sum(n for n, _ in suppressed)

    def test_callers_that_left(self):
        self.start()
        names = self.callers_leave(CALLERS)
        # Every call is told of: BURST lines, then, once the window is over, the rest's count.
        self.wait_for(lambda out: self.told() >= CALLERS, "every refusal told")
        logged, suppressed = self.refusals()
        self.assertEqual(len(logged), BURST)
        self.assertEqual(logged, names[:BURST])
        # The one summary, with the first line it stands for.
        self.assertEqual(suppressed, [(CALLERS - BURST, names[BURST])])

        # The window is over: the next burst is logged again, and its rest summed up again.
        more = self.callers_leave(3 * BURST)
        self.wait_for(lambda out: len(SUPPRESSED_REFUSED.findall(out)) >= 2, "a second summary")
        logged, suppressed = self.refusals()
        self.assertEqual(logged, names[:BURST] + more[:BURST])
        self.assertEqual(suppressed, [(CALLERS - BURST, names[BURST]), (2 * BURST, more[BURST])])
        # A live daemon still answers.
        self.assertEqual(self.dm.manager_prop("ObjectCount") > 0, True)

    def test_reply_too_large(self):
        # Every GetManagedObjects of the root is refused as too large: a client (blkmodelctl on a
        # large model does) can call it as often as it likes.
        self.start("--max-message-size=4096")
        conn = bt.connect()
        try:
            errors = []
            for _ in range(200):
                try:
                    conn.call_sync(bt.BUS_NAME, bt.ROOT, bt.OM, "GetManagedObjects", None, None,
                                   Gio.DBusCallFlags.NONE, 60000, None)
                except GLib.Error as e:
                    errors.append(Gio.DBusError.get_remote_error(e))
            self.assertEqual(set(errors), {"org.freedesktop.DBus.Error.LimitsExceeded"})
            self.assertEqual(len(errors), 200)
        finally:
            conn.close_sync(None)
        self.wait_for(lambda out: SUPPRESSED_GMO.search(out), "the summary of the refusals",
                      timeout=INTERVAL_MS / 1000 + 20)
        out = self.dm.output()
        self.assertEqual(len(GMO_REFUSED.findall(out)), BURST)
        self.assertEqual([int(n) for n in SUPPRESSED_GMO.findall(out)], [200 - BURST])


if __name__ == "__main__":
    bt.main()
