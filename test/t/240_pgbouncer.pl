# Behind pgbouncer in transaction pooling: 50 pgbench clients over 4 server
# connections insert through DEFAULT snowflake_nextval(), so that a
# client's successive transactions run on whichever backend is free.  The
# ids are unique, increase in each client's order, and follow commit
# order: an id drawn after another transaction's commit record was written
# is above every id of that transaction.  The same through
# snowflake_uuidv7().  On PostgreSQL 18 and later, the same with core
# uuidv7(), which is monotonic within one backend only: what it shows is
# printed, not asserted.  A sequence with CACHE 20, which hands each backend
# its own block of numbers, is the control: the same checks find it out of
# order.
#
# Commit order comes from logical decoding (test_decoding): it gives each
# transaction's commit LSN; each row records the WAL insert position read
# before its id was drawn.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SnowflakeTest;

my ($pgbouncer) = grep { -x $_ } map { "$_/pgbouncer" } split(/:/, $ENV{PATH}), '/usr/sbin';
plan skip_all => 'pgbouncer is not installed (bash test/run installs Debian\'s pgbouncer)'
  unless $pgbouncer;
my ($major) = `pg_config --version` =~ /PostgreSQL (\d+)/;

my $clients = 50;
my $pool = 4;
my $transactions = 100;    # per client

my $node = snowflake_node('server',
	"wal_level = logical\nmax_connections = 20\nsnowflake.worker_id = 5\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

# ---- pgbouncer, on a unix socket of its own --------------------------------

my $user = getpwuid($<);
my $bouncer = start_pgbouncer('pgbouncer', $node, $pool, $user);
my $dir = PostgreSQL::Test::Utils::tempdir_short();    # (the pgbench scripts)

END
{
	my $rc = $?;
	stop_pgbouncer($bouncer);
	$? = $rc;
}

$SIG{$_} = sub { die "stopped by SIG$_[0]\n" } for qw(INT TERM HUP);

my $via = $bouncer->{via};
is(`psql -X -At -d "$via" -c 'SELECT 1'`, "1\n", 'pgbouncer answers');

# ---- one table per generator, filled through the pooler --------------------

$node->safe_psql('postgres', q{
	CREATE TABLE trial_ids (v bigint PRIMARY KEY DEFAULT snowflake_nextval(),
		client int, n int, backend int, start_lsn pg_lsn);
	CREATE TABLE trial_uuids (v uuid PRIMARY KEY DEFAULT snowflake_uuidv7(),
		client int, n int, backend int, start_lsn pg_lsn);
	CREATE SEQUENCE cached CACHE 20;
	CREATE TABLE trial_cached (v bigint PRIMARY KEY DEFAULT nextval('cached'),
		client int, n int, backend int, start_lsn pg_lsn);});
# (values compared as text in byte order: ids zero-padded, UUIDs as they are)
my @kinds = (
	[ 'snowflake_nextval()', 'trial_ids', q{lpad(t.v::text, 20, '0') COLLATE "C"} ],
	[ 'snowflake_uuidv7()', 'trial_uuids', q{t.v::text COLLATE "C"} ],
	[ 'a sequence with CACHE 20', 'trial_cached', q{lpad(t.v::text, 20, '0') COLLATE "C"} ]);
if ($major >= 18)
{
	$node->safe_psql('postgres', q{
		CREATE TABLE trial_core (v uuid PRIMARY KEY DEFAULT uuidv7(),
			client int, n int, backend int, start_lsn pg_lsn);});
	push @kinds, [ 'core uuidv7()', 'trial_core', q{t.v::text COLLATE "C"} ];
}

my %results;
for my $kind (@kinds)
{
	my ($what, $table, $key) = @$kind;
	my $script = "$dir/$table.sql";
	# the WAL position is read in a subquery that runs before the row's
	# DEFAULT is evaluated
	PostgreSQL::Test::Utils::append_to_file($script, <<"EOF");
\\set n :n + 1
INSERT INTO $table (client, n, backend, start_lsn)
  SELECT :client_id, :n, pg_backend_pid(), l FROM (SELECT pg_current_wal_insert_lsn() AS l OFFSET 0) s;
EOF
	$node->safe_psql('postgres',
		"SELECT pg_create_logical_replication_slot('order_$table', 'test_decoding')");
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run(
		[
			'pgbench', '-n', '-f', $script, '-c', $clients, '-j', 4, '-t', $transactions,
			'-D', 'n=0', $via
		],
		'>', \$out, '2>', \$err);
	ok($ok, "$what: $clients pgbench clients through pgbouncer ran without failures")
	  or diag($err);
	note($out);
	$node->safe_psql('postgres', qq{
		CREATE TABLE commits_$table AS
		SELECT xid::text::bigint AS xid, lsn AS commit_lsn
		  FROM pg_logical_slot_get_changes('order_$table', NULL, NULL)
		 WHERE data LIKE 'COMMIT%';
		SELECT pg_drop_replication_slot('order_$table');});
	my ($rows, $backends, $moved, $client_order, $commit_order, $joined) = split /\|/,
	  $node->safe_psql('postgres', qq{
		WITH r AS (
			SELECT $key AS k, t.*, c.commit_lsn
			  FROM $table t JOIN commits_$table c ON c.xid = t.xmin::text::bigint),
		events AS (
			SELECT commit_lsn AS at, 1 AS kind, k FROM r
			UNION ALL
			SELECT start_lsn, 0, k FROM r),
		-- for each row: the largest value committed before it began
		m AS (
			SELECT kind, k, max(k) FILTER (WHERE kind = 1)
				OVER (ORDER BY at, kind ROWS UNBOUNDED PRECEDING) AS committed_before
			  FROM events),
		per_client AS (
			SELECT k > lag(k) OVER w AS up, backend <> lag(backend) OVER w AS moved
			  FROM r WINDOW w AS (PARTITION BY client ORDER BY n))
		SELECT (SELECT count(*) FROM $table),
			(SELECT count(DISTINCT backend) FROM $table),
			(SELECT count(*) FILTER (WHERE moved) FROM per_client),
			(SELECT count(*) FILTER (WHERE NOT up) FROM per_client),
			(SELECT count(*) FROM m WHERE kind = 0 AND committed_before >= k),
			(SELECT count(*) FROM r)});
	$results{$table} = [ $client_order, $commit_order ];
	my $pairs = $clients * ($transactions - 1);
	diag(sprintf('%s through pgbouncer (%d clients, %d server connections): %d rows from %d backends; '
		  . '%d of %d successive transactions of a client ran on another backend; '
		  . 'out of order: %d in the clients\' order, %d against commit order',
		$what, $clients, $pool, $rows, $backends, $moved, $pairs, $client_order, $commit_order));
	next if $table eq 'trial_core';
	if ($table eq 'trial_cached')
	{
		cmp_ok($client_order + $commit_order, '>', 0,
			"$what: found out of order (the control: the checks can fail)");
		next;
	}
	is($rows, $clients * $transactions, "$what: every insert made a row, none with a value twice");
	is($joined, $rows, "$what: logical decoding gave every row's commit");
	cmp_ok($backends, '<=', $pool, "$what: over at most $pool backends");
	cmp_ok($moved, '>', $clients, "$what: clients moved between backends");
	is($client_order, 0, "$what: each client's values increase, whichever backend ran it");
	is($commit_order, 0, "$what: a value drawn after a commit is above that transaction's");
}

$node->stop;
done_testing();
