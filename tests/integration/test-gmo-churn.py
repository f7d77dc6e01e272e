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
