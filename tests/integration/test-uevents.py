# SPDX-License-Identifier: LGPL-2.1-or-later
"""The live model on a fixture: uevents injected through --uevent-socket.

Each test changes the fixture tree the way the kernel changes sysfs, sends
the uevent the kernel would send, and checks the model, the signals and
their order, and the event log.
"""
import os
import signal
import socket
import threading
import time
import unittest

import blkmodeltest as bt
import mksysfs

DISK = bt.IFACE + "Disk"
PARTITION = bt.IFACE + "Partition"
MANAGER = bt.IFACE + "Manager"
VIRT = "devices/virtual/block"


def devpath(rel):
    return "/" + rel


class Fixture:
    """Kernel-like changes to a fixture tree."""

    def __init__(self, root):
        self.root = root
        self.b = mksysfs.Builder(mksysfs.Tree(root))

    def add_loop(self, n, partitions=0):
        name = "loop%d" % n
        rel = self.b.disk(os.path.join(VIRT, name), name, (7, n * 16), 131072,
                          40 + n, "[none] mq-deadline", None, diskseq=40 + n,
                          attrs={"partscan": 1})
        parts = []
        for p in range(1, partitions + 1):
            pname = "%sp%d" % (name, p)
            parts.append(self.b.partition(rel, pname, (7, n * 16 + p), p,
                                          2048 * p, 2048, 50 + p,
                                          diskseq=40 + n))
        return rel, parts

    def unlink_farm(self, rel, devnum):
        name = os.path.basename(rel)
        for link in ("class/block/" + name, "dev/block/%d:%d" % devnum,
                     "block/" + name):
            try:
                os.unlink(os.path.join(self.root, link))
            except FileNotFoundError:
                pass

    def remove(self, rel, devnum):
        self.unlink_farm(rel, devnum)
        bt.remove_tree(self.root, rel)

    def rename(self, rel, new_rel, devnum, partitions=()):
        """As the kernel renames a disk: its links go, its directory moves and
        its links come back under the new name; its partitions keep theirs,
        their links following the directory.  partitions: (name, devnum)."""
        name = os.path.basename(new_rel)
        self.unlink_farm(rel, devnum)
        for pname, pdevnum in partitions:
            for link in ("class/block/" + pname, "dev/block/%d:%d" % pdevnum):
                os.unlink(os.path.join(self.root, link))
        os.rename(os.path.join(self.root, rel), os.path.join(self.root, new_rel))
        self.b.farm(new_rel, name, devnum)
        self.b.t.link(os.path.join("block", name), new_rel)
        for pname, pdevnum in partitions:
            self.b.farm(os.path.join(new_rel, pname), pname, pdevnum)

    def write(self, rel, value):
        with open(os.path.join(self.root, rel), "w") as f:
            f.write(value + "\n")


def uevents(rec):
    return [s[3] for s in rec.signals if s[1] == "Uevent"]


def members(rec, *names):
    return [s for s in rec.signals if s[1] in names]


