# Causal order across sessions, on every major (the isolation suite, which
# has the one-trial spec causal_order, cannot run on PostgreSQL 13): many
# times over, session a draws while it holds a lock that session b's draw
# waits for, then commits; b's value must be larger than the largest of
# a's.  Both sessions are dblink connections driven from one function, so
# the handoff is exact: b is seen waiting on the lock before a commits.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $trials = 300;

my $node = snowflake_node('order', "snowflake.worker_id = 7\nsnowflake.shards = '100'\n");
$node->start;
my $connstr = 'host=' . $node->host . ' port=' . $node->port . ' dbname=postgres';
$node->safe_psql('postgres', <<SQL);
CREATE EXTENSION snowflake;
CREATE EXTENSION dblink;
CREATE TABLE handoff (x int);
INSERT INTO handoff VALUES (1);

-- how many of the trials gave b a value not larger than a's
CREATE FUNCTION order_trials(expr text, type text, trials int, burst int) RETURNS int
LANGUAGE plpgsql AS \$\$
DECLARE
	b_pid int;
	a_val text;
	b_val text;
	after boolean;
	not_after int := 0;
BEGIN
	PERFORM dblink_connect('a', '$connstr');
	PERFORM dblink_connect('b', '$connstr');
	SELECT pid INTO b_pid FROM dblink('b', 'SELECT pg_backend_pid()') AS t(pid int);
	FOR i IN 1 .. trials LOOP
		PERFORM dblink_exec('a', 'BEGIN');
		PERFORM dblink_exec('a', 'LOCK TABLE handoff IN ACCESS EXCLUSIVE MODE');
		SELECT v INTO a_val
		  FROM dblink('a', format('SELECT v::text FROM (SELECT %s AS v FROM generate_series(1, %s)) s ORDER BY v DESC LIMIT 1',
								  expr, burst)) AS t(v text);
		PERFORM dblink_send_query('b', format('SELECT %s::text FROM handoff', expr));
		WHILE NOT EXISTS (SELECT FROM pg_locks
						   WHERE pid = b_pid AND NOT granted AND relation = 'handoff'::regclass) LOOP
			PERFORM pg_sleep(0.0001);
		END LOOP;
		PERFORM dblink_exec('a', 'COMMIT');
		SELECT v INTO b_val FROM dblink_get_result('b') AS t(v text);
		PERFORM * FROM dblink_get_result('b') AS t(v text);
		EXECUTE format('SELECT %L::%s > %L::%s', b_val, type, a_val, type) INTO after;
		IF NOT after THEN
			not_after := not_after + 1;
		END IF;
	END LOOP;
	PERFORM dblink_disconnect('a');
	PERFORM dblink_disconnect('b');
	RETURN not_after;
END;
\$\$;
SQL

for my $case (
	[ 'snowflake_nextval()',    'bigint' ],
	[ 'snowflake_nextval(100)', 'bigint' ],
	[ 'snowflake_uuidv7()',     'uuid' ])
{
	my ($expr, $type) = @$case;
	for my $burst (1, 1000)
	{
		is($node->safe_psql('postgres', "SELECT order_trials('$expr', '$type', $trials, $burst)"),
			'0', "$expr: what b drew after a committed is larger, $trials times (a drew $burst)");
	}
}

# the count can fail: values that go down are counted, every time
is($node->safe_psql('postgres', "SELECT order_trials('(-snowflake_nextval())', 'bigint', 20, 1)"),
	'20', 'a value not larger is counted');

$node->stop;
done_testing();
