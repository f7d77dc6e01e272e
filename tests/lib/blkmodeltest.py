# SPDX-License-Identifier: LGPL-2.1-or-later
"""What every bus test needs: fixtures, the real daemon, a real D-Bus client.

Tests run inside dbus-test-runner, which gives them a private session bus
(DBUS_SESSION_BUS_ADDRESS).  Each test starts the real blkmodeld binary on
that bus with Daemon(...), talks to it with dbus-python, and stops it with
SIGTERM: a daemon that does not exit 0, or whose stderr carries a sanitizer
report, fails the test.  Meson passes the built binaries in BLKMODELD and
BLKMODELCTL.
"""

import atexit
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import Gio, GLib

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
sys.path.insert(0, FIXTURES)
import mksysfs  # noqa: E402  (the fixture builder, also a library)
import loopdev  # noqa: E402

BUS_NAME = "org.blkmodel1"
ROOT = "/org/blkmodel1"
MANAGER_PATH = ROOT + "/Manager"
IFACE = "org.blkmodel1."
OM = "org.freedesktop.DBus.ObjectManager"
PROPS = "org.freedesktop.DBus.Properties"
ECS = "org.freedesktop.DBus.Property.EmitsChangedSignal"

# The model's interfaces, by the short names the tests give them.
KOBJ = IFACE + "Kobject"
DISK = IFACE + "Disk"
PART = IFACE + "Partition"
QUEUE = IFACE + "Queue"
KSET = IFACE + "Kset"
DEVICE = IFACE + "Device"
MANAGER = IFACE + "Manager"

# The standard fixture's (tests/fixtures/mksysfs.py) SATA disks' hardware, as devpaths.
SDA_DEV = "/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0"
SR0_DEV = "/devices/pci0000:00/0000:00:1f.2/ata2/host1/target1:0:0/1:0:0:0"

BLKMODELD = os.environ.get("BLKMODELD", "blkmodeld")
BLKMODELCTL = os.environ.get("BLKMODELCTL", "blkmodelctl")

DBusGMainLoop(set_as_default=True)

_SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                    "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer",
                    "WARNING: ThreadSanitizer")


def daemon_sanitized():
    """Is BLKMODELD built with AddressSanitizer?  Its allocator touches fresh pages where glibc's
    reuses freed ones, so a turn of the loop can spend tens of ms in page faults: tests that time
    the daemon's own work say so only of a build without it."""
    path = shutil.which(BLKMODELD) or BLKMODELD
    out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    return "libasan" in out


def bus():
    return dbus.SessionBus()