class LiveModel(unittest.TestCase):
    def setUp(self):
        self.dir = bt.make_fixture()
        self.sys = os.path.join(self.dir, "sys")
        self.fx = Fixture(self.sys)
        self.dm = bt.Daemon(self.sys, uevent_socket=True)
        self.rec = bt.SignalRecorder()

    def tearDown(self):
        self.rec.close()
        self.dm.stop()

    def send(self, action, rel, **env):
        e = {"SUBSYSTEM": "block"}
        e.update({k: str(v) for k, v in env.items()})
        self.dm.send_uevent(action, devpath(rel), e)

    def wait_uevents(self, n):
        return self.rec.wait_for(lambda s: len(uevents(self.rec)) >= n)

    def test_add_resize_remove(self):
        last0 = self.dm.manager_prop("LastSeqnum")
        rel, parts = self.fx.add_loop(3, partitions=2)
        disk_path = bt.path_of("block", "loop3")
        p1_path = bt.path_of("block", "loop3", "loop3p1")

        self.send("add", rel, DEVTYPE="disk", MAJOR=7, MINOR=48,
                  DEVNAME="loop3")
        for i, p in enumerate(parts, 1):
            self.send("add", p, DEVTYPE="partition", PARTN=i, MAJOR=7,
                      MINOR=48 + i)
        self.wait_uevents(3)

        # Published before its Uevent, with the kernel's values.
        order = [(s[1], s[3][0] if s[1] != "Uevent" else s[3][3])
                 for s in members(self.rec, "InterfacesAdded", "Uevent")]
        self.assertEqual(order[0], ("InterfacesAdded", disk_path))
        first_uevent = [i for i, o in enumerate(order) if o[0] == "Uevent"][0]
        self.assertIn(("InterfacesAdded", p1_path), order[:first_uevent])
        self.assertEqual(self.dm.get(disk_path, DISK, "Size"), 131072 * 512)
        self.assertEqual(self.dm.get(p1_path, PARTITION, "Start"), 2048 * 512)
        self.assertEqual(self.dm.get(disk_path, DISK, "Partitions"),
                         [p1_path, bt.path_of("block", "loop3", "loop3p2")])

        ev = uevents(self.rec)
        self.assertEqual([e[0] for e in ev], [last0 + 1, last0 + 2, last0 + 3])
        self.assertEqual([e[1] for e in ev], ["add"] * 3)
        self.assertEqual(ev[0][2], devpath(rel))
        self.assertEqual(ev[0][3], disk_path)
        self.assertEqual(ev[0][4]["DEVNAME"], "loop3")
        self.assertEqual(ev[0][4]["SUBSYSTEM"], "block")

        # Resize: PropertiesChanged for exactly Size and size, then the
        # Uevent: a client that reads its cache on the Uevent has the size.
        self.rec.signals.clear()
        self.fx.write(os.path.join(rel, "size"), "262144")
        self.send("change", rel, RESIZE=1, DEVTYPE="disk")
        self.wait_uevents(1)
        self.assertEqual([s[1] for s in self.rec.signals],
                         ["PropertiesChanged", "Uevent"])
        changed = self.rec.signals[0]
        self.assertEqual(changed[2], disk_path)
        self.assertEqual(changed[3][0], DISK)
        self.assertEqual(changed[3][1], {"Size": 262144 * 512,
                                         "size": "262144"})
        self.assertEqual(self.dm.get(disk_path, DISK, "Size"), 262144 * 512)

        # A change that changes nothing announces nothing but the Uevent.
        self.rec.signals.clear()
        self.send("change", rel, DEVTYPE="disk")
        self.wait_uevents(1)
        self.assertEqual([s[1] for s in self.rec.signals], ["Uevent"])

        # Remove a partition: gone before its Uevent; the disk's list follows.
        self.rec.signals.clear()
        self.fx.remove(parts[0], (7, 49))
        self.send("remove", parts[0], DEVTYPE="partition")
        self.wait_uevents(1)
        names = [s[1] for s in self.rec.signals]
        self.assertLess(names.index("InterfacesRemoved"), names.index("Uevent"))
        self.assertEqual(uevents(self.rec)[0][3], p1_path)
        self.assertEqual(self.dm.get(disk_path, DISK, "Partitions"),
                         [bt.path_of("block", "loop3", "loop3p2")])
        part_changes = [s for s in self.rec.signals
                        if s[1] == "PropertiesChanged" and s[2] == disk_path]
        self.assertEqual(part_changes[0][3][1],
                         {"Partitions": [bt.path_of("block", "loop3",
                                                    "loop3p2")]})

        # Remove the disk (the kernel sends the partition first).
        self.rec.signals.clear()
        self.fx.remove(rel, (7, 48))
        self.send("remove", parts[1], DEVTYPE="partition")
        self.send("remove", rel, DEVTYPE="disk")
        self.wait_uevents(2)
        objs = self.dm.managed_objects()
        self.assertNotIn(disk_path, objs)
        self.assertFalse([p for p in objs if p.startswith(disk_path + "/")])
        removed = [s[3][0] for s in self.rec.signals
                   if s[1] == "InterfacesRemoved"]
        self.assertIn(disk_path, removed)
        self.assertIn(disk_path + "/queue", removed)

        # Gap-free, and the log replays exactly what was signalled.
        last = self.dm.manager_prop("LastSeqnum")
        self.assertEqual(last, last0 + 8)
        replay = self.dm.manager("GetEvents", bt.dbus.UInt64(last0))
        self.assertEqual([e[0] for e in replay], list(range(last0 + 1,
                                                            last + 1)))
        self.assertEqual([e[1] for e in replay],
                         ["add", "add", "add", "change", "change", "remove",
                          "remove", "remove"])
        self.assertEqual(self.dm.manager("GetEvents", bt.dbus.UInt64(last)), [])

    def test_move_renames(self):
        rel, _ = self.fx.add_loop(4)
        self.send("add", rel, DEVTYPE="disk")
        self.wait_uevents(1)
        # The kernel renames the directory and its links, then sends move.
        new_rel = os.path.join(VIRT, "loop9")
        self.fx.rename(rel, new_rel, (7, 64))
        self.rec.signals.clear()
        self.send("move", new_rel, DEVPATH_OLD=devpath(rel), DEVTYPE="disk")
        self.wait_uevents(1)
        objs = self.dm.managed_objects()
        self.assertNotIn(bt.path_of("block", "loop4"), objs)
        self.assertIn(bt.path_of("block", "loop9"), objs)
        self.assertEqual(objs[bt.path_of("block", "loop9")]
                         [bt.IFACE + "Kobject"]["DevPath"], devpath(new_rel))
        names = [s[1] for s in self.rec.signals]
        self.assertEqual(names[-1], "Uevent")
        self.assertIn("InterfacesRemoved", names)
        self.assertIn("InterfacesAdded", names)
        self.assertEqual(uevents(self.rec)[0][1], "move")
        self.assertEqual(uevents(self.rec)[0][4]["DEVPATH_OLD"], devpath(rel))

    def test_renames_read_late_keep_the_partitions(self):
        """A disk renamed and renamed back faster than the daemon reads (the
        soak audit's replay): a change read while an object under the old
        name still holds its partitions' names adds the disk without them
        (EEXIST); the rename that takes that object away brings them."""
        rel, parts = self.fx.add_loop(4, partitions=2)
        self.send("add", rel, DEVTYPE="disk")
        for p in parts:
            self.send("add", p, DEVTYPE="partition")
        self.wait_uevents(3)
        other = os.path.join(VIRT, "loop4-mv")

        def rename(src, dst):
            self.fx.rename(src, dst, (7, 64), [("loop4p%d" % n, (7, 64 + n)) for n in (1, 2)])

        def move(src, dst):
            self.send("move", dst, DEVPATH_OLD=devpath(src), DEVTYPE="disk")

        rename(rel, other)
        move(rel, other)
        self.wait_uevents(4)
        # Renamed back (M2) and again (M3): M2 read while the tree has the new name.
        rename(other, rel)
        rename(rel, other)
        move(other, rel)
        self.wait_uevents(5)
        # Back once more (M4); a change of loop4 read before M3 and M4.
        rename(other, rel)
        self.send("change", rel, DEVTYPE="disk")
        self.wait_uevents(6)
        self.rec.signals.clear()
        move(rel, other)
        move(other, rel)
        self.wait_uevents(2)
        disk = bt.path_of("block", "loop4")
        # Told, as a caching client needs it.
        self.assertEqual(sorted(s[3][0] for s in members(self.rec, "InterfacesAdded")
                                if s[3][0].startswith(disk + "/loop4p")),
                         [disk + "/loop4p1", disk + "/loop4p2"])
        objs = self.dm.managed_objects()
        self.assertEqual(sorted(objs[disk][bt.DISK]["Partitions"]),
                         [disk + "/loop4p1", disk + "/loop4p2"])
        self.assertIn(disk + "/loop4p2", objs)
        self.assertNotIn(bt.path_of("block", "loop4_2dmv"), objs)

    def test_move_read_after_the_device_went_names_no_object(self):
        # loop4 renamed to loop9, and loop9 gone too before the daemon reads the move: the move's
        # Uevent names no object ("/"), not loop4, whose InterfacesRemoved came just before it.
        rel, _ = self.fx.add_loop(4)
        self.send("add", rel, DEVTYPE="disk")
        self.wait_uevents(1)
        new_rel = os.path.join(VIRT, "loop9")
        self.fx.rename(rel, new_rel, (7, 64))
        self.fx.remove(new_rel, (7, 64))
        self.rec.signals.clear()
        self.send("move", new_rel, DEVPATH_OLD=devpath(rel), DEVTYPE="disk")
        self.wait_uevents(1)
        removed = [s[3][0] for s in members(self.rec, "InterfacesRemoved")]
        self.assertIn(bt.path_of("block", "loop4"), removed)
        ev = uevents(self.rec)[0]
        self.assertEqual((ev[1], ev[2], ev[3]), ("move", devpath(new_rel), "/"))
        objs = self.dm.managed_objects()
        self.assertNotIn(bt.path_of("block", "loop4"), objs)
        self.assertNotIn(bt.path_of("block", "loop9"), objs)

    def test_holders_and_slaves_follow_stacking(self):
        rel, parts = self.fx.add_loop(5, partitions=1)
        self.send("add", rel, DEVTYPE="disk")
        self.send("add", parts[0], DEVTYPE="partition", PARTN=1)
        self.wait_uevents(2)
        lower = bt.path_of("block", "loop5", "loop5p1")
        self.assertEqual(self.dm.get(lower, PARTITION, "Holders"), [])

        # A dm device appears over loop5p1: the kernel links both ways.
        dm_rel = self.fx.b.disk(os.path.join(VIRT, "dm-1"), "dm-1", (253, 1),
                                2048, 60, "[none] mq-deadline", None)
        self.fx.b.stack(parts[0], dm_rel)
        upper = bt.path_of("block", "dm-1")
        self.rec.signals.clear()
        self.send("add", dm_rel, DEVTYPE="disk")
        self.wait_uevents(1)
        self.assertEqual(self.dm.get(upper, DISK, "Slaves"), [lower])
        self.assertEqual(self.dm.get(lower, PARTITION, "Holders"), [upper])
        holders = [s[3][1] for s in self.rec.signals
                   if s[1] == "PropertiesChanged" and s[2] == lower]
        self.assertEqual(holders, [{"Holders": [upper]}])
        names = [s[1] for s in self.rec.signals]
        self.assertLess(names.index("PropertiesChanged"), names.index("Uevent"))

        # And goes: the lower device's Holders follow.
        self.rec.signals.clear()
        os.unlink(os.path.join(self.sys, parts[0], "holders", "dm-1"))
        self.fx.remove(dm_rel, (253, 1))
        self.send("remove", dm_rel, DEVTYPE="disk")
        self.wait_uevents(1)
        self.assertEqual(self.dm.get(lower, PARTITION, "Holders"), [])
        holders = [s[3][1] for s in self.rec.signals
                   if s[1] == "PropertiesChanged" and s[2] == lower]
        self.assertEqual(holders, [{"Holders": []}])

    def test_a_device_back_under_its_name_before_its_remove_is_read(self):
        """losetup -d then losetup at once: the kernel deletes loop6 and
        makes a new one before the daemon reads the remove, so sysfs lists
        loop6 again.  The remove is the kernel's (no SYNTH_UUID): the object
        clients hold goes, and the new device comes, with its own values."""
        rel, _ = self.fx.add_loop(6)
        path = bt.path_of("block", "loop6")
        self.send("add", rel, DEVTYPE="disk")
        self.wait_uevents(1)
        self.dm.get_all(path, DISK)
        self.rec.signals.clear()

        self.fx.remove(rel, (7, 96))
        self.fx.add_loop(6)
        self.fx.write(os.path.join(rel, "size"), "65536")
        self.send("remove", rel, DEVTYPE="disk")
        self.send("add", rel, DEVTYPE="disk")
        self.wait_uevents(2)
        seen = [(s[1], s[3][1] if s[1] == "Uevent" else s[3][0])
                for s in self.rec.signals
                if s[1] in ("InterfacesRemoved", "InterfacesAdded", "Uevent")
                and (s[1] == "Uevent" or s[3][0] == path)]
        self.assertEqual(seen, [("InterfacesRemoved", path), ("Uevent", "remove"),
                                ("InterfacesAdded", path), ("Uevent", "add")])
        added = [s[3][1] for s in self.rec.signals if s[1] == "InterfacesAdded"
                 and s[3][0] == path][0]
        self.assertEqual(added[DISK]["Size"], 65536 * 512)
        self.assertEqual(self.dm.get(path, DISK, "Size"), 65536 * 512)

        # udevadm trigger --action=remove: marked by the kernel, it stays.
        self.rec.signals.clear()
        self.send("remove", rel, DEVTYPE="disk", SYNTH_UUID=0)
        self.wait_uevents(1)
        self.assertEqual([s[1] for s in self.rec.signals], ["Uevent"])
        self.assertEqual(uevents(self.rec)[0][3], path)

    def test_partitions_gone_before_their_removes_are_not_changed(self):
        """losetup -d: the disk's change (size 0) is read after its
        partitions' directories went, before their removes are.  Read then,
        a partition's files are gone, which no value changed to: nothing is
        told of it but its removal."""
        rel, parts = self.fx.add_loop(7, partitions=2)
        self.send("add", rel, DEVTYPE="disk")
        for i, p in enumerate(parts, 1):
            self.send("add", p, DEVTYPE="partition", PARTN=i)
        self.wait_uevents(3)
        paths = [bt.path_of("block", "loop7", "loop7p%d" % i) for i in (1, 2)]
        for p in paths:
            self.dm.get_all(p, PARTITION)
        self.rec.signals.clear()
        for i, p in enumerate(parts, 1):
            self.fx.remove(p, (7, 7 * 16 + i))
        self.fx.write(os.path.join(rel, "size"), "0")
        self.send("change", rel, DEVTYPE="disk")
        for p in parts:
            self.send("remove", p, DEVTYPE="partition")
        self.wait_uevents(3)
        told = [(s[1], s[2] if s[1] == "PropertiesChanged" else s[3][0])
                for s in self.rec.signals if s[1] != "Uevent"
                and (s[2] in paths or (s[1] != "PropertiesChanged"
                                       and s[3][0] in paths))]
        self.assertEqual(told, [("InterfacesRemoved", p) for p in paths])

    def test_a_disk_torn_down_never_lists_a_partition_gone(self):
        """A disk torn down: the kernel sends each partition's remove and
        then the disk's, each just before it deletes the directory.  Read
        late, a partition's remove finds the disk's directory gone too; its
        Partitions, which the model decides, is told all the same, before
        the Uevent, as when the directory is still there: a client that
        follows the signals never holds a disk listing a partition that
        went."""
        rel, parts = self.fx.add_loop(8, partitions=2)
        self.send("add", rel, DEVTYPE="disk")
        for i, p in enumerate(parts, 1):
            self.send("add", p, DEVTYPE="partition", PARTN=i)
        self.wait_uevents(3)
        disk = bt.path_of("block", "loop8")
        paths = [bt.path_of("block", "loop8", "loop8p%d" % i) for i in (1, 2)]
        listed = self.dm.get_all(disk, DISK)["Partitions"]
        self.assertEqual(listed, paths)
        self.rec.signals.clear()
        for i, p in enumerate(parts, 1):
            self.fx.unlink_farm(p, (7, 128 + i))
        self.fx.remove(rel, (7, 128))
        for p in parts:
            self.send("remove", p, DEVTYPE="partition")
        self.send("remove", rel, DEVTYPE="disk")
        self.wait_uevents(3)
        gone = set()
        for s in self.rec.signals:
            if s[1] == "PropertiesChanged" and s[2] == disk:
                self.assertEqual(s[3][1], {"Partitions": listed[1:]})
                listed = s[3][1]["Partitions"]
            elif s[1] == "InterfacesRemoved" and s[3][0] in paths:
                gone.add(s[3][0])
            elif s[1] == "Uevent" and s[3][3] in paths:
                self.assertEqual(gone & set(listed), set(), s[3][2])
        self.assertEqual(listed, [])

    def stack_dm_over(self, n_loops):
        """dm-1 over the first of n_loops new loop disks' partitions."""
        lowers = []
        for i in range(n_loops):
            rel, parts = self.fx.add_loop(5 + i, partitions=1)
            self.send("add", rel, DEVTYPE="disk")
            self.send("add", parts[0], DEVTYPE="partition", PARTN=1)
            lowers.append((parts[0], bt.path_of("block", "loop%d" % (5 + i),
                                                "loop%dp1" % (5 + i))))
        dm_rel = self.fx.b.disk(os.path.join(VIRT, "dm-1"), "dm-1", (253, 1),
                                2048, 60, "[none] mq-deadline", None)
        self.fx.b.stack(lowers[0][0], dm_rel)
        self.send("add", dm_rel, DEVTYPE="disk")
        self.wait_uevents(2 * n_loops + 1)
        upper = bt.path_of("block", "dm-1")
        self.assertEqual(self.dm.get(upper, DISK, "Slaves"), [lowers[0][1]])
        for path in (upper, lowers[0][1], lowers[1][1]):  # as a client would
            self.dm.get_all(path, bt.IFACE + "Kobject")
        return dm_rel, upper, lowers

    def restack(self, dm_rel, old_rel, new_rel):
        name = os.path.basename(dm_rel)
        os.unlink(os.path.join(self.sys, old_rel, "holders", name))
        os.unlink(os.path.join(self.sys, dm_rel, "slaves",
                               os.path.basename(old_rel)))
        self.fx.b.stack(new_rel, dm_rel)

    def links_told(self, upper, old_lower, new_lower):
        return {s[2]: s[3][1] for s in self.rec.signals
                if s[1] == "PropertiesChanged"
                and s[2] in (upper, old_lower, new_lower)}

    def test_a_table_reload_moves_the_links(self):
        """dmsetup reload + resume: the kernel relinks, then sends change
        on the dm device alone.  Its Slaves and both lower devices'
        Holders are told, before its Uevent."""
        dm_rel, upper, ((old_rel, old), (new_rel, new)) = self.stack_dm_over(2)
        self.rec.signals.clear()
        self.restack(dm_rel, old_rel, new_rel)
        # dmsetup --noudevsync: no DM_COOKIE, nothing but the plain keys.
        self.send("change", dm_rel, DEVTYPE="disk")
        self.wait_uevents(1)
        self.assertEqual(self.links_told(upper, old, new), {
            upper: {"Slaves": [new]}, old: {"Holders": []},
            new: {"Holders": [upper]}})
        names = [s[1] for s in self.rec.signals]
        self.assertEqual(names[-1], "Uevent")
        self.assertEqual(self.dm.get(new, PARTITION, "Holders"), [upper])

    def test_links_moved_without_an_event_are_found_by_the_poll(self):
        """A table loaded but not resumed (no event yet) links already:
        Holders and Slaves carry no EmitsChangedSignal annotation, so the
        poll must tell them (the daemon polls every 2 s here)."""
        dm_rel, upper, ((old_rel, old), (new_rel, new)) = self.stack_dm_over(2)
        self.rec.signals.clear()
        self.restack(dm_rel, old_rel, new_rel)
        want = {upper: {"Slaves": [new]}, old: {"Holders": []},
                new: {"Holders": [upper]}}
        self.rec.wait_for(lambda s: self.links_told(upper, old, new) == want,
                          timeout=60)
        self.assertEqual(uevents(self.rec), [])

    def test_a_change_of_the_lower_disk_keeps_its_holders_in_mind(self):
        """dm-1 over the whole disk loop5.  A change of loop5 re-reads its
        slaves/, not its holders/: its holder must still be known when
        loop5 goes (hot-unplugged), so that dm-1's Slaves are told."""
        rel, _ = self.fx.add_loop(5)
        self.send("add", rel, DEVTYPE="disk")
        dm_rel = self.fx.b.disk(os.path.join(VIRT, "dm-1"), "dm-1", (253, 1),
                                2048, 60, "[none] mq-deadline", None)
        self.fx.b.stack(rel, dm_rel)
        self.send("add", dm_rel, DEVTYPE="disk")
        self.wait_uevents(2)
        upper, lower = bt.path_of("block", "dm-1"), bt.path_of("block", "loop5")
        self.assertEqual(self.dm.get(upper, DISK, "Slaves"), [lower])
        self.send("change", rel, DEVTYPE="disk")
        self.wait_uevents(3)
        self.rec.signals.clear()
        os.unlink(os.path.join(self.sys, dm_rel, "slaves", "loop5"))
        self.fx.remove(rel, (7, 80))
        self.send("remove", rel, DEVTYPE="disk")
        self.wait_uevents(1)
        told = [s[3][1] for s in self.rec.signals
                if s[1] == "PropertiesChanged" and s[2] == upper]
        self.assertEqual(told, [{"Slaves": []}])

    def test_files_a_change_adds_to_a_group(self):
        """md's array start adds files to md/ and sends a change of its disk
        (do_md_run()): the disk's directory lists as before, its group's does
        not.  The files are published at the event, and told."""
        md0 = os.path.join(VIRT, "md0")
        path = bt.path_of("block", "md0")
        group = bt.IFACE + "Group.md"
        self.assertNotIn("stripe_cache_size", self.dm.get_all(path, group))
        self.fx.write(os.path.join(md0, "md", "stripe_cache_size"), "256")
        os.unlink(os.path.join(self.sys, md0, "md", "resync_start"))
        self.send("change", md0, DEVTYPE="disk", MAJOR=9, MINOR=0, DEVNAME="md0")
        self.wait_uevents(1)
        props = self.dm.get_all(path, group)
        self.assertEqual(props["stripe_cache_size"], "256")
        self.assertNotIn("resync_start", props)
        added = [s[3][1] for s in members(self.rec, "InterfacesAdded")
                 if s[3][0] == path and group in s[3][1]]
        self.assertEqual([a[group]["stripe_cache_size"] for a in added], ["256"])

    def test_scheduler_switched_while_a_change_is_read(self):
        # A disk's change is read whole, with its queue and iosched, while the scheduler is
        # switched (elevator_switch() drops the old iosched, adds the new one): an iosched listed
        # and then gone makes the reading read the queue, which replaces the iosched object under
        # the reading of it.  The daemon must outlive that, and end with the kernel's scheduler.
        rel, _ = self.fx.add_loop(5)
        q = os.path.join(self.sys, rel, "queue")
        self.fx.write(os.path.join(rel, "queue", "scheduler"), "none [mq-deadline] bfq ")
        tree = mksysfs.Tree(self.dir)
        stage = {}
        for sched in ("mq-deadline", "bfq"):
            stage[sched] = tree.dir(os.path.join("stage", sched))
            tree.attrs(stage[sched], mksysfs.IOSCHED[sched], mksysfs.RW)
        os.rename(os.path.join(self.dir, stage["mq-deadline"]), os.path.join(q, "iosched"))
        self.send("add", rel, DEVTYPE="disk")
        self.wait_uevents(1)
        self.assertNotEqual(self.dm.get(bt.path_of("block", "loop5", "queue"), bt.QUEUE,
                                        "Elevator"), "/")

        def scheduler(text):
            tmp = os.path.join(self.dir, "scheduler.tmp")
            with open(tmp, "w") as f:
                f.write(text + " \n")
            os.chmod(tmp, 0o644)
            os.replace(tmp, os.path.join(q, "scheduler"))

        stop = threading.Event()

        def switch():
            os.rename(os.path.join(q, "iosched"), os.path.join(self.dir, stage["mq-deadline"]))
            while not stop.is_set():
                for sched in ("bfq", "mq-deadline"):
                    scheduler({"bfq": "none mq-deadline [bfq]",
                               "mq-deadline": "none [mq-deadline] bfq"}[sched])
                    os.rename(os.path.join(self.dir, stage[sched]), os.path.join(q, "iosched"))
                    time.sleep(0.0005)
                    os.rename(os.path.join(q, "iosched"), os.path.join(self.dir, stage[sched]))
                    scheduler("[none] mq-deadline bfq")

        switcher = threading.Thread(target=switch)
        switcher.start()
        try:
            deadline = time.monotonic() + 3
            n = 0
            while time.monotonic() < deadline and self.dm.proc.poll() is None:
                # Keys beyond a plain change's: the disk is read whole, with what follows it.
                self.send("change", rel, DEVTYPE="disk", DM_COOKIE=n)
                n += 1
                time.sleep(0.002)
        finally:
            stop.set()
            switcher.join()
        self.assertIsNone(self.dm.proc.poll(), self.dm.output()[-3000:])
        # Settled on "none": the model says so after the next change.
        self.rec.signals.clear()
        self.send("change", rel, DEVTYPE="disk", DM_COOKIE="end")
        self.rec.wait_for(lambda s: any(x[1] == "Uevent" and x[3][4].get("DM_COOKIE") == "end"
                                        for x in s))
        queue = bt.path_of("block", "loop5", "queue")
        self.assertEqual(self.dm.get(queue, bt.QUEUE, "Scheduler"), "none")
        self.assertEqual(self.dm.get(queue, bt.QUEUE, "Elevator"), "/")
        self.assertNotIn(queue + "/iosched", self.dm.managed_objects())

    def test_add_of_existing_is_harmless(self):
        before = self.dm.managed_objects()
        sda = "devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/" \
              "0:0:0:0/block/sda"
        self.assertTrue(os.path.isdir(os.path.join(self.sys, sda)))
        self.send("add", sda, DEVTYPE="disk")
        self.wait_uevents(1)
        self.assertEqual(self.dm.managed_objects().keys(), before.keys())
        self.assertFalse(members(self.rec, "InterfacesAdded",
                                 "InterfacesRemoved"))

    def test_event_for_vanished_device(self):
        # add for a directory that is already gone: logged, signalled with "/".
        self.send("add", os.path.join(VIRT, "loop7"), DEVTYPE="disk")
        self.wait_uevents(1)
        self.assertEqual(uevents(self.rec)[0][3], "/")
        self.assertNotIn(bt.path_of("block", "loop7"),
                         self.dm.managed_objects())

    def test_non_block_events_ignored(self):
        last = self.dm.manager_prop("LastSeqnum")
        self.dm.send_uevent("add", "/devices/virtual/net/lo",
                            {"SUBSYSTEM": "net"})
        rel, _ = self.fx.add_loop(5)
        self.send("add", rel, DEVTYPE="disk")
        self.wait_uevents(1)
        self.assertEqual(self.dm.manager_prop("LastSeqnum"), last + 1)
        self.assertEqual(uevents(self.rec)[0][2], devpath(rel))

    def test_odd_values_and_repeated_keys_applied(self):
        """What the kernel really sends: a dm name may hold any byte but
        '/', and a synthetic uevent's arguments come through unchecked,
        repeats too.  Such an event is applied and signalled, its values
        escaped as attribute values are and a repeated key's last value
        kept; dropped, the resize it told of was lost."""
        rel, _ = self.fx.add_loop(4)
        self.send("add", rel, DEVTYPE="disk")
        self.wait_uevents(1)
        self.rec.signals.clear()
        self.fx.write(os.path.join(rel, "size"), "4096")
        path = devpath(rel)
        raw = (b"change@" + path.encode() + b"\0ACTION=change\0DEVPATH=" + path.encode() +
               b"\0SUBSYSTEM=block\0DM_NAME=vg\xff-\xef\xbf\xbe\0SYNTH_ARG_A=1\0"
               b"SYNTH_ARG_A=2\0")
        self.dm.send_uevent(None, None, raw=raw)
        self.wait_uevents(1)
        ev = uevents(self.rec)[0]
        self.assertEqual(ev[3], bt.path_of("block", "loop4"))
        self.assertEqual(ev[4]["DM_NAME"], "vg\\xff-\\xef\\xbf\\xbe")
        self.assertEqual(ev[4]["SYNTH_ARG_A"], "2")
        changed = [s[3][1] for s in self.rec.signals if s[1] == "PropertiesChanged"]
        self.assertEqual(changed, [{"Size": 4096 * 512, "size": "4096"}])
        self.assertEqual(self.dm.manager("GetEvents", bt.dbus.UInt64(ev[0] - 1))[0][4],
                         ev[4])
        self.assertEqual(self.dm.manager_prop("EventsLost"), 0)

    def test_malformed_datagrams_dropped(self):
        before = self.dm.managed_objects()
        last = self.dm.manager_prop("LastSeqnum")
        bad = [
            b"",
            b"add@/devices/virtual/block/loop0",                   # no NUL
            b"add@/devices/virtual/block/loop0\0ACTION=add",       # no final NUL
            b"add@/devices/../block/loop0\0ACTION=add\0DEVPATH=/devices/"
            b"../block/loop0\0SUBSYSTEM=block\0SEQNUM=1\0",
            b"add@/devices//virtual\0ACTION=add\0DEVPATH=/devices//virtual"
            b"\0SUBSYSTEM=block\0SEQNUM=1\0",
            b"explode@/devices/virtual/block/loop0\0ACTION=explode\0DEVPATH="
            b"/devices/virtual/block/loop0\0SUBSYSTEM=block\0SEQNUM=1\0",
            b"add@/devices/x\0" + b"A=" + b"x" * 20000 + b"\0",
            os.urandom(512),
            bytes(range(256)) * 4,
        ]
        for raw in bad:
            self.dm.send_uevent(None, None, raw=raw)
        # A good one after them still works: the bad ones were dropped, not queued.
        rel, _ = self.fx.add_loop(6)
        self.send("add", rel, DEVTYPE="disk")
        self.wait_uevents(1)
        self.assertEqual(len(uevents(self.rec)), 1)
        self.assertEqual(self.dm.manager_prop("LastSeqnum"), last + 1)
        after = self.dm.managed_objects()
        for path, ifaces in before.items():
            self.assertIn(path, after)
        self.assertEqual(set(after) - set(before),
                         {p for p in after
                          if p.startswith(bt.path_of("block", "loop6"))})
        self.assertIn("dropped", self.dm.output())
        # Each drop says which rule was broken.
        out = self.dm.output()
        self.assertIn("malformed uevent (not NUL-terminated)", out)
        self.assertIn("malformed uevent (DEVPATH is no devpath", out)

    def test_rescan_synthesizes_differences(self):
        # Changes with no events: a new disk, a gone disk, a resized one.
        rel, _ = self.fx.add_loop(8, partitions=1)
        loop0 = os.path.join(VIRT, "loop0")
        self.fx.remove(loop0, (7, 0))
        sr0 = [r for r, _, _ in os.walk(os.path.join(self.sys, "devices"))
               if r.endswith("/block/sr0")][0]
        # Let warm-up record sr0's values first.
        self.rec.pump(0.5)
        with open(os.path.join(sr0, "size"), "w") as f:
            f.write("4194304\n")
        last = self.dm.manager_prop("LastSeqnum")
        self.dm.manager("Rescan")
        self.wait_uevents(4)
        ev = {(e[1], e[3]) for e in uevents(self.rec)}
        self.assertEqual(ev, {("add", bt.path_of("block", "loop8")),
                              ("add", bt.path_of("block", "loop8", "loop8p1")),
                              ("remove", bt.path_of("block", "loop0")),
                              ("change", bt.path_of("block", "sr0"))})
        for e in uevents(self.rec):
            self.assertEqual(e[4]["BLKMODEL_SYNTHESIZED"], "1")
            self.assertEqual(e[4]["ACTION"], e[1])
        self.assertEqual(self.dm.manager_prop("LastSeqnum"), last + 4)
        sr0_changes = [s for s in self.rec.signals
                       if s[1] == "PropertiesChanged" and
                       s[2] == bt.path_of("block", "sr0")]
        self.assertEqual(sr0_changes[0][3][1],
                         {"Size": 4194304 * 512, "size": "4194304"})

        # SIGHUP runs the same reconcile: now nothing differs.
        self.rec.signals.clear()
        self.dm.proc.send_signal(signal.SIGHUP)
        self.rec.pump(0.5)
        self.assertEqual(uevents(self.rec), [])
        self.assertEqual(self.dm.manager_prop("LastSeqnum"), last + 4)


