# SPDX-License-Identifier: LGPL-2.1-or-later
"""`blkmodelctl list` against util-linux: on the same fixture tree,
`lsblk --sysroot DIR` and `blkmodelctl list` must agree column by column
for every column the two share, in JSON (lsblk's keys and value types,
with and without -b) and as text (character for character apart from
lsblk's trailing blanks, in a UTF-8 and an ASCII locale, with and without
headings); `list DEVICE...` shows those subtrees; empty devices are hidden
as lsblk hides them (unattached loop devices unless -a, all with -A).  HCTL and TRAN are left out of the
comparison: lsblk --sysroot cannot find the SCSI address of a fixture's
disk (it prints nothing for both), where blkmodelctl gives 0:0:0:0 and
sata; they are checked against the fixture directly."""
import json
import os
import shutil
import subprocess
import unittest

import blkmodeltest as bt
import clienttest as ct

SHARED = ("NAME,KNAME,PATH,MAJ:MIN,RM,HOTPLUG,SIZE,RO,TYPE,SCHED,PKNAME,"
          "SUBSYSTEMS,MODEL,VENDOR,REV,SERIAL,STATE,ALIGNMENT,DISC-ALN,DAX,"
          "DISC-GRAN,DISC-MAX,DISC-ZERO,LOG-SEC,MIN-IO,OPT-IO,PHY-SEC,RA,"
          "RAND,ROTA,RQ-SIZE,START,WSAME,ZONED,ZONE-SZ,ZONE-WGRAN,ZONE-APP,"
          "ZONE-NR,ZONE-OMAX,ZONE-AMAX")
DEFAULT = "NAME,MAJ:MIN,RM,SIZE,RO,TYPE"


def lsblk(d, *args, environ=None):
    p = subprocess.run(["lsblk", "--sysroot", d] + list(args),
                       capture_output=True, text=True, timeout=60,
                       env=environ or ct.env())
    if p.returncode != 0:
        raise AssertionError("lsblk failed (%d): %s" % (p.returncode,
                                                        p.stderr))
    return p.stdout


def walk(nodes):
    for n in nodes:
        yield n
        yield from walk(n.get("children", []))


def count(nodes):
    return sum(1 + count(n.get("children", [])) for n in nodes)


def rstrip_lines(text):
    return [ln.rstrip() for ln in text.split("\n")]


