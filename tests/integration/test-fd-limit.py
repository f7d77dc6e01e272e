# SPDX-License-Identifier: LGPL-2.1-or-later
"""Out of file descriptors: a reading that could not open a file learnt nothing of sysfs.  With its
RLIMIT_NOFILE lowered under it, the daemon cannot open sysfs, which says nothing of whether the
devices are still there.  A change event and a Rescan must then leave the published model as it
is, and say nothing happened, instead of taking every disk away (a Rescan read each device as gone)
or announcing every attribute as "" (a change event's reading); once descriptors are back, a Rescan
finds the model in line with sysfs.  Started with too few, the daemon must not take its name with
parts of the model left out (a client that sees the name sees the whole model): it exits, saying
why."""
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
            # A reply cannot hold values it could not read: an error, not "" and 0.  (No
            # descriptor at all now: the one left above may be below every file a reply opens.)
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (3, hard))
            for call in (lambda: self.dm.get_all(bt.path_of("block", "sda"), bt.IFACE + "Disk"),
                         lambda: self.dm.get(bt.path_of("block", "sda"), bt.IFACE + "Disk", "Size"),
                         self.dm.managed_objects):
                with self.assertRaisesRegex(dbus.exceptions.DBusException,
                                            "Too many open files") as cm:
                    call()
                self.assertEqual(cm.exception.get_dbus_name(), bt.IFACE + "Error.ReadFailed")
        finally:
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
        self.assertIn("kept as published: Too many open files", self.dm.output())
        self.assertEqual(sorted(self.dm.managed_objects()), sorted(before))
        # With descriptors again: in line with sysfs, and nothing to reconcile.
        self.rec.signals.clear()
        self.dm.manager("Rescan")
        self.rec.pump(0.3)
        self.assertEqual(model_signals(self.rec), [])
        self.assertEqual(bt.model_diff(self.dm.all_objects(), before), "")


class FdLimitReadAhead(unittest.TestCase):
    """GetManagedObjects reads its objects ahead on the thread pool, batches of them at once.  Those
    must not take the descriptors the reply needs: with a few dozen to spare (each object's GetAll
    reads), the whole reply, not "Too many open files" (the batches held a directory an object,
    hundreds in flight), and not a reply failed for a worker's EMFILE the loop would not have met."""

    def test_read_ahead_leaves_descriptors(self):
        d = bt.make_fixture(disks=100, partitions=2)
        try:
            with bt.Daemon(d + "/sys", extra_args=["--poll-interval=0"]) as dm:
                whole = dm.managed_objects()
                pid = dm.proc.pid
                soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
                top = max(int(fd) for fd in os.listdir("/proc/%d/fd" % pid))
                resource.prlimit(pid, resource.RLIMIT_NOFILE, (top + 40, hard))
                try:
                    for _ in range(3):
                        self.assertEqual(bt.model_diff(dm.managed_objects(), whole), "")
                finally:
                    resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
        finally:
            shutil.rmtree(d, ignore_errors=True)


class FdLimitAtStart(unittest.TestCase):
    def setUp(self):
        self.dir = bt.make_fixture()

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_whole_model_or_no_name(self):
        with bt.Daemon(self.dir + "/sys") as dm:
            whole = dm.all_objects()
        refused = 0
        # From too few to read class/block at all, up to enough: every start either publishes the
        # whole model or exits before taking the name, with the reason.
        for n in range(10, 64):
            dm = bt.Daemon(self.dir + "/sys", wait=False,
                           prefix=["prlimit", "--nofile=%d:1024" % n, "--"])
            try:
                dm.wait_for_name()
            except AssertionError:
                out = dm.stop(code=1)
                self.assertRegex(out, r"<3>.*: Too many open files", out)
                refused += 1
                continue
            try:
                # What it published at the start, read with descriptors enough to read it.
                resource.prlimit(dm.proc.pid, resource.RLIMIT_NOFILE, (1024, 1024))
                diff = bt.model_diff(dm.all_objects(), whole)
                self.assertEqual(diff, "", "RLIMIT_NOFILE %d:\n%s" % (n, dm.output()))
            finally:
                dm.stop()
            break
        else:
            self.fail("no start with up to 63 descriptors")
        self.assertGreater(refused, 0, "the first limit tried already sufficed")


if __name__ == "__main__":
    bt.main()
