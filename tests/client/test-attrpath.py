# SPDX-License-Identifier: LGPL-2.1-or-later
"""get and set with ATTR a path relative to the object's sysfs directory,
walked as sysfs walks it (queue/ and iosched/ are child kobjects, device/
the disk's hardware, holders/NAME the holder, loop/ and power/ groups),
round-tripping through the daemon to the fixture's files; info -a lists
the object and then each ancestor up the device chain in order."""
import json
import os
import stat
import tempfile
import unittest

import blkmodeltest as bt
import clienttest as ct

SDA = bt.SDA_DEV + "/block/sda"


class AttrPath(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sys = bt.make_fixture() + "/sys"
        cls.dm = bt.Daemon(cls.sys)

    @classmethod
    def tearDownClass(cls):
        cls.dm.stop()

    def get(self, *args):
        return ct.run("get", *args, check=0).stdout

    def test_get_relative_paths(self):
        cases = {
            ("sda", "queue/scheduler"): SDA + "/queue/scheduler",
            ("sda", "queue/iosched/fifo_batch"):
                SDA + "/queue/iosched/fifo_batch",
            ("sda", "device/model"): bt.SDA_DEV + "/model",
            ("sda", "device/vendor"): bt.SDA_DEV + "/vendor",
            ("/dev/sda", "sda1/size"): SDA + "/sda1/size",
            ("loop0", "loop/backing_file"):
                "/devices/virtual/block/loop0/loop/backing_file",
            ("sda", "power/control"): SDA + "/power/control",
            ("sda2", "holders/dm-0/dm/name"):
                "/devices/virtual/block/dm-0/dm/name",
            ("md0", "slaves/sda3/start"): SDA + "/sda3/start",
            ("nvme0n1", "device/serial"):
                "/devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0"
                "/serial",
        }
        for (obj, attr), f in cases.items():
            with self.subTest(obj=obj, attr=attr):
                self.assertEqual(self.get(obj, attr),
                                 bt.read_attr(self.sys + f) + "\n")
        # JSON names the object the path led to.
        j = ct.run_json("get", "sda", "device/model")
        self.assertEqual(j["object"], bt.path_of("devices", *bt.SDA_DEV.split(
            "/")[2:]))
        self.assertEqual((j["interface"], j["property"]),
                         (bt.DEVICE, "model"))
        j = ct.run_json("get", "loop0", "loop/backing_file")
        self.assertEqual(j["interface"], bt.IFACE + "Group.loop")
        # Typed names keep working, on the object reached too.
        self.assertEqual(self.get("sda", "queue/Scheduler"), "mq-deadline\n")
        self.assertEqual(self.get("sda", "Size"), "%d\n" % (976773168 * 512))
        self.assertEqual(self.get("sda", "device/Subsystem"), "scsi\n")
        self.assertEqual(self.get("sda", "device/Driver"), "sd\n")

    def test_set_relative_paths_round_trip(self):
        f = self.sys + SDA + "/queue/read_ahead_kb"
        ct.run("set", "sda", "queue/read_ahead_kb", "512", check=0)
        self.assertEqual(bt.read_attr(f), "512")
        self.assertEqual(self.get("sda", "queue/read_ahead_kb"), "512\n")
        self.assertEqual(ct.run_json("set", "sda", "queue/read_ahead_kb",
                                     "128")["value"], "128")
        self.assertEqual(bt.read_attr(f), "128")

        f = self.sys + bt.SDA_DEV + "/timeout"
        ct.run("set", "/dev/sda", "device/timeout", "60", check=0)
        self.assertEqual(bt.read_attr(f), "60")
        self.assertEqual(self.get("sda", "device/timeout"), "60\n")
        ct.run("set", "sda", "device/timeout", "30", check=0)

        f = self.sys + SDA + "/queue/iosched/fifo_batch"
        ct.run("set", "sda", "queue/iosched/fifo_batch", "32", check=0)
        self.assertEqual(bt.read_attr(f), "32")
        ct.run("set", "sda", "queue/iosched/fifo_batch", "16", check=0)

    def test_info_walks_up_the_chain(self):
        out = ct.run("info", "-a", "/dev/sda1", check=0).stdout
        looking = [ln for ln in out.split("\n") if "looking at" in ln]
        chain = [SDA + "/sda1", SDA, bt.SDA_DEV,
                 "/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0",
                 "/devices/pci0000:00/0000:00:1f.2/ata1/host0",
                 "/devices/pci0000:00/0000:00:1f.2/ata1",
                 "/devices/pci0000:00/0000:00:1f.2",
                 "/devices/pci0000:00"]
        self.assertEqual(looking, ["  looking at device '%s':" % chain[0]] +
                         ["  looking at parent device '%s':" % c
                          for c in chain[1:]])
        # udev rule syntax: the device's keys, then the parents' with S.
        self.assertIn('    KERNEL=="sda1"\n    SUBSYSTEM=="block"\n'
                      '    DRIVER==""\n', out)
        self.assertIn('    KERNELS=="0:0:0:0"\n    SUBSYSTEMS=="scsi"\n'
                      '    DRIVERS=="sd"\n', out)
        self.assertIn('    ATTRS{model}=="Samsung SSD 860 "\n', out)
        self.assertIn('    ATTR{start}=="2048"\n', out)
        self.assertIn('    ATTR{power/control}=="auto"\n', out)
        self.assertIn('    SUBSYSTEMS=="pci"\n    DRIVERS=="ahci"\n', out)
        # udevadm's omissions: dev, modalias, binary files.
        self.assertNotIn("{dev}", out)
        self.assertNotIn("{modalias}", out)
        self.assertNotIn("{config}", out)

        j = ct.run_json("info", "-a", "sda1")
        self.assertEqual([j["devpath"]] + [p["devpath"] for p in j["parents"]],
                         chain)
        self.assertEqual([p["subsystem"] for p in j["parents"]],
                         ["block", "scsi", "scsi", "scsi", "", "pci", ""])
        self.assertEqual(j["parents"][1]["driver"], "sd")
        self.assertEqual(j["attributes"]["start"], "2048")
        # A virtual disk has no hardware: only itself.
        j = ct.run_json("info", "-a", "dm-0")
        self.assertEqual((j["kernel"], j["parents"]), ("dm-0", []))
        # Without -a: udevadm info's query, no walk.
        out = ct.run("info", "sda1", check=0).stdout.split("\n")
        self.assertEqual(out[:8], ["P: " + SDA + "/sda1", "M: sda1", "R: 1",
                                   "U: block", "T: partition", "D: b 8:1",
                                   "N: sda1", "Q: 1"])
        # A device's driver is V:, as udevadm prints it.
        dev = ct.run("info", bt.path_of("devices", "pci0000:00", "0000:00:1f.2"),
                     check=0).stdout.split("\n")
        self.assertEqual(dev[:5], ["P: /devices/pci0000:00/0000:00:1f.2",
                                   "M: 0000:00:1f.2", "R: 2", "U: pci",
                                   "V: ahci"])
        self.assertIn("E: PARTN=1", out)
        self.assertEqual(ct.run_json("info", "sda1")["parents"], [])

    def test_device_nodes(self):
        # A device node (or a link to one) is resolved by its MAJ:MIN,
        # which only the client can read: made here with mknod in a
        # directory of the test's own (stat() opens no device).
        if os.geteuid() != 0:
            self.skipTest("mknod needs root")
        with tempfile.TemporaryDirectory() as d:
            os.mknod(os.path.join(d, "node"), 0o600 | stat.S_IFBLK,
                     os.makedev(8, 1))
            os.makedirs(os.path.join(d, "disk", "by-id"))
            os.symlink("../../node", os.path.join(d, "disk", "by-id",
                                                  "ata-Samsung_SSD-part1"))
            os.mknod(os.path.join(d, "vg0-root"), 0o600 | stat.S_IFBLK,
                     os.makedev(253, 0))
            for spec in (os.path.join(d, "node"),
                         os.path.join(d, "disk/by-id/ata-Samsung_SSD-part1")):
                with self.subTest(spec=spec):
                    self.assertEqual(self.get(spec, "Name"), "sda1\n")
            self.assertEqual(self.get(os.path.join(d, "vg0-root"), "Name"),
                             "dm-0\n")
            j = ct.run_json("list", "-o", "NAME", os.path.join(d, "node"))
            self.assertEqual(j, {"blockdevices": [{"name": "sda1"}]})
            # A number the model does not have, and a file that is no
            # device: as Resolve says, under the name given.
            os.mknod(os.path.join(d, "other"), 0o600 | stat.S_IFBLK,
                     os.makedev(4000, 7))
            for name in ("other", "disk"):
                p = ct.run("get", os.path.join(d, name), "Name")
                ct.assert_one_line_failure(self, p, contains=(
                    "No such object: " + os.path.join(d, name),))

    def test_tree_ksets(self):
        block = ct.run("tree", "block", check=0).stdout.split("\n")
        devices = ct.run("tree", "devices", check=0).stdout.split("\n")
        whole = ct.run("tree", check=0).stdout.split("\n")
        self.assertEqual(block[1].split(), ["block", "kset"])
        self.assertEqual(devices[1].split(), ["devices", "kset"])
        # The same rows as in the whole tree (columns may be narrower).
        self.assertEqual(sorted(ln.split() for ln in block[1:] + devices[1:]
                                if ln),
                         sorted(ln.split() for ln in whole[1:] if ln))


if __name__ == "__main__":
    bt.main()
