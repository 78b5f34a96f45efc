#!/usr/bin/env bash
# Private PostgreSQL 15 + pgvector and Redis for integration tests, on Debian 12 as root.
#
#   out=$(bash .ci/services.sh) && eval "$out"   # start or reuse; sets DATABASE_URL, REDIS_URL
#   out=$(bash .ci/services.sh reset) && eval "$out"   # same, plus an empty engram_test and Redis
#   bash .ci/services.sh stop            # both; `stop postgres` or `stop redis` for one
#
# (Prefer the two-step form above: `eval "$(bash .ci/services.sh)"` hides a failure, because eval of an
# empty string succeeds.)
#
# Why private instances: the machine's own PostgreSQL (5432) and Redis (6379) are shared with whatever
# runs next; tests get their own on other ports and never stop or reconfigure the shared ones.
# Why build pgvector: Debian 12 has no pgvector package for PostgreSQL 15; trixie's source package
# builds fine against it.
# Only the export lines go to stdout; everything else goes to stderr.
#
# Env: ENGRAM_CI_DIR (default /tmp/engram-ci), ENGRAM_CI_PG_PORT (55432), ENGRAM_CI_REDIS_PORT (56379),
#      ENGRAM_CI_PGVECTOR_HEADERS_ONLY=1 forces the no-apt-install pgvector build (see build_pgvector).
set -euo pipefail
unset "${!PG@}" # a caller's PGHOST/PGOPTIONS/... must not redirect our psql calls

WORK=$(realpath -m "${ENGRAM_CI_DIR:-/tmp/engram-ci}")
DB_PORT=${ENGRAM_CI_PG_PORT:-55432}
REDIS_PORT=${ENGRAM_CI_REDIS_PORT:-56379}
DB_NAME=engram_test
BIN=/usr/lib/postgresql/15/bin
DATA=$WORK/pg/data
export DEBIAN_FRONTEND=noninteractive