class WhatAReplySaid(unittest.TestCase):
    """A reply reads values live.  One that differs from what the clients
    were told (a change the poll has not reached) is told to every client
    at once: else a client that read the new value while it lasted, and
    the others, would never hear of it (the poll compares with what the
    daemon was told last, which the value may go back to)."""

    def test_a_value_read_live_is_told_to_everyone(self):
        sys_ = os.path.join(bt.make_fixture(), "sys")
        queue = bt.path_of("block", "sda", "queue")
        qdir = [r for r, _, _ in os.walk(os.path.join(sys_, "devices"))
                if r.endswith("/block/sda/queue")][0]
        QUEUE = bt.IFACE + "Queue"

        def write(value):
            with open(os.path.join(qdir, "read_ahead_kb"), "w") as f:
                f.write(value + "\n")

        # No poll: what is told here is told by the replies alone.
        with bt.Daemon(sys_, extra_args=["--poll-interval=0"]) as dm:
            dm.managed_objects()  # what everyone holds: 128
            rec = bt.SignalRecorder()
            write("1024")
            self.assertEqual(dm.get_all(queue, QUEUE)["read_ahead_kb"], "1024")
            rec.wait_for(lambda s: any(x[1] == "PropertiesChanged" for x in s))
            write("128")
            self.assertEqual(dm.get(queue, QUEUE, "read_ahead_kb"), "128")
            told = rec.wait_for(lambda s: sum(
                1 for x in s if x[1] == "PropertiesChanged") >= 2)
            self.assertEqual([(x[2], x[3][0], x[3][1]) for x in told
                              if x[1] == "PropertiesChanged"],
                             [(queue, QUEUE, {"read_ahead_kb": "1024"}),
                              (queue, QUEUE, {"read_ahead_kb": "128"})])
            # Read again, unchanged: nothing more.
            dm.managed_objects()
            rec.pump(0.3)
            self.assertEqual(len([x for x in rec.signals
                                  if x[1] == "PropertiesChanged"]), 2)
            rec.close()


