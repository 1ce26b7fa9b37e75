# snowflake_convert_column_online() on a busy table: a parent of 1,000,000
# rows and two referencing tables (100,000 rows each), converted while 4 pgbench clients insert,
# update and delete throughout and keep a shadow copy of every change in
# the same transactions; a probe session locks the table every 50 ms.
# Afterwards no row is lost or changed against the shadow copy, every
# foreign key holds, new rows get Snowflake ids, the probe never waited as
# long as lock_timeout, and the schema is the offline converter's (but for
# the column order, which doc/migrating.md documents).  Then, on a smaller copy: the
# conversion interrupted in each step by pg_cancel_backend(), and once by an
# immediate restart, and resumed, ends in that same state; abort => true
# after each step leaves the tables exactly as they were.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SnowflakeTest;

# (no statement log: the writers would fill it with millions of lines)
my $node = snowflake_node('online',
	"max_connections = 40\nmax_wal_size = 2GB\ncheckpoint_timeout = 30min\nlog_statement = none\n");
$node->start;

# The tables converted, and (in schema "shadow", left out of the schema
# comparison) the writers' shadow copy and the probe's waits.
my $ddl = q{
CREATE EXTENSION snowflake;
CREATE TABLE customers (
    id serial,
    name text NOT NULL,
    balance integer NOT NULL DEFAULT 0);
COMMENT ON COLUMN customers.id IS 'the key';
CREATE TABLE orders (
    id serial,
    customer_id integer NOT NULL,
    amount integer NOT NULL);
CREATE TABLE addresses (
    id serial,
    customer_id integer,
    city text NOT NULL);
};
# (after the rows: an index is built faster at once)
my $keys = q{
ALTER TABLE customers ADD PRIMARY KEY (id);
ALTER TABLE orders ADD PRIMARY KEY (id),
    ADD FOREIGN KEY (customer_id) REFERENCES customers ON DELETE CASCADE;
CREATE INDEX orders_customer_id_idx ON orders (customer_id);
ALTER TABLE addresses ADD PRIMARY KEY (id),
    ADD FOREIGN KEY (customer_id) REFERENCES customers ON DELETE SET NULL;
CREATE INDEX addresses_customer_id_idx ON addresses (customer_id);
};

# The tables with n customers, and m orders and m addresses spread over them
sub create
{
	my ($db, $n, $m) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, $ddl);
	$node->safe_psql(
		$db, qq{
INSERT INTO customers (name) SELECT 'c' || g FROM generate_series(1, $n) g;
INSERT INTO orders (customer_id, amount) SELECT 1 + (g::bigint * 7919) % $n, g FROM generate_series(1, $m) g;
INSERT INTO addresses (customer_id, city) SELECT 1 + (g::bigint * 104729) % $n, 'city' || g % 100 FROM generate_series(1, $m) g;
}) if $n;
	$node->safe_psql($db, $keys);
	$node->safe_psql($db, 'VACUUM ANALYZE customers, orders, addresses');
}

# Every row of the three tables, as one hash.
my $fingerprint = q{
SELECT md5(string_agg(x, ',' ORDER BY x)) FROM (
    SELECT 'c' || id || ':' || name || ':' || balance FROM customers
    UNION ALL SELECT 'o' || id || ':' || customer_id || ':' || amount FROM orders
    UNION ALL SELECT 'a' || id || ':' || coalesce(customer_id::text, '-') || ':' || city FROM addresses) s(x)};

