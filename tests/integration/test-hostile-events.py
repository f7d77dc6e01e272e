# SPDX-License-Identifier: LGPL-2.1-or-later
"""Uevents no kernel sends, sent by root (issue 13): for the block and the
devices kset, /class, /devices/virtual, a queue, a scheduler, hardware,
paths that exist but are no block device, moves whose DEVPATH_OLD is a
kset, synthetic removes of block devices that are still there.  None may
crash the daemon, change the published model or leak (CI runs the daemon
under ASan; Daemon.stop() fails on a sanitizer report), and each one still
goes out as a Uevent signal.  A Rescan then has nothing to do, and the
model is what a freshly started daemon publishes for the same tree."""
import os
import unittest

import blkmodeltest as bt

SDA = bt.SDA_DEV + "/block/sda"
LOOP0 = "/devices/virtual/block/loop0"
AHCI = "/devices/pci0000:00/0000:00:1f.2"

# (action, devpath, extra environment); every one with SUBSYSTEM=block.
HOSTILE = [
    # The ksets, and what is above or beside them.
    ("remove", "/block", {}),
    ("remove", "/devices", {}),
    ("change", "/block", {}),
    ("add", "/class", {}),
    ("add", "/devices/virtual", {}),
    ("online", "/block", {}),
    ("offline", "/devices", {}),
    # Kobjects that follow their disk: a queue, a scheduler.
    ("remove", LOOP0 + "/queue", {}),
    ("add", SDA + "/queue/iosched", {}),
    ("remove", SDA + "/queue/iosched", {}),
    ("unbind", SDA + "/queue", {}),
    # Hardware: Device objects.
    ("remove", bt.SDA_DEV, {}),
    ("remove", AHCI, {}),
    ("add", "/devices/pci0000:00", {}),
    ("bind", bt.SR0_DEV, {}),
    # Moves with a kset, or hardware, as the old devpath.
    ("move", LOOP0, {"DEVPATH_OLD": "/block"}),
    ("move", "/block", {"DEVPATH_OLD": "/devices"}),
    ("move", SDA + "/sda1", {"DEVPATH_OLD": "/devices"}),
    ("move", LOOP0, {"DEVPATH_OLD": bt.SDA_DEV}),
    # There, but no block device: a bdi, a class device, groups, mq/, holders/.
    ("add", "/devices/virtual/bdi/8:0", {}),
    ("change", bt.SDA_DEV + "/scsi_disk/0:0:0:0", {}),
    ("add", SDA + "/power", {}),
    ("remove", SDA + "/trace", {}),
    ("add", SDA + "/mq/0", {}),
    ("remove", SDA + "/holders", {}),
    ("add", LOOP0 + "/loop", {}),
    # Synthetic removes (udevadm trigger --action=remove; the kernel marks
    # them SYNTH_UUID): directory and class/block link still there, so the
    # devices stay.
    ("remove", SDA, {"SYNTH_UUID": "0"}),
    ("remove", SDA + "/sda1", {"SYNTH_UUID": "0"}),
    ("remove", LOOP0, {"SYNTH_UUID": "2f7a8c3e-1111-4a5b-9c0d-0123456789ab"}),
    ("move", LOOP0, {"DEVPATH_OLD": SDA}),
]


def uevents(rec):
    return [s[3] for s in rec.signals if s[1] == "Uevent"]


def model_signals(rec):
    """Signals that say the model changed (the Manager's own aside)."""
    return [s for s in rec.signals
            if s[1] != "Uevent" and s[2] != bt.MANAGER_PATH]


