# SPDX-License-Identifier: LGPL-2.1-or-later
"""trigger, settle and rescan; trigger and settle measured by the daemon's own seqnums.

On a fixture the daemon takes its events from --uevent-socket: Trigger
writes the action to the fixture's uevent file and nothing comes back
until the test, playing the kernel, sends the matching event.  So
trigger --settle must still be waiting after its writes, must not take an
event from before it started, one of another action or one for another
object, and must return as soon as the last matching Uevent arrived.
settle must not return while events are still flowing and, when it does,
the daemon has applied every event sent.  As root, with a loop device of
the test's own (created on an index nobody uses, attached to an image,
detached and deleted afterwards: `losetup -f` would take loop0, somebody
else's), the same against the real kernel."""
import json
import os
import signal
import tempfile
import threading
import time
import unittest

import blkmodeltest as bt
import clienttest as ct
import loopdev

SDA = bt.SDA_DEV + "/block/sda"


class TriggerFixture(unittest.TestCase):
    def setUp(self):
        self.sys = bt.make_fixture() + "/sys"
        self.dm = bt.Daemon(self.sys, uevent_socket=True)
        self.saved = {}
        for d in (SDA, SDA + "/sda1"):
            with open(self.sys + d + "/uevent") as f:
                self.saved[d] = f.read()

    def tearDown(self):
        self.dm.stop()

    def written(self, devpath):
        with open(self.sys + devpath + "/uevent") as f:
            return f.read()

    def kernel_sends(self, devpath, action):
        """What the kernel does after a write to uevent: the file keeps its
        content, the event goes out."""
        with open(self.sys + devpath + "/uevent", "w") as f:
            f.write(self.saved[devpath])
        self.dm.send_uevent(action, devpath, ct.uevent_env(devpath, action))

    def wait_written(self, devpath, action, timeout=30):
        deadline = time.monotonic() + timeout
        while self.written(devpath) != action:
            self.assertLess(time.monotonic(), deadline, "no write to uevent")
            time.sleep(0.01)

    def test_settle_waits_for_its_uevents(self):
        # An event of before: must not count.
        self.kernel_sends(SDA, "change")
        deadline = time.monotonic() + 30
        while self.dm.manager_prop("LastSeqnum") < self.dm.seq(1):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)

        with ct.Background("--json", "trigger", "--settle", "--timeout=60",
                           "sda", "/dev/sda1") as t:
            self.wait_written(SDA, "change")
            self.wait_written(SDA + "/sda1", "change")
            time.sleep(0.3)
            self.assertIsNone(t.proc.poll(), "returned before any uevent")
            self.kernel_sends(SDA, "change")
            self.kernel_sends(SDA + "/sda1", "add")     # another action
            time.sleep(0.3)
            self.assertIsNone(t.proc.poll(), "returned with sda1 pending")
            self.kernel_sends(SDA + "/sda1", "change")
            try:
                code, err = t.wait(30)
            except AssertionError:
                raise AssertionError("still waiting; the daemon sent:\n%s" % (
                    ct.run("events", check=0).stdout))
            self.assertEqual((code, err), (0, ""))
        self.assertEqual(json.loads("\n".join(t.lines)), {
            "action": "change", "settled": True,
            "objects": [bt.path_of("block", "sda"),
                        bt.path_of("block", "sda", "sda1")]})
        # Every Uevent it waited for has been signalled (so applied).
        self.assertEqual(self.dm.manager_prop("LastSeqnum"), self.dm.seq(4))

    def test_settle_times_out(self):
        t0 = time.monotonic()
        p = ct.run("trigger", "--settle", "-t", "0.5", "--action=add", "sda")
        ct.assert_one_line_failure(self, p, contains=(
            "Timed out waiting for the uevents of 1 object",
            bt.path_of("block", "sda")))
        self.assertGreaterEqual(time.monotonic() - t0, 0.5)
        self.assertEqual(self.written(SDA), "add")

    def test_settle_with_a_daemon_reading_no_uevents(self):
        """The daemon runs --no-uevents: --settle fails at once (it waited
        for its timeout, two minutes by default), before anything is
        written."""
        self.dm.stop()
        self.dm = bt.Daemon(self.sys, no_uevents=True)
        t0 = time.monotonic()
        p = ct.run("trigger", "--settle", "--action=add", "sda")
        ct.assert_one_line_failure(self, p, contains=("reads no uevents",))
        self.assertLess(time.monotonic() - t0, 10)
        self.assertEqual(self.written(SDA), self.saved[SDA])

    def test_rescan_finds_what_changed_without_an_event(self):
        """rescan: a value changed with no uevent (blockdev --setro flips
        ro without one) is in the model, signalled, when rescan returns;
        the poll is off, so nothing else could have found it."""
        self.dm.stop()
        self.dm = bt.Daemon(self.sys, uevent_socket=True,
                            extra_args=["--poll-interval=0"])
        ro = self.sys + SDA + "/sda1/ro"
        with open(ro) as f:
            before = f.read()
        self.assertEqual(ct.run("get", "sda1", "ReadOnly", check=0).stdout,
                         "false\n")
        try:
            with open(ro, "w") as f:
                f.write("1\n")
            p = ct.run("rescan", check=0)
            self.assertEqual((p.stdout, p.stderr), ("", ""))
            self.assertEqual(ct.run_json("rescan"), {"rescanned": True})
            self.assertEqual(
                ct.run("get", "sda1", "ReadOnly", check=0).stdout, "true\n")
        finally:
            with open(ro, "w") as f:
                f.write(before)

    def test_rescan_times_out(self):
        """A daemon that does not answer (stopped): rescan gives up after
        --timeout with the one-line failure."""
        os.kill(self.dm.proc.pid, signal.SIGSTOP)
        try:
            p = ct.run("rescan", "--timeout=0.5")
        finally:
            os.kill(self.dm.proc.pid, signal.SIGCONT)
        ct.assert_one_line_failure(self, p, contains=(
            "Timed out waiting for blkmodeld's rescan",))

    def test_without_objects(self):
        j = ct.run_json("trigger", "--sysname-match=sda*")
        self.assertEqual(j["objects"], [bt.path_of("block", "sda")] + [
            bt.path_of("block", "sda", "sda%d" % i) for i in (1, 2, 3)])
        self.assertEqual(self.written(SDA + "/sda3"), "change")
        # The hardware of a subsystem, by --subsystem-match.
        j = ct.run_json("trigger", "--subsystem-match=scsi",
                        "--sysname-match=*:0:0:0", "--action=change")
        self.assertEqual(len(j["objects"]), 2)       # sda's and sr0's LUN
        self.assertTrue(all(o.startswith(bt.ROOT + "/devices/")
                            for o in j["objects"]))
        self.assertEqual(self.written(bt.SDA_DEV), "change")
        # By default every disk and partition, and nothing else.
        j = ct.run_json("trigger", "--action=change")
        self.assertEqual(len(j["objects"]), 13)

    def test_settle(self):
        # Idle: at once; no event yet, so the last is the one before the
        # daemon's first.
        t0 = time.monotonic()
        self.assertEqual(ct.run_json("settle"), {"settled": True,
                                                 "last_seqnum": self.dm.seq(0)})
        self.assertLess(time.monotonic() - t0, 5)

        # Every event sent before settle started is applied and signalled
        # when it returns: its last_seqnum counts them all, even while the
        # daemon is still reading them when settle starts.
        total = 300
        for i in range(total):
            ct.send_change(self.dm, ct.LOOP0 if i % 2 else
                           "/devices/virtual/block/md0")
        p = ct.run("--json", "settle", "--timeout=60", check=0)
        self.assertEqual(json.loads(p.stdout)["last_seqnum"], self.dm.seq(total))
        self.assertEqual(self.dm.manager_prop("LastSeqnum"), self.dm.seq(total))

    def test_settle_timeout(self):
        # A daemon that does not answer (stopped here): settle gives up.
        self.dm.proc.send_signal(signal.SIGSTOP)
        try:
            p = ct.run("settle", "--timeout=0.5")
        finally:
            self.dm.proc.send_signal(signal.SIGCONT)
        ct.assert_one_line_failure(self, p, contains=("Timed out",))


