#!/usr/bin/env python3
"""jbd-model - what a filesystem image must hold after jbd-work ran on it,
given jbd-work's model files (format: tests/tools/jbd-work.c), and the two
checks built on it.

Expected content of a workload block once transactions up to tid D are
in: the last of its events in a transaction <= D decides. A write (w, c,
u) leaves its pattern, block for block; a forget leaves anything (an older
logged copy may be replayed); a revoke leaves the block as it was before
recovery (replay must not touch it); no event leaves it as in the image
before the run. A handle with no 'stop' line (its process was killed with
it open) is uncertain: all of its writes are there or none. A handle that
stopped with an error may have committed any of its changes (as in JBD, an
error does not take back what the handle already dirtied).

  jbd-model powercut --base=IMG --log=WLOG --recover=EXT3D-RECOVER
        --tmp=DIR [--jsb=BLOCK] [--seeds=N] [--stride=S] [--min-wraps=N] MODEL...
      cuts the run at every S-th flush boundary of the write log (and with
      N seeded drop/tear variants each); on each cut, ext3d-recover and
      e2fsck -fy each replay a copy; both must hold exactly the transactions
      whose commit block was durable in the cut, and e2fsck -fn must find
      nothing in ext3d's. Writes to the ext3 superblock and to the journal
      superblock (fs block BLOCK) are never torn: their sectors are atomic.
  jbd-model settled --base=IMG --pre=IMG --post=IMG [--min-tid=T] MODEL...
      post is pre after recovery; some D >= every commit a worker saw
      (and >= T) must explain post exactly.
  jbd-model final --base=IMG --image=IMG MODEL...
      a cleanly stopped run: every transaction there, direct writes too.

Each prints PASS/FAIL lines (a test turns them into TAP) and '#' notes.
"""
import collections
import importlib.util
import mmap
import os
import shutil
import struct
import subprocess
import sys

HDR = 40
M64 = (1 << 64) - 1


def pattern(bs, worker, seq, tid, op, block, kind):
    x = (block * 0x9E3779B97F4A7C15 & M64) ^ (worker << 48) ^ (seq << 16) ^ op ^ (ord(kind) << 40)
    head = b"JBDWORK1" + struct.pack("<IIIIQII", worker, seq, tid, op, block, ord(kind), 0)
    n = (bs - HDR) // 8
    return head + struct.pack("<%dQ" % n, *[(x + HDR + 8 * i) & M64 for i in range(n)])


