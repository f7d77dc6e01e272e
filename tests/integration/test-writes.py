# SPDX-License-Identifier: LGPL-2.1-or-later
"""Properties.Set: writable raw attributes and Queue.Scheduler (SPEC §6).

On a fixture the files are plain files, so a write is stored as written;
on the real kernel (a loop device) the kernel's own checks and rounding
come back.
"""
import os
import socket
import subprocess
import tempfile
import unittest

import dbus
import blkmodeltest as bt
import cachingclient
import loopdev

QUEUE = bt.IFACE + "Queue"
DISK = bt.IFACE + "Disk"
PROPS = bt.PROPS


def find_dir(root, suffix):
    for d, _, _ in os.walk(os.path.join(root, "devices")):
        if d.endswith(suffix):
            return d
    raise AssertionError("no %s in %s" % (suffix, root))


class FixtureWrites(unittest.TestCase):
    def setUp(self):
        self.dir = bt.make_fixture()
        self.sys = os.path.join(self.dir, "sys")
        self.dm = bt.Daemon(self.sys)
        self.rec = bt.SignalRecorder()
        self.queue = bt.path_of("block", "sda", "queue")
        self.qdir = find_dir(self.sys, "/block/sda/queue")

    def tearDown(self):
        self.rec.close()
        self.dm.stop()

    def set(self, path, iface, prop, value):
        return self.dm.call(path, PROPS, "Set", iface, prop,
                            dbus.String(value, variant_level=1))

    def test_raw_attribute_round_trip(self):
        self.set(self.queue, QUEUE, "read_ahead_kb", "256")
        self.assertEqual(bt.read_attr(self.qdir + "/read_ahead_kb"), "256")
        self.assertEqual(self.dm.get(self.queue, QUEUE, "read_ahead_kb"), "256")
        changed = self.rec.wait_for(lambda s: any(
            x[1] == "PropertiesChanged" and x[2] == self.queue for x in s))
        changed = [x[3] for x in changed if x[1] == "PropertiesChanged"]
        # Exactly the written property, with what was stored.
        self.assertEqual(changed, [[QUEUE, {"read_ahead_kb": "256"}, []]])

    def test_log_lines_stay_whole(self):
        # A value with a newline must not start a log line of its own, with
        # a priority of the caller's choosing.
        self.set(self.queue, QUEUE, "read_ahead_kb", "1\n<0>forged")
        out = self.dm.output()
        self.assertIn("read_ahead_kb set to '1\\x0a<0>forged'.", out)
        self.assertFalse([l for l in out.splitlines() if l.startswith("<0>")])

    def test_introspection_marks_writable(self):
        import xml.etree.ElementTree as ET
        root = ET.fromstring(self.dm.introspect(self.queue))
        q = [i for i in root.findall("interface") if i.get("name") == QUEUE][0]
        access = {p.get("name"): p.get("access") for p in q.findall("property")}
        self.assertEqual(access["read_ahead_kb"], "readwrite")
        self.assertEqual(access["scheduler"], "readwrite")
        self.assertEqual(access["Scheduler"], "readwrite")
        self.assertEqual(access["hw_sector_size"], "read")
        self.assertEqual(access["Schedulers"], "read")

    def test_scheduler_switch_replaces_iosched(self):
        iosched = self.queue + "/iosched"
        self.assertEqual(self.dm.get(self.queue, QUEUE, "Scheduler"),
                         "mq-deadline")
        # A fixture is no kernel: take iosched/ away as the kernel's switch
        # to "none" does, then switch.
        subprocess.run(["rm", "-rf", self.qdir + "/iosched"], check=True)
        self.rec.signals.clear()
        self.set(self.queue, QUEUE, "Scheduler", "none")
        self.assertEqual(bt.read_attr(self.qdir + "/scheduler"), "none")
        self.rec.wait_for(lambda s: any(
            x[1] == "InterfacesRemoved" and x[3][0] == iosched for x in s))
        self.assertNotIn(iosched, self.dm.managed_objects())
        self.assertEqual(self.dm.get(self.queue, QUEUE, "Elevator"), "/")
        self.assertEqual(self.dm.get(self.queue, QUEUE, "Scheduler"), "none")
        self.rec.wait_for(lambda s: any(
            x[1] == "PropertiesChanged" and "Elevator" in x[3][1] for x in s))
        # One signal: a cache never holds the new Scheduler with the old
        # Elevator; the iosched is gone before it.
        told = [x[3][1] if x[1] == "PropertiesChanged" else (x[1], x[3][0])
                for x in self.rec.signals
                if x[2] == self.queue or x[1] == "InterfacesRemoved"]
        self.assertEqual(told, [("InterfacesRemoved", iosched),
                                {"Elevator": "/", "Scheduler": "none",
                                 "Schedulers": ["none"], "scheduler": "none"}])

    def test_iosched_write_while_its_disk_has_a_change_queued(self):
        """A Set of an iosched tunable reads the disk's queued changes first;
        the scheduler was switched meanwhile (a udev rule), so that reading
        replaces the iosched object the Set is for.  The daemon read the
        freed object (ASan: heap-use-after-free, the caller NoReply)."""
        self.dm.stop()
        self.dm = bt.Daemon(self.sys, uevent_socket=True, extra_args=["--poll-interval=0"])
        # A recorder of this daemon's signals: setUp's followed the name's first owner.
        self.rec.close()
        self.rec = bt.SignalRecorder()
        # The scheduler as the daemon first read it, or the switch is no change to tell.
        self.assertTrue(bt.wait_until(lambda: "Recorded the values of" in self.dm.output()))
        sda = self.qdir[len(self.sys):-len("/queue")]
        nvme = os.path.realpath(os.path.join(self.sys, "block", "nvme0n1"))[len(self.sys):]
        bt.write_attr(self.sys, os.path.relpath(self.qdir + "/scheduler", self.sys),
                      "none mq-deadline kyber [bfq]\n")
        # Changes enough, as fast as one socket sends them, that sda's (not a plain one) still
        # waits when the Set comes.
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        for i in range(3000):
            s.sendto(("change@%s\0ACTION=change\0DEVPATH=%s\0SUBSYSTEM=block\0N=%d\0"
                      % (nvme, nvme, i)).encode(), self.dm.uevent_socket)
        s.sendto(("change@%s\0ACTION=change\0DEVPATH=%s\0SUBSYSTEM=block\0DM_COOKIE=1\0"
                  % (sda, sda)).encode(), self.dm.uevent_socket)
        s.close()
        self.set(self.queue + "/iosched", bt.IFACE + "Elevator", "read_expire", "400")
        self.assertIsNone(self.dm.proc.poll(), self.dm.output()[-2000:])
        self.assertEqual(self.dm.get(self.queue, QUEUE, "Scheduler"), "bfq")
        self.assertEqual(bt.read_attr(self.qdir + "/iosched/read_expire"), "400")
        # The switch was told; and every signal of the storm read here, none left to the next test.
        self.assertEqual(self.dm.manager("Settle"), self.dm.seq(3001))
        self.rec.wait_for(lambda s: any(x[1] == "PropertiesChanged" and x[2] == self.queue
                                        and x[3][1].get("Scheduler") == "bfq" for x in s))
        self.rec.pump(0.5)

    def test_refusals(self):
        cases = [
            # unknown scheduler: refused before any write (no module load)
            ((self.queue, QUEUE, "Scheduler", "nosuch-iosched"),
             "org.freedesktop.DBus.Error.InvalidArgs"),
            ((self.queue, QUEUE, "scheduler", "nosuch"),
             "org.freedesktop.DBus.Error.InvalidArgs"),
            # read-only file, typed and Kobject properties
            ((self.queue, QUEUE, "hw_sector_size", "4096"),
             "org.freedesktop.DBus.Error.PropertyReadOnly"),
            ((self.queue, QUEUE, "Schedulers", "x"),
             "org.freedesktop.DBus.Error.PropertyReadOnly"),
            ((bt.path_of("block", "sda"), DISK, "Size", "1"),
             "org.freedesktop.DBus.Error.PropertyReadOnly"),
            ((bt.path_of("block", "sda"), bt.IFACE + "Kobject", "Name", "x"),
             "org.freedesktop.DBus.Error.PropertyReadOnly"),
            ((self.queue, QUEUE, "no_such_attr", "1"),
             "org.freedesktop.DBus.Error.UnknownProperty"),
            ((self.queue, bt.IFACE + "Disk", "size", "1"),
             "org.freedesktop.DBus.Error.UnknownInterface"),
            ((self.queue, QUEUE, "read_ahead_kb", "x" * 5000),
             "org.freedesktop.DBus.Error.InvalidArgs"),
            # md's queue has no scheduler file: no name is one it offers (was WriteFailed).
            ((bt.path_of("block", "md0", "queue"), QUEUE, "Scheduler", "mq-deadline"),
             "org.freedesktop.DBus.Error.InvalidArgs"),
        ]
        before = bt.read_attr(self.qdir + "/scheduler")
        for args, err in cases:
            with self.assertRaises(dbus.DBusException, msg=args) as cm:
                self.set(*args)
            self.assertEqual(cm.exception.get_dbus_name(), err, args)
        # A wrong type is refused too.
        with self.assertRaises(dbus.DBusException) as cm:
            self.dm.call(self.queue, PROPS, "Set", QUEUE, "read_ahead_kb",
                         dbus.UInt32(5, variant_level=1))
        self.assertEqual(cm.exception.get_dbus_name(),
                         "org.freedesktop.DBus.Error.InvalidArgs")
        self.assertEqual(bt.read_attr(self.qdir + "/scheduler"), before)
        self.assertEqual(bt.read_attr(self.qdir + "/read_ahead_kb"), "128")

    def test_refused_write_is_read_back(self):
        # A write the kernel refused may still have changed the file (a
        # failed scheduler switch falls back to the old one or to none): what
        # it holds is read back and told before the error, as after a write
        # that worked.  Here the file changed unannounced (no poll, no event)
        # and the write is refused (immutable).
        self.dm.stop()
        self.dm = bt.Daemon(self.sys, extra_args=["--poll-interval=0"])
        self.assertTrue(bt.wait_until(lambda: "Recorded the values of" in self.dm.output()))
        path = self.qdir + "/read_ahead_kb"
        bt.write_attr(self.sys, os.path.relpath(path, self.sys), "4096\n")
        subprocess.run(["chattr", "+i", path], check=True)
        try:
            with self.assertRaises(dbus.DBusException) as cm:
                self.set(self.queue, QUEUE, "read_ahead_kb", "8192")
        finally:
            subprocess.run(["chattr", "-i", path], check=True)
        self.assertEqual(cm.exception.get_dbus_name(), "org.blkmodel1.Error.WriteFailed")
        self.assertIn("Operation not permitted", cm.exception.get_dbus_message())
        self.rec.wait_for(lambda s: any(
            x[1] == "PropertiesChanged" and x[2] == self.queue
            and x[3][1].get("read_ahead_kb") == "4096" for x in s), timeout=10)

    def test_file_gone_since_the_last_reading(self):
        # Not "read-only": the file went (its object is changing or going),
        # so the write failed, with the kernel's reason.
        self.dm.stop()
        self.dm = bt.Daemon(self.sys, extra_args=["--poll-interval=0"])
        # After the warm-up's reading: one that finds the file gone already publishes the queue
        # without it (UnknownProperty then; seen once in a full ASan suite).
        self.assertTrue(bt.wait_until(lambda: "Recorded the values of" in self.dm.output()))
        os.unlink(self.qdir + "/nr_requests")
        with self.assertRaises(dbus.DBusException) as cm:
            self.set(self.queue, QUEUE, "nr_requests", "64")
        self.assertEqual(cm.exception.get_dbus_name(),
                         "org.blkmodel1.Error.WriteFailed")
        self.assertIn("No such file", cm.exception.get_dbus_message())
        self.assertFalse(os.path.exists(self.qdir + "/nr_requests"))
        # And the queue is told anew without it (no poll here, no event).
        self.rec.wait_for(lambda s: any(
            x[1] == "InterfacesAdded" and x[3][0] == self.queue for x in s))
        self.assertNotIn("nr_requests", self.dm.get_all(self.queue, QUEUE))
        # A reply that finds a file gone reads it as "" (its listing is older
        # than the going); the object is re-listed once that reply is out,
        # with no poll and no event.  Signals before it would be undone by
        # its old shape: GLib's cache, made from that reply, ends without it.
        os.unlink(self.qdir + "/max_sectors_kb")
        clients = cachingclient.CachingClients(self.dm)
        try:
            self.assertIsNone(clients.exact())
            self.assertNotIn("max_sectors_kb", clients.glib_cache()[self.queue][QUEUE])
        finally:
            clients.close()
        self.assertNotIn("max_sectors_kb", self.dm.get_all(self.queue, QUEUE))
        self.rec.wait_for(lambda s: any(
            x[1] == "InterfacesRemoved" and x[3][0] == self.queue for x in s))
        # A Get that finds a file gone: ReadFailed for it, then the same.
        os.unlink(self.qdir + "/nomerges")
        with self.assertRaises(dbus.DBusException) as cm:
            self.dm.get(self.queue, QUEUE, "nomerges")
        self.assertEqual(cm.exception.get_dbus_name(),
                         "org.blkmodel1.Error.ReadFailed")
        with self.assertRaises(dbus.DBusException) as cm:
            self.dm.get(self.queue, QUEUE, "nomerges")
        self.assertEqual(cm.exception.get_dbus_name(),
                         "org.freedesktop.DBus.Error.UnknownProperty")
        # Trigger on an object whose directory went says the same.
        subprocess.run(["rm", "-rf", find_dir(self.sys, "/block/sda")],
                       check=True)
        with self.assertRaises(dbus.DBusException) as cm:
            self.dm.manager("Trigger", dbus.ObjectPath(bt.path_of("block", "sda")),
                            "change")
        self.assertEqual(cm.exception.get_dbus_name(),
                         "org.blkmodel1.Error.WriteFailed")
        self.assertIn("/block/sda/uevent failed: No such file",
                      cm.exception.get_dbus_message())


