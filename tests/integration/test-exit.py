# SPDX-License-Identifier: LGPL-2.1-or-later
"""The exit with a backlog of uevents (a storm read faster than it is
applied, as systemctl stop during udevadm trigger): SIGTERM is obeyed
within a bound, not after every queued uevent has been applied to a model
about to be freed (14 s for 80,000 under ASan, the name held and every
caller waiting); the bus killed under it is said once, not once for each
signal that could no longer be sent."""

import os
import signal
import socket
import subprocess
import time
import unittest

import blkmodeltest as bt

EXIT_BOUND = 3.0    # s from SIGTERM to the exit
BACKLOG = 20000     # uevents read and not yet applied when the stop comes


def disks(sys_):
    return [r[len(sys_):] for r, _, files in os.walk(sys_ + "/devices")
            if os.path.basename(os.path.dirname(r)) == "block"
            and "size" in files and "partition" not in files]


def storm(dm, sys_):
    """Change events for every disk, as fast as the socket takes them, until
    BACKLOG of them wait to be applied.  Returns how many were sent."""
    raws = [("change@%s\0ACTION=change\0DEVPATH=%s\0SUBSYSTEM=block\0DEVTYPE=disk\0"
             % (p, p)).encode() for p in disks(sys_)]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sent, deadline = 0, time.monotonic() + 60
    try:
        while True:
            for r in raws:
                s.sendto(r, dm.uevent_socket)
            sent += len(raws)
            if sent % (20 * len(raws)) == 0 and sent - dm.manager_prop("LastSeqnum") >= BACKLOG:
                return sent
            assert time.monotonic() < deadline, "the daemon kept up with the storm"
    finally:
        s.close()


class Exit(unittest.TestCase):
    def setUp(self):
        self.sys = bt.make_fixture(disks=300, partitions=2) + "/sys"

    def test_sigterm_with_a_backlog(self):
        with bt.Daemon(self.sys, uevent_socket=True, extra_args=["--log-level=info"]) as dm:
            storm(dm, self.sys)
            asked = time.monotonic()
            out = dm.stop(timeout=60)
            took = time.monotonic() - asked
        self.assertLess(took, EXIT_BOUND, out[-2000:])
        self.assertRegex(out, r"Exiting with \d+ uevents read but not applied; a start reads "
                              r"sysfs afresh\.")

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
            dm.bus = back       # its manager_prop() asks this bus
            storm(dm, self.sys)
        finally:
            os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        self.assertEqual(dm.proc.wait(60), 1)
        self.assertLess(time.monotonic() - killed, EXIT_BOUND)
        out = dm.output()
        self.assertEqual(out.count("The bus went away; exiting."), 1, out[-2000:])
        self.assertNotIn("Cannot send", out)
        dm.log.close()


if __name__ == "__main__":
    bt.main()
