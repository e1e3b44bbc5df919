#!/usr/bin/env python3
# corrupt-gen.py - seeded corruptions of an ext3 image, one class at a time.
#
#   corrupt-gen.py classes
#   corrupt-gen.py paths BASE       (one "TYPE PATH" a line; f, d, l or o)
#   corrupt-gen.py make BASE SEED INDEX OUT
#
# "make" copies BASE to OUT and damages one metadata structure, chosen by
# INDEX (the class, round robin over CLASSES) and SEED + INDEX (what and
# how), and prints one line: "CLASS DETAIL [impossible=PATH]". impossible
# names a file given an i_size beyond ext3_max_size, which must be refused.
# The image classes may leave OUT missing, empty or short. The generator
# parses BASE itself (superblock, descriptors, inodes, block maps,
# directories, htree roots), so it needs no e2fsprogs.
import os
import random
import shutil
import struct
import sys

CLASSES = ["super", "gdt", "bitmap", "mode", "size", "links", "blockptr",
           "indirect", "dirent", "loop", "htree", "symlink", "journal",
           "bytes", "image"]


class Fs:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.img = f.read()
        sb = self.img[1024:2048]
        (self.inodes_count, self.blocks_count) = struct.unpack_from("<II", sb, 0)
        self.first_data = struct.unpack_from("<I", sb, 0x14)[0]
        self.bs = 1024 << struct.unpack_from("<I", sb, 0x18)[0]
        self.bpg = struct.unpack_from("<I", sb, 0x20)[0]
        self.ipg = struct.unpack_from("<I", sb, 0x28)[0]
        self.isize = struct.unpack_from("<H", sb, 0x58)[0]
        self.journal_ino = struct.unpack_from("<I", sb, 0xE0)[0]
        ngroups = (self.blocks_count - self.first_data + self.bpg - 1) // self.bpg
        self.gdt = (self.first_data + 1) * self.bs
        self.groups = []
        for g in range(ngroups):
            self.groups.append(struct.unpack_from("<III", self.img, self.gdt + 32 * g))
        self.inodes = {}   # ino -> dict(path, off, mode, size, blocks, ind)
        self.dirents = []  # (dir ino, byte offset of the entry, name, ino)
        self.walk(2, "/", set())
        if self.journal_ino and self.journal_ino not in self.inodes:
            self.walk(self.journal_ino, "<journal>", set())

    def u32(self, off):
        return struct.unpack_from("<I", self.img, off)[0]

    def inode_off(self, ino):
        g, i = divmod(ino - 1, self.ipg)
        return self.groups[g][2] * self.bs + i * self.isize

    def blocks(self, off, size):
        """Data blocks and indirect blocks of the inode at off (no TIND)."""
        n = (size + self.bs - 1) // self.bs
        ptrs = [self.u32(off + 0x28 + 4 * i) for i in range(15)]
        data, ind = ptrs[:12], []
        apb = self.bs // 4
        for level, p in ((1, ptrs[12]), (2, ptrs[13])):
            if not p or len(data) >= n:
                continue
            ind.append(p)
            sub = [self.u32(p * self.bs + 4 * i) for i in range(apb)]
            if level == 1:
                data += sub
                continue
            for q in sub:
                if q and len(data) < n:
                    ind.append(q)
                    data += [self.u32(q * self.bs + 4 * i) for i in range(apb)]
        return [b for b in data[:n]], ind

    def walk(self, ino, path, seen):
        if ino in seen:
            return
        seen.add(ino)
        off = self.inode_off(ino)
        mode = struct.unpack_from("<H", self.img, off)[0]
        size = self.u32(off + 4)
        nblk = self.u32(off + 0x1C)
        fast = mode & 0xF000 == 0xA000 and nblk == 0
        data, ind = ([], []) if fast else self.blocks(off, size)
        self.inodes[ino] = dict(path=path, off=off, mode=mode, size=size,
                                blocks=data, ind=ind, fast=fast)
        if mode & 0xF000 != 0x4000:
            return
        for b in data:
            pos = 0
            while b and pos < self.bs:
                e_ino, rec_len, name_len = struct.unpack_from("<IHB", self.img, b * self.bs + pos)
                if rec_len < 8:
                    break
                name = self.img[b * self.bs + pos + 8:b * self.bs + pos + 8 + name_len].decode()
                if e_ino:
                    self.dirents.append((ino, b * self.bs + pos, name, e_ino))
                    if name not in (".", ".."):
                        self.walk(e_ino, path.rstrip("/") + "/" + name, seen)
                pos += rec_len

    def max_size(self):
        bits = self.bs.bit_length() - 1
        apb = 1 << (bits - 2)
        tree = 12 + apb + apb ** 2 + apb ** 3
        upper = 0xFFFFFFFF >> (bits - 9)
        meta = 3 + 2 * apb + apb ** 2
        if upper > meta:
            upper -= meta
        return min(tree, upper) << bits

    def of_type(self, t):
        return [i for i, v in self.inodes.items() if v["mode"] & 0xF000 == t]

    def metadata_blocks(self):
        g = self.groups[0]
        return [0, self.first_data, self.first_data + 1, g[0], g[1], g[2]]