# pg_dump --schema-only, with the columns of each table sorted: the online
# conversion puts the converted columns last.
sub schema
{
	my ($db) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'pg_dump', '--schema-only', '-N', 'shadow', '-d', $node->connstr($db) ],
		'>', \$out, '2>', \$err)
	  or die "pg_dump failed: $err";
	$out =~ s/^\\(un)?restrict .*$//mg;
	$out =~ s{(CREATE TABLE [^\n]+ \(\n)(.*?)(\n\);)}
			 {$1 . join("\n", sort map { s/,$//r } split(/\n/, $2)) . $3}gse;
	return $out;
}

sub call_online
{
	my ($db, $args) = @_;
	my ($ret, $out, $err) =
	  $node->psql($db, "CALL snowflake_convert_column_online('customers'$args)");
	return ($ret, $err);
}

# The whole conversion: the call, the indexes it lists, the call again.
sub convert_online
{
	my ($db, $args) = @_;
	$args //= '';
	my ($ret, $err) = call_online($db, $args);
	die "first call failed: $err" if $ret;
	$node->safe_psql($db,
		"SELECT unnest(pending) FROM snowflake_online_conversions WHERE table_name = 'customers'::regclass \\gexec"
	);
	($ret, $err) = call_online($db, $args);
	die "second call failed: $err" if $ret;
	return $err;
}

# A session holding locks in an open transaction, and a call of the
# procedure in the background.
sub hold
{
	my ($db, $sql) = @_;
	my ($in, $out, $err) = ("BEGIN;\n$sql\nSELECT 'held';\n", '', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db) ],
		'<', \$in, '>', \$out, '2>', \$err);
	my $deadline = time() + 60;
	while ($out !~ /held/ && time() < $deadline)
	{
		$h->pump_nb;
		usleep(20_000);
	}
	die "the holder did not get its locks: $err" unless $out =~ /held/;
	# (the release runs $more first, in the same transaction; with $gone,
	# the session died with the server, and its psql is stopped)
	return sub {
		my ($more, $gone) = @_;
		return $h->kill_kill if $gone;
		$in .= ($more // '') . "\nCOMMIT;\n\\q\n";
		$h->finish;
	};
}

sub start_call
{
	my ($db, $sql) = @_;
	my %call = (out => '', err => '');
	local $ENV{PGAPPNAME} = 'online_call';
	$call{h} = IPC::Run::start([ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db), '-c', $sql ],
		'>', \$call{out}, '2>', \$call{err});
	return \%call;
}

# Wait until the background call waits for a lock (or until $until is
# true), cancel it, and return its stderr.
sub cancel_call
{
	my ($db, $call, $until) = @_;
	$until //= q{EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'online_call' AND wait_event_type = 'Lock')};
	$node->poll_query_until($db, "SELECT $until") or die "the call never got there";
	$node->safe_psql($db, q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'online_call'});
	$call->{h}->finish;
	return $call->{err};
}

sub state_step
{
	my ($db) = @_;
	return $node->safe_psql($db, q{SELECT coalesce((SELECT step FROM snowflake_online_state), 'none')});
}

# ---- under load: 1,000,000 rows, 4 writers, a probe ----------------------

my $t0 = time();
create('big', 1_000_000, 100_000);
create('big_offline', 0, 0);
$node->safe_psql(
	'big', q{
CREATE SCHEMA shadow;
CREATE TABLE shadow.customers AS SELECT id::bigint, name, balance FROM customers;
CREATE TABLE shadow.orders AS SELECT id::bigint, customer_id::bigint, amount FROM orders;
CREATE TABLE shadow.addresses AS SELECT id::bigint, customer_id::bigint, city FROM addresses;
ALTER TABLE shadow.customers ADD PRIMARY KEY (id);
ALTER TABLE shadow.orders ADD PRIMARY KEY (id);
ALTER TABLE shadow.addresses ADD PRIMARY KEY (id);
CREATE INDEX ON shadow.orders (customer_id);
CREATE INDEX ON shadow.addresses (customer_id);
CREATE TABLE shadow.probe_waits (seconds float8, at timestamptz DEFAULT clock_timestamp());
VACUUM ANALYZE shadow.customers, shadow.orders, shadow.addresses;
});
my $setup_s = time() - $t0;

