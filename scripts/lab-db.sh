#!/bin/bash
# A PostgreSQL store on this machine for trying the lab (docs/lab.md, `make lab-db`): Debian's
# cluster (apt's postgresql) started, a login role `vmbisect` whose password is made here and
# kept in ~/.pgpass of the user who runs this (never on a command line), a database `lab` it
# owns, and the store URL printed. Idempotent: a second run changes nothing and prints the same.
set -euo pipefail

ROLE=vmbisect
DB=lab
PGPASS="${PGPASSFILE:-$HOME/.pgpass}"

say() { echo "lab-db: $*" >&2; }
die() { say "$*"; exit 1; }

command -v pg_lsclusters >/dev/null || die "Debian's postgresql is not installed (make setup installs it; or: apt install postgresql)"
if [ "$(id -u)" = 0 ]; then
    as_postgres() { runuser -u postgres -- "$@"; }
    as_root() { "$@"; }
else
    command -v sudo >/dev/null || die "run as root, or install sudo: starting a cluster and making a role need the postgres user"
    as_postgres() { sudo -u postgres "$@"; }
    as_root() { sudo "$@"; }
fi

cluster() { pg_lsclusters --no-header | awk 'NR == 1 { print $1, $2, $3, $4 }'; }

read -r version name port status <<<"$(cluster)" || true
if [ -z "${version:-}" ]; then
    version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
    say "no cluster: creating $version/main"
    as_root pg_createcluster "$version" main >/dev/null
    read -r version name port status <<<"$(cluster)"
fi
if [ "$status" != online ]; then
    say "starting cluster $version/$name (port $port)"
    as_root pg_ctlcluster "$version" "$name" start
fi

psql_pg() { as_postgres psql -X -q -v ON_ERROR_STOP=1 -p "$port" "$@"; }
has_role=$(psql_pg -tAc "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'")
entry="localhost:$port:$DB:$ROLE:"
if [ "$has_role" != 1 ] || ! grep -q "^$entry" "$PGPASS" 2>/dev/null; then
    password=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
    verb=$([ "$has_role" = 1 ] && echo ALTER || echo CREATE)
    say "$(echo "$verb" | tr 'A-Z' 'a-z') role $ROLE; its password goes to $PGPASS"
    # the password reaches psql on its stdin, never as an argument
    psql_pg <<<"$verb ROLE $ROLE LOGIN PASSWORD '$password';"
    umask 077
    touch "$PGPASS"
    grep -v "^$entry" "$PGPASS" >"$PGPASS.new" || true
    echo "$entry$password" >>"$PGPASS.new"
    mv "$PGPASS.new" "$PGPASS"
    chmod 600 "$PGPASS"
fi
if [ "$(psql_pg -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]; then
    say "creating database $DB owned by $ROLE"
    as_postgres createdb -p "$port" -O "$ROLE" "$DB"
fi

host=localhost
[ "$port" = 5432 ] && url="postgresql://$ROLE@$host/$DB" || url="postgresql://$ROLE@$host:$port/$DB"
psql -X -q -w "$url" -tAc "SELECT 1" >/dev/null || die "cannot log in as $ROLE at $url with the password in $PGPASS"
echo "$url"
