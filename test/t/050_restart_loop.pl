# Twenty restarts, fast and immediate stops mixed, with ids drawn right
# before each stop: every id after a restart is above every id before it,
# and the first one waits no longer than the mark allows.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('loop', "snowflake.mark_interval_ms = 1000\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

my @modes = (('fast', 'immediate', 'immediate', 'fast') x 5);
for my $i (0 .. $#modes)
{
	my $mode = $modes[$i];
	my $last = draw_max($node, 20000);
	$node->stop($mode);
	$node->start;
	my $first = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
	is_above($node, $first, $last, "restart $i ($mode stop): the first id is above the last one before");
	my $wait = $node->safe_psql('postgres', 'SELECT startup_wait_ms FROM snowflake_stats');
	if ($mode eq 'fast')
	{
		cmp_ok($wait, '<=', 1, "restart $i: after a clean stop the mark held ids back at most 1 ms");
	}
	else
	{
		cmp_ok($wait, '<=', 1000, "restart $i: after an immediate stop at most the reservation");
	}
}

# Ids handed to a transaction that rolled back, and to a read-only one,
# count as issued all the same.
$node->safe_psql('postgres', 'CREATE TABLE t (id bigint DEFAULT snowflake_nextval())');
my $rolled_back = $node->safe_psql('postgres', q{
	BEGIN;
	INSERT INTO t SELECT FROM generate_series(1, 20000);
	SELECT max(id) FROM t;
	ROLLBACK;});
my $read_only = $node->safe_psql('postgres', q{
	BEGIN TRANSACTION READ ONLY;
	SELECT max(snowflake_nextval()) FROM generate_series(1, 20000);
	COMMIT;});
$node->stop('immediate');
$node->start;
my $first = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
is_above($node, $first, $rolled_back, 'the first id after a crash is above ids of a rolled-back transaction');
is_above($node, $first, $read_only, 'and above ids drawn in a read-only transaction');

# The mark on disk after a clean stop is exactly the last millisecond + 1.
my $last = draw_max($node, 10);
$node->stop('fast');
$node->start;
is($node->safe_psql('postgres', qq{
	SELECT extract(epoch FROM high_water_mark) * 1000 = (SELECT timestamp_ms + 1 FROM snowflake_decode($last))
	  FROM snowflake_stats}),
	't', 'a clean stop records the last id\'s millisecond');

$node->stop;
done_testing();
