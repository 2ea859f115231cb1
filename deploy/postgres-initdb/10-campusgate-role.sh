#!/bin/bash
# Run once by the postgres image when it creates the database cluster (compose.yaml mounts this
# folder on /docker-entrypoint-initdb.d): campusgate connects as the role `campusgate`, which owns
# the database `campusgate` and its schema and nothing else; it is no superuser and cannot create
# roles or databases. The superuser `postgres` gets no password, so it signs in only through the
# container's own socket (`docker compose exec postgres psql -U postgres`), never over the network.
# docs/deployment.md, "Compose".
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc \
  --dbname "$POSTGRES_DB" --set=password="$POSTGRES_PASSWORD" >/dev/null <<'SQL'
CREATE ROLE campusgate LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'password';
ALTER DATABASE campusgate OWNER TO campusgate;
ALTER SCHEMA public OWNER TO campusgate;
ALTER ROLE postgres PASSWORD NULL;
SQL
