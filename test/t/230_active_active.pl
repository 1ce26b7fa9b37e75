# Active-active: two primaries, each with a worker id leased from one
# coordinator, each publishing one table and subscribing to the other's
# publication of it with origin = none (PostgreSQL 16 and later), so that
# rows written on either side reach the other and come back to neither.
# Four pgbench clients on each side insert through DEFAULT
# snowflake_nextval() for some seconds, and update and delete rows they
# inserted earlier.  Once both have caught up: no conflict and no error in
# either log, the same rows on both sides, each row carrying its origin's
# worker id, and ids increasing in the order each session inserted them.
# Then the same with bigserial keys, which conflict at once: that is
# printed, as the contrast, not asserted.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SnowflakeTest;

my ($major) = `pg_config --version` =~ /PostgreSQL (\d+)/;
plan skip_all => "PostgreSQL $major has no origin = none for subscriptions (16 and later): "
  . 'two-way logical replication is not tested on it'
  if $major < 16;

my $seconds = 8;
my $clients = 4;

my $coordinator = lease_coordinator('coordinator');
my %conf = (
	# PostgreSQL 18 logs more kinds of conflict with commit timestamps
	'track_commit_timestamp' => 'on',
	'max_connections' => 30);
my $conf = join('', map { "$_ = $conf{$_}\n" } sort keys %conf);
my @sides = map { lease_node($_, $coordinator, $conf, allows_streaming => 'logical') } qw(east west);
$_->start for @sides;
my @workers;
for my $s (@sides)
{
	$s->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	push @workers, wait_for_lease($s);
}
isnt($workers[0], $workers[1], "each side leases a worker id of its own (@workers)");

# Publish $table of $db on both sides and subscribe each side to the other's,
# with origin = none; $options go to both subscriptions.
sub replicate_both_ways
{
	my ($db, $table, $options) = @_;
	$_->safe_psql($db, "CREATE PUBLICATION ${table}_pub FOR TABLE $table") for @sides;
	for my $i (0, 1)
	{
		my ($here, $there) = ($sides[$i], $sides[ 1 - $i ]);
		my $sub = "${db}_from_" . $there->name;
		$here->safe_psql($db, qq{
			CREATE SUBSCRIPTION $sub
			  CONNECTION 'host=@{[ $there->host ]} port=@{[ $there->port ]} dbname=$db'
			  PUBLICATION ${table}_pub WITH (origin = none, copy_data = false$options)});
	}
	# each subscription's apply worker is connected before anything is written
	for my $i (0, 1)
	{
		my $sub = "${db}_from_" . $sides[$i]->name;
		$sides[$i]->poll_query_until($db,
			"SELECT count(*) = 1 FROM pg_stat_replication WHERE application_name = '$sub' AND state = 'streaming'")
		  or die "$sub never connected";
	}
}

# Each client counts its transactions in :n (pgbench keeps a client's
# variables from one transaction to the next), updates every fifth row it
# inserts and deletes the one it inserted three transactions before every
# seventh.
my $script = "$PostgreSQL::Test::Utils::tmp_check/active_active.sql";
PostgreSQL::Test::Utils::append_to_file($script, <<'EOF');
\set n :n + 1
INSERT INTO item (side, client, n) VALUES (:side, :client_id, :n) RETURNING id \gset
\if :n % 5 = 0
UPDATE item SET touched = touched + 1 WHERE id = :id;
\endif
\if :n % 7 = 0
DELETE FROM item WHERE side = :side AND client = :client_id AND n = :n - 3;
\endif
EOF

# Start pgbench on both sides at once; returns the harnesses.
sub load_both
{
	my ($db, $seconds) = @_;
	my @runs;
	for my $i (0, 1)
	{
		my ($out, $err) = ('', '');
		push @runs, [
			IPC::Run::start(
				[
					'pgbench', '-n', '-f', $script, '-c', $clients, '-j', $clients,
					'-T', $seconds, '-D', 'side=' . ($i + 1), '-D', 'n=0',
					$sides[$i]->connstr($db)
				],
				'>', \$out, '2>', \$err),
			\$out, \$err ];
	}
	return @runs;
}

# ---- snowflake ids -----------------------------------------------------

my @log_start = map { -s $_->logfile } @sides;
my $table = q{
	CREATE TABLE item (
		id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
		side int NOT NULL, client int NOT NULL, n int NOT NULL,
		touched int NOT NULL DEFAULT 0)};
$_->safe_psql('postgres', $table) for @sides;
replicate_both_ways('postgres', 'item', '');

my @runs = load_both('postgres', $seconds);
for my $r (@runs)
{
	ok($r->[0]->finish, 'pgbench ran without failures') or diag(${ $r->[2] });
	note(${ $r->[1] });
}
$sides[0]->wait_for_catchup('postgres_from_east');
$sides[1]->wait_for_catchup('postgres_from_west');
# (a second turn: what each side applied meanwhile is not sent back, but
# the walsender's position moves past it only once acknowledged)
$sides[0]->wait_for_catchup('postgres_from_east');
$sides[1]->wait_for_catchup('postgres_from_west');

