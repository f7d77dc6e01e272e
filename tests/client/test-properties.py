# SPDX-License-Identifier: LGPL-2.1-or-later
"""show, get and set on the standard fixture: every OBJECT form that
Manager.Resolve accepts, raw attributes (by file name, by D-Bus member
name, GROUP/FILE) and typed properties, the show layout (interfaces,
typed apart from raw), and the set round trip through the daemon."""
import os
import unittest

import blkmodeltest as bt
import clienttest as ct

SDA1_DEVPATH = ("/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/"
                "0:0:0:0/block/sda/sda1")


class Properties(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fixture = bt.make_fixture()
        cls.sys = cls.fixture + "/sys"
        cls.dm = bt.Daemon(cls.sys)

    @classmethod
    def tearDownClass(cls):
        cls.dm.stop()

    def get(self, *args):
        return ct.run("get", *args, check=0).stdout

    def test_object_forms(self):
        # SPEC §5: everything Resolve accepts names the same object.
        for spec in ("sda1", "/dev/sda1", "8:1", "/sys/block/sda/sda1",
                     "sda/sda1", SDA1_DEVPATH,
                     bt.path_of("block", "sda", "sda1")):
            with self.subTest(spec=spec):
                self.assertEqual(self.get(spec, "DevPath"),
                                 SDA1_DEVPATH + "\n")
        self.assertEqual(self.get("sda/queue/iosched", "Ktype"),
                         "elevator\n")
        self.assertEqual(self.get("/sys/block/sda/queue", "Ktype"),
                         "queue\n")
        # '!' in a sysfs name, '/' in /dev.
        self.assertEqual(self.get("/dev/cciss/c0d0", "Name"),
                         "cciss!c0d0\n")

    def test_get_raw_attributes(self):
        q = self.sys + "/block/sda/queue"
        self.assertEqual(self.get("sda/queue", "read_ahead_kb"),
                         bt.read_attr(q + "/read_ahead_kb") + "\n")
        # The kernel's trailing blank in `scheduler` is kept.
        self.assertEqual(self.get("sda/queue", "scheduler"),
                         "none [mq-deadline] kyber bfq \n")
        self.assertEqual(self.get("sda", "power/control"), "auto\n")
        self.assertEqual(self.get("nvme0n1", "integrity/format"), "none\n")
        # A file name that is no D-Bus member name: by either name.
        pci = bt.path_of("devices", "pci0000:00", "0000:00:1f.2")
        self.assertEqual(self.get(pci, "msi_irqs/27"), "msi\n")
        self.assertEqual(self.get(pci, "msi_irqs/_27"), "msi\n")

    def test_get_typed_properties(self):
        self.assertEqual(self.get("sda", "Size"), "%d\n" % (976773168 * 512))
        self.assertEqual(self.get("sr0", "ReadOnly"), "true\n")
        self.assertEqual(self.get("sda/queue", "Scheduler"), "mq-deadline\n")
        # Arrays one item per line, dictionaries KEY=VALUE per line.
        self.assertEqual(self.get("md0", "Slaves").split("\n"), [
            bt.path_of("block", "nvme0n1", "nvme0n1p2"),
            bt.path_of("block", "sda", "sda3"), ""])
        self.assertIn("DEVNAME=sda1\n", self.get("sda1", "Uevent"))
        self.assertIn("PARTN=1\n", self.get("sda1", "Uevent"))
        # An empty array prints no line: a `while read` loop sees no item.
        self.assertEqual(self.get("sda1", "Holders"), "")
        # An empty string is a value: one empty line.
        self.assertEqual(self.get("sda", "events_async"), "\n")
        # The manager's own properties, through its object path.
        self.assertEqual(self.get(bt.MANAGER_PATH, "SysfsRoot"),
                         self.sys + "\n")

    def test_show(self):
        out = ct.run("show", "sda", check=0).stdout
        lines = out.split("\n")
        self.assertEqual(lines[0], bt.path_of("block", "sda"))
        ifaces = [ln.strip() for ln in lines if ln.startswith("  ") and
                  not ln.startswith("   ")]
        # Kobject, then the kind, then the attribute groups.
        self.assertEqual(ifaces, [bt.IFACE + "Kobject", bt.IFACE + "Disk",
                                  bt.IFACE + "Group.power",
                                  bt.IFACE + "Group.trace"])
        disk = lines[lines.index("  " + bt.IFACE + "Disk") + 1:
                     lines.index("  " + bt.IFACE + "Group.power")]
        split = disk.index("    attributes:")
        typed = [ln.split()[0] for ln in disk[:split]
                 if not ln.startswith("      ")]
        raw = [ln.split()[0] for ln in disk[split + 1:]]
        self.assertEqual(typed[:3], ["Major", "Minor", "Size"])
        self.assertIn("Device", typed)
        self.assertNotIn("size", typed)
        self.assertIn("size", raw)
        self.assertIn("diskseq", raw)
        self.assertFalse(set(raw) & set(bt.TYPED_PROPERTIES["Disk"]))
        # Every raw attribute of the directory is shown.
        want = bt.expected_interfaces(self.sys + "/block/sda/", "disk")
        self.assertEqual(sorted(raw), sorted(want[bt.IFACE + "Disk"]))
        for ln in lines:
            self.assertEqual(ln, ln.rstrip(), "trailing blanks")

    def test_show_writable(self):
        # What set can write: what the introspection publishes readwrite
        # or write, by interface; an interface with none is left out.
        q = ct.run_json("show", "--writable", "sda/queue")["interfaces"]
        self.assertEqual(list(q), [bt.IFACE + "Queue"])
        self.assertIn("Scheduler", q[bt.IFACE + "Queue"])
        self.assertIn("read_ahead_kb", q[bt.IFACE + "Queue"])
        self.assertNotIn("Schedulers", q[bt.IFACE + "Queue"])
        self.assertNotIn("hw_sector_size", q[bt.IFACE + "Queue"])
        dev = ct.run_json("show", "--writable", "sda/device")["interfaces"]
        self.assertIn("delete", dev[bt.IFACE + "Device"])  # write-only
        self.assertNotIn("model", dev[bt.IFACE + "Device"])
        part = ct.run_json("show", "--writable", "sda1")["interfaces"]
        self.assertNotIn(bt.IFACE + "Partition", part)
        self.assertNotIn(bt.IFACE + "Kobject", part)
        self.assertEqual(ct.run("show", "--writable", bt.MANAGER_PATH,
                                check=0).stdout, bt.MANAGER_PATH + "\n")

    def test_set_refused_in_one_line(self):
        # `size` is a read-only file: whatever the daemon implements,
        # this is refused, in one line naming the D-Bus error, exit 1.
        p = ct.run("set", "sda", "size", "1")
        line = ct.assert_one_line_failure(self, p)
        self.assertRegex(line, r"\((org\.freedesktop\.DBus\.Error\.\w+|"
                         r"org\.blkmodel1\.Error\.\w+)\)$")
        self.assertEqual(bt.read_attr(self.sys + "/block/sda/size"),
                         "976773168")
        # The unknown attribute likewise.
        p = ct.run("set", "sda", "nosuchattr", "1")
        ct.assert_one_line_failure(self, p, contains=("nosuchattr",
                                                      "UnknownProperty"))

    def test_set_read_only_whatever_the_value(self):
        # The daemon refuses a property it publishes read-only before it
        # looks at the value: the client says the same for a value of the
        # property's type and for one that is not ("maybe" for a b).
        for spec, prop, values in (
                ("sda", "ReadOnly", ("true", "maybe", "")),
                ("sda", "Size", ("1", "x", "0x")),
                ("sda", "Partitions", ("x",)),
                ("sda", "Uevent", ("A=b",)),
                ("sda/queue", "Schedulers", ("none",)),
                ("sda/queue", "Elevator", ("/", "x")),
                (bt.MANAGER_PATH, "LastSeqnum", ("5", "x"))):
            lines = set()
            for value in values:
                with self.subTest(spec=spec, prop=prop, value=value):
                    p = ct.run("set", spec, prop, value)
                    lines.add(ct.assert_one_line_failure(self, p, contains=(
                        "Failed to set %s on %s" % (prop, spec),
                        "(org.freedesktop.DBus.Error.PropertyReadOnly)")))
            self.assertEqual(len(lines), 1, lines)

    def test_set_writable_reports_daemon_answer(self):
        # Whatever the daemon answers to a write on a writable attribute,
        # the client says it in one line (exit 1) or succeeds silently.
        p = ct.run("set", "sda/queue", "nomerges", "2")
        if p.returncode != 0:
            ct.assert_one_line_failure(self, p, contains=("nomerges",))
        else:
            self.assertEqual((p.stdout, p.stderr), ("", ""))

    def test_set_round_trip(self):
        f = self.sys + "/block/sda/queue/read_ahead_kb"
        self.assertEqual(bt.read_attr(f), "128")
        ct.run("set", "sda/queue", "read_ahead_kb", "256", check=0)
        self.assertEqual(bt.read_attr(f), "256")
        self.assertEqual(self.get("sda/queue", "read_ahead_kb"), "256\n")
        ct.run("set", "/dev/sda", "power/control", "on", check=0)
        self.assertEqual(bt.read_attr(self.sys + "/block/sda/power/control"),
                         "on")
        ct.run("set", "sda/queue", "read_ahead_kb", "128", check=0)
        self.assertEqual(self.get("sda/queue", "read_ahead_kb"), "128\n")



class ControlCharacters(unittest.TestCase):
    """A device's strings are its firmware's: show escapes control characters as \\xNN (as list's
    cells do), so that an escape sequence cannot drive the terminal nor a newline fake a line; get
    prints the value as it is, for scripts."""

    def test_show_escapes_get_does_not(self):
        fixture = bt.make_fixture()
        dev = os.path.join(fixture, "sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0")
        with open(os.path.join(dev, "vendor"), "w") as f:
            f.write("ev\x1b[31mil\nFAKE  x\n")
        dm = bt.Daemon(fixture + "/sys")
        try:
            p = ct.run("show", "sda/device", check=0)
            self.assertNotIn("\x1b", p.stdout)
            self.assertIn("ev\\x1b[31mil\\x0aFAKE  x", p.stdout)
            self.assertFalse([l for l in p.stdout.split("\n") if l.startswith("FAKE")], p.stdout)
            p = ct.run("get", "sda", "device/vendor", check=0)
            self.assertEqual(p.stdout, "ev\x1b[31mil\nFAKE  x\n")
        finally:
            dm.stop()

    def test_info_escapes(self):
        """info prints the names of link targets (DRIVER, SUBSYSTEM) and
        the uevent's values, which may hold any byte but '/': escaped like
        show's, so that a driver named with an escape sequence and a newline
        neither drives the terminal nor fakes a line of udevadm's form."""
        fixture = bt.make_fixture()
        dev = os.path.join(fixture, "sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0")
        os.unlink(os.path.join(dev, "driver"))
        os.symlink("../../../../../../../bus/scsi/drivers/s\x1b[31md\nE: FAKE=1", os.path.join(dev, "driver"))
        with open(os.path.join(dev, "uevent"), "a") as f:
            f.write("MODALIAS=ev\x1b[31mil\n")
        dm = bt.Daemon(fixture + "/sys")
        try:
            for args in (("info", "sda/device"), ("info", "-a", "sda")):
                with self.subTest(args=args):
                    p = ct.run(*args, check=0)
                    self.assertNotIn("\x1b", p.stdout)
                    self.assertFalse([l for l in p.stdout.split("\n") if "FAKE" in l and "DRIVER" not in l
                                      and "V: " not in l], p.stdout)
                    self.assertIn("s\\x1b[31md\\x0aE: FAKE=1", p.stdout)
            self.assertIn("E: MODALIAS=ev\\x1b[31mil", ct.run("info", "sda/device", check=0).stdout)
        finally:
            dm.stop()

if __name__ == "__main__":
    bt.main()
