# SPDX-License-Identifier: LGPL-2.1-or-later
"""Privileged calls authorized by a real polkitd (SPEC §6).

On the test's private bus (any-user-bus.conf) the test starts Debian's own
/usr/lib/polkit-1/polkitd, which finds "the system bus" through
DBUS_SYSTEM_BUS_ADDRESS.  polkitd reads actions only from
/usr/share/polkit-1/actions and rules only from /etc/polkit-1/rules.d and
/usr/share/polkit-1/rules.d, so the test puts the repository's .policy file
and a .rules file there under names of its own, and three system users it
creates; all of it is removed afterwards, also when the test fails.

The rules: the "yes" user is allowed every org.blkmodel1 action (but
not writing nr_requests: the call's details reach the rules), the "no"
user none, the "ask" user must authenticate as an administrator.
Calls are made as those users by a small Gio client.
"""
import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import time
import unittest

import dbus
import dbus.service
import blkmodeltest as bt

POLKITD = "/usr/lib/polkit-1/polkitd"
POLKIT_NAME = "org.freedesktop.PolicyKit1"
ACTIONS_DIR = "/usr/share/polkit-1/actions"
RULES_DIR = "/etc/polkit-1/rules.d"
POLICY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "polkit", "org.blkmodel1.policy")

DENIED = "org.freedesktop.DBus.Error.AccessDenied"
INTERACTIVE = "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired"
QUEUE = bt.IFACE + "Queue"

RULES = r"""// blkmodel test %(tag)s: removed when the test ends.
polkit.addRule(function(action, subject) {
    if (action.id.indexOf("org.blkmodel1.") != 0)
        return polkit.Result.NOT_HANDLED;
    if (subject.user == "%(yes)s") {
        if (action.id == "org.blkmodel1.set-attribute" &&
            action.lookup("attribute") == "nr_requests")
            return polkit.Result.NO;
        return polkit.Result.YES;
    }
    if (subject.user == "%(no)s")
        return polkit.Result.NO;
    if (subject.user == "%(ask)s")
        return polkit.Result.AUTH_ADMIN;
    return polkit.Result.NOT_HANDLED;
});
"""

# Runs as the uid and gid in argv: each call's ["ok"] or [error name,
# message].  Gio, because it can set the allow-interactive-authorization flag.
CALLER = r'''
import json, os, sys
from gi.repository import Gio, GLib
uid, gid, calls = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
os.setgroups([]); os.setgid(gid); os.setuid(uid)
if os.environ.get("BLKMT_WAIT"):
    # The test registers an authentication agent for this process first.
    print("ready", flush=True)
    sys.stdin.readline()
conn = Gio.DBusConnection.new_for_address_sync(
    os.environ["DBUS_SESSION_BUS_ADDRESS"],
    Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
    Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
M = ("/org/blkmodel1/Manager", "org.blkmodel1.Manager")
out = []
for c in calls:
    kind, interactive = c[0], c[-1]
    if kind == "set":
        path, iface, method = c[1], "org.freedesktop.DBus.Properties", "Set"
        args = GLib.Variant("(ssv)", (c[2], c[3], GLib.Variant("s", c[4])))
    elif kind == "rescan":
        (path, iface), method, args = M, "Rescan", None
    elif kind == "trigger":
        (path, iface), method = M, "Trigger"
        args = GLib.Variant("(os)", (c[1], c[2]))
    else:
        (path, iface), method, args = M, "Resolve", GLib.Variant("(s)", (c[1],))
    flags = (Gio.DBusCallFlags.ALLOW_INTERACTIVE_AUTHORIZATION if interactive
             else Gio.DBusCallFlags.NONE)
    try:
        conn.call_sync("org.blkmodel1", path, iface, method, args, None, flags,
                       120000, None)
        out.append(["ok"])
    except GLib.Error as e:
        name = Gio.DBusError.get_remote_error(e)
        out.append([name, e.message.split(name + ": ", 1)[-1]])
print(json.dumps(out))
'''


AGENT_IFACE = "org.freedesktop.PolicyKit1.AuthenticationAgent"
AUTHORITY = ("/org/freedesktop/PolicyKit1/Authority",
             "org.freedesktop.PolicyKit1.Authority")


