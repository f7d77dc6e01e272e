# SPDX-License-Identifier: LGPL-2.1-or-later
"""Loop devices a test creates for itself, and takes away again.

`losetup -f` would hand out an existing free device — loop0 is somebody's
(the machine's, another test run's) and keeps whatever a test sets on it:
a scheduler, read_ahead_kb (attaching alone sets it from the backing
file).  A LoopDevice is a new loopN made with LOOP_CTL_ADD on an index
nobody uses; remove() restores every attribute written through it,
detaches it and deletes the device with LOOP_CTL_REMOVE, so /sys/block
is as before.  Devices still there when the interpreter exits (a test
that failed before its cleanup) are removed then.
"""

import atexit
import errno
import fcntl
import os
import random
import subprocess
import time

LOOP_CTL_ADD = 0x4C80
LOOP_CTL_REMOVE = 0x4C81

# Machine-wide, as /sys/block is: two checkouts' suites on one machine meet here too.
SYS_BLOCK_LOCK = os.path.join("/run/lock" if os.path.isdir("/run/lock") else "/tmp",
                              "blkmodel-tests-sys-block.lock")

_live = []
_sys_block_held = None


def hold_sys_block():
    """Waits until no other test of ours uses this machine's block devices,
    then holds them until this process exits.

    A test on the real /sys creates loop devices and compares the daemon's
    model of /sys/block with the kernel's: two at once would see each
    other's devices come and go.  They take this lock rather than run alone
    (meson's is_parallel: false), so that the tests on fixture trees run
    beside them."""
    global _sys_block_held
    if _sys_block_held is None:
        # Read-only: flock needs no more, and a user other than the one who made the file may open it.
        fd = os.open(SYS_BLOCK_LOCK, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        _sys_block_held = fd


def _run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise OSError("%s: %s" % (" ".join(args), p.stderr.strip()))
    return p.stdout.strip()


def _read(path):
    with open(path) as f:
        return f.read().strip()


def _write(path, value):
    with open(path, "w") as f:
        f.write(value)


def _active_scheduler(text):
    """'none [mq-deadline] kyber' → 'mq-deadline'."""
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return text.split()[0] if text.split() else ""


class LoopDevice:
    def __init__(self):
        hold_sys_block()
        fd = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
        try:
            # Far above what boot creates (max_loop, 8 here) and what
            # losetup -f takes; random, so that parallel tests rarely meet.
            start = random.randrange(1000, 100000)
            for index in range(start, start + 1000):
                try:
                    self.index = fcntl.ioctl(fd, LOOP_CTL_ADD, index)
                    break
                except OSError as e:
                    if e.errno != errno.EEXIST:
                        raise
            else:
                raise OSError("no free loop device index from %d" % start)
        finally:
            os.close(fd)
        _live.append(self)
        self.name = "loop%d" % self.index
        self.dev = "/dev/" + self.name
        self.sysdir = os.path.realpath("/sys/block/" + self.name)
        self.saved = {}         # attribute (relative to sysdir) → value
        self.attached = False
        # devtmpfs makes the node; wait for it as udev users would.
        deadline = time.monotonic() + 10
        while not os.path.exists(self.dev):
            if time.monotonic() > deadline:
                raise OSError(self.dev + " did not appear")
            time.sleep(0.01)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    def attach(self, image, partitions=False):
        """losetup; partitions: scan (and add with partx, as the kernels
        here have no partition parsers) the image's partition table."""
        _run("losetup", *(["-P"] if partitions else []), self.dev, image)
        self.attached = True
        if partitions:
            subprocess.run(["partx", "-a", self.dev], capture_output=True,
                           timeout=60)

    def detach(self):
        if not self.attached:
            return
        subprocess.run(["partx", "-d", self.dev], capture_output=True,
                       timeout=60)
        _run("losetup", "-d", self.dev)
        self.attached = False

    def remember(self, *attrs):
        """Record attributes (e.g. "queue/scheduler") that something else
        (the daemon, for the test) is about to write: remove() puts them
        back."""
        for a in attrs:
            if a not in self.saved:
                value = _read(os.path.join(self.sysdir, a))
                if a.endswith("scheduler"):
                    value = _active_scheduler(value)
                self.saved[a] = value

    def write(self, attr, value):
        self.remember(attr)
        _write(os.path.join(self.sysdir, attr), value)

    def restore(self):
        errors = []
        for attr, value in self.saved.items():
            try:
                _write(os.path.join(self.sysdir, attr), value)
            except OSError as e:
                errors.append("%s/%s: %s" % (self.name, attr, e))
        self.saved.clear()
        return errors

    def remove(self):
        """Restore, detach, delete.  Raises if anything is left behind."""
        if self not in _live:
            return
        errors = self.restore()
        try:
            self.detach()
        except OSError as e:
            errors.append(str(e))
        fd = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
        try:
            # Busy for a moment after a detach while the last opener closes.
            deadline = time.monotonic() + 10
            while True:
                try:
                    fcntl.ioctl(fd, LOOP_CTL_REMOVE, self.index)
                    break
                except OSError as e:
                    if e.errno == errno.ENODEV:
                        break
                    if e.errno != errno.EBUSY or time.monotonic() > deadline:
                        errors.append("LOOP_CTL_REMOVE %s: %s"
                                      % (self.name, e))
                        break
                    time.sleep(0.05)
        finally:
            os.close(fd)
        _live.remove(self)
        if errors:
            raise OSError("; ".join(errors))


@atexit.register
def _remove_leftovers():
    for d in list(_live):
        try:
            d.remove()
        except OSError as e:
            print("loopdev: %s" % e)
