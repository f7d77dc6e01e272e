# SPDX-License-Identifier: LGPL-2.1-or-later
"""The core model on the standard fixture (issue 2, SPEC §3-§5).

Every object, every Kobject property, every typed value, every raw
attribute (compared with the fixture's files), escaped names, the Manager's
properties and Resolve, property errors and introspection.
"""
import os
import subprocess
import time
import unittest
import xml.etree.ElementTree as ET

import dbus

import blkmodeltest as bt
from blkmodeltest import KOBJ, DISK, PART, QUEUE, KSET, MANAGER, SDA_DEV, SR0_DEV

P = bt.path_of

NVME_DEV = "/devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0"
CCISS_DEV = "/devices/pci0000:00/0000:00:03.0/cciss0/c0d0"
VIRT = "/devices/virtual/block"

# What the fixture builder writes (tests/fixtures/mksysfs.py), by hand.
DISKS = {
    "sda": dict(dev=(8, 0), size=976773168, ro=False, rm=False,
                parts=["sda1", "sda2", "sda3"], slaves=[],
                sched="mq-deadline",
                scheds=["none", "mq-deadline", "kyber", "bfq"],
                device=SDA_DEV, devpath=SDA_DEV + "/block/sda"),
    "sr0": dict(dev=(11, 0), size=2097152, ro=True, rm=True, parts=[],
                slaves=[], sched="bfq",
                scheds=["none", "mq-deadline", "kyber", "bfq"],
                device=SR0_DEV, devpath=SR0_DEV + "/block/sr0"),
    "nvme0n1": dict(dev=(259, 0), size=1953525168, ro=False, rm=False,
                    parts=["nvme0n1p1", "nvme0n1p2"], slaves=[],
                    sched="none", scheds=["none", "mq-deadline"],
                    device=NVME_DEV, devpath=NVME_DEV + "/nvme0n1"),
    "cciss!c0d0": dict(dev=(104, 0), size=286677120, ro=False, rm=False,
                       parts=["cciss!c0d0p1"], slaves=[], sched="kyber",
                       scheds=["none", "mq-deadline", "kyber", "bfq"],
                       device=CCISS_DEV,
                       devpath=CCISS_DEV + "/block/cciss!c0d0"),
    "loop0": dict(dev=(7, 0), size=2097152, ro=False, rm=False, parts=[],
                  slaves=[], sched="none",
                  scheds=["none", "mq-deadline", "kyber", "bfq"],
                  device=None, devpath=VIRT + "/loop0"),
    # md on 6.x: a bio-based queue without a scheduler file.
    "md0": dict(dev=(9, 0), size=8380416, ro=False, rm=False, parts=[],
                slaves=["nvme0n1p2", "sda3"], sched="", scheds=[],
                device=None, devpath=VIRT + "/md0"),
    # "none" alone, unbracketed.
    "dm-0": dict(dev=(253, 0), size=209711104, ro=False, rm=False, parts=[],
                 slaves=["sda2"], sched="none", scheds=["none"],
                 device=None, devpath=VIRT + "/dm-0"),
}
HOLDERS = {"sda2": ["dm-0"], "sda3": ["md0"], "nvme0n1p2": ["md0"]}
PARTS = {
    "sda1": dict(disk="sda", dev=(8, 1), n=1, start=2048, size=1048576),
    "sda2": dict(disk="sda", dev=(8, 2), n=2, start=1050624, size=209715200),
    "sda3": dict(disk="sda", dev=(8, 3), n=3, start=210765824, size=8388608),
    "nvme0n1p1": dict(disk="nvme0n1", dev=(259, 1), n=1, start=2048,
                      size=1048576),
    "nvme0n1p2": dict(disk="nvme0n1", dev=(259, 2), n=2, start=1050624,
                      size=8388608),
    "cciss!c0d0p1": dict(disk="cciss!c0d0", dev=(104, 1), n=1, start=2048,
                         size=286675072),
}
ELEVATORS = {"sda": "mq-deadline", "sr0": "bfq", "cciss!c0d0": "kyber"}


def dev_path(devpath):
    """Object path of a Device object from its devpath."""
    return P("devices", *devpath.split("/")[2:])


def ancestors(devpath):
    """devpath and each parent up to (not including) /devices."""
    out = []
    while devpath != "/devices":
        out.append(devpath)
        devpath = os.path.dirname(devpath)
    return out


def expected_objects(root):
    """{object path: (ktype, name, devpath, parent, kset)}.  A directory
    without a uevent file among the hardware (a class's glue directory, the
    "nvme" above nvme0) is no member of the devices kset, as in the kernel."""
    block, devices = P("block"), P("devices")
    e = {block: ("kset", "block", "/block", "/", "/"),
         devices: ("kset", "devices", "/devices", "/", "/")}
    for name, d in DISKS.items():
        e[P("block", name)] = ("disk", name, d["devpath"], block, block)
        q = P("block", name, "queue")
        e[q] = ("queue", "queue", d["devpath"] + "/queue", P("block", name),
                "/")
        if name in ELEVATORS:
            e[P("block", name, "queue", "iosched")] = (
                "elevator", "iosched", d["devpath"] + "/queue/iosched", q, "/")
        for part in d["parts"]:
            e[P("block", name, part)] = (
                "partition", part, d["devpath"] + "/" + part,
                P("block", name), block)
        if d["device"]:
            for a in ancestors(d["device"]):
                parent = os.path.dirname(a)
                e[dev_path(a)] = ("device", os.path.basename(a), a,
                                  devices if parent == "/devices"
                                  else dev_path(parent),
                                  devices if os.path.exists(root + a + "/uevent") else "/")
    return e


def signature_of(xml, iface, prop):
    for i in ET.fromstring(xml).findall("interface"):
        if i.get("name") == iface:
            for p in i.findall("property"):
                if p.get("name") == prop:
                    return p.get("type")
    return None


