#!/usr/bin/env python3
"""linkproxy.py -- a TCP proxy between a standby and its primary that
cuts and stalls the link (tests/cli/test_replica.sh, make failover-test).

Usage: linkproxy.py TARGET_PORT SEED

Listens on 127.0.0.1 (a free port, printed as the first line of
stdout) and forwards each connection to 127.0.0.1:TARGET_PORT, both
ways.  Every 0.2 to 1 s (chosen by a random generator seeded with
SEED, so a failing run can be replayed) it does one of:
  - nothing (50 %);
  - stall (30 %): no byte is forwarded either way for 0.2 to 2 s, the
    connections kept open (below the standby's 5 s of silence, so the
    link waits rather than reconnects);
  - cut (20 %): every connection closed on both sides (the standby
    reconnects and resumes from what it holds).
On SIGTERM it prints "cuts N stalls M" to stderr and exits 0.
"""
import random
import selectors
import signal
import socket
import sys
import time

CHUNK = 1 << 16


def main():
    target = int(sys.argv[1])
    rng = random.Random(int(sys.argv[2]))
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(16)
    lsock.setblocking(False)
    print(lsock.getsockname()[1], flush=True)

    sel = selectors.DefaultSelector()
    sel.register(lsock, selectors.EVENT_READ, None)
    peer = {}  # socket -> the socket its bytes go to
    counts = {"cuts": 0, "stalls": 0}
    stalled_until = 0.0
    next_event = time.monotonic() + rng.uniform(0.2, 1.0)
    stopping = []

    def stop(signum, frame):
        stopping.append(signum)

    signal.signal(signal.SIGTERM, stop)

    def close_pair(s):
        other = peer.pop(s, None)
        for x in (s, other):
            if x is None:
                continue
            peer.pop(x, None)
            try:
                sel.unregister(x)
            except (KeyError, ValueError):
                pass
            x.close()

    while not stopping:
        now = time.monotonic()
        if now >= next_event:
            r = rng.random()
            if r < 0.20:
                counts["cuts"] += 1
                for s in list(peer):
                    close_pair(s)
            elif r < 0.50:
                counts["stalls"] += 1
                stalled_until = now + rng.uniform(0.2, 2.0)
            next_event = now + rng.uniform(0.2, 1.0)
        stalled = now < stalled_until
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            if s is lsock:
                try:
                    c, _ = lsock.accept()
                except BlockingIOError:
                    continue
                try:
                    u = socket.create_connection(("127.0.0.1", target))
                except OSError:
                    c.close()  # the primary is down: the standby tries again
                    continue
                c.setblocking(False)
                u.setblocking(False)
                peer[c], peer[u] = u, c
                sel.register(c, selectors.EVENT_READ, None)
                sel.register(u, selectors.EVENT_READ, None)
                continue
            if stalled or s not in peer:
                continue
            try:
                data = s.recv(CHUNK)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:
                close_pair(s)
                continue
            try:
                peer[s].setblocking(True)
                peer[s].sendall(data)
                peer[s].setblocking(False)
            except OSError:
                close_pair(s)
        if stalled:
            time.sleep(0.01)
    print("cuts %d stalls %d" % (counts["cuts"], counts["stalls"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
