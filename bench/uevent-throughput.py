#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Issue 3 benchmark: uevent -> Manager.Uevent signal, blkmodeld against a
bare sd-bus emitter, on one private dbus-daemon in one run.

    bench/uevent-throughput.py [--count 100000] [--runs 3] [--perf]

Needs the programs of bench/meson.build:

    meson setup build-bench --buildtype=release -Dbench=true
    ninja -C build-bench

Per run, each with a fresh bench/subscriber (bare sd-bus, one match on
Uevent; rate counted from the first to the last signal, seqnums checked
gap-free):

* throughput
  - bare:   bench/bare-emitter sends COUNT signals as fast as sd-bus takes
            them (back-pressure at 1024 queued, as the daemon);
  - change: bench/uevent-send writes COUNT `change@/devices/virtual/block/loop0`
            datagrams to blkmodeld's --uevent-socket as fast as the socket
            takes them (blocking: none is lost); the daemon re-reads loop0
            per event;
  - ghost:  the same with `add@/devices/virtual/block/ghost0`, a devpath
            that is not in sysfs (the cheapest event: no object to read);
* latency: the same three at --rate events/s for --seconds, each stamped
  with BENCH_T (CLOCK_MONOTONIC ns) just before it is sent; the subscriber
  reports p50/p99/max of sent -> received.

Variants are interleaved within each run so that background load hits them
alike; the medians of --runs are reported.  The daemon runs on the standard
fixture (tests/fixtures/mksysfs.py) with --poll-interval=0 (no attribute
polling) and --log-level=warning; after each daemon run its LastSeqnum and
EventsLost are checked.  --perf records the daemon with `perf record
--call-graph dwarf` during one extra throughput run per daemon variant and
prints the top user-space functions by inclusive time (use a debugoptimized
--blkmodeld to see inlined functions).  Writes bench/RESULTS-uevents.md (--results).  Not a test.
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

LOOP0 = "/devices/virtual/block/loop0"
GHOST = "/devices/virtual/block/ghost0"
VARIANTS = {
    # name: (action, devpath, what it is)
    "bare": (None, None, "bare sd-bus emitter (reference)"),
    "change": ("change", LOOP0, "blkmodeld, `change` of loop0 (re-reads the object)"),
    "ghost": ("add", GHOST, "blkmodeld, `add` of a devpath not in sysfs"),
}
TARGET_RATIO = 0.9
TARGET_P99_US = 1000.0
KEEP_MARKER = "<!-- hand-written notes below: kept by bench/uevent-throughput.py -->"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def median(xs):
    return statistics.median(xs)


