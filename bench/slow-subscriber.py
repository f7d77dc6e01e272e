#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Issue 13 item 6 benchmark: one subscriber that stops reading, a uevent
storm, and a well-behaved client that keeps calling blkmodeld.

    bench/slow-subscriber.py [--count 300000] [--runs 3] [--hold 30]

Needs the programs of bench/meson.build (meson setup build-bench
--buildtype=release -Dbench=true; ninja -C build-bench).  Per bus and run:

* a private bus: `dbus-daemon` with the system bus's limits (Debian 12's
  system.conf sets none, so dbus-daemon's compiled-in defaults: 127 MiB
  max_incoming_bytes and max_outgoing_bytes, 32 MiB max_message_size),
  `dbus-daemon` with 10 MB incoming/outgoing limits, and dbus-broker (via
  dbus-broker-launch, socket-activated, in a private mount namespace whose
  /run/systemd/journal/socket is a sink: the launcher needs a journal);
* blkmodeld on the standard fixture with --uevent-socket, --poll-interval=0;
* bench/stuck-subscriber: a match on every signal of org.blkmodel1, then it
  never reads again;
* bench/prober: Peer.Ping and Properties.Get every 10 ms (one of each in
  flight, 5 s timeout), its own match on the Manager's signals, read
  promptly; at the end GetEvents for every Uevent seqnum it missed;
* bench/uevent-send: COUNT uevents (`add` of a devpath not in sysfs by
  default: the cheapest for the daemon, so the storm is bus-bound), as fast as the
  daemon reads them;
* after HOLD seconds the stuck subscriber is killed; the prober goes on for
  AFTER seconds, so the report shows the stall and the recovery.

Sampled every 0.5 s: blkmodeld's and the bus's RSS, and (dbus-daemon only,
Debug.Stats) the bytes of blkmodeld's messages the bus holds and the stuck
subscriber's outgoing queue.  Medians of --runs.  Writes
bench/RESULTS-slow-subscriber.md (--results).  Not a test.
"""

import argparse
import datetime
import json
import os
import platform
import re
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
GHOST = "/devices/virtual/block/ghost0"
KEEP_MARKER = "<!-- hand-written notes below: kept by bench/slow-subscriber.py -->"

POLICY = """  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
    <allow own="*"/>
  </policy>
"""
# name: (description, dbus-daemon limits or None for dbus-broker)
BUSES = {
    "system": ("dbus-daemon, system-bus limits (compiled-in defaults)", {}),
    "10MB": ("dbus-daemon, 10 MB incoming/outgoing", {"max_incoming_bytes": 10000000,
                                                       "max_outgoing_bytes": 10000000}),
    "broker": ("dbus-broker, system-bus limits (launcher defaults)", None),
}

BROKER_RUN = r"""#!/bin/sh
# In a private mount namespace: a journal socket for dbus-broker-launch, then the launcher.
set -e
mount -t tmpfs tmpfs /run/systemd 2>/dev/null || { mkdir -p /run/systemd; mount -t tmpfs tmpfs /run/systemd; }
mkdir -p /run/systemd/journal
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind("/run/systemd/journal/socket")
f = open(sys.argv[1], "ab")
while True:
    d = s.recv(1 << 20); f.write(d.replace(b"\n", b" ") + b"\n"); f.flush()
' "$3" &
SINK=$!
for i in $(seq 100); do [ -S /run/systemd/journal/socket ] && break; sleep 0.05; done
systemd-socket-activate -E DBUS_SYSTEM_BUS_ADDRESS=unix:path=$1 -l "$1" \
        dbus-broker-launch --scope system --config-file="$2" &