my @rows = map {
	$_->safe_psql('postgres', q{
		SELECT count(*), sum(touched), md5(string_agg(concat_ws(',', id, side, client, n, touched), ';' ORDER BY id))
		  FROM item})
} @sides;
my ($count, $touched) = split /\|/, $rows[0];
is($rows[1], $rows[0], "the same $count rows on both sides ($touched updates in them), after the deletes");
cmp_ok($count, '>', 1000, 'and enough of them to mean something');
for my $s (@sides)
{
	is($s->safe_psql('postgres', qq{
		SELECT count(*) FROM item, snowflake_decode(id) d
		 WHERE d.worker_id <> CASE side WHEN 1 THEN $workers[0] ELSE $workers[1] END}),
		'0', $s->name . ': every row carries the worker id of the side that inserted it');
	is($s->safe_psql('postgres', q{
		SELECT count(*) FROM (
			SELECT id > lag(id) OVER (PARTITION BY side, client ORDER BY n) AS up FROM item) s
		 WHERE NOT up}),
		'0', $s->name . ': ids increase per worker id, in the order each session inserted them');
}
for my $i (0, 1)
{
	my $log = PostgreSQL::Test::Utils::slurp_file($sides[$i]->logfile, $log_start[$i]);
	my @bad = grep { /ERROR|conflict/i } split /\n/, $log;
	is(scalar(@bad), 0, $sides[$i]->name . ': no conflict and no error in the log')
	  or diag(join("\n", @bad[ 0 .. ($#bad < 9 ? $#bad : 9) ]));
}

# ---- the contrast: bigserial ------------------------------------------

# Each side's subscription stops at its first error (disable_on_error), so
# that the logs are not filled by apply workers retrying.
my @serial_log_start = map { -s $_->logfile } @sides;
for my $s (@sides)
{
	$s->safe_psql('postgres', 'CREATE DATABASE serial');
	$s->safe_psql('serial', 'CREATE TABLE item (id bigserial PRIMARY KEY,
		side int NOT NULL, client int NOT NULL, n int NOT NULL, touched int NOT NULL DEFAULT 0)');
}
replicate_both_ways('serial', 'item', ', disable_on_error = true');
@runs = load_both('serial', 3);
# (a client stops at its first error: pgbench's failures are the point here)
$_->[0]->finish for @runs;
# each side's apply worker stopped on an error, or has applied all the
# other side wrote (asked of the other side, the publisher)
for my $i (0, 1)
{
	my $sub = 'serial_from_' . $sides[$i]->name;
	$sides[$i]->poll_query_until('serial', qq{
		SELECT NOT EXISTS (SELECT FROM pg_stat_replication WHERE application_name = '$sub')
			OR EXISTS (SELECT FROM pg_stat_replication
				WHERE application_name = '$sub' AND replay_lsn >= pg_current_wal_lsn())})
	  or diag("$sub neither stopped nor caught up");
}

# From the logs: when the first insert and the first error were, errors of
# the sessions (an insert refused: the other side's row took its number
# first) and of the apply workers (a row from the other side refused).
my ($first_insert, $first_error, $local, $apply) = (undef, undef, 0, 0);
for my $i (0, 1)
{
	my $log = PostgreSQL::Test::Utils::slurp_file($sides[$i]->logfile, $serial_log_start[$i]);
	for my $line (split /\n/, $log)
	{
		my ($t) = $line =~ /^\S+ (\d+:\d+:\d+\.\d+)/ or next;
		my ($h, $m, $sec) = split /:/, $t;
		$t = $h * 3600 + $m * 60 + $sec;
		if ($line =~ /statement: INSERT INTO item/)
		{
			$first_insert = $t if !defined $first_insert || $t < $first_insert;
		}
		elsif ($line =~ /ERROR:  (duplicate key value|conflict detected)/)
		{
			$first_error = $t if !defined $first_error || $t < $first_error;
			if ($line =~ /\Q$ENV{PGAPPNAME}\E/) { $local++; } else { $apply++; }
		}
	}
}
my @disabled = map {
	$sides[$_]->safe_psql('serial', "SELECT count(*) FROM pg_subscription WHERE NOT subenabled")
} 0, 1;
my %rows;
for my $i (0, 1)
{
	$rows{$_} |= 1 << $i for split /\n/, $sides[$i]->safe_psql('serial', 'SELECT id || \'/\' || side FROM item');
}
my $differ = grep { $rows{$_} != 3 } keys %rows;
diag(sprintf('bigserial, the same two-way setup: first duplicate key %s after the first insert; '
	  . '%d inserts refused, %d rows from the other side refused (%d of 2 subscriptions stopped); '
	  . '%d of %d rows not on both sides',
	defined $first_error && defined $first_insert
	? sprintf('%.0f ms', 1000 * ($first_error - $first_insert)) : '(none seen)',
	$local, $apply, $disabled[0] + $disabled[1], $differ, scalar(keys %rows)));
diag(sprintf('snowflake ids: %d rows, the same on both sides, no conflict', $count));

$_->safe_psql('serial', "DROP SUBSCRIPTION serial_from_" . ($_ == $sides[0] ? 'west' : 'east')) for @sides;
$_->safe_psql('postgres', "DROP SUBSCRIPTION postgres_from_" . ($_ == $sides[0] ? 'west' : 'east')) for @sides;
$_->stop for @sides;
$coordinator->stop;
done_testing();
