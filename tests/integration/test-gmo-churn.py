# SPDX-License-Identifier: LGPL-2.1-or-later
"""GetManagedObjects while change events come in: the reply reads its
objects' values ahead on the thread pool, and reads one again at its turn
only if that object's record changed after its batch was made (an event's
reading may be newer than the batch's).  A change of another object says
nothing of it: a reply that dropped the whole batch at any change, as it
once did, read nearly every object twice under steady churn (2,000 objects at
100 events/s: 2-3 times as long).

A thread resizes a few disks with change events, steadily, while the test
calls GetManagedObjects on the root.  Each reply's debug line says how many
of its objects were read ahead and how many read again: the second must be a
few.  No disk's Size goes back (every resize grows it): a reply that sent
a value read before an event's would have told the old one as a change.
Then a caching client that watched it all holds exactly what a fresh GetAll
says."""
import os
import re
import shutil
import threading
import time
import unittest

from gi.repository import Gio, GLib

import blkmodeltest as bt
import cachingclient

DISKS = 150
PARTITIONS = 2
CHURNED = 30          # the first disks, resized in turn
EVENTS_PER_S = 200
CALLS = 4

LINE = re.compile(r"GetManagedObjects on /org/blkmodel1: at most \d+ bytes; "
                  r"(\d+) objects, (\d+) read ahead, (\d+) read again")


class Churn(threading.Thread):
    def __init__(self, dm, sysroot):
        super().__init__(daemon=True)
        self.dm, self.sysroot = dm, sysroot
        self.stop = threading.Event()
        self.sent = 0
        self.disks = []
        for i in range(CHURNED):
            name = bt.mksysfs.sd_name(i)
            rel = os.path.relpath(os.path.realpath(
                os.path.join(sysroot, "block", name)), sysroot)
            self.disks.append(rel)

    def run(self):
        start = time.monotonic()
        while not self.stop.is_set():
            rel = self.disks[self.sent % len(self.disks)]
            # A new size each time: every event changes the disk's record.
            bt.write_attr(self.sysroot, os.path.join(rel, "size"),
                          "%d\n" % (1 << 21 | self.sent))
            self.dm.send_uevent("change", "/" + rel, {"SUBSYSTEM": "block",
                                                      "DEVTYPE": "disk"})
            self.sent += 1
            ahead = self.sent / EVENTS_PER_S - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)