def unwrap(v):
    """dbus-python values → plain Python (str, int, bool, list, dict)."""
    if isinstance(v, dbus.Boolean):
        return bool(v)
    if isinstance(v, (dbus.String, dbus.ObjectPath, dbus.Signature)):
        return str(v)
    if isinstance(v, (dbus.Byte, dbus.Int16, dbus.UInt16, dbus.Int32,
                      dbus.UInt32, dbus.Int64, dbus.UInt64)):
        return int(v)
    if isinstance(v, dbus.Double):
        return float(v)
    if isinstance(v, dict):
        return {unwrap(k): unwrap(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [unwrap(x) for x in v]
    return v


def encode(name):
    """sd_bus_path_encode() of one path element."""
    if name == "":
        return "_"
    out = []
    for i, ch in enumerate(name.encode()):
        c = chr(ch)
        if c.isascii() and (c.isalpha() or (c.isdigit() and i > 0)):
            out.append(c)
        else:
            out.append("_%02x" % ch)
    return "".join(out)


def path_of(*elements):
    return ROOT + "".join("/" + encode(e) for e in elements)


def fixture_tmpdir():
    """Where fixtures go: $BLKMODEL_TEST_TMPDIR, else /dev/shm when it is
    writable and has room, else /tmp (as tests/unit/fixture.c chooses).  In memory, as
    sysfs is: 1,000 x 4 takes 11 s to write to this VM's disk and 11 s to
    remove, 3.6 s and 2 s in memory; and a write to a disk file may wait for
    the disk, where a test times the daemon."""
    d = os.environ.get("BLKMODEL_TEST_TMPDIR")
    if d:
        return d
    try:
        st = os.statvfs("/dev/shm")
        # Room for two 1,000 x 4 trees at once (82 MB and 290,000 inodes
        # each): a container's /dev/shm may have 64 MB.
        if os.access("/dev/shm", os.W_OK) and st.f_bavail * st.f_frsize >= 1 << 30 \
                and st.f_favail >= 1000000:
            return "/dev/shm"
    except OSError:
        pass
    return "/tmp"


def remove_fixture(d):
    """rm -rf: a 1,000 x 4 tree in 2.1 s where shutil.rmtree() takes 2.9 (its Python share)."""
    try:
        subprocess.run(["rm", "-rf", "--", d], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=600)
    except (OSError, subprocess.SubprocessError):
        pass
    shutil.rmtree(d, True)  # whatever rm left (none where rm is at hand): ignored, as before


def make_fixture(parent=None, **kwargs):
    """Write a fixture tree; returns DIR (the tree is DIR/sys).

    No kwargs: the standard fixture.  disks=N, partitions=P: synthetic.
    """
    d = tempfile.mkdtemp(prefix="blkmodel-fixture-", dir=parent or fixture_tmpdir())
    atexit.register(remove_fixture, d)
    args = [d]
    for k, v in kwargs.items():
        args += ["--" + k.replace("_", "-"), str(v)]
    old = os.umask(0)
    try:
        mksysfs.main(args)
    finally:
        os.umask(old)
    return d


class Daemon:
    """The real blkmodeld on the test's bus."""

    def __init__(self, sysfs_root, uevent_socket=None, no_uevents=None,
                 extra_args=(), wait=True, env=None, prefix=()):
        if os.path.realpath(sysfs_root) == "/sys":
            loopdev.hold_sys_block()
        self.sysfs_root = sysfs_root
        self.tmp = tempfile.mkdtemp(prefix="blkmodeld-")
        if uevent_socket is True:
            uevent_socket = os.path.join(self.tmp, "uevent.sock")
        self.uevent_socket = uevent_socket
        if no_uevents is None:
            no_uevents = uevent_socket is None
        # prefix: a command that runs the daemon (prlimit ... --).
        args = list(prefix) + [BLKMODELD, "--session", "--sysfs-root=" + sysfs_root,
                "--log-level=debug"]
        if uevent_socket:
            args.append("--uevent-socket=" + uevent_socket)
        elif no_uevents:
            args.append("--no-uevents")
        args += list(extra_args)
        self.args = args
        self.log_path = os.path.join(self.tmp, "blkmodeld.log")
        self.log = open(self.log_path, "w+")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log,
                                     env=dict(os.environ, **env) if env else None)
        self.bus = bus()
        if wait:
            self.wait_for_name()

    def wait_for_name(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("blkmodeld exited with %d before taking "
                                     "its name:\n%s" % (self.proc.returncode,
                                                        self.output()))
            if self.bus.name_has_owner(BUS_NAME):
                return
            time.sleep(0.02)
        raise AssertionError("blkmodeld did not take its name in %d s:\n%s"
                             % (timeout, self.output()))

    @property
    def first_seqnum(self):
        """The seqnum of this daemon's first event (it starts from the wall
        clock in µs), from its log line at the start."""
        if getattr(self, "_first_seqnum", None) is None:
            out = self.final_output if self.log.closed else self.output()
            m = re.search(r"Numbering events from (\d+)", out)
            if not m:
                raise AssertionError("blkmodeld did not say where its seqnums "
                                     "start:\n" + out)
            self._first_seqnum = int(m.group(1))
        return self._first_seqnum

    def seq(self, k):
        """The seqnum of this daemon's k-th event (1 is the first)."""
        return self.first_seqnum + k - 1

    def output(self):
        self.log.flush()
        # The daemon logs odd names as they are: not always UTF-8.
        with open(self.log_path, errors="backslashreplace") as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM, timeout=60, code=0):
        """Stop it; the daemon must exit with code (0) and sanitizer-clean.
        Once stopped, its last output again (a test's own stop, then the with
        block's)."""
        if self.log.closed:
            return self.final_output
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("blkmodeld ignored signal %d:\n%s"
                                     % (sig, self.output()))
        out = self.final_output = self.output()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        for mark in _SANITIZER_MARKS:
            if mark in out:
                raise AssertionError("sanitizer report from blkmodeld:\n" + out)
        if self.proc.returncode != code:
            raise AssertionError("blkmodeld exited with %d:\n%s"
                                 % (self.proc.returncode, out))
        return out

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        # Don't mask the test's own failure with a shutdown complaint.
        if exc[0] is None:
            self.stop()
        else:
            try:
                self.stop()
            except AssertionError as e:
                sys.stderr.write(str(e) + "\n")

    # ---- a real D-Bus client -------------------------------------------

    def object(self, path):
        return self.bus.get_object(BUS_NAME, path, introspect=False)

    def call(self, path, iface, method, *args, **kw):
        return unwrap(self.object(path).get_dbus_method(method, iface)(
            *args, timeout=kw.get("timeout", 60)))

    def managed_objects(self, with_manager=False):
        """GetManagedObjects: the kobjects, and the Manager if asked for."""
        objs = self.call(ROOT, OM, "GetManagedObjects")
        if not with_manager:
            objs.pop(MANAGER_PATH, None)
        return objs

    def all_objects(self):
        """The complete model read the long way: each object's interfaces
        from GetManagedObjects, each interface's properties from GetAll."""
        objs = self.managed_objects()
        for path, ifaces in objs.items():
            for iface in ifaces:
                ifaces[iface] = self.get_all(path, iface)
        return objs

    def get(self, path, iface, prop):
        return self.call(path, PROPS, "Get", iface, prop)

    def get_all(self, path, iface):
        return self.call(path, PROPS, "GetAll", iface)

    def manager(self, method, *args):
        return self.call(MANAGER_PATH, IFACE + "Manager", method, *args)

    def manager_prop(self, prop):
        return self.get(MANAGER_PATH, IFACE + "Manager", prop)

    def introspect(self, path):
        return str(self.object(path).Introspect(
            dbus_interface="org.freedesktop.DBus.Introspectable"))

    def send_uevent(self, action, devpath, env=None, raw=None):
        """One datagram in the kernel's wire format to --uevent-socket."""
        if raw is None:
            e = {"ACTION": action, "DEVPATH": devpath}
            e.update(env or {})
            raw = ("%s@%s\0" % (action, devpath)).encode() + b"".join(
                ("%s=%s\0" % (k, v)).encode() for k, v in e.items())
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            s.sendto(raw, self.uevent_socket)
        finally:
            s.close()


def emits_changed_signal(xml_text):
    """{interface: {property: its EmitsChangedSignal}} of an Introspect
    reply; "true", the default, where the XML gives none."""
    return {i.get("name"): {
        p.get("name"): next((a.get("value") for a in p.findall("annotation")
                             if a.get("name") == ECS), "true")
        for p in i.findall("property")}
        for i in ET.fromstring(xml_text).findall("interface")}


def said_false(dm, path, iface):
    """The properties of path's iface annotated EmitsChangedSignal "false",
    sorted."""
    return sorted(n for n, v in
                  emits_changed_signal(dm.introspect(path))[iface].items()
                  if v == "false")


class SignalRecorder:
    """Every signal from org.blkmodel1, in arrival order.

    Subscribe before causing what you want to see; then wait_for(pred).
    Entries: (interface, member, path, args) with args unwrapped.
    """

    def __init__(self, b=None):
        self.bus = b or bus()
        self.signals = []
        self.match = self.bus.add_signal_receiver(
            self._on, sender_keyword="sender", interface_keyword="iface",
            member_keyword="member", path_keyword="path",
            bus_name=BUS_NAME)
        self.bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")\
            .GetId(dbus_interface="org.freedesktop.DBus")  # match is in place

    def _on(self, *args, **kw):
        self.signals.append((kw["iface"], kw["member"], kw["path"],
                             unwrap(list(args))))

    def pump(self, seconds=0.0):
        ctx = GLib.MainContext.default()
        deadline = time.monotonic() + seconds
        while True:
            while ctx.pending():
                ctx.iteration(False)
            if time.monotonic() >= deadline:
                return
            ctx.iteration(False) or time.sleep(0.005)

    def wait_for(self, pred, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump()
            if pred(self.signals):
                return self.signals
            time.sleep(0.005)
        raise AssertionError("timed out waiting; signals so far:\n  " +
                             "\n  ".join(map(repr, self.signals)))

    def of(self, member):
        return [s for s in self.signals if s[1] == member]

    def close(self):
        self.match.remove()


def connect():
    """A GDBus connection of its own to the test's bus (a client that can
    leave by closing it)."""
    return Gio.DBusConnection.new_for_address_sync(
        os.environ["DBUS_SESSION_BUS_ADDRESS"],
        Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
        Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)


def reply_body_size(path, iface=OM, method="GetManagedObjects"):
    """The marshalled body of a reply as it crossed the bus (GDBus gives the
    message's bytes; dbus-python does not)."""
    conn = connect()
    try:
        call = Gio.DBusMessage.new_method_call(BUS_NAME, path, iface, method)
        reply, _ = conn.send_message_with_reply_sync(call, Gio.DBusSendMessageFlags.NONE,
                                                      600000, None)
        if reply.get_message_type() == Gio.DBusMessageType.ERROR:
            raise AssertionError("%s %s: %s" % (path, method, reply.get_error_name()))
        blob = bytes(reply.to_blob(Gio.DBusCapabilityFlags.NONE))
        return struct.unpack("<I" if blob[:1] == b"l" else ">I", blob[4:8])[0]
    finally:
        conn.close_sync(None)


def wait_until(cond, every=0.01, timeout=30):
    """True as soon as cond() is, False after timeout seconds of it not being."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(every)
    return False


def ctl(*args, check=None, input=None, timeout=60):
    """Run blkmodelctl on the test's bus; returns CompletedProcess (text)."""
    p = subprocess.run([BLKMODELCTL, "--session"] + list(args),
                       capture_output=True, text=True, input=input,
                       timeout=timeout)
    if check is not None and p.returncode != check:
        raise AssertionError("blkmodelctl %s: exit %d, wanted %d\n"
                             "stdout:\n%s\nstderr:\n%s"
                             % (" ".join(args), p.returncode, check,
                                p.stdout, p.stderr))
    return p


def read_attr(path):
    """A sysfs file's text as the daemon publishes it."""
    with open(path, "rb") as f:
        data = f.read(4096)
    if data.endswith(b"\n"):
        data = data[:-1]
    return data.decode("utf-8", "backslashreplace")


def write_attr(sysroot, path, text):
    """Changes an attribute file of the fixture below sysroot as the kernel's
    store changes it: a reader sees the old value or the new one, never the
    empty file that open(path, "w") leaves for a moment (a daemon that read
    it then published a Size of 0).  The new file is made beside the sysfs
    root, where no listing of the daemon's sees it, with the old one's mode.
    """
    path = os.path.join(sysroot, path)
    mode = os.stat(path).st_mode & 0o7777 if os.path.exists(path) else 0o644
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(sysroot)),
                               prefix=".attr-")
    try:
        os.write(fd, text.encode() if isinstance(text, str) else text)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def remove_tree(sysroot, path):
    """Takes a directory of the fixture below sysroot away at once, as kernfs
    takes a device's: rmtree() in place deletes its files one by one, and a
    daemon reading the device then found size gone and published Size 0.
    Moved beside the sysfs root first, then deleted there."""
    path = os.path.join(sysroot, path)
    aside = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(sysroot)),
                             prefix=".gone-")
    os.rename(path, os.path.join(aside, "d"))
    shutil.rmtree(aside)


