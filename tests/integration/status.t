#!/bin/sh
# status.t - ext3d status and status --json show the journal: compose/up's
# --data, --commit-interval and --locking reach journald-svc's command line
# and the arena, and come back in status; the JSON parses and holds every
# field of the journal section (as /proc/fs/jbd2/*/info: transaction ids,
# commits, handles and blocks per transaction, commit time, log head, tail,
# free and size, checkpoints, revokes, frozen copies, and the journal's
# lock counters), or "journal": null while journald-svc has made none, which
# the text says as "journal: none". With a journal, after handles and
# commits made by bench/jbdbench on free blocks, status counts them. Wrong
# option values are refused, naming the option. The supervisor started
# without DATA and COMMIT_MS gives journald-svc the defaults.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

img=$T_TMP/st.img n=t-st-$$
t_at_exit "$T_TOP/compose/down --instance $n >/dev/null 2>&1"

# jcmd: journald-svc's command line, one word a line.
jcmd() { tr '\0' '\n' <"/proc/$(t_field $n services.journald-svc.pid)/cmdline"; }

# check_json LABEL: status --json parses, and the journal section (when
# there is one) has every field; prints "none" or "journal" on fd 3.
check_json() {
	"$T_EXT3D" --instance $n status --json >"$T_TMP/st.json"
	python3 -m json.tool "$T_TMP/st.json" >/dev/null
	t_ok $? "status --json parses with python3 -m json.tool ($1)"
	python3 - "$T_TMP/st.json" >"$T_TMP/st.check" 2>&1 <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
if "journal" not in st:
    sys.exit("no journal key")
j = st["journal"]
if j is None:
    print("none")
    sys.exit(0)
want = ["data_mode", "commit_interval_ms", "running_tid", "committing_tid",
        "committing_state", "commit_sequence", "next_tid", "commits", "handles",
        "blocks", "average_handles", "average_blocks", "average_commit_ns",
        "checkpoints", "revokes", "frozen", "escaped", "space_waits", "log", "locks"]
miss = [k for k in want if k not in j]
miss += ["log." + k for k in ("first", "size", "head", "tail", "free") if k not in j.get("log", {})]
names = [l["name"] for l in j.get("locks", [])]
miss += ["lock " + k for k in ("j_state_lock", "j_list_lock", "j_revoke_lock",
                               "bh_state", "journal_head") if k not in names]
for l in j.get("locks", []):
    miss += [l["name"] + "." + k for k in ("acquisitions", "contended", "wait_ns") if k not in l]
if miss:
    sys.exit("missing: " + " ".join(miss))
print("journal %s %d %s" % (j["data_mode"], j["commit_interval_ms"], st["locking"]))
PY
	t_ok $? "the journal section of status --json has every field ($1)"
	sed 's/^/# /' "$T_TMP/st.check"
}

"$T_TOP/compose/up" --image "$img" --size 64M --instance $n >"$T_TMP/up.out" 2>&1
t_ok $? "compose/up with the defaults"
[ $? -eq 0 ] || sed 's/^/# /' "$T_TMP/up.out"
jcmd >"$T_TMP/cmd"
t_ok "$(grep -qx -- --data=ordered "$T_TMP/cmd" && grep -qx -- --commit-interval=5000 "$T_TMP/cmd"; echo $?)" \
	"journald-svc gets --data=ordered --commit-interval=5000"
t_is "$(t_field $n locking)" fine "status says locking fine"
"$T_EXT3D" --instance $n status >"$T_TMP/st.txt"
t_ok "$(grep -Eq '^journal: (none|data=ordered, commit interval 5000 ms)' "$T_TMP/st.txt"; echo $?)" \
	"status text has the journal section (or says journal: none)"
grep '^journal:' "$T_TMP/st.txt" | sed 's/^/# /'
check_json defaults
if grep -q '^journal' "$T_TMP/st.check"; then
	t_is "$(cat "$T_TMP/st.check")" "journal ordered 5000 fine" "data mode, interval and locking in status"
	for f in 'running transaction: [0-9n]' 'log: [0-9]* blocks from block [0-9]*; head [0-9]*, tail' \
		'average [0-9.]* handles and [0-9.]* blocks per transaction' 'checkpoints' 'revokes' \
		'frozen copies' '^j_state_lock' '^j_list_lock' '^j_revoke_lock' '^bh_state  *[0-9][0-9]* ' \
		'^journal_head  *[0-9][0-9]* '; do
		grep -q "$f" "$T_TMP/st.txt"
		t_ok $? "status text shows /$f/"
	done
	# Handles and commits on 16 free blocks of the last group, then status.
	first=$(dumpe2fs "$img" 2>/dev/null | sed -n 's/^  Free blocks: \([0-9]*\)-.*/\1/p' | tail -1)
	"$EXT3D_BUILD/bench/jbdbench" --instance $n --first="$first" --count=16 --seconds=1 \
		--commit >"$T_TMP/jb.out" 2>&1
	t_ok $? "jbdbench ran handles with a commit each on the live journal"
	sed 's/^/# /' "$T_TMP/jb.out"
	"$T_EXT3D" --instance $n status --json >"$T_TMP/st.json"
	python3 - "$T_TMP/st.json" >"$T_TMP/st.check" 2>&1 <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["journal"]
