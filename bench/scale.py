#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""SPEC §9 scale benchmark: blkmodeld against lsblk on kernel-shaped trees.

    bench/scale.py                       build 1,000- and 10,000-disk trees
    bench/scale.py --disks 10000         one size
    bench/scale.py --tree DIR            reuse a tree (DIR/sys) built by
                                         tests/fixtures/mksysfs.py
    bench/scale.py --perf DIR            also perf-record startup and
                                         GetManagedObjects (largest tree)

For each tree, in one run:

* lsblk --sysroot DIR -J -b -o NAME,MAJ:MIN,SIZE,RO,TYPE,SCHED: wall time,
  median of --runs after one untimed warm-up (so that both lsblk and the
  daemon read from a warm page cache);
* blkmodeld start -> name taken, on a private dbus-daemon started here
  (`dbus-daemon --session --fork`), daemon args --address=ADDR
  --sysfs-root=DIR/sys --no-uevents: median of --runs; the time is taken
  when NameOwnerChanged for org.blkmodel1 reaches a client subscribed
  before the daemon was spawned;
* one complete GetManagedObjects with bench/gmo-client.c (bare sd-bus, built
  here): median of --runs of "call" (send -> whole reply received) and the
  time to read every value of the reply; for comparison the same call from
  dbus-python and from `busctl --json=short call` (client-side costs);
* `busctl --address=ADDR tree org.blkmodel1` wall time;
* daemon VmRSS (/proc/PID/status) after start and after GetManagedObjects,
  per published object (Manager.ObjectCount).

It prints ratios against lsblk and the §9 targets and writes
bench/RESULTS.md (--results).  Not part of the test suite.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MKSYSFS = os.path.join(REPO, "tests", "fixtures", "mksysfs.py")
BUS_NAME = "org.blkmodel1"
ROOT = "/org/blkmodel1"
MANAGER_PATH = ROOT + "/Manager"

TARGETS = {
    "name_ratio": 0.25,      # name taken <= 0.25 x lsblk
    "gmo_ratio": 1.0,        # GetManagedObjects <= 1 x lsblk
    "rss_per_object": 1024,  # bytes
    "busctl_tree": 5.0,      # seconds
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def median(xs):
    return statistics.median(xs)


def timed(cmd, **kw):
    t0 = time.monotonic()
    p = subprocess.run(cmd, **kw)
    return time.monotonic() - t0, p


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) * 1024
    return out