LAUNCHER=$!
# Stopped: the launcher and the journal stand-in go too.
trap 'kill $LAUNCHER $SINK 2>/dev/null' TERM INT EXIT
wait $LAUNCHER
"""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return None


def busctl(address, *args, timeout=5):
    try:
        p = subprocess.run(["busctl", "--address=" + address, "--timeout=%d" % timeout] + list(args),
                           capture_output=True, text=True, timeout=timeout + 5)
    except subprocess.TimeoutExpired:
        return 1, ""
    return p.returncode, p.stdout.strip()


def has_owner(address, name):
    rc, out = busctl(address, "call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                     "NameHasOwner", "s", name)
    return rc == 0 and out == "b true"


def conn_stats(address, name):
    rc, out = busctl(address, "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                     "org.freedesktop.DBus.Debug.Stats", "GetConnectionStats", "s", name, timeout=2)
    if rc != 0:
        return {}
    return {k: int(v) for k, v in re.findall(r'"(\w+)" u (\d+)', out)}


def manager_prop(address, name):
    rc, out = busctl(address, "get-property", "org.blkmodel1", "/org/blkmodel1/Manager",
                     "org.blkmodel1.Manager", name, timeout=5)
    return int(out.split()[1]) if rc == 0 else None


class Run:
    def __init__(self, args, work, tree, bus):
        self.a, self.work, self.tree, self.bus = args, work, tree, bus
        self.procs = []
        self.sock = os.path.join(work, "uevents.sock")
        self.bus_sock = os.path.join(work, "bus.sock")

    def spawn(self, cmd, **kw):
        p = subprocess.Popen(cmd, **kw)
        self.procs.append(p)
        return p

    def start_bus(self):
        limits = BUSES[self.bus][1]
        conf = os.path.join(self.work, "bus.conf")
        with open(conf, "w") as f:
            f.write('<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"\n'
                    ' "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">\n<busconfig>\n'
                    "  <type>system</type>\n")
            if limits is not None:
                f.write("  <listen>unix:path=%s</listen>\n" % self.bus_sock)
            f.write(POLICY)
            for k, v in (limits or {}).items():
                f.write('  <limit name="%s">%d</limit>\n' % (k, v))
            f.write("</busconfig>\n")
        self.address = "unix:path=" + self.bus_sock
        if limits is not None:
            self.bus_proc = self.spawn(["dbus-daemon", "--config-file=" + conf, "--nofork"],
                                       stderr=subprocess.DEVNULL)
        else:
            script = os.path.join(self.work, "broker-run.sh")
            with open(script, "w") as f:
                f.write(BROKER_RUN)
            os.chmod(script, 0o755)
            self.bus_proc = self.spawn(["unshare", "-m", script, self.bus_sock, conf,
                                        os.path.join(self.work, "broker.journal")],
                                       stdout=subprocess.DEVNULL,
                                       stderr=open(os.path.join(self.work, "broker.err"), "w"))
        deadline = time.monotonic() + 10
        while not has_owner(self.address, "org.freedesktop.DBus"):
            if time.monotonic() > deadline:
                err = os.path.join(self.work, "broker.err")
                raise SystemExit("the %s bus did not start%s" % (
                    self.bus, (": " + open(err).read()) if os.path.exists(err) else ""))
            time.sleep(0.1)
        self.bus_pid = self.bus_proc.pid
        os.chmod(self.bus_sock, 0o777)  # systemd-socket-activate makes it root's alone
        if limits is None:
            # The broker proper is the launcher's child: its RSS is what holds the queues.
            self.broker_cmdline = ""
            out = subprocess.run(["pgrep", "-x", "dbus-broker"], capture_output=True, text=True).stdout.split()
            for pid in map(int, out):
                try:
                    if self.bus_proc.pid in self.ancestors(pid):
                        self.bus_pid = pid
                        with open("/proc/%d/cmdline" % pid) as f:
                            self.broker_cmdline = f.read().replace("\0", " ")
                except OSError:
                    pass

    @staticmethod
    def ancestors(pid):
        out = []
        while pid > 1:
            with open("/proc/%d/stat" % pid) as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
            out.append(pid)
        return out

    def go(self):
        a = self.a
        self.start_bus()
        self.daemon = self.spawn([a.blkmodeld, "--address=" + self.address,
                                  "--sysfs-root=" + os.path.join(self.tree, "sys"),
                                  "--uevent-socket=" + self.sock, "--poll-interval=0", "--log-level=info",
                                  "--event-log-size=%d" % a.event_log_size],
                                 stderr=open(os.path.join(self.work, "daemon.log"), "w"))
        deadline = time.monotonic() + 30
        while not has_owner(self.address, "org.blkmodel1"):
            if time.monotonic() > deadline or self.daemon.poll() is not None:
                raise SystemExit("blkmodeld did not take its name")
            time.sleep(0.05)
        time.sleep(0.5)
        # As nobody: a hung client is usually some user's, and dbus-broker's quotas are per user.
        stuck = self.spawn(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            os.path.join(a.bin, "stuck-subscriber"), self.address], stdout=subprocess.PIPE,
                           text=True)
        stuck_name = stuck.stdout.readline().strip()
        if not stuck_name.startswith(":"):
            raise SystemExit("stuck-subscriber did not start")
        total = a.hold + a.after
        prober = self.spawn([os.path.join(a.bin, "prober"), self.address, str(total)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if prober.stdout.readline().strip() != "ready":
            raise SystemExit("prober did not start")
        t0 = time.monotonic()
        send = self.spawn([os.path.join(a.bin, "uevent-send"), self.sock, str(a.count), "0", a.action, a.devpath,
                           "1000"], stdout=subprocess.PIPE, text=True)
        samples, stuck_killed, stuck_dropped_by_bus, storm_done = [], None, None, None
        while time.monotonic() - t0 < total:
            t = time.monotonic() - t0
            s = {"t": t, "rss": rss_kib(self.daemon.pid), "bus_rss": rss_kib(self.bus_pid)}
            if BUSES[self.bus][1] is not None:
                s["held"] = conn_stats(self.address, "org.blkmodel1").get("IncomingBytes")
                if stuck_killed is None:
                    s["stuck_out"] = conn_stats(self.address, stuck_name).get("OutgoingBytes")
            samples.append(s)
            if storm_done is None and send.poll() is not None:
                storm_done = t
            if stuck_killed is None and t >= a.hold:
                stuck_dropped_by_bus = not has_owner(self.address, stuck_name)
                stuck.kill()
                stuck_killed = time.monotonic() - t0
            time.sleep(0.5)
        out, err = prober.communicate(timeout=120)
        res = json.loads(out.strip().splitlines()[-1])
        seconds = [tuple(float(x) for x in l.split()[1:]) for l in err.splitlines() if l.startswith("T ")]
        # Recovery: from the kill of the stuck subscriber to the first whole second with every call < 100 ms.
        rec = None
        for sec, max_ms, _ in seconds:
            if sec > stuck_killed + 1 and max_ms < 100:
                rec = sec - 1 - stuck_killed
                break
        stall = [m for sec, m, _ in seconds if sec <= stuck_killed]
        if send.poll() is None:
            send.kill()
        res.update({
            "bus": self.bus,
            "daemon_alive": self.daemon.poll() is None and has_owner(self.address, "org.blkmodel1"),
            "stuck_dropped_by_bus": stuck_dropped_by_bus,
            "storm_done_s": storm_done,
            "during_max_ms": max(stall) if stall else None,
            "stalled_s": sum(1 for m in stall if m >= 1000),
            "recovery_s": rec,
            "rss_max_kib": max((s["rss"] or 0) for s in samples),
            "bus_rss_max_kib": max((s["bus_rss"] or 0) for s in samples),
            "held_max": max((s.get("held") or 0) for s in samples),
            "stuck_out_max": max((s.get("stuck_out") or 0) for s in samples),
            "last_seqnum": manager_prop(self.address, "LastSeqnum"),
            "events_lost": manager_prop(self.address, "EventsLost"),
            "samples": samples,
            "seconds": seconds,
        })
        with open(os.path.join(self.work, "daemon.log")) as f:
            res["daemon_log"] = [l.strip() for l in f if not l.startswith("<7>")][-12:]
        if BUSES[self.bus][1] is None:
            res["broker_cmdline"] = self.broker_cmdline
            try:
                with open(os.path.join(self.work, "broker.journal")) as f:
                    res["broker_log"] = [m.group(1) for l in f
                                         for m in [re.search(r"MESSAGE=(.*)$", l.strip())] if m][-6:]
            except FileNotFoundError:
                res["broker_log"] = []
        return res

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def fmt(v, f="%.0f"):
    return "–" if v is None else f % v


def med(rs, key):
    xs = [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(xs) if xs else None


def write_results(path, args, results, label):
    o = []
    w = o.append
    w("# A subscriber that stops reading (issue 13, item 6)")
    w("")
    w("Written by `bench/slow-subscriber.py` (see its docstring). One stuck subscriber (a match on every "
      "signal of org.blkmodel1, never reads), a storm of %d `%s %s` uevents as fast as the daemon reads "
      "them, and a prober calling Peer.Ping and Properties.Get every 10 ms (5 s timeout) while reading "
      "its own subscription; the stuck subscriber is killed after %d s, the prober goes on %d s more. "
      "Medians of %d runs." % (args.count, args.action, args.devpath, args.hold, args.after, args.runs))
    w("")
    w("* date: %s; daemon: %s" % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                                 label))
    w("* machine: %s, nproc %d, Linux %s" % (platform.processor() or platform.machine(), os.cpu_count(),
                                             platform.release()))
    w("* dbus-daemon: %s" % subprocess.run(["dbus-daemon", "--version"], capture_output=True,
                                           text=True).stdout.splitlines()[0])
    w("* command: `bench/slow-subscriber.py %s`" % " ".join(sys.argv[1:]))
    for rs in results.values():
        for r in rs:
            if r.get("broker_cmdline"):
                w("* dbus-broker as launched: `%s`" % r["broker_cmdline"].strip())
                break
    w("")
    w("| bus | calls | timeouts | p50 ms | p99 ms | worst ms (stuck present) | s with a call ≥ 1 s | "
      "recovery s after kill | prober signals | seqnum gaps | missed (gaps) | markers | announced by markers | "
      "recovered by GetEvents | "
      "stuck sub dropped by bus | blkmodeld RSS max KiB | bus RSS max KiB | bus holds of blkmodeld's max B | "
      "storm done at s | LastSeqnum |")
    w("|" + "---|" * 20)
    for bus, rs in results.items():
        w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            BUSES[bus][0], fmt(med(rs, "calls")), fmt(med(rs, "timeouts")), fmt(med(rs, "p50_ms"), "%.2f"),
            fmt(med(rs, "p99_ms"), "%.1f"), fmt(med(rs, "during_max_ms")), fmt(med(rs, "stalled_s")),
            fmt(med(rs, "recovery_s")), fmt(med(rs, "signals")), fmt(med(rs, "gaps")), fmt(med(rs, "missed")),
            fmt(med(rs, "markers")), fmt(med([dict(r, announced=r.get("announced", 0)) for r in rs], "announced")), fmt(med(rs, "recovered")),
            "/".join("yes" if r["stuck_dropped_by_bus"] else "no" for r in rs),
            fmt(med(rs, "rss_max_kib")), fmt(med(rs, "bus_rss_max_kib")), fmt(med(rs, "held_max")),
            "/".join(fmt(r["storm_done_s"], "%.0f") for r in rs), fmt(med(rs, "last_seqnum"))))
    w("")
    w("Per second, first run of each bus: worst call latency in ms (a call still in flight counts as it "
      "ages) / signals the prober read; `K` marks the second the stuck subscriber was killed.")
    w("")
    for bus, rs in results.items():
        r = rs[0]
        w("* %s: %s" % (bus, " ".join("%s%.0f/%d" % ("K" if abs(sec - args.hold) < 0.5 else "", m, n)
                                      for sec, m, n in r["seconds"])))
    w("")
    w("Samples (first run of each bus, every ~2 s): t s, blkmodeld RSS KiB, bus RSS KiB, bytes of "
      "blkmodeld's messages the bus holds (dbus-daemon Debug.Stats IncomingBytes), stuck subscriber's "
      "outgoing queue bytes.")
    w("")
    for bus, rs in results.items():
        w("* %s: %s" % (bus, "; ".join("%.0f: %s, %s, %s, %s" % (s["t"], fmt(s["rss"]), fmt(s["bus_rss"]),
                                                                 fmt(s.get("held")), fmt(s.get("stuck_out")))
                                       for s in rs[0]["samples"][::4])))
    w("")
    w("Daemon log (last lines, first run):")
    w("")
    for bus, rs in results.items():
        w("* %s: %s" % (bus, " / ".join("`%s`" % l for l in rs[0]["daemon_log"]) or "(nothing)"))
        if rs[0].get("broker_log"):
            w("  * dbus-broker's log: %s" % " / ".join("`%s`" % l[:200] for l in rs[0]["broker_log"]))
    try:
        with open(path) as f:
            old = f.read()
        if KEEP_MARKER in old:
            o.extend(["", old[old.index(KEEP_MARKER):].rstrip("\n")])
    except FileNotFoundError:
        pass
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build-bench"))
    ap.add_argument("--blkmodeld", help="daemon binary (default: BUILD/daemon/blkmodeld)")
    ap.add_argument("--label", default="this tree", help="what the daemon is, for the report")
    ap.add_argument("--count", type=int, default=400000, help="uevents in the storm")
    ap.add_argument("--action", default="add", help="uevent action of the storm")
    ap.add_argument("--devpath", default=GHOST,
                    help="devpath of the storm (default: one not in sysfs, the cheapest event, so that the "
                         "storm passes the system bus's 127 MiB within a minute on a small machine)")
    ap.add_argument("--event-log-size", type=int, default=524288,
                    help="the daemon's retained events (default: enough for the whole storm, so that GetEvents "
                         "can fill every gap; the daemon's own default is 4096)")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hold", type=int, default=75, help="seconds before the stuck subscriber is killed")
    ap.add_argument("--after", type=int, default=10, help="seconds of probing after that")
    ap.add_argument("--bus", action="append", choices=list(BUSES), help="only these buses")
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS-slow-subscriber.md"))
    ap.add_argument("--json", help="also dump every run's numbers here")
    args = ap.parse_args()
    # Killed: still stop the buses and daemons of the run in progress (Run.stop in a finally).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    args.blkmodeld = args.blkmodeld or os.path.join(args.build, "daemon", "blkmodeld")
    args.bin = os.path.join(args.build, "bench")
    if not args.no_build and os.path.exists(os.path.join(args.build, "build.ninja")):
        subprocess.run(["ninja", "-C", args.build], check=True, stdout=subprocess.DEVNULL)

    top = tempfile.mkdtemp(prefix="blkmodel-slow-")
    os.chmod(top, 0o755)  # the stuck subscriber runs as nobody and must reach the bus socket
    tree = os.path.join(top, "fixture")
    subprocess.run([sys.executable, MKSYSFS, tree], check=True, stdout=subprocess.DEVNULL)
    results = {b: [] for b in (args.bus or BUSES)}
    try:
        for i in range(args.runs):
            for bus in results:
                work = tempfile.mkdtemp(dir=top)
                os.chmod(work, 0o755)
                run = Run(args, work, tree, bus)
                try:
                    r = run.go()
                finally:
                    run.stop()
                results[bus].append(r)
                log("run %d %-7s calls %d timeouts %d worst %s ms stalled %s s recovery %s s gaps %d missed %d "
                    "announced %d recovered %d markers %d stuck-dropped %s rss %d KiB storm %s LastSeqnum %s" % (
                        i + 1, bus, r["calls"], r["timeouts"], fmt(r["during_max_ms"]), r["stalled_s"],
                        fmt(r["recovery_s"]), r["gaps"], r["missed"], r.get("announced", 0), r["recovered"], r["markers"],
                        r["stuck_dropped_by_bus"], r["rss_max_kib"], fmt(r["storm_done_s"]), r["last_seqnum"]))
    finally:
        shutil.rmtree(top, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f)
    if args.results:
        write_results(args.results, args, results, args.label)
        log("wrote " + args.results)


if __name__ == "__main__":
    main()