class Model(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = bt.make_fixture()
        cls.root = cls.dir + "/sys"
        cls.dm = bt.Daemon(cls.root)
        cls.objs = cls.dm.all_objects()
        cls.expected = expected_objects(cls.root)

    @classmethod
    def tearDownClass(cls):
        cls.dm.stop()

    def assertDBusError(self, name, fn, *args):
        with self.assertRaises(dbus.exceptions.DBusException) as cm:
            fn(*args)
        self.assertEqual(cm.exception.get_dbus_name(), name,
                         "%r: %s" % (args, cm.exception))

    # ---- objects and Kobject --------------------------------------------

    def test_every_object_present(self):
        self.assertEqual(sorted(self.objs), sorted(self.expected))
        # 2 ksets, 7 disks, 7 queues, 3 schedulers, 6 partitions, and the
        # ancestors of the four disks on hardware.
        self.assertEqual(len([p for p, e in self.expected.items()
                              if e[0] == "device"]), 17)
        self.assertEqual(len(self.objs), 42)

    def test_kobject_properties(self):
        for path, (ktype, name, devpath, parent, kset) in \
                self.expected.items():
            with self.subTest(path=path):
                k = self.objs[path][KOBJ]
                self.assertEqual(k["Name"], name)
                self.assertEqual(k["DevPath"], devpath)
                self.assertEqual(k["Parent"], parent)
                self.assertEqual(k["Kset"], kset)
                self.assertEqual(k["Ktype"], ktype)
                if ktype in ("disk", "partition", "device"):
                    want = bt.parse_uevent(self.root + devpath + "/uevent")
                else:
                    want = {}
                self.assertEqual(k["Uevent"], want)
                # Get agrees with GetManagedObjects.
                self.assertEqual(self.dm.get_all(path, KOBJ), k)

    def test_uevent_values(self):
        self.assertEqual(self.objs[P("block", "sda")][KOBJ]["Uevent"],
                         {"MAJOR": "8", "MINOR": "0", "DEVNAME": "sda",
                          "DEVTYPE": "disk", "DISKSEQ": "1"})
        self.assertEqual(self.objs[P("block", "sda", "sda2")][KOBJ]["Uevent"],
                         {"MAJOR": "8", "MINOR": "2", "DEVNAME": "sda2",
                          "DEVTYPE": "partition", "DISKSEQ": "1",
                          "PARTN": "2"})
        u = self.objs[P("block", "nvme0n1", "nvme0n1p1")][KOBJ]["Uevent"]
        self.assertEqual(u["PARTNAME"], "EFI System Partition")
        u = self.objs[P("block", "cciss!c0d0")][KOBJ]["Uevent"]
        self.assertEqual(u["DEVNAME"], "cciss/c0d0")
        u = self.objs[dev_path(SDA_DEV)][KOBJ]["Uevent"]
        self.assertEqual(u["DEVTYPE"], "scsi_device")
        self.assertEqual(u["DRIVER"], "sd")

    # ---- typed values ------------------------------------------------

    def test_disk_typed(self):
        for name, d in DISKS.items():
            with self.subTest(disk=name):
                v = self.objs[P("block", name)][DISK]
                self.assertEqual((v["Major"], v["Minor"]), d["dev"])
                self.assertEqual(v["Size"], d["size"] * 512)
                self.assertIs(v["ReadOnly"], d["ro"])
                self.assertIs(v["Removable"], d["rm"])
                self.assertEqual(v["Partitions"],
                                 [P("block", name, p) for p in d["parts"]])
                self.assertEqual(v["Holders"], [])
                self.assertEqual(sorted(v["Slaves"]),
                                 sorted(P("block", PARTS[s]["disk"], s)
                                        for s in d["slaves"]))
                self.assertEqual(v["Queue"], P("block", name, "queue"))
                self.assertEqual(v["Device"], dev_path(d["device"])
                                 if d["device"] else "/")
                self.assertEqual(self.dm.get_all(P("block", name), DISK), v)

    def test_partition_typed(self):
        for name, d in PARTS.items():
            with self.subTest(partition=name):
                path = P("block", d["disk"], name)
                v = self.objs[path][PART]
                self.assertEqual((v["Major"], v["Minor"]), d["dev"])
                self.assertEqual(v["Size"], d["size"] * 512)
                self.assertEqual(v["Start"], d["start"] * 512)
                self.assertEqual(v["Number"], d["n"])
                self.assertIs(v["ReadOnly"], False)
                self.assertEqual(v["Holders"], [P("block", h) for h in
                                                HOLDERS.get(name, [])])
                self.assertEqual(self.dm.get_all(path, PART), v)

    def test_stacking_both_ways(self):
        # dm-0 over sda2, md0 over sda3 + nvme0n1p2.
        self.assertEqual(self.dm.get(P("block", "dm-0"), DISK, "Slaves"),
                         [P("block", "sda", "sda2")])
        self.assertEqual(self.dm.get(P("block", "sda", "sda2"), PART,
                                     "Holders"), [P("block", "dm-0")])
        self.assertEqual(sorted(self.dm.get(P("block", "md0"), DISK,
                                            "Slaves")),
                         [P("block", "nvme0n1", "nvme0n1p2"),
                          P("block", "sda", "sda3")])

    def test_queue_typed(self):
        for name, d in DISKS.items():
            with self.subTest(disk=name):
                q = P("block", name, "queue")
                v = self.objs[q][QUEUE]
                self.assertEqual(v["Scheduler"], d["sched"])
                self.assertEqual(v["Schedulers"], d["scheds"])
                self.assertEqual(v["Elevator"], P("block", name, "queue",
                                                  "iosched")
                                 if name in ELEVATORS else "/")
                if name in ELEVATORS:
                    self.assertEqual(d["sched"], ELEVATORS[name])

    def test_typed_signatures(self):
        """The wire types, not only the values (unwrap hides them)."""
        want = {DISK: {"Major": "u", "Minor": "u", "Size": "t",
                       "ReadOnly": "b", "Removable": "b", "Partitions": "ao",
                       "Holders": "ao", "Slaves": "ao", "Queue": "o",
                       "Device": "o"},
                PART: {"Major": "u", "Minor": "u", "Size": "t",
                       "ReadOnly": "b", "Number": "u", "Start": "t",
                       "Holders": "ao"},
                QUEUE: {"Scheduler": "s", "Schedulers": "as",
                        "Elevator": "o"},
                KOBJ: {"Name": "s", "DevPath": "s", "Parent": "o",
                       "Kset": "o", "Ktype": "s", "Uevent": "a{ss}"}}
        paths = {DISK: P("block", "sda"), PART: P("block", "sda", "sda1"),
                 QUEUE: P("block", "sda", "queue"), KOBJ: P("block", "sda")}
        for iface, props in want.items():
            xml = self.dm.introspect(paths[iface])
            for prop, sig in props.items():
                self.assertEqual(signature_of(xml, iface, prop), sig,
                                 "%s.%s" % (iface, prop))
        raw = self.dm.object(P("block", "sda")).Get(
            DISK, "Size", dbus_interface=bt.PROPS)
        self.assertIsInstance(raw, dbus.UInt64)
        raw = self.dm.object(P("block", "sda")).Get(
            DISK, "Major", dbus_interface=bt.PROPS)
        self.assertIsInstance(raw, dbus.UInt32)
        raw = self.dm.object(P("block", "sr0")).Get(
            DISK, "ReadOnly", dbus_interface=bt.PROPS)
        self.assertIsInstance(raw, dbus.Boolean)

    def test_kset_members(self):
        block = self.objs[P("block")][KSET]["Members"]
        names = sorted(list(DISKS) + list(PARTS))
        self.assertEqual(block, [P("block", n) if n in DISKS
                                 else P("block", PARTS[n]["disk"], n)
                                 for n in names])
        devices = self.objs[P("devices")][KSET]["Members"]
        self.assertEqual(sorted(devices), sorted(
            p for p, e in self.expected.items() if e[0] == "device" and e[4] != "/"))
        self.assertEqual(len(devices), 16)  # the 17 ancestors but nvme's glue directory
        self.assertEqual(len(devices), len(set(devices)))

    # ---- raw attributes ------------------------------------------------

    def test_raw_attributes_equal_files(self):
        """Walk each object's fixture directory: every regular file is a
        property of its kind interface or of Group.<dir>, with the file's
        content; nothing else is published."""
        checked = 0
        for path, (ktype, _, devpath, _, _) in self.expected.items():
            dirpath = self.root + devpath
            want = bt.expected_interfaces(dirpath, ktype)
            got = self.objs[path]
            with self.subTest(path=path):
                self.assertEqual(sorted(got), sorted([KOBJ] + list(want)))
                for iface, members in want.items():
                    typed = bt.TYPED_PROPERTIES.get(
                        iface[len(bt.IFACE):], ())
                    values = {k: v for k, v in got[iface].items()
                              if k not in typed}
                    self.assertEqual(
                        values,
                        {m: bt.read_published(os.path.join(dirpath, f))
                         for m, f in members.items()}, iface)
                    # GetAll says the same as GetManagedObjects.
                    self.assertEqual(self.dm.get_all(path, iface),
                                     got[iface], iface)
                    checked += len(members)
        self.assertGreater(checked, 900)

    def test_raw_attribute_get(self):
        """Get, one property at a time, on a few objects of every kind."""
        for path in (P("block", "sda"), P("block", "sda", "sda1"),
                     P("block", "sda", "queue"),
                     P("block", "sda", "queue", "iosched"),
                     P("block", "dm-0"), P("block", "loop0"),
                     dev_path("/devices/pci0000:00/0000:00:1f.2")):
            ktype, _, devpath, _, _ = self.expected[path]
            dirpath = self.root + devpath
            for iface, members in bt.expected_interfaces(
                    dirpath, ktype).items():
                for m, f in members.items():
                    self.assertEqual(
                        self.dm.get(path, iface, m),
                        bt.read_published(os.path.join(dirpath, f)),
                        "%s %s.%s" % (path, iface, m))

    def test_raw_attribute_spots(self):
        """A few values by hand, so the test doesn't only trust its walker."""
        sda = self.objs[P("block", "sda")]
        self.assertEqual(sda[DISK]["size"], "976773168")
        self.assertEqual(sda[DISK]["dev"], "8:0")
        self.assertEqual(sda[DISK]["inflight"], "       0        0")
        self.assertEqual(len(sda[DISK]["stat"].split()), 17)
        self.assertEqual(sda[bt.IFACE + "Group.power"]["control"], "auto")
        q = self.objs[P("block", "sda", "queue")][QUEUE]
        self.assertEqual(q["scheduler"], "none [mq-deadline] kyber bfq ")
        self.assertEqual(q["logical_block_size"], "512")
        self.assertEqual(q["write_cache"], "write back")
        io = self.objs[P("block", "sda", "queue", "iosched")]
        self.assertEqual(io[bt.IFACE + "Elevator"]["read_expire"], "500")
        loop = self.objs[P("block", "loop0")][bt.IFACE + "Group.loop"]
        self.assertEqual(loop["backing_file"], "/var/lib/images/disk.img")
        dm0 = self.objs[P("block", "dm-0")][bt.IFACE + "Group.dm"]
        self.assertEqual(dm0["name"], "vg0-root")
        md = self.objs[P("block", "md0")][bt.IFACE + "Group.md"]
        self.assertEqual(md["level"], "raid1")
        self.assertNotIn("dev_sda3", md)      # a deeper directory
        nv = self.objs[P("block", "nvme0n1")]
        self.assertEqual(nv[bt.IFACE + "Group.integrity"]["format"], "none")
        self.assertEqual(nv[DISK]["wwid"], "eui.0025385b71b0c1e4")
        ahci = self.objs[dev_path("/devices/pci0000:00/0000:00:1f.2")]
        dev = ahci[bt.IFACE + "Device"]
        self.assertEqual(dev["vendor"], "0x8086")
        self.assertEqual(dev["device"], "0x2922")
        self.assertEqual(dev["remove"], "")        # mode 0220
        self.assertEqual(dev["rescan"], "")        # mode 0200
        # The binary config space: NULs and non-UTF-8 as \xNN.
        self.assertTrue(dev["config"].startswith(
            '\\x86\\x80")\x07\x04\x10\\x00'), dev["config"])
        self.assertIn("\\x00", dev["config"])
        # msi_irqs/27: a group whose file names start with a digit.
        self.assertEqual(ahci[bt.IFACE + "Group.msi_irqs"], {"_27": "msi"})
        # Introspection tells what the names cannot: the file behind _27, and
        # that remove and rescan have no read bit (D-Bus "write").
        xml = self.dm.introspect(dev_path("/devices/pci0000:00/0000:00:1f.2"))
        self.assertIn('<property name="_27" type="s" access="read">'
                      '<annotation name="org.blkmodel1.File" value="27"/>'
                      '</property>', xml)
        self.assertIn('<property name="remove" type="s" access="write"/>', xml)
        self.assertIn('<property name="rescan" type="s" access="write"/>', xml)
        self.assertIn('<property name="vendor" type="s" access="read"/>', xml)
        nvme = self.objs[dev_path(NVME_DEV)][bt.IFACE + "Device"]
        self.assertEqual(nvme["serial"], "S4EWNX0R123456      ")
        # Not attributes: uevent, links, kobject subdirectories.
        for gone in ("uevent", "device", "subsystem", "bdi", "holders",
                     "slaves", "queue", "mq", "sda1"):
            self.assertNotIn(gone, sda[DISK])
        self.assertNotIn(bt.IFACE + "Group.mq", sda)
        self.assertNotIn(bt.IFACE + "Group.queue", sda)
        self.assertNotIn(bt.IFACE + "Group.holders", sda)

    def test_values_are_live(self):
        """Values are read when asked for (the fixture is ours to change)."""
        f = self.root + DISKS["loop0"]["devpath"] + "/loop/offset"
        with open(f) as fh:
            old = fh.read()
        try:
            with open(f, "w") as fh:
                fh.write("4096\n")
            self.assertEqual(self.dm.get(P("block", "loop0"),
                                         bt.IFACE + "Group.loop", "offset"),
                             "4096")
        finally:
            with open(f, "w") as fh:
                fh.write(old)
        self.assertEqual(self.dm.get(P("block", "loop0"),
                                     bt.IFACE + "Group.loop", "offset"), "0")

    # ---- names -------------------------------------------------------------

    def test_escaped_names(self):
        cases = [("/org/blkmodel1/block/dm_2d0", "dm-0",
                  P("block", "dm-0")),
                 ("/org/blkmodel1/block/cciss_21c0d0", "cciss!c0d0",
                  P("block", "cciss!c0d0")),
                 ("/org/blkmodel1/block/cciss_21c0d0/cciss_21c0d0p1",
                  "cciss!c0d0p1", P("block", "cciss!c0d0", "cciss!c0d0p1")),
                 ("/org/blkmodel1/devices/pci0000_3a00/_30000_3a00_3a1f_2e2",
                  "0000:00:1f.2",
                  dev_path("/devices/pci0000:00/0000:00:1f.2"))]
        for literal, name, computed in cases:
            self.assertEqual(literal, computed)
            self.assertIn(literal, self.objs)
            self.assertEqual(self.dm.get(literal, KOBJ, "Name"), name)
            self.assertEqual(self.dm.manager("Resolve", literal), literal)
        self.assertEqual(self.dm.manager("Resolve", "dm-0"),
                         "/org/blkmodel1/block/dm_2d0")
        self.assertEqual(self.dm.manager("Resolve", "cciss!c0d0p1"),
                         "/org/blkmodel1/block/cciss_21c0d0/cciss_21c0d0p1")
        self.assertEqual(
            self.dm.manager("Resolve", "/devices/pci0000:00/0000:00:1f.2"),
            "/org/blkmodel1/devices/pci0000_3a00/_30000_3a00_3a1f_2e2")
        # A node with a SCSI address name, escapes at both ends.
        self.assertIn(P("devices", "pci0000:00", "0000:00:1f.2", "ata1",
                        "host0", "target0:0:0", "0:0:0:0"), self.objs)

    # ---- Manager ---------------------------------------------------------

    def test_manager_properties(self):
        version = subprocess.run([bt.BLKMODELD, "--version"],
                                 capture_output=True, text=True,
                                 check=True).stdout.split()[-1]
        self.assertEqual(self.dm.manager_prop("Version"), version)
        self.assertRegex(version, r"^\d+\.\d+")
        self.assertEqual(self.dm.manager_prop("SysfsRoot"), self.root)
        self.assertEqual(self.dm.manager_prop("ObjectCount"), len(self.objs))
        props = self.dm.get_all(bt.MANAGER_PATH, MANAGER)
        for name in ("Version", "SysfsRoot", "UeventSource", "LastSeqnum",
                     "OldestSeqnum", "EventsLost", "ObjectCount"):
            self.assertIn(name, props)
        self.assertEqual(props["ObjectCount"], len(self.objs))
        self.assertEqual(props["SysfsRoot"], self.root)
        self.assertEqual(props["EventsLost"], 0)
        self.assertNotIn(bt.ROOT, self.objs)
        # The Manager is a managed object, with what GetAll says of it.
        gmo = self.dm.managed_objects(with_manager=True)
        self.assertEqual(set(gmo[bt.MANAGER_PATH]), {MANAGER})
        mine = dict(gmo[bt.MANAGER_PATH][MANAGER])
        now = self.dm.get_all(bt.MANAGER_PATH, MANAGER)
        self.assertEqual(mine, now)

    def test_resolve_forms(self):
        sda1 = P("block", "sda", "sda1")
        cases = {
            "sda1": sda1,
            "/dev/sda1": sda1,
            "8:1": sda1,
            "/dev/block/8:1": sda1,
            "/sys/block/sda/queue": P("block", "sda", "queue"),
            "/sys/block/sda/queue/": P("block", "sda", "queue"),
            "/sys/class/block/sda1": sda1,
            self.root + "/block/sda/sda1": sda1,
            "sda/queue/iosched": P("block", "sda", "queue", "iosched"),
            "sda": P("block", "sda"),
            "8:0/queue": P("block", "sda", "queue"),
            "259:2": P("block", "nvme0n1", "nvme0n1p2"),
            SDA_DEV + "/block/sda/sda1": sda1,
            SDA_DEV + "/block/sda/queue/iosched":
                P("block", "sda", "queue", "iosched"),
            SDA_DEV: dev_path(SDA_DEV),
            "/sys" + SDA_DEV: dev_path(SDA_DEV),
            VIRT + "/dm-0": P("block", "dm-0"),
            sda1: sda1,
            P("block", "dm-0", "queue"): P("block", "dm-0", "queue"),
            "/dev/cciss/c0d0": P("block", "cciss!c0d0"),
            "/dev/cciss/c0d0p1": P("block", "cciss!c0d0", "cciss!c0d0p1"),
            "cciss!c0d0": P("block", "cciss!c0d0"),
            # As lsblk's NAME (and list's) writes it.
            "cciss/c0d0": P("block", "cciss!c0d0"),
            "cciss/c0d0p1": P("block", "cciss!c0d0", "cciss!c0d0p1"),
            "/dev/dm-0": P("block", "dm-0"),
            "/sys/block": P("block"),
            "block": P("block"),
            "devices": P("devices"),
            "/sys/devices": P("devices"),
            # Through sysfs's links, as udevadm info -p takes a path.
            "/sys/block/sda/device": dev_path(SDA_DEV),
            "sda/device": dev_path(SDA_DEV),
            self.root + "/block/sda/device/": dev_path(SDA_DEV),
            "sda/sda2/holders/dm-0": P("block", "dm-0"),
            "dm-0/slaves/sda2": P("block", "sda", "sda2"),
            "/sys/block/sda/queue/../sda1": sda1,
            # Runs of slashes are one, as for the kernel and the shell.
            "//sys//block/sda/": P("block", "sda"),
            "/dev//sda1": sda1,
            "sda//queue": P("block", "sda", "queue"),
            bt.ROOT: bt.ROOT,
            bt.MANAGER_PATH: bt.MANAGER_PATH,
        }
        for spec, want in cases.items():
            with self.subTest(spec=spec):
                self.assertEqual(self.dm.manager("Resolve", spec), want)

    def test_resolve_errors(self):
        bad = ["sdz", "/dev/sdz", "99:99", "8:1:2", "8:", ":1",
               "/sys/block/sda/nothing", "sda/queue/nothing",
               "sda/sda1/queue", "/org/blkmodel1/block/nothing",
               "/org/blkmodel1/block/dm-0", "/org/blkmodel1/block/dm_2D0",
               "/devices/pci0000:00/nothing", "/nothing", "", "/",
               "../../etc/passwd", "/sys/../etc/passwd", "/dev/",
               "x" * 5000, "sda\n", "queue", "iosched",
               # Not a kobject's directory, or out of sysfs through a link.
               "sda/size", "/sys/block/sda/bdi", "sda/holders",
               "sda/device/../../../../../../../../../etc",
               "/sys/block/sda/device/" + "../" * 12 + "etc"]
        for spec in bad:
            with self.subTest(spec=spec):
                self.assertDBusError(bt.IFACE + "Error.NoSuchObject",
                                     self.dm.manager, "Resolve", spec)
        # Still alive and right after all that.
        self.assertEqual(self.dm.manager("Resolve", "sda1"),
                         P("block", "sda", "sda1"))

    # ---- errors ------------------------------------------------------------

    def test_property_errors(self):
        sda = P("block", "sda")
        unknown_prop = "org.freedesktop.DBus.Error.UnknownProperty"
        unknown_iface = "org.freedesktop.DBus.Error.UnknownInterface"
        self.assertDBusError(unknown_prop, self.dm.get, sda, DISK, "NoSuch")
        self.assertDBusError(unknown_prop, self.dm.get, sda, DISK, "Start")
        self.assertDBusError(unknown_prop, self.dm.get, sda, KOBJ, "size")
        self.assertDBusError(unknown_prop, self.dm.get, sda, DISK, "uevent")
        self.assertDBusError(unknown_prop, self.dm.get, sda,
                             bt.IFACE + "Group.power", "size")
        self.assertDBusError(unknown_prop, self.dm.get, bt.MANAGER_PATH,
                             MANAGER, "NoSuch")
        self.assertDBusError(unknown_iface, self.dm.get, sda, PART, "Size")
        self.assertDBusError(unknown_iface, self.dm.get, sda,
                             bt.IFACE + "Group.loop", "offset")
        self.assertDBusError(unknown_iface, self.dm.get_all, sda,
                             "org.example.Nothing")
        with self.assertRaises(dbus.exceptions.DBusException):
            self.dm.call(sda, bt.PROPS, "Set", DISK, "Size",
                         dbus.UInt64(1))
        self.assertEqual(self.dm.get(sda, DISK, "Size"), 976773168 * 512)

    def test_errors_do_not_echo_a_megabyte(self):
        """An error quotes what the caller sent, cut short: a megabyte of
        name comes back as a message of at most 512 bytes, still UTF-8 (cut
        between characters), that says what went wrong.  The same where
        sd-bus serves the properties (the root, the Manager).  The names of
        2- and 4-byte characters are 64 Ki characters: far past the cut all
        the same, and a 4 MB call costs ~0.5 s of receiving under ASan, 54
        of them took 15 s."""
        sda = P("block", "sda")
        for ch, n in (("x", 1 << 20), ("é", 1 << 16), ("𝄞", 1 << 16)):
            name = ch * n
            calls = [(path, bt.PROPS, m, sig, args)
                     for path in (sda, bt.ROOT, bt.MANAGER_PATH)
                     for m, sig, args in (
                         ("Get", "ss", (DISK, name)),
                         ("Get", "ss", (name, "Size")),
                         ("GetAll", "s", (name,)),
                         ("Set", "ssv", (name, "x", dbus.String(
                             "y", variant_level=1))))]
            calls += [(bt.MANAGER_PATH, MANAGER, "Resolve", "s", (name,)),
                      (bt.MANAGER_PATH, MANAGER, "Trigger", "os",
                       (dbus.ObjectPath(sda), name))]
            for path, iface, member, sig, args in calls:
                with self.subTest(ch=ch, path=path, member=member,
                                  sig=sig, first=len(args[0])), \
                        self.assertRaises(dbus.exceptions.DBusException) as cm:
                    self.dm.bus.call_blocking(bt.BUS_NAME, path, iface,
                                              member, sig, args)
                msg = cm.exception.get_dbus_message()
                self.assertLessEqual(len(msg.encode("utf-8")), 512)
                self.assertTrue(msg.endswith("…"), msg[-20:])
                self.assertIn(ch * 8, msg)
        self.assertEqual(self.dm.get(sda, DISK, "Size"), 976773168 * 512)

    def test_trigger_without_uevent_file(self):
        """A class's glue directory (nvme above nvme0) has no uevent file:
        InvalidArgs, as for a queue, and nothing written."""
        glue = dev_path(os.path.dirname(NVME_DEV))
        self.assertDBusError("org.freedesktop.DBus.Error.InvalidArgs",
                             self.dm.manager, "Trigger",
                             dbus.ObjectPath(glue), "change")
        self.assertFalse(os.path.exists(
            self.root + os.path.dirname(NVME_DEV) + "/uevent"))

    def test_empty_value_is_refused(self):
        """sysfs passes no empty write to an attribute's store (it returns
        0 at once): a Set of "" would succeed and store nothing.  It is
        InvalidArgs, and the file keeps its value."""
        queue = P("block", "sda", "queue")
        before = self.dm.get(queue, QUEUE, "read_ahead_kb")
        self.assertDBusError("org.freedesktop.DBus.Error.InvalidArgs",
                             self.dm.call, queue, bt.PROPS, "Set", QUEUE,
                             "read_ahead_kb", dbus.String("", variant_level=1))
        self.assertEqual(self.dm.get(queue, QUEUE, "read_ahead_kb"), before)
        with open(self.root + DISKS["sda"]["devpath"] + "/queue/read_ahead_kb") as f:
            self.assertEqual(f.read().strip(), before)

    def test_unknown_object(self):
        """A path below the root that is no object: UnknownObject, so that
        a client can tell a vanished object from a missing property."""
        for path in (P("block", "nothing"), P("block", "sda", "nothing"),
                     P("devices", "nothing")):
            with self.subTest(path=path):
                self.assertDBusError(
                    "org.freedesktop.DBus.Error.UnknownObject",
                    self.dm.get, path, DISK, "Size")
                self.assertDBusError(
                    "org.freedesktop.DBus.Error.UnknownObject",
                    self.dm.get_all, path, DISK)

    # ---- introspection ---------------------------------------------------

    def nodes(self, path):
        return [n.get("name") for n in
                ET.fromstring(self.dm.introspect(path)).findall("node")]

    def test_introspection_children(self):
        self.assertEqual(sorted(self.nodes(bt.ROOT)),
                         ["Manager", "block", "devices"])
        self.assertEqual(sorted(self.nodes(P("block"))),
                         sorted(bt.encode(n) for n in DISKS))
        self.assertEqual(sorted(self.nodes(P("block", "sda"))),
                         ["queue", "sda1", "sda2", "sda3"])
        self.assertEqual(self.nodes(P("block", "sda", "queue")), ["iosched"])
        self.assertEqual(self.nodes(P("block", "nvme0n1", "queue")), [])
        self.assertEqual(self.nodes(P("block", "sda", "queue", "iosched")),
                         [])
        self.assertEqual(sorted(self.nodes(P("block", "cciss!c0d0"))),
                         ["cciss_21c0d0p1", "queue"])
        self.assertEqual(self.nodes(P("devices")), ["pci0000_3a00"])
        self.assertEqual(sorted(self.nodes(P("devices", "pci0000:00"))),
                         ["_30000_3a00_3a03_2e0", "_30000_3a00_3a1d_2e0",
                          "_30000_3a00_3a1f_2e2"])
        # Every object is reachable by walking the nodes from the root.
        seen, todo = set(), [bt.ROOT]
        while todo:
            p = todo.pop()
            for n in self.nodes(p):
                c = p + "/" + n
                seen.add(c)
                todo.append(c)
        self.assertEqual(seen, set(self.objs) | {bt.MANAGER_PATH})

    def test_introspection_properties(self):
        for path in (P("block", "sda"), P("block", "sda", "sda2"),
                     P("block", "md0", "queue"),
                     P("block", "sr0", "queue", "iosched"),
                     dev_path(NVME_DEV)):
            root = ET.fromstring(self.dm.introspect(path))
            ifaces = {i.get("name"): i for i in root.findall("interface")}
            standard = {"org.freedesktop.DBus.Peer",
                        "org.freedesktop.DBus.Introspectable",
                        "org.freedesktop.DBus.Properties"}
            # Disks and devices answer GetManagedObjects for their subtree.
            if self.objs[path][KOBJ]["Ktype"] in ("disk", "device"):
                standard.add(bt.OM)
            self.assertEqual(set(ifaces) - standard, set(self.objs[path]),
                             path)
            for name, props in self.objs[path].items():
                self.assertEqual(
                    sorted(p.get("name")
                           for p in ifaces[name].findall("property")),
                    sorted(props), "%s %s" % (path, name))

    def test_ksets_answer_for_their_part(self):
        """A model too big for one message is read in parts: each kset, disk
        and device answers GetManagedObjects for the objects below it."""
        gmo = self.dm.managed_objects()
        block = self.dm.call(P("block"), bt.OM, "GetManagedObjects")
        devices = self.dm.call(P("devices"), bt.OM, "GetManagedObjects")
        self.assertEqual(set(block), {p for p in gmo
                                      if p.startswith(P("block") + "/")})
        self.assertEqual(set(devices), {p for p in gmo
                                        if p.startswith(P("devices") + "/")})
        self.assertEqual(set(block) | set(devices) | {P("block"), P("devices")},
                         set(gmo))
        for path, ifaces in block.items():
            self.assertEqual(ifaces, gmo[path])
        sda = self.dm.call(P("block", "sda"), bt.OM, "GetManagedObjects")
        self.assertEqual(set(sda), {p for p in gmo
                                    if p.startswith(P("block", "sda") + "/")})
        self.assertIn(P("block", "sda", "queue", "iosched"), sda)
        pci = self.dm.call(P("devices", "pci0000:00"), bt.OM,
                           "GetManagedObjects")
        self.assertEqual(set(pci), {p for p in gmo if p.startswith(
            P("devices", "pci0000:00") + "/")})
        # A device with nothing below it (the SATA disk's own) answers, with nothing.
        leaves = [p for p in devices if not any(q.startswith(p + "/") for q in devices)]
        self.assertTrue(leaves)
        for path in leaves:
            self.assertEqual(self.dm.call(path, bt.OM, "GetManagedObjects"), {}, path)
        # A partition, a queue and a scheduler are no object managers.
        for path in (P("block", "sda", "sda1"), P("block", "sda", "queue"),
                     P("block", "sda", "queue", "iosched")):
            with self.assertRaises(bt.dbus.DBusException):
                self.dm.call(path, bt.OM, "GetManagedObjects")

    def test_managed_objects_equal_get_all(self):
        """GetManagedObjects: every object and interface, each dictionary
        equal to what GetAll returns (the ObjectManager contract: a caching
        client builds its view from it)."""
        gmo = self.dm.managed_objects()
        self.assertEqual(set(gmo), set(self.objs))
        for path, ifaces in gmo.items():
            self.assertEqual(set(ifaces), set(self.objs[path]), path)
            for iface, props in ifaces.items():
                full = self.objs[path][iface]
                # The only values that move by themselves; the rest is equal.
                volatile = {"stat", "inflight"}
                self.assertEqual(set(props), set(full), (path, iface))
                for name, value in props.items():
                    if name not in volatile:
                        self.assertEqual(value, full[name],
                                         (path, iface, name))

    def test_emits_changed_signal(self):
        for path, iface, moving in (
                (P("block", "sda"), DISK, []),
                (P("block", "sda", "sda1"), PART, []),
                (P("block", "dm-0"), DISK, []),
                # Its utilization: every read asks the drive.
                (P("block", "nvme0n1"), DISK, ["nuse"])):
            ecs = bt.emits_changed_signal(self.dm.introspect(path))[iface]
            self.assertEqual(ecs["stat"], "false", path)
            self.assertEqual(ecs["inflight"], "false", path)
            # "true" is the default and left out of the XML.
            self.assertEqual(ecs.get("size", "true"), "true", path)
            self.assertEqual(ecs.get("Size", "true"), "true", path)
            self.assertEqual([n for n, v in ecs.items() if v == "false"],
                             sorted(["inflight", "stat"] + moving))


class ValuesThatMove(unittest.TestCase):
    """Files of one driver whose values move by themselves, on a private
    fixture with that driver's files as the kernel lays them out."""

    def test_queue_depth_moves_on_a_nvme_path_only(self):
        """An NVMe multipath path (the hidden disk nvme0c0n1) counts the
        requests in flight on it in queue_depth (drivers/nvme/host/
        multipath.c, under the queue-depth iopolicy): it moves with I/O and
        is volatile.  A SCSI device's queue_depth of the same name is a
        tunable, announced when it changes."""
        root = bt.make_fixture() + "/sys"
        b = bt.mksysfs.Builder(bt.mksysfs.Tree(root))
        nvme0 = NVME_DEV.lstrip("/")
        b.disk(os.path.join(nvme0, "nvme0c0n1"), "nvme0c0n1", (259, 9),
               1953525168, 9, "[none] mq-deadline", None, device=nvme0,
               diskseq=9, attrs={"range_": 0},
               extra_attrs={"nsid": "1", "ana_grpid": "1",
                            "ana_state": "optimized", "queue_depth": "3",
                            "numa_nodes": "0"})
        path = P("block", "nvme0c0n1")
        scsi = P(*SDA_DEV.split("/")[1:])
        with bt.Daemon(root) as dm:
            self.assertEqual(bt.said_false(dm, path, DISK),
                             ["inflight", "queue_depth", "stat"])
            self.assertEqual(dm.get(path, DISK, "queue_depth"), "3")
            with open(os.path.join(root, nvme0, "nvme0c0n1/queue_depth"),
                      "w") as f:
                f.write("7\n")
            self.assertEqual(dm.get(path, DISK, "queue_depth"), "7")

            self.assertIn("queue_depth", dm.get_all(scsi, bt.DEVICE))
            self.assertNotIn("queue_depth", bt.said_false(dm, scsi, bt.DEVICE))

    def test_md_progress_is_volatile(self):
        """md's md/ (drivers/md/md.c, raid5.c): a resync's, check's or
        reshape's progress and a RAID 5's stripes in use move by themselves;
        what a check found (mismatch_cnt) and the array's state are
        announced."""
        root = bt.make_fixture() + "/sys"
        t = bt.mksysfs.Tree(root)
        rw, ro = bt.mksysfs.RW, bt.mksysfs.RO
        group = "devices/virtual/block/md0/md"
        t.attrs(group, {
            "sync_action": ("check", rw), "sync_completed": ("3566405120 / "
                                                             "15627790336", ro),
            "sync_speed": ("126", ro), "mismatch_cnt": ("0", ro),
            "reshape_position": ("none", rw), "stripe_cache_active": ("13173", ro),
            "stripe_cache_size": ("8192", rw)})
        path = P("block", "md0")
        iface = bt.IFACE + "Group.md"
        with bt.Daemon(root) as dm:
            self.assertEqual(bt.said_false(dm, path, iface),
                             ["reshape_position", "resync_start",
                              "stripe_cache_active", "sync_completed",
                              "sync_speed"])
            self.assertEqual(dm.get(path, iface, "stripe_cache_active"),
                             "13173")

    def test_bcache_values_that_move_are_volatile(self):
        """A bcache backing device's bcache/ directory (struct cached_dev,
        drivers/md/bcache/sysfs.c): its dirty data and its writeback rate,
        which the writeback thread's controller sets, move by themselves;
        writeback_rate_debug even counts down the milliseconds to the next
        write.  Its tunables and its state stay announced."""
        root = bt.make_fixture() + "/sys"
        t = bt.mksysfs.Tree(root)
        rw, ro, wo = bt.mksysfs.RW, bt.mksysfs.RO, bt.mksysfs.WO
        group = os.path.join(SDA_DEV.lstrip("/"), "block/sda/bcache")
        t.dir(group)
        t.attrs(group, {
            "attach": ("", wo), "detach": ("", wo), "stop": ("", wo),
            "clear_stats": ("", wo),
            "cache_mode": ("writethrough [writeback] writearound none", rw),
            "writeback_running": ("1", rw), "writeback_percent": ("10", rw),
            "writeback_rate": ("4.0k", rw), "writeback_delay": ("30", rw),
            "writeback_rate_debug": ("rate:\t\t4.0k/sec\ndirty:\t\t1.2M\n"
                                     "next io:\t-412ms", ro),
            "dirty_data": ("1.2M", ro), "io_errors": ("0", ro),
            "state": ("dirty", ro), "running": ("1", rw),
            "label": ("", rw), "sequential_cutoff": ("4.0M", rw),
            "backing_dev_name": ("sda", ro)})
        # Accounting kobjects inside the group: not attributes of sda.
        t.dir(os.path.join(group, "stats_total"))
        t.attrs(os.path.join(group, "stats_total"), {"cache_hits": "120"})
        iface = bt.IFACE + "Group.bcache"
        path = P("block", "sda")
        with bt.Daemon(root) as dm:
            self.assertEqual(bt.said_false(dm, path, iface),
                             ["dirty_data", "writeback_rate",
                              "writeback_rate_debug"])
            props = dm.get_all(path, iface)
            self.assertEqual(props["state"], "dirty")
            self.assertNotIn("cache_hits", props)
            with open(os.path.join(root, group, "dirty_data"), "w") as f:
                f.write("2.5M\n")
            self.assertEqual(dm.get(path, iface, "dirty_data"), "2.5M")
            # Still a tunable: Set writes it.
            dm.call(path, bt.PROPS, "Set", iface, "writeback_rate",
                    dbus.String("8.0k", variant_level=1))
            with open(os.path.join(root, group, "writeback_rate")) as f:
                self.assertEqual(f.read(), "8.0k")

    def test_usb_and_scsi_counters_are_volatile(self):
        """A USB stick's hardware: the USB device counts its URBs (urbnum)
        and its power/ shows how long it has been connected and active, in
        ms (drivers/usb/core/sysfs.c); the SCSI device counts the commands
        in flight (device_busy, scsi_sysfs.c).  All move by themselves; the
        tunables beside them stay announced."""
        root = bt.make_fixture() + "/sys"
        t = bt.mksysfs.Tree(root)
        b = bt.mksysfs.Builder(t)
        rw = bt.mksysfs.RW
        xhci = b.pci("devices/pci0000:00/0000:00:14.0", "0x8086", "0xa36d",
                     "0x0c0330", 125, "xhci_hcd")
        usb_attrs = {"busnum": "2", "speed": "5000", "idVendor": "0781",
                     "idProduct": "5581", "product": "Ultra",
                     "bMaxPower": "896mA", "authorized": ("1", rw),
                     "avoid_reset_quirk": ("0", rw)}
        usb_power = {"autosuspend": ("2", rw), "level": ("on", rw),
                     "persist": ("1", rw), "connected_duration": "5126373",
                     "active_duration": "5126371",
                     # With CONFIG_PM_ADVANCED_DEBUG.
                     "runtime_usage": "1", "runtime_active_kids": "1"}
        parent = xhci
        for name, urbs in (("usb2", "25"), ("2-1", "81344")):
            parent = b.device(os.path.join(parent, name),
                              {"DEVTYPE": "usb_device"},
                              dict(usb_attrs, urbnum=urbs),
                              subsystem="bus/usb")
            t.attrs(os.path.join(parent, "power"), usb_power)
        iface_dir = b.device(os.path.join(parent, "2-1:1.0"),
                             {"DEVTYPE": "usb_interface"},
                             {"bInterfaceClass": "08"}, subsystem="bus/usb")
        lun = b.scsi_chain(iface_dir, 6, 0, 0, 0, "SanDisk ", "Ultra           ",
                           "1.00", 0, "sd", 2)
        b.disk(os.path.join(lun, "block/sdb"), "sdb", (8, 16), 60063744, 8,
               "none [mq-deadline]", "mq-deadline", device=lun, diskseq=8)

        usb = P("devices", *(parent.split("/")[1:]))
        scsi = P("devices", *(lun.split("/")[1:]))
        with bt.Daemon(root) as dm:
            # Driver too, as on every Device: a driver bound or unbound
            # sends only its own subsystem's event.
            self.assertEqual(bt.said_false(dm, usb, bt.DEVICE), ["Driver", "urbnum"])
            self.assertEqual(bt.said_false(dm, usb, bt.IFACE + "Group.power"),
                             ["active_duration", "connected_duration",
                              "runtime_active_kids", "runtime_active_time",
                              "runtime_suspended_time", "runtime_usage"])
            self.assertEqual(dm.get(usb, bt.DEVICE, "urbnum"), "81344")
            self.assertEqual(bt.said_false(dm, scsi, bt.DEVICE),
                             ["Driver", "device_busy", "iodone_cnt",
                              "ioerr_cnt", "iorequest_cnt"])
            self.assertIn("queue_depth", dm.get_all(scsi, bt.DEVICE))


class ResolveRootBelowDev(unittest.TestCase):
    def test_resolve_root_below_dev(self):
        """A sysfs root below /dev (a tree in /dev/shm): its paths are sysfs
        paths, not device nodes; /dev/sda1 stays a device node."""
        root = bt.make_fixture(parent="/dev/shm") + "/sys"
        with bt.Daemon(root) as dm:
            sda1 = P("block", "sda", "sda1")
            for spec, want in {root + "/block/sda/sda1": sda1,
                               root + "/class/block/sda1": sda1,
                               root + "/block/sda/device/": dev_path(SDA_DEV),
                               "/dev/sda1": sda1}.items():
                with self.subTest(spec=spec):
                    self.assertEqual(dm.manager("Resolve", spec), want)


class SizeEstimate(unittest.TestCase):
    """What the daemon estimates a whole GetManagedObjects at (its debug log) is what its last
    whole readings found: rounds of the poll, which re-read a few values, leave it as it is.  It
    used to grow with each round, until the whole model was refused as too large for the bus."""

    @staticmethod
    def estimate(dm):
        dm.managed_objects()
        lines = [l for l in dm.output().splitlines()
                 if l.startswith("<7>GetManagedObjects on %s: about " % bt.ROOT)]
        return int(lines[-1].split("about ")[1].split()[0])

    def test_poll_rounds_leave_the_estimate(self):
        with bt.Daemon(bt.make_fixture() + "/sys", extra_args=["--poll-interval=20"]) as dm:
            deadline = time.monotonic() + 60
            while "Recorded the values of" not in dm.output() and time.monotonic() < deadline:
                time.sleep(0.1)
            first = self.estimate(dm)
            # A round of this small tree every 20 ms: some fifty.  Each round added what it re-read
            # (85,027 -> 439,939 bytes in 3 s): one round would show.
            time.sleep(1)
            self.assertEqual(self.estimate(dm), first)


if __name__ == "__main__":
    bt.main()
