#!/usr/bin/env bash
# The image of the previous release, for the rollback test of test/container/container.test.ts:
# built from the commit test/container/previous-release names (its files as `git archive` gives
# them, with its own Dockerfile), tagged campusgate:release-<commit>, only when no image of that tag
# is present. Prints the tag. .ci/run calls it ahead of the test, while the other steps run.
#
# The previous release must know how to serve a schema a newer release migrated
# (docs/operations.md, "Upgrades and rollbacks"), and the current one must have migrations it does
# not: name a newer commit here as releases go by.
set -euo pipefail
cd "$(dirname "$0")/../.."
commit=$(tr -d '[:space:]' <test/container/previous-release)
tag="campusgate:release-${commit:0:12}"
if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag"
  exit 0
fi
git cat-file -e "$commit^{commit}" ||
  { echo "previous-release: $commit is not in this clone's history" >&2 && exit 1; }
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
git archive --format=tar "$commit" | tar -x -C "$context"
# Its dependencies are this checkout's when package-lock.json is the same and package.json differs
# in its scripts alone: then this checkout's package.json stands in for its own, so that Docker
# reuses the layer that installed and compiled them for the current image (minutes on a new
# machine), and the image runs the same code and the same dependencies as the release would.
if cmp -s package-lock.json "$context/package-lock.json" &&
  node -e '
    const fs = require("node:fs")
    const manifest = (path) => ({ ...JSON.parse(fs.readFileSync(path, "utf8")), scripts: null })
    const [ours, theirs] = process.argv.slice(1).map(manifest)
    process.exit(JSON.stringify(ours) === JSON.stringify(theirs) ? 0 : 1)
  ' package.json "$context/package.json"; then
  cp package.json "$context/package.json"
fi
DOCKER_BUILDKIT=0 docker build --network host --force-rm --quiet \
  --build-arg REVISION="$commit" --tag "$tag" "$context" >/dev/null
echo "$tag"
