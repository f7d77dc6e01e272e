# SPDX-License-Identifier: LGPL-2.1-or-later
"""monitor's handling of a seqnum gap in the Uevent signal stream.  The
real daemon never makes one (its counter is gap-free and the bus is
reliable), so a scripted stand-in owns org.blkmodel1 here, numbering
from a first seqnum F of 16 digits as the daemon does (the wall clock in
µs): once monitor has subscribed and asked for LastSeqnum (F - 1), it
emits seqnums F, F+3 and F+6.  GetEvents(F) still has F+1 and F+2, which
monitor must fill in silently; GetEvents(F+3) answers EventsExpired,
which monitor must report as a gap of F+4 to F+5 before it prints F+6."""
import json
import subprocess
import sys
import unittest

import blkmodeltest as bt
import clienttest as ct

# The stand-in's first seqnum, as the daemon's: 16 digits.
FIRST = 1796680429088313


def seq(k):
    """The stand-in's k-th event's seqnum (1 is the first)."""
    return FIRST + k - 1


FAKE = r'''
import sys
import dbus, dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

DBusGMainLoop(set_as_default=True)
M = "org.blkmodel1.Manager"
LOOP0 = "/devices/virtual/block/loop0"
FIRST = int(sys.argv[1])
# The oldest seqnum the log retains once F+3 is out: F+6 (the whole gap has
# expired) or F+5 (its tail is still there, to be shown).
OLDEST = int(sys.argv[2])


def ev(n):
    return (dbus.UInt64(n), "change", LOOP0,
            dbus.ObjectPath("/org/blkmodel1/block/loop0"),
            dbus.Dictionary({"ACTION": "change"}, signature="ss"))


class Manager(dbus.service.Object):
    started = False

    @dbus.service.method("org.freedesktop.DBus.Properties",
                         in_signature="ss", out_signature="v")
    def Get(self, iface, prop):
        if not self.started:
            self.started = True
            GLib.timeout_add(100, self.emit)
        if prop == "OldestSeqnum":
            return dbus.UInt64(OLDEST)
        return dbus.UInt64(FIRST - 1)   # LastSeqnum: no event yet

    @dbus.service.method(M, in_signature="t", out_signature="a(tssoa{ss})")
    def GetEvents(self, after):
        if after == FIRST:
            return dbus.Array([ev(FIRST + 1), ev(FIRST + 2)],
                              signature="(tssoa{ss})")
        if after == OLDEST - 1 and OLDEST < FIRST + 6:
            return dbus.Array([ev(n) for n in range(OLDEST, FIRST + 6)],
                              signature="(tssoa{ss})")
        # The daemon's wording for this kind (not "Seqnum ...", which is
        # for a seqnum from before it started).
        raise dbus.DBusException(
            "Events after %d are no longer retained (oldest is %d); "
            "resynchronize with GetManagedObjects." % (after, OLDEST),
            name="org.blkmodel1.Error.EventsExpired")

    @dbus.service.signal(M, signature="tssoa{ss}")
    def Uevent(self, seqnum, action, devpath, obj, env):
        pass

    def emit(self):
        for n in (FIRST, FIRST + 3, FIRST + 6):
            self.Uevent(*ev(n))
        return False


b = dbus.SessionBus()
m = Manager(b, "/org/blkmodel1/Manager")
name = dbus.service.BusName("org.blkmodel1", b)
print("ready", flush=True)
GLib.MainLoop().run()
'''


class Gaps(unittest.TestCase):
    def monitor(self, oldest, n):
        fake = subprocess.Popen([sys.executable, "-c", FAKE, str(FIRST), str(oldest)],
                                stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(fake.stdout.readline(), "ready\n")
            with ct.Background("--json", "monitor") as mon:
                lines = mon.wait_lines(lambda ls: len(ls) >= n)
                self.assertEqual(mon.stop(), (0, ""))
        finally:
            fake.terminate()
            fake.wait()
            fake.stdout.close()
        return [json.loads(ln) for ln in lines]

    def test_gap_partly_retained(self):
        """Of a gap the log has partly expired, what it still retains is
        shown, and only the rest is reported."""
        got = self.monitor(seq(6), 7)
        self.assertEqual([(j["type"], j.get("seqnum")) for j in got],
                         [("event", seq(1)), ("event", seq(2)), ("event", seq(3)),
                          ("event", seq(4)), ("gap", None), ("event", seq(6)),
                          ("event", seq(7))])
        self.assertEqual((got[4]["from"], got[4]["to"]), (seq(5), seq(5)))

    def test_gap_filled_then_reported(self):
        got = self.monitor(seq(7), 6)
        self.assertEqual([(j["type"], j.get("seqnum")) for j in got],
                         [("event", seq(1)), ("event", seq(2)), ("event", seq(3)),
                          ("event", seq(4)), ("gap", None), ("event", seq(7))])
        self.assertEqual((got[4]["from"], got[4]["to"]), (seq(5), seq(6)))


if __name__ == "__main__":
    bt.main()
