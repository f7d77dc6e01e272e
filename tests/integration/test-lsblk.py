# SPDX-License-Identifier: LGPL-2.1-or-later
"""Cross-check against util-linux: `lsblk --sysroot DIR -J -b` on the same
fixture tree must see the same block devices as blkmodeld: names, MAJ:MIN,
sizes, RO/RM flags, partition starts, types and the parent/child relations
(partition → disk, dm/md → the devices below them)."""
import json
import shutil
import subprocess
import unittest

import blkmodeltest as bt

KOBJ = bt.IFACE + "Kobject"
DISK = bt.IFACE + "Disk"
PART = bt.IFACE + "Partition"
QUEUE = bt.IFACE + "Queue"
DEVICE = bt.IFACE + "Device"

# Columns util-linux 2.38 (Debian 12) accepts; KNAME rather than NAME
# because NAME shows a dm device by its dm/name (vg0-root).
COLUMNS = "NAME,KNAME,MAJ:MIN,SIZE,RO,RM,TYPE,PKNAME,START,SCHED"


def lsblk(sysroot_dir):
    p = subprocess.run(["lsblk", "--sysroot", sysroot_dir, "-J", "-b",
                        "-o", COLUMNS], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        raise AssertionError("lsblk failed (%d): %s" % (p.returncode,
                                                        p.stderr))
    return json.loads(p.stdout)["blockdevices"]


def flatten(tree):
    """{kernel name: row} and {(child, parent)} from lsblk's nested tree.
    A device below two parents (md over two partitions) appears twice in
    the tree; both copies must agree."""
    rows, edges = {}, set()

    def walk(nodes, parent):
        for n in nodes:
            kname = n["kname"].replace("/", "!")   # cciss/c0d0 → cciss!c0d0
            row = {k: v for k, v in n.items()
                   if k not in ("children", "pkname")}
            if kname in rows and rows[kname] != row:
                raise AssertionError("lsblk shows %s twice, differently: "
                                     "%r %r" % (kname, rows[kname], row))
            rows[kname] = row
            if parent is not None:
                edges.add((kname, parent))
                if n["pkname"].replace("/", "!") != parent:
                    raise AssertionError("lsblk: %r below %s" % (n, parent))
            walk(n.get("children", []), kname)

    walk(tree, None)
    return rows, edges


def lsblk_type(objs, path):
    """What lsblk calls the device, from what blkmodeld publishes."""
    o = objs[path]
    if PART in o:
        return "part"
    if bt.IFACE + "Group.dm" in o:
        uuid = o[bt.IFACE + "Group.dm"].get("uuid", "")
        return uuid.split("-")[0].lower() if "-" in uuid else "dm"
    if bt.IFACE + "Group.md" in o:
        return o[bt.IFACE + "Group.md"]["level"]
    if bt.IFACE + "Group.loop" in o:
        return "loop"
    dev = o[DISK]["Device"]
    if dev != "/" and objs[dev][DEVICE].get("type") == "5":
        return "rom"            # SCSI TYPE_ROM
    return "disk"


class Lsblk(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("lsblk"):
            raise AssertionError("lsblk (util-linux) is required")

    def compare(self, d, expect_devices):
        rows, edges = flatten(lsblk(d))
        self.assertEqual(len(rows), expect_devices)
        with bt.Daemon(d + "/sys") as dm:
            objs = dm.all_objects()
            block = {o[KOBJ]["Name"]: p for p, o in objs.items()
                     if o.get(KOBJ, {}).get("Ktype") in ("disk", "partition")}
            # The same devices.
            self.assertEqual(sorted(block), sorted(rows))
            members = objs[bt.path_of("block")][bt.IFACE + "Kset"]["Members"]
            self.assertEqual(sorted(members), sorted(block.values()))

            model_edges = set()
            for name, path in block.items():
                row = rows[name]
                o = objs[path]
                typed = o[PART] if PART in o else o[DISK]
                with self.subTest(device=name):
                    self.assertEqual(row["maj:min"], "%d:%d" % (
                        typed["Major"], typed["Minor"]))
                    self.assertEqual(row["size"], typed["Size"])
                    self.assertIs(row["ro"], typed["ReadOnly"])
                    self.assertEqual(row["type"], lsblk_type(objs, path))
                    if PART in o:
                        self.assertEqual(row["start"] * 512, typed["Start"])
                        parent = objs[o[KOBJ]["Parent"]][KOBJ]["Name"]
                        model_edges.add((name, parent))
                    else:
                        self.assertIsNone(row["start"])
                        self.assertIs(row["rm"], typed["Removable"])
                        if row["sched"] is not None:
                            self.assertEqual(row["sched"], objs[
                                typed["Queue"]][QUEUE]["Scheduler"])
                        for s in typed["Slaves"]:
                            model_edges.add((name, objs[s][KOBJ]["Name"]))
                    for h in typed["Holders"]:
                        model_edges.add((objs[h][KOBJ]["Name"], name))
            # The same relations: partition → disk, dm/md → slaves, and
            # holders/ agreeing with slaves/.
            self.assertEqual(model_edges, edges)
        return rows, edges

    def test_standard_fixture(self):
        rows, edges = self.compare(bt.make_fixture(), 13)
        # What the comparison covered, so it cannot pass on nothing.
        self.assertIn(("dm-0", "sda2"), edges)
        self.assertIn(("md0", "sda3"), edges)
        self.assertIn(("md0", "nvme0n1p2"), edges)
        self.assertIn(("cciss!c0d0p1", "cciss!c0d0"), edges)
        self.assertEqual(len(edges), 9)
        self.assertEqual(rows["sr0"]["type"], "rom")
        self.assertIs(rows["sr0"]["ro"], True)
        self.assertEqual(rows["dm-0"]["type"], "lvm")
        self.assertEqual(rows["md0"]["type"], "raid1")
        self.assertEqual(rows["sda"]["size"], 976773168 * 512)

    def test_synthetic_fixture(self):
        rows, edges = self.compare(bt.make_fixture(disks=20, partitions=3),
                                   80)
        self.assertEqual(len(edges), 60)
        self.assertEqual(sorted(n for n, r in rows.items()
                                if r["type"] == "disk"),
                         sorted(bt.mksysfs.sd_name(i) for i in range(20)))
        # sdq and beyond sit on the sd driver's second major.
        self.assertEqual(rows["sdq"]["maj:min"], "65:0")
        self.assertEqual(rows["sdq3"]["maj:min"], "65:3")


if __name__ == "__main__":
    bt.main()
