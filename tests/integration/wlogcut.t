#!/bin/sh
# wlogcut.t - the power-cut tool (tests/tools/wlog-cut.py) on synthetic
# write logs whose every byte the test knows: counts and listing (JBD
# headers found at block starts); a cut at every boundary equals a replay of
# the writes before that flush; 'each' and the module give the same images
# as 'cut'; a seeded cut applies exactly the writes it reports, in the
# order it reports them landing (an earlier write may land over a later one
# it overlaps), drops the others, is the same for the same seed and differs
# across seeds;
# a torn write has some sectors applied, some not and one garbage, and
# never touches the --atomic sectors; bad logs
# and boundaries are refused with a reason, never a traceback.
set -u
. "$(dirname "$0")/../lib/tap.sh"

CUT=$T_TOP/tests/tools/wlog-cut.py
command -v python3 >/dev/null 2>&1 || t_skip_all "needs python3"

# The synthetic log: 128 KiB device, 30 windows of 0-9 writes of 1-8
# sectors (some overlapping, some FUA), 5 trailing writes after the last
# flush, a JBD commit header (sequence 77) at block 9 of 1 KiB.
python3 - "$T_TMP" <<'EOF'
import os, random, struct, sys
d = sys.argv[1]
rng = random.Random(5)
base = rng.randbytes(128 * 1024)
open(d + "/base.img", "wb").write(base)
rec = struct.Struct("=IIQII")
log = [b"EXT3DWL1"]
writes, flushes = [], 0
def write(sector, data, flags=0):
    log.append(rec.pack(0x474F4C57, 1, sector, len(data) // 512, flags) + data)
    writes.append((sector, data))
def flush():
    global flushes
    log.append(rec.pack(0x474F4C57, 2, 0, 0, 0))
    flushes += 1
for k in range(30):
    for _ in range(rng.randrange(10)):
        n = rng.randint(1, 8)
        fua = rng.random() < 0.1
        write(rng.randrange(256 - n), rng.randbytes(n * 512), 1 if fua else 0)
        if fua:
            flush()
    flush()
write(18, struct.pack(">III", 0xC03B3998, 2, 77) + bytes(1012))
for _ in range(4):
    write(rng.randrange(248), rng.randbytes(rng.randint(1, 8) * 512))
open(d + "/log", "wb").write(b"".join(log))
with open(d + "/facts", "w") as f:
    f.write("writes=%d flushes=%d\n" % (len(writes), flushes))
EOF
facts=$(cat "$T_TMP/facts")
t_diag "synthetic log: $facts"
writes=${facts#writes=}; writes=${writes%% *}
flushes=${facts##*flushes=}

out=$(python3 "$CUT" info "$T_TMP/log")
t_is "$out" "writes $writes flushes $flushes boundaries $((flushes + 1)) fua $(python3 "$CUT" list "$T_TMP/log" | grep -c ' fua$') trailing 5 truncated 0" \
	"info counts writes, flushes, boundaries and the 5 trailing writes"
python3 "$CUT" list "$T_TMP/log" >"$T_TMP/list"
t_is "$(grep -c '^w ' "$T_TMP/list")/$(grep -c '^f ' "$T_TMP/list")" "$writes/$flushes" \
	"list: a line per write and per flush"
t_is "$(grep '^jbd ' "$T_TMP/list")" "jbd $((writes - 5)) 9 commit 77" \
	"list: the commit header is found at block 9, sequence 77"
t_is "$(python3 "$CUT" list --block-size=4096 "$T_TMP/log" | grep -c '^jbd ')" 0 \
	"list: with 4 KiB blocks, byte 9216 is not a block start"

# The checks below run in one python process: each prints PASS/FAIL lines.
python3 - "$CUT" "$T_TMP" >"$T_TMP/checks" 2>&1 <<'EOF'
import filecmp, importlib.util, os, random, subprocess, sys
cut, d = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("wlog_cut", cut)
wc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(wc)
log = wc.WriteLog(d + "/log")
base = open(d + "/base.img", "rb").read()
def check(ok, what):
    print("%s %s" % ("PASS" if ok else "FAIL", what))
def replay(n):
    dev = bytearray(base)
    for i in range(n):
        s, ns, _, _ = log.writes[i]
        dev[s * 512:(s + ns) * 512] = log.payload(i)
    return bytes(dev)
def run(*args):
    return subprocess.run([sys.executable, cut] + list(args), capture_output=True, text=True)

# Every boundary by the CLI, against an independent replay.
bad = [k for k in range(log.flushes + 1)
       if run("cut", d + "/base.img", d + "/log", str(k), d + "/c.img").returncode != 0
       or open(d + "/c.img", "rb").read() != replay(log.flush_at[k])]
check(not bad, "cut K equals the replay of the writes before flush K, every K (bad: %s)" % bad[:5])
check(open(d + "/c.img", "rb").read() != replay(len(log.writes)),
      "the last boundary leaves the trailing writes out")

# each = cut, image for image.
r = run("each", d + "/base.img", d + "/log", d + "/each", "--seeds=2", "--tear")
same = r.returncode == 0
lines = r.stdout.splitlines()
for k in (0, 7, log.flushes):
    for s in (None, 1, 2):
        args = ["cut", d + "/base.img", d + "/log", str(k), d + "/c.img"] + (["--seed=%d" % s, "--tear"] if s else [])
        one = run(*args)
        name = "cut-%d.img" % k if s is None else "cut-%d-s%d.img" % (k, s)
        same &= filecmp.cmp(d + "/c.img", d + "/each/" + name, shallow=False)
        same &= one.stdout.strip() in lines
check(same and len(lines) == 3 * (log.flushes + 1), "each writes the same images and lines as cut")

# Seeded cuts: the image is the prefix, then the reported fates in the
# order reported (the order the writes landed).
cutter = wc.Cutter(log, d + "/base.img")
exact, torn_ok, drops, tears, sets, earlier_wins = True, True, 0, 0, {}, 0
for k in range(log.flushes + 1):
    for seed in range(1, 7):
        tear = seed % 2 == 0
        fate = cutter.cut(k, d + "/s.img", seed, tear)
        img = open(d + "/s.img", "rb").read()
        want = bytearray(replay(log.flush_at[k]))
        if sorted(f[1] for f in fate) != list(log.window(k)):
            exact = False
        landed = [f[1] for f in fate if f[0] == "a"]
        for x, j in enumerate(landed):
            sj, nj, _, _ = log.writes[j]
            for i in landed[x + 1:]:
                si, ni, _, _ = log.writes[i]
                earlier_wins += i < j and si < sj + nj and sj < si + ni
        for f in fate:
            s, ns, _, _ = log.writes[f[1]]
            data = log.payload(f[1])
            if f[0] == "a":
                want[s * 512:(s + ns) * 512] = data
            elif f[0] == "d":
                drops += 1
            else:
                tears += 1
                states = f[2]
                torn_ok &= states.count("g") == 1 and len(states) == ns
                for j, st in enumerate(states):
                    if st == "a":
                        want[(s + j) * 512:(s + j + 1) * 512] = data[j * 512:(j + 1) * 512]
                    elif st == "g":
                        g = img[(s + j) * 512:(s + j + 1) * 512]
                        torn_ok &= g != data[j * 512:(j + 1) * 512] and g != bytes(want[(s + j) * 512:(s + j + 1) * 512])
                        want[(s + j) * 512:(s + j + 1) * 512] = g
        exact &= img == bytes(want)
        torn_ok &= tear == any(f[0] == "t" for f in fate) or not fate
        sets.setdefault(k, set()).add(tuple(f[0] for f in fate))
check(exact, "a seeded cut is the prefix plus the writes it reports applied, in the order reported")
check(earlier_wins > 0, "writes land out of log order: an earlier write lands over a later one it "
      "overlaps (%d times)" % earlier_wins)
check(drops > 0 and tears > 0 and torn_ok,
      "torn writes: one garbage sector each, the others applied or not (%d drops, %d tears)" % (drops, tears))
busy = [k for k in sets if len(log.window(k)) >= 3]
check(busy and all(len(sets[k]) > 1 for k in busy), "different seeds choose different subsets")
again = wc.Cutter(log, d + "/base.img")
check(again.cut(9, d + "/t1.img", 3, True) == cutter.cut(9, d + "/t2.img", 3, True)
      and filecmp.cmp(d + "/t1.img", d + "/t2.img", shallow=False),
      "the same seed gives the same image, whatever was cut before")
check(cutter.cut(2, d + "/b.img") == [] and open(d + "/b.img", "rb").read() == replay(log.flush_at[2]),
      "going back to an earlier boundary replays from the base image")

# --atomic: writes touching the protected sectors are never torn.
guard = [(0, 64)]
g = wc.Cutter(log, d + "/base.img", guard)
torn_in, tears = 0, 0
for k in range(log.flushes + 1):
    for seed in range(1, 5):
        for f in g.plan(k, seed, True)[0]:
            if f[0] == "t":
                tears += 1
                torn_in += g._is_atomic(f[1])
check(tears > 0 and torn_in == 0, "--atomic: no torn write touches sectors 0-63 (%d tears elsewhere)" % tears)
r = run("cut", d + "/base.img", d + "/log", "3", d + "/a.img", "--seed=2", "--tear", "--atomic=0-64,100-120")
check(r.returncode == 0 and all(int(t[1:].split(":")[0]) not in
      [i for i in range(len(log.writes)) if g._is_atomic(i)] for t in r.stdout.split()[4:] if t.startswith("t")),
      "--atomic on the command line: " + r.stdout.strip())
r = run("cut", d + "/base.img", d + "/log", "3", d + "/a.img", "--atomic=9-3")
check(r.returncode == 2 and "A-B" in r.stderr, "--atomic with an empty range refused")

# Bad input: a reason on stderr, exit 2, no traceback.
raw = open(d + "/log", "rb").read()
cases = {
    "empty": b"", "nomagic": b"EXT3DWLX" + raw[8:],
    "badrec": raw[:8] + b"XXXX" + raw[12:],
    "badop": raw[:12] + (7).to_bytes(4, "little") + raw[16:],
}
for name, data in cases.items():
    open(d + "/" + name, "wb").write(data)
    r = run("info", d + "/" + name)
    check(r.returncode == 2 and r.stderr.startswith("wlog-cut: ") and "Traceback" not in r.stderr,
          "bad log '%s' refused: %s" % (name, r.stderr.strip()))
open(d + "/trunc", "wb").write(raw[:-100])
r = run("info", d + "/trunc")
check(r.returncode == 0 and "writes %d " % (len(log.writes) - 1) in r.stdout and "truncated 0" not in r.stdout,
      "a log cut off inside its last record drops that record and says so")
open(d + "/small.img", "wb").write(base[:4096])
for args, what in (([d + "/base.img", d + "/log", "999", d + "/x"], "boundary past the end"),
                   ([d + "/base.img", d + "/log", "-1", d + "/x"], "negative boundary"),
                   ([d + "/small.img", d + "/log", "1", d + "/x"], "image smaller than the writes"),
                   ([d + "/none.img", d + "/log", "1", d + "/x"], "missing image")):
    r = run("cut", *args)
    check(r.returncode == 2 and r.stderr.startswith("wlog-cut: ") and "Traceback" not in r.stderr,
          "%s refused: %s" % (what, r.stderr.strip()))
r = run("frob")
check(r.returncode == 2 and "usage" not in r.stdout and "wlog-cut cut" in r.stderr, "unknown command: usage on stderr")
EOF
st=$?
t_relay "" <"$T_TMP/checks"
t_ok $st "the checks ran to the end"

t_done
