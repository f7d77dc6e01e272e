# SPDX-License-Identifier: LGPL-2.1-or-later
"""Rescan restores what the daemon could not hear (issue 13).  Events can
no longer take objects out of the published model; a tree changed with no
event at all can still leave it behind: a queue directory vanishing, a
scheduler appearing or going, disks and partitions appearing and going, a
`device` link moving, attributes and groups changing.  After one Rescan
the model is what a freshly started daemon publishes, and a caching client
(GDBus's, and a strict one) holds exactly that.  A sysfs root deleted and
made again (same path, new inode) is read again by the next Rescan."""
import os
import shutil
import signal
import time
import unittest

import dbus
from gi.repository import Gio

import blkmodeltest as bt
import cachingclient
import mksysfs

VIRT = "devices/virtual/block"
SDA = bt.SDA_DEV.lstrip("/") + "/block/sda"
SR0 = bt.SR0_DEV.lstrip("/") + "/block/sr0"
NVME0N1 = "devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0/nvme0n1"
P = bt.path_of


class Tree:
    """Changes to a fixture, as the kernel makes them, and no event."""

    def __init__(self, root):
        self.root = root
        self.b = mksysfs.Builder(mksysfs.Tree(root))

    def p(self, rel):
        return os.path.join(self.root, rel)

    def write(self, rel, value):
        with open(self.p(rel), "w") as f:
            f.write(value + "\n")

    def remove_block_device(self, rel, devnum):
        name = os.path.basename(rel)
        for link in ("class/block/" + name, "block/" + name,
                     "dev/block/%d:%d" % devnum):
            if os.path.lexists(self.p(link)):
                os.unlink(self.p(link))
        shutil.rmtree(self.p(rel))

    def add_loop(self, n, partitions):
        name = "loop%d" % n
        rel = self.b.disk(os.path.join(VIRT, name), name, (7, 16 * n), 131072,
                          40 + n, "[none] mq-deadline", None, diskseq=40 + n)
        for p in range(1, partitions + 1):
            self.b.partition(rel, "%sp%d" % (name, p), (7, 16 * n + p), p,
                             2048 * p, 2048, 50 + p, diskseq=40 + n)

    def switch_scheduler(self, disk, text, iosched):
        """The kernel's switch: scheduler rewritten, queue/iosched replaced."""
        q = os.path.join(disk, "queue")
        self.write(os.path.join(q, "scheduler"), text)
        if os.path.isdir(self.p(os.path.join(q, "iosched"))):
            shutil.rmtree(self.p(os.path.join(q, "iosched")))
        if iosched:
            os.mkdir(self.p(os.path.join(q, "iosched")))
            self.b.t.attrs(os.path.join(q, "iosched"),
                           mksysfs.IOSCHED[iosched], mksysfs.RW)


