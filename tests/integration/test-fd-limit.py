# SPDX-License-Identifier: LGPL-2.1-or-later
"""Out of file descriptors (issue 13, "bad input ... loses nothing already published"): with its
RLIMIT_NOFILE lowered under it, the daemon cannot open sysfs, which says nothing of whether the
devices are still there.  A change event and a Rescan must then leave the published model as it
is, and say nothing happened, instead of taking every disk away (a Rescan read each device as gone)
or announcing every attribute as "" (a change event's reading); once descriptors are back, a Rescan
finds the model in line with sysfs."""
import os
import resource
import shutil
import unittest

import dbus

import blkmodeltest as bt

SDA = bt.SDA_DEV + "/block/sda"


def model_signals(rec):
    return [(s[1], str(s[2])) for s in rec.signals
            if s[1] != "Uevent" and s[2] != bt.MANAGER_PATH]


class FdLimit(unittest.TestCase):
    def setUp(self):
        self.dir = bt.make_fixture()
        self.dm = bt.Daemon(self.dir + "/sys", uevent_socket=True,
                            extra_args=["--poll-interval=0"])
        self.rec = bt.SignalRecorder()

    def tearDown(self):
        self.rec.close()
        self.dm.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_no_descriptors_changes_nothing(self):
        before = self.dm.all_objects()
        pid = self.dm.proc.pid
        soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        # One descriptor above those it holds: a reading opens a directory, then fails (EMFILE).
        top = max(int(fd) for fd in os.listdir("/proc/%d/fd" % pid))
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (top + 2, hard))
        try:
            last = self.dm.manager_prop("LastSeqnum")
            self.dm.send_uevent("change", SDA, {"SUBSYSTEM": "block", "SEQNUM": "900"})
            self.dm.send_uevent("change", SDA + "/sda1",
                                {"SUBSYSTEM": "block", "SEQNUM": "901"})
            self.rec.wait_for(lambda s: len([x for x in self.rec.signals
                                             if x[1] == "Uevent"]) >= 2)
            try:
                self.dm.manager("Rescan")
            except dbus.exceptions.DBusException as e:
                # Refused whole is fine too: a clear error.
                self.assertIn("Too many open files", str(e))
            self.rec.pump(0.3)
            self.assertEqual(self.dm.manager_prop("LastSeqnum"), last + 2)
            # Nothing was announced, and every object is still there.
            self.assertEqual(model_signals(self.rec), [])
            self.assertEqual(sorted(self.dm.managed_objects()), sorted(before))
        finally:
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
        self.assertIn("kept as published: Too many open files", self.dm.output())
        # With descriptors again: in line with sysfs, and nothing to reconcile.
        self.rec.signals.clear()
        self.dm.manager("Rescan")
        self.rec.pump(0.3)
        self.assertEqual(model_signals(self.rec), [])
        self.assertEqual(bt.model_diff(self.dm.all_objects(), before), "")


if __name__ == "__main__":
    bt.main()