def proc_cpu(pid):
    """utime+stime of a live process, seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def busctl(address, *args):
    p = subprocess.run(["busctl", "--address=" + address] + list(args),
                       capture_output=True, text=True)
    return p.returncode, p.stdout.strip()


def get_prop(address, name):
    rc, out = busctl(address, "get-property", "org.blkmodel1", "/org/blkmodel1/Manager",
                     "org.blkmodel1.Manager", name)
    if rc != 0:
        raise SystemExit("cannot read Manager.%s" % name)
    return int(out.split()[1])


class Bench:
    def __init__(self, args):
        self.args = args
        self.bin = os.path.join(args.build, "bench")
        # Measure what the tree says, not a binary left over from an earlier edit.
        if not args.no_build and os.path.exists(os.path.join(args.build, "build.ninja")):
            subprocess.run(["ninja", "-C", args.build], check=True, stdout=subprocess.DEVNULL)
        for prog in ("bare-emitter", "subscriber", "uevent-send"):
            if not os.access(os.path.join(self.bin, prog), os.X_OK):
                raise SystemExit("%s/%s missing: meson setup %s -Dbench=true && ninja -C %s"
                                 % (self.bin, prog, args.build, args.build))
        self.work = tempfile.mkdtemp(prefix="blkmodel-uevents-")
        self.sock = os.path.join(self.work, "uevents.sock")
        self.bus_pid = self.daemon = None
        self.seqnum = 1000  # the kernel SEQNUM we put in env; ours, not checked by the daemon

    # ---- set-up ------------------------------------------------------------

    def start(self):
        self.tree = self.args.tree or os.path.join(self.work, "fixture")
        if not self.args.tree:
            subprocess.run([sys.executable, MKSYSFS, self.tree], check=True, stdout=subprocess.DEVNULL)
        p = subprocess.run(["dbus-daemon", "--session", "--fork",
                            "--print-address=1", "--print-pid=1"],
                           capture_output=True, text=True, check=True)
        self.address, pid = p.stdout.split("\n")[:2]
        self.bus_pid = int(pid)
        self.daemon = subprocess.Popen(
            [self.args.blkmodeld, "--address=" + self.address,
             "--sysfs-root=" + os.path.join(self.tree, "sys"),
             "--uevent-socket=" + self.sock, "--poll-interval=0", "--log-level=warning"])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            rc, out = busctl(self.address, "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                             "org.freedesktop.DBus", "NameHasOwner", "s", "org.blkmodel1")
            if rc == 0 and out == "b true":
                break
            if self.daemon.poll() is not None:
                raise SystemExit("blkmodeld exited with %d" % self.daemon.returncode)
            time.sleep(0.05)
        else:
            raise SystemExit("blkmodeld did not take its name")
        # Let the warm-up (recording every object's values, on idle) finish.
        time.sleep(1.0)

    def stop(self):
        if self.daemon and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(10)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
        if self.bus_pid:
            try:
                os.kill(self.bus_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.work, ignore_errors=True)

    # ---- one measurement ---------------------------------------------------

    def measure(self, variant, count, rate=0, perf_out=None):
        """One subscriber + one producer; returns the subscriber's JSON plus CPU seconds."""
        action, devpath, _ = VARIANTS[variant]
        sub = subprocess.Popen([os.path.join(self.bin, "subscriber"), self.address, str(count)],
                               stdout=subprocess.PIPE, text=True)
        if sub.stdout.readline().strip() != "ready":
            raise SystemExit("subscriber did not start")

        if variant != "bare":
            last_before = get_prop(self.address, "LastSeqnum")
            lost_before = get_prop(self.address, "EventsLost")
            cpu_before = proc_cpu(self.daemon.pid)
        perf = None
        if perf_out:
            # DWARF unwinding: libc, libsystemd and a release build have no frame pointers.
            perf = subprocess.Popen(["perf", "record", "--call-graph", "dwarf,16384", "-q", "-o", perf_out,
                                     "-p", str(self.daemon.pid)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)

        bus_cpu_before = proc_cpu(self.bus_pid)
        if variant == "bare":
            cmd = [os.path.join(self.bin, "bare-emitter"), self.address, str(count), str(rate)]
        else:
            cmd = [os.path.join(self.bin, "uevent-send"), self.sock, str(count), str(rate),
                   action, devpath, str(self.seqnum)]
            self.seqnum += count
        producer = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        _, status, ru = os.wait4(producer.pid, 0)
        producer.returncode = os.waitstatus_to_exitcode(status)
        producer.stdout.close()
        if producer.returncode != 0:
            raise SystemExit("%s failed" % cmd[0])

        out, _ = sub.communicate(timeout=600)
        res = json.loads(out.strip().splitlines()[-1])
        res["producer_cpu"] = ru.ru_utime + ru.ru_stime
        res["bus_cpu"] = proc_cpu(self.bus_pid) - bus_cpu_before
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait()
        if variant != "bare":
            res["daemon_cpu"] = proc_cpu(self.daemon.pid) - cpu_before
            res["daemon_seqnums"] = get_prop(self.address, "LastSeqnum") - last_before
            res["events_lost"] = get_prop(self.address, "EventsLost") - lost_before
        res["ok"] = (sub.returncode == 0 and res["count"] == count and res["gaps"] == 0
                     and res.get("daemon_seqnums", count) == count
                     and res.get("events_lost", 0) == 0)
        if not res["ok"]:
            log("  !! %s: lost or out-of-order signals: %s" % (variant, res))
        return res

    # ---- the whole benchmark ---------------------------------------------

    def run(self):
        a = self.args
        lat_count = a.rate * a.seconds
        thr = {v: [] for v in VARIANTS}
        lat = {v: [] for v in VARIANTS}
        for i in range(a.runs):
            for v in VARIANTS:
                r = self.measure(v, a.count)
                thr[v].append(r)
                log("run %d throughput %-6s %9.0f signals/s  (%d signals, gaps %d, %s)"
                    % (i + 1, v, r["rate"], r["count"], r["gaps"], "ok" if r["ok"] else "FAILED"))
            for v in VARIANTS:
                r = self.measure(v, lat_count, rate=a.rate)
                lat[v].append(r)
                log("run %d latency    %-6s p50 %7.1f us  p99 %7.1f us  max %8.1f us  (%s)"
                    % (i + 1, v, r["p50_us"], r["p99_us"], r["max_us"], "ok" if r["ok"] else "FAILED"))
        perf = {}
        if a.perf:
            for v in ("change", "ghost"):
                data = os.path.join(a.perf, "perf-%s.data" % v)
                os.makedirs(a.perf, exist_ok=True)
                self.measure(v, a.count, perf_out=data)
                # Inclusive time per user-space function: where the daemon's time goes, by caller.
                rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--children",
                                      "--percent-limit", "2", "-g", "none", "--sort", "symbol"],
                                     capture_output=True, text=True)
                perf[v] = [" ".join(l.split()[:4]) for l in rep.stdout.splitlines()
                           if l and not l.startswith("#") and "[.]" in l and "[.] 0x" not in l][:30]
                log("perf %s (%s):\n  %s" % (v, data, "\n  ".join(perf[v])))
        return thr, lat, perf


