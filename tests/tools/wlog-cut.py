#!/usr/bin/env python3
"""wlog-cut - rebuild a device as a power cut would have left it, from the
image as it was before a run and blockdev-svc's write log of that run
(format: blockdev-svc/internal.h).

Flush boundary K (0 <= K <= flushes) is the moment right after the K-th
FLUSH record (K = 0: before the first one). A cut at K applies every write
logged before flush K; with a seed it also applies a seeded random subset
of the writes of the window after it (up to flush K+1, or to the end of the
log after the last flush), landing in a seeded random order (where two
overlap, the earlier may land last and win), and with --tear one write of that
window is torn: a random subset of its 512-byte sectors applied and one of
its sectors garbage.

  wlog-cut info LOG                     counts: writes, flushes, boundaries
  wlog-cut list LOG [--block-size=BS]   one line per record; blocks that
                                        begin with a JBD header are named
  wlog-cut offsets LOG                  "K BYTES" for every boundary K: how
                                        many bytes of the log precede it
  wlog-cut cut BASE LOG K OUT [--seed=S] [--tear] [--atomic=RANGES]
  wlog-cut each BASE LOG DIR [--seeds=N] [--tear] [--atomic=RANGES]
                                        DIR/cut-K.img for every K, and
                                        DIR/cut-K-sS.img for S in 1..N
  --atomic=A-B,C-D...                   writes touching sectors [A, B) or
                                        [C, D) are never torn (superblocks)

cut and each print one line per image: the boundary, the seed, and which
writes of the window were applied (a), dropped (d) or torn (t), by index,
in the order they landed;
a torn one is followed by a letter per sector: a applied, d not, g garbage
(t10:agda).
Imported as a module (Cutter) a test loops over boundaries in increasing
order and each cut costs only the writes since the previous one.
Exit status: 0 done, 2 usage, bad log or I/O error (the reason on stderr).
"""
import mmap
import os
import random
import struct
import sys

SECTOR = 512
FILE_MAGIC = b"EXT3DWL1"
REC_MAGIC = 0x474F4C57
REC = struct.Struct("=IIQII")
OP_WRITE, OP_FLUSH = 1, 2
FUA = 1
JBD_MAGIC = 0xC03B3998
JBD_TYPES = {1: "descriptor", 2: "commit", 3: "sb-v1", 4: "sb-v2", 5: "revoke"}


class LogError(Exception):
    """The write log cannot be used; the message says why and where."""


class WriteLog:
    """A parsed write log: writes[i] = (sector, nsect, data offset, flags);
    flush_at[K] = how many writes precede flush boundary K; flush_pos[K] =
    how many bytes of the log precede it."""

    def __init__(self, path):
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < len(FILE_MAGIC):
                raise LogError("%s: %d bytes, shorter than the file magic" % (path, size))
            self.data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if self.data[:8] != FILE_MAGIC:
            raise LogError("%s: no %s file magic" % (path, FILE_MAGIC.decode()))
        self.path = path
        self.writes = []
        self.flush_at = [0]
        self.flush_pos = [len(FILE_MAGIC)]
        self.fua = 0
        self.truncated = 0
        self._parse(size)

    def _parse(self, size):
        pos = 8
        while pos < size:
            if pos + REC.size > size:
                self.truncated = size - pos
                break
            magic, op, sector, nsect, flags = REC.unpack_from(self.data, pos)
            if magic != REC_MAGIC:
                raise LogError("%s: record at byte %d: bad magic 0x%08x" % (self.path, pos, magic))
            pos += REC.size
            if op == OP_FLUSH:
                self.flush_at.append(len(self.writes))
                self.flush_pos.append(pos)
                continue
            if op != OP_WRITE or nsect == 0:
                raise LogError("%s: record at byte %d: op %d, nsect %d" %
                               (self.path, pos - REC.size, op, nsect))
            if pos + nsect * SECTOR > size:
                self.truncated = size - pos + REC.size
                break
            self.writes.append((sector, nsect, pos, flags))
            self.fua += flags & FUA
            pos += nsect * SECTOR

    @property
    def flushes(self):
        return len(self.flush_at) - 1

    def window(self, k):
        """The indices of the writes between boundary k and the next one."""
        end = self.flush_at[k + 1] if k + 1 < len(self.flush_at) else len(self.writes)
        return range(self.flush_at[k], end)

    def payload(self, i):
        sector, nsect, off, _ = self.writes[i]
        return self.data[off:off + nsect * SECTOR]

    def end_sector(self):
        return max((s + n for s, n, _, _ in self.writes), default=0)


