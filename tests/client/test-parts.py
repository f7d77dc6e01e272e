# SPDX-License-Identifier: LGPL-2.1-or-later
"""Reading the model in parts.  When GetManagedObjects would pass the
bus's message limit, the root answers LimitsExceeded; then each kset,
each disk and each Device answers for its own subtree, and where one of
those refuses too, its children are read one by one.

The real daemon cannot be made to refuse on a small fixture: it judges by
the limits of a standard bus (a bus configured smaller drops the daemon's
reply and the daemon with it, see the report).  So it runs on a private
bus of its own, and a relay owns org.blkmodel1 on the test's bus: it
forwards every call to the daemon, except that it answers
GetManagedObjects with LimitsExceeded on the paths it is told to refuse.
blkmodelctl must then list, draw and dump exactly what it does with the
daemon answering in one piece."""
import os
import subprocess
import sys
import time
import unittest

import dbus

import blkmodeltest as bt
import clienttest as ct

RELAY = r'''
import sys
from gi.repository import Gio, GLib

front_addr, back_addr, refuse = sys.argv[1], sys.argv[2], set(sys.argv[3:])
flags = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
         Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
front = Gio.DBusConnection.new_for_address_sync(front_addr, flags, None, None)
back = Gio.DBusConnection.new_for_address_sync(back_addr, flags, None, None)
NONE = Gio.DBusSendMessageFlags.NONE


def answered(conn, res, msg):
    r = back.send_message_with_reply_finish(res)
    if r.get_message_type() == Gio.DBusMessageType.ERROR:
        body = r.get_body()
        out = msg.new_method_error_literal(
            r.get_error_name(), body.unpack()[0] if body else "")
    else:
        out = msg.new_method_reply()
        if r.get_body() is not None:
            out.set_body(r.get_body())
    front.send_message(out, NONE)


def forward(msg):
    if msg.get_member() == "GetManagedObjects":
        print("GetManagedObjects %s %s" % (
            msg.get_path(), "refused" if msg.get_path() in refuse else "ok"),
            flush=True)
        if msg.get_path() in refuse:
            front.send_message(msg.new_method_error_literal(
                "org.freedesktop.DBus.Error.LimitsExceeded",
                "The objects below %s would not fit (test)" % msg.get_path()),
                NONE)
            return False
    f = Gio.DBusMessage.new_method_call("org.blkmodel1", msg.get_path(),
                                        msg.get_interface(), msg.get_member())
    if msg.get_body() is not None:
        f.set_body(msg.get_body())
    back.send_message_with_reply(f, NONE, -1, None, answered, msg)
    return False


def on_message(conn, msg, incoming):
    if (incoming and msg.get_message_type() ==
            Gio.DBusMessageType.METHOD_CALL and
            msg.get_destination() == "org.blkmodel1"):
        GLib.idle_add(forward, msg)
        return None
    return msg


front.add_filter(on_message)
front.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus",
                "org.freedesktop.DBus", "RequestName",
                GLib.Variant("(su)", ("org.blkmodel1", 4)), None,
                Gio.DBusCallFlags.NONE, -1, None)
print("ready", flush=True)
GLib.MainLoop().run()
'''

SDA_DEVICE = bt.path_of("devices", "pci0000:00", "0000:00:1f.2")


class Parts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fixture = bt.make_fixture(disks=40, partitions=3)
        bus = subprocess.run(["dbus-daemon", "--session", "--fork",
                              "--print-address=1", "--print-pid=1"],
                             capture_output=True, text=True, check=True,
                             timeout=60).stdout.split("\n")
        cls.back, cls.back_pid = bus[0], int(bus[1])
        cls.dm = bt.Daemon(cls.fixture + "/sys", wait=False,
                           extra_args=["--address=" + cls.back])
        back = dbus.bus.BusConnection(cls.back)
        deadline = time.monotonic() + 60
        while not back.name_has_owner(bt.BUS_NAME):
            assert time.monotonic() < deadline, cls.dm.output()
            time.sleep(0.02)
        back.close()

    @classmethod
    def tearDownClass(cls):
        cls.dm.stop()
        os.kill(cls.back_pid, 15)

    def relay(self, *refuse):
        p = subprocess.Popen([sys.executable, "-c", RELAY,
                              os.environ["DBUS_SESSION_BUS_ADDRESS"],
                              self.back] + list(refuse),
                             stdout=subprocess.PIPE, text=True)
        self.assertEqual(p.stdout.readline(), "ready\n")
        return p

    def stop(self, p):
        p.terminate()
        out, _ = p.communicate(timeout=30)
        return [ln.split()[1:] for ln in out.split("\n") if ln]

    def direct(self, *args):
        return ct.run("--address=" + self.back, *args, check=0, bus=None)

    def check_same(self):
        """Through the relay, the same output as straight from the daemon."""
        for args in (("dump",), ("list",), ("--json", "list", "-b", "-O"),
                     ("tree",), ("tree", "block"), ("tree", "devices"),
                     ("trigger", "--json", "--sysname-match=nothing*")):
            with self.subTest(args=args):
                want = self.direct(*args).stdout
                got = ct.run(*args, check=0).stdout
                self.maxDiff = None
                self.assertEqual(got, want)
                self.assertGreater(len(got), 20)

    def test_whole_model_in_one_piece(self):
        relay = self.relay()
        try:
            self.check_same()
        finally:
            calls = self.stop(relay)
        self.assertIn(["/org/blkmodel1", "ok"], calls)
        self.assertNotIn("refused", str(calls))

    def test_root_refuses(self):
        relay = self.relay("/org/blkmodel1")
        try:
            self.check_same()
        finally:
            calls = self.stop(relay)
        # The two ksets answered for the rest.
        self.assertIn(["/org/blkmodel1", "refused"], calls)
        self.assertIn(["/org/blkmodel1/block", "ok"], calls)
        self.assertIn(["/org/blkmodel1/devices", "ok"], calls)

    def test_ksets_refuse_too(self):
        # Then the disks one by one, and the devices' children, down to
        # one device that refuses as well: its children one by one.
        relay = self.relay("/org/blkmodel1", "/org/blkmodel1/block",
                           "/org/blkmodel1/devices", bt.path_of(
                               "devices", "pci0000:00"),
                           bt.path_of("block", "sda"))
        try:
            self.check_same()
        finally:
            calls = self.stop(relay)
        ok = {c[0] for c in calls if c[1] == "ok"}
        self.assertIn(bt.path_of("block", "sdb"), ok)
        self.assertIn(bt.path_of("block", "sdan"), ok)
        self.assertIn(bt.path_of("devices", "pci0000:00", "0000:00:01.0"), ok)
        self.assertNotIn(bt.path_of("block", "sda"), ok)
        self.assertNotIn(bt.ROOT, ok)


if __name__ == "__main__":
    bt.main()
