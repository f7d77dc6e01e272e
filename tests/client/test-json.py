# SPDX-License-Identifier: LGPL-2.1-or-later
"""--json: every command prints valid JSON (monitor: one object per line)
whose content matches what the daemon publishes, including names that
need escaping (cciss!c0d0, NULs and non-UTF-8 bytes in PCI `config`)."""
import json
import time
import unittest

import blkmodeltest as bt
import clienttest as ct

DISK = bt.IFACE + "Disk"
KOBJ = bt.IFACE + "Kobject"


def walk(nodes):
    for n in nodes:
        yield n
        yield from walk(n.get("children", []))


class Json(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fixture = bt.make_fixture()
        cls.dm = bt.Daemon(cls.fixture + "/sys", uevent_socket=True)

    @classmethod
    def tearDownClass(cls):
        cls.dm.stop()

    def test_list(self):
        # lsblk's keys and value types (test-lsblk compares them with
        # lsblk's own): sizes as text, as numbers with --bytes.
        cols = "NAME,KNAME,MAJ:MIN,SIZE,RO,TYPE,SCHED,OBJECT"
        devs = ct.run_json("list", "-o", cols)["blockdevices"]
        names = {n["kname"] for n in walk(devs)}
        self.assertIn("cciss/c0d0p1", names)
        sda = [n for n in devs if n["kname"] == "sda"][0]
        self.assertEqual(list(sda), ["name", "kname", "maj:min", "size",
                                     "ro", "type", "sched", "object",
                                     "children"])
        self.assertEqual(sda["maj:min"], "8:0")
        self.assertEqual(sda["size"], "465.8G")
        self.assertIs(sda["ro"], False)
        self.assertEqual(sda["sched"], "mq-deadline")
        self.assertEqual(sda["object"], bt.path_of("block", "sda"))
        sda = [n for n in ct.run_json("list", "--bytes", "-o", cols)[
            "blockdevices"] if n["kname"] == "sda"][0]
        self.assertEqual(sda["size"], 976773168 * 512)
        # -J is --json.
        self.assertEqual(ct.run("list", "-J", check=0).stdout,
                         ct.run("--json", "list", check=0).stdout)

    def test_tree(self):
        whole = ct.run_json("tree")["kobjects"]
        self.assertEqual([k["name"] for k in whole], ["block", "devices"])
        objs = self.dm.managed_objects()
        kobjs = [p for p, o in objs.items() if KOBJ in o]
        self.assertEqual(sorted(k["object"] for k in walk(whole)),
                         sorted(kobjs))
        for k in walk(whole):
            self.assertEqual(k["ktype"], objs[k["object"]][KOBJ]["Ktype"])

        # Below the manager is the whole model.
        self.assertEqual(ct.run_json("tree", bt.ROOT)["kobjects"], whole)

        # The same keys on every node, in one order.
        for k in walk(whole):
            self.assertEqual(list(k), ["name", "object", "ktype", "kset",
                                       "device", "children"], k["object"])
        # The ksets by name.
        self.assertEqual(ct.run_json("tree", "block")["kobjects"],
                         whole[:1])
        self.assertEqual(ct.run_json("tree", "devices")["kobjects"],
                         whole[1:])

        sda = ct.run_json("tree", "sda")["kobjects"]
        self.assertEqual(len(sda), 1)
        self.assertEqual(sda[0]["kset"], "block")
        self.assertTrue(sda[0]["device"].startswith("/devices/pci0000:00/"))
        self.assertEqual(sorted(c["name"] for c in sda[0]["children"]),
                         ["queue", "sda1", "sda2", "sda3"])

    def test_show(self):
        j = ct.run_json("show", "8:0")
        self.assertEqual(j["object"], bt.path_of("block", "sda"))
        self.assertEqual(j["interfaces"][DISK]["Size"], 976773168 * 512)
        self.assertEqual(j["interfaces"][DISK]["size"], "976773168")
        self.assertEqual(j["interfaces"][KOBJ]["Uevent"]["DEVNAME"], "sda")

        # A PCI device's binary `config` file as the daemon publishes it.
        path = bt.path_of("devices", "pci0000:00", "0000:00:1f.2")
        j = ct.run_json("show", path)
        want = self.dm.get(path, bt.IFACE + "Device", "config")
        self.assertEqual(j["interfaces"][bt.IFACE + "Device"]["config"], want)
        self.assertIn("\\x00", want)

    def test_get(self):
        j = ct.run_json("get", "/dev/sda1", "Start")
        self.assertEqual(j, {"object": bt.path_of("block", "sda", "sda1"),
                             "interface": bt.IFACE + "Partition",
                             "property": "Start", "value": 2048 * 512})
        j = ct.run_json("get", "sda", "Partitions")
        self.assertEqual(j["value"], [bt.path_of("block", "sda", "sda%d" % i)
                                      for i in (1, 2, 3)])
        j = ct.run_json("get", "cciss!c0d0", "power/control")
        self.assertEqual(j["interface"], bt.IFACE + "Group.power")
        self.assertEqual(j["value"], "auto")

    def test_set(self):
        p = ct.run("--json", "set", "sda/queue", "nomerges", "1")
        if p.returncode == 0:
            j = json.loads(p.stdout)
            self.assertEqual(j["property"], "nomerges")
            self.assertEqual(j["value"], "1")
        else:
            # The daemon refuses writes: still one line, and no half JSON.
            ct.assert_one_line_failure(self, p)

    def test_dump(self):
        # dump is JSON with and without --json: every managed object, the
        # Manager too, each interface as GetAll has it.
        want = self.dm.all_objects()
        want[bt.MANAGER_PATH] = {bt.MANAGER: self.dm.get_all(
            bt.MANAGER_PATH, bt.MANAGER)}
        for args in (("dump",), ("--json", "dump")):
            p = ct.run(*args, check=0)
            self.assertEqual(json.loads(p.stdout), want)

    def test_events_and_monitor(self):
        last = self.dm.manager_prop("LastSeqnum")
        # --since: the first event is replayed or seen live, whichever
        # way the race with the client's start goes.
        ct.send_change(self.dm)
        with ct.Background("--json", "monitor", "--properties",
                           "--since=%d" % last) as mon:
            mon.wait_lines(lambda ls: len(ls) >= 1)
            ct.send_change(self.dm, "/devices/virtual/block/md0")
            lines = mon.wait_lines(lambda ls: len(ls) >= 2)
            code, err = mon.stop()
        self.assertEqual(code, 0, err)
        evs = [json.loads(ln) for ln in lines]      # one object per line
        self.assertEqual([e["type"] for e in evs], ["event", "event"])
        self.assertEqual([e["seqnum"] for e in evs], [last + 1, last + 2])
        self.assertEqual(evs[0]["env"]["ACTION"], "change")
        self.assertEqual(evs[1]["object"], bt.path_of("block", "md0"))

        # The same record in both, but the time: monitor's is when the
        # signal arrived, GetEvents gives none.
        events = ct.run_json("events")
        # (The first may have been replayed, which has no time.)
        self.assertIsInstance(evs[1]["timestamp"], int)
        for e in evs:
            if e["timestamp"] is not None:
                self.assertLess(abs(e["timestamp"] / 1e6 - time.time()), 600)
            e["timestamp"] = None
        self.assertEqual(evs, events[-2:])
        for e in events:
            self.assertEqual(list(e), ["type", "seqnum", "timestamp",
                                       "action", "devpath", "object", "env"])
        after = ct.run_json("events", "--since", str(evs[0]["seqnum"]))
        self.assertEqual(after, events[-1:])
        # A seqnum the daemon has not reached: nothing.
        self.assertEqual(ct.run_json("events", "--since=%d" % self.dm.seq(99999)), [])

    def test_wait(self):
        j = ct.run_json("wait", "nvme0n1p2", "--timeout=5")
        self.assertEqual(j, {"spec": "nvme0n1p2", "present": True,
                             "object": bt.path_of("block", "nvme0n1",
                                                  "nvme0n1p2")})
        j = ct.run_json("wait", "--removed", "nosuchdisk", "--timeout=5")
        self.assertEqual(j["present"], False)

    def test_trigger(self):
        # On a fixture of its own: the daemon writes "change" to the
        # uevent file, which a fixture keeps (a kernel would not).
        d = bt.make_fixture()
        self.dm.stop()
        try:
            with bt.Daemon(d + "/sys"):
                p = ct.run("--json", "trigger", "--action=change", "sda")
                if p.returncode == 0:
                    self.assertEqual(json.loads(p.stdout), {
                        "action": "change",
                        "objects": [bt.path_of("block", "sda")],
                        "settled": False})
                else:
                    ct.assert_one_line_failure(self, p)
        finally:
            type(self).dm = bt.Daemon(self.fixture + "/sys",
                                      uevent_socket=True)


if __name__ == "__main__":
    bt.main()