class SilentChanges(unittest.TestCase):
    def test_found_within_the_poll_interval(self):
        """SPEC §6: what changes without an event (ro: BLKROSET sends none) is
        told within the poll interval.  On a model this small a round has
        room for every object whole; reading a third each round took up to
        three intervals."""
        sys_ = os.path.join(bt.make_fixture(), "sys")
        with bt.Daemon(sys_, extra_args=["--poll-interval=1000"]) as dm:
            objs = dm.managed_objects()
            ro = {}
            for path, ifaces in objs.items():
                k = ifaces.get(bt.IFACE + "Kobject", {})
                if k.get("Ktype") in ("disk", "partition") and len(ro) < 10:
                    f = os.path.join(sys_, k["DevPath"].lstrip("/"), "ro")
                    if os.path.exists(f) and bt.read_attr(f) == "0":
                        ro[path] = f
            self.assertEqual(len(ro), 10)
            # A round has been measured; then the time from the end of one
            # round to the end of the next: the interval, or more on a loaded
            # machine (ASan, the suite beside), where the poll's 5 % budget
            # spaces the rounds out (2.8 s seen for an interval of 1 s).
            def round_ended():
                n = dm.output().count("A poll round took")
                self.assertTrue(bt.wait_until(
                    lambda: dm.output().count("A poll round took") > n, every=0.01, timeout=30))
                return time.monotonic()
            first = round_ended()
            cadence = max(round_ended() - first, 1.0)
            rec = bt.SignalRecorder()
            for f in ro.values():
                # A file of its own, should the tree share it; never empty.
                bt.write_attr(sys_, f, "1\n")
            start = time.monotonic()
            rec.wait_for(lambda s: {x[2] for x in s if x[1] == "PropertiesChanged"
                                    and x[3][1].get("ro") == "1"} >= set(ro),
                         timeout=30)
            # Within the next round, and room: a third a round took up to
            # three (all ten in two: (2/3)^10, 2 %).
            self.assertLess(time.monotonic() - start, 2.2 * cadence)
            rec.close()

    def test_uevent_file_found_within_the_poll_interval(self):
        """Kobject.Uevent and Partition.Number emit changes, so a disk's and
        a partition's uevent file changed without an event is told by the
        poll too, not only a hardware device's (it read only those)."""
        sys_ = os.path.join(bt.make_fixture(), "sys")
        with bt.Daemon(sys_, extra_args=["--poll-interval=500"]) as dm:
            objs = dm.managed_objects()
            sda, sda1 = bt.path_of("block", "sda"), bt.path_of("block", "sda", "sda1")
            files = {p: os.path.join(sys_, objs[p][bt.KOBJ]["DevPath"].lstrip("/"), "uevent")
                     for p in (sda, sda1)}
            self.assertTrue(bt.wait_until(
                lambda: "A poll round took" in dm.output(), timeout=30))
            rec = bt.SignalRecorder()
            for p, f in files.items():
                text = bt.read_attr(f)
                if p == sda1:
                    text = text.replace("PARTN=1", "PARTN=7")
                bt.write_attr(sys_, f, text + "\nPARTNAME=boot\n")
            told = rec.wait_for(lambda s: {x[2] for x in s if x[1] == "PropertiesChanged"
                                           and x[3][0] == bt.KOBJ} >= set(files), timeout=30)
            uevents = {x[2]: x[3][1]["Uevent"] for x in told
                       if x[1] == "PropertiesChanged" and x[3][0] == bt.KOBJ}
            self.assertEqual({p: u.get("PARTNAME") for p, u in uevents.items()},
                             {sda: "boot", sda1: "boot"})
            self.assertEqual(dm.get(sda1, bt.IFACE + "Partition", "Number"), 7)
            # Its own signal (org.blkmodel1.Partition), maybe not yet taken in by the recorder.
            rec.wait_for(lambda s: any(x[1] == "PropertiesChanged" and x[2] == sda1
                                       and x[3][1].get("Number") == 7 for x in s), timeout=30)
            rec.close()


