# SPDX-License-Identifier: LGPL-2.1-or-later
"""A caching client (GLib's DBusObjectManagerClient) holds what the kernel
says, through every change a storage engineer makes: hot-add, attach,
partitioning, an echo into each writable queue attribute, a scheduler
switch, a resize, a synthetic remove, a detach, a hot-remove.  After each,
every cached property of every proxy equals a fresh Get within the poll
interval, and no PropertiesChanged names a property that did not change.

Once on a fixture tree with the kernel played through --uevent-socket, once
on this machine's kernel with a loop device the test adds and removes
itself (root only).
"""

import os
import shutil
import subprocess
import tempfile
import unittest

from gi.repository import Gio, GLib

import blkmodeltest as bt
import cachingclient
import loopdev
import mksysfs

VIRT = "devices/virtual/block"
POLL_MS = 200


class Steps:
    def exact(self, what):
        why = self.clients.exact()
        if why:
            self.fail("after %s:\n%s" % (what, why))


class FixtureCaching(unittest.TestCase, Steps):
    def setUp(self):
        self.sys = os.path.join(bt.make_fixture(), "sys")
        self.b = mksysfs.Builder(mksysfs.Tree(self.sys))
        self.dm = bt.Daemon(self.sys, uevent_socket=True,
                            extra_args=["--poll-interval=%d" % POLL_MS])
        self.clients = cachingclient.CachingClients(self.dm)

    def tearDown(self):
        self.clients.close()
        self.dm.stop()

    def write(self, rel, value):
        bt.write_attr(self.sys, rel, value + "\n")

    def test_every_change(self):
        self.exact("start")
        name, devnum = "loop9", (7, 144)
        rel = self.b.disk(os.path.join(VIRT, name), name, devnum, 131072, 49,
                          "[none] mq-deadline", None, diskseq=49,
                          attrs={"partscan": 1})
        self.dm.send_uevent("add", "/" + rel, {"SUBSYSTEM": "block"})
        self.exact("a hot-added disk")

        part = self.b.partition(rel, name + "p1", (7, 145), 1, 2048, 2048, 51,
                                diskseq=49)
        self.dm.send_uevent("add", "/" + part, {"SUBSYSTEM": "block"})
        self.exact("a new partition")

        qdir = os.path.join(self.sys, rel, "queue")
        for f in sorted(os.listdir(qdir)):
            path = os.path.join(qdir, f)
            if f in ("scheduler",) or not os.path.isfile(path) or \
                    not os.stat(path).st_mode & 0o200:
                continue
            old = bt.read_attr(path)
            self.write(os.path.join(rel, "queue", f),
                       str(int(old) + 1) if old.isdigit() else old + "x")
            self.exact("echo into queue/" + f)

        self.write(os.path.join(rel, "queue", "scheduler"),
                   "none [mq-deadline]")
        os.mkdir(os.path.join(qdir, "iosched"))
        for n, v in mksysfs.IOSCHED["mq-deadline"].items():
            bt.write_attr(self.sys, os.path.join(qdir, "iosched", n),
                          "%s\n" % (v[0] if isinstance(v, tuple) else v))
        self.exact("a scheduler switch with echo")

        self.write(os.path.join(rel, "size"), "262144")
        self.dm.send_uevent("change", "/" + rel,
                            {"SUBSYSTEM": "block", "RESIZE": "1"})
        self.exact("a resize")

        # What the kernel changes with no uevent in read-only files:
        # blockdev --setro, resizepart.
        self.write(os.path.join(rel, "ro"), "1")
        self.exact("a read-only disk")
        self.write(os.path.join(part, "size"), "1024")
        self.exact("a partition resized")

        # A driver unbound from a hardware ancestor that stays (a PCIe root
        # port's pcieport): only a pci event, never a block one.
        port = os.path.join(self.sys, "devices/pci0000:00/0000:00:1d.0")
        os.unlink(os.path.join(port, "driver"))
        with open(os.path.join(port, "uevent")) as f:
            env = [l for l in f.read().splitlines()
                   if not l.startswith("DRIVER=")]
        bt.write_attr(self.sys, os.path.join(port, "uevent"), "\n".join(env) + "\n")
        self.exact("pcieport unbound")

        self.dm.send_uevent("remove", "/" + rel, {"SUBSYSTEM": "block",
                                                  "SYNTH_UUID": "0"})
        self.exact("a synthetic remove")
        self.assertIn(bt.path_of("block", name), self.dm.managed_objects())

        for r, d in ((part, (7, 145)), (rel, devnum)):
            for link in ("class/block/" + os.path.basename(r),
                         "dev/block/%d:%d" % d, "block/" + name):
                try:
                    os.unlink(os.path.join(self.sys, link))
                except FileNotFoundError:
                    pass
        bt.remove_tree(self.sys, part)
        self.dm.send_uevent("remove", "/" + part, {"SUBSYSTEM": "block"})
        bt.remove_tree(self.sys, rel)
        self.dm.send_uevent("remove", "/" + rel, {"SUBSYSTEM": "block"})
        self.exact("a hot-remove")
        self.assertNotIn(bt.path_of("block", name), self.dm.managed_objects())


