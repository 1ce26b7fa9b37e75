# A shard keeps its high-water mark when the server's worker id changes:
# the mark is keyed by node value.  Ids of shard 100 issued under worker id
# 4, then a restart as worker id 5 with the clock 30 s behind (a restart on
# a busy machine can take longer than a few seconds): the shard's
# next ids are not issued below the old ones (the call is refused until the
# clock passes the mark), while the new worker id, which has no mark, issues
# at once.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('shard_mark', "snowflake.worker_id = 4\nsnowflake.shards = '100-101'\n");
my $offset = "$PostgreSQL::Test::Utils::tmp_check/shard_mark.offset";
start_with_fake_clock($node, $offset);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $last = $node->safe_psql('postgres',
	'SELECT max(snowflake_nextval(100)) FROM generate_series(1, 50000)');
$node->stop;

$node->append_conf('postgresql.conf', "snowflake.worker_id = 5\n");
step_clock($offset, '-30s');
start_with_fake_clock($node, $offset);
like(psql_stderr($node, 'SELECT snowflake_nextval(100)'),
	qr/ERROR:  58000: clock is \d+ ms behind the high-water mark/,
	'shard 100 refuses to issue below its ids of before the worker id changed');
is($node->safe_psql('postgres', 'SELECT worker_id FROM snowflake_decode(snowflake_nextval())'),
	'5', 'the new worker id issues at once');

step_clock($offset, '+0s');
$node->poll_query_until('postgres', "SELECT snowflake_nextval(100) > $last")
  or die 'shard 100 issued nothing after the clock came back';
pass('once the clock is past the mark, shard 100 issues again, above its old ids');
$node->stop;
done_testing();
