/*-------------------------------------------------------------------------
 *
 * layout.c
 *	  Decoding ids, the lifetime of a layout, and parsing its epoch.
 *
 * Pure functions over a SnowflakeLayout; composing an id is inline in
 * layout.h because it is on the hot path.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "lib/stringinfo.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "layout.h"

void
SnowflakeDecompose(const SnowflakeLayout *layout, int64 id,
				   SnowflakeFields *fields)
{
	uint64		bits = (uint64) id;
	int			node_shift = layout->sequence_last ? layout->sequence_bits : 0;
	int			sequence_shift = layout->sequence_last ? 0 : layout->node_bits;
	int			shift = layout->node_bits;

	fields->tick = (int64) (bits >> SnowflakeTimeShift(layout));
	fields->unix_ms = SnowflakeTickStart(layout, fields->tick);
	fields->node = (int32) ((bits >> node_shift) & SnowflakeMaxNode(layout));
	fields->sequence = (int32) ((bits >> sequence_shift) &
								SnowflakeMaxSequence(layout));
	for (int i = 0; i < layout->nparts; i++)
	{
		shift -= layout->part_bits[i];
		fields->parts[i] = (int32) ((fields->node >> shift) &
									((INT64CONST(1) << layout->part_bits[i]) - 1));
	}
}

char *
SnowflakeFormatMs(int64 unix_ms)
{
	return pstrdup(timestamptz_to_str(SnowflakeMsToTimestamptz(unix_ms)));
}

/* Read exactly n decimal digits at *p. */
static bool
lay_digits(const char **p, int n, int *value)
{
	int			v = 0;

	for (int i = 0; i < n; i++)
	{
		if ((*p)[i] < '0' || (*p)[i] > '9')
			return false;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*value = v;
	return true;
}

/* Parse "HH:MM[:SS[.fff]]" into ms since midnight. */
static bool
lay_time_of_day(const char **p, int64 *ms)
{
	int			hour,
				minute,
				second = 0,
				millis = 0;

	if (!lay_digits(p, 2, &hour) || **p != ':')
		return false;
	(*p)++;
	if (!lay_digits(p, 2, &minute))
		return false;
	if (**p == ':')
	{
		(*p)++;
		if (!lay_digits(p, 2, &second))
			return false;
		if (**p == '.')
		{
			int			scale = 100;

			(*p)++;
			if (**p < '0' || **p > '9')
				return false;
			for (; **p >= '0' && **p <= '9'; (*p)++)
			{
				/* digits past the millisecond must be zero */
				if (scale == 0 && **p != '0')
					return false;
				millis += (**p - '0') * scale;
				scale /= 10;
			}
		}
	}
	if (hour > 23 || minute > 59 || second > 59)
		return false;
	*ms = ((int64) hour * 3600 + minute * 60 + second) * 1000 + millis;
	return true;
}

/* Parse "", "Z", "UTC" or "+HH", "+HHMM", "+HH:MM" (or "-") into ms east. */
static bool
lay_zone(const char **p, int64 *offset_ms)
{
	int			sign,
				hours,
				minutes = 0;

	*offset_ms = 0;
	if (**p == '\0')
		return true;
	if (strcmp(*p, "Z") == 0 || strcmp(*p, "UTC") == 0)
	{
		*p += strlen(*p);
		return true;
	}
	if (**p != '+' && **p != '-')
		return false;
	sign = (**p == '-') ? -1 : 1;
	(*p)++;
	if (!lay_digits(p, 2, &hours))
		return false;
	if (**p == ':')
		(*p)++;
	if (**p != '\0' && !lay_digits(p, 2, &minutes))
		return false;
	if (hours > 15 || minutes > 59)
		return false;
	*offset_ms = sign * ((int64) hours * 60 + minutes) * 60 * 1000;
	return true;
}

static bool
lay_epoch_in_range(int64 unix_ms, const char **error)
{
	if (unix_ms >= SNOWFLAKE_MIN_MS && unix_ms < SNOWFLAKE_END_MS)
		return true;
	*error = "The epoch lies outside PostgreSQL's timestamps.";
	return false;
}

bool
SnowflakeParseEpoch(const char *text, int64 *unix_ms, const char **error)
{
	const char *p = text;
	int			year,
				month,
				day;
	int64		time_ms = 0;
	int64		offset_ms;

	*error = "An epoch is a count of milliseconds since 1970-01-01 00:00:00 UTC, "
		"or a timestamp such as \"2025-01-01 00:00:00+00\".";

	/* A bare count of milliseconds since the Unix epoch, maybe negative. */
	if (*p == '-')
		p++;
	if (*p != '\0' && strspn(p, "0123456789") == strlen(p))
	{
		/* more digits than an int64 holds are out of range too */
		if (strlen(p) > 18)
			return lay_epoch_in_range(PG_INT64_MAX, error);
		*unix_ms = strtoi64(text, NULL, 10);
		return lay_epoch_in_range(*unix_ms, error);
	}
	p = text;

	if (!lay_digits(&p, 4, &year) || *p++ != '-' ||
		!lay_digits(&p, 2, &month) || *p++ != '-' ||
		!lay_digits(&p, 2, &day))
		return false;
	if (year < 1 || month < 1 || month > 12 || day < 1 ||
		day > day_tab[isleap(year)][month - 1])
		return false;
	if (*p == ' ' || *p == 'T')
	{
		p++;
		if (!lay_time_of_day(&p, &time_ms))
			return false;
	}
	while (*p == ' ')
		p++;
	if (!lay_zone(&p, &offset_ms) || *p != '\0')
		return false;

	*unix_ms = (int64) (date2j(year, month, day) - UNIX_EPOCH_JDATE) *
		SECS_PER_DAY * 1000 + time_ms - offset_ms;
	return lay_epoch_in_range(*unix_ms, error);
}

/* The presets, in the custom syntax: one parser serves both. */
static const struct
{
	const char *name;
	const char *spec;
}			lay_presets[] =
{
	{"snowflake", "time:41 worker:10 sequence:12 tick:1ms"},
	{"twitter", "time:41 datacenter:5 worker:5 sequence:12 tick:1ms epoch:1288834974657"},
	{"discord", "time:42 worker:5 process:5 sequence:12 tick:1ms epoch:1420070400000"},
	{"instagram", "time:41 shard:13 sequence:10 tick:1ms epoch:1314220021721"},
	{"sonyflake", "time:39 sequence:8 machine:16 tick:10ms epoch:2025-01-01"},
};

/* Parse a whole decimal number in [min, max], with an optional suffix. */
static bool
lay_number(const char *text, const char *suffix, int64 min, int64 max,
		   int64 *value)
{
	char	   *end;

	if (*text < '0' || *text > '9' || strlen(text) > 12)
		return false;
	*value = strtoi64(text, &end, 10);
	if (*end != '\0' && strcmp(end, suffix) != 0)
		return false;
	return *value >= min && *value <= max;
}

static bool
lay_name_ok(const char *name)
{
	if (*name == '\0' || strlen(name) >= SNOWFLAKE_NAME_LEN ||
		!((*name >= 'a' && *name <= 'z') || *name == '_'))
		return false;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
			return false;
	return true;
}

#define LAY_FAIL(...) \
	do { *error = psprintf(__VA_ARGS__); return false; } while (0)

/*
 * Over 80 lines, as one loop over the items: the grammar (each item once,
 * the node parts together, the sequence before or after them) is a few
 * flags that every item reads, and split up it would be spread over
 * functions passing them all around.
 */
bool
SnowflakeParseLayout(const char *text, int64 default_epoch_ms,
					 SnowflakeLayout *layout, char **error)
{
	char	   *buffer;
	char	   *saveptr = NULL;
	char	   *problem;
	char	   *item;
	int			nfields = 0;	/* time, sequence and node parts seen */
	bool		seen_time = false;
	bool		seen_sequence = false;
	bool		seen_tick = false;
	bool		prev_was_node = false;

	for (int i = 0; i < (int) lengthof(lay_presets); i++)
	{
		if (strcmp(text, lay_presets[i].name) == 0)
		{
			if (!SnowflakeParseLayout(lay_presets[i].spec, default_epoch_ms,
									  layout, error))
				return false;
			strlcpy(layout->name, lay_presets[i].name, SNOWFLAKE_NAME_LEN);
			return true;
		}
	}

	memset(layout, 0, sizeof(SnowflakeLayout));
	strlcpy(layout->name, "custom", SNOWFLAKE_NAME_LEN);
	layout->tick_ms = 1;
	layout->epoch_ms = default_epoch_ms;

	buffer = pstrdup(text);

	for (item = strtok_r(buffer, " ,\t\n", &saveptr); item != NULL;
		 item = strtok_r(NULL, " ,\t\n", &saveptr))
	{
		char	   *colon = strchr(item, ':');
		char	   *value;
		int64		number;

		if (colon == NULL)
			LAY_FAIL("\"%s\" is neither a preset (snowflake, twitter, discord, instagram, sonyflake) nor a name:value item.", item);
		*colon = '\0';
		value = colon + 1;
		if (!lay_name_ok(item))
			LAY_FAIL("\"%s\" is not a field name: use lower-case letters, digits and underscores.", item);

		if (strcmp(item, "tick") == 0)
		{
			if (seen_tick)
				LAY_FAIL("The tick is given twice.");
			seen_tick = true;
			if (!lay_number(value, "ms", 1, 3600000, &number))
				LAY_FAIL("The tick \"%s\" is not a whole number of milliseconds from 1ms to 3600000ms.", value);
			layout->tick_ms = (int) number;
			continue;
		}
		if (strcmp(item, "epoch") == 0)
		{
			const char *epoch_error;

			if (layout->own_epoch)
				LAY_FAIL("The epoch is given twice.");
			if (!SnowflakeParseEpoch(value, &layout->epoch_ms, &epoch_error))
				LAY_FAIL("The epoch \"%s\" is invalid. %s", value, epoch_error);
			layout->own_epoch = true;
			continue;
		}

		/* a field: its width in bits */
		if (!lay_number(value, "", 1, 63, &number))
			LAY_FAIL("The width of field \"%s\" is \"%s\", not a number of bits from 1 to 63.", item, value);
		if (strcmp(item, "time") == 0)
		{
			if (seen_time)
				LAY_FAIL("The field \"time\" is given twice.");
			if (nfields > 0)
				LAY_FAIL("The field \"time\" must come first, so that ids sort by time.");
			seen_time = true;
			layout->time_bits = (int) number;
			prev_was_node = false;
		}
		else if (strcmp(item, "sequence") == 0)
		{
			if (seen_sequence)
				LAY_FAIL("The field \"sequence\" is given twice.");
			seen_sequence = true;
			layout->sequence_bits = (int) number;
			/* after the node fields, or before them */
			layout->sequence_last = (layout->nparts > 0);
			prev_was_node = false;
		}
		else
		{
			for (int i = 0; i < layout->nparts; i++)
				if (strcmp(layout->part_names[i], item) == 0)
					LAY_FAIL("The field \"%s\" is given twice.", item);
			if (layout->nparts > 0 && !prev_was_node)
				LAY_FAIL("The node field \"%s\" is apart from the other node fields: they must be adjacent.", item);
			if (layout->nparts == SNOWFLAKE_MAX_PARTS)
				LAY_FAIL("A layout has at most %d node fields.", SNOWFLAKE_MAX_PARTS);
			strlcpy(layout->part_names[layout->nparts], item, SNOWFLAKE_NAME_LEN);
			layout->part_bits[layout->nparts++] = (int) number;
			layout->node_bits += (int) number;
			prev_was_node = true;
		}
		nfields++;
	}

	if (!seen_time)
		LAY_FAIL("The layout has no field \"time\".");
	if (!seen_sequence)
		LAY_FAIL("The layout has no field \"sequence\".");
	if (layout->nparts == 0)
		LAY_FAIL("The layout has no node field (worker, shard, machine, ...).");
	problem = SnowflakeLayoutProblem(layout);
	if (problem != NULL)
	{
		*error = problem;
		return false;
	}
	return true;
}

char *
SnowflakeLayoutProblem(const SnowflakeLayout *layout)
{
	int			total = layout->time_bits + layout->node_bits + layout->sequence_bits;

	if (layout->time_bits < 1 || layout->node_bits < 1 || layout->sequence_bits < 1)
		return psprintf("Every field has at least one bit.");
	if (layout->node_bits > 31)
		return psprintf("The node fields have %d bits; at most 31 fit a worker id.",
						layout->node_bits);
	if (layout->sequence_bits > 31)
		return psprintf("The field \"sequence\" has %d bits; at most 31 are allowed.",
						layout->sequence_bits);
	if (total != 63 && total != 64)
		return psprintf("The fields add up to %d bits; they must make 63 (positive ids) or 64.",
						total);
	if (layout->tick_ms < 1 || layout->tick_ms > 3600000)
		return psprintf("The tick is %d ms, not from 1 ms to 3600000 ms.", layout->tick_ms);
	if (layout->epoch_ms < SNOWFLAKE_MIN_MS || layout->epoch_ms >= SNOWFLAKE_END_MS)
		return psprintf("The epoch lies outside PostgreSQL's timestamps.");

	/*
	 * Every tick the time field can hold must be a time PostgreSQL can show
	 * (in double first: the product can exceed an int64).
	 */
	if (ldexp((double) layout->tick_ms, layout->time_bits) + (double) layout->epoch_ms >=
		(double) SNOWFLAKE_END_MS)
		return psprintf("A time field of %d bits in ticks of %d ms since %s runs past the year 294276, beyond PostgreSQL's timestamps.",
						layout->time_bits, layout->tick_ms,
						SnowflakeFormatMs(layout->epoch_ms));
	return NULL;
}

char *
SnowflakeLayoutSpec(const SnowflakeLayout *layout)
{
	StringInfoData spec;

	initStringInfo(&spec);
	appendStringInfo(&spec, "time:%d", layout->time_bits);
	if (!layout->sequence_last)
		appendStringInfo(&spec, " sequence:%d", layout->sequence_bits);
	for (int i = 0; i < layout->nparts; i++)
		appendStringInfo(&spec, " %s:%d", layout->part_names[i], layout->part_bits[i]);
	if (layout->sequence_last)
		appendStringInfo(&spec, " sequence:%d", layout->sequence_bits);
	appendStringInfo(&spec, " tick:%dms epoch:" INT64_FORMAT,
					 layout->tick_ms, layout->epoch_ms);
	return spec.data;
}
