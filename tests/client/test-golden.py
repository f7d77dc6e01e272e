# SPDX-License-Identifier: LGPL-2.1-or-later
"""Golden output on the standard fixture, compared byte for byte with
tests/client/golden/: the text of list (its forms), tree, tree sda and the
ASCII (LC_ALL=C) forms; and one --json document per command (list, tree,
show, info, get, events, wait, dump, settle, trigger): the documented
schema, keys in their stable order.  Paths that change from run to run
(the fixture's, the daemon's socket) are written as @FIXTURE@ and
@DAEMON@, and the daemon's seqnums (which start from the wall clock) as
@SEQk@ for its k-th event's (@SEQ0@: LastSeqnum before the first).

When an output change is intended, regenerate the files and review the
diff before committing it:

    BLKMODEL_UPDATE_GOLDEN=1 meson test -C build --suite client \\
        client-test-golden
    git diff tests/client/golden/
"""
import os
import re
import time
import unittest

import blkmodeltest as bt
import clienttest as ct

UPDATE = os.environ.get("BLKMODEL_UPDATE_GOLDEN") == "1"

# golden file → (locale, blkmodelctl arguments)
CASES = {
    "list.txt": ("C.UTF-8", ("list",)),
    "list-bytes.txt": ("C.UTF-8", ("list", "--bytes")),
    "list-no-legend.txt": ("C.UTF-8", ("--no-legend", "list")),
    "list-ascii.txt": ("C", ("list",)),
    "tree.txt": ("C.UTF-8", ("tree",)),
    "tree-sda.txt": ("C.UTF-8", ("tree", "/dev/sda")),
    "tree-ascii.txt": ("C", ("tree",)),
    "info-a-sda1.txt": ("C.UTF-8", ("info", "-a", "sda1")),
    "info-a-nvme0n1.txt": ("C.UTF-8", ("info", "-a", "nvme0n1")),
    "info-sda1.txt": ("C.UTF-8", ("info", "sda1")),
    # One JSON document per command.  Order matters for the last two:
    # settle sees the two events, trigger writes loop0's uevent file.
    "json/list.json": ("C.UTF-8", ("--json", "list")),
    "json/list-all-columns.json": ("C.UTF-8", ("list", "-J", "-b", "-O")),
    "json/tree.json": ("C.UTF-8", ("--json", "tree")),
    "json/tree-block.json": ("C.UTF-8", ("--json", "tree", "block")),
    "json/show.json": ("C.UTF-8", ("--json", "show", "sda")),
    "json/info.json": ("C.UTF-8", ("--json", "info", "-a", "sda1")),
    "json/get.json": ("C.UTF-8", ("--json", "get", "sda",
                                  "queue/scheduler")),
    "json/events.json": ("C.UTF-8", ("--json", "events")),
    "json/wait.json": ("C.UTF-8", ("--json", "wait", "sda1")),
    "json/dump.json": ("C.UTF-8", ("dump",)),
    "json/zz-settle.json": ("C.UTF-8", ("--json", "settle")),
    "json/zz-trigger.json": ("C.UTF-8", ("--json", "trigger", "loop0")),
}


class Golden(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fixture = bt.make_fixture()
        cls.dm = bt.Daemon(cls.fixture + "/sys", uevent_socket=True)
        # Two known events for events --json (GetEvents gives no time:
        # "timestamp" is null, so the document is the same every run).
        ct.send_change(cls.dm)
        ct.send_change(cls.dm, "/devices/virtual/block/md0")
        deadline = time.monotonic() + 30
        while cls.dm.manager_prop("LastSeqnum") < cls.dm.seq(2):
            assert time.monotonic() < deadline, "events not applied"
            time.sleep(0.01)

    @classmethod
    def tearDownClass(cls):
        cls.dm.stop()

    def normalize(self, out):
        out = out.replace(self.dm.tmp, "@DAEMON@").replace(self.fixture,
                                                           "@FIXTURE@")
        # A seqnum has 16 digits: whole numbers only, never part of a longer
        # one.  Any other seqnum stays as it is, and so fails the test.
        for k in range(0, 3):
            out = re.sub(r"(?<![0-9])%d(?![0-9])" % self.dm.seq(k),
                         "@SEQ%d@" % k, out)
        return out

    def test_golden(self):
        for name, (loc, args) in sorted(CASES.items()):
            with self.subTest(golden=name):
                out = self.normalize(ct.run(*args, check=0, environ=ct.env(
                    LC_ALL=loc)).stdout)
                path = os.path.join(ct.GOLDEN, name)
                if UPDATE:
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "w") as f:
                        f.write(out)
                    continue
                with open(path) as f:
                    want = f.read()
                self.maxDiff = None
                self.assertEqual(out, want, "regenerate with "
                                 "BLKMODEL_UPDATE_GOLDEN=1 if intended")

    def test_no_trailing_blanks(self):
        for name in CASES:
            if name.endswith(".txt"):
                with open(os.path.join(ct.GOLDEN, name)) as f:
                    for line in f:
                        self.assertEqual(line, line.rstrip(" ") or "\n",
                                         name)

    def test_dump_twice(self):
        # Two dumps of an unchanged model: byte-identical (the daemon's own
        # reply order follows its hash tables; dump puts it in model order).
        a = ct.run("dump", check=0).stdout
        b = ct.run("dump", check=0).stdout
        self.assertEqual(a, b)
        self.assertGreater(len(a), 10000)


if __name__ == "__main__":
    bt.main()
