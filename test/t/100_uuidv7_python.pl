# An independent reader of UUIDs, Python's uuid module, agrees with ours on
# the version, the variant, the timestamp and the order of UUIDv7.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('uuidv7');
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

my $rows = $node->safe_psql('postgres', q{
	SELECT u, (extract(epoch FROM snowflake_uuidv7_timestamp(u)) * 1000)::bigint
	  FROM (SELECT snowflake_uuidv7() AS u FROM generate_series(1, 20000)) s});

my $checker = <<'PY';
import sys, uuid
previous = None
count = 0
for line in sys.stdin:
    text, ms = line.strip().split("|")
    u = uuid.UUID(text)
    if u.version != 7:
        sys.exit(f"{text}: version {u.version}")
    if u.variant != uuid.RFC_4122:
        sys.exit(f"{text}: variant {u.variant}")
    if u.int >> 80 != int(ms):
        sys.exit(f"{text}: timestamp {u.int >> 80}, PostgreSQL said {ms}")
    if previous is not None and u.int <= previous:
        sys.exit(f"{text}: not above the one before")
    previous = u.int
    count += 1
print(f"checked {count}")
PY

my ($stdout, $stderr) = ('', '');
my $ok = IPC::Run::run([ 'python3', '-c', $checker ], '<', \$rows, '>', \$stdout, '2>', \$stderr);
ok($ok, 'Python reads every UUID as version 7, RFC 4122 variant, with our timestamp, in increasing order')
  or diag($stderr);
is($stdout, "checked 20000\n", 'all 20000 were checked');

$node->stop;
done_testing();
