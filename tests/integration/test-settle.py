# SPDX-License-Identifier: LGPL-2.1-or-later
"""Manager.Settle(): what the kernel had queued when the call came is
applied and signalled before the answer.  The daemon is stopped while uevents
queue up in its socket (as many as it holds); the first call after it continues is
Settle, and its answer carries the last of their seqnums, after all their
Uevent signals on the same connection.  Meanwhile the daemon answers other
calls: Settle waits without holding the loop."""
import json
import os
import signal
import socket
import time
import unittest

import blkmodeltest as bt

N = 500


def queue_while_stopped(dm, action, devpath):
    """Queues up to N uevents in the stopped daemon's socket (as many as it
    holds); how many."""
    dm.proc.send_signal(signal.SIGSTOP)
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.setblocking(False)
        sent = 0
        for i in range(N):
            raw = ("%s@%s\0ACTION=%s\0DEVPATH=%s\0SUBSYSTEM=block\0SEQNUM=%d\0"
                   % (action, devpath, action, devpath, i + 1))
            try:
                s.sendto(raw.encode(), dm.uevent_socket)
                sent += 1
            except BlockingIOError:
                break  # the socket's queue is full: that many are queued
        s.close()
    finally:
        dm.proc.send_signal(signal.SIGCONT)
    return sent


