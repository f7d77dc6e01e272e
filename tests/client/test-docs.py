# SPDX-License-Identifier: LGPL-2.1-or-later
"""The man pages and the bash completion.

The pages are built (scdoc) and render with man -l without a warning;
org.blkmodel1(5) names every interface, property, method, signal and
error, blkmodelctl(1) every command, blkmodeld(8) every option of
blkmodeld --help; meson install puts the pages under mandir and the
completion where bash-completion looks.  The completion, sourced into
bash, offers the commands, options, columns, actions and the devices the
running daemon publishes.

Arguments: the build directory and the source directory."""
import glob
import os
import re
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

import blkmodeltest as bt

BUILD = sys.argv.pop(1)
SOURCE = sys.argv.pop(1)
PAGES = ("blkmodeld.8", "blkmodelctl.1", "org.blkmodel1.5")


def render(page, locale="C.UTF-8"):
    p = subprocess.run(["man", "--warnings", "-l",
                        os.path.join(BUILD, "man", page)],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, LC_ALL=locale, MANWIDTH="80",
                                MAN_KEEP_FORMATTING="0", PAGER="cat"))
    return p


def plain(text):
    """Words only: no overstrike (bold, underline), no hyphenation at line
    ends, no reflow."""
    text = re.sub(r".\x08", "", text)
    return " ".join(re.sub(r"\u2010\n\s*", "", text).split())


