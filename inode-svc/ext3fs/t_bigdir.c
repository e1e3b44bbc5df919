/*
 * t_bigdir.c - test-ext3fs checks of the 20,000-entry directory that
 * e2fsck -fyD indexed: every name resolves through the htree (and through
 * ino_dir_lookup) to the inode debugfs lists for it, missing names give
 * ENOENT without a fallback, readdir cookies resume exactly; and the six
 * hashes against debugfs dx_hash.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t_ext3fs.h"
#include "t_tree.h"
#include "tap.h"

struct ora {
	char name[256];
	uint32_t ino;
};

/* Parses debugfs "ls -p" lines: /ino/mode/uid/gid/name/size/ */
static size_t parse_ls(char *out, struct ora *v, size_t max)
{
	char *line, *save = NULL, *p, *end;
	size_t n = 0;
	int i;

	for (line = strtok_r(out, "\n", &save); line && n < max;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] != '/')
			continue;
		v[n].ino = strtoul(line + 1, NULL, 10);
		for (p = line, i = 0; p && i < 4; i++)
			p = strchr(p + 1, '/');
		end = strrchr(line, '/');
		if (!p || !end || end == line)
			continue;
		for (end--; end > p && *end != '/'; end--)
			;
		if (end <= p || (size_t)(end - p - 1) >= sizeof(v[n].name))
			continue;
		memcpy(v[n].name, p + 1, end - p - 1);
		v[n].name[end - p - 1] = '\0';
		if (v[n].ino && strcmp(v[n].name, ".") &&
		    strcmp(v[n].name, ".."))
			n++;
	}
	return n;
}

static void check_lookups(t_ctx *c, const ino_inode *dir,
			  const struct ora *v, size_t n)
{
	size_t i, bad_dx = 0, bad = 0, missing = 0;
	char err[4096], name[64];
	uint32_t ino;
	int lines;

	t_stderr_begin();
	for (i = 0; i < n; i++) {
		if (ino_dx_lookup(c->fs, dir, v[i].name, strlen(v[i].name),
				  &ino) < 0 || ino != v[i].ino)
			bad_dx++;
		if (ino_dir_lookup(c->fs, dir, v[i].name, strlen(v[i].name),
				   &ino) < 0 || ino != v[i].ino)
			bad++;
	}
	for (i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "nope-%zu", i);
		missing += ino_dx_lookup(c->fs, dir, name, strlen(name),
					 &ino) == -ENOENT &&
			   ino_dir_lookup(c->fs, dir, name, strlen(name),
					  &ino) == -ENOENT;
	}
	lines = t_stderr_end(err, sizeof(err));
	t_is_int(bad_dx, 0, "%u KiB: %zu names found through the htree",
		 c->cfg->bs / 1024, n);
	t_is_int(bad, 0, "%u KiB: ino_dir_lookup agrees with debugfs",
		 c->cfg->bs / 1024);
	t_is_int(missing, 200, "missing names: ENOENT through the index");
	if (!t_is_int(lines, 0, "no warnings while looking up"))
		t_diag("%s", err);
}

struct walk {
	uint32_t *inos;
	uint64_t *nexts;
	size_t n, max, stop_every, since;
};

static int record(void *ctx, uint32_t ino, uint8_t ft, const char *name,
		  size_t len, uint64_t next)
{
	struct walk *w = ctx;

	(void)ft, (void)name, (void)len;
	if (w->n == w->max)
		return -ENOSPC;
	w->inos[w->n] = ino;
	w->nexts[w->n++] = next;
	if (w->stop_every && ++w->since == w->stop_every) {
		w->since = 0;
		return 1;
	}
	return 0;
}

/* First entry delivered from `cookie`; 0 if none. */
static uint32_t first_from(t_ctx *c, const ino_inode *dir, uint64_t cookie)
{
	uint32_t ino = 0;
	uint64_t next = 0;
	struct walk w = { &ino, &next, 0, 1, 1, 0 };

	ino_dir_iterate(c->fs, dir, cookie, record, &w);
	return w.n ? ino : 0;
}

