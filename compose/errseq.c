/* errseq.c - the supervisor's part in the instance's write-error sequence
 * (errseq.h). The arena dies with each group, the supervisor does not: it
 * keeps seq and seen across group restarts, seeds each new arena with
 * them, and moves seq on when the dead arena holds a change acknowledged
 * to a client that is not on disk. Main thread only, once the group is
 * dead (no process writes the record any more). */
#include "internal.h"
#include "log.h"

void sv_errseq_carry(sv_super *sv)
{
	cm_layout *l = sv->arena ? cm_layout_get(sv->arena) : NULL;
	uint32_t tid;

	if (!l)
		return;
	sv->errseq_seen = atomic_load(&l->errseq.seen);
	if (cm_errseq_lost(&l->errseq, &tid)) {
		sv->errseq = l->errseq.seq + 1;
		cm_warn("the restart discards changes acknowledged to clients (transaction %u "
			"is not on disk): the next sync returns EIO (error sequence %u)",
			tid, sv->errseq);
	}
}

void sv_errseq_seed(sv_super *sv, cm_layout *l)
{
	cm_errseq_init(&l->errseq, sv->errseq, sv->errseq_seen);
}
