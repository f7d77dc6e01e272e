# SPDX-License-Identifier: LGPL-2.1-or-later
"""A burst of new callers' reads: a read that must know its caller's uid (root-only attributes are
left out for others) waits one bus round trip for it on each new caller's first call.  Those waits
were counted against the bound on calls waiting for polkit (1,024), so a burst of 2,000 new clients'
GetManagedObjects had 900 refused, and with LimitsExceeded, which tells a client that the reply is
too large and to read the model in parts (blkmodelctl does): many more calls.  Every one must be
answered."""
import os
import resource
import signal
import unittest

from gi.repository import Gio, GLib

import blkmodeltest as bt

CALLERS = 1500
AHCI = bt.path_of("devices", "pci0000:00", "0000:00:1f.2")  # its config is root-only


class CallerBurst(unittest.TestCase):
    def test_every_new_caller_is_answered(self):
        # Descriptors for the connections here and in dbus-daemon (we are root: its limit too).
        need = CALLERS + 200
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        self.assertGreaterEqual(hard, need, "more than 1,024 callers need more descriptors")
        if soft < need:
            resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
        bus_pid = int(bt.bus().call_blocking(
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
            "GetConnectionUnixProcessID", "s", ["org.freedesktop.DBus"]))
        soft, hard = resource.prlimit(bus_pid, resource.RLIMIT_NOFILE)
        self.assertGreaterEqual(hard, need, "dbus-daemon needs more descriptors")
        if soft < need:
            resource.prlimit(bus_pid, resource.RLIMIT_NOFILE, (need, hard))
        sys_ = bt.make_fixture() + "/sys"
        with bt.Daemon(sys_) as dm:
            address = os.environ["DBUS_SESSION_BUS_ADDRESS"]
            flags = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
                     | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
            conns = [Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
                     for _ in range(CALLERS)]
            loop, answers = GLib.MainLoop(), []

            def answered(conn, result, _):
                try:
                    conn.call_finish(result)
                    answers.append("ok")
                except GLib.Error as e:
                    answers.append(Gio.DBusError.get_remote_error(e) or e.message)
                if len(answers) == CALLERS:
                    loop.quit()

            # All in the daemon's socket before it reads one: its questions for the callers' uids
            # then wait behind the calls, as in a burst from everywhere at once.
            dm.proc.send_signal(signal.SIGSTOP)
            try:
                for c in conns:
                    c.call(bt.BUS_NAME, AHCI, "org.freedesktop.DBus.Properties", "GetAll",
                           GLib.Variant("(s)", (bt.IFACE + "Device",)), None,
                           Gio.DBusCallFlags.NONE, 120000, None, answered, None)
                for c in conns:
                    c.flush_sync(None)
            finally:
                dm.proc.send_signal(signal.SIGCONT)
            GLib.timeout_add_seconds(150, loop.quit)
            loop.run()
            for c in conns:
                c.close_sync(None)
            self.assertEqual(len(answers), CALLERS)
            self.assertEqual([a for a in answers if a != "ok"], [])


if __name__ == "__main__":
    bt.main()
