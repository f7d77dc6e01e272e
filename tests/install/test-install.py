#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""`meson install` with the default prefix (/usr/local) into a DESTDIR:
each file must land where this system's programs read it, as they say
themselves — dbus-daemon (its system.conf and dbus-daemon(1)), systemd
(`systemd-analyze unit-paths`) and polkitd (the directory compiled into
it) — and the unit must start the binary that was installed.

Arguments: the source root and the build root under test.  The build is
reused when it has the default prefix and directories, else a fresh one
is configured."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

SRC, BUILD = sys.argv.pop(1), sys.argv.pop(1)
PREFIX = "/usr/local"
DIR_OPTIONS = ("dbuspolicydir", "dbussystemservicedir", "dbusinterfacesdir",
               "systemdsystemunitdir", "polkitactiondir")
SYSTEM_CONF = "/usr/share/dbus-1/system.conf"
POLKITD = "/usr/lib/polkit-1/polkitd"


def run(*args, **kw):
    p = subprocess.run(list(args), capture_output=True, text=True,
                       timeout=600, **kw)
    if p.returncode != 0:
        raise AssertionError("%s: exit %d\n%s%s" % (" ".join(args),
                                                    p.returncode, p.stdout,
                                                    p.stderr))
    return p.stdout


def has_default_layout(build):
    opts = {o["name"]: o["value"] for o in json.loads(
        run("meson", "introspect", "--buildoptions", build))}
    return opts.get("prefix") == PREFIX and \
        all(opts.get(o) == "" for o in DIR_OPTIONS)


def dbus_policy_dirs():
    """<includedir>s of the system bus configuration, as dbus-daemon
    resolves them (relative to the file's directory)."""
    base = os.path.dirname(SYSTEM_CONF)
    return {os.path.normpath(os.path.join(base, e.text.strip()))
            for e in ET.parse(SYSTEM_CONF).getroot().iter("includedir")}


def dbus_service_dirs():
    """<standard_system_servicedirs/> (dbus-daemon(1): /usr/local/share,
    the datadir dbus was built with, /usr/share, /lib) and <servicedir>s."""
    root = ET.parse(SYSTEM_CONF).getroot()
    out = {e.text.strip() for e in root.iter("servicedir")}
    if root.find("standard_system_servicedirs") is not None:
        datadir = run("pkg-config", "--variable=datadir", "dbus-1").strip() \
            or "/usr/share"
        out |= {"/usr/local/share/dbus-1/system-services",
                datadir + "/dbus-1/system-services",
                "/usr/share/dbus-1/system-services",
                "/lib/dbus-1/system-services"}
    return out


def unit_dirs():
    return set(run("systemd-analyze", "--system", "unit-paths").split())


def polkit_action_dirs():
    """The action directory compiled into polkitd."""
    with open(POLKITD, "rb") as f:
        data = f.read()
    return {m.decode() for m in re.findall(rb"/[\w/.-]*/polkit-1/actions",
                                           data)}


class Install(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in ("meson", "systemd-analyze", "pkg-config"):
            if not shutil.which(tool):
                raise AssertionError(tool + " is required")
        if not os.path.exists(POLKITD):
            raise AssertionError(POLKITD + " is required (polkitd)")
        cls.tmp = tempfile.mkdtemp(prefix="blkmodel-install-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.dest = os.path.join(cls.tmp, "dest")
        build = BUILD
        extra = ["--no-rebuild"]
        if not has_default_layout(build):
            build = os.path.join(cls.tmp, "build")
            run("meson", "setup", build, SRC)
            extra = []
        run("meson", "install", "-C", build, "--destdir", cls.dest,
            "--quiet", *extra)
        cls.files = {}
        for top, _, files in os.walk(cls.dest):
            for f in files:
                full = os.path.join(top, f)
                cls.files["/" + os.path.relpath(full, cls.dest)] = full

    def where(self, name, executable=False):
        # bash-completion loads a command's completion by the command's
        # name: share/bash-completion/completions/blkmodelctl is no binary.
        found = [p for p in self.files if os.path.basename(p) == name and
                 (not executable or os.access(self.files[p], os.X_OK))]
        self.assertEqual(len(found), 1, "%s installed as %s" % (name, found))
        return found[0]

    def assertReadFrom(self, name, dirs, who):
        path = self.where(name)
        self.assertIn(os.path.dirname(path), dirs,
                      "%s is installed to %s, but %s reads only %s"
                      % (name, path, who, sorted(dirs)))
        return path

    def test_dbus_policy(self):
        self.assertReadFrom("org.blkmodel1.conf", dbus_policy_dirs(),
                            "the system bus")

    def test_dbus_activation(self):
        self.assertReadFrom("org.blkmodel1.service", dbus_service_dirs(),
                            "the system bus")

    def test_interfaces(self):
        want = run("pkg-config", "--variable=interfaces_dir", "dbus-1").strip()
        for iface in ("Manager", "Kobject", "Kset", "Disk", "Partition",
                      "Queue", "Elevator", "Device"):
            self.assertReadFrom("org.blkmodel1.%s.xml" % iface, {want},
                                "dbus-1.pc's interfaces_dir")

    def test_units(self):
        dirs = unit_dirs()
        service = self.assertReadFrom("blkmodeld.service", dirs, "systemd")
        self.assertReadFrom("blkmodeld-uevent.socket", dirs, "systemd")
        # Below the prefix, like the binary (not in the distribution's own
        # /lib/systemd/system).
        self.assertTrue(service.startswith(PREFIX + "/"), service)
        # It starts what was installed.
        with open(self.files[service]) as f:
            exec_start = [line.split("=", 1)[1].split()[0] for line in f
                          if line.startswith("ExecStart=")]
        self.assertEqual(exec_start, [self.where("blkmodeld", True)])

    def test_polkit_policy(self):
        self.assertReadFrom("org.blkmodel1.policy", polkit_action_dirs(),
                            "polkitd")

    def test_binaries_below_the_prefix(self):
        self.assertEqual(self.where("blkmodeld", True),
                         PREFIX + "/sbin/blkmodeld")
        self.assertEqual(self.where("blkmodelctl", True),
                         PREFIX + "/bin/blkmodelctl")

    def test_nothing_else_outside_the_prefix(self):
        """Outside /usr/local only what the system's programs must read."""
        known = {"org.blkmodel1.conf", "org.blkmodel1.service",
                 "org.blkmodel1.policy", "blkmodeld.service",
                 "blkmodeld-uevent.socket"}
        for path in self.files:
            if path.startswith(PREFIX + "/"):
                continue
            name = os.path.basename(path)
            self.assertTrue(name in known or (name.startswith(
                "org.blkmodel1.") and name.endswith(".xml")), path)


if __name__ == "__main__":
    unittest.main(verbosity=2)
