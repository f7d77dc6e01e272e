# SPDX-License-Identifier: LGPL-2.1-or-later
"""Manager.Settle(): what the kernel had queued when the call came is
applied and signalled before the answer.  The daemon is stopped while uevents
queue up in its socket (as many as it holds); the first call after it continues is
Settle, and its answer carries the last of their seqnums, after all their
Uevent signals on the same connection."""
import json
import os
import signal
import socket
import unittest

import blkmodeltest as bt

N = 500


class Settle(unittest.TestCase):
    def test_settle_after_a_queued_burst(self):
        sys_ = os.path.join(bt.make_fixture(), "sys")
        queue = [r for r, _, _ in os.walk(os.path.join(sys_, "devices"))
                 if r.endswith("/block/sda/queue")][0][len(sys_):]
        with bt.Daemon(sys_, uevent_socket=True) as dm:
            first = dm.manager_prop("LastSeqnum")
            rec = bt.SignalRecorder()
            dm.proc.send_signal(signal.SIGSTOP)
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                s.setblocking(False)
                sent = 0
                for i in range(N):
                    raw = ("change@%s\0ACTION=change\0DEVPATH=%s\0"
                           "SUBSYSTEM=block\0SEQNUM=%d\0" % (queue, queue, i + 1))
                    try:
                        s.sendto(raw.encode(), dm.uevent_socket)
                        sent += 1
                    except BlockingIOError:
                        break  # the socket's queue is full: that many are queued
                s.close()
            finally:
                dm.proc.send_signal(signal.SIGCONT)
            self.assertGreater(sent, 0)
            last = dm.manager("Settle")
            self.assertEqual(last, first + sent)
            rec.pump()
            seqnums = [x[3][0] for x in rec.signals if x[1] == "Uevent"]
            self.assertEqual(seqnums, list(range(first + 1, first + sent + 1)))
            self.assertEqual(json.loads(bt.ctl("--json", "settle", check=0).stdout),
                             {"settled": True, "last_seqnum": last})
            rec.close()


if __name__ == "__main__":
    bt.main()
