/* status_device.c - the status reply's device section, from the record
 * blockdev-svc keeps in the arena (devstat.h); read without locks, like
 * the rest of status. Latency percentiles are the upper bounds of the
 * power-of-two buckets they fall in. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "layout.h"
#include "supervisor.pb-c.h"

static const char *const sv_transport_names[] = {
	[CM_TRANSPORT_FILE] = "file", [CM_TRANSPORT_BLOCK] = "block",
	[CM_TRANSPORT_NBD_TCP] = "nbd-tcp", [CM_TRANSPORT_NBD_UNIX] = "nbd-unix",
};

static const char *const sv_link_names[] = {
	[CM_LINK_UP] = "up", [CM_LINK_RECONNECTING] = "reconnecting",
	[CM_LINK_FAILED] = "failed",
};

/* The upper bound in microseconds of the bucket holding the given
 * fraction (per mille) of the requests counted. */
static uint64_t sv_percentile_us(const uint64_t *lat, uint64_t total, unsigned per_mille)
{
	uint64_t want = (total * per_mille + 999) / 1000, seen = 0;

	for (unsigned i = 0; i < CM_DEV_LAT_BUCKETS; i++) {
		seen += lat[i];
		if (seen >= want)
			return 2ull << i;
	}
	return 2ull << (CM_DEV_LAT_BUCKETS - 1);
}

void sv_status_device_free(Ext3d__DeviceStatus *ds)
{
	if (!ds)
		return;
	free(ds->where);
	free(ds->last_error);
	free(ds);
}

void sv_status_device(const cm_layout *l, Ext3d__StatusReply *st)
{
	const cm_device *d = &l->device;
	uint32_t transport = atomic_load(&d->transport), link = atomic_load(&d->link);
	uint64_t lat[CM_DEV_LAT_BUCKETS], total = 0;
	Ext3d__DeviceStatus *ds;

	if (transport == CM_TRANSPORT_NONE || transport > CM_TRANSPORT_NBD_UNIX ||
	    link > CM_LINK_FAILED)
		return;
	ds = calloc(1, sizeof(*ds));
	if (!ds)
		return;
	ext3d__device_status__init(ds);
	ds->where = strndup(d->where, CM_DEV_TEXT_MAX - 1);
	ds->last_error = strndup(d->last_error, CM_DEV_TEXT_MAX - 1);
	if (!ds->where || !ds->last_error) {
		sv_status_device_free(ds);
		return;
	}
	ds->transport = (char *)sv_transport_names[transport];
	ds->link = (char *)sv_link_names[link];
	ds->read_only = atomic_load(&d->read_only) != 0;
	ds->requests = atomic_load(&d->requests);
	ds->errors = atomic_load(&d->errors);
	ds->reconnects = atomic_load(&d->reconnects);
	ds->replayed = atomic_load(&d->replayed);
	ds->in_flight = atomic_load(&d->in_flight);
	ds->max_in_flight = atomic_load(&d->max_in_flight);
	for (unsigned i = 0; i < CM_DEV_LAT_BUCKETS; i++)
		total += lat[i] = atomic_load(&d->lat[i]);
	if (total) {
		ds->p50_us = sv_percentile_us(lat, total, 500);
		ds->p99_us = sv_percentile_us(lat, total, 990);
	}
	st->device = ds;
}
