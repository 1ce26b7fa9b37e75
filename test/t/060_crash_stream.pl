# A client streams ids at full speed while the postmaster and every backend
# are killed with SIGKILL.  After the restart every new id is above the
# largest id the client received, and the first one came within the bound.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SnowflakeTest;

my $interval = 3000;
my $node = snowflake_node('stream', "snowflake.mark_interval_ms = $interval\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

# The postmaster's children, from /proc.
sub children
{
	my ($parent) = @_;
	my @kids;
	for my $stat (glob('/proc/[0-9]*/stat'))
	{
		open(my $fh, '<', $stat) or next;
		my $line = <$fh>;
		close($fh);
		next unless defined $line && $line =~ /^(\d+) \(.*\) \S (\d+) /;
		push @kids, $1 if $2 == $parent;
	}
	return @kids;
}

my $received = "$PostgreSQL::Test::Utils::tmp_check/stream.out";
my $stderr = '';
my $client = IPC::Run::start(
	[
		'psql', '-X', '-d', $node->connstr('postgres'), '-c',
		# generate_series in the select list streams; in FROM it would be
		# materialised first
		'COPY (SELECT snowflake_nextval() FROM (SELECT generate_series(1, 2000000000)) s) TO STDOUT'
	],
	'>', $received, '2>', \$stderr);

# Let a few million ids through, then kill everything at once.
my $deadline = time() + 60;
usleep(100_000) while (!-e $received || -s $received < 20_000_000) && time() < $deadline;
ok(-s $received >= 20_000_000, 'the client received ids at full speed');
my $postmaster = $node->{_pid};
my @kids = children($postmaster);
$node->kill9;
kill 'KILL', @kids;
$client->finish;

# Wait until they are gone and reaped: the new postmaster takes a PID that
# still exists, zombie or not, for a running server.
$deadline = time() + 60;
usleep(10_000) while grep({ kill(0, $_) } $postmaster, @kids) && time() < $deadline;
ok(!grep({ kill(0, $_) } $postmaster, @kids), 'the postmaster and all backends are gone');

# The stream is increasing, so the last complete line holds the largest id
# the client received.  (Ids of equal length compare exactly as strings.)
open(my $fh, '<', $received) or die $!;
my ($count, $largest, $increasing) = (0, '', 1);
while (my $line = <$fh>)
{
	last unless $line =~ /^(\d+)\n$/;
	$increasing = 0
	  if (length($1) <=> length($largest) || $1 cmp $largest) <= 0;
	$largest = $1;
	$count++;
}
close($fh);
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
