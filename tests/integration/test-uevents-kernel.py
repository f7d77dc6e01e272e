# SPDX-License-Identifier: LGPL-2.1-or-later
"""The live model against the real kernel: loop devices, partx, netlink.

Needs root (CI is root) and loop device support.  The kernels here have
no partition parsers built in, so partitions are added from user space
with `partx -a` (NOTES.md), each with its own uevent.  Every loop device
is one the test creates for itself (tests/lib/loopdev.py) and deletes
afterwards, also on failure: attaching sets read_ahead_kb, which would
otherwise stay on somebody's loopN.
"""
import os
import signal
import subprocess
import tempfile
import time
import unittest

import blkmodeltest as bt
import loopdev

DISK = bt.IFACE + "Disk"
PARTITION = bt.IFACE + "Partition"


def make_image(directory, size_mib=64, partitions=2):
    img = os.path.join(directory, "disk.img")
    with open(img, "wb") as f:
        f.truncate(size_mib << 20)
    layout = "label: gpt\n" + "".join(
        "size=%dMiB, type=linux\n" % (size_mib // (partitions + 1))
        for _ in range(partitions))
    subprocess.run(["sfdisk", "--quiet", img], input=layout, text=True,
                   check=True, capture_output=True)
    return img


def sysfs_block_devices():
    return set(os.listdir("/sys/class/block"))


def published_block_devices(dm):
    names = set()
    for path, ifaces in dm.managed_objects().items():
        k = ifaces.get(bt.IFACE + "Kobject")
        if k and k["Ktype"] in ("disk", "partition"):
            names.add(k["Name"])
    return names


@unittest.skipUnless(os.geteuid() == 0, "needs root for loop devices")
class Kernel(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="blkmodel-kernel-")
        self.addCleanup(subprocess.run, ["rm", "-rf", self.tmp])

    def new_loop(self):
        """A loop device of the test's own, deleted when the test ends."""
        loop = loopdev.LoopDevice()
        self.addCleanup(loop.remove)
        return loop

    def test_loop_with_partitions_comes_and_goes(self):
        img = make_image(self.tmp)
        loop = self.new_loop()
        with bt.Daemon("/sys", no_uevents=False) as dm:
            self.assertEqual(dm.manager_prop("UeventSource"), "netlink")
            rec = bt.SignalRecorder()
            loop.attach(img, partitions=True)
            name = loop.name
            disk = bt.path_of("block", name)
            parts = [bt.path_of("block", name, "%sp%d" % (name, i))
                     for i in (1, 2)]

            def added(signals):
                return {s[3][3] for s in signals
                        if s[1] == "Uevent" and s[3][1] == "add"}
            # The partitions' add events come last (partx -a).
            rec.wait_for(lambda s: set(parts) <= added(s))
            objs = dm.all_objects()
            self.assertIn(disk, objs)
            self.assertTrue(all(p in objs for p in parts))

            sysdir = "/sys/class/block/" + name
            self.assertEqual(dm.get(disk, DISK, "Size"),
                             int(bt.read_attr(sysdir + "/size")) * 512)
            maj, mn = map(int, bt.read_attr(sysdir + "/dev").split(":"))
            self.assertEqual((dm.get(disk, DISK, "Major"),
                              dm.get(disk, DISK, "Minor")), (maj, mn))
            for i, p in enumerate(parts, 1):
                pdir = "%s/%sp%d" % (sysdir, name, i)
                self.assertEqual(dm.get(p, PARTITION, "Start"),
                                 int(bt.read_attr(pdir + "/start")) * 512)
                self.assertEqual(dm.get(p, PARTITION, "Size"),
                                 int(bt.read_attr(pdir + "/size")) * 512)
                self.assertEqual(dm.get(p, PARTITION, "Number"), i)
            self.assertEqual(sorted(dm.get(disk, DISK, "Partitions")), parts)

            # Every add came as a Uevent, after the object was there.
            ups = [s for s in rec.signals if s[1] == "Uevent"]
            seqs = [u[3][0] for u in ups]
            self.assertEqual(seqs, list(range(seqs[0], seqs[0] + len(seqs))))
            for u in ups:
                self.assertIn("SEQNUM", u[3][4])  # the kernel's own

            self.assertIn(bt.IFACE + "Group.loop", objs[disk])
            self.assertEqual(objs[disk][bt.IFACE + "Group.loop"]["backing_file"],
                             img)

            # Trigger writes to the uevent file; the kernel answers with the event.
            rec.signals.clear()
            dm.manager("Trigger", bt.dbus.ObjectPath(parts[0]), "change")
            ev = rec.wait_for(lambda s: any(
                x[1] == "Uevent" and x[3][3] == parts[0] for x in s))
            ev = [x[3] for x in ev if x[1] == "Uevent" and x[3][3] == parts[0]]
            self.assertEqual(ev[0][1], "change")
            self.assertNotIn("BLKMODEL_SYNTHESIZED", ev[0][4])
            # A synthetic move carries no DEVPATH_OLD: still a move, signalled,
            # and nothing moved.
            rec.signals.clear()
            dm.manager("Trigger", bt.dbus.ObjectPath(parts[0]), "move")
            ev = rec.wait_for(lambda s: any(
                x[1] == "Uevent" and x[3][1] == "move" for x in s))
            ev = [x[3] for x in ev if x[1] == "Uevent"]
            self.assertEqual([(e[1], e[3]) for e in ev], [("move", parts[0])])
            self.assertNotIn("DEVPATH_OLD", ev[0][4])
            self.assertEqual([x for x in rec.signals if x[1] != "Uevent"], [])
            self.assertEqual(dm.manager_prop("EventsLost"), 0)
            for bad in [(parts[0], "explode"), (disk + "/queue", "change"),
                        (bt.path_of("block", "nosuchdisk"), "change")]:
                with self.assertRaises(bt.dbus.DBusException) as cm:
                    dm.manager("Trigger", bt.dbus.ObjectPath(bad[0]), bad[1])
                self.assertIn(cm.exception.get_dbus_name(),
                              ("org.freedesktop.DBus.Error.InvalidArgs",
                               "org.blkmodel1.Error.NoSuchObject"))

            # Detached, the loop device stays (unbound, empty): its partitions
            # and its loop/ group go.
            rec.signals.clear()
            loop.detach()
            # The signals themselves (a blocking GetManagedObjects in the
            # condition may see them applied before the recorder has them).
            rec.wait_for(lambda s: set(parts) <= {
                x[3][0] for x in s if x[1] == "InterfacesRemoved"})
            self.assertFalse(set(parts) & set(dm.managed_objects()))
            rec.wait_for(lambda _: dm.get(disk, DISK, "Size") == 0)
            rec.wait_for(lambda s: any(
                x[1] == "InterfacesRemoved" and x[3][0] == disk and
                bt.IFACE + "Group.loop" in x[3][1] for x in s))
            self.assertNotIn(bt.IFACE + "Group.loop",
                             dm.all_objects()[disk])
            rec.close()

    def test_partitions_back_before_their_removes_are_read(self):
        """partx -d and partx -a while the daemon is stopped: the kernel
        sends each partition's remove (no SYNTH_UUID) after deleting its
        class/block link, then makes it again.  By the time the daemon reads
        the removes, sysfs lists every name again: each old object goes,
        and the new one comes, in that order."""
        img = make_image(self.tmp)
        loop = self.new_loop()
        loop.attach(img, partitions=True)
        name = loop.name
        parts = [bt.path_of("block", name, "%sp%d" % (name, i)) for i in (1, 2)]
        with bt.Daemon("/sys", no_uevents=False) as dm:
            objs = dm.managed_objects()
            self.assertTrue(all(p in objs for p in parts))
            rec = bt.SignalRecorder()
            dm.proc.send_signal(signal.SIGSTOP)
            try:
                for args in (["partx", "-d", loop.dev], ["partx", "-a", loop.dev]):
                    subprocess.run(args, check=True, capture_output=True, timeout=60)
            finally:
                dm.proc.send_signal(signal.SIGCONT)
            seen = rec.wait_for(lambda s: sum(
                1 for x in s if x[1] == "Uevent" and x[3][3] in parts) >= 4)
            for p in parts:
                told = [x[1] if x[1] != "Uevent" else "Uevent " + x[3][1]
                        for x in seen if x[1] in ("InterfacesRemoved",
                                                  "InterfacesAdded", "Uevent")
                        and (x[3][0] == p if x[1] != "Uevent" else x[3][3] == p)]
                self.assertEqual(told, ["InterfacesRemoved", "Uevent remove",
                                        "InterfacesAdded", "Uevent add"], p)
                self.assertNotIn("SYNTH_UUID", [x[3][4] for x in seen
                                                if x[1] == "Uevent"
                                                and x[3][3] == p][0])
            self.assertEqual(sorted(dm.get(bt.path_of("block", name), DISK,
                                           "Partitions")), parts)
            rec.close()

    def test_silent_changes_are_announced(self):
        """What the kernel changes without a uevent, read-only files too,
        is announced by the poll: BLKROSET (blockdev --setro) flips the
        disk's ro, LOOP_SET_DIRECT_IO its loop/dio, BLKPG_RESIZE_PARTITION
        (resizepart) a partition's size."""
        img = make_image(self.tmp)
        loop = self.new_loop()
        loop.attach(img, partitions=True)
        # The device goes when the test ends; until then it is put back.
        self.addCleanup(subprocess.run, ["blockdev", "--setrw", loop.dev],
                        capture_output=True)
        name = loop.name
        disk = bt.path_of("block", name)
        part = bt.path_of("block", name, name + "p2")
        pdir = "%s/%sp2" % (loop.sysdir, name)
        with bt.Daemon("/sys", no_uevents=False,
                       extra_args=["--poll-interval=100"]) as dm:
            self.assertEqual(dm.get(disk, DISK, "ro"), "0")
            self.assertFalse(dm.get(disk, DISK, "ReadOnly"))
            # Every object's values on record, so that the poll compares.
            dm.managed_objects()
            rec = bt.SignalRecorder()
            subprocess.run(["blockdev", "--setro", loop.dev], check=True)
            dio = subprocess.run(["losetup", "--direct-io=on", loop.dev],
                                 capture_output=True).returncode == 0 and \
                bt.read_attr(loop.sysdir + "/loop/dio") == "1"
            sectors = int(bt.read_attr(pdir + "/size")) - 2048
            subprocess.run(["resizepart", loop.dev, "2", str(sectors)],
                           check=True)
            self.assertEqual(int(bt.read_attr(pdir + "/size")), sectors)

            def changed(signals, path, iface):
                out = {}
                for s in signals:
                    if s[1] == "PropertiesChanged" and s[2] == path and \
                            s[3][0] == iface:
                        out.update(s[3][1])
                return out
            rec.wait_for(lambda s: changed(s, disk, DISK).get("ro") == "1" and
                         changed(s, part, PARTITION).get("size") == str(sectors))
            self.assertEqual(changed(rec.signals, disk, DISK),
                             {"ro": "1", "ReadOnly": True})
            self.assertEqual(changed(rec.signals, part, PARTITION),
                             {"ro": "1", "ReadOnly": True,
                              "size": str(sectors), "Size": sectors * 512})
            if dio:
                rec.wait_for(lambda s: changed(
                    s, disk, bt.IFACE + "Group.loop").get("dio") == "1")
            else:
                print("losetup --direct-io=on refused here: loop/dio not checked")
            # No event came for any of it (the daemon sends one for each the
            # kernel does): the poll found them.
            self.assertFalse([s for s in rec.signals if s[1] == "Uevent"])
            rec.close()

    def new_zram(self, disksize="16M"):
        """A zram device of the test's own (hot_add), removed when it ends."""
        ctl = "/sys/class/zram-control"
        if not os.path.isdir(ctl):
            self.skipTest("this kernel has no zram")
        loopdev.hold_sys_block()
        with open(ctl + "/hot_add") as f:
            index = int(f.read())
        name = "zram%d" % index

        def remove():
            with open("/sys/block/%s/reset" % name, "w") as f:
                f.write("1")
            with open(ctl + "/hot_remove", "w") as f:
                f.write(str(index))
        self.addCleanup(remove)
        with open("/sys/block/%s/disksize" % name, "w") as f:
            f.write(disksize)
        # devtmpfs makes the node; wait for it as udev users would.
        deadline = time.monotonic() + 10
        while not os.path.exists("/dev/" + name):
            self.assertLess(time.monotonic(), deadline, "/dev/%s did not appear" % name)
            time.sleep(0.01)
        return name

    def test_zram_counters_are_volatile(self):
        """zram's mm_stat and io_stat move with every write, as stat does:
        annotated EmitsChangedSignal=false, and never announced by the poll,
        which re-reads the disk's other attributes meanwhile."""
        name = self.new_zram()
        disk = bt.path_of("block", name)
        with bt.Daemon("/sys", no_uevents=False,
                       extra_args=["--poll-interval=100"]) as dm:
            xml = dm.introspect(disk)
            for attr in ("stat", "mm_stat", "io_stat"):
                self.assertRegex(xml, r'<property name="%s" type="s" access='
                                 r'"[a-z]+"><annotation name="org\.freedesktop\.'
                                 r'DBus\.Property\.EmitsChangedSignal" '
                                 r'value="false"/>' % attr)
            before = dm.get(disk, DISK, "mm_stat")
            dm.managed_objects()
            rec = bt.SignalRecorder()
            with open("/dev/" + name, "wb", buffering=0) as f:
                f.write(os.urandom(1 << 20))
            self.assertNotEqual(bt.read_attr("/sys/block/%s/mm_stat" % name),
                                before)
            # A change the poll must find, made after the writes: the round
            # that finds it reads mm_stat too.
            subprocess.run(["blockdev", "--setro", "/dev/" + name], check=True)
            rec.wait_for(lambda s: any(
                x[1] == "PropertiesChanged" and x[2] == disk for x in s))
            rec.pump(0.5)
            changes = [x[3][1] for x in rec.signals
                       if x[1] == "PropertiesChanged" and x[2] == disk]
            self.assertEqual(changes, [{"ro": "1", "ReadOnly": True}])
            rec.close()

    def test_overflow_is_healed(self):
        """A tiny receive buffer and a stopped daemon make the kernel drop
        events; after SIGCONT the daemon notices, rescans, and the model
        equals sysfs again."""
        images = []
        for i in range(6):
            d = os.path.join(self.tmp, str(i))
            os.mkdir(d)
            images.append(make_image(d, 8, 3))
        loops = [self.new_loop() for _ in images]
        with bt.Daemon("/sys", no_uevents=False,
                       extra_args=["--uevent-rcvbuf=1"]) as dm:
            self.assertEqual(dm.manager_prop("EventsLost"), 0)
            rec = bt.SignalRecorder()
            dm.proc.send_signal(signal.SIGSTOP)
            try:
                for loop, img in zip(loops, images):
                    loop.attach(img, partitions=True)
            finally:
                dm.proc.send_signal(signal.SIGCONT)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                rec.pump(0.1)
                if dm.manager_prop("EventsLost") > 0 and \
                        published_block_devices(dm) == sysfs_block_devices():
                    break
            self.assertGreater(dm.manager_prop("EventsLost"), 0,
                               dm.output()[-2000:])
            self.assertEqual(published_block_devices(dm),
                             sysfs_block_devices(), "\n".join(
                l for l in dm.output().splitlines()
                if "autosuspend" not in l and "about" not in l)[-6000:])
            # EventsLost says it emits PropertiesChanged: on the Manager.
            lost = dm.manager_prop("EventsLost")
            rec.wait_for(lambda s: any(
                x[1] == "PropertiesChanged" and x[2] == bt.MANAGER_PATH and
                x[3][0] == bt.MANAGER and x[3][1].get("EventsLost") == lost
                for x in s))
            self.assertNotIn("Cannot announce EventsLost", dm.output())
            rec.close()
            for loop in loops:
                loop.detach()
            # And back in step after the detach storm too.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and \
                    published_block_devices(dm) != sysfs_block_devices():
                time.sleep(0.1)
            self.assertEqual(published_block_devices(dm),
                             sysfs_block_devices())


if __name__ == "__main__":
    bt.main()
