# Causal order across sessions, on every major (the isolation suite, which
# has the one-trial spec causal_order, cannot run on PostgreSQL 13): many
# times over, session a draws while it holds a lock that session b's draw
# waits for, then commits; b's value must be larger than the largest of
# a's.  Both sessions are dblink connections driven from one function
# (test/causal_order.sql, shared with test/bench/uuidv7_order), so the
# handoff is exact: b is seen waiting on the lock before a commits.
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
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake; CREATE EXTENSION dblink');
$node->safe_psql('postgres', slurp_file("$FindBin::RealBin/../causal_order.sql"));

for my $case (
	[ 'snowflake_nextval()',    'bigint' ],
	[ 'snowflake_nextval(100)', 'bigint' ],
	[ 'snowflake_uuidv7()',     'uuid' ])
{
	my ($expr, $type) = @$case;
	for my $burst (1, 1000)
	{
		is($node->safe_psql('postgres', "SELECT order_trials('$connstr', '$expr', '$type', $trials, $burst)"),
			'0', "$expr: what b drew after a committed is larger, $trials times (a drew $burst)");
	}
}

# the count can fail: values that go down are counted, every time
is($node->safe_psql('postgres', "SELECT order_trials('$connstr', '(-snowflake_nextval())', 'bigint', 20, 1)"),
	'20', 'a value not larger is counted');

$node->stop;
done_testing();
