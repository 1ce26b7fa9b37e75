# A database converted with snowflake_convert_column() survives pg_dump:
# restored into a new database on the same server (custom format,
# pg_restore) and on another server (plain SQL, psql), its ids and foreign
# keys are intact, its defaults name the extension's schema, and inserts go
# on with Snowflake ids above every id in the dump.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('convert', "snowflake.worker_id = 7\n");
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE shop');

# The extension in a schema the application's search_path does not hold:
# the converted defaults must name it, before and after a restore.
$node->safe_psql(
	'shop', q{
CREATE SCHEMA sfx;
CREATE EXTENSION snowflake SCHEMA sfx;
CREATE TABLE customers (
    id serial PRIMARY KEY,
    referred_by integer REFERENCES customers,
    region text NOT NULL DEFAULT 'eu',
    name text,
    UNIQUE (id, region));
CREATE TABLE addresses (
    customer_id integer NOT NULL,
    region text NOT NULL,
    street text,
    FOREIGN KEY (customer_id, region) REFERENCES customers (id, region));
CREATE TABLE orders (
    id bigserial PRIMARY KEY,
    customer_id integer NOT NULL REFERENCES customers);
CREATE TABLE events (
    id integer GENERATED ALWAYS AS IDENTITY,
    day date NOT NULL,
    PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE events_2024 PARTITION OF events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
CREATE TABLE events_2025 PARTITION OF events FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
CREATE TABLE event_notes (
    event_id integer NOT NULL,
    day date NOT NULL,
    FOREIGN KEY (event_id, day) REFERENCES events);
CREATE VIEW customer_names AS SELECT name FROM customers;
INSERT INTO customers (name, referred_by)
    SELECT 'c' || g, CASE WHEN g > 1 THEN g - 1 END FROM generate_series(1, 500) g;
INSERT INTO addresses SELECT id, region, 'street' FROM customers;
INSERT INTO orders (customer_id) SELECT 1 + g % 500 FROM generate_series(1, 2000) g;
INSERT INTO events (day) SELECT date '2024-11-01' + g % 120 FROM generate_series(1, 1000) g;
INSERT INTO event_notes SELECT id, day FROM events WHERE id % 3 = 0;
});

for my $table ('customers', 'orders', 'events')
{
	my $statements = $node->safe_psql('shop',
		"SELECT count(*) FROM sfx.snowflake_convert_column('$table')");
	cmp_ok($statements, '>=', 3, "$table converted ($statements statements)");
}

# Some rows with Snowflake ids, so the dump holds both kinds.
$node->safe_psql(
	'shop', q{
INSERT INTO customers (name, referred_by) SELECT 'n' || g, 1 FROM generate_series(1, 10) g;
INSERT INTO addresses SELECT id, region, 'new' FROM customers WHERE name LIKE 'n%';
INSERT INTO orders (customer_id) SELECT id FROM customers WHERE name LIKE 'n%';
INSERT INTO events (day) VALUES ('2024-12-24'), ('2025-02-01');
INSERT INTO event_notes SELECT id, day FROM events WHERE id > 1000000;
});

# Every id and reference, as a fingerprint per table; and the largest id.
my $fingerprint = q{
SELECT string_agg(t || ' ' || n || ' ' || h, ' / ' ORDER BY t) FROM (
    SELECT 'customers' AS t, count(*) AS n,
           md5(string_agg(id || ':' || coalesce(referred_by::text, '-'), ',' ORDER BY id)) AS h
      FROM customers
    UNION ALL SELECT 'addresses', count(*),
           md5(string_agg(customer_id || region, ',' ORDER BY customer_id)) FROM addresses
    UNION ALL SELECT 'orders', count(*),
           md5(string_agg(id || ':' || customer_id, ',' ORDER BY id)) FROM orders
    UNION ALL SELECT 'events', count(*),
           md5(string_agg(id || ':' || day, ',' ORDER BY id)) FROM events
    UNION ALL SELECT 'event_notes', count(*),
           md5(string_agg(event_id || ':' || day, ',' ORDER BY event_id)) FROM event_notes) s};
my $max_id = q{
SELECT greatest((SELECT max(id) FROM customers), (SELECT max(id) FROM orders),
                (SELECT max(id) FROM events))};
my $source = $node->safe_psql('shop', $fingerprint);
my $source_max = $node->safe_psql('shop', $max_id);
like($source, qr{customers 510 .* events 1002 }, 'the source holds the old rows and the new');

my $dir = PostgreSQL::Test::Utils::tempdir;
$node->command_ok([ 'pg_dump', '-Fc', '-f', "$dir/shop.dump", $node->connstr('shop') ],
	'pg_dump, custom format');
$node->command_ok([ 'pg_dump', '-Fp', '-f', "$dir/shop.sql", $node->connstr('shop') ],
	'pg_dump, plain SQL');
like(slurp_file("$dir/shop.sql"), qr/DEFAULT sfx\.snowflake_nextval\(\)/,
	'the dump writes the defaults schema-qualified');

# What a restored database must show; $worker is the server's worker id.
sub check_restored
{
	my ($n, $db, $worker, $where) = @_;

	is($n->safe_psql($db, $fingerprint), $source, "$where: every id and reference as dumped");
	is( $n->safe_psql(
			$db, q{
SELECT string_agg(format('%s.%s %s %s', a.attrelid::regclass, a.attname,
                         format_type(a.atttypid, a.atttypmod),
                         coalesce(pg_get_expr(d.adbin, d.adrelid), 'none')), ', '
                  ORDER BY a.attrelid::regclass::text, a.attname)
  FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE (a.attname = 'id' AND a.attrelid::regclass::text IN
            ('customers', 'orders', 'events', 'events_2024', 'events_2025'))
    OR a.attname IN ('referred_by', 'customer_id', 'event_id')}),
		'addresses.customer_id bigint none, customers.id bigint sfx.snowflake_nextval(), '
		  . 'customers.referred_by bigint none, event_notes.event_id bigint none, '
		  . 'events.id bigint sfx.snowflake_nextval(), events_2024.id bigint sfx.snowflake_nextval(), '
		  . 'events_2025.id bigint sfx.snowflake_nextval(), orders.customer_id bigint none, '
		  . 'orders.id bigint sfx.snowflake_nextval()',
		"$where: bigint columns, defaults naming the extension's schema");
	is( $n->safe_psql(
			$db, q{
SELECT count(*), bool_and(convalidated) FROM pg_constraint WHERE contype = 'f'}),
		'6|t', "$where: the foreign keys are there and valid");
	is( $n->safe_psql(
			$db, q{
SELECT (SELECT count(*) FROM customers c WHERE referred_by IS NOT NULL
           AND NOT EXISTS (SELECT FROM customers p WHERE p.id = c.referred_by))
     + (SELECT count(*) FROM addresses a WHERE NOT EXISTS
           (SELECT FROM customers c WHERE (c.id, c.region) = (a.customer_id, a.region)))
     + (SELECT count(*) FROM orders o WHERE NOT EXISTS
           (SELECT FROM customers c WHERE c.id = o.customer_id))
     + (SELECT count(*) FROM event_notes n WHERE NOT EXISTS
           (SELECT FROM events e WHERE (e.id, e.day) = (n.event_id, n.day)))}),
		'0', "$where: no reference lost its row");
	is( $n->safe_psql(
			$db, q{
SELECT pg_get_serial_sequence('customers', 'id') IS NULL,
       pg_get_serial_sequence('orders', 'id') IS NULL,
       (SELECT last_value FROM customers_id_seq),
       (SELECT last_value FROM events_id_seq),
       (SELECT count(*) FROM pg_attribute WHERE attidentity <> '' AND attrelid = 'events'::regclass)}),
		't|t|500|1000|0',
		"$where: the old sequences are there, detached, at their old values; no identity");

	# Inserts through the defaults, with the application's own search_path
	# (without the extension's schema), and RETURNING.
	my $new = $n->safe_psql(
		$db, qq{
SET search_path = public;
WITH c AS (INSERT INTO customers (name, referred_by) VALUES ('restored', 1) RETURNING id, region),
     a AS (INSERT INTO addresses SELECT id, region, 'restored' FROM c),
     o AS (INSERT INTO orders (customer_id) SELECT id FROM c RETURNING id)
SELECT c.id > $source_max, o.id > $source_max, (SELECT worker_id FROM sfx.snowflake_decode(c.id))
  FROM c, o;
WITH e AS (INSERT INTO events_2025 (day) VALUES ('2025-05-05') RETURNING id, day)
INSERT INTO event_notes SELECT id, day FROM e RETURNING event_id > $source_max;
});
	is($new, "t|t|$worker\nt", "$where: new rows take ids of worker $worker above every id dumped");

	# Converted already: a no-op with a notice.
	my ($ret, $out, $err) = $n->psql($db,
		"SELECT count(*) FROM sfx.snowflake_convert_column('customers')");
	is($out, '0', "$where: converting again does nothing");
	like($err, qr/NOTICE:  column "id" of table public.customers already takes Snowflake ids, skipping/,
		"$where: and says so");
	return;
}

# A new database on the same server, from the custom format.
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(
	[ 'pg_restore', '--exit-on-error', '-d', $node->connstr('restored'), "$dir/shop.dump" ],
	'pg_restore into a new database');
check_restored($node, 'restored', 7, 'same server');

# Another server, from the plain dump.
my $other = snowflake_node('convert_other', "snowflake.worker_id = 8\n");
$other->start;
$other->safe_psql('postgres', 'CREATE DATABASE shop');
$other->command_ok(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', "$dir/shop.sql", '-d', $other->connstr('shop') ],
	'the plain dump loads into another server');
check_restored($other, 'shop', 8, 'other server');

$other->stop;
$node->stop;

done_testing();