class TriggerKernel(unittest.TestCase):
    """The real kernel, on a loop device made for this test only."""

    def setUp(self):
        if os.geteuid() != 0 or not os.path.exists("/dev/loop-control"):
            self.skipTest("needs root and loop devices")
        fd, self.img = tempfile.mkstemp(prefix="blkmodel-trigger-")
        os.close(fd)
        self.addCleanup(os.unlink, self.img)
        os.truncate(self.img, 8 << 20)
        loop = loopdev.LoopDevice()
        self.addCleanup(loop.remove)
        loop.attach(self.img)
        self.dev = loop.dev
        self.dm = bt.Daemon("/sys", no_uevents=False)
        self.addCleanup(self.dm.stop)

    def test_trigger_settle_on_own_loop_device(self):
        name = os.path.basename(self.dev)
        before = self.dm.manager_prop("LastSeqnum")
        t0 = time.monotonic()
        p = ct.run("--json", "trigger", "--settle", "--timeout=60",
                   self.dev, timeout=90)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertLess(time.monotonic() - t0, 60)
        self.assertEqual(json.loads(p.stdout)["objects"],
                         [bt.path_of("block", name)])
        # Its Uevent is in the log, after what was there before.
        evs = [e for e in ct.run_json("events", "--since=%d" % before)
               if e["object"] == bt.path_of("block", name)]
        self.assertIn("change", [e["action"] for e in evs])
        self.assertEqual(ct.run("settle", "--timeout=60").returncode, 0)


if __name__ == "__main__":
    bt.main()
