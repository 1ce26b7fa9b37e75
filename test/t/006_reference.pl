# doc/reference.md's summary tables against a server's catalogs:
# - the settings table: a row for each "snowflake.*" setting of pg_settings
#   and none other, with its type, default, context ("restart" for
#   postmaster, "reload" for sighup) and, for settings in ms, bounds;
# - the two tables of functions: a row for each function and procedure of
#   the extension and none other, with what it returns, its volatility,
#   strictness, parallel safety, security, and whether PUBLIC may
#   execute it.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $reference =
  PostgreSQL::Test::Utils::slurp_file("$FindBin::RealBin/../../doc/reference.md");

# The rows of the tables whose first cell is a backquoted name matching
# $pattern, as "cell|cell|..." with the backquotes taken off.
sub rows
{
	my ($pattern) = @_;
	my %rows;
	for my $line (split /\n/, $reference)
	{
		next unless $line =~ /^\| `($pattern)` \|/;
		my $name = $1;
		my @cells = map { s/^\s+|\s+$//gr =~ s/`//gr } split /\|/, $line;
		shift @cells;
		$rows{$name} = join('|', @cells);
	}
	return %rows;
}

my $node = snowflake_node('reference');
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

my %documented = rows('snowflake\.[a-z_]+');
my %catalog;
for my $line (split /\n/, $node->safe_psql('postgres', q{
	SELECT name, vartype, coalesce(nullif(boot_val, ''), 'empty'),
	       CASE WHEN unit = 'ms' THEN min_val || '..' || max_val || ' ms' END,
	       CASE context WHEN 'postmaster' THEN 'restart' WHEN 'sighup' THEN 'reload' ELSE context END
	  FROM pg_settings WHERE name LIKE 'snowflake.%' ORDER BY name}))
{
	my ($name, $type, $default, $bounds, $context) = split /\|/, $line, -1;
	$catalog{$name} = 1;
	my ($d_type, $d_default, $d_bounds, $d_context) = (split /\|/, $documented{$name} // '', -1)[ 1 .. 4 ];
	ok(defined $d_type, "doc/reference.md has a row for $name") or next;
	is("$d_type|$d_default|$d_context", "$type|$default|$context",
		"$name: type, default and context");
	is($d_bounds, $bounds, "$name: bounds") if $bounds ne '';
}
is(join(' ', grep { !$catalog{$_} } sort keys %documented), '',
	'no row for a setting the server does not have');
cmp_ok(scalar keys %catalog, '>=', 12, 'the server has the settings');

%documented = rows('_?snowflake_\w+\([^)]*\)');
%catalog = ();
for my $line (split /\n/, $node->safe_psql('postgres', q{
	SELECT regexp_replace(p.oid::regprocedure::text, '^[a-z_]+\.', ''),
	       CASE WHEN p.prokind = 'p' THEN 'procedure'
	            ELSE CASE WHEN p.proretset THEN 'setof ' ELSE '' END || format_type(p.prorettype, NULL) END,
	       CASE p.provolatile WHEN 'i' THEN 'immutable' WHEN 's' THEN 'stable' ELSE 'volatile' END,
	       CASE WHEN p.proisstrict THEN 'strict' ELSE '' END,
	       CASE p.proparallel WHEN 's' THEN 'safe' WHEN 'r' THEN 'restricted' ELSE 'unsafe' END,
	       CASE WHEN p.prosecdef THEN 'definer' ELSE 'invoker' END,
	       CASE WHEN EXISTS (SELECT FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
	                          WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE')
	            THEN 'yes' ELSE 'no' END
	  FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
	 WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_extension'::regclass
	   AND d.deptype = 'e'
	   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake')
	 ORDER BY 1}))
{
	my ($signature, @marks) = split /\|/, $line, -1;
	$catalog{$signature} = 1;
	is($documented{$signature}, join('|', $signature, @marks), "markings of $signature");
}
is(join(' ', grep { !$catalog{$_} } sort keys %documented), '',
	'no row for a function the extension does not have');
cmp_ok(scalar keys %catalog, '>=', 50, 'the extension has its functions');

$node->stop;
done_testing();