class GmoChurn(unittest.TestCase):
    def setUp(self):
        self.sys = os.path.join(bt.make_fixture(disks=DISKS,
                                                partitions=PARTITIONS), "sys")
        self.dm = bt.Daemon(self.sys, uevent_socket=True,
                            extra_args=["--poll-interval=0"])
        self.clients = cachingclient.CachingClients(self.dm)
        address = os.environ["DBUS_SESSION_BUS_ADDRESS"]
        flags = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
                 Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
        self.conn = Gio.DBusConnection.new_for_address_sync(
            address, flags, None, None)
        self.sizes = {}  # disk path -> every Size PropertiesChanged told
        self.sub = self.conn.signal_subscribe(
            bt.BUS_NAME, "org.freedesktop.DBus.Properties",
            "PropertiesChanged", None, None, Gio.DBusSignalFlags.NONE,
            self.on_changed)

    def on_changed(self, conn, sender, path, iface, member, params):
        iface, changed, _ = params.unpack()
        if iface.endswith(".Disk") and "Size" in changed:
            self.sizes.setdefault(path, []).append(changed["Size"])

    def tearDown(self):
        self.conn.signal_unsubscribe(self.sub)
        self.conn.close_sync(None)
        self.clients.close()
        self.dm.stop()

    def test_a_change_elsewhere_keeps_the_values_read_ahead(self):
        churn = Churn(self.dm, self.sys)
        churn.start()
        try:
            time.sleep(0.2)
            before = churn.sent
            for _ in range(CALLS):
                self.conn.call_sync(bt.BUS_NAME, bt.ROOT, bt.OM,
                                    "GetManagedObjects", None, None,
                                    Gio.DBusCallFlags.NONE, 600000, None)
            during = churn.sent - before
        finally:
            churn.stop.set()
            churn.join()
        bt.ctl("settle", check=0)
        ctx = GLib.MainContext.default()
        while ctx.pending():
            ctx.iteration(False)

        replies = [tuple(map(int, m.groups()))
                   for m in LINE.finditer(self.dm.output())]
        # The caching client's own first reply, then ours.
        self.assertGreaterEqual(len(replies), CALLS + 1, self.dm.output()[-3000:])
        ours = replies[-CALLS:]
        ahead = sum(r[1] for r in ours)
        again = sum(r[2] for r in ours)
        objects = sum(r[0] for r in ours)
        # Events came all through the replies, some every few milliseconds.
        self.assertGreater(during, CALLS * 5,
                           "too few events during the replies to test")
        self.assertGreater(ahead, objects // 2, ours)
        # Only the resized disks' own objects can be older than their record:
        # at most one read again per event, never most of the reply.
        self.assertLessEqual(again, min(during, objects // 10),
                             "%s, %d events during the replies" % (ours, during))

        self.assertTrue(self.sizes, "no Size told")
        back = ["%s: %s" % (path, sizes) for path, sizes in self.sizes.items()
                if sizes != sorted(sizes)]
        self.assertEqual(back, [], "a Size told going back")

        why = self.clients.exact()
        if why:
            self.fail("after the churn:\n%s" % why)


# Disks removed while the replies are built: after the churned ones, before the last (their devpaths).
REMOVED = range(CHURNED + 10, CHURNED + 40)


class ReplyHoldsWhatWasTold(unittest.TestCase):
    """A reply built in slices holds every change a signal told before it
    came, as a service's that answers at once does: a client that applies
    signals as they come and the reply over them (GDBus's
    DBusObjectManagerClient when the name changes owner) kept a disk removed
    meanwhile, and Sizes older than told.  Every message the connection gets
    is seen in the order it came (a filter, on GDBus's own thread); disks
    are resized (each Size larger than the last) and others removed all
    through four replies."""

    def setUp(self):
        self.sys = os.path.join(bt.make_fixture(disks=DISKS, partitions=PARTITIONS), "sys")
        self.dm = bt.Daemon(self.sys, uevent_socket=True, extra_args=["--poll-interval=0"])
        self.conn = bt.connect()
        self.seen = []  # (member, path, body) of signals, ("reply", serial, body) of replies, in order
        self.conn.add_filter(self.on_message)
        self.subs = [self.conn.signal_subscribe(bt.BUS_NAME, None, None, None, None,
                                                Gio.DBusSignalFlags.NONE, lambda *a: None)]

    def tearDown(self):
        for s in self.subs:
            self.conn.signal_unsubscribe(s)
        self.conn.close_sync(None)
        self.dm.stop()

    def on_message(self, conn, msg, incoming):
        if incoming and msg.get_message_type() == Gio.DBusMessageType.SIGNAL:
            self.seen.append((msg.get_member(), msg.get_path(), msg.get_body()))
        elif incoming and msg.get_message_type() == Gio.DBusMessageType.METHOD_RETURN:
            self.seen.append(("reply", msg.get_reply_serial(), msg.get_body()))
        return msg

    def remove(self, i):
        name = bt.mksysfs.sd_name(i)
        disk = os.path.realpath(os.path.join(self.sys, "block", name))
        rel = "/" + os.path.relpath(disk, self.sys)
        parts = sorted(p for p in os.listdir(disk) if p.startswith(name))
        for link in ["class/block/" + n for n in parts + [name]] + ["block/" + name]:
            os.unlink(os.path.join(self.sys, link))
        shutil.rmtree(disk)
        for part in parts:
            self.dm.send_uevent("remove", rel + "/" + part, {"SUBSYSTEM": "block", "DEVTYPE": "partition"})
        self.dm.send_uevent("remove", rel, {"SUBSYSTEM": "block", "DEVTYPE": "disk"})
        return bt.path_of("block", name)

    def test_signals_before_a_reply_are_in_it(self):
        churn = Churn(self.dm, self.sys)
        removed, settles = [], []
        churn.start()
        try:
            time.sleep(0.1)
            serials = []
            for _ in range(CALLS):
                msg = Gio.DBusMessage.new_method_call(bt.BUS_NAME, bt.ROOT, bt.OM, "GetManagedObjects")
                _, serial = self.conn.send_message(msg, Gio.DBusSendMessageFlags.NONE)
                serials.append(serial)
                # Its answer promises every Uevent up to its seqnum was sent: the held ones too.
                msg = Gio.DBusMessage.new_method_call(bt.BUS_NAME, bt.MANAGER_PATH, bt.IFACE + "Manager",
                                                      "Settle")
                settles.append(self.conn.send_message(msg, Gio.DBusSendMessageFlags.NONE)[1])
                # Removals while it is built: one every few ms until its reply comes.
                deadline = time.monotonic() + 60
                while not any(m[0] == "reply" and m[1] == serial for m in list(self.seen)):
                    self.assertLess(time.monotonic(), deadline)
                    if len(removed) < len(REMOVED):
                        removed.append(self.remove(REMOVED[len(removed)]))
                    time.sleep(0.003)
        finally:
            churn.stop.set()
            churn.join()
        bt.ctl("settle", check=0)

        sizes, gone, checked, uevents, settled = {}, set(), 0, set(), 0
        for m in list(self.seen):
            if m[0] == "Uevent":
                uevents.add(m[2].unpack()[0])
            elif m[0] == "reply" and m[1] in settles:
                last = m[2].unpack()[0]
                self.assertEqual(set(range(self.dm.seq(1), last + 1)) - uevents, set(),
                                 "Settle answered %d before these Uevents" % last)
                settled += 1
            elif m[0] == "PropertiesChanged":
                iface, changed, _ = m[2].unpack()
                if iface == bt.IFACE + "Disk" and "Size" in changed:
                    sizes[m[1]] = max(sizes.get(m[1], 0), changed["Size"])
            elif m[0] == "InterfacesRemoved":
                gone.add(m[2].unpack()[0])
            elif m[0] == "reply" and m[1] in serials:
                objects = m[2].unpack()[0]
                for path, size in sizes.items():
                    self.assertGreaterEqual(objects[path][bt.IFACE + "Disk"]["Size"], size,
                                            "%s: a Size told before the reply is newer than its" % path)
                for path in gone:
                    self.assertNotIn(path, objects, "removed, told before the reply, and in it")
                checked += 1
        self.assertEqual((checked, settled), (CALLS, CALLS))
        # Changes and removals were told, while the replies were built and around them.
        self.assertTrue(sizes)
        self.assertEqual(sorted(gone & set(removed)), sorted(removed))
        self.assertGreater(len(removed), CALLS)


class HeldSignals(unittest.TestCase):
    """While a reply is built its signals wait (daemon/bus/hold.c): meanwhile
    LastSeqnum and GetEvents stop at the last Uevent sent (a client that
    read them, then got the held Uevents, saw them twice), and a SIGTERM
    sends them before the name goes (a subscriber matching the name, as
    blkmodelctl monitor does, got none of them)."""

    @classmethod
    def setUpClass(cls):
        cls.sys = os.path.join(bt.make_fixture(disks=1000, partitions=2), "sys")

    def test_told_seqnum_and_the_exit(self):
        sys_ = self.sys
        dm = bt.Daemon(sys_, uevent_socket=True, extra_args=["--poll-interval=0"])
        try:
            sub_conn, conn = bt.connect(), bt.connect()
            got = []
            sub = sub_conn.signal_subscribe(bt.BUS_NAME, bt.IFACE + "Manager", "Uevent", None, None,
                                            Gio.DBusSignalFlags.NONE,
                                            lambda *a: got.append(a[5].unpack()[0]))
            answer = []
            conn.call(bt.BUS_NAME, bt.ROOT, bt.OM, "GetManagedObjects", None, None,
                      Gio.DBusCallFlags.NONE, 600000, None,
                      lambda c, res: answer.append(self.finish(c, res)))
            self.assertTrue(bt.wait_until(
                lambda: "GetManagedObjects on %s: about" % bt.ROOT in dm.output(), 0.001, 60))
            disk = os.path.relpath(os.path.realpath(os.path.join(sys_, "block", "sda")), sys_)
            for _ in range(20):
                dm.send_uevent("change", "/" + disk, {"SUBSYSTEM": "block", "DEVTYPE": "disk"})
            time.sleep(0.2)  # read and applied between the reply's slices
            last = conn.call_sync(bt.BUS_NAME, bt.MANAGER_PATH, "org.freedesktop.DBus.Properties", "Get",
                                  GLib.Variant("(ss)", (bt.IFACE + "Manager", "LastSeqnum")), None,
                                  Gio.DBusCallFlags.NONE, 60000, None).unpack()[0]
            events = conn.call_sync(bt.BUS_NAME, bt.MANAGER_PATH, bt.IFACE + "Manager", "GetEvents",
                                    GLib.Variant("(t)", (0,)), None, Gio.DBusCallFlags.NONE, 60000,
                                    None).unpack()[0]
            ctx = GLib.MainContext.default()
            while ctx.pending():
                ctx.iteration(False)
            told = max(got, default=dm.seq(0))
            self.assertLessEqual(last, told, "LastSeqnum ahead of the Uevents sent")
            self.assertLessEqual(max((e[0] for e in events), default=0), told,
                                 "GetEvents ahead of the Uevents sent")
            out = dm.stop()
            deadline = time.monotonic() + 10
            while not answer and time.monotonic() < deadline:
                ctx.iteration(False) or time.sleep(0.001)
            # The reply was still being built at the SIGTERM: the signals were held then.
            self.assertIn("exiting", str(answer), "the reply was done before the SIGTERM: nothing held")
            deadline = time.monotonic() + 10
            while len(got) < 20 and time.monotonic() < deadline:
                ctx.iteration(False) or time.sleep(0.001)
            self.assertEqual(got, list(range(dm.seq(1), dm.seq(20) + 1)), out[-3000:])
            sub_conn.signal_unsubscribe(sub)
        finally:
            dm.stop()

    def test_a_part_asked_for_before_it_went_and_came_back(self):
        """A disk's GetManagedObjects waiting behind the root's is built for
        the disk there is when its turn comes: one removed meanwhile is
        UnknownObject, as a call made then gets, and one back under its name
        (its InterfacesAdded sent before the reply) is in it, not an empty
        reply."""
        name = bt.mksysfs.sd_name(500)
        disk = os.path.realpath(os.path.join(self.sys, "block", name))
        rel = "/" + os.path.relpath(disk, self.sys)
        parts = sorted(p for p in os.listdir(disk) if p.startswith(name))
        links = {os.path.join(self.sys, l): os.readlink(os.path.join(self.sys, l))
                 for l in ["class/block/" + n for n in parts + [name]] + ["block/" + name]}

        def away():
            for link in links:
                os.unlink(link)
            os.rename(disk, disk + ".away")
            for part in parts:
                dm.send_uevent("remove", rel + "/" + part, {"SUBSYSTEM": "block", "DEVTYPE": "partition"})
            dm.send_uevent("remove", rel, {"SUBSYSTEM": "block", "DEVTYPE": "disk"})

        def back():
            os.rename(disk + ".away", disk)
            for link, target in links.items():
                os.symlink(target, link)
            dm.send_uevent("add", rel, {"SUBSYSTEM": "block", "DEVTYPE": "disk"})
            for part in parts:
                dm.send_uevent("add", rel + "/" + part, {"SUBSYSTEM": "block", "DEVTYPE": "partition"})

        conn = bt.connect()
        ctx = GLib.MainContext.default()
        with bt.Daemon(self.sys, uevent_socket=True, extra_args=["--poll-interval=0"]) as dm:
            for come_back in (False, True):
                answers = {}
                for what, path in (("root", bt.ROOT), ("disk", bt.path_of("block", name))):
                    conn.call(bt.BUS_NAME, path, bt.OM, "GetManagedObjects", None, None,
                              Gio.DBusCallFlags.NONE, 600000, None,
                              lambda c, res, what=what: answers.setdefault(what, self.finish(c, res)))
                self.assertTrue(bt.wait_until(
                    lambda: dm.output().count("GetManagedObjects on %s: about" % bt.ROOT) > come_back,
                    0.001, 60))
                try:
                    away()
                finally:
                    if come_back:
                        back()
                deadline = time.monotonic() + 60
                while len(answers) < 2 and time.monotonic() < deadline:
                    ctx.iteration(False) or time.sleep(0.001)
                self.assertIn("root", answers)
                if come_back:
                    dm.manager("Settle")
                    fresh = conn.call_sync(bt.BUS_NAME, bt.path_of("block", name), bt.OM,
                                           "GetManagedObjects", None, None, Gio.DBusCallFlags.NONE,
                                           60000, None).unpack()[0]
                    self.assertGreater(len(fresh), len(parts))
                    self.assertEqual(sorted(answers["disk"].unpack()[0]), sorted(fresh))
                else:
                    self.assertIn("UnknownObject", str(answers["disk"]))
                    back()
                    dm.manager("Settle")
        conn.close_sync(None)

    @staticmethod
    def finish(conn, res):
        try:
            return conn.call_finish(res)
        except GLib.Error as e:
            return e.message


# Fewer than for the replies: a poll round takes its time (its CPU budget), and 3 of them are waited for.
POLL_DISKS = 60
POLL_LINE = re.compile(r"A poll round took \d+ ms; (\d+) objects read ahead, (\d+) read again")


class PollChurn(unittest.TestCase):
    """The poll reads ahead as GetManagedObjects does, and by the same rule:
    an object is read again only if its own record changed after its batch
    began."""

    def test_a_change_elsewhere_keeps_the_values_read_ahead(self):
        sys_ = os.path.join(bt.make_fixture(disks=POLL_DISKS, partitions=PARTITIONS), "sys")
        with bt.Daemon(sys_, uevent_socket=True, extra_args=["--poll-interval=50"]) as dm:
            self.assertTrue(bt.wait_until(lambda: "Recorded the values of" in dm.output()))
            rounds_before = len(POLL_LINE.findall(dm.output()))
            churn = Churn(dm, sys_)
            churn.start()
            try:
                deadline = time.monotonic() + 60
                while len(POLL_LINE.findall(dm.output())) < rounds_before + 3:
                    self.assertLess(time.monotonic(), deadline, dm.output()[-3000:])
                    time.sleep(0.05)
            finally:
                churn.stop.set()
                churn.join()
            out = dm.output()
        # The first round may have begun before the churn.
        rounds = [tuple(map(int, r)) for r in POLL_LINE.findall(out)][rounds_before + 1:]
        ahead = sum(r[0] for r in rounds)
        again = sum(r[1] for r in rounds)
        self.assertTrue(rounds, out[-3000:])
        self.assertGreater(churn.sent, 10 * len(rounds), "too few events during the rounds to test")
        # Only the resized disks' own objects: a few of each round, never most of it.
        self.assertLessEqual(again, (ahead + again) // 10, rounds)


if __name__ == "__main__":
    bt.main()