# Each writer's transaction: a new customer with an order, a balance
# updated, an order moved to another customer, an address moved, a
# customer deleted (its orders go, its addresses lose it); each change
# repeated on the shadow copy.  Updates pick customers from the first
# 900,000, deletes from the rest, so that no order is moved to a customer
# being deleted.
my $writer = q{
\set r random(1, 900000)
\set d random(900001, 1000000)
\set o random(1, 100000)
\set a random(1, 100000)
BEGIN;
INSERT INTO customers (name) VALUES ('w') RETURNING id AS nid \gset
INSERT INTO shadow.customers VALUES (:nid, 'w', 0);
INSERT INTO orders (customer_id, amount) VALUES (:nid, 1) RETURNING id AS noid \gset
INSERT INTO shadow.orders VALUES (:noid, :nid, 1);
UPDATE customers SET balance = balance + 1 WHERE id = :r;
UPDATE shadow.customers SET balance = balance + 1 WHERE id = :r;
UPDATE orders SET customer_id = :r, amount = amount + 1 WHERE id = :o;
UPDATE shadow.orders SET customer_id = :r, amount = amount + 1 WHERE id = :o;
UPDATE addresses SET customer_id = :r WHERE id = :a;
UPDATE shadow.addresses SET customer_id = :r WHERE id = :a;
DELETE FROM customers WHERE id = :d;
DELETE FROM shadow.orders WHERE customer_id = :d;
UPDATE shadow.addresses SET customer_id = NULL WHERE customer_id = :d;
DELETE FROM shadow.customers WHERE id = :d;
COMMIT;
};
my $probe = q{
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
BEGIN;
LOCK TABLE customers IN ROW EXCLUSIVE MODE;
INSERT INTO shadow.probe_waits VALUES (extract(epoch FROM clock_timestamp()) - :t0);
COMMIT;
\sleep 50 ms
};
my $dir = PostgreSQL::Test::Utils::tempdir;
open(my $fh, '>', "$dir/writer.sql") or die $!;
print $fh $writer;
close($fh);
open($fh, '>', "$dir/probe.sql") or die $!;
print $fh $probe;
close($fh);

my ($w_out, $w_err, $p_out, $p_err) = ('', '', '', '');
my @pgbench = ('pgbench', '-n', '-h', $node->host, '-p', $node->port, '-T', '900');
# (at 200 transactions a second in all: a busy table, not a saturated
# machine, which CI's two cores would be)
my $writers = IPC::Run::start([ @pgbench, '-c', '4', '-j', '4', '-R', '200', '-f', "$dir/writer.sql", 'big' ],
	'>', \$w_out, '2>', \$w_err);
my $prober = IPC::Run::start([ @pgbench, '-c', '1', '-j', '1', '-f', "$dir/probe.sql", 'big' ],
	'>', \$p_out, '2>', \$p_err);
$node->poll_query_until('big', 'SELECT count(*) > 20 FROM shadow.probe_waits')
  or die 'the probe does not run';
sleep(2);

my $t1 = time();
my ($ret, $err) = call_online('big', ", lock_timeout => '1s'");
is($ret, 0, 'under load: the first call returns');
like($err, qr/step 3 of 5, index: run these statements/, 'it stops at the index step, listing the statements');
my $indexes = $node->safe_psql('big', 'SELECT cardinality(pending) FROM snowflake_online_conversions');
is($indexes, 3, 'three indexes to build: the primary key and the two foreign key indexes');
$node->safe_psql('big',
	"SELECT unnest(pending) FROM snowflake_online_conversions WHERE table_name = 'customers'::regclass \\gexec");
($ret, $err) = call_online('big', ", lock_timeout => '1s'");
is($ret, 0, 'under load: the second call returns');
like($err, qr/now takes Snowflake ids/, 'the conversion is done');
my $convert_s = time() - $t1;

# some writes after the swap, then stop the clients
sleep(2);
$writers->signal('TERM');
$prober->signal('TERM');
$writers->finish;
$prober->finish;
unlike($w_err, qr/aborted|ERROR/, 'no writer failed') or diag($w_err);
unlike($p_err, qr/aborted|ERROR/, 'the probe never failed') or diag($p_err);

my $lost = $node->safe_psql(
	'big', q{
SELECT (SELECT count(*) FROM customers c FULL JOIN shadow.customers s ON s.id = c.id
         WHERE c.id IS NULL OR s.id IS NULL OR (c.name, c.balance) IS DISTINCT FROM (s.name, s.balance))
     + (SELECT count(*) FROM orders c FULL JOIN shadow.orders s ON s.id = c.id
         WHERE c.id IS NULL OR s.id IS NULL OR (c.customer_id, c.amount) IS DISTINCT FROM (s.customer_id, s.amount))
     + (SELECT count(*) FROM addresses c FULL JOIN shadow.addresses s ON s.id = c.id
         WHERE c.id IS NULL OR s.id IS NULL OR (c.customer_id, c.city) IS DISTINCT FROM (s.customer_id, s.city))});
