# SPDX-License-Identifier: LGPL-2.1-or-later
"""Golden output: `list`, `list --bytes`, `tree`, `tree sda` and the
ASCII (LC_ALL=C) forms on the standard fixture, compared byte for byte
with tests/client/golden/*.txt.

When an output change is intended, regenerate the files and review the
diff before committing it:

    BLKMODEL_UPDATE_GOLDEN=1 meson test -C build --suite client \\
        client-test-golden
    git diff tests/client/golden/
"""
import os
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
}


class Golden(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dm = bt.Daemon(bt.make_fixture() + "/sys")

    @classmethod
    def tearDownClass(cls):
        cls.dm.stop()

    def test_golden(self):
        for name, (loc, args) in sorted(CASES.items()):
            with self.subTest(golden=name):
                out = ct.run(*args, check=0,
                             environ=ct.env(LC_ALL=loc)).stdout
                path = os.path.join(ct.GOLDEN, name)
                if UPDATE:
                    os.makedirs(ct.GOLDEN, exist_ok=True)
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
            with open(os.path.join(ct.GOLDEN, name)) as f:
                for line in f:
                    self.assertEqual(line, line.rstrip(" ") or "\n", name)


if __name__ == "__main__":
    bt.main()
