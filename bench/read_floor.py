# SPDX-License-Identifier: LGPL-2.1-or-later
"""The reading floor of bench/real-kernel and bench/scale.py (bench/read-floor.c).

blkmodeld reads every attribute value of a complete GetManagedObjects live: one
open+read+close per file.  bench/read-floor does only that, on the same files, so
that a bench can put the kernel's own cost next to the daemon's and lsblk's.

    dirs, objects = floor_dirs(sysfs, disks)     what the daemon's reply is read from
    write_dirs(path, dirs)                       read-floor's stdin
    run_floor(prog, sysfs, path, threads, repeat)   one read-floor run, its JSON

The directories, as the daemon's scan (daemon/sysfs/scan.c) finds them: for each
published object its directory and its attribute groups.  Objects: each disk
(sysfs/block/X resolved), its partitions (subdirectories with a `partition` file),
its `queue`, the queue's `iosched` when there is one, and, for a disk with a
`device` link, the hardware: the link's target and its ancestors up to (not
including) sysfs/devices, those with a `uevent` file, each once.  Attribute
groups: subdirectories that are no kobject (no `uevent` or `partition` file), not
a symlink, not `holders`, `slaves`, `mq`, `queue` or `iosched`, and hold at least
one regular file (`power`, `trace`, `loop`, `integrity`, `msi_irqs`, ...).  Close
to what the daemon reads, not exact: read-floor reads every regular file there,
`uevent` and write-only ones included; it reports how many it found.
"""

import json
import os
import subprocess

# Subdirectories of an object that are not its attribute groups: other objects
# (queue, iosched) or link directories the daemon reads as lists (holders, slaves),
# or not published at all (mq).
NOT_GROUPS = frozenset(("holders", "slaves", "mq", "queue", "iosched"))


def _subdir_kind(path):
    """'kobject', 'group' (no kobject, holds a regular file) or None (neither)."""
    has_file = False
    try:
        with os.scandir(path) as it:
            for e in it:
                if e.is_file(follow_symlinks=False):
                    if e.name in ("uevent", "partition"):
                        return "kobject"
                    has_file = True
    except OSError:
        return None
    return "group" if has_file else None


def _object(sysfs, path, out):
    """Adds an object's directory and its attribute groups to out (relative to sysfs);
    returns the names of its kobject subdirectories."""
    out.append(os.path.relpath(path, sysfs))
    kobjects = []
    try:
        it = os.scandir(path)
    except OSError:
        return kobjects
    with it:
        for e in it:
            if e.name in NOT_GROUPS or e.is_symlink() or not e.is_dir(follow_symlinks=False):
                continue
            kind = _subdir_kind(e.path)
            if kind == "group":
                out.append(os.path.relpath(e.path, sysfs))
            elif kind == "kobject":
                kobjects.append(e.name)
    return kobjects


def floor_dirs(sysfs, disks):
    """The directories a complete GetManagedObjects of these disks (names in
    sysfs/block) is read from, relative to sysfs; and how many objects they are."""
    sysfs = os.path.realpath(sysfs)
    devices = os.path.join(sysfs, "devices")
    dirs = []
    objects = 0
    hardware = {}  # path -> None, in the order first found
    for name in disks:
        disk = os.path.realpath(os.path.join(sysfs, "block", name))
        if not os.path.isdir(disk):
            continue
        objects += 1
        for sub in sorted(_object(sysfs, disk, dirs)):
            if os.path.isfile(os.path.join(disk, sub, "partition")):
                objects += 1
                _object(sysfs, os.path.join(disk, sub), dirs)
        queue = os.path.join(disk, "queue")
        if os.path.isdir(queue) and not os.path.islink(queue):
            objects += 1
            _object(sysfs, queue, dirs)
            iosched = os.path.join(queue, "iosched")
            if os.path.isdir(iosched) and not os.path.islink(iosched):
                objects += 1
                _object(sysfs, iosched, dirs)
        link = os.path.join(disk, "device")
        if not os.path.islink(link):
            continue
        p = os.path.realpath(link)
        if p == disk or p.startswith(disk + "/"):
            continue
        while p.startswith(devices + "/"):
            if p not in hardware and os.path.isfile(os.path.join(p, "uevent")):
                hardware[p] = None
            p = os.path.dirname(p)
    for p in hardware:
        objects += 1
        _object(sysfs, p, dirs)
    return dirs, objects


def write_dirs(path, dirs):
    with open(path, "w") as f:
        for d in dirs:
            f.write(d + "\n")


def run_floor(prog, sysfs, dirs_file, threads, repeat=1, timeout=3600, ring=False):
    """One read-floor run: its JSON (threads, dirs, files, failed, wall_s, cpu_s, ...).  ring: read
    through io_uring, as the daemon does on kernfs."""
    with open(dirs_file) as f:
        p = subprocess.run([prog, "--threads", str(threads), "--repeat", str(repeat)]
                           + (["--ring"] if ring else []) + [sysfs],
                           stdin=f, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("read-floor exited %d: %s" % (p.returncode, p.stderr.strip()))
    return json.loads(p.stdout.strip().splitlines()[-1])
