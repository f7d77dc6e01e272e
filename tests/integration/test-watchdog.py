# SPDX-License-Identifier: LGPL-2.1-or-later
"""The service manager's side of blkmodeld (sd_notify, SPEC §6 and §8).

The test plays systemd: it binds the datagram socket NOTIFY_SOCKET names,
starts the daemon with WATCHDOG_USEC (and WATCHDOG_PID, as systemd sets
it, or not at all), and reads what arrives.  READY=1 comes first, then
WATCHDOG=1 every half period from the daemon's own pid; a stopped loop
(SIGSTOP) sends none; WATCHDOG_PID naming another process, or no
WATCHDOG_USEC, means no pings at all; SIGTERM says STOPPING=1.
"""
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import tempfile
import time
import unittest

import blkmodeltest as bt

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PERIOD_USEC = 200000  # pings every 100 ms
# How long to listen where no ping may come, or only a few must: five periods of the pings.  The
# rate itself is test_ready_then_regular_pings', over 2 s.
QUIET = 0.5


class Notify:
    """The daemon under a fake service manager."""

    def __init__(self, sysfs, watchdog_usec=PERIOD_USEC, pid="self"):
        self.tmp = tempfile.mkdtemp(prefix="blkmodel-notify-")
        self.path = os.path.join(self.tmp, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind(self.path)
        env = dict(os.environ, NOTIFY_SOCKET=self.path)
        for k in ("WATCHDOG_USEC", "WATCHDOG_PID"):
            env.pop(k, None)
        if watchdog_usec is not None:
            env["WATCHDOG_USEC"] = str(watchdog_usec)
        args = [bt.BLKMODELD, "--session", "--no-uevents",
                "--sysfs-root=" + sysfs]
        if pid == "self":
            # systemd sets WATCHDOG_PID to the main pid: the shell's $$ is
            # the daemon's pid once it execs.
            args = ["/bin/sh", "-c", 'WATCHDOG_PID=$$ exec "$0" "$@"'] + args
        elif pid is not None:
            env["WATCHDOG_PID"] = str(pid)
        self.log = open(os.path.join(self.tmp, "blkmodeld.log"), "w+")
        self.proc = subprocess.Popen(args, env=env, stdout=self.log,
                                     stderr=self.log)
        self.messages = []  # (monotonic time, sender pid, {key: value})

    def receive(self, timeout):
        """The next message, or None after timeout seconds."""
        self.sock.settimeout(max(timeout, 0.001))
        try:
            data, anc, _, _ = self.sock.recvmsg(
                4096, socket.CMSG_SPACE(struct.calcsize("iII")))
        except socket.timeout:
            return None
        pid = None
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = struct.unpack("iII", payload[:12])[0]
        fields = dict(line.split("=", 1) for line in
                      data.decode().splitlines() if "=" in line)
        m = (time.monotonic(), pid, fields)
        self.messages.append(m)
        return m

    def wait_for(self, key, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = self.receive(deadline - time.monotonic())
            if m and key in m[2]:
                return m
        raise AssertionError("no %s within %d s; got %r\n%s"
                             % (key, timeout, self.messages, self.output()))

    def collect(self, seconds):
        """Every message of the next seconds."""
        out = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            m = self.receive(deadline - time.monotonic())
            if m:
                out.append(m)
        return out

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()
        self.sock.close()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def pings(messages):
    return [m for m in messages if m[2].get("WATCHDOG") == "1"]


class Watchdog(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sys = bt.make_fixture() + "/sys"

    def start(self, **kw):
        n = Notify(self.sys, **kw)
        self.addCleanup(n.close)
        return n

    def stop(self, n):
        n.proc.send_signal(signal.SIGTERM)
        n.wait_for("STOPPING")
        self.assertEqual(n.proc.wait(60), 0, n.output())
        out = n.output()
        for mark in bt._SANITIZER_MARKS:
            self.assertNotIn(mark, out)

    def test_ready_then_regular_pings(self):
        n = self.start()
        ready = n.wait_for("READY")
        self.assertEqual(ready[1], n.proc.pid)
        self.assertEqual(pings(n.messages), [], "a ping before READY=1")
        got = pings(n.collect(2.0))
        # Every 100 ms: about 20 in two seconds, each from the daemon.
        self.assertGreaterEqual(len(got), 12, got)
        self.assertLessEqual(len(got), 25, got)
        self.assertEqual({m[1] for m in got}, {n.proc.pid})
        gaps = [b[0] - a[0] for a, b in zip(got, got[1:])]
        self.assertTrue(0.07 <= statistics.median(gaps) <= 0.15, gaps)
        self.stop(n)

    def test_stopped_loop_sends_nothing(self):
        n = self.start()
        n.wait_for("READY")
        n.wait_for("WATCHDOG")
        n.proc.send_signal(signal.SIGSTOP)
        try:
            # What was sent before the stop may still be queued.
            n.collect(0.3)
            self.assertEqual(pings(n.collect(QUIET)), [])
        finally:
            n.proc.send_signal(signal.SIGCONT)
        # And they come back with the loop.
        got = pings(n.collect(QUIET))
        self.assertGreaterEqual(len(got), 3, got)
        self.stop(n)

    def test_without_watchdog_pid(self):
        """systemd may leave WATCHDOG_PID out: the pings go out all the
        same."""
        n = self.start(pid=None)
        n.wait_for("READY")
        self.assertGreaterEqual(len(pings(n.collect(QUIET))), 3)
        self.stop(n)

    def test_watchdog_for_another_process(self):
        """WATCHDOG_PID names someone else (a child inherited the
        environment): not ours to ping."""
        n = self.start(pid=os.getpid())
        n.wait_for("READY")
        self.assertEqual(pings(n.collect(QUIET)), [])
        self.stop(n)

    def test_no_watchdog(self):
        n = self.start(watchdog_usec=None)
        n.wait_for("READY")
        self.assertEqual(pings(n.collect(QUIET)), [])
        self.stop(n)

    def test_unit_asks_for_the_watchdog(self):
        with open(os.path.join(SRC, "systemd", "blkmodeld.service.in")) as f:
            lines = [line.strip() for line in f]
        self.assertIn("Type=notify", lines)
        wd = [line.split("=", 1)[1] for line in lines
              if line.startswith("WatchdogSec=")]
        self.assertEqual(len(wd), 1, lines)
        self.assertRegex(wd[0], r"^[1-9][0-9]*(s|min)$")


if __name__ == "__main__":
    bt.main()
