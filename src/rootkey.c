/*-------------------------------------------------------------------------
 *
 * rootkey.c
 *	  The root key: the setting "snowflake.root_key_command", the one run of
 *	  that command when the server starts, and the 256 bits it prints, kept
 *	  in process memory only; the same for the previous root key
 *	  ("snowflake.previous_root_key_command") during a root rotation.  Also
 *	  the SQL function that shows the root key's check value, so that the
 *	  servers of a fleet can be compared.
 *
 * Where the command runs: in the postmaster, once, while it sets up shared
 * memory at start-up (the library must be in shared_preload_libraries).
 * Every process it forks afterwards (backends, parallel workers, background
 * workers) inherits the key in its own memory; nothing holds it in shared
 * memory, a file, a setting or a table.  Running it there rather than in
 * each backend means one call of a KMS or Vault agent per start, not one
 * per connection; a slow or hanging command delays the start, where the
 * operator sees it, rather than a user's query that cannot be cancelled
 * while it waits on a pipe; and what went wrong is in the log before the
 * server accepts connections (as for "ssl_passphrase_command").  The
 * postmaster runs it with its signals blocked, so its reaper cannot take
 * the command's exit status from pclose().  A crash of a backend does not
 * run it again (the postmaster keeps its memory); a change of the command
 * takes a restart.  Without preload, no process ran it: the functions that
 * need the key refuse, and say to preload the library.  (EXEC_BACKEND
 * builds, which re-exec every child, are not supported.)
 *
 * The command's output is read into a buffer on the stack, parsed, and
 * wiped; it never reaches a setting, a log line or an error, which give
 * only its length or the command's exit status.  Its standard error is the
 * server's, so it goes to the server log: a command must not print the key
 * there.
 *
 * Locking: none.  The postmaster writes the key before it forks anything
 * that reads it, and no process writes it afterwards.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "port.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "ff1.h"
#include "rootkey.h"

/* The most a command may print: the digits, a newline and some blanks */
#define ROOT_KEY_OUTPUT_MAX		256

typedef enum RootKeyState
{
	ROOT_KEY_NOT_RUN,			/* no start-up here: the library was not
								 * preloaded */
	ROOT_KEY_UNSET,				/* the setting is empty */
	ROOT_KEY_FAILED,			/* problem says why */
	ROOT_KEY_READY
} RootKeyState;

/* A root key, from the command of its setting */
typedef struct RootKeySlot
{
	const char *setting;
	const char *what;			/* for messages */
	char	   *command;		/* the setting's value */
	RootKeyState state;
	unsigned char key[ROOT_KEY_BYTES];
	char	   *problem;		/* a sentence on why the command gave no
								 * key, in TopMemoryContext */
} RootKeySlot;

/* The root key, and the previous one while keys are rewrapped */
static RootKeySlot root_key = {.setting = "snowflake.root_key_command", .what = "the root key"};
static RootKeySlot previous_root_key = {
	.setting = "snowflake.previous_root_key_command", .what = "the previous root key"
};

PG_FUNCTION_INFO_V1(snowflake_root_key_check);

void
RootKeyInit(void)
{
	GucContext	context = process_shared_preload_libraries_in_progress ? PGC_POSTMASTER : PGC_SIGHUP;

	/*
	 * Superuser only, as "ssl_passphrase_command": the command names where
	 * the key lives.  A library loaded after start-up cannot define a
	 * PGC_POSTMASTER variable; it then runs no command anyway.
	 */
	DefineCustomStringVariable(root_key.setting,
							   "Command that prints the root key, 64 hexadecimal digits, under which the keys of public ids are wrapped.",
							   "Run once, when the server starts; its output is kept in memory only.",
							   &root_key.command,
							   "",
							   context,
							   GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);
	DefineCustomStringVariable(previous_root_key.setting,
							   "Command that prints the previous root key, while the keys of public ids are rewrapped under a new one; empty otherwise.",
							   "Keys wrapped under it are unwrapped with it until snowflake_root_key_rewrap() wraps them under the root key.",
							   &previous_root_key.command,
							   "",
							   context,
							   GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);
}

static int
rootkey_hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * The key in output[0..length-1]: 64 hexadecimal digits, blanks around
 * them allowed.  Returns NULL, or a sentence on what is wrong that says
 * nothing of the output but its length.
 */
static const char *
rootkey_parse(const char *output, size_t length, unsigned char *key)
{
	size_t		start = 0;
	size_t		end = length;

	while (start < end && isspace((unsigned char) output[start]))
		start++;
	while (end > start && isspace((unsigned char) output[end - 1]))
		end--;
	if (end - start != ROOT_KEY_BYTES * 2)
		return psprintf("The command printed %zu characters besides blanks, not %d hexadecimal digits.",
						end - start, ROOT_KEY_BYTES * 2);
	for (int i = 0; i < ROOT_KEY_BYTES; i++)
	{
		int			high = rootkey_hex_value(output[start + 2 * i]);
		int			low = rootkey_hex_value(output[start + 2 * i + 1]);

		if (high < 0 || low < 0)
			return psprintf("The command printed %d characters, not all of them hexadecimal digits.",
							ROOT_KEY_BYTES * 2);
		key[i] = (unsigned char) (high << 4 | low);
	}
	return NULL;
}

/*
 * Run command and parse what it prints into key; NULL, or a sentence on
 * what went wrong.
 */