class StartUp(unittest.TestCase):
    def test_events_during_the_scan_are_in_the_model_before_the_name(self):
        """The source is opened before the scan; what arrives meanwhile is
        applied before the name is taken (SPEC 6, Start)."""
        import time
        d = bt.make_fixture(disks=300, partitions=4)
        root = os.path.join(d, "sys")
        fx = Fixture(root)
        rel, _ = fx.add_loop(9, partitions=1)
        for attempt in range(5):
            dm = bt.Daemon(root, uevent_socket=True, wait=False)
            deadline = time.monotonic() + 30
            while not os.path.exists(dm.uevent_socket):
                self.assertLess(time.monotonic(), deadline)
            dm.proc.send_signal(signal.SIGSTOP)
            early = not dm.bus.name_has_owner(bt.BUS_NAME)
            if early:
                dm.send_uevent("add", devpath(rel), {"SUBSYSTEM": "block"})
            dm.proc.send_signal(signal.SIGCONT)
            dm.wait_for_name()
            if not early:
                dm.stop()  # the scan was too quick to catch: try again
                continue
            # No waiting: a client that sees the name sees the disk.
            objs = dm.managed_objects()
            self.assertIn(bt.path_of("block", "loop9"), objs)
            self.assertIn(bt.path_of("block", "loop9", "loop9p1"), objs)
            self.assertEqual(dm.manager("GetEvents", bt.dbus.UInt64(0))[0][1:4],
                             ["add", devpath(rel), bt.path_of("block", "loop9")])
            dm.stop()
            return
        self.skipTest("the scan always finished before the socket was seen")


