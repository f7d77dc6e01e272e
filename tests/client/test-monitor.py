# SPDX-License-Identifier: LGPL-2.1-or-later
"""monitor and events against uevents injected through --uevent-socket:
--since replays GetEvents and continues live with no gap and no repeat
while events keep coming; --action filters; --properties prints the
environment; an expired --since, a --since the daemon never reached and
one kept from an earlier daemon are reported and the stream goes on; a
daemon restart is reported and the stream goes on with the new daemon's
events, numbered above the old one's; SIGINT ends it with 0."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import types
import unittest

import blkmodeltest as bt
import clienttest as ct

MD0 = "/devices/virtual/block/md0"


def fields(line):
    """A text event line: (seqnum, time, action, devpath).  The columns
    have fixed widths: seqnum right-aligned in 16, the time (HH:MM:SS.µs,
    or '-' where GetEvents gave none) in 15, the action in 7."""
    assert line[16] == " " and line[32] == " " and line[40] == " ", line
    return (int(line[:16]), line[17:32].rstrip(), line[33:40].rstrip(),
            line[41:])


def private_bus(tmp, listen, servicedir=None):
    """A bus of the test's own (listening on listen, starting services
    from servicedir): its address and pid."""
    with open(os.path.join(tmp, "bus.conf"), "w") as f:
        f.write("<busconfig><type>session</type><listen>%s</listen><auth>EXTERNAL</auth>%s"
                "<policy context=\"default\"><allow send_destination=\"*\" eavesdrop=\"true\"/>"
                "<allow eavesdrop=\"true\"/><allow own=\"*\"/></policy></busconfig>"
                % (listen, "<servicedir>%s</servicedir>" % servicedir if servicedir else ""))
    out = subprocess.run(["dbus-daemon", "--config-file=" + tmp + "/bus.conf", "--fork",
                          "--print-address=1", "--print-pid=1"], capture_output=True,
                         text=True, check=True, timeout=60).stdout.split("\n")
    return out[0], int(out[1])


def seqnums(lines):
    return [j["seqnum"] for j in map(json.loads, lines)
            if j["type"] == "event"]


class Monitor(unittest.TestCase):
    def setUp(self):
        self.sys = bt.make_fixture() + "/sys"
        self.dm = bt.Daemon(self.sys, uevent_socket=True)

    def tearDown(self):
        self.dm.stop()

    def last(self):
        return self.dm.manager_prop("LastSeqnum")

    def wait_events(self, n, timeout=30):
        """Until the daemon has handled n events in all."""
        self.wait_last(self.dm.seq(n), timeout)

    def wait_last(self, n, timeout=30):
        """Until the daemon's LastSeqnum is n or more."""
        deadline = time.monotonic() + timeout
        while self.last() < n:
            if time.monotonic() > deadline:
                raise AssertionError("daemon stuck at seqnum %d of %d"
                                     % (self.last(), n))
            time.sleep(0.01)

    def monitor_replay_then_live(self, since, replayed):
        """monitor --json with since: its lines once it has printed a notice
        and `replayed` events, and then one more sent live."""
        with ct.Background("--json", "monitor", since) as mon:
            mon.wait_lines(lambda ls: len(ls) >= 1 + replayed)
            ct.send_change(self.dm)
            lines = mon.wait_lines(lambda ls: len(ls) >= 2 + replayed)
            self.assertEqual(mon.stop(), (0, ""))
        return lines

    def test_since_replays_without_gap_or_repeat(self):
        # Events keep coming while monitor starts: some are replayed from
        # GetEvents, some arrive live, some both ways; each is printed
        # exactly once, in order.
        total = 400
        started = threading.Event()

        def sender():
            for i in range(total):
                ct.send_change(self.dm, ct.LOOP0 if i % 2 else MD0)
                if i == total // 4:
                    started.set()
                time.sleep(0.001)

        th = threading.Thread(target=sender)
        th.start()
        started.wait(30)
        with ct.Background("--json", "monitor", "--since=0") as mon:
            th.join()
            self.wait_events(total)
            lines = mon.wait_lines(lambda ls: len(ls) >= total)
            time.sleep(0.2)               # nothing more may come
            code, err = mon.stop()
        self.assertEqual((code, err), (0, ""))
        self.assertEqual(seqnums(mon.lines),
                         list(range(self.dm.seq(1), self.dm.seq(total) + 1)))
        self.assertEqual(len(lines), total)       # no notices either

        # From the middle: only what came after.
        with ct.Background("monitor", "--since=%d" % self.dm.seq(total - 3)) as mon:
            lines = mon.wait_lines(lambda ls: len(ls) >= 3)
            ct.send_change(self.dm)
            lines = mon.wait_lines(lambda ls: len(ls) >= 4)
            self.assertEqual(mon.stop(), (0, ""))
        self.assertEqual([fields(ln)[0] for ln in lines],
                         list(range(self.dm.seq(total - 2), self.dm.seq(total + 2))))
        self.assertEqual(fields(lines[-1])[2:], ("change", ct.LOOP0))
        # Replayed ones carry no time; the live one its arrival's.
        self.assertEqual(fields(lines[0])[1], "-")
        self.assertRegex(fields(lines[-1])[1], r"^\d\d:\d\d:\d\d\.\d{6}$")

    def test_live_without_since(self):
        with ct.Background("--json", "monitor") as mon:
            # Not knowing when the client has subscribed, poke until it
            # prints; from then on nothing may be missing.
            deadline = time.monotonic() + 30
            while not mon.lines and time.monotonic() < deadline:
                ct.send_change(self.dm)
                time.sleep(0.05)
                mon._read()
            first = seqnums(mon.wait_lines(lambda ls: len(ls) >= 1))[0]
            time.sleep(0.1)
            n = self.last()
            for _ in range(20):
                ct.send_change(self.dm)
            self.wait_last(n + 20)
            lines = mon.wait_lines(lambda ls: seqnums(ls)[-1:] == [n + 20])
            self.assertEqual(mon.stop(), (0, ""))
        self.assertEqual(seqnums(lines), list(range(first, n + 21)))

    def test_action_filter_and_properties(self):
        base = self.last()
        with ct.Background("monitor", "--since=%d" % base,
                           "--action=add,remove", "-p") as mon:
            ct.add_loop(self.sys, 1)
            ct.send_loop_uevent(self.dm, "add", 1)
            ct.send_change(self.dm)
            ct.remove_loop(self.sys, 1)
            ct.send_loop_uevent(self.dm, "remove", 1)
            self.wait_last(base + 3)
            lines = mon.wait_lines(lambda ls: any(
                ln[:16].strip() == str(base + 3) for ln in ls) and
                ls[-1] == "")
            self.assertEqual(mon.stop(), (0, ""))
        heads = [ln for ln in lines if ln[:16].strip().isdigit()]
        loop1 = "/devices/virtual/block/loop1"
        self.assertEqual([(f[0], f[2], f[3]) for f in map(fields, heads)],
                         [(base + 1, "add", loop1),
                          (base + 3, "remove", loop1)])
        # Each event is followed by its environment and a blank line.
        block = lines[lines.index(heads[0]) + 1:lines.index(heads[1])]
        self.assertIn("ACTION=add", block)
        self.assertIn("DEVNAME=loop1", block)
        self.assertEqual(block[-1], "")

    def test_properties_escaped(self):
        """-p prints each KEY=VALUE on a line of its own, whatever a value
        holds: an escape sequence or a newline in a datagram's value is
        shown as \\xNN (as show does), not sent to the terminal."""
        base = self.last()
        env = ct.uevent_env(ct.LOOP0, "change")
        env["WEIRD"] = "a\x1b[31mred\nFAKE=1"
        self.dm.send_uevent("change", ct.LOOP0, env)
        self.wait_last(base + 1)
        p = ct.run("events", "--since=%d" % base, "-p", check=0)
        lines = p.stdout.split("\n")
        self.assertIn("WEIRD=a\\x1b[31mred\\x0aFAKE=1", lines)
        self.assertNotIn("FAKE=1", lines)
        self.assertNotIn("\x1b", p.stdout)

    def test_events(self):
        ct.send_change(self.dm)
        ct.send_change(self.dm, MD0)
        self.wait_events(2)
        p = ct.run("events", check=0)
        self.assertEqual(p.stdout, "%16d %-15s %-7s %s\n%16d %-15s %-7s %s\n"
                         % (self.dm.seq(1), "-", "change", ct.LOOP0,
                            self.dm.seq(2), "-", "change", MD0))
        p = ct.run("events", "--since=%d" % self.dm.seq(1), "--action=change", check=0)
        self.assertEqual([fields(ln) for ln in p.stdout.split("\n")[:-1]],
                         [(self.dm.seq(2), "-", "change", MD0)])
        p = ct.run("events", "--action=add", check=0)
        self.assertEqual(p.stdout, "")

    def test_expired(self):
        self.dm.stop()
        self.dm = bt.Daemon(self.sys, uevent_socket=True,
                            extra_args=["--event-log-size=4"])
        for _ in range(10):
            ct.send_change(self.dm)
        self.wait_events(10)
        s = self.dm.seq
        self.assertEqual(self.dm.manager_prop("OldestSeqnum"), s(7))

        # A wrapped log is a warning, not an error: the retained events
        # follow, exit 0.
        since2 = "--since=%d" % s(2)
        for args in (("events", since2), ("events",),
                     ("--json", "events", since2)):
            p = ct.run(*args)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
            self.assertIn("warning: the first events up to %d have expired" % s(6)
                          if args == ("events",) else
                          "warning: the events after %d up to %d have expired" % (s(2), s(6)),
                          p.stderr)
            self.assertIn("showing from %d" % s(7), p.stderr)
        self.assertEqual([fields(ln)[0] for ln in ct.run(
            "events", since2).stdout.split("\n")[:-1]], [s(7), s(8), s(9), s(10)])
        self.assertEqual([e["seqnum"] for e in ct.run_json(
            "events", since2)], [s(7), s(8), s(9), s(10)])
        p = ct.run("events", "--since=%d" % s(6), check=0)
        self.assertEqual((len(p.stdout.split("\n")), p.stderr), (5, ""))

        # monitor says so (a JSON notice on stdout; with text on stderr)
        # and goes on from the oldest event retained.
        lines = self.monitor_replay_then_live(since2, 4)
        notice = json.loads(lines[0])
        self.assertEqual((notice["type"], notice["after"], notice["oldest"]),
                         ("expired", s(2), s(7)))
        # The man page's order: type and message first, then the notice's own.
        self.assertEqual(list(notice), ["type", "message", "after", "oldest"])
        self.assertEqual(seqnums(lines), [s(7), s(8), s(9), s(10), s(11)])

        with ct.Background("monitor", "--since=0") as mon:
            lines = mon.wait_lines(lambda ls: len(ls) >= 4)  # 8..11 kept
            code, err = mon.stop()
        self.assertEqual(code, 0)
        self.assertEqual([fields(ln)[0] for ln in lines], [s(8), s(9), s(10), s(11)])
        self.assertIn("the first events have expired (oldest retained: %d)" % s(8),
                      err)
        self.assertEqual(len(err.strip().split("\n")), 1)

    def test_since_ahead_of_daemon(self):
        # Not one of the daemon's seqnums (mistyped, or from a daemon whose
        # clock ran ahead): said, and the stream goes on.
        ahead = self.dm.seq(1000)
        with ct.Background("--json", "monitor", "--since=%d" % ahead) as mon:
            lines = mon.wait_lines(lambda ls: len(ls) >= 1)
            self.assertEqual(list(json.loads(lines[0]))[:3], ["type", "message", "since"])
            self.assertEqual(json.loads(lines[0])["type"], "future")
            ct.send_change(self.dm)
            lines = mon.wait_lines(lambda ls: len(ls) >= 2)
            self.assertEqual(mon.stop(), (0, ""))
        self.assertEqual(seqnums(lines), [self.dm.seq(1)])

        # events says so too, on stderr; its output stays what it was.
        for args, out in ((("events", "--since=%d" % ahead), ""),
                          (("--json", "events", "--since=%d" % ahead), "[\n]\n")):
            p = ct.run(*args)
            self.assertEqual((p.returncode, p.stdout), (0, out), p.stderr)
            self.assertEqual(p.stderr, "blkmodelctl: warning: seqnum %d is ahead of blkmodeld's "
                             "last (%d); not one of its seqnums\n" % (ahead, self.dm.seq(1)))
        p = ct.run("events", "--since=%d" % self.dm.seq(1))
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "", ""))

    def test_daemon_restart(self):
        ct.send_change(self.dm)
        self.wait_events(1)
        old = self.dm.seq(1)
        with ct.Background("--json", "monitor", "--since=0") as mon:
            mon.wait_lines(lambda ls: len(ls) >= 1)
            self.dm.stop()
            mon.wait_lines(lambda ls: len(ls) >= 2)
            self.dm = bt.Daemon(self.sys, uevent_socket=True)
            mon.wait_lines(lambda ls: len(ls) >= 3)
            ct.send_change(self.dm, MD0)
            lines = mon.wait_lines(lambda ls: len(ls) >= 4)
            self.assertEqual(mon.stop(), (0, ""))
        types = [json.loads(ln)["type"] for ln in lines]
        self.assertEqual(types, ["event", "daemon-stopped", "daemon-started",
                                 "event"])
        # The new daemon counts from a start of its own, above the old one's,
        # and its first event is no gap.
        self.assertEqual(seqnums(lines), [old, self.dm.seq(1)])
        self.assertGreater(self.dm.seq(1), old)
        self.assertEqual(json.loads(lines[3])["devpath"], MD0)

    def test_two_restarts_while_behind(self):
        """A monitor that reads its queue late (stopped, or behind a full
        pipe) while the daemon restarts twice: the middle daemon is gone
        before its NameOwnerChanged is read, and the replay asked then must
        not reach the third one.  Every event of each daemon exactly once:
        none of the middle one's dropped as already printed, none of the
        third one's printed twice."""
        ct.send_change(self.dm)
        self.wait_events(1)
        seen = [self.dm.seq(1)]
        with ct.Background("--json", "monitor") as mon:
            time.sleep(0.3)  # subscribed
            ct.send_change(self.dm)
            self.wait_events(2)
            mon.wait_lines(lambda ls: len(ls) >= 1)
            seen.append(self.dm.seq(2))
            mon.proc.send_signal(signal.SIGSTOP)
            try:
                for n in (3, 2):
                    self.dm.stop()
                    self.dm = bt.Daemon(self.sys, uevent_socket=True)
                    for _ in range(n):
                        ct.send_change(self.dm, MD0)
                    self.wait_events(n)
                    seen += [self.dm.seq(k) for k in range(1, n + 1)]
            finally:
                mon.proc.send_signal(signal.SIGCONT)
            mon.wait_lines(lambda ls: seen[-1] in seqnums(ls))
            ct.send_change(self.dm)
            self.wait_events(3)
            seen.append(self.dm.seq(3))
            mon.wait_lines(lambda ls: seen[-1] in seqnums(ls))
            time.sleep(0.3)
            lines = mon.wait_lines(lambda ls: True)
            self.assertEqual(mon.stop(), (0, ""))
        self.assertEqual(seqnums(lines), seen[1:])
        self.assertEqual([json.loads(ln)["type"] for ln in lines if json.loads(ln)["type"] != "event"],
                         ["daemon-stopped", "daemon-started"] * 2)

    def test_since_from_an_earlier_daemon(self):
        """A seqnum kept from before a restart names none of the new
        daemon's events: GetEvents refuses it as expired, and events and
        monitor say it is an earlier daemon's and show everything the new
        one has (skipping nothing), not the events after the same number."""
        for _ in range(5):
            ct.send_change(self.dm)
        self.wait_events(5)
        kept = self.dm.seq(5)
        self.dm.stop()
        self.dm = bt.Daemon(self.sys, uevent_socket=True)
        self.assertGreater(self.dm.seq(1), kept)
        for _ in range(3):
            ct.send_change(self.dm, MD0)
        self.wait_events(3)
        new = [self.dm.seq(k) for k in (1, 2, 3)]

        with self.assertRaises(bt.dbus.exceptions.DBusException) as e:
            self.dm.call(bt.MANAGER_PATH, bt.IFACE + "Manager", "GetEvents",
                         bt.dbus.UInt64(kept))
        self.assertEqual(e.exception.get_dbus_name(),
                         "org.blkmodel1.Error.EventsExpired")
        self.assertTrue(e.exception.get_dbus_message().startswith(
            "Seqnum %d is from before this daemon started (its first is %d)"
            % (kept, new[0])), e.exception.get_dbus_message())

        p = ct.run("events", "--since=%d" % kept)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "blkmodelctl: warning: seqnum %d is older than this "
                         "blkmodeld (kept from an earlier one?); showing from %d, the "
                         "oldest it retains\n" % (kept, new[0]))
        self.assertEqual([fields(ln)[0] for ln in p.stdout.split("\n")[:-1]], new)

        lines = self.monitor_replay_then_live("--since=%d" % kept, 3)
        notice = json.loads(lines[0])
        self.assertEqual((notice["type"], notice["after"], notice["oldest"]),
                         ("expired", kept, new[0]))
        self.assertIn("is older than this blkmodeld (kept from an earlier one?",
                      notice["message"])
        self.assertEqual(seqnums(lines), new + [self.dm.seq(4)])

    def test_daemon_started_by_its_own_call(self):
        """On a bus that starts blkmodeld when it is first called (D-Bus
        activation), monitor's first call starts it: that daemon's events
        are shown once, and its NameOwnerChanged, which comes after monitor
        asked it, announces no other daemon."""
        self.dm.stop()
        tmp = tempfile.mkdtemp(prefix="activation-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        sock = os.path.join(tmp, "uevent.sock")
        os.mkdir(os.path.join(tmp, "services"))
        with open(os.path.join(tmp, "services", "org.blkmodel1.service"), "w") as f:
            f.write("[D-BUS Service]\nName=org.blkmodel1\n"
                    "Exec=/bin/sh -c 'exec %s --address=\"$DBUS_STARTER_ADDRESS\" "
                    "--sysfs-root=%s --uevent-socket=%s >%s/log 2>&1'\n"
                    % (bt.BLKMODELD, self.sys, sock, tmp))
        address, bus_pid = private_bus(tmp, "unix:dir=" + tmp, tmp + "/services")
        try:
            with ct.Background("--json", "monitor", "--since=0",
                               environ=ct.env(DBUS_SESSION_BUS_ADDRESS=address)) as mon:
                dm = types.SimpleNamespace(uevent_socket=sock,
                                           send_uevent=lambda *a: bt.Daemon.send_uevent(dm, *a))
                deadline = time.monotonic() + 60
                while not os.path.exists(sock):
                    self.assertLess(time.monotonic(), deadline, "not started")
                    time.sleep(0.02)
                ct.send_change(dm)
                ct.send_change(dm, MD0)
                lines = mon.wait_lines(lambda ls: len(ls) >= 2)
                time.sleep(0.5)          # nothing more may come
                self.assertEqual(mon.stop(), (0, ""))
        finally:
            os.kill(bus_pid, signal.SIGTERM)    # the daemon exits with its bus
        self.assertEqual([json.loads(ln)["type"] for ln in mon.lines], ["event", "event"])
        first = json.loads(lines[0])["seqnum"]
        self.assertEqual(seqnums(mon.lines), [first, first + 1])

    def test_bus_restarted(self):
        """The bus itself goes (the daemon with it) and comes back with a
        new daemon, which may have sent its first events before monitor is
        back (it tries once a second): monitor shows them, once."""
        self.dm.stop()
        tmp = tempfile.mkdtemp(prefix="busrestart-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        listen = "unix:path=" + tmp + "/bus"
        address, bus_pid = private_bus(tmp, listen)

        def daemon():
            dm = bt.Daemon(self.sys, uevent_socket=True, wait=False,
                           extra_args=["--address=" + address])
            conn = bt.dbus.bus.BusConnection(address)
            deadline = time.monotonic() + 60
            while not conn.name_has_owner(bt.BUS_NAME):
                self.assertLess(time.monotonic(), deadline, dm.output())
                time.sleep(0.02)
            conn.close()
            return dm

        try:
            a = daemon()
            # As the system bus's address, and a session bus's in /run/user, it names no guid: the
            # bus that comes back has another.
            with ct.Background("--json", "monitor",
                               environ=ct.env(DBUS_SESSION_BUS_ADDRESS=listen)) as mon:
                time.sleep(0.3)                  # subscribed
                ct.send_change(a)
                mon.wait_lines(lambda ls: len(ls) >= 1)
                os.kill(bus_pid, signal.SIGTERM)
                a.proc.wait(60)                  # "The bus went away; exiting."
                a.stop(code=1)
                if os.path.exists(tmp + "/bus"):   # dbus-daemon removes it at its exit
                    os.unlink(tmp + "/bus")
                address2, bus_pid = private_bus(tmp, listen)
                self.assertEqual(address2.split(",")[0], address.split(",")[0])
                address = address2
                self.dm = b = daemon()
                ct.send_change(b)
                ct.send_change(b, MD0)
                lines = mon.wait_lines(lambda ls: seqnums(ls)[-1:] == [b.seq(2)])
                time.sleep(0.3)                  # nothing more may come
                self.assertEqual(mon.stop(), (0, ""))
        finally:
            self.dm.stop()                       # before its bus, which it would exit 1 with
            os.kill(bus_pid, signal.SIGTERM)
        self.assertEqual(seqnums(mon.lines), [a.seq(1), b.seq(1), b.seq(2)])
        types_ = [json.loads(ln)["type"] for ln in lines]
        self.assertEqual(types_[-3:], ["daemon-started", "event", "event"], types_)
        self.assertIn("reconnected", types_)

    def test_sigterm_ends_cleanly(self):
        with ct.Background("monitor") as mon:
            time.sleep(0.3)
            mon.proc.terminate()
            self.assertEqual(mon.wait(), (0, ""))


if __name__ == "__main__":
    bt.main()
