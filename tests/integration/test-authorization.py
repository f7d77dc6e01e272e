# SPDX-License-Identifier: LGPL-2.1-or-later
"""Who may do what: everyone reads, only root (or the daemon's own uid)
writes, rescans and triggers.  Runs on a bus every uid may join
(any-user-bus.conf); the caller is `nobody`."""
import json
import os
import subprocess
import unittest

import blkmodeltest as bt

# Runs as nobody: each call's D-Bus error name, or "ok".
CALLER = r'''
import dbus, json, os, sys
os.setgroups([]); os.setgid(65534); os.setuid(65534)
b = dbus.bus.BusConnection(os.environ["DBUS_SESSION_BUS_ADDRESS"])
def call(path, iface, method, *args):
    o = b.get_object("org.blkmodel1", path, introspect=False)
    try:
        o.get_dbus_method(method, iface)(*args)
        return "ok"
    except dbus.DBusException as e:
        return e.get_dbus_name()
R = "/org/blkmodel1"; M = "org.blkmodel1.Manager"
P = "org.freedesktop.DBus.Properties"
Q = R + "/block/sda/queue"
print(json.dumps({
    "GetManagedObjects": call(R, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"),
    "Resolve": call(R + "/Manager", M, "Resolve", "sda"),
    "GetEvents": call(R + "/Manager", M, "GetEvents", dbus.UInt64(0)),
    "Get": call(Q, P, "Get", "org.blkmodel1.Queue", "read_ahead_kb"),
    "Introspect": call(Q, "org.freedesktop.DBus.Introspectable", "Introspect"),
    "Set": call(Q, P, "Set", "org.blkmodel1.Queue", "read_ahead_kb", dbus.String("512", variant_level=1)),
    "SetScheduler": call(Q, P, "Set", "org.blkmodel1.Queue", "Scheduler", dbus.String("bfq", variant_level=1)),
    "Rescan": call(R + "/Manager", M, "Rescan"),
    "Trigger": call(R + "/Manager", M, "Trigger", dbus.ObjectPath(R + "/block/sda"), "change"),
}))
'''


@unittest.skipUnless(os.geteuid() == 0, "needs root to call as another uid")
class Authorization(unittest.TestCase):
    def test_nobody_reads_but_does_not_write(self):
        d = bt.make_fixture()
        os.chmod(d, 0o755)
        with bt.Daemon(os.path.join(d, "sys")) as dm:
            p = subprocess.run(["/usr/bin/python3", "-c", CALLER],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            got = json.loads(p.stdout)
            denied = "org.freedesktop.DBus.Error.AccessDenied"
            self.assertEqual(got, {
                "GetManagedObjects": "ok", "Resolve": "ok", "GetEvents": "ok",
                "Get": "ok", "Introspect": "ok",
                "Set": denied, "SetScheduler": denied, "Rescan": denied,
                "Trigger": denied,
            })
            qdir = [r for r, _, _ in os.walk(os.path.join(d, "sys", "devices"))
                    if r.endswith("/block/sda/queue")][0]
            self.assertEqual(bt.read_attr(qdir + "/read_ahead_kb"), "128")
            self.assertIn("[mq-deadline]", bt.read_attr(qdir + "/scheduler"))
            # Root (the test itself) may.
            dm.manager("Rescan")


if __name__ == "__main__":
    bt.main()
