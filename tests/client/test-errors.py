# SPDX-License-Identifier: LGPL-2.1-or-later
"""Exit status and messages: every failure exits 1 with exactly one line
on stderr naming the D-Bus error and nothing on stdout (but list
DEVICE..., which lists the devices it finds beside one line for each one
it does not, as lsblk does); every usage error exits 2 with one line;
with no daemon on the bus each command says "blkmodeld is not running on
this bus"; --help for the tool and for each command; colour only on a
terminal, and never with NO_COLOR."""
import os
import pty
import subprocess
import time
import unittest

import blkmodeltest as bt
import clienttest as ct

COMMANDS = ("list", "tree", "show", "info", "get", "set", "monitor", "wait",
            "events", "dump", "trigger", "settle")
NOT_RUNNING = ("blkmodeld is not running on the session bus (start it with "
               "'blkmodeld --session', or use --system or --address=ADDRESS)")


def on_tty(*args, environ):
    """blkmodelctl with stdout on a pseudo-terminal; returns its output."""
    master, slave = pty.openpty()
    p = subprocess.Popen([bt.BLKMODELCTL, "--session"] + list(args),
                         stdout=slave, stderr=subprocess.PIPE, env=environ)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:         # EIO: the other side is closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    p.wait(60)
    p.stderr.close()
    return p.returncode, out.decode()