is($lost, 0, 'no row lost, added or changed against the writers\' shadow copy');
my ($writes) = $node->safe_psql('big', q{SELECT count(*) FROM customers WHERE name = 'w'});
cmp_ok($writes, '>', 100, "the writers wrote throughout ($writes transactions committed)");
is( $node->safe_psql(
		'big', q{
SELECT (SELECT count(*) FROM orders o WHERE NOT EXISTS (SELECT FROM customers c WHERE c.id = o.customer_id))
     + (SELECT count(*) FROM addresses a WHERE a.customer_id IS NOT NULL
          AND NOT EXISTS (SELECT FROM customers c WHERE c.id = a.customer_id))
     + (SELECT count(*) FROM pg_constraint
         WHERE conrelid IN ('customers'::regclass, 'orders'::regclass, 'addresses'::regclass)
           AND NOT convalidated)}),
	'0',
	'every foreign key holds, and every constraint is validated');
is( $node->safe_psql(
		'big', q{
SELECT count(*) > 0 AND bool_and(snowflake_timestamp(id) BETWEEN now() - interval '1 hour' AND now() + interval '1 minute')
  FROM customers WHERE id > 2000000000}),
	't',
	'rows inserted after the swap have Snowflake ids');
my ($probes, $longest) = split /\|/,
  $node->safe_psql('big', 'SELECT count(*), round(max(seconds)::numeric, 3) FROM shadow.probe_waits');
diag($node->safe_psql('big', 'SELECT at, round(seconds::numeric, 3) FROM shadow.probe_waits ORDER BY seconds DESC LIMIT 3'))
  if $longest >= 1.0;
cmp_ok($longest, '<', 1.0,
	"the probe never waited as long as lock_timeout (1 s): longest wait ${longest} s over $probes probes");
$node->safe_psql('big_offline', q{SELECT count(*) FROM snowflake_convert_column('customers')});
is(schema('big'), schema('big_offline'), 'the schema is the offline conversion\'s, but for the column order');
note(sprintf('setup %.0f s, online conversion under load %.1f s', $setup_s, $convert_s));

# ---- interrupted and resumed, undone: a smaller copy ----------------------

create('tmpl', 5_000, 2_500);
# (the big database's writes, out of the way of crash recovery below)
$node->safe_psql('postgres', 'CHECKPOINT');
my $before_schema = schema('tmpl');
my $before_rows = $node->safe_psql('tmpl', $fingerprint);
$node->safe_psql('postgres', 'CREATE DATABASE offline TEMPLATE tmpl');
$node->safe_psql('offline', q{SELECT count(*) FROM snowflake_convert_column('customers')});
my $after_schema = schema('offline');
is($node->safe_psql('offline', $fingerprint), $before_rows, 'the offline conversion keeps every row');

my $n = 0;
sub fresh
{
	my $db = 'copy' . ++$n;
	$node->safe_psql('postgres', "CREATE DATABASE $db TEMPLATE tmpl");
	return $db;
}

sub same_end
{
	my ($db, $what) = @_;
	is(schema($db), $after_schema, "$what: the schema is the offline conversion's");
	is($node->safe_psql($db, $fingerprint), $before_rows, "$what: every row as it was");
	is(state_step($db), 'none', "$what: no conversion left in progress");
}

sub same_start
{
	my ($db, $what) = @_;
	is(schema($db), $before_schema, "$what: the schema is as before");
	is($node->safe_psql($db, $fingerprint), $before_rows, "$what: every row as it was");
	is(state_step($db), 'none', "$what: no conversion left in progress");
}

# cancelled in the add step, waiting for its lock
my $db = fresh();
my $release = hold($db, 'LOCK TABLE addresses IN ACCESS SHARE MODE;');
my $call = start_call($db, "CALL snowflake_convert_column_online('customers', lock_timeout => '5min')");
$node->poll_query_until($db,
	q{SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'online_call' AND wait_event_type = 'Lock')})
  or die 'the call never waited';
($ret, $err) = call_online($db, '');
like($err, qr/another session is converting table public.customers online/,
	'add: a second session is refused while the first waits');
like(cancel_call($db, $call), qr/canceling statement due to user request/, 'add: cancelled');
$release->();
is(state_step($db), 'none', 'add: cancelled, nothing was added');
convert_online($db);
same_end($db, 'add cancelled, resumed');

# the tables change while the add step waits for its locks (a comment,
# written by the session it waits for): it lets go and plans again
$db = fresh();
$release = hold($db, 'LOCK TABLE orders IN ACCESS SHARE MODE;');
$call = start_call($db,
	"CALL snowflake_convert_column_online('customers', stop_after => 'add', lock_timeout => '5min')");