def main():
    unittest.main(verbosity=2)


# ---- the model's rules, written out independently of the daemon ------------
# (doc/model.md "Attributes"): what an object directory should publish.

KIND_IFACE = {"kset": "Kset", "disk": "Disk", "partition": "Partition",
              "queue": "Queue", "elevator": "Elevator", "device": "Device"}

TYPED_PROPERTIES = {
    "Disk": ("Major", "Minor", "Size", "ReadOnly", "Removable", "Partitions",
             "Holders", "Slaves", "Queue", "Device"),
    "Partition": ("Major", "Minor", "Size", "ReadOnly", "Number", "Start",
                  "Holders"),
    "Queue": ("Scheduler", "Schedulers", "Elevator"),
    "Kset": ("Members",),
    "Elevator": (),
    "Device": ("Subsystem", "Driver"),
}

# Subdirectories a kind handles itself: never attribute groups.
SPECIAL_DIRS = {"disk": ("queue", "holders", "slaves", "mq"),
                "partition": ("holders",), "queue": ("iosched",)}


def member_name(filename):
    """A file name as a D-Bus member: [A-Za-z0-9_] kept, the rest '_' a
    character (a byte that is none, one), '_' before a leading digit."""
    s = "".join(c if (c.isascii() and (c.isalnum() or c == "_")) else "_"
                for c in filename)
    if s[:1].isdigit():
        s = "_" + s
    return s


