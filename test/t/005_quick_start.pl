# README's quick start, run as written: the postgresql.conf lines and the
# SQL block are taken from README.md (the fenced blocks after the
# "<!-- quickstart:conf -->" and "<!-- quickstart:sql -->" markers), the
# lines appended to a fresh server's postgresql.conf, the SQL run by psql
# as pasted, stopping at the first error and printing nothing on stderr
# (but, on 13 and 14, CREATE EXTENSION's warning about schema public).  The
# quick start must end within README's first 60 lines, and give a decoded
# id of the configured worker.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my @readme = split /\n/,
  PostgreSQL::Test::Utils::slurp_file("$FindBin::RealBin/../../README.md");

# The fenced block right after the marker, and the line it ends on.
sub quoted
{
	my ($marker) = @_;
	for my $i (0 .. $#readme - 1)
	{
		next unless $readme[$i] eq "<!-- quickstart:$marker -->";
		die "no fenced block after the $marker marker"
		  unless $readme[ $i + 1 ] =~ /^```/;
		my $j = $i + 2;
		$j++ while $j <= $#readme && $readme[$j] !~ /^```/;
		return (join("\n", @readme[ $i + 2 .. $j - 1 ]) . "\n", $j + 1);
	}
	die "README.md has no \"<!-- quickstart:$marker -->\" marker";
}

my ($conf, $conf_end) = quoted('conf');
my ($sql, $sql_end) = quoted('sql');
cmp_ok($sql_end, '<=', 60, "README's quick start ends by line 60 (line $sql_end)");
like($conf, qr/^shared_preload_libraries = 'snowflake'$/m,
	'the quick start preloads the library');
my ($worker) = $conf =~ /^snowflake\.worker_id = (\d+)/m;
ok(defined $worker, 'the quick start sets a worker id');

my $node = PostgreSQL::Test::Cluster->new('quick_start');
$node->init(utf8_init());
$node->append_conf('postgresql.conf', $conf);
$node->start;

my $file = "$PostgreSQL::Test::Utils::tmp_check/quick_start.sql";
PostgreSQL::Test::Utils::append_to_file($file, $sql);
my ($stdout, $stderr);
my $ret = $node->psql(
	'postgres', undef,
	stdout => \$stdout,
	stderr => \$stderr,
	extra_params => [ '-v', 'ON_ERROR_STOP=1', '-f', $file ]);
is($ret, 0, 'the quick start runs without an error');
# On PostgreSQL 13 and 14, PUBLIC may create objects in schema public, and
# CREATE EXTENSION says so (README's Install section tells why): nothing
# else may be printed there.
if ($node->safe_psql('postgres', 'SHOW server_version_num') < 150000)
{
	$stderr =~ s/^psql:[^\n]*WARNING:  roles other than the owner of extension "snowflake" can create objects in its schema "public": PUBLIC\n(?:(?:DETAIL|HINT):[^\n]*(?:\n|\z))*//m;
}
is($stderr, '', 'and prints nothing else on stderr');

# What it printed holds the stored id twice (RETURNING, then the decoded
# row), and the id decodes to the worker id of the configuration and a
# time of a moment ago.
my $id = $node->safe_psql('postgres', 'SELECT id FROM events');
like($id, qr/^\d+$/, 'one row was inserted');
my @seen = $stdout =~ /\b\Q$id\E\b/g;
is(scalar @seen, 2, 'the output shows the id inserted, then decoded');
is( $node->safe_psql(
		'postgres',
		"SELECT worker_id = $worker AND created_at BETWEEN now() - interval '1 minute' AND now()
		   FROM events e CROSS JOIN LATERAL snowflake_decode(e.id)"),
	't',
	"the id is worker ${worker}'s, made a moment ago");

$node->stop;
done_testing();