class Model:
    def __init__(self, paths):
        self.bs = None
        self.events = {}       # block -> [(tid, kind, worker, seq, op, handle key)]
        self.handles = {}      # (worker, run, seq) -> [tid, result or None]
        self.runs = {}         # worker -> its processes so far (a restart starts anew)
        self.restarts = 0      # restarted workers (they stay idle)
        self.seen = set()      # tids some worker saw committed
        self.direct = {}       # block -> (position in events, dseq, worker)
        self.owner = {}        # block -> the worker whose slice it is
        for p in paths:
            with open(p) as f:
                for line in f:
                    self._line(line.split())
        self.checked = collections.Counter()  # what mismatches() compared, by kind
        self.uncertain = {k for k, v in self.handles.items() if v[1] is None}
        self.failed = {k for k, v in self.handles.items() if v[1] not in (None, 0)}

    def _line(self, f):
        if not f or not f[-1]:
            return
        if f[0] == "geom":
            self.bs = int(f[2])
            self.runs[int(f[1])] = self.runs.get(int(f[1]), 0) + 1
        elif f[0] == "blocks":
            for b in f[2:]:
                self.events.setdefault(int(b), [])
                self.owner[int(b)] = int(f[1])
        elif f[0] == "plan":
            w, seq, tid = int(f[1]), int(f[2]), int(f[3])
            key = (w, self.runs.get(w, 0), seq)
            self.handles[key] = [tid, None]
            for i, op in enumerate(f[4:]):
                kind, b = op.split(":")
                self.events.setdefault(int(b), []).append((tid, kind, w, seq, i, key))
        elif f[0] == "stop" and len(f) == 5:
            self.handles[(int(f[1]), self.runs.get(int(f[1]), 0), int(f[2]))][1] = int(f[4])
        elif f[0] == "restart" and len(f) == 2:
            self.restarts += 1
        elif f[0] == "commit" and len(f) == 3:
            self.seen.add(int(f[2]))
        elif f[0] == "direct" and len(f) == 4:
            b = int(f[2])
            self.direct[b] = (len(self.events.get(b, [])), int(f[3]), int(f[1]))

    def tids(self):
        return sorted({v[0] for v in self.handles.values()})

    def expect(self, block, d, include):
        """What block must hold at tid d: ('eq', bytes), ('base',) as before
        the run, ('pre', older) as before recovery (older: a write of it in
        an earlier transaction may still be in the log), or ('any',).
        include: the uncertain handles taken in (True) or left out."""
        last = None
        for ev in self.events[block]:
            if ev[0] > d or (ev[5] in self.uncertain and not include):
                continue
            last = ev
        if last is None:
            return ("base",)
        tid, kind, w, seq, op, key = last
        if key in self.failed:
            return ("any",)
        if kind in "wcu":
            return ("eq", pattern(self.bs, w, seq, tid, op, block, kind))
        if kind == "f":
            return ("any",)
        older = any(ev[0] < tid and ev[1] in "wcu" for ev in self.events[block])
        return ("pre", older)

    def mismatches(self, post, pre, base, d, include, blocks=None):
        bad = []
        for b in blocks if blocks is not None else self.events:
            got = post[b * self.bs:(b + 1) * self.bs]
            want = self.expect(b, d, include)
            self.checked[want[0] if want != ("pre", True) else "revoked-over-logged"] += 1
            if want[0] == "any":
                continue
            ref = {"eq": lambda: want[1], "pre": lambda: pre[b * self.bs:(b + 1) * self.bs],
                   "base": lambda: base[b * self.bs:(b + 1) * self.bs]}[want[0]]()
            if got != ref:
                bad.append("block %d: %s, want %s" % (b, describe(got), want[0] if want[0] != "eq"
                                                       else describe(want[1])))
        return bad

    def by_worker(self):
        owners = {}
        for b in self.events:
            owners.setdefault(self.owner.get(b, -1), set()).add(b)
        return owners

    def explain(self, post, pre, base, d):
        """The mismatches at tid d, each worker's uncertain handle taken in
        or left out, whichever fits (workers own disjoint blocks)."""
        bad = []
        for w, blocks in sorted(self.by_worker().items()):
            options = [self.mismatches(post, pre, base, d, inc, blocks) for inc in (False, True)]
            bad += min(options, key=len)
        return bad


def describe(block):
    if block[:8] != b"JBDWORK1":
        return "no pattern (%s...)" % block[:8].hex()
    w, seq, tid, op, b, kind, _ = struct.unpack_from("<IIIIQII", block, 8)
    return "%s of worker %d handle %d tid %d op %d" % (chr(kind), w, seq, tid, op)