class ManPages(unittest.TestCase):
    def assertMentions(self, text, word, what=None):
        if not re.search(r"(?<![\w.])%s(?![\w])" % re.escape(word), text):
            self.fail("%s not in the page" % (what or word))

    def test_render_without_warnings(self):
        for page in PAGES:
            with self.subTest(page=page):
                # An ASCII terminal too: no character it cannot show.
                p = render(page, "C")
                self.assertEqual((p.returncode, p.stderr), (0, ""))
                p = render(page)
                self.assertEqual((p.returncode, p.stderr), (0, ""))
                text = plain(p.stdout)
                for section in ("NAME", "SYNOPSIS" if page != "org.blkmodel1.5"
                                else "DESCRIPTION", "SEE ALSO"):
                    self.assertMentions(text, section)

    def test_interface_page_is_complete(self):
        text = plain(render("org.blkmodel1.5").stdout)
        for xml in glob.glob(os.path.join(SOURCE, "dbus", "*.xml")):
            for iface in ET.parse(xml).getroot().iter("interface"):
                self.assertMentions(text, iface.get("name"))
                for kind in ("property", "method", "signal"):
                    for m in iface.iter(kind):
                        self.assertMentions(text, m.get("name"), "%s.%s" % (
                            iface.get("name"), m.get("name")))
        with open(os.path.join(SOURCE, "include", "blkmodel",
                               "names.h")) as f:
            for err in re.findall(r'"(org\.blkmodel1\.Error\.\w+)"', f.read()):
                self.assertMentions(text, err)
        for err in ("LimitsExceeded", "InvalidArgs", "AccessDenied",
                    "PropertyReadOnly", "UnknownObject", "UnknownProperty"):
            self.assertMentions(text, "org.freedesktop.DBus.Error." + err
                                if err != "UnknownProperty" else err)
        self.assertIn("org.blkmodel1.Group.", text)

    def test_command_pages_are_complete(self):
        text = plain(render("blkmodelctl.1").stdout)
        for cmd in ("list", "tree", "show", "info", "get", "set", "monitor",
                    "events", "wait", "dump", "trigger", "settle"):
            self.assertMentions(text, cmd)
        for col in ("MAJ:MIN", "SCHED", "ZONE-AMAX", "SUBSYSTEMS", "OBJECT"):
            self.assertMentions(text, col)
        helptext = subprocess.run([bt.BLKMODELD, "--help"],
                                  capture_output=True, text=True,
                                  timeout=60).stdout
        text = plain(render("blkmodeld.8").stdout)
        for opt in re.findall(r"(--[a-z-]+)", helptext):
            self.assertMentions(text, opt)

    def test_install(self):
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.run(["meson", "install", "-C", BUILD, "--no-rebuild",
                                "--destdir", d], capture_output=True,
                               text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            found = {os.path.relpath(os.path.join(r, f), d)
                     for r, _, fs in os.walk(d) for f in fs}
            for page in PAGES:
                section = page.rsplit(".", 1)[1]
                self.assertTrue(any(f.endswith("/man/man%s/%s" % (section, page))
                                    for f in found), sorted(found))
            self.assertTrue(any(f.endswith("bash-completion/completions/"
                                           "blkmodelctl") for f in found),
                            sorted(found))


def bash_words(line):
    """The words bash hands a completion function for an unquoted line: it
    breaks at blanks and at its COMP_WORDBREAKS characters, a run of which
    is a word of its own (`--address=unix:path=/x` is seven words)."""
    words = re.findall(r"""[^\s"'><=;|&(:]+|["'><=;|&(:]+""", line)
    if not line or line[-1].isspace():
        words.append("")
    return words


def complete(*words, with_library=True, session_bus=True):
    """COMPREPLY for the command line words (the last one being typed), as
    bash would split their line; without session_bus, blkmodelctl finds
    only the bus the line names."""
    script = os.path.join(SOURCE, "completion", "blkmodelctl")
    lib = "/usr/share/bash-completion/bash_completion"
    prog = ""
    if with_library and os.path.exists(lib):
        prog += "source %s\n" % lib
    prog += ('source %s\nCOMP_LINE=$1; COMP_POINT=${#COMP_LINE}; shift\n'
             'COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1))\n'
             '_blkmodelctl; printf "%%s\\n" "${COMPREPLY[@]}"\n' % script)
    env = dict(os.environ, PATH=os.path.dirname(bt.BLKMODELCTL) + ":" +
               os.environ.get("PATH", ""))
    if not session_bus:
        env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    line = " ".join(words)
    p = subprocess.run(["bash", "-c", prog, "bash", line] + bash_words(line),
                       capture_output=True, text=True, timeout=60, env=env)
    if p.returncode != 0:
        raise AssertionError(p.stderr)
    return [w for w in p.stdout.split("\n") if w]


class Completion(unittest.TestCase):
    def test_commands_and_options(self):
        for lib in (True, False):
            with self.subTest(bash_completion_library=lib):
                got = complete("blkmodelctl", "", with_library=lib)
                for c in ("list", "tree", "info", "get", "trigger", "settle"):
                    self.assertIn(c, got)
                self.assertEqual(complete("blkmodelctl", "se",
                                          with_library=lib),
                                 ["set", "settle"])
                self.assertIn("--session", complete("blkmodelctl", "--s",
                                                    with_library=lib))
                self.assertIn("--settle", complete(
                    "blkmodelctl", "trigger", "--se", with_library=lib))
                self.assertIn("--output=", complete(
                    "blkmodelctl", "list", "--o", with_library=lib))
                self.assertIn("NAME,SCHED", complete(
                    "blkmodelctl", "list", "-o", "NAME,SC", with_library=lib))
                self.assertEqual(complete("blkmodelctl", "trigger", "-c", "ch",
                                          with_library=lib), ["change"])
                # bash replaces what follows the ':' it broke the word at.
                self.assertEqual(complete("blkmodelctl", "list", "-o",
                                          "NAME,MAJ:M", with_library=lib),
                                 ["MIN"])
                self.assertEqual(complete("blkmodelctl", "list",
                                          "--output=NAME,MA", with_library=lib),
                                 ["NAME,MAJ:MIN"])
                # lsblk's +LIST: added to the default columns.
                self.assertEqual(complete("blkmodelctl", "list", "-o", "+MO",
                                          with_library=lib), ["+MODEL"])

    def test_devices_from_the_daemon(self):
        with bt.Daemon(bt.make_fixture() + "/sys"):
            got = complete("blkmodelctl", "--session", "list", "")
            for d in ("sda", "sda1", "cciss!c0d0", "md0", "loop0"):
                self.assertIn(d, got)
            self.assertEqual(complete("blkmodelctl", "--session", "info",
                                      "nvme0n1p"),
                             ["nvme0n1p1", "nvme0n1p2"])
            self.assertIn("block", complete("blkmodelctl", "--session",
                                            "tree", "b"))

    def test_attributes_from_the_daemon(self):
        """get and set complete what the object has: its typed properties,
        its files, a group's as group/name, and the files of the objects
        below queue/, iosched/ and device/."""
        with bt.Daemon(bt.make_fixture() + "/sys"):
            def attrs(*words):
                return complete("blkmodelctl", "--session", *words)
            got = attrs("get", "sda", "")
            for a in ("Size", "Partitions", "size", "ro", "queue/", "device/",
                      "power/control"):
                self.assertIn(a, got)
            self.assertNotIn("Scheduler", got)
            self.assertEqual(attrs("get", "sda", "q"), ["queue/"])
            self.assertEqual(attrs("set", "sda", "queue/read"), ["queue/read_ahead_kb"])
            self.assertEqual(attrs("get", "sda", "queue/Sch"),
                             ["queue/Scheduler", "queue/Schedulers"])
            self.assertIn("queue/iosched/fifo_batch", attrs("get", "sda", "queue/iosched/"))
            self.assertIn("device/model", attrs("get", "sda", "device/mo"))
            self.assertEqual(attrs("get", "dm-0", "dm/na"), ["dm/name"])
            # A partition has no queue; a name typed whole is its own completion.
            self.assertNotIn("queue/", attrs("get", "sda1", ""))
            self.assertEqual(attrs("get", "sda", "queue/scheduler"), ["queue/scheduler"])
            # OBJECT in any form Resolve takes, a /dev path and MAJ:MIN too.
            for form in ("/dev/sda", "8:0", bt.path_of("block", "sda")):
                self.assertEqual(attrs("set", form, "queue/read"), ["queue/read_ahead_kb"], form)

    def test_set_offers_only_what_is_writable(self):
        """set completes only what the daemon publishes as writable (access
        readwrite or write in its introspection), on the object typed and on
        the objects below it; get goes on offering everything."""
        with bt.Daemon(bt.make_fixture() + "/sys"):
            def attrs(*words):
                return complete("blkmodelctl", "--session", *words)
            got = attrs("set", "sda", "")
            for a in ("events_poll_msecs", "power/control", "trace/enable",
                      "queue/", "device/"):
                self.assertIn(a, got)
            # Typed properties and read-only files: not for set.
            for a in ("Size", "ReadOnly", "Partitions", "Name", "ro", "size",
                      "stat", "power/runtime_status"):
                self.assertNotIn(a, got)
            self.assertEqual(attrs("set", "sda", "R"), [])
            self.assertIn("ReadOnly", attrs("get", "sda", "R"))
            # Below queue/: Scheduler is writable, Schedulers is not.
            self.assertEqual(attrs("set", "sda", "queue/Sch"), ["queue/Scheduler"])
            self.assertEqual(attrs("set", "sda", "queue/h"), [])
            self.assertIn("queue/hw_sector_size", attrs("get", "sda", "queue/h"))
            # Write-only files are writable: device/delete, device/rescan.
            self.assertEqual(attrs("set", "sda", "device/re"), ["device/rescan"])
            self.assertNotIn("device/model", attrs("set", "sda", "device/"))
            # The object typed decides: a partition's own.
            got = attrs("set", "sda1", "")
            self.assertIn("power/control", got)
            self.assertNotIn("start", got)
            self.assertNotIn("queue/", got)

    def test_devices_on_a_bus_named_by_address(self):
        """--address=ADDR: bash breaks the address into words at '=' and
        ':'; the completion still finds the command and asks that bus."""
        addr = os.environ["DBUS_SESSION_BUS_ADDRESS"]
        with bt.Daemon(bt.make_fixture() + "/sys"):
            for lib in (True, False):
                for form in (["--address=" + addr], ["--address", addr]):
                    with self.subTest(bash_completion_library=lib, form=form):
                        self.assertEqual(
                            complete("blkmodelctl", *form, "info", "nvme0n1p",
                                     with_library=lib, session_bus=False),
                            ["nvme0n1p1", "nvme0n1p2"])
                        self.assertIn("--attribute-walk", complete(
                            "blkmodelctl", *form, "info", "--attr",
                            with_library=lib, session_bus=False))


if __name__ == "__main__":
    bt.main()
