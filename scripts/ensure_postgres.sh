#!/usr/bin/env bash
# Make sure a PostgreSQL server answers on 127.0.0.1:5432 with a database `test` (trust auth).
set -euo pipefail
if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then exit 0; fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >/dev/null
  ver=$(ls /etc/postgresql | head -1)
  $SUDO sed -i 's/^\(host\|local\)\(.*\)\(peer\|scram-sha-256\|md5\)$/\1\2trust/' /etc/postgresql/$ver/main/pg_hba.conf
fi
ver=$(ls /etc/postgresql | head -1)
$SUDO pg_ctlcluster --skip-systemctl-redirect "$ver" main start || true
for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
pg_isready -h 127.0.0.1 -p 5432
psql -h 127.0.0.1 -U postgres -tc "SELECT 1 FROM pg_database WHERE datname='test'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -c "CREATE DATABASE test"
