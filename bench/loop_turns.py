# SPDX-License-Identifier: LGPL-2.1-or-later
"""The daemon's own account of its loop's long turns (daemon/loop-watch.c), read from its log.

As it runs the daemon logs a turn over 20 ms of its own work (with its sleeps in system calls, not
its waits for a CPU) only when it is the longest yet; at
its exit it logs how many there were.  A benchmark reads both: the count, and where the records
fell."""
import collections
import re

import machine_pauses

_NEW_LONGEST = re.compile(
    r"The event loop was held (\d+) ms without a break \((\d+) ms of it asleep in system calls\)"
    r"(?:, busy (\d+) ms from (\d+)\.(\d{6}) s on CLOCK_MONOTONIC)?"
    r"(?:, (\d+) ms of it in (.*?))?(?:[;,] the longest yet|\.$)", re.M)

# start_ns, busy_ms, part_ms and part are None from a daemon older than the line that has them.
Turn = collections.namedtuple("Turn", "ms asleep start_ns busy_ms part_ms part")
_SUMMARY = re.compile(r"Turns of the event loop over \d+ ms: (\d+), the longest (\d+) ms")
_WAITED_SUMMARY = re.compile(r"Turns of the event loop over \d+ ms only with their waits for a CPU: (\d+), "
                             r"the longest wait (\d+) ms")


def _int(s):
    return int(s) if s else None


def new_longest(log):
    """Each new longest turn as a Turn, in the order they came: ms held, ms of it asleep in system
    calls (the rest was CPU time: on a VM without steal time, also the host's preemptions of its
    vCPU), when its busy stretch began (CLOCK_MONOTONIC ns) and how long it was, and the daemon's
    longest marked part of it (daemon/base/turn.h)."""
    return [Turn(int(ms), int(asleep), int(sec) * 10**9 + int(usec) * 1000 if sec else None,
                 _int(busy), _int(part_ms), part or None)
            for ms, asleep, busy, sec, usec, part_ms, part in _NEW_LONGEST.findall(log)]


def beside(turn, gaps):
    """"ms (who)" of bench/hiccup's gaps, [(start ns, ms, who)], that overlap the turn's busy
    stretch: the machine's share of it.  None when either is unknown."""
    if turn.start_ns is None:
        return None
    return machine_pauses.overlapping(gaps, turn.start_ns, turn.start_ns + turn.busy_ms * 10**6)


def record(phase, turn, gaps):
    """What a report keeps of a turn: [phase, ms, ms asleep, its longest part or None, the gaps
    beside it or None]."""
    part = "%d ms in %s" % (turn.part_ms, turn.part) if turn.part else None
    return [phase, turn.ms, turn.asleep, part, beside(turn, gaps)]


def count(log):
    """(turns over the threshold, the longest ms) from the exit's summary; (0, 0) without one."""
    m = _SUMMARY.search(log)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def waited(log):
    """(turns over the threshold only with the loop's waits for a CPU, the longest wait ms) from the
    exit's summary (a notice: --log-level=notice or lower); (0, 0) without one.  Callers waited
    through them, for the machine's other work."""
    m = _WAITED_SUMMARY.search(log)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def describe_waited(n, longest):
    return "%d, the longest wait %d ms" % (n, longest) if n else "0"


def _record(rec):
    phase, ms = rec[0], rec[1]
    said = []
    if len(rec) > 2:
        said.append("%d asleep" % rec[2])
    if len(rec) > 3 and rec[3]:
        said.append(rec[3])
    if len(rec) > 4 and rec[4] is not None:
        said.append("the machine's gaps beside it: " + (", ".join(rec[4]) or "none"))
    return "%d ms%s in %s" % (ms, " (%s)" % "; ".join(said) if said else "", phase)


def details(longest, records=None):
    """"the longest 25 ms; each new longest as it came: 21 ms (0 asleep) in warm-up, 25 ms (3
    asleep; 22 ms in a slice of a Rescan; the machine's gaps beside it: none) in Rescan"; records
    are (phase, ms[, ms asleep[, part, gaps]])."""
    text = "the longest %d ms" % longest
    if records:
        text += "; each new longest as it came: " + ", ".join(map(_record, records))
    return text


def describe(n, longest, records=None):
    """"0", or "3, the longest 25 ms; each new longest as it came: …"."""
    return "%d, %s" % (n, details(longest, records)) if n else "0"
