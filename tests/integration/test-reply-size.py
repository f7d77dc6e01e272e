# SPDX-License-Identifier: LGPL-2.1-or-later
"""The size the daemon reckons for a GetManagedObjects reply, before and
while building it, against what crosses the bus.  Too low, and the bus would
drop the daemon for a message over its limit; too high, and replies that fit
are refused (clients then read in parts, more slowly).  Every part of the
standard fixture, of a larger synthetic one, and of this machine's /sys
(read only)."""
import re
import unittest

import blkmodeltest as bt

SIZE_LINE = re.compile(r"GetManagedObjects on (\S+): (about|at most) (\d+) bytes")


def reckoned(dm):
    """{path: {"about": estimate, "at most": bound}}, the last of each."""
    out = {}
    for m in SIZE_LINE.finditer(dm.output()):
        out.setdefault(m.group(1), {})[m.group(2)] = int(m.group(3))
    return out


class ReplySize(unittest.TestCase):
    def check(self, sysfs_root, extra_args=()):
        with bt.Daemon(sysfs_root, extra_args=list(extra_args)) as dm:
            disks = [p for p, i in dm.call(bt.path_of("block"), bt.OM, "GetManagedObjects").items()
                     if i.get(bt.KOBJ, {}).get("Ktype") == "disk"]
            # The Manager's own properties are reckoned loosely (a few KiB): the
            # root is left out of the tight checks.
            parts = [bt.path_of("block"), bt.path_of("devices")] + disks
            # After the first reading, the estimate knows the values' lengths.
            sizes = {p: bt.reply_body_size(p) for p in parts}
            sizes = {p: bt.reply_body_size(p) for p in parts}
            root = bt.reply_body_size(bt.ROOT)
            got = reckoned(dm)
        self.assertGreaterEqual(got[bt.ROOT]["at most"], root)
        for p, size in sizes.items():
            # Exact but for the reply's own array head (8 bytes), reckoned as 64,
            # and the last entry's padding.
            self.assertGreaterEqual(got[p]["at most"], size, p)
            self.assertLessEqual(got[p]["at most"], size + 64 + 7, p)
            # The estimate is no bound (the building stops at the limit all the
            # same), but should be near: it decides whether to build at all.
            self.assertLess(abs(got[p]["about"] - size), size * 0.25 + 1024,
                            "%s: %d estimated, %d sent" % (p, got[p]["about"], size))
        return sizes

    def test_standard_fixture(self):
        self.check(bt.make_fixture() + "/sys")

    def test_synthetic_fixture(self):
        sizes = self.check(bt.make_fixture(disks=100, partitions=4) + "/sys")
        self.assertGreater(sizes[bt.path_of("block")], 1 << 20)

    def test_this_machine(self):
        self.check("/sys", ["--no-uevents"])


if __name__ == "__main__":
    bt.main()
