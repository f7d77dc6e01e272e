#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""SPEC §9 scale benchmark: blkmodeld against lsblk on kernel-shaped trees.

    bench/scale.py                       build 1,000- and 10,000-disk trees
    bench/scale.py --disks 10000         one size
    bench/scale.py --tree DIR            reuse a tree (DIR/sys) built by
                                         tests/fixtures/mksysfs.py
    bench/scale.py --perf DIR            also perf-record startup and
                                         GetManagedObjects (largest tree)

Needs the programs of bench/meson.build (gmo-client, bus-probe, read-floor,
tree-floor):

    meson setup build-bench --buildtype=release -Dbench=true
    ninja -C build-bench

Trees are built in --workdir (default /dev/shm/blkmodel-bench: tmpfs, so
that neither lsblk nor the daemon waits on a disk) and removed afterwards.
For each tree, in one run:

* lsblk --sysroot DIR -J -b -o NAME,MAJ:MIN,SIZE,RO,TYPE,SCHED: wall time,
  median of --runs after one untimed warm-up;
* the reading floor: bench/read-floor, a bare C program that only opens and
  reads the files a complete GetManagedObjects is made of (every disk's
  objects and hardware, bench/read_floor.py), on 1 and on 2 threads: wall
  and CPU time, median of --runs passes;
* blkmodeld start -> name taken, on a private dbus-daemon started here
  (`dbus-daemon --session --fork`), daemon args --address=ADDR
  --sysfs-root=DIR/sys --no-uevents (default --poll-interval): median of
  --runs; the time is taken when NameOwnerChanged for org.blkmodel1 reaches
  a client subscribed before the daemon was spawned;
* on the last daemon: VmRSS right after the name; the warm-up (the first
  reading of every object) with bench/bus-probe pinging the daemon every 5 ms:
  how long until its CPU settles, the worst ping reply (loop stall);
* the poll (SPEC §6: writable attributes re-read within a CPU budget per
  --poll-interval): the daemon's idle CPU % with polling on, and the
  detection latency: a new value written into queue/read_ahead_kb of
  --poll-disks disks spread over the tree (their files are unshared from
  the tree's hard links first) until each PropertiesChanged arrives;
  --poll-rounds rounds, median of all;
* one complete GetManagedObjects with bench/gmo-client (bare sd-bus):
  median of --runs of "call" (send -> whole reply received) and the time to
  read every value of the reply; when the daemon refuses the root's reply
  (LimitsExceeded: more than one message may carry), the time to read the
  whole model in parts as the error says (every value read); for comparison
  the same call from dbus-python and from `busctl --json=short call`;
  VmRSS after it;
* one Introspect's daemon CPU: 10,000 Introspect calls (bench/bus-probe) on one
  disk and on one queue object, the daemon's CPU delta (schedstat, minus
  its idle rate) per call;
* `busctl --address=ADDR tree org.blkmodel1` wall time, and its floor:
  the same command against bench/tree-floor, a bare sd-bus service that
  answers Introspect for the same paths from replies made beforehand (our
  daemon's XML; that XML cut to what any service listing every attribute
  as a property must send, "lean"; and only the child nodes, the least XML
  busctl can walk), with busctl's and dbus-daemon's CPU for each (trees of
  at most --tree-floor-max objects: "same" holds every reply in memory);
* Manager.Rescan: its wall time, the daemon's CPU and the worst ping reply
  while it runs.

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

import loop_turns
import machine_pauses
import read_floor

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MKSYSFS = os.path.join(REPO, "tests", "fixtures", "mksysfs.py")
BUS_NAME = "org.blkmodel1"
ROOT = "/org/blkmodel1"
MANAGER_PATH = ROOT + "/Manager"
KEEP_MARKER = "<!-- hand-written notes below: kept by bench/scale.py -->"