def run(*args):
    return subprocess.run(args, check=True, capture_output=True,
                          text=True).stdout.strip()


class FirstReading(unittest.TestCase):
    def test_get_all_before_the_warm_up(self):
        """A GDBusProxy reads an interface with GetAll when it is made, then
        keeps what PropertiesChanged says.  Made right after the start, before
        the warm-up has read its object, it must be told of a change made
        after its reading, with or without an event: what it was sent is what
        a change is told from."""
        sys_ = os.path.join(bt.make_fixture(disks=300, partitions=4), "sys")
        disks = sorted(os.listdir(os.path.join(sys_, "block")))
        queue_of = {n: os.path.realpath(os.path.join(sys_, "block", n, "queue")) for n in disks}
        with bt.Daemon(sys_, uevent_socket=True) as dm:
            sent = {}
            for n in reversed(disks):  # the warm-up reads them last
                props = dm.get_all(bt.path_of("block", n, "queue"), bt.IFACE + "Queue")
                sent[n] = props["read_ahead_kb"]
                bt.write_attr(sys_, os.path.join(queue_of[n], "read_ahead_kb"),
                              "%d\n" % (int(sent[n]) + 4))
            rec = bt.SignalRecorder()
            self.assertTrue(bt.wait_until(lambda: "Recorded the values of" in dm.output()))
            dm.manager("Rescan")
            rec.pump(0.5)
            told = {x[2]: x[3][1]["read_ahead_kb"] for x in rec.of("PropertiesChanged")
                    if "read_ahead_kb" in x[3][1]}
            rec.close()
        # (The synthetic fixture's equal files are hard links: a write changes every twin.)
        now = {n: bt.read_attr(os.path.join(queue_of[n], "read_ahead_kb")) for n in disks}
        self.assertTrue(all(now[n] != sent[n] for n in disks))
        missed = [n for n in disks if told.get(bt.path_of("block", n, "queue")) != now[n]]
        self.assertEqual(missed, [], "%d of %d queues' changes were never told"
                         % (len(missed), len(disks)))


    def test_change_events_before_the_warm_up(self):
        """Change events right after the start, before the warm-up has read
        their disks: what no client has read is not told (nobody holds a
        value of it), and of a disk a client read exactly what changed."""
        # 2,000 disks: their warm-up takes about a second here, the events 0.1 s.  On a busy machine
        # the warm-up can be done first, which tests nothing: then again, with a new size.
        sys_ = os.path.join(bt.make_fixture(disks=2000, partitions=1), "sys")
        disks = sorted(os.listdir(os.path.join(sys_, "block")))
        last = disks[-100:]  # the warm-up reads them last
        read = last[-1]
        path = bt.path_of("block", read)
        for attempt in range(3):
            with bt.Daemon(sys_, uevent_socket=True) as dm:
                rec = bt.SignalRecorder()
                size = dm.get_all(path, bt.IFACE + "Disk")["size"]
                # A file of its own (the synthetic tree hard-links equal files).
                real = os.path.realpath(os.path.join(sys_, "block", read, "size"))
                bt.write_attr(sys_, real, "%d\n" % (int(size) + 8))
                for n in last:
                    dm.send_uevent("change", "/" + os.path.relpath(
                        os.path.realpath(os.path.join(sys_, "block", n)), sys_),
                        {"SUBSYSTEM": "block", "DEVTYPE": "disk"})
                rec.wait_for(lambda ss: len([x for x in ss if x[1] == "Uevent"]) >= len(last))
                early = "Recorded the values of" not in dm.output()
                told = [(x[2], sorted(x[3][1]) + x[3][2]) for x in rec.of("PropertiesChanged")]
                rec.close()
            self.assertEqual(told, [(path, ["Size", "size"])])
            if early:
                break
        self.assertTrue(early, "the warm-up was done before the events, %d times" % (attempt + 1))


