#!/usr/bin/env python3
"""cut-fsck - a run cut at every flush boundary, replayed and checked: the
quick check of a power-cut test, cheap enough for every boundary.

  cut-fsck BASE LOG RECOVER TMPDIR [--seeds=N] [--first-seed=S]

For every flush boundary K of blockdev-svc's write log LOG (over BASE,
the image before the run): the cut without a seed and with seeds S+1 ..
S+N (tests/tools/wlog-cut.py: the writes after the boundary dropped or
landing, in any order), each written to TMPDIR, replayed by RECOVER
(ext3d-recover) and checked with e2fsck -fn. Without a torn write, so
a cut leaves only what the disk may leave: whatever the file workload
did, the replayed filesystem must be consistent.

Prints "FAIL cut K seed S: why" (with the fates of the writes after the
boundary) for up to five failing cuts, then "cuts C failed F".
Exit status: 0 no cut failed, 1 some did, 2 usage or a bad log.
"""
import importlib
import os
import subprocess
import sys


def first_problem(out):
    lines = [l for l in out.splitlines() if l.strip() and not l.startswith(("Pass ", "e2fsck "))]
    return " | ".join(lines[:3])[:300]


def main(argv):
    opts = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 4 or set(opts) - {"seeds", "first-seed"}:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    base, logpath, recover, tmp = args
    sys.dont_write_bytecode = True
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    wc = importlib.import_module("wlog-cut")
    try:
        seeds, first = int(opts.get("seeds", "1")), int(opts.get("first-seed", "0"))
        log = wc.WriteLog(logpath)
        cutter = wc.Cutter(log, base)
    except (wc.LogError, OSError, ValueError) as e:
        sys.stderr.write("cut-fsck: %s\n" % e)
        return 2
    img = os.path.join(tmp, "cut-fsck.img")
    cuts = failed = 0
    for k in range(log.flushes + 1):
        for seed in [None] + list(range(first + 1, first + seeds + 1)):
            fate = cutter.cut(k, img, seed)
            cuts += 1
            r = subprocess.run([recover, img], capture_output=True, text=True)
            why = "ext3d-recover exit %d: %s" % (r.returncode, first_problem(r.stdout + r.stderr))
            if r.returncode == 0:
                r = subprocess.run(["e2fsck", "-fn", img], capture_output=True, text=True)
                why = "e2fsck -fn exit %d: %s" % (r.returncode, first_problem(r.stdout))
            if r.returncode == 0:
                continue
            failed += 1
            if failed <= 5:
                print("FAIL cut %d seed %s: %s (%s)" % (k, seed, why, wc.fate_line(k, seed, fate)[:160]))
    os.unlink(img)
    print("cuts %d failed %d" % (cuts, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