class Polling(unittest.TestCase):
    """A scheduler set with echo comes with no uevent: --poll-interval finds it."""

    def test_echo_into_scheduler_is_noticed(self):
        import mksysfs
        d = bt.make_fixture()
        root = os.path.join(d, "sys")
        qdir = find_dir(root, "/block/sda/queue")
        queue = bt.path_of("block", "sda", "queue")
        with bt.Daemon(root, extra_args=["--poll-interval=100"]) as dm:
            rec = bt.SignalRecorder()
            rec.pump(0.3)  # a first round records the values
            # What `echo bfq > scheduler` does to sysfs.
            subprocess.run(["rm", "-rf", qdir + "/iosched"], check=True)
            os.mkdir(qdir + "/iosched")
            for name, value in mksysfs.IOSCHED["bfq"].items():
                with open(os.path.join(qdir, "iosched", name), "w") as f:
                    f.write("%s\n" % (value[0] if isinstance(value, tuple) else value))
            with open(qdir + "/scheduler", "w") as f:
                f.write("none mq-deadline kyber [bfq] \n")
            rec.wait_for(lambda s: any(
                x[1] == "PropertiesChanged" and x[2] == queue and
                x[3][1].get("Scheduler") == "bfq" for x in s))
            rec.wait_for(lambda s: any(
                x[1] == "InterfacesAdded" and x[3][0] == queue + "/iosched"
                for x in s))
            objs = dm.all_objects()
            self.assertEqual(set(objs[queue + "/iosched"][bt.IFACE + "Elevator"]),
                             set(mksysfs.IOSCHED["bfq"]))
            # Nothing else of the queue was announced: only what changed.
            # Schedulers lists the same names, and Elevator names the same
            # path (the iosched object was replaced, as InterfacesRemoved and
            # InterfacesAdded say).
            changed = {}
            for x in rec.signals:
                if x[1] == "PropertiesChanged" and x[2] == queue:
                    changed.update(x[3][1])
            self.assertEqual(set(changed), {"Scheduler", "scheduler"})
            rec.close()

    def test_file_gone_is_a_new_shape_not_an_empty_value(self):
        """An attribute file gone with no event (its directory stays): the
        poll tells the interface without it (InterfacesRemoved, then
        InterfacesAdded), never the property's value as "" first."""
        root = os.path.join(bt.make_fixture(), "sys")
        sda = bt.path_of("block", "sda")
        with bt.Daemon(root, extra_args=["--poll-interval=50"]) as dm:
            rec = bt.SignalRecorder()
            self.assertTrue(bt.wait_until(lambda: "Recorded the values of" in dm.output()))
            os.unlink(find_dir(root, "/block/sda") + "/events_poll_msecs")
            added = rec.wait_for(lambda s: any(
                x[1] == "InterfacesAdded" and x[3][0] == sda for x in s))
            told = [(x[1], x[3][1] if x[1] == "PropertiesChanged" else x[3][1:])
                    for x in added if sda in (x[2], x[3][0])]
            self.assertEqual(told[0], ("InterfacesRemoved", [[DISK]]))
            self.assertEqual(told[1][0], "InterfacesAdded")
            self.assertEqual(len(told), 2, told)
            now = told[1][1][0][DISK]
            self.assertNotIn("events_poll_msecs", now)
            self.assertEqual(now, dm.get_all(sda, DISK))
            rec.close()

    def test_iosched_gone_before_the_scheduler_says_so(self):
        """A switch removes the iosched directory before the scheduler file
        names the new one: a round of the poll in between finds the old
        object's files gone, which is no change of its values to tell."""
        root = os.path.join(bt.make_fixture(), "sys")
        qdir = find_dir(root, "/block/sda/queue")
        queue = bt.path_of("block", "sda", "queue")
        with bt.Daemon(root, extra_args=["--poll-interval=50"]) as dm:
            rec = bt.SignalRecorder()
            self.assertTrue(bt.wait_until(lambda: "Recorded the values of" in dm.output()))
            subprocess.run(["rm", "-rf", qdir + "/iosched"], check=True)
            rec.pump(1.0)  # rounds of the poll meanwhile
            with open(qdir + "/scheduler", "w") as f:
                f.write("[none] mq-deadline kyber bfq\n")
            rec.wait_for(lambda s: any(x[1] == "InterfacesRemoved" and x[3][0] == queue + "/iosched"
                                       for x in s))
            told = [x for x in rec.signals if x[2] == queue + "/iosched"]
            self.assertEqual(told, [], "the old scheduler's values were told as they vanished")
            self.assertEqual(dm.get(queue, bt.IFACE + "Queue", "Scheduler"), "none")
            self.assertNotIn(queue + "/iosched", dm.all_objects())
            rec.close()


