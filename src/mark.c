/*-------------------------------------------------------------------------
 *
 * mark.c
 *	  The file format of the high-water mark, its atomic write, and its
 *	  load and validation.
 *
 * Version 2 of the file is a header (magic number, format version, flags,
 * the layout: widths, field order, tick and epoch; the worker id, the time
 * it was written and the number of entries), then one entry per node value (the node and
 * its mark, in absolute Unix milliseconds, ascending by node), then a
 * CRC-32C over all of it.  Keying the marks on node values means a node
 * this server issued ids for is protected whatever the worker id is now: a
 * shard that stays on a server whose worker id changes keeps its mark.
 * Version 1 (0.1.0) had one mark for every node of the server, under the
 * worker id it recorded; it is still read, and applies to every node.
 *
 * The file is replaced whole: written to a temporary file, then moved into
 * place by durable_rename(), which fsyncs the file and the directory, so
 * after an OS crash there is either the old mark or the new one.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "port/pg_crc32c.h"
#include "storage/fd.h"

#include "mark.h"

#define MARK_MAGIC			0x534E4F57	/* "SNOW" */
#define MARK_VERSION		2
#define MARK_FLAG_CLEAN		0x0001	/* written at a clean shutdown */
#define MARK_FLAG_SEQUENCE_LAST	0x0002	/* time|node|sequence */

#define MARK_TEMP_FILE		SNOWFLAKE_MARK_FILE ".tmp"

/* The records on disk, in the machine's byte order. */
typedef struct MarkHeader
{
	uint32		magic;
	uint32		version;
	uint32		flags;
	int32		time_bits;
	int32		node_bits;
	int32		sequence_bits;
	int32		tick_ms;
	int32		nentries;
	int32		worker_node;
	int32		reserved;		/* zero */
	int64		epoch_ms;
	int64		written_ms;
} MarkHeader;

typedef struct MarkEntryData
{
	int32		node;
	int32		reserved;		/* zero */
	int64		mark_ms;
} MarkEntryData;

/* Version 1, whole */
typedef struct MarkFileV1
{
	uint32		magic;
	uint32		version;
	int32		worker_id;
	int32		time_bits;
	int32		node_bits;
	int32		sequence_bits;
	int32		tick_ms;
	uint32		flags;
	int64		epoch_ms;
	int64		mark_ms;
	int64		written_ms;
	uint32		reserved;
	pg_crc32c	crc;
} MarkFileV1;

#define MARK_MAX_SIZE \
	(sizeof(MarkHeader) + SNOWFLAKE_MARK_MAX_ENTRIES * sizeof(MarkEntryData) + \
	 sizeof(pg_crc32c))

static pg_crc32c
mark_crc(const void *data, size_t length)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, length);
	FIN_CRC32C(crc);
	return crc;
}

static void
mark_set_layout(SnowflakeLayout *layout, int time_bits, int node_bits,
				int sequence_bits, uint32 flags, int tick_ms, int64 epoch_ms)
{
	/* the layout as far as the bits go; its part names are not kept */
	memset(layout, 0, sizeof(SnowflakeLayout));
	strlcpy(layout->name, "recorded", SNOWFLAKE_NAME_LEN);
	layout->time_bits = time_bits;
	layout->node_bits = node_bits;
	layout->sequence_bits = sequence_bits;
	layout->sequence_last = (flags & MARK_FLAG_SEQUENCE_LAST) != 0;
	layout->tick_ms = tick_ms;
	layout->epoch_ms = epoch_ms;
	layout->own_epoch = true;
	layout->nparts = 1;
	strlcpy(layout->part_names[0], "node", SNOWFLAKE_NAME_LEN);
	layout->part_bits[0] = node_bits;
}

static bool
mark_fail(MarkProblemInfo *info, MarkProblem problem, int64 value, int64 expected)
{
	info->problem = problem;
	info->value = value;
	info->expected = expected;
	return false;
}

static bool
mark_load_v1(SnowflakeMark *mark, const char *bytes, ssize_t length,
			 MarkProblemInfo *info)
{
	MarkFileV1	data;

	if (length != sizeof(MarkFileV1))
		return mark_fail(info, MARK_WRONG_LENGTH, length, sizeof(MarkFileV1));
	memcpy(&data, bytes, sizeof(data));
	if (!EQ_CRC32C(data.crc, mark_crc(&data, offsetof(MarkFileV1, crc))))
		return mark_fail(info, MARK_WRONG_CHECKSUM, 0, 0);
	mark_set_layout(&mark->layout, data.time_bits, data.node_bits,
					data.sequence_bits, data.flags, data.tick_ms, data.epoch_ms);
	mark->written_ms = data.written_ms;
	mark->clean = (data.flags & MARK_FLAG_CLEAN) != 0;
	mark->worker_node = data.worker_id;
	mark->nentries = 1;
	mark->entries = palloc(sizeof(SnowflakeMarkEntry));
	mark->entries[0].node = -1;
	mark->entries[0].mark_ms = data.mark_ms;
	return true;
}