log() { printf '[services] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
installed_ver() { dpkg-query -W -f='${db:Status-Status} ${Version}\n' "$1" 2>/dev/null | awk '$1=="installed"{print $2}' || true; }
psql_() { "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$DB_PORT" -U postgres "$@"; }

# PID of *our* postmaster, if running. The PID alone is not proof: after a reboot a stale
# postmaster.pid may name an unrelated process, but only our postmaster has $DATA as its cwd.
pg_pid() {
  local pid
  [ -f "$DATA/postmaster.pid" ] || return 1
  pid=$(head -n1 "$DATA/postmaster.pid")
  [ -n "$pid" ] && [ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$DATA" ] && echo "$pid"
}
procs_in_data() { local d; for d in /proc/[0-9]*; do [ "$(readlink "$d/cwd" 2>/dev/null)" = "$DATA" ] && echo "${d#/proc/}"; done; return 0; }
# Same idea for Redis: it retitles itself "redis-server 127.0.0.1:PORT".
redis_pid() {
  local pid
  [ -f "$WORK/redis.pid" ] || return 1
  pid=$(cat "$WORK/redis.pid")
  [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "^redis-server .*:$REDIS_PORT\b" && echo "$pid"
}

SRC_LIST=/etc/apt/sources.list.d/engram-pgvector-src.list
restore_apt() {
  rm -f "$SRC_LIST"
  grep -rqs trixie /etc/apt/sources.list /etc/apt/sources.list.d/ || rm -f /var/lib/apt/lists/*_dists_trixie_*
}

build_pgvector() {
  local t0=$SECONDS mirror server_ver libpq_ver cppflags=''
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  # Whatever happens below (the EXIT trap also runs on failure), leave apt's sources and lists as they were.
  trap restore_apt EXIT
  trap 'exit 130' INT TERM
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${mirror:-http://deb.debian.org/debian} trixie main" >"$SRC_LIST"
  apt-get update -qq
  # Install only what is missing: naming an installed package would upgrade it (and dpkg with it).
  local p missing=()
  for p in dpkg-dev make gcc; do [ -n "$(installed_ver "$p")" ] || missing+=("$p"); done
  [ ${#missing[@]} = 0 ] || apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

  # Headers must match the installed server, and installing them must not upgrade the shared server
  # (an unpinned postgresql-server-dev-15 can pull newer postgresql-15/libpq5 from bookworm-security).
  # Pinning the installed packages to their own versions makes apt fail instead of upgrading them.
  server_ver=$(installed_ver postgresql-15); libpq_ver=$(installed_ver libpq5)
  [ -n "$server_ver" ] || die "postgresql-15 is not installed"
  if [ "${ENGRAM_CI_PGVECTOR_HEADERS_ONLY:-}" != 1 ] && apt-get install -y -qq --no-install-recommends \
      "postgresql-server-dev-15=$server_ver" "postgresql-15=$server_ver" \
      ${libpq_ver:+"libpq5=$libpq_ver" "libpq-dev=$libpq_ver"} >/dev/null; then
    log "installed postgresql-server-dev-15=$server_ver"
  else
    # The archive keeps only the newest security build, so the exact version can vanish. Then take the
    # newest headers without installing anything (same major = same ABI); the PGXS makefiles already
    # come with postgresql-client-15.
    log "could not install postgresql-server-dev-15=$server_ver; building against extracted headers"
    rm -rf "$WORK/build/hdr" && mkdir -p "$WORK/build/hdr"
    (cd "$WORK/build" && rm -f postgresql-server-dev-15_*.deb && apt-get download -qq postgresql-server-dev-15 \
      && dpkg -x postgresql-server-dev-15_*.deb hdr)
    cppflags="-I$WORK/build/hdr/usr/include/postgresql/15/server"
  fi

  # with_llvm=no: skip JIT bitcode (needs clang, doubles build time, irrelevant for tests).
  (cd "$WORK/build" && rm -rf pgvector-* && apt-get source -qq pgvector && cd pgvector-*/ \
    && make -s PG_CONFIG="$BIN/pg_config" with_llvm=no PG_CPPFLAGS="$cppflags" -j"$(nproc)" \
    && make -s PG_CONFIG="$BIN/pg_config" with_llvm=no install)
  restore_apt
  trap - EXIT INT TERM
  [ -f "$VECTOR_SO" ] || die "pgvector build finished but $VECTOR_SO is missing"
  log "pgvector built and installed in $((SECONDS - t0)) s"
}

start_pg() {
  if pid=$(pg_pid); then log "postgres already running (pid $pid), reusing"; return; fi
  # Not running: anything answering on the port is someone else's, and we must not touch it.
  if "$BIN/pg_isready" -q -h 127.0.0.1 -p "$DB_PORT"; then die "port $DB_PORT is taken by another server"; fi
  install -d -m 755 -o postgres -g postgres "$WORK/pg"
  [ -f "$DATA/PG_VERSION" ] || rm -rf "$DATA" # a half-made data dir from an interrupted initdb
  if [ ! -d "$DATA" ]; then
    runuser -u postgres -- "$BIN/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync >/dev/null
  fi
  chown -R postgres:postgres "$WORK/pg"
  # Our postmaster is not running, so postmaster.pid is a leftover (crash, reboot); postgres itself
  # refuses to start if its PID now names another live process. Removing it also drops postgres' own
  # check for orphaned backends of a killed postmaster, so do that check here first.
  for _ in $(seq 50); do [ -z "$(procs_in_data)" ] && break; sleep 0.1; done
  [ -z "$(procs_in_data)" ] || die "processes still use $DATA: $(procs_in_data | xargs)"
  rm -f "$DATA/postmaster.pid" "$WORK/pg/.s.PGSQL.$DB_PORT" "$WORK/pg/.s.PGSQL.$DB_PORT.lock"
  # Durability is pointless for a throwaway test database; fsync off makes migrations/tests much faster.
  # shared_buffers: the benchmarks' 100k-memory store (HNSW index 260 MB, table 610 MB) does not fit
  # the default 128 MB, so every search would read its graph through the OS cache (semantic p50 at
  # 100k: 12.3 ms at 128 MB, 7.3 ms at 1 GB); 1 GB is well under the usual quarter of this machine's RAM.
  runuser -u postgres -- "$BIN/pg_ctl" -D "$DATA" -l "$WORK/pg/server.log" -w -t 60 -o \
    "-p $DB_PORT -k '$WORK/pg' -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=1GB" \
    start >/dev/null || { tail -n 20 "$WORK/pg/server.log" >&2; die "postgres did not start"; }
  log "postgres started on 127.0.0.1:$DB_PORT (data $DATA)"
}

start_redis() {
  if pid=$(redis_pid); then log "redis already running (pid $pid), reusing"; return; fi
  if redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1; then die "port $REDIS_PORT is taken by another server"; fi
  install -d -m 755 "$WORK/redis"
  rm -f "$WORK/redis.pid"
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --dir "$WORK/redis" --pidfile "$WORK/redis.pid" --logfile "$WORK/redis.log"
  for _ in $(seq 50); do
    [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ] && { log "redis started on 127.0.0.1:$REDIS_PORT"; return; }
    sleep 0.1
  done
  tail -n 20 "$WORK/redis.log" >&2; die "redis did not start"
}

stop_all() {
  local which=${1:-all}
  if [ "$which" != redis ] && pid=$(pg_pid); then
    runuser -u postgres -- "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null; log "postgres (pid $pid) stopped"
  fi
  if [ "$which" != postgres ] && pid=$(redis_pid); then
    kill "$pid"
    for _ in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    rm -f "$WORK/redis.pid"; log "redis (pid $pid) stopped"
  fi
}

main() {
  [ "$(id -u)" = 0 ] || die "must run as root (apt, runuser)"
  if [ "$DB_PORT" = 5432 ] || [ "$REDIS_PORT" = 6379 ]; then die "refusing the machine's shared ports"; fi
  install -d -m 755 "$WORK" "$WORK/build"
  cd "$WORK" # runuser keeps the cwd, and postgres cannot read root's home
  case "${1:-start}:${2:-all}" in
    start:all | reset:all) ;;
    stop:all | stop:postgres | stop:redis) stop_all "${2:-all}"; return ;;
    *) die "usage: $0 [start|reset|stop [postgres|redis]]" ;;
  esac

  # Installed as Redis is below: Debian 12's own package (it also sets up the machine's cluster on 5432,
  # which we never touch).
  if [ ! -x "$BIN/postgres" ]; then
    log "PostgreSQL 15 not found in $BIN: installing postgresql-15 with apt-get"
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null; } \
      || die "could not install PostgreSQL 15. Install it yourself (Debian 12, as root: apt-get update && apt-get install -y postgresql-15) and run again, or set DATABASE_URL to a Postgres 15+ with pgvector"
    [ -x "$BIN/postgres" ] || die "postgresql-15 is installed but $BIN/postgres is missing"
  fi

  VECTOR_SO="$("$BIN/pg_config" --pkglibdir)/vector.so"
  [ -f "$VECTOR_SO" ] || build_pgvector
  command -v redis-server >/dev/null || { apt-get update -qq; apt-get install -y -qq --no-install-recommends redis-server >/dev/null; }

  start_pg
  start_redis
  if [ "${1:-start}" = reset ]; then # the work dir outlives runs; a stale schema would confuse migrations
    psql_ -d postgres -c "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)"
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" flushall >/dev/null
  fi
  [ "$(psql_ -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" = 1 ] \
    || psql_ -d postgres -c "CREATE DATABASE $DB_NAME"
  psql_ -d "$DB_NAME" -c 'SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS vector'
  log "database $DB_NAME ready (pgvector $(psql_ -d "$DB_NAME" -tAc "SELECT extversion FROM pg_extension WHERE extname = 'vector'"))"
}

# stdout is saved in fd 3 for the export lines and closed for everything else: a daemon (postgres,
# redis) that inherited it would keep the caller's $(...) pipe open and hang it forever.
exec 3>&1 1>&2
main "$@" 3>&-
if [ "${1:-start}" != stop ]; then
  echo "export DATABASE_URL=postgres://postgres@127.0.0.1:$DB_PORT/$DB_NAME" >&3
  echo "export REDIS_URL=redis://127.0.0.1:$REDIS_PORT" >&3
fi
