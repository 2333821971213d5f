#!/usr/bin/env bash
# Regenerates clients/python/berth_client/ (the generated half of the Python client) from
# openapi/berth.json with openapi-python-client, pinned with everything it runs in
# generator/requirements.txt and installed into a virtualenv under $BERTH_CI_CACHE
# ($HOME/.cache/berth-ci) when missing. Never edit berth_client/ by hand: change the api,
# regenerate openapi/berth.json (BERTH_UPDATE_OPENAPI=1 cargo test -p berth-api openapi),
# then run this and commit both.
#
#   clients/python/generate.sh            rewrites clients/python/berth_client/
#   clients/python/generate.sh DIR        writes the package to DIR instead (the drift
#                                         check in scripts/test-clients does this)
#
# The document goes through generator/prepare_document.py first (it drops the
# empty-object defaults the generator cannot read; see that file); generator/templates/
# overrides one template (client.py: the token kept out of repr), and the generator
# runs with --fail-on-warning, so a construct it cannot read fails here rather than
# silently leaving an operation out. It runs in a scratch folder and its ruff hooks read
# no configuration file, so the output does not depend on where it is written.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$here/berth_client}
export BERTH_CI_CACHE=${BERTH_CI_CACHE:-$HOME/.cache/berth-ci}
requirements=$here/generator/requirements.txt
venv=$BERTH_CI_CACHE/python-client-generator-$(sha256sum "$requirements" | cut -c1-12)
if [ ! -x "$venv/bin/openapi-python-client" ]; then
  echo "== installing openapi-python-client into $venv"
  mkdir -p "$BERTH_CI_CACHE"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r "$requirements"
fi
work=$(mktemp -d /tmp/berth-pyclient-gen-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$venv/bin/python" "$here/generator/prepare_document.py" "$root/openapi/berth.json" "$work/berth.json"
(cd "$work" && PATH="$venv/bin:$PATH" openapi-python-client generate --path berth.json \
  --meta none --config "$here/generator/config.yaml" --custom-template-path "$here/generator/templates" \
  --output-path "$work/berth_client" \
  --fail-on-warning >"$work/generator.log" 2>&1) || { cat "$work/generator.log" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$(dirname "$out")"
cp -R "$work/berth_client" "$out"
echo "generated $out from openapi/berth.json"
