/*-------------------------------------------------------------------------
 *
 * config.h
 *	  The settings that say which ids this server issues: the layout and
 *	  its epoch, the worker id, the shards; and the list of node values
 *	  built from them.
 *
 * A "node value" is what an id's node field holds.  This server issues for
 * a few of them: its worker id (configured, or from a lease) and the
 * shards of "snowflake.shards".  doc/design.md ("Words") says why the SQL side
 * says worker_id for one and node for the other.
 *
 * Locking: none.  Everything here is set in the postmaster while the
 * library is preloaded, before shared memory exists, and read-only after;
 * the SIGHUP settings of other rooms live in those rooms.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_CONFIG_H
#define SNOWFLAKE_CONFIG_H

#include "compat.h"
#include "layout.h"

/* Shards a server may issue for: enough for 13 bits of Instagram shards. */
#define CONFIG_MAX_SHARDS	65536

/* "snowflake.worker_id" and "snowflake.shards" */
extern int	snowflake_worker_id;
extern char *snowflake_shards;

/*
 * The layout in force ("snowflake.layout", with the epoch of
 * "snowflake.epoch" unless the layout names its own), and the node values
 * this server issues ids for: snowflake_nnodes of them, its shards
 * ascending, then the worker id at snowflake_worker_index, the last (-1
 * with a lease: its value comes from the lease).
 */
extern SnowflakeLayout snowflake_layout;
extern int *snowflake_nodes;
extern int	snowflake_nnodes;
extern int	snowflake_worker_index;

/* Does the worker id come from a lease? */
#define ConfigLeasedWorkerId() (snowflake_nodes != NULL && \
								snowflake_nodes[snowflake_worker_index] < 0)

/*
 * A library loaded after start-up cannot define PGC_POSTMASTER variables.
 * Then there is no generator either, only the decoders, which need the
 * epoch and layout of postgresql.conf: read them as SIGHUP settings.
 */
#define CONFIG_STARTUP_CONTEXT \
	(process_shared_preload_libraries_in_progress ? PGC_POSTMASTER : PGC_SIGHUP)

/*
 * Define the settings; when preloading, check what was configured once the
 * configuration is final (refusing to start on a wrong value) and build the
 * node list.
 */
extern void ConfigInit(void);

/* Was "snowflake.worker_id" set in the configuration? */
extern bool ConfigWorkerIdConfigured(void);

/* The worker id comes from a lease: rebuild the node list for it. */
extern void ConfigUseLeasedWorkerId(void);

/*
 * Parse a list of numbers and ranges, such as "0-99, 200, 300-310",
 * ascending and disjoint, none above max (noun names a value, for the
 * message).  Fills lows and highs (unless NULL); returns the count of
 * ranges and sets *nvalues, or returns -1 with a sentence in *problem.
 */
extern int	ConfigParseRanges(const char *text, int64 max, const char *noun, int *lows,
							  int *highs, int64 *nvalues, char **problem);

/* Refuse to start: a configured value is wrong. */
SNOWFLAKE_NORETURN_BEFORE extern void ConfigRefuse(const char *name, const char *value,
												   const char *problem) SNOWFLAKE_NORETURN_AFTER;

/* The value the configuration gives a setting before it is defined, or NULL. */
extern char *ConfigConfiguredValue(const char *name);

#endif							/* SNOWFLAKE_CONFIG_H */