/* Parse and check the length bytes of a file. */
static bool
mark_parse(SnowflakeMark *mark, const char *bytes, ssize_t length,
		   MarkProblemInfo *info)
{
	MarkHeader	header;
	int64		expected;

	if (length < (ssize_t) sizeof(MarkHeader))
		return mark_fail(info, MARK_TRUNCATED, length, sizeof(MarkHeader));
	memcpy(&header, bytes, sizeof(header));
	if (header.magic != MARK_MAGIC)
		return mark_fail(info, MARK_NO_MAGIC, 0, 0);
	if (header.version == 1)
	{
		if (!mark_load_v1(mark, bytes, length, info))
			return false;
	}
	else if (header.version != MARK_VERSION)
		return mark_fail(info, MARK_WRONG_VERSION, header.version, MARK_VERSION);
	else
	{
		if (header.nentries < 0 || header.nentries > SNOWFLAKE_MARK_MAX_ENTRIES)
			return mark_fail(info, MARK_WRONG_LENGTH, length, -1);
		expected = sizeof(MarkHeader) + header.nentries * sizeof(MarkEntryData) +
			sizeof(pg_crc32c);
		if (length != expected)
			return mark_fail(info, MARK_WRONG_LENGTH, length, expected);
		{
			pg_crc32c	stored;

			memcpy(&stored, bytes + expected - sizeof(pg_crc32c), sizeof(stored));
			if (!EQ_CRC32C(stored, mark_crc(bytes, expected - sizeof(pg_crc32c))))
				return mark_fail(info, MARK_WRONG_CHECKSUM, 0, 0);
		}
		mark_set_layout(&mark->layout, header.time_bits, header.node_bits,
						header.sequence_bits, header.flags, header.tick_ms,
						header.epoch_ms);
		mark->written_ms = header.written_ms;
		mark->clean = (header.flags & MARK_FLAG_CLEAN) != 0;
		mark->worker_node = header.worker_node;
		mark->nentries = header.nentries;
		mark->entries = palloc(sizeof(SnowflakeMarkEntry) * Max(header.nentries, 1));
		for (int i = 0; i < header.nentries; i++)
		{
			MarkEntryData e;

			memcpy(&e, bytes + sizeof(MarkHeader) + i * sizeof(MarkEntryData), sizeof(e));
			mark->entries[i].node = e.node;
			mark->entries[i].mark_ms = e.mark_ms;
		}
	}

	/* as strict as the parser of a specification */
	if (SnowflakeLayoutProblem(&mark->layout) != NULL)
	{
		info->layout = mark->layout;
		return mark_fail(info, MARK_IMPOSSIBLE_LAYOUT, 0, 0);
	}
	if (mark->worker_node < -1 || mark->worker_node > SnowflakeMaxNode(&mark->layout))
		return mark_fail(info, MARK_IMPOSSIBLE_ENTRY, mark->worker_node, 0);
	for (int i = 0; i < mark->nentries; i++)
	{
		const SnowflakeMarkEntry *e = &mark->entries[i];

		if ((e->node < 0 && (mark->nentries > 1 || e->node != -1)) ||
			e->node > SnowflakeMaxNode(&mark->layout) ||
			(i > 0 && e->node <= mark->entries[i - 1].node) ||
			e->mark_ms < SNOWFLAKE_MIN_MS || e->mark_ms >= SNOWFLAKE_END_MS)
			return mark_fail(info, MARK_IMPOSSIBLE_ENTRY, e->node, 0);
	}
	if (mark->written_ms < SNOWFLAKE_MIN_MS || mark->written_ms >= SNOWFLAKE_END_MS)
		return mark_fail(info, MARK_IMPOSSIBLE_ENTRY, -1, 0);
	return true;
}

