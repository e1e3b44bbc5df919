# nbdkit.sh - NBD servers for the tests: nbdkit from Debian, on a unix
# socket under $T_TMP or on the loopback address only. Source after tap.sh.
#
# EXT3D_TEST_NBD=unix or tcp makes instance.sh's t_instance_start serve
# the image it is given (--set IMAGE=PATH) from nbdkit's file plugin and
# hand blockdev-svc the export's URI instead, so that a suite written for
# an image file runs unchanged on an NBD export.

# t_need_nbdkit: skips the whole test where nbdkit or nbdinfo is missing.
t_need_nbdkit() {
	command -v nbdkit >/dev/null 2>&1 && command -v nbdinfo >/dev/null 2>&1 ||
		t_skip_all "needs nbdkit and nbdinfo (compose/install-deps installs them)"
}

# t_nbd_port: a TCP port on 127.0.0.1 that nothing listens on now.
t_nbd_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# t_nbdkit_start NAME unix|tcp NBDKIT-ARGS...: starts nbdkit in the
# background (NAME names it for t_nbdkit_stop and its log
# $T_TMP/nbdkit-NAME.log; a unix socket is $T_TMP/nbd/NAME.sock) and
# waits until it answers. Sets t_nbd_uri to the
# export's URI. A unix socket is made connectable by the services' user.
# Started again under the same NAME, it serves the same URI.
t_nbdkit_start() {
	tns_name=$1 tns_how=$2; shift 2
	tns_var=t_nbdkit_pid_$(echo "$tns_name" | tr -c 'a-zA-Z0-9\n' _)
	if [ "$tns_how" = unix ]; then
		# The services' user reconnects from inside its sandbox: it
		# must reach the socket (T_TMP is 0700).
		chmod o+x "$T_TMP"
		mkdir -p -m 755 "$T_TMP/nbd"
		tns_sock=$T_TMP/nbd/$tns_name.sock
		rm -f "$tns_sock"
		set -- -U "$tns_sock" "$@"
		t_nbd_uri="nbd+unix:///?socket=$tns_sock"
	else
		eval "tns_port=\${t_nbdkit_port_$tns_var:-}"
		[ -n "$tns_port" ] || tns_port=$(t_nbd_port)
		eval "t_nbdkit_port_$tns_var=$tns_port"
		set -- -i 127.0.0.1 -p "$tns_port" "$@"
		t_nbd_uri="nbd://127.0.0.1:$tns_port/"
	fi
	setsid nbdkit -f "$@" </dev/null >>"$T_TMP/nbdkit-$tns_name.log" 2>&1 &
	eval "$tns_var=$!"
	t_at_exit "t_nbdkit_stop $tns_name"
	for _ in $(seq 200); do
		if [ "$tns_how" = unix ] && [ -S "$tns_sock" ]; then
			chmod 666 "$tns_sock"
			nbdinfo --can connect "$t_nbd_uri" 2>/dev/null && return 0
		elif [ "$tns_how" = tcp ]; then
			nbdinfo --can connect "$t_nbd_uri" 2>/dev/null && return 0
		fi
		eval "[ -d /proc/\$$tns_var ]" || break
		sleep 0.05
	done
	echo "# nbdkit $tns_name did not start; its log:"
	sed 's/^/#   /' "$T_TMP/nbdkit-$tns_name.log" | tail -5
	return 1
}

# t_nbdkit_stop NAME [SIGNAL]: stops that nbdkit (default SIGTERM; KILL for
# a server that dies) and waits until it is gone.
t_nbdkit_stop() {
	eval "tnp=\${t_nbdkit_pid_$(echo "$1" | tr -c 'a-zA-Z0-9\n' _):-}"
	[ -n "$tnp" ] || return 0
	kill "-${2:-TERM}" "$tnp" 2>/dev/null
	for _ in $(seq 100); do
		[ -d "/proc/$tnp" ] || return 0
		awk '/^State:/ { exit $2 != "Z" }' "/proc/$tnp/status" 2>/dev/null && return 0
		sleep 0.05
	done
	kill -9 "$tnp" 2>/dev/null
}
