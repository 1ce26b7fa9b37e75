/*-------------------------------------------------------------------------
 *
 * leaselog.h
 *	  Whether a session on the lease coordinator would write the parameters
 *	  of its statements, and so the lease secrets, to the coordinator's log.
 *
 * A statement is logged before it runs: no refusal on the coordinator's
 * side could take a logged secret back.  So the lease client (lease.c)
 * reads the session's settings before every call, and sends no secret to
 * a session whose settings would log it.
 *
 * No PostgreSQL state: the unit test (test/unit/leaselog_test.c) links this
 * file alone.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_LEASELOG_H
#define SNOWFLAKE_LEASELOG_H

/* The settings LeaseLoggingProblem reads, as an array literal for the query */
#define LEASE_LOGGING_SETTINGS \
	"{log_statement,log_min_duration_statement,log_min_duration_sample," \
	"log_statement_sample_rate,log_transaction_sample_rate,log_parameter_max_length," \
	"log_parameter_max_length_on_error,log_min_error_statement," \
	"auto_explain.log_min_duration,pgaudit.log_parameter,debug_print_plan}"

/*
 * Would a session with these settings (names and values, as pg_settings
 * has them) write the parameters of its statements to the server's log?
 * Returns NULL if not, else the setting that would ("log_statement =
 * all", palloc'd), and in *fix the setting that stops it for one role.
 */
extern char *LeaseLoggingProblem(int n, const char *const *names, const char *const *values,
								 const char **fix);

#endif							/* SNOWFLAKE_LEASELOG_H */
