# SPDX-License-Identifier: LGPL-2.1-or-later
"""The installed integration files against the running daemon (SPEC §8).

* Every member of each dbus/org.blkmodel1.*.xml (methods, signals,
  properties: name, type, access, args with direction, annotations) appears
  identically in what the running blkmodeld introspects for that interface,
  and the daemon has nothing there beyond it but the raw attribute
  properties (type "s", one per attribute file of the object's directory).
* dbus/org.blkmodel1.conf is well-formed and does what it says on a
  system-type dbus-daemon that includes it: root owns the name, anyone
  reads and calls the listed methods, everything else is rejected by the
  bus; dbus/org.blkmodel1.service is accepted as a system activation file.
* The systemd units pass `systemd-analyze verify`.
"""
import glob
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

import blkmodeltest as bt

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DBUS_DIR = os.path.join(SRC, "dbus")
SYSTEMD_DIR = os.path.join(SRC, "systemd")

ANN_EMITS = "org.freedesktop.DBus.Property.EmitsChangedSignal"
KIND_IFACES = ("Disk", "Partition", "Queue", "Elevator", "Device", "Kset")
# The interfaces a fixed XML file describes, and the object the test asks.
IFACES = ("Manager", "Kobject", "Kset", "Disk", "Partition", "Queue",
          "Elevator", "Device")
NOBODY = 65534
# What busctl introspect prints in a property's flags column.
FLAG_WORDS = ("const", "emits-change", "emits-invalidation", "writable", "deprecated")


def log(msg):
    sys.stderr.write(msg + "\n")


# ---- introspection data as comparable values ----------------------------

def _annotations(el):
    return {a.get("name"): a.get("value") for a in el.findall("annotation")}


def _args(el, default_direction):
    return [(a.get("name"), a.get("type"),
             a.get("direction", default_direction))
            for a in el.findall("arg")]


def interface_members(iface_el):
    """{(kind, name): description} of one <interface> element."""
    out = {}
    for m in iface_el.findall("method"):
        out[("method", m.get("name"))] = {
            "args": _args(m, "in"), "annotations": _annotations(m)}
    for s in iface_el.findall("signal"):
        out[("signal", s.get("name"))] = {
            "args": _args(s, "out"), "annotations": _annotations(s)}
    for p in iface_el.findall("property"):
        ann = _annotations(p)
        # EmitsChangedSignal defaults to "true": absent and "true" are one.
        ann.setdefault(ANN_EMITS, "true")
        out[("property", p.get("name"))] = {
            "type": p.get("type"), "access": p.get("access"),
            "annotations": ann}
    return out


def parse_interfaces(xml_text):
    root = ET.fromstring(xml_text)
    if root.tag != "node":
        raise AssertionError("top element is <%s>, not <node>" % root.tag)
    return {i.get("name"): i for i in root.findall("interface")}


def member_name(file_name):
    """The D-Bus member name of an attribute file (doc/model.md)."""
    n = re.sub(r"[^A-Za-z0-9_]", "_", file_name)
    return "_" + n if n[:1].isdigit() else n


def raw_members(sysfs_root, devpath):
    """Members the raw attributes of an object's directory may publish."""
    d = os.path.join(sysfs_root, devpath.lstrip("/"))
    names = set()
    for e in os.listdir(d):
        st = os.lstat(os.path.join(d, e))
        if stat.S_ISREG(st.st_mode) and e != "uevent":
            names.add(member_name(e))
    return names


