# SPDX-License-Identifier: LGPL-2.1-or-later
"""The machine's pauses (all of it, or one CPU), from bench/hiccup --asleep run beside a benchmark.

A VM whose host pauses it, or takes a vCPU away, and reports no steal time charges the time to
whatever thread ran: the daemon's log counts it as a long turn of its own work, and pings wait it
out.  hiccup --asleep wakes a thread bound to each CPU every 2 ms at real-time priority; a gap over
20 ms that every thread saw at once is the machine paused, one that a single thread saw is its CPU
taken away (by the host, or by the kernel for that long)."""
import re
import signal
import subprocess

_GAP = re.compile(r"^\s+([\d.]+) ms at [\d.]+ s \(monotonic (\d+) ns\)(, every thread at once)?$")


class Hiccup:
    def __init__(self, exe):
        self.p = subprocess.Popen([exe, "--asleep", "0"], stdout=subprocess.PIPE, text=True)

    def stop(self):
        """[(start, CLOCK_MONOTONIC ns; ms; "every CPU" or "CPU n")] of each gap: every CPU's
        watcher late at once is the machine paused; one CPU's alone, that CPU taken from a real-time
        thread (by the host, on a VM, or by the kernel).  None if hiccup had exited by itself: then
        nothing was watched to the end, and no gap list may claim otherwise."""
        if self.p.poll() is not None:
            return None
        self.p.send_signal(signal.SIGTERM)
        out, _ = self.p.communicate(timeout=60)
        gaps, cpu = [], None
        for line in out.splitlines():
            if line.startswith("thread "):
                cpu = int(line.split()[1].rstrip(":"))  # thread n is bound to CPU n
                continue
            m = _GAP.match(line)
            if not m:
                continue
            if not m.group(3):
                gaps.append((int(m.group(2)), float(m.group(1)), "CPU %d" % cpu))
            elif cpu == 0:  # every thread lists such a pause: the first one's list has them all
                gaps.append((int(m.group(2)), float(m.group(1)), "every CPU"))
        return sorted(gaps)

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def by_phase(gaps, marks, t0_ns):
    """[phase, ms, who] for each gap after t0_ns: the phase is the first mark (phase, ns at its
    end) at or after the gap's start.  None for None (not watched)."""
    if gaps is None:
        return None
    return [[next((name for name, t in marks if t >= start), "the daemon's exit"), ms, who]
            for start, ms, who in gaps if start >= t0_ns]


def _named(gaps, keep):
    return ["%.0f ms (%s)" % (ms, who) for start, ms, who in gaps if keep(start, ms)]


def within(gaps, start_ns, end_ns):
    """"ms (who)" of the gaps that began between start_ns and end_ns; ["not watched"] for None."""
    if gaps is None:
        return ["not watched"]
    return _named(gaps, lambda start, ms: start_ns <= start <= end_ns)


def overlapping(gaps, start_ns, end_ns):
    """"ms (who)" of the gaps that overlap start_ns..end_ns; None for None (not watched)."""
    if gaps is None:
        return None
    return _named(gaps, lambda start, ms: start < end_ns and start + ms * 1e6 > start_ns)


def describe(gaps):
    """"none", or "2: 47 ms (every CPU) in poll, 25 ms (CPU 1) in Rescan" for [phase, ms, who]; for
    None, that hiccup did not watch to the end."""
    if gaps is None:
        return "not watched (bench/hiccup exited early)"
    if not gaps:
        return "none"
    return "%d: %s" % (len(gaps), ", ".join("%.0f ms (%s) in %s" % (ms, who, phase)
                                            for phase, ms, who in gaps))