class EventWindow(unittest.TestCase):
    def test_events_expired(self):
        d = bt.make_fixture()
        fx = Fixture(os.path.join(d, "sys"))
        with bt.Daemon(os.path.join(d, "sys"), uevent_socket=True,
                       extra_args=["--event-log-size=2"]) as dm:
            rec = bt.SignalRecorder()
            for n in range(10, 14):
                rel, _ = fx.add_loop(n)
                dm.send_uevent("add", devpath(rel), {"SUBSYSTEM": "block"})
            rec.wait_for(lambda s: len(uevents(rec)) >= 4)
            self.assertEqual(dm.manager_prop("LastSeqnum"), dm.seq(4))
            self.assertEqual(dm.manager_prop("OldestSeqnum"), dm.seq(3))
            self.assertEqual([e[0] for e in dm.manager("GetEvents", bt.dbus.UInt64(dm.seq(2)))],
                             [dm.seq(3), dm.seq(4)])
            with self.assertRaises(bt.dbus.DBusException) as cm:
                dm.manager("GetEvents", bt.dbus.UInt64(dm.seq(1)))
            self.assertEqual(cm.exception.get_dbus_name(),
                             "org.blkmodel1.Error.EventsExpired")
            # Expired from this daemon's log, not an earlier daemon's seqnum.
            self.assertTrue(cm.exception.get_dbus_message().startswith(
                "Events after %d" % dm.seq(1)), cm.exception.get_dbus_message())
            # 0, "from the first", names the first rather than 0.
            with self.assertRaises(bt.dbus.DBusException) as cm:
                dm.manager("GetEvents", bt.dbus.UInt64(0))
            self.assertEqual(cm.exception.get_dbus_name(),
                             "org.blkmodel1.Error.EventsExpired")
            self.assertTrue(cm.exception.get_dbus_message().startswith(
                "Events from the first (%d) are no longer retained (oldest is %d)"
                % (dm.seq(1), dm.seq(3))), cm.exception.get_dbus_message())
            rec.close()


