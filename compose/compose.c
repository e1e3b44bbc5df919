/* compose.c - read a compose file: one service per line, in start order:
 *
 *   service NAME POLICY PROGRAM [ARG...]
 *   mount NAME POLICY PROGRAM [ARG...]
 *
 * POLICY is alone, group or never (a mount service, a FUSE front end that
 * runs only while the instance is mounted: alone or never; internal.h).
 * ${KEY} in any word expands to the value given with --set KEY=VALUE, or
 * to the supervisor's own ${INSTANCE}, ${RUNDIR}, ${MOUNT} (the mount
 * point, "" when unmounted) and ${MOUNT_OPTS} ("-oLIST" for the mount's
 * -o LIST, else ""); a mount service's words are expanded at each of its
 * starts. An unknown key is an error, but for the optional keys
 * (sv_optional_keys), which take their default unless set: empty for
 * SERVICE_USER, CLIENTS and SESSIONS_PER_UID (the services then use their
 * own defaults), the journal's data mode and commit interval for DATA
 * (ordered) and COMMIT_MS (5000). A word that expands to nothing is
 * dropped. '#' starts a comment.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "log.h"

const char *sv_policy_name(enum sv_policy p)
{
	return p == SV_RESTART_ALONE ? "alone" : p == SV_RESTART_GROUP ? "group" : "never";
}

/* Keys that expand to their default unless --set gives them a value. */
static const struct {
	const char *key, *def;
} sv_optional_keys[] = {
	{"SERVICE_USER", ""}, {"CLIENTS", ""}, {"SESSIONS_PER_UID", ""},
	{"DATA", "ordered"}, {"COMMIT_MS", "5000"},
};

static const char *sv_lookup(sv_super *sv, const char *key, size_t keylen)
{
	if (keylen == 8 && strncmp(key, "INSTANCE", 8) == 0)
		return sv->cfg.instance;
	if (keylen == 5 && strncmp(key, "MOUNT", 5) == 0)
		return sv->mount;
	if (keylen == 10 && strncmp(key, "MOUNT_OPTS", 10) == 0)
		return sv->mount_optarg;
	if (keylen == 6 && strncmp(key, "RUNDIR", 6) == 0)
		return sv->cfg.rundir;
	for (int i = 0; i < sv->cfg.nsets; i++) {
		const char *s = sv->cfg.sets[i];
		if (strncmp(s, key, keylen) == 0 && s[keylen] == '=')
			return s + keylen + 1;
	}
	for (size_t i = 0; i < sizeof(sv_optional_keys) / sizeof(sv_optional_keys[0]); i++)
		if (strlen(sv_optional_keys[i].key) == keylen &&
		    strncmp(key, sv_optional_keys[i].key, keylen) == 0)
			return sv_optional_keys[i].def;
	return NULL;
}

/* Expands ${KEY} in word; NULL on an unknown key or a result too long. */
static char *sv_expand(sv_super *sv, const char *word, int lineno)
{
	char out[1024];
	size_t n = 0;

	for (const char *p = word; *p;) {
		const char *val, *end;
		if (p[0] != '$' || p[1] != '{') {
			if (n + 1 >= sizeof(out))
				return NULL;
			out[n++] = *p++;
			continue;
		}
		end = strchr(p, '}');
		val = end ? sv_lookup(sv, p + 2, (size_t)(end - p - 2)) : NULL;
		if (!val) {
			cm_err("%s:%d: unknown variable in '%s' (give it with --set)",
			       sv->cfg.compose, lineno, word);
			return NULL;
		}
		if (n + strlen(val) >= sizeof(out))
			return NULL;
		memcpy(out + n, val, strlen(val));
		n += strlen(val);
		p = end + 1;
	}
	out[n] = '\0';
	return strdup(out);
}

int sv_expand_argv(sv_super *sv, sv_service *s, char **words)
{
	int argc = 0;

	for (int i = 0; words[i]; i++) {
		char *arg = sv_expand(sv, words[i], s->lineno);
		if (!arg) {
			sv_argv_free(s);
			return -EINVAL;
		}
		if (!*arg)
			free(arg);
		else
			s->argv[argc++] = arg;
	}
	s->argv[argc] = NULL;
	if (argc == 0)
		return cm_log_errno(-EINVAL, "%s:%d: no program", sv->cfg.compose, s->lineno);
	return 0;
}

void sv_argv_free(sv_service *s)
{
	for (int i = 0; s->argv[i]; i++) {
		free(s->argv[i]);
		s->argv[i] = NULL;
	}
}

static int sv_parse_line(sv_super *sv, char *line, int lineno)
{
	char *save = NULL, *word, *name, *policy, *words[SV_MAX_ARGS + 1];
	sv_service *s;
	int n = 0, r;

	word = strtok_r(line, " \t\n", &save);
	if (!word || word[0] == '#')
		return 0;
	name = strtok_r(NULL, " \t\n", &save);
	policy = strtok_r(NULL, " \t\n", &save);
	if ((strcmp(word, "service") != 0 && strcmp(word, "mount") != 0) || !name || !policy)
		return cm_log_errno(-EINVAL, "%s:%d: want 'service|mount NAME POLICY PROGRAM [ARG...]'",
				    sv->cfg.compose, lineno);
	if (sv->nsvcs == CM_MAX_SVCS || strlen(name) >= CM_SVC_NAME_MAX)
		return cm_log_errno(-EINVAL, "%s:%d: too many services or name too long",
				    sv->cfg.compose, lineno);
	s = &sv->svcs[sv->nsvcs];
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->mount_svc = word[0] == 'm';
	s->lineno = lineno;
	if (strcmp(policy, "alone") == 0)
		s->policy = SV_RESTART_ALONE;
	else if (strcmp(policy, "group") == 0 && !s->mount_svc)
		s->policy = SV_RESTART_GROUP;
	else if (strcmp(policy, "never") == 0)
		s->policy = SV_RESTART_NEVER;
	else
		return cm_log_errno(-EINVAL, "%s:%d: policy '%s' is not alone, group or never "
				    "(a mount service: alone or never)", sv->cfg.compose, lineno,
				    policy);
	while ((word = strtok_r(NULL, " \t\n", &save)) && word[0] != '#') {
		if (n == SV_MAX_ARGS)
			return cm_log_errno(-E2BIG, "%s:%d: too many arguments", sv->cfg.compose,
					    lineno);
		words[n++] = word;
	}
	words[n] = NULL;
	/* A mount service's words are expanded again at each start, with the
	 * mount point of the moment; this checks them. */
	r = sv_expand_argv(sv, s, words);
	if (r < 0)
		return r;
	if (s->mount_svc) {
		sv_argv_free(s);
		for (int i = 0; i < n; i++)
			if (!(s->words[i] = strdup(words[i])))
				return -ENOMEM;
	}
	s->last_status = -1;
	sv->nsvcs++;
	return 0;
}

int sv_compose_load(sv_super *sv)
{
	char line[2048];
	int lineno = 0, r = 0;
	FILE *f = fopen(sv->cfg.compose, "re");

	if (!f)
		return cm_log_errno(-errno, "compose file %s: %m", sv->cfg.compose);
	while (r == 0 && fgets(line, sizeof(line), f))
		r = sv_parse_line(sv, line, ++lineno);
	fclose(f);
	if (r == 0 && sv->nsvcs == 0)
		r = cm_log_errno(-EINVAL, "%s names no service", sv->cfg.compose);
	return r;
}
