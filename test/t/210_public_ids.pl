# The key file of 0.3.0, which this library keeps reading and writing while
# the extension's objects are 0.3.0's (between an update of the package
# and ALTER EXTENSION ... UPDATE): keys across restarts, a crash, a second
# server, a standby and its promotion; who can read them (nobody but
# superusers, pg_monitor included); and what the key file's loader
# refuses.  The key table of 0.4.0 is 212_key_table.pl's.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $key_file = 'snowflake.publickeys';

# The hex of every key in a node's key file, read as the OS user would
sub key_hexes
{
	my ($node) = @_;
	my $bytes = slurp_file($node->data_dir . "/$key_file");
	my ($magic, $format, $current, $nkeys) = unpack('L L l l', $bytes);
	return map { unpack('H*', substr($bytes, 16 + $_ * 48 + 16, 32)) } 0 .. $nkeys - 1;
}

# Copy a key file into a running server's data directory, atomically (a
# temporary name in the same directory, then a rename), as 0.3.0's README said.
sub copy_keys
{
	my ($from, $to) = @_;
	my $target = $to->data_dir . "/$key_file";
	PostgreSQL::Test::Utils::system_or_bail('cp', $from->data_dir . "/$key_file", "$target.copy");
	rename("$target.copy", $target) or die "rename: $!";
}

# Server A: preloaded, with every statement logged (the keys must not be)
my $a = PostgreSQL::Test::Cluster->new('keys_a');
$a->init(utf8_init(allows_streaming => 1));
$a->append_conf('postgresql.conf',
	"shared_preload_libraries = 'snowflake'\njit = off\nlog_statement = 'all'\nlog_min_messages = debug1\n");
$a->start;
$a->safe_psql('postgres', "CREATE EXTENSION snowflake VERSION '0.3.0'");
is($a->safe_psql('postgres', 'SELECT snowflake_public_key_create()'), '1', 'the first key is version 1');
my $v1 = public_id_pairs($a);
is(decoded_pairs($a, $v1), '1000', 'public ids of key 1 decode');

# Rotation, then a clean restart
is($a->safe_psql('postgres', 'SELECT snowflake_public_key_create()'), '2', 'a new key is version 2');
$a->restart;
is(decoded_pairs($a, $v1), '1000', 'after a new key and a restart, key 1\'s public ids decode');
my $v2 = public_id_pairs($a);
is(scalar(grep { (split /\|/)[1] =~ /^2/ } split /,/, $v2), 1000, 'new public ids use version 2');
isnt($v1, $v2, 'and differ from key 1\'s');

# A crash (no shutdown checkpoint): the file was made durable when written
$a->stop('immediate');
$a->start;
is(decoded_pairs($a, $v1 . ',' . $v2), '2000', 'after a crash, both keys\' public ids decode');
is($a->safe_psql('postgres', 'SELECT string_agg(version || current::text, \',\' ORDER BY version) FROM snowflake_public_keys()'),
	'1false,2true', 'the keys and the current one survive the crash');

# Server B: without the library preloaded, and without the key
my $b = PostgreSQL::Test::Cluster->new('keys_b');
$b->init(utf8_init());
$b->start;
$b->safe_psql('postgres', "CREATE EXTENSION snowflake VERSION '0.3.0'");
my ($one) = split /,/, $v2;
my ($one_id, $one_public) = split /\|/, $one;
like(psql_stderr($b, "SELECT snowflake_id_from_public('$one_public')"),
	qr/ERROR:  22P02: public id "$one_public" needs key version 2, which this server does not have\n.*HINT:  If a server of the same application made it, copy the key file "snowflake.publickeys" from there\./s,
	'a server without the key refuses, naming the missing version');
like(psql_stderr($b, "SELECT snowflake_public_id(1)"),
	qr/ERROR:  55000: no public id key exists/, 'and makes no public id');

# The fleet procedure: copy the file into the running server
copy_keys($a, $b);
is(decoded_pairs($b, $v1 . ',' . $v2), '2000', 'with the copied file, the second server decodes the first\'s public ids, without a restart');
is(public_id_pairs($b), $v2, 'and makes the same public ids');
is($b->safe_psql('postgres', 'SELECT string_agg(version || check_value, \',\' ORDER BY version) FROM snowflake_public_keys()'),
	$a->safe_psql('postgres', 'SELECT string_agg(version || check_value, \',\' ORDER BY version) FROM snowflake_public_keys()'),
	'the check values of the two servers agree');

