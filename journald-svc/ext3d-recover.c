/*
 * ext3d-recover - replay the journal of an ext3 image file with the same
 * library journald-svc uses (common/jbd), and say what it did.
 *
 *   ext3d-recover [-n] IMAGE    -n: scan only, write nothing
 *
 * On a terminal (or with EXT3D_PROGRESS=1) a line on stderr shows the
 * passes' progress, as e2fsck -C 0 does: "recovering: replay 12/40 blocks".
 *
 * Exit status: 0 done (or nothing to do), 1 the journal or filesystem is
 * refused (the reason on stderr), 2 usage or I/O error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "progress.h"
#include "imglock.h"
#include "recovery.h"

static void rec_progress(void *ctx, enum jd_pass pass, uint64_t done, uint64_t total)
{
	cm_progress_report("recovering", "blocks", jd_pass_name(pass), done, total);
}

static void report(const char *img, const jd_recovery *info, int dry)
{
	if (!info->has_journal) {
		printf("%s: no journal\n", img);
		return;
	}
	printf("%s: needs_recovery %s, log start %u, sequence %u\n", img,
	       info->recover_flag ? "set" : "clear", info->log_start,
	       info->first_tid);
	if (!info->needed) {
		printf("clean: nothing to recover\n");
		return;
	}
	printf("transactions %u (tids %u..%u), log blocks %llu\n",
	       info->transactions, info->first_tid, info->end_tid - 1,
	       (unsigned long long)info->log_blocks);
	printf("end of log: %s\n", info->end_reason);
	if (dry) {
		printf("dry run: nothing written\n");
		return;
	}
	printf("blocks written %llu, revoke records %llu, revoked blocks skipped %llu\n",
	       (unsigned long long)info->blocks_written,
	       (unsigned long long)info->revoke_records,
	       (unsigned long long)info->revoked_skips);
	printf("journal sequence now %u, start 0; needs_recovery cleared\n",
	       info->new_sequence);
}

int main(int argc, char **argv)
{
	jd_progress progress = {.fn = rec_progress};
	jd_recovery info;
	char why[256] = "";
	jd_dev dev;
	int fd, r, dry = 0, opt;

	while ((opt = getopt(argc, argv, "n")) != -1) {
		if (opt != 'n')
			goto usage;
		dry = 1;
	}
	if (optind != argc - 1)
		goto usage;
	fd = cm_image_open(argv[optind], dry ? O_RDONLY : O_RDWR, 0, why, sizeof(why));
	if (fd < 0) {
		fprintf(stderr, "ext3d-recover: %s\n", why);
		return 2;
	}
	why[0] = '\0';
	r = jd_dev_file(fd, &dev);
	if (r == 0)
		r = jd_recover(&dev, dry ? JD_RECOVER_DRY_RUN : 0, &progress, &info, why,
			       sizeof(why));
	close(fd);
	cm_progress_end();
	if (r < 0) {
		fprintf(stderr, "ext3d-recover: %s: %s%s%s\n", argv[optind],
			why[0] ? why : "", why[0] ? ": " : "", strerror(-r));
		return r == -EUCLEAN ? 1 : 2;
	}
	report(argv[optind], &info, dry);
	return 0;
usage:
	fprintf(stderr, "usage: ext3d-recover [-n] IMAGE\n");
	return 2;
}