class RescanRestores(unittest.TestCase):
    def setUp(self):
        self.dir = bt.make_fixture()
        self.sys = os.path.join(self.dir, "sys")
        self.tree = Tree(self.sys)
        self.dm = None
        self.clients = None

    def tearDown(self):
        if self.clients:
            self.clients.close()
        if self.dm:
            self.dm.stop()

    def start(self):
        # No poll: what changed is found by the Rescan, or not at all.
        self.dm = bt.Daemon(self.sys, extra_args=["--poll-interval=0"])
        self.clients = cachingclient.CachingClients(self.dm)

    def rescan_is_fresh(self):
        """After a Rescan: the caching clients hold what GetAll says, and
        the model is what a new daemon publishes."""
        self.dm.manager("Rescan")
        why = self.clients.exact()
        self.assertIsNone(why, why)
        # What exact() read last is the model now: nothing changes it any more (no events, no
        # poll), and reading every object's every interface again took 7 s of 600 disks.
        self.model_is_fresh(dict(self.clients.fresh))

    def model_is_fresh(self, now=None):
        """The model is what a new daemon publishes (this one stops first:
        one name on the bus)."""
        if now is None:
            now = read_model()
        self.clients.close()
        self.clients = None
        self.dm.stop()
        self.dm = None
        with bt.Daemon(self.sys):
            fresh = managed_objects()
        # The kobjects: the Manager's counters differ, as all_objects() leaves it out.
        for m in (now, fresh):
            m.pop(bt.MANAGER_PATH, None)
        self.assertEqual(bt.model_diff(now, fresh), "")

    def test_changes_without_events(self):
        self.start()
        t = self.tree
        # A queue directory vanishes; another disk's comes back without
        # its scheduler; a scheduler appears; another goes.
        shutil.rmtree(t.p(VIRT + "/loop0/queue"))
        t.switch_scheduler(NVME0N1, "none [mq-deadline]", "mq-deadline")
        t.switch_scheduler(SDA, "[none] mq-deadline kyber bfq", None)
        # A disk with partitions appears; a disk and a partition go.
        t.add_loop(7, partitions=2)
        os.unlink(t.p(SDA + "/sda2/holders/dm-0"))
        t.remove_block_device(VIRT + "/dm-0", (253, 0))
        t.remove_block_device(SDA + "/sda1", (8, 1))
        # sr0 moves to sda's hardware; attributes and a group change.
        os.unlink(t.p(SR0 + "/device"))
        os.symlink("../../../../../../ata1/host0/target0:0:0/0:0:0:0",
                   t.p(SR0 + "/device"))
        self.assertTrue(os.path.isdir(t.p(SR0 + "/device/block/sda")))
        t.write(VIRT + "/md0/md/array_state", "active")
        t.write(NVME0N1 + "/size", "42")
        os.mkdir(t.p(NVME0N1 + "/newgroup"))
        t.write(NVME0N1 + "/newgroup/knob", "1")

        # Nothing told the daemon: its model is behind.
        objs = self.dm.managed_objects()
        self.assertIn(P("block", "loop0", "queue"), objs)
        self.assertIn(P("block", "dm-0"), objs)
        self.assertNotIn(P("block", "loop7"), objs)

        self.rescan_is_fresh()

    def test_many_disks(self):
        # 600 disks: the Rescan takes the block kset's children one a step, by name
        # (daemon/live/rescan.c), not all at once as for a smaller kset.
        self.dir = bt.make_fixture(disks=600, partitions=1)
        self.sys = os.path.join(self.dir, "sys")
        self.tree = t = Tree(self.sys)
        self.start()
        disks = sorted(os.listdir(t.p("block")))
        self.assertEqual(len(disks), 600)
        # The first and the last disk by name change, one goes, one comes.
        for name in (disks[0], disks[-1]):
            t.write(os.path.realpath(t.p("block/" + name + "/size")), "42")
        gone = os.path.relpath(os.path.realpath(t.p("block/" + disks[300])), self.sys)
        parts = [os.path.join(gone, p) for p in os.listdir(t.p(gone)) if p.startswith(disks[300])]
        for part in parts + [gone]:
            with open(t.p(part + "/dev")) as f:
                t.remove_block_device(part, tuple(int(x) for x in f.read().split(":")))
        t.add_loop(7, partitions=1)
        self.rescan_is_fresh()

    def test_replaced_root(self):
        self.start()
        inode = os.stat(self.sys).st_ino
        before = sorted(self.dm.managed_objects())

        # Gone: the Rescan fails; the objects stay (their values, read at
        # each Get, are gone with the files), and the daemon answers.
        shutil.rmtree(self.sys)
        with self.assertRaises(dbus.DBusException):
            self.dm.manager("Rescan")
        self.assertEqual(sorted(self.dm.managed_objects()), before)

        # Made again at the same path, a little different.
        mksysfs.main([self.dir])
        self.assertNotEqual(os.stat(self.sys).st_ino, inode)
        self.tree.add_loop(6, partitions=1)
        self.tree.remove_block_device(SR0, (11, 0))
        self.assertEqual(self.dm.manager_prop("SysfsRoot"), self.sys)
        self.rescan_is_fresh()

    def test_the_log_counts_every_object_told(self):
        """A queue's tunable has no event of its own, but it is a difference
        the Rescan announced: its log line counts it."""
        self.start()
        self.tree.write(SDA + "/queue/read_ahead_kb", "4096")
        os.kill(self.dm.proc.pid, signal.SIGHUP)
        self.assertTrue(bt.wait_until(lambda: "Rescan: " in self.dm.output()))
        self.assertIn("Rescan: 1 difference.", self.dm.output())
        self.assertEqual(self.dm.get(P("block", "sda", "queue"), bt.IFACE + "Queue",
                                     "read_ahead_kb"), "4096")

    def test_waits_while_the_bus_is_behind(self):
        # A rescan's announcements have no uevent the kernel could keep: while the bus reads nothing,
        # the rescan waits once sd-bus's queue is long, instead of piling everything up ahead of
        # every reply; once the bus is seen stuck (2 s), signals are dropped and it goes on.
        self.start()
        for n in range(10, 160):
            self.tree.add_loop(n, partitions=2)
        bus_pid = self.dm.bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                            "org.freedesktop.DBus", "GetConnectionUnixProcessID",
                                            "s", ["org.freedesktop.DBus"])
        os.kill(bus_pid, signal.SIGSTOP)
        try:
            cpu = cpu_seconds(self.dm.proc.pid)
            os.kill(self.dm.proc.pid, signal.SIGHUP)
            time.sleep(1.0)
            held = self.dm.output()
            cpu = cpu_seconds(self.dm.proc.pid) - cpu
            self.assertTrue(bt.wait_until(lambda: "Rescan: 450 differences." in self.dm.output(),
                                          every=0.05),
                            self.dm.output()[-3000:])
        finally:
            os.kill(bus_pid, signal.SIGCONT)
        self.assertIn("uevents and rescans wait", held)
        self.assertNotIn("Rescan:", held)
        self.assertLess(cpu, 0.5, "a rescan that waits does not spin")
        out = self.dm.output()
        self.assertLess(out.index("has not taken our messages"), out.index("Rescan: 450"))
        # Signals were shed: the caching clients are behind (SignalsDropped tells them); the model
        # is not.
        self.model_is_fresh()


def read_model():
    """Every object's every interface from GetAll (cachingclient's reading, many calls at once), as
    the caching clients' truth is read."""
    conn = bt.connect()
    try:
        return cachingclient.read_model(conn)
    finally:
        conn.close_sync(None)


def managed_objects():
    """What a freshly started daemon publishes, from one GetManagedObjects: each of its
    dictionaries is what GetAll returns (SPEC, org.blkmodel1(5)), in the same form as read_model()'s,
    and it takes 2-2.5 s of 600 disks where read_model()'s 4,000 GetAll took 4.5-7."""
    conn = bt.connect()
    try:
        return conn.call_sync(bt.BUS_NAME, bt.ROOT, bt.OM, "GetManagedObjects", None, None,
                              Gio.DBusCallFlags.NONE, -1, None).get_child_value(0).unpack()
    finally:
        conn.close_sync(None)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    bt.main()