class NoDaemon(unittest.TestCase):
    """The bus has no blkmodeld (the other class's daemon has stopped)."""

    def setUp(self):
        deadline = time.monotonic() + 10
        while bt.bus().name_has_owner(bt.BUS_NAME):
            self.assertLess(time.monotonic(), deadline, "a daemon is there")
            time.sleep(0.02)

    def test_not_running(self):
        for args in (("list",), ("tree",), ("tree", "sda"), ("show", "sda"),
                     ("get", "sda", "Size"), ("set", "sda", "ro", "1"),
                     ("monitor",), ("monitor", "--since=0"), ("events",),
                     ("dump",), ("trigger", "sda"), ("--json", "list"),
                     ("info", "-a", "sda"), ("settle",), ("trigger",),
                     ("list", "sda")):
            with self.subTest(args=args):
                p = ct.run(*args, timeout=30)
                ct.assert_one_line_failure(self, p, contains=(
                    NOT_RUNNING, "org.freedesktop.DBus.Error.ServiceUnknown"))

    def test_no_bus(self):
        p = ct.run("--address=unix:path=/nonexistent/bus", "list", bus=None)
        ct.assert_one_line_failure(self, p, contains=(
            "unix:path=/nonexistent/bus",))
        # TCP connects in the background: still said as the connection's failure.
        p = ct.run("--address=tcp:host=127.0.0.1,port=1", "list", bus=None)
        ct.assert_one_line_failure(self, p, contains=(
            "Failed to connect to the bus at tcp:host=127.0.0.1,port=1",))
        # No session bus at all: said so, not sd-bus's "No medium found".
        e = ct.env(DBUS_SESSION_BUS_ADDRESS=None, XDG_RUNTIME_DIR=None)
        p = ct.run("list", environ=e)
        line = ct.assert_one_line_failure(self, p, contains=(
            "No session bus", "--address=ADDRESS"))
        self.assertNotIn("No medium", line)
        # The system bus: its own words (whether or not one runs here).
        e = ct.env(DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent/sbus")
        p = ct.run("list", environ=e, bus="--system")
        ct.assert_one_line_failure(self, p, contains=("system bus",))
        # A bus with no daemon on it, named by address.
        addr = os.environ["DBUS_SESSION_BUS_ADDRESS"]
        p = ct.run("--address=" + addr, "list", bus=None)
        ct.assert_one_line_failure(self, p, contains=(
            "blkmodeld is not running on the bus at " + addr,
            "org.freedesktop.DBus.Error.ServiceUnknown"))


class Errors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sys = bt.make_fixture() + "/sys"
        cls.dm = bt.Daemon(cls.sys)

    @classmethod
    def tearDownClass(cls):
        cls.dm.stop()

    def test_no_such_object(self):
        for args in (("show", "nosuchdisk"), ("get", "nosuchdisk", "Size"),
                     ("set", "nosuchdisk", "ro", "1"),
                     ("tree", "nosuchdisk"), ("trigger", "nosuchdisk"),
                     ("info", "-a", "nosuchdisk"), ("list", "nosuchdisk"),
                     ("trigger", "--settle", "sda1", "nosuchdisk"),
                     ("--json", "show", "nosuchdisk")):
            with self.subTest(args=args):
                line = ct.assert_one_line_failure(self, ct.run(*args))
                self.assertEqual(line, "blkmodelctl: No such object: "
                                 "nosuchdisk (org.blkmodel1.Error."
                                 "NoSuchObject)")

    def test_list_names_what_is_missing_and_lists_the_rest(self):
        """As lsblk and ls: each DEVICE that names nothing gets its one
        line on stderr, the others are listed as if named alone, and the
        exit status is 1."""
        missing = ("blkmodelctl: No such object: %s "
                   "(org.blkmodel1.Error.NoSuchObject)")
        for opts in ((), ("-J",), ("-n", "-o", "NAME,SIZE")):
            with self.subTest(opts=opts):
                alone = ct.run("list", *opts, "sda", "md0", check=0).stdout
                self.assertIn("sda", alone)
                p = ct.run("list", *opts, "sda", "nosuchdisk", "md0",
                           "nosuch2")
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertEqual(p.stdout, alone)
                self.assertEqual(p.stderr.split("\n"),
                                 [missing % "nosuchdisk", missing % "nosuch2",
                                  ""])
        # Named but no block device (a queue): the same, in its words.
        p = ct.run("list", "sda/queue", "sda")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stdout, ct.run("list", "sda", check=0).stdout)
        self.assertEqual(len(p.stderr.split("\n")), 2, p.stderr)
        self.assertIn("Not a block device: sda/queue", p.stderr)
        # Nothing found: no table of nothing.
        p = ct.run("list", "nosuchdisk", "nosuch2")
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertEqual(p.stderr.split("\n"),
                         [missing % "nosuchdisk", missing % "nosuch2", ""])

    def test_trigger_with_a_missing_object_triggers_nothing(self):
        """trigger acts: as udevadm trigger, one OBJECT that names nothing
        fails the command before any is triggered."""
        uevent = os.path.join(self.sys, "block/sda/sda1/uevent")
        with open(uevent) as f:
            before = f.read()
        for args in (("trigger", "sda1", "nosuchdisk"),
                     ("trigger", "nosuchdisk", "sda1")):
            with self.subTest(args=args):
                ct.assert_one_line_failure(self, ct.run(*args), contains=(
                    "No such object: nosuchdisk",))
                with open(uevent) as f:
                    self.assertEqual(f.read(), before)

    def test_other_failures(self):
        cases = [
            (("get", "sda", "nosuchattr"), ("nosuchattr", "UnknownProperty")),
            (("get", "sda", "power/nosuchattr"), ("UnknownProperty",)),
            (("get", "sda1", "queue/scheduler"), ("UnknownProperty",)),
            (("get", "md0", "device/model"), ("UnknownProperty",)),
            (("set", "sda", "size", "1"), ("size", "org.freedesktop.DBus")),
            # An empty VALUE is a value: the daemon answers for it.
            (("set", "sda", "size", ""), ("size", "org.freedesktop.DBus")),
            # Read-only, whatever the value: not that it does not fit the type.
            (("set", "sda", "Size", "x"), ("PropertyReadOnly",)),
            (("set", "sda", "Partitions", "x"), ("PropertyReadOnly",)),
            (("trigger", "sda/queue"), ("InvalidArgs",)),
            (("wait", "nosuchdisk", "--timeout=0.1"), ("Timed out",)),
            # The Manager is an object Resolve names, not a kobject (it crashed info).
            (("info", "/org/blkmodel1/Manager"), ("Not a kobject: /org/blkmodel1/Manager",)),
            (("info", "-a", "/org/blkmodel1/Manager"), ("Not a kobject",)),
            (("--json", "info", "/org/blkmodel1/Manager"), ("Not a kobject",)),
        ]
        for args, contains in cases:
            with self.subTest(args=args):
                ct.assert_one_line_failure(self, ct.run(*args),
                                           contains=contains)

    def test_usage(self):
        for args in ((), ("frobnicate",), ("tree", "block", "x"), ("show",),
                     ("get", "sda"), ("set", "sda", "ro"),
                     ("tree", "a", "b"), ("wait",),
                     ("monitor", "--since=abc"), ("monitor", "--since=-1"),
                     ("monitor", "--action=frob"),
                     ("monitor", "--action=add,,remove"),
                     ("events", "--timeout=1"), ("list", "--since=1"),
                     ("wait", "sda", "--timeout=soon"),
                     ("wait", "sda", "--timeout"), ("--bogus", "list"),
                     ("list", "-x"), ("trigger", "--action=frobnicate", "sda"),
                     ("trigger", "--action=add,remove", "sda"),
                     ("list", "-o", "NOSUCHCOLUMN"), ("list", "--output="),
                     ("info",), ("info", "a", "b"), ("settle", "x"),
                     ("wait", ""), ("show", ""), ("get", "sda", ""),
                     ("get", "", "Size"), ("list", "sda", ""), ("trigger", ""),
                     ("set", "", "ro", "1"), ("help", ""),
                     ("settle", "--timeout=soon"), ("get", "-a", "sda", "x"),
                     ("help", "frobnicate")):
            with self.subTest(args=args):
                p = ct.run(*args)
                ct.assert_one_line_failure(self, p, code=2)
                # One pointer to the help, at the end.
                self.assertEqual(p.stderr.count("(see '"), 1, p.stderr)
                self.assertTrue(p.stderr.rstrip().endswith(" --help')"), p.stderr)
        p = ct.run("--address=", "list", bus=None)
        ct.assert_one_line_failure(self, p, code=2)

    def test_usage_names_the_option(self):
        # The option as given, not its argument: "-t 5" is -t, and so is "-bt 5".
        for args, name in ((("list", "-t", "5"), "'-t'"),
                           (("list", "-bt", "5"), "'-t'"),
                           (("events", "-o", "NAME"), "'-o'"),
                           (("list", "--timeout", "5"), "'--timeout'"),
                           (("list", "--timeout=5"), "'--timeout'"),
                           (("trigger", "-s", ""), "'-s'"),
                           (("wait", "sda", "--since", "3"), "'--since'")):
            with self.subTest(args=args):
                p = ct.run(*args)
                line = ct.assert_one_line_failure(self, p, code=2, contains=(name,))
                self.assertNotIn("'5'", line)
                self.assertNotIn("'NAME'", line)

    def test_column_lsblk_reads_elsewhere(self):
        # lsblk's columns from the mount table, blkid or the node: refused with where they come from.
        for column, source in (("MOUNTPOINTS", "the mount table"), ("+fstype", "udev's database"), ("FSAVAIL", "the mount table"),
                               ("NAME,UUID", "udev's database"), ("OWNER", "the device node")):
            with self.subTest(column=column):
                p = ct.run("list", "-o", column)
                ct.assert_one_line_failure(self, p, code=2,
                                           contains="is not offered: lsblk reads it from " + source)
        p = ct.run("list", "-o", "MOUNTPOINTSX")
        ct.assert_one_line_failure(self, p, code=2, contains="unknown column 'MOUNTPOINTSX'")

    def test_help(self):
        for args in (("--help",), ("-h",), ("help",)):
            p = ct.run(*args, check=0)
            self.assertEqual(p.stderr, "")
            for c in COMMANDS:
                self.assertIn("\n  " + c + " ", p.stdout)
        for c in COMMANDS:
            for args in ((c, "--help"), ("help", c), ("--json", c, "-h")):
                with self.subTest(args=args):
                    p = ct.run(*args, check=0)
                    self.assertEqual(p.stderr, "")
                    self.assertTrue(p.stdout.startswith(
                        "blkmodelctl [OPTIONS] " + c), p.stdout)
        self.assertIn("--since=SEQ", ct.run("monitor", "--help").stdout)
        self.assertIn("--removed", ct.run("wait", "--help").stdout)
        self.assertIn("--bytes", ct.run("list", "--help").stdout)
        self.assertIn("ZONE-AMAX", ct.run("list", "--help").stdout)
        self.assertIn("--settle", ct.run("trigger", "--help").stdout)
        self.assertIn("--attribute-walk", ct.run("info", "--help").stdout)

    def test_colour(self):
        code, out = on_tty("list", environ=ct.env(NO_COLOR=None, TERM="xterm"))
        self.assertEqual(code, 0)
        self.assertIn("\033[1m", out)
        for e in (ct.env(NO_COLOR="1", TERM="xterm"),
                  ct.env(NO_COLOR=None, TERM="dumb")):
            code, out = on_tty("list", environ=e)
            self.assertEqual(code, 0)
            self.assertNotIn("\033", out)
            self.assertIn("sda", out)
        # Not a terminal: no colour even without NO_COLOR.
        p = ct.run("list", check=0, environ=ct.env(NO_COLOR=None,
                                                    TERM="xterm"))
        self.assertNotIn("\033", p.stdout)
        p = ct.run("monitor", "--since=0", "--action=frob",
                   environ=ct.env(NO_COLOR=None))
        self.assertNotIn("\033", p.stderr)

    def test_closed_stdout(self):
        # A reader that went away is a failure, not a silent success.
        with open("/dev/full", "w") as full:
            p = subprocess.run([bt.BLKMODELCTL, "--session", "dump"],
                               stdout=full, stderr=subprocess.PIPE,
                               text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len(p.stderr.strip().split("\n")), 1, p.stderr)


if __name__ == "__main__":
    bt.main()