class UeventAfterItsChanges(unittest.TestCase):
    """A client that reads its cache when a Uevent comes (a GDBus
    application's handler, typically) finds there what the event changed:
    the daemon announces the change first, whatever the event's kind and
    however many events come in one burst."""

    DISK = bt.IFACE + "Disk"
    PART = bt.IFACE + "Partition"

    def setUp(self):
        self.sys = os.path.join(bt.make_fixture(), "sys")
        self.b = mksysfs.Builder(mksysfs.Tree(self.sys))
        self.disks = {}
        for i in range(20):
            self.add_loop(10 + i)
        self.dm = bt.Daemon(self.sys, uevent_socket=True)
        address = os.environ["DBUS_SESSION_BUS_ADDRESS"]
        flags = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
                 Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
        self.conn = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
        self.seen = []
        self.sub = self.conn.signal_subscribe(
            bt.BUS_NAME, bt.IFACE + "Manager", "Uevent", bt.ROOT + "/Manager", None,
            Gio.DBusSignalFlags.NONE, self.on_uevent)
        self.omc = Gio.DBusObjectManagerClient.new_sync(
            self.conn, Gio.DBusObjectManagerClientFlags.NONE, bt.BUS_NAME,
            bt.ROOT, None, None, None)

    def tearDown(self):
        self.conn.signal_unsubscribe(self.sub)
        self.conn.close_sync(None)
        self.dm.stop()

    def add_loop(self, n, send=False):
        name = "loop%d" % n
        rel = self.b.disk(os.path.join(VIRT, name), name, (7, n * 16), 131072, n,
                          "[none] mq-deadline", None, diskseq=n, attrs={"partscan": 1})
        part = self.b.partition(rel, name + "p1", (7, n * 16 + 1), 1, 2048, 2048, n,
                                diskseq=n)
        self.disks[name] = (rel, part)
        if send:
            self.dm.send_uevent("add", "/" + rel, {"SUBSYSTEM": "block"})
            self.dm.send_uevent("add", "/" + part, {"SUBSYSTEM": "block"})

    def on_uevent(self, conn, sender, path, iface, member, params):
        seqnum, action, devpath, obj, env = params.unpack()
        proxy = self.omc.get_object(obj)
        size = None
        for i in (self.DISK, self.PART):
            p = proxy.get_interface(i) if proxy else None
            v = p.get_cached_property("Size") if p else None
            if v is not None:
                size = v.unpack()
        self.seen.append((action, os.path.basename(devpath), proxy is not None, size))

    def resize(self, rel, sectors):
        bt.write_attr(self.sys, os.path.join(rel, "size"), "%d\n" % sectors)
        self.dm.send_uevent("change", "/" + rel, {"SUBSYSTEM": "block", "RESIZE": "1"})

    def test_cache_holds_the_change_at_its_uevent(self):
        # Their first readings are in before the burst (else a change found by a
        # first reading is no difference to announce).
        self.assertTrue(bt.wait_until(lambda: "Recorded the values of" in self.dm.output()))
        want = []
        for i, (name, (rel, part)) in enumerate(sorted(self.disks.items())):
            self.resize(rel, 262144 + i)
            want.append(("change", name, True, (262144 + i) * 512))
        rel0 = self.disks["loop10"][0]
        self.resize(rel0, 1000)  # twice in the burst
        want.append(("change", "loop10", True, 1000 * 512))
        self.add_loop(40, send=True)
        want += [("add", "loop40", True, 131072 * 512), ("add", "loop40p1", True, 2048 * 512)]
        self.resize(self.disks["loop11"][1], 4096)
        want.append(("change", "loop11p1", True, 4096 * 512))
        rel, part = self.disks["loop12"]
        bt.remove_tree(self.sys, rel)
        for link in ("class/block/loop12", "class/block/loop12p1", "block/loop12",
                     "dev/block/7:192", "dev/block/7:193"):
            os.unlink(os.path.join(self.sys, link))
        self.dm.send_uevent("remove", "/" + part, {"SUBSYSTEM": "block"})
        self.dm.send_uevent("remove", "/" + rel, {"SUBSYSTEM": "block"})
        want += [("remove", "loop12p1", False, None), ("remove", "loop12", False, None)]
        self.resize(self.disks["loop13"][0], 8192)
        want.append(("change", "loop13", True, 8192 * 512))

        def all_seen():
            while GLib.MainContext.default().iteration(False):
                pass
            return len(self.seen) >= len(want)
        self.assertTrue(bt.wait_until(all_seen), self.seen)
        for i, (got, w) in enumerate(zip(self.seen, want)):
            # The size its event came with, or one a later event of the same
            # device brought (written before the daemon read it: one reading
            # for both, as a burst is read).  A device removed later in the
            # burst may be gone before its change is read: nothing can be
            # read then, nothing is told, and the cache holds what it held.
            sizes = [x[3] for x in want[i:] if x[1] == w[1]]
            if ("remove", w[1], False, None) in want[i:]:
                sizes.append(131072 * 512)
            self.assertTrue(got[:3] == w[:3] and got[3] in sizes,
                            "at the Uevent %r the cache held %r, not %r" % (got[:2], got[3], sizes))


