# The server's clock stepped back while it runs (libfaketime): a step within
# snowflake.rollback_tolerance_ms is waited out, a larger one is refused with
# SQLSTATE 58000 until the clock catches up.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;

my $offset_file = "$PostgreSQL::Test::Utils::tmp_check/faketime_offset";

# Timeouts misbehave while the offset changes (see SnowflakeTest.pm): keep them off.
my $node = snowflake_node('clock', q{
snowflake.rollback_tolerance_ms = 5000
statement_timeout = 0
lock_timeout = 0
});
start_with_fake_clock($node, $offset_file);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

my $id1 = draw_max($node, 100);

# Back by 3 s, within the 5 s tolerance: the call waits for the clock to
# pass the last id's millisecond, then issues a larger id.
step_clock($offset_file, '-3s');
my $started = time();
my $id2 = draw_max($node, 1);
my $elapsed = time() - $started;
is_above($node, $id2, $id1, 'after a step back within the tolerance ids keep increasing');
cmp_ok($elapsed, '>', 1.0, 'the step back was waited out');
is($node->safe_psql('postgres', 'SELECT rollbacks_waited, rollbacks_refused FROM snowflake_stats'),
	'1|0', 'the wait is counted');

# Back by an hour: refused, state untouched.
my $last_ms = $node->safe_psql('postgres', 'SELECT last_timestamp_ms FROM snowflake_stats');
step_clock($offset_file, '-3600s');
my $stderr = psql_stderr($node, 'SELECT snowflake_nextval()');
like($stderr, qr/ERROR:  58000: clock moved backwards by 3[56]\d{5} ms/,
	'with SQLSTATE 58000 and the size of the step');
like($stderr, qr/DETAIL:  The clock read .* when ids were last issued, more than "snowflake.rollback_tolerance_ms" \(5000 ms\)/,
	'and a detail naming the tolerance');
is($node->safe_psql('postgres',
		'SELECT last_timestamp_ms, rollbacks_refused FROM snowflake_stats'),
	"$last_ms|1", 'the refusal left the state untouched and is counted');

# The clock comes back: ids are issued again, above the earlier ones.
step_clock($offset_file, '+0s');
my $id3 = draw_max($node, 10);
is_above($node, $id3, $id2, 'once the clock is forward again ids are issued, increasing');

# A wait for the clock reacts to a query cancel.
step_clock($offset_file, '-8s');
$node->safe_psql('postgres', 'ALTER SYSTEM SET snowflake.rollback_tolerance_ms = 10000; SELECT pg_reload_conf()');
my $waiter = $node->background_psql('postgres', on_error_stop => 0);
$waiter->query_until(qr/waiting/, "\\echo waiting\nSELECT snowflake_nextval();\n");
$node->poll_query_until('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT snowflake_nextval();' AND wait_event_type = 'Extension'")
  or die 'the waiting backend was not found';
$started = time();
my $result = $waiter->query('SELECT 1');
like($waiter->{stderr}, qr/canceling statement due to user request/,
	'a query cancel interrupts the wait for the clock');
$waiter->quit;

# ... and to statement_timeout, while the offset stays put.
$stderr = psql_stderr($node, "SET statement_timeout = '300ms';\nSELECT snowflake_nextval()");
like($stderr, qr/canceling statement due to statement timeout/,
	'statement_timeout interrupts the wait for the clock');

step_clock($offset_file, '+0s');
$node->stop;
done_testing();
