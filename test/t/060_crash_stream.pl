# A client streams ids at full speed while the postmaster and every backend
# are killed with SIGKILL.  After the restart every new id is above the
# largest id the client received, and the first one came within the bound.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;

my $interval = 3000;
my $node = snowflake_node('stream', "snowflake.mark_interval_ms = $interval\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

my $received = "$PostgreSQL::Test::Utils::tmp_check/stream.out";
my $client = stream_ids($node, $received, 20_000_000);
ok(-s $received >= 20_000_000, 'the client received ids at full speed');
kill_server($node);
$client->finish;

my ($count, $largest, $increasing) = stream_largest($received);
ok($increasing, "the $count ids received were increasing");

$node->start;
my $started = time();
my $first = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
my $elapsed = time() - $started;
is_above($node, $first, $largest, 'the first id after the crash is above every id the client received');
my $wait = $node->safe_psql('postgres', 'SELECT startup_wait_ms FROM snowflake_stats');
cmp_ok($wait, '<=', $interval, "the mark held ids back at most the reservation ($wait ms)");
cmp_ok($elapsed, '<', $interval / 1000 + 2, 'the first id came within the reservation');
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, 100000)) s
	 WHERE id <= $largest}),
	'0', 'and so do the next 100000');

$node->stop;
done_testing();
