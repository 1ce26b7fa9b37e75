# The keys of public ids in the extension's table, wrapped under the root
# key, follow the database: a standby made before a key replays it (an open
# session uses it from its next transaction), and promoted makes the same
# public ids; PITR to a point after a key has it, and not a later one;
# pg_dump + pg_restore into a new cluster with the same root key keeps
# every public id, and without it or with another is refused clearly; no
# dump or log holds the root key; a root rotation changes no public id.  And the move of 0.3.0's key file into
# the table: the same versions and public ids, all or nothing, the file
# no longer needed.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $dir = PostgreSQL::Test::Utils::tempdir;
my $root = join('', map { sprintf('%02x', int(rand(256))) } 1 .. 32);
my $other = join('', map { sprintf('%02x', int(rand(256))) } 1 .. 32);
PostgreSQL::Test::Utils::append_to_file("$dir/root.key", "$root\n");
PostgreSQL::Test::Utils::append_to_file("$dir/other.key", "$other\n");
my $root_conf = "snowflake.root_key_command = 'cat $dir/root.key'\nlog_statement = 'all'\n";

# The primary, archiving, with a base backup taken before any key
my $p = snowflake_node('kt_primary', $root_conf, allows_streaming => 1, has_archiving => 1);
$p->start;
$p->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$p->backup('before');

my $s = PostgreSQL::Test::Cluster->new('kt_standby');
$s->init_from_backup($p, 'before', has_streaming => 1);
$s->start;

# An open session on the standby, from before the first key to after its
# replay: the shell step creates the key on the primary and waits until
# the standby has replayed it.
my ($pconn, $sconn) = ($p->connstr('postgres'), $s->connstr('postgres'));
PostgreSQL::Test::Utils::append_to_file("$dir/create-and-wait.sh", <<"SH");
lsn=\$(psql -XAtq -d "$pconn" -c 'SELECT snowflake_public_key_create(first => true)' -c 'SELECT pg_current_wal_lsn()' | tail -1)
until [ "\$(psql -XAtq -d "$sconn" -c "SELECT pg_last_wal_replay_lsn() >= '\$lsn'")" = t ]; do sleep 0.1; done
SH
my ($ret, $out, $err) = $s->psql('postgres', qq{
	SELECT 'before:' || count(*) FROM snowflake_public_keys();
	\\! sh $dir/create-and-wait.sh
	SELECT 'after:' || snowflake_public_id(42);
});
is($err, '', 'the standby session ran without an error');
my $made = $p->safe_psql('postgres', 'SELECT snowflake_public_id(42)');
like($made, qr/^1/, 'the primary made a public id with key 1');
is($out, "before:0\nafter:$made", 'an open session on a standby made before the key uses it once replayed');

my $v1 = public_id_pairs($p);
is(decoded_pairs($s, $v1), '1000', 'the standby decodes the primary\'s public ids');
like(psql_stderr($s, 'SELECT snowflake_public_key_create()'),
	qr/ERROR:  25006: cannot change public id keys during recovery\nHINT:  Change the keys on the primary: the standbys replay the change\./,
	'a standby refuses to create a key');

# A point in time with key 1 only, then key 2; archived
my $lsn_1 = $p->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
is($p->safe_psql('postgres', 'SELECT snowflake_public_key_create()'), '2', 'a second key on the primary');
my $v2 = public_id_pairs($p);
my $archived = $p->safe_psql('postgres', 'SELECT pg_walfile_name(pg_current_wal_lsn())');
$p->safe_psql('postgres', 'SELECT pg_switch_wal()');
$p->poll_query_until('postgres',
	"SELECT last_archived_wal >= '$archived' FROM pg_stat_archiver") or die 'not archived';
$p->wait_for_catchup($s);
is(public_id_pairs($s), $v2, 'the standby makes the primary\'s public ids with key 2');

# Promoted, it makes the same public ids and decodes both keys'
$s->promote;
$s->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'no promotion';
is(decoded_pairs($s, "$v1,$v2"), '2000', 'promoted, the standby decodes both keys\' public ids');
is(public_id_pairs($s), $v2, 'and makes the same public ids as its old primary');
$s->stop;

# PITR from the backup taken before any key, to the point with key 1 only
my $pitr = PostgreSQL::Test::Cluster->new('kt_pitr');
$pitr->init_from_backup($p, 'before', has_restoring => 1);
$pitr->append_conf('postgresql.conf',
	"recovery_target_lsn = '$lsn_1'\nrecovery_target_action = 'promote'\n");
