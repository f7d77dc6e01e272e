# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the blkmodelctl tests share beyond tests/lib/blkmodeltest.py:
running the client with a chosen environment (locale, NO_COLOR), in the
background, and the assertions every failure path must pass."""

import itertools
import json
import os
import shutil
import signal
import subprocess
import time

import blkmodeltest as bt
import dbus

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")


def env(**kw):
    """The test's environment with kw set (None removes a variable).
    LC_ALL=C.UTF-8 unless told otherwise: tree glyphs depend on it."""
    e = dict(os.environ)
    e.setdefault("LC_ALL", "C.UTF-8")
    for k, v in kw.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return e


def run(*args, check=None, environ=None, timeout=60, bus="--session"):
    """blkmodelctl ARGS on the test's bus; CompletedProcess (text)."""
    argv = [bt.BLKMODELCTL] + ([bus] if bus else []) + list(args)
    p = subprocess.run(argv, capture_output=True, text=True,
                       env=environ or env(), timeout=timeout)
    if check is not None and p.returncode != check:
        raise AssertionError("%s: exit %d, wanted %d\nstdout:\n%s\nstderr:\n%s"
                             % (" ".join(argv), p.returncode, check,
                                p.stdout, p.stderr))
    return p


def run_json(*args):
    """blkmodelctl --json ARGS, which must succeed and print one JSON
    document; returns it parsed."""
    p = run("--json", *args, check=0)
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        raise AssertionError("blkmodelctl --json %s printed no JSON (%s):\n%s"
                             % (" ".join(args), e, p.stdout))


class Background:
    """blkmodelctl in the background (monitor, wait); stdout line by line."""

    def __init__(self, *args, environ=None):
        self.argv = [bt.BLKMODELCTL, "--session"] + list(args)
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env=environ or env())
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.buf = ""
        self.lines = []

    def _read(self):
        try:
            chunk = self.proc.stdout.read()
        except (BlockingIOError, TypeError):
            chunk = None
        if chunk:
            self.buf += chunk
            *done, self.buf = self.buf.split("\n")
            self.lines += done

    def wait_lines(self, pred, timeout=30):
        """Waits until pred(lines) holds; returns the lines."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._read()
            if pred(self.lines):
                return self.lines
            if self.proc.poll() is not None:
                self._read()
                if pred(self.lines):
                    return self.lines
                raise AssertionError("%s exited with %d; stdout so far:\n%s\n"
                                     "stderr:\n%s" % (
                                         " ".join(self.argv),
                                         self.proc.returncode,
                                         "\n".join(self.lines),
                                         self.proc.stderr.read()))
            time.sleep(0.01)
        raise AssertionError("timed out; %s printed so far:\n%s"
                             % (" ".join(self.argv), "\n".join(self.lines)))

    def wait_subscribed(self, n_matches, timeout=30):
        """Waits until the client has n_matches match rules on the bus: from
        then on it misses no signal, however long it takes to look (a sleep
        was not enough for an ASan build on a loaded machine)."""
        bus = dbus.SessionBus()
        dbus_obj = bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
        names = dbus.Interface(dbus_obj, "org.freedesktop.DBus")
        stats = dbus.Interface(dbus_obj, "org.freedesktop.DBus.Debug.Stats")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.assertRunning()
            for name in names.ListNames():
                try:
                    if (name.startswith(":")
                            and names.GetConnectionUnixProcessID(name) == self.proc.pid
                            and stats.GetConnectionStats(name)["MatchRules"] >= n_matches):
                        return
                except dbus.exceptions.DBusException:
                    pass  # a connection that went meanwhile
            time.sleep(0.01)
        raise AssertionError("%s: not subscribed in %d s" % (" ".join(self.argv), timeout))

    def assertRunning(self):
        if self.proc.poll() is not None:
            raise AssertionError("%s exited with %d: %s" % (" ".join(self.argv), self.proc.returncode,
                                                            self.proc.stderr.read()))

    def wait(self, timeout=30):
        """Waits for the exit; returns (exit status, stderr)."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("%s did not exit in %d s"
                                 % (" ".join(self.argv), timeout))
        self._read()
        if self.buf:
            self.lines.append(self.buf)
            self.buf = ""
        return self.proc.returncode, self.proc.stderr.read()

    def stop(self):
        """SIGINT, as Ctrl-C: monitor must end with 0."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        return self.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


def assert_one_line_failure(tc, p, code=1, contains=()):
    """Exit `code`, nothing on stdout, exactly one line on stderr that
    starts with the program's name and contains every string given."""
    tc.assertEqual(p.returncode, code, "stdout:\n%s\nstderr:\n%s"
                   % (p.stdout, p.stderr))
    tc.assertEqual(p.stdout, "")
    lines = p.stderr.split("\n")
    tc.assertEqual(len(lines), 2, "want one stderr line, got:\n" + p.stderr)
    tc.assertEqual(lines[1], "")
    tc.assertTrue(lines[0].startswith("blkmodelctl"), lines[0])
    for s in contains:
        tc.assertIn(s, lines[0])
    return lines[0]


_kernel_seqnum = itertools.count(1000)


def uevent_env(devpath, action, **extra):
    """What the kernel sends with a block uevent (its own SEQNUM, which
    is not the daemon's)."""
    e = {"ACTION": action, "DEVPATH": devpath, "SUBSYSTEM": "block",
         "SEQNUM": str(next(_kernel_seqnum))}
    e.update({k: str(v) for k, v in extra.items()})
    return e


LOOP0 = "/devices/virtual/block/loop0"


def add_loop(sysroot, n):
    """A new loopN in the fixture, built like the standard loop0;
    returns its devpath."""
    old = os.umask(0)
    try:
        b = bt.mksysfs.Builder(bt.mksysfs.Tree(sysroot))
        rel = os.path.join("devices/virtual/block", "loop%d" % n)
        b.disk(rel, "loop%d" % n, (7, n), 2097152, 50 + n,
               "[none] mq-deadline kyber bfq", None, diskseq=50 + n,
               attrs={"range_": 1, "partscan": 0, "events": "media_change"})
    finally:
        os.umask(old)
    return "/" + rel


def remove_loop(sysroot, n):
    """Removes loopN's directories and links from the fixture."""
    name = "loop%d" % n
    shutil.rmtree(os.path.join(sysroot, "devices/virtual/block", name))
    shutil.rmtree(os.path.join(sysroot, "devices/virtual/bdi/7:%d" % n),
                  True)
    for link in ("block/" + name, "class/block/" + name,
                 "dev/block/7:%d" % n, "class/bdi/7:%d" % n):
        try:
            os.unlink(os.path.join(sysroot, link))
        except FileNotFoundError:
            pass


def send_change(dm, devpath=LOOP0):
    dm.send_uevent("change", devpath, uevent_env(devpath, "change"))


def send_loop_uevent(dm, action, n):
    devpath = "/devices/virtual/block/loop%d" % n
    dm.send_uevent(action, devpath, uevent_env(
        devpath, action, MAJOR=7, MINOR=n, DEVNAME="loop%d" % n,
        DEVTYPE="disk", DISKSEQ=50 + n))
    return devpath