def put(img, off, fmt, v):
    """Records a write of v at off; make() applies them to the copy."""
    img.append((off, struct.pack(fmt, v)))


def odd_u32(r, fs):
    return r.choice([0, 1, 2, fs.blocks_count - 1, fs.blocks_count,
                     fs.blocks_count + 1, 0x7FFFFFFF, 0xFFFFFFFF,
                     r.getrandbits(32), r.randrange(fs.blocks_count)])


def c_super(r, fs, img):
    fields = [("inodes_count", 0x00, "<I"), ("blocks_count", 0x04, "<I"),
              ("first_data_block", 0x14, "<I"), ("log_block_size", 0x18, "<I"),
              ("blocks_per_group", 0x20, "<I"), ("inodes_per_group", 0x28, "<I"),
              ("magic", 0x38, "<H"), ("rev_level", 0x4C, "<I"),
              ("first_ino", 0x54, "<I"), ("inode_size", 0x58, "<H"),
              ("feature_compat", 0x5C, "<I"), ("feature_incompat", 0x60, "<I"),
              ("feature_ro_compat", 0x64, "<I"), ("reserved_gdt_blocks", 0xCE, "<H"),
              ("journal_inum", 0xE0, "<I"), ("def_hash_version", 0xFC, "<B")]
    name, off, fmt = r.choice(fields)
    bits = 8 * struct.calcsize(fmt)
    old = struct.unpack_from(fmt, fs.img, 1024 + off)[0]
    v = r.choice([0, 1, old + 1, max(old - 1, 0), (1 << bits) - 1,
                  r.getrandbits(bits), old ^ (1 << r.randrange(bits))]) & ((1 << bits) - 1)
    put(img, 1024 + off, fmt, v)
    return f"s_{name} {old} -> {v}"


def c_gdt(r, fs, img):
    g = r.randrange(len(fs.groups))
    name, off, fmt = r.choice([("block_bitmap", 0, "<I"), ("inode_bitmap", 4, "<I"),
                               ("inode_table", 8, "<I"), ("free_blocks", 12, "<H"),
                               ("free_inodes", 14, "<H"), ("used_dirs", 16, "<H")])
    v = odd_u32(r, fs) & (0xFFFF if fmt == "<H" else 0xFFFFFFFF)
    put(img, fs.gdt + 32 * g + off, fmt, v)
    return f"group {g} bg_{name} = {v}"


def c_bitmap(r, fs, img):
    g = r.randrange(len(fs.groups))
    which = r.randrange(2)
    base = fs.groups[g][which] * fs.bs
    for _ in range(r.randrange(1, 64)):
        put(img, base + r.randrange(fs.bs), "<B", r.getrandbits(8))
    return f"group {g} {'inode' if which else 'block'} bitmap scribbled"


def spread(r, items, path):
    """items, most of the big directory's many alike entries left out."""
    few = [x for x in items if not path(x).startswith("/h/") or r.randrange(64) == 0]
    return few or items


def pick_inode(r, fs, types=None):
    cands = [i for i, v in fs.inodes.items() if v["path"] != "<journal>"
             and (types is None or v["mode"] & 0xF000 in types)]
    return r.choice(sorted(spread(r, cands, lambda i: fs.inodes[i]["path"])))


def c_mode(r, fs, img):
    ino = pick_inode(r, fs)
    v = r.choice([0, 0xF1A4, 0x81A4, 0x41ED, 0xA1FF, 0x21A4, 0x11A4, r.getrandbits(16)])
    put(img, fs.inodes[ino]["off"], "<H", v)
    return f"inode {ino} ({fs.inodes[ino]['path']}) mode 0{v:o}"


def c_size(r, fs, img):
    ino = pick_inode(r, fs, (0x8000, 0x4000, 0xA000))
    n = fs.inodes[ino]
    off, mx, reg = n["off"], fs.max_size(), n["mode"] & 0xF000 == 0x8000
    how = r.choice(["beyond", "beyond", "max", "low32", "zero"] if reg else ["low32", "zero", "huge32"])
    v = {"beyond": mx + r.choice([1, fs.bs, 1 << 40, (1 << 64) - 1 - mx]),
         "max": mx, "low32": r.getrandbits(32), "zero": 0, "huge32": 0xFFFFFFFF}[how]
    put(img, off + 4, "<I", v & 0xFFFFFFFF)
    if reg:
        put(img, off + 0x6C, "<I", v >> 32)
    extra = f" impossible={n['path']}" if v > mx else ""
    return f"inode {ino} ({n['path']}) i_size {how} {v}{extra}"


