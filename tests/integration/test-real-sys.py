# SPDX-License-Identifier: LGPL-2.1-or-later
"""blkmodeld on this machine's own /sys (root only; CI runs as root).

A 64 MiB image with a GPT of two partitions is attached to a loop device
the test creates for itself (tests/lib/loopdev.py: never somebody's loop0;
partx adds the partitions: the kernels here have no partition parsers)
and switched to mq-deadline, so that there is an I/O scheduler object.
Then the daemon must publish the loop disk and both partitions with the
kernel's MAJ:MIN, size and start, and for every disk, partition, queue and
queue/iosched directory every attribute file must be a property with the
file's value (compared where two reads of the file agree: stat and
friends move).  Afterwards, also on failure, the scheduler is put back,
the device detached and deleted.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import blkmodeltest as bt
import loopdev

SYS = "/sys"
KOBJ = bt.IFACE + "Kobject"
DISK = bt.IFACE + "Disk"
PART = bt.IFACE + "Partition"
QUEUE = bt.IFACE + "Queue"
KSET = bt.IFACE + "Kset"

MiB = 1024 * 1024
# sfdisk script: the starts and sizes below in 512-byte sectors.
LAYOUT = [(2048, 20 * MiB // 512), (2048 + 20 * MiB // 512, 30 * MiB // 512)]


def read_value(path):
    """(True, published value) or (False, errno) for a real sysfs file."""
    try:
        return True, bt.read_published(path)
    except OSError as e:
        return False, e.errno


def is_partition_dir(path):
    return os.path.isfile(os.path.join(path, "partition"))


@unittest.skipUnless(os.geteuid() == 0, "needs root for a loop device")
class RealSys(unittest.TestCase):
    # As users run it: the daemon measures whether reading through io_uring
    # pays here (daemon/sysfs/read-many.h).
    DAEMON_ENV = None
    READ_WAY = "A system call costs "
    @classmethod
    def setUpClass(cls):
        for tool, package in (("losetup", "util-linux"), ("sfdisk", "fdisk"),
                              ("partx", "util-linux"), ("lsblk", "util-linux"),
                              ("udevadm", "udev")):
            if not shutil.which(tool):
                raise AssertionError("%s (%s) is required" % (tool, package))
        cls.tmp = tempfile.mkdtemp(prefix="blkmodel-realsys-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.img = os.path.join(cls.tmp, "disk.img")
        with open(cls.img, "wb") as f:
            f.truncate(64 * MiB)
        script = "label: gpt\n" + "".join(
            "start=%d, size=%d, type=linux\n" % p for p in LAYOUT)
        p = subprocess.run(["sfdisk", "-q", cls.img], input=script,
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise AssertionError("sfdisk: " + p.stderr)

        cls.loop = loopdev.LoopDevice()
        cls.addClassCleanup(cls.loop.remove)
        cls.loop.attach(cls.img, partitions=True)
        cls.dev = cls.loop.dev                 # /dev/loopN
        cls.name = cls.loop.name
        cls.sysdir = cls.loop.sysdir
        cls.parts = ["%sp%d" % (cls.name, i + 1) for i in range(len(LAYOUT))]
        deadline = time.monotonic() + 10
        while not all(os.path.isdir(os.path.join(cls.sysdir, p))
                      for p in cls.parts):
            if time.monotonic() > deadline:
                raise AssertionError("%s: partitions did not appear: %s" % (
                    cls.dev, os.listdir(cls.sysdir)))
            time.sleep(0.05)
        # An I/O scheduler with tunables, so that iosched/ exists.
        cls.sched = None
        try:
            cls.loop.write("queue/scheduler", "mq-deadline")
            cls.sched = "mq-deadline"
        except OSError:
            pass

        cls.dm = bt.Daemon(SYS, env=cls.DAEMON_ENV)
        cls.addClassCleanup(cls.dm.stop)

    # ---- the loop device ---------------------------------------------------

    def test_loop_device(self):
        objs = self.dm.all_objects()
        path = bt.path_of("block", self.name)
        self.assertIn(path, objs)
        o = objs[path]
        self.assertEqual(o[KOBJ]["Ktype"], "disk")
        self.assertEqual(o[KOBJ]["DevPath"],
                         "/devices/virtual/block/" + self.name)
        self.assertEqual(o[KOBJ]["Parent"], bt.path_of("block"))
        with open(os.path.join(self.sysdir, "dev")) as f:
            major, minor = map(int, f.read().split(":"))
        self.assertEqual(major, 7)
        self.assertEqual((o[DISK]["Major"], o[DISK]["Minor"]), (major, minor))
        self.assertEqual(o[KOBJ]["Uevent"]["MAJOR"], str(major))
        self.assertEqual(o[DISK]["Size"], 64 * MiB)
        self.assertIs(o[DISK]["ReadOnly"], False)
        self.assertEqual(o[DISK]["Device"], "/")
        self.assertEqual(o[bt.IFACE + "Group.loop"]["backing_file"],
                         self.img)
        self.assertEqual(o[DISK]["Partitions"],
                         [bt.path_of("block", self.name, p)
                          for p in self.parts])
        self.assertEqual(self.dm.manager("Resolve", self.dev), path)
        self.assertEqual(self.dm.manager("Resolve", "%d:%d" % (major, minor)),
                         path)

        for i, (pname, (start, size)) in enumerate(zip(self.parts, LAYOUT)):
            with self.subTest(partition=pname):
                ppath = bt.path_of("block", self.name, pname)
                p = objs[ppath]
                pdir = os.path.join(self.sysdir, pname)
                with open(os.path.join(pdir, "dev")) as f:
                    pmaj, pmin = map(int, f.read().split(":"))
                self.assertEqual((p[PART]["Major"], p[PART]["Minor"]),
                                 (pmaj, pmin))
                self.assertEqual(p[PART]["Start"], start * 512)
                self.assertEqual(p[PART]["Size"], size * 512)
                self.assertEqual(p[PART]["Number"], i + 1)
                self.assertEqual(p[PART]["start"], str(start))
                self.assertEqual(p[KOBJ]["Parent"], path)
                self.assertEqual(p[KOBJ]["Kset"], bt.path_of("block"))
                self.assertEqual(self.dm.manager("Resolve", "/dev/" + pname),
                                 ppath)
                self.assertEqual(self.dm.manager(
                    "Resolve", "%d:%d" % (pmaj, pmin)), ppath)

        q = objs[bt.path_of("block", self.name, "queue")][QUEUE]
        with open(os.path.join(self.sysdir, "queue/scheduler")) as f:
            text = f.read()
        self.assertEqual(q["scheduler"], text.rstrip("\n"))
        if self.sched:
            self.assertEqual(q["Scheduler"], self.sched)
            self.assertEqual(q["Elevator"], bt.path_of(
                "block", self.name, "queue", "iosched"))
            self.assertIn(bt.path_of("block", self.name, "queue", "iosched"),
                          objs)

    # ---- every block device against its directory -------------------------

    def block_devices(self):
        """{name: sysfs directory} of class/block, disks and partitions."""
        out = {}
        for name in os.listdir(os.path.join(SYS, "class/block")):
            d = os.path.realpath(os.path.join(SYS, "class/block", name))
            if os.path.isdir(d):
                out[name] = d
        return out

    def test_same_block_devices(self):
        before = self.block_devices()
        objs = self.dm.all_objects()
        after = self.block_devices()
        published = {o[KOBJ]["Name"]: o for o in objs.values()
                     if o[KOBJ]["Ktype"] in ("disk", "partition")}
        # Devices that came or went meanwhile (another test's loop device)
        # are left out of the comparison.
        stable = set(before) & set(after)
        self.assertGreaterEqual(len(stable), 3)
        self.assertEqual(sorted(stable - set(published)), [])
        for name in stable:
            with self.subTest(device=name):
                o = published[name]
                d = after[name]
                self.assertEqual(SYS + o[KOBJ]["DevPath"], d)
                self.assertEqual(o[KOBJ]["Ktype"], "partition"
                                 if is_partition_dir(d) else "disk")
                typed = o[PART] if PART in o else o[DISK]
                ok, dev = read_value(os.path.join(d, "dev"))
                self.assertTrue(ok)
                self.assertEqual("%d:%d" % (typed["Major"], typed["Minor"]),
                                 dev)
                ok, size = read_value(os.path.join(d, "size"))
                if ok and size == typed["size"]:
                    self.assertEqual(typed["Size"], int(size) * 512)
                if PART not in o:
                    self.assertEqual(
                        sorted(typed["Partitions"]),
                        sorted(bt.path_of("block", name, p)
                               for p in os.listdir(d)
                               if is_partition_dir(os.path.join(d, p))))
        for name in set(published) - set(after):
            self.assertNotIn(name, before)

    def test_list_named_devices_as_lsblk(self):
        """blkmodelctl list DEVICE... prints what lsblk prints for the same
        devices, byte for byte, in every column both have: in lsblk's order
        (by MAJ:MIN, not as named), a device named twice once, each column
        as wide as lsblk makes it (SIZE is 5 wide for "256G", 4 for "64M")."""
        cols = bt.ctl("list", "--help", check=0).stdout
        cols = cols[cols.index("Columns:") + len("Columns:"):cols.index("(each")]
        cols = [c for c in cols.split() if c != "OBJECT"]
        self.assertGreater(len(cols), 30)
        disk, p1, p2 = self.dev, self.dev + "p1", self.dev + "p2"
        # Every column between two others, all in one listing; and in text,
        # each one last (an empty last cell: lsblk prints its separator and
        # nothing, which stripped is no blank), for the disk with its
        # partitions, which has rows of both kinds.  One listing per column
        # and position took two minutes under ASan; each column last for
        # every set of devices, 52 s.
        every = "NAME,%s,RO" % ",".join(cols)
        for devices in ([p1], [disk], [p2, disk], [disk, disk], [p2, p1]):
            for extra in ([], ["-b"], ["-J"]):
                outs = [every]
                if devices == [disk] and "-J" not in extra:
                    outs += ["NAME,RO," + c for c in cols]
                for out in outs:
                    args = extra + ["-o", out] + devices
                    with self.subTest(args=" ".join(args)):
                        want = subprocess.run(
                            ["lsblk"] + args, check=True, capture_output=True,
                            text=True, timeout=60).stdout
                        got = bt.ctl("list", *args, check=0).stdout
                        if "-J" in extra:
                            got, want = json.loads(got), json.loads(want)
                        else:
                            # lsblk ends a row with a separator before an
                            # empty last cell, and MAJ:MIN's text is padded
                            # ("259:0  "): trailing blanks are not compared;
                            # ours has none but MAJ:MIN's own.
                            if not out.endswith(",MAJ:MIN"):
                                self.assertFalse([ln for ln in got.splitlines()
                                                  if ln != ln.rstrip()])
                            got, want = ([ln.rstrip() for ln in x.splitlines()]
                                         for x in (got, want))
                        self.assertEqual(got, want)

    def compare_object(self, path, ktype, dirpath):
        """Read every attribute file, GetAll every interface, read again;
        returns (compared, changed) counts."""
        want = bt.expected_interfaces(dirpath, ktype)
        first = {iface: {m: read_value(os.path.join(dirpath, f))
                         for m, f in members.items()}
                 for iface, members in want.items()}
        got = {iface: self.dm.get_all(path, iface) for iface in want}
        second = {iface: {m: read_value(os.path.join(dirpath, f))
                          for m, f in members.items()}
                  for iface, members in want.items()}
        compared = changed = 0
        for iface, members in want.items():
            typed = bt.TYPED_PROPERTIES[bt.KIND_IFACE[ktype]] \
                if iface == bt.IFACE + bt.KIND_IFACE[ktype] else ()
            self.assertEqual(sorted(k for k in got[iface] if k not in typed),
                             sorted(members), "%s %s" % (path, iface))
            for m, f in members.items():
                a, b = first[iface][m], second[iface][m]
                if a != b:
                    changed += 1
                    continue
                ok, value = a
                full = os.path.join(dirpath, f)
                if os.stat(full).st_mode & 0o444 == 0:
                    # Write-only (remove, rescan …): kernfs shows nothing.
                    self.assertEqual(got[iface][m], "", full)
                    continue
                # A file the kernel refuses to read is "" in GetAll.
                want_value = value if ok else ""
                if got[iface][m] != want_value:
                    # Equal reads around a different answer: the value may
                    # have moved and come back (inflight during I/O).  Ask
                    # again, one file at a time, a few times.
                    got_value, want_value = self.recheck(path, iface, m, full)
                    if got_value is None:
                        changed += 1
                        continue
                    self.assertEqual(got_value, want_value, full)
                compared += 1
        return compared, changed

    def recheck(self, path, iface, member, full):
        """(published, file) from a read-Get-read where both reads agree
        and the answer matches, else from the last such try; (None, None)
        if the file never held still."""
        last = (None, None)
        for _ in range(5):
            a = read_value(full)
            try:
                got = self.dm.get(path, iface, member)
            except Exception:
                got = ""     # ReadFailed: what GetAll shows as ""
            b = read_value(full)
            if a != b:
                continue
            last = (got, a[1] if a[0] else "")
            if last[0] == last[1]:
                break
        return last

    def test_every_attribute(self):
        objs = self.dm.all_objects()
        compared = changed = 0
        kinds = set()
        for path, o in sorted(objs.items()):
            ktype = o[KOBJ]["Ktype"]
            if ktype not in ("disk", "partition", "queue", "elevator"):
                continue
            dirpath = SYS + o[KOBJ]["DevPath"]
            if not os.path.isdir(dirpath):
                continue                # gone meanwhile
            with self.subTest(path=path):
                self.assertEqual(sorted(o), sorted(
                    [KOBJ] + list(bt.expected_interfaces(dirpath, ktype))))
                c, ch = self.compare_object(path, ktype, dirpath)
                compared += c
                changed += ch
                kinds.add(ktype)
        self.assertEqual(kinds, {"disk", "partition", "queue", "elevator"}
                         if self.sched else {"disk", "partition", "queue"})
        self.assertGreater(compared, 300)
        self.assertLess(changed, compared / 10)
        self.assertIn(self.READ_WAY, self.dm.output())

    # ---- info -a against udevadm's attribute walk ---------------------------

    @staticmethod
    def attribute_walk(text):
        """[(looking-at line, {ATTR{name}: value})] of an info -a walk."""
        walk = []
        for line in text.split("\n"):
            line = line.strip()
            if line.startswith("looking at"):
                walk.append((line, {}))
            elif walk and line.startswith("ATTR"):
                key, _, value = line.partition("==")
                walk[-1][1][key] = value
        return walk

    def compare_walk(self, name, walk_len=None):
        """blkmodelctl info -a NAME against udevadm info -a on its sysfs
        directory; returns our walk."""
        syspath = os.path.realpath(os.path.join(SYS, "class/block", name))

        def theirs():
            out = subprocess.run(["udevadm", "info", "-a", "-p", syspath],
                                 check=True, capture_output=True, text=True,
                                 timeout=60).stdout
            return [(at, {k: v for k, v in attrs.items() if "{mq/" not in k})
                    for at, attrs in self.attribute_walk(out)]

        before = theirs()
        ours = self.attribute_walk(bt.ctl("info", "-a", name, check=0).stdout)
        after = theirs()
        self.assertEqual([at for at, _ in ours], [at for at, _ in before])
        if walk_len is not None:
            self.assertEqual(len(ours), walk_len)
        for (at, mine), (_, b), (_, a) in zip(ours, before, after):
            with self.subTest(device=at):
                self.assertEqual(sorted(mine), sorted(b))
                # Values that moved between udevadm's two walks (stat,
                # power/runtime_active_time) are only compared by name.
                self.assertEqual({k: v for k, v in mine.items() if b[k] == a[k]},
                                 {k: v for k, v in b.items() if b[k] == a[k]})
        return ours

    def test_info_walk_as_udevadm(self):
        """A udev rule written from `blkmodelctl info -a` matches what udevadm
        info -a would have given: the same devices, the same attribute names
        (sysfs file names, a disk's queue/ and queue/iosched/ included,
        unreadable ones left out), the same values.  Only the blk-mq
        hardware contexts (mq/N/) are udevadm's alone: they are not block
        kobjects (SPEC §1)."""
        part = os.path.join(self.sysdir, self.parts[0])
        ours = self.compare_walk(self.parts[0], walk_len=2)  # it, its disk
        disk = ours[1][1]
        self.assertIn("ATTRS{queue/scheduler}", disk)
        if self.sched:
            self.assertIn("ATTRS{queue/iosched/read_expire}", disk)
        # A file the kernel will not read (EIO: autosuspend_delay_ms of a
        # loop partition, which has no runtime PM) is left out, as udevadm does.
        if not read_value(os.path.join(part, "power/autosuspend_delay_ms"))[0]:
            self.assertNotIn("ATTR{power/autosuspend_delay_ms}", ours[0][1])

    def test_info_walk_of_this_machines_disks(self):
        """The same for every disk of this machine with hardware under it
        (virtio, PCI, SCSI ... whatever CI runs on): only read, never written."""
        disks = [n for n in os.listdir(os.path.join(SYS, "block"))
                 if os.path.exists(os.path.join(SYS, "block", n, "device"))]
        if not disks:
            self.skipTest("no disk with hardware under it on this machine")
        for name in sorted(disks):
            with self.subTest(disk=name):
                self.assertGreater(len(self.compare_walk(name)), 1)

    def test_info_as_udevadm(self):
        """blkmodelctl info prints udevadm info's lines that come from the
        kernel (P M R U T D N Q V), the same, in the same order; udevadm's
        L:, S: and E: lines are udev's database (and E: ours is the uevent
        file's), O: is ours."""
        for name in [self.name] + self.parts:
            with self.subTest(device=name):
                want = subprocess.run(
                    ["udevadm", "info", "-p", os.path.join("/sys/class/block", name)],
                    check=True, capture_output=True, text=True, timeout=60).stdout
                got = bt.ctl("info", name, check=0).stdout
                self.assertEqual(
                    [ln for ln in got.splitlines() if ln[:2] not in ("O:", "E:")],
                    [ln for ln in want.splitlines() if ln and ln[:2] not in ("L:", "S:", "E:")])

    def test_exact_set_of_objects_below_loop(self):
        """The loop disk's subtree is exactly its directories: the disk, its
        partitions, the queue, the scheduler; no more."""
        objs = self.dm.all_objects()
        prefix = bt.path_of("block", self.name)
        mine = sorted(p for p in objs if p == prefix
                      or p.startswith(prefix + "/"))
        want = [prefix] + [bt.path_of("block", self.name, p)
                           for p in self.parts]
        want.append(bt.path_of("block", self.name, "queue"))
        if self.sched:
            want.append(bt.path_of("block", self.name, "queue", "iosched"))
        self.assertEqual(mine, sorted(want))
        self.assertEqual(self.dm.manager_prop("SysfsRoot"), SYS)
        self.assertEqual(self.dm.manager_prop("ObjectCount"), len(objs))


class _OneWay(RealSys):
    """Every attribute again, read the one way whatever this machine's
    system calls cost: both ways must publish what the files say."""
    test_loop_device = test_same_block_devices = None
    test_list_named_devices_as_lsblk = test_info_walk_as_udevadm = None
    test_info_walk_of_this_machines_disks = test_info_as_udevadm = None
    test_exact_set_of_objects_below_loop = None


class RealSysThroughIoUring(_OneWay):
    DAEMON_ENV = {"BLKMODEL_SYSFS_IO_URING": "1"}
    READ_WAY = "Reading sysfs through io_uring, as $BLKMODEL_SYSFS_IO_URING says."


class RealSysFileByFile(_OneWay):
    DAEMON_ENV = {"BLKMODEL_SYSFS_IO_URING": "0"}
    READ_WAY = "Reading sysfs file by file, as $BLKMODEL_SYSFS_IO_URING says."


del _OneWay  # not a test of its own


if __name__ == "__main__":
    bt.main()
