#!/bin/sh
# nbdsuites.t - suites written for image files run unchanged on NBD
# exports (EXT3D_TEST_NBD, tests/lib/nbdkit.sh: nbdkit's file plugin
# serves each image the suite starts an instance on): the read path on a
# unix socket, the write path and the random kills on TCP loopback, the
# power cuts (blockdev-svc's write log records what went over the wire)
# on a unix socket. Each in its short form; EXT3D_LONG=1: the long ones.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/nbdkit.sh"

t_need_nbdkit
here=$(dirname "$0")
for run in readpath:unix writeops:tcp wkill:tcp powercut:unix; do
	t=${run%:*} how=${run#*:}
	EXT3D_TEST_NBD=$how EXT3D_BIGDIR=${EXT3D_BIGDIR:-3000} "$here/$t.t" >"$T_TMP/$t.out" 2>&1
	rc=$?
	t_ok $rc "$t.t on an nbdkit export over $how: exit $rc, $(grep -c '^ok' "$T_TMP/$t.out") passed"
	[ $rc -eq 0 ] || grep -E '^not ok|^#' "$T_TMP/$t.out" | head -40
done
t_done
