#!/usr/bin/env python3
"""readdir-splits.py DIR STABLE LISTS CREATORS PER: makes STABLE names in
DIR, then runs CREATORS threads that each make PER more names in DIR (the
htree's leaves split under them) while this thread lists DIR up to LISTS
times. Every stable name must be listed exactly once in every listing
(POSIX leaves only names added or removed meanwhile open). Prints a line
per bad listing and a summary "lists N bad B"; exit status 1 if B > 0."""
import collections
import os
import sys
import threading

d, nstable, nlists, ncreators, per = sys.argv[1], *map(int, sys.argv[2:6])
for i in range(nstable):
    open(os.path.join(d, "s%d" % i), "w").close()
stable = {"s%d" % i for i in range(nstable)}
done = threading.Event()


def creator(k):
    for i in range(per):
        if done.is_set():
            return
        open(os.path.join(d, "c%d-%d" % (k, i)), "w").close()


threads = [threading.Thread(target=creator, args=(k,)) for k in range(ncreators)]
for t in threads:
    t.start()
bad = lists = 0
while lists < nlists and any(t.is_alive() for t in threads):
    seen = collections.Counter(n for n in os.listdir(d) if n in stable)
    lists += 1
    dup = sum(1 for v in seen.values() if v > 1)
    miss = len(stable) - len(seen)
    if dup or miss:
        bad += 1
        print("listing %d: %d stable names listed twice or more, %d missing" % (lists, dup, miss))
done.set()
for t in threads:
    t.join()
print("lists %d bad %d" % (lists, bad))
sys.exit(1 if bad else 0)