bool
MarkLoad(SnowflakeMark *mark, MarkProblemInfo *info)
{
	char	   *bytes;
	ssize_t		length;
	int			fd;
	bool		loaded;
	struct stat st;

	memset(mark, 0, sizeof(SnowflakeMark));
	memset(info, 0, sizeof(MarkProblemInfo));

	/*
	 * Non-blocking, so that a FIFO put where the file should be cannot hang
	 * the postmaster's start-up; only a regular file is read.
	 */
	fd = OpenTransientFile(SNOWFLAKE_MARK_FILE, O_RDONLY | O_NONBLOCK | PG_BINARY);
	if (fd < 0)
	{
		info->saved_errno = errno;
		return mark_fail(info, errno == ENOENT ? MARK_ABSENT : MARK_CANNOT_OPEN, 0, 0);
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
	{
		info->saved_errno = errno;
		CloseTransientFile(fd);
		return mark_fail(info, MARK_NOT_REGULAR, 0, 0);
	}
	bytes = palloc(MARK_MAX_SIZE + 1);
	length = read(fd, bytes, MARK_MAX_SIZE + 1);
	info->saved_errno = errno;
	CloseTransientFile(fd);
	loaded = length < 0 ? mark_fail(info, MARK_CANNOT_READ, 0, 0) :
		mark_parse(mark, bytes, length, info);
	pfree(bytes);
	return loaded;
}

char *
MarkDescribeProblem(const MarkProblemInfo *info)
{
	switch (info->problem)
	{
		case MARK_OK:
		case MARK_ABSENT:
			break;
		case MARK_CANNOT_OPEN:
			errno = info->saved_errno;
			return psprintf("The file could not be opened: %m.");
		case MARK_NOT_REGULAR:
			return psprintf("It is not a regular file.");
		case MARK_CANNOT_READ:
			errno = info->saved_errno;
			return psprintf("The file could not be read: %m.");
		case MARK_TRUNCATED:
			return psprintf("The file is " INT64_FORMAT " bytes long, shorter than the " INT64_FORMAT " bytes of its header.",
							info->value, info->expected);
		case MARK_WRONG_LENGTH:
			if (info->expected < 0)
				return psprintf("The file's header gives an impossible number of entries.");
			return psprintf("The file is " INT64_FORMAT " bytes long; its header says " INT64_FORMAT ".",
							info->value, info->expected);
		case MARK_NO_MAGIC:
			return psprintf("The file does not start with the magic number of a snowflake high-water mark.");
		case MARK_WRONG_VERSION:
			return psprintf("The file has format version " INT64_FORMAT "; this build reads versions 1 to %d.",
							info->value, MARK_VERSION);
		case MARK_WRONG_CHECKSUM:
			return psprintf("The file's checksum does not match its contents.");
		case MARK_IMPOSSIBLE_LAYOUT:
			return psprintf("The file records an impossible layout: %s",
							SnowflakeLayoutProblem(&info->layout));
		case MARK_IMPOSSIBLE_ENTRY:
			if (info->value < 0)
				return psprintf("The file records an impossible time.");
			return psprintf("The file records an impossible mark for node " INT64_FORMAT ": out of order, beyond its layout's node field, or outside PostgreSQL's timestamps.",
							info->value);
	}
	return psprintf("The file is invalid.");
}

bool
MarkWrite(const SnowflakeMark *mark, int elevel)
{
	size_t		length = sizeof(MarkHeader) + mark->nentries * sizeof(MarkEntryData) +
		sizeof(pg_crc32c);
	char	   *bytes = palloc0(length);
	MarkHeader	header;
	pg_crc32c	crc;
	int			fd;

	Assert(mark->nentries <= SNOWFLAKE_MARK_MAX_ENTRIES);
	memset(&header, 0, sizeof(header));
	header.magic = MARK_MAGIC;
	header.version = MARK_VERSION;
	header.flags = (mark->clean ? MARK_FLAG_CLEAN : 0) |
		(mark->layout.sequence_last ? MARK_FLAG_SEQUENCE_LAST : 0);
	header.time_bits = mark->layout.time_bits;
	header.node_bits = mark->layout.node_bits;
	header.sequence_bits = mark->layout.sequence_bits;
	header.tick_ms = mark->layout.tick_ms;
	header.nentries = mark->nentries;
	header.worker_node = mark->worker_node;
	header.epoch_ms = mark->layout.epoch_ms;
	header.written_ms = mark->written_ms;
	memcpy(bytes, &header, sizeof(header));
	for (int i = 0; i < mark->nentries; i++)
	{
		MarkEntryData e;

		memset(&e, 0, sizeof(e));
		e.node = mark->entries[i].node;
		e.mark_ms = mark->entries[i].mark_ms;
		memcpy(bytes + sizeof(MarkHeader) + i * sizeof(MarkEntryData), &e, sizeof(e));
	}
	crc = mark_crc(bytes, length - sizeof(pg_crc32c));
	memcpy(bytes + length - sizeof(pg_crc32c), &crc, sizeof(crc));

	/* a new file, whatever was left at its path (even a FIFO) */
	(void) unlink(MARK_TEMP_FILE);
	fd = OpenTransientFile(MARK_TEMP_FILE, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
	if (fd < 0)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", MARK_TEMP_FILE)));
		pfree(bytes);
		return false;
	}
	errno = 0;
	if (write(fd, bytes, length) != (ssize_t) length)
	{
		int			save_errno = errno;

		CloseTransientFile(fd);
		pfree(bytes);
		/* a short write without an error means the disk is full */
		errno = save_errno ? save_errno : ENOSPC;
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", MARK_TEMP_FILE)));
		return false;
	}
	pfree(bytes);
	if (CloseTransientFile(fd) != 0)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", MARK_TEMP_FILE)));
		return false;
	}
	return durable_rename(MARK_TEMP_FILE, SNOWFLAKE_MARK_FILE, elevel) == 0;
}
