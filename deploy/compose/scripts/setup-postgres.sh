#!/bin/sh
# Creates Temporal's two databases on PostgreSQL and brings their schemas to
# the version of the temporal-sql-tool in this image (temporalio/admin-tools,
# the same version as the server). Safe to run again: an existing database
# is only updated, so `docker-compose up` after an upgrade of
# TEMPORAL_VERSION migrates the schema.
set -eu

: "${POSTGRES_SEEDS:?POSTGRES_SEEDS names the PostgreSQL host}"
: "${POSTGRES_USER:?POSTGRES_USER is required}"
: "${SQL_PASSWORD:?SQL_PASSWORD is required}"
port=${DB_PORT:-5432}
schema=/etc/temporal/schema/postgresql/v12

sql() {
  temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$port" -u "$POSTGRES_USER" "$@"
}

for db in temporal temporal_visibility; do
  case $db in
    temporal) dir=$schema/temporal/versioned ;;
    *) dir=$schema/visibility/versioned ;;
  esac
  # create fails when the database exists: then it only needs the update.
  if sql --db "$db" create; then
    echo "created database $db"
    sql --db "$db" setup-schema -v 0.0
  fi
  sql --db "$db" update-schema -d "$dir"
done
echo "Temporal's PostgreSQL schema is ready"