class Introspection(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fixture = bt.make_fixture()
        cls.sysfs = cls.fixture + "/sys"
        cls.daemon = bt.Daemon(cls.sysfs)
        dm = cls.daemon
        disk = bt.path_of("block", "sda")
        # GetAll, not Get: one call that returns the typed properties too.
        device = dm.get_all(disk, bt.IFACE + "Disk")["Device"]
        if device == "/":
            raise AssertionError("sda has no Device object in the fixture")
        cls.objects = {
            "Manager": bt.MANAGER_PATH,
            "Kobject": bt.path_of("block"),
            "Kset": bt.path_of("block"),
            "Disk": disk,
            "Partition": bt.path_of("block", "sda", "sda1"),
            "Queue": bt.path_of("block", "sda", "queue"),
            "Elevator": bt.path_of("block", "sda", "queue", "iosched"),
            "Device": device,
        }
        # Kobject is on every object but the Manager: check it on each kind.
        cls.kobject_objects = sorted(set(cls.objects.values()) -
                                     {bt.MANAGER_PATH})

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def xml_file(self, name):
        return os.path.join(DBUS_DIR, "org.blkmodel1.%s.xml" % name)

    def fixed_interface(self, name):
        """The one <interface> of dbus/org.blkmodel1.NAME.xml."""
        with open(self.xml_file(name)) as f:
            ifaces = parse_interfaces(f.read())
        self.assertEqual(list(ifaces), [bt.IFACE + name],
                         "%s must describe exactly its own interface"
                         % self.xml_file(name))
        return ifaces[bt.IFACE + name]

    def test_every_interface_has_a_file(self):
        files = sorted(os.path.basename(p) for p in
                       glob.glob(os.path.join(DBUS_DIR, "*.xml")))
        self.assertEqual(files, sorted("org.blkmodel1.%s.xml" % i
                                       for i in IFACES))

    def check_object(self, name, path):
        iface_name = bt.IFACE + name
        fixed = self.fixed_interface(name)
        want = interface_members(fixed)
        xml = self.daemon.introspect(path)
        live_ifaces = parse_interfaces(xml)
        self.assertIn(iface_name, live_ifaces,
                      "%s does not have %s:\n%s" % (path, iface_name, xml))
        live_el = live_ifaces[iface_name]
        live = interface_members(live_el)
        self.assertEqual(_annotations(live_el), _annotations(fixed),
                         "%s on %s: interface annotations" % (iface_name, path))
        for key, desc in sorted(want.items()):
            with self.subTest(object=path, interface=name, member=key):
                self.assertIn(key, live, "%s %s.%s missing on %s"
                              % (key[0], iface_name, key[1], path))
                self.assertEqual(live[key], desc,
                                 "%s %s.%s on %s differs from %s"
                                 % (key[0], iface_name, key[1], path,
                                    self.xml_file(name)))
        # Whatever the daemon has beyond the file must be raw attributes.
        extra = sorted(set(live) - set(want))
        if name in KIND_IFACES:
            devpath = self.daemon.get_all(path, bt.IFACE + "Kobject")[
                "DevPath"]
            allowed = raw_members(self.sysfs, devpath)
        else:
            allowed = set()
        for key in extra:
            with self.subTest(object=path, interface=name, extra=key):
                self.assertEqual(key[0], "property",
                                 "%s %s.%s on %s is not in %s"
                                 % (key[0], iface_name, key[1], path,
                                    self.xml_file(name)))
                self.assertIn(key[1], allowed,
                              "property %s.%s on %s is neither in %s nor an "
                              "attribute file of the object"
                              % (iface_name, key[1], path, self.xml_file(name)))
                self.assertEqual(live[key]["type"], "s")
        return live

    def test_manager(self):
        self.check_object("Manager", self.objects["Manager"])

    def test_kobject(self):
        for path in self.kobject_objects:
            self.check_object("Kobject", path)

    def test_kset(self):
        self.check_object("Kset", self.objects["Kset"])
        self.check_object("Kset", bt.path_of("devices"))

    def test_disk(self):
        live = self.check_object("Disk", self.objects["Disk"])
        # The raw attributes are there too (the comment in the file says so).
        self.assertIn(("property", "size"), live)

    def test_partition(self):
        self.check_object("Partition", self.objects["Partition"])

    def test_queue(self):
        live = self.check_object("Queue", self.objects["Queue"])
        self.assertIn(("property", "scheduler"), live)
        self.assertEqual(live[("property", "Scheduler")]["access"], "readwrite")
        # md0's queue is bio-based: no scheduler file, nothing to choose.
        md_queue = parse_interfaces(self.daemon.introspect(bt.path_of("block", "md0", "queue")))
        scheduler = interface_members(md_queue[bt.IFACE + "Queue"])[("property", "Scheduler")]
        self.assertEqual(scheduler["access"], "read")

    def test_elevator(self):
        self.check_object("Elevator", self.objects["Elevator"])

    def test_device(self):
        self.check_object("Device", self.objects["Device"])

    def test_real_clients_read_it(self):
        """The XML comes without a DOCTYPE or whitespace (daemon/bus/introspect.c):
        busctl and GLib read from it what the annotations say, and busctl tree
        finds every object."""
        addr = os.environ["DBUS_SESSION_BUS_ADDRESS"]
        disk = self.objects["Disk"]
        out = subprocess.run(["busctl", "--address=" + addr, "introspect",
                              "--no-legend", bt.BUS_NAME, disk],
                             capture_output=True, text=True, check=True).stdout
        flags = {}
        for line in out.splitlines():
            words = line.split()
            if line.startswith(".") and words[1] == "property":
                # The flags are the last column; the value before them may hold spaces.
                n = len(words)
                while words[n - 1] in FLAG_WORDS:
                    n -= 1
                flags[words[0][1:]] = words[n:]
        self.assertIn("const", flags["Name"])
        self.assertIn("emits-change", flags["size"])
        self.assertEqual(flags["stat"], [])  # EmitsChangedSignal false
        self.assertIn("Peer", out)

        xml = self.daemon.introspect(disk)
        self.assertFalse(xml.startswith("<!DOCTYPE"))
        node = bt.Gio.DBusNodeInfo.new_for_xml(xml)
        stat_prop = node.lookup_interface(bt.IFACE + "Disk").lookup_property("stat")
        self.assertEqual([(a.key, a.value) for a in stat_prop.annotations],
                         [(ANN_EMITS, "false")])
        self.assertIsNotNone(node.lookup_interface("org.freedesktop.DBus.Properties"))
        typed = self.daemon.get_all(disk, bt.IFACE + "Disk")
        self.assertEqual(sorted(n.path for n in node.nodes),
                         sorted([os.path.basename(typed["Queue"])] +
                                [os.path.basename(p) for p in typed["Partitions"]]))

        tree = subprocess.run(["busctl", "--address=" + addr, "tree", "--list",
                               bt.BUS_NAME], capture_output=True, text=True,
                              check=True).stdout.split()
        want = set(self.daemon.managed_objects(with_manager=True))
        self.assertEqual(want - set(tree), set())


# ---- the bus policy and the activation file ---------------------------------

# The default policy of Debian's /usr/share/dbus-1/system.conf, so that the
# included file is judged the way the real system bus judges it.
SYSTEM_LIKE_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <servicedir>{servicedir}</servicedir>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus" />
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Properties"/>
    <deny send_destination="org.freedesktop.DBus"
          send_interface="org.freedesktop.DBus"
          send_member="UpdateActivationEnvironment"/>
  </policy>
  <include>{policy}</include>
</busconfig>
"""

REJECTED = "Rejected send message"

# A one-call D-Bus client, run as another uid: prints the reply as JSON, or
# "error.Name: message" and exits 1.
CALLER = r"""
import json, sys
import dbus
addr, dest, path, iface, method, sig, args = sys.argv[1:]
conn = dbus.bus.BusConnection(addr)
try:
    r = conn.call_blocking(dest, path, iface, method, sig or None,
                           json.loads(args), timeout=60)
except dbus.exceptions.DBusException as e:
    print("%s: %s" % (e.get_dbus_name(), e.get_dbus_message()))
    sys.exit(1)
def plain(v):
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dbus.Boolean):
        return bool(v)
    if isinstance(v, (int, float)):
        return v
    return str(v)