class HostileEvents(unittest.TestCase):
    def setUp(self):
        self.sys = os.path.join(bt.make_fixture(), "sys")
        self.dm = bt.Daemon(self.sys, uevent_socket=True)
        self.rec = bt.SignalRecorder()

    def tearDown(self):
        self.rec.close()
        if self.dm:
            self.dm.stop()

    def send(self, action, devpath, env):
        e = {"SUBSYSTEM": "block"}
        e.update(env)
        self.dm.send_uevent(action, devpath, e)

    def rescan_then_fresh(self):
        """Rescan, then the model must be what a new daemon publishes."""
        self.dm.manager("Rescan")
        now = self.dm.all_objects()
        self.dm.stop()
        self.dm = None
        fresh = bt.fresh_model(self.sys)
        self.assertEqual(bt.model_diff(now, fresh), "")

    def test_hostile_events_change_nothing(self):
        before = self.dm.all_objects()
        last = self.dm.manager_prop("LastSeqnum")
        for action, devpath, env in HOSTILE:
            self.send(action, devpath, env)
        self.rec.wait_for(lambda s: len(uevents(self.rec)) >= len(HOSTILE))
        self.rec.pump(0.2)

        # Each one went out, in order, numbered without gaps.
        ev = uevents(self.rec)
        self.assertEqual([(e[1], e[2]) for e in ev],
                         [(a, d) for a, d, _ in HOSTILE])
        self.assertEqual([e[0] for e in ev],
                         list(range(last + 1, last + 1 + len(HOSTILE))))
        # A synthetic remove names the object, which stays.
        by_devpath = {(e[1], e[2]): e[3] for e in ev}
        self.assertEqual(by_devpath[("remove", SDA)],
                         bt.path_of("block", "sda"))
        self.assertEqual(by_devpath[("remove", LOOP0)],
                         bt.path_of("block", "loop0"))

        # Nothing changed, and nothing said it did.
        self.assertEqual(model_signals(self.rec), [])
        self.assertEqual(bt.model_diff(self.dm.all_objects(), before), "")

        # In line with sysfs all along: a rescan finds nothing.
        self.rec.signals.clear()
        self.dm.manager("Rescan")
        self.rec.pump(0.2)
        self.assertEqual(model_signals(self.rec), [])
        self.assertEqual(uevents(self.rec), [])
        self.rescan_then_fresh()

    def test_unknown_action_is_logged(self):
        """A newer kernel's action: no Uevent (nothing to mirror), but a log
        line at the default level saying so."""
        self.send("frobnicate", LOOP0, {})
        self.send("change", LOOP0, {})
        self.rec.wait_for(lambda s: uevents(self.rec))
        self.rec.pump(0.1)
        self.assertEqual([e[1] for e in uevents(self.rec)], ["change"])
        self.assertRegex(self.dm.output(),
                         r"<4>uevent source \S+: dropped datagram: action "
                         r"'frobnicate' unknown to this daemon")

    def test_move_onto_itself(self):
        """A move whose DEVPATH_OLD is its own DEVPATH, for a disk class/block
        no longer lists: the disk goes (it used to be read after it was
        freed), and the event names it.  Without the poll, whose list of
        objects would keep the disk alive a little longer."""
        self.dm.stop()
        self.dm = bt.Daemon(self.sys, uevent_socket=True,
                            extra_args=["--poll-interval=0"])
        os.unlink(os.path.join(self.sys, "class/block/loop0"))
        self.send("move", LOOP0, {"DEVPATH_OLD": LOOP0})
        self.rec.wait_for(lambda s: uevents(self.rec))
        self.assertEqual(uevents(self.rec)[0][3], bt.path_of("block", "loop0"))
        removed = [s[3][0] for s in self.rec.of("InterfacesRemoved")]
        self.assertIn(bt.path_of("block", "loop0"), removed)
        self.assertNotIn(bt.path_of("block", "loop0"),
                         self.dm.managed_objects())
        self.rescan_then_fresh()

    def test_device_link_into_another_disk(self):
        """A disk's `device` link into another block device's directory:
        no hardware, and the other device stays a block device, now and
        after any number of rescans."""
        cciss = os.path.join(
            self.sys, "devices/pci0000:00/0000:00:03.0/cciss0/c0d0/block/"
            "cciss!c0d0")
        os.unlink(os.path.join(cciss, "device"))
        os.symlink("../../../../../0000:00:1d.0/0000:3d:00.0/nvme/nvme0/"
                   "nvme0n1", os.path.join(cciss, "device"))
        self.assertTrue(os.path.isfile(os.path.join(cciss, "device", "dev")))
        self.dm.manager("Rescan")
        self.rec.pump(0.2)
        self.rec.signals.clear()
        self.dm.manager("Rescan")
        self.rec.pump(0.2)
        self.assertEqual(model_signals(self.rec), [])
        self.assertEqual(
            self.dm.get(bt.path_of("block", "nvme0n1"), bt.KOBJ, "Ktype"),
            "disk")
        self.rescan_then_fresh()


if __name__ == "__main__":
    bt.main()