class Cutter:
    """The device at a boundary, kept in memory and moved forward one
    window of writes at a time; cut() writes an image file from it."""

    def __init__(self, log, base_path, atomic=()):
        self.log = log
        self.base_path = base_path
        self.atomic = atomic
        self._reset()
        if log.end_sector() * SECTOR > len(self.dev):
            raise LogError("%s: writes reach byte %d, past the end of %s (%d bytes)" %
                           (log.path, log.end_sector() * SECTOR, base_path, len(self.dev)))

    def _reset(self):
        with open(self.base_path, "rb") as f:
            self.dev = bytearray(f.read())
        self.k = 0

    def _apply(self, i):
        sector, nsect, _, _ = self.log.writes[i]
        self.dev[sector * SECTOR:(sector + nsect) * SECTOR] = self.log.payload(i)

    def advance(self, k):
        if not 0 <= k <= self.log.flushes:
            raise LogError("boundary %d: the log has boundaries 0..%d" % (k, self.log.flushes))
        if k < self.k:
            self._reset()
        for i in range(self.log.flush_at[self.k], self.log.flush_at[k]):
            self._apply(i)
        self.k = k

    def _is_atomic(self, i):
        sector, nsect, _, _ = self.log.writes[i]
        return any(sector < end and start < sector + nsect for start, end in self.atomic)

    def plan(self, k, seed, tear):
        """The fate of each write of window k, in the order they land:
        ('a', i), ('d', i) or ('t', i, [sector states]) with a state per
        sector: 'a' applied, 'd' not, 'g' garbage. Deterministic for
        (k, seed, tear)."""
        rng = random.Random("%d/%d/%d" % (k, seed, tear))
        win = list(self.log.window(k))
        fate = [("a" if rng.random() < 0.5 else "d", i) for i in win]
        tearable = [j for j, i in enumerate(win) if not self._is_atomic(i)]
        if tear and tearable:
            j = tearable[rng.randrange(len(tearable))]
            nsect = self.log.writes[win[j]][1]
            states = ["a" if rng.random() < 0.5 else "d" for _ in range(nsect)]
            states[rng.randrange(nsect)] = "g"
            fate[j] = ("t", win[j], states)
        # A disk lands the writes it keeps in an order of its own: where
        # two overlap, the earlier one may land last and win.
        rng.shuffle(fate)
        return fate, rng

    def cut(self, k, out, seed=None, tear=False):
        """Writes the image at boundary k (seeded: with a subset of window
        k) to out; returns the fates of window k (empty without a seed)."""
        self.advance(k)
        with open(out, "wb") as f:
            f.write(self.dev)
            if seed is None:
                return []
            fate, rng = self.plan(k, seed, tear)
            for what in fate:
                sector, nsect, _, _ = self.log.writes[what[1]]
                data = self.log.payload(what[1])
                if what[0] == "a":
                    os.pwrite(f.fileno(), data, sector * SECTOR)
                    continue
                if what[0] == "d":
                    continue
                for s, st in enumerate(what[2]):
                    piece = data[s * SECTOR:(s + 1) * SECTOR]
                    if st == "g":
                        piece = rng.randbytes(SECTOR)
                    if st != "d":
                        os.pwrite(f.fileno(), piece, (sector + s) * SECTOR)
            return fate


