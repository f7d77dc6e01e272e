# SPDX-License-Identifier: LGPL-2.1-or-later
"""The exit with a backlog of uevents (a storm read faster than it is
applied, as systemctl stop during udevadm trigger): SIGTERM is obeyed
within a bound, not after every queued uevent has been applied to a model
about to be freed (14 s for 80,000 under ASan, the name held and every
caller waiting); the bus killed under it is said once, not once for each
signal that could no longer be sent."""

import os
import re
import signal
import subprocess
import sys
import time
import unittest

import blkmodeltest as bt

EXIT_BOUND = 1.0    # s from SIGTERM to the exit (applying a backlog took 1.3 s of 20,000 here)
CALLS_UNREAD = 400  # sent to a stopped daemon, then SIGTERM
STORM_SECONDS = 3   # of change events, as fast as two senders go, before the stop

SENDER = r"""
import socket, sys
raws = [("change@%s\0ACTION=change\0DEVPATH=%s\0SUBSYSTEM=block\0DEVTYPE=disk\0" % (p, p)).encode()
        for p in sys.argv[2:]]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
while True:
    for r in raws:
        s.sendto(r, sys.argv[1])
"""


def disks(sys_):
    return [r[len(sys_):] for r, _, files in os.walk(sys_ + "/devices")
            if os.path.basename(os.path.dirname(r)) == "block"
            and "size" in files and "partition" not in files]

# Calls at once, each argument "PATH INTERFACE METHOD" of org.blkmodel1's; prints "sent" once they
# are on their way, then each answer: "ok" or the error's name and message.
CALLER = r"""
import dbus, sys
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib
bus = dbus.SessionBus(mainloop=DBusGMainLoop())
loop, answers, calls = GLib.MainLoop(), [], sys.argv[1:]
def answered(text):
    answers.append(text)
    if len(answers) == len(calls):
        loop.quit()
for call in calls:
    bus.call_async("org.blkmodel1", *call.split(), "", [], lambda *a: answered("ok"),
                   lambda e: answered("%s %s" % (e.get_dbus_name(), e.get_dbus_message())), timeout=60)
bus.flush()
print("sent", flush=True)
loop.run()
print("\n".join(answers))
"""


class Storm:
    """Two processes sending change events for every disk as fast as the
    socket takes them: the daemon reads them faster than it applies them,
    so a backlog builds (as far as the machine gives the senders CPU)."""

    def __init__(self, dm, sys_):
        self.senders = [subprocess.Popen([sys.executable, "-c", SENDER, dm.uevent_socket] + disks(sys_))
                        for _ in range(2)]
        time.sleep(STORM_SECONDS)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in self.senders:
            p.kill()
            p.wait()