# ---- the report ------------------------------------------------------------

def versions(blkmodeld):
    def first_line(cmd):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True)
            return (p.stdout or p.stderr).strip().splitlines()[0]
        except (OSError, IndexError):
            return "?"

    def pc(mod):
        return first_line(["pkg-config", "--modversion", mod])

    head = first_line(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return {
        "blkmodeld": "%s (git %s%s)" % (first_line([blkmodeld, "--version"]), head,
                                         ", uncommitted changes" if dirty else ""),
        "libsystemd": pc("libsystemd"),
        "libuv": pc("libuv"),
        "dbus-daemon": first_line(["dbus-daemon", "--version"]),
        "cc": first_line(["cc", "--version"]),
    }


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return "%s, nproc %d, Linux %s" % (cpu, os.cpu_count(), platform.release())


def write_results(path, args, thr, lat, perf, load_before, load_after):
    med = {v: median([r["rate"] for r in thr[v]]) for v in VARIANTS}
    ok = all(r["ok"] for rs in list(thr.values()) + list(lat.values()) for r in rs)
    o = []
    w = o.append
    w("# Uevent throughput and latency (issue 3 benchmark)")
    w("")
    w("Written by `bench/uevent-throughput.py` (see bench/README.md). Targets (issue 3, "
      "SPEC §9): blkmodeld's Uevent rate ≥ %.1f × a bare sd-bus emitter's on the same bus in "
      "the same run; p99 datagram-sent → signal-received ≤ %d µs at %d events/s."
      % (TARGET_RATIO, TARGET_P99_US, args.rate))
    w("")
    w("* date: %s" % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    w("* machine: %s; load average %s before, %s after" % (machine(), load_before, load_after))
    for k, v in versions(args.blkmodeld).items():
        w("* %s: %s" % (k, v))
    w("* command: `bench/uevent-throughput.py %s`" % " ".join(sys.argv[1:]))
    w("* setup: one private `dbus-daemon --session`; blkmodeld `--sysfs-root=` %s, "
      "`--uevent-socket=`, `--poll-interval=0 --log-level=warning`; one "
      "`bench/subscriber` per measurement; 10 env pairs per event (bench/uevent-env.h)"
      % ("the tree " + args.tree if args.tree else "the standard fixture (tests/fixtures/mksysfs.py)"))
    w("* every measurement: %s (subscriber got every signal, seqnums gap-free, daemon "
      "LastSeqnum advanced by exactly the count, EventsLost unchanged)"
      % ("all passed" if ok else "**SOME FAILED**"))
    w("")
    w("## Throughput (%d signals per measurement, median of %d)" % (args.count, args.runs))
    w("")
    w("| variant | signals/s (median) | runs | ratio to bare | target ≥ %.1f | CPU µs/event: "
      "producer | dbus-daemon | subscriber | blkmodeld |" % TARGET_RATIO)
    w("|---|---|---|---|---|---|---|---|---|")
    for v in VARIANTS:
        rs = thr[v]
        ratio = med[v] / med["bare"]
        cpu = lambda key: "%.1f" % (median([r[key] for r in rs]) / args.count * 1e6) if key in rs[0] else "–"
        w("| %s | %.0f | %s | %.2f | %s | %s | %s | %s | %s |" % (
            VARIANTS[v][2], med[v], ", ".join("%.0f" % r["rate"] for r in rs), ratio,
            "reference" if v == "bare" else ("**pass**" if ratio >= TARGET_RATIO else "**FAIL**"),
            cpu("producer_cpu"), cpu("bus_cpu"), cpu("cpu"), cpu("daemon_cpu")))
    w("")
    w("## Latency at %d events/s for %d s (median of %d runs)" % (args.rate, args.seconds, args.runs))
    w("")
    w("| variant | p50 µs | p99 µs | max µs | target p99 ≤ %d µs | runs (p50/p99/max) |" % TARGET_P99_US)
    w("|---|---|---|---|---|---|")
    for v in VARIANTS:
        rs = lat[v]
        p99 = median([r["p99_us"] for r in rs])
        w("| %s | %.0f | %.0f | %.0f | %s | %s |" % (
            VARIANTS[v][2], median([r["p50_us"] for r in rs]), p99, median([r["max_us"] for r in rs]),
            "reference" if v == "bare" else ("**pass**" if p99 <= TARGET_P99_US else "**FAIL**"),
            "; ".join("%.0f/%.0f/%.0f" % (r["p50_us"], r["p99_us"], r["max_us"]) for r in rs)))
    if perf:
        w("")
        w("## perf record of blkmodeld, one throughput run (children/self %, user space, ≥ 2 %)")
        for v, lines in perf.items():
            w("")
            w("%s:" % VARIANTS[v][2])
            w("")
            w("```")
            o.extend(lines)
            w("```")
    # Notes written by hand below the marker survive a re-run.
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
    ap.add_argument("--build", default=os.path.join(REPO, "build-bench"),
                    help="meson build dir configured with -Dbench=true (default: build-bench)")
    ap.add_argument("--blkmodeld", help="daemon binary (default: BUILD/daemon/blkmodeld)")
    ap.add_argument("--count", type=int, default=100000, help="signals per throughput measurement")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=1000, help="events/s of the latency measurement")
    ap.add_argument("--seconds", type=int, default=5, help="length of the latency measurement")
    ap.add_argument("--tree", metavar="DIR",
                    help="sysfs tree DIR/sys made by tests/fixtures/mksysfs.py (default: the standard "
                         "fixture, built here)")
    ap.add_argument("--perf", metavar="DIR", help="also perf-record the daemon, data in DIR")
    ap.add_argument("--no-build", action="store_true", help="do not run ninja -C BUILD first")
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS-uevents.md"),
                    help="markdown report to write ('' for none)")
    args = ap.parse_args()
    args.blkmodeld = args.blkmodeld or os.path.join(args.build, "daemon", "blkmodeld")

    load_before = "%.2f" % os.getloadavg()[0]
    b = Bench(args)
    try:
        b.start()
        thr, lat, perf = b.run()
    finally:
        b.stop()
    load_after = "%.2f" % os.getloadavg()[0]

    med = {v: median([r["rate"] for r in thr[v]]) for v in VARIANTS}
    for v in VARIANTS:
        p99 = median([r["p99_us"] for r in lat[v]])
        log("%-6s %9.0f signals/s  ratio %.2f   latency p99 %.0f us" % (v, med[v], med[v] / med["bare"], p99))
    if args.results:
        write_results(args.results, args, thr, lat, perf, load_before, load_after)
        log("wrote " + args.results)


if __name__ == "__main__":
    main()