@unittest.skipUnless(os.geteuid() == 0, "needs root for loop devices")
class KernelCaching(unittest.TestCase, Steps):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="blkmodel-caching-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.img = os.path.join(self.tmp, "disk.img")
        with open(self.img, "wb") as f:
            f.truncate(32 << 20)
        subprocess.run(["sfdisk", "--quiet", self.img], check=True,
                       input="label: dos\n,8M\n,8M\n", text=True,
                       capture_output=True)
        self.dm = bt.Daemon("/sys", no_uevents=False,
                            extra_args=["--poll-interval=%d" % POLL_MS])
        self.addCleanup(self.dm.stop)
        self.clients = cachingclient.CachingClients(self.dm)
        self.addCleanup(self.clients.close)

    def sysfile(self, rel):
        return os.path.join(self.loop.sysdir, rel)

    def test_every_change(self):
        self.exact("start")
        self.loop = loopdev.LoopDevice()
        self.addCleanup(self.loop.remove)
        self.exact("LOOP_CTL_ADD (a hot-added disk)")

        self.loop.attach(self.img)
        self.exact("losetup (attach)")
        run("partx", "-a", self.loop.dev)
        self.exact("partx -a (two partitions)")
        disk = bt.path_of("block", self.loop.name)
        self.assertEqual(len(self.dm.get(disk, bt.IFACE + "Disk",
                                         "Partitions")), 2)

        self.echo_into_writable_queue_attributes()

        with open(self.sysfile("queue/scheduler")) as f:
            before = f.read()
        for sched in ("mq-deadline", "none"):
            if sched in before:
                with open(self.sysfile("queue/scheduler"), "w") as f:
                    f.write(sched)
                self.exact("echo %s > queue/scheduler" % sched)

        with open(self.img, "r+b") as f:
            f.truncate(48 << 20)
        run("losetup", "-c", self.loop.dev)
        self.exact("losetup -c (a resize)")

        with open(self.sysfile("uevent"), "w") as f:
            f.write("remove")
        self.exact("echo remove > uevent (a synthetic remove)")
        self.assertIn(disk, self.dm.managed_objects())

        self.loop.detach()
        self.exact("partx -d, losetup -d (detach)")
        self.loop.remove()
        self.exact("LOOP_CTL_REMOVE (a hot-remove)")
        self.assertNotIn(disk, self.dm.managed_objects())

    def echo_into_writable_queue_attributes(self):
        qdir = self.sysfile("queue")
        for f in sorted(os.listdir(qdir)):
            path = os.path.join(qdir, f)
            if f == "scheduler" or not os.path.isfile(path) or \
                    not os.stat(path).st_mode & 0o200:
                continue
            try:
                with open(path) as fh:
                    old = fh.read().strip()
            except OSError:
                continue
            changed = False
            for value in self.candidates(f, old):
                try:
                    with open(path, "w") as fh:
                        fh.write(value)
                except OSError:
                    continue
                with open(path) as fh:
                    changed = fh.read().strip() != old
                if changed:
                    break
            if changed:
                self.exact("echo into queue/" + f)
            # The device goes at the end of the test; still, leave it as found.
            try:
                with open(path, "w") as fh:
                    fh.write(old)
            except OSError:
                pass

    @staticmethod
    def candidates(name, old):
        if name == "write_cache":
            return ["write through", "write back"]
        if old.lstrip("-").isdigit():
            v = int(old)
            return [str(x) for x in (v * 2, v // 2, v + 1, 1, 0, 2) if x != v]
        return []


if __name__ == "__main__":
    bt.main()
