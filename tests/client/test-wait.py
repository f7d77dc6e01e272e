# SPDX-License-Identifier: LGPL-2.1-or-later
"""wait: returns when a device injected through --uevent-socket appears
(by name and by MAJ:MIN, which no object path gives in advance), or with
--removed when it is gone; times out with exit 1 and one line; returns
at once for what already is (or is not) there; and, race-free, never
misses an object that appears while it starts."""
import os
import shutil
import signal
import stat
import tempfile
import time
import unittest

import blkmodeltest as bt
import clienttest as ct

# What `wait` subscribes to before it first looks: InterfacesAdded or InterfacesRemoved, and
# blkmodeld's NameOwnerChanged.
WAIT_MATCHES = 2


class Wait(unittest.TestCase):
    def setUp(self):
        self.sys = bt.make_fixture() + "/sys"
        self.dm = bt.Daemon(self.sys, uevent_socket=True)

    def tearDown(self):
        self.dm.stop()

    def add(self, n):
        ct.add_loop(self.sys, n)
        ct.send_loop_uevent(self.dm, "add", n)

    def remove(self, n):
        ct.remove_loop(self.sys, n)
        ct.send_loop_uevent(self.dm, "remove", n)

    def test_appears(self):
        with ct.Background("wait", "loop1", "--timeout=30") as by_name, \
                ct.Background("--json", "wait", "7:1", "-t", "30") as by_num:
            by_name.wait_subscribed(WAIT_MATCHES)
            by_num.wait_subscribed(WAIT_MATCHES)
            self.add(1)
            self.assertEqual(by_name.wait(), (0, ""))
            code, err = by_num.wait()
            self.assertEqual((code, err), (0, ""))
            self.assertIn('"object": "%s"' % bt.path_of("block", "loop1"),
                          "\n".join(by_num.lines))

    def test_removed(self):
        self.add(2)
        ct.run("wait", "loop2", "--timeout=30", check=0)
        with ct.Background("wait", "--removed", "/dev/loop2",
                           "--timeout=30") as w:
            w.wait_subscribed(WAIT_MATCHES)
            self.remove(2)
            self.assertEqual(w.wait(), (0, ""))
        p = ct.run("get", "loop2", "Name")
        ct.assert_one_line_failure(self, p, contains=(
            "No such object: loop2", "NoSuchObject"))

    def test_already_there_or_gone(self):
        t = time.monotonic()
        ct.run("wait", "sda1", check=0)
        ct.run("wait", "--removed", "loop7", check=0)
        self.assertLess(time.monotonic() - t, 10)

    def test_timeout(self):
        t = time.monotonic()
        p = ct.run("wait", "loop3", "--timeout=0.5")
        ct.assert_one_line_failure(self, p, contains=("Timed out", "loop3"))
        self.assertGreaterEqual(time.monotonic() - t, 0.5)
        p = ct.run("wait", "--removed", "sda", "--timeout=0.2")
        ct.assert_one_line_failure(self, p, contains=("Timed out", "sda",
                                                      "removed"))

    def test_no_race_at_start(self):
        # The device appears while the client starts: before, between or
        # after its subscription and its first Resolve.  It must return
        # in every case.
        for n in range(4, 10):
            with ct.Background("wait", "loop%d" % n, "--timeout=30") as w:
                time.sleep(0.002 * (n - 4))
                self.add(n)
                self.assertEqual(w.wait(), (0, ""), "loop%d" % n)

    def test_a_short_life_is_not_missed(self):
        """The object comes and goes (or goes and comes back) while wait
        is not looking: by the time it could Resolve, the model is as it
        was.  The signal that named the object is enough."""
        self.add(2)
        ct.run("wait", "loop2", "--timeout=30", check=0)
        n, path = 11, bt.path_of("block", "loop11")
        waits = [ct.Background("wait", "--removed", "loop2", "--timeout=30")]
        waits += [ct.Background("--json", "wait", spec, "--timeout=30")
                  for spec in ("loop11", "/dev/loop11", "7:11", path,
                               "/devices/virtual/block/loop11",
                               "/sys/devices/virtual/block/loop11")]
        for w in waits:
            self.addCleanup(w.proc.kill)
        try:
            for w in waits:
                w.wait_subscribed(WAIT_MATCHES)
                w.proc.send_signal(signal.SIGSTOP)
            # losetup -d and losetup at once; a loop device set up and
            # detached at once.
            ct.remove_loop(self.sys, 2)
            ct.add_loop(self.sys, 2)
            ct.send_loop_uevent(self.dm, "remove", 2)
            ct.send_loop_uevent(self.dm, "add", 2)
            self.add(n)
            self.dm.call(bt.MANAGER_PATH, bt.MANAGER, "Settle")
            self.remove(n)
            self.dm.call(bt.MANAGER_PATH, bt.MANAGER, "Settle")
        finally:
            for w in waits:
                w.proc.send_signal(signal.SIGCONT)
        for w in waits:
            self.assertEqual(w.wait(), (0, ""), w.argv)
        for w in waits[1:]:
            self.assertIn('"object": "%s"' % path, "\n".join(w.lines), w.argv)

    def test_removed_and_back_before_the_first_look(self):
        """wait --removed has subscribed but not yet looked when the object goes and comes back: the
        InterfacesRemoved it was sent comes before it knows the object's path, and must still end
        the wait once the look finds the object there.  Made certain here with no daemon at the
        start (wait waits for one) and wait stopped meanwhile; with a daemon, the same happens when
        wait is held between its AddMatch and its first Resolve (an ASan build on a loaded machine
        failed test_a_short_life_is_not_missed that way)."""
        self.dm.stop()
        ct.add_loop(self.sys, 2)
        with ct.Background("--json", "wait", "--removed", "loop2", "--timeout=20") as w:
            w.wait_subscribed(WAIT_MATCHES)
            w.proc.send_signal(signal.SIGSTOP)
            try:
                self.dm = bt.Daemon(self.sys, uevent_socket=True)
                self.remove(2)
                self.add(2)
                self.dm.call(bt.MANAGER_PATH, bt.MANAGER, "Settle")
            finally:
                w.proc.send_signal(signal.SIGCONT)
            self.assertEqual(w.wait(), (0, ""))
            self.assertIn('"object": "%s"' % bt.path_of("block", "loop2"), "\n".join(w.lines))
            self.assertIn('"present": false', "\n".join(w.lines))

    def test_a_link_made_after_the_add(self):
        """udev makes /dev/disk/by-id/... (and any other link to a node) after the kernel's uevent,
        which blkmodeld has already applied and announced: wait for such a path must still see it
        once it is there, with no further signal."""
        d = tempfile.mkdtemp(prefix="blkmodel-wait-")
        self.addCleanup(shutil.rmtree, d, True)
        node, link = os.path.join(d, "loop12"), os.path.join(d, "by-id", "usb-X")
        with ct.Background("wait", link, "--timeout=20") as w:
            w.wait_subscribed(WAIT_MATCHES)
            self.add(12)
            self.dm.call(bt.MANAGER_PATH, bt.MANAGER, "Settle")
            time.sleep(0.5)     # the signal has come and gone; no link yet
            os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(7, 12))
            os.mkdir(os.path.dirname(link))
            os.symlink(node, link)
            self.assertEqual(w.wait(), (0, ""))

    def test_waits_for_the_daemon(self):
        # With no daemon, wait waits for one: --timeout then says why.
        self.dm.stop()
        p = ct.run("wait", "sda", "--timeout=0.3")
        ct.assert_one_line_failure(self, p, contains=(
            "Timed out", "blkmodeld is not running on this bus"))
        with ct.Background("wait", "sda", "--timeout=60") as w:
            w.wait_subscribed(WAIT_MATCHES)
            self.dm = bt.Daemon(self.sys, uevent_socket=True)
            self.assertEqual(w.wait(), (0, ""))


if __name__ == "__main__":
    bt.main()