@unittest.skipUnless(os.geteuid() == 0, "needs root for loop devices")
class KernelWrites(unittest.TestCase):
    def test_scheduler_and_read_ahead_on_a_loop_device(self):
        tmp = tempfile.mkdtemp(prefix="blkmodel-writes-")
        self.addCleanup(subprocess.run, ["rm", "-rf", tmp])
        img = os.path.join(tmp, "disk.img")
        with open(img, "wb") as f:
            f.truncate(16 << 20)
        # A loop device of its own (never somebody's loop0), and whatever
        # the daemon writes is put back before it is deleted.
        with loopdev.LoopDevice() as loop:
            loop.attach(img)
            loop.remember("queue/scheduler", "queue/read_ahead_kb",
                          "queue/nr_requests")
            name = loop.name
            queue = bt.path_of("block", name, "queue")
            qdir = "/sys/class/block/%s/queue" % name
            with bt.Daemon("/sys", no_uevents=False) as dm:
                rec = bt.SignalRecorder()
                scheds = dm.get(queue, QUEUE, "Schedulers")
                self.assertIn("none", scheds)
                other = [s for s in scheds if s != "none"]
                if not other:
                    self.skipTest("no I/O scheduler but none on this kernel")
                dm.call(queue, PROPS, "Set", QUEUE, "Scheduler",
                        dbus.String("none", variant_level=1))
                self.assertEqual(dm.get(queue, QUEUE, "Scheduler"), "none")
                self.assertEqual(dm.get(queue, QUEUE, "Elevator"), "/")
                rec.signals.clear()
                dm.call(queue, PROPS, "Set", QUEUE, "Scheduler",
                        dbus.String(other[0], variant_level=1))
                self.assertIn("[%s]" % other[0], bt.read_attr(qdir + "/scheduler"))
                self.assertEqual(dm.get(queue, QUEUE, "Elevator"),
                                 queue + "/iosched")
                objs = dm.managed_objects()
                self.assertIn(queue + "/iosched", objs)
                rec.wait_for(lambda s: any(
                    x[1] == "InterfacesAdded" and x[3][0] == queue + "/iosched"
                    for x in s))
                changed = {}
                for x in rec.signals:
                    if x[1] == "PropertiesChanged" and x[2] == queue:
                        changed.update(x[3][1])
                self.assertEqual(changed["Scheduler"], other[0])
                self.assertEqual(changed["Elevator"], queue + "/iosched")

                # The kernel rounds read_ahead_kb to pages: what it stored comes back.
                dm.call(queue, PROPS, "Set", QUEUE, "read_ahead_kb",
                        dbus.String("130", variant_level=1))
                stored = bt.read_attr(qdir + "/read_ahead_kb")
                self.assertEqual(dm.get(queue, QUEUE, "read_ahead_kb"), stored)
                # The kernel's refusal comes back as WriteFailed.
                with self.assertRaises(dbus.DBusException) as cm:
                    dm.call(queue, PROPS, "Set", QUEUE, "nr_requests",
                            dbus.String("-5", variant_level=1))
                self.assertEqual(cm.exception.get_dbus_name(),
                                 "org.blkmodel1.Error.WriteFailed")
                rec.close()


if __name__ == "__main__":
    bt.main()