TARGETS = {
    "name_ratio": 0.25,      # name taken <= 0.25 x lsblk
    "gmo_ratio": 1.0,        # GetManagedObjects <= 1 x lsblk
    "rss_per_object": 1024,  # bytes
    "rss_growth": 1.10,      # RSS after GetManagedObjects within 10 % of after start
    "busctl_tree_ratio": 1.0,  # busctl tree <= 1 x lsblk
    "stall_ms": 20.0,        # no loop stall over 20 ms (Rescan, warm-up)
    "introspect_us": 50.0,   # one Introspect's daemon CPU
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def median(xs):
    return statistics.median(xs)


def timed(cmd, **kw):
    t0 = time.monotonic()
    p = subprocess.run(cmd, **kw)
    return time.monotonic() - t0, p


def measured(a, cmd):
    """Wall time, CPU seconds and peak RSS (bytes) of one run of cmd, its output discarded."""
    p = subprocess.run([a.peak_rss] + cmd, capture_output=True, text=True)
    res = json.loads(p.stdout) if p.returncode == 0 else {"status": p.returncode}
    if res["status"] != 0:
        raise SystemExit("%s failed: %s" % (cmd[0], p.stderr))
    return res["wall_s"], res["cpu_s"], res["maxrss_kb"] * 1024


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


def proc_cpu_sched(pid):
    """Run time of all threads of pid, seconds (schedstat: ns resolution)."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total / 1e9


def wait_settled(pid, limit_pct=8.0, window=1.0, timeout=1800):
    """Seconds until the daemon's CPU over `window` s is below limit_pct
    twice in a row (the warm-up is over), or None."""
    t0 = time.monotonic()
    calm = 0
    c0 = proc_cpu_sched(pid)
    while time.monotonic() - t0 < timeout:
        time.sleep(window)
        c1 = proc_cpu_sched(pid)
        pct = (c1 - c0) / window * 100
        c0 = c1
        calm = calm + 1 if pct < limit_pct else 0
        if calm >= 2:
            return time.monotonic() - t0 - 2 * window
    return None


def idle_rate(pid, seconds):
    """The daemon's CPU share (0..1) over `seconds`."""
    c0, t0 = proc_cpu_sched(pid), time.monotonic()
    time.sleep(seconds)
    return (proc_cpu_sched(pid) - c0) / (time.monotonic() - t0)


class Pinger:
    """bench/bus-probe ping: Peer.Ping on the daemon every interval_us; the
    worst reply time is the longest stall of its event loop a client saw."""

    def __init__(self, probe, address, interval_us=5000):
        self.p = subprocess.Popen([probe, "ping", address, BUS_NAME,
                                   str(interval_us)],
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if line.strip() != "ready":
            self.p.kill()
            raise SystemExit("bus-probe ping did not start: %r" % line)

    def stop(self):
        """Returns (worst reply ms, pings, errors)."""
        self.p.send_signal(signal.SIGTERM)
        out, _ = self.p.communicate(timeout=120)
        res = json.loads(out.strip().splitlines()[-1])
        rtts = [rtt for _, rtt in res["samples"]]
        return (max(rtts) / 1e6 if rtts else None), len(rtts), res["errors"]


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
    p = subprocess.run(["df", "--output=fstype", path],
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
    def __init__(self, exe, bus, sysfs, conn, wrapper=(), timeout=600,
                 extra=()):
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
                                "--sysfs-root=" + sysfs, "--no-uevents"] + list(extra)
        self.t0 = time.monotonic()
        self.phase_marks = []  # (phase, CLOCK_MONOTONIC ns at its end)
        self.long_turns = []  # (phase, loop_turns.Turn) of each new longest turn logged
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

    def mark_phase(self, phase):
        """Which phase the new longest turns logged since the last mark fell in."""
        # A file description of our own: the daemon writes at the shared one's offset.
        with open("/proc/self/fd/%d" % self.log.fileno()) as f:
            turns = loop_turns.new_longest(f.read())
        self.long_turns.extend((phase, t) for t in turns[len(self.long_turns):])
        self.phase_marks.append((phase, time.monotonic_ns()))

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


def pick_poll_disks(sysfs, n):
    """n disks spread over the tree (sorted by name length, then name: the
    order sd names are made in) whose queue has read_ahead_kb; their file is
    replaced by a copy of its own, so that writing it changes no twin."""
    names = sorted((d for d in os.listdir(os.path.join(sysfs, "block"))
                    if os.path.exists(os.path.join(sysfs, "block", d, "queue",
                                                   "read_ahead_kb"))),
                   key=lambda d: (len(d), d))
    if not names:
        return []
    idx = sorted(set(round(i * (len(names) - 1) / max(n - 1, 1))
                     for i in range(n)))
    out = []
    for i in idx:
        f = os.path.realpath(os.path.join(sysfs, "block", names[i], "queue",
                                          "read_ahead_kb"))
        with open(f) as fh:
            value = fh.read()
        tmp = f + ".bench-unshare"
        with open(tmp, "w") as fh:
            fh.write(value)
        os.chmod(tmp, 0o644)
        os.rename(tmp, f)
        out.append((names[i], i, f))
    return out


def poll_latency(a, conn, targets, timeout):
    """Writes a new read_ahead_kb into every target at once; per target, the
    seconds until its PropertiesChanged arrives (None: not within timeout)."""
    from gi.repository import GLib
    paths = {"%s/block/%s/queue" % (ROOT, name): (name, f)
             for name, _, f in targets}
    got = {}
    loop = GLib.MainLoop()

    def on_changed(iface, changed, invalidated, path=None):
        if path in paths and path not in got and "read_ahead_kb" in changed:
            got[path] = time.monotonic()
            if len(got) == len(paths):
                loop.quit()
    match = conn.add_signal_receiver(
        on_changed, signal_name="PropertiesChanged",
        dbus_interface="org.freedesktop.DBus.Properties", bus_name=BUS_NAME,
        path_keyword="path")
    conn.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")\
        .GetId(dbus_interface="org.freedesktop.DBus")
    GLib.timeout_add(int(timeout * 1000), loop.quit)
    t0 = time.monotonic()
    for path, (name, f) in paths.items():
        with open(f) as fh:
            old = int(fh.read().strip())
        with open(f, "w") as fh:
            fh.write("%d\n" % (old + 4 if old < 100000 else 128))
    loop.run()
    match.remove()
    return [(paths[p][0], (got[p] - t0) if p in got else None) for p in paths]


def bench_tree(a, tree, built_in):
    sysroot = tree
    sysfs = os.path.join(tree, "sys")
    disks = len(os.listdir(os.path.join(sysfs, "block")))
    r = {"tree": tree, "disks": disks, "built_in": built_in,
         "tree_fs": fs_of(tree)}
    log("== %s: %d block devices in sys/block" % (tree, disks))
    targets = pick_poll_disks(sysfs, a.poll_disks)

    # lsblk
    cmd = ["lsblk", "--sysroot", sysroot, "-J", "-b", "-o",
           "NAME,MAJ:MIN,SIZE,RO,TYPE,SCHED"]
    t, p = timed(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("lsblk failed: " + p.stderr)
    r["lsblk_warmup"] = t
    r["lsblk_devices"] = sum(1 + len(d.get("children", []))
                             for d in json.loads(p.stdout)["blockdevices"])
    ts = []
    if r["lsblk_warmup"] > a.slow:
        # On tmpfs there is no cache to warm: a warm-up this slow is the run.
        ts.append(r["lsblk_warmup"])
        r["lsblk_warmup_counted"] = True
    rss = []
    for _ in range(a.runs if not ts else 0):
        t, _, peak = measured(a, cmd)
        ts.append(t)
        rss.append(peak)
        if t > a.slow:
            break  # slow enough: one run says it
    r["lsblk"] = median(ts)
    r["lsblk_rss"] = median(rss) if rss else None
    r["lsblk_runs"] = ts
    log("  lsblk: %.3f s (median of %s; untimed warm-up %.3f s)"
        % (r["lsblk"], ", ".join("%.3f" % x for x in ts), r["lsblk_warmup"]))

    # The reading floor: the files of every disk's objects, opened and read.
    dirs, r["floor_objects"] = read_floor.floor_dirs(
        sysfs, os.listdir(os.path.join(sysfs, "block")))
    with tempfile.NamedTemporaryFile("w", prefix="floor-dirs-", suffix=".txt") as f:
        read_floor.write_dirs(f.name, dirs)
        for n in (1, 2):
            res = read_floor.run_floor(a.read_floor, sysfs, f.name, n, a.runs)
            r["floor_%d" % n] = res
            log("  reading floor, %d thread%s: %.3f s, CPU %.3f s (median of %s; %d "
                "files in %d directories of %d objects, %d failed)"
                % (n, "s" if n > 1 else "", res["wall_s"], res["cpu_s"],
                   ", ".join("%.3f" % x for x in res["passes_wall_s"]), res["files"],
                   res["dirs"], r["floor_objects"], res["failed"]))

    bus = Bus()
    hiccup = None
    try:
        conn = connect(bus.address)
        starts, cpus = [], []
        d = None
        hiccup = machine_pauses.Hiccup(a.hiccup)
        for i in range(a.runs):
            d = Daemon(a.blkmodeld, bus, sysfs, conn, extra=a.daemon_arg)
            starts.append(d.start_time)
            cpus.append(proc_cpu(d.pid))
            if i < a.runs - 1:
                rc, out = d.stop()
                if rc != 0:
                    raise SystemExit("blkmodeld exited %d:\n%s" % (rc, out))
        pid = d.pid
        st = proc_status(pid)
        r["rss_start"] = st["VmRSS"]
        r["hwm_start"] = st["VmHWM"]
        r["name"] = median(starts)
        r["name_runs"] = starts
        r["name_cpu"] = median(cpus)
        log("  start -> name: %.3f s (median of %s; daemon CPU %.3f s)"
            % (r["name"], ", ".join("%.3f" % x for x in starts),
               r["name_cpu"]))

        # Warm-up: the first reading of every object, in slices.
        pinger = Pinger(a.probe, bus.address, a.ping_us)
        t = wait_settled(pid)
        r["warmup"] = t
        r["warmup_stall"], r["warmup_pings"], _ = pinger.stop()
        d.mark_phase("warm-up")
        r["objects"] = int(d.manager_prop("ObjectCount"))
        log("  warm-up: CPU settled %s s after the name; worst ping %.1f ms "
            "(%d pings); %d objects" % ("%.1f" % t if t is not None else "?",
                                        r["warmup_stall"], r["warmup_pings"],
                                        r["objects"]))
        st = proc_status(pid)
        r["rss_warm"] = st["VmRSS"]

        # The poll: idle CPU and detection latency.
        r["poll_idle_pct"] = idle_rate(pid, a.idle_seconds) * 100
        log("  idle CPU with polling on: %.2f %% (over %.0f s)"
            % (r["poll_idle_pct"], a.idle_seconds))
        lat = []
        for k in range(a.poll_rounds):
            got = poll_latency(a, conn, targets, a.poll_timeout)
            lat.extend(got)
            log("  poll detection, round %d: %s" % (k + 1, ", ".join(
                "%s (#%d) %s" % (n, next(i for nn, i, _ in targets
                                         if nn == n),
                                 "%.2f s" % x if x is not None else "missed")
                for n, x in got)))
        r["poll_latency"] = lat
        d.mark_phase("poll")
        r["poll_disks"] = [(n, i) for n, i, _ in targets]

        # GetManagedObjects, bare sd-bus client
        cpu0 = proc_cpu_sched(pid)
        p = subprocess.run([a.gmo_client, bus.address, str(a.runs)],
                           capture_output=True, text=True, timeout=7200)
        rows = [json.loads(line) for line in p.stdout.splitlines()]
        if p.returncode != 0 or not rows:
            raise SystemExit("gmo-client failed: %s" % p.stderr.strip())
        r["gmo_mode"] = rows[0]["mode"]
        r["gmo"] = median([x["call"] for x in rows])
        r["gmo_runs"] = [x["call"] for x in rows]
        r["gmo_walk"] = median([x["walk"] for x in rows])
        r["gmo_daemon_cpu"] = (proc_cpu_sched(pid) - cpu0) / len(rows)
        r["gmo_counts"] = {k: rows[0].get(k) for k in
                           ("objects", "interfaces", "properties", "values",
                            "gmo_calls", "gmo_refused", "introspect_calls",
                            "getall_calls", "refusal", "refused_after")}
        log("  GetManagedObjects (sd-bus client, %s): %.3f s (median of %s)"
            " + %.3f s to read every value; daemon CPU %.3f s/reading; %s"
            % (r["gmo_mode"], r["gmo"], ", ".join("%.3f" % x for x in
                                                  r["gmo_runs"]),
               r["gmo_walk"], r["gmo_daemon_cpu"], r["gmo_counts"]))
        d.mark_phase("GetManagedObjects")
        st = proc_status(pid)
        r["rss_gmo"] = st["VmRSS"]
        r["hwm_gmo"] = st["VmHWM"]
        r["gmo_python"] = r["gmo_busctl_json"] = None
        if r["gmo_mode"] == "whole":
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

        # One Introspect's CPU, on a disk and on a queue.
        disk = targets[-1][0] if targets else "sda"
        r["introspect"] = {}
        for what, path in (("disk", "%s/block/%s" % (ROOT, disk)),
                           ("queue", "%s/block/%s/queue" % (ROOT, disk))):
            idle = idle_rate(pid, 2)
            c0, t0 = proc_cpu_sched(pid), time.monotonic()
            p = subprocess.run([a.probe, "call", bus.address, BUS_NAME, path,
                                "org.freedesktop.DBus.Introspectable",
                                "Introspect", str(a.introspect_calls)],
                               capture_output=True, text=True, check=True)
            cpu, wall = proc_cpu_sched(pid) - c0, time.monotonic() - t0
            res = json.loads(p.stdout)
            r["introspect"][what] = {
                "path": path, "calls": a.introspect_calls, "wall": wall,
                "cpu_us": cpu / a.introspect_calls * 1e6,
                "net_us": (cpu - idle * wall) / a.introspect_calls * 1e6,
                "xml_bytes": res["reply_string_bytes"], "idle_pct": idle * 100}
            log("  Introspect %s: %.1f us daemon CPU per call (net of idle "
                "%.1f %%: %.1f us), %d bytes of XML, %.0f calls/s"
                % (path, r["introspect"][what]["cpu_us"], idle * 100,
                   r["introspect"][what]["net_us"], res["reply_string_bytes"],
                   a.introspect_calls / wall))

        d.mark_phase("GetManagedObjects from dbus-python and busctl, Introspect")
        # busctl tree
        ts = []
        for _ in range(a.runs):
            t, p = timed(["busctl", "--address=" + bus.address, "tree",
                          BUS_NAME], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, timeout=7200)
            if p.returncode != 0:
                raise SystemExit("busctl tree failed: " + p.stderr)
            ts.append(t)
            if t > a.slow:
                break  # slow enough: one run says it
        r["busctl_tree"] = median(ts)
        r["busctl_tree_runs"] = ts
        log("  busctl tree: %.3f s (median of %s)"
            % (r["busctl_tree"], ", ".join("%.3f" % x for x in ts)))

        d.mark_phase("busctl tree")
        # blkmodelctl list: what a user types instead of lsblk, the same columns.
        runs = []
        for _ in range(a.runs):
            runs.append(measured(a, [a.blkmodelctl, "--address=" + bus.address, "list",
                                  "-J", "-b", "-o", "NAME,MAJ:MIN,SIZE,RO,TYPE,SCHED"]))
            if runs[-1][0] > a.slow:
                break
        r["ctl_list"] = median([x[0] for x in runs])
        r["ctl_list_cpu"] = median([x[1] for x in runs])
        r["ctl_list_rss"] = median([x[2] for x in runs])
        log("  blkmodelctl list -J: %.3f s, client CPU %.3f s, peak RSS %.1f MiB (median of %d)"
            % (r["ctl_list"], r["ctl_list_cpu"], r["ctl_list_rss"] / 2**20, len(runs)))
        d.mark_phase("blkmodelctl list")
        if r["objects"] <= a.tree_floor_max:
            r["tree_floor"] = tree_floor(a, bus, pid)
        else:
            r["tree_floor"] = None
            log("  busctl tree floor: skipped (%d objects, more than --tree-floor-max %d)"
                % (r["objects"], a.tree_floor_max))
        # Rescan, with the pinger.
        pinger = Pinger(a.probe, bus.address, a.ping_us)
        c0 = proc_cpu_sched(pid)
        t, p = timed(["busctl", "--address=" + bus.address, "call",
                      BUS_NAME, MANAGER_PATH, "org.blkmodel1.Manager",
                      "Rescan", "--timeout=7200"],
                     capture_output=True, text=True)
        r["rescan_cpu"] = proc_cpu_sched(pid) - c0
        r["rescan"] = t if p.returncode == 0 else None
        r["rescan_stall"], r["rescan_pings"], _ = pinger.stop()
        log("  Rescan: %s, daemon CPU %.3f s, worst ping %.1f ms (%d pings)"
            % ("%.3f s" % t if p.returncode == 0 else "failed: " +
               p.stderr.strip(), r["rescan_cpu"], r["rescan_stall"],
               r["rescan_pings"]))

        st = proc_status(pid)
        r["rss_end"] = st["VmRSS"]
        r["hwm_end"] = st["VmHWM"]

        d.mark_phase("Rescan")
        rc, out = d.stop()
        gaps = hiccup.stop()
        r["machine_pauses"] = machine_pauses.by_phase(gaps, d.phase_marks, int(d.t0 * 1e9))
        r["long_turn_records"] = [loop_turns.record(phase, t, gaps) for phase, t in d.long_turns]
        if rc != 0:
            raise SystemExit("blkmodeld exited %d:\n%s" % (rc, out[-4000:]))
        r["long_turns"], r["long_turn_max_ms"] = loop_turns.count(out)
        r["cpu_waits"], r["cpu_wait_max_ms"] = loop_turns.waited(out)
        log("  loop turns over 20 ms of the daemon's own work (its log): %s"
            % loop_turns.describe(r["long_turns"], r["long_turn_max_ms"],
                                  r["long_turn_records"]))
        log("  the machine's pauses meanwhile (bench/hiccup --asleep): %s"
            % machine_pauses.describe(r["machine_pauses"]))
        log("  RSS: %.1f MiB after start, %.1f after warm-up, %.1f after "
            "GetManagedObjects, %.1f MiB at the end (peak %.1f MiB); %d "
            "objects" % (r["rss_start"] / 2**20, r["rss_warm"] / 2**20,
                         r["rss_gmo"] / 2**20, r["rss_end"] / 2**20,
                         r["hwm_end"] / 2**20, r["objects"]))

        if a.perf and tree == a._perf_tree:
            os.makedirs(a.perf, exist_ok=True)
            tag = "n%d" % disks
            data = os.path.join(a.perf, "startup-%s.data" % tag)
            # The daemon runs under perf record from its first instruction.
            d = Daemon(a.blkmodeld, bus, sysfs, conn, extra=a.daemon_arg,
                       wrapper=["perf", "record", "-q", "--call-graph",
                                "dwarf", "-F", "499", "-o", data, "--"])
            log("  perf: startup recorded (%.3f s under perf)"
                % d.start_time)
            wait_settled(d.pid)
            gdata = os.path.join(a.perf, "gmo-%s.data" % tag)
            gperf = perf_record(gdata, ["-p", str(d.pid)])
            time.sleep(1)
            subprocess.run([a.gmo_client, bus.address, "1"], check=True,
                           stdout=subprocess.DEVNULL)
            perf_stop(gperf)
            log("  perf: GetManagedObjects recorded")
            rdata = os.path.join(a.perf, "rescan-%s.data" % tag)
            rperf = perf_record(rdata, ["-p", str(d.pid)])
            time.sleep(1)
            subprocess.run(["busctl", "--address=" + bus.address, "call",
                            BUS_NAME, MANAGER_PATH, "org.blkmodel1.Manager",
                            "Rescan", "--timeout=7200"], check=True,
                           stdout=subprocess.DEVNULL)
            perf_stop(rperf)
            log("  perf: Rescan recorded")
            # Ends the startup recording (perf stops when blkmodeld exits).
            os.kill(d.pid, signal.SIGTERM)
            d.proc.wait(600)
            d.log.close()
            for tagged in ("startup", "gmo", "rescan"):
                perf_report(os.path.join(a.perf, "%s-%s.data" % (tagged, tag)),
                            os.path.join(a.perf, "%s-%s.txt" % (tagged, tag)))
            log("  perf reports in %s" % a.perf)
    finally:
        if hiccup:
            hiccup.kill()
        bus.close()
    return r


def busctl_tree_costs(bus, name, service_pid):
    """busctl tree NAME: wall, busctl's CPU and the service's and dbus-daemon's CPU deltas."""
    s0, b0 = proc_cpu_sched(service_pid), proc_cpu_sched(bus.pid)
    t0, c0 = time.monotonic(), os.times()
    p = subprocess.run(["busctl", "--address=" + bus.address, "tree", name],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       timeout=7200)
    wall, c1 = time.monotonic() - t0, os.times()
    if p.returncode != 0:
        raise SystemExit("busctl tree %s failed: %s" % (name, p.stderr))
    return {"wall_s": wall,
            "busctl_cpu_s": (c1.children_user - c0.children_user) +
                            (c1.children_system - c0.children_system),
            "service_cpu_s": proc_cpu_sched(service_pid) - s0,
            "bus_cpu_s": proc_cpu_sched(bus.pid) - b0}


def tree_floor(a, bus, daemon_pid):
    """busctl tree against bench/tree-floor serving our paths from memory, alternating
    with busctl tree against blkmodeld: medians of --runs of each."""
    listing = subprocess.run(["busctl", "--address=" + bus.address, "tree", "--list",
                              BUS_NAME], capture_output=True, text=True, check=True)
    out = {}
    with tempfile.NamedTemporaryFile("w", prefix="tree-paths-", suffix=".txt") as f:
        f.write(listing.stdout)
        f.flush()
        floors = []
        try:
            for mode in ("same", "lean", "children"):
                name = "%s.TreeFloor%s" % (BUS_NAME, mode.capitalize())
                cmd = [a.tree_floor, bus.address, name, f.name, mode]
                if mode != "children":
                    cmd.append(BUS_NAME)
                p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
                floors.append((mode, name, p))
                ready = json.loads(p.stdout.readline() or "null")
                if not ready:
                    raise SystemExit("tree-floor %s did not start" % mode)
                out[mode] = {"paths": ready["paths"], "xml_bytes": ready["xml_bytes"],
                             "runs": []}
            out["blkmodeld"] = {"runs": []}
            for _ in range(a.runs):
                out["blkmodeld"]["runs"].append(
                    busctl_tree_costs(bus, BUS_NAME, daemon_pid))
                for mode, name, p in floors:
                    out[mode]["runs"].append(busctl_tree_costs(bus, name, p.pid))
        finally:
            for _, _, p in floors:
                p.stdin.close()
                p.wait(60)
    for what, x in out.items():
        for k in ("wall_s", "busctl_cpu_s", "service_cpu_s", "bus_cpu_s"):
            x[k] = median(run[k] for run in x["runs"])
        log("  busctl tree against %s: %.3f s (busctl CPU %.3f s, service %.3f s, "
            "dbus-daemon %.3f s; median of %d)%s"
            % ("blkmodeld" if what == "blkmodeld" else "tree-floor " + what,
               x["wall_s"], x["busctl_cpu_s"], x["service_cpu_s"], x["bus_cpu_s"],
               len(x["runs"]), "; %d paths, %d bytes of XML" % (x["paths"], x["xml_bytes"])
               if "paths" in x else ""))
    return out


# ---- reporting -------------------------------------------------------------------

def verdicts(r):
    """(measurement, value, ratio/detail, target, met) rows."""
    rows = []
    name_ratio = r["name"] / r["lsblk"]
    rows.append(("start → name taken", "%.3f s" % r["name"],
                 "%.3f × lsblk" % name_ratio, "≤ 0.25 × lsblk",
                 name_ratio <= TARGETS["name_ratio"]))
    gmo_ratio = r["gmo"] / r["lsblk"]
    rows.append(("complete GetManagedObjects%s" %
                 (" (in parts)" if r["gmo_mode"] == "parts" else " (call)"),
                 "%.3f s" % r["gmo"], "%.3f × lsblk" % gmo_ratio,
                 "≤ 1 × lsblk", gmo_ratio <= TARGETS["gmo_ratio"]))
    bt = r["busctl_tree"] / r["lsblk"]
    rows.append(("busctl tree", "%.3f s" % r["busctl_tree"],
                 "%.3f × lsblk" % bt, "≤ 1 × lsblk",
                 bt <= TARGETS["busctl_tree_ratio"]))
    if r.get("ctl_list") is not None:
        rows.append(("`blkmodelctl list -J` with lsblk's columns (client and daemon)",
                     "%.3f s, %.1f MiB" % (r["ctl_list"], r["ctl_list_rss"] / 2**20),
                     "%.2f × lsblk's time%s" % (
                         r["ctl_list"] / r["lsblk"],
                         ", %.2f × its peak RSS" % (r["ctl_list_rss"] / r["lsblk_rss"])
                         if r.get("lsblk_rss") else ""),
                     "—", None))
    tf = r.get("tree_floor")
    if tf:
        rows.append(("busctl tree's floor: `bench/tree-floor`, a bare sd-bus service "
                     "answering Introspect for the same paths from memory",
                     "%.3f s" % tf["children"]["wall_s"],
                     "%.2f × lsblk with only the child nodes; %.3f s (%.2f × lsblk) with "
                     "our XML cut to what every service listing each attribute as a property "
                     "must send (no DOCTYPE, standard interfaces, annotations or whitespace: "
                     "%.0f %% of its bytes); %.3f s (%.2f × lsblk) with our XML; blkmodeld in "
                     "the same rounds %.3f s, %.2f × the one with our XML"
                     % (tf["children"]["wall_s"] / r["lsblk"], tf["lean"]["wall_s"],
                        tf["lean"]["wall_s"] / r["lsblk"],
                        100.0 * tf["lean"]["xml_bytes"] / tf["same"]["xml_bytes"],
                        tf["same"]["wall_s"], tf["same"]["wall_s"] / r["lsblk"],
                        tf["blkmodeld"]["wall_s"],
                        tf["blkmodeld"]["wall_s"] / tf["same"]["wall_s"]),
                     "—", None))
    per_obj = r["rss_start"] / r["objects"]
    rows.append(("RSS / object after start",
                 "%.0f B" % per_obj, "%.1f MiB / %d objects"
                 % (r["rss_start"] / 2**20, r["objects"]), "≤ 1024 B",
                 per_obj <= TARGETS["rss_per_object"]))
    per_obj_gmo = r["rss_gmo"] / r["objects"]
    growth = r["rss_gmo"] / r["rss_start"]
    rows.append(("RSS / object after a complete GetManagedObjects",
                 "%.0f B" % per_obj_gmo, "%.1f MiB, %.2f × after start "
                 "(%.2f × after the warm-up)"
                 % (r["rss_gmo"] / 2**20, growth, r["rss_gmo"] / r["rss_warm"]),
                 "≤ 1024 B and ≤ 1.1 × after start",
                 per_obj_gmo <= TARGETS["rss_per_object"] and
                 growth <= TARGETS["rss_growth"]))
    rows.append(("worst loop stall during warm-up", "%.1f ms"
                 % r["warmup_stall"], "%d pings every %.0f ms over %s s"
                 % (r["warmup_pings"], r["ping_us"] / 1000,
                    "%.1f" % r["warmup"] if r["warmup"] is not None else "?"),
                 "≤ 20 ms", r["warmup_stall"] <= TARGETS["stall_ms"]))
    rows.append(("worst loop stall during Rescan", "%.1f ms"
                 % r["rescan_stall"], "Rescan %s, %d pings"
                 % ("%.3f s" % r["rescan"] if r["rescan"] else "failed",
                    r["rescan_pings"]),
                 "≤ 20 ms", r["rescan_stall"] <= TARGETS["stall_ms"]))
    if "long_turns" in r:
        n = r["long_turns"]
        rows.append(("loop turns over 20 ms of the daemon's own work", "%d" % n,
                     "its log (daemon/loop-watch.c), from the name to the end: warm-up, poll, "
                     "GetManagedObjects, Introspect, busctl tree, Rescan%s%s"
                     % ("; " + loop_turns.details(r["long_turn_max_ms"], r["long_turn_records"])
                        if n else "",
                        "; the machine's pauses meanwhile (bench/hiccup --asleep: every CPU late "
                        "at once, or one CPU taken away): " + machine_pauses.describe(r["machine_pauses"])
                        if "machine_pauses" in r else "")
                     + ("; turns over 20 ms only with the loop's waits for a CPU (the machine's other "
                        "work): " + loop_turns.describe_waited(r["cpu_waits"], r["cpu_wait_max_ms"])
                        if "cpu_waits" in r else ""),
                     "none", not n))
    for what in ("disk", "queue"):
        x = r["introspect"][what]
        rows.append(("one Introspect, daemon CPU (%s)" % what,
                     "%.1f µs" % x["net_us"],
                     "raw %.1f µs; %d calls; %d bytes of XML"
                     % (x["cpu_us"], x["calls"], x["xml_bytes"]),
                     "≤ 50 µs", x["net_us"] <= TARGETS["introspect_us"]))
    lat = [x for _, x in r["poll_latency"] if x is not None]
    missed = sum(1 for _, x in r["poll_latency"] if x is None)
    rows.append(("poll: idle CPU with polling on", "%.2f %%"
                 % r["poll_idle_pct"], "--poll-interval 2000 ms (default)",
                 "≤ 5 % (the poll's budget)", r["poll_idle_pct"] <= 5.0))
    rows.append(("poll: detection latency (median)",
                 "%.2f s" % median(lat) if lat else "—",
                 "%d writes, max %s%s" % (len(r["poll_latency"]),
                                         "%.2f s" % max(lat) if lat else "—",
                                         ", %d missed" % missed if missed
                                         else ""),
                 "grows with scale (recorded)", None))
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
    out("* load average (1/5/15 min): %s at the start, %s at the end; other "
        "engineers' test suites may run on this VM at the same time"
        % (" / ".join("%.2f" % x for x in a._load_start),
           " / ".join("%.2f" % x for x in os.getloadavg())))
    out("* blkmodeld: `%s`%s, `--no-uevents`, default `--poll-interval` "
        "(2000 ms)" % (os.path.relpath(a.blkmodeld, REPO),
                       " — " + a.label if a.label else ""))
    out("* %s (`--session`, private, started by the script); lsblk from "
        "util-linux %s" % (
            subprocess.run(["dbus-daemon", "--version"], capture_output=True,
                           text=True).stdout.splitlines()[0],
            subprocess.run(["lsblk", "--version"], capture_output=True,
                           text=True).stdout.split()[-1]))
    out("* runs: median of %d (a single run where one took over %.0f s); "
        "lsblk gets one untimed warm-up run first, so both read a warm "
        "cache (when the warm-up itself takes over %.0f s, it is the one "
        "run: the trees are on tmpfs, there is no disk cache to warm)"
        % (a.runs, a.slow, a.slow))
    if a.daemon_arg:
        out("* extra daemon arguments: `%s`" % " ".join(a.daemon_arg))
    out("* GetManagedObjects client: `bench/gmo-client` (bare sd-bus): "
        "\"call\" is send → whole reply received; reading every value of the "
        "reply is listed separately. When the root refuses (LimitsExceeded), "
        "the time to read the whole model in parts, every value read")
    out("* stalls: `bench/bus-probe ping` calls Peer.Ping on the daemon every "
        "%d µs; the worst reply time is the longest stall a client saw"
        % a.ping_us)
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
        f1, f2 = r["floor_1"], r["floor_2"]
        out("| reading floor (2 threads): `bench/read-floor`, a bare C program "
            "opening and reading the files of the reply | %.3f s | %.3f × lsblk; "
            "complete GetManagedObjects = %.2f × this; %d files | — | — |"
            % (f2["wall_s"], f2["wall_s"] / r["lsblk"], r["gmo"] / f2["wall_s"],
               f2["files"]))
        for name, value, detail, target, ok in verdicts(r):
            out("| %s | %s | %s | %s | %s |" % (
                name, value, detail, target,
                "—" if ok is None else "yes" if ok else "**no**"))
        out("")
        det = ["start runs %s s (daemon CPU at name %.3f s)"
               % (", ".join("%.3f" % x for x in r["name_runs"]),
                  r["name_cpu"])]
        c = r["gmo_counts"]
        if r["gmo_mode"] == "parts":
            det.append(
                "the root refused the whole model (after %.3f s: \"%s\"); "
                "read in parts with %d GetManagedObjects (%d refused), %d "
                "Introspect and %d GetAll calls, 64 in flight: runs %s s, "
                "%d objects / %d interfaces / %d properties, daemon CPU "
                "%.3f s per reading"
                % (c["refused_after"], c["refusal"], c["gmo_calls"],
                   c["gmo_refused"], c["introspect_calls"],
                   c["getall_calls"],
                   ", ".join("%.3f" % x for x in r["gmo_runs"]),
                   c["objects"], c["interfaces"], c["properties"],
                   r["gmo_daemon_cpu"]))
        else:
            det.append(
                "GetManagedObjects runs %s s, reading the reply %.3f s, "
                "daemon CPU %.3f s per call, reply %d objects / %d "
                "interfaces / %d properties; same call from dbus-python "
                "%.3f s, from `busctl --json=short call` %s"
                % (", ".join("%.3f" % x for x in r["gmo_runs"]),
                   r["gmo_walk"], r["gmo_daemon_cpu"], c["objects"],
                   c["interfaces"], c["properties"], r["gmo_python"],
                   "%.3f s" % r["gmo_busctl_json"]
                   if r["gmo_busctl_json"] is not None else "failed"))
        det.append("reading floor: 1 thread %.3f s (CPU %.3f s; %.3f × lsblk; passes "
                   "%s s), 2 threads %.3f s (CPU %.3f s; passes %s s); %d files (%d not "
                   "readable) in %d directories of %d objects (`bench/read_floor.py`), "
                   "%d bytes read"
                   % (f1["wall_s"], f1["cpu_s"], f1["wall_s"] / r["lsblk"],
                      ", ".join("%.3f" % x for x in f1["passes_wall_s"]),
                      f2["wall_s"], f2["cpu_s"],
                      ", ".join("%.3f" % x for x in f2["passes_wall_s"]),
                      f2["files"], f2["failed"], f2["dirs"], r["floor_objects"],
                      f2["bytes"]))
        det.append("busctl tree runs %s s" % ", ".join(
            "%.3f" % x for x in r["busctl_tree_runs"]))
        if r.get("tree_floor"):
            det.append("busctl tree, alternating, medians: " + ", ".join(
                "against %s %.3f s (CPU: busctl %.3f s, the service %.3f s, dbus-daemon "
                "%.3f s%s)" % (
                    "blkmodeld" if what == "blkmodeld" else "tree-floor " + what,
                    x["wall_s"], x["busctl_cpu_s"], x["service_cpu_s"], x["bus_cpu_s"],
                    "; %d bytes of XML" % x["xml_bytes"] if "xml_bytes" in x else "")
                for what, x in r["tree_floor"].items()))
        det.append("RSS %.1f MiB after start (peak %.1f), %.1f MiB after the "
                   "warm-up, %.1f MiB after GetManagedObjects (peak %.1f), "
                   "%.1f MiB at the end (peak %.1f)"
                   % (r["rss_start"] / 2**20, r["hwm_start"] / 2**20,
                      r["rss_warm"] / 2**20, r["rss_gmo"] / 2**20,
                      r["hwm_gmo"] / 2**20, r["rss_end"] / 2**20,
                      r["hwm_end"] / 2**20))
        det.append("Rescan: daemon CPU %.3f s" % r["rescan_cpu"])
        det.append("poll detection latencies (disk #position of %d: s) %s"
                   % (r["disks"], ", ".join(
                       "%s: %s" % (n, "%.2f" % x if x is not None else
                                   "missed")
                       for n, x in r["poll_latency"])))
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
    out(KEEP_MARKER)
    if a._old_notes:
        out(a._old_notes.rstrip("\n"))
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
    ap.add_argument("--workdir", default="/dev/shm/blkmodel-bench"
                    if os.path.isdir("/dev/shm") else
                    os.path.join(tempfile.gettempdir(), "blkmodel-bench"),
                    help="where trees are built (default %(default)s)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the trees built here")
    ap.add_argument("--tmpfs", metavar="SIZE", nargs="?", const="16G",
                    help="mount a private tmpfs (default size 16G, no inode "
                         "limit) on --workdir for the trees and unmount it at "
                         "the end: a 10,000-disk tree needs ~2.9 million "
                         "inodes, more than /dev/shm has by default")
    ap.add_argument("--build", default=os.path.join(REPO, "build-bench"),
                    help="a -Dbench=true build (default %(default)s)")
    ap.add_argument("--blkmodeld",
                    help="the daemon (default: BUILD/daemon/blkmodeld)")
    ap.add_argument("--blkmodelctl",
                    help="the client (default: BUILD/client/blkmodelctl)")
    ap.add_argument("--label", default="",
                    help="what the daemon is (commit), for RESULTS.md")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--slow", type=float, default=60.0,
                    help="one run only of lsblk/busctl tree when one takes "
                         "longer than this (s)")
    ap.add_argument("--daemon-arg", action="append", default=[],
                    help="one more blkmodeld argument (repeatable), e.g. "
                         "--daemon-arg=--max-message-size=4000000 to see the "
                         "reading in parts on a small tree")
    ap.add_argument("--ping-us", type=int, default=5000)
    ap.add_argument("--idle-seconds", type=float, default=20.0,
                    help="idle CPU measured over this long (default "
                         "%(default)s)")
    ap.add_argument("--poll-disks", type=int, default=5,
                    help="disks written at once per poll round")
    ap.add_argument("--poll-rounds", type=int, default=2)
    ap.add_argument("--poll-timeout", type=float, default=900.0)
    ap.add_argument("--introspect-calls", type=int, default=10000)
    ap.add_argument("--tree-floor-max", type=int, default=20000,
                    help="measure busctl tree's floor (bench/tree-floor) on trees of at "
                         "most this many objects (default %(default)s)")
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"),
                    help="Markdown report (default %(default)s; '' for none);"
                         " notes below the marker line of an existing one "
                         "are kept")
    ap.add_argument("--json", help="also dump the raw results here")
    ap.add_argument("--perf", metavar="DIR",
                    help="perf-record startup, GetManagedObjects and Rescan "
                         "on the largest tree into DIR")
    a = ap.parse_args()
    a.blkmodeld = a.blkmodeld or os.path.join(a.build, "daemon", "blkmodeld")
    a.blkmodelctl = a.blkmodelctl or os.path.join(a.build, "client", "blkmodelctl")
    a.gmo_client = os.path.join(a.build, "bench", "gmo-client")
    a.peak_rss = os.path.join(a.build, "bench", "peak-rss")
    a.probe = os.path.join(a.build, "bench", "bus-probe")
    a.read_floor = os.path.join(a.build, "bench", "read-floor")
    a.tree_floor = os.path.join(a.build, "bench", "tree-floor")
    a.hiccup = os.path.join(a.build, "bench", "hiccup")
    if os.path.exists(os.path.join(a.build, "build.ninja")):
        subprocess.run(["ninja", "-C", a.build], check=True,
                       stdout=subprocess.DEVNULL)
    for exe in (a.blkmodeld, a.gmo_client, a.probe, a.read_floor, a.tree_floor, a.hiccup):
        if not os.access(exe, os.X_OK):
            ap.error("%s is not executable; build it: meson setup build-bench "
                     "--buildtype=release -Dbench=true && ninja -C "
                     "build-bench" % exe)
    if not a.label:
        p = subprocess.run(["git", "-C", REPO, "describe", "--always",
                            "--dirty"], capture_output=True, text=True)
        a.label = p.stdout.strip()
    a._load_start = os.getloadavg()
    a._old_notes = ""
    if a.results and os.path.exists(a.results):
        with open(a.results) as f:
            text = f.read()
        if KEEP_MARKER in text:
            a._old_notes = text.split(KEEP_MARKER, 1)[1].lstrip("\n")
    os.makedirs(a.workdir, exist_ok=True)
    mounted = False
    if a.tmpfs:
        if os.path.ismount(a.workdir) or os.listdir(a.workdir):
            ap.error("--tmpfs: %s is not an empty directory" % a.workdir)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,nr_inodes=0,"
                        "mode=0755" % a.tmpfs, "blkmodel-bench", a.workdir],
                       check=True)
        mounted = True

    trees = [(t, 0.0) for t in a.tree]
    sizes = a.disks or ([] if a.tree else [1000, 10000])
    st = os.statvfs(a.workdir)
    need = sum(sizes) * 300  # inodes per synthetic disk with 4 partitions, about
    if st.f_files and st.f_favail < need:
        if mounted:
            subprocess.run(["umount", a.workdir])
        ap.error("%s has %d free inodes, the trees need about %d: use --tmpfs "
                 "or another --workdir" % (a.workdir, st.f_favail, need))
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
            r = bench_tree(a, t, secs)
            r["ping_us"] = a.ping_us
            results.append(r)
            if a.json:
                with open(a.json, "w") as f:
                    json.dump(results, f, indent=1, default=str)
    finally:
        if not a.keep or mounted:
            for t in built:
                shutil.rmtree(t, ignore_errors=True)
            if mounted:
                subprocess.run(["umount", a.workdir])
            try:
                os.rmdir(a.workdir)
            except OSError:
                pass

    print()
    for r in results:
        print("%d disks, %d objects; lsblk %.3f s; reading floor %.3f s (1 thread), "
              "%.3f s (2 threads), %d files"
              % (r["disks"], r["objects"], r["lsblk"], r["floor_1"]["wall_s"],
                 r["floor_2"]["wall_s"], r["floor_2"]["files"]))
        for name, value, detail, target, ok in verdicts(r):
            print("  %-48s %-10s %-40s target %-15s %s"
                  % (name, value, detail, target,
                     "" if ok is None else "ok" if ok else "MISSED"))
    if a.results:
        with open(a.results, "w") as f:
            f.write(report(a, results) + "\n")
        print("\nwrote " + a.results)


if __name__ == "__main__":
    main()
