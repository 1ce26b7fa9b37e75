# The online conversion runs each table's code with that table's owner's
# rights.  A superuser converts its own table, referenced from a tenant's
# table whose CHECK calls a function of the tenant's: every row the
# backfill updates evaluates it, as the tenant (it records current_user),
# and the tenant does not become superuser; an error inside gives the
# caller back its own user.  A BEFORE UPDATE trigger the tenant creates,
# ENABLE ALWAYS (which session_replication_role = replica, see TAP 256,
# does not keep from firing), while the backfill waits for its lock on the
# table never fires: the batch
# checks again under that lock, stops with an error naming it, and the next
# call resumes once it is gone.  (Under 0.3.0 the CHECK ran as the
# superuser, and such a trigger fired for every row.)  The function that
# switches users is not PUBLIC's, and refuses a caller without the owner's
# rights.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use SnowflakeTest;

my $node = snowflake_node('owner_rights', "snowflake.worker_id = 5\n");
$node->start;
my $me = $node->safe_psql('postgres', 'SELECT current_user');
$node->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE ROLE regress_tenant;
	CREATE TABLE items (id serial PRIMARY KEY, n integer);
	INSERT INTO items (n) SELECT g FROM generate_series(1, 100) g;
	GRANT REFERENCES ON items TO regress_tenant;
	CREATE SCHEMA tenant AUTHORIZATION regress_tenant;
	SET ROLE regress_tenant;
	CREATE TABLE tenant.seen (who name, n integer);
	CREATE TABLE tenant.fired (who name);
	CREATE TABLE tenant.armed ();
	-- the CHECK of the tenant's table: records who evaluates it, tries to
	-- make the tenant superuser, and fails on 'boom'
	CREATE FUNCTION tenant.watch(note text) RETURNS boolean LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO tenant.seen VALUES (current_user, 1);
		BEGIN
			EXECUTE 'ALTER ROLE regress_tenant SUPERUSER';
		EXCEPTION WHEN OTHERS THEN NULL;
		END;
		IF note = 'boom' AND EXISTS (SELECT FROM tenant.armed) THEN
			RAISE EXCEPTION 'boom from the tenant''s check';
		END IF;
		RETURN true;
	END$$;
	CREATE FUNCTION tenant.touch() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO tenant.fired VALUES (current_user);
		RETURN NEW;
	END$$;
	CREATE TABLE tenant.refs (id serial PRIMARY KEY, item_id integer REFERENCES public.items,
							  note text CHECK (tenant.watch(note)));
	INSERT INTO tenant.refs (item_id, note) SELECT g, CASE g WHEN 57 THEN 'boom' ELSE 'fine' END
	  FROM generate_series(1, 100) g;
	INSERT INTO tenant.armed DEFAULT VALUES;
	TRUNCATE tenant.seen;});

# 1. The backfill evaluates the tenant's CHECK as the tenant; its error
# leaves the caller's user and settings as they were.
my ($ret, $out, $err) = $node->psql('postgres', q{
	SET client_min_messages = warning;
	CALL snowflake_convert_column_online('items'::regclass, batch_size => 10);
	SELECT current_user, current_setting('search_path'), current_setting('is_superuser');},
	on_error_stop => 0);
like($err, qr/boom from the tenant's check/, 'the tenant\'s CHECK failed the backfill');
is($out, "$me|\"\$user\", public|on", 'after the error, the caller is itself again, with its search_path');
is($node->safe_psql('postgres', q{SELECT step FROM snowflake_online_conversions}), 'backfill',
	'the conversion stopped in its backfill');
is($node->safe_psql('postgres', q{SELECT string_agg(DISTINCT who, ',') FROM tenant.seen}), 'regress_tenant',
	'every evaluation of the CHECK that ran ran as the tenant');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_tenant'}), 'f',
	'the tenant is not superuser');
$node->safe_psql('postgres', q{SET ROLE regress_tenant; TRUNCATE tenant.armed;});

# 2. A trigger created while a batch waits for its lock on the table.
sub hold
{
	my ($sql) = @_;
	my ($in, $hout, $herr) = ("SET ROLE regress_tenant;\nBEGIN;\n$sql\nSELECT 'held';\n", '', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') ],
		'<', \$in, '>', \$hout, '2>', \$herr);
	my $deadline = time() + 60;
	while ($hout !~ /held/ && time() < $deadline)
	{
		$h->pump_nb;
		usleep(20_000);
	}
	die "the holder did not get its lock: $herr" unless $hout =~ /held/;
	return sub {
		my ($more) = @_;
		$in .= "$more\nCOMMIT;\n\\q\n";
		$h->finish or die "the holder failed: $herr";
	};
}

my $release = hold('LOCK TABLE tenant.refs IN SHARE MODE;');
my %call = (out => '', err => '');
{
	local $ENV{PGAPPNAME} = 'online_call';
	$call{h} = IPC::Run::start([ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
			'-c', q{CALL snowflake_convert_column_online('items'::regclass, batch_size => 10)} ],
		'>', \$call{out}, '2>', \$call{err});
}
$node->poll_query_until('postgres', q{
	SELECT EXISTS (SELECT FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
					WHERE a.application_name = 'online_call' AND NOT l.granted
					  AND l.relation = 'tenant.refs'::regclass AND l.mode = 'RowExclusiveLock')})
  or die 'the batch never waited for its lock';
