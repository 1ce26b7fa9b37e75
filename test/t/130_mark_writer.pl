# The mark writer (a background worker) under four clients streaming ids:
# it extends the mark while they run.  Stopped with pg_terminate_backend(),
# the clients go on, the calls past the refresh point write the mark
# themselves (backend_mark_writes counts them), and the postmaster starts
# the worker again.  Killed with SIGKILL, PostgreSQL treats it as the crash
# of a process attached to shared memory and restarts every process; the
# ids after that are above every id a client received.  No id is issued
# twice.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use SnowflakeTest;

my $node = snowflake_node('writer',
	"snowflake.mark_interval_ms = 200\nrestart_after_crash = on\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

my $worker_sql = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake mark writer'};
sub stats
{
	my ($columns) = @_;
	return $node->safe_psql('postgres', "SELECT $columns FROM snowflake_stats");
}

ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($worker_sql) w"),
	'the mark writer runs');
my $worker = $node->safe_psql('postgres', $worker_sql);

# four clients at full speed
my $dir = $PostgreSQL::Test::Utils::tmp_check;
my @files = map { "$dir/writer.$_.out" } 1 .. 4;
my @clients = map { stream_ids($node, $_, 2_000_000) } @files;

my ($writes, $by_calls) = split /\|/, stats('mark_writes, backend_mark_writes');
usleep(1_000_000);
my ($writes2, $by_calls2) = split /\|/, stats('mark_writes, backend_mark_writes');
cmp_ok($writes2 - $writes - ($by_calls2 - $by_calls), '>=', 3,
	'the worker extends the mark under load ('
	  . ($writes2 - $writes - ($by_calls2 - $by_calls)) . ' writes in a second)');

# pg_terminate_backend: a gap of about a second before the postmaster
# starts it again, five reservations long
ok($node->safe_psql('postgres', "SELECT pg_terminate_backend($worker)") eq 't',
	'the worker is terminated');
$node->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $worker")
  or die 'the worker did not stop';
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM ($worker_sql) w WHERE pid <> $worker")
  or die 'the worker did not come back';
my $back = $node->safe_psql('postgres', $worker_sql);
isnt($back, $worker, "the postmaster started the worker again (pid $back)");
my $by_calls3 = stats('backend_mark_writes');
cmp_ok($by_calls3, '>', $by_calls2,
	'meanwhile the calls wrote the mark themselves (backend_mark_writes '
	  . ($by_calls3 - $by_calls2) . ')');
my $sizes = join(' ', map { -s $_ } @files);
usleep(300_000);
ok((grep { -s $files[$_] > (split / /, $sizes)[$_] } 0 .. 3) == 4,
	'all four clients are still receiving ids');

# SIGKILL: every process goes, shared memory is built anew
kill 'KILL', $back;
$_->finish for @clients;
$node->poll_query_until('postgres', 'SELECT true')
  or die 'the server did not come back after the crash';

my @largest;
my $total = 0;
for my $f (@files)
{
	my ($count, $largest, $increasing) = stream_largest($f);
	ok($increasing, "the $count ids of $f were increasing");
	push @largest, $largest;
	$total += $count;
}
my $after = $node->safe_psql('postgres', 'SELECT min(snowflake_nextval()) FROM generate_series(1, 10)');
is_above($node, $after, $_, 'ids after the crash are above the ids a client received') for @largest;
$node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($worker_sql) w")
  or die 'no worker after the crash';
pass('the worker runs again after the crash');

# no id twice across the four streams: each is increasing and its ids have
# one length, so a merge puts any repeat next to its twin
my @clean = map { clean_copy($_) } @files;
my $repeats = `LC_ALL=C sort -m @clean | uniq -d | wc -l`;
chomp $repeats;
is($repeats, '0', "no id twice among the $total ids streamed");

# a stream cut by the crash may end in a partial line
sub clean_copy
{
	my ($file) = @_;
	my $clean = "$file.clean";
	open(my $in, '<', $file) or die $!;
	open(my $out, '>', $clean) or die $!;
	while (my $line = <$in>)
	{
		last unless $line =~ /^\d+\n$/;
		print $out $line;
	}
	close($out);
	return $clean;
}

$node->stop;
done_testing();