class ListAgreesWithLsblk(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("lsblk"):
            raise AssertionError("lsblk (util-linux) is required")

    def compare(self, d):
        """Every shared column, JSON and text; returns lsblk's JSON tree."""
        want = None
        for b in ((), ("-b",)):
            theirs = json.loads(lsblk(d, "-J", *b, "-o", SHARED))
            ours = ct.run_json("list", *b, "-o", SHARED)
            self.maxDiff = None
            # Same nodes, same order, same keys in the same order, same
            # values and value types.
            self.assertEqual(json.dumps(ours), json.dumps(theirs))
            want = want or theirs["blockdevices"]

        for loc in ("C.UTF-8", "C"):
            e = ct.env(LC_ALL=loc)
            for cols in (DEFAULT, SHARED):
                for extra in ((), ("-b",), ("-n",)):
                    with self.subTest(locale=loc, cols=cols, args=extra):
                        theirs = lsblk(d, "-o", cols, *extra, environ=e)
                        ours = ct.run("list", "-o", cols, *extra, check=0,
                                      environ=e).stdout
                        self.assertEqual(ours.split("\n"),
                                         rstrip_lines(theirs))
        return want

    def test_standard_fixture(self):
        d = bt.make_fixture()
        with bt.Daemon(d + "/sys"):
            tree = self.compare(d)
            # What the comparison covered, so that it cannot pass on
            # nothing: 13 devices, md0 twice (on sda3 and nvme0n1p2), dm,
            # cciss, SCSI, NVMe, a CD.
            self.assertEqual(count(tree), 14)
            flat = json.dumps(tree)
            for s in ("vg0-root", "cciss/c0d0p1", '"raid1"', '"rom"',
                      '"lvm"', "block:scsi:pci", "Samsung SSD 860",
                      "/dev/mapper/vg0-root", '"live"'):
                self.assertIn(s, flat)
            self.check_devices(tree)
            self.check_hctl_tran()
            self.check_default_and_widths(d)

    def check_devices(self, tree):
        """list DEVICE...: each named device with what sits on it, as
        lsblk's whole tree has it; in lsblk's order (by MAJ:MIN, not as
        named), a device named twice once."""
        nodes = {n["kname"]: n for n in walk(tree)}
        for names, order in ((("sda",), None), (("loop0",), None),
                             (("sda2", "nvme0n1"), None),
                             (("nvme0n1", "sda2"), ("sda2", "nvme0n1")),
                             (("sda", "sda"), ("sda",)),
                             (("/dev/sda1",), None), (("8:3",), None)):
            with self.subTest(devices=names):
                got = ct.run_json("list", "-o", SHARED, *names)
                want = [nodes[os.path.basename(n) if "/" in n else
                              {"8:3": "sda3"}.get(n, n)]
                        for n in order or names]
                self.assertEqual(got["blockdevices"], want)
        # As text: the subtree rows of the whole listing (columns as wide
        # as these rows need).
        whole = ct.run("list", "-o", "NAME,SIZE", check=0).stdout.split("\n")
        part = ct.run("list", "-o", "NAME,SIZE", "sda", check=0).stdout
        start = next(i for i, ln in enumerate(whole) if ln.startswith("sda "))
        self.assertEqual([ln.split() for ln in part.split("\n")[1:-1]],
                         [ln.split() for ln in whole[start:start + 6]])
        # Not a block device: one line, exit 1.
        p = ct.run("list", "sda/queue")
        ct.assert_one_line_failure(self, p, contains=("Not a block device",))

    def check_hctl_tran(self):
        devs = {n["kname"]: n for n in walk(ct.run_json(
            "list", "-o", "KNAME,HCTL,TRAN")["blockdevices"])}
        self.assertEqual((devs["sda"]["hctl"], devs["sda"]["tran"]),
                         ("0:0:0:0", "sata"))
        self.assertEqual((devs["sr0"]["hctl"], devs["sr0"]["tran"]),
                         ("1:0:0:0", "sata"))
        self.assertEqual((devs["nvme0n1"]["hctl"], devs["nvme0n1"]["tran"]),
                         (None, "nvme"))
        # Named, from the part of the model list then reads: the same.
        named = ct.run_json("list", "-o", "KNAME,HCTL,TRAN,MODEL,SUBSYSTEMS",
                            "sda", "nvme0n1")["blockdevices"]
        whole = {n["kname"]: n for n in walk(ct.run_json(
            "list", "-o", "KNAME,HCTL,TRAN,MODEL,SUBSYSTEMS")["blockdevices"])}
        self.assertEqual([n["kname"] for n in named], ["sda", "nvme0n1"])
        for n in walk(named):
            self.assertEqual(n, whole[n["kname"]])
        self.assertEqual((devs["loop0"]["hctl"], devs["loop0"]["tran"]),
                         (None, None))
        # A partition has no device link: only the name rule (nvme) holds.
        self.assertEqual((devs["sda1"]["hctl"], devs["sda1"]["tran"]),
                         (None, None))
        self.assertEqual(devs["nvme0n1p1"]["tran"], "nvme")

    def check_default_and_widths(self, d):
        # The default columns: lsblk's that the model has, then SCHED.
        out = ct.run("list", check=0).stdout.split("\n")
        self.assertEqual(out[0].split(), ["NAME", "MAJ:MIN", "RM", "SIZE",
                                          "RO", "TYPE", "SCHED"])
        # --no-legend keeps RO two wide (its heading's width), as lsblk -n.
        for args in (("--no-legend", "list"), ("list", "-n")):
            got = ct.run(*args, "-o", "NAME,RO,RM", check=0).stdout
            self.assertEqual(got.split("\n"), rstrip_lines(lsblk(
                d, "-n", "-o", "NAME,RO,RM")))
            self.assertIn("loop0           0  0\n", got)
        # -o in any case, +LIST adds to the default, -O is every column.
        self.assertEqual(ct.run("list", "-o", "name,size", check=0).stdout,
                         ct.run("list", "-o", "NAME,SIZE", check=0).stdout)
        head = ct.run("list", "-o", "+MODEL", check=0).stdout.split("\n")[0]
        self.assertEqual(head.split(), ["NAME", "MAJ:MIN", "RM", "SIZE",
                                        "RO", "TYPE", "SCHED", "MODEL"])
        allcols = ct.run_json("list", "-O", "sda1")["blockdevices"][0]
        self.assertIn("zone-amax", allcols)
        self.assertEqual(allcols["object"], bt.path_of("block", "sda",
                                                       "sda1"))
        p = ct.run("list", "-o", "NAME,FSTYPE")
        ct.assert_one_line_failure(self, p, code=2, contains=("FSTYPE",))

    def test_empty_devices(self):
        # lsblk's rule (ignore_empty()): a loop device of 0 bytes with no
        # backing file (unattached) is hidden unless -a; other empty
        # devices (a CD drive with no disc) are shown unless -A.  lsblk
        # --sysroot asks the host's /dev/loopN for the backing file, so
        # the fixture's loop device has a number no host has.
        d = bt.make_fixture()
        ct.add_loop(d + "/sys", 200)
        sr0 = d + "/sys" + bt.SR0_DEV + "/block/sr0/size"
        for f in (d + "/sys/block/loop200/size", sr0):
            with open(f, "w") as fh:
                fh.write("0\n")
        with bt.Daemon(d + "/sys"):
            for extra in ((), ("-a",), ("-A",)):
                with self.subTest(args=extra):
                    theirs = json.loads(lsblk(d, "-J", "-b", *extra, "-o",
                                              SHARED))
                    ours = ct.run_json("list", "-b", *extra, "-o", SHARED)
                    self.assertEqual(ours, theirs)
                    names = [n["name"] for n in ours["blockdevices"]]
                    self.assertEqual("loop200" in names, extra == ("-a",))
                    self.assertEqual("sr0" in names, extra != ("-A",))
                    theirs = lsblk(d, "-o", DEFAULT, *extra)
                    ours = ct.run("list", "-o", DEFAULT, *extra,
                                  check=0).stdout
                    self.assertEqual(ours.split("\n"), rstrip_lines(theirs))
            p = ct.run("list", "loop200")
            ct.assert_one_line_failure(self, p, contains=("loop200", "-a lists it"))
            # -A hid it: the note says so, not that -a would list it.
            p = ct.run("list", "-A", "sr0")
            ct.assert_one_line_failure(self, p, contains=("sr0", "-A hides it"))
            p = ct.run("list", "loop200", "loop0", check=0)
            self.assertIn("loop0", p.stdout)
            self.assertNotIn("loop200", p.stdout)
            self.assertEqual(ct.run_json("list", "-a", "loop200")
                             ["blockdevices"][0]["size"], "0B")
            # With a backing file, an empty loop device is shown.
            with open(d + "/sys/block/loop0/size", "w") as fh:
                fh.write("0\n")
        with bt.Daemon(d + "/sys"):
            names = [n["name"] for n in ct.run_json("list")["blockdevices"]]
            self.assertIn("loop0", names)

    def test_control_characters(self):
        """A model with a tab, an escape sequence, C0 and C1 control
        characters: printed as lsblk prints them (\\xNN for each byte), so
        that they neither shift the columns nor drive the terminal."""
        d = bt.make_fixture()
        model = sorted(os.path.join(r, "model") for r, _, files in os.walk(d + "/sys/devices")
                       if "model" in files)[0]
        with open(model, "wb") as f:
            f.write(b"Bad\tMo\x1b[31mdel\x01 X\xc2\x85Y\x7f\n")
        with bt.Daemon(d + "/sys"):
            self.compare(d)
            out = ct.run("list", "-o", "NAME,MODEL").stdout
        self.assertIn("Bad\\x09Mo\\x1b[31mdel\\x01 X\\xc2\\x85Y\\x7f", out)
        self.assertNotIn("\x1b", out)

    def test_synthetic_fixture(self):
        # 20 disks: sdq and beyond sit on the sd driver's second major, so
        # MAJ:MIN widths and the MAJ:MIN order are exercised.
        d = bt.make_fixture(disks=20, partitions=3)
        with bt.Daemon(d + "/sys"):
            tree = self.compare(d)
        self.assertEqual(count(tree), 80)


class NamedWhileStacksChange(unittest.TestCase):
    def test_a_holder_gone_meanwhile_is_left_out(self):
        """list sda reads sda's disk, then each holder's: a holder (dm-0 on
        sda2) removed in between is left out, as from one whole reading,
        never a failure.  dm-0 goes and comes every few ms meanwhile."""
        import threading
        import time
        d = bt.make_fixture()
        root = d + "/sys"
        dm0 = root + "/devices/virtual/block/dm-0"
        holder = next(os.path.join(x, "holders", "dm-0")
                      for x, _, _ in os.walk(root + "/devices")
                      if x.endswith("/block/sda/sda2"))
        with bt.Daemon(root, uevent_socket=True,
                       extra_args=["--poll-interval=0"]) as dm:
            stop = threading.Event()

            def churn():
                cb = root + "/class/block/dm-0"
                link, hlink = os.readlink(cb), os.readlink(holder)
                while not stop.is_set():
                    os.rename(dm0, dm0 + ".away")
                    os.unlink(cb)
                    os.unlink(holder)
                    dm.send_uevent("remove", "/devices/virtual/block/dm-0",
                                   {"SUBSYSTEM": "block"})
                    time.sleep(0.003)
                    os.rename(dm0 + ".away", dm0)
                    os.symlink(link, cb)
                    os.symlink(hlink, holder)
                    dm.send_uevent("add", "/devices/virtual/block/dm-0",
                                   {"SUBSYSTEM": "block"})
                    time.sleep(0.003)

            t = threading.Thread(target=churn)
            t.start()
            try:
                for _ in range(60):
                    p = ct.run("list", "-o", "NAME", "sda", check=0)
                    self.assertIn("sda2", p.stdout)
            finally:
                stop.set()
                t.join()


if __name__ == "__main__":
    bt.main()