def c_links(r, fs, img):
    ino = pick_inode(r, fs)
    v = r.choice([0, 1, 0xFFFF])
    put(img, fs.inodes[ino]["off"] + 0x1A, "<H", v)
    return f"inode {ino} ({fs.inodes[ino]['path']}) links {v}"


def c_blockptr(r, fs, img):
    ino = pick_inode(r, fs, (0x8000, 0x4000, 0xA000))
    if not fs.inodes[ino]["blocks"]:
        ino = 2
    n = fs.inodes[ino]
    slot = r.randrange(15)
    v = r.choice([odd_u32(r, fs), r.choice(fs.metadata_blocks()),
                  r.choice(fs.inodes[r.choice(sorted(fs.inodes))]["blocks"] or [0])])
    put(img, n["off"] + 0x28 + 4 * slot, "<I", v)
    return f"inode {ino} ({n['path']}) i_block[{slot}] = {v}"


def c_indirect(r, fs, img):
    cands = sorted(i for i, v in fs.inodes.items() if v["ind"])
    if not cands:
        return c_blockptr(r, fs, img)
    ino = r.choice(cands)
    blk = r.choice(fs.inodes[ino]["ind"])
    how = r.choice(["garbage", "self", "range", "metadata", "zero"])
    for i in range(fs.bs // 4):
        if how == "garbage" or r.randrange(8) == 0:
            v = {"garbage": r.getrandbits(32), "self": blk, "range": odd_u32(r, fs),
                 "metadata": r.choice(fs.metadata_blocks()), "zero": 0}[how]
            put(img, blk * fs.bs + 4 * i, "<I", v)
    return f"inode {ino} ({fs.inodes[ino]['path']}) indirect block {blk}: {how}"


def c_dirent(r, fs, img):
    d, off, name, ino = r.choice(spread(r, fs.dirents, lambda e: fs.inodes[e[0]]["path"] + "/"))
    field = r.choice(["rec_len", "name_len", "inode", "file_type"])
    if field == "rec_len":
        v = r.choice([0, 4, 5, 9, fs.bs, fs.bs + 12, 0xFFFF, r.getrandbits(16)])
        put(img, off + 4, "<H", v)
    elif field == "name_len":
        v = r.choice([0, 255, r.getrandbits(8)])
        put(img, off + 6, "<B", v)
    elif field == "inode":
        v = r.choice([1, 7, 8, fs.inodes_count, fs.inodes_count + 1, 0xFFFFFFFF,
                      r.getrandbits(32)])
        put(img, off, "<I", v)
    else:
        v = r.choice([0, 2, 7, 8, 255])
        put(img, off + 7, "<B", v)
    return f"entry {name!r} of dir {d}: {field} = {v}"


def c_loop(r, fs, img):
    """An entry of a directory pointing at one of its ancestors (or itself)."""
    dirs = {v["path"]: i for i, v in fs.inodes.items() if v["mode"] & 0xF000 == 0x4000}
    cands = [e for e in fs.dirents if e[2] not in (".", "..") and fs.inodes[e[0]]["path"] != "/"]
    d, off, name, ino = r.choice(spread(r, cands, lambda e: fs.inodes[e[0]]["path"] + "/"))
    path = fs.inodes[d]["path"]
    anc = [p for p in dirs if path == p or path.startswith(p.rstrip("/") + "/")]
    target = dirs[r.choice(anc)]
    put(img, off, "<I", target)
    put(img, off + 7, "<B", 2)
    return f"entry {path}/{name} -> inode {target} ({fs.inodes[target]['path']})"


def c_htree(r, fs, img):
    dx = [i for i, v in fs.inodes.items() if v["mode"] & 0xF000 == 0x4000
          and struct.unpack_from("<I", fs.img, v["off"] + 0x20)[0] & 0x1000]
    if not dx:
        return c_dirent(r, fs, img)
    ino = r.choice(dx)
    root = fs.inodes[ino]["blocks"][0] * fs.bs
    field = r.choice(["hash_version", "info_length", "levels", "limit", "count",
                      "block0", "entry", "node"])
    if field == "node" and len(fs.inodes[ino]["blocks"]) > 1:
        b = r.choice(fs.inodes[ino]["blocks"][1:]) * fs.bs
        for _ in range(r.randrange(1, 16)):
            put(img, b + r.randrange(fs.bs), "<B", r.getrandbits(8))
        return f"htree dir {ino}: a leaf or node block scribbled"
    off, fmt, vals = {
        "hash_version": (0x1C, "<B", [3, 6, 255]), "info_length": (0x1D, "<B", [0, 7, 255]),
        "levels": (0x1E, "<B", [1, 2, 3, 255]), "limit": (0x20, "<H", [0, 1, 0xFFFF]),
        "count": (0x22, "<H", [0, 2, 500, 0xFFFF]), "block0": (0x24, "<I", [0, 9999, 0xFFFFFFFF]),
        "entry": (0x28 + 8 * r.randrange(4), "<I", [0, 0xFFFFFFFF, r.getrandbits(32)]),
        "node": (0x24, "<I", [0, 1, 0xFFFF]),
    }[field]
    v = r.choice(vals)
    put(img, root + off, fmt, v)
    return f"htree dir {ino} dx_root {field} = {v}"


def c_symlink(r, fs, img):
    ino = pick_inode(r, fs, (0xA000,))
    n = fs.inodes[ino]
    if n["fast"]:
        v = r.choice([0, 59, 60, 61, fs.bs, 0xFFFFFFFF])
        put(img, n["off"] + 4, "<I", v)
        return f"fast symlink {n['path']} size {v}"
    field = r.choice(["size", "block", "blocks"])
    if field == "size":
        v = r.choice([0, fs.bs - 1, fs.bs, 0xFFFFFFFF])
        put(img, n["off"] + 4, "<I", v)
    elif field == "block":
        v = odd_u32(r, fs)
        put(img, n["off"] + 0x28, "<I", v)
    else:
        v = 0  # claims to be fast while its size says slow
        put(img, n["off"] + 0x1C, "<I", v)
    return f"slow symlink {n['path']} {field} = {v}"


def c_journal(r, fs, img):
    j = fs.inodes.get(fs.journal_ino)
    if not j or not j["blocks"] or r.randrange(4) == 0:
        off = fs.inode_off(fs.journal_ino or 8)
        v = odd_u32(r, fs)
        put(img, off + 0x28, "<I", v)
        return f"journal inode i_block[0] = {v}"
    jsb = j["blocks"][0] * fs.bs
    name, off, v = r.choice([("magic", 0, 0), ("blocktype", 4, 99), ("blocksize", 12, 512),
                             ("maxlen", 16, 0xFFFFFFFF), ("first", 20, 0),
                             ("incompat", 0x28, 0x80000000), ("start", 28, 0xFFFFFFFF)])
    put(img, jsb + off, ">I", v)
    return f"journal superblock {name} = {v}"


def c_bytes(r, fs, img):
    regions = [(1024, 1024)]  # the superblock
    blks = fs.metadata_blocks()[2:]
    for v in fs.inodes.values():
        if v["mode"] & 0xF000 == 0x4000:
            blks += v["blocks"]
        blks += v["ind"]
    regions += [(b * fs.bs, fs.bs) for b in blks if b]
    n = r.randrange(1, 24)
    for _ in range(n):
        start, length = r.choice(regions)
        put(img, start + r.randrange(length), "<B", r.getrandbits(8))
    return f"{n} random bytes in metadata blocks"


def c_image(r, fs, img, out):
    total = fs.blocks_count * fs.bs
    how = r.choice(["missing", "empty", "one-byte", "1000", "2047", "2048",
                    "half", "one-short"])
    n = {"missing": None, "empty": 0, "one-byte": 1, "1000": 1000, "2047": 2047,
         "2048": 2048, "half": total // 2, "one-short": total - 512}[how]
    if n is None:
        os.unlink(out)
        return "image missing"
    with open(out, "r+b") as f:
        f.truncate(n)
    return f"image truncated to {n} bytes ({how}; the fs has {total})"


def make(base, seed, index, out):
    fs = Fs(base)
    r = random.Random(seed * 1000003 + index)
    cls = CLASSES[index % len(CLASSES)]
    shutil.copyfile(base, out)
    if cls == "image":
        desc = c_image(r, fs, None, out)
    else:
        patches = []
        desc = globals()["c_" + cls](r, fs, patches)
        with open(out, "r+b") as f:
            for off, data in patches:
                f.seek(off)
                f.write(data)
    print(f"{cls} {desc}")


def main(argv):
    if len(argv) >= 2 and argv[1] == "classes":
        print(" ".join(CLASSES))
    elif len(argv) == 3 and argv[1] == "paths":
        fs = Fs(argv[2])
        types = {0x8000: "f", 0x4000: "d", 0xA000: "l"}
        for v in sorted(fs.inodes.values(), key=lambda v: v["path"]):
            if not v["path"].startswith("<"):
                print(types.get(v["mode"] & 0xF000, "o"), v["path"])
    elif len(argv) == 6 and argv[1] == "make":
        make(argv[2], int(argv[3]), int(argv[4]), argv[5])
    else:
        sys.stderr.write("usage: corrupt-gen.py classes | paths BASE | make BASE SEED INDEX OUT\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