def fate_line(k, seed, fate):
    parts = []
    for what in fate:
        tag = "%s%d" % (what[0], what[1])
        parts.append(tag + (":" + "".join(what[2]) if what[0] == "t" else ""))
    return "cut %d seed %s %s" % (k, "-" if seed is None else seed, " ".join(parts) or "-")


def jbd_header(block):
    magic, btype, seq = struct.unpack_from(">III", block, 0)
    if magic != JBD_MAGIC or btype not in JBD_TYPES:
        return None
    return JBD_TYPES[btype], seq


def cmd_list(log, bs):
    w = 0
    for k in range(log.flushes + 1):
        for i in log.window(k):
            sector, nsect, _, flags = log.writes[i]
            print("w %d %d %d%s" % (i, sector, nsect, " fua" if flags & FUA else ""))
            data = log.payload(i)
            for off in range(0, nsect * SECTOR - 11, bs):
                if (sector * SECTOR + off) % bs:
                    continue
                hdr = jbd_header(data[off:off + 12])
                if hdr:
                    print("jbd %d %d %s %d" % (i, (sector * SECTOR + off) // bs, hdr[0], hdr[1]))
            w = i + 1
        if k < log.flushes:
            print("f %d %d" % (k + 1, w))


def cmd_each(log, base, outdir, seeds, tear, atomic):
    cutter = Cutter(log, base, atomic)
    os.makedirs(outdir, exist_ok=True)
    for k in range(log.flushes + 1):
        cutter.cut(k, os.path.join(outdir, "cut-%d.img" % k))
        print(fate_line(k, None, []))
        for s in range(1, seeds + 1):
            fate = cutter.cut(k, os.path.join(outdir, "cut-%d-s%d.img" % (k, s)), s, tear)
            print(fate_line(k, s, fate))


def usage():
    sys.stderr.write(__doc__.split("\n\n")[2] + "\n")
    return 2


def main(argv):
    opts = {a.split("=")[0]: a.split("=", 1)[1] if "=" in a else ""
            for a in argv if a.startswith("--")}
    args = [a for a in argv if not a.startswith("--")]
    known = {"--seed", "--seeds", "--tear", "--block-size", "--atomic"}
    if not args or set(opts) - known:
        return usage()
    try:
        seed = int(opts["--seed"]) if "--seed" in opts else None
        seeds = int(opts.get("--seeds", "0"))
        bs = int(opts.get("--block-size", "1024"))
        if bs < SECTOR or bs & (bs - 1) or seeds < 0:
            raise ValueError("block size %d, seeds %d" % (bs, seeds))
        atomic = [tuple(int(x) for x in r.split("-", 1)) for r in opts["--atomic"].split(",")] \
            if opts.get("--atomic") else []
        if any(len(r) != 2 or r[0] >= r[1] for r in atomic):
            raise ValueError("--atomic wants sector ranges A-B with A < B")
        cmd, rest = args[0], args[1:]
        if cmd == "info" and len(rest) == 1:
            log = WriteLog(rest[0])
            print("writes %d flushes %d boundaries %d fua %d trailing %d truncated %d" %
                  (len(log.writes), log.flushes, log.flushes + 1, log.fua,
                   len(log.window(log.flushes)), log.truncated))
        elif cmd == "offsets" and len(rest) == 1:
            for k, pos in enumerate(WriteLog(rest[0]).flush_pos):
                print("%d %d" % (k, pos))
        elif cmd == "list" and len(rest) == 1:
            cmd_list(WriteLog(rest[0]), bs)
        elif cmd == "cut" and len(rest) == 4:
            cutter = Cutter(WriteLog(rest[1]), rest[0], atomic)
            fate = cutter.cut(int(rest[2]), rest[3], seed, "--tear" in opts)
            print(fate_line(int(rest[2]), seed, fate))
        elif cmd == "each" and len(rest) == 3:
            cmd_each(WriteLog(rest[1]), rest[0], rest[2], seeds, "--tear" in opts, atomic)
        else:
            return usage()
    except (LogError, OSError, ValueError) as e:
        sys.stderr.write("wlog-cut: %s\n" % e)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
