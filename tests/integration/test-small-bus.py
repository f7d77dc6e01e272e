# SPDX-License-Identifier: LGPL-2.1-or-later
"""A bus configured to take smaller messages than its default (32 KiB
here): told so with --max-message-size, the daemon refuses a
GetManagedObjects that would not fit with LimitsExceeded rather than send
it and be dropped off the bus; the parts fit, and blkmodelctl reads the
model in them by itself."""
import json
import os
import re
import unittest

import blkmodeltest as bt
import mksysfs

LIMITS = "org.freedesktop.DBus.Error.LimitsExceeded"
# --max-message-size less what the daemon keeps for the reply's header.
HEADER_ROOM = 1024


def big_group(objdir):
    """The group big/ in an object's directory: 700 files of 100 bytes, a
    GetAll of 80 KiB and an Introspect of 40 KiB."""
    os.mkdir(os.path.join(objdir, "big"))
    for i in range(700):
        with open(os.path.join(objdir, "big", "f%03d" % i), "w") as f:
            f.write("%s\n" % ("v" * 100))


class SmallBus(unittest.TestCase):
    def test_refused_then_read_in_parts(self):
        sys_ = os.path.join(bt.make_fixture(), "sys")
        with bt.Daemon(sys_, extra_args=["--max-message-size=32768"]) as dm:
            with self.assertRaises(bt.dbus.DBusException) as cm:
                dm.managed_objects()
            self.assertEqual(cm.exception.get_dbus_name(), LIMITS)
            self.assertIn(bt.path_of("block"), str(cm.exception))
            # In the limit's unit, the size above the limit (once both were "0 MiB").
            m = re.search(r"about (\d+) KiB, more than one message may carry \((\d+) KiB\)",
                          str(cm.exception))
            self.assertIsNotNone(m, str(cm.exception))
            self.assertEqual(int(m.group(2)), (32768 - HEADER_ROOM) // 1024)
            self.assertGreater(int(m.group(1)), int(m.group(2)))
            # Still on the bus, and every part answers or says where to ask.
            self.assertGreater(dm.manager_prop("ObjectCount"), 0)
            # An ObjectManager answers for what is below it: a part's own root
            # is read with GetAll, as a client reading in parts does.
            got = {}
            todo = [bt.path_of("block"), bt.path_of("devices")]
            while todo:
                path = todo.pop()
                try:
                    got.update(dm.call(path, bt.OM, "GetManagedObjects"))
                except bt.dbus.DBusException as e:
                    self.assertEqual(e.get_dbus_name(), LIMITS)
                    for n in self.children(dm, path):
                        child = path + "/" + n
                        got[child] = {bt.KOBJ: dm.get_all(child, bt.KOBJ)}
                        todo.append(child)
            disks = [p for p, i in got.items()
                     if i.get(bt.KOBJ, {}).get("Ktype") == "disk"]
            self.assertIn(bt.path_of("block", "sda"), disks)
            self.assertIn(bt.path_of("block", "sda", "sda1"), got)
            p = bt.ctl("list", "-a", "-o", "KNAME", check=0)
            for name in ("sda", "sda1", "nvme0n1", "sr0", "md0"):
                self.assertIn(name, p.stdout.split())
            dm.manager("Rescan")

    def test_a_reply_that_fits_is_sent(self):
        """With a limit 64 bytes above a reply's size, the reply is sent whole;
        with one a byte short of it, refused, and the daemon stays on the bus."""
        sys_ = os.path.join(bt.make_fixture(), "sys")
        sda = bt.path_of("block", "sda")
        with bt.Daemon(sys_) as dm:
            size = bt.reply_body_size(sda)
        with bt.Daemon(sys_, extra_args=["--max-message-size=%d" % (size + 64 + HEADER_ROOM)]) as dm:
            self.assertIn(sda + "/sda1", dm.call(sda, bt.OM, "GetManagedObjects"))
        with bt.Daemon(sys_, extra_args=["--max-message-size=%d" % (size - 1 + HEADER_ROOM)]) as dm:
            with self.assertRaises(bt.dbus.DBusException) as cm:
                dm.call(sda, bt.OM, "GetManagedObjects")
            self.assertEqual(cm.exception.get_dbus_name(), LIMITS)
            self.assertGreater(dm.manager_prop("ObjectCount"), 0)

    def test_events_come_in_pages_that_fit(self):
        """GetEvents holds as many events as this bus's messages take, not
        as many as the default system bus's: with more than one message's
        worth retained, the reply is a page, the daemon stays on the bus,
        and paging gets every event once."""
        sys_ = os.path.join(bt.make_fixture(), "sys")
        queue = [r for r, _, _ in os.walk(os.path.join(sys_, "devices"))
                 if r.endswith("/block/sda/queue")][0][len(sys_):]
        n = 300
        with bt.Daemon(sys_, uevent_socket=True,
                       extra_args=["--max-message-size=32768"]) as dm:
            # A queue's events are logged and signalled, not applied; 300 of
            # about 300 bytes are three times what one message may carry.
            for i in range(n):
                dm.send_uevent("change", queue, {"SUBSYSTEM": "block",
                                                 "SEQNUM": str(i + 1),
                                                 "PAD": "x" * 180})
            dm.call(bt.MANAGER_PATH, bt.MANAGER, "Settle")
            self.assertEqual(dm.manager_prop("LastSeqnum"), dm.seq(n))
            got, after, pages = [], 0, 0
            while after < dm.seq(n):
                page = dm.call(bt.MANAGER_PATH, bt.MANAGER, "GetEvents",
                               bt.dbus.UInt64(after))
                self.assertGreater(len(page), 0)
                pages += 1
                got += [int(e[0]) for e in page]
                after = int(page[-1][0])
            self.assertEqual(got, list(range(dm.seq(1), dm.seq(n) + 1)))
            self.assertGreater(pages, 2)
            self.assertEqual(dm.proc.poll(), None, dm.output())

    def test_other_replies_that_would_not_fit_are_refused(self):
        """Not only GetManagedObjects: a GetAll, an Introspect or a kset's
        Members (a Get; in a GetAll) past the bus's limit are refused with
        LimitsExceeded (the bus dropped the daemon for each, and it exited),
        and what fits is still answered."""
        # 4,900 members, past the 4,096 above which Members is appended in slices
        # (MEMBERS_AT_ONCE, daemon/bus/members-reply.c).  Partitions are cheap where disks are not:
        # 700 x 6 takes a third less to make and remove, and to scan, than 1,400 x 2 (4,200).
        sys_ = os.path.join(bt.make_fixture(disks=700, partitions=6), "sys")
        sda = [r for r, _, _ in os.walk(os.path.join(sys_, "devices"))
               if r.endswith("/block/sda")][0]
        big_group(sda)
        disk, group = bt.path_of("block", "sda"), bt.IFACE + "Group.big"
        with bt.Daemon(sys_, extra_args=["--max-message-size=32768"]) as dm:
            for call in (lambda: dm.get_all(disk, group),
                         lambda: dm.introspect(disk),
                         lambda: dm.get(bt.path_of("block"), bt.IFACE + "Kset",
                                        "Members"),
                         lambda: dm.get_all(bt.path_of("block"), bt.IFACE + "Kset"),
                         lambda: dm.get(bt.path_of("devices"), bt.IFACE + "Kset",
                                        "Members")):
                with self.assertRaises(bt.dbus.DBusException) as cm:
                    call()
                self.assertEqual(cm.exception.get_dbus_name(), LIMITS)
                self.assertIn("more than one message may carry (31 KiB)",
                              str(cm.exception))
            self.assertEqual(dm.get(disk, group, "f007"), "v" * 100)
            self.assertEqual(dm.proc.poll(), None, dm.output())
            self.assertGreater(dm.manager_prop("ObjectCount"), 0)

    def test_signals_that_would_not_fit_are_not_sent(self):
        """A signal past the limit is not sent (the bus dropped the daemon for
        it): SignalsDropped tells subscribers to resync, naming the Uevent if
        it was one, and GetEvents refuses that event rather than send it."""
        sys_ = os.path.join(bt.make_fixture(), "sys")
        # 16 KiB: below the bus's own 32, so that a Uevent can pass it.
        with bt.Daemon(sys_, uevent_socket=True,
                       extra_args=["--max-message-size=16384"]) as dm:
            b = mksysfs.Builder(mksysfs.Tree(sys_))
            rel = b.disk("devices/virtual/block/loop9", "loop9", (7, 144), 131072,
                         49, "[none] mq-deadline", None, diskseq=49)
            big_group(os.path.join(sys_, rel))
            rec = bt.SignalRecorder()
            dm.send_uevent("add", "/" + rel, {"SUBSYSTEM": "block", "DEVTYPE": "disk"})
            # 4,000 bytes that are not UTF-8, each escaped as \xff: 16,000.
            dm.send_uevent("change", "/" + rel, raw=b"change@/" + rel.encode() +
                           b"\0ACTION=change\0DEVPATH=/" + rel.encode() +
                           b"\0SUBSYSTEM=block\0BIG=" + b"\xff" * 4000 + b"\0")
            dm.call(bt.MANAGER_PATH, bt.MANAGER, "Settle")
            got = rec.wait_for(lambda ss: len(rec.of("SignalsDropped")) >= 2)
            self.assertEqual([x[3] for x in rec.of("SignalsDropped")],
                             [[1, 0, 0], [1, dm.seq(2), dm.seq(2)]])
            self.assertEqual([x[3][1] for x in rec.of("Uevent")], ["add"])
            # The disk's is not sent; its queue's fits.
            self.assertEqual(sorted(x[3][0] for x in rec.of("InterfacesAdded")),
                             [bt.path_of("block", "loop9", "queue")], got)
            with self.assertRaises(bt.dbus.DBusException) as cm:
                dm.call(bt.MANAGER_PATH, bt.MANAGER, "GetEvents", bt.dbus.UInt64(dm.seq(1)))
            self.assertEqual(cm.exception.get_dbus_name(), LIMITS)
            self.assertIn("Event %d of /%s" % (dm.seq(2), rel), str(cm.exception))
            self.assertEqual(len(dm.call(bt.MANAGER_PATH, bt.MANAGER, "GetEvents",
                                         bt.dbus.UInt64(0))), 1)
            # blkmodelctl steps over it, saying so, and goes on.
            dm.send_uevent("change", "/" + rel, {"SUBSYSTEM": "block", "DEVTYPE": "disk"})
            dm.call(bt.MANAGER_PATH, bt.MANAGER, "Settle")
            p = bt.ctl("--json", "events", check=0)
            self.assertEqual([e["seqnum"] for e in json.loads(p.stdout)], [dm.seq(1), dm.seq(3)],
                             p.stdout)
            self.assertRegex(p.stderr, r"^blkmodelctl: warning: event %d is skipped, too large for "
                             r"this bus: Event %d of /%s is about \d+ KiB"
                             % (dm.seq(2), dm.seq(2), re.escape(rel)))
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            self.assertEqual(dm.get(bt.path_of("block", "loop9"),
                                    bt.IFACE + "Group.big", "f001"), "v" * 100)
            self.assertEqual(dm.proc.poll(), None, dm.output())
            rec.close()

    def test_a_signal_that_fits_is_sent(self):
        """A PropertiesChanged within the limit goes out: its bound counts
        each property's name once (it was counted twice, and a signal of
        250 changed properties, 30 KiB on the wire, was dropped as 33 KiB
        with SignalsDropped, sending subscribers to resync for nothing)."""
        sys_ = os.path.join(bt.make_fixture(), "sys")
        sda = [r for r, _, _ in os.walk(os.path.join(sys_, "devices"))
               if r.endswith("/block/sda")][0]
        os.mkdir(os.path.join(sda, "big"))
        files = [os.path.join(sda, "big", "f%03d" % i) for i in range(250)]
        for f in files:
            with open(f, "w") as fh:
                fh.write("%s\n" % ("0" * 100))
        disk, group = bt.path_of("block", "sda"), bt.IFACE + "Group.big"
        with bt.Daemon(sys_, uevent_socket=True,
                       extra_args=["--max-message-size=32768"]) as dm:
            self.assertEqual(len(dm.get_all(disk, group)), 250)
            rec = bt.SignalRecorder()
            self.addCleanup(rec.close)
            for f in files:
                with open(f + ".new", "w") as fh:
                    fh.write("%s\n" % ("1" * 100))
                os.rename(f + ".new", f)
            # A change with a key a plain one has not: the whole disk is read.
            dm.send_uevent("change", sda[len(sys_):],
                           {"SUBSYSTEM": "block", "DEVTYPE": "disk", "FOO": "1"})
            dm.call(bt.MANAGER_PATH, bt.MANAGER, "Settle")
            got = rec.wait_for(lambda ss: any(s[1] == "Uevent" for s in ss))
            rec.pump(0.2)
            self.assertEqual(rec.of("SignalsDropped"), [], got)
            changed = [s for s in rec.of("PropertiesChanged")
                       if s[2] == disk and s[3][0] == group]
            self.assertEqual(len(changed), 1, got)
            self.assertEqual(len(changed[0][3][1]), 250)
            self.assertEqual(dm.proc.poll(), None, dm.output())

    @staticmethod
    def children(dm, path):
        import xml.etree.ElementTree as ET
        return [n.get("name") for n in
                ET.fromstring(dm.introspect(path)).findall("node")]


if __name__ == "__main__":
    bt.main()
