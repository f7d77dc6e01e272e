# SPDX-License-Identifier: LGPL-2.1-or-later
"""The harness itself: a fixture daemon starts, answers, and stops cleanly;
and what it cannot start with, it refuses with a message naming the cause."""
import os
import subprocess
import unittest

import blkmodeltest as bt


class Smoke(unittest.TestCase):
    def test_start_answer_stop(self):
        d = bt.make_fixture()
        with bt.Daemon(d + "/sys") as dm:
            objs = dm.managed_objects()
            self.assertIn(bt.path_of("block", "sda"), objs)
            self.assertEqual(dm.manager_prop("ObjectCount"), len(objs))

    def test_a_second_daemon_says_why_it_cannot_start(self):
        sysfs = bt.make_fixture() + "/sys"
        with bt.Daemon(sysfs):
            p = self.run_daemon("--session", "--sysfs-root=" + sysfs,
                                "--no-uevents")
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("another connection owns it (is blkmodeld already "
                          "running on this bus?)", p.stderr)

    def test_a_relative_sysfs_root_is_published_absolute(self):
        d = bt.make_fixture()
        self.addCleanup(os.chdir, os.getcwd())
        os.chdir(d)
        with bt.Daemon("sys") as dm:
            self.assertEqual(dm.manager_prop("SysfsRoot"), os.path.join(d, "sys"))
        # Written as it is compared: one slash a run, none trailing.
        with bt.Daemon("./sys//") as dm:
            self.assertEqual(dm.manager_prop("SysfsRoot"), os.path.join(d, "./sys"))
        with bt.Daemon(d + "//sys/") as dm:
            self.assertEqual(dm.manager_prop("SysfsRoot"), os.path.join(d, "sys"))

    def test_a_relative_uevent_socket_is_published_absolute(self):
        """Even one named "none": UeventSource says "none" for --no-uevents
        only (blkmodelctl trigger --settle refuses such a daemon)."""
        d = bt.make_fixture()
        self.addCleanup(os.chdir, os.getcwd())
        os.chdir(d)
        with bt.Daemon("sys", uevent_socket="none") as dm:
            self.assertEqual(dm.manager_prop("UeventSource"), os.path.join(d, "none"))
        with bt.Daemon("sys", no_uevents=True) as dm:
            self.assertEqual(dm.manager_prop("UeventSource"), "none")

    def run_daemon(self, *args, env=None):
        return subprocess.run([bt.BLKMODELD, *args], capture_output=True,
                              text=True, timeout=30, env=env)

    def test_bad_command_lines(self):
        sysfs = bt.make_fixture() + "/sys"
        for args, words in (
                (("--poll-interval=abc",), "--poll-interval 'abc'"),
                (("--log-level=loud",), "--log-level 'loud'"),
                (("--event-log-size=0",), "--event-log-size '0'"),
                (("--max-message-size=12",), "--max-message-size '12'"),
                (("--uevent-socket=/x", "--no-uevents"), "exclude each other"),
                (("--address=",), "--address ''"),
                (("extra",), "'extra'"),
                (("--bogus",), "'--bogus'")):
            with self.subTest(args=args):
                p = self.run_daemon("--sysfs-root=" + sysfs, *args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(p.stdout, "")
                self.assertIn(words, p.stderr)
                self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        p = self.run_daemon("--sysfs-root=/nonexistent", "--no-uevents")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("/nonexistent", p.stderr)

    def test_no_bus(self):
        """What blkmodelctl says of a bus it cannot reach, the daemon says
        too: where it looked, and what to use instead."""
        sysfs = bt.make_fixture() + "/sys"
        common = ("--sysfs-root=" + sysfs, "--no-uevents")
        p = self.run_daemon("--address=unix:path=/nonexistent/bus", *common)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("the bus at unix:path=/nonexistent/bus", p.stderr)
        env = dict(os.environ)
        for name in ("DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"):
            env.pop(name, None)
        p = self.run_daemon("--session", *common, env=env)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("No session bus", p.stderr)
        self.assertIn("--address=ADDRESS", p.stderr)
        self.assertNotIn("No medium", p.stderr)
        env["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent/sbus"
        p = self.run_daemon("--system", *common, env=env)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("Failed to connect to the system bus", p.stderr)


if __name__ == "__main__":
    bt.main()
