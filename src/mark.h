/*-------------------------------------------------------------------------
 *
 * mark.h
 *	  The durable high-water mark: a small file in the data directory
 *	  saying below which millisecond every id of this server was issued.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_MARK_H
#define SNOWFLAKE_MARK_H

#include "layout.h"

/* In the data directory, next to postgresql.auto.conf */
#define SNOWFLAKE_MARK_FILE		"snowflake.mark"

typedef struct SnowflakeMark
{
	int64		mark_ms;		/* every id was issued at a Unix ms below this */
	int64		written_ms;		/* the clock when the mark was written */
	bool		clean;			/* written at a clean shutdown: mark_ms is
								 * exactly the last id's ms + 1 */
	int32		worker_id;		/* of the server that issued the ids */
	SnowflakeLayout layout;		/* under which they were issued */
} SnowflakeMark;

typedef enum MarkLoadResult
{
	MARK_ABSENT,				/* no file: nothing was issued here yet */
	MARK_LOADED,
	MARK_INVALID				/* unreadable, truncated or corrupt */
} MarkLoadResult;

/*
 * Read the file.  Never throws: on MARK_INVALID, *problem says what is
 * wrong in a sentence, for an errdetail.
 */
extern MarkLoadResult MarkLoad(SnowflakeMark *mark, char *problem,
							   size_t problem_size);

/*
 * Write the file durably (temporary file, checked writes, durable_rename).
 * Reports failures at elevel; returns whether the mark is on disk.
 */
extern bool MarkWrite(const SnowflakeMark *mark, int elevel);

#endif							/* SNOWFLAKE_MARK_H */
