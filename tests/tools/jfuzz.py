#!/usr/bin/env python3
"""jfuzz.py - seeded corruption of a real ext3 journal, for jfuzz.t.

  jfuzz.py merge BEFORE AFTER OUT
      OUT = BEFORE with AFTER's journal blocks: the home blocks as they were
      before the workload, the log holding every transaction of it (AFTER is
      a copy of the image taken while still mounted). Replaying any prefix
      of that log gives the filesystem as it stood after that transaction.
  jfuzz.py seeds BASE SEED DIR
      Writes libFuzzer seeds for tests/tools/fuzz-jbd: the journal's blocks
      from 0 to the end of its log (whose log must not wrap), as found and
      with each corruption below that falls inside them.
  jfuzz.py run BASE REC[,ASAN_REC] CASES SEED WORKDIR
      Makes CASES corrupted copies of BASE (bad magic, wrong sequence, tags
      outside the filesystem or inside the journal, a truncated descriptor,
      a revoke block with a bad count, a bad block type, garbage commit
      blocks, a journal inode with a hole, unknown incompatible features, a
      bad journal superblock) and runs ext3d-recover on each. Prints one
      line per case: "ok|not ok<TAB>description<TAB>diagnostics".

Each case knows what must happen: a corrupted transaction k ends the log
there, so exactly transactions 0..k-1 are replayed (the image must equal a
model replay of that prefix, block for block, outside the two
superblocks), the output says where the log ended and why, and e2fsck -fn
finds nothing; a corrupted journal superblock, journal inode or feature set
is refused (exit 1, with the reason) and the image is left untouched. Any
other exit status, a signal, or a sanitizer report is a failure.
"""
import os
import random
import re
import struct
import subprocess
import sys

JMAGIC = 0xC03B3998
DESC, COMMIT, SB1, SB2, REVOKE = 1, 2, 3, 4, 5
F_ESCAPE, F_SAME_UUID, F_LAST = 1, 2, 8
KNOWN_INCOMPAT = 0x1  # revoke: all ext3d replays


def le32(b, off):
    return struct.unpack_from('<I', b, off)[0]


def be32(b, off):
    return struct.unpack_from('>I', b, off)[0]


