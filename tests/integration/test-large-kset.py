# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Members of a kset with thousands of them (1,000 disks x 4
partitions: 5,000), which the daemon appends over several loop turns: Get,
GetAll and the root's GetManagedObjects answer every member in name order,
several calls at once each get their whole answer, and members removed after
a call, before its reply reached them, are left out.  Its 1,000 child nodes are kept between
Introspect calls while the tree stays as it is."""
import os
import shutil
import signal
import unittest
import xml.etree.ElementTree as ET

import dbus

import blkmodeltest as bt

BLOCK = bt.path_of("block")


def name_of(path):
    return path.rsplit("/", 1)[1]


class LargeKset(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sys = os.path.join(bt.make_fixture(disks=1000, partitions=4), "sys")

    def setUp(self):
        self.dm = bt.Daemon(self.sys, uevent_socket=True)
        self.rec = bt.SignalRecorder()

    def tearDown(self):
        self.rec.close()
        self.dm.stop()

    def fixture_members(self):
        """Disks and partitions as the fixture's class/block has them, in name
        order: a partition's link points into its disk's directory."""
        members = []
        for name in os.listdir(os.path.join(self.sys, "class/block")):
            target = os.readlink(os.path.join(self.sys, "class/block", name))
            parent = os.path.basename(os.path.dirname(target))
            members.append(bt.path_of("block", name) if parent == "block"
                           else bt.path_of("block", parent, name))
        return sorted(members, key=name_of)

    def call_async(self, method, *args):
        """Calls on /block; its reply goes into the recorder's list, in arrival
        order among the signals, as ("reply", method, value)."""
        def on_reply(*value):
            # A GetManagedObjects reply as dbus-python gives it: unwrapping it takes seconds.
            value = list(value) if method == "GetManagedObjects" else bt.unwrap(list(value))
            self.rec.signals.append(("reply", method, None, value))

        def on_error(e):
            self.rec.signals.append(("error", method, None, str(e)))

        if method == "GetManagedObjects":
            path, iface = bt.ROOT, bt.OM
        else:
            path = BLOCK
            iface = bt.PROPS if method in ("Get", "GetAll") else "org.freedesktop.DBus.Peer"
        self.dm.object(path).get_dbus_method(method, iface)(
            *args, reply_handler=on_reply, error_handler=on_error)

    def members_in(self, method, reply):
        """The block kset's Members in a reply to method."""
        if method == "GetManagedObjects":
            return [str(p) for p in reply[0][BLOCK][bt.KSET]["Members"]]
        return reply[0]["Members"] if method == "GetAll" else reply[0]

    def wait_replies(self, n):
        return self.rec.wait_for(
            lambda s: len([x for x in s if x[0] in ("reply", "error")]) >= n, timeout=120)

    def test_get_and_get_all(self):
        want = self.fixture_members()
        self.assertGreater(len(want), 4096)
        self.assertEqual(self.dm.get_all(BLOCK, bt.KSET), {"Members": want})
        self.assertEqual(self.dm.get(BLOCK, bt.KSET, "Members"), want)
        raw = self.dm.object(BLOCK).Get(bt.KSET, "Members", dbus_interface=bt.PROPS)
        self.assertEqual(raw.signature, "o")

        # The root's GetManagedObjects: the kset in its place, whole, and the
        # objects after it as the ksets' own GetManagedObjects have them.
        # (Compared as dbus-python gives them: unwrapping takes seconds.)
        def gmo(path):
            return self.dm.object(path).GetManagedObjects(dbus_interface=bt.OM)
        objs = gmo(bt.ROOT)
        ifaces = {i.get("name")
                  for i in ET.fromstring(self.dm.introspect(BLOCK)).findall("interface")
                  if i.get("name").startswith(bt.IFACE)}
        self.assertEqual(bt.unwrap(objs[BLOCK]), {i: self.dm.get_all(BLOCK, i) for i in ifaces})
        self.assertEqual(bt.unwrap(objs[BLOCK][bt.KSET]), {"Members": want})
        devices = bt.path_of("devices")
        below = dict(gmo(BLOCK))
        below.update(gmo(devices))
        self.assertEqual({k: v for k, v in objs.items()
                          if k not in (BLOCK, devices, bt.MANAGER_PATH)}, below)
        objs.pop(bt.MANAGER_PATH)

        # Several at once, a Ping among them: each is answered, whole.  (One
        # GetManagedObjects: python takes a second or more to read each.)
        for i in range(4):
            self.call_async("GetAll", bt.KSET)
            self.call_async("Get", bt.KSET, "Members")
            if i == 1:
                self.call_async("GetManagedObjects")
            self.call_async("Ping")
        got = self.wait_replies(13)
        self.assertEqual([x for x in got if x[0] == "error"], [])
        for kind, method, _, value in got:
            if method == "GetManagedObjects":
                self.assertIn(bt.MANAGER_PATH, value[0])
                self.assertEqual({k: v for k, v in value[0].items() if k != bt.MANAGER_PATH}, objs)
            elif method != "Ping":
                self.assertEqual(self.members_in(method, value), want)

        # Unknown interfaces and properties are errors, as on any object.
        with self.assertRaises(dbus.DBusException) as e:
            self.dm.get(BLOCK, bt.KSET, "Nothing")
        self.assertIn("UnknownProperty", e.exception.get_dbus_name())

    def child_nodes(self, path):
        root = ET.fromstring(self.dm.introspect(path))
        return [n.get("name") for n in root.findall("node")]

    def test_introspect_children(self):
        """The block kset's 1,000 child nodes are kept between calls (the
        daemon sorts them once): still exactly its disks after one goes."""
        want = self.fixture_members()
        disks = [name_of(p) for p in want if name_of(p).isalpha()]
        self.assertEqual(self.child_nodes(BLOCK), disks)
        self.assertEqual(self.child_nodes(BLOCK), disks)
        gone = disks[500]
        devpath = self.dm.get(bt.path_of("block", gone), bt.KOBJ, "DevPath")
        self.remove_from_fixture(bt.path_of("block", gone), devpath,
                                 [p for p in want if p.startswith(bt.path_of("block", gone))])
        self.dm.send_uevent("remove", devpath, {"SUBSYSTEM": "block", "DEVTYPE": "disk"})
        self.rec.wait_for(lambda s: any(x[1] == "InterfacesRemoved" and
                                        x[3][0] == bt.path_of("block", gone) for x in s))
        self.assertEqual(self.child_nodes(BLOCK), [d for d in disks if d != gone])

    def remove_from_fixture(self, disk, devpath, members):
        """As the kernel takes a disk away: its directory, and its and its
        partitions' links in class/block, block and dev/block."""
        for p in members:
            n = name_of(p)
            with open(os.path.join(self.sys, devpath.lstrip("/"), "" if p == disk else n,
                                   "dev")) as f:
                devnum = f.read().strip()
            for link in ("class/block/" + n, "block/" + n, "dev/block/" + devnum):
                if os.path.lexists(os.path.join(self.sys, link)):
                    os.unlink(os.path.join(self.sys, link))
        shutil.rmtree(os.path.join(self.sys, devpath.lstrip("/")))

    def test_removed_meanwhile(self):
        """Calls and removals that reach the daemon in one loop turn: each reply
        holds the members there were when its call came, but those removed
        before the reply reached them, and the reply, then the signals that
        arrived after the call, give the model as it is (org.blkmodel1(5))."""
        want = self.fixture_members()
        # A datagram socket queues 10 datagrams (net.unix.max_dgram_qlen) while
        # the daemon is stopped: 8 disks, 40 members.
        disks = [p for p in want if name_of(p).isalpha()][::100][:8]
        gone = {d: [p for p in want if p == d or p.startswith(d + "/")] for d in disks}
        devpaths = {d: self.dm.get(d, bt.KOBJ, "DevPath") for d in disks}
        calls = 7
        os.kill(self.dm.proc.pid, signal.SIGSTOP)
        try:
            for d in disks:
                self.remove_from_fixture(d, devpaths[d], gone[d])
            # The calls first, so that they are ahead of the uevents when the
            # daemon wakes: the removals come after the calls.
            for i in range(3):
                self.call_async("GetAll", bt.KSET)
                if i == 1:
                    self.call_async("GetManagedObjects")
                self.call_async("Get", bt.KSET, "Members")
            self.rec.pump(0.5)
            for d in disks:
                self.dm.send_uevent("remove", devpaths[d], {"SUBSYSTEM": "block", "DEVTYPE": "disk"})
        finally:
            os.kill(self.dm.proc.pid, signal.SIGCONT)
        removed = {p for l in gone.values() for p in l}
        self.wait_replies(calls)
        seen = self.rec.wait_for(
            lambda s: removed <= {x[3][0] for x in s if x[1] == "InterfacesRemoved"})

        left_out = 0
        for kind, member, _, args in seen:
            self.assertNotEqual(kind, "error", args)
            if kind != "reply" or member == "Ping":
                continue
            members = self.members_in(member, args)
            self.assertEqual(members, sorted(members, key=name_of))
            self.assertLessEqual(set(want) - removed, set(members))
            self.assertLessEqual(set(members), set(want))
            left_out += len(set(want) - set(members))
            # The reply, then every signal: the members as they are now.
            for _, m, _, a in seen:
                if m == "InterfacesRemoved" and a[0] in members:
                    members.remove(a[0])
            self.assertEqual(set(members), set(want) - removed)
        # The case this test is for: members that went after the call, before
        # the reply reached them, are not in it.
        self.assertGreater(left_out, 0)
        self.assertEqual(self.dm.get_all(BLOCK, bt.KSET),
                         {"Members": [p for p in want if p not in removed]})

if __name__ == "__main__":
    bt.main()