class Agent(dbus.service.Object):
    """A polkit authentication agent for one process, as a desktop's would
    be.  Each BeginAuthentication takes the next of answers: True says the
    administrator typed the password (what polkit-agent-helper-1 tells
    polkitd, as root, after PAM said yes), False dismisses the dialog."""
    PATH = "/org/blkmodel1/test/agent"

    def __init__(self, bus, answers):
        super().__init__(bus, self.PATH)
        self.bus = bus
        self.answers = list(answers)
        self.calls = []

    def authority(self):
        return dbus.Interface(self.bus.get_object(POLKIT_NAME, AUTHORITY[0]),
                              AUTHORITY[1])

    def register(self, pid):
        # start-time 0: polkitd reads the process's own.
        self.authority().RegisterAuthenticationAgent(
            ("unix-process", {"pid": dbus.UInt32(pid),
                              "start-time": dbus.UInt64(0)}),
            "C", self.PATH)

    @dbus.service.method(AGENT_IFACE, in_signature="sssa{ss}sa(sa{sv})",
                         out_signature="")
    def BeginAuthentication(self, action_id, message, icon, details, cookie,
                            identities):
        self.calls.append((str(action_id), bt.unwrap(details)))
        if not self.answers.pop(0):
            raise dbus.DBusException(
                "dismissed", name="org.freedesktop.PolicyKit1.Error.Cancelled")
        self.authority().AuthenticationAgentResponse2(
            dbus.UInt32(0), cookie, identities[0])

    @dbus.service.method(AGENT_IFACE, in_signature="s", out_signature="")
    def CancelAuthentication(self, cookie):
        pass


def caller_command(user, calls):
    return ["/usr/bin/python3", "-c", CALLER, str(user.pw_uid),
            str(user.pw_gid), json.dumps(calls)]


def call_as(user, *calls):
    p = subprocess.run(caller_command(user, list(calls)), capture_output=True,
                       text=True, timeout=300)
    if p.returncode != 0:
        raise AssertionError("caller as %s failed:\n%s" % (user.pw_name,
                                                          p.stderr))
    return json.loads(p.stdout)


def retry(argv, attempts=20):
    """useradd/userdel: another process may hold /etc/passwd's lock."""
    for _ in range(attempts):
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if p.returncode == 0:
            return
        if "lock" not in p.stderr:
            break
        time.sleep(0.25)
    raise AssertionError("%s: %s" % (" ".join(argv), p.stderr.strip()))


@unittest.skipUnless(os.geteuid() == 0, "needs root: polkit's directories, "
                     "system users, calls as other uids")