class Fs:
    """The geometry of an ext3 image and its journal inode's block map."""

    def __init__(self, img):
        self.img = img
        sb = img[1024:2048]
        self.blocks = le32(sb, 4)
        self.bs = 1024 << le32(sb, 24)
        first_data = le32(sb, 20)
        isize = struct.unpack_from('<H', sb, 88)[0] if le32(sb, 76) else 128
        ipg = le32(sb, 40)
        jino = le32(sb, 0xE0) or 8
        gd = (first_data + 1) * self.bs + ((jino - 1) // ipg) * 32
        itable = le32(img, gd + 8)
        self.inode_off = itable * self.bs + ((jino - 1) % ipg) * isize
        self.map, self.ptrs = [], []  # journal block -> fs block, and where its pointer is
        iblock = self.inode_off + 40
        for i in range(12):
            self._walk(iblock + 4 * i, 0)
        for lvl in (1, 2, 3):
            self._walk(iblock + 4 * (11 + lvl), lvl)
        jsb = self.block(self.map[0])
        self.jsb_off = self.map[0] * self.bs
        self.maxlen, self.first = be32(jsb, 16), be32(jsb, 20)
        self.sequence, self.start = be32(jsb, 24), be32(jsb, 28)
        self.map = self.map[:self.maxlen]
        self.ptrs = self.ptrs[:self.maxlen]
        self.jblocks = set(self.map)

    def block(self, n):
        return self.img[n * self.bs:(n + 1) * self.bs]

    def _walk(self, ptr_off, level):
        blk = le32(self.img, ptr_off)
        if blk == 0:
            return
        if level == 0:
            self.map.append(blk)
            self.ptrs.append(ptr_off)
            return
        for i in range(self.bs // 4):
            self._walk(blk * self.bs + 4 * i, level - 1)

    def lblk_off(self, lblk):
        return self.map[lblk] * self.bs


def tags(buf, bs):
    """(offset, blocknr, flags) of each tag of a descriptor (no 64bit, no csum)."""
    pos, out = 12, []
    while pos + 8 <= bs:
        blk, flags = be32(buf, pos), struct.unpack_from('>H', buf, pos + 6)[0]
        out.append((pos, blk, flags))
        pos += 8 if flags & F_SAME_UUID else 24
        if flags & F_LAST:
            break
    return out


def scan(fs):
    """The transactions of the log: tid, header blocks, tags, revokes."""
    txs, lblk, tid, cur = [], fs.start, fs.sequence, None
    loglen, walked = fs.maxlen - fs.first, 0
    nxt = lambda b, n=1: fs.first + (b - fs.first + n) % loglen
    while fs.start and walked < loglen:
        h = fs.block(fs.map[lblk])
        if be32(h, 0) != JMAGIC or be32(h, 8) != tid:
            break
        if cur is None:
            cur = {'tid': tid, 'desc': [], 'revoke': [], 'tags': [], 'revokes': []}
        kind, used = be32(h, 4), 1
        if kind == DESC:
            t = tags(h, fs.bs)
            cur['desc'].append((lblk, len(t), t[-1][0] + (8 if t[-1][2] & F_SAME_UUID else 24)))
            for i, (_, blk, flags) in enumerate(t):
                cur['tags'].append((blk, nxt(lblk, i + 1), flags & F_ESCAPE))
            used += len(t)
        elif kind == REVOKE:
            cur['revoke'].append(lblk)
            count = be32(h, 12)
            cur['revokes'] += [be32(h, o) for o in range(16, count, 4)]
        elif kind == COMMIT:
            cur['commit'] = lblk
            txs.append(cur)
            cur, tid = None, tid + 1
        else:
            break
        walked += used
        lblk = nxt(lblk, used)
    return txs


def model(fs, txs, k, img):
    """img after replaying transactions 0..k-1 of fs's log (img is fs's
    image with corruption in the log after them, or none)."""
    img = bytearray(img)
    revoked = {}
    for t in txs[:k]:
        for b in t['revokes']:
            revoked[b] = max(revoked.get(b, 0), t['tid'])
    for t in txs[:k]:
        for blk, lblk, esc in t['tags']:
            if revoked.get(blk, -1) >= t['tid']:
                continue
            data = bytearray(fs.block(fs.map[lblk]))
            if esc:
                struct.pack_into('>I', data, 0, JMAGIC)
            img[blk * fs.bs:(blk + 1) * fs.bs] = data
    return img


def masked(img, fs):
    """img without the ext3 superblock and the journal superblock, which
    recovery rewrites."""
    b = bytearray(img)
    b[1024:2048] = bytes(1024)
    b[fs.jsb_off:fs.jsb_off + fs.bs] = bytes(fs.bs)
    return bytes(b)


def merge(before, after, out):
    a, b = bytearray(open(before, 'rb').read()), open(after, 'rb').read()
    fs = Fs(b)
    for blk in fs.map:
        a[blk * fs.bs:(blk + 1) * fs.bs] = b[blk * fs.bs:(blk + 1) * fs.bs]
    open(out, 'wb').write(a)
    txs = scan(Fs(bytes(a)))
    print('%d transactions, %d revoke records, %d blocks logged' % (
        len(txs), sum(len(t['revokes']) for t in txs), sum(len(t['tags']) for t in txs)))


class Case:
    """One corruption: what it does to a copy and what must follow."""

    def __init__(self, name, k=None, refuse=None):
        self.name, self.k, self.refuse, self.edits = name, k, refuse, []

    def put32(self, off, v, big=True):
        self.edits.append((off, struct.pack('>I' if big else '<I', v & 0xffffffff)))

    def put(self, off, data):
        self.edits.append((off, bytes(data)))


def pick(rng, txs, need):
    ks = [i for i, t in enumerate(txs) if need(t)]
    return rng.choice(ks) if ks else None


def make_case(kind, rng, fs, txs):
    """A Case of the given kind, or None when the log has nothing to hit
    (every kernel log has descriptors; revoke blocks and room for more
    tags depend on the workload)."""
    bs, n = fs.bs, len(txs)
    k = pick(rng, txs, lambda t: t['desc'])
    if k is None:
        return None
    if kind == 'descriptor magic':
        c = Case(kind, k)
        c.put32(fs.lblk_off(rng.choice(txs[k]['desc'])[0]), rng.choice([0, JMAGIC ^ 1, rng.getrandbits(32)]))
    elif kind == 'descriptor sequence':
        c = Case(kind, k)
        c.put32(fs.lblk_off(txs[k]['desc'][0][0]) + 8, txs[k]['tid'] + rng.choice([1, -1, 7, 1 << 20]))
    elif kind == 'commit sequence':
        k = rng.randrange(n)
        c = Case(kind, k)
        c.put32(fs.lblk_off(txs[k]['commit']) + 8, txs[k]['tid'] + rng.choice([1, -1, 100]))
    elif kind in ('tag outside the filesystem', 'tag inside the journal'):
        c = Case(kind, k)
        lblk = rng.choice(txs[k]['desc'])[0]
        off, _, _ = rng.choice(tags(fs.block(fs.map[lblk]), bs))
        if kind.endswith('filesystem'):
            bad = rng.choice([fs.blocks, fs.blocks + 1, 0xffffffff, rng.randrange(fs.blocks, 1 << 32)])
        else:
            bad = rng.choice(sorted(fs.jblocks))
        c.put32(fs.lblk_off(lblk) + off, bad)
    elif kind == 'truncated descriptor':
        k = pick(rng, txs, lambda t: any(end + 8 <= bs for _, _, end in t['desc']))
        if k is None:
            return None
        lblk, ntags, end = rng.choice([d for d in txs[k]['desc'] if d[2] + 8 <= bs])
        c = Case(kind, k)
        buf = bytearray(fs.block(fs.map[lblk]))
        last = tags(buf, bs)[-1][0]
        struct.pack_into('>H', buf, last + 6, struct.unpack_from('>H', buf, last + 6)[0] & ~F_LAST)
        homes = [b for b in range(fs.blocks // 2, fs.blocks) if b not in fs.jblocks]
        pos = end
        while pos + 8 <= bs:
            struct.pack_into('>IHH', buf, pos, rng.choice(homes), 0, F_SAME_UUID)
            pos += 8
        c.put(fs.lblk_off(lblk), buf)
    elif kind == 'revoke count':
        k = pick(rng, txs, lambda t: t['revoke'])
        if k is None:
            return None
        c = Case(kind, k)
        c.put32(fs.lblk_off(rng.choice(txs[k]['revoke'])) + 12,
                rng.choice([0, 15, 17, bs + 4, 0xffffffff, rng.randrange(bs + 1, 1 << 32)]))
    elif kind == 'block type':
        k = rng.randrange(n)
        c = Case(kind, k)
        t = txs[k]
        lblk = rng.choice([d[0] for d in t['desc']] + t['revoke'] + [t['commit']])
        c.put32(fs.lblk_off(lblk) + 4, rng.choice([0, SB1, SB2, 6, 0xff, rng.getrandbits(32) | 8]))
    elif kind == 'garbage commit block':
        k = rng.randrange(n)
        c = Case(kind, k)
        c.put(fs.lblk_off(txs[k]['commit']), rng.randbytes(bs))
    elif kind == 'commit block with garbage after its header':
        k = rng.randrange(n)
        c = Case(kind, n)  # no checksums: the header is all JBD checks
        c.put(fs.lblk_off(txs[k]['commit']) + 12, rng.randbytes(bs - 12))
    elif kind == 'journal superblock sequence':
        c = Case(kind, 0)
        c.put32(fs.jsb_off + 24, fs.sequence + rng.choice([1, -1, 1000]))
    elif kind == 'journal inode with a hole':
        c = Case(kind, refuse='hole')
        c.put32(fs.ptrs[rng.randrange(len(fs.ptrs))], 0, big=False)
    elif kind == 'unknown incompatible feature':
        bit = rng.choice([b for b in range(32) if not (1 << b) & KNOWN_INCOMPAT])
        c = Case(kind + ' bit %d' % bit, refuse='cannot replay')
        c.put32(fs.jsb_off + 40, be32(fs.img, fs.jsb_off + 40) | (1 << bit))
    elif kind == 'journal superblock magic':
        c = Case(kind, refuse='')
        c.put32(fs.jsb_off, rng.choice([0, JMAGIC ^ 0x100, rng.getrandbits(32)]))
    elif kind == 'log start outside the log':
        c = Case(kind, refuse='')
        c.put32(fs.jsb_off + 28, rng.choice([fs.maxlen, fs.maxlen + 5, 0xffffffff]))
    return c


KINDS = ['descriptor magic', 'descriptor sequence', 'commit sequence',
         'tag outside the filesystem', 'tag inside the journal', 'truncated descriptor',
         'revoke count', 'block type', 'garbage commit block',
         'commit block with garbage after its header', 'journal superblock sequence',
         'journal inode with a hole', 'unknown incompatible feature',
         'journal superblock magic', 'log start outside the log']


def run_rec(rec, path):
    env = dict(os.environ, ASAN_OPTIONS='exitcode=99:detect_leaks=1',
               UBSAN_OPTIONS='exitcode=99:halt_on_error=1:print_stacktrace=1')
    p = subprocess.run([rec, path], env=env, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def check(case, fs, txs, path, recs, bad):
    """Runs each recovery binary on a copy of the corrupted image; returns
    a list of problems (empty: the case passed)."""
    probs, outs = [], []
    for i, rec in enumerate(recs):
        cp = path + '.%d' % i
        open(cp, 'wb').write(bad)
        rc, out = run_rec(rec, cp)
        outs.append(out)
        tag = os.path.basename(os.path.dirname(os.path.dirname(rec))) + ' ' + os.path.basename(rec)
        if rc < 0 or rc > 1:
            probs.append('%s exited %d: %s' % (tag, rc, out[-600:]))
            continue
        after = open(cp, 'rb').read()
        if case.refuse is not None:
            if rc != 1 or case.refuse not in out:
                probs.append('%s: want a refusal naming "%s", got exit %d: %s' % (
                    tag, case.refuse, rc, out.strip()[-300:]))
            if after != bad:
                probs.append('%s: the refused image was changed' % tag)
            continue
        got = [l for l in out.splitlines() if l.startswith('transactions ')]
        want = 'transactions %d ' % case.k
        if rc != 0 or not got or not got[0].startswith(want):
            probs.append('%s: want %s(exit 0), got exit %d: %s' % (tag, want, rc, out.strip()[-300:]))
            continue
        if case.k < len(txs) and not re.search(r'^end of log: .*log block \d+', out, re.M):
            probs.append('%s: does not say where and why the log ended' % tag)
        if masked(after, fs) != masked(model(fs, txs, case.k, bad), fs):
            probs.append('%s: the image differs from a replay of transactions 0..%d' % (tag, case.k - 1))
        if i == 0:
            p = subprocess.run(['e2fsck', '-fn', cp], capture_output=True, text=True)
            if p.returncode != 0:
                probs.append('e2fsck -fn exit %d: %s' % (p.returncode, p.stdout[-400:]))
    reason = [l for l in outs[0].splitlines() if 'end of log' in l or 'ext3d-recover:' in l]
    return probs, (reason[0] if reason else '')


def run(base, recs, cases, seed, work):
    img = open(base, 'rb').read()
    fs = Fs(img)
    txs = scan(fs)
    if len(txs) < 3:
        print('not ok\tthe base image holds %d transactions, want 3 or more\t' % len(txs))
        return
    path = os.path.join(work, 'case.img')
    for i in range(cases):
        rng = random.Random('%d-%d' % (seed, i))
        kind = KINDS[i % len(KINDS)]
        case = make_case(kind, rng, fs, txs)
        if case is None:
            print('ok\t%s: the log has none # SKIP\t' % kind)
            continue
        bad = bytearray(img)
        for off, data in case.edits:
            bad[off:off + len(data)] = data
        probs, reason = check(case, fs, txs, path, recs, bytes(bad))
        what = 'case %d (seed %d): %s' % (i, seed, case.name)
        what += ' in transaction %d of %d' % (case.k, len(txs)) if case.k is not None and case.k < len(txs) else ''
        # One line a case: a problem quoting a program's output keeps its
        # lines apart with " / ".
        diag = ' | '.join(probs) or reason
        print('%s\t%s\t%s' % ('not ok' if probs else 'ok', what,
                              ' / '.join(diag.split('\n'))))
        sys.stdout.flush()


def seeds(base, seed, out):
    img = open(base, 'rb').read()
    fs = Fs(img)
    txs = scan(fs)
    end = txs[-1]['commit'] + 2 if txs else 2
    if end > len(fs.map) or any(t['commit'] < fs.start for t in txs):
        sys.exit('the log wraps: no seeds')
    inside = set(fs.map[:end])
    pick_blocks = lambda b: b''.join(b[m * fs.bs:(m + 1) * fs.bs] for m in fs.map[:end])
    open(os.path.join(out, 'log'), 'wb').write(pick_blocks(img))
    for i, kind in enumerate(KINDS):
        case = make_case(kind, random.Random('%d-seed-%d' % (seed, i)), fs, txs)
        if case is None or any(off // fs.bs not in inside for off, _ in case.edits):
            continue
        bad = bytearray(img)
        for off, data in case.edits:
            bad[off:off + len(data)] = data
        open(os.path.join(out, 'case-%02d' % i), 'wb').write(pick_blocks(bad))


def main(argv):
    if len(argv) == 5 and argv[1] == 'merge':
        merge(argv[2], argv[3], argv[4])
    elif len(argv) == 5 and argv[1] == 'seeds':
        seeds(argv[2], int(argv[3]), argv[4])
    elif len(argv) == 7 and argv[1] == 'run':
        run(argv[2], argv[3].split(','), int(argv[4]), int(argv[5]), argv[6])
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main(sys.argv)