static void check_cookies(t_ctx *c, const ino_inode *dir)
{
	size_t max = T_BIG_ENTRIES + 16, i, k, bad = 0;
	struct walk a = { calloc(max, 4), calloc(max, 8), 0, max, 0, 0 };
	struct walk b = { calloc(max, 4), calloc(max, 8), 0, max, 37, 0 };
	uint64_t cookie = 0;
	int r;

	r = ino_dir_iterate(c->fs, dir, 0, record, &a);
	t_ok(r == 0 && a.n == T_BIG_ENTRIES + 2, "one walk: %zu entries", a.n);
	for (i = 0; i < max && (r = ino_dir_iterate(c->fs, dir, cookie,
						    record, &b)) == 1; i++)
		cookie = b.nexts[b.n - 1];
	t_ok(r == 0 && b.n == a.n && !memcmp(a.inos, b.inos, a.n * 4) &&
	     !memcmp(a.nexts, b.nexts, a.n * 8),
	     "walk stopped every 37 entries and resumed: same sequence");
	for (k = 1; a.n > 2 && k + 1 < a.n; k += a.n / 50 + 1) {
		bad += first_from(c, dir, a.nexts[k]) != a.inos[k + 1];
		bad += first_from(c, dir, a.nexts[k] - 1) != a.inos[k + 1];
	}
	t_is_int(bad, 0, "cookies inside an entry resume at the next one");
	t_ok(a.n && first_from(c, dir, a.nexts[a.n - 1]) == 0 &&
	     first_from(c, dir, 1ull << 40) == 0, "cookies at or past the end");
	free(a.inos), free(a.nexts), free(b.inos), free(b.nexts);
}

void t_check_bigdir(t_ctx *c)
{
	struct ora *v = calloc(T_BIG_ENTRIES + 16, sizeof(*v));
	char *out = t_sh_out("debugfs -R 'ls -p /%s' '%s' 2>/dev/null",
			     T_BIG_DIR, c->img_path);
	ino_inode dir;
	size_t n;

	n = out ? parse_ls(out, v, T_BIG_ENTRIES + 16) : 0;
	t_is_int(n, T_BIG_ENTRIES, "debugfs lists the big directory");
	if (!t_ok(ino_inode_read(c->fs, t_path(c, T_BIG_DIR), &dir) == 0 &&
		  (dir.flags & EXT3_INDEX_FL), "big directory is indexed"))
		goto out;
	check_lookups(c, &dir, v, n);
	check_cookies(c, &dir);
out:
	free(out);
	free(v);
}

static const char *const hash_names[] = {
	"a", "hello", "file-00001", "abcdefghijklmnopq",
	"0123456789abcdef0123456789abcdefg",
	"\xc3\xbcn\xc3\xaf-00050-\xc3\x9f\xc3\xb8", "\xff\xfe\x80\x81",
	("long-00997-0000000000000000000000000000000000000000000000000000000"
	 "0000000000000000000000000000000000000000000997"),
};

void t_check_dirhash(t_ctx *c)
{
	size_t nn = sizeof(hash_names) / sizeof(hash_names[0]), i, bad = 0;
	char path[600], *dump, *out, *p, seed[64] = "";
	unsigned v, want, wminor;
	uint32_t h, minor;
	FILE *f;

	dump = t_sh_out("dumpe2fs -h '%s' 2>/dev/null", c->img_path);
	p = dump ? strstr(dump, "Directory Hash Seed:") : NULL;
	if (p)
		sscanf(p + 20, " %63s", seed);
	free(dump);
	snprintf(path, sizeof(path), "%s.hash", c->img_path);
	f = fopen(path, "w");
	for (v = 0; f && v < 6; v++)
		for (i = 0; i < nn; i++)
			fprintf(f, "dx_hash -h %u -s %s %s\n", v, seed,
				hash_names[i]);
	if (f)
		fclose(f);
	out = t_sh_out("debugfs -f '%s' '%s' 2>/dev/null", path, c->img_path);
	p = out;
	for (v = 0; v < 6; v++) {
		for (i = 0; i < nn; i++) {
			p = p ? strstr(p, "Hash of ") : NULL;
			p = p ? strstr(p, " is 0x") : NULL;
			if (!p || sscanf(p, " is 0x%x (minor 0x%x)", &want,
					 &wminor) != 2 ||
			    ino_dirhash(c->fs, v, hash_names[i],
					strlen(hash_names[i]), &h, &minor) ||
			    h != want || (v % 3 && minor != wminor)) {
				bad++;
				t_diag("hash %u of name %zu: 0x%x/0x%x, debugfs 0x%x/0x%x",
				       v, i, h, minor, want, wminor);
			}
			if (p)
				p++;
		}
	}
	t_is_int(bad, 0, "6 hash versions x %zu names match debugfs dx_hash (seed %s)",
		 nn, seed);
	free(out);
}
