# SPDX-License-Identifier: LGPL-2.1-or-later
"""Resolve takes what storage tools take: any link below /dev that lands on
a block device (/dev/disk/by-id/…, /dev/mapper/…), and nothing that leads
out of /dev.  Runs on this machine's kernel with a loop device the test
adds and removes itself, and links it makes in /dev and removes."""

import fcntl
import os
import unittest

import blkmodeltest as bt
import loopdev

LOOP_CTL_ADD, LOOP_CTL_REMOVE = 0x4C80, 0x4C81


@unittest.skipUnless(os.geteuid() == 0, "needs root for loop devices")
class ResolveDev(unittest.TestCase):
    def loop_control(self, op, n):
        fd = os.open("/dev/loop-control", os.O_RDWR)
        try:
            return fcntl.ioctl(fd, op, n)
        finally:
            os.close(fd)

    def link(self, name, target):
        path = os.path.join("/dev", name)
        os.symlink(target, path)
        self.addCleanup(os.unlink, path)
        return path

    def test_links_below_dev(self):
        loopdev.hold_sys_block()
        taken = {int(n[4:]) for n in os.listdir("/sys/block")
                 if n.startswith("loop") and n[4:].isdigit()}
        n = next(i for i in range(300, 100000) if i not in taken)
        self.loop_control(LOOP_CTL_ADD, n)
        self.addCleanup(self.loop_control, LOOP_CTL_REMOVE, n)
        tag = "blkmodel-test-%d" % os.getpid()
        os.mkdir("/dev/" + tag)
        self.addCleanup(os.rmdir, "/dev/" + tag)
        by_id = self.link(tag + "/by-id", "../loop%d" % n)
        mapper = self.link(tag + "-mapper", "loop%d" % n)
        escape = self.link(tag + "-escape", "/etc/passwd")
        dotdot = self.link(tag + "-dotdot", "../etc")
        with bt.Daemon("/sys", no_uevents=False) as dm:
            want = bt.path_of("block", "loop%d" % n)
            bt.SignalRecorder().wait_for(
                lambda _: want in dm.managed_objects())
            for spec in (by_id, mapper, "/dev/loop%d" % n):
                self.assertEqual(dm.manager("Resolve", spec), want, spec)
            for spec in (escape, dotdot + "/passwd", "/dev/../etc/passwd",
                         "/dev/null", "/dev/" + tag):
                with self.assertRaises(bt.dbus.DBusException) as cm:
                    dm.manager("Resolve", spec)
                self.assertEqual(cm.exception.get_dbus_name(),
                                 bt.IFACE + "Error.NoSuchObject", spec)


if __name__ == "__main__":
    bt.main()