bad = [k for k in ("commits", "handles", "blocks", "log_blocks", "handle_starts", "average_commit_ns")
       if not j[k] > 0]
bad += ["average_handles"] if not j["average_handles"] >= 1 else []
bad += ["commit_sequence"] if not j["commit_sequence"] > 1 else []
locks = {l["name"]: l for l in j["locks"]}
bad += [k for k in ("j_state_lock", "bh_state", "journal_head") if not locks[k]["acquisitions"] > 0]
print("commits %d, %.1f handles and %.1f blocks per transaction, %d us per commit; bad: %s" % (
    j["commits"], j["average_handles"], j["average_blocks"], j["average_commit_ns"] // 1000,
    " ".join(bad) or "none"))
sys.exit(1 if bad else 0)
PY
	t_ok $? "status counts the commits, handles, blocks, commit time and lock use"
	sed 's/^/# /' "$T_TMP/st.check"
else
	t_is "$(cat "$T_TMP/st.check")" none "no journal in the arena yet: \"journal\": null"
	t_ok "$(grep -qx 'journal: none' "$T_TMP/st.txt"; echo $?)" "the text says journal: none"
fi
"$T_TOP/compose/down" --instance $n
t_ok $? "compose/down"

"$T_TOP/compose/up" --image "$img" --instance $n --data=journal --commit-interval=2 \
	--locking=big >"$T_TMP/up.out" 2>&1
t_ok $? "compose/up --data=journal --commit-interval=2 --locking=big"
[ $? -eq 0 ] || sed 's/^/# /' "$T_TMP/up.out"
jcmd >"$T_TMP/cmd"
t_ok "$(grep -qx -- --data=journal "$T_TMP/cmd" && grep -qx -- --commit-interval=2000 "$T_TMP/cmd"; echo $?)" \
	"journald-svc gets --data=journal --commit-interval=2000"
t_is "$(t_field $n locking)" big "status says locking big (the arena's lock set mode)"
check_json "journal, big"
if grep -q '^journal' "$T_TMP/st.check"; then
	t_is "$(cat "$T_TMP/st.check")" "journal journal 2000 big" "data mode, interval and locking in status"
	t_ok "$(t_field $n journal.locks.big_lock.acquisitions >/dev/null; echo $?)" \
		"the journal's locks include big_lock under --locking=big"
else
	t_ok "$(grep -qx 'journal: none' "$T_TMP/st.txt"; echo $?)" "the text says journal: none"
	t_skip "journald-svc made no run-time journal" "big_lock among the journal's locks"
fi
"$T_TOP/compose/down" --instance $n

for bad in --data=fast --data= --locking=medium --commit-interval=0 --commit-interval=soon \
	--commit-interval=9999; do
	"$T_TOP/compose/up" --image "$img" --instance $n "$bad" >"$T_TMP/bad" 2>&1
	st=$?
	opt=${bad%%=*}
	t_ok "$([ $st -eq 2 ] && grep -q "compose/up: $opt is" "$T_TMP/bad"; echo $?)" \
		"compose/up $bad is refused, naming the option"
	sed 's/^/# /' "$T_TMP/bad"
done
"$EXT3D_BUILD/client/ext3d" --instance $n status >/dev/null 2>&1
t_is $? 1 "and no instance was started"

# The supervisor alone, without DATA or COMMIT_MS: the defaults.
t_instance_start sv "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set "BLOCKDEV_ARGS="
t_ok $? "the supervisor starts ext3d.compose with no DATA or COMMIT_MS set"
tr '\0' '\n' <"/proc/$(t_field sv services.journald-svc.pid)/cmdline" >"$T_TMP/cmd"
t_ok "$(grep -qx -- --data=ordered "$T_TMP/cmd" && grep -qx -- --commit-interval=5000 "$T_TMP/cmd"; echo $?)" \
	"journald-svc gets the defaults"
t_done
