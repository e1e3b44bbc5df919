/* outside.c - a program outside the ext3d tree, built by install.t with
 * only the installed header and library (pkg-config ext3d): attaches to
 * the instance argv[1], writes argv[3] to the file argv[2], fsyncs it,
 * reads it back and prints it. Exit status 0 when all went well. */
#include <ext3d.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	char back[256] = "";
	ext3d_file *f;
	ext3d *fs;
	size_t len;
	int r;

	if (argc != 4 || (len = strlen(argv[3])) >= sizeof(back))
		return 2;
	r = ext3d_attach(argv[1], &fs);
	if (r < 0) {
		fprintf(stderr, "attach: %s\n", strerror(-r));
		return 1;
	}
	r = ext3d_create(fs, argv[2], O_RDWR | O_TRUNC, 0644, &f);
	if (r == 0 && ext3d_pwrite(f, argv[3], len, 0) != (ssize_t)len)
		r = -1;
	if (r == 0)
		r = ext3d_fsync(f);
	if (r == 0 && ext3d_pread(f, back, sizeof(back) - 1, 0) != (ssize_t)len)
		r = -1;
	if (r == 0)
		r = ext3d_close(f);
	ext3d_detach(fs);
	if (r < 0) {
		fprintf(stderr, "write, fsync or read back failed: %d\n", r);
		return 1;
	}
	printf("%s\n", back);
	return 0;
}