print(json.dumps(plain(r)))
"""


def manager_methods():
    """The methods of org.blkmodel1.Manager, from its introspection XML."""
    root = ET.parse(os.path.join(DBUS_DIR, bt.IFACE + "Manager.xml")).getroot()
    return [m.get("name") for i in root.iter("interface")
            for m in i.findall("method")]


class ShapesGone(unittest.TestCase):
    def test_xml_of_shapes_no_object_has_goes(self):
        """Each Introspect of a directory shape never seen before caches its
        XML; a long life of directories that change (files that come and go)
        must not keep each one's to the exit (12 KB a shape, before): once
        the cache has doubled, the XML of shapes no object has goes."""
        sys_ = bt.make_fixture() + "/sys"
        sda = os.path.join(sys_, bt.SDA_DEV.lstrip("/"), "block", "sda")
        with bt.Daemon(sys_, uevent_socket=True,
                       extra_args=["--log-level=debug"]) as dm:
            disk = bt.path_of("block", "sda")
            # The kset has no directory shape: its XML, cached first, is no shape's to sweep (a
            # sweep read its shape's count through NULL: busctl tree of 1,000 disks killed the daemon).
            self.assertIn(bt.IFACE + "Kset", dm.introspect(bt.path_of("block")))
            for i in range(150):
                name = "blkmodel_shape_%d" % i
                with open(os.path.join(sda, name), "w") as f:
                    f.write("%d\n" % i)
                dm.send_uevent("change", bt.SDA_DEV + "/block/sda",
                               {"SUBSYSTEM": "block", "DEVTYPE": "disk"})
                dm.manager("Settle")
                self.assertIn(name, dm.introspect(disk))
                os.unlink(os.path.join(sda, name))
            self.assertIn(bt.IFACE + "Kset", dm.introspect(bt.path_of("block")))
            sweeps = [(int(d), int(k)) for d, k in re.findall(
                r"Dropped the introspection XML of (\d+) shapes no object "
                r"has, kept (\d+)", dm.output())]
        self.assertTrue(sweeps, "the cache was never swept")
        self.assertGreaterEqual(sum(d for d, _ in sweeps), 100, sweeps)
        self.assertLessEqual(max(k for _, k in sweeps), 4, sweeps)


class BusPolicy(unittest.TestCase):
    conf = os.path.join(DBUS_DIR, "org.blkmodel1.conf")

    def test_conf_is_well_formed(self):
        root = ET.parse(self.conf).getroot()
        self.assertEqual(root.tag, "busconfig")
        policies = root.findall("policy")
        by_ctx = {(p.get("user"), p.get("context")): p for p in policies}
        self.assertEqual(set(by_ctx), {("root", None), (None, "default")})
        owners = [(p.get("user") or p.get("context"), a.get("own"))
                  for p in policies for a in p if a.get("own")]
        self.assertEqual(owners, [("root", bt.BUS_NAME)],
                         "only root may own " + bt.BUS_NAME)
        default = by_ctx[(None, "default")]
        first = default[0]
        self.assertEqual((first.tag, first.attrib),
                         ("deny", {"send_destination": bt.BUS_NAME}),
                         "the default policy must start by denying sends")
        allowed = {(a.get("send_interface"), a.get("send_member"))
                   for a in default.findall("allow")
                   if a.get("send_destination") == bt.BUS_NAME}
        # Every method of the Manager passes the bus (the privileged ones
        # are refused by blkmodeld itself, with a reason): a method added
        # to the interface and forgotten here would be rejected silently.
        self.assertEqual(allowed, {
            ("org.freedesktop.DBus.Introspectable", None),
            ("org.freedesktop.DBus.Peer", None),
            ("org.freedesktop.DBus.Properties", "Get"),
            ("org.freedesktop.DBus.Properties", "GetAll"),
            ("org.freedesktop.DBus.Properties", "Set"),
            ("org.freedesktop.DBus.ObjectManager", "GetManagedObjects"),
        } | {(bt.IFACE + "Manager", m) for m in manager_methods()})

    def test_activation_file(self):
        with open(os.path.join(DBUS_DIR, "org.blkmodel1.service")) as f:
            lines = [l.strip() for l in f if l.strip()
                     and not l.lstrip().startswith("#")]
        self.assertEqual(lines[0], "[D-BUS Service]")
        kv = dict(l.split("=", 1) for l in lines[1:])
        self.assertEqual(kv["Name"], bt.BUS_NAME)
        self.assertEqual(kv["User"], "root")
        self.assertEqual(kv["SystemdService"], "blkmodeld.service")
        self.assertTrue(os.path.exists(
            os.path.join(SYSTEMD_DIR, "blkmodeld.service.in")))

    def call(self, addr, dest, path, iface, method, sig="", *args,
             uid=None):
        """One method call on the test bus, as uid (None: ourselves).

        Returns (ok, "error.Name: message" or "").  Run in a child process
        so that the bus sees that uid's credentials (EXTERNAL auth).
        """
        pre = None
        if uid is not None:
            def pre():
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
        p = subprocess.run([sys.executable, "-c", CALLER, addr, dest, path,
                            iface, method, sig, json.dumps(list(args))],
                           capture_output=True, text=True, preexec_fn=pre,
                           cwd="/", timeout=60)
        if p.returncode not in (0, 1) or (p.returncode == 1 and
                                          not p.stdout.strip()):
            self.fail("the test client failed:\n" + p.stderr)
        return p.returncode == 0, p.stdout.strip()

    def test_system_bus_with_policy(self):
        """A system-type dbus-daemon that includes the policy."""
        tmp = tempfile.mkdtemp(prefix="blkmodel-sysbus-")
        self.addCleanup(shutil.rmtree, tmp, True)
        os.chmod(tmp, 0o755)  # nobody must reach the socket
        sock = os.path.join(tmp, "system_bus_socket")
        conf = os.path.join(tmp, "system.conf")
        with open(conf, "w") as f:
            f.write(SYSTEM_LIKE_CONF.format(socket=sock, servicedir=DBUS_DIR,
                                            policy=self.conf))
        # A policy file the bus cannot parse is fatal for an <include>.
        bus = subprocess.Popen(["dbus-daemon", "--config-file=" + conf,
                                "--nofork", "--print-address=1",
                                "--nosyslog"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)

        def stop_bus():
            bus.kill()
            bus.wait()
            bus.stdout.close()
            bus.stderr.close()
        self.addCleanup(stop_bus)
        addr = bus.stdout.readline().strip()
        if not addr:
            bus.wait(10)
            self.fail("dbus-daemon refused the configuration:\n"
                      + bus.stderr.read())
        DBUS = ("org.freedesktop.DBus", "/org/freedesktop/DBus",
                "org.freedesktop.DBus")

        # The activation file parses: the bus lists the name as activatable.
        ok, out = self.call(addr, *DBUS, "ListActivatableNames")
        self.assertTrue(ok, out)
        self.assertIn(bt.BUS_NAME, json.loads(out))

        # Root may own the name: the daemon takes it on this bus.
        fixture = bt.make_fixture()
        log_path = os.path.join(tmp, "blkmodeld.log")
        logf = open(log_path, "w+")
        daemon = subprocess.Popen([bt.BLKMODELD, "--address=" + addr,
                                   "--sysfs-root=" + fixture + "/sys",
                                   "--no-uevents"],
                                  stdout=logf, stderr=logf)

        def stop_daemon():
            if daemon.poll() is None:
                daemon.terminate()
                daemon.wait(60)
            logf.close()
        self.addCleanup(stop_daemon)
        deadline = time.monotonic() + 60
        while True:
            ok, out = self.call(addr, *DBUS, "NameHasOwner", "s", bt.BUS_NAME)
            if ok and json.loads(out):
                break
            if daemon.poll() is not None or time.monotonic() > deadline:
                logf.flush()
                with open(log_path) as f:
                    self.fail("blkmodeld did not take its name as root:\n"
                              + f.read())
            time.sleep(0.05)

        if os.geteuid() != 0:
            log("not root: the unprivileged-caller half of the policy test "
                "is skipped (CI runs as root)")
            self.skipTest("needs root to call as uid %d" % NOBODY)

        disk = bt.path_of("block", "sda")
        queue = bt.path_of("block", "sda", "queue")
        mgr = bt.IFACE + "Manager"
        B = bt.BUS_NAME

        # Anyone: these pass the bus and blkmodeld answers them.
        for args in [
                (B, disk, "org.freedesktop.DBus.Introspectable", "Introspect"),
                (B, disk, "org.freedesktop.DBus.Peer", "Ping"),
                (B, disk, bt.PROPS, "Get", "ss", bt.IFACE + "Disk", "size"),
                (B, disk, bt.PROPS, "GetAll", "s", bt.IFACE + "Disk"),
                (B, bt.ROOT, bt.OM, "GetManagedObjects"),
                (B, bt.MANAGER_PATH, mgr, "Resolve", "s", "sda1"),
                (B, bt.MANAGER_PATH, mgr, "Settle")]:
            with self.subTest(call=args):
                ok, out = self.call(addr, *args, uid=NOBODY)
                self.assertTrue(ok, out)
        # Let through by the bus, decided inside the daemon: whatever
        # blkmodeld answers, the bus must not have rejected them.
        for args in [
                (B, bt.MANAGER_PATH, mgr, "GetEvents", "t", 0),
                (B, bt.MANAGER_PATH, mgr, "Trigger", "os", disk, "change"),
                (B, queue, bt.PROPS, "Set", "ssv", bt.IFACE + "Queue",
                 "Scheduler", "none")]:
            with self.subTest(call=args):
                ok, out = self.call(addr, *args, uid=NOBODY)
                self.assertNotIn(REJECTED, out)
        # Those are every method of the Manager, with Rescan below.
        self.assertEqual(set(manager_methods()), {
            "GetEvents", "Resolve", "Settle", "Trigger", "Rescan"})
        # Rescan is root's: blkmodeld itself refuses it to others.
        ok, out = self.call(addr, B, bt.MANAGER_PATH, mgr, "Rescan", uid=NOBODY)
        self.assertFalse(ok)
        self.assertNotIn(REJECTED, out)
        self.assertTrue(out.startswith("org.freedesktop.DBus.Error."
                                       "AccessDenied") or
                        out.startswith(bt.IFACE + "Error.AccessDenied"), out)
        # Anything else is rejected by the bus for others, not for root.
        for args in [(B, bt.MANAGER_PATH, mgr, "NoSuchMethod"),
                     (B, disk, "org.example.Other", "Frob")]:
            with self.subTest(call=args):
                ok, out = self.call(addr, *args, uid=NOBODY)
                self.assertFalse(ok)
                self.assertIn(REJECTED, out)
                ok, out = self.call(addr, *args)
                self.assertFalse(ok)
                self.assertNotIn(REJECTED, out)
        # Only root may own the name.
        ok, out = self.call(addr, *DBUS, "RequestName", "su", B, 0,
                            uid=NOBODY)
        self.assertFalse(ok)
        self.assertIn("not allowed to own", out)

        daemon.terminate()
        self.assertEqual(daemon.wait(60), 0)


# ---- the systemd units --------------------------------------------------------

def read_unit(path):
    """{(section, key): [values]} of a unit file."""
    out = {}
    section = None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line.strip("[]")
                continue
            k, v = line.split("=", 1)
            out.setdefault((section, k.strip()), []).append(v.strip())
    return out


class Units(unittest.TestCase):
    service_in = os.path.join(SYSTEMD_DIR, "blkmodeld.service.in")
    socket = os.path.join(SYSTEMD_DIR, "blkmodeld-uevent.socket")

    def test_service_contents(self):
        u = read_unit(self.service_in)
        for key, value in [
                ("Type", "notify"), ("BusName", bt.BUS_NAME),
                ("ExecStart", "@sbindir@/blkmodeld --system"),
                ("Sockets", "blkmodeld-uevent.socket"),
                ("PrivateNetwork", "yes"), ("ProtectSystem", "strict"),
                ("ProtectKernelTunables", "yes"),
                ("ReadWritePaths", "/sys/devices"),
                ("RestrictAddressFamilies", "AF_UNIX AF_NETLINK"),
                ("NoNewPrivileges", "yes"), ("CapabilityBoundingSet", ""),
                ("SystemCallFilter", "@system-service")]:
            with self.subTest(key=key):
                self.assertIn(value, u.get(("Service", key), []))

    def test_socket_contents(self):
        u = read_unit(self.socket)
        self.assertEqual(u[("Socket", "ListenNetlink")],
                         ["kobject-uevent 1"])
        self.assertEqual(u[("Socket", "PassCredentials")], ["yes"])
        self.assertEqual(u[("Socket", "ReceiveBuffer")], ["128M"])
        self.assertEqual(u[("Socket", "Service")], ["blkmodeld.service"])

    def test_systemd_analyze_verify(self):
        exe = shutil.which("systemd-analyze")
        if exe is None:
            log("systemd-analyze is not installed: units not verified")
            self.skipTest("systemd-analyze is not installed")
        tmp = tempfile.mkdtemp(prefix="blkmodel-units-")
        self.addCleanup(shutil.rmtree, tmp, True)
        # The unit as installed, but pointing at the binary under test.
        blkmodeld = shutil.which(bt.BLKMODELD) or bt.BLKMODELD
        with open(self.service_in) as f:
            text = f.read().replace("@sbindir@/blkmodeld",
                                    os.path.abspath(blkmodeld))
        self.assertNotIn("@", text.replace("@system-service", "")
                         .replace("@privileged", "").replace("@resources", ""),
                         "unsubstituted @VAR@ left in the unit")
        service = os.path.join(tmp, "blkmodeld.service")
        with open(service, "w") as f:
            f.write(text)
        shutil.copy(self.socket, tmp)
        p = subprocess.run([exe, "verify", "--man=no", service,
                            os.path.join(tmp, "blkmodeld-uevent.socket")],
                           capture_output=True, text=True, timeout=120)
        out = p.stdout + p.stderr
        if p.returncode != 0 and re.search(
                r"Unit \S+\.target not found|Failed to initialize manager|"
                r"Failed to (set up|create) .*(cgroup|namespace)", out):
            # No systemd unit tree / manager here: nothing to verify against.
            log("systemd-analyze verify cannot run here; units not "
                "verified:\n" + out)
            self.skipTest("systemd-analyze verify cannot run here")
        self.assertEqual(p.returncode, 0, out)
        self.assertEqual(out.strip(), "", "systemd-analyze complains:\n" + out)


if __name__ == "__main__":
    bt.main()