def _regular_files(dirpath):
    out = []
    for e in sorted(os.listdir(dirpath)):
        p = os.path.join(dirpath, e)
        if not os.path.islink(p) and os.path.isfile(p):
            out.append(e)
    return out


def _members(files, reserved=()):
    """{member: file}; of two files with one member the file of that very
    name stays, else the first by file name order; files mapping to a typed
    property's name are left out."""
    m = {}
    for f in sorted(files):
        if f == "uevent":
            continue
        n = member_name(f)
        if n in reserved or (n in m and f != n):
            continue
        m[n] = f
    return m


def expected_interfaces(dirpath, ktype):
    """What an object whose directory is dirpath should publish besides
    Kobject: {interface: {member: relative file path}} for the kind's raw
    attributes and for each attribute group."""
    kind = IFACE + KIND_IFACE[ktype]
    out = {kind: {k: f for k, f in _members(
        _regular_files(dirpath),
        TYPED_PROPERTIES[KIND_IFACE[ktype]]).items()}}
    if ktype == "kset":
        return out
    special = SPECIAL_DIRS.get(ktype, ())
    for e in sorted(os.listdir(dirpath)):
        p = os.path.join(dirpath, e)
        if e in special or os.path.islink(p) or not os.path.isdir(p):
            continue
        if os.path.lexists(os.path.join(p, "uevent")):
            continue                       # a kobject of its own
        files = _regular_files(p)
        if not files:
            continue                       # mq/, class glue: not published
        iface = IFACE + "Group." + member_name(e)
        if iface in out:
            continue
        out[iface] = {k: os.path.join(e, f)
                      for k, f in _members(files).items()}
    return out


