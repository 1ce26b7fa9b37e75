# snowflake_convert_column_online() on tables with triggers and rules on
# UPDATE (an audit trigger, an updated_at trigger, an audit rule): the
# backfill's updates run with session_replication_role = replica, so that
# none of them fires for the rows it fills.
# - Under 3 pgbench writers that insert, update and delete, each logging
#   its changes in the same transaction, and a probe that records its lock
#   waits: the call cancelled in the middle of the backfill and called
#   again; afterwards every row is the writers' copy, the audit table holds
#   one row for each update a writer made and no other, updated_at is set
#   on the rows the writers updated only, every column bigint, every
#   foreign key valid, no probe waited 2 s; the session's
#   session_replication_role is its own again; the schema is the offline
#   conversion's.
# - abort => true after the backfill: tables, rows and audit as before.
# - Tables of a role that may not set session_replication_role: refused
#   before anything changes, whoever calls, with a hint that says what is
#   missing (PostgreSQL 15 and later: GRANT SET ON PARAMETER; before, only
#   superusers may set it); granted, the owner converts them itself and no
#   trigger fires, and the trigger guarding snowflake_online_state still
#   fires for it with session_replication_role = replica.
# - ENABLE ALWAYS and ENABLE REPLICA triggers are refused (the regress
#   test convert_online, and TAP 254 for one enabled during the backfill).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('triggers', "snowflake.worker_id = 6\nmax_connections = 30\nlog_statement = none\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE ROLE app LOGIN;
	CREATE DATABASE tmpl;
});
$node->safe_psql('tmpl', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL, balance integer NOT NULL DEFAULT 0,
		updated_at timestamptz);
	CREATE TABLE orders (id serial PRIMARY KEY, customer_id integer NOT NULL REFERENCES customers, amount integer NOT NULL);
	CREATE INDEX ON orders (customer_id);
	CREATE TABLE audit (what text NOT NULL, n bigint);
	CREATE FUNCTION audit_row() RETURNS trigger LANGUAGE plpgsql SET search_path = public AS
		$$BEGIN INSERT INTO audit VALUES (TG_TABLE_NAME, NEW.id); RETURN NEW; END$$;
	CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql SET search_path = public AS
		$$BEGIN NEW.updated_at := clock_timestamp(); RETURN NEW; END$$;
	CREATE TRIGGER orders_audit AFTER UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION audit_row();
	CREATE TRIGGER customers_touch BEFORE UPDATE ON customers FOR EACH ROW EXECUTE FUNCTION touch();
	CREATE RULE customers_log AS ON UPDATE TO customers DO ALSO INSERT INTO public.audit VALUES ('customers_rule', NEW.balance);
	INSERT INTO customers (name) SELECT 'c' || g FROM generate_series(1, 100000) g;
	INSERT INTO orders (customer_id, amount) SELECT 1 + (g * 7919) % 100000, g FROM generate_series(1, 100000) g;
	CREATE SCHEMA shadow;
	CREATE TABLE shadow.probe_waits (seconds float8);
	CREATE TABLE shadow.wlog (what text NOT NULL, id bigint NOT NULL);
	VACUUM ANALYZE;
});
$node->safe_psql('postgres', 'CREATE DATABASE busy TEMPLATE tmpl');
$node->safe_psql('postgres', 'CREATE DATABASE undo TEMPLATE tmpl');
$node->safe_psql('postgres', 'CREATE DATABASE offline TEMPLATE tmpl');
$node->safe_psql('postgres', 'CREATE DATABASE owned TEMPLATE tmpl');

# Every row of the two tables and the audit, as one hash.
my $fingerprint = q{
SELECT md5(string_agg(x, ',' ORDER BY x)) FROM (
    SELECT 'c' || id || ':' || name || ':' || balance || ':' || coalesce(updated_at::text, '-') FROM customers
    UNION ALL SELECT 'o' || id || ':' || customer_id || ':' || amount FROM orders
    UNION ALL SELECT 'a' || what || ':' || n FROM audit) s(x)};