def proc_cpu(pid):
    """utime+stime of a process, seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) // 1024
    return "%s, %d CPUs, %d MiB RAM, Linux %s" % (cpu, os.cpu_count(), mem,
                                                  platform.release())


def fs_of(path):
    p = subprocess.run(["df", "-T", "--output=fstype", path],
                       capture_output=True, text=True)
    lines = p.stdout.split()
    return lines[-1] if p.returncode == 0 and lines else "?"


# ---- the private bus ---------------------------------------------------------

class Bus:
    def __init__(self):
        p = subprocess.run(["dbus-daemon", "--session", "--fork",
                            "--print-address=1", "--print-pid=1"],
                           capture_output=True, text=True, check=True)
        self.address, pid = p.stdout.split("\n")[:2]
        self.pid = int(pid)

    def close(self):
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def connect(address):
    import dbus
    from dbus.mainloop.glib import DBusGMainLoop
    DBusGMainLoop(set_as_default=True)
    return dbus.bus.BusConnection(address)


# ---- the daemon --------------------------------------------------------------

class Daemon:
    def __init__(self, exe, bus, sysfs, conn, wrapper=(), timeout=600):
        """Spawn blkmodeld; returns when it has taken its name."""
        from gi.repository import GLib
        self.conn = conn
        self.log = tempfile.TemporaryFile(mode="w+")
        loop = GLib.MainLoop()
        taken = []

        def on_owner(name, old, new):
            if name == BUS_NAME and new:
                taken.append(time.monotonic())
                loop.quit()
        match = conn.add_signal_receiver(
            on_owner, signal_name="NameOwnerChanged",
            dbus_interface="org.freedesktop.DBus",
            bus_name="org.freedesktop.DBus", arg0=BUS_NAME)
        # The match rule is in place once a round trip has been made.
        conn.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")\
            .GetId(dbus_interface="org.freedesktop.DBus")

        def on_timeout():
            loop.quit()
            return False
        GLib.timeout_add(timeout * 1000, on_timeout)

        args = list(wrapper) + [exe, "--address=" + bus.address,
                                "--sysfs-root=" + sysfs, "--no-uevents"]
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log)

        def check_exit():
            if self.proc.poll() is not None:
                loop.quit()
                return False
            return True
        GLib.timeout_add(100, check_exit)
        loop.run()
        match.remove()
        if not taken:
            self.log.seek(0)
            raise SystemExit("blkmodeld did not take its name:\n"
                             + self.log.read())
        self.start_time = taken[0] - self.t0
        self.pid = self.daemon_pid()

    def daemon_pid(self):
        """The blkmodeld process (a child of perf when wrapped)."""
        import dbus
        bus = self.conn.get_object("org.freedesktop.DBus",
                                   "/org/freedesktop/DBus")
        return int(bus.GetConnectionUnixProcessID(
            BUS_NAME, dbus_interface="org.freedesktop.DBus"))

    def manager_prop(self, name):
        obj = self.conn.get_object(BUS_NAME, MANAGER_PATH, introspect=False)
        return obj.Get("org.blkmodel1.Manager", name,
                       dbus_interface="org.freedesktop.DBus.Properties")

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.seek(0)
        out = self.log.read()
        self.log.close()
        return self.proc.returncode, out


# ---- one tree ------------------------------------------------------------------

def build_tree(workdir, disks, partitions):
    d = os.path.join(workdir, "n%d" % disks)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    log("building %s: %d disks x %d partitions ..." % (d, disks, partitions))
    t, _ = timed([sys.executable, MKSYSFS, d, "--disks", str(disks),
                  "--partitions", str(partitions)], check=True)
    log("  built in %.1f s" % t)
    return d, t


def gmo_client(workdir):
    exe = os.path.join(workdir, "gmo-client")
    src = os.path.join(HERE, "gmo-client.c")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        flags = subprocess.run(["pkg-config", "--cflags", "--libs",
                                "libsystemd"], capture_output=True,
                               text=True, check=True).stdout.split()
        subprocess.run(["cc", "-O2", "-o", exe, src] + flags, check=True)
    return exe


def perf_record(out, args):
    return subprocess.Popen(["perf", "record", "-q", "--call-graph", "dwarf",
                             "-F", "499", "-o", out] + args,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def perf_stop(p):
    p.send_signal(signal.SIGINT)
    try:
        p.wait(600)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def perf_report(data, out_txt):
    with open(out_txt, "w") as f:
        for mode in (["--no-children"], ["--children"]):
            f.write("==== perf report %s ====\n" % " ".join(mode))
            f.flush()
            subprocess.run(["perf", "report", "-i", data, "--stdio",
                            "--sort", "dso,symbol", "-g", "none",
                            "--percent-limit", "0.5"] + mode,
                           stdout=f, stderr=subprocess.DEVNULL)
        f.write("==== call graph (caller), --no-children ====\n")
        f.flush()
        subprocess.run(["perf", "report", "-i", data, "--stdio",
                        "--no-children", "--sort", "symbol",
                        "-g", "caller,0.5,callee,function,percent",
                        "--percent-limit", "2"],
                       stdout=f, stderr=subprocess.DEVNULL)


def bench_tree(a, tree, built_in, client):
    sysroot = tree
    sysfs = os.path.join(tree, "sys")
    disks = len(os.listdir(os.path.join(sysfs, "block")))
    r = {"tree": tree, "disks": disks, "built_in": built_in,
         "tree_fs": fs_of(tree)}
    log("== %s: %d block devices in sys/block" % (tree, disks))

    # lsblk
    cmd = ["lsblk", "--sysroot", sysroot, "-J", "-b", "-o",
           "NAME,MAJ:MIN,SIZE,RO,TYPE,SCHED"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("lsblk failed: " + p.stderr)
    r["lsblk_devices"] = sum(1 + len(d.get("children", []))
                             for d in json.loads(p.stdout)["blockdevices"])
    ts = []
    for _ in range(a.runs):
        t, p = timed(cmd, stdout=subprocess.DEVNULL, check=True)
        ts.append(t)
    r["lsblk"] = median(ts)
    r["lsblk_runs"] = ts
    log("  lsblk: %.3f s (median of %s)" % (r["lsblk"],
                                            ", ".join("%.3f" % x for x in ts)))

    bus = Bus()
    try:
        conn = connect(bus.address)
        starts, cpus = [], []
        d = None
        for i in range(a.runs):
            d = Daemon(a.blkmodeld, bus, sysfs, conn)
            starts.append(d.start_time)
            cpus.append(proc_cpu(d.pid))
            if i < a.runs - 1:
                rc, out = d.stop()
                if rc != 0:
                    raise SystemExit("blkmodeld exited %d:\n%s" % (rc, out))
        r["name"] = median(starts)
        r["name_runs"] = starts
        r["name_cpu"] = median(cpus)
        log("  start -> name: %.3f s (median of %s; daemon CPU %.3f s)"
            % (r["name"], ", ".join("%.3f" % x for x in starts),
               r["name_cpu"]))
        r["objects"] = int(d.manager_prop("ObjectCount"))
        st = proc_status(d.pid)
        r["rss_start"] = st["VmRSS"]
        r["hwm_start"] = st["VmHWM"]

        # GetManagedObjects, bare sd-bus client
        cpu0 = proc_cpu(d.pid)
        p = subprocess.run([client, bus.address, str(a.runs)],
                           capture_output=True, text=True, timeout=3600)
        rows = [json.loads(line) for line in p.stdout.splitlines()]
        r["gmo_error"] = None
        if p.returncode != 0 or not rows:
            # At 10,000 disks the reply is larger than the D-Bus maximum
            # message size (128 MiB): the bus drops the daemon.  Record it
            # and carry on with a fresh daemon.
            r["gmo_error"] = p.stderr.strip()
            r["gmo"] = None
            log("  GetManagedObjects FAILED: %s" % r["gmo_error"])
            st = proc_status(d.pid) if d.proc.poll() is None else {}
            r["rss_gmo"] = st.get("VmRSS")
            r["hwm_gmo"] = st.get("VmHWM")
            rc, out = d.stop()
            r["gmo_daemon_log"] = out.strip().splitlines()[-3:]
            log("  blkmodeld after that: exit %s, log tail %s"
                % (rc, r["gmo_daemon_log"]))
            d = Daemon(a.blkmodeld, bus, sysfs, conn)
        else:
            r["gmo"] = median([x["call"] for x in rows])
            r["gmo_runs"] = [x["call"] for x in rows]
            r["gmo_walk"] = median([x["walk"] for x in rows])
            r["gmo_daemon_cpu"] = (proc_cpu(d.pid) - cpu0) / len(rows)
            r["gmo_counts"] = {k: rows[0][k] for k in
                               ("objects", "interfaces", "properties",
                                "values")}
            log("  GetManagedObjects (sd-bus client): %.3f s call (median of"
                " %s) + %.3f s to read every value; daemon CPU %.3f s/call;"
                " %s" % (r["gmo"], ", ".join("%.3f" % x for x in
                                             r["gmo_runs"]),
                         r["gmo_walk"], r["gmo_daemon_cpu"], r["gmo_counts"]))
            st = proc_status(d.pid)
            r["rss_gmo"] = st["VmRSS"]
            r["hwm_gmo"] = st["VmHWM"]

            # The same call from dbus-python and busctl: what clients pay.
            obj = conn.get_object(BUS_NAME, ROOT, introspect=False)
            t0 = time.monotonic()
            obj.GetManagedObjects(dbus_interface="org.freedesktop.DBus."
                                  "ObjectManager", timeout=3600)
            r["gmo_python"] = time.monotonic() - t0
            t, p = timed(["busctl", "--address=" + bus.address,
                          "--json=short", "call", BUS_NAME, ROOT,
                          "org.freedesktop.DBus.ObjectManager",
                          "GetManagedObjects", "--timeout=3600"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
            r["gmo_busctl_json"] = t if p.returncode == 0 else None
            log("  GetManagedObjects: dbus-python %.3f s, busctl --json %s"
                % (r["gmo_python"], "%.3f s" % t if p.returncode == 0
                   else "failed: " + p.stderr.strip()))

        # busctl tree
        ts = []
        for _ in range(a.runs):
            t, p = timed(["busctl", "--address=" + bus.address, "tree",
                          BUS_NAME], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, timeout=3600)
            if p.returncode != 0:
                raise SystemExit("busctl tree failed: " + p.stderr)
            ts.append(t)
            if t > 3 * TARGETS["busctl_tree"]:
                break  # slow enough: one run says it
        r["busctl_tree"] = median(ts)
        r["busctl_tree_runs"] = ts
        log("  busctl tree: %.3f s (median of %s)"
            % (r["busctl_tree"], ", ".join("%.3f" % x for x in ts)))
        st = proc_status(d.pid)
        r["rss_end"] = st["VmRSS"]
        r["hwm_end"] = st["VmHWM"]

        rc, out = d.stop()
        if rc != 0:
            raise SystemExit("blkmodeld exited %d:\n%s" % (rc, out[-4000:]))
        log("  RSS: %.1f MiB after start, %.1f MiB at the end (peak %.1f "
            "MiB); %d objects" % (r["rss_start"] / 2**20,
                                  r["rss_end"] / 2**20, r["hwm_end"] / 2**20,
                                  r["objects"]))

        if a.perf and tree == a._perf_tree:
            os.makedirs(a.perf, exist_ok=True)
            tag = "n%d" % disks
            data = os.path.join(a.perf, "startup-%s.data" % tag)
            # The daemon runs under perf record from its first instruction.
            d = Daemon(a.blkmodeld, bus, sysfs, conn,
                       wrapper=["perf", "record", "-q", "--call-graph",
                                "dwarf", "-F", "499", "-o", data, "--"])
            log("  perf: startup recorded (%.3f s under perf)"
                % d.start_time)
            gdata = os.path.join(a.perf, "gmo-%s.data" % tag)
            gperf = perf_record(gdata, ["-p", str(d.pid)])
            time.sleep(1)
            subprocess.run([client, bus.address, "1"], check=True,
                           stdout=subprocess.DEVNULL)
            perf_stop(gperf)
            log("  perf: GetManagedObjects recorded")
            # Ends the startup recording (perf stops when blkmodeld exits).
            os.kill(d.pid, signal.SIGTERM)
            d.proc.wait(600)
            d.log.close()
            perf_report(data, os.path.join(a.perf, "startup-%s.txt" % tag))
            perf_report(gdata, os.path.join(a.perf, "gmo-%s.txt" % tag))
            log("  perf reports in %s" % a.perf)
    finally:
        bus.close()
    return r


# ---- reporting -------------------------------------------------------------------

def verdicts(r):
    rows = []
    name_ratio = r["name"] / r["lsblk"]
    per_obj = r["rss_start"] / r["objects"]
    rows.append(("start → name taken", "%.3f s" % r["name"],
                 "%.3f × lsblk" % name_ratio, "≤ 0.25 × lsblk",
                 name_ratio <= TARGETS["name_ratio"]))
    if r["gmo"] is None:
        rows.append(("GetManagedObjects (call)", "failed",
                     r["gmo_error"], "≤ 1 × lsblk", False))
    else:
        gmo_ratio = r["gmo"] / r["lsblk"]
        rows.append(("GetManagedObjects (call)", "%.3f s" % r["gmo"],
                     "%.3f × lsblk" % gmo_ratio, "≤ 1 × lsblk",
                     gmo_ratio <= TARGETS["gmo_ratio"]))
    rows.append(("RSS / object after start",
                 "%.0f B" % per_obj, "%.1f MiB / %d objects"
                 % (r["rss_start"] / 2**20, r["objects"]), "≤ 1024 B",
                 per_obj <= TARGETS["rss_per_object"]))
    if r.get("rss_gmo"):
        per_obj_gmo = r["rss_gmo"] / r["objects"]
        rows.append(("RSS / object after GetManagedObjects",
                     "%.0f B" % per_obj_gmo, "%.1f MiB"
                     % (r["rss_gmo"] / 2**20), "≤ 1024 B",
                     per_obj_gmo <= TARGETS["rss_per_object"]))
    rows.append(("busctl tree", "%.3f s" % r["busctl_tree"],
                 "%.3f × lsblk" % (r["busctl_tree"] / r["lsblk"]), "< 5 s",
                 r["busctl_tree"] < TARGETS["busctl_tree"]))
    return rows


def report(a, results):
    lines = []
    out = lines.append
    now = datetime.datetime.now().astimezone()
    out("# blkmodel scale benchmark (SPEC §9)")
    out("")
    out("Written by `bench/scale.py` — rerun it to refresh this file.")
    out("")
    out("* date: %s" % now.strftime("%Y-%m-%d %H:%M %Z"))
    out("* machine: %s" % machine())
    out("* blkmodeld: `%s`%s" % (a.blkmodeld,
                                 " — " + a.label if a.label else ""))
    out("* %s; lsblk from util-linux %s" % (
        subprocess.run(["dbus-daemon", "--version"], capture_output=True,
                       text=True).stdout.splitlines()[0],
        subprocess.run(["lsblk", "--version"], capture_output=True,
                       text=True).stdout.split()[-1]))
    out("* runs: median of %d; lsblk gets one untimed warm-up run first, "
        "so both read a warm page cache" % a.runs)
    out("* GetManagedObjects client: `bench/gmo-client.c` (bare sd-bus): "
        "\"call\" is send → whole reply received; reading every value of the "
        "reply is listed separately")
    out("")
    for r in results:
        out("## %d disks × %d partitions (%s, %s)"
            % (r["disks"], a.partitions, r["tree"], r["tree_fs"]))
        out("")
        out("%d objects published (Manager.ObjectCount); lsblk lists %d "
            "block devices.%s" % (r["objects"], r["lsblk_devices"],
                                  " Tree built in %.1f s." % r["built_in"]
                                  if r["built_in"] else ""))
        out("")
        out("| measurement | value | ratio / detail | target | met |")
        out("|---|---|---|---|---|")
        out("| lsblk -J -b -o NAME,MAJ:MIN,SIZE,RO,TYPE,SCHED | %.3f s | "
            "runs %s | — | — |" % (r["lsblk"], ", ".join(
                "%.3f" % x for x in r["lsblk_runs"])))
        for name, value, detail, target, ok in verdicts(r):
            out("| %s | %s | %s | %s | %s |" % (name, value, detail, target,
                                                "yes" if ok else "**no**"))
        out("")
        det = ["start runs %s s (daemon CPU at name %.3f s)"
               % (", ".join("%.3f" % x for x in r["name_runs"]),
                  r["name_cpu"])]
        if r["gmo"] is None:
            det.append("GetManagedObjects failed: %s; daemon log: %s"
                       % (r["gmo_error"], " / ".join(r["gmo_daemon_log"])))
        else:
            det.append(
                "GetManagedObjects runs %s s, reading the reply %.3f s, "
                "daemon CPU %.3f s per call, reply %d objects / %d "
                "interfaces / %d properties; same call from dbus-python "
                "%.3f s, from `busctl --json=short call` %s"
                % (", ".join("%.3f" % x for x in r["gmo_runs"]),
                   r["gmo_walk"], r["gmo_daemon_cpu"],
                   r["gmo_counts"]["objects"], r["gmo_counts"]["interfaces"],
                   r["gmo_counts"]["properties"], r["gmo_python"],
                   "%.3f s" % r["gmo_busctl_json"]
                   if r["gmo_busctl_json"] is not None else "failed"))
        det.append("busctl tree runs %s s" % ", ".join(
            "%.3f" % x for x in r["busctl_tree_runs"]))
        det.append("RSS %.1f MiB after start (peak %.1f)%s, %.1f MiB after "
                   "busctl tree (peak %.1f)"
                   % (r["rss_start"] / 2**20, r["hwm_start"] / 2**20,
                      ", %.1f MiB after GetManagedObjects" %
                      (r["rss_gmo"] / 2**20) if r.get("rss_gmo") else "",
                      r["rss_end"] / 2**20, r["hwm_end"] / 2**20))
        out("Details: " + "; ".join(det) + ".")
        out("")
    if len(results) >= 2:
        lo, hi = results[0], results[-1]
        if hi["objects"] > lo["objects"]:
            marg = (hi["rss_start"] - lo["rss_start"]) / (hi["objects"] -
                                                           lo["objects"])
            out("Marginal RSS per object between the two trees (after "
                "start): %.0f B." % marg)
            out("")
    if a.notes:
        with open(a.notes) as f:
            out(f.read().rstrip())
            out("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--disks", type=int, action="append",
                    help="tree size to build (repeatable; default 1000 and "
                         "10000)")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--tree", action="append", default=[],
                    help="reuse this tree (DIR/sys) instead of building one "
                         "(repeatable)")
    ap.add_argument("--workdir", default=os.path.join(
        tempfile.gettempdir(), "blkmodel-bench"),
        help="where trees are built (default %(default)s)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the trees built here")
    ap.add_argument("--blkmodeld", default=os.path.join(
        REPO, "build-bench", "daemon", "blkmodeld"),
        help="the daemon (default: build-bench/, a buildtype=release build)")
    ap.add_argument("--label", default="",
                    help="what the daemon is (commit), for RESULTS.md")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"),
                    help="Markdown report (default %(default)s; '' for none)")
    ap.add_argument("--notes", help="a Markdown file appended to the report")
    ap.add_argument("--perf", metavar="DIR",
                    help="perf-record startup and GetManagedObjects on the "
                         "largest tree into DIR")
    a = ap.parse_args()
    if not os.access(a.blkmodeld, os.X_OK):
        ap.error("%s is not executable; build it: meson setup build-bench "
                 "--buildtype=release && ninja -C build-bench" % a.blkmodeld)
    if not a.label:
        p = subprocess.run(["git", "-C", REPO, "describe", "--always",
                            "--dirty"], capture_output=True, text=True)
        a.label = p.stdout.strip()
    os.makedirs(a.workdir, exist_ok=True)
    client = gmo_client(a.workdir)

    trees = [(t, 0.0) for t in a.tree]
    sizes = a.disks or ([] if a.tree else [1000, 10000])
    plan = trees + [(None, n) for n in sizes]
    a._perf_tree = None
    results = []
    built = []
    try:
        for t, n in plan:
            if t is None:
                t, secs = build_tree(a.workdir, n, a.partitions)
                built.append(t)
            else:
                secs = 0.0
            if a.perf and (t, n) == plan[-1]:
                a._perf_tree = t
            results.append(bench_tree(a, t, secs, client))
    finally:
        if not a.keep:
            for t in built:
                shutil.rmtree(t, ignore_errors=True)

    print()
    for r in results:
        print("%d disks, %d objects; lsblk %.3f s"
              % (r["disks"], r["objects"], r["lsblk"]))
        for name, value, detail, target, ok in verdicts(r):
            print("  %-38s %-10s %-26s target %-15s %s"
                  % (name, value, detail, target, "ok" if ok else "MISSED"))
    if a.results:
        with open(a.results, "w") as f:
            f.write(report(a, results) + "\n")
        print("\nwrote " + a.results)


if __name__ == "__main__":
    main()