class Exit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The two storms' tree, which they only read: made once (2.4 s), not for every test.
        cls.sys = bt.make_fixture(disks=300, partitions=2) + "/sys"

    def test_calls_unread_at_the_stop_are_told_it_exits(self):
        """Calls still in the daemon's socket when SIGTERM comes (sent while
        it was stopped) are answered ServiceUnknown "blkmodeld is exiting",
        as org.blkmodel1(5) says, not left to the bus's NoReply when the
        daemon disconnects: the exit reads up to the reply to ReleaseName,
        after which the bus routes nothing more to it by the name."""
        exiting = "org.freedesktop.DBus.Error.ServiceUnknown blkmodeld is exiting."
        # More than one turn's reading (64 messages): the signal is handled between two.
        for _ in range(2):
            self.stop_with_calls_unread(exiting)

    def stop_with_calls_unread(self, exiting):
        with bt.Daemon(self.sys, extra_args=["--log-level=info"]) as dm:
            dm.proc.send_signal(signal.SIGSTOP)
            try:
                caller = subprocess.Popen(
                    [sys.executable, "-c", CALLER]
                    + ["%s %s Settle" % (bt.MANAGER_PATH, bt.MANAGER)] * CALLS_UNREAD,
                    stdout=subprocess.PIPE, text=True)
                self.assertEqual(caller.stdout.readline(), "sent\n")
                time.sleep(0.2)     # in the daemon's socket
                dm.proc.send_signal(signal.SIGTERM)
            finally:
                dm.proc.send_signal(signal.SIGCONT)
            dm.proc.wait(60)
        answers = caller.communicate(timeout=60)[0].strip().split("\n")
        self.assertEqual(len(answers), CALLS_UNREAD)
        self.assertEqual([a for a in answers if a not in ("ok", exiting)], [])

    def test_sigterm_with_a_backlog(self):
        with bt.Daemon(self.sys, uevent_socket=True, extra_args=["--log-level=info"]) as dm:
            with Storm(dm, self.sys):
                # Settle() waits for the backlog: told that the daemon exits, as any call then.
                settle = subprocess.Popen([sys.executable, "-c", CALLER,
                                           "%s %s Settle" % (bt.MANAGER_PATH, bt.MANAGER)],
                                          stdout=subprocess.PIPE, text=True)
                self.assertEqual(settle.stdout.readline(), "sent\n")
                time.sleep(0.1)     # read by the daemon
                asked = time.monotonic()
                out = dm.stop(timeout=60)
                took = time.monotonic() - asked
            answer = settle.communicate(timeout=60)[0].strip()
        self.assertLess(took, EXIT_BOUND, out[-2000:])
        self.assertIn(answer, ("ok", "org.freedesktop.DBus.Error.ServiceUnknown blkmodeld is exiting."))
        left = re.search(r"Exiting with (\d+) uevents read but not applied; a start reads sysfs "
                         r"afresh\.", out)
        if not left:
            self.skipTest("no backlog built: the senders had too little CPU to outpace the daemon")

    def test_sigterm_during_the_start(self):
        """A SIGTERM while the start scans (seconds at 10,000 disks) is
        obeyed before the name is taken: clients saw the name come and go
        at once, and the service manager READY=1, then STOPPING=1."""
        # 1,000 disks: the start takes 0.9-1.5 s here from the socket to the name (1.8-2.4 s under
        # ASan), hundreds of times what the SIGTERM below takes to follow the socket.  (It had 2,000,
        # whose tree alone took 4 s to make and remove, and whose start under ASan took 6 s more.)
        sys_ = bt.make_fixture(disks=1000, partitions=1) + "/sys"
        owners = []
        match = bt.bus().add_signal_receiver(
            lambda name, old, new: owners.append(new), "NameOwnerChanged",
            "org.freedesktop.DBus", arg0=bt.BUS_NAME)
        dm = bt.Daemon(sys_, uevent_socket=True, wait=False, extra_args=["--log-level=info"])
        # The socket is made at the start of the start, the scan follows.
        deadline = time.monotonic() + 60
        while not os.path.exists(dm.uevent_socket):
            self.assertLess(time.monotonic(), deadline, dm.output())
            time.sleep(0.001)
        dm.proc.send_signal(signal.SIGTERM)
        out = dm.stop(timeout=60)
        bt.SignalRecorder().pump(0.5)
        match.remove()
        self.assertIn("Asked to stop during the start; exiting without taking the name.", out)
        self.assertEqual(owners, [])

    def test_sigterm_with_calls_waiting(self):
        """Calls still unanswered when SIGTERM comes (Rescans running or
        waiting their turn, GetManagedObjects being built in slices) are
        answered as any call that comes then: not with the errno of their
        cancelling (System.Error.ECANCELED), nor left to the bus's NoReply."""
        sys_ = bt.make_fixture(disks=500, partitions=2) + "/sys"
        rescan = "%s %s Rescan" % (bt.MANAGER_PATH, bt.MANAGER)
        gmo = "%s org.freedesktop.DBus.ObjectManager GetManagedObjects" % bt.ROOT
        with bt.Daemon(sys_, extra_args=["--log-level=info"]) as dm:
            rescans = subprocess.Popen([sys.executable, "-c", CALLER] + [rescan] * 4,
                                       stdout=subprocess.PIPE, text=True)
            self.assertEqual(rescans.stdout.readline(), "sent\n")
            # Each Rescan takes a while on 500 disks: once the first is done, another runs.
            deadline = time.monotonic() + 60
            while "Rescan: " not in dm.output():
                self.assertLess(time.monotonic(), deadline, dm.output()[-2000:])
                time.sleep(0.01)
            # And each GetManagedObjects of its 4,500 objects takes tens of ms: some are still built.
            gmos = subprocess.Popen([sys.executable, "-c", CALLER] + [gmo] * 8,
                                    stdout=subprocess.PIPE, text=True)
            self.assertEqual(gmos.stdout.readline(), "sent\n")
            time.sleep(0.1)     # read by the daemon
            dm.stop(timeout=60)
            answers = {what: c.communicate(timeout=60)[0].splitlines()
                       for what, c in (("Rescan", rescans), ("GetManagedObjects", gmos))}
        self.assertEqual([len(a) for a in answers.values()], [4, 8], answers)
        for what, got in answers.items():
            refused = [a for a in got if a != "ok"]
            self.assertTrue(refused, "every %s was answered before the exit" % what)
            for a in refused:
                self.assertEqual(a, "org.freedesktop.DBus.Error.ServiceUnknown blkmodeld is exiting.",
                                 answers)

    def test_bus_killed_with_a_backlog(self):
        bus = subprocess.run(["dbus-daemon", "--session", "--fork", "--print-address=1",
                              "--print-pid=1"], capture_output=True, text=True, check=True,
                             timeout=60).stdout.split("\n")
        address, pid = bus[0], int(bus[1])
        try:
            dm = bt.Daemon(self.sys, uevent_socket=True, wait=False,
                           extra_args=["--address=" + address, "--log-level=info"])
            back = bt.dbus.bus.BusConnection(address)
            deadline = time.monotonic() + 60
            while not back.name_has_owner(bt.BUS_NAME):
                self.assertLess(time.monotonic(), deadline, dm.output())
                time.sleep(0.02)
            with Storm(dm, self.sys):
                os.kill(pid, signal.SIGKILL)
                killed = time.monotonic()
                self.assertEqual(dm.proc.wait(60), 1)
        finally:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.assertLess(time.monotonic() - killed, EXIT_BOUND)
        out = dm.stop(code=1)   # and sanitizer-clean
        self.assertEqual(out.count("The bus went away; exiting."), 1, out[-2000:])
        self.assertNotIn("Cannot send", out)


if __name__ == "__main__":
    bt.main()