$node->poll_query_until($db,
	q{SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'online_call' AND wait_event_type = 'Lock')})
  or die 'the call never waited';
$release->(q{COMMENT ON COLUMN orders.amount IS 'changed meanwhile';});
$call->{h}->finish;
like($call->{err}, qr/the tables changed while the step waited for its locks, planning it again/,
	'add: a change between plan and locks is seen, and the step planned again');
is(state_step($db), 'backfill', 'add: done, after planning again');

# cancelled in the backfill: a row the batches skip (a session holds its
# lock), which the sweep then waits for
$db = fresh();
call_online($db, ", stop_after => 'add'");
is(state_step($db), 'backfill', 'backfill: stopped after the add step');
$release = hold($db, 'SELECT id FROM customers WHERE id = 777 FOR UPDATE;');
$call = start_call($db, "CALL snowflake_convert_column_online('customers', batch_size => 500)");
like(
	cancel_call(
		$db, $call,
		q{EXISTS (SELECT FROM snowflake_online_state WHERE step = 'backfill' AND rows_done >= 5000)
		  AND EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'online_call' AND wait_event = 'PgSleep')}),
	qr/canceling statement due to user request/,
	'backfill: cancelled in the sweep');
is($node->safe_psql($db, 'SELECT count(*) FROM customers WHERE id_snowflake IS DISTINCT FROM id'),
	'1', 'backfill: the locked row alone is left');
$release->();
convert_online($db);
same_end($db, 'backfill cancelled, resumed');

# cancelled while building an index (CREATE INDEX CONCURRENTLY waits for a
# transaction that may write the table): the invalid index is dropped and listed again
$db = fresh();
($ret, $err) = call_online($db, '');
is(state_step($db), 'index', 'index: the procedure stopped at the index step');
$release = hold($db, 'LOCK TABLE customers IN ROW EXCLUSIVE MODE;');
$call = start_call($db, 'CREATE UNIQUE INDEX CONCURRENTLY customers_pkey_snowflake ON customers (id_snowflake)');
like(
	cancel_call(
		$db, $call,
		q{EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'online_call' AND wait_event_type = 'Lock')}),
	qr/canceling statement due to user request/,
	'index: CREATE INDEX CONCURRENTLY cancelled');
$release->();
is( $node->safe_psql($db,
		q{SELECT indisvalid FROM pg_index WHERE indexrelid = 'customers_pkey_snowflake'::regclass}),
	'f',
	'index: an invalid index is left');
convert_online($db);
same_end($db, 'index cancelled, resumed');

# cancelled in the validate step, waiting for a lock
$db = fresh();
($ret, $err) = call_online($db, '');
$node->safe_psql($db,
	"SELECT unnest(pending) FROM snowflake_online_conversions WHERE table_name = 'customers'::regclass \\gexec");
$release = hold($db, 'LOCK TABLE orders IN ROW EXCLUSIVE MODE;');
$call = start_call($db, "CALL snowflake_convert_column_online('customers', lock_timeout => '5min')");
like(cancel_call($db, $call), qr/canceling statement due to user request/, 'validate: cancelled');
is(state_step($db), 'validate', 'validate: still there');
$release->();
($ret, $err) = call_online($db, '');
is($ret, 0, 'validate: resumed');
same_end($db, 'validate cancelled, resumed');

# cancelled in the swap, waiting for its locks
$db = fresh();
($ret, $err) = call_online($db, '');
$node->safe_psql($db,
	"SELECT unnest(pending) FROM snowflake_online_conversions WHERE table_name = 'customers'::regclass \\gexec");
($ret, $err) = call_online($db, ", stop_after => 'validate'");
is(state_step($db), 'swap', 'swap: stopped before it');
$release = hold($db, 'LOCK TABLE addresses IN ACCESS SHARE MODE;');
$call = start_call($db, "CALL snowflake_convert_column_online('customers', lock_timeout => '5min')");
like(cancel_call($db, $call), qr/canceling statement due to user request/, 'swap: cancelled');
is(state_step($db), 'swap', 'swap: still to do');
$release->();
($ret, $err) = call_online($db, '');
is($ret, 0, 'swap: resumed');
same_end($db, 'swap cancelled, resumed');

