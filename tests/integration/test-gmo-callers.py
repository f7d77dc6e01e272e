# SPDX-License-Identifier: LGPL-2.1-or-later
"""GetManagedObjects of a caller that left: replies are built one after another, each taking a good
part of a second on a large model, so calls from a connection that sent many and went (a crashed
client, a script killed in a loop) held everyone else's reply for as long as building them all
took (100 of them at 500 disks: 99.5 s, past every client's timeout).  Nobody would read them: the
daemon drops them when the bus says the caller has gone, and the next caller is answered."""
import os
import re
import shutil
import unittest

from gi.repository import Gio

import blkmodeltest as bt

CALLS = 30
DROPPED = re.compile(r"GetManagedObjects from (:\S+) dropped: the caller has left the bus\.")
BUILT = re.compile(r"GetManagedObjects on /org/blkmodel1: at most \d+ bytes")


class CallerLeft(unittest.TestCase):
    def setUp(self):
        self.dir = bt.make_fixture(disks=200, partitions=4)
        self.dm = bt.Daemon(os.path.join(self.dir, "sys"))

    def tearDown(self):
        self.dm.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_calls_of_a_caller_that_left_are_not_built(self):
        conn = Gio.DBusConnection.new_for_address_sync(
            os.environ["DBUS_SESSION_BUS_ADDRESS"],
            Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
            | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
        name = conn.get_unique_name()
        for _ in range(CALLS):
            conn.call(bt.BUS_NAME, bt.ROOT, "org.freedesktop.DBus.ObjectManager",
                      "GetManagedObjects", None, None, Gio.DBusCallFlags.NONE, -1, None,
                      None, None)
        conn.flush_sync(None)
        conn.close_sync(None)
        # Another caller is answered, with the whole model.
        self.assertGreater(len(self.dm.managed_objects()), 200 * 7)
        out = self.dm.output()
        dropped = [m.group(1) for m in DROPPED.finditer(out)]
        self.assertTrue(all(n == name for n in dropped), dropped)
        # Built: the other caller's, and the first or so of the leaver's, built before the bus told
        # of the leaving.  (Calls whose caller had gone before its uid came back are refused before
        # they are queued; the rest are dropped.)
        built = len(BUILT.findall(out))
        self.assertLessEqual(built, 1 + 3, out[-2000:])


if __name__ == "__main__":
    bt.main()
