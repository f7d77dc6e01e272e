# SPDX-License-Identifier: LGPL-2.1-or-later
"""The daemon's own account of its loop (daemon/loop-watch.c): a turn whose
work passed 20 ms is logged, and ordinary work logs none."""
import os
import time
import unittest

import blkmodeltest as bt

LONG_TURN = "<4>The event loop worked "


def wait_for_log(dm, text, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in dm.output():
            return True
        time.sleep(0.1)
    return False


class LoopWatch(unittest.TestCase):
    def test_ordinary_work_logs_no_long_turn(self):
        d = bt.make_fixture()
        with bt.Daemon(d + "/sys") as dm:
            # The warm-up, a whole reading, an introspection and a rescan: all in slices.
            self.assertTrue(wait_for_log(dm, "Recorded the values of"))
            self.assertIn(bt.path_of("block", "sda"), dm.managed_objects())
            dm.introspect(bt.path_of("block"))
            dm.manager("Rescan")
            out = dm.output()
        self.assertNotIn(LONG_TURN, out)

    def test_one_object_of_many_files_is_a_long_turn(self):
        # An object is read in one piece: a disk directory with 30,000 attribute files makes the
        # warm-up's reading of it one turn of far more than 20 ms of work, however fast the machine.
        d = bt.make_fixture()
        sda = os.path.realpath(os.path.join(d, "sys/block/sda"))
        for i in range(30000):
            with open(os.path.join(sda, "blkmodel_test_%05d" % i), "w") as f:
                f.write("0\n")
        with bt.Daemon(d + "/sys") as dm:
            self.assertTrue(wait_for_log(dm, LONG_TURN), dm.output()[-2000:])
            # Logged, not fatal: the daemon answers on.
            self.assertEqual(dm.get(bt.path_of("block", "sda"), "org.blkmodel1.Kobject", "Name"),
                             "sda")


if __name__ == "__main__":
    bt.main()
