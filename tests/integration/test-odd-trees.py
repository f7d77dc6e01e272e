# SPDX-License-Identifier: LGPL-2.1-or-later
"""Odd trees (issue 2, "bad input"): the standard fixture with one kind of
damage each, made before the daemon starts.  Each time the daemon starts,
publishes everything else, logs what it skipped, answers, and exits 0 on
SIGTERM without a sanitizer report (bt.Daemon.stop checks the last two)."""
import os
import shutil
import sys
import unittest
import xml.etree.ElementTree as ET

import dbus

import blkmodeltest as bt
from blkmodeltest import KOBJ, DISK, PART, QUEUE, KSET, DEVICE

P = bt.path_of

# Relative to the fixture's root, as self.p() and os.path.join() want them.
SDA_DEV = bt.SDA_DEV.lstrip("/")
SR0_DEV = bt.SR0_DEV.lstrip("/")
SDA = SDA_DEV + "/block/sda"
SR0 = SR0_DEV + "/block/sr0"
LOOP0 = "devices/virtual/block/loop0"
DM0 = "devices/virtual/block/dm-0"

Daemon = bt.Daemon


# The standard fixture's 42 objects: every test below names what it took
# away from them, and everything else must still be there.
_STANDARD = {}


def standard_paths():
    if not _STANDARD:
        d = bt.make_fixture()
        with bt.Daemon(d + "/sys") as dm:
            _STANDARD.update(dm.all_objects())
    return set(_STANDARD)


def sata_hardware():
    """The objects of sda's and sr0's hardware: the ata ports and below,
    and the AHCI controller only they sit on.  A test that cuts both disks
    off their hardware expects these gone."""
    return [P("devices", *a.split("/")[1:]) for a in (
        "devices/pci0000:00/0000:00:1f.2",
        "devices/pci0000:00/0000:00:1f.2/ata1",
        "devices/pci0000:00/0000:00:1f.2/ata1/host0",
        "devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0",
        SDA_DEV,
        "devices/pci0000:00/0000:00:1f.2/ata2",
        "devices/pci0000:00/0000:00:1f.2/ata2/host1",
        "devices/pci0000:00/0000:00:1f.2/ata2/host1/target1:0:0",
        SR0_DEV)]


