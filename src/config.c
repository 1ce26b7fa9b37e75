/*-------------------------------------------------------------------------
 *
 * config.c
 *	  The settings that say which ids this server issues (config.h): the
 *	  layout, the epoch, the worker id and the shards, their checks, and
 *	  the node list built from them.
 *
 * The check hooks check syntax and static bounds only: they run for the
 * built-in defaults before postgresql.conf is read, in every backend where
 * backends are started by exec, and in any order.  What depends on two
 * settings is checked once the configuration is final (config_check_final).
 * check_layout hands the parsed layout to assign_layout through extra.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "config.h"

int			snowflake_worker_id = 0;
char	   *snowflake_shards = NULL;
static char *snowflake_epoch = NULL;
static char *snowflake_layout_text = NULL;

/* The epoch of "snowflake.epoch", for layouts that name none */
static int64 snowflake_epoch_ms = SNOWFLAKE_DEFAULT_EPOCH_MS;

/* Until "snowflake.layout" is assigned: the snowflake preset */
SnowflakeLayout snowflake_layout = {
	.name = "snowflake",
	.time_bits = 41,
	.node_bits = 10,
	.sequence_bits = 12,
	.sequence_last = true,
	.tick_ms = 1,
	.epoch_ms = SNOWFLAKE_DEFAULT_EPOCH_MS,
	.nparts = 1,
	.part_names = {"worker"},
	.part_bits = {10},
};

int		   *snowflake_nodes = NULL;
int			snowflake_nnodes = 0;
int			snowflake_worker_index = 0;

/* "snowflake.worker_id" was set in the configuration */
static bool worker_id_configured = false;

/*
 * Once start-up is over the layout can no longer change: from then on (an
 * ALTER SYSTEM, say) worker ids and shards are checked against it too.
 */
static bool config_final = false;

/*
 * Hand a check hook's result to its assign hook, in memory the GUC
 * machinery can free (compat.h).
 */
static bool
config_set_extra(void **extra, const void *value, size_t size)
{
	*extra = SnowflakeGucMalloc(size);
	if (*extra == NULL)
	{
		GUC_check_errcode(ERRCODE_OUT_OF_MEMORY);
		return false;
	}
	memcpy(*extra, value, size);
	return true;
}

static bool
check_epoch(char **newval, void **extra, GucSource source)
{
	int64		epoch_ms;
	const char *problem;

	if (!SnowflakeParseEpoch(*newval, &epoch_ms, &problem))
	{
		GUC_check_errdetail("%s", problem);
		return false;
	}
	return config_set_extra(extra, &epoch_ms, sizeof(int64));
}

/* A layout that names no epoch takes "snowflake.epoch", whenever assigned. */
static void
assign_epoch(const char *newval, void *extra)
{
	snowflake_epoch_ms = *(int64 *) extra;
	if (!snowflake_layout.own_epoch)
		snowflake_layout.epoch_ms = snowflake_epoch_ms;
}

/*
 * Parsed under the default epoch: under another one its lifetime may not
 * fit PostgreSQL's timestamps, which is checked once both are final.
 */
static bool
check_layout(char **newval, void **extra, GucSource source)
{
	SnowflakeLayout candidate;
	char	   *problem;

	if (!SnowflakeParseLayout(*newval, SNOWFLAKE_DEFAULT_EPOCH_MS, &candidate, &problem))
	{
		GUC_check_errdetail("%s", problem);
		return false;
	}
	return config_set_extra(extra, &candidate, sizeof(SnowflakeLayout));
}

static void
assign_layout(const char *newval, void *extra)
{
	snowflake_layout = *(const SnowflakeLayout *) extra;
	if (!snowflake_layout.own_epoch)
		snowflake_layout.epoch_ms = snowflake_epoch_ms;
}