class SocketPermissions(unittest.TestCase):
    def test_socket_is_private(self):
        d = bt.make_fixture()
        with bt.Daemon(os.path.join(d, "sys"), uevent_socket=True) as dm:
            st = os.stat(dm.uevent_socket)
            self.assertEqual(st.st_mode & 0o777, 0o600)
            # A sender of another uid is refused (run as nobody).
            if os.geteuid() == 0:
                raw = b"add@/devices/virtual/block/loop0\0ACTION=add\0" \
                      b"DEVPATH=/devices/virtual/block/loop0\0" \
                      b"SUBSYSTEM=block\0SEQNUM=1\0"
                os.chmod(dm.tmp, 0o755)
                os.chmod(dm.uevent_socket, 0o666)
                pid = os.fork()
                if pid == 0:
                    try:
                        os.setgid(65534)
                        os.setuid(65534)
                        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                        s.sendto(raw, dm.uevent_socket)
                        os._exit(0)
                    except BaseException:
                        os._exit(1)
                _, status = os.waitpid(pid, 0)
                self.assertEqual(status, 0)
                rec = bt.SignalRecorder()
                rec.pump(0.5)
                self.assertEqual(dm.manager_prop("LastSeqnum"), dm.seq(0))
                self.assertIn("dropped", dm.output())
                rec.close()


if __name__ == "__main__":
    bt.main()
