# The data directory made unwritable under a client streaming ids: the mark
# can no longer be replaced, so once the clock reaches the last mark on disk
# the calls fail with the file error (the worker warns meanwhile), and
# issue again as soon as the directory is writable.  Every id after is
# above every id before.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SnowflakeTest;

my $interval = 500;
my $node = snowflake_node('unwritable', "snowflake.mark_interval_ms = $interval\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $pgdata = $node->data_dir;

my $file = "$PostgreSQL::Test::Utils::tmp_check/unwritable.out";
my $client = stream_ids($node, $file, 1_000_000);

chmod 0500, $pgdata or die $!;
my $locked = time();
my $finished = $client->finish;
my $elapsed = time() - $locked;
my ($count, $largest, $increasing) = stream_largest($file);
ok(!$finished, 'the streaming call failed');
cmp_ok($elapsed, '<=', $interval / 1000 * 2 + 5, "within the reservation ($elapsed s)");
ok($increasing, "the $count ids it received were increasing");

my $stderr = psql_stderr($node, 'SELECT snowflake_nextval()');
like($stderr, qr/could not create file "snowflake\.mark\.tmp": Permission denied/,
	'a call says why');
like($stderr, qr/ERROR:  42501/, 'with the SQLSTATE of the file error');
ok($node->log_contains('WARNING:  could not create file "snowflake.mark.tmp"'),
	'the worker warned in the log');

chmod 0700, $pgdata or die $!;
my $after;
for (1 .. 100)
{
	my ($ret, $out) = $node->psql('postgres', 'SELECT snowflake_nextval()');
	if ($ret == 0) { $after = $out; last; }
	usleep(100_000);
}
ok(defined $after, 'ids are issued again once the directory is writable');
is_above($node, $after, $largest, 'above every id issued before');

$node->stop;
done_testing();
