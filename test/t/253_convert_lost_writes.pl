# No write is lost between the online conversion's validation and its
# swap.  A check keeps each shadow column equal to its column from the add
# step on: a write the conversion's trigger does not see (triggers
# disabled, for an INSERT and an UPDATE, as a bulk load or pg_restore
# --disable-triggers does; a BEFORE trigger firing after it and changing
# the column) fails with an error instead of vanishing at the swap.  Such
# a trigger is refused when the procedure plans a step.  After the swap,
# every row holds what was last written.  (Under 0.3.0 those writes went
# through and the swap lost them: 41 became 5, 31 became 30, 40 NULL.)
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('lost_writes', "snowflake.worker_id = 4\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE items (id serial PRIMARY KEY, n integer);
	CREATE TABLE item_refs (id serial PRIMARY KEY, item_id integer REFERENCES items);
	INSERT INTO items (n) SELECT g FROM generate_series(1, 50) g;
	INSERT INTO item_refs (item_id) SELECT g FROM generate_series(1, 50) g;
	SET client_min_messages = warning;
	CALL snowflake_convert_column_online('items'::regclass);
	SELECT unnest(pending) FROM snowflake_online_conversions \gexec
	CALL snowflake_convert_column_online('items'::regclass, stop_after => 'validate');});
is($node->safe_psql('postgres', 'SELECT step FROM snowflake_online_conversions'), 'swap',
	'validated, the swap to come');

# Writes the trigger does not see: refused, each with the check's error.
my @cases = (
	[ 'an insert with triggers disabled', 'item_refs',
		q{INSERT INTO item_refs (id, item_id) VALUES (1041, 41)} ],
	[ 'an update with triggers disabled', 'item_refs',
		q{UPDATE item_refs SET item_id = 5 WHERE id = 41} ],
	[ 'an update of the key with triggers disabled', 'items',
		q{UPDATE items SET n = -1, id = 1031 WHERE id = 31} ]);
foreach my $case (@cases)
{
	my ($what, $table, $sql) = @$case;
	my ($ret, $out, $err) = $node->psql('postgres', qq{
		BEGIN;
		ALTER TABLE $table DISABLE TRIGGER ALL;
		$sql;
		COMMIT;});
	like($err, qr/violates check constraint "\w+_snowflake_equal"/, "$what: refused by the check");
}

# (a refused write leaves the triggers enabled: its transaction rolled back)
my $apart = q{SELECT (SELECT count(*) FROM items WHERE id_snowflake IS DISTINCT FROM id)
				   + (SELECT count(*) FROM item_refs WHERE item_id_snowflake IS DISTINCT FROM item_id)};
is($node->safe_psql('postgres', $apart), '0', 'no shadow column apart from its column');

# A trigger before each inserted row, firing after the conversion's and
# changing the column: its writes fail the check, and the next step is
# refused until it is gone.
$node->safe_psql('postgres', q{
	CREATE FUNCTION lower_ref() RETURNS trigger LANGUAGE plpgsql
	AS $$BEGIN NEW.item_id := NEW.item_id - 1; RETURN NEW; END$$;
	CREATE TRIGGER zzz_late BEFORE INSERT ON item_refs FOR EACH ROW EXECUTE FUNCTION lower_ref();});
my ($ret, $out, $err) = $node->psql('postgres', q{INSERT INTO item_refs (id, item_id) VALUES (1031, 31)});
like($err, qr/violates check constraint "item_id_snowflake_equal"/,
	'an insert changed by a trigger firing after the conversion\'s: refused by the check');
is($node->safe_psql('postgres', $apart), '0', 'still none apart');
($ret, $out, $err) = $node->psql('postgres', q{CALL snowflake_convert_column_online('items'::regclass)});
like($err, qr/Trigger "zzz_late" of table public.item_refs fires before each inserted or updated row after the conversion's trigger/,
	'the swap is refused while that trigger is there');
$node->safe_psql('postgres', 'DROP TRIGGER zzz_late ON item_refs');

# A write the trigger sees goes through; then the swap.
$node->safe_psql('postgres', q{
	INSERT INTO item_refs (id, item_id) VALUES (1040, 40);
	UPDATE item_refs SET item_id = 42 WHERE id = 42;});
my $before = $node->safe_psql('postgres', q{SELECT string_agg(id || ':' || coalesce(item_id::text, 'NULL'), ',' ORDER BY id) FROM item_refs});
my $items_before = $node->safe_psql('postgres', q{SELECT string_agg(id || ':' || n, ',' ORDER BY id) FROM items});
$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	CALL snowflake_convert_column_online('items'::regclass);});
is($node->safe_psql('postgres', 'SELECT count(*) FROM snowflake_online_conversions'), '0', 'swapped');
is($node->safe_psql('postgres', q{SELECT string_agg(id || ':' || coalesce(item_id::text, 'NULL'), ',' ORDER BY id) FROM item_refs}),
	$before, 'after the swap, every reference holds what was last written');
is($node->safe_psql('postgres', q{SELECT string_agg(id || ':' || n, ',' ORDER BY id) FROM items}),
	$items_before, 'and every key');
is($node->safe_psql('postgres', q{
	SELECT string_agg(conname, ',') FROM pg_constraint
	 WHERE conrelid IN ('items'::regclass, 'item_refs'::regclass) AND conname LIKE '%snowflake%'}),
	'', 'the checks are gone with the shadow columns');

$node->stop;

done_testing();
