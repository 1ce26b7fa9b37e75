# pg_upgrade from the previous PostgreSQL major, with the extension in use:
# keys of public ids (their table, wrapped under the root key), ids, and a
# table converted from serial.  After the upgrade every public id decodes to
# its id and is made again the same, and new ids are above the old ones.
#
# It needs the previous major's server and this extension built for it
# (/usr/lib/postgresql/N-1, as Debian installs them side by side: the sid
# chroot of test/matrix has 18 and 19); elsewhere it says so and skips.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my ($major) = `pg_config --version` =~ /PostgreSQL (\d+)/;
my $old_major = $ENV{SNOWFLAKE_UPGRADE_FROM} // $major - 1;
my $old_path = "/usr/lib/postgresql/$old_major";
plan skip_all => "no PostgreSQL $old_major with snowflake beside $major to upgrade from"
  unless -x "$old_path/bin/initdb" && -f "$old_path/lib/snowflake.so";

my $dir = PostgreSQL::Test::Utils::tempdir;
my $root = join('', map { sprintf('%02x', int(rand(256))) } 1 .. 32);
PostgreSQL::Test::Utils::append_to_file("$dir/root.key", "$root\n");
my $conf = "shared_preload_libraries = 'snowflake'\njit = off\nsnowflake.worker_id = 3\n"
  . "snowflake.root_key_command = 'cat $dir/root.key'\n";

my $old = PostgreSQL::Test::Cluster->new('up_old', install_path => $old_path);
$old->init(utf8_init());
$old->append_conf('postgresql.conf', $conf);
$old->start;
$old->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	SELECT snowflake_public_key_create(first => true);
	CREATE TABLE shop (id serial PRIMARY KEY, name text);
	INSERT INTO shop (name) SELECT 'before ' || g FROM generate_series(1, 100) g;
	SELECT count(*) FROM snowflake_convert_column('shop');
	INSERT INTO shop (name) SELECT 'after ' || g FROM generate_series(1, 100) g;
	SELECT snowflake_public_key_create();
	CREATE TABLE links AS SELECT id, snowflake_public_id(id) AS public FROM shop;
});
my $keys_sql = 'SELECT string_agg(version || current::text || check_value, \',\' ORDER BY version) FROM snowflake_public_keys()';
my $keys = $old->safe_psql('postgres', $keys_sql);
my $max = $old->safe_psql('postgres', 'SELECT max(id) FROM shop');
is($old->safe_psql('postgres', 'SELECT count(*) FROM shop WHERE id > 100'), '100',
	"PostgreSQL $old_major: the converted table has 100 snowflake ids");
$old->stop;

my $new = PostgreSQL::Test::Cluster->new('up_new');
$new->init(utf8_init());
$new->append_conf('postgresql.conf', $conf);
my $bindir = `pg_config --bindir`;
chomp $bindir;
# (pg_upgrade writes its logs into the current directory)
chdir $dir or die $!;
$new->command_ok(
	[ 'pg_upgrade', '--no-sync', '-b', "$old_path/bin", '-B', $bindir,
	  '-d', $old->data_dir, '-D', $new->data_dir,
	  '-p', $old->port, '-P', $new->port, '-s', $dir ],
	"pg_upgrade from $old_major to $major");
$new->start;

is($new->safe_psql('postgres', $keys_sql), $keys, 'the keys are carried, with their check values');
is($new->safe_psql('postgres',
	'SELECT count(*) FILTER (WHERE snowflake_id_from_public(public) = id AND snowflake_public_id(id) = public) FROM links'),
	'200', 'every public id decodes to its id, and the same id gets the same public id');
$new->safe_psql('postgres', q{INSERT INTO shop (name) SELECT 'upgraded ' || g FROM generate_series(1, 10) g});
is($new->safe_psql('postgres', "SELECT count(*) FROM shop WHERE name LIKE 'upgraded%' AND id > $max"), '10',
	'new ids are above the old ones');
unlike(slurp_file($new->logfile) . slurp_file($old->logfile), qr/$root/i, 'no root key in either log');
$new->stop;

done_testing();