class OddTrees(unittest.TestCase):
    def setUp(self):
        self.dir = bt.make_fixture()
        self.root = self.dir + "/sys"

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def p(self, rel):
        return os.path.join(self.root, rel)

    def write(self, rel, data, mode=0o444):
        path = self.p(rel)
        if os.path.lexists(path):
            os.unlink(path)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
        os.chmod(path, mode)

    def relink(self, rel, target):
        path = self.p(rel)
        if os.path.lexists(path):
            os.unlink(path)
        os.symlink(target, path)

    def run_daemon(self, check, missing=(), extra=()):
        """Start the daemon on the damaged tree, compare its objects with the
        standard set minus `missing` plus `extra`, run check(dm, objs), and
        return the daemon's log once it has exited 0."""
        want = (standard_paths() - set(missing)) | set(extra)
        dm = Daemon(self.root)
        try:
            objs = dm.all_objects()
            self.assertEqual((sorted(set(objs) - want),
                              sorted(want - set(objs))), ([], []),
                             "objects published unexpectedly / missing")
            self.assertEqual(dm.manager_prop("ObjectCount"), len(objs))
            # The block kset's members are exactly the published devices.
            self.assertEqual(
                sorted(objs[P("block")][KSET]["Members"]),
                sorted(p for p, o in objs.items()
                       if o[KOBJ]["Ktype"] in ("disk", "partition")))
            # Untouched objects are intact.
            self.assertEqual(objs[P("block", "nvme0n1")][DISK]["Size"],
                             1953525168 * 512)
            check(dm, objs)
            # Still answering after whatever check() did.
            self.assertEqual(dm.manager("Resolve", "nvme0n1p2"),
                             P("block", "nvme0n1", "nvme0n1p2"))
            self.assertEqual(len(dm.managed_objects()), len(objs))
        except BaseException:
            # Don't mask the test's own failure with a shutdown complaint.
            try:
                dm.stop()
            except AssertionError as e:
                sys.stderr.write(str(e) + "\n")
            raise
        return dm.stop()

    # ---- missing and unreadable files --------------------------------------

    def test_missing_files(self):
        os.unlink(self.p(SDA + "/size"))
        os.unlink(self.p(SDA + "/sda1/start"))
        os.unlink(self.p(LOOP0 + "/dev"))
        os.unlink(self.p(SDA + "/queue/scheduler"))

        def check(dm, objs):
            sda = objs[P("block", "sda")][DISK]
            self.assertEqual(sda["Size"], 0)
            self.assertNotIn("size", sda)
            self.assertEqual(sda["ro"], "0")
            self.assertEqual(sda["Partitions"],
                             [P("block", "sda", "sda%d" % i)
                              for i in (1, 2, 3)])
            sda1 = objs[P("block", "sda", "sda1")][PART]
            self.assertEqual(sda1["Start"], 0)
            self.assertNotIn("start", sda1)
            self.assertEqual(sda1["Size"], 1048576 * 512)
            loop = objs[P("block", "loop0")][DISK]
            self.assertEqual((loop["Major"], loop["Minor"]), (0, 0))
            self.assertNotIn("dev", loop)
            q = objs[P("block", "sda", "queue")][QUEUE]
            self.assertEqual(q["Scheduler"], "")
            self.assertEqual(q["Schedulers"], [])
            self.assertNotIn("scheduler", q)
            # The iosched directory is still there: the object too.
            self.assertEqual(q["Elevator"],
                             P("block", "sda", "queue", "iosched"))

        log = self.run_daemon(check)
        self.assertIn("block/sda/size: unreadable, reported as 0", log)
        self.assertIn("block/sda/sda1/start: unreadable, reported as 0", log)
        self.assertIn("loop0/dev: unreadable, Major reported as 0", log)

    def test_partition_without_uevent(self):
        """A partition directory whose uevent is missing is still the
        partition (its `partition` file and class/block link say so; Number
        then comes from `partition`), never an attribute group of its disk."""
        os.unlink(self.p(SDA + "/sda2/uevent"))

        def check(dm, objs):
            sda2 = objs[P("block", "sda", "sda2")]
            self.assertEqual(sda2[KOBJ]["Ktype"], "partition")
            self.assertEqual(sda2[PART]["Number"], 2)
            self.assertEqual(sda2[PART]["Start"], 1050624 * 512)
            self.assertEqual(sda2[KOBJ]["Uevent"], {})
            self.assertEqual(sda2[PART]["Holders"], [P("block", "dm-0")])
            self.assertNotIn(bt.IFACE + "Group.sda2", objs[P("block", "sda")])

        self.run_daemon(check)

    def test_mode_000_files(self):
        """A file with no read permission bits publishes "" (as kernfs's
        write-only files do), even though root could open it here."""
        for rel in (SDA + "/ro", SDA + "/power/control",
                    SDA + "/queue/nr_requests",
                    SDA + "/queue/iosched/fifo_batch", SDA + "/sda1/size",
                    SDA_DEV + "/model"):
            os.chmod(self.p(rel), 0)
        # Content in a write-only file is not shown either.
        self.write(SDA + "/secret", "hidden\n", 0o200)

        def check(dm, objs):
            sda = objs[P("block", "sda")]
            self.assertEqual(sda[DISK]["ro"], "")
            self.assertEqual(sda[DISK]["secret"], "")
            self.assertIs(sda[DISK]["ReadOnly"], False)
            self.assertEqual(sda[bt.IFACE + "Group.power"]["control"], "")
            self.assertEqual(
                sda[bt.IFACE + "Group.power"]["runtime_status"],
                "unsupported")
            q = objs[P("block", "sda", "queue")][QUEUE]
            self.assertEqual(q["nr_requests"], "")
            self.assertEqual(q["read_ahead_kb"], "128")
            io = objs[P("block", "sda", "queue", "iosched")]
            self.assertEqual(io[bt.IFACE + "Elevator"]["fifo_batch"], "")
            self.assertEqual(io[bt.IFACE + "Elevator"]["read_expire"], "500")
            sda1 = objs[P("block", "sda", "sda1")][PART]
            self.assertEqual(sda1["size"], "")
            self.assertEqual(sda1["Size"], 0)
            dev = objs[P("devices", *SDA_DEV.split("/")[1:])][DEVICE]
            self.assertEqual(dev["model"], "")
            self.assertEqual(dev["vendor"], "ATA     ")
            # GetAll agrees with GetManagedObjects.
            self.assertEqual(dm.get_all(P("block", "sda"), DISK),
                             sda[DISK])

        self.run_daemon(check)

    @unittest.skipUnless(os.geteuid() == 0, "needs root to hand files to nobody")
    def test_files_of_another_owner(self):
        """On a fixture the daemon gives up CAP_DAC_OVERRIDE on every
        thread, so that its opens refuse files without read bits as
        kernfs's do.  A file whose bits let only its owner (not root) read
        or write it is still read and written, as root could before."""
        nobody = 65534
        self.write(SDA + "/theirs", "their value\n", 0o600)
        os.chown(self.p(SDA + "/theirs"), nobody, nobody)
        self.write(SDA + "/secret", "hidden\n", 0o200)
        os.chown(self.p(SDA + "/secret"), nobody, nobody)
        ra = self.p(SDA + "/queue/read_ahead_kb")
        os.chown(ra, nobody, nobody)
        os.chmod(ra, 0o600)
        dac = (1 << 1) | (1 << 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH

        def caps(pid, tid):
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                fields = dict(line.split(":\t", 1) for line in f)
            return int(fields["CapEff"], 16), int(fields["CapPrm"], 16)

        def check(dm, objs):
            sda = P("block", "sda")
            queue = P("block", "sda", "queue")
            for got in (objs[sda][DISK], dm.get_all(sda, DISK)):
                self.assertEqual(got["theirs"], "their value")
                self.assertEqual(got["secret"], "")
            self.assertEqual(objs[queue][QUEUE]["read_ahead_kb"], "128")
            dm.call(queue, bt.PROPS, "Set", QUEUE, "read_ahead_kb",
                    dbus.String("256", variant_level=1))
            self.assertEqual(bt.read_attr(ra), "256")
            self.assertEqual(dm.get_all(queue, QUEUE)["read_ahead_kb"], "256")
            tids = os.listdir("/proc/%d/task" % dm.proc.pid)
            self.assertGreater(len(tids), 1)  # the workers that read and wrote
            for tid in tids:
                eff, prm = caps(dm.proc.pid, tid)
                self.assertEqual((eff & dac, prm & dac), (0, dac), tid)

        self.run_daemon(check)

    def test_file_vanishes_after_scan(self):
        """A file gone between the scan and a reading: read as "" by the
        reply that finds it gone, which re-lists the object once it is out
        (or the poll does first), then the object has the
        files its directory has (its interfaces told anew), and a Get of it
        is an UnknownProperty.  A whole device directory gone: "" everywhere
        and Get fails with ReadFailed until its remove comes; everything
        else as before."""
        sda = P("block", "sda")
        power = bt.IFACE + "Group.power"

        def check(dm, objs):
            os.unlink(self.p(SDA + "/ro"))
            os.unlink(self.p(SDA + "/power/control"))
            # "" from a reply, or gone already if a round of the poll found
            # it first.
            self.assertEqual(dm.get_all(sda, DISK).get("ro", ""), "")
            self.assertTrue(bt.wait_until(
                lambda: "ro" not in dm.get_all(sda, DISK) and
                "control" not in dm.get_all(sda, power)))
            now = dm.all_objects()
            self.assertNotIn("ro", now[sda][DISK])
            self.assertEqual(now[sda][DISK]["dev"], "8:0")
            self.assertIs(now[sda][DISK]["ReadOnly"], False)
            # A whole device directory gone (no uevent yet to say so).
            shutil.rmtree(self.p(LOOP0))
            now = dm.all_objects()
            self.assertEqual(sorted(now), sorted(objs))
            loop = now[P("block", "loop0")]
            self.assertEqual(loop[DISK]["size"], "")
            self.assertEqual(loop[DISK]["Size"], 0)
            self.assertEqual(loop[KOBJ]["Name"], "loop0")
            self.assertEqual(loop[KOBJ]["Uevent"], {})
            self.assertEqual(loop[bt.IFACE + "Group.loop"]["backing_file"],
                             "")
            self.assertEqual(now[P("block", "loop0", "queue")][QUEUE]
                             ["Scheduler"], "")
            nodes = ET.fromstring(dm.introspect(P("block", "loop0")))
            self.assertEqual([n.get("name") for n in nodes.findall("node")],
                             ["queue"])
            errors = []
            for path, iface, prop in ((sda, DISK, "ro"),
                                      (sda, power, "control"),
                                      (P("block", "loop0"), DISK, "size")):
                with self.assertRaises(dbus.exceptions.DBusException) as cm:
                    dm.get(path, iface, prop)
                errors.append(cm.exception.get_dbus_name())
            self.assertEqual(errors,
                             ["org.freedesktop.DBus.Error.UnknownProperty"] * 2 +
                             [bt.IFACE + "Error.ReadFailed"], str(cm.exception))

        self.run_daemon(check)

    # ---- unexpected entries ------------------------------------------------

    def test_unexpected_entries(self):
        for name, value in (("foo-bar", "1"), ("1abc", "2"), ("x.y", "3"),
                            ("a-b", "first"), ("a_b", "second"),
                            ("has space", "4"), ("Size", "5"),
                            ("Major", "6"), ("it's&<x>\"", "7")):
            self.write(SDA + "/" + name, value + "\n")
        # A name that is not UTF-8: published, its file name not given.
        with open(os.fsencode(self.p(SDA)) + b"/caf\xe9", "w") as f:
            f.write("8\n")
        # A group with odd file names, one whose name needs escaping, and
        # directories that are no group.
        for d in ("weird", "my-group", "weird/deeper", "empty",
                  "onlydirs/sub", "mystery"):
            os.makedirs(self.p(SDA + "/" + d), exist_ok=True)
        self.write(SDA + "/weird/foo-bar", "a\n")
        self.write(SDA + "/weird/1abc", "b\n")
        self.write(SDA + "/weird/deeper/z", "c\n")
        self.write(SDA + "/my-group/v", "d\n")
        self.write(SDA + "/onlydirs/sub/f", "e\n")
        # A kobject directory (it has uevent) that is not a partition.
        self.write(SDA + "/mystery/uevent", "FOO=bar\n", 0o644)
        self.write(SDA + "/mystery/attr", "x\n")
        # Not regular files: a FIFO (must not block), a link, a socket-ish.
        os.mkfifo(self.p(SDA + "/fifo"))
        self.relink(SDA + "/linkfile", "size")
        # In a queue, a subdirectory that is a group; in a partition too.
        os.makedirs(self.p(SDA + "/queue/extra"))
        self.write(SDA + "/queue/extra/knob", "7\n")
        os.makedirs(self.p(SDA + "/sda1/odd-dir"))
        self.write(SDA + "/sda1/odd-dir/v", "8\n")

        def check(dm, objs):
            sda = objs[P("block", "sda")]
            disk = sda[DISK]
            self.assertEqual(disk["foo_bar"], "1")
            self.assertEqual(disk["_1abc"], "2")
            self.assertEqual(disk["x_y"], "3")
            self.assertEqual(disk["a_b"], "second")  # the file named so
            self.assertEqual(disk["has_space"], "4")
            # Typed names win over files.
            self.assertEqual(disk["Size"], 976773168 * 512)
            self.assertEqual(disk["Major"], 8)
            for gone in ("foo-bar", "1abc", "fifo", "linkfile", "mystery",
                         "weird", "empty", "onlydirs"):
                self.assertNotIn(gone, disk)
            self.assertEqual(sda[bt.IFACE + "Group.weird"],
                             {"foo_bar": "a", "_1abc": "b"})
            self.assertEqual(sda[bt.IFACE + "Group.my_group"], {"v": "d"})
            for g in ("empty", "onlydirs", "mystery", "deeper"):
                self.assertNotIn(bt.IFACE + "Group." + g, sda)
            self.assertEqual(sorted(sda), sorted(
                [KOBJ, DISK] + [bt.IFACE + "Group." + g for g in
                                ("power", "trace", "weird", "my_group")]))
            self.assertEqual(disk["Partitions"],
                             [P("block", "sda", "sda%d" % i)
                              for i in (1, 2, 3)])
            q = objs[P("block", "sda", "queue")]
            self.assertEqual(q[bt.IFACE + "Group.extra"], {"knob": "7"})
            part = objs[P("block", "sda", "sda1")]
            self.assertEqual(part[bt.IFACE + "Group.odd_dir"], {"v": "8"})
            # The walker of the other tests agrees on the whole object.
            want = bt.expected_interfaces(self.p(SDA), "disk")
            for iface, members in want.items():
                self.assertEqual(
                    {k: v for k, v in sda[iface].items()
                     if k not in bt.TYPED_PROPERTIES["Disk"]},
                    {m: bt.read_published(os.path.join(self.p(SDA), f))
                     for m, f in members.items()})
            xml = dm.introspect(P("block", "sda"))
            self.assertIn('<property name="foo_bar" type="s"', xml)
            self.assertNotIn('name="mystery"', xml)
            self.assertEqual(disk["it_s__x__"], "7")
            self.assertEqual(disk["caf_"], "8")
            # Where a name is not its file's, the file name is annotated
            # (escaped: an XML parser reads it back exactly); a group's
            # directory on its interface.  Not where it is the same, and
            # not where XML cannot carry it.
            files = {}
            for iface in ET.fromstring(xml).iter("interface"):
                for a in iface.findall("annotation"):
                    files[iface.get("name")] = a.get("value")
                for prop in iface.iter("property"):
                    for a in prop.findall("annotation"):
                        if a.get("name") == "org.blkmodel1.File":
                            files[prop.get("name")] = a.get("value")
            self.assertEqual(files, {
                "foo_bar": "foo-bar", "_1abc": "1abc", "x_y": "x.y",
                "has_space": "has space",
                "it_s__x__": "it's&<x>\"",
                bt.IFACE + "Group.my_group": "my-group"})
            # blkmodelctl info -a names attributes as udev rules do.
            out = bt.ctl("info", "-a", "sda", check=0).stdout
            for line in ('ATTR{foo-bar}=="1"', 'ATTR{1abc}=="2"',
                         'ATTR{it\'s&<x>"}=="7"', 'ATTR{caf_}=="8"',
                         'ATTR{my-group/v}=="d"', 'ATTR{weird/1abc}=="b"',
                         'ATTR{queue/extra/knob}=="7"'):
                self.assertIn("    " + line + "\n", out)
            self.assertNotIn("ATTR{foo_bar}", out)
            # get and set find an attribute by its file name exactly (from
            # the annotation), or by its D-Bus name; never by a look-alike
            # that sanitizes to the same name: set must not write foo-bar
            # when asked for foo.bar.
            for attr, value in (("foo-bar", "1"), ("foo_bar", "1"),
                                ("1abc", "2"), ("x.y", "3"), ("a_b", "second"),
                                ("it's&<x>\"", "7"), ("caf_", "8"),
                                ("my-group/v", "d"), ("my_group/v", "d"),
                                ("weird/1abc", "b"), ("queue/extra/knob", "7")):
                self.assertEqual(bt.ctl("get", "sda", attr, check=0).stdout,
                                 value + "\n", attr)
            for attr in ("foo.bar", "x_y_", "1abc_", "my.group/v", "a-b"):
                p = bt.ctl("get", "sda", attr)
                self.assertEqual(p.returncode, 1, attr)
                self.assertIn("No attribute or property", p.stderr)
            p = bt.ctl("set", "sda", "foo.bar", "9")
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(bt.read_attr(self.p(SDA + "/foo-bar")), "1")

        log = self.run_daemon(check)
        self.assertIn("collides with the typed property Size", log)
        self.assertIn("collides with the typed property Major", log)
        self.assertIn("'a_b' and 'a-b' share the property name a_b; 'a-b' is not published", log)
        self.assertIn("mystery: a kobject that is not a partition", log)

    # ---- links -------------------------------------------------------------

    def test_dangling_device_link(self):
        self.relink(SDA + "/device", "../../nonexistent")
        # Absolute, and pointing out of /devices: refused the same way.
        self.relink(SR0 + "/device", "/etc")
        # sda's and sr0's hardware is no longer published.
        gone = sata_hardware()

        def check(dm, objs):
            for name in ("sda", "sr0"):
                self.assertEqual(objs[P("block", name)][DISK]["Device"], "/")
                self.assertEqual(objs[P("block", name)][KOBJ]["DevPath"],
                                 "/" + (SDA if name == "sda" else SR0))
            self.assertEqual(objs[P("block", "sda")][DISK]["Partitions"],
                             [P("block", "sda", "sda%d" % i)
                              for i in (1, 2, 3)])
            # The hardware left, but nvme's glue directory (no device).
            self.assertEqual(len(objs[P("devices")][KSET]["Members"]), 7)

        log = self.run_daemon(check, missing=gone)
        self.assertIn("block/sda: cannot follow the 'device' link", log)
        self.assertIn("block/sr0: cannot follow the 'device' link", log)

    def test_device_link_into_itself(self):
        """A `device` link to the disk's own directory or below it: the disk
        is published without hardware, not lost."""
        self.relink(SR0 + "/device", ".")
        self.relink(SDA + "/device", "sda1")
        gone = sata_hardware()

        def check(dm, objs):
            for name in ("sda", "sr0"):
                self.assertEqual(objs[P("block", name)][DISK]["Device"], "/")
            self.assertEqual(objs[P("block", "sr0")][DISK]["Size"],
                             2097152 * 512)
            self.assertEqual(objs[P("block", "sda", "sda1")][KOBJ]["Ktype"],
                             "partition")

        self.run_daemon(check, missing=gone)

    def test_dangling_holders_and_slaves(self):
        self.relink(SDA + "/sda1/holders/ghost", "../../../nowhere/ghost")
        self.relink(SDA + "/holders/dm-9", "../../nowhere/dm-9")
        # A link to an existing directory that is no block device.
        self.relink(DM0 + "/slaves/power", "../power")
        # A holders/ that is a file, not a directory.
        shutil.rmtree(self.p(SDA + "/sda3/holders"))
        self.write(SDA + "/sda3/holders", "junk\n")

        def check(dm, objs):
            self.assertEqual(objs[P("block", "sda", "sda1")][PART]["Holders"],
                             [])
            self.assertEqual(objs[P("block", "sda")][DISK]["Holders"], [])
            self.assertEqual(objs[P("block", "dm-0")][DISK]["Slaves"],
                             [P("block", "sda", "sda2")])
            self.assertEqual(objs[P("block", "sda", "sda2")][PART]["Holders"],
                             [P("block", "dm-0")])
            self.assertEqual(objs[P("block", "sda", "sda3")][PART]["Holders"],
                             [])
            self.assertEqual(sorted(objs[P("block", "md0")][DISK]["Slaves"]),
                             [P("block", "nvme0n1", "nvme0n1p2"),
                              P("block", "sda", "sda3")])

        log = self.run_daemon(check)
        self.assertIn("sda1/holders/ghost: not a published block device", log)
        self.assertIn("sda/holders/dm-9: not a published block device", log)

    def test_holder_named_with_a_newline(self):
        """A name holds any byte but NUL and '/': a holders/ link named
        "md0\\ndm-0" is one entry, no published device, not md0 and dm-0
        (it was read as those two, both published as holders)."""
        self.relink(SDA + "/sda1/holders/md0\ndm-0",
                    "../../../../../../../../../virtual/block/md0")
        self.relink(SDA + "/sda1/holders/loop0",
                    "../../../../../../../../../virtual/block/loop0")

        def check(dm, objs):
            sda1 = P("block", "sda", "sda1")
            self.assertEqual(objs[sda1][PART]["Holders"],
                             [P("block", "loop0")])
            self.assertEqual(dm.get(sda1, PART, "Holders"),
                             [P("block", "loop0")])
            self.assertEqual(dm.get_all(sda1, PART)["Holders"],
                             [P("block", "loop0")])

        self.run_daemon(check)

    def test_holders_entry_that_is_no_link(self):
        """The kernel puts only links in holders/ and slaves/: a file or a
        directory named like a device (a tree made by hand) relates
        nothing; it was published as a holder."""
        self.write(SDA + "/sda1/holders/md0", "")
        os.mkdir(self.p(SDA + "/sda1/holders/dm-0"))
        self.relink(SDA + "/sda1/holders/loop0",
                    "../../../../../../../../../virtual/block/loop0")

        def check(dm, objs):
            sda1 = P("block", "sda", "sda1")
            for got in (objs[sda1][PART]["Holders"], dm.get(sda1, PART, "Holders"),
                        dm.get_all(sda1, PART)["Holders"]):
                self.assertEqual(got, [P("block", "loop0")])

        self.run_daemon(check)

    def test_odd_class_block_entries(self):
        cb = "class/block/"
        self.relink(cb + "ghost", "../../devices/virtual/block/ghost")
        self.relink(cb + "wrongname", "../../" + LOOP0)
        self.relink(cb + "escape", "../../../../../../../../etc")
        self.relink(cb + "absolute", "/sys/devices/virtual/block/loop0")
        self.relink(cb + "loopy", "loopy")
        self.write(cb + "regular", "not a link\n")
        os.makedirs(self.p(cb + "adir"))
        # A "disk" directory with nothing in it.
        os.makedirs(self.p("devices/virtual/block/bare"))
        self.relink(cb + "bare", "../../devices/virtual/block/bare")

        def check(dm, objs):
            names = sorted(o[KOBJ]["Name"] for o in objs.values()
                           if o[KOBJ]["Ktype"] in ("disk", "partition"))
            self.assertNotIn("ghost", names)
            self.assertNotIn("wrongname", names)
            self.assertEqual(names.count("loop0"), 1)
            bare = objs[P("block", "bare")]
            self.assertEqual(bare[KOBJ]["Ktype"], "disk")
            self.assertEqual(bare[DISK]["Size"], 0)
            self.assertEqual((bare[DISK]["Major"], bare[DISK]["Minor"]),
                             (0, 0))
            self.assertEqual(bare[DISK]["Queue"], "/")
            self.assertEqual(bare[DISK]["Device"], "/")
            self.assertEqual(bare[KOBJ]["Uevent"], {})
            self.assertEqual(sorted(bare), [DISK, KOBJ])

        # class/block says it is a block device: an empty one, then.
        log = self.run_daemon(check, extra=[P("block", "bare")])
        self.assertIn("class/block/ghost", log)
        self.assertIn("class/block/wrongname points to", log)
        self.assertIn("class/block/escape: unusable link", log)
        self.assertIn("class/block/absolute: unusable link", log)
        self.assertIn("class/block/regular is not a link", log)
        self.assertIn("class/block/adir is not a link", log)

    def test_disk_not_in_class_block(self):
        """A disk class/block does not list stays out with its partitions
        at the start, at every Rescan and at an add of one of them: the
        three agree, and a rescan of an unchanged tree tells nothing."""
        os.unlink(self.p("class/block/sda"))
        with Daemon(self.root, uevent_socket=True) as dm:
            before = dm.managed_objects()
            self.assertNotIn(P("block", "sda"), before)
            rec = bt.SignalRecorder()
            try:
                dm.manager("Rescan")
                dm.manager("Rescan")
                dm.send_uevent("add", "/" + SDA + "/sda1",
                               {"SUBSYSTEM": "block", "SEQNUM": "7"})
                rec.wait_for(lambda s: any(x[1] == "Uevent" for x in s))
                dm.manager("Rescan")
                rec.pump(0.3)
                told = [x[1] for x in rec.signals
                        if x[1] != "PropertiesChanged"]
                self.assertEqual(told, ["Uevent"])
            finally:
                rec.close()
            self.assertEqual(dm.managed_objects(), before)
            self.assertIn("sda1: an event for a partition whose disk "
                          "class/block does not list", dm.output())

    def test_non_utf8_device_name(self):
        """A block device whose name is not UTF-8 (D-Bus strings must be):
        it may be skipped with a log line or published with an escaped Name,
        but it must not make GetManagedObjects fail for everything."""
        bad = b"sd\xff"
        virt = os.path.join(self.root, "devices/virtual/block").encode()
        shutil.copytree(os.path.join(self.root, LOOP0).encode(),
                        os.path.join(virt, bad), symlinks=True)
        os.symlink(b"../../devices/virtual/block/" + bad,
                   os.path.join(self.root, "class/block").encode() + b"/" +
                   bad)
        # Daemon's context stops it, never masking a failure of the test.
        with Daemon(self.root) as dm:
            objs = dm.all_objects()
            self.assertEqual(sorted(standard_paths() - set(objs)), [])
            extra = set(objs) - standard_paths()
            badpath = bt.ROOT + "/block/sd_ff"
            self.assertEqual(sorted(p for p in extra if p != badpath
                                    and not p.startswith(badpath + "/")), [])
            if badpath in objs:
                self.assertEqual(objs[badpath][KOBJ]["Name"], "sd\\xff")
                self.assertEqual(dm.get(badpath, KOBJ, "Name"), "sd\\xff")
            self.assertEqual(dm.manager_prop("ObjectCount"), len(objs))

    # ---- values -------------------------------------------------------------

    def test_binary_values(self):
        raw = b"a\x00b\xff\xfe\xc3\x28 \xe2\x82\xac ok\xed\xa0\x80\n"
        self.write(SDA + "/binary", raw)
        self.write(SDA + "/nul", b"\x00\x00\x00")
        self.write(SDA + "/utf8", "caf\u00e9 \u2603\n")
        self.write(SDA + "/twolines", "one\ntwo\n\n")
        # Noncharacters (U+FFFE, U+FDD0, U+10FFFF): UTF-8, but sd-bus refuses
        # them, and one failed every reply that carried it.
        self.write(SDA + "/nonchar", b"Evil\xef\xbf\xbeDisk\xef\xb7\x90\xf4\x8f\xbf\xbf\n")
        # uevent values become a{ss}: they must be valid UTF-8 too.
        with open(self.p(SDA + "/uevent"), "ab") as f:
            f.write(b"WEIRD=\xff\x00x\nNOVALUE=\n=novar\nNOEQUALS\nNONCHAR=\xef\xbf\xbf\n")
        # A file name that is not UTF-8.
        self.write_bytes_name(SDA, b"bad\xffname", b"v\n")
        self.write_bytes_name(SDA, b"non\xef\xbf\xbechar", b"w\n")
        # One "_" a character (SPEC), not a byte.
        self.write(SDA + "/t\u00eate", "x\n")

        def check(dm, objs):
            disk = objs[P("block", "sda")][DISK]
            self.assertEqual(disk["binary"],
                             "a\\x00b\\xff\\xfe\\xc3( \u20ac ok"
                             "\\xed\\xa0\\x80")
            self.assertEqual(disk["nul"], "\\x00\\x00\\x00")
            self.assertEqual(disk["utf8"], "caf\u00e9 \u2603")
            self.assertEqual(disk["twolines"], "one\ntwo\n")
            self.assertEqual(disk["bad_name"], "v")
            self.assertEqual(disk["t_te"], "x")
            self.assertEqual(disk["nonchar"],
                             "Evil\\xef\\xbf\\xbeDisk\\xef\\xb7\\x90\\xf4\\x8f\\xbf\\xbf")
            self.assertEqual(bt.read_published(self.p(SDA + "/nonchar")), disk["nonchar"])
            self.assertEqual(disk["non_char"], "w")
            self.assertIn("<interface", dm.introspect(P("block", "sda")))
            self.assertEqual(dm.get_all(P("block", "sda"), DISK)["binary"],
                             disk["binary"])
            u = objs[P("block", "sda")][KOBJ]["Uevent"]
            self.assertEqual(u["WEIRD"], "\\xff\\x00x")
            self.assertEqual(u["NONCHAR"], "\\xef\\xbf\\xbf")
            self.assertEqual(u["NOVALUE"], "")
            self.assertEqual(u["MAJOR"], "8")
            self.assertNotIn("", u)
            self.assertNotIn("NOEQUALS", u)
            self.assertEqual(bt.read_published(self.p(SDA + "/binary")),
                             disk["binary"])

        self.run_daemon(check)

    def test_link_names_that_are_not_text(self):
        """Subsystem and Driver are the basenames of link targets, which may
        hold any byte but '/': published as any value is, a byte that is not
        UTF-8 as \\xNN, the rest (a newline, a control character, even at
        the end: part of the name) as it is.  Sent raw, the \\xff made sd-bus
        refuse Get, GetAll and the whole GetManagedObjects."""
        os.unlink(self.p(SDA_DEV + "/driver"))
        os.symlink(b"../../../../../../../bus/scsi/drivers/s\xffd\nx",
                   self.p(SDA_DEV + "/driver").encode())
        self.relink(SR0_DEV + "/subsystem",
                    "../../../../../../../bus/sc\x01si\n")

        def check(dm, objs):
            sda = P("devices", *SDA_DEV.split("/")[1:])
            sr0 = P("devices", *SR0_DEV.split("/")[1:])
            for path, prop, want in ((sda, "Driver", "s\\xffd\nx"),
                                     (sda, "Subsystem", "scsi"),
                                     (sr0, "Subsystem", "sc\x01si\n")):
                self.assertEqual(objs[path][DEVICE][prop], want)
                self.assertEqual(dm.get_all(path, DEVICE)[prop], want)
                self.assertEqual(dm.get(path, DEVICE, prop), want)

        self.run_daemon(check)

    def test_group_names_at_the_interface_limit(self):
        """D-Bus caps an interface name at 255 bytes: a group directory
        whose org.blkmodel1.Group.<name> would be longer is not published
        (with a log line); one at the limit is."""
        prefix = len(bt.IFACE + "Group.")
        fits, over = "g" * (255 - prefix), "h" * (256 - prefix)
        for d in (fits, over):
            os.mkdir(self.p(SDA + "/" + d))
            self.write(SDA + "/" + d + "/f", "v\n")

        def check(dm, objs):
            ifaces = objs[P("block", "sda")]
            self.assertEqual(ifaces[bt.IFACE + "Group." + fits], {"f": "v"})
            self.assertFalse([i for i in ifaces if len(i) > 255])
            xml = dm.introspect(P("block", "sda"))
            self.assertIn(fits, xml)
            self.assertNotIn(over, xml)

        log = self.run_daemon(check)
        self.assertIn("group directory name '%s' is too long for D-Bus" % over, log)

    def test_groups_whose_names_hold_a_colon(self):
        """The group x's file y:a and the group x:y's file a: two groups,
        each with its own file and value (they once shared one set of
        attributes, read from the wrong directory)."""
        for d, f, v in (("x", "y:a", "AAA"), ("x:y", "a", "BBB")):
            os.mkdir(self.p(SDA + "/" + d))
            self.write(SDA + "/" + d + "/" + f, v + "\n")

        def check(dm, objs):
            ifaces = objs[P("block", "sda")]
            self.assertEqual(ifaces[bt.IFACE + "Group.x"], {"y_a": "AAA"})
            self.assertEqual(ifaces[bt.IFACE + "Group.x_y"], {"a": "BBB"})

        self.run_daemon(check)

    def write_bytes_name(self, reldir, name, data):
        path = os.path.join(self.root.encode(), reldir.encode(), name)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, 0o444)

    def test_big_attribute(self):
        big = "".join(chr(ord("a") + i % 26) for i in range(10 * 1024))
        self.write(SDA + "/big", big + "\n")
        self.write(SDA + "/queue/iosched/big", big)
        # Exactly a page with the newline at its end: the newline goes.
        self.write(SDA + "/page", big[:4095] + "\n")
        # A multibyte character cut by the page boundary.
        self.write(SDA + "/cut", "x" * 4095 + "\u20ac")
        # A huge uevent file.
        with open(self.p(SDA + "/uevent"), "a") as f:
            f.write("".join("K%d=%s\n" % (i, "v" * 90) for i in range(100)))

        def check(dm, objs):
            disk = objs[P("block", "sda")][DISK]
            self.assertEqual(disk["big"], big[:4096])
            self.assertEqual(disk["page"], big[:4095])
            self.assertEqual(disk["cut"], "x" * 4095 + "\\xe2")
            self.assertEqual(objs[P("block", "sda", "queue", "iosched")]
                             [bt.IFACE + "Elevator"]["big"], big[:4096])
            self.assertEqual(dm.get_all(P("block", "sda"), DISK)["big"],
                             big[:4096])
            u = objs[P("block", "sda")][KOBJ]["Uevent"]
            self.assertEqual(u["MAJOR"], "8")

        self.run_daemon(check)

    def test_queue_that_is_a_file(self):
        shutil.rmtree(self.p(LOOP0 + "/queue"))
        self.write(LOOP0 + "/queue", "not a directory\n")

        def check(dm, objs):
            self.assertEqual(objs[P("block", "loop0")][DISK]["Queue"], "/")

        log = self.run_daemon(check, missing=[P("block", "loop0", "queue")])
        # Why it was skipped, not a made-up I/O error.
        self.assertIn("loop0/queue: cannot read the request queue, skipped: "
                      "Not a directory", log)

    def test_queue_that_is_a_symlink(self):
        """The kernel's queue is a directory of the disk's own, never a link:
        one is not followed, and the log says it is a link (dangling, or
        leading somewhere), not the ELOOP its open got ("Too many levels of
        symbolic links")."""
        shutil.rmtree(self.p(LOOP0 + "/queue"))
        self.relink(LOOP0 + "/queue", "nowhere")
        shutil.rmtree(self.p(SR0 + "/queue"))
        self.relink(SR0 + "/queue", "../../../../../../../../virtual/block/dm-0/queue")
        self.assertTrue(os.path.isdir(self.p(SR0 + "/queue")))

        def check(dm, objs):
            for name in ("loop0", "sr0"):
                self.assertEqual(objs[P("block", name)][DISK]["Queue"], "/")

        log = self.run_daemon(check, missing=[
            P("block", "loop0", "queue"), P("block", "sr0", "queue"),
            P("block", "sr0", "queue", "iosched")])
        self.assertIn("loop0/queue: cannot read the request queue, skipped: "
                      "a dangling symbolic link (to 'nowhere'), not a "
                      "directory of its own.", log)
        self.assertIn("sr0/queue: cannot read the request queue, skipped: "
                      "a symbolic link (to '../../../../../../../../virtual/"
                      "block/dm-0/queue'), not a directory of its own; links "
                      "are not followed.", log)
        self.assertNotIn("symbolic links", log)

    def test_disk_without_queue_and_partition_dirs(self):
        """A disk with no queue/, a partition directory without its
        `partition` file, a queue whose iosched is a file."""
        shutil.rmtree(self.p(LOOP0 + "/queue"))
        shutil.rmtree(self.p(SDA + "/queue/iosched"))
        self.write(SDA + "/queue/iosched", "not a directory\n")

        def check(dm, objs):
            self.assertEqual(objs[P("block", "loop0")][DISK]["Queue"], "/")
            self.assertEqual(objs[P("block", "sda", "queue")][QUEUE]
                             ["Elevator"], "/")
            self.assertEqual(objs[P("block", "sda", "queue")][QUEUE]
                             ["Scheduler"], "mq-deadline")

        self.run_daemon(check, missing=[
            P("block", "loop0", "queue"),
            P("block", "sda", "queue", "iosched")])


if __name__ == "__main__":
    bt.main()
