# SPDX-License-Identifier: LGPL-2.1-or-later
"""Out of file descriptors: a reading that could not open a file learnt nothing of sysfs.  With its
RLIMIT_NOFILE lowered under it, the daemon cannot open sysfs, which says nothing of whether the
devices are still there.  A change event and a Rescan must then leave the published model as it
is, and say nothing happened, instead of taking every disk away (a Rescan read each device as gone)
or announcing every attribute as "" (a change event's reading); once descriptors are back, a Rescan
finds the model in line with sysfs.  Started with too few, the daemon must not take its name with
parts of the model left out (a client that sees the name sees the whole model): it exits, saying
why.  It raises its soft limit to the hard one at start, so a start meant to run short of descriptors
lowers both; a child it starts gets the soft limit it was started with."""
import os
import re
import resource
import shutil
import socket
import time
import unittest
import xml.etree.ElementTree as ET

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


class FdLimitReplace(unittest.TestCase):
    """A Rescan that finds a disk's request queue came replaces the disk (remove, then add).  Out of
    descriptors for the add, the disk and its partitions were removed and not added back, and the
    Rescan answered success: the disk stayed out of the model until another Rescan.  Whatever the
    descriptors left, the disk is there after the Rescan, as it was or replaced."""

    def test_replace_short_of_descriptors(self):
        for spare in range(1, 8):
            d = bt.make_fixture()
            try:
                queue = d + "/sys" + SDA + "/queue"
                shutil.move(queue, d + "/queue.aside")
                with bt.Daemon(d + "/sys", extra_args=["--poll-interval=0"]) as dm:
                    before = dm.managed_objects()
                    sda = bt.path_of("block", "sda")
                    self.assertIn(sda, before)
                    shutil.move(d + "/queue.aside", queue)
                    pid = dm.proc.pid
                    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
                    top = max(int(fd) for fd in os.listdir("/proc/%d/fd" % pid))
                    resource.prlimit(pid, resource.RLIMIT_NOFILE, (top + spare, hard))
                    try:
                        try:
                            dm.manager("Rescan")
                        except dbus.exceptions.DBusException as e:
                            self.assertIn("Too many open files", str(e))
                    finally:
                        resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
                    after = dm.managed_objects()
                    self.assertTrue(sda in after, "%d descriptors to spare: sda gone" % spare)
                    self.assertTrue(set(before) <= set(after),
                                    "%d descriptors to spare: %s gone" % (spare, sorted(set(before) - set(after))))
            finally:
                shutil.rmtree(d, ignore_errors=True)


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


def limits_of(pid):
    """(soft, hard) of RLIMIT_NOFILE as /proc/PID/limits shows them."""
    with open("/proc/%d/limits" % pid) as f:
        for line in f:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return int(soft), int(hard)
    raise AssertionError("no \"Max open files\" in /proc/%d/limits" % pid)


def published(dm):
    """{path: {interface: [property...]}} of every object, walked with Introspect: what the daemon
    holds, without a descriptor of its own (it lists the model, it opens nothing in sysfs)."""
    out, todo = {}, [bt.ROOT]
    while todo:
        path = todo.pop()
        xml = ET.fromstring(dm.introspect(path))
        out[path] = {i.get("name"): sorted(p.get("name") for p in i.findall("property"))
                     for i in xml.findall("interface")}
        todo += [path.rstrip("/") + "/" + n.get("name") for n in xml.findall("node")]
    return out


def published_diff(have, want):
    """What differs between two published() results, a line each; "" when they are equal."""
    out = []
    for path in sorted(set(have) | set(want)):
        if path not in have or path not in want:
            out.append("%s only in the %s" % (path, "first" if path in have else "second"))
        elif have[path] != want[path]:
            out.append("%s: %r != %r" % (path, have[path], want[path]))
    return "\n".join(out[:20])


