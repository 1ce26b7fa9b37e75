# Helpers shared by the TAP tests: a node with the library preloaded, and
# drawing ids from it.
package SnowflakeTest;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;

our @EXPORT = qw(snowflake_node draw_max is_above psql_stderr);

# A new node with snowflake preloaded and the extension created on start-up
# by the caller; $conf is appended to postgresql.conf.
sub snowflake_node
{
	my ($name, $conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);

	$node->init;
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'snowflake'\njit = off\n" . ($conf // ''));
	return $node;
}

# Draw $n ids and return the largest, as a string (ids exceed a double).
sub draw_max
{
	my ($node, $n) = @_;

	return $node->safe_psql('postgres',
		"SELECT max(id) FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, $n)) s"
	);
}

# Pass when id $new is above id $old (compared by the server: ids exceed
# what a double holds exactly).
sub is_above
{
	my ($node, $new, $old, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;

	Test::More::is($node->safe_psql('postgres', "SELECT ${new}::bigint > ${old}::bigint"),
		't', $name);
}

# Run $sql with verbose errors (SQLSTATE in the message); return stderr.
sub psql_stderr
{
	my ($node, $sql) = @_;
	my ($ret, $stdout, $stderr) =
	  $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return $stderr;
}

1;
