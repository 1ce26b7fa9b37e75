# Fencing: three issuing servers share three worker ids.  One of them is
# frozen (SIGSTOP of the postmaster and all its children, as a paused VM)
# for longer than its lease's TTL; a fourth server claims the freed worker
# id and issues ids; the frozen one is woken and asked for ids.  It issues
# nothing in the new holder's range: its calls fail until it holds a lease
# again, which it gets when the fourth server releases the worker id, and
# then its ids are above the fourth's.  Every id of every server is
# distinct.  The same again with the two servers' clocks skewed by
# libfaketime, each way: the horizon, not the clocks, keeps the ranges apart.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SnowflakeTest;

my $dir = $PostgreSQL::Test::Utils::tmp_check;
my $round = 0;

# Draw $n ids on $node into a new file; returns (file, ids as a list).
sub draw
{
	my ($node, $n) = @_;
	my $file = "$dir/fencing." . $round . '.' . $node->name . '.' . time() . '.out';
	my $out = $node->safe_psql('postgres',
		"SELECT snowflake_nextval() FROM generate_series(1, $n)");
	open(my $fh, '>', $file) or die $!;
	print $fh "$out\n";
	close($fh);
	return ($file, split(/\n/, $out));
}

sub worker_of
{
	my ($node, $id) = @_;
	return $node->safe_psql('postgres', "SELECT worker_id FROM snowflake_decode($id)");
}

sub fencing
{
	my ($label, $skew_frozen, $skew_new) = @_;
	$round++;
	my $coordinator = lease_coordinator("coordinator$round");
	# (a TTL of 5 s: on a busy machine the coordinator has stalled 3 s, and
	# the newcomer's lease lapsed with a TTL of 2 s, freeing the worker id
	# for the woken server)
	my $range = "snowflake.lease_worker_ids = '0-2'\nsnowflake.rollback_tolerance_ms = 10000\nsnowflake.lease_ttl_ms = 5000\n";
	my @servers = map { lease_node("r${round}s$_", $coordinator, $range) } 1 .. 3;
	my $frozen = $servers[0];
	my $newcomer = lease_node("r${round}new", $coordinator, $range);
	my %offsets;

	for my $node (@servers, $newcomer)
	{
		my $skew = $node == $frozen ? $skew_frozen : $node == $newcomer ? $skew_new : '+0s';
		$offsets{ $node->name } = "$dir/" . $node->name . '.offset';
		step_clock($offsets{ $node->name }, $skew);
	}
	for my $node (@servers)
	{
		start_with_fake_clock($node, $offsets{ $node->name });
		$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	}
	my @workers = map { wait_for_lease($_) } @servers;
	my $worker = $workers[0];
	my @files;
	my $frozen_last;
	for my $node (@servers)
	{
		my ($file, @ids) = draw($node, 5000);
		push @files, $file;
		$frozen_last = $ids[-1] if $node == $frozen;
	}

	# frozen for longer than the TTL (5 s)
	my $pids = freeze_server($frozen);
	sleep(6);
	start_with_fake_clock($newcomer, $offsets{ $newcomer->name });
	$newcomer->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	is(wait_for_lease($newcomer), $worker,
		"$label: the newcomer leases the frozen server's worker id $worker");
	my ($new_file, @new_ids) = draw($newcomer, 5000);
	push @files, $new_file;
	is(worker_of($newcomer, $new_ids[0]), $worker, "$label: and issues ids with it");
	is_above($newcomer, $new_ids[0], $frozen_last,
		"$label: above every id the frozen server issued with it, whatever the clocks");

	thaw_server($pids);
	like(psql_stderr($frozen, 'SELECT snowflake_nextval()'),
		qr/ERROR:  55000: snowflake_nextval\(\) has no worker id/,
		"$label: woken, the frozen server's calls fail (55000)");
	$frozen->poll_query_until('postgres',
		q{SELECT lease_state IN ('lost', 'no free worker id') FROM snowflake_stats})
	  or die 'the woken server does not see its lease gone';
	like(psql_stderr($frozen, 'SELECT snowflake_nextval()'),
		qr/ERROR:  55000: snowflake_nextval\(\) has no worker id: (the lease of worker id $worker is no longer this server's|every worker id)/,
		"$label: and go on failing, saying the worker id is held by another server");
	is($frozen->safe_psql('postgres', 'SELECT worker_id IS NULL FROM snowflake_stats'), 't',
		"$label: it shows no worker id");

	# the newcomer leaves; the woken server takes its worker id back
	my ($last_new) = (draw($newcomer, 1000))[-1];
	$newcomer->stop('fast');
	is(wait_for_lease($frozen), $worker, "$label: once released, the woken server leases it again");
	my ($back_file, @back) = draw($frozen, 5000);
	push @files, $back_file;
	is_above($frozen, $back[0], $last_new,
		"$label: and its ids are above every id of the newcomer");

	is(repeated_ids(@files), 0, "$label: no id twice across all servers");
	$_->stop for @servers;
	$coordinator->stop;
}

fencing('clocks agree', '+0s', '+0s');
fencing('the frozen server 3 s ahead, the newcomer 3 s behind', '+3s', '-3s');
fencing('the frozen server 3 s behind, the newcomer 3 s ahead', '-3s', '+3s');

done_testing();