# A standby made by pg_basebackup has the keys; it cannot change them; promoted, it keeps them
$a->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('keys_standby');
$standby->init_from_backup($a, 'base', has_streaming => 1);
$standby->start;
$a->wait_for_catchup($standby);
is(decoded_pairs($standby, $v1 . ',' . $v2), '2000', 'a standby made by pg_basebackup decodes both keys\' public ids');
like(psql_stderr($standby, 'SELECT snowflake_public_key_create()'),
	qr/ERROR:  25006: cannot change public id keys during recovery/, 'a standby refuses to create a key');
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'no promotion';
is(decoded_pairs($standby, $v1 . ',' . $v2), '2000', 'promoted, it still decodes them');
is(public_id_pairs($standby), $v2, 'and makes the same public ids as its primary');
$standby->stop;

# Nobody but superusers reads key material: a pg_monitor role (which reads
# every setting, pg_read_all_settings included, and every statistic)
my @hex = key_hexes($a);
is(scalar(@hex), 2, 'the file holds two keys');
$a->safe_psql('postgres', 'CREATE ROLE mon LOGIN IN ROLE pg_monitor');
$a->safe_psql('postgres', 'CREATE ROLE app LOGIN');
for my $sql (
	'SELECT snowflake_public_key_create()',
	'SELECT snowflake_public_key_drop(1)',
	'SELECT * FROM snowflake_public_keys()',
	"SELECT pg_read_binary_file('$key_file')",
	"SELECT pg_read_file('$key_file')",
	"COPY (SELECT 1) TO STDOUT; CREATE TEMP TABLE f (t text); COPY f FROM '" . $a->data_dir . "/$key_file'",
	"SELECT lo_import('" . $a->data_dir . "/$key_file')")
{
	for my $role ('mon', 'app')
	{
		my ($ret, $out, $err) = $a->psql('postgres', "SET ROLE $role; $sql");
		like($err, qr/ERROR:  (permission denied|must be superuser|only superuser)/,
			"$role: $sql is refused");
	}
}
my $seen = $a->safe_psql('postgres', q{
	SET ROLE mon;
	SELECT string_agg(name || '=' || coalesce(setting, '') || coalesce(reset_val, '') || coalesce(boot_val, ''), E'\n')
	  FROM pg_settings;
	SELECT string_agg(coalesce(query, ''), E'\n') FROM pg_stat_activity;
	SELECT string_agg(s::text, E'\n') FROM snowflake_stats() s;
	SELECT string_agg(p.proname || coalesce(p.prosrc, ''), E'\n') FROM pg_proc p WHERE p.proname LIKE 'snowflake%';
});
my $log = slurp_file($a->logfile);
like($log, qr/snowflake_public_key_create/, 'the statements were logged');
for my $i (0 .. $#hex)
{
	my $h = $hex[$i];
	my $head = substr($h, 0, 16);
	unlike(lc($seen), qr/$head/i, "key " . ($i + 1) . ": no setting, statistic or catalog a pg_monitor role reads shows it");
	unlike(lc($log), qr/$head/i, "key " . ($i + 1) . ": the server log does not contain it");
}

# Sessions already open see a copied file: at once for decoding (a version
# the backend lacks makes it read the file again), within a second for the
# current key of new public ids.
is($a->safe_psql('postgres', 'SELECT snowflake_public_key_create()'), '3', 'a third key on A');
my $v3 = $a->safe_psql('postgres', 'SELECT snowflake_public_id(42)');
like($v3, qr/^3/, 'A makes public ids with version 3');
my $copy = "cp '" . $a->data_dir . "/$key_file' '" . $b->data_dir . "/$key_file.copy' && mv '"
  . $b->data_dir . "/$key_file.copy' '" . $b->data_dir . "/$key_file'";
my ($ret, $out, $err) = $b->psql('postgres', qq{
	SELECT 'before:' || left(snowflake_public_id(42), 1);
	\\! $copy
	SELECT 'decoded:' || snowflake_id_from_public('$v3');
	SELECT 'at once:' || left(snowflake_public_id(42), 1);
});
like($out, qr/before:2\ndecoded:42\nat once:3/, 'an open session decodes a public id of a key copied in meanwhile, and then uses that key');
is($err, '', 'without an error');
$a->safe_psql('postgres', 'SELECT snowflake_public_key_create()');
($ret, $out, $err) = $b->psql('postgres', qq{
	SELECT 'before:' || left(snowflake_public_id(42), 1);
	\\! $copy
	SELECT 'same second:' || left(snowflake_public_id(42), 1) WHERE false;
	SELECT pg_sleep(1.2);
	SELECT 'a second later:' || left(snowflake_public_id(42), 1);
});
like($out, qr/before:3\n.*a second later:4/s, 'an open session makes public ids with a new current key within a second');

# Writers serialise: three sessions creating keys at once lose none and
# repeat no version (on a server of its own).
my $c = PostgreSQL::Test::Cluster->new('keys_c');
$c->init(utf8_init());
# with fsync, each write takes long enough for the others to run into it
$c->append_conf('postgresql.conf', "fsync = on\n");
$c->start;
$c->safe_psql('postgres', "CREATE EXTENSION snowflake VERSION '0.3.0'");
my @writers;
for my $w (1 .. 3)
{
	my $out = '';
	push @writers, [ IPC::Run::start(
		# (one -c each: psql before 15 prints only a -c's last result)
		[ 'psql', '-XAtq', '-d', $c->connstr('postgres'),
		  map { ('-c', 'SELECT snowflake_public_key_create()') } 1 .. 8 ],
		'>', \$out, '2>&1'), \$out ];
}
my @versions;
for my $writer (@writers)
{
	$writer->[0]->finish;
	push @versions, split /\n/, ${ $writer->[1] };
}
is(scalar(@versions), 24, 'three sessions created 24 keys at once');
is(scalar(keys %{ { map { $_ => 1 } @versions } }), 24, 'with 24 distinct versions');
is($c->safe_psql('postgres', 'SELECT count(*) || \' \' || count(DISTINCT check_value) FROM snowflake_public_keys()'),
	'24 24', 'all 24 keys are in the file, each its own');
$c->stop;

# What the loader refuses (on B, whose file is a copy)
my $b_file = $b->data_dir . "/$key_file";
my $good = slurp_file($b_file);
sub write_file
{
	my ($path, $bytes) = @_;
	open(my $fh, '>:raw', "$path.new") or die $!;
	print $fh $bytes;
	close($fh) or die $!;
	rename("$path.new", $path) or die $!;
}
my $flipped = $good;
substr($flipped, 40, 1) = chr(ord(substr($flipped, 40, 1)) ^ 1);
write_file($b_file, $flipped);
like(psql_stderr($b, "SELECT snowflake_id_from_public('$one_public')"),
	qr/ERROR:  XX001: invalid key file "snowflake.publickeys"\nDETAIL:  The file's checksum does not match its contents\./,
	'a key file with a flipped bit is refused (checksum)');
write_file($b_file, 'XXXX' . substr($good, 4));
like(psql_stderr($b, "SELECT snowflake_public_id(1)"),
	qr/DETAIL:  The file does not start with the magic number of a snowflake key file\./, 'a wrong magic number is refused');
write_file($b_file, substr($good, 0, 4) . pack('L', 9) . substr($good, 8));
like(psql_stderr($b, "SELECT snowflake_public_id(1)"),
	qr/DETAIL:  The file has format version 9; this build reads version 1\./, 'a format version from the future is refused');
write_file($b_file, substr($good, 0, 50));
like(psql_stderr($b, "SELECT snowflake_public_id(1)"),
	qr/DETAIL:  The file is 50 bytes long; its header says 212\./, 'a truncated file is refused');
unlink($b_file);
PostgreSQL::Test::Utils::system_or_bail('mkfifo', $b_file);
like(psql_stderr($b, "SELECT snowflake_public_id(1)"),
	qr/ERROR:  XX001: "snowflake.publickeys" is not a regular file/, 'a FIFO in its place is refused at once');
unlink($b_file);
write_file($b->data_dir . '/elsewhere', $good);
symlink($b->data_dir . '/elsewhere', $b_file) or die $!;
like(psql_stderr($b, "SELECT snowflake_public_id(1)"),
	qr/ERROR:  \w+: could not open file "snowflake.publickeys": Too many levels of symbolic links/,
	'a symbolic link in its place is refused');
unlink($b_file);
write_file($b_file, $good);
is(decoded_pairs($b, $v2), '1000', 'the good file restored, B decodes again');
is($b->safe_psql('postgres', "SELECT snowflake_id_from_public('$v3')"), '42', 'and the third key\'s public ids');

$b->stop;
$a->stop;
done_testing();