$pitr->start;
$pitr->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'no end of recovery';
is(decoded_pairs($pitr, $v1), '1000', 'PITR to a point after key 1 decodes its public ids');
is($pitr->safe_psql('postgres', 'SELECT string_agg(version::text, \',\') FROM snowflake_public_keys()'),
	'1', 'and has key 1 only, as the database had then');
$pitr->stop;

# pg_dump + pg_restore into new clusters: with the same root key, with
# none, with another
$p->safe_psql('postgres',
	"CREATE TABLE shop (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), public text);
	 INSERT INTO shop (public) SELECT NULL FROM generate_series(1, 100);
	 UPDATE shop SET public = snowflake_public_id(id);");
my $dump = "$dir/db.dump";
$p->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $p->connstr('postgres') ], 'pg_dump');
$p->command_ok([ 'pg_dump', '-Fp', '-f', "$dump.sql", '-d', $p->connstr('postgres') ], 'pg_dump, plain');
my %restored;
for my $case ([ 'same', $root_conf ], [ 'none', '' ],
	[ 'other', "snowflake.root_key_command = 'cat $dir/other.key'\n" ])
{
	my ($name, $conf) = @$case;
	my $r = snowflake_node("kt_restore_$name", $conf . "snowflake.worker_id = 9\n");
	$r->start;
	$r->command_ok([ 'pg_restore', '-d', $r->connstr('postgres'), $dump ], "pg_restore ($name root key)");
	$restored{$name} = $r;
}
my $r = $restored{same};
is(decoded_pairs($r, "$v1,$v2"), '2000', 'restored with the same root key, every public id decodes');
is(public_id_pairs($r), $v2, 'and the same ids get the same public ids');
is($r->safe_psql('postgres',
	'SELECT count(*) FILTER (WHERE snowflake_id_from_public(public) = id AND snowflake_public_id(id) = public) FROM shop'),
	'100', 'the public ids stored in a table decode and re-encode the same');
is($r->safe_psql('postgres', 'SELECT string_agg(version || check_value, \',\' ORDER BY version) FROM snowflake_public_keys()'),
	$p->safe_psql('postgres', 'SELECT string_agg(version || check_value, \',\' ORDER BY version) FROM snowflake_public_keys()'),
	'with the same keys, by their check values');
like(psql_stderr($restored{none}, "SELECT snowflake_id_from_public(public) FROM shop LIMIT 1"),
	qr/ERROR:  F0000: no root key: "snowflake.root_key_command" is not set/,
	'restored without a root key: refused, saying there is none');
my $own = $restored{other}->safe_psql('postgres', 'SELECT snowflake_root_key_check()');
my $theirs = $p->safe_psql('postgres', 'SELECT snowflake_root_key_check()');
like(psql_stderr($restored{other}, "SELECT snowflake_public_id(1)"),
	qr/ERROR:  F0000: key version \d of public ids does not unwrap under this server's root key\nDETAIL:  It was wrapped under the root key whose check value is $theirs; this server's root key has check value $own\./,
	'restored under another root key: refused, with both check values');
is($restored{other}->safe_psql('postgres', 'SELECT count(*) FROM shop'), '100',
	'and the rest of the database is there, ids working');
like(draw_max($restored{other}, 10), qr/^\d+$/, 'ids are issued');
$_->stop for values %restored;

# Servers that do not replicate one database (shards, active-active)
# share keys by copying the rows, as doc/public-ids.md shows: COPY out of one, into
# the empty table of another with the same root key
my $copy = snowflake_node('kt_copy', $root_conf . "snowflake.worker_id = 10\n");
$copy->start;
$copy->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $rows = $p->safe_psql('postgres', 'COPY snowflake_public_key TO STDOUT');
$copy->safe_psql('postgres', "COPY snowflake_public_key FROM STDIN;\n$rows\n\\.\n");
is(decoded_pairs($copy, "$v1,$v2"), '2000', 'a server given the rows by COPY decodes every public id');
is(public_id_pairs($copy), $v2, 'and makes the same public ids');
$copy->stop;

# Root rotation: a new root key, with the previous one beside it until the
# rows are rewrapped; no public id changes
my $new_root = join('', map { sprintf('%02x', int(rand(256))) } 1 .. 32);
PostgreSQL::Test::Utils::append_to_file("$dir/new.key", "$new_root\n");
$p->append_conf('postgresql.conf', "snowflake.root_key_command = 'cat $dir/new.key'\n"
	  . "snowflake.previous_root_key_command = 'cat $dir/root.key'\n");