$release->('CREATE TRIGGER refs_touch BEFORE UPDATE ON tenant.refs FOR EACH ROW EXECUTE FUNCTION tenant.touch();
	ALTER TABLE tenant.refs ENABLE ALWAYS TRIGGER refs_touch;');
$call{h}->finish;
like($call{err}, qr/ERROR:  cannot go on with the online conversion of table public.items\nDETAIL:  Table tenant.refs now has trigger "refs_touch" on UPDATE, which would fire for every row the backfill updates.\nHINT:  Drop or disable it, then call the procedure again: the conversion resumes where it stopped./,
	'a trigger created while the batch waited for its lock stops the conversion, named');
is($node->safe_psql('postgres', q{SELECT count(*) FROM tenant.fired}), '0', 'the trigger never fired');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'}), '0',
	'the conversion\'s lock is let go');

# 3. Once it is gone, the next call resumes and finishes; the CHECK ran for
# every row of the tenant's table, as the tenant.
$node->safe_psql('postgres', q{SET ROLE regress_tenant; DROP TRIGGER refs_touch ON tenant.refs;});
$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	CALL snowflake_convert_column_online('items'::regclass, batch_size => 10);
	SELECT unnest(pending) FROM snowflake_online_conversions \gexec
	CALL snowflake_convert_column_online('items'::regclass, batch_size => 10);});
is($node->safe_psql('postgres', q{SELECT count(*) FROM snowflake_online_conversions}), '0', 'the conversion finished');
is($node->safe_psql('postgres', q{
	SELECT string_agg(format_type(atttypid, NULL), ',' ORDER BY attrelid::regclass::text)
	  FROM pg_attribute WHERE (attrelid, attname) IN (('items'::regclass, 'id'), ('tenant.refs'::regclass, 'item_id'))}),
	'bigint,bigint', 'both columns are bigint');
is($node->safe_psql('postgres', q{SELECT count(*) FROM tenant.refs r JOIN items i ON i.id = r.item_id WHERE r.id = r.item_id}),
	'100', 'every reference kept');
is($node->safe_psql('postgres', q{SELECT string_agg(DISTINCT who, ',') || ' ' || (count(*) >= 100) FROM tenant.seen}),
	'regress_tenant true', 'the tenant\'s CHECK ran for each of its rows, as the tenant');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_tenant'}), 'f',
	'the tenant is still not superuser');

# 4. The switching function: not PUBLIC's; with EXECUTE, still the owner's
# rights needed; and a role that is not the owner of a table to fill, and
# may not execute it, is refused before anything changes.
$node->safe_psql('postgres', q{
	CREATE ROLE regress_member IN ROLE regress_tenant;
	CREATE TABLE tenant.more (id serial PRIMARY KEY);
	ALTER TABLE tenant.more OWNER TO regress_member;
	CREATE TABLE tenant.more_refs (id serial PRIMARY KEY, more_id integer REFERENCES tenant.more);
	ALTER TABLE tenant.more_refs OWNER TO regress_tenant;
	GRANT USAGE ON SCHEMA tenant TO regress_member;});
my $sync = q{SELECT _snowflake_online_sync_rows('items'::regclass, '{}'::oid[], '{}'::name[], true, NULL, NULL, 10)};
($ret, $out, $err) = $node->psql('postgres', "SET ROLE regress_tenant; $sync");
like($err, qr/permission denied for function _snowflake_online_sync_rows/, 'PUBLIC cannot execute the switching function');
$node->safe_psql('postgres', q{GRANT EXECUTE ON FUNCTION _snowflake_online_sync_rows(regclass, oid[], name[], boolean, text[], text[], integer) TO regress_tenant});
($ret, $out, $err) = $node->psql('postgres', "SET ROLE regress_tenant; $sync");
like($err, qr/must be owner of table items/, 'with EXECUTE, a caller without the owner\'s rights is refused');
($ret, $out, $err) = $node->psql('postgres', q{SELECT _snowflake_online_sync_rows(4000000000::oid::regclass, '{}'::oid[], '{}'::name[], false, NULL, NULL, NULL)});
like($err, qr/table with OID 4000000000 does not exist/, 'a table that does not exist is refused');
($ret, $out, $err) = $node->psql('postgres', $sync);
like($err, qr/table "items" has no column of the online conversion to set/, 'and it sets only the conversion\'s columns');
$node->safe_psql('postgres', q{REVOKE EXECUTE ON FUNCTION _snowflake_online_sync_rows(regclass, oid[], name[], boolean, text[], text[], integer) FROM regress_tenant});
($ret, $out, $err) = $node->psql('postgres', q{SET ROLE regress_member; CALL snowflake_convert_column_online('tenant.more'::regclass)});
like($err, qr/DETAIL:  Table tenant.more_refs belongs to role regress_tenant, as whom the backfill updates its rows, which needs EXECUTE on function public._snowflake_online_sync_rows\(\)/,
	'a caller that is not the owner of a table to fill, without EXECUTE, is refused');
is($node->safe_psql('postgres', q{SELECT count(*) FROM snowflake_online_conversions}), '0', 'before anything changed');

$node->stop;
done_testing();