def start_or_exit(dm, timeout=60):
    """True once dm took its name, False once it exited before."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if dm.proc.poll() is not None:
            return False
        if dm.bus.name_has_owner(bt.BUS_NAME):
            return True
        time.sleep(0.02)
    raise AssertionError("blkmodeld neither took its name nor exited in %d s:\n%s"
                         % (timeout, dm.output()))


# What a start refused for want of descriptors says: the daemon's reason, or the dynamic loader's
# when not even the libraries could be opened (errno 24, EMFILE, before any of the daemon's code).
REFUSED = re.compile(r"^(<3>.*: Too many open files\b.*"
                     r"|.*error while loading shared libraries: .*: Error 24)$", re.M)


class FdLimitAtStart(unittest.TestCase):
    def setUp(self):
        self.dir = bt.make_fixture()

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def whole_model(self):
        with bt.Daemon(self.dir + "/sys") as dm:
            return published(dm), dm.all_objects()

    def start(self, soft, hard):
        """A daemon started under RLIMIT_NOFILE soft:hard.  (Built with ASan, its leak check at the
        exit needs descriptors too: libuv's signal lock pipe, made and kept before the loop's own
        failed to be, left it too few, "LeakSanitizer has encountered a fatal error".)"""
        return bt.Daemon(self.dir + "/sys", wait=False,
                         prefix=["prlimit", "--nofile=%d:%d" % (soft, hard), "--"])

    def check_whole(self, dm, whole, what):
        """dm published the whole model at its start: every object, interface and property; and
        the values, read with descriptors enough to read them where the limit can be raised again
        (CAP_SYS_RESOURCE: a container's root may not have it)."""
        try:
            diff = published_diff(published(dm), whole[0])
            self.assertEqual(diff, "", "RLIMIT_NOFILE %s:\n%s" % (what, dm.output()))
            try:
                resource.prlimit(dm.proc.pid, resource.RLIMIT_NOFILE, (1024, 1024))
            except PermissionError:
                return
            diff = bt.model_diff(dm.all_objects(), whole[1])
            self.assertEqual(diff, "", "RLIMIT_NOFILE %s:\n%s" % (what, dm.output()))
        finally:
            dm.stop()

    def check_refused(self, dm, what):
        """dm exited before taking its name: an exit status, never a signal, and the reason."""
        rc = dm.proc.wait()
        out = dm.output()
        self.assertGreater(rc, 0, "RLIMIT_NOFILE %s: %s\n%s"
                           % (what, "killed by signal %d" % -rc if rc < 0 else "exit 0", out))
        self.assertRegex(out, REFUSED, "RLIMIT_NOFILE %s" % what)
        dm.stop(code=rc)

    def test_whole_model_or_no_name(self):
        whole = self.whole_model()
        refused = 0
        # From too few to read class/block at all, up to enough: every start either publishes the
        # whole model or exits before taking the name, with the reason.  Soft = hard: the daemon
        # raises its soft limit to the hard one.
        for n in range(10, 64):
            dm = bt.Daemon(self.dir + "/sys", wait=False,
                           prefix=["prlimit", "--nofile=%d:%d" % (n, n), "--"])
            try:
                dm.wait_for_name()
            except AssertionError:
                out = dm.stop(code=1)
                self.assertRegex(out, r"<3>.*: Too many open files", out)
                refused += 1
                continue
            self.check_whole(dm, whole, "%d:%d" % (n, n))
            break
        else:
            self.fail("no start with up to 63 descriptors")
        self.assertGreater(refused, 0, "the first limit tried already sufficed")

    def test_tiny_limits(self):
        """Every limit from none at all: an exit with the reason, or the whole model; never a signal
        (libuv abort()s in uv_loop_init when it cannot make its signal lock's pipe: 4 and 5)."""
        whole = self.whole_model()
        for n in range(0, 13):
            what = "%d:%d" % (n, n)
            with self.start(n, n) as dm:
                if start_or_exit(dm):
                    self.check_whole(dm, whole, what)
                else:
                    self.check_refused(dm, what)

    def test_soft_raised_to_hard(self):
        """A soft limit too small to start with and a hard one large enough: it starts, with the
        soft limit at the hard one, and publishes the whole model.  Under 4 the dynamic loader has
        no descriptor to open the daemon's libraries with: that exit is the loader's."""
        whole = self.whole_model()
        for n in list(range(0, 13)) + [64]:
            what = "%d:4096" % n
            with self.start(n, 4096) as dm:
                if n < 4 and not start_or_exit(dm):
                    self.check_refused(dm, what)
                    continue
                dm.wait_for_name()
                self.assertEqual(limits_of(dm.proc.pid), (4096, 4096), what)
                self.assertIn("<7>Raised RLIMIT_NOFILE's soft limit from %d to 4096" % n,
                              dm.output())
                self.check_whole(dm, whole, what)


class FdLimitChild(unittest.TestCase):
    """A child the daemon starts (sd-bus runs a unixexec: address's command) gets the soft limit the
    daemon was started with, not the raised one: a program that select()s chokes on fds over 1,023."""

    def test_child_gets_original_soft_limit(self):
        d = bt.make_fixture()
        tmp = d + "/child-limits"
        bridge = shutil.which("systemd-stdio-bridge")
        if not bridge:
            self.skipTest("no systemd-stdio-bridge")
        script = ("grep 'Max open files' /proc/self/limits > %s; exec %s --bus-path=%s"
                  % (tmp, bridge, os.environ["DBUS_SESSION_BUS_ADDRESS"]))

        def escape(s):
            return "".join(c if c.isalnum() or c in "-_/." else "%%%02x" % ord(c) for c in s)
        address = "unixexec:path=/bin/sh,argv0=sh,argv1=-c,argv2=" + escape(script)
        try:
            with bt.Daemon(d + "/sys", prefix=["prlimit", "--nofile=64:4096", "--"],
                           extra_args=["--address=" + address]) as dm:
                self.assertEqual(limits_of(dm.proc.pid), (4096, 4096))
                with open(tmp) as f:
                    self.assertEqual(f.read().split()[3:5], ["64", "4096"])
        finally:
            shutil.rmtree(d, ignore_errors=True)


class FdStdioClosed(unittest.TestCase):
    """Started with stdin, stdout and stderr closed (a supervisor's doing, or 2>&-), the daemon's
    first descriptors would take 0, 1 and 2: libuv's signal lock pipe became stderr, every log line
    went into it, and once its 64 KiB were full the daemon slept in write(2) for good, answering
    nothing, SIGTERM included.  They are /dev/null now."""

    def test_logs_go_nowhere(self):
        d = bt.make_fixture()
        try:
            with bt.Daemon(d + "/sys", uevent_socket=True,
                           prefix=["sh", "-c", 'exec "$@" <&- >&- 2>&-', "sh"]) as dm:
                for fd in (0, 1, 2):
                    self.assertEqual(os.readlink("/proc/%d/fd/%d" % (dm.proc.pid, fd)), "/dev/null")
                last = dm.manager_prop("LastSeqnum")
                # A debug line of ~100 bytes each: 2,000 are well past a pipe's 64 KiB.
                s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                s.setblocking(False)
                deadline = time.monotonic() + 30
                sent = 0
                while sent < 2000 and time.monotonic() < deadline:
                    try:
                        s.sendto(("change@%s\0ACTION=change\0DEVPATH=%s\0SUBSYSTEM=block\0"
                                  "SEQNUM=%d\0" % (SDA, SDA, 1000 + sent)).encode(), dm.uevent_socket)
                        sent += 1
                    except BlockingIOError:
                        time.sleep(0.01)
                s.close()
                self.assertEqual(sent, 2000, "the daemon stopped reading its uevent socket")
                deadline = time.monotonic() + 60
                while dm.call(bt.MANAGER_PATH, bt.PROPS, "Get", bt.MANAGER, "LastSeqnum",
                              timeout=10) < last + 2000:
                    self.assertLess(time.monotonic(), deadline, "not every event applied")
                    time.sleep(0.1)
        finally:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    bt.main()
