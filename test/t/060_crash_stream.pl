# A client streams ids at full speed while the postmaster and every backend
# are killed with SIGKILL.  After the restart every new id is above the
# largest id the client received, and the first one came within the bound.
# Before that first call the clock is set back (libfaketime) to 1 s ($step)
# before the largest id received, a third of the reservation, so that the
# restart alone cannot have moved the clock past it: only the high-water mark
# keeps the ids from repeating.  A whole second, so that without the mark the
# next 100000 ids, drawn a few client connections later, would still begin
# below it.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;

my $offset_file = "$PostgreSQL::Test::Utils::tmp_check/faketime_offset_060";
my $interval = 3000;
my $step = 1000;

# The first call finds the clock about $step ms behind the time the mark was
# written: within the tolerance, so it waits for the clock to pass the mark
# instead of refusing.  Timeouts misbehave while the offset changes (see
# SnowflakeTest.pm): keep them off.
my $node = snowflake_node('stream', qq{
snowflake.mark_interval_ms = $interval
snowflake.rollback_tolerance_ms = 3000
statement_timeout = 0
lock_timeout = 0
});
# libfaketime makes every clock read cost a file read: stream on the real
# clock, and take libfaketime on only for the restart.
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

my $received = "$PostgreSQL::Test::Utils::tmp_check/stream.out";
my $client = stream_ids($node, $received, 20_000_000);
ok(-s $received >= 20_000_000, 'the client received ids at full speed');
kill_server($node);
$client->finish;

my ($count, $largest, $increasing) = stream_largest($received);
ok($increasing, "the $count ids received were increasing");

start_with_fake_clock($node, $offset_file);
clock_behind_id($node, $offset_file, $largest, $step);
my $started = time();
my $first = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
my $elapsed = time() - $started;
is_above($node, $first, $largest, 'the first id after the crash is above every id the client received');
my $wait = $node->safe_psql('postgres', 'SELECT startup_wait_ms FROM snowflake_stats');
cmp_ok($wait, '<=', $interval, "the mark held ids back at most the reservation ($wait ms)");
# the wait for the clock, set back by the step, comes on top of the reserve
cmp_ok($elapsed, '<', ($interval + $step) / 1000 + 2,
	'the first id came within the reservation and the step');
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, 100000)) s
	 WHERE id <= $largest}),
	'0', 'and so do the next 100000');

$node->stop;
done_testing();
