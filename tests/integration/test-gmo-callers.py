# SPDX-License-Identifier: LGPL-2.1-or-later
"""GetManagedObjects of a caller that left: replies are built one after another, each taking a good
part of a second on a large model, so calls from a connection that sent many and went (a crashed
client, a script killed in a loop) held everyone else's reply for as long as building them all
took (100 of them at 500 disks: 99.5 s, past every client's timeout).  Nobody would read them: the
daemon drops them when the bus says the caller has gone, and the next caller is answered."""
import os
import re
import unittest

from gi.repository import Gio, GLib

import blkmodeltest as bt

CALLS = 30
DROPPED = re.compile(r"GetManagedObjects from (:\S+) dropped: the caller has left the bus\.")
BUILT = re.compile(r"GetManagedObjects on /org/blkmodel1: at most \d+ bytes")
MEMBERS_CALLS = 200
MEMBERS_BUILT = re.compile(r"Members of /org/blkmodel1/block sent to (:\S+):")
MEMBERS_DROPPED = re.compile(r"Members of /org/blkmodel1/block for (:\S+) dropped: the caller has left")


class CallerLeft(unittest.TestCase):
    def setUp(self):
        self.dir = bt.make_fixture(disks=200, partitions=4)
        self.dm = bt.Daemon(os.path.join(self.dir, "sys"))

    def tearDown(self):
        self.dm.stop()
        bt.remove_fixture(self.dir)

    def test_calls_of_a_caller_that_left_are_not_built(self):
        conn = bt.connect()
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


class MembersCallerLeft(unittest.TestCase):
    """The same for a kset's Members over 4,096 (built in slices, one reply after another): a
    connection that sent hundreds of Get(Members) of the block kset and went had every one built."""

    @classmethod
    def setUpClass(cls):
        # 4,900 members, past the 4,096 above which Members is built in slices; a partition is a
        # sixth of a disk's files: 700 x 6 takes a sixth less to make, remove and scan than 1,000 x 4.
        cls.dir = bt.make_fixture(disks=700, partitions=6)

    @classmethod
    def tearDownClass(cls):
        bt.remove_fixture(cls.dir)

    def test_members_of_a_caller_that_left_are_not_built(self):
        with bt.Daemon(os.path.join(self.dir, "sys")) as dm:
            conn = bt.connect()
            name = conn.get_unique_name()
            for i in range(MEMBERS_CALLS):
                # Get and GetAll: both are built in slices.
                if i % 2:
                    args = ("Get", GLib.Variant("(ss)", (bt.KSET, "Members")))
                else:
                    args = ("GetAll", GLib.Variant("(s)", (bt.KSET,)))
                conn.call(bt.BUS_NAME, bt.path_of("block"), bt.PROPS, args[0], args[1], None,
                          Gio.DBusCallFlags.NONE, -1, None, None, None)
            conn.flush_sync(None)
            conn.close_sync(None)
            # Another caller is answered, with every member.
            self.assertEqual(len(dm.get(bt.path_of("block"), bt.KSET, "Members")), 4900)
            out = dm.output()
            built = MEMBERS_BUILT.findall(out)
            dropped = MEMBERS_DROPPED.findall(out)
            self.assertEqual(built.count(name) + len(dropped), MEMBERS_CALLS, out[-2000:])
            self.assertTrue(all(n == name for n in dropped), dropped)
            # Built: the other caller's, and those of the leaver's built while the daemon was still
            # reading its calls, before the bus told of the leaving (5 or 6 of 200 here; all 200
            # before they were dropped).
            self.assertLessEqual(built.count(name), MEMBERS_CALLS // 4, out[-2000:])
            self.assertEqual(len(built), built.count(name) + 1)


if __name__ == "__main__":
    bt.main()
