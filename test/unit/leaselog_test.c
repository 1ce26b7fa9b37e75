/*-------------------------------------------------------------------------
 *
 * leaselog_test.c
 *	  Unit test of the lease client's check that a coordinator's session
 *	  would not log the lease secrets (src/leaselog.c), built without a
 *	  server.
 *
 * A session with PostgreSQL's defaults, then each setting that would log
 * a statement's parameters, alone and with the setting that stops it, and
 * the settings that log no lease call (log_statement = ddl or mod).
 *
 *   leaselog_test
 *
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "leaselog.h"
#include "unit.h"

typedef struct LoggingCase
{
	const char *name;			/* a setting, or NULL for the defaults alone */
	const char *value;
	const char *name2;			/* and another one, or NULL */
	const char *value2;
	const char *problem;		/* expected, or NULL */
	const char *fix;
} LoggingCase;

/* a session's settings with PostgreSQL's defaults (no extension loaded) */
static const char *const default_names[] = {
	"log_statement", "log_min_duration_statement", "log_min_duration_sample",
	"log_statement_sample_rate", "log_transaction_sample_rate", "log_parameter_max_length",
	"log_parameter_max_length_on_error", "log_min_error_statement", "debug_print_plan",
};
static const char *const default_values[] = {
	"none", "-1", "-1", "1", "0", "-1", "0", "error", "off",
};

static const LoggingCase cases[] = {
	{NULL, NULL, NULL, NULL, NULL, NULL},
	{"log_statement", "ddl", NULL, NULL, NULL, NULL},
	{"log_statement", "mod", NULL, NULL, NULL, NULL},
	{"log_statement", "all", NULL, NULL, "log_statement = all", "log_parameter_max_length = 0"},
	{"log_statement", "all", "log_parameter_max_length", "0", NULL, NULL},
	{"log_statement", "all", "log_parameter_max_length", "8", "log_statement = all", "log_parameter_max_length = 0"},
	{"log_min_duration_statement", "0", NULL, NULL, "log_min_duration_statement = 0", "log_parameter_max_length = 0"},
	{"log_min_duration_statement", "250", NULL, NULL, "log_min_duration_statement = 250", "log_parameter_max_length = 0"},
	{"log_min_duration_statement", "0", "log_parameter_max_length", "0", NULL, NULL},
	{"log_min_duration_sample", "0", NULL, NULL, "log_min_duration_sample = 0", "log_parameter_max_length = 0"},
	{"log_min_duration_sample", "0", "log_statement_sample_rate", "0", NULL, NULL},
	{"log_transaction_sample_rate", "0.01", NULL, NULL, "log_transaction_sample_rate = 0.01", "log_parameter_max_length = 0"},
	{"log_transaction_sample_rate", "0.5", "log_parameter_max_length", "0", NULL, NULL},
	{"log_parameter_max_length_on_error", "-1", NULL, NULL, "log_parameter_max_length_on_error = -1",
	 "log_parameter_max_length_on_error = 0"},
	{"log_parameter_max_length_on_error", "64", "log_min_error_statement", "panic", NULL, NULL},
	{"auto_explain.log_min_duration", "0", NULL, NULL, "auto_explain.log_min_duration = 0",
	 "auto_explain.log_min_duration = -1"},
	{"auto_explain.log_min_duration", "-1", NULL, NULL, NULL, NULL},
	{"pgaudit.log_parameter", "on", NULL, NULL, "pgaudit.log_parameter = on", "pgaudit.log_parameter = off"},
	{"pgaudit.log_parameter", "off", NULL, NULL, NULL, NULL},
	{"debug_print_plan", "on", NULL, NULL, "debug_print_plan = on", "debug_print_plan = off"},
};

int
main(int argc, char **argv)
{
	int			ndefaults = (int) lengthof(default_names);

	for (int c = 0; c < (int) lengthof(cases); c++)
	{
		const LoggingCase *k = &cases[c];
		const char *names[16];
		const char *values[16];
		int			n = 0;
		const char *fix = "unset";
		char	   *problem;

		for (int i = 0; i < ndefaults; i++)
		{
			names[n] = default_names[i];
			values[n] = default_values[i];
			if (k->name != NULL && strcmp(names[n], k->name) == 0)
				values[n] = k->value;
			else if (k->name2 != NULL && strcmp(names[n], k->name2) == 0)
				values[n] = k->value2;
			n++;
		}
		/* an extension's setting exists only where it is loaded */
		if (k->name != NULL && strchr(k->name, '.') != NULL)
		{
			names[n] = k->name;
			values[n++] = k->value;
		}
		problem = LeaseLoggingProblem(n, names, values, &fix);
		CHECK((problem == NULL) == (k->problem == NULL) &&
			  (problem == NULL || strcmp(problem, k->problem) == 0),
			  "case %d: %s = %s: problem %s, expected %s", c, k->name ? k->name : "(defaults)",
			  k->value ? k->value : "", problem ? problem : "none", k->problem ? k->problem : "none");
		CHECK((fix == NULL) == (k->fix == NULL) && (fix == NULL || strcmp(fix, k->fix) == 0),
			  "case %d: fix %s, expected %s", c, fix ? fix : "none", k->fix ? k->fix : "none");
	}
	if (failures > 0)
	{
		fprintf(stderr, "leaselog_test: %d failed\n", failures);
		return 1;
	}
	printf("leaselog_test: %d sessions' logging settings judged as expected\n", (int) lengthof(cases));
	return 0;
}
