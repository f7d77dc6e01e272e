# SPDX-License-Identifier: LGPL-2.1-or-later
"""The daemon's own account of its loop's long turns (daemon/loop-watch.c), read from its log.

As it runs the daemon logs a turn over 20 ms of its own work (with its sleeps in system calls, not
its waits for a CPU) only when it is the longest yet; at
its exit it logs how many there were.  A benchmark reads both: the count, and where the records
fell."""
import re

_NEW_LONGEST = re.compile(r"The event loop was held (\d+) ms without a break \((\d+) ms of it asleep")
_SUMMARY = re.compile(r"Turns of the event loop over \d+ ms: (\d+), the longest (\d+) ms")


def new_longest(log):
    """Each new longest turn as (ms, ms of it asleep in system calls), in the order they came: the
    rest was CPU time (on a VM without steal time, also the host's preemptions of its vCPU)."""
    return [(int(ms), int(asleep)) for ms, asleep in _NEW_LONGEST.findall(log)]


def count(log):
    """(turns over the threshold, the longest ms) from the exit's summary; (0, 0) without one."""
    m = _SUMMARY.search(log)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _record(rec):
    phase, ms = rec[0], rec[1]
    asleep = " (%d asleep)" % rec[2] if len(rec) > 2 else ""
    return "%d ms%s in %s" % (ms, asleep, phase)


def details(longest, records=None):
    """"the longest 25 ms; each new longest as it came: 21 ms (0 asleep) in warm-up, 25 ms (3
    asleep) in Rescan"; records are (phase, ms[, ms asleep])."""
    text = "the longest %d ms" % longest
    if records:
        text += "; each new longest as it came: " + ", ".join(map(_record, records))
    return text


def describe(n, longest, records=None):
    """"0", or "3, the longest 25 ms; each new longest as it came: …"."""
    return "%d, %s" % (n, details(longest, records)) if n else "0"
