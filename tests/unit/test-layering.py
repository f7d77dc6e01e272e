#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The daemon's layers, kept: each folder of daemon/ may include only the
folders below it (README "Layout"), and no source file grows past about
600 lines.  Reads the #include lines of the tree; fails on the first
breach with the file and line that made it."""

import os
import re
import sys
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")

# Rank of each layer; a layer may include a strictly lower rank, or itself.
# Layers of one rank are siblings and may not include each other.
LAYERS = {"base": 0, "model": 1, "sysfs": 2, "uevent": 2, "live": 3,
          "bus": 4, "": 5}
# Used by every layer, and never including any of them.
SHARED = ("common", "blkmodel")
MAX_LINES = 600

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(relpath):
    """The layer of a file below daemon/: its first folder, "" for the root."""
    parts = relpath.split(os.sep)
    return parts[0] if len(parts) > 1 else ""


def sources(top):
    for dirpath, _, files in os.walk(top):
        for f in files:
            if f.endswith((".c", ".h")):
                yield os.path.join(dirpath, f)


def breaches(root):
    daemon = os.path.join(root, "daemon")
    out = []
    for path in sources(daemon):
        rel = os.path.relpath(path, daemon)
        mine = layer_of(rel)
        if mine not in LAYERS:
            out.append("%s: folder %r is no known layer" % (rel, mine))
            continue
        with open(path) as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = m.group(1)
                first = target.split("/")[0] if "/" in target else None
                if first in SHARED:
                    continue
                if first is None:
                    if mine != "":
                        out.append("%s:%d: includes \"%s\" without its layer "
                                   "folder" % (rel, n, target))
                    continue
                if first not in LAYERS or first == "":
                    out.append("%s:%d: includes \"%s\": no layer %r"
                               % (rel, n, target, first))
                    continue
                if first == mine:
                    continue
                if LAYERS[first] >= LAYERS[mine]:
                    out.append("%s:%d: layer %r includes %r, which is not "
                               "below it" % (rel, n, mine or "root", first))
    for path in sources(os.path.join(root, "common")):
        with open(path) as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if m and m.group(1).split("/")[0] not in SHARED:
                    out.append("%s:%d: common/ includes \"%s\" from outside "
                               "common/" % (os.path.relpath(path, root), n,
                                            m.group(1)))
    return out


class Layering(unittest.TestCase):
    def test_includes_point_down(self):
        self.assertEqual(breaches(ROOT), [])

    def test_files_stay_small(self):
        long_files = []
        for top in ("daemon", "client", "common"):
            for path in sources(os.path.join(ROOT, top)):
                with open(path) as f:
                    n = sum(1 for _ in f)
                if n > MAX_LINES:
                    long_files.append("%s: %d lines"
                                      % (os.path.relpath(path, ROOT), n))
        self.assertEqual(long_files, [])

    def test_checker_sees_a_breach(self):
        """The checker itself: an upward include in a scratch tree fails."""
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "daemon", "model"))
            os.makedirs(os.path.join(d, "daemon", "bus"))
            os.makedirs(os.path.join(d, "common"))
            with open(os.path.join(d, "daemon", "model", "a.c"), "w") as f:
                f.write('#include "bus/b.h"\n')
            with open(os.path.join(d, "daemon", "bus", "b.h"), "w") as f:
                f.write('#include "model/a.h"\n')
            found = breaches(d)
            self.assertEqual(len(found), 1, found)
            self.assertIn("model/a.c:1", found[0])


if __name__ == "__main__":
    unittest.main(verbosity=2)
