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

#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "layout.h"

void
SnowflakeDecompose(const SnowflakeLayout *layout, int64 id,
				   SnowflakeFields *fields)
{
	int			time_shift = layout->worker_bits + layout->sequence_bits;

	Assert(id >= 0);
	fields->unix_ms = layout->epoch_ms + (id >> time_shift);
	fields->worker = (int32) ((id >> layout->sequence_bits) &
							  SnowflakeMaxWorker(layout));
	fields->sequence = (int32) (id & SnowflakeMaxSequence(layout));
}

char *
SnowflakeFormatMs(int64 unix_ms)
{
	return pstrdup(timestamptz_to_str(SnowflakeMsToTimestamptz(unix_ms)));
}

int64
SnowflakeLastMs(const SnowflakeLayout *layout)
{
	return layout->epoch_ms + SnowflakeMaxTicks(layout);
}

const char *
SnowflakeCheckEpoch(const SnowflakeLayout *layout, int64 now_ms)
{
	if (layout->epoch_ms > now_ms)
		return "The epoch lies in the future.";
	if (now_ms > SnowflakeLastMs(layout))
		return "The epoch lies so far back that the time field of the ids is already exhausted.";
	return NULL;
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
		if (strlen(p) > 15)
			return false;
		*unix_ms = strtoi64(text, NULL, 10);
		return true;
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
	return true;
}
