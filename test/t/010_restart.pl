# Restarts and crashes: ids drawn after each are above every id before it.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('restart', "restart_after_crash = on\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

for my $mode ('fast', 'immediate', 'fast', 'immediate')
{
	my $last = draw_max($node, 20000);
	$node->stop($mode);
	$node->start;
	is_above($node, draw_max($node, 10), $last, "ids after a $mode stop are above those before");
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
is_above($node, draw_max($node, 10), $last, 'ids after a backend crash are above those before');
is($node->safe_psql('postgres',
		'SELECT ids_issued, sequence_waits, rollbacks_refused FROM snowflake_stats'),
	'10|0|0', 'the counters restarted with shared memory');

$node->stop;
done_testing();
