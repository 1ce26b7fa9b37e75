/*-------------------------------------------------------------------------
 *
 * mark.c
 *	  The file format of the high-water mark, its atomic write, and its
 *	  load and validation.
 *
 * The file is a fixed-size binary record: magic number, format version,
 * the worker id, the layout (widths, field order, tick and epoch), the mark
 * and the time it was written, all in absolute Unix milliseconds, and a CRC-32C over the
 * rest.  It is replaced whole: written to a temporary file, then moved
 * into place by durable_rename(), which fsyncs the file and the directory,
 * so after an OS crash there is either the old mark or the new one.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "port/pg_crc32c.h"
#include "storage/fd.h"

#include "mark.h"

#define MARK_MAGIC			0x534E4F57	/* "SNOW" */
#define MARK_VERSION		1
#define MARK_FLAG_CLEAN		0x0001	/* written at a clean shutdown */
#define MARK_FLAG_SEQUENCE_LAST	0x0002	/* time|node|sequence */

#define MARK_TEMP_FILE		SNOWFLAKE_MARK_FILE ".tmp"

/* The record on disk, in the machine's byte order. */
typedef struct MarkFileData
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
	uint32		reserved;		/* zero */
	pg_crc32c	crc;			/* of everything above */
} MarkFileData;

static pg_crc32c
mark_crc(const MarkFileData *data)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, offsetof(MarkFileData, crc));
	FIN_CRC32C(crc);
	return crc;
}

MarkLoadResult
MarkLoad(SnowflakeMark *mark, char *problem, size_t problem_size)
{
	MarkFileData data;
	int			fd;
	ssize_t		nread;
	char		extra;

	fd = OpenTransientFile(SNOWFLAKE_MARK_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return MARK_ABSENT;
		snprintf(problem, problem_size, "The file could not be opened: %m.");
		return MARK_INVALID;
	}
	nread = read(fd, &data, sizeof(data));
	if (nread == sizeof(data) && read(fd, &extra, 1) != 0)
		nread = sizeof(data) + 1;
	if (nread < 0)
		snprintf(problem, problem_size, "The file could not be read: %m.");
	CloseTransientFile(fd);

	if (nread < 0)
		return MARK_INVALID;
	if (nread > (ssize_t) sizeof(data))
	{
		snprintf(problem, problem_size, "The file is longer than %d bytes.",
				 (int) sizeof(data));
		return MARK_INVALID;
	}
	if (nread < (ssize_t) sizeof(data))
	{
		snprintf(problem, problem_size, "The file is %d bytes long, not %d.",
				 (int) nread, (int) sizeof(data));
		return MARK_INVALID;
	}
	if (data.magic != MARK_MAGIC)
	{
		snprintf(problem, problem_size,
				 "The file does not start with the magic number of a snowflake high-water mark.");
		return MARK_INVALID;
	}
	if (data.version != MARK_VERSION)
	{
		snprintf(problem, problem_size,
				 "The file has format version %u; this build reads version %d.",
				 data.version, MARK_VERSION);
		return MARK_INVALID;
	}
	if (!EQ_CRC32C(data.crc, mark_crc(&data)))
	{
		snprintf(problem, problem_size, "The file's checksum does not match its contents.");
		return MARK_INVALID;
	}

	memset(mark, 0, sizeof(SnowflakeMark));
	mark->mark_ms = data.mark_ms;
	mark->written_ms = data.written_ms;
	mark->clean = (data.flags & MARK_FLAG_CLEAN) != 0;
	mark->worker_id = data.worker_id;
	/* the layout as far as the bits go; its part names are not kept */
	strlcpy(mark->layout.name, "recorded", SNOWFLAKE_NAME_LEN);
	mark->layout.time_bits = data.time_bits;
	mark->layout.node_bits = data.node_bits;
	mark->layout.sequence_bits = data.sequence_bits;
	mark->layout.sequence_last = (data.flags & MARK_FLAG_SEQUENCE_LAST) != 0;
	mark->layout.tick_ms = data.tick_ms;
	mark->layout.epoch_ms = data.epoch_ms;
	mark->layout.own_epoch = true;
	mark->layout.nparts = 1;
	strlcpy(mark->layout.part_names[0], "node", SNOWFLAKE_NAME_LEN);
	mark->layout.part_bits[0] = data.node_bits;
	if (data.time_bits < 1 || data.node_bits < 1 || data.sequence_bits < 1 ||
		data.time_bits + data.node_bits + data.sequence_bits > 64 ||
		data.tick_ms < 1)
	{
		snprintf(problem, problem_size, "The file records an impossible layout.");
		return MARK_INVALID;
	}
	return MARK_LOADED;
}

bool
MarkWrite(const SnowflakeMark *mark, int elevel)
{
	MarkFileData data;
	int			fd;

	memset(&data, 0, sizeof(data));
	data.magic = MARK_MAGIC;
	data.version = MARK_VERSION;
	data.worker_id = mark->worker_id;
	data.time_bits = mark->layout.time_bits;
	data.node_bits = mark->layout.node_bits;
	data.sequence_bits = mark->layout.sequence_bits;
	data.tick_ms = mark->layout.tick_ms;
	data.epoch_ms = mark->layout.epoch_ms;
	data.mark_ms = mark->mark_ms;
	data.written_ms = mark->written_ms;
	data.flags = (mark->clean ? MARK_FLAG_CLEAN : 0) |
		(mark->layout.sequence_last ? MARK_FLAG_SEQUENCE_LAST : 0);
	data.crc = mark_crc(&data);

	fd = OpenTransientFile(MARK_TEMP_FILE, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", MARK_TEMP_FILE)));
		return false;
	}
	errno = 0;
	if (write(fd, &data, sizeof(data)) != sizeof(data))
	{
		int			save_errno = errno;

		CloseTransientFile(fd);
		/* a short write without an error means the disk is full */
		errno = save_errno ? save_errno : ENOSPC;
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", MARK_TEMP_FILE)));
		return false;
	}
	if (CloseTransientFile(fd) != 0)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", MARK_TEMP_FILE)));
		return false;
	}
	return durable_rename(MARK_TEMP_FILE, SNOWFLAKE_MARK_FILE, elevel) == 0;
}
