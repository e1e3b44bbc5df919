#!/usr/bin/env python3
"""killer.py SUPERVISOR_PID KILLS SERVICE... [--seed N] [--max-sleep S]
Sends KILLS SIGKILLs to the supervisor's services at random moments: each
time a random one of the SERVICEs, if it runs then (ready or still
starting), after a random pause up to --max-sleep seconds; one kill in
five is followed at once by another (back to back within milliseconds).
Prints how many were sent and to whom."""
import argparse
import collections
import os
import random
import signal
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("sup", type=int)
ap.add_argument("kills", type=int)
ap.add_argument("services", nargs="+")
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--max-sleep", type=float, default=0.2)
ap.add_argument("--give-up", type=float, default=120, help="seconds")
a = ap.parse_args()
rnd = random.Random(a.seed)


def children():
    """Live (not zombie) children of the supervisor, with their names."""
    out = []
    try:
        tasks = os.listdir(f"/proc/{a.sup}/task")
    except OSError:
        sys.exit("supervisor is gone")
    for t in tasks:
        try:
            with open(f"/proc/{a.sup}/task/{t}/children") as f:
                pids = [int(p) for p in f.read().split()]
        except OSError:
            continue
        for p in pids:
            try:
                with open(f"/proc/{p}/stat") as f:
                    st = f.read()
            except OSError:
                continue
            name = st[st.index("(") + 1:st.rindex(")")]
            if st[st.rindex(")") + 2] != "Z":
                out.append((p, name))
    return out


sent = 0
back_to_back = 0
pause = False
whom = collections.Counter()
end = time.monotonic() + a.give_up
while sent < a.kills and time.monotonic() < end:
    if pause:
        time.sleep(rnd.uniform(0, a.max_sleep))
    pause = True
    want = rnd.choice(a.services)
    kids = [k for k in children() if k[1] == want[:15]]
    if not kids:
        continue
    pid, name = kids[0]
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        continue
    sent += 1
    whom[name] += 1
    if rnd.random() < 0.2:
        back_to_back += 1
        pause = False
print(f"kills {sent} back_to_back {back_to_back} " +
      " ".join(f"{k}={v}" for k, v in sorted(whom.items())))
sys.exit(0 if sent == a.kills else 1)