# Unicode's noncharacters: valid UTF-8 to Python, refused by sd-bus, so escaped by the daemon.
_NONCHARACTERS = re.compile("[\ufdd0-\ufdef" + "".join(
    "%s-%s" % (chr(p << 16 | 0xfffe), chr(p << 16 | 0xffff)) for p in range(17)) + "]")


def _decode(data):
    """Bytes → text as the daemon publishes it: bytes outside valid UTF-8,
    and each byte of a noncharacter, as \\xNN."""
    return _NONCHARACTERS.sub(lambda m: "".join("\\x%02x" % b for b in m.group().encode()),
                              data.decode("utf-8", "backslashreplace"))


def published_value(data):
    """Bytes of an attribute file → the string the daemon publishes: at most
    4096 bytes, one trailing newline dropped, NUL and bytes outside valid
    UTF-8 written as \\xNN."""
    data = data[:4096]
    if data.endswith(b"\n"):
        data = data[:-1]
    return _decode(data).replace("\0", "\\x00")


def read_published(path):
    """A file's value as the daemon publishes it ("" for a file with no
    read permission bits, as kernfs refuses to open those)."""
    if os.stat(path).st_mode & 0o444 == 0:
        return ""
    with open(path, "rb") as f:
        return published_value(f.read(4096))


def parse_uevent(path):
    try:
        with open(path, "rb") as f:
            text = _decode(f.read(4096))
    except OSError:
        return {}
    env = {}
    for line in text.split("\n"):
        k, sep, v = line.partition("=")
        if sep and k:
            env[k] = v
    return env


# ---- comparing whole models ------------------------------------------------

def model_diff(have, want, limit=20):
    """What differs between two all_objects() results, one line per
    difference (at most `limit`); "" when they are equal."""
    out = []
    for path in sorted(set(have) | set(want)):
        if path not in want:
            out.append("only in the first: %s" % path)
            continue
        if path not in have:
            out.append("only in the second: %s" % path)
            continue
        for iface in sorted(set(have[path]) | set(want[path])):
            a, b = have[path].get(iface), want[path].get(iface)
            if a is None or b is None:
                out.append("%s: interface %s only in the %s" % (
                    path, iface, "second" if a is None else "first"))
                continue
            for prop in sorted(set(a) | set(b)):
                if a.get(prop) != b.get(prop):
                    out.append("%s: %s.%s is %r, %r" % (
                        path, iface, prop, a.get(prop), b.get(prop)))
    if len(out) > limit:
        out = out[:limit] + ["… %d more" % (len(out) - limit)]
    return "\n".join(out)


def fresh_model(sysfs_root, extra_args=()):
    """What a daemon started now on the tree publishes (all_objects()); the
    daemon is stopped again, so the bus name must be free."""
    with Daemon(sysfs_root, extra_args=extra_args) as dm:
        return dm.all_objects()
