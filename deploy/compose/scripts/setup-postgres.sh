#!/bin/sh
# Creates Temporal's two databases on PostgreSQL and brings their schemas to
# the version of the temporal-sql-tool in this image (temporalio/admin-tools,
# the same version as the server). Safe to run again, so every
# `docker-compose up` runs it, and one after a change of TEMPORAL_VERSION
# migrates the schema.
set -eu

: "${POSTGRES_SEEDS:?POSTGRES_SEEDS names the PostgreSQL host}"
: "${POSTGRES_USER:?POSTGRES_USER is required}"
: "${SQL_PASSWORD:?SQL_PASSWORD is required}"
port=${DB_PORT:-5432}
# Where temporalio/admin-tools keeps the schema files.
schema=${SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}

sql() {
  temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$port" -u "$POSTGRES_USER" "$@"
}

# Each step is idempotent: create skips an existing database, setup-schema
# leaves a schema newer than 0.0 alone, update-schema applies only the
# versions the database lacks.
for db in temporal temporal_visibility; do
  case $db in
    temporal) dir=$schema/temporal/versioned ;;
    *) dir=$schema/visibility/versioned ;;
  esac
  sql --db "$db" create
  sql --db "$db" setup-schema -v 0.0
  sql --db "$db" update-schema -d "$dir"
done
echo "Temporal's PostgreSQL schema is ready"
