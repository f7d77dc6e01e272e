# SPDX-License-Identifier: LGPL-2.1-or-later
"""Reads with the caller's rights: an attribute others may not read (mode
0400 or 0600), or whose content the kernel cuts for them (a PCI device's
config), is read for root and the daemon's own user only: AccessDenied to
others, left out of their GetAll and GetManagedObjects, never broadcast
(InterfacesAdded leaves it out, PropertiesChanged names it only), and
written by root only.  Runs on a bus every uid may join; the other caller
is `nobody`."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import blkmodeltest as bt
import mksysfs

AHCI = ("devices", "pci0000:00", "0000:00:1f.2")
LUN = bt.SDA_DEV.lstrip("/").split("/")

CALLER = r'''
import dbus, json, os, sys
os.setgroups([]); os.setgid(65534); os.setuid(65534)
b = dbus.bus.BusConnection(os.environ["DBUS_SESSION_BUS_ADDRESS"])
ahci, lun = sys.argv[1], sys.argv[2]
DEV = "org.blkmodel1.Device"; P = "org.freedesktop.DBus.Properties"
def call(path, iface, method, *args):
    o = b.get_object("org.blkmodel1", path, introspect=False)
    try:
        return ["ok", o.get_dbus_method(method, iface)(*args)]
    except dbus.DBusException as e:
        return [e.get_dbus_name(), None]
gmo = call("/org/blkmodel1", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")[1]
print(json.dumps({
    "get_config": call(ahci, P, "Get", DEV, "config")[0],
    "get_secret": call(lun, P, "Get", DEV, "secret")[0],
    "get_rootonly": call(lun, P, "Get", DEV, "rootonly")[0],
    "get_vendor": call(lun, P, "Get", DEV, "vendor")[0],
    "getall_ahci": sorted(call(ahci, P, "GetAll", DEV)[1]),
    "getall_lun": sorted(call(lun, P, "GetAll", DEV)[1]),
    "gmo_ahci": sorted(gmo[ahci][DEV]),
    "gmo_lun": sorted(gmo[lun][DEV]),
    "set_secret": call(lun, P, "Set", DEV, "secret", dbus.String("x", variant_level=1))[0],
}))
'''


@unittest.skipUnless(os.geteuid() == 0, "needs root to call as another uid")
class CallerRights(unittest.TestCase):
    def test_privileged_attributes(self):
        d = bt.make_fixture()
        os.chmod(d, 0o755)
        sys_ = os.path.join(d, "sys")
        lundir = os.path.join(sys_, *LUN)
        for name, mode, value in (("secret", 0o600, "s3cret"),
                                  ("rootonly", 0o400, "r00t")):
            path = os.path.join(lundir, name)
            with open(path, "w") as f:
                f.write(value + "\n")
            os.chmod(path, mode)
        ahci, lun = bt.path_of(*AHCI), bt.path_of(*LUN)
        dev = bt.IFACE + "Device"
        with bt.Daemon(sys_, extra_args=["--poll-interval=100"]) as dm:
            p = subprocess.run(["/usr/bin/python3", "-c", CALLER, ahci, lun],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            got = json.loads(p.stdout)
            denied = "org.freedesktop.DBus.Error.AccessDenied"
            self.assertEqual(got["get_config"], denied)
            self.assertEqual(got["get_secret"], denied)
            self.assertEqual(got["get_rootonly"], denied)
            self.assertEqual(got["get_vendor"], "ok")
            self.assertEqual(got["set_secret"], denied)
            for key in ("getall_ahci", "gmo_ahci"):
                self.assertNotIn("config", got[key], key)
                self.assertIn("vendor", got[key], key)
            for key in ("getall_lun", "gmo_lun"):
                self.assertNotIn("secret", got[key], key)
                self.assertNotIn("rootonly", got[key], key)
                self.assertIn("vendor", got[key], key)

            # blkmodelctl info -a as nobody: what it may not read is
            # "(not readable)", as udevadm info -a prints a file it may not
            # open; root sees the value.  (The client is copied out of the
            # build tree, which nobody may not be able to reach.)
            with tempfile.TemporaryDirectory() as d:
                os.chmod(d, 0o755)
                ctl = shutil.copy(bt.BLKMODELCTL if os.path.isabs(bt.BLKMODELCTL)
                                  else shutil.which(bt.BLKMODELCTL), d)

                def drop():
                    os.setgroups([])
                    os.setgid(65534)
                    os.setuid(65534)
                p = subprocess.run([ctl, "--session", "info", "-a", "sda"],
                                   capture_output=True, text=True, timeout=60,
                                   preexec_fn=drop)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn('    ATTRS{secret}=="(not readable)"\n', p.stdout)
            self.assertIn('    ATTRS{rootonly}=="(not readable)"\n', p.stdout)
            self.assertIn('    ATTRS{vendor}=="ATA     "\n', p.stdout)
            out = bt.ctl("info", "-a", "sda", check=0).stdout
            self.assertIn('    ATTRS{secret}=="s3cret"\n', out)

            # Root reads and writes them; GetAll and GetManagedObjects hold them.
            self.assertEqual(dm.get(lun, dev, "secret"), "s3cret")
            self.assertEqual(dm.get(ahci, dev, "config"), bt.read_published(
                os.path.join(sys_, *AHCI, "config")))
            self.assertIn("secret", dm.get_all(lun, dev))
            self.assertIn("config", dm.managed_objects()[ahci][dev])
            dm.call(lun, bt.PROPS, "Set", dev, "secret",
                    bt.dbus.String("changed", variant_level=1))
            self.assertEqual(bt.read_attr(os.path.join(lundir, "secret")),
                             "changed")

            # Their changes are announced by name only; introspection says so.
            xml = dm.introspect(lun)
            self.assertIn('<property name="secret" type="s" access="readwrite">'
                          '<annotation name="org.freedesktop.DBus.'
                          'Property.EmitsChangedSignal" value="invalidates"/>',
                          xml)
            rec = bt.SignalRecorder()
            with open(os.path.join(lundir, "secret"), "w") as f:
                f.write("again\n")
            sig = rec.wait_for(lambda ss: [
                s for s in ss if s[1] == "PropertiesChanged" and s[2] == lun])
            sig = [s for s in sig if s[1] == "PropertiesChanged" and
                   s[2] == lun][0]
            self.assertNotIn("secret", sig[3][1])
            self.assertIn("secret", sig[3][2])
            rec.close()

    def two_disks(self):
        """A fixture of sda and sdb, one partition each, every file its own
        (a chmod of one changes no other); returns its sysfs root."""
        d = tempfile.mkdtemp(prefix="blkmodel-modes-", dir=bt.fixture_tmpdir())
        self.addCleanup(shutil.rmtree, d, True)
        os.chmod(d, 0o755)
        old = os.umask(0)
        try:
            mksysfs.main([d, "--disks", "2", "--partitions", "1", "--distinct-files"])
        finally:
            os.umask(old)
        return os.path.join(d, "sys")

    def test_modes_are_each_objects_own(self):
        """Two disks whose directories list the same names share a shape,
        but a file's mode is its own: sdb's size made root-only (a chmod)
        is refused to others while sda's is not, and its read_ahead_kb
        made read-only is introspected so.  The start takes sdb's shape by
        the names alone; the warm-up reads the modes.  A chmod later is
        found by a Rescan, which tells the interface anew."""
        sys_ = self.two_disks()
        disk = {n: os.path.realpath(os.path.join(sys_, "block", n)) for n in ("sda", "sdb")}
        os.chmod(os.path.join(disk["sdb"], "size"), 0o400)
        os.chmod(os.path.join(disk["sdb"], "queue", "read_ahead_kb"), 0o444)
        path = {n: bt.path_of("block", n) for n in disk}
        disk_iface, queue_iface = bt.IFACE + "Disk", bt.IFACE + "Queue"

        def emits(dm, p, iface, prop):
            return bt.emits_changed_signal(dm.introspect(p)).get(iface, {}).get(prop)

        def as_nobody():
            p = subprocess.run(["/usr/bin/python3", "-c", GET_AS_NOBODY, path["sda"], path["sdb"]],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            return json.loads(p.stdout)

        with bt.Daemon(sys_, extra_args=["--poll-interval=0"]) as dm:
            self.assertTrue(bt.wait_until(
                lambda: emits(dm, path["sdb"], disk_iface, "size") == "invalidates"))
            self.assertEqual(emits(dm, path["sda"], disk_iface, "size"), "true")
            got = as_nobody()
            self.assertEqual(got["sda"], ["ok", True])
            self.assertEqual(got["sdb"], ["org.freedesktop.DBus.Error.AccessDenied", False])
            self.assertTrue(bt.wait_until(
                lambda: '<property name="read_ahead_kb" type="s" access="read"/>' in
                dm.introspect(path["sdb"] + "/queue")))
            self.assertIn('<property name="read_ahead_kb" type="s" access="readwrite"/>',
                          dm.introspect(path["sda"] + "/queue"))

            # The other way round, with no event: a Rescan finds it.
            os.chmod(os.path.join(disk["sdb"], "size"), 0o444)
            os.chmod(os.path.join(disk["sda"], "size"), 0o400)
            rec = bt.SignalRecorder()
            dm.manager("Rescan")
            rec.wait_for(lambda ss: {s[3][0] for s in ss if s[1] == "InterfacesAdded"} >=
                         set(path.values()))
            rec.close()
            got = as_nobody()
            self.assertEqual(got["sda"], ["org.freedesktop.DBus.Error.AccessDenied", False])
            self.assertEqual(got["sdb"], ["ok", True])

    def test_modes_of_a_disk_added_later(self):
        """A disk that comes after the start (its add event) has its own
        modes read: its root-only size is refused to others, though the
        disk there since the start, with the same file names, has a
        world-readable one."""
        sys_ = self.two_disks()
        sdb = os.path.realpath(os.path.join(sys_, "block", "sdb"))
        links = {rel: os.readlink(os.path.join(sys_, rel))
                 for rel in ("block/sdb", "class/block/sdb", "class/block/sdb1")}
        for rel in links:
            os.unlink(os.path.join(sys_, rel))
        path = {n: bt.path_of("block", n) for n in ("sda", "sdb")}
        with bt.Daemon(sys_, uevent_socket=True, extra_args=["--poll-interval=0"]) as dm:
            time.sleep(1)  # the warm-up is over: it reads the modes of what was there
            os.chmod(os.path.join(sdb, "size"), 0o400)
            for rel, target in links.items():
                os.symlink(target, os.path.join(sys_, rel))
            for dev in (sdb, os.path.join(sdb, "sdb1")):
                dm.send_uevent("add", dev[len(sys_):], {"SUBSYSTEM": "block"})
            self.assertTrue(bt.wait_until(lambda: path["sdb"] in dm.managed_objects()))
            p = subprocess.run(["/usr/bin/python3", "-c", GET_AS_NOBODY, path["sda"], path["sdb"]],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            got = json.loads(p.stdout)
            self.assertEqual(got["sda"], ["ok", True])
            self.assertEqual(got["sdb"], ["org.freedesktop.DBus.Error.AccessDenied", False])


GET_AS_NOBODY = r'''
import dbus, json, os, sys
os.setgroups([]); os.setgid(65534); os.setuid(65534)
b = dbus.bus.BusConnection(os.environ["DBUS_SESSION_BUS_ADDRESS"])
out = {}
for name, path in zip(("sda", "sdb"), sys.argv[1:]):
    o = b.get_object("org.blkmodel1", path, introspect=False)
    props = o.get_dbus_method("GetAll", "org.freedesktop.DBus.Properties")("org.blkmodel1.Disk")
    try:
        o.get_dbus_method("Get", "org.freedesktop.DBus.Properties")("org.blkmodel1.Disk", "size")
        out[name] = ["ok", "size" in props]
    except dbus.DBusException as e:
        out[name] = [e.get_dbus_name(), "size" in props]
print(json.dumps(out))
'''


if __name__ == "__main__":
    bt.main()
