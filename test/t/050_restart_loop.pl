# Twenty restarts, fast and immediate stops mixed, with ids drawn right
# before each stop: every id after a restart is above every id before it,
# and the first one waits no longer than the mark allows.  Before that first
# call the clock is set back (libfaketime) to 500 ms ($step) before the last
# id, so that the restart alone cannot have moved the clock past it: only the
# high-water mark keeps the ids from repeating.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $offset_file = "$PostgreSQL::Test::Utils::tmp_check/faketime_offset_050";
my $step = 500;

# The first call finds the clock about $step ms behind the time the mark was
# written: within the tolerance, so it waits for the clock to pass the mark
# instead of refusing.  The clock is set back once the server is up, so the
# wait the mark itself imposed at start-up is measured as before.  Timeouts
# misbehave while the offset changes (see SnowflakeTest.pm): keep them off.
my $node = snowflake_node('loop', q{
snowflake.mark_interval_ms = 1000
snowflake.rollback_tolerance_ms = 2000
statement_timeout = 0
lock_timeout = 0
});
start_with_fake_clock($node, $offset_file);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

my @modes = (('fast', 'immediate', 'immediate', 'fast') x 5);
for my $i (0 .. $#modes)
{
	my $mode = $modes[$i];
	my $last = draw_max($node, 20000);
	$node->stop($mode);
	start_with_fake_clock($node, $offset_file);
	clock_behind_id($node, $offset_file, $last, $step);
	my $first = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
	is_above($node, $first, $last, "restart $i ($mode stop): the first id is above the last one before");
	clock_right($offset_file);
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
start_with_fake_clock($node, $offset_file);
# (behind the later of the two: on a loaded machine the second draw can end
# seconds after the first, once 10 s for these 20,000 calls, and the mark
# then lies that far past the first, beyond the tolerance of a clock set
# behind it)
clock_behind_id($node, $offset_file, $read_only, $step);
my $first = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
is_above($node, $first, $rolled_back, 'the first id after a crash is above ids of a rolled-back transaction');
is_above($node, $first, $read_only, 'and above ids drawn in a read-only transaction');
clock_right($offset_file);

# The mark on disk after a clean stop is exactly the last millisecond + 1.
my $last = draw_max($node, 10);
$node->stop('fast');
start_with_fake_clock($node, $offset_file);
is($node->safe_psql('postgres', qq{
	SELECT extract(epoch FROM high_water_mark) * 1000 = (SELECT timestamp_ms + 1 FROM snowflake_decode($last))
	  FROM snowflake_stats}),
	't', 'a clean stop records the last id\'s millisecond');

$node->stop;
done_testing();