# The whole conversion as $user: the call, the indexes it lists, the call
# again; returns the last call's stderr.
sub convert_online
{
	my ($db, $user, $args) = @_;
	my @as = $user ? (extra_params => [ '-U', $user ]) : ();
	my $sql = "CALL snowflake_convert_column_online('customers'" . ($args // '') . ')';
	my ($ret, $out, $err) = $node->psql($db, $sql, @as);
	die "first call failed: $err" if $ret;
	$node->safe_psql($db,
		"SELECT unnest(pending) FROM snowflake_online_conversions WHERE table_name = 'customers'::regclass \\gexec",
		@as);
	($ret, $out, $err) = $node->psql($db, "$sql; SHOW session_replication_role", @as);
	die "second call failed: $err" if $ret;
	return ($out, $err);
}

# ---- under writers, cancelled and resumed ---------------------------------

$node->safe_psql('busy', q{
	CREATE TABLE shadow.customers AS SELECT id::bigint, name, balance FROM customers;
	CREATE TABLE shadow.orders AS SELECT id::bigint, customer_id::bigint, amount FROM orders;
	ALTER TABLE shadow.customers ADD PRIMARY KEY (id);
	ALTER TABLE shadow.orders ADD PRIMARY KEY (id);
});
# Each writer's transaction: a new customer with an order, a balance
# updated (its trigger and rule fire), an order updated (its audit trigger
# fires) and one deleted, each also in the shadow copy, the updates in the
# writers' log.
my $writer = q{
\set r random(1, 100000)
\set o random(1, 100000)
\set d random(1, 100000)
BEGIN;
INSERT INTO customers (name) VALUES ('w') RETURNING id AS nid \gset
INSERT INTO shadow.customers VALUES (:nid, 'w', 0);
INSERT INTO orders (customer_id, amount) VALUES (:nid, 1) RETURNING id AS noid \gset
INSERT INTO shadow.orders VALUES (:noid, :nid, 1);
UPDATE customers SET balance = balance + 1 WHERE id = :r;
UPDATE shadow.customers SET balance = balance + 1 WHERE id = :r;
INSERT INTO shadow.wlog VALUES ('customers', :r);
WITH u AS (UPDATE orders SET amount = amount + 1 WHERE id = :o RETURNING id)
INSERT INTO shadow.wlog SELECT 'orders', id FROM u;
UPDATE shadow.orders SET amount = amount + 1 WHERE id = :o;
DELETE FROM orders WHERE id = :d;
DELETE FROM shadow.orders WHERE id = :d;
COMMIT;
};
my $writers = start_pgbench($node, 'busy', $writer, 3, '-R', '150');
my $prober = start_pgbench($node, 'busy', lock_probe('customers', 'orders'), 1);
$node->poll_query_until('busy', q{SELECT count(*) > 20 FROM shadow.probe_waits WHERE true})
  or die 'the probe does not run';

# cancelled in the middle of the backfill, in small batches
my $cancelled = cancel_when($node, 'busy', q{CALL snowflake_convert_column_online('customers', batch_size => 200)},
	q{SELECT EXISTS (SELECT FROM snowflake_online_state WHERE step = 'backfill' AND rows_done >= 20000)});
like($cancelled, qr/canceling statement due to user request/, 'the call is cancelled in the backfill');
is($node->safe_psql('busy', 'SELECT step FROM snowflake_online_state'), 'backfill', 'it stopped in the backfill');
my ($show, $err) = convert_online('busy');
like($err, qr/now takes Snowflake ids/, 'called again, it resumes and ends');
like($show, qr/^origin$/m, 'the session\'s session_replication_role is its own again');

sleep(1);
my $w_err = stop_pgbench($writers);
my $p_err = stop_pgbench($prober);
unlike($w_err, qr/aborted|ERROR/, 'no writer failed') or diag($w_err);
unlike($p_err, qr/aborted|ERROR/, 'the probe never failed') or diag($p_err);

is( $node->safe_psql('busy', q{
SELECT (SELECT count(*) FROM customers c FULL JOIN shadow.customers s ON s.id = c.id
         WHERE c.id IS NULL OR s.id IS NULL OR (c.name, c.balance) IS DISTINCT FROM (s.name, s.balance))
     + (SELECT count(*) FROM orders c FULL JOIN shadow.orders s ON s.id = c.id
         WHERE c.id IS NULL OR s.id IS NULL OR (c.customer_id, c.amount) IS DISTINCT FROM (s.customer_id, s.amount))}),
	'0', 'no row lost, added or changed against the writers\' copy');
my ($updates) = $node->safe_psql('busy', q{SELECT count(*) FROM shadow.wlog WHERE what = 'orders'});
cmp_ok($updates, '>', 20, "the writers updated throughout ($updates orders updated)");
is( $node->safe_psql('busy', q{
SELECT (SELECT count(*) FROM audit WHERE what = 'orders') = (SELECT count(*) FROM shadow.wlog WHERE what = 'orders'),
       (SELECT count(*) FROM audit WHERE what = 'customers_rule') = (SELECT count(*) FROM shadow.wlog WHERE what = 'customers'),
       (SELECT count(*) FROM audit WHERE what NOT IN ('orders', 'customers_rule'))}),
	't|t|0', 'the audit trigger and rule fired for the writers\' updates only, none for the backfill\'s 200,000');
is( $node->safe_psql('busy', q{
SELECT count(*) FROM customers c
 WHERE (c.updated_at IS NOT NULL) <> EXISTS (SELECT FROM shadow.wlog w WHERE w.what = 'customers' AND w.id = c.id)}),
	'0', 'updated_at is set on the rows the writers updated, and on no other');
is( $node->safe_psql('busy', q{
SELECT string_agg(format('%s.%s %s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY 1)
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
 WHERE c.relname IN ('customers', 'orders') AND c.relnamespace = 'public'::regnamespace
   AND a.attname IN ('id', 'customer_id')}),
	'customers.id bigint, orders.customer_id bigint, orders.id integer', 'the key and the column referencing it are bigint');
is( $node->safe_psql('busy', q{
SELECT (SELECT count(*) FROM orders o WHERE NOT EXISTS (SELECT FROM customers c WHERE c.id = o.customer_id))
     + (SELECT count(*) FROM pg_constraint WHERE conrelid IN ('customers'::regclass, 'orders'::regclass) AND NOT convalidated)}),
	'0', 'the foreign key holds, every constraint validated');
my ($probes, $longest) = probe_waits($node, 'busy');
cmp_ok($longest, '<', 2.0, "no writer's lock waited 2 s: longest ${longest} s over $probes probes");
is( $node->safe_psql('busy', q{SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
	  WHERE c.relname IN ('customers', 'orders') AND NOT t.tgisinternal AND t.tgenabled <> 'O'}),
	'0', 'the tables\' triggers are enabled as before, and the conversion\'s gone');

# ---- the end state, and undone --------------------------------------------

$node->safe_psql('offline', q{SELECT count(*) FROM snowflake_convert_column('customers')});
is(dump_schema($node, 'busy'), dump_schema($node, 'offline'),
	'the schema is the offline conversion\'s (triggers and rule included), but for the column order');

my $before_schema = dump_schema($node, 'undo');
my $before_rows = $node->safe_psql('undo', $fingerprint);
$node->safe_psql('undo', q{CALL snowflake_convert_column_online('customers', stop_after => 'backfill')});
is($node->safe_psql('undo', 'SELECT count(*) FROM customers WHERE id_snowflake IS NULL'), '0', 'abort: backfilled');
$node->safe_psql('undo', q{CALL snowflake_convert_column_online('customers', abort => true)});
is(dump_schema($node, 'undo'), $before_schema, 'abort: the schema is as before');
is($node->safe_psql('undo', $fingerprint), $before_rows, 'abort: every row and the audit as before');

# ---- the owner may not set session_replication_role ----------------------

$node->safe_psql('owned', q{
	ALTER TABLE customers OWNER TO app;
	ALTER TABLE orders OWNER TO app;
	ALTER TABLE audit OWNER TO app;
	GRANT CREATE ON SCHEMA public TO app;
});
$before_rows = $node->safe_psql('owned', $fingerprint);
my $v15 = $node->safe_psql('postgres', 'SHOW server_version_num') >= 150000;
my $missing =
  $v15
  ? qr/a superuser can allow it with GRANT SET ON PARAMETER session_replication_role TO app\./
  : qr/before PostgreSQL 15 only superusers may, and app is none\./;
my $ret;
($ret, undef, $err) = $node->psql('owned', q{CALL snowflake_convert_column_online('customers')},
	extra_params => [ '-U', 'app' ]);
like($err, qr/DETAIL:  Table public.customers has rule "customers_log" on UPDATE, which would fire for every row the backfill updates.\nHINT:  The backfill keeps a table's triggers and rules from firing by updating with session_replication_role = replica, which both you and the table's owner \(its CHECK constraints run as the owner\) must be allowed to set; /,
	'the owner converting its tables: refused, naming the trigger');
like($err, $missing, '... and saying what it needs');
($ret, undef, $err) = $node->psql('owned', q{CALL snowflake_convert_column_online('customers')});
like($err, $missing, 'a superuser converting them: refused, the owner named');
is($node->safe_psql('owned', 'SELECT count(*) FROM snowflake_online_state'), '0', 'nothing was started');
is($node->safe_psql('owned', $fingerprint), $before_rows, 'nothing changed');

SKIP:
{
	skip 'GRANT SET ON PARAMETER is PostgreSQL 15\'s', 4 unless $v15;
	$node->safe_psql('postgres', 'GRANT SET ON PARAMETER session_replication_role TO app');
	# (the trigger guarding the conversions' state fires whatever the setting)
	($ret, undef, $err) = $node->psql('owned', q{SET session_replication_role = replica;
		INSERT INTO snowflake_online_state (tbl, col, step, rels, atts, drop_sequence, backfill_tables)
		VALUES (4000000000::oid::regclass, 'id', 'swap', '{4000000000}', '{id}', false, '{4000000000}')},
		extra_params => [ '-U', 'app' ]);
	like($err, qr/permission denied for the online conversion of table 4000000000/,
		'allowed to set session_replication_role, the owner still may not write a state row for a table not its own');
	($show, $err) = convert_online('owned', 'app');
	like($err, qr/now takes Snowflake ids/, 'granted the right, the owner converts its tables');
	is($node->safe_psql('owned', q{SELECT count(*) FROM audit}), '0', 'no audit row');
	is($node->safe_psql('owned', q{SELECT count(*) FROM customers WHERE updated_at IS NOT NULL}),
		'0', 'no updated_at set');
}

$node->stop;
done_testing();
