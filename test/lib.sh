# Shell functions shared by test/run, test/demo and test/bench/run: packages,
# build and install, running as an unprivileged user, throwaway servers.
# Source it after setting "top" to the checkout's root.

# The major version: PG_MAJOR if set, else the newest server installed here
# (a chroot of test/matrix has its suite's), else the release's own (the
# one its "postgresql" package depends on: 15 on Debian 12, 17 on 13), else
# Debian 12's.
if [ -z "${PG_MAJOR:-}" ]; then
	PG_MAJOR=$(ls -d /usr/lib/postgresql/*/bin/postgres 2>/dev/null |
		sed 's|^/usr/lib/postgresql/\([0-9]*\)/.*|\1|' | sort -n | tail -n 1)
	[ -n "$PG_MAJOR" ] || PG_MAJOR=$(apt-cache depends postgresql 2>/dev/null |
		sed -n 's/^ *Depends: postgresql-\([0-9][0-9]*\)$/\1/p' | head -n 1)
	PG_MAJOR=${PG_MAJOR:-15}
fi
PGBIN=/usr/lib/postgresql/$PG_MAJOR/bin
export PATH=$PGBIN:$PATH

# Every server these scripts make (initdb here, pg_regress's and TAP's
# temporary instances) takes its encoding and locale from the environment.
# A machine without a locale (a minimal chroot, a container) would give
# SQL_ASCII databases, where client drivers return bytes for text: fix
# both, whatever the machine's locale, to C.UTF-8, which every Debian has
# (and messages in English, which the suites compare).
unset LC_ALL LC_CTYPE LC_COLLATE LC_MESSAGES LC_MONETARY LC_NUMERIC LC_TIME LANGUAGE
export LANG=C.UTF-8

# Commands run as "postgres" start in the caller's directory, which it may
# not be allowed to enter (a checkout under /root): work from / instead.
# Every path these scripts use is absolute.
cd /

# sf_hold_install_lock: until this shell exits, keep other runs of these
# scripts on this machine from installing another build of the extension
# under our suites (the server loads whatever is installed).
sf_hold_install_lock() {
	exec 9>/tmp/snowflake-install.lock
	chmod a+rw /tmp/snowflake-install.lock 2>/dev/null || true
	flock 9
}

sf_as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# sf_as_user CMD...: run as "postgres" when we are root (initdb refuses root).
sf_as_user() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# sf_install_packages PKG...: apt-get install those not installed yet.
sf_install_packages() {
	local need=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
	done
	[ ${#need[@]} -eq 0 ] && return 0
	echo "== installing: ${need[*]}"
	# (test/matrix may be installing on the host at the same time: wait
	# for apt's lock rather than fail)
	sf_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q -o DPkg::Lock::Timeout=600 &&
		sf_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			-o DPkg::Lock::Timeout=600 --no-install-recommends "${need[@]}"
}

# sf_copy_tree: a copy of the checkout without build products, owned by the
# user the servers run as; prints its path.
sf_copy_tree() {
	local work
	work=$(mktemp -d /tmp/snowflake.XXXXXX)
	tar -C "$top" --exclude=.git --exclude='./tmp_*' --exclude='./output_iso' \
		--exclude='./results' --exclude='*.o' --exclude='*.so' -cf - . | tar -C "$work" -xf -
	[ "$(id -u)" -eq 0 ] && chown -R postgres: "$work"
	echo "$work"
}

# sf_build_install DIR [MAKE ARGS...]: build in DIR (as the tree's owner)
# and install.
sf_build_install() {
	local dir=$1
	shift
	sf_as_user make -s -C "$dir" --no-print-directory PG_CONFIG="$PGBIN/pg_config" "$@" &&
		sf_as_root make -s -C "$dir" --no-print-directory PG_CONFIG="$PGBIN/pg_config" install
}

# sf_start_server DIR PORT [CONF LINE...]: initdb in DIR/data and start a
# server listening only on a socket in DIR, with snowflake preloaded.
sf_start_server() {
	local dir=$1 port=$2
	shift 2
	mkdir -p "$dir"
	[ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
	sf_as_user initdb -D "$dir/data" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >/dev/null ||
		return 1
	{
		echo "shared_preload_libraries = 'snowflake'"
		echo "port = $port"
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$dir'"
		echo "jit = off"
		printf '%s\n' "$@"
	} >>"$dir/data/postgresql.conf"
	# (without fd 9: a server left running must not hold the install lock)
	sf_as_user pg_ctl -D "$dir/data" -l "$dir/server.log" -w start >/dev/null 9>&-
}

# sf_median: the median of the numbers on standard input, one a line.
sf_median() {
	grep . | sort -g |
		awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

sf_stop_server() { sf_as_user pg_ctl -D "$1/data" -m fast -w stop >/dev/null; }