class Settle(unittest.TestCase):
    def test_settle_after_a_queued_burst(self):
        sys_ = os.path.join(bt.make_fixture(), "sys")
        queue = [r for r, _, _ in os.walk(os.path.join(sys_, "devices"))
                 if r.endswith("/block/sda/queue")][0][len(sys_):]
        with bt.Daemon(sys_, uevent_socket=True) as dm:
            first = dm.manager_prop("LastSeqnum")
            rec = bt.SignalRecorder()
            sent = queue_while_stopped(dm, "change", queue)
            self.assertGreater(sent, 0)
            last = dm.manager("Settle")
            self.assertEqual(last, first + sent)
            rec.pump()
            seqnums = [x[3][0] for x in rec.signals if x[1] == "Uevent"]
            self.assertEqual(seqnums, list(range(first + 1, first + sent + 1)))
            self.assertEqual(json.loads(bt.ctl("--json", "settle", check=0).stdout),
                             {"settled": True, "last_seqnum": last})
            rec.close()

    def test_an_idle_daemon_answers_at_once(self):
        """Nothing queued, nothing polled: the loop has nothing to wake it,
        and Settle() must not wait for something to (it waited for the next
        poll round, or for ever with --poll-interval=0, every other call)."""
        sys_ = os.path.join(bt.make_fixture(), "sys")
        with bt.Daemon(sys_, uevent_socket=True,
                       extra_args=["--poll-interval=0"]) as dm:
            last = dm.manager_prop("LastSeqnum")
            for i in range(6):
                with self.subTest(call=i):
                    start = time.monotonic()
                    self.assertEqual(dm.call(bt.MANAGER_PATH, bt.MANAGER,
                                             "Settle", timeout=20), last)
                    self.assertLess(time.monotonic() - start, 10)
                    time.sleep(0.2)  # the loop asleep again

    def test_answered_when_the_queue_empties_and_the_loop_sleeps(self):
        """A change event and Settle() read in one turn: the change waits in
        the queue for the turn's end, Settle() for it, and the queue is
        applied in the next turn's idle phase, after which nothing wakes the
        loop (the Uevent went out at once, nothing polls).  The answer must
        not wait for the next thing that wakes it (for ever with
        --poll-interval=0, up to a poll interval without)."""
        sys_ = os.path.join(bt.make_fixture(), "sys")
        loop0 = "/devices/virtual/block/loop0"
        raw = ("change@%s\0ACTION=change\0DEVPATH=%s\0SUBSYSTEM=block\0DEVTYPE=disk\0"
               % (loop0, loop0)).encode()
        with bt.Daemon(sys_, uevent_socket=True,
                       extra_args=["--poll-interval=0"]) as dm:
            first = dm.manager_prop("LastSeqnum")
            for i in range(1, 6):
                with self.subTest(call=i):
                    answers = []
                    dm.proc.send_signal(signal.SIGSTOP)
                    try:
                        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                        s.sendto(raw, dm.uevent_socket)
                        s.close()
                        dm.object(bt.MANAGER_PATH).get_dbus_method(
                            "Settle", bt.IFACE + "Manager")(
                                reply_handler=lambda v: answers.append(int(v)),
                                error_handler=answers.append, timeout=30)
                        bt.SignalRecorder(dm.bus).close()  # the call is on the bus
                    finally:
                        dm.proc.send_signal(signal.SIGCONT)
                    ctx = bt.GLib.MainContext.default()
                    deadline = time.monotonic() + 10
                    while not answers and time.monotonic() < deadline:
                        ctx.iteration(False) or time.sleep(0.005)
                    self.assertEqual(answers, [first + i])

    def test_calls_answered_while_settling(self):
        """Settle() waits for the queue without holding the loop: a call made
        after it is answered while the queued events are still being applied,
        and Settle's answer comes once they all are."""
        sys_ = os.path.join(bt.make_fixture(disks=1, partitions=1000), "sys")
        disk = [r for r, _, _ in os.walk(os.path.join(sys_, "devices"))
                if r.endswith("/block/sda")][0][len(sys_):]
        with bt.Daemon(sys_, uevent_socket=True) as dm:
            first = dm.manager_prop("LastSeqnum")
            # An add of a disk the model has re-reads it and its 1,000
            # partitions, one event at a time (changes would coalesce).
            sent = queue_while_stopped(dm, "add", disk)
            self.assertGreater(sent, 1)
            answers = []
            dm.object(bt.MANAGER_PATH).get_dbus_method(
                "Settle", bt.IFACE + "Manager")(
                    reply_handler=lambda v: answers.append(int(v)),
                    error_handler=answers.append, timeout=120)
            time.sleep(0.02)
            other = bt.bus().get_object(bt.BUS_NAME, bt.MANAGER_PATH,
                                        introspect=False)
            start = time.monotonic()
            other.Ping(dbus_interface="org.freedesktop.DBus.Peer", timeout=60)
            seen = other.Get(bt.IFACE + "Manager", "LastSeqnum",
                             dbus_interface=bt.PROPS)
            waited = time.monotonic() - start
            # Answered between two of the queued events, not after them all.
            self.assertLess(seen, first + sent, "waited %.3f s" % waited)
            rec = bt.SignalRecorder()
            deadline = time.monotonic() + 120
            while not answers and time.monotonic() < deadline:
                rec.pump(0.05)
            rec.close()
            self.assertEqual(answers, [first + sent])
            self.assertEqual(dm.manager_prop("LastSeqnum"), first + sent)


    def test_answered_after_every_change_before_it(self):
        """A change applied ahead of its turn (an add on its disk came) does
        not stand in for one still waiting: Settle() is answered after the
        re-read of every change queued before it, whatever came after it."""
        sys_ = os.path.join(bt.make_fixture(disks=320, partitions=8), "sys")
        disks = sorted(os.listdir(os.path.join(sys_, "block")))
        devpaths = [os.path.realpath(os.path.join(sys_, "block", n))[len(sys_):] for n in disks]
        early, queued = devpaths[:20], devpaths[20:]
        with bt.Daemon(sys_, uevent_socket=True) as dm:
            self.assertTrue(bt.wait_until(lambda: "Recorded the values of" in dm.output()))
            for dp in devpaths:
                with open(sys_ + dp + "/size", "w") as f:
                    f.write("4096\n")
            rec = bt.SignalRecorder(dm.bus)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)

            def send(action, dp, extra=""):
                s.sendto(("%s@%s\0ACTION=%s\0DEVPATH=%s\0SUBSYSTEM=block\0%s"
                          % (action, dp, action, dp, extra)).encode(), dm.uevent_socket)

            # Changes that read each disk whole, a slice of the loop at a time.
            for dp in queued:
                send("change", dp, "DM_NAME=x\0")
            answers = []
            dm.object(bt.MANAGER_PATH).get_dbus_method("Settle", bt.IFACE + "Manager")(
                reply_handler=lambda v: answers.append(
                    {x[2] for x in rec.of("PropertiesChanged") if "size" in x[3][1]}),
                error_handler=answers.append, timeout=120)
            rec.pump(0.05)  # the daemon has read the queue empty since the call
            # After the call: more disks' changes, each applied at once for an add on its disk.
            for n, dp in zip(disks, early):
                send("change", dp, "DM_NAME=x\0")
                send("add", dp + "/" + n + "1")
            s.close()
            deadline = time.monotonic() + 60
            while not answers and time.monotonic() < deadline:
                rec.pump(0.05)
            rec.close()
        self.assertEqual(len(answers), 1, answers)
        missing = {bt.path_of("block", n) for n in disks[len(early):]} - answers[0]
        self.assertEqual(missing, set(), "Settle() answered before %d changes queued before it were read"
                         % len(missing))


if __name__ == "__main__":
    bt.main()