# the swap gives up after its retries: lock_not_available, and resumes later
$db = fresh();
($ret, $err) = call_online($db, '');
$node->safe_psql($db,
	"SELECT unnest(pending) FROM snowflake_online_conversions WHERE table_name = 'customers'::regclass \\gexec");
$release = hold($db, 'LOCK TABLE orders IN ACCESS SHARE MODE;');
($ret, $err) = call_online($db, ", lock_timeout => '50ms', max_retries => 2");
like($err, qr/could not take the locks of the online conversion of table public.customers within lock_timeout, 3 times/,
	'swap: refused after 3 attempts');
is(state_step($db), 'swap', 'swap: still to do after the refusal');
$release->();
($ret, $err) = call_online($db, '');
is($ret, 0, 'swap: resumed after the refusal');
same_end($db, 'swap refused, resumed');

# a session holding SHARE UPDATE EXCLUSIVE (what autovacuum, VACUUM and
# ANALYZE take) when the swap begins: the swap waits for it to finish,
# holding no lock, instead of failing its attempts (autovacuum is cancelled
# for a waiting lock only after deadlock_timeout, longer than a step waits)
$db = fresh();
($ret, $err) = call_online($db, '');
$node->safe_psql($db,
	"SELECT unnest(pending) FROM snowflake_online_conversions WHERE table_name = 'customers'::regclass \\gexec");
$release = hold($db, 'LOCK TABLE orders IN SHARE UPDATE EXCLUSIVE MODE;');
$call = start_call($db, "CALL snowflake_convert_column_online('customers', lock_timeout => '100ms', max_retries => 0)");
$node->poll_query_until($db,
	q{SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'online_call' AND wait_event = 'PgSleep')})
  or die 'the call never waited';
# (a few rounds of its wait, each of which would have been an attempt)
usleep(1_500_000);
is($node->safe_psql($db, q{SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
	 WHERE a.application_name = 'online_call' AND l.locktype = 'relation' AND l.relation = 'customers'::regclass}),
	'0', 'long lock: the swap holds and requests no lock on the table while it waits');
$release->();
$call->{h}->finish;
like($call->{err}, qr/NOTICE:  waiting for process \d+ \(client backend\), which holds ShareUpdateExclusiveLock on table public.orders, to finish/,
	'long lock: the swap said whom it waited for');
unlike($call->{err}, qr/ERROR/, 'long lock: the swap succeeded once the lock was let go, with no attempt to spare');
same_end($db, 'long lock waited out');

# an immediate restart in the middle of the backfill: held there by a row
# that a session keeps locked from after the add step (whose locks it would
# block), which the batches skip and the sweep waits for (without it, a
# busy machine's poll could miss a backfill of seconds)
$db = fresh();
call_online($db, ", stop_after => 'add'");
$release = hold($db, 'SELECT id FROM customers WHERE id = 777 FOR UPDATE;');
$call = start_call($db, "CALL snowflake_convert_column_online('customers', batch_size => 20)");
$node->poll_query_until($db,
	q{SELECT EXISTS (SELECT FROM snowflake_online_state WHERE step = 'backfill' AND rows_done >= 5000)
	  AND EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'online_call' AND wait_event = 'PgSleep')})
  or die 'no backfill seen';
$node->stop('immediate');
$call->{h}->finish;
# (the holder's session died with the server)
$release->(undef, 1);
$node->start;
my ($step, $done) = split /\|/,
  $node->safe_psql($db, 'SELECT step, rows_done FROM snowflake_online_state');
is($step, 'backfill', 'restart: the state survived the crash');
cmp_ok($done, '<', 10_000, "restart: the crash came in the middle of the backfill ($done rows)");
convert_online($db);
same_end($db, 'immediate restart in the backfill, resumed');

# abort after each step
for my $stop ('add', 'backfill', 'index', 'validate')
{
	$db = fresh();
	if ($stop eq 'index')
	{
		call_online($db, '');
		$node->safe_psql($db,
			"SELECT unnest(pending) FROM snowflake_online_conversions WHERE table_name = 'customers'::regclass \\gexec"
		);
	}
	else
	{
		call_online($db, ", stop_after => '$stop'");
	}
	isnt(state_step($db), 'none', "abort after $stop: a conversion in progress");
	($ret, $err) = call_online($db, ', abort => true');
	like($err, qr/online conversion of table public.customers undone/, "abort after $stop: undone");
	same_start($db, "abort after $stop");
}

$node->stop;
done_testing();
