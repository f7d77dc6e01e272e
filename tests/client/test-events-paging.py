# SPDX-License-Identifier: LGPL-2.1-or-later
"""GetEvents page by page.  A GetEvents reply may hold fewer events than
asked for (the daemon keeps each reply well under the bus's limit): the
client reads LastSeqnum first and asks again after the last seqnum it got
until it has reached it.  A scripted stand-in that answers at most 7
events per call shows that events and monitor --since page, with no gap
and no repeat; the real daemon with --event-log-size=100000 and 20,000
events shows the same at scale.  Both number their events from a first
seqnum of 16 digits (the real daemon's: the wall clock in µs at its
start), and GetEvents(0) means from that first.  A reading whose daemon
hands the name to another between two pages gets every page from the
daemon it began with."""
import json
import subprocess
import sys
import time
import unittest

import blkmodeltest as bt
import clienttest as ct

# The stand-in's first seqnum, as the daemon's: 16 digits.
FIRST = 1796680429088313


def seq(k):
    """The stand-in's k-th event's seqnum (1 is the first)."""
    return FIRST + k - 1


FAKE = r'''
import sys
import dbus, dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

DBusGMainLoop(set_as_default=True)
M = "org.blkmodel1.Manager"
FIRST = int(sys.argv[1])
LAST = FIRST + 49       # 50 events
PAGE = 7
# "handover": gives the name up (to a stand-in queued for it) while it
# answers its first GetEvents, and goes on answering by its unique name;
# "quit": the same, then leaves the bus once that answer is sent.
HANDOVER = sys.argv[2:] in (["handover"], ["quit"])
QUIT = sys.argv[2:] == ["quit"]


def ev(n):
    return (dbus.UInt64(n), "change", "/devices/virtual/block/loop0",
            dbus.ObjectPath("/org/blkmodel1/block/loop0"),
            dbus.Dictionary({"ACTION": "change", "N": str(n)},
                            signature="ss"))


class Manager(dbus.service.Object):
    @dbus.service.method("org.freedesktop.DBus.Properties",
                         in_signature="ss", out_signature="v")
    def Get(self, iface, prop):
        return dbus.UInt64({"LastSeqnum": LAST, "OldestSeqnum": FIRST}[prop])

    @dbus.service.method(M, in_signature="t", out_signature="a(tssoa{ss})")
    def GetEvents(self, after):
        print("GetEvents %d" % after, flush=True)
        if HANDOVER:
            b.release_name("org.blkmodel1")
        if QUIT:
            GLib.idle_add(loop.quit)
        if after == 0:                  # from the first
            after = FIRST - 1
        elif after < FIRST - 1:
            raise dbus.DBusException(
                "Seqnum %d is from before this daemon started (its first is "
                "%d); resynchronize with GetManagedObjects." % (after, FIRST),
                name="org.blkmodel1.Error.EventsExpired")
        return dbus.Array([ev(n) for n in range(after + 1,
                                                min(after + PAGE, LAST) + 1)],
                          signature="(tssoa{ss})")


b = dbus.SessionBus()
m = Manager(b, "/org/blkmodel1/Manager")
name = dbus.service.BusName("org.blkmodel1", b)
print("ready", flush=True)
loop = GLib.MainLoop()
loop.run()
'''


