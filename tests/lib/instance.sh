# instance.sh - start, query and stop ext3d instances from shell tests.
# Source after tap.sh. Instances live under $T_TMP/run and are stopped at
# exit whatever happens.
export EXT3D_RUNDIR=$T_TMP/run
T_EXT3D=$EXT3D_BUILD/client/ext3d
T_SUPERVISOR=$EXT3D_BUILD/compose/ext3d-supervisor

. "$T_TOP/tests/lib/nbdkit.sh"

# t_instance_start NAME COMPOSE [SUPERVISOR ARGS...]: 0 once ready. With
# EXT3D_TEST_NBD set (nbdkit.sh), the image is served by nbdkit.
t_instance_start() {
	name=$1 compose=$2; shift 2
	if [ -n "${EXT3D_TEST_NBD:-}" ]; then
		tis_prev= tis_n=$#
		for tis_a in "$@"; do
			case $tis_prev$tis_a in
			--setIMAGE=*)
				t_nbdkit_stop "img-$name"
				t_nbdkit_start "img-$name" "$EXT3D_TEST_NBD" file "${tis_a#IMAGE=}" ||
					return 1
				tis_a=IMAGE=$t_nbd_uri ;;
			esac
			set -- "$@" "$tis_a"
			tis_prev=$tis_a
		done
		shift "$tis_n"
	fi
	"$T_SUPERVISOR" --compose "$compose" --instance "$name" --set "BUILD=$EXT3D_BUILD" \
		"$@" </dev/null >>"$T_TMP/$name.log" 2>&1 &
	eval "t_pid_$(echo "$name" | tr -c 'a-zA-Z0-9\n' _)=$!"
	t_at_exit "t_instance_stop $name"
	t_instance_wait_ready "$name" $!
}

# t_pid_gone PID: the process has exited (a zombie not reaped yet counts).
t_pid_gone() {
	st=$(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null)
	[ -z "$st" ] || [ "$st" = Z ]
}

# t_instance_wait_ready NAME [PID]: waits up to 20 s for state ready; gives
# up at once, saying so, when the supervisor (PID, or the one
# t_instance_start started) is gone.
t_instance_wait_ready() {
	eval "t_wr_sup=\${2:-\${t_pid_$(echo "$1" | tr -c 'a-zA-Z0-9\n' _):-}}"
	for _ in $(seq 400); do
		t_status "$1" 2>/dev/null | grep -q '"supervisor":{[^}]*"state":"ready"' && return 0
		if [ -n "$t_wr_sup" ] && t_pid_gone "$t_wr_sup"; then
			echo "# the supervisor of $1 (pid $t_wr_sup) is gone"
			break
		fi
		sleep 0.05
	done
	echo "# instance $1 not ready; its log:"; sed 's/^/#   /' "$T_TMP/$1.log" | tail -20
	return 1
}

# t_instance_stop NAME: shutdown; a supervisor still alive 10 s later is
# killed (and said so), so that no instance outlives its test.
t_instance_stop() {
	eval "pid=\${t_pid_$(echo "$1" | tr -c 'a-zA-Z0-9\n' _):-}"
	"$T_EXT3D" --instance "$1" shutdown >/dev/null 2>&1 || true
	[ -n "$pid" ] || return 0
	for _ in $(seq 100); do
		t_pid_gone "$pid" && return 0
		sleep 0.1
	done
	echo "# supervisor of $1 (pid $pid) did not exit after shutdown: killed"
	kill -9 "$pid" 2>/dev/null
}

t_status() { "$T_EXT3D" --instance "$1" status --json; }

# t_field NAME PATH: a field of status --json, e.g. supervisor.pid,
# services.blockdev-svc.restarts, generation, locks.j_list_lock.acquisitions.
t_field() {
	t_status "$1" | python3 -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    if isinstance(v, list):
        v = next(x for x in v if x.get("name") == k)
    else:
        v = v[k]
print(v)' "$2"
}

# t_svc_pid NAME SERVICE
t_svc_pid() { t_field "$1" "services.$2.pid"; }

# t_seen_dead NAME SERVICE PID: waits (up to 10 s) until status no longer
# shows SERVICE of instance NAME as PID, so that a "ready" seen afterwards
# is the restarted group's, not the state from before the supervisor
# noticed the death (a call made then meets the group stopping under it).
t_seen_dead() {
	for _ in $(seq 200); do
		[ "$(t_svc_pid "$1" "$2" 2>/dev/null)" != "$3" ] && return 0
		sleep 0.05
	done
	return 1
}

# t_kill_svc NAME SERVICE: SIGKILLs SERVICE of instance NAME, then
# t_seen_dead; the pid killed in t_killed_pid.
t_kill_svc() {
	t_killed_pid=$(t_svc_pid "$1" "$2")
	[ -n "$t_killed_pid" ] && [ "$t_killed_pid" != 0 ] && kill -9 "$t_killed_pid" || return 1
	t_seen_dead "$1" "$2" "$t_killed_pid"
}

# t_need_fuse: skips the whole test unless root, /dev/fuse and ext3d-fuse.
t_need_fuse() {
	t_need_root "mount(2) of a FUSE file system"
	[ -c /dev/fuse ] || t_skip_all "no /dev/fuse"
	[ -x "$EXT3D_BUILD/client/fuse/ext3d-fuse" ] || t_skip_all "ext3d-fuse is not built"
}

# t_fuse_mounted DIR: a FUSE mount is on top at DIR (read from the mount
# table: no call into the daemon).
t_fuse_mounted() {
	awk -v m="$1" '$5 == m { t = ""; for (i = 6; i < NF; i++) if ($i == "-") { t = $(i + 1); break } }
		END { exit !(t ~ /^fuse/) }' /proc/self/mountinfo
}
