# A streaming standby made with pg_basebackup carries the primary's
# configuration, worker id included: it must issue no id (25006, as
# nextval() on a standby) and write no mark, while decoders and UUIDv7 work.
# Promoted, with a clock 1.5 s behind the primary's, its first ids are
# above every id the primary committed: the floor comes from the last
# commit it replayed, not from its own clock.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use Digest::MD5 qw(md5_hex);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(utf8_init(allows_streaming => 1));
$primary->append_conf('postgresql.conf',
	"shared_preload_libraries = 'snowflake'\njit = off\nsnowflake.worker_id = 7\n");
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$primary->safe_psql('postgres',
	'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int)');
$primary->safe_psql('postgres', 'INSERT INTO t (n) SELECT generate_series(1, 1000)');
$primary->backup('base');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
# waited out rather than refused: the promoted server's clock is 1.5 s behind
$standby->append_conf('postgresql.conf', "snowflake.rollback_tolerance_ms = 3000\n");
my $offset = "$PostgreSQL::Test::Utils::tmp_check/standby.offset";
step_clock($offset, '-1.5s');
start_with_fake_clock($standby, $offset);
my $mark = $standby->data_dir . '/snowflake.mark';
my $mark_before = md5_hex(slurp_file($mark));

for my $call ('SELECT snowflake_nextval()', 'SELECT snowflake_nextval(7)',
	'SELECT * FROM snowflake_nextval_batch(3)')
{
	my ($fn) = $call =~ /(snowflake_nextval\w*)/;
	like(psql_stderr($standby, $call),
		qr/ERROR:  25006: cannot execute $fn\(\S*\) during recovery\n.*HINT:  Snowflake ids are issued by the primary/s,
		"on the standby, $call fails with 25006 and says where ids come from");
}
is($standby->safe_psql('postgres', 'SELECT worker_id FROM snowflake_decode((SELECT max(id) FROM t))'),
	'7', 'the decoders work on the standby');
is($standby->safe_psql('postgres',
		'SELECT count(DISTINCT u) FROM (SELECT snowflake_uuidv7() AS u FROM generate_series(1, 1000)) s'),
	'1000', 'snowflake_uuidv7() works on the standby (it needs no worker id)');
is($standby->safe_psql('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'snowflake mark writer'}),
	'0', 'no mark writer runs during recovery');
$standby->stop;
start_with_fake_clock($standby, $offset);
is(md5_hex(slurp_file($mark)), $mark_before,
	'the standby wrote no mark, through calls and a clean restart');

# the primary goes on issuing until it fails over
$primary->safe_psql('postgres', 'INSERT INTO t (n) SELECT generate_series(1, 200000)');
$primary->wait_for_catchup($standby);
my $last = $primary->safe_psql('postgres', 'SELECT max(id) FROM t');
$primary->stop('immediate');

$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby was not promoted';
my $first = $standby->safe_psql('postgres', 'SELECT snowflake_nextval()');
is_above($standby, $first, $last,
	'after promotion, with a clock behind, ids are above every id the old primary committed');
$standby->safe_psql('postgres', 'INSERT INTO t (n) SELECT generate_series(1, 1000)');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM t'), '202000',
	'and they go into the replicated table without a conflict');
isnt(md5_hex(slurp_file($mark)), $mark_before, 'the promoted server writes its mark');
$standby->stop;
done_testing();