class PagingStandIn(unittest.TestCase):
    def setUp(self):
        self.fake = subprocess.Popen([sys.executable, "-c", FAKE, str(FIRST)],
                                     stdout=subprocess.PIPE, text=True)
        self.assertEqual(self.fake.stdout.readline(), "ready\n")

    def tearDown(self):
        self.fake.terminate()
        self.fake.wait()

    def calls(self):
        self.fake.terminate()
        out, _ = self.fake.communicate(timeout=30)
        return [int(ln.split()[1]) for ln in out.split("\n") if ln]

    def test_events_pages(self):
        j = ct.run_json("events")
        self.assertEqual([e["seqnum"] for e in j], list(range(seq(1), seq(50) + 1)))
        # 0 (from the first), then after the last of each page.
        self.assertEqual(self.calls(), [0] + [seq(k) for k in range(7, 50, 7)])

    def test_events_since_pages(self):
        p = ct.run("events", "--since=%d" % seq(30), check=0)
        self.assertEqual([int(ln.split()[0]) for ln in
                          p.stdout.split("\n")[:-1]], list(range(seq(31), seq(50) + 1)))
        self.assertEqual(self.calls(), [seq(30), seq(37), seq(44)])

    def test_monitor_since_pages(self):
        with ct.Background("--json", "monitor", "--since=0") as mon:
            lines = mon.wait_lines(lambda ls: len(ls) >= 50)
            time.sleep(0.2)
            self.assertEqual(mon.stop(), (0, ""))
        self.assertEqual([json.loads(ln)["seqnum"] for ln in mon.lines],
                         list(range(seq(1), seq(50) + 1)))
        self.assertEqual(len(lines), 50)
        self.assertEqual(self.calls(), [0] + [seq(k) for k in range(7, 50, 7)])


class PagingAcrossRestart(unittest.TestCase):
    def events_while_handing_over(self, mode):
        """events while the stand-in it asked first hands the name over to
        another (mode: "handover", "quit"): its CompletedProcess."""
        first_b = seq(1000)
        a = subprocess.Popen([sys.executable, "-c", FAKE, str(FIRST), mode],
                             stdout=subprocess.PIPE, text=True)
        b = None
        try:
            self.assertEqual(a.stdout.readline(), "ready\n")
            # Queued for the name: it has it once the first stand-in gives it up.
            b = subprocess.Popen([sys.executable, "-c", FAKE, str(first_b)],
                                 stdout=subprocess.PIPE, text=True)
            self.assertEqual(b.stdout.readline(), "ready\n")
            p = ct.run("--json", "events")
        finally:
            for fake in (a, b):
                if fake:
                    fake.terminate()
                    fake.communicate(timeout=30)
        return p

    def test_pages_from_one_daemon(self):
        p = self.events_while_handing_over("handover")
        # Every page from the first stand-in; nothing of the second, no warning.
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertEqual([e["seqnum"] for e in json.loads(p.stdout)],
                         list(range(seq(1), seq(50) + 1)))

    def test_daemon_gone_between_pages(self):
        # Not "not running" (the second one is), and nothing of the second one.
        p = self.events_while_handing_over("quit")
        self.assertEqual((p.returncode, p.stdout), (1, ""), p.stderr)
        self.assertEqual(p.stderr, "blkmodelctl: blkmodeld stopped while its events were read; "
                         "run events again (a new daemon has seqnums of its own)\n")


class PagingDaemon(unittest.TestCase):
    def test_many_events(self):
        total = 20000
        sys_ = bt.make_fixture() + "/sys"
        with bt.Daemon(sys_, uevent_socket=True,
                       extra_args=["--event-log-size=100000"]) as dm:
            for i in range(total):
                ct.send_change(dm, ct.LOOP0 if i % 2 else
                               "/devices/virtual/block/md0")
                if i % 2000 == 1999:
                    time.sleep(0.05)     # the socket's buffer is finite
            deadline = time.monotonic() + 120
            while dm.manager_prop("LastSeqnum") < dm.seq(total):
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.05)
            self.assertEqual(dm.manager_prop("OldestSeqnum"), dm.seq(1))

            j = ct.run_json("events")
            self.assertEqual([e["seqnum"] for e in j],
                             list(range(dm.seq(1), dm.seq(total) + 1)))
            p = ct.run("events", "--since=%d" % dm.seq(total - 100), check=0)
            self.assertEqual(p.stdout.count("\n"), 100)
            with ct.Background("--json", "monitor", "--since=0") as mon:
                mon.wait_lines(lambda ls: len(ls) >= total, timeout=120)
                ct.send_change(dm)
                mon.wait_lines(lambda ls: len(ls) >= total + 1)
                self.assertEqual(mon.stop(), (0, ""))
            self.assertEqual([json.loads(ln)["seqnum"] for ln in mon.lines],
                             list(range(dm.seq(1), dm.seq(total + 1) + 1)))


if __name__ == "__main__":
    bt.main()
