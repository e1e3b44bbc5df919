/* test-errseq.c - the instance's write-error sequence (errseq.h): an
 * acknowledged change is lost only when its transaction is newer than the
 * durable one, in the wrapping order of tids (tid 0 included); marks only
 * move forward; a sync reports an advance once, to every sync that noted
 * the old value before it was reported, and to none after. */
#include <errno.h>

#include "errseq.h"
#include "tap.h"

static void t_lost(void)
{
	cm_errseq e;
	uint32_t tid = 0;

	cm_errseq_init(&e, 0, 0);
	t_ok(!cm_errseq_lost(&e, &tid), "a fresh record: nothing lost");
	cm_errseq_durable(&e, 7);
	t_ok(!cm_errseq_lost(&e, &tid), "durable, nothing acknowledged: nothing lost");
	cm_errseq_ack(&e, 8);
	t_ok(cm_errseq_lost(&e, &tid) && tid == 8, "acknowledged in 8, durable up to 7: 8 lost");
	cm_errseq_durable(&e, 8);
	t_ok(!cm_errseq_lost(&e, &tid), "8 durable: nothing lost");
	cm_errseq_ack(&e, 5);
	t_ok(!cm_errseq_lost(&e, &tid), "an older tid does not move acked back");
	cm_errseq_durable(&e, 3);
	cm_errseq_ack(&e, 9);
	t_ok(cm_errseq_lost(&e, &tid) && tid == 9, "nor durable: 9 is lost against 8");

	cm_errseq_init(&e, 0, 0);
	cm_errseq_ack(&e, 0);
	t_ok(cm_errseq_lost(&e, &tid) && tid == 0, "tid 0 acknowledged, nothing durable: lost");
	cm_errseq_durable(&e, 0);
	t_ok(!cm_errseq_lost(&e, &tid), "tid 0 durable: nothing lost");

	cm_errseq_init(&e, 0, 0);
	cm_errseq_durable(&e, 0xfffffffeu);
	cm_errseq_ack(&e, 1);
	t_ok(cm_errseq_lost(&e, &tid) && tid == 1, "across the wrap: 1 is newer than 0xfffffffe");
	cm_errseq_durable(&e, 2);
	t_ok(!cm_errseq_lost(&e, &tid), "and 2 covers it");
}

static void t_report(void)
{
	cm_errseq e;
	uint32_t a, b, c;

	cm_errseq_init(&e, 4, 4);
	a = cm_errseq_since(&e);
	t_is_int(cm_errseq_check(&e, a), 0, "no advance since the last report: 0");

	/* The supervisor carried seen 4 and moved seq to 5. */
	cm_errseq_init(&e, 5, 4);
	a = cm_errseq_since(&e);
	b = cm_errseq_since(&e);
	t_is_int(cm_errseq_check(&e, a), -EIO, "an advance: the first sync to finish gets EIO");
	t_is_int(cm_errseq_check(&e, b), -EIO, "and one that started before it was reported");
	c = cm_errseq_since(&e);
	t_is_int(cm_errseq_check(&e, c), 0, "a sync that starts after the report: 0");
	t_is_int(atomic_load(&e.seen), 5, "seen is seq now");
}

int main(void)
{
	t_lost();
	t_report();
	return t_done();
}
