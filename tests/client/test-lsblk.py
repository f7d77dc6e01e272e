# SPDX-License-Identifier: LGPL-2.1-or-later
"""`blkmodelctl list` against util-linux: on the same fixture tree,
`lsblk --sysroot DIR -J -b` and `blkmodelctl --json list` must show the
same devices with the same names, MAJ:MIN, sizes, RO flags, types,
schedulers and nesting (partitions under disks, dm/md under what they
sit on, a device on two parents under both); and the text tables of the
two tools must be the same, character for character, apart from the
SCHED/SCHEDULER heading and lsblk's trailing blanks."""
import json
import shutil
import subprocess
import unittest

import blkmodeltest as bt
import clienttest as ct

COLUMNS = "NAME,KNAME,MAJ:MIN,SIZE,RO,TYPE,SCHED"


def lsblk(d, *args, environ=None):
    p = subprocess.run(["lsblk", "--sysroot", d] + list(args),
                       capture_output=True, text=True, timeout=60,
                       env=environ or ct.env())
    if p.returncode != 0:
        raise AssertionError("lsblk failed (%d): %s" % (p.returncode,
                                                        p.stderr))
    return p.stdout


def lsblk_nodes(nodes):
    """lsblk -J -b's tree as nested tuples, in lsblk's order."""
    return [(n["name"], n["kname"], n["maj:min"], n["size"], n["ro"],
             n["type"], n["sched"], lsblk_nodes(n.get("children", [])))
            for n in nodes]


def ctl_nodes(nodes):
    """blkmodelctl --json list's tree in the same shape.  Its kname is the
    sysfs name (cciss!c0d0), lsblk's the /dev one (cciss/c0d0)."""
    return [(n["name"], n["kname"].replace("!", "/"), n["maj:min"],
             n["size"], n["ro"], n["type"], n["scheduler"],
             ctl_nodes(n.get("children", [])))
            for n in nodes]


def count(nodes):
    return sum(1 + count(n[-1]) for n in nodes)


class ListAgreesWithLsblk(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("lsblk"):
            raise AssertionError("lsblk (util-linux) is required")

    def compare(self, d):
        want = lsblk_nodes(json.loads(lsblk(d, "-J", "-b", "-o", COLUMNS))
                           ["blockdevices"])
        with bt.Daemon(d + "/sys"):
            got = ctl_nodes(ct.run_json("list")["blockdevices"])
            self.assertEqual(got, want)

            # The tables: same rows, same alignment, same glyphs, in both
            # an UTF-8 and an ASCII locale, with human sizes and --bytes.
            for loc in ("C.UTF-8", "C"):
                e = ct.env(LC_ALL=loc)
                for extra in ((), ("-b",)):
                    with self.subTest(locale=loc, args=extra):
                        theirs = lsblk(d, "-o", "NAME,MAJ:MIN,SIZE,RO,TYPE,"
                                       "SCHED", *extra, environ=e)
                        ours = ct.run("list", *(("--bytes",) if extra
                                                 else ()),
                                      check=0, environ=e).stdout
                        theirs = [ln.rstrip() for ln in theirs.split("\n")]
                        theirs[0] = theirs[0].replace("SCHED", "SCHEDULER")
                        self.assertEqual(ours.split("\n"), theirs)
        return want

    def test_standard_fixture(self):
        tree = self.compare(bt.make_fixture())
        # What the comparison covered, so that it cannot pass on nothing:
        # 13 devices, md0 twice (on sda3 and nvme0n1p2), dm and cciss.
        self.assertEqual(count(tree), 14)
        flat = str(tree)
        for s in ("vg0-root", "cciss/c0d0p1", "'raid1'", "'rom'", "'lvm'"):
            self.assertIn(s, flat)

    def test_synthetic_fixture(self):
        # 20 disks: sdq and beyond sit on the sd driver's second major, so
        # MAJ:MIN widths and the MAJ:MIN order are exercised.
        tree = self.compare(bt.make_fixture(disks=20, partitions=3))
        self.assertEqual(count(tree), 80)


if __name__ == "__main__":
    bt.main()
