#!/usr/bin/env bash
# bench/image_rebuild.sh [ROUNDS] [--dockerfile-rev REV]: how long `podman build` takes after a
# one-line source change, with the base image and the dependency layer cached (issue 28: < 30 s).
#
# Run it as root from the project's root, after /work/shared/tools/image-check has made the base
# (python:3.11-slim, or its stand-in). It copies the build context (what .dockerignore lets
# through) to a temporary directory, builds once to warm the cache, then ROUNDS times (default 3)
# appends one comment line to bot/__init__.py there and times the rebuild. The checkout is never
# changed. --dockerfile-rev REV builds with the Dockerfile of that git revision instead (e.g. the
# one before the dependency layer) for comparison. Prints one line per round and the median.
set -eu
rounds=3 rev=""
while [ $# -gt 0 ]; do
  case $1 in
    --dockerfile-rev) rev=$2; shift 2 ;;
    [0-9]*) rounds=$1; shift ;;
    *) echo "image_rebuild: unknown argument $1"; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "image_rebuild: run it as root (podman as image-check runs it)"; exit 2; }
[ -f Dockerfile ] || { echo "image_rebuild: run it from the project's root"; exit 2; }

nofile=$(ulimit -Hn); { [ "$nofile" = unlimited ] || [ "$nofile" -gt 1048576 ]; } && nofile=1048576
nproc=$(ulimit -Hu); { [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
PODMAN=(podman --cgroup-manager cgroupfs --events-backend file)
"${PODMAN[@]}" info >/dev/null 2>&1 || PODMAN+=(--storage-driver vfs)
BUILD=("${PODMAN[@]}" build --runtime runc --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc" --pull=never)
tag=localhost/torchbot:rebuild-bench${rev:+-old}

ctx=$(mktemp -d /var/tmp/image-rebuild.XXXXXX)
trap 'rm -rf "$ctx"' EXIT
cp -a pyproject.toml README.md bot release config .dockerignore "$ctx"/
find "$ctx" -name __pycache__ -prune -exec rm -rf {} +
if [ -n "$rev" ]; then git show "$rev:Dockerfile" >"$ctx/Dockerfile"; else cp Dockerfile "$ctx/"; fi

"${BUILD[@]}" -t "$tag" "$ctx" >"$ctx.warm.log" 2>&1 || { tail -n 5 "$ctx.warm.log"; exit 1; }
times=()
for i in $(seq 1 "$rounds"); do
  echo "# rebuild probe $i $(date +%s%N)" >>"$ctx/bot/__init__.py"
  t0=$(date +%s%N)
  "${BUILD[@]}" -t "$tag" "$ctx" >"$ctx.log" 2>&1 || { tail -n 5 "$ctx.log"; exit 1; }
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  cached=$(grep -c '^--> Using cache' "$ctx.log" || true); steps=$(grep -c '^STEP ' "$ctx.log" || true)
  echo "round $i: $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s ($cached of $steps steps from cache)"
  times+=("$ms")
done
rm -f "$ctx.log" "$ctx.warm.log"
median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (rounds + 1) / 2 ))p")
echo "image rebuild after a one-line source change${rev:+ (Dockerfile of $rev)}: median $((median / 1000)).$(printf '%03d' $((median % 1000))) s over $rounds rounds"
"${PODMAN[@]}" rmi "$tag" >/dev/null 2>&1 || true