def load_wlog_cut():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wlog-cut.py")
    spec = importlib.util.spec_from_file_location("wlog_cut", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def commit_writes(wc, log, bs):
    """[(write index, block, tid)] for every logged JBD commit block."""
    out = []
    for i, (sector, nsect, _, _) in enumerate(log.writes):
        data = log.payload(i)
        for off in range(0, nsect * 512, bs):
            if (sector * 512 + off) % bs == 0:
                hdr = wc.jbd_header(data[off:off + 12])
                if hdr and hdr[0] == "commit":
                    out.append((i, (sector * 512 + off) // bs, hdr[1]))
    return out


def durable_tid(cw, log, k, fate, img, bs):
    """The highest tid whose commit block is durable in the cut."""
    fates = {f[1]: f[0] for f in fate}
    best = -1
    for i, blk, tid in cw:
        if i < log.flush_at[k]:
            ok = True
        elif fates.get(i) == "a":
            ok = True
        elif fates.get(i) == "t":
            ok = img[blk * bs:blk * bs + 12] == struct.pack(">III", 0xC03B3998, 2, tid)
        else:
            ok = False
        if ok:
            best = max(best, tid)
    return best


def is_jsb(log, i, opts, bs):
    return "jsb" in opts and log.writes[i][0] == int(opts["jsb"]) * bs // 512


def jsb_start(log, i):
    return struct.unpack_from(">I", log.payload(i), 28)[0]


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def mapped(path):
    """The file's bytes, mapped (read where sliced, never copied whole)."""
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def same_outside_sb(a, b):
    """Files a and b equal but for bytes 1024-2047 (the ext3 superblock)."""
    return (subprocess.run(["cmp", "-s", "-n", "1024", a, b]).returncode == 0 and
            subprocess.run(["cmp", "-s", "-i", "2048", a, b]).returncode == 0)


def powercut(opts, model):
    wc = load_wlog_cut()
    log = wc.WriteLog(opts["log"])
    bs, tmp = model.bs, opts["tmp"]
    base = open(opts["base"], "rb").read()
    cw = commit_writes(wc, log, bs)
    # Sector writes are atomic for the two superblocks (as JBD assumes):
    # the ext3 superblock's block and the journal superblock (log block 0).
    atomic = [(1024 // 512, 2048 // 512)]
    if "jsb" in opts:
        jsb = int(opts["jsb"])
        atomic.append((jsb * bs // 512, (jsb + 1) * bs // 512))
    cutter = wc.Cutter(log, opts["base"], atomic)
    seeds, stride = int(opts.get("seeds", "2")), max(1, int(opts.get("stride", "1")))
    print("# write log: %d writes, %d flushes, %d commit blocks (tids %s..%s)" % (
        len(log.writes), log.flushes, len(cw), cw[0][2] if cw else "-", cw[-1][2] if cw else "-"))
    fails = {"ours": [], "e2fsck": [], "fsck": [], "rec": [], "same": []}
    cuts, durables, torn, dropped = 0, set(), 0, 0
    cut, x, o = (os.path.join(tmp, n) for n in ("cut.img", "x.img", "o.img"))
    for k in range(0, log.flushes + 1, stride):
        for seed in [None] + list(range(1, seeds + 1)):
            fate = cutter.cut(k, cut, seed, bool(seed) and (k + seed) % 2 == 0)
            torn += sum(f[0] == "t" for f in fate)
            dropped += sum(f[0] == "d" for f in fate)
            pre = mapped(cut)
            d = durable_tid(cw, log, k, fate, pre, bs)
            durables.add(d)
            where = "boundary %d seed %s (durable tid %d)" % (k, seed, d)
            shutil.copyfile(cut, x)
            shutil.copyfile(cut, o)
            r = run([opts["recover"], x])
            if r.returncode != 0:
                fails["rec"].append("%s: ext3d-recover exit %d: %s" % (where, r.returncode, r.stdout.strip()[-300:]))
            r = run(["e2fsck", "-fy", o])
            if r.returncode > 1:
                fails["rec"].append("%s: e2fsck -fy exit %d" % (where, r.returncode))
            ximg, oimg = mapped(x), mapped(o)
            for name, img in (("ours", ximg), ("e2fsck", oimg)):
                bad = model.mismatches(img, pre, base, d, False)
                if bad:
                    fails[name].append("%s: %d blocks differ: %s" % (where, len(bad), "; ".join(bad[:3])))
            r = run(["e2fsck", "-fn", x])
            if r.returncode != 0 or "?" in r.stdout:
                lines = [l for l in r.stdout.splitlines() if "?" in l][:3]
                fails["fsck"].append("%s: e2fsck -fn exit %d: %s" % (where, r.returncode, " | ".join(lines)))
            if not same_outside_sb(x, o):
                fails["same"].append(where)
            for m in (pre, ximg, oimg):
                m.close()
            cuts += 1
    print("# %d cuts (%d boundaries of %d, seeds %d), %d dropped and %d torn writes; "
          "%d distinct durable tids" % (cuts, len(range(0, log.flushes + 1, stride)), log.flushes + 1,
                                        seeds, dropped, torn, len(durables)))
    print("# block checks: %s" % ", ".join("%s %d" % kv for kv in sorted(model.checked.items())))
    verdict(cuts >= 1 and len(cw) > 0, "the run logged commit blocks and was cut %d times" % cuts)
    verdict(model.checked["revoked-over-logged"] > 0,
            "revoked blocks with an older logged copy were checked untouched by replay %d times"
            % model.checked["revoked-over-logged"])
    wraps = sum(1 for a, b in zip(cw, cw[1:]) if b[1] < a[1])
    starts = len({jsb_start(log, i) for i in range(len(log.writes)) if is_jsb(log, i, opts, bs)})
    verdict(wraps >= int(opts.get("min-wraps", "0")),
            "the log wrapped %d times; the journal superblock took %d distinct s_start values"
            % (wraps, starts))
    verdict(not fails["rec"], "ext3d-recover and e2fsck -fy ran on every cut", fails["rec"])
    verdict(not fails["ours"], "ext3d's replay holds every durable transaction and nothing later, "
            "block for block, on every cut", fails["ours"])
    verdict(not fails["e2fsck"], "e2fsck -fy's replay agrees with the model on every cut", fails["e2fsck"])
    verdict(not fails["fsck"], "e2fsck -fn finds nothing after ext3d's replay, every cut", fails["fsck"])
    verdict(not fails["same"], "ext3d's replay equals e2fsck's outside the superblock, every cut",
            fails["same"])


def settled(opts, model):
    base = open(opts["base"], "rb").read()
    pre, post = open(opts["pre"], "rb").read(), open(opts["post"], "rb").read()
    lo = max([int(opts.get("min-tid", "-1"))] + list(model.seen))
    tids = [t for t in model.tids() if t >= lo] or [lo]
    tried = {d: model.explain(post, pre, base, d) for d in [lo] + tids}
    best = min(tried, key=lambda d: (len(tried[d]), d))
    print("# %d handles (%d uncertain), %d workers restarted, tids %s..%s, workers saw %d "
          "commits (last %s); best fit at tid %d with %d blocks off" % (
              len(model.handles), len(model.uncertain), model.restarts, min(model.tids(), default="-"),
              max(model.tids(), default="-"), len(model.seen), max(model.seen, default="-"),
              best, len(tried[best])))
    verdict(not tried[best], "some tid >= %d explains every block (every seen commit there, "
            "nothing half)" % lo, tried[best])


def final(opts, model):
    base = open(opts["base"], "rb").read()
    img = open(opts["image"], "rb").read()
    last = model.tids()[-1] if model.handles else -1
    bad = model.explain(img, img, base, last)
    miss = []
    for b, (pos, dseq, w) in model.direct.items():
        if pos == len(model.events[b]) and img[b * model.bs:(b + 1) * model.bs] != \
                pattern(model.bs, w, dseq, 0, 0, b, "D"):
            miss.append("block %d: %s" % (b, describe(img[b * model.bs:(b + 1) * model.bs])))
    verdict(not bad, "after the clean stop every transaction is home, block for block", bad)
    verdict(not miss, "direct writes into revoked blocks survive (%d blocks)" % len(model.direct), miss)


def verdict(ok, what, why=()):
    print("%s %s" % ("PASS" if ok else "FAIL", what))
    if not ok:
        for w in list(why)[:5]:
            print("#   %s" % w)
        if len(why) > 5:
            print("#   ... %d more" % (len(why) - 5))


def main(argv):
    opts = {a[2:].split("=")[0]: a.split("=", 1)[1] if "=" in a else "" for a in argv[1:]
            if a.startswith("--")}
    models = [a for a in argv[1:] if not a.startswith("--")]
    cmds = {"powercut": powercut, "settled": settled, "final": final}
    if not argv or argv[0] not in cmds or not models:
        sys.stderr.write(__doc__)
        return 2
    model = Model(models)
    if model.bs is None:
        sys.stderr.write("jbd-model: no geom line in %s\n" % " ".join(models))
        return 2
    cmds[argv[0]](opts, model)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