$p->restart;
my $new_check = $p->safe_psql('postgres', 'SELECT snowflake_root_key_check()');
isnt($new_check, $theirs, 'a new root key, another check value');
my $row_checks = "SELECT string_agg(DISTINCT root_check, ',') FROM snowflake_public_key";
is($p->safe_psql('postgres', $row_checks), $theirs, 'the rows are still wrapped under the previous root key');
is(decoded_pairs($p, "$v1,$v2"), '2000', 'which unwraps them meanwhile: every public id decodes');
is($p->safe_psql('postgres', 'SELECT snowflake_root_key_rewrap()'), '2', 'the rewrap: two keys');
is($p->safe_psql('postgres', $row_checks), $new_check, 'now wrapped under the new root key');
is($p->safe_psql('postgres', 'SELECT snowflake_root_key_rewrap()'), '0', 'a second rewrap has nothing to do');
$p->append_conf('postgresql.conf', "snowflake.previous_root_key_command = ''\n");
$p->restart;
is(decoded_pairs($p, "$v1,$v2"), '2000', 'the previous root key removed, every public id decodes');
is(public_id_pairs($p), $v2, 'and the same ids get the same public ids');

my $text = slurp_file("$dump.sql");
like($text, qr/COPY public\.snowflake_public_key|COPY \w+\.snowflake_public_key/, 'the plain dump holds the key rows');
unlike($text . slurp_file($dump), qr/$root/i, 'no dump holds the root key');

# 0.3.0's key file moved into the table
my $old = snowflake_node('kt_old', $root_conf);
$old->start;
$old->safe_psql('postgres', "CREATE EXTENSION snowflake VERSION '0.3.0'");
$old->safe_psql('postgres', 'SELECT snowflake_public_key_create()') for 1 .. 3;
$old->safe_psql('postgres', 'SELECT snowflake_public_key_drop(1)');
my $old_v3 = public_id_pairs($old);
my $keys_sql = 'SELECT string_agg(version || current::text || check_value, \',\' ORDER BY version) FROM snowflake_public_keys()';
my $old_keys = $old->safe_psql('postgres', $keys_sql);
$old->safe_psql('postgres', 'SELECT snowflake_public_key_create()');
my $old_v4 = public_id_pairs($old);
$old_keys = $old->safe_psql('postgres', $keys_sql);
$old->safe_psql('postgres', 'ALTER EXTENSION snowflake UPDATE');
is(decoded_pairs($old, "$old_v3,$old_v4"), '2000', 'updated, the file\'s keys still decode');
is(public_id_pairs($old), $old_v4, 'and make the same public ids');
like(psql_stderr($old, 'SELECT snowflake_public_key_create()'),
	qr/ERROR:  55000: cannot run snowflake_public_key_create\(\): the keys of public ids are still in the file "snowflake.publickeys"\n.*HINT:  Move them into the table first: SELECT snowflake_public_keys_move_from_file\(\);/s,
	'no new key before the move: the file\'s keys would be shadowed');
($ret, $out, $err) = $old->psql('postgres',
	'BEGIN; SELECT snowflake_public_keys_move_from_file(); ROLLBACK;');
is($out, '3', 'a move rolled back');
is($old->safe_psql('postgres', 'SELECT count(*) FROM snowflake_public_key'), '0', 'leaves the table empty');
is(decoded_pairs($old, "$old_v3,$old_v4"), '2000', 'and the file in use');
is($old->safe_psql('postgres', 'SELECT snowflake_public_keys_move_from_file()'), '3', 'the move: three keys');
is($old->safe_psql('postgres', $keys_sql), $old_keys, 'the same versions, current key and check values');
unlink($old->data_dir . '/snowflake.publickeys') or die $!;
$old->restart;
is(decoded_pairs($old, "$old_v3,$old_v4"), '2000', 'the file deleted, every public id of 0.3.0 decodes');
is(public_id_pairs($old), $old_v4, 'and the same ids get the same public ids');
is($old->safe_psql('postgres', 'SELECT snowflake_public_key_create()'), '5', 'new keys follow the moved ones');
like(psql_stderr($old, 'SELECT snowflake_public_keys_move_from_file()'),
	qr/ERROR:  55000: the keys of public ids are already in the table/, 'a second move is refused');
$old->stop;

# No root key in any server log
for my $node ($p, $s, $pitr, values %restored, $old, $copy)
{
	unlike(slurp_file($node->logfile), qr/$root|$other|$new_root/i, $node->name . ': no root key in the log');
}
$p->stop;

done_testing();
