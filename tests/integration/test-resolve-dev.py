# SPDX-License-Identifier: LGPL-2.1-or-later
"""Resolve takes what storage tools take: any link below /dev that lands on
a block device (/dev/disk/by-id/…, /dev/mapper/…), and nothing that leads
out of /dev.  Runs on this machine's kernel with a loop device the test
adds and removes itself, and links it makes in /dev and removes."""

import os
import unittest

import blkmodeltest as bt
import loopdev


@unittest.skipUnless(os.geteuid() == 0, "needs root for loop devices")
class ResolveDev(unittest.TestCase):
    def link(self, name, target):
        path = os.path.join("/dev", name)
        os.symlink(target, path)
        self.addCleanup(os.unlink, path)
        return path

    def test_links_below_dev(self):
        loop = loopdev.LoopDevice()
        self.addCleanup(loop.remove)
        tag = "blkmodel-test-%d" % os.getpid()
        os.mkdir("/dev/" + tag)
        self.addCleanup(os.rmdir, "/dev/" + tag)
        by_id = self.link(tag + "/by-id", "../" + loop.name)
        mapper = self.link(tag + "-mapper", loop.name)
        escape = self.link(tag + "-escape", "/etc/passwd")
        dotdot = self.link(tag + "-dotdot", "../etc")
        with bt.Daemon("/sys", no_uevents=False) as dm:
            want = bt.path_of("block", loop.name)
            bt.SignalRecorder().wait_for(
                lambda _: want in dm.managed_objects())
            for spec in (by_id, mapper, loop.dev):
                self.assertEqual(dm.manager("Resolve", spec), want, spec)
            for spec in (escape, dotdot + "/passwd", "/dev/../etc/passwd",
                         "/dev/null", "/dev/" + tag):
                with self.assertRaises(bt.dbus.DBusException) as cm:
                    dm.manager("Resolve", spec)
                self.assertEqual(cm.exception.get_dbus_name(),
                                 bt.IFACE + "Error.NoSuchObject", spec)


if __name__ == "__main__":
    bt.main()
