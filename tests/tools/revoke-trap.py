#!/usr/bin/env python3
"""revoke-trap - in an ext3 image that needs recovery, the revoked blocks
whose home no longer holds what the log holds for them: a recovery that
ignored the revoke records would write the logged copy over the home
block, so only these blocks tell a right replay from such a wrong one.

  revoke-trap IMAGE

Reads the log with debugfs's logdump. A block counts when it is revoked
by a committed transaction, was logged by that transaction or an earlier
one (the copy a wrong replay writes last is the latest of those), is not
logged again by a later one (that copy would be replayed either way), and
that latest copy differs from the block in IMAGE.

Prints "revoked R logged-before L trapped T", then a line per trapped
block: "trap BLOCK revoked SEQ copy SEQ at journal block J".
Exit status: 0 done, 2 usage, no debugfs, or an image without a log.
"""
import re
import struct
import subprocess
import sys

DESC = re.compile(r"^Dumping descriptor block, sequence (\d+)")
REVOKE = re.compile(r"^Dumping revoke block, sequence (\d+)")
COMMIT = re.compile(r"^Found expected sequence (\d+), type 2 \(commit block\)")
TAG = re.compile(r"^\s+FS block (\d+) logged at journal block (\d+) \(flags 0x([0-9a-f]+)\)")
ESCAPED = 1
JBD_MAGIC = struct.pack(">I", 0xC03B3998)
RECORD = re.compile(r"^\s+Revoke FS block (\d+)")


def debugfs(image, request):
    p = subprocess.run(["debugfs", "-R", request, image], capture_output=True, text=True)
    if p.returncode != 0:
        raise OSError("debugfs -R '%s' %s: exit %d" % (request, image, p.returncode))
    return p.stdout


def read_log(image):
    """(logged, revoked, committed): logged[block] = [(seq, journal block,
    escaped)],
    revoked[block] = [seq], committed = the set of committed sequences."""
    logged, revoked, committed = {}, {}, set()
    seq, kind = None, None
    for line in debugfs(image, "logdump -a").splitlines():
        for pattern, what in ((DESC, "desc"), (REVOKE, "revoke")):
            m = pattern.match(line)
            if m:
                seq, kind = int(m.group(1)), what
        m = COMMIT.match(line)
        if m:
            committed.add(int(m.group(1)))
        m = TAG.match(line)
        if m and kind == "desc":
            logged.setdefault(int(m.group(1)), []).append(
                (seq, int(m.group(2)), int(m.group(3), 16) & ESCAPED))
        m = RECORD.match(line)
        if m and kind == "revoke":
            revoked.setdefault(int(m.group(1)), []).append(seq)
    return logged, revoked, committed


def block_size(image):
    with open(image, "rb") as f:
        f.seek(1024 + 24)
        return 1024 << struct.unpack("<I", f.read(4))[0]


def main(argv):
    if len(argv) != 1:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    image = argv[0]
    try:
        logged, revoked, committed = read_log(image)
        bs = block_size(image)
        traps, before = [], 0
        for block, seqs in sorted(revoked.items()):
            last = max(s for s in seqs if s in committed) if set(seqs) & committed else None
            copies = [c for c in logged.get(block, []) if c[0] in committed]
            if last is None or not copies or any(c[0] > last for c in copies):
                continue
            before += 1
            seq, jblock, escaped = max(copies)
            fs_block = int(debugfs(image, "bmap <8> %d" % jblock).split()[0])
            with open(image, "rb") as f:
                f.seek(fs_block * bs)
                copy = f.read(bs)
                if escaped:
                    copy = JBD_MAGIC + copy[4:]
                f.seek(block * bs)
                home = f.read(bs)
            if copy != home:
                traps.append("trap %d revoked %d copy %d at journal block %d" % (block, last, seq, jblock))
    except (OSError, IndexError, ValueError) as e:
        sys.stderr.write("revoke-trap: %s\n" % e)
        return 2
    print("revoked %d logged-before %d trapped %d" % (len(revoked), before, len(traps)))
    for t in traps:
        print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
