/*-------------------------------------------------------------------------
 *
 * mark.h
 *	  The durable high-water mark: a small file in the data directory
 *	  saying, for each node value this server issued ids for, below which
 *	  millisecond all of them were issued.
 *
 * Locking: none here.  mark.c only formats, writes and reads the file; the
 * generator lets one process write at a time (the writer's role, its pid
 * taken by compare-and-swap), so a mark on disk never goes down.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_MARK_H
#define SNOWFLAKE_MARK_H

#include "layout.h"

/* In the data directory, next to postgresql.auto.conf */
#define SNOWFLAKE_MARK_FILE		"snowflake.mark"

/*
 * Node values a mark keeps: the server's own (its worker id and up to 65536
 * shards), and up to 1024 it issued ids for before, under other settings.
 */
#define SNOWFLAKE_MARK_MAX_RETAINED	1024
#define SNOWFLAKE_MARK_MAX_ENTRIES	(65537 + SNOWFLAKE_MARK_MAX_RETAINED)

/* Every id of a node value was issued at a Unix ms below mark_ms. */
typedef struct SnowflakeMarkEntry
{
	int32		node;			/* a node value; -1 in a version 1 file:
								 * every node of the server */
	int64		mark_ms;
} SnowflakeMarkEntry;

typedef struct SnowflakeMark
{
	int64		written_ms;		/* the clock when the mark was written */
	bool		clean;			/* written at a clean shutdown: each mark_ms
								 * is exactly its node's last id's ms + 1 */
	SnowflakeLayout layout;		/* under which the ids were issued */
	int32		worker_node;	/* the worker id when it was written, -1 if
								 * none (a lease is taken back at restart) */
	int			nentries;
	SnowflakeMarkEntry *entries;	/* ascending by node */
} SnowflakeMark;

/* What is wrong with a file, kept in shared memory for the calls to report */
typedef enum MarkProblem
{
	MARK_OK,
	MARK_ABSENT,				/* no file: nothing was issued here yet */
	MARK_CANNOT_OPEN,
	MARK_NOT_REGULAR,			/* a FIFO, a directory, a device... */
	MARK_CANNOT_READ,
	MARK_TRUNCATED,				/* shorter than its header */
	MARK_WRONG_LENGTH,			/* not the length its header says */
	MARK_NO_MAGIC,
	MARK_WRONG_VERSION,
	MARK_WRONG_CHECKSUM,
	MARK_IMPOSSIBLE_LAYOUT,
	MARK_IMPOSSIBLE_ENTRY		/* a node out of range, or out of order */
} MarkProblem;

typedef struct MarkProblemInfo
{
	MarkProblem problem;
	int			saved_errno;	/* MARK_CANNOT_OPEN, MARK_CANNOT_READ */
	int64		value;			/* the length, version or node */
	int64		expected;		/* the length it should be */
	SnowflakeLayout layout;		/* MARK_IMPOSSIBLE_LAYOUT */
} MarkProblemInfo;

/*
 * Read the file.  Never throws; returns false with *info saying why when
 * there is no mark to apply (MARK_ABSENT is no problem).  entries are
 * allocated in the current memory context.
 */
extern bool MarkLoad(SnowflakeMark *mark, MarkProblemInfo *info);

/* The problem as a sentence for an errdetail, palloc'd. */
extern char *MarkDescribeProblem(const MarkProblemInfo *info);

/*
 * Write the file durably (temporary file, checked writes, durable_rename).
 * Reports failures at elevel; returns whether the mark is on disk.
 */
extern bool MarkWrite(const SnowflakeMark *mark, int elevel);

#endif							/* SNOWFLAKE_MARK_H */
