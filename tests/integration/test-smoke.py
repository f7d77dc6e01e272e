# SPDX-License-Identifier: LGPL-2.1-or-later
"""The harness itself: a fixture daemon starts, answers, and stops cleanly."""
import unittest

import blkmodeltest as bt


class Smoke(unittest.TestCase):
    def test_start_answer_stop(self):
        d = bt.make_fixture()
        with bt.Daemon(d + "/sys") as dm:
            objs = dm.managed_objects()
            self.assertIn(bt.path_of("block", "sda"), objs)
            self.assertEqual(dm.manager_prop("ObjectCount"), len(objs))


if __name__ == "__main__":
    bt.main()
