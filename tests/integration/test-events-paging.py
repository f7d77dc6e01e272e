# SPDX-License-Identifier: LGPL-2.1-or-later
"""GetEvents with a 100,000-event log: no reply passes the size bound (a log
of 2^20 events in one reply would pass the bus's message limit, and the bus
would drop the daemon), and paging after the last seqnum received gets
every event exactly once, in order."""

import os
import socket
import time
import unittest

import blkmodeltest as bt

N = 100000
REPLY_MAX = 1 << 20


class Paging(unittest.TestCase):
    def test_hundred_thousand_events(self):
        sys_ = os.path.join(bt.make_fixture(), "sys")
        queue = [r for r, _, _ in os.walk(os.path.join(sys_, "devices"))
                 if r.endswith("/block/sda/queue")][0][len(sys_):]
        with bt.Daemon(sys_, uevent_socket=True,
                       extra_args=["--event-log-size=%d" % N]) as dm:
            # A queue's own events are logged and signalled, not applied:
            # the cheapest events there are.  Long env values make them big.
            pad = "x" * 180
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            for i in range(N):
                raw = ("change@%s\0ACTION=change\0DEVPATH=%s\0SUBSYSTEM=block\0"
                       "SEQNUM=%d\0PAD=%s\0" % (queue, queue, i + 1, pad))
                s.sendto(raw.encode(), dm.uevent_socket)
            s.close()
            deadline = time.monotonic() + 120
            while dm.manager_prop("LastSeqnum") < dm.seq(N):
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.2)

            got, after, replies = [], 0, 0
            last = dm.manager_prop("LastSeqnum")
            while after < last:
                reply = dm.object(bt.MANAGER_PATH).get_dbus_method(
                    "GetEvents", bt.MANAGER)(bt.dbus.UInt64(after),
                                             timeout=120, byte_arrays=True)
                replies += 1
                self.assertGreater(len(reply), 0)
                size = sum(8 + 8 + 3 * 5 + len(e[1]) + len(e[2]) + len(e[3]) +
                           sum(10 + len(k) + len(v) for k, v in e[4].items())
                           for e in reply)
                self.assertLessEqual(size, REPLY_MAX)
                got += [int(e[0]) for e in reply]
                after = int(reply[-1][0])
            self.assertEqual(got, list(range(dm.seq(1), dm.seq(N) + 1)))
            self.assertGreater(replies, 4)


if __name__ == "__main__":
    bt.main()
