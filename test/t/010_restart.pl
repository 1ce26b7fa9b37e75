# Restarts and crashes: ids drawn after each are above every id before it.
# Each time, before the first call, the clock is set back (libfaketime) to
# 500 ms ($step) before the last id, so that the restart alone cannot have
# moved the clock past it: only the high-water mark keeps the ids from
# repeating.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $offset_file = "$PostgreSQL::Test::Utils::tmp_check/faketime_offset_010";
my $step = 500;

# The first call finds the clock about $step ms behind the time the mark was
# written: within the tolerance, so it waits for the clock to pass the mark
# instead of refusing.  Timeouts misbehave while the offset changes (see
# SnowflakeTest.pm): keep them off.
my $node = snowflake_node('restart', q{
restart_after_crash = on
snowflake.rollback_tolerance_ms = 2000
statement_timeout = 0
lock_timeout = 0
});
start_with_fake_clock($node, $offset_file);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

for my $mode ('fast', 'immediate', 'fast', 'immediate')
{
	my $last = draw_max($node, 20000);
	$node->stop($mode);
	start_with_fake_clock($node, $offset_file);
	clock_behind_id($node, $offset_file, $last, $step);
	is_above($node, draw_max($node, 10), $last, "ids after a $mode stop are above those before");
	clock_right($offset_file);
}

# SIGKILL of a backend: the postmaster kills every backend and builds shared
# memory anew, generator state included.
my $since = $node->safe_psql('postgres', 'SELECT stats_since FROM snowflake_stats');
my ($stdout, $stderr) = ('', '');
my $victim = IPC::Run::start(
	[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c', 'SELECT pg_sleep(600)' ],
	'>', \$stdout, '2>', \$stderr);
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)'")
  or die 'the victim backend did not start';
my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)'");
my $last = draw_max($node, 20000);

kill 'KILL', $pid;
$victim->finish;
$node->poll_query_until('postgres', 'SELECT true')
  or die 'the server did not come back after the crash';

isnt($node->safe_psql('postgres', 'SELECT stats_since FROM snowflake_stats'),
	$since, 'shared memory was built anew after the crash');
clock_behind_id($node, $offset_file, $last, $step);
is_above($node, draw_max($node, 10), $last, 'ids after a backend crash are above those before');
clock_right($offset_file);
is($node->safe_psql('postgres',
		'SELECT ids_issued, sequence_waits, rollbacks_refused FROM snowflake_stats'),
	'10|0|0', 'the counters restarted with shared memory');

$node->stop;
done_testing();
