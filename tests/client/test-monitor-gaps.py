# SPDX-License-Identifier: LGPL-2.1-or-later
"""monitor's handling of a seqnum gap in the Uevent signal stream.  The
real daemon never makes one (its counter is gap-free and the bus is
reliable), so a scripted stand-in owns org.blkmodel1 here: once monitor
has subscribed and asked for LastSeqnum, it emits seqnums 1, 4 and 7.
GetEvents(1) still has 2 and 3, which monitor must fill in silently;
GetEvents(4) answers EventsExpired, which monitor must report as a gap
of 5-6 before it prints 7."""
import json
import subprocess
import sys
import unittest

import blkmodeltest as bt
import clienttest as ct

FAKE = r'''
import sys
import dbus, dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

DBusGMainLoop(set_as_default=True)
M = "org.blkmodel1.Manager"
LOOP0 = "/devices/virtual/block/loop0"


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
        return dbus.UInt64(0)

    @dbus.service.method(M, in_signature="t", out_signature="a(tssoa{ss})")
    def GetEvents(self, after):
        if after == 1:
            return dbus.Array([ev(2), ev(3)], signature="(tssoa{ss})")
        raise dbus.DBusException("events after %d are gone" % after,
                                 name="org.blkmodel1.Error.EventsExpired")

    @dbus.service.signal(M, signature="tssoa{ss}")
    def Uevent(self, seqnum, action, devpath, obj, env):
        pass

    def emit(self):
        for n in (1, 4, 7):
            self.Uevent(*ev(n))
        return False


b = dbus.SessionBus()
m = Manager(b, "/org/blkmodel1/Manager")
name = dbus.service.BusName("org.blkmodel1", b)
print("ready", flush=True)
GLib.MainLoop().run()
'''


class Gaps(unittest.TestCase):
    def test_gap_filled_then_reported(self):
        fake = subprocess.Popen([sys.executable, "-c", FAKE],
                                stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(fake.stdout.readline(), "ready\n")
            with ct.Background("--json", "monitor") as mon:
                lines = mon.wait_lines(lambda ls: len(ls) >= 6)
                self.assertEqual(mon.stop(), (0, ""))
        finally:
            fake.terminate()
            fake.wait()
            fake.stdout.close()
        got = [json.loads(ln) for ln in lines]
        self.assertEqual([(j["type"], j.get("seqnum")) for j in got],
                         [("event", 1), ("event", 2), ("event", 3),
                          ("event", 4), ("gap", None), ("event", 7)])
        self.assertEqual((got[4]["from"], got[4]["to"]), (5, 6))


if __name__ == "__main__":
    bt.main()
