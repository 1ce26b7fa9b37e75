/*-------------------------------------------------------------------------
 *
 * leaselog.c
 *	  Whether a coordinator's session would log the lease secrets (see
 *	  leaselog.h).
 *
 * The parameters of a statement reach the log by these ways, each with
 * the setting that closes it for one role (ALTER ROLE ... SET):
 * - statements logged by kind (log_statement = all), by duration
 *   (log_min_duration_statement, log_min_duration_sample with a sample
 *   rate) or by sampled transaction (log_transaction_sample_rate), with
 *   their parameters unless log_parameter_max_length is 0;
 * - a statement that fails, with its parameters when
 *   log_parameter_max_length_on_error is not 0 (unless failing statements
 *   are not logged at all: log_min_error_statement = panic);
 * - plans, which show the values of parameters a custom plan folded in:
 *   auto_explain.log_min_duration, debug_print_plan;
 * - pgaudit.log_parameter.
 * log_statement = ddl or mod logs none of the lease calls, which are
 * SELECTs.
 *
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "leaselog.h"

/* The value of setting name, or NULL if the session has none */
static const char *
logging_setting(int n, const char *const *names, const char *const *values, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return values[i];
	return NULL;
}

/* A number of the session's settings (absent: def) */
static double
logging_number(int n, const char *const *names, const char *const *values, const char *name,
			   double def)
{
	const char *value = logging_setting(n, names, values, name);

	return value != NULL ? strtod(value, NULL) : def;
}

/* A boolean of the session's settings, as pg_settings shows it (absent: off) */
static bool
logging_on(int n, const char *const *names, const char *const *values, const char *name)
{
	const char *value = logging_setting(n, names, values, name);

	return value != NULL && strcmp(value, "on") == 0;
}

char *
LeaseLoggingProblem(int n, const char *const *names, const char *const *values,
					const char **fix)
{
#define NUM(name, def)	logging_number(n, names, values, (name), (def))
	const char *statement = logging_setting(n, names, values, "log_statement");
	const char *error_level = logging_setting(n, names, values, "log_min_error_statement");

	*fix = "log_parameter_max_length = 0";
	if (NUM("log_parameter_max_length", -1) != 0)
	{
		if (statement != NULL && strcmp(statement, "all") == 0)
			return psprintf("log_statement = %s", statement);
		if (NUM("log_min_duration_statement", -1) >= 0)
			return psprintf("log_min_duration_statement = %g", NUM("log_min_duration_statement", -1));
		if (NUM("log_min_duration_sample", -1) >= 0 && NUM("log_statement_sample_rate", 0) > 0)
			return psprintf("log_min_duration_sample = %g", NUM("log_min_duration_sample", -1));
		if (NUM("log_transaction_sample_rate", 0) > 0)
			return psprintf("log_transaction_sample_rate = %g", NUM("log_transaction_sample_rate", 0));
	}
	*fix = "log_parameter_max_length_on_error = 0";
	if (NUM("log_parameter_max_length_on_error", 0) != 0 &&
		(error_level == NULL || strcmp(error_level, "panic") != 0))
		return psprintf("log_parameter_max_length_on_error = %g",
						NUM("log_parameter_max_length_on_error", 0));
	*fix = "auto_explain.log_min_duration = -1";
	if (NUM("auto_explain.log_min_duration", -1) >= 0)
		return psprintf("auto_explain.log_min_duration = %g", NUM("auto_explain.log_min_duration", -1));
	*fix = "pgaudit.log_parameter = off";
	if (logging_on(n, names, values, "pgaudit.log_parameter"))
		return psprintf("pgaudit.log_parameter = on");
	*fix = "debug_print_plan = off";
	if (logging_on(n, names, values, "debug_print_plan"))
		return psprintf("debug_print_plan = on");
	*fix = NULL;
	return NULL;
#undef NUM
}