int
ConfigParseRanges(const char *text, int64 max, const char *noun, int *lows,
				  int *highs, int64 *nvalues, char **problem)
{
	const char *p = text;
	int			count = 0;
	int64		previous = -1;

	*nvalues = 0;
	while (*p)
	{
		char	   *end;
		int64		low;
		int64		high;

		while (*p == ' ' || *p == ',')
			p++;
		if (*p == '\0')
			break;
		if (*p < '0' || *p > '9' || strspn(p, "0123456789") > 10)
			goto malformed;
		if (p[0] == '0' && p[1] >= '0' && p[1] <= '9')
			goto leading_zero;
		low = high = strtoi64(p, &end, 10);
		p = end;
		if (*p == '-')
		{
			p++;
			if (*p < '0' || *p > '9' || strspn(p, "0123456789") > 10)
				goto malformed;
			if (p[0] == '0' && p[1] >= '0' && p[1] <= '9')
				goto leading_zero;
			high = strtoi64(p, &end, 10);
			p = end;
		}
		if (*p != '\0' && *p != ',' && *p != ' ')
			goto malformed;
		if (low > high || high > max)
		{
			*problem = psprintf("The range %lld-%lld is empty or beyond the largest %s of layout \"%s\", %lld.",
								(long long) low, (long long) high, noun,
								snowflake_layout.name, (long long) max);
			return -1;
		}
		if (low <= previous)
		{
			*problem = psprintf("%lld is listed twice or out of order: list numbers in ascending order.",
								(long long) low);
			return -1;
		}
		if (lows)
		{
			lows[count] = (int) low;
			highs[count] = (int) high;
		}
		count++;
		*nvalues += high - low + 1;
		previous = high;
	}
	return count;

malformed:
	*problem = psprintf("Write numbers and ranges, such as \"0-99, 200, 300-310\".");
	return -1;

leading_zero:
	*problem = psprintf("Write numbers in plain decimal, without leading zeros: \"%.*s\" could be read as octal.",
						(int) strspn(p, "0123456789"), p);
	return -1;
}

/*
 * Parse a list of shards into ascending values (of room for the count, or
 * NULL to count only).  Returns the count, or -1 with a sentence in problem.
 */
static int
config_parse_shards(const char *text, int *values, int64 max_node, char **problem)
{
	int64		nvalues;
	int			nranges = ConfigParseRanges(text, max_node, "shard", NULL, NULL,
											&nvalues, problem);
	int		   *lows;
	int		   *highs;
	int			count = 0;

	if (nranges < 0)
		return -1;
	if (nvalues > CONFIG_MAX_SHARDS)
	{
		*problem = psprintf("A server issues ids for at most %d shards.", CONFIG_MAX_SHARDS);
		return -1;
	}
	if (values == NULL)
		return (int) nvalues;
	lows = palloc(sizeof(int) * (nranges + 1));
	highs = palloc(sizeof(int) * (nranges + 1));
	(void) ConfigParseRanges(text, max_node, "shard", lows, highs, &nvalues, problem);
	for (int r = 0; r < nranges; r++)
		for (int64 v = lows[r]; v <= highs[r]; v++)
			values[count++] = (int) v;
	return count;
}

static int64
config_max_node_now(void)
{
	return config_final ? SnowflakeMaxNode(&snowflake_layout) : PG_INT32_MAX;
}

static bool
check_shards(char **newval, void **extra, GucSource source)
{
	char	   *problem;

	if (config_parse_shards(*newval, NULL, config_max_node_now(), &problem) < 0)
	{
		GUC_check_errdetail("%s", problem);
		return false;
	}
	return true;
}

static bool
check_worker_id(int *newval, void **extra, GucSource source)
{
	if (*newval > config_max_node_now())
	{
		GUC_check_errdetail("Layout \"%s\" has %d bits of worker id, for worker ids 0 to %d.",
							snowflake_layout.name, snowflake_layout.node_bits,
							SnowflakeMaxNode(&snowflake_layout));
		return false;
	}
	return true;
}

/*
 * The node values of this server: its shards ascending, then its worker id
 * (-1 with a lease).  A worker id that is also listed as a shard is the
 * worker id.
 */
static void
config_build_nodes(bool leased)
{
	char	   *problem;
	int			count;
	int			kept = 0;

	/* config_check_final accepted the list: it parses */
	count = config_parse_shards(snowflake_shards, NULL, PG_INT32_MAX, &problem);
	if (snowflake_nodes != NULL)
		pfree(snowflake_nodes);
	snowflake_nodes = MemoryContextAlloc(TopMemoryContext, sizeof(int) * (count + 1));
	(void) config_parse_shards(snowflake_shards, snowflake_nodes, PG_INT32_MAX, &problem);
	for (int i = 0; i < count; i++)
		if (leased || snowflake_nodes[i] != snowflake_worker_id)
			snowflake_nodes[kept++] = snowflake_nodes[i];
	snowflake_worker_index = kept;
	snowflake_nodes[kept] = leased ? -1 : snowflake_worker_id;
	snowflake_nnodes = kept + 1;
}

void
ConfigUseLeasedWorkerId(void)
{
	config_build_nodes(true);
}

bool
ConfigWorkerIdConfigured(void)
{
	return worker_id_configured;
}

char *
ConfigConfiguredValue(const char *name)
{
	const char *value = GetConfigOption(name, true, false);

	return value ? pstrdup(value) : NULL;
}

void
ConfigRefuse(const char *name, const char *value, const char *problem)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for parameter \"%s\": \"%s\"", name, value),
			 errdetail("%s", problem)));
	pg_unreachable();
}