class Polkit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(POLKITD, os.X_OK):
            raise AssertionError(POLKITD + " is missing: install polkitd "
                                 "(scripts/install-deps.sh does)")
        tag = "%d-%s" % (os.getpid(), secrets.token_hex(3))
        cls.users = {}
        for role in ("yes", "no", "ask"):
            name = "blkmt-%s-%s" % (role, tag.split("-")[1])
            retry(["useradd", "--system", "--no-create-home", "--user-group",
                   "--shell", "/usr/sbin/nologin", name])
            cls.addClassCleanup(retry, ["userdel", name])
            cls.users[role] = pwd.getpwnam(name)

        cls.policy = os.path.join(ACTIONS_DIR,
                                  "org.blkmodel1.test-%s.policy" % tag)
        cls.rules = os.path.join(RULES_DIR, "10-blkmodel-test-%s.rules" % tag)
        for path in (cls.policy, cls.rules):
            cls.addClassCleanup(lambda p=path: os.path.exists(p)
                                and os.unlink(p))
        shutil.copyfile(POLICY, cls.policy)
        with open(cls.rules, "w") as f:
            f.write(RULES % dict(tag=tag, **{r: u.pw_name for r, u
                                             in cls.users.items()}))
        # polkitd reads the rules as its own user.
        pk = pwd.getpwnam("polkitd")
        os.chown(cls.rules, pk.pw_uid, 0)
        os.chmod(cls.rules, 0o644)

        # A fixture every test user may reach; the daemon runs as root.
        cls.dir = bt.make_fixture()
        os.chmod(cls.dir, 0o755)
        cls.sys = os.path.join(cls.dir, "sys")
        cls.qdir = [r for r, _, _ in os.walk(os.path.join(cls.sys, "devices"))
                    if r.endswith("/block/sda/queue")][0]
        cls.queue = bt.path_of("block", "sda", "queue")

        cls.addr = os.environ["DBUS_SESSION_BUS_ADDRESS"]
        cls.bus = bt.bus()
        cls.polkitd = None
        cls.addClassCleanup(cls.stop_polkitd)
        cls.start_polkitd()

    @classmethod
    def start_polkitd(cls):
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=cls.addr)
        cls.polkitd_log = open(os.path.join(cls.dir, "polkitd.log"), "w+")
        cls.polkitd = subprocess.Popen([POLKITD], env=env,
                                       stdout=cls.polkitd_log,
                                       stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not cls.bus.name_has_owner(POLKIT_NAME):
            if cls.polkitd.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("polkitd did not start:\n"
                                     + cls.polkitd_output())
            time.sleep(0.05)

    @classmethod
    def polkitd_output(cls):
        cls.polkitd_log.flush()
        cls.polkitd_log.seek(0)
        return cls.polkitd_log.read()

    @classmethod
    def stop_polkitd(cls):
        if cls.polkitd is None:
            return
        if cls.polkitd.poll() is None:
            cls.polkitd.send_signal(signal.SIGCONT)
            cls.polkitd.terminate()
            try:
                cls.polkitd.wait(30)
            except subprocess.TimeoutExpired:
                cls.polkitd.kill()
                cls.polkitd.wait()
        cls.polkitd = None
        path = cls.polkitd_log.name
        cls.polkitd_log.close()
        os.unlink(path)

    def setUp(self):
        if self.polkitd is None:
            self.start_polkitd()
        self.set_attr("read_ahead_kb", "128")

    def set_attr(self, name, value):
        with open(os.path.join(self.qdir, name), "w") as f:
            f.write(value + "\n")

    def attr(self, name):
        return bt.read_attr(os.path.join(self.qdir, name))

    def wait_asked(self, dm, role):
        """Until the daemon has asked polkit about a call of the user's (its debug log says so)."""
        line = "Asked polkit whether uid %d may " % self.users[role].pw_uid
        self.assertTrue(bt.wait_until(lambda: line in dm.output(), timeout=60), dm.output()[-2000:])

    def set_call(self, prop, value, interactive=False):
        return ["set", self.queue, QUEUE, prop, value, interactive]

    # ---- the tests ---------------------------------------------------------

    def test_policy_as_polkitd_reads_it(self):
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.addr)
        for action in ("set-attribute", "trigger", "rescan"):
            with self.subTest(action=action):
                p = subprocess.run(["pkaction", "--verbose", "--action-id",
                                    "org.blkmodel1." + action], env=env,
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 0, p.stderr)
                facts = {k.strip(): v.strip() for k, _, v in
                         (line.partition(":") for line in
                          p.stdout.splitlines()[1:])}
                self.assertEqual(facts["implicit any"], "no")
                self.assertEqual(facts["implicit inactive"], "no")
                self.assertEqual(facts["implicit active"], "auth_admin")

    def test_who_may(self):
        with bt.Daemon(self.sys) as dm:
            calls = [self.set_call("read_ahead_kb", "512", False),
                     ["rescan", False],
                     ["trigger", bt.path_of("block", "sda"), "change", False],
                     # polkit's rules see the call's details.
                     self.set_call("nr_requests", "77", False)]
            got = call_as(self.users["yes"], *calls)
            self.assertEqual(got[:3], [["ok"]] * 3)
            self.assertEqual(got[3][0], DENIED, got[3])
            self.assertEqual(self.attr("read_ahead_kb"), "512")
            self.assertEqual(dm.get(self.queue, QUEUE, "read_ahead_kb"), "512")
            self.assertNotEqual(self.attr("nr_requests"), "77")

            self.set_attr("read_ahead_kb", "128")
            got = call_as(self.users["no"], *calls)
            for g in got:
                self.assertEqual(g[0], DENIED, g)
                # Says who may, truthfully: the daemon runs as root here.
                self.assertIn("allowed to root,", g[1])
                self.assertIn("org.blkmodel1.", g[1])
                self.assertIn("polkit did not", g[1])
            self.assertEqual(self.attr("read_ahead_kb"), "128")

            # May authenticate, allows it, but has no agent to do it with.
            got = call_as(self.users["ask"],
                          self.set_call("read_ahead_kb", "512", True))
            self.assertEqual(got[0][0], DENIED, got)
            self.assertIn("no polkit authentication agent", got[0][1])
            self.assertEqual(self.attr("read_ahead_kb"), "128")

            # Unprivileged calls never ask polkit.
            self.assertEqual(call_as(self.users["no"], ["resolve", "sda",
                                                        False]), [["ok"]])
            # Root is not asked about either.
            dm.call(self.queue, bt.PROPS, "Set", QUEUE, "read_ahead_kb",
                    dbus.String("256", variant_level=1))
            self.assertEqual(self.attr("read_ahead_kb"), "256")

    def test_interactive_flag_is_honoured(self):
        """The "ask" user must authenticate.  Without the flag the caller is
        told so; with it, polkit asks the caller's authentication agent
        (the test's own, below), and the call waits for its answer."""
        agent = Agent(self.bus, [True, False])
        self.addCleanup(agent.remove_from_connection)
        with bt.Daemon(self.sys) as dm:
            caller = subprocess.Popen(
                caller_command(self.users["ask"], [
                    self.set_call("read_ahead_kb", "512", False),
                    self.set_call("read_ahead_kb", "512", True),
                    self.set_call("read_ahead_kb", "1024", True)]),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, env=dict(
                    os.environ, BLKMT_WAIT="1"))
            try:
                self.assertEqual(caller.stdout.readline(), "ready\n")
                agent.register(caller.pid)
                caller.stdin.write("go\n")
                caller.stdin.close()
                caller.stdin = None  # communicate() must not flush it
                ctx = bt.GLib.MainContext.default()
                deadline = time.monotonic() + 120
                while caller.poll() is None and time.monotonic() < deadline:
                    while ctx.pending():
                        ctx.iteration(False)
                    time.sleep(0.005)
            finally:
                if caller.poll() is None:
                    caller.kill()
                out, err = caller.communicate()
            self.assertEqual(caller.returncode, 0, err)
            got = json.loads(out)
            # No flag: told to allow interaction; polkit asked nobody.
            self.assertEqual(got[0][0], INTERACTIVE, got)
            # The agent authenticated an administrator: done.
            self.assertEqual(got[1], ["ok"])
            # The agent was dismissed: refused, nothing written.
            self.assertEqual(got[2][0], DENIED, got)
            self.assertEqual(self.attr("read_ahead_kb"), "512")
            self.assertEqual([c[0] for c in agent.calls],
                             ["org.blkmodel1.set-attribute"] * 2)
            # Asked about the caller, by the daemon.  (polkit hands its agent
            # only its own details; the rules see ours: nr_requests above.)
            self.assertEqual(agent.calls[0][1]["polkit.subject-pid"],
                             str(caller.pid))
            self.assertEqual(agent.calls[0][1]["polkit.caller-pid"],
                             str(dm.proc.pid))
            self.assertIn("Refused a call by uid %d" % self.users["ask"].pw_uid,
                          dm.output())

    def test_loop_does_not_wait_for_polkit(self):
        """polkitd stopped mid-question: the daemon goes on serving others,
        and answers the waiting call once polkit does."""
        with bt.Daemon(self.sys) as dm:
            self.polkitd.send_signal(signal.SIGSTOP)
            try:
                caller = subprocess.Popen(
                    caller_command(self.users["yes"],
                                   [self.set_call("read_ahead_kb", "1024",
                                                  False)]),
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                # The call is waiting on polkit once the daemon logged it
                # asked.
                self.wait_asked(dm, "yes")
                self.assertIsNone(caller.poll())
                worst = 0
                for _ in range(20):
                    t = time.monotonic()
                    self.assertEqual(dm.get(self.queue, QUEUE,
                                            "read_ahead_kb"), "128")
                    dm.manager("Resolve", "sda")
                    worst = max(worst, time.monotonic() - t)
                self.assertLess(worst, 1.0)
                self.assertIsNone(caller.poll())
                self.assertEqual(self.attr("read_ahead_kb"), "128")
            finally:
                self.polkitd.send_signal(signal.SIGCONT)
            out, err = caller.communicate(timeout=120)
            self.assertEqual(caller.returncode, 0, err)
            self.assertEqual(json.loads(out), [["ok"]])
            self.assertEqual(self.attr("read_ahead_kb"), "1024")

    def test_caller_gone_while_waiting(self):
        """The caller disconnects while polkit decides: the daemon drops the
        answer and stays healthy."""
        with bt.Daemon(self.sys) as dm:
            self.polkitd.send_signal(signal.SIGSTOP)
            try:
                caller = subprocess.Popen(
                    caller_command(self.users["yes"],
                                   [self.set_call("read_ahead_kb", "2048",
                                                  False)]),
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                self.wait_asked(dm, "yes")
                caller.kill()
                caller.wait()
            finally:
                self.polkitd.send_signal(signal.SIGCONT)
            # polkit cannot find the subject any more: refused, not written.  Logged once polkit
            # answered; a second at most, as before, should the daemon only drop the answer.
            bt.wait_until(lambda: "Refused a call by uid %d" % self.users["yes"].pw_uid
                          in dm.output(), timeout=1.0)
            self.assertEqual(dm.manager("Resolve", "sda"),
                             bt.path_of("block", "sda"))
            self.assertEqual(self.attr("read_ahead_kb"), "128")

    def test_exit_while_waiting(self):
        """SIGTERM while a call waits for polkit: a clean exit (no leak
        under ASan), and the caller hears that the daemon exits, as any
        call then does, not the bus's NoReply."""
        dm = bt.Daemon(self.sys)
        try:
            self.polkitd.send_signal(signal.SIGSTOP)
            caller = subprocess.Popen(
                caller_command(self.users["yes"],
                               [self.set_call("read_ahead_kb", "512",
                                              False)]),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.wait_asked(dm, "yes")
            self.assertIsNone(caller.poll())
        finally:
            dm.stop()
            self.polkitd.send_signal(signal.SIGCONT)
        out, err = caller.communicate(timeout=120)
        self.assertEqual(caller.returncode, 0, err)
        self.assertEqual(json.loads(out)[0][:2],
                         ["org.freedesktop.DBus.Error.ServiceUnknown", "blkmodeld is exiting."])
        self.assertEqual(self.attr("read_ahead_kb"), "128")

    def test_no_polkit_on_the_bus(self):
        type(self).stop_polkitd()
        self.assertFalse(self.bus.name_has_owner(POLKIT_NAME))
        with bt.Daemon(self.sys) as dm:
            got = call_as(self.users["yes"],
                          self.set_call("read_ahead_kb", "512", False),
                          ["rescan", False])
            for g in got:
                self.assertEqual(g[0], DENIED, g)
                self.assertIn("polkit (%s) is not available" % POLKIT_NAME,
                              g[1])
            self.assertEqual(self.attr("read_ahead_kb"), "128")
            dm.manager("Rescan")  # root still may

    def test_daemons_own_user_is_not_asked(self):
        """A daemon running as the "no" user: that user may (polkit would
        have said no), and root may."""
        me = self.users["no"]
        d = bt.make_fixture()
        os.chmod(d, 0o755)
        for top, dirs, files in os.walk(d):
            for n in dirs + files:
                os.lchown(os.path.join(top, n), me.pw_uid, me.pw_gid)
        qdir = [r for r, _, _ in os.walk(os.path.join(d, "sys", "devices"))
                if r.endswith("/block/sda/queue")][0]
        log = open(os.path.join(d, "blkmodeld.log"), "w+")

        def become():
            os.setgroups([])
            os.setgid(me.pw_gid)
            os.setuid(me.pw_uid)
        proc = subprocess.Popen([bt.BLKMODELD, "--session", "--no-uevents",
                                 "--sysfs-root=" + d + "/sys"],
                                stdout=log, stderr=log, preexec_fn=become)
        try:
            deadline = time.monotonic() + 60
            while not self.bus.name_has_owner(bt.BUS_NAME):
                self.assertIsNone(proc.poll(), "blkmodeld as %s exited" %
                                  me.pw_name)
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.05)
            got = call_as(me, self.set_call("read_ahead_kb", "512", False),
                          ["rescan", False])
            self.assertEqual(got, [["ok"], ["ok"]])
            self.assertEqual(bt.read_attr(qdir + "/read_ahead_kb"), "512")
            got = call_as(self.users["yes"], ["rescan", False])
            # polkit lets only root ask about someone else's connection.
            self.assertEqual(got[0][0], DENIED, got)
            self.assertIn("allowed to root and uid %d (blkmodeld's own)"
                          % me.pw_uid, got[0][1])
            self.bus.get_object(bt.BUS_NAME, bt.MANAGER_PATH).Rescan(
                dbus_interface=bt.MANAGER)
        finally:
            proc.terminate()
            rc = proc.wait(60)
            log.seek(0)
            out = log.read()
            log.close()
        self.assertEqual(rc, 0, out)
        for mark in bt._SANITIZER_MARKS:
            self.assertNotIn(mark, out)


if __name__ == "__main__":
    bt.main()
