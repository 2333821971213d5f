# Sourced by scripts/test: makes DATABASE_URL point at a PostgreSQL server on which the
# tests may create databases. Uses DATABASE_URL when it answers, else a server on
# 127.0.0.1:5432 with trust authentication, else starts a private one (initdb + pg_ctl,
# as an unprivileged user when running as root) that is stopped when the shell exits
# (by the function `berth_pg_stop`, which a script that sets its own EXIT trap must call).

pg_answers() {
  if command -v pg_isready >/dev/null 2>&1; then
    pg_isready -q -d "$1" -t 3
  else
    (exec 3<>"/dev/tcp/${2:-127.0.0.1}/${3:-5432}") 2>/dev/null
  fi
}

pg_bin() {
  if command -v "$1" >/dev/null 2>&1; then command -v "$1"; return; fi
  ls -d /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -n 1
}

if [ -n "${DATABASE_URL:-}" ] && pg_answers "$DATABASE_URL"; then
  echo "PostgreSQL: using DATABASE_URL"
elif pg_answers "postgres://postgres@127.0.0.1:5432/postgres" 127.0.0.1 5432; then
  export DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres"
  echo "PostgreSQL: using the server on 127.0.0.1:5432"
else
  initdb=$(pg_bin initdb); pg_ctl=$(pg_bin pg_ctl)
  if [ -z "$initdb" ] || [ -z "$pg_ctl" ]; then
    echo "PostgreSQL server binaries (initdb, pg_ctl) not found: install PostgreSQL or set DATABASE_URL" >&2
    exit 1
  fi
  pgdir=$(mktemp -d /tmp/berth-pg.XXXXXX)
  port=55432
  run_as=()
  if [ "$(id -u)" = 0 ]; then
    pguser=postgres; id postgres >/dev/null 2>&1 || pguser=nobody
    chown "$pguser" "$pgdir"
    run_as=(runuser -u "$pguser" --)
  fi
  "${run_as[@]}" "$initdb" -D "$pgdir/data" -U postgres -A trust --no-sync >/dev/null
  "${run_as[@]}" "$pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w \
    -o "-p $port -k $pgdir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300" start >/dev/null
  berth_pg_stop() {
    "${run_as[@]}" "$pg_ctl" -D "$pgdir/data" -m immediate stop >/dev/null 2>&1 || true
  }
  trap berth_pg_stop EXIT
  export DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres"
  echo "PostgreSQL: started a private server on port $port ($pgdir)"
fi