/* A worker id in plain decimal digits, as the check of a configured one wants */
static bool
config_plain_worker_id(const char *value)
{
	int			worker_id;

	return strspn(value, "0123456789") == strlen(value) && strlen(value) > 0 &&
		strlen(value) <= 10 && (value[0] != '0' || value[1] == '\0') &&
		parse_int(value, &worker_id, 0, NULL);
}

/*
 * When a preloaded library defines a GUC, a configured value that fails its
 * check hook draws only a WARNING, and the default is used.  For a worker
 * id, an epoch, a layout or a list of shards that would silently mean
 * duplicate or misordered ids: validate what was configured, once the
 * configuration is final, and let the error stop the server.  Then the
 * checks that need two settings: the layout's lifetime under the epoch, and
 * the worker id and shards against the layout's node bits.
 */
static void
config_check_final(const char *epoch, const char *layout, const char *worker_id,
				   const char *shards)
{
	int32		max_node = SnowflakeMaxNode(&snowflake_layout);
	char	   *problem;
	int64		ignored;
	const char *epoch_problem;
	SnowflakeLayout ignored_layout;

	if (epoch != NULL && !SnowflakeParseEpoch(epoch, &ignored, &epoch_problem))
		ConfigRefuse("snowflake.epoch", epoch, epoch_problem);
	if (layout != NULL &&
		!SnowflakeParseLayout(layout, SNOWFLAKE_DEFAULT_EPOCH_MS, &ignored_layout, &problem))
		ConfigRefuse("snowflake.layout", layout, problem);
	if (worker_id != NULL && !config_plain_worker_id(worker_id))
		ConfigRefuse("snowflake.worker_id", worker_id,
					 psprintf("A worker id is a whole number from 0 to %d in plain decimal digits, such as 7: no sign, leading zero, fraction or hexadecimal prefix.",
							  max_node));
	if (shards != NULL && config_parse_shards(shards, NULL, PG_INT32_MAX, &problem) < 0)
		ConfigRefuse("snowflake.shards", shards, problem);

	problem = SnowflakeLayoutProblem(&snowflake_layout);
	if (problem != NULL)
		ConfigRefuse("snowflake.layout", snowflake_layout_text, problem);
	if (snowflake_worker_id > max_node)
		ConfigRefuse("snowflake.worker_id", psprintf("%d", snowflake_worker_id),
					 psprintf("Layout \"%s\" has %d bits of worker id, for worker ids 0 to %d.",
							  snowflake_layout.name, snowflake_layout.node_bits, max_node));
	if (config_parse_shards(snowflake_shards, NULL, max_node, &problem) < 0)
		ConfigRefuse("snowflake.shards", snowflake_shards, problem);
}

void
ConfigInit(void)
{
	char	   *epoch = ConfigConfiguredValue("snowflake.epoch");
	char	   *layout = ConfigConfiguredValue("snowflake.layout");
	char	   *worker_id = ConfigConfiguredValue("snowflake.worker_id");
	char	   *shards = ConfigConfiguredValue("snowflake.shards");

	DefineCustomStringVariable("snowflake.epoch",
							   "Time from which the timestamp of the ids counts, in UTC unless an offset is given.",
							   "Layouts that name their own epoch ignore it.",
							   &snowflake_epoch,
							   SNOWFLAKE_DEFAULT_EPOCH,
							   CONFIG_STARTUP_CONTEXT,
							   0,
							   check_epoch, assign_epoch, NULL);

	DefineCustomStringVariable("snowflake.layout",
							   "Bit layout of the ids: snowflake, twitter, discord, instagram, sonyflake, or a custom specification.",
							   NULL,
							   &snowflake_layout_text,
							   SNOWFLAKE_DEFAULT_LAYOUT,
							   CONFIG_STARTUP_CONTEXT,
							   0,
							   check_layout, assign_layout, NULL);

	DefineCustomIntVariable("snowflake.worker_id",
							"Worker id written into every id; each server issuing ids for the same tables needs its own.",
							NULL,
							&snowflake_worker_id,
							0,
							0,
							PG_INT32_MAX,
							CONFIG_STARTUP_CONTEXT,
							0,
							check_worker_id, NULL, NULL);

	DefineCustomStringVariable("snowflake.shards",
							   "Logical shards, besides its worker id, that this server issues ids for with snowflake_nextval(shard).",
							   "A list of numbers and ranges, such as \"0-99, 200\".",
							   &snowflake_shards,
							   "",
							   CONFIG_STARTUP_CONTEXT,
							   0,
							   check_shards, NULL, NULL);

	if (!process_shared_preload_libraries_in_progress)
		return;
	worker_id_configured = worker_id != NULL;
	config_check_final(epoch, layout, worker_id, shards);
	config_final = true;
	config_build_nodes(false);
}
