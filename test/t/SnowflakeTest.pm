# Helpers shared by the TAP tests: a node with the library preloaded, and
# drawing ids from it.
package SnowflakeTest;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;

our @EXPORT = qw(snowflake_node draw_max);

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

1;