static const char *
rootkey_run(const char *command, unsigned char *key)
{
	char		output[ROOT_KEY_OUTPUT_MAX + 1];
	size_t		length = 0;
	bool		too_long = false;
	FILE	   *pipe;
	int			status;
	const char *problem;

	pipe = OpenPipeStream(command, "r");
	if (pipe == NULL)
		return psprintf("The command could not be started: %m.");
	while (length < ROOT_KEY_OUTPUT_MAX)
	{
		size_t		n = fread(output + length, 1, ROOT_KEY_OUTPUT_MAX - length, pipe);

		if (n == 0)
			break;
		length += n;
	}
	if (length == ROOT_KEY_OUTPUT_MAX && fread(output + length, 1, 1, pipe) == 1)
		too_long = true;
	/* closes the pipe first: a command still printing ends on SIGPIPE */
	status = ClosePipeStream(pipe);
	if (too_long)
		problem = psprintf("The command printed more than %d bytes.", ROOT_KEY_OUTPUT_MAX);
	else if (status == -1)
		problem = psprintf("The end of the command could not be awaited: %m.");
	else if (status != 0)
		problem = psprintf("The command failed: %s.", wait_result_to_str(status));
	else
		problem = rootkey_parse(output, length, key);
	explicit_bzero(output, sizeof(output));
	return problem;
}

/* Run a slot's command, once; log what went wrong */
static void
rootkey_startup(RootKeySlot *slot)
{
	MemoryContext context = CurrentMemoryContext;
	const char *volatile problem = NULL;

	if (slot->state != ROOT_KEY_NOT_RUN)
		return;
	if (slot->command == NULL || slot->command[0] == '\0')
	{
		slot->state = ROOT_KEY_UNSET;
		return;
	}

	/*
	 * An error here would stop the postmaster; the server must start
	 * whatever the command does, so even one of ours (out of memory, out of
	 * file descriptors) becomes a problem to report.
	 */
	PG_TRY();
	{
		problem = rootkey_run(slot->command, slot->key);
	}
	PG_CATCH();
	{
		ErrorData  *error;

		MemoryContextSwitchTo(context);
		error = CopyErrorData();
		FlushErrorState();
		problem = psprintf("The command could not be run: %s.", error->message);
	}
	PG_END_TRY();

	if (problem == NULL)
	{
		slot->state = ROOT_KEY_READY;
		return;
	}
	explicit_bzero(slot->key, sizeof(slot->key));
	slot->problem = MemoryContextStrdup(TopMemoryContext, problem);
	slot->state = ROOT_KEY_FAILED;
	ereport(WARNING,
			(errcode(ERRCODE_SNOWFLAKE_ROOT_KEY),
			 errmsg("could not read %s from \"%s\"", slot->what, slot->setting),
			 errdetail_internal("%s", slot->problem),
			 errhint("Public ids are refused until the command prints the key and the server is restarted; ids are not affected.")));
}

void
RootKeyStartup(void)
{
	/* the postmaster (or a single-user server) */
	if (IsUnderPostmaster)
		return;
	rootkey_startup(&root_key);
	rootkey_startup(&previous_root_key);
}

const unsigned char *
RootKeyRequire(void)
{
	switch (root_key.state)
	{
		case ROOT_KEY_READY:
			return root_key.key;
		case ROOT_KEY_NOT_RUN:
			ereport(ERROR,
					(errcode(ERRCODE_SNOWFLAKE_ROOT_KEY),
					 errmsg("no root key: snowflake must be loaded via \"shared_preload_libraries\""),
					 errdetail("The server runs \"snowflake.root_key_command\" when it starts, with the library preloaded."),
					 errhint("Add \"snowflake\" to \"shared_preload_libraries\" in postgresql.conf and restart the server.")));
			break;
		case ROOT_KEY_UNSET:
			ereport(ERROR,
					(errcode(ERRCODE_SNOWFLAKE_ROOT_KEY),
					 errmsg("no root key: \"snowflake.root_key_command\" is not set"),
					 errhint("Set it to a command that prints the root key, 64 hexadecimal digits (every server of the application needs the same key), and restart the server.")));
			break;
		case ROOT_KEY_FAILED:
			ereport(ERROR,
					(errcode(ERRCODE_SNOWFLAKE_ROOT_KEY),
					 errmsg("no root key: \"snowflake.root_key_command\" failed when the server started"),
					 errdetail_internal("%s", root_key.problem),
					 errhint("Fix the command, then restart the server.")));
			break;
	}
	pg_unreachable();
}

const unsigned char *
RootKeyPrevious(void)
{
	return previous_root_key.state == ROOT_KEY_READY ? previous_root_key.key : NULL;
}

/*
 * The check value of a root key: the first 3 bytes of AES-256 of a zero
 * block under it, in hex, as the public ids' keys have one: equal on two
 * servers when they hold the same root key, and nothing of the key
 * otherwise.
 */
char *
RootKeyCheckValueOf(const unsigned char *key)
{
	unsigned char zero[16] = {0};
	unsigned char block[16];
	Ff1Key		aes = {NULL};
	bool		done;

	if (Ff1KeyInit(&aes, key, ROOT_KEY_BYTES) != FF1_OK)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not prepare a root key")));
	done = Ff1Block(&aes, zero, block);
	Ff1KeyFree(&aes);
	if (!done)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not compute the check value of a root key")));
	return psprintf("%02X%02X%02X", block[0], block[1], block[2]);
}

char *
RootKeyCheckValue(void)
{
	return RootKeyCheckValueOf(RootKeyRequire());
}

/* snowflake_root_key_check() returns text: RootKeyCheckValue() */
Datum
snowflake_root_key_check(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(RootKeyCheckValue()));
}
